# scripts/datagen/torch_cuda_randn.py (torch.randn on CUDA recomputed on the CPU) against Random123's
# known answers and torch's printed draws (tests/scripts/torch_cuda_randn_check.py). A few seconds;
# exit 77 without NumPy.
find_program(FA4SIM_PYTHON3 python3)
if(NOT FA4SIM_PYTHON3)
  return()  # from this file only (included by tests/CMakeLists.txt)
endif()
set(_check ${CMAKE_CURRENT_SOURCE_DIR}/scripts/torch_cuda_randn_check.py)
add_test(NAME torch_cuda_randn COMMAND ${FA4SIM_PYTHON3} ${_check})
set_tests_properties(torch_cuda_randn PROPERTIES LABELS fast SKIP_RETURN_CODE 77 TIMEOUT 120)
