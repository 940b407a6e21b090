# scripts/build/version.cmake: writes OUT (the generated version.cpp) from src/util/version.cpp.in with the
# current `git describe --always --dirty`. Run at every build (CMakeLists.txt, target
# fa4sim_version), so reports carry the git state the binary was built from, not the one CMake
# was configured at; configure_file rewrites OUT only when the text changes (no needless rebuild).
# Inputs: -DSRC=<source dir> -DOUT=<file> -DPROJECT_VERSION=<x.y.z>
execute_process(COMMAND git describe --always --dirty --abbrev=12
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE FA4SIM_GIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT FA4SIM_GIT)
  set(FA4SIM_GIT "unknown")
endif()
configure_file(${SRC}/src/util/version.cpp.in ${OUT} @ONLY)
