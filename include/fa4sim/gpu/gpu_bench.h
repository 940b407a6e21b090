// gpu_bench.h: `fa4sim gpu bench-exp`: exp2 throughput on the GPU, exps per clock per SM.
//
// Measures (src/cuda/gpu_backend.cu, Note [Bench chains]): MUFU only, emulation only, and the
// mixtures with k of 16 independent chains emulated (f = k/16), for each requested degree; and
// the upstream interleaving rule (apply_exp2_convert) for every distinct (freq, res, start_frg)
// of the tuning table, with its emulated fraction. Exp only: no scale FMA, row sum or conversion
// (what the roofline pipe model calls "exp only"). Cycles are the SMs' own clock64() spans, so
// the rates do not depend on the clock the card happens to run at (which is reported).
// Each point is the median of `reps` launches after one warm-up launch.
//
// The result goes to a report and to the roofline's measured-data file (schema
// "fa4sim/bench-exp-v1", include/fa4sim/analysis/roofline.h), with the model's prediction next to it.
#pragma once

#include <string>
#include <vector>

#include "fa4sim/gpu/gpu.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

struct GpuBenchOptions {
  std::vector<int> degrees{3};
  int reps = 5;
  // --coeffs: the mix points (f = 0..1) of degree coeffs.size() - 1 run these coefficients
  // instead of POLY_EX2 (gpu::set_ex2_coeffs); the interleaving-rule points keep upstream's.
  std::vector<float> coeffs{};
};

struct GpuBenchMixPoint {
  int degree = 3;
  int emulated_of_16 = 0;
  double f = 0;
  gpu::ExpBenchPoint measured;
  double predicted = 0;  // roofline pipe model, exp only (0 if the model could not load)
  std::string predicted_bound;
};
struct GpuBenchRulePoint {
  int degree = 3;
  gpu::RuleConfig rule{};
  double f = 0;  // emulated columns / 128
  gpu::ExpBenchPoint measured;
  double predicted = 0;
};
struct GpuBenchResult {
  gpu::DeviceInfo device;
  std::string arch;         // data/archs entry used for the prediction ("" if none matches)
  std::string model_error;  // why there is no prediction, if so
  std::vector<GpuBenchMixPoint> mix;
  std::vector<GpuBenchRulePoint> rules;
};

// Throws Error (exit 2) on bad options, before any device work; exit 3 without a device.
void validate(const GpuBenchOptions& o);
GpuBenchResult run_gpu_bench(const GpuBenchOptions& o);
Report gpu_bench_report(const GpuBenchOptions& o, const GpuBenchResult& r);
// The roofline's measured-data file, with provenance (command line, date, host, device).
json gpu_bench_measured_json(const GpuBenchResult& r, const std::string& command);

// "NVIDIA H200" -> "nvidia-h200" (file names); the data/archs entry for a device name.
std::string gpu_device_slug(const std::string& name);
std::string gpu_arch_for_device(const std::string& name);

}  // namespace fa4sim
