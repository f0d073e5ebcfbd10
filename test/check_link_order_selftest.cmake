# check_link_order.cmake against a toolchain that links libstdc++ statically (the GPU image's
# /opt/gcc), which CI's machines do not have: a folder holding libstdc++.a alone stands in for it,
# and a small libtorch_fake.so exports its own std::filesystem as PyTorch's libtorch.so does.
#  * a program linked the old way (libstdc++ named only before the objects) binds remove_all to
#    libtorch_fake.so: the check must refuse it;
#  * linked as lengen links now (libstdc++ also after the objects, ahead of the Torch library),
#    it holds its own copy: the check must pass.
# Prints "skipped: no libstdc++.a" (CTest's SKIP_REGULAR_EXPRESSION) where the compiler has none.
# Arguments: -DCXX=<compiler> -DWORK=<scratch folder> -DCHECK=<check_link_order.cmake>
execute_process(COMMAND "${CXX}" -print-file-name=libstdc++.a OUTPUT_VARIABLE archive
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT IS_ABSOLUTE "${archive}" OR NOT EXISTS "${archive}")
  message(STATUS "skipped: no libstdc++.a for ${CXX}")
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/static")
file(CREATE_LINK "${archive}" "${WORK}/static/libstdc++.a" SYMBOLIC)
file(WRITE "${WORK}/main.cpp" "#include <filesystem>\nint main() { std::filesystem::remove_all(\"${WORK}/none\"); }\n")
file(WRITE "${WORK}/torch.cpp" "#include <filesystem>\nvoid fake() { std::filesystem::remove_all(\"${WORK}/none\"); }\n")

function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${err}")
  endif()
endfunction()
set(static -L${WORK}/static -static-libstdc++)
run("${CXX}" -std=c++17 -fPIC -shared ${static} torch.cpp -o libtorch_fake.so)
run("${CXX}" -std=c++17 -fPIC -c main.cpp -o main.o)
set(first -Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state)
set(torch -L${WORK} -ltorch_fake -Wl,-rpath,${WORK})
run("${CXX}" ${static} ${first} main.o ${torch} -o old)
run("${CXX}" ${static} ${first} main.o -lstdc++ ${torch} -o new)

execute_process(COMMAND "${CMAKE_COMMAND}" -DFILES=${WORK}/old -P "${CHECK}"
                RESULT_VARIABLE rc_old OUTPUT_VARIABLE out_old ERROR_VARIABLE err_old)
execute_process(COMMAND "${CMAKE_COMMAND}" -DFILES=${WORK}/new -P "${CHECK}"
                RESULT_VARIABLE rc_new OUTPUT_VARIABLE out_new ERROR_VARIABLE err_new)
if(rc_old EQUAL 0 OR NOT err_old MATCHES "libtorch_fake")
  message(FATAL_ERROR "the check passed a program whose std::filesystem comes from libtorch_fake.so:\n"
                      "${out_old}${err_old}")
endif()
if(NOT rc_new EQUAL 0)
  message(FATAL_ERROR "the check refused a program that holds its own std::filesystem:\n${out_new}${err_new}")
endif()
message(STATUS "old link refused, new link passed:\n${out_new}")
