# clang_format: the files listed in tests/scripts/clang_format_files.txt are clang-format clean
# under .clang-format (clang-format 14: other versions lay out some constructs differently, so
# the check needs that one). Without clang-format-14 it exits 77, a visible "Skipped".
find_program(FA4SIM_CLANG_FORMAT NAMES clang-format-14)
file(STRINGS ${CMAKE_SOURCE_DIR}/tests/scripts/clang_format_files.txt FA4SIM_FORMATTED_FILES
     REGEX "^[^#]")
if(FA4SIM_CLANG_FORMAT)
  add_test(NAME clang_format
           COMMAND ${FA4SIM_CLANG_FORMAT} --dry-run -Werror --style=file ${FA4SIM_FORMATTED_FILES}
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
else()
  add_test(NAME clang_format COMMAND sh -c "echo 'clang-format-14 not found'; exit 77")
endif()
set_tests_properties(clang_format PROPERTIES LABELS fast SKIP_RETURN_CODE 77 TIMEOUT 120)
