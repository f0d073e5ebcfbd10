# Installs the current build into a temporary prefix, copies test/extension to a temporary
# folder, builds it there with find_package(lengen), and checks that the installed lengen
# loads the plugin and that it passes the position contract (full pass == KV-cached decoding).
set(work "${BINARY_DIR}/extension-test")
file(REMOVE_RECURSE "${work}")
set(prefix "${work}/prefix")
set(src "${work}/src")
file(COPY "${SOURCE_DIR}/test/extension/" DESTINATION "${src}")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}${err}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install "${BINARY_DIR}" --prefix "${prefix}")
run(${CMAKE_COMMAND} -S "${src}" -B "${work}/build" -G "${GENERATOR}"
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${work}/build")
set(lib "${work}/build/liblengen-position-kerple_log.so")
if(NOT EXISTS "${lib}")
  message(FATAL_ERROR "the out-of-tree build did not produce ${lib}")
endif()
# The installed CLI finds the plugin through --plugin-path and lists it.
run("${prefix}/bin/lengen" plugins --plugin-path "${work}/build" --describe kerple_log)
if(NOT last_output MATCHES "KERPLE log bias")
  message(FATAL_ERROR "installed lengen did not list the plugin:\n${last_output}")
endif()
# The in-tree contract suite runs over every scheme on the path, the new one included.
set(ENV{LENGEN_PLUGIN_PATH} "${work}/build")
run("${BINARY_DIR}/bin/lengen_unit_tests" "position contract: every registered scheme")
if(NOT last_output MATCHES "All tests passed")
  message(FATAL_ERROR "contract tests did not pass with the plugin:\n${last_output}")
endif()
message(STATUS "out-of-tree plugin built, installed-CLI listed it, contract tests passed")
