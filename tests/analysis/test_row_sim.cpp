// Tests for row_sim.h: the --exp choice, the kernel's safety assertion, the score check and
// simulate_rows' independence from the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fa4sim/analysis/row_sim.h"
#include "fa4sim/util/error.h"
#include "normal_matrix.h"

namespace fa4sim {
namespace {

using test::normal_matrix;

// Parsing of the --exp modes.
TEST(RowSim, ParseExp) {
  EXPECT_EQ(parse_exp2_choice("emu3").degree, 3);
  EXPECT_EQ(parse_exp2_choice("schedule:16,4,1").freq, 16);
  EXPECT_THROW(parse_exp2_choice("emu9"), Error);
}

// The kernel's assertion max_offset + tau < log2(dtype_max).
TEST(RowSim, SafetyCheck) {
  EXPECT_TRUE(safety_check(kE4M3, 0.0, 8.0).safe);
  EXPECT_TRUE(safety_check(kE4M3, 0.75, 8.0).safe);
  const SafetyCheck c = safety_check(kE4M3, 4.0, 8.0);
  EXPECT_FALSE(c.safe);
  EXPECT_NEAR(c.largest_safe_tau, std::log2(448.0) - 8.0, 1e-12);
  EXPECT_NE(c.explanation.find("4096"), std::string::npos);
  EXPECT_TRUE(safety_check(kE5M2, 4.0, 8.0).safe);
  EXPECT_TRUE(safety_check(kBF16, 8.0, 0.0).safe);
  EXPECT_FALSE(safety_check(kFP16, 8.0, 8.0).safe);  // 16 >= log2(65504) = 15.999
}

// Results do not depend on the thread count (bit for bit).
TEST(RowSim, DeterministicAcrossThreads) {
  const int rows = 96, keys = 1024, d = 24;
  const auto S = normal_matrix(rows, keys, 6.0, 41);
  const auto V = normal_matrix(keys, d, 1.0, 42);
  SoftmaxParams p;
  p.rescale_threshold = 8.0f;
  const auto a = simulate_rows(p, S.data(), rows, keys, 128, BlockOrder::reverse, V.data(), d, 1);
  const auto b = simulate_rows(p, S.data(), rows, keys, 128, BlockOrder::reverse, V.data(), d, 3);
  EXPECT_EQ(a.O, b.O);
  EXPECT_EQ(a.lse, b.lse);
  EXPECT_EQ(a.counts.warp_rescales, b.counts.warp_rescales);
}

// check_scores refuses NaN and +inf scores and names the first one; -inf (a masked key) passes.
TEST(RowSim, CheckScoresRefusesNanAndInf) {
  std::vector<float> s = {0.5f, -std::numeric_limits<float>::infinity(), 3.0f, 1.0f};
  EXPECT_NO_THROW(check_scores(s.data(), 2, 2, "scores"));
  s[2] = std::numeric_limits<float>::quiet_NaN();
  try {
    check_scores(s.data(), 2, 2, "scores");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scores: score [1, 0] is nan"), std::string::npos)
        << e.what();
  }
  s[2] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(check_scores(s.data(), 2, 2, "scores"), Error);
}

}  // namespace
}  // namespace fa4sim
