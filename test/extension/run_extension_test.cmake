# Installs the current build into a temporary prefix, extracts the example plugin of
# docs/writing-a-position-scheme.md into a temporary folder, builds it there with
# find_package(lengen), and checks that the installed lengen loads the plugin and that it
# passes the position contract (full pass == KV-cached decoding; bidirectional attention).
# Then does the same with the stage kind of docs/stages.md and runs a two-stage experiment
# with it through the installed CLI, and with the Lion optimizer of docs/writing-a-plugin.md,
# which must pass the optimizer contract and train a model through the installed CLI.
cmake_minimum_required(VERSION 3.25)
set(work "${BINARY_DIR}/extension-test")
file(REMOVE_RECURSE "${work}")
set(prefix "${work}/prefix")

# The examples live in the walk-throughs themselves: every fenced block preceded by a
# `<!-- file: NAME -->` line becomes DEST/NAME, so the page and the tested code are one.
function(extract doc dest)
  file(READ "${doc}" text)
  set(marker "<!-- file: ")
  set(found "")
  while(TRUE)
    string(FIND "${text}" "${marker}" at)
    if(at EQUAL -1)
      break()
    endif()
    string(LENGTH "${marker}" mlen)
    math(EXPR name_at "${at} + ${mlen}")
    string(SUBSTRING "${text}" ${name_at} -1 text)
    string(FIND "${text}" " -->" name_end)
    string(SUBSTRING "${text}" 0 ${name_end} name)
    # Skip to the line after the opening fence.
    string(FIND "${text}" "```" fence)
    string(SUBSTRING "${text}" ${fence} -1 text)
    string(FIND "${text}" "\n" eol)
    math(EXPR body_at "${eol} + 1")
    string(SUBSTRING "${text}" ${body_at} -1 text)
    string(FIND "${text}" "\n```" close)
    if(close EQUAL -1)
      message(FATAL_ERROR "${doc}: the block of ${name} has no closing fence")
    endif()
    math(EXPR body_len "${close} + 1")
    string(SUBSTRING "${text}" 0 ${body_len} block)
    file(WRITE "${dest}/${name}" "${block}")
    list(APPEND found "${name}")
    string(SUBSTRING "${text}" ${body_len} -1 text)
  endwhile()
  set(extracted "${found}" PARENT_SCOPE)
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)

# Extracts the example of `doc` (which must mark `source` and CMakeLists.txt) into
# ${work}/<name>-src and builds it against the installed lengen in ${work}/<name>-build.
function(build_example name doc source)
  extract("${SOURCE_DIR}/${doc}" "${work}/${name}-src")
  if(NOT "${source}" IN_LIST extracted OR NOT "CMakeLists.txt" IN_LIST extracted)
    message(FATAL_ERROR "${doc} must mark ${source} and CMakeLists.txt; found: ${extracted}")
  endif()
  run(${CMAKE_COMMAND} -S "${work}/${name}-src" -B "${work}/${name}-build" -G "${GENERATOR}"
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
  run(${CMAKE_COMMAND} --build "${work}/${name}-build")
endfunction()

run(${CMAKE_COMMAND} --install "${BINARY_DIR}" --prefix "${prefix}")
# An installed lengen searches its own plugin folder, never the build tree it came from: a
# frozen install must not load plugins rebuilt since (a newer ABI would be refused).
unset(ENV{LENGEN_PLUGIN_PATH})
run("${prefix}/bin/lengen" plugins)
string(REGEX MATCH "plugin search path: [^\n]*" search_line "${last_output}")
string(FIND "${search_line}" "${prefix}/lib/lengen/plugins" own)
string(FIND "${search_line}" "${BINARY_DIR}/lib/lengen/plugins" build_tree)
if(own EQUAL -1 OR NOT build_tree EQUAL -1)
  message(FATAL_ERROR "installed lengen's plugin search path should be its own folder only:\n${search_line}")
endif()
build_example(position docs/writing-a-position-scheme.md kerple_log.cpp)
set(lib "${work}/position-build/liblengen-position-kerple_log.so")
if(NOT EXISTS "${lib}")
  message(FATAL_ERROR "the out-of-tree build did not produce ${lib}")
endif()
# The installed CLI finds the plugin through --plugin-path and lists it.
run("${prefix}/bin/lengen" plugins --plugin-path "${work}/position-build" --describe kerple_log)
if(NOT last_output MATCHES "KERPLE log bias")
  message(FATAL_ERROR "installed lengen did not list the plugin:\n${last_output}")
endif()
# The in-tree contract suite runs over every scheme on the path, the new one included.
set(ENV{LENGEN_PLUGIN_PATH} "${work}/position-build")
run("${BINARY_DIR}/bin/lengen_unit_tests" "position contract*")
if(NOT last_output MATCHES "All tests passed")
  message(FATAL_ERROR "contract tests did not pass with the plugin:\n${last_output}")
endif()

# The installed Python package finds the same plugin on the same search path, trains with it
# (lengen.run) and gives the installed CLI's logits (where the package was built).
if(PYTHON)
  file(GLOB_RECURSE _paths_py "${prefix}/_paths.py")
  list(LENGTH _paths_py _found)
  if(NOT _found EQUAL 1)
    message(FATAL_ERROR "the install holds ${_found} Python packages (lengen/_paths.py): ${_paths_py}")
  endif()
  get_filename_component(_package "${_paths_py}" DIRECTORY)
  get_filename_component(_site "${_package}" DIRECTORY)
  file(WRITE "${work}/kerple.yaml" "name: kerple
seed: 1
output_dir: ${work}/runs
threads: 1
task: {name: addition, train_digits: [1, 2], eval_digits: [1, 3]}
model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}
position: [{name: kerple_log}]
train: {steps: 4, batch_size: 8, log_every: 2, checkpoint_every: 2}
eval: {samples: 4}
")
  file(WRITE "${work}/kerple.py" "import json, subprocess, sys
import lengen
assert 'kerple_log' in [e['name'] for e in lengen.registered('position')], lengen.plugin_search_path()
run = lengen.run(sys.argv[1])
cli = json.loads(subprocess.run([sys.argv[2], 'logits', run.dir, '57+48'], capture_output=True, text=True, check=True).stdout)
assert run.forward('57+48').last_logits[0].double().tolist() == cli['logits']
print('python: kerple_log trained and equal to the CLI')
")
  set(ENV{LENGEN_PLUGIN_PATH} "${work}/position-build")
  set(ENV{PYTHONPATH} "${_site}")
  run("${PYTHON}" "${work}/kerple.py" "${work}/kerple.yaml" "${prefix}/bin/lengen")
  if(NOT last_output MATCHES "kerple_log trained and equal to the CLI")
    message(FATAL_ERROR "the Python package did not use the out-of-tree plugin:\n${last_output}")
  endif()
  message(STATUS "${last_output}")
  unset(ENV{PYTHONPATH})
  unset(ENV{LENGEN_PLUGIN_PATH})
else()
  message(STATUS "no Python package in this build: its step is left out")
endif()

# A stage kind built out of tree (docs/stages.md) runs as the second stage of an experiment.
build_example(stage docs/stages.md attention_snapshot.cpp)
file(WRITE "${work}/snapshot.yaml" "name: snap
seed: 1
output_dir: ${work}/runs
task: {name: addition, train_digits: [1, 2], eval_digits: [1, 3]}
model: {layers: 2, heads: 2, d_model: 64, d_ff: 128}
position: [{name: coupling, max_position: 16}]
train: {steps: 1000, batch_size: 64, optimizer: {name: adam, lr: 0.003}}
stages:
  - {name: train}
  - {name: snapshot, kind: attention_snapshot, value: 1, samples: 32}
")
run("${prefix}/bin/lengen" run "${work}/snapshot.yaml" --plugin-path "${work}/stage-build")
foreach(f attention.safetensors attention.json stage.json)
  if(NOT EXISTS "${work}/runs/snap/1/stages/snapshot/${f}")
    message(FATAL_ERROR "the out-of-tree stage did not write ${f}:\n${last_output}")
  endif()
endforeach()
# An optimizer built out of tree (docs/writing-a-plugin.md) passes the optimizer contract and
# trains a model through the installed CLI.
build_example(optimizer docs/writing-a-plugin.md lion.cpp)
set(ENV{LENGEN_PLUGIN_PATH} "${work}/optimizer-build")
# --success prints each passing check under its section, so the plugin's own section shows.
run("${BINARY_DIR}/bin/lengen_unit_tests" "train contract: every registered optimizer" --success)
if(NOT last_output MATCHES "All tests passed" OR NOT last_output MATCHES "\n  lion\n")
  string(SUBSTRING "${last_output}" 0 3000 head)
  message(FATAL_ERROR "the optimizer contract did not run over lion, or failed:\n${head}")
endif()
file(WRITE "${work}/lion.yaml" "name: lion
seed: 1
output_dir: ${work}/runs
task: {name: addition, train_digits: [1, 2], eval_digits: [1, 2]}
model: {layers: 1, heads: 2, d_model: 32, d_ff: 64}
position: [{name: coupling, max_position: 16}]
train: {steps: 60, batch_size: 32, optimizer: {name: lion, lr: 0.0003}, log_every: 20}
eval: {samples: 10}
")
unset(ENV{LENGEN_PLUGIN_PATH})
run("${prefix}/bin/lengen" run "${work}/lion.yaml" --plugin-path "${work}/optimizer-build")
file(READ "${work}/runs/lion/1/config.yaml" resolved)
if(NOT resolved MATCHES "name: lion" OR NOT resolved MATCHES "liblengen-optimizer-lion.so")
  message(FATAL_ERROR "the run did not record the out-of-tree optimizer:\n${resolved}")
endif()
message(STATUS "out-of-tree plugins built (a position scheme, a stage kind and an optimizer), the installed CLI "
               "used them, contract tests passed")
