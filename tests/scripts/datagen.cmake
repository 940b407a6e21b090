# Tests of the scripts in scripts/datagen:
# - mufu_table_refusals: mufu_table.py refuses a MUFU table its code cannot hold or whose rebuilt
#   bit sums are not the GPU's (tests/scripts/mufu_table_refusals.py). A few seconds; exit 77
#   without NumPy.
# - schedule_factor_keys: schedule_factor_keys.py's replay of the forward-in-time scoring of kernel
#   factors gives, with the shipped key, what schedule_fit.py eval --kernel-factors earlier stored
#   (tests/scripts/schedule_factor_keys_check.py). About a second.
# - variant_clocks_root: variant_clocks.py --effective reads the run folders under --root
#   (tests/scripts/variant_clocks_check.py). About a second.
# - effect_floor: effect_floor.py's chances for an exact prediction on made-up files, its model
#   counts against the stored scoring, and its refusals (tests/scripts/effect_floor_check.py).
#   About a second.
find_program(FA4SIM_PYTHON3 python3)
if(FA4SIM_PYTHON3)
  add_test(NAME mufu_table_refusals
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/mufu_table_refusals.py)
  add_test(NAME schedule_factor_keys
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/schedule_factor_keys_check.py)
  add_test(NAME variant_clocks_root
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/variant_clocks_check.py
                   $<TARGET_FILE:fa4sim>)
  add_test(NAME effect_floor
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/effect_floor_check.py)
  set_tests_properties(mufu_table_refusals schedule_factor_keys variant_clocks_root effect_floor PROPERTIES
                       LABELS fast SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
