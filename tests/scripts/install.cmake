# `cmake --install` gives a working P/bin/fa4sim: its data (roofline's architectures) and
# drivers come from P/share/fa4sim, not from this source tree (tests/install_check.cmake).
add_test(NAME install_layout
         COMMAND ${CMAKE_COMMAND} -DBUILD=${CMAKE_BINARY_DIR} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/install-check
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/install_check.cmake)
set_tests_properties(install_layout PROPERTIES LABELS fast TIMEOUT 120)
