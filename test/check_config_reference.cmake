# Fails when docs/config-reference.md's generated section differs from `lengen plugins
# --markdown` (regenerate it with the command printed below).
execute_process(COMMAND "${CLI}" plugins --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lengen plugins --markdown failed (${rc})")
endif()
file(READ "${SOURCE_DIR}/docs/config-reference.md" doc)
set(marker "<!-- generated below: do not edit by hand -->\n")
string(FIND "${doc}" "${marker}" at)
if(at LESS 0)
  message(FATAL_ERROR "docs/config-reference.md lacks the generated-section marker")
endif()
string(LENGTH "${marker}" mlen)
math(EXPR start "${at} + ${mlen}")
string(SUBSTRING "${doc}" ${start} -1 section)
if(NOT section STREQUAL generated)
  message(FATAL_ERROR "docs/config-reference.md is out of date; regenerate its tail with:\n"
    "  sed -i '/generated below/q' docs/config-reference.md && "
    "build/dev/bin/lengen plugins --markdown >> docs/config-reference.md")
endif()
