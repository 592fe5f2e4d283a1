#!/bin/sh
# CTest label "gpu": checks that need a real NVIDIA GPU and driver.  Exits
# 77 (skipped) when the driver or a device is missing.
#   test_real_gpu.sh GPUPLAN
gp=$1
if ! "$gp" smi >/dev/null 2>&1; then
  echo "no NVIDIA driver or GPU here: skipped"
  exit 77
fi
set -e
"$gp" smi
sku=$("$gp" smi --query-gpu=gpuplan.sku --format=csv,noheader | head -1)
echo "device 0 matches catalog SKU: $sku"
[ "$sku" != "[N/A]" ] || { echo "the device does not match a catalog SKU"; exit 1; }
"$gp" doctor || true
# a step program that fits: predicted vs actual reserved memory on the card
out=$("$gp" simulate 1B --gpu "$sku" --recompute full --on cuda)
echo "$out"
line=$(echo "$out" | grep "peak reserved   predicted")
pct=$(echo "$line" | sed 's/.*(\(.*\)%).*/\1/' | tr -d '+')
echo "predicted vs actual: ${pct}%"
awk -v p="$pct" 'BEGIN { exit (p < -5 || p > 5) ? 1 : 0 }' || { echo "more than 5% apart"; exit 1; }
echo "$out" | grep -q "on the card no" || { echo "it ran out of memory on the card"; exit 1; }
