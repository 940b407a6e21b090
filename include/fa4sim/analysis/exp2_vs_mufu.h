// exp2_vs_mufu.h: the MUFU's exp2 (ex2.approx.ftz.f32) in the exp2 table, and the emulation
// measured against it on the same inputs: the analysis behind `fa4sim exp2 --mufu-model` (the
// H200's bit-exact CPU model, core/mufu.h: no GPU) and `fa4sim exp2 --hardware` (the unit itself,
// gpu/gpu_exp2.h).
//
// Same inputs as the CPU table: run_exp2() (exp2_analysis.h) drives the sampling / exhaustive /
// value-weighted modes and calls the evaluated function once per block of inputs; here that
// function is the MUFU (a `MufuExp2` source), so
//   (a) MUFU vs the exact 2^x: run_exp2's own statistics (fp32 max rel, out-dtype identical %);
//   (b) emulation vs MUFU, on exactly those inputs: per degree, the share with identical
//       out-dtype (bf16/fp16) rounding, within 1 out-dtype ULP, and the largest distance in
//       fp32 ULPs (ordered bit distance). Exhaustive runs also weight every float by its value
//       width (Note [Value weights] in exp2_analysis.h).
// With the CPU model and --exhaustive the comparison is exact over every float32 of the range
// (the model equals the H200 bit for bit on all 2^32 inputs: docs/mufu.md); sampled runs are the
// sampled statistics of the same functions.
// This is the test of the paper's "degree 3 matches hardware to within 1 BF16 ULP on 99 % of
// inputs" (the seed article compared with the exact 2^x instead).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fa4sim/analysis/exp2_analysis.h"

namespace fa4sim {

struct Exp2VsMufu {
  int degree = 3;
  double n = 0, identical = 0, within_1ulp = 0;     // counts
  double wn = 0, widentical = 0, wwithin_1ulp = 0;  // value weights (exhaustive only)
  double max_ulp_out = 0;                           // largest out-dtype ULP distance
  double max_ulp_f32 = 0;                           // largest fp32 ULP distance
  float max_ulp_f32_at = 0;                         // an input where it occurs
};

struct Exp2MufuResult {
  Exp2Result mufu;                  // MUFU vs exact (one "degree" entry)
  std::vector<Exp2VsMufu> vs_mufu;  // per cfg degree
};

// The MUFU's results y[i] = ex2.approx.ftz.f32(x[i]), called from every worker thread.
using MufuExp2 = std::function<void(std::span<const float> x, std::span<float> y)>;
// The H200's CPU model (ex2_approx_ftz with the measured tables, loaded once: a missing or
// damaged table exits 2).
MufuExp2 mufu_model_exp2();

// The first float32 >= lo and the last float32 < hi: the range's ends (exhaustive runs).
float exp2_first_input(double lo);
float exp2_last_input(double hi);

// Runs (a) and (b) over cfg's inputs (validates cfg first, exit 2).
Exp2MufuResult run_exp2_vs_mufu(const Exp2Config& cfg, const MufuExp2& mufu);

// Adds the two tables and results[key] ({"source", "mufu_vs_exact", "emulation_vs_mufu",
// "ref_mp_fallbacks"} plus `extra`'s fields) to the CPU table's report; `source` names the MUFU in
// the tables (a device name, or the CPU model).
void add_exp2_vs_mufu(Report& r, const Exp2Config& cfg, const Exp2MufuResult& m,
                      const std::string& key, const std::string& source, const json& extra);

}  // namespace fa4sim
