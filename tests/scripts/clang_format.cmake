# clang_format: the tree's C++/CUDA files are clang-format clean under .clang-format
# (scripts/check/clang_format.sh --check: every *.cpp *.h *.cu *.cuh git tracks but the generated
# src/cuda/wgmma_ops.cuh; --fix formats them). While tests/scripts/clang_format_files.txt exists
# (the tree before its one formatting commit, which deletes the list), only the files it lists are
# checked. Without clang-format-14 the script exits 77, a visible "Skipped".
# The list is read when the test runs, not when CMake configures.
add_test(NAME clang_format
         COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/check/clang_format.sh --check
                 --list-if-present tests/scripts/clang_format_files.txt
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(clang_format PROPERTIES LABELS fast SKIP_RETURN_CODE 77 TIMEOUT 300)
