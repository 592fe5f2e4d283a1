#!/bin/sh
# Set up, build, and run the main job: list the GPU catalog.
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPUPLAN_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec build/bindings/cli/gpuplan catalog gpus
