# fuzz.cmake: fuzz targets of the allocator settings parser and of the
# out-of-memory message reader (review section 6: a fuzz target for each
# parser).  Included from tests/CMakeLists.txt.
#
# Each target is a libFuzzer entry point.  Every build runs it over its seed
# corpus with a plain driver (run_corpus.c; labels unit, c); with
# GPUPLAN_BUILD_FUZZERS and clang, libFuzzer also runs it for 20 seconds
# (label fuzz), as fuzz_pickle does (tests/pickle.cmake).  The targets
# compile the library's sources they need, as the library hides its
# internal symbols.
set(_fz_common
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/common/alloc.c
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/common/error.c
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/common/ctx.c)
set(_fz_alloc
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/alloc/allocator.c
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/alloc/conf.c
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/alloc/pool.c
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/alloc/expandable.c
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/alloc/report.c)
set(_fz_oom ${PROJECT_SOURCE_DIR}/libgpuplan/src/alloc/oom.c ${_fz_alloc})
set(_fz_includes
    ${PROJECT_SOURCE_DIR}/libgpuplan/src
    ${PROJECT_SOURCE_DIR}/libgpuplan/include
    ${PROJECT_BINARY_DIR}/libgpuplan/include)

foreach(_fz alloc_conf oom)
  if(_fz STREQUAL "alloc_conf")
    set(_srcs ${_fz_alloc} ${_fz_common})
  else()
    set(_srcs ${_fz_oom} ${_fz_common})
  endif()
  file(GLOB _seeds ${CMAKE_CURRENT_LIST_DIR}/corpus/${_fz}/*)
  add_executable(fuzz_${_fz}_corpus ${CMAKE_CURRENT_LIST_DIR}/fuzz_${_fz}.c ${CMAKE_CURRENT_LIST_DIR}/run_corpus.c
                 ${_srcs})
  target_include_directories(fuzz_${_fz}_corpus PRIVATE ${_fz_includes})
  target_compile_definitions(fuzz_${_fz}_corpus PRIVATE GPUPLAN_TESTING)
  target_link_libraries(fuzz_${_fz}_corpus PRIVATE m)
  add_test(NAME fuzz_${_fz}_corpus COMMAND fuzz_${_fz}_corpus ${_seeds})
  set_tests_properties(fuzz_${_fz}_corpus PROPERTIES LABELS "unit;c")
  if(GPUPLAN_BUILD_FUZZERS AND CMAKE_C_COMPILER_ID MATCHES "Clang" AND NOT GPUPLAN_SANITIZE MATCHES "thread")
    set(_flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
    add_executable(fuzz_${_fz} ${CMAKE_CURRENT_LIST_DIR}/fuzz_${_fz}.c ${_srcs})
    target_include_directories(fuzz_${_fz} PRIVATE ${_fz_includes})
    target_compile_options(fuzz_${_fz} PRIVATE ${_flags})
    target_link_options(fuzz_${_fz} PRIVATE ${_flags})
    target_link_libraries(fuzz_${_fz} PRIVATE m)
    set(_work ${GPUPLAN_TEST_TMP}/fuzz_${_fz})
    file(MAKE_DIRECTORY ${_work}/corpus)
    add_test(NAME fuzz_${_fz}_smoke
             COMMAND fuzz_${_fz} -max_total_time=20 -max_len=4096 -rss_limit_mb=2048 -timeout=10
                     -print_final_stats=1 -artifact_prefix=${_work}/ ${_work}/corpus
                     ${CMAKE_CURRENT_LIST_DIR}/corpus/${_fz}
             WORKING_DIRECTORY ${_work})
    set_tests_properties(fuzz_${_fz}_smoke PROPERTIES LABELS "fuzz" TIMEOUT 120)
  endif()
endforeach()

# The job API's parsers (option table, names and sizes, config.json): the
# target uses only the public API, so it links the library (built without
# coverage instrumentation: libFuzzer mutates blindly through it, still
# under ASan and UBSan in the target).
add_executable(fuzz_job_corpus ${CMAKE_CURRENT_LIST_DIR}/fuzz_job.c ${CMAKE_CURRENT_LIST_DIR}/run_corpus.c)
target_link_libraries(fuzz_job_corpus PRIVATE gpuplan)
file(GLOB _seeds ${CMAKE_CURRENT_LIST_DIR}/corpus/job/*)
add_test(NAME fuzz_job_corpus COMMAND fuzz_job_corpus ${_seeds})
set_tests_properties(fuzz_job_corpus PROPERTIES LABELS "unit;c")
if(GPUPLAN_BUILD_FUZZERS AND CMAKE_C_COMPILER_ID MATCHES "Clang" AND NOT GPUPLAN_SANITIZE MATCHES "thread")
  set(_flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  add_executable(fuzz_job ${CMAKE_CURRENT_LIST_DIR}/fuzz_job.c)
  target_compile_options(fuzz_job PRIVATE ${_flags})
  target_link_options(fuzz_job PRIVATE ${_flags})
  target_link_libraries(fuzz_job PRIVATE gpuplan)
  set(_work ${GPUPLAN_TEST_TMP}/fuzz_job)
  file(MAKE_DIRECTORY ${_work}/corpus)
  add_test(NAME fuzz_job_smoke
           COMMAND fuzz_job -max_total_time=20 -max_len=4096 -rss_limit_mb=2048 -timeout=10
                   -print_final_stats=1 -artifact_prefix=${_work}/ ${_work}/corpus ${CMAKE_CURRENT_LIST_DIR}/corpus/job
           WORKING_DIRECTORY ${_work})
  set_tests_properties(fuzz_job_smoke PROPERTIES LABELS "fuzz" TIMEOUT 120)
endif()

# Snapshot load + replay (exact, and what-if under expandable segments on a
# small device and under a rounding / garbage-collection conf).  The corpus
# runner links the library; the libFuzzer target compiles the replay,
# pickle, allocator and common sources in, so they are coverage
# instrumented.
add_executable(fuzz_snapshot_corpus ${CMAKE_CURRENT_LIST_DIR}/fuzz_snapshot.c ${CMAKE_CURRENT_LIST_DIR}/run_corpus.c)
target_link_libraries(fuzz_snapshot_corpus PRIVATE gpuplan)
file(GLOB _seeds ${CMAKE_CURRENT_LIST_DIR}/corpus/snapshot/*)
add_test(NAME fuzz_snapshot_corpus COMMAND fuzz_snapshot_corpus ${_seeds})
set_tests_properties(fuzz_snapshot_corpus PROPERTIES LABELS "unit;c")
if(GPUPLAN_BUILD_FUZZERS AND CMAKE_C_COMPILER_ID MATCHES "Clang" AND NOT GPUPLAN_SANITIZE MATCHES "thread")
  set(_flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  add_executable(fuzz_snapshot ${CMAKE_CURRENT_LIST_DIR}/fuzz_snapshot.c
                 ${PROJECT_SOURCE_DIR}/libgpuplan/src/replay/replay.c
                 ${PROJECT_SOURCE_DIR}/libgpuplan/src/replay/pickle.c
                 ${PROJECT_SOURCE_DIR}/libgpuplan/src/alloc/oom.c ${_fz_alloc} ${_fz_common})
  target_include_directories(fuzz_snapshot PRIVATE ${_fz_includes})
  target_compile_definitions(fuzz_snapshot PRIVATE GPUPLAN_TESTING)
  target_compile_options(fuzz_snapshot PRIVATE ${_flags})
  target_link_options(fuzz_snapshot PRIVATE ${_flags})
  target_link_libraries(fuzz_snapshot PRIVATE m)
  set(_work ${GPUPLAN_TEST_TMP}/fuzz_snapshot)
  file(MAKE_DIRECTORY ${_work}/corpus)
  add_test(NAME fuzz_snapshot_smoke
           COMMAND fuzz_snapshot -max_total_time=20 -max_len=32768 -rss_limit_mb=2048 -timeout=10
                   -print_final_stats=1 -artifact_prefix=${_work}/ ${_work}/corpus
                   ${CMAKE_CURRENT_LIST_DIR}/corpus/snapshot
           WORKING_DIRECTORY ${_work})
  set_tests_properties(fuzz_snapshot_smoke PROPERTIES LABELS "fuzz" TIMEOUT 120)
endif()
