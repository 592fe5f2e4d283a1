#!/bin/sh
# The device check: run on a machine with an NVIDIA GPU (under 5 minutes).
# Builds gpuplan (C library, CLI and tests; no bindings), runs the tests
# labelled "gpu", a simulated step program with real allocations on the
# card, and prints predicted vs measured peak reserved memory.
#   tests/gpu/check.sh [BUILD_DIR]
set -eu
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
jobs=$(nproc 2>/dev/null || echo 4)
echo "== build ($build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUPLAN_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j"$jobs" >/dev/null
gp="$build/bindings/cli/gpuplan"
echo "== gpuplan smi"
"$gp" smi
"$gp" smi --query-gpu=index,name,gpuplan.sku,memory.total,memory.free,compute_cap,clocks.max.sm --format=csv
echo "== gpuplan doctor"
"$gp" doctor || true
echo "== ctest -L gpu"
(cd "$build" && ctest --output-on-failure -L gpu)
echo "== predicted vs measured peak reserved (step programs on device 0)"
sku=$("$gp" smi --query-gpu=gpuplan.sku --format=csv,noheader | head -1)
for model in 1B 7B; do
  for mode in "--recompute full" "--zero 3 --gpus 8 --recompute full"; do
    echo "-- $model $mode on $sku"
    # shellcheck disable=SC2086
    "$gp" simulate "$model" --gpu "$sku" $mode --on cuda | sed -n '/^on /,$p'
  done
done
