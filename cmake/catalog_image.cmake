# How the built-in catalog gets into the library (included by
# libgpuplan/CMakeLists.txt).  The SQL under catalog/ stays the one source:
#
#   gpuplan_embed_sql(OUT.c SYMBOL a.sql b.sql ...)
#     the files as NUL-terminated text (cmake/embed.cmake): the schema, which
#     creates and migrates user catalog files at run time.
#
#   gpuplan_catalog_image(OUT.c SCHEMA a.sql ... DATA x.sql ...)
#     the schema and data run once, at build time, by the host tool
#     gpuplan_mkimage (libgpuplan/src/catalog/mkimage.c): the resulting
#     SQLite database embedded as bytes for sqlite3_deserialize(), and its
#     rows as const record structs (checked with the loader's field checks).
#     Call it from libgpuplan/CMakeLists.txt.
#
# When cross-compiling, the tool cannot run from this build: build it for the
# host (any native build of gpuplan has it) and pass
# -DGPUPLAN_MKIMAGE=/path/to/gpuplan_mkimage.

function(gpuplan_embed_sql out symbol)
  string(REPLACE ";" "|" _inputs "${ARGN}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNAME=${symbol} "-DINPUTS=${_inputs}"
            -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    VERBATIM
    DEPENDS ${ARGN} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    COMMENT "Embedding catalog schema")
endfunction()

function(gpuplan_catalog_image out)
  cmake_parse_arguments(PARSE_ARGV 1 _img "" "" "SCHEMA;DATA")
  # sqlite3_serialize/deserialize are in every build from 3.36 on (before,
  # only with SQLITE_ENABLE_DESERIALIZE).
  if(SQLite3_VERSION AND SQLite3_VERSION VERSION_LESS 3.36)
    message(FATAL_ERROR "gpuplan: SQLite ${SQLite3_VERSION} found; the built-in "
                        "catalog image needs sqlite3_deserialize (SQLite >= 3.36)")
  endif()
  if(CMAKE_CROSSCOMPILING)
    set(GPUPLAN_MKIMAGE "" CACHE FILEPATH
        "gpuplan_mkimage built for the build host (needed when cross-compiling)")
    if(NOT GPUPLAN_MKIMAGE)
      message(FATAL_ERROR "gpuplan: cross-compiling needs -DGPUPLAN_MKIMAGE=<host "
                          "gpuplan_mkimage> to build the catalog image")
    endif()
    set(_tool ${GPUPLAN_MKIMAGE})
    set(_dep ${GPUPLAN_MKIMAGE})
  else()
    if(NOT TARGET gpuplan_mkimage)
      add_executable(gpuplan_mkimage ${CMAKE_CURRENT_SOURCE_DIR}/src/catalog/mkimage.c
                                     ${CMAKE_CURRENT_SOURCE_DIR}/src/catalog/fields.c)
      target_include_directories(gpuplan_mkimage PRIVATE
        ${CMAKE_CURRENT_SOURCE_DIR}/include ${CMAKE_CURRENT_BINARY_DIR}/include
        ${CMAKE_CURRENT_SOURCE_DIR}/src)
      target_link_libraries(gpuplan_mkimage PRIVATE SQLite::SQLite3 m)
    endif()
    set(_tool $<TARGET_FILE:gpuplan_mkimage>)
    set(_dep gpuplan_mkimage)
  endif()
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${_tool} ${out} ${_img_SCHEMA} -- ${_img_DATA}
    VERBATIM
    DEPENDS ${_dep} ${_img_SCHEMA} ${_img_DATA}
    COMMENT "Building the catalog image from catalog/schema and catalog/data")
endfunction()
