# The docs against the code (scripts/check/check_docs.py): docs_examples re-runs every example
# marked `<!-- docs-check -->` in docs/commands/*.md with the built fa4sim and compares the output
# (a few seconds); docs_notes checks that every cited note is defined once and indexed in
# docs/architecture.md; docs_sources that README's tables and docs/style.md's names agree with the
# files they come from; house_rules (scripts/check/check_house.py) that no function is over 120
# lines, no reference leads outside the repository, no include runs up the layers and scripts/
# keeps its layout; house_rules_plants (tests/scripts/check_house_plants.py) that it catches a
# planted long member function, long Python function, forbidden reference, bad include and
# misplaced script. Without python3 each prints why and exits 77: ctest shows a visible "Skipped".
find_program(FA4SIM_PYTHON3 python3)
if(FA4SIM_PYTHON3)
  add_test(NAME docs_examples
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/check/check_docs.py --examples
                   --fa4sim $<TARGET_FILE:fa4sim>)
  add_test(NAME docs_notes COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/check/check_docs.py --notes)
  add_test(NAME docs_sources COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/check/check_docs.py --sources)
  add_test(NAME house_rules COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/check/check_house.py)
  add_test(NAME house_rules_plants
           COMMAND ${FA4SIM_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/scripts/check_house_plants.py)
else()
  foreach(t docs_examples docs_notes docs_sources house_rules house_rules_plants)
    add_test(NAME ${t} COMMAND sh -c "echo 'python3 not found: scripts/check/check_docs.py cannot run'; exit 77")
  endforeach()
endif()
set_tests_properties(docs_examples docs_notes docs_sources house_rules house_rules_plants PROPERTIES LABELS fast SKIP_RETURN_CODE 77 TIMEOUT 120)
