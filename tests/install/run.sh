#!/bin/sh
# Install the build into a temporary prefix, then build and run a consumer
# through find_package(gpuplan [COMPONENTS sim]) and through pkg-config
# (gpuplan, gpuplan-sim).
set -eu
build=$1 src=$2 tmp=$3
rm -rf "$tmp/prefix" "$tmp/consumer"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp/prefix"/lib*/ | head -1)
PKG_CONFIG_PATH="$libdir/pkgconfig" cmake -S "$src" -B "$tmp/consumer" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
for exe in consumer consumer_pc; do
  out=$(LD_LIBRARY_PATH="$libdir" "$tmp/consumer/$exe")
  echo "$out" | grep -q "h100-sxm5-80gb 989" || { echo "$exe: $out"; exit 1; }
done
for exe in consumer_sim consumer_sim_pc; do
  out=$(LD_LIBRARY_PATH="$libdir" "$tmp/consumer/$exe")
  echo "$out" | grep -q "mock 1 device(s), test card, 7892 MiB free" || { echo "$exe: $out"; exit 1; }
done
# the installed target has the in-tree name
grep -q "add_library(gpuplan::sim " "$libdir/cmake/gpuplan/gpuplanTargets.cmake"
echo "installed package found by find_package and pkg-config (gpuplan, gpuplan-sim); consumers ran"
