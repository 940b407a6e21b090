// gpu_wgmma_verify.h: `fa4sim gpu verify --what wgmma`: Hopper's wgmma against the CPU model of
// its accumulation (core/wgmma_model.h), bit for bit, over `tiles` wgmmas per input type (4096 dot
// products each; the default 25000 tiles is 1.02 * 10^8 per type).
//
// Per type (bf16, fp16, e4m3, e5m2; float32 accumulation), the device runs one m64n64 wgmma per
// tile on the inputs of gpu/wgmma_inputs.h and compares every output with wgmma_dot under each
// candidate parameter set (kWgmmaCandidates16 / kWgmmaCandidates8), counting mismatches per set
// and input class and keeping the first 16 per set. Set 0 is fa4sim's model: a mismatch there
// (or a harness fault: class "exact" away from the exact sum) is a failed check (exit 1).
// The host then, with its own build of the model: recomputes each first mismatch from
// regenerated inputs, and the first `sample_tiles` tiles (102400 dot products by default) against
// the GPU's D; and writes that sample to sample_dir/wgmma-<type>.npy for
// scripts/check/check_wgmma_mmasim.py (MMA-Sim on the same bits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fa4sim/core/wgmma_model.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

struct GpuWgmmaOptions {
  std::vector<WgmmaInput> inputs{WgmmaInput::bf16, WgmmaInput::fp16, WgmmaInput::e4m3,
                                 WgmmaInput::e5m2};
  uint64_t tiles = 25000;
  uint64_t seed = 1;
  uint64_t sample_tiles = 25;
  std::string sample_dir;  // "": no sample file
};

// A first mismatch with its regenerated inputs.
struct GpuWgmmaMismatch {
  gpu::WgmmaMismatch at;
  uint32_t host_model = 0;  // the host build's wgmma_dot for the same set
  uint32_t c = 0;
  std::vector<uint16_t> a, b;
};
struct GpuWgmmaSet {
  std::string name, what;
  std::vector<uint64_t> per_class;  // kWgmmaClasses
  uint64_t total = 0;
  std::vector<GpuWgmmaMismatch> first;  // sorted by (tile, row, col)
};
struct GpuWgmmaResult {
  WgmmaInput input = WgmmaInput::bf16;
  uint64_t tiles = 0, dots = 0;
  std::vector<GpuWgmmaSet> sets;
  uint64_t exact_class_mismatches = 0;
  uint64_t sample_dots = 0, host_sample_mismatches = 0;
  std::string sample_path;
  double wall_s = 0;
};

// The candidate sets of an input type, in order (set 0: the model).
const WgmmaCandidate* wgmma_candidates(WgmmaInput in);

// Sample rows for tiles [0, d.size() / 4096) of `seed`: uint16 (n, 2K + 4) = a[K], b[K], C lo/hi,
// D lo/hi, with D = d (row-major over tile, row, col).
std::vector<uint16_t> wgmma_sample_rows(WgmmaInput in, uint64_t seed,
                                        const std::vector<uint32_t>& d);
// Rows of a sample whose D differs from the host's wgmma_dot with `model`.
uint64_t wgmma_sample_mismatches(WgmmaInput in, const WgmmaModel& model,
                                 const std::vector<uint16_t>& rows);

// Throws Error (exit 3) without a device, (exit 2) on bad options.
std::vector<GpuWgmmaResult> run_gpu_wgmma_verify(const GpuWgmmaOptions& o);
// Whether the results pass: set 0 without mismatch, no harness fault, the host sample agrees.
bool gpu_wgmma_passed(const std::vector<GpuWgmmaResult>& results);
Report gpu_wgmma_report(const GpuWgmmaOptions& o, const std::vector<GpuWgmmaResult>& results,
                        const gpu::DeviceInfo& dev);

}  // namespace fa4sim
