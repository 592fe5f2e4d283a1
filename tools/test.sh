#!/bin/sh
# Set up, build, and run every test: once in a normal build, once more (the
# C and CLI suites) under AddressSanitizer + UndefinedBehaviorSanitizer, and
# the libFuzzer targets for a bounded time (clang).
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh --test
jobs=$(nproc)

echo "== build (RelWithDebInfo) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUPLAN_BUILD_TESTS=ON -DGPUPLAN_BUILD_PYTHON=ON -DGPUPLAN_BUILD_LUA=ON >/dev/null
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

echo "== build (clang, libFuzzer) =="
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DGPUPLAN_BUILD_TESTS=ON \
      -DGPUPLAN_BUILD_FUZZERS=ON -DGPUPLAN_BUILD_CLI=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_pickle fuzz_alloc_conf fuzz_oom fuzz_job fuzz_snapshot >/dev/null
echo "== fuzzing (bounded) =="
(cd build-fuzz && ctest --output-on-failure -L fuzz)
