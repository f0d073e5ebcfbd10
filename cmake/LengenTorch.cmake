# Wraps find_package(Torch) into one INTERFACE target, lengen_torch (lengen::torch when
# installed). Torch's own CMake config puts flags in TORCH_CXX_FLAGS and libraries in
# TORCH_LIBRARIES; this turns them into usage requirements so no target repeats them.
if(NOT TARGET lengen_torch)
  find_package(Torch REQUIRED)
  add_library(lengen_torch INTERFACE)
  separate_arguments(_lengen_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  # The _GLIBCXX_USE_CXX11_ABI define must match libtorch; torch supplies it in TORCH_CXX_FLAGS.
  target_compile_options(lengen_torch INTERFACE ${_lengen_torch_flags})
  target_link_libraries(lengen_torch INTERFACE ${TORCH_LIBRARIES})
  target_include_directories(lengen_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  # The installed package refers to lengen::torch; the build tree must not define that name
  # (an alias there would make install(EXPORT) chase lengen_torch).
  if(LENGEN_TORCH_ALIAS AND NOT TARGET lengen::torch)
    add_library(lengen::torch ALIAS lengen_torch)
  endif()
endif()
