# cmake -DBIN=<executable> -DWANT=<code> -P expect_exit.cmake: runs BIN with an empty PATH and
# fails unless it exits with WANT.
set(ENV{PATH} "/nonexistent")
execute_process(COMMAND ${BIN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${WANT}")
  message(FATAL_ERROR "${BIN} exited ${rc}, expected ${WANT}\n${out}\n${err}")
endif()
message(STATUS "${BIN} exited ${rc} as expected")
