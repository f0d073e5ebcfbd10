# Uniform warnings for in-tree targets.
function(lengen_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Winvalid-pch)
  if(LENGEN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# One shared precompiled header for every in-tree target (REUSE_FROM). GCC accepts a PCH only
# when the flags match, so every target that reuses it is compiled with -fPIC, executables too.
function(lengen_use_pch target)
  target_compile_options(${target} PRIVATE -fPIC)
  if(LENGEN_PCH AND TARGET lengen_pch)
    target_precompile_headers(${target} REUSE_FROM lengen_pch)
  endif()
endfunction()
