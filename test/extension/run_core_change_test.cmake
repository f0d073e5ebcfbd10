# A core-only change leaves a built plugin working. After extension.out_of_tree_plugin (its
# fixture) has installed lengen, built the stage plugin of docs/stages.md against the installed
# headers and run it: copies the source tree, adds fields at the front of three internal
# structs (Experiment, TrainConfig, StageSpec: every field after them moves), rebuilds only the
# library and the CLI from the copy, and puts them into a copy of the install. The plugin
# binary built before the change (and the installed in-tree plugins) must load in it, and its
# stage, run again there on the same trained model, must write the same tensors. The change
# touches no header of the plugin surface (scripts/check-surface.py checks that first).
cmake_minimum_required(VERSION 3.25)
set(work "${BINARY_DIR}/extension-test")
set(prefix "${work}/prefix")
set(plugin "${work}/stage-build/liblengen-stage-attention_snapshot.so")
set(run_dir "${work}/runs/snap/1")
foreach(need "${prefix}/bin/lengen" "${plugin}" "${run_dir}/stages/snapshot/attention.safetensors")
  if(NOT EXISTS "${need}")
    message(FATAL_ERROR "${need} is missing: extension.out_of_tree_plugin must run first")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)

# The change: a field at the front of each struct, in a copy of the tree.
set(src "${work}/changed-src")
file(REMOVE_RECURSE "${src}" "${work}/changed-build" "${work}/changed-prefix" "${work}/snapshot-before")
file(MAKE_DIRECTORY "${src}")
foreach(part CMakeLists.txt cmake framework plugins tasks python scripts)
  file(COPY "${SOURCE_DIR}/${part}" DESTINATION "${src}")
endforeach()
function(add_field header anchor)
  file(READ "${src}/framework/include/${header}" text)
  string(FIND "${text}" "${anchor}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${header} has no '${anchor}': update this test")
  endif()
  string(REPLACE "${anchor}" "${anchor}\n  double core_change_probe[3] = {1, 2, 3};  // the test's change"
         text "${text}")
  file(WRITE "${src}/framework/include/${header}" "${text}")
endfunction()
add_field(lengen/experiment/experiment.h "struct LENGEN_API Experiment {")
add_field(lengen/train/config.h "struct LENGEN_API TrainConfig {")
add_field(lengen/experiment/stage_spec.h "struct LENGEN_API StageSpec {")

run(${PYTHON3} "${src}/scripts/check-surface.py" --root "${src}")
if(NOT last_output MATCHES "as recorded for API")
  message(FATAL_ERROR "the change was meant to leave the plugin surface alone:\n${last_output}")
endif()

# Only the library and the CLI, with the compiler and build type of this build.
run(${CMAKE_COMMAND} -S "${src}" -B "${work}/changed-build" -G "${GENERATOR}"
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    -DLENGEN_BUILD_TESTS=OFF -DLENGEN_PYTHON=OFF)
run(${CMAKE_COMMAND} --build "${work}/changed-build" --target lengen_core lengen)

# The install with the changed library and CLI, and nothing else rebuilt.
set(changed "${work}/changed-prefix")
file(COPY "${prefix}/" DESTINATION "${changed}")
file(GLOB old_libs "${changed}/lib/liblengen.so*")
file(REMOVE ${old_libs})
file(GLOB new_libs "${work}/changed-build/lib/liblengen.so*")
file(COPY ${new_libs} DESTINATION "${changed}/lib")
file(COPY "${work}/changed-build/bin/lengen" DESTINATION "${changed}/bin")

# The old plugin binary in the changed core: listed, then run as the second stage again.
run("${changed}/bin/lengen" plugins --plugin-path "${work}/stage-build" --describe attention_snapshot)
if(NOT last_output MATCHES "attention_snapshot")
  message(FATAL_ERROR "the changed core did not load the plugin built before the change:\n${last_output}")
endif()
file(RENAME "${run_dir}/stages/snapshot" "${work}/snapshot-before")
run("${changed}/bin/lengen" run "${work}/snapshot.yaml" --resume --plugin-path "${work}/stage-build")
if(NOT last_output MATCHES "snapshot")
  message(FATAL_ERROR "the stage did not run again:\n${last_output}")
endif()
file(SHA256 "${work}/snapshot-before/attention.safetensors" before)
file(SHA256 "${run_dir}/stages/snapshot/attention.safetensors" after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "the plugin built before the core's change wrote other tensors after it")
endif()
message(STATUS "a stage plugin built before a core-only change (fields added to Experiment, "
               "TrainConfig and StageSpec) loaded in the changed core and wrote the same tensors")
