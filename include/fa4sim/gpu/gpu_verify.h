// gpu_verify.h: `fa4sim gpu verify`: the GPU's own instructions against the CPU emulators, bit
// for bit, over all 2^32 float32 inputs.
//
// For each function the device computes every input pattern (src/cuda, inline PTX, streamed in
// chunks, double buffered) and the host recomputes each one with the CPU model on all cores:
//   exp2-degN         ex2.emulation sequence   vs  ex2_emu(x, N)                   (exp2_emu.h)
//   e4m3-satfinite    cvt.rn.satfinite.e4m3x2  vs  encode(kE4M3, x, satfinite)     (formats.h)
//   e5m2-satfinite    cvt.rn.satfinite.e5m2x2  vs  encode(kE5M2, x, satfinite)
//   bf16              cvt.rn.bf16.f32          vs  encode(kBF16, x, ieee)
//   fp16              cvt.rn.f16.f32           vs  encode(kFP16, x, ieee)
//   bf16-satfinite    cvt.rn.satfinite.bf16    vs  encode(kBF16, x, satfinite)
//   fp16-satfinite    cvt.rn.satfinite.f16     vs  encode(kFP16, x, satfinite)
//   ex2-mufu          ex2.approx.ftz.f32       vs  ex2_approx_ftz(x, ex2_approx_table()) (mufu.h)
//   rcp-mufu          rcp.approx.ftz.f32       vs  rcp_approx_ftz(x, rcp_table())     (mufu.h)
//   lg2-mufu          lg2.approx.ftz.f32       vs  lg2_approx_ftz(x, lg2_approx_table()) (mufu.h)
// Tolerance: 0 bits. Mismatches are counted per input class (NaN, inf, zero/subnormal, normal)
// and the first ones (in input-bit order) are kept as bit patterns. Not checkable on hardware:
// the FP8 non-saturating (OCP "ieee") conversions, which PTX does not have (see gpu.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fa4sim/gpu/gpu.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

struct GpuVerifyTarget {
  std::string name;  // "exp2-deg3", "e4m3-satfinite", ...
  gpu::Op op;
  int degree = 0;
  std::vector<float> coeffs{};  // ex2: non-empty = these coefficients (ex2_emu_poly), not POLY_EX2
};

struct GpuVerifyOptions {
  std::string what = "all";  // exp2 | formats | mufu | all
  std::vector<int> degrees{0, 1, 2, 3, 4, 5};
  std::vector<float> coeffs{};         // --coeffs: one exp2 target with these coefficients
  int threads = 0;                     // host compare threads (0 = all cores)
  uint64_t chunk = uint64_t(1) << 26;  // inputs per device chunk
  bool progress = true;
};

// The functions `what` selects (exp2 ones once per degree). Throws Error (exit 2) on bad input,
// and, when the MUFU units are selected, on a missing or damaged table (mufu.h), before any
// device is touched.
std::vector<GpuVerifyTarget> gpu_verify_targets(const GpuVerifyOptions& o);

// The CPU model's bits for one input, for a target (what the host compares against).
uint32_t gpu_verify_model(const GpuVerifyTarget& t, uint32_t input_bits);

// Input classes of a float32 bit pattern.
enum class InputClass { nan = 0, inf = 1, zero_subnormal = 2, normal = 3 };
inline constexpr int kInputClasses = 4;
InputClass input_class(uint32_t bits);
const char* input_class_name(InputClass c);

struct GpuMismatch {
  uint32_t input = 0, cpu = 0, gpu = 0;
};
struct GpuVerifyResult {
  GpuVerifyTarget target;
  uint64_t inputs = 0;
  uint64_t mismatches[kInputClasses] = {0, 0, 0, 0};
  uint64_t inputs_per_class[kInputClasses] = {0, 0, 0, 0};
  std::vector<GpuMismatch> first;  // at most kGpuVerifyFirst, in input order
  double wall_s = 0, host_wait_s = 0, consume_s = 0;
  uint64_t total_mismatches() const {
    return mismatches[0] + mismatches[1] + mismatches[2] + mismatches[3];
  }
};
inline constexpr size_t kGpuVerifyFirst = 10;

// Compares one device chunk [begin, begin + n) with the model; accumulates into r. Exposed so
// the comparison itself can be tested without a device (tests/gpu/test_gpu_verify.cpp).
void gpu_verify_compare_chunk(const GpuVerifyTarget& t, uint64_t begin, const uint32_t* gpu_bits,
                              uint64_t n, int threads, GpuVerifyResult& r);

// Runs every target (needs a device: throws Error exit 3 without one).
std::vector<GpuVerifyResult> run_gpu_verify(const GpuVerifyOptions& o);

Report gpu_verify_report(const GpuVerifyOptions& o, const std::vector<GpuVerifyResult>& results,
                         const gpu::DeviceInfo& dev);

// Device description for reports and data files (name, SMs, clocks, driver, ...).
json gpu_device_json(const gpu::DeviceInfo& d);
// `fa4sim gpu info`.
Report gpu_info_report(const gpu::DeviceInfo& d);

}  // namespace fa4sim
