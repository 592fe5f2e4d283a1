# pickle.cmake: tests of the plain-data pickle reader (src/replay/pickle.c).
# Included from tests/CMakeLists.txt once CMOCKA_* and GPUPLAN_TEST_ENV exist.
#
# The library is built with hidden visibility, so its gpuplan__ symbols cannot
# be linked from outside: each executable here compiles the reader and the
# common sources it needs itself.

set(_pickle_sources
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/replay/pickle.c
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/common/alloc.c
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/common/error.c
    ${PROJECT_SOURCE_DIR}/libgpuplan/src/common/ctx.c)
set(_pickle_includes
    ${PROJECT_SOURCE_DIR}/libgpuplan/src
    ${PROJECT_SOURCE_DIR}/libgpuplan/include
    ${PROJECT_BINARY_DIR}/libgpuplan/include)

# CMocka suite: good pickles of every protocol, the bad-input corpus in
# tests/data/pickle/, the real snapshots in tests/data/torch-snapshots,
# and out-of-memory sweeps.
add_executable(test_pickle ${CMAKE_CURRENT_LIST_DIR}/unit/test_pickle.c ${_pickle_sources})
target_include_directories(test_pickle PRIVATE ${_pickle_includes} ${CMOCKA_INCLUDE_DIR})
target_compile_definitions(test_pickle PRIVATE GPUPLAN_TESTING)
target_link_libraries(test_pickle PRIVATE ${CMOCKA_LIBRARY} m)
add_test(NAME test_pickle COMMAND test_pickle)
set_tests_properties(test_pickle PROPERTIES LABELS "unit;c"
                     ENVIRONMENT "${GPUPLAN_TEST_ENV}")

# The fuzz target over its seed corpus with a plain driver, in every build
# (as fuzz.cmake runs the other targets'): the inputs libFuzzer once found
# failing stay checked without clang.
file(GLOB _pickle_seeds ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus/pickle/*)
add_executable(fuzz_pickle_corpus ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_pickle.c
               ${CMAKE_CURRENT_LIST_DIR}/fuzz/run_corpus.c ${_pickle_sources})
target_include_directories(fuzz_pickle_corpus PRIVATE ${_pickle_includes})
target_compile_definitions(fuzz_pickle_corpus PRIVATE GPUPLAN_TESTING)
target_link_libraries(fuzz_pickle_corpus PRIVATE m)
add_test(NAME fuzz_pickle_corpus COMMAND fuzz_pickle_corpus ${_pickle_seeds})
set_tests_properties(fuzz_pickle_corpus PROPERTIES LABELS "unit;c" ENVIRONMENT "${GPUPLAN_TEST_ENV}")

# libFuzzer target, and a 20-second smoke run over the seed corpus.  New
# inputs go to the build tree; the seeds in the source tree stay read-only.
if(GPUPLAN_BUILD_FUZZERS)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(STATUS "fuzz_pickle: libFuzzer needs clang (CC=clang); not built")
  elseif(GPUPLAN_SANITIZE MATCHES "thread")
    message(STATUS "fuzz_pickle: libFuzzer runs with ASan, not TSan; not built")
  else()
    set(_fuzz_flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -g)
    add_executable(fuzz_pickle ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_pickle.c ${_pickle_sources})
    target_include_directories(fuzz_pickle PRIVATE ${_pickle_includes})
    target_compile_options(fuzz_pickle PRIVATE ${_fuzz_flags})
    target_link_options(fuzz_pickle PRIVATE ${_fuzz_flags})
    target_link_libraries(fuzz_pickle PRIVATE m)
    set(_fuzz_work ${GPUPLAN_TEST_TMP}/fuzz_pickle)
    file(MAKE_DIRECTORY ${_fuzz_work}/corpus)
    add_test(NAME fuzz_pickle_smoke
             COMMAND fuzz_pickle -max_total_time=20 -max_len=65536 -rss_limit_mb=2048
                     -timeout=10 -print_final_stats=1
                     -artifact_prefix=${_fuzz_work}/
                     ${_fuzz_work}/corpus ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus/pickle
             WORKING_DIRECTORY ${_fuzz_work})
    set_tests_properties(fuzz_pickle_smoke PROPERTIES LABELS "fuzz" TIMEOUT 120
                         ENVIRONMENT "${GPUPLAN_TEST_ENV}")
  endif()
endif()
