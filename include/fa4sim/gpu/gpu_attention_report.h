// gpu_attention_report.h: the two analyses behind `fa4sim gpu attention` (src/gpu/
// gpu_attention_report.cpp): the kernel checked against the float64 reference, the CPU model and
// the replay of its own S (--check), and timed next to torch SDPA (--bench). The kernel itself is
// gpu.h's, its shapes and the CPU side gpu_attention.h's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fa4sim/gpu/gpu_attention.h"
#include "fa4sim/util/report.h"
#include "fa4sim/util/seed.h"

namespace fa4sim {

// How far apart two rescale shares (percent) of n decisions each may be: the binomial 3-sigma
// bound of their difference, plus 0.5 points for decisions that flip where the MMA's float32 S
// and the model's differ in the last bit.
double gpu_attn_share_tolerance(double p_pct, uint64_t n);

// ---- the two analyses behind `fa4sim gpu attention` (src/gpu/gpu_attention_report.cpp)

// --check (default): the instrumented kernel vs the float64 reference and the CPU model on the
// same inputs (comparison 1); with `exact`, also the replay of the GPU's dumped S (comparison 2).
// results.pass is false when a comparison fails (rel-L2 ratio off by > 5 %, a rescale share off
// by more than its binomial 3-sigma bound plus 0.5 points, any exact mismatch, NaN).
struct GpuAttnCheckOptions {
  GpuAttnShape shape;
  GpuAttnSoftmax sm;
  double q_scale = 1;
  uint64_t seed = kDefaultSeed;
  bool exact = false;
  int threads = 0;
};
// One side of comparison 1: rel-L2 against the float64 reference and the rescale counts.
struct GpuAttnCheckSide {
  double rel_l2 = 0;
  GpuAttnCounts counts;
};
// What the check measured. model: only with emu_tiles = 0 (emulated tiles are checked bit for bit
// by the replay instead); replay: only with `exact`.
struct GpuAttnCheckResult {
  std::string device;  // gpu_attn_device_name()
  GpuAttnCheckSide gpu;
  std::optional<GpuAttnCheckSide> model;
  std::optional<GpuAttnReplay> replay;
};
// Makes the inputs, runs the instrumented kernel, the reference, the CPU model and the replay.
GpuAttnCheckResult compute_gpu_attention_check(const GpuAttnCheckOptions& o);
// The tables and the JSON, with the criteria applied (results.pass). Needs no GPU.
Report gpu_attention_check_report(const GpuAttnCheckOptions& o, const GpuAttnCheckResult& r);
Report run_gpu_attention_check(
    const GpuAttnCheckOptions& o);  // gpu_attention_check_report(o, compute_...)

// --bench: the uninstrumented kernel timed (CUDA events, median) next to torch SDPA's flash and
// cuDNN backends on the same shapes in the same run (scripts/drivers/sdpa_bench.py through `python`;
// when torch or its backend is missing the column says why).
struct GpuAttnBenchOptions {
  int batch = 4, heads = 32, seq = 4096;
  std::vector<int> ds{64, 128};  // head dims
  std::vector<int> causal{0, 1};
  std::vector<float> taus{8};
  std::vector<int> emu_tiles{0};
  GpuAttnDtype dtype = GpuAttnDtype::bf16;
  int warmup = 5, iters = 20;
  std::string python = "python3";  // "" = skip torch
  uint64_t seed = kDefaultSeed;
};
// One timed configuration: the median, fastest and slowest launch, TFLOP/s of the median.
struct GpuAttnBenchRow {
  int head_dim = 0;
  bool causal = false;
  float tau = 0;
  int emu_tiles = 0;
  double ms_median = 0, ms_min = 0, ms_max = 0, tflops = 0;
};
struct GpuAttnBenchResult {
  std::string device;  // gpu_attn_device_name()
  // scripts/drivers/sdpa_bench.py's output: an array, one object per (head_dim, causal), or {"error": why}.
  json torch;
  std::vector<GpuAttnBenchRow> rows;  // head dims, causal, taus, emu_tiles nested in that order
};
// Runs the torch benchmark once, then times the kernel on every configuration.
GpuAttnBenchResult compute_gpu_attention_bench(const GpuAttnBenchOptions& o);
// The table and the JSON; each row next to torch's figures for its (head_dim, causal). Needs no GPU.
Report gpu_attention_bench_report(const GpuAttnBenchOptions& o, const GpuAttnBenchResult& r);
Report run_gpu_attention_bench(
    const GpuAttnBenchOptions& o);  // gpu_attention_bench_report(o, compute_...)

}  // namespace fa4sim
