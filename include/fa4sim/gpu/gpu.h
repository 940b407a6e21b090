// gpu.h: host API of the CUDA backend (src/cuda/): every function src/cuda implements (and its
// stubs stand in for without CUDA) is declared here. No CUDA types leak out of it, so every
// translation unit of the library and the CLI can include it, with or without CUDA.
//
// What runs on the device: the hardware's OWN instructions, as inline PTX, the way the upstream
// kernel issues them (flash-attention flash_attn/cute/utils.py @ 0251105a):
//   Op::ex2_emu   max.ftz.f32, add.rm.ftz.f32, sub.rn.ftz.f32 (x2), fma.rn.ftz.f32 (x degree),
//                 shl.b32, add.s32  (upstream ex2_emulation; see exp2_emu.h for the sequence)
//   Op::ex2_mufu  ex2.approx.ftz.f32 (the MUFU exp2; CPU model: core/mufu.h ex2_approx_ftz)
//   Op::rcp_mufu  rcp.approx.ftz.f32 (the MUFU reciprocal; CPU model: core/mufu.h)
//   Op::lg2_mufu  lg2.approx.ftz.f32 (the MUFU log2; CPU model: core/mufu.h lg2_approx_ftz)
//   Op::cvt_*     cvt.rn.satfinite.e4m3x2.f32 / cvt.rn.satfinite.e5m2x2.f32 (two lanes per
//                 instruction, both lanes exercised), cvt.rn.bf16.f32, cvt.rn.f16.f32, and the
//                 satfinite bf16/f16 forms. PTX has NO non-satfinite f32 -> e4m3x2/e5m2x2
//                 conversion (ptxas: "'.satfinite' modifier required"), so the OCP "ieee"
//                 overflow behaviour of the FP8 formats cannot be checked on hardware.
// The CPU emulator is never compiled for the device: the comparison is hardware vs model.
//
// Without a usable device (built without CUDA, no driver, no device, CUDA_VISIBLE_DEVICES
// hiding it, or a device that is not sm_90), every call except available()/unavailable_reason()
// throws fa4sim::Error with exit code kExitNoGpu (3) and a hint.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fa4sim/gpu/gpu_attention.h"

namespace fa4sim {
enum class WgmmaInput : uint8_t;  // core/wgmma_model.h
struct WgmmaModel;
}  // namespace fa4sim

namespace fa4sim::gpu {

struct DeviceInfo {
  int index = 0;
  std::string name;                // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;  // compute capability
  int sm_count = 0;
  int sm_clock_max_mhz = 0;  // cudaDevAttrClockRate (the maximum, not the current clock)
  int mem_clock_max_mhz = 0;
  int mem_bus_bits = 0;
  uint64_t global_mem_bytes = 0;
  int l2_bytes = 0;
  std::string pci_bus_id;
  int cuda_driver_api = 0;     // cudaDriverGetVersion, e.g. 13000
  int cuda_runtime = 0;        // cudaRuntimeGetVersion
  std::string driver_version;  // kernel driver via NVML, e.g. "580.159.04"; "" if no NVML
  int sm_clock_now_mhz = -1;   // NVML, at the moment of the call; -1 if unknown
  int mem_clock_now_mhz = -1;
};

// ---- availability (never throw)
bool available() noexcept;
// Why the backend is unusable, as "<what> (<hint>)"; "" when available.
std::string unavailable_reason();
// Throws Error(what, hint, kExitNoGpu) unless available().
void require();

DeviceInfo device_info();
// Current SM clock read through NVML (-1 if NVML is missing). Cheap; used during benchmarks.
int sm_clock_now_mhz();

// ---- element-wise operations, one PTX sequence each
enum class Op {
  ex2_emu,  // degree 0..5
  ex2_mufu,
  rcp_mufu,            // rcp.approx.ftz.f32
  lg2_mufu,            // lg2.approx.ftz.f32
  cvt_e4m3_satfinite,  // result: 8 bits
  cvt_e5m2_satfinite,  // 8 bits
  cvt_bf16,            // 16 bits, round to nearest even, overflow -> inf
  cvt_f16,             // 16 bits, likewise
  cvt_bf16_satfinite,  // 16 bits, overflow and inf -> max finite
  cvt_f16_satfinite,   // 16 bits
};
// Coefficients for the emulated exp2 (`fa4sim fit`, `--coeffs`): from this call on, Op::ex2_emu
// and bench_exp_mix of degree coeffs.size() - 1 run p(f) = c0 + c1 f + ... with these float32
// values instead of POLY_EX2 (the same PTX sequence; the coefficients are FFMA constant-bank
// operands instead of immediates, the same instruction count). Empty: upstream's again.
// 2 to 6 finite coefficients (Error otherwise). The interleaving-rule kernels keep POLY_EX2.
void set_ex2_coeffs(std::span<const float> coeffs);

// The PTX instruction(s) an op executes, for reports.
const char* ptx_of(Op op);
const char* name_of(Op op);

// out[i] = raw result bits of op(in[i]) (float32 bits for ex2, zero-extended format bits for
// cvt). `degree` is used by Op::ex2_emu only. Sizes must match.
void run(Op op, int degree, std::span<const float> in, std::span<uint32_t> out);
inline void run_ex2_emu(std::span<const float> in, std::span<uint32_t> out, int degree) {
  run(Op::ex2_emu, degree, in, out);
}
inline void run_ex2_mufu(std::span<const float> in, std::span<uint32_t> out) {
  run(Op::ex2_mufu, 0, in, out);
}

// Exhaustive stream over every float32 bit pattern: the device computes op(bits = i) for
// i in [0, 2^32) in chunks of `chunk` inputs (a power of two, 2^16..2^30) and copies each chunk
// into pinned host memory; consume(begin, out, n) runs on the calling thread for chunk
// [begin, begin + n) while the device already computes the next one (double buffering).
struct StreamTiming {
  double wall_s = 0;       // the whole stream, first launch to last consume
  double host_wait_s = 0;  // time the host waited for the device (kernel + copy)
  double consume_s = 0;    // time spent in consume()
};
StreamTiming run_all_inputs(
    Op op, int degree, uint64_t chunk,
    const std::function<void(uint64_t begin, const uint32_t* out, uint64_t n)>& consume);

// ---- exp2 throughput
// Every measured kernel keeps 16 independent chains per thread, x <- -exp2(x) (the negation
// is an operand modifier, so the chain costs exactly the exp2's own instructions and stays in
// [-1, 0], the softmax range); 1024 resident threads per SM, one clock64() span per block.
struct ExpBenchPoint {
  uint64_t exps = 0;               // exps over the whole grid, one launch
  double exps_per_clk_per_sm = 0;  // median over repetitions of sum(exps) / sum(SM-cycles)
  double min_exps_per_clk_per_sm = 0, max_exps_per_clk_per_sm = 0;  // over repetitions
  double cycles_per_sm = 0;           // median per-SM span of one launch
  double wall_ms = 0;                 // median launch time by CUDA events
  double sm_clock_effective_mhz = 0;  // cycles_per_sm / wall: the clock the SMs ran at
  int sm_clock_nvml_mhz = -1;         // NVML reading right after the launches
  int reps = 0;
};
// Mixture: `emulated_of_16` of the 16 chains use the emulation (degree 0..5), the rest MUFU.
ExpBenchPoint bench_exp_mix(int degree, int emulated_of_16, int reps);

// The upstream's interleaving rule (apply_exp2_convert): a 128-column row, 4 fragments of 32,
// column pair (k, k+1) of fragment j emulated unless k % freq < freq - res, j >= 3 (last
// fragment) or j < start_frg; freq 0 = none. The row is applied in its column order to the
// chains, 16 columns at a time. Only the configurations below are compiled (the pattern is a
// compile-time property of the kernel, as it is upstream).
struct RuleConfig {
  int freq, res, start_frg;
};
// The distinct (freq, res, start_frg) of the upstream tuning table (docs/facts.md §1,
// data/fa4_tuning.json), in the table's order, as an X-macro: the benchmark's kernels are one
// template instance per rule (src/cuda/gpu_backend.cu). test_gpu_verify checks that this list
// equals the distinct entries of data/fa4_tuning.json.
#define FA4SIM_TUNING_RULES(X) \
  X(10, 4, 1) X(16, 4, 1) X(16, 4, 0) X(32, 4, 1) X(14, 6, 0) X(8, 4, 1) X(0, 4, 0)
#define FA4SIM_TUNING_RULE_ROW(F, R, S) RuleConfig{F, R, S},
inline constexpr RuleConfig kTuningRules[] = {FA4SIM_TUNING_RULES(FA4SIM_TUNING_RULE_ROW)};
#undef FA4SIM_TUNING_RULE_ROW
// kTuningRules as a vector (`fa4sim gpu bench-exp --rules` runs each).
const std::vector<RuleConfig>& bench_rule_configs();
ExpBenchPoint bench_exp_rule(int degree, RuleConfig rule, int reps);

// ---- the tensor core: wgmma against the CPU model (src/cuda/wgmma_verify.cu)
// Tiles [0, tiles) of gpu/wgmma_inputs.h for `seed`: per tile one
// wgmma.mma_async.m64n64k{16,32}.f32 (A and B from shared memory, K-major, C in the accumulator
// registers), then every one of the 4096 outputs compared on the device with wgmma_dot under
// each of `models` (at most kWgmmaCandidateSets). The device runs the model only to compare; the
// host recomputes the sample and the first mismatches with its own build of the same model.
struct WgmmaMismatch {
  uint64_t tile = 0;
  int row = 0, col = 0;
  uint32_t gpu = 0, model = 0;
};
inline constexpr int kWgmmaFirst = 16;  // first mismatches kept per model
struct WgmmaDeviceResult {
  std::vector<uint64_t> mismatches;               // [model * kWgmmaClasses + class]
  std::vector<std::vector<WgmmaMismatch>> first;  // per model, at most kWgmmaFirst (any order)
  uint64_t exact_class_mismatches = 0;  // class "exact": GPU != the exact sum (a harness fault)
  std::vector<uint32_t> sample_d;  // GPU D of tiles [0, sample_tiles): tile * 4096 + row * 64 + col
  double wall_s = 0;
};
WgmmaDeviceResult run_wgmma_verify(WgmmaInput in, uint64_t seed, uint64_t tiles,
                                   std::span<const WgmmaModel> models, uint64_t sample_tiles);

}  // namespace fa4sim::gpu

// ---- the attention kernel (src/cuda/attention_host.cpp; attention_stub.cpp without CUDA). Its
// shapes, inputs and outputs, and the CPU side around it, are gpu_attention.h's.
namespace fa4sim {

// Device name and SM count, or throws Error(kExitNoGpu) when no CUDA device is usable (or when
// fa4sim was built without the GPU backend).
std::string gpu_attn_device_name();

// Runs the kernel once on `in`. instrument = the instrumented build (flags, counts); dump = also
// S/P dumps (small problems only: refused above 2^26 dumped elements).
GpuAttnOutputs gpu_attn_run(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                            const GpuAttnInputs& in, bool instrument, bool dump);

// Times the uninstrumented kernel on device-resident random inputs (seeded), CUDA events,
// `warmup` then `iters` launches each timed alone; returns every launch's time in ms.
std::vector<double> gpu_attn_time(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                                  uint64_t seed, int warmup, int iters);

}  // namespace fa4sim
