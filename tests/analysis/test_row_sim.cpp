// Tests for row_sim.h: the --exp choice, the kernel's safety assertion, the score check and
// simulate_rows' independence from the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fa4sim/analysis/row_sim.h"
#include "fa4sim/core/mufu.h"
#include "fa4sim/util/error.h"
#include "normal_matrix.h"

namespace fa4sim {
namespace {

using test::normal_matrix;

// Parsing of the --exp modes: mufu, emuN and schedule run the MUFU's steps through the hardware
// models; cr (the fast mode) and exact do not; each name round-trips.
TEST(RowSim, ParseExp) {
  EXPECT_EQ(parse_exp2_choice("emu3").degree, 3);
  EXPECT_EQ(parse_exp2_choice("schedule:16,4,1").freq, 16);
  EXPECT_THROW(parse_exp2_choice("emu9"), Error);
  EXPECT_EQ(parse_exp2_choice("mufu").mode, Exp2Mode::ex2_approx);
  EXPECT_EQ(parse_exp2_choice("cr").mode, Exp2Mode::rounded_fp32);
  for (const char* s : {"mufu", "emu3", "schedule:16,4,1"})
    EXPECT_TRUE(parse_exp2_choice(s).hardware) << s;
  for (const char* s : {"cr", "exact"}) EXPECT_FALSE(parse_exp2_choice(s).hardware) << s;
  for (const char* s : {"mufu", "cr", "exact", "emu3", "schedule:16,4,1"})
    EXPECT_EQ(exp2_choice_name(parse_exp2_choice(s)), s);
  try {
    parse_exp2_choice("fast");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("unknown --exp 'fast'"), std::string::npos);
  }
}

// With the hardware models every MUFU step of a row is the H200's: P and acc_scale through
// ex2.approx, 1 / row_sum through rcp.approx, the LSE's log2 through lg2.approx; cr gives the
// correctly rounded functions instead.
TEST(RowSim, MufuModeUsesTheHardwareModels) {
  const MufuHardware hw = mufu_hardware();
  const int keys = 64;
  std::vector<float> S(keys), V(keys, 0.0f);
  for (int k = 0; k < keys; ++k) S[size_t(k)] = -0.37f * float(k % 13) - 0.011f * float(k);
  V[0] = 1.0f;
  for (const bool mufu : {true, false}) {
    SoftmaxParams p;
    p.exp2 = parse_exp2_choice(mufu ? "mufu" : "cr");
    p.p_format = kFP32;
    p.rescale_threshold = 0;
    RowBlockSim sim(p, 1, 1);
    sim.process_tile(S.data(), keys, V.data(), 1, keys);
    float o = 0, lse = 0;
    sim.finalize(&o, 1, &lse);
    // the row by hand: max S[0] = 0, P = exp2(S - 0), row_sum in RowBlockSim's 8 lanes
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < keys; ++k) {
      const float x = std::fma(S[size_t(k)], 1.0f, -0.0f);
      acc[k % 8] += mufu ? ex2_approx_ftz(x, hw.ex2) : float(std::exp2(double(x)));
    }
    for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
    const float sum = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    const float p0 = mufu ? ex2_approx_ftz(0.0f, hw.ex2) : 1.0f;
    EXPECT_EQ(o, p0 * (mufu ? rcp_approx_ftz(sum, hw.rcp) : 1.0f / sum)) << mufu;
    const float lg = mufu ? lg2_approx_ftz(sum, hw.lg2) : float(std::log2(double(sum)));
    EXPECT_EQ(lse, ((0.0f * 1.0f + lg) - 0.0f) * float(0.693147180559945309417)) << mufu;
  }
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
