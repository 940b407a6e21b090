// The emulation against the MUFU's exp2 on the CPU (include/fa4sim/analysis/exp2_vs_mufu.h): with
// the H200's model and --exhaustive, every count is the exact count over the range, recomputed
// here input by input; a sampled run agrees with the same functions on its own inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "fa4sim/analysis/exp2_vs_mufu.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/core/mufu.h"

namespace fa4sim {
namespace {

// Every float32 of [0.5, 1) and [-1, -0.5) (2^24 inputs): the exhaustive run's identical and
// within-1-ulp counts and its largest distances equal a direct loop over the same inputs.
TEST(Exp2VsMufu, ExhaustiveCountsAreExact) {
  const Ex2ApproxTable t = ex2_approx_table();
  for (const auto& [lo, hi] : {std::pair{0.5, 1.0}, std::pair{-1.0, -0.5}}) {
    Exp2Config cfg;
    cfg.degrees = {1, 3};
    cfg.lo = lo, cfg.hi = hi;
    cfg.exhaustive = true;
    cfg.threads = 2;
    cfg.progress = false;
    const Exp2MufuResult r = run_exp2_vs_mufu(cfg, mufu_model_exp2());
    ASSERT_EQ(r.vs_mufu.size(), 2u);
    for (const auto& v : r.vs_mufu) {
      double n = 0, identical = 0, within = 0, max_out = 0, max_f32 = 0;
      for (float x = exp2_first_input(lo); x < float(hi); x = std::nextafter(x, 2.0f)) {
        const float e = ex2_emu(x, v.degree), m = ex2_approx_ftz(x, t);
        const double dout = std::fabs(double(encode(kBF16, e, Overflow::ieee)) -
                                      double(encode(kBF16, m, Overflow::ieee)));
        n += 1;
        identical += dout == 0;
        within += dout <= 1;
        max_out = std::max(max_out, dout);
        max_f32 = std::max(max_f32, std::fabs(double(f32_bits(e)) - double(f32_bits(m))));
      }
      EXPECT_EQ(v.n, n) << lo << " degree " << v.degree;
      EXPECT_EQ(v.identical, identical) << lo << " degree " << v.degree;
      EXPECT_EQ(v.within_1ulp, within) << lo << " degree " << v.degree;
      EXPECT_EQ(v.max_ulp_out, max_out) << lo << " degree " << v.degree;
      EXPECT_EQ(v.max_ulp_f32, max_f32) << lo << " degree " << v.degree;
      EXPECT_LT(v.identical, v.n);  // degree 1 and 3 both differ from the MUFU somewhere
    }
    EXPECT_EQ(r.mufu.n, uint64_t(1) << 23);
  }
}

// The report's section: results[key] with the source named, one row per degree.
TEST(Exp2VsMufu, ReportNamesTheSource) {
  Exp2Config cfg;
  cfg.degrees = {3};
  cfg.samples = 4096;
  cfg.threads = 1;
  cfg.progress = false;
  const Exp2MufuResult r = run_exp2_vs_mufu(cfg, mufu_model_exp2());
  Report rep;
  add_exp2_vs_mufu(rep, cfg, r, "mufu_model", "the model", json{{"table", "x"}});
  EXPECT_EQ(rep.results.at("mufu_model").at("source"), "the model");
  EXPECT_EQ(rep.results.at("mufu_model").at("table"), "x");
  EXPECT_EQ(rep.results.at("mufu_model").at("emulation_vs_mufu").size(), 1u);
  EXPECT_EQ(rep.results.at("mufu_model").at("emulation_vs_mufu")[0].at("n"), 4096.0);
  ASSERT_EQ(rep.tables.size(), 2u);
}

}  // namespace
}  // namespace fa4sim
