# cmake -DBUILD=<build dir> -DWORK=<scratch dir> -P install_check.cmake
# Installs into WORK/prefix, then runs the installed binary with no access to the source tree's
# data/: it must find P/share/fa4sim/data (and report that path) and the drivers beside it (share/fa4sim/drivers); the developer
# scripts (the rest of scripts/) are not installed.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
set(P ${WORK}/prefix)
foreach(f bin/fa4sim share/fa4sim/data/archs/h100_sxm.json share/fa4sim/data/exp_pipe_model.json
          share/fa4sim/data/published/formats.json share/fa4sim/data/published/roofline.json
          share/fa4sim/drivers/plot.py share/fa4sim/drivers/sdpa_bench.py
          share/fa4sim/drivers/fa4_upstream.py share/fa4sim/drivers/fa4_tricks.py)
  if(NOT EXISTS ${P}/${f})
    message(FATAL_ERROR "missing after install: ${P}/${f}")
  endif()
endforeach()
foreach(f share/fa4sim/scripts share/fa4sim/drivers/check_house.py share/fa4sim/drivers/setup.sh)
  if(EXISTS ${P}/${f})
    message(FATAL_ERROR "installed, but not a driver the binary runs: ${P}/${f}")
  endif()
endforeach()
# A copy of the installed tree elsewhere (as a package manager would move it) still works.
file(COPY ${P} DESTINATION ${WORK}/moved)
set(ENV{FA4SIM_DATA_DIR} "")
execute_process(COMMAND ${WORK}/moved/prefix/bin/fa4sim roofline --arch h100_sxm --d 64 --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed fa4sim roofline failed (${rc}): ${err}")
endif()
string(FIND "${out}" "${WORK}/moved/prefix/share/fa4sim/data" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the installed binary did not read its own share/fa4sim/data:\n${out}")
endif()
# The report's published figures come from the installed data too.
execute_process(COMMAND ${WORK}/moved/prefix/bin/fa4sim report --only formats --out ${WORK}/report --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed fa4sim report --only formats failed (${rc}): ${err}")
endif()
file(REMOVE_RECURSE ${WORK})
message(STATUS "installed and moved fa4sim reads ${WORK}/moved/prefix/share/fa4sim/data")
