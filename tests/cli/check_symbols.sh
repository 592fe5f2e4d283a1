#!/bin/sh
# Fails if the shared library exports any dynamic symbol not named gpuplan_*.
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWi]$/ {print $3}' | grep -v '^gpuplan_' || true)
count=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWi]$/' | grep -c 'gpuplan_' || true)
if [ -n "$bad" ]; then
  echo "symbols exported without the gpuplan_ prefix:"; echo "$bad"; exit 1
fi
internal=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep '^gpuplan__' || true)
if [ -n "$internal" ]; then
  echo "internal gpuplan__ symbols are exported:"; echo "$internal"; exit 1
fi
echo "$count exported symbols, all gpuplan_*"
[ "$count" -gt 10 ]
