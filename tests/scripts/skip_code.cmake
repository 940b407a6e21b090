# A GoogleTest executable whose test skips (here: test_numpy_rng with no python3 on PATH) must
# exit 77, so that ctest shows "Skipped" and a missing numpy cannot pass as "Passed".
add_test(NAME gtest_skip_is_visible
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:test_numpy_rng> -DWANT=77
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_exit.cmake)
set_tests_properties(gtest_skip_is_visible PROPERTIES LABELS fast TIMEOUT 60)
