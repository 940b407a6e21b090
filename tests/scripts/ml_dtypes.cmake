# Cross-check of the number formats against ml_dtypes / numpy over all 2^32 float32 inputs
# (scripts/check/check_ml_dtypes.py) for e4m3, e5m2 and bf16, both overflow modes (148 s alone
# on the 2-core VM at load average ~4, 2026-12-02: 45 s e4m3, 53 s e5m2, 46 s bf16). fp16 against numpy.float16 is left to `--formats fp16` by hand: numpy's float16
# cast runs at ~14 M elements/s on overflowing inputs, over 5 minutes for 2^32 on its own.
# Exit 77 = ml_dtypes or numpy missing: ctest shows a visible "Skipped".
# With the Python module built, tests/python/CMakeLists.txt registers these two names for the
# same check and the API's beside it, on one ml_dtypes cast of each input (ml_dtypes_exhaustive.py
# --cli); without it, the CLI's check alone runs here.
find_program(FA4SIM_PYTHON3 python3)
if(FA4SIM_PYTHON3)
  if(NOT FA4SIM_PYTHON_BUILT)
    add_test(NAME ml_dtypes_crosscheck
             COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/check/check_ml_dtypes.py
                     --fa4sim $<TARGET_FILE:fa4sim> --formats e4m3,e5m2,bf16)
    set_tests_properties(ml_dtypes_crosscheck PROPERTIES LABELS slow SKIP_RETURN_CODE 77 TIMEOUT 1800)
    # The OCP MX formats against float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e8m0fnu
    # (satfinite only for the three without NaN; both modes for e8m0), and every code's decoding.
    add_test(NAME ml_dtypes_crosscheck_mx
             COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/check/check_ml_dtypes.py
                     --fa4sim $<TARGET_FILE:fa4sim> --formats e2m1,e2m3,e3m2,e8m0)
    set_tests_properties(ml_dtypes_crosscheck_mx PROPERTIES LABELS slow SKIP_RETURN_CODE 77 TIMEOUT 2400)
  endif()
  # The repair of ml_dtypes < 0.6's e8m0 bug (check_ml_dtypes.E8M0_BUG) on made-up chunks, whatever
  # ml_dtypes is installed: the exhaustive checks above use it only under such a version.
  add_test(NAME check_ml_dtypes_repair
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/scripts/check_ml_dtypes_repair.py)
  set_tests_properties(check_ml_dtypes_repair PROPERTIES LABELS fast SKIP_RETURN_CODE 77 TIMEOUT 60)
  # Block quantisers against torchao's reference (its numpy port when torch is absent), 10^6
  # blocks per mode of every kind in CI; the 10^7 per mode of docs/commands/block.md is the
  # script's default (`python3 scripts/check/check_block_scale.py`), run by hand: it outlasts CI's time.
  add_test(NAME block_scale_crosscheck
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/check/check_block_scale.py
                   --fa4sim $<TARGET_FILE:fa4sim> --blocks 1000000)
  set_tests_properties(block_scale_crosscheck PROPERTIES LABELS slow SKIP_RETURN_CODE 77 TIMEOUT 3600)
else()
  message(STATUS "✗ python3 not found: the ml_dtypes cross-check is not registered")
endif()
