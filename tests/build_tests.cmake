# ctest's build_tests (Note [Tests built by ctest] in tests/CMakeLists.txt): builds the tree when an
# executable the tests run is missing, and does nothing otherwise.
#   cmake -DBUILD_DIR=<build> -DLIST=<file of executable paths, one a line> -P build_tests.cmake
file(STRINGS "${LIST}" exes)
set(missing 0)
foreach(e ${exes})
  if(NOT EXISTS "${e}")
    math(EXPR missing "${missing} + 1")
  endif()
endforeach()
if(missing EQUAL 0)
  message("build_tests: every test executable is built (after a source change: cmake --build ${BUILD_DIR})")
  return()
endif()
cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
message("build_tests: ${missing} test executables missing (scripts/setup.sh builds what the report "
        "needs): cmake --build ${BUILD_DIR} -j ${cores}")
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} -j ${cores} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "build_tests: cmake --build ${BUILD_DIR} failed (${rc})")
endif()
