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
echo "== measured on this card: a catalog patch"
# the CUDA context, the driver's granularity and NVML's total (measure_context.c)
cc -std=c11 -O2 tests/gpu/measure_context.c -ldl -o "$build/measure_context"
"$build/measure_context" > "$build/measured.jsonl"
cat "$build/measured.jsonl"
skus=$("$gp" smi --query-gpu=gpuplan.sku --format=csv,noheader)
echo "-- catalog patch: context_bytes measured $(date -u +%Y-%m-%d) on $(hostname)"
i=0
while IFS= read -r line; do
  sku=$(echo "$skus" | sed -n "$((i + 1))p")
  ctx=$(echo "$line" | sed -n 's/.*"context_bytes": \(-\{0,1\}[0-9]*\).*/\1/p')
  gran=$(echo "$line" | sed -n 's/.*"malloc_granularity_bytes": \(-\{0,1\}[0-9]*\).*/\1/p')
  nvt=$(echo "$line" | sed -n 's/.*"nvml_total_bytes": \(-\{0,1\}[0-9]*\).*/\1/p')
  drv=$(echo "$line" | sed -n 's/.*"driver_version": "\([^"]*\)".*/\1/p')
  if [ "$sku" != "[N/A]" ] && [ -n "$ctx" ] && [ "$ctx" -gt 0 ]; then
    echo "UPDATE gpu SET context_bytes = $ctx, note = note || ' context_bytes MEASURED with tests/gpu/measure_context.c: NVML used after - before cuDevicePrimaryCtxRetain, driver $drv; cudaMalloc granularity $gran B; NVML total $nvt B.' WHERE id = '$sku';"
  else
    echo "-- device $i ($sku): context not measured (no NVML?): $line"
  fi
  i=$((i + 1))
done < "$build/measured.jsonl"
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
