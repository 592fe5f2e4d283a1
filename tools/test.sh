#!/bin/sh
# Set up, build, and run every test: once in a normal build, and once more
# (the C and CLI suites) under AddressSanitizer + UndefinedBehaviorSanitizer.
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh --test
jobs=$(nproc)

echo "== build (RelWithDebInfo) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUPLAN_BUILD_TESTS=ON >/dev/null
cmake --build build -j"$jobs" >/dev/null
echo "== tests =="
(cd build && ctest --output-on-failure -j"$jobs")

echo "== build (ASan+UBSan) =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPUPLAN_BUILD_TESTS=ON \
      "-DGPUPLAN_SANITIZE=address;undefined" >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
echo "== tests under ASan+UBSan =="
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$jobs" -L "c|cli")
