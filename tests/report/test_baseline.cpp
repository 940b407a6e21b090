// The --baseline comparison (Note [Report baseline]): 1e-9 relative, 4 standard errors where a
// result states one, and every structural change moves.
#include <gtest/gtest.h>

#include "fa4sim/report/baseline.h"

using namespace fa4sim;

TEST(Baseline, NumbersMoveBeyondTheirTolerance) {
  const json was = {{"a", 1.0}, {"p", 99.0}, {"p_stderr", 0.01}};
  EXPECT_TRUE(
      compare_results(was, {{"a", 1.0 + 1e-12}, {"p", 99.039}, {"p_stderr", 0.01}}).empty());
  const auto moved = compare_results(was, {{"a", 1.0 + 1e-6}, {"p", 99.06}, {"p_stderr", 0.01}});
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved[0].where, "results.a");
  EXPECT_EQ(moved[0].tolerance, "1e-9 relative");
  EXPECT_EQ(moved[1].where, "results.p");
  EXPECT_EQ(moved[1].tolerance, "4 s.e. = 0.0566");
}

TEST(Baseline, StructureMoves) {
  const json was = {{"rows", {1, 2}}, {"name", "x"}, {"gone", true}};
  const auto moved = compare_results(was, {{"rows", {1, 2, 3}}, {"name", "y"}, {"new", nullptr}});
  ASSERT_EQ(moved.size(), 4u);
  EXPECT_EQ(moved[0].was, "2 entries");
  EXPECT_EQ(moved[1].where, "results.name");
  EXPECT_EQ(moved[2].now, "(missing)");
  EXPECT_EQ(moved[3].where, "results.new");
}
