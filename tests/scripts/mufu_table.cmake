# scripts/datagen/mufu_table.py refuses a MUFU table its code cannot hold or whose rebuilt bit sums
# are not the GPU's (tests/scripts/mufu_table_refusals.py). A few seconds; exit 77 without NumPy.
find_program(FA4SIM_PYTHON3 python3)
if(FA4SIM_PYTHON3)
  add_test(NAME mufu_table_refusals
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/mufu_table_refusals.py)
  set_tests_properties(mufu_table_refusals PROPERTIES LABELS fast SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
