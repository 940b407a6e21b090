// main() of every GoogleTest executable: GoogleTest's own, plus one rule. A run in which some
// test called GTEST_SKIP (python3 + numpy missing, not root, ...) and none failed exits 77,
// which ctest shows as "Skipped" (SKIP_RETURN_CODE), not "Passed": a missing dependency is
// visible. A failure still exits 1 and is shown as "Failed", whatever else was skipped.
#include <cstdio>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (rc != 0) return rc;
  const auto* unit = testing::UnitTest::GetInstance();
  if (unit->skipped_test_count() == 0) return 0;
  for (int s = 0; s < unit->total_test_suite_count(); ++s) {
    const auto* suite = unit->GetTestSuite(s);
    for (int t = 0; t < suite->total_test_count(); ++t) {
      const auto* info = suite->GetTestInfo(t);
      if (!info->should_run() || !info->result()->Skipped()) continue;
      std::string why;
      for (int p = 0; p < info->result()->total_part_count(); ++p)
        why += info->result()->GetTestPartResult(p).message();
      std::fprintf(stderr, "SKIPPED %s.%s: %s\n", suite->name(), info->name(), why.c_str());
    }
  }
  return 77;
}
