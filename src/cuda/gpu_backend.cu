// gpu_backend.cu: the GPU side of include/fa4sim/gpu/gpu.h (CUDA, sm_90a).
//
// Kernels run the hardware's own instructions as inline PTX (src/cuda/ex2_ptx.cuh for exp2,
// the cvt instructions below); the CPU emulators are never compiled here. Host code: device
// discovery, element-wise launches, the double-buffered exhaustive stream, the exp2 benchmark.
// Does not do: any comparison (that is the host's job, src/gpu/gpu_verify.cpp, on all cores).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.h"
#include "ex2_ptx.cuh"
#include "fa4sim/gpu/gpu.h"
#include "gpu_host.h"

namespace fa4sim::gpu {

namespace {

// ---- conversions: one cvt instruction each, exactly as PTX names them
__device__ __forceinline__ uint32_t cvt_e4m3x2(float hi, float lo) {
  uint16_t d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}
__device__ __forceinline__ uint32_t cvt_e5m2x2(float hi, float lo) {
  uint16_t d;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}
__device__ __forceinline__ uint32_t cvt_bf16(float x) {
  uint16_t d;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(d) : "f"(x));
  return d;
}
__device__ __forceinline__ uint32_t cvt_f16(float x) {
  uint16_t d;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(d) : "f"(x));
  return d;
}
__device__ __forceinline__ uint32_t cvt_bf16_sat(float x) {
  uint16_t d;
  asm("cvt.rn.satfinite.bf16.f32 %0, %1;" : "=h"(d) : "f"(x));
  return d;
}
__device__ __forceinline__ uint32_t cvt_f16_sat(float x) {
  uint16_t d;
  asm("cvt.rn.satfinite.f16.f32 %0, %1;" : "=h"(d) : "f"(x));
  return d;
}

// ---- run-time coefficients (set_ex2_coeffs): the emulation with p's coefficients read from
// constant memory, op for op the sequence of cuda::ex2_emu_ptx<DEG> (src/cuda/ex2_ptx.cuh).
__constant__ float g_ex2_coeffs[kExp2MaxDegree + 1];
int g_custom_degree = -1;  // host side: the degree the coefficients are for, -1 = none

template <int I>
__device__ __forceinline__ float ex2_horner_c(float p, float f) {
  if constexpr (I < 0) {
    return p;
  } else {
    return ex2_horner_c<I - 1>(cuda::fma_rn_ftz_ptx(p, f, g_ex2_coeffs[I]), f);
  }
}

template <int DEG>
__device__ __forceinline__ float ex2_emu_ptx_c(float x) {
  const float xc = cuda::max_ftz_ptx(x, kExp2ClampLo);
  const float xr = cuda::add_rm_ftz_ptx(xc, kExp2RoundMagic);
  const float xb = cuda::sub_rn_ftz_ptx(xr, kExp2RoundMagic);
  const float f = cuda::sub_rn_ftz_ptx(xc, xb);
  const float p = ex2_horner_c<DEG - 1>(g_ex2_coeffs[DEG], f);
  uint32_t xr_bits = __float_as_uint(xr), p_bits = __float_as_uint(p), out;
  asm("{\n\t.reg .b32 t;\n\tshl.b32 t, %1, 23;\n\tadd.s32 %0, t, %2;\n\t}"
      : "=r"(out)
      : "r"(xr_bits), "r"(p_bits));
  return __uint_as_float(out);
}

template <int DEG, bool CUSTOM>
__device__ __forceinline__ float ex2_emu_any(float x) {
  if constexpr (CUSTOM) {
    return ex2_emu_ptx_c<DEG>(x);
  } else {
    return cuda::ex2_emu_ptx<DEG>(x);
  }
}

// ---- element-wise kernel: each thread handles the pair (2i, 2i+1), so the x2 conversions
// exercise both lanes (the odd element is the instruction's upper lane). Inputs are in[] or,
// when in == nullptr, the bit patterns begin + index (the exhaustive stream).
template <Op OP, int DEG, bool CUSTOM = false>
__global__ void k_elementwise(const float* __restrict__ in, uint64_t begin, uint64_t n,
                              uint32_t* __restrict__ out) {
  const uint64_t pairs = (n + 1) / 2;
  for (uint64_t p = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t i = 2 * p;
    const bool has_hi = i + 1 < n;
    float lo, hi;
    if (in) {
      lo = in[i];
      hi = has_hi ? in[i + 1] : 0.0f;
    } else {
      lo = __uint_as_float(uint32_t(begin + i));
      hi = __uint_as_float(uint32_t(begin + i + 1));
    }
    uint32_t r_lo, r_hi;
    if constexpr (OP == Op::ex2_emu) {
      r_lo = __float_as_uint(ex2_emu_any<DEG, CUSTOM>(lo));
      r_hi = __float_as_uint(ex2_emu_any<DEG, CUSTOM>(hi));
    } else if constexpr (OP == Op::ex2_mufu) {
      r_lo = __float_as_uint(cuda::ex2_mufu(lo));
      r_hi = __float_as_uint(cuda::ex2_mufu(hi));
    } else if constexpr (OP == Op::rcp_mufu) {
      r_lo = __float_as_uint(cuda::rcp_mufu(lo));
      r_hi = __float_as_uint(cuda::rcp_mufu(hi));
    } else if constexpr (OP == Op::lg2_mufu) {
      r_lo = __float_as_uint(cuda::lg2_mufu(lo));
      r_hi = __float_as_uint(cuda::lg2_mufu(hi));
    } else if constexpr (OP == Op::cvt_e4m3_satfinite || OP == Op::cvt_e5m2_satfinite) {
      const uint32_t d = OP == Op::cvt_e4m3_satfinite ? cvt_e4m3x2(hi, lo) : cvt_e5m2x2(hi, lo);
      r_lo = d & 0xFFu;
      r_hi = d >> 8;
    } else if constexpr (OP == Op::cvt_bf16) {
      r_lo = cvt_bf16(lo);
      r_hi = cvt_bf16(hi);
    } else if constexpr (OP == Op::cvt_f16) {
      r_lo = cvt_f16(lo);
      r_hi = cvt_f16(hi);
    } else if constexpr (OP == Op::cvt_bf16_satfinite) {
      r_lo = cvt_bf16_sat(lo);
      r_hi = cvt_bf16_sat(hi);
    } else {
      r_lo = cvt_f16_sat(lo);
      r_hi = cvt_f16_sat(hi);
    }
    out[i] = r_lo;
    if (has_hi) out[i + 1] = r_hi;
  }
}

using ElementwiseKernel = void (*)(const float*, uint64_t, uint64_t, uint32_t*);

template <int DEG>
ElementwiseKernel pick_emu(int degree) {
  if constexpr (DEG > kExp2MaxDegree) {
    return nullptr;
  } else {
    if (degree != DEG) return pick_emu<DEG + 1>(degree);
    return degree == g_custom_degree ? k_elementwise<Op::ex2_emu, DEG, true>
                                     : k_elementwise<Op::ex2_emu, DEG>;
  }
}

ElementwiseKernel pick(Op op, int degree) {
  switch (op) {
    case Op::ex2_emu: {
      ElementwiseKernel k = pick_emu<0>(degree);
      if (!k)
        fail_usage("exp2 emulation degree " + std::to_string(degree) + " does not exist",
                   "valid: 0..5");
      return k;
    }
    case Op::ex2_mufu: return k_elementwise<Op::ex2_mufu, 0>;
    case Op::rcp_mufu: return k_elementwise<Op::rcp_mufu, 0>;
    case Op::lg2_mufu: return k_elementwise<Op::lg2_mufu, 0>;
    case Op::cvt_e4m3_satfinite: return k_elementwise<Op::cvt_e4m3_satfinite, 0>;
    case Op::cvt_e5m2_satfinite: return k_elementwise<Op::cvt_e5m2_satfinite, 0>;
    case Op::cvt_bf16: return k_elementwise<Op::cvt_bf16, 0>;
    case Op::cvt_f16: return k_elementwise<Op::cvt_f16, 0>;
    case Op::cvt_bf16_satfinite: return k_elementwise<Op::cvt_bf16_satfinite, 0>;
    case Op::cvt_f16_satfinite: return k_elementwise<Op::cvt_f16_satfinite, 0>;
  }
  return nullptr;
}

// ---- exp2 benchmark kernels
// Note [Bench chains]: 16 independent chains per thread, y <- exp2(-y). exp2(-y) for y in
// (0, 1] stays in [0.5, 1) and the chain converges to y = 2^-y ~ 0.641, so every input is a
// softmax-range value in [-1, 0). The negation is a free operand modifier on MUFU.EX2 and on
// the FMNMX that starts the emulation, so a chain step costs exactly one exp2's instructions.
// The loop is unrolled 4x so that the loop overhead (about 3 instructions) is < 1 % of the
// emulated-only body (16 x 4 x ~8 instructions). Each block stamps clock64() after a barrier at
// both ends; the host sums the per-SM spans (the SM clock counter is per SM).
constexpr int kChains = 16;
constexpr int kBenchThreads = 512;
constexpr int kBenchBlocksPerSm = 2;

template <int DEG, bool EMU, bool CUSTOM = false>
__device__ __forceinline__ float bench_step(float y) {
  if constexpr (EMU) {
    return ex2_emu_any<DEG, CUSTOM>(-y);
  } else {
    return cuda::ex2_mufu(-y);
  }
}

// One pass over the 16 chains; chain C is emulated when EMU(C) (a compile-time pattern).
template <int DEG, int K, bool CUSTOM, int... C>
__device__ __forceinline__ void mix_pass(float* y, std::integer_sequence<int, C...>) {
  ((y[C] = bench_step<DEG, (C < K), CUSTOM>(y[C])), ...);
}

struct BlockStamp {
  long long t0, t1;
  unsigned smid;
  unsigned pad;
};

__device__ __forceinline__ unsigned smid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

// Emulated chains: the first K of 16 (compile-time, so the pipes see a fixed mix).
template <int DEG, int K, bool CUSTOM>
__global__ void __launch_bounds__(kBenchThreads, kBenchBlocksPerSm)
    k_bench_mix(int iters, BlockStamp* stamps, float* sink) {
  float y[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) y[c] = 0.5f + 0.01f * c + 1e-6f * threadIdx.x;
  __syncthreads();
  const long long t0 = clock64();
#pragma unroll 4
  for (int it = 0; it < iters; ++it) {
    mix_pass<DEG, K, CUSTOM>(y, std::make_integer_sequence<int, kChains>{});
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += y[c];
  if (s == 12345.0f) sink[threadIdx.x] = s;  // never true; keeps the chains alive
  if (threadIdx.x == 0) stamps[blockIdx.x] = {t0, t1, smid(), 0};
}

// The upstream rule (apply_exp2_convert, flash_attn/cute/softmax.py @0251105a): column pair
// (k, k+1) of fragment j (32 columns each, 4 fragments in a 128-wide row) is MUFU when
// k % freq < freq - res, or j >= frg_cnt - 1, or j < start_frg; otherwise both are emulated.
constexpr bool rule_emulated(int col, int freq, int res, int start_frg) {
  constexpr int kFrgCols = 32, kFrgCnt = 4;
  if (freq == 0) return false;
  const int j = col / kFrgCols, k = (col % kFrgCols) & ~1;
  if (j >= kFrgCnt - 1 || j < start_frg) return false;
  return !(k % freq < freq - res);
}

// Group G of a row (columns 16G .. 16G+15) applied to the 16 chains, pattern fixed at compile time.
template <int DEG, int FREQ, int RES, int START, int G, int... C>
__device__ __forceinline__ void rule_group(float* y, std::integer_sequence<int, C...>) {
  ((y[C] = bench_step<DEG, rule_emulated(G * kChains + C, FREQ, RES, START)>(y[C])), ...);
}
template <int DEG, int FREQ, int RES, int START, int... G>
__device__ __forceinline__ void rule_row(float* y, std::integer_sequence<int, G...>) {
  (rule_group<DEG, FREQ, RES, START, G>(y, std::make_integer_sequence<int, kChains>{}), ...);
}

// One iteration = one 128-column row, applied 16 columns at a time to the 16 chains.
template <int DEG, int FREQ, int RES, int START>
__global__ void __launch_bounds__(kBenchThreads, kBenchBlocksPerSm)
    k_bench_rule(int iters, BlockStamp* stamps, float* sink) {
  float y[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) y[c] = 0.5f + 0.01f * c + 1e-6f * threadIdx.x;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    rule_row<DEG, FREQ, RES, START>(y, std::make_integer_sequence<int, 128 / kChains>{});
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += y[c];
  if (s == 12345.0f) sink[threadIdx.x] = s;
  if (threadIdx.x == 0) stamps[blockIdx.x] = {t0, t1, smid(), 0};
}

using BenchKernel = void (*)(int, BlockStamp*, float*);

template <int DEG, int K>
BenchKernel pick_mix_k(int k) {
  if constexpr (K > kChains) {
    return nullptr;
  } else {
    if (k != K) return pick_mix_k<DEG, K + 1>(k);
    return DEG == g_custom_degree ? k_bench_mix<DEG, K, true> : k_bench_mix<DEG, K, false>;
  }
}
template <int DEG>
BenchKernel pick_mix(int degree, int k) {
  if constexpr (DEG > kExp2MaxDegree) {
    return nullptr;
  } else {
    return degree == DEG ? pick_mix_k<DEG, 0>(k) : pick_mix<DEG + 1>(degree, k);
  }
}

template <int DEG>
BenchKernel pick_rule(int degree, RuleConfig r) {
  if constexpr (DEG > kExp2MaxDegree) {
    return nullptr;
  } else {
    if (degree != DEG) return pick_rule<DEG + 1>(degree, r);
#define FA4_RULE_CASE(F, R, S) \
  if (r.freq == F && r.res == R && r.start_frg == S) return k_bench_rule<DEG, F, R, S>;
    FA4SIM_TUNING_RULES(FA4_RULE_CASE)
#undef FA4_RULE_CASE
    return nullptr;
  }
}

// ---- device state, probed once
struct State {
  bool ok = false;
  std::string reason;
  DeviceInfo info;
};

const State& state() {
  static const State s = [] {
    State st;
    const char* hint_no_dev =
        "run on a machine with an NVIDIA H100/H200 (sm_90) and its driver; CUDA_VISIBLE_DEVICES "
        "must not hide it";
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      const std::string why = no_device_reason(e != cudaSuccess ? cudaGetErrorString(e) : "",
                                               e == cudaErrorInsufficientDriver);
      st.reason = "no CUDA device: " + why + " (" + hint_no_dev + ")";
      cudaGetLastError();
      return st;
    }
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
      st.reason = std::string("no usable CUDA device: cudaGetDeviceProperties failed (") +
                  hint_no_dev + ")";
      return st;
    }
    DeviceInfo& d = st.info;
    d.index = 0;
    d.name = p.name;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.sm_count = p.multiProcessorCount;
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    d.sm_clock_max_mhz = khz / 1000;
    cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0);
    d.mem_clock_max_mhz = khz / 1000;
    cudaDeviceGetAttribute(&d.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
    d.global_mem_bytes = p.totalGlobalMem;
    d.l2_bytes = p.l2CacheSize;
    char bus[32] = {0};
    cudaDeviceGetPCIBusId(bus, sizeof bus, 0);
    d.pci_bus_id = bus;
    cudaDriverGetVersion(&d.cuda_driver_api);
    cudaRuntimeGetVersion(&d.cuda_runtime);
    if (p.major != 9 || p.minor != 0) {
      st.reason = "CUDA device '" + d.name + "' is sm_" + std::to_string(p.major) +
                  std::to_string(p.minor) +
                  "; fa4sim's GPU backend is built for sm_90a only (run on an H100/H200)";
      return st;
    }
    // The sm_90a image must load (a driver too old for the toolkit fails here).
    cudaFuncAttributes fa{};
    const cudaError_t le = cudaFuncGetAttributes(&fa, k_elementwise<Op::ex2_mufu, 0>);
    if (le != cudaSuccess) {
      st.reason = std::string("the CUDA device cannot load fa4sim's sm_90a kernels: ") +
                  cudaGetErrorString(le) + " (update the NVIDIA driver to match CUDA " +
                  std::to_string(CUDART_VERSION / 1000) + ")";
      cudaGetLastError();
      return st;
    }
    st.ok = true;
    return st;
  }();
  return s;
}

std::mutex& launch_mutex() {
  static std::mutex mu;
  return mu;
}

int grid_for(uint64_t pairs) {
  const int sms = state().info.sm_count;
  const uint64_t want = (pairs + 255) / 256;
  return static_cast<int>(std::max<uint64_t>(1, std::min<uint64_t>(want, uint64_t(sms) * 16)));
}

}  // namespace

// ---- availability and info
bool available() noexcept {
  try {
    return state().ok;
  } catch (...) {
    return false;
  }
}

std::string unavailable_reason() { return state().ok ? std::string() : state().reason; }

void require() {
  if (!state().ok) {
    // reason is "<what> (<hint>)": split it so Error renders it the same way.
    const std::string& r = state().reason;
    const auto open = r.find(" (");
    if (open != std::string::npos && r.back() == ')')
      fail_gpu(r.substr(0, open), r.substr(open + 2, r.size() - open - 3));
    fail_gpu(r, "");
  }
}

int sm_clock_now_mhz() { return available() ? nvml::clock_mhz(state().info.pci_bus_id, 1) : -1; }

DeviceInfo device_info() {
  require();
  DeviceInfo d = state().info;
  d.driver_version = nvml::driver_version();
  d.sm_clock_now_mhz = nvml::clock_mhz(d.pci_bus_id, 1);
  d.mem_clock_now_mhz = nvml::clock_mhz(d.pci_bus_id, 2);
  return d;
}

void set_ex2_coeffs(std::span<const float> coeffs) {
  if (coeffs.empty()) {
    g_custom_degree = -1;
    return;
  }
  if (coeffs.size() < 2 || coeffs.size() > kExp2MaxDegree + 1)
    fail_usage("gpu::set_ex2_coeffs: 2 to 6 coefficients", "c0,c1,... for degrees 1 to 5");
  for (float c : coeffs)
    if (!std::isfinite(c))
      fail_usage("gpu::set_ex2_coeffs: a coefficient is not finite", "finite float32 values");
  require();
  float c[kExp2MaxDegree + 1] = {};
  for (size_t i = 0; i < coeffs.size(); ++i) c[i] = coeffs[i];
  FA4_CUDA_CHECK(cudaMemcpyToSymbol(g_ex2_coeffs, c, sizeof c));
  g_custom_degree = static_cast<int>(coeffs.size()) - 1;
}

// ---- element-wise
void run(Op op, int degree, std::span<const float> in, std::span<uint32_t> out) {
  require();
  if (in.size() != out.size())
    fail_usage("gpu::run: input and output sizes differ", "this is a bug in fa4sim");
  if (in.empty()) return;
  const ElementwiseKernel k = pick(op, degree);
  std::lock_guard<std::mutex> lk(launch_mutex());
  const uint64_t n = in.size();
  // Device buffers grow and are kept: callers (the exp2 analysis) send many small batches.
  static float* d_in = nullptr;
  static uint32_t* d_out = nullptr;
  static uint64_t cap = 0;
  if (n > cap) {
    if (d_in) FA4_CUDA_CHECK(cudaFree(d_in));
    if (d_out) FA4_CUDA_CHECK(cudaFree(d_out));
    d_in = nullptr;
    d_out = nullptr;
    cap = 0;
    FA4_CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    FA4_CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(uint32_t)));
    cap = n;
  }
  FA4_CUDA_CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  // Poison: an element the kernel fails to write shows up as a mismatch, never as a pass.
  FA4_CUDA_CHECK(cudaMemset(d_out, 0xA5, n * sizeof(uint32_t)));
  k<<<grid_for((n + 1) / 2), 256>>>(d_in, 0, n, d_out);
  FA4_CUDA_CHECK(cudaGetLastError());
  FA4_CUDA_CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
}

// ---- exhaustive stream, double buffered
StreamTiming run_all_inputs(
    Op op, int degree, uint64_t chunk,
    const std::function<void(uint64_t, const uint32_t*, uint64_t)>& consume) {
  require();
  if (chunk < (1u << 16) || chunk > (1u << 30) || (chunk & (chunk - 1)) != 0)
    fail_usage("gpu::run_all_inputs: chunk must be a power of two in 2^16..2^30",
               "this is a bug in fa4sim");
  const ElementwiseKernel k = pick(op, degree);
  std::lock_guard<std::mutex> lk(launch_mutex());
  // Buffers are kept for the process: pinned allocation of hundreds of MB is not free.
  struct Buffers {
    uint64_t chunk = 0;
    uint32_t* d[2] = {nullptr, nullptr};
    uint32_t* h[2] = {nullptr, nullptr};
    cudaStream_t s[2] = {nullptr, nullptr};
    cudaEvent_t done[2] = {nullptr, nullptr};
  };
  static Buffers b;
  if (b.chunk != chunk) {
    for (int i = 0; i < 2; ++i) {
      if (b.d[i]) FA4_CUDA_CHECK(cudaFree(b.d[i]));
      if (b.h[i]) FA4_CUDA_CHECK(cudaFreeHost(b.h[i]));
      if (!b.s[i]) FA4_CUDA_CHECK(cudaStreamCreateWithFlags(&b.s[i], cudaStreamNonBlocking));
      if (!b.done[i]) FA4_CUDA_CHECK(cudaEventCreateWithFlags(&b.done[i], cudaEventDisableTiming));
      FA4_CUDA_CHECK(cudaMalloc(&b.d[i], chunk * sizeof(uint32_t)));
      FA4_CUDA_CHECK(cudaHostAlloc(&b.h[i], chunk * sizeof(uint32_t), cudaHostAllocDefault));
    }
    b.chunk = chunk;
  }
  const uint64_t total = uint64_t(1) << 32;
  const uint64_t chunks = total / chunk;
  const int grid = grid_for(chunk / 2);
  auto enqueue = [&](uint64_t c) {
    const int slot = static_cast<int>(c & 1);
    FA4_CUDA_CHECK(cudaMemsetAsync(b.d[slot], 0xA5, chunk * sizeof(uint32_t), b.s[slot]));
    k<<<grid, 256, 0, b.s[slot]>>>(nullptr, c * chunk, chunk, b.d[slot]);
    FA4_CUDA_CHECK(cudaGetLastError());
    FA4_CUDA_CHECK(cudaMemcpyAsync(b.h[slot], b.d[slot], chunk * sizeof(uint32_t),
                                   cudaMemcpyDeviceToHost, b.s[slot]));
    FA4_CUDA_CHECK(cudaEventRecord(b.done[slot], b.s[slot]));
  };
  using clk = std::chrono::steady_clock;
  auto secs = [](clk::time_point a, clk::time_point z) {
    return std::chrono::duration<double>(z - a).count();
  };
  StreamTiming t;
  const auto start = clk::now();
  enqueue(0);
  for (uint64_t c = 0; c < chunks; ++c) {
    // Slot (c+1)&1 was consumed in the previous iteration: safe to overwrite.
    if (c + 1 < chunks) enqueue(c + 1);
    const int slot = static_cast<int>(c & 1);
    const auto w0 = clk::now();
    FA4_CUDA_CHECK(cudaEventSynchronize(b.done[slot]));
    const auto w1 = clk::now();
    consume(c * chunk, b.h[slot], chunk);
    const auto w2 = clk::now();
    t.host_wait_s += secs(w0, w1);
    t.consume_s += secs(w1, w2);
  }
  t.wall_s = secs(start, clk::now());
  return t;
}

// ---- exp2 benchmark
namespace {

ExpBenchPoint bench(BenchKernel k, uint64_t exps_per_thread_per_iter, int iters, int reps) {
  require();
  std::lock_guard<std::mutex> lk(launch_mutex());
  const int sms = state().info.sm_count;
  int per_sm = 0;
  FA4_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, kBenchThreads, 0));
  if (per_sm < 1)
    fail_gpu("the exp2 benchmark kernel cannot be resident on an SM", "this is a bug in fa4sim");
  per_sm = std::min(per_sm, kBenchBlocksPerSm);
  const int grid = sms * per_sm;  // every block resident at once: one wave
  BlockStamp* d_stamps = nullptr;
  float* d_sink = nullptr;
  FA4_CUDA_CHECK(cudaMalloc(&d_stamps, grid * sizeof(BlockStamp)));
  FA4_CUDA_CHECK(cudaMalloc(&d_sink, kBenchThreads * sizeof(float)));
  cudaEvent_t e0, e1;
  FA4_CUDA_CHECK(cudaEventCreate(&e0));
  FA4_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<BlockStamp> stamps(grid);
  std::vector<double> rate, cycles, wall;
  for (int r = -1; r < reps; ++r) {  // r = -1: warm-up (module load, clocks ramping)
    FA4_CUDA_CHECK(cudaEventRecord(e0));
    k<<<grid, kBenchThreads>>>(iters, d_stamps, d_sink);
    FA4_CUDA_CHECK(cudaGetLastError());
    FA4_CUDA_CHECK(cudaEventRecord(e1));
    FA4_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    FA4_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    FA4_CUDA_CHECK(
        cudaMemcpy(stamps.data(), d_stamps, grid * sizeof(BlockStamp), cudaMemcpyDeviceToHost));
    if (r < 0) continue;
    // Per SM: span = last end - first start over its blocks (one clock per SM).
    std::vector<long long> lo(sms + 64, -1), hi(sms + 64, -1);
    std::vector<int> blocks(sms + 64, 0);
    for (const auto& s : stamps) {
      const unsigned id = std::min<unsigned>(s.smid, static_cast<unsigned>(lo.size() - 1));
      lo[id] = lo[id] < 0 ? s.t0 : std::min(lo[id], s.t0);
      hi[id] = std::max(hi[id], s.t1);
      ++blocks[id];
    }
    double sum_cycles = 0, sum_exps = 0;
    int used = 0;
    for (size_t i = 0; i < lo.size(); ++i) {
      if (blocks[i] == 0) continue;
      sum_cycles += static_cast<double>(hi[i] - lo[i]);
      sum_exps +=
          double(blocks[i]) * kBenchThreads * double(iters) * double(exps_per_thread_per_iter);
      ++used;
    }
    rate.push_back(sum_exps / sum_cycles);
    cycles.push_back(sum_cycles / used);
    wall.push_back(ms);
  }
  FA4_CUDA_CHECK(cudaEventDestroy(e0));
  FA4_CUDA_CHECK(cudaEventDestroy(e1));
  FA4_CUDA_CHECK(cudaFree(d_stamps));
  FA4_CUDA_CHECK(cudaFree(d_sink));
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  };
  ExpBenchPoint p;
  p.reps = reps;
  p.exps = uint64_t(grid) * kBenchThreads * uint64_t(iters) * exps_per_thread_per_iter;
  p.exps_per_clk_per_sm = median(rate);
  p.min_exps_per_clk_per_sm = *std::min_element(rate.begin(), rate.end());
  p.max_exps_per_clk_per_sm = *std::max_element(rate.begin(), rate.end());
  p.cycles_per_sm = median(cycles);
  p.wall_ms = median(wall);
  p.sm_clock_effective_mhz = p.cycles_per_sm / (p.wall_ms * 1e3);
  p.sm_clock_nvml_mhz = nvml::clock_mhz(state().info.pci_bus_id, 1);
  return p;
}

}  // namespace

ExpBenchPoint bench_exp_mix(int degree, int emulated_of_16, int reps) {
  require();
  const BenchKernel k = pick_mix<0>(degree, emulated_of_16);
  if (!k)
    fail_usage("no exp2 benchmark kernel for degree " + std::to_string(degree) + " with " +
                   std::to_string(emulated_of_16) + "/16 emulated",
               "degree 0..5, emulated 0..16");
  return bench(k, kChains, 4096, reps);
}

const std::vector<RuleConfig>& bench_rule_configs() {
  static const std::vector<RuleConfig> kRules(std::begin(kTuningRules), std::end(kTuningRules));
  return kRules;
}

ExpBenchPoint bench_exp_rule(int degree, RuleConfig rule, int reps) {
  require();
  const BenchKernel k = pick_rule<0>(degree, rule);
  if (!k)
    fail_usage("no compiled kernel for the interleaving rule freq " + std::to_string(rule.freq) +
                   ", res " + std::to_string(rule.res) + ", start_frg " +
                   std::to_string(rule.start_frg),
               "compiled: the distinct entries of the upstream tuning table");
  return bench(k, 128, 512, reps);
}

}  // namespace fa4sim::gpu
