# Cross-check of the minimax step of `fa4sim fit` (Boost cpp_bin_float_50 Remez) against an
# independent mpmath Remez (scripts/check/check_fit_mpmath.py), degree 3 with c0 free and c0 = 1:
# coefficients within 1e-20 relative (they agree to ~1e-31). A few seconds.
# Exit 77 = mpmath missing: ctest shows a visible "Skipped".
find_program(FA4SIM_PYTHON3 python3)
if(FA4SIM_PYTHON3)
  add_test(NAME fit_mpmath_crosscheck
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/check/check_fit_mpmath.py
                   --fa4sim $<TARGET_FILE:fa4sim> --degrees 3)
  set_tests_properties(fit_mpmath_crosscheck PROPERTIES LABELS fast SKIP_RETURN_CODE 77 TIMEOUT 300)
else()
  message(STATUS "✗ python3 not found: the mpmath cross-check of fa4sim fit is not registered")
endif()
