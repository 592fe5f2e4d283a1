#!/bin/sh
# Install the build into a temporary prefix, then build and run a consumer
# through find_package(gpuplan) and through pkg-config.
set -eu
build=$1 src=$2 tmp=$3
rm -rf "$tmp/prefix" "$tmp/consumer"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp/prefix"/lib*/ | head -1)
PKG_CONFIG_PATH="$libdir/pkgconfig" cmake -S "$src" -B "$tmp/consumer" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/consumer" | grep -q "h100-sxm5-80gb 989"
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/consumer_pc" | grep -q "h100-sxm5-80gb 989"
echo "installed package found by find_package and pkg-config; consumer ran"
