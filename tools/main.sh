#!/bin/sh
# Set up, build, and run the main job: plan the 2 a.m. OOM ticket.
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPUPLAN_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
# The seed ticket: a 7B model in fp16 with AdamW on one A100-40GB.
exec build/bindings/cli/gpuplan plan 7B --gpu a100-40gb --precision fp16-mixed
