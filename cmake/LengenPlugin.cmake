# lengen_add_plugin(NAME <name> KIND <position|task|stage|optimizer|decay|norm|activation|architecture> SOURCES <files...> [TESTS <files...>])
#
# Builds a loadable lengen plugin, liblengen-<kind>-<name>.so, as a MODULE library with only
# the lengen_plugin_v1 entry point exported. Works in-tree and against an installed lengen
# (find_package(lengen)). In-tree, the plugin's object library is also available as
# lengen_plugin_<name>_obj so unit tests can call its register function directly.
function(lengen_add_plugin)
  cmake_parse_arguments(P "" "NAME;KIND" "SOURCES;TESTS" ${ARGN})
  if(NOT P_NAME OR NOT P_KIND OR NOT P_SOURCES)
    message(FATAL_ERROR "lengen_add_plugin: NAME, KIND and SOURCES are required")
  endif()
  if(NOT P_KIND MATCHES "^(position|task|stage|optimizer|decay|norm|activation|architecture)$")
    message(FATAL_ERROR "lengen_add_plugin(${P_NAME}): KIND must be position, task, stage, optimizer, decay, norm, activation or architecture, got '${P_KIND}'")
  endif()
  set(core lengen::core)
  if(TARGET lengen_core)
    set(core lengen_core)
  endif()
  set(target lengen_plugin_${P_NAME})
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE ${core})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME lengen-${P_KIND}-${P_NAME}
    PREFIX lib
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  if(DEFINED LENGEN_BUILD_PLUGIN_DIR)
    # In-tree: land next to the other plugins, reuse the shared PCH, install with the framework.
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${LENGEN_BUILD_PLUGIN_DIR}
      INSTALL_RPATH "$ORIGIN/../..")
    if(COMMAND lengen_use_pch)
      lengen_use_pch(${target})
    endif()
    if(COMMAND lengen_set_warnings)
      lengen_set_warnings(${target})
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/lengen/plugins)
    # Test executables load every in-tree plugin at run time: they depend on this list.
    set_property(GLOBAL APPEND PROPERTY LENGEN_PLUGIN_TARGETS ${target})
  endif()
  if(P_TESTS AND TARGET lengen_unit_test_main)
    # Co-located plugin tests. They reach the plugin through the registry (the loader finds
    # the freshly built library by convention), never through its symbols.
    add_executable(test_plugin_${P_NAME} ${P_TESTS})
    target_link_libraries(test_plugin_${P_NAME} PRIVATE ${core} lengen_unit_test_main)
    target_include_directories(test_plugin_${P_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/test/support)
    add_dependencies(test_plugin_${P_NAME} ${target})
    if(COMMAND lengen_use_pch)
      lengen_use_pch(test_plugin_${P_NAME})
    endif()
    add_test(NAME plugin.${P_NAME} COMMAND test_plugin_${P_NAME})
    set_tests_properties(plugin.${P_NAME} PROPERTIES LABELS plugin)
  endif()
endfunction()
