// gpu_exp2.h: `fa4sim exp2 --hardware`: the MUFU (ex2.approx.ftz.f32, run on the GPU) in the
// exp2 table, and the emulation measured against the MUFU.
//
// Same inputs as the CPU table: run_exp2() (exp2_analysis.h) drives the sampling / exhaustive /
// value-weighted modes and calls the evaluated function once per block of inputs; here that
// function is the MUFU on the device, so
//   (a) MUFU vs the exact 2^x: run_exp2's own statistics (fp32 max rel, out-dtype identical %);
//   (b) emulation vs MUFU, on exactly those inputs: per degree, the share with identical
//       out-dtype (bf16/fp16) rounding, within 1 out-dtype ULP, and the largest distance in
//       fp32 ULPs (ordered bit distance). Exhaustive runs also weight every float by its value
//       width (Note [Value weights] in exp2_analysis.h).
// This is the test of the paper's "degree 3 matches hardware to within 1 BF16 ULP on 99 % of
// inputs" on real hardware (the seed article compared with the exact 2^x instead).
#pragma once

#include <vector>

#include "fa4sim/analysis/exp2_vs_mufu.h"
#include "fa4sim/gpu/gpu.h"

namespace fa4sim {

// The MUFU on the device as run_exp2_vs_mufu's source (exp2_vs_mufu.h).
using Exp2HardwareResult = Exp2MufuResult;

// Needs a device (Error exit 3 otherwise). Validates cfg first (exit 2).
Exp2HardwareResult run_exp2_hardware(const Exp2Config& cfg);
// Adds the hardware tables and results["hardware"] to the CPU table's report.
void add_exp2_hardware(Report& r, const Exp2Config& cfg, const Exp2HardwareResult& hw);

}  // namespace fa4sim
