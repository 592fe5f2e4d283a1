# pip install --no-build-isolation ./bindings/python into a scratch target
# directory (offline: --no-index), from a copy of the checkout so the source
# tree stays clean, then import the installed package and plan with it.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/src)
foreach(d CMakeLists.txt cmake libgpuplan sim bindings/python catalog)
  if(EXISTS ${SRC}/${d})
    get_filename_component(parent ${WORK}/src/${d} DIRECTORY)
    file(COPY ${SRC}/${d} DESTINATION ${parent} PATTERN build EXCLUDE PATTERN "*.egg-info" EXCLUDE)
  endif()
endforeach()
execute_process(COMMAND ${PYTHON} -m pip install --no-build-isolation --no-index --no-deps
                        --target ${WORK}/site ${WORK}/src/bindings/python
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pip install failed (${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${WORK}/site
                        ${PYTHON} -c "import gpuplan, sys; p = gpuplan.Catalog().plan('llama-2-7b', 'a100-40gb'); assert gpuplan.__file__.startswith(sys.argv[1]), gpuplan.__file__; assert not p.worst.fits and p.ladder[-1].fits and p.schema == 'gpuplan.plan/1', p.ladder; print('installed', gpuplan.__version__, gpuplan.__file__)" ${WORK}/site
                WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed package does not work")
endif()
