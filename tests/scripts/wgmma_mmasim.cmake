# Cross-check of the wgmma model (core/wgmma_model.h) against MMA-Sim (PyPI mmasim, which needs
# torch >= 2.9): scripts/check/check_wgmma_mmasim.py writes 6000 random and adversarial dot
# products per type (bf16, fp16, e4m3, e5m2) with mmasim's D, then test_wgmma_model's SampleFile
# test compares the C++ model with every D, bit for bit. About 10 s.
# Exit 77 = numpy, torch or mmasim missing: ctest shows a visible "Skipped".
find_program(FA4SIM_PYTHON3 python3)
if(FA4SIM_PYTHON3 AND TARGET test_wgmma_model)
  add_test(NAME wgmma_mmasim_crosscheck
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/check/check_wgmma_mmasim.py
                   --make ${CMAKE_CURRENT_BINARY_DIR}/wgmma_mmasim_sample --n 6000
                   --model-test $<TARGET_FILE:test_wgmma_model>)
  set_tests_properties(wgmma_mmasim_crosscheck PROPERTIES LABELS fast SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
