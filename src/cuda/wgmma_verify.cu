// wgmma_verify.cu: the device side of `fa4sim gpu verify --what wgmma` (gpu::run_wgmma_verify,
// include/fa4sim/gpu/gpu.h).
//
// One CTA is one warpgroup (128 threads). Per tile (gpu/wgmma_inputs.h): the 128 threads write A
// (64 x K) and B (K x 64, stored as 64 rows of K) into shared memory in the attention kernel's
// 128-byte-swizzled K-major layout (tile_off, gmma_desc in attention_kernel.cuh: the same bytes
// and descriptors as its K tile), C goes into the accumulator registers in the m16n8 C-fragment
// layout (a thread owns rows 16 warp + lane/4 + {0, 8}, columns 8j + 2(lane%4) + {0, 1}), then ONE
// wgmma.mma_async.sync.aligned.m64n64k{16,32}.f32 with A and B from shared memory (wgmma_ss_*,
// src/cuda/wgmma_ops.cuh). Every thread then compares each of its 32 results with wgmma_dot
// (core/wgmma_model.h) under every candidate model, bit for bit.
//
// The model is compiled for the device here only to compare at the device's speed (10^8 dot
// products per type); what is verified is the hardware instruction. The host recomputes the first
// mismatches and the recorded sample with its own build of the model (src/gpu/gpu_wgmma_verify.cpp),
// so a difference between the two compilers would show there.
// Does not do: RS wgmma (A from registers), N other than 64, float16 accumulation.
#include <cuda_runtime.h>

#include <chrono>
#include <vector>

#include "attention_kernel.cuh"
#include "cuda_check.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/wgmma_inputs.h"
#include "wgmma_ops.cuh"

namespace fa4sim::gpu {

namespace {

struct WgmmaKernelParams {
  uint64_t seed = 0, tiles = 0, sample_tiles = 0;
  WgmmaModel models[kWgmmaCandidateSets];
  int n_models = 0;
  unsigned long long* mismatches = nullptr;  // [n_models * kWgmmaClasses]
  unsigned long long* exact_mismatches = nullptr;
  unsigned int* first_count = nullptr;  // [n_models]
  WgmmaMismatch* first = nullptr;       // [n_models * kWgmmaFirst]
  uint32_t* sample_d = nullptr;         // [sample_tiles * 4096]
};

// Byte offset of element k of row r in a 64-row swizzled K-major tile (elements of `bytes` bytes).
__device__ __forceinline__ uint32_t elem_off(int r, int k, int bytes) {
  const int byte = k * bytes;
  return cuda::tile_off<64>(r, byte / 16) + uint32_t(byte % 16);
}

template <WgmmaInput IN>
__device__ __forceinline__ void issue_wgmma(float (&d)[32], uint64_t da, uint64_t db) {
  if constexpr (IN == WgmmaInput::bf16) cuda::wgmma_ss_m64n64k16_bf16(d, da, db);
  if constexpr (IN == WgmmaInput::fp16) cuda::wgmma_ss_m64n64k16_f16(d, da, db);
  if constexpr (IN == WgmmaInput::e4m3) cuda::wgmma_ss_m64n64k32_e4m3(d, da, db);
  if constexpr (IN == WgmmaInput::e5m2) cuda::wgmma_ss_m64n64k32_e5m2(d, da, db);
}

// The exact sum of a class-"exact" dot product (small integers: exact in double and float32).
__device__ __forceinline__ uint32_t exact_sum_bits(WgmmaInput in, const uint16_t* a,
                                                   const uint16_t* b, uint32_t c) {
  double s = double(__uint_as_float(c));
  for (int k = 0; k < wgmma_k(in); ++k) {
    const WgmmaOperand x = wgmma_decode(in, a[k]), y = wgmma_decode(in, b[k]);
    const double vx = ldexp(double(x.sig), x.exp - x.frac),
                 vy = ldexp(double(y.sig), y.exp - y.frac);
    s += (x.neg ? -vx : vx) * (y.neg ? -vy : vy);
  }
  return __float_as_uint(float(s));
}

template <WgmmaInput IN>
__global__ void __launch_bounds__(128)
    wgmma_verify_kernel(const __grid_constant__ WgmmaKernelParams p) {
  constexpr int K = wgmma_k(IN), kBytes = K == 16 ? 2 : 1;
  __shared__ __align__(1024) uint8_t sA[64 * 128];
  __shared__ __align__(1024) uint8_t sB[64 * 128];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q = lane % 4;
  const uint64_t da = cuda::gmma_desc(cuda::smem_u32(sA), 16u, 1024u);
  const uint64_t db = cuda::gmma_desc(cuda::smem_u32(sB), 16u, 1024u);
  for (uint64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    const int cls = int(tile % kWgmmaClasses);
    for (int i = tid; i < 64 * K; i += 128) {
      const int r = i / K, k = i % K;
      const uint16_t va = wgmma_input_ab(IN, p.seed, tile, 0, r, k);
      const uint16_t vb = wgmma_input_ab(IN, p.seed, tile, 1, r, k);
      if constexpr (kBytes == 2) {
        *reinterpret_cast<uint16_t*>(sA + elem_off(r, k, 2)) = va;
        *reinterpret_cast<uint16_t*>(sB + elem_off(r, k, 2)) = vb;
      } else {
        sA[elem_off(r, k, 1)] = uint8_t(va);
        sB[elem_off(r, k, 1)] = uint8_t(vb);
      }
    }
    cuda::fence_proxy_async();  // generic-proxy stores -> visible to the wgmma (async proxy)
    __syncthreads();
    float d[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int row = 16 * warp + g + 8 * ((i & 3) >> 1), col = 8 * (i >> 2) + 2 * q + (i & 1);
      d[i] = __uint_as_float(wgmma_input_c(IN, p.seed, tile, row, col));
    }
    cuda::reg_fence(d);
    cuda::wgmma_fence();
    issue_wgmma<IN>(d, da, db);
    cuda::wgmma_commit();
    cuda::wgmma_wait0();
    cuda::reg_fence(d);
    unsigned int bad[kWgmmaCandidateSets] = {};
    unsigned int bad_exact = 0;
    for (int i = 0; i < 32; ++i) {
      const int row = 16 * warp + g + 8 * ((i & 3) >> 1), col = 8 * (i >> 2) + 2 * q + (i & 1);
      uint16_t a[K], b[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        a[k] = kBytes == 2 ? *reinterpret_cast<const uint16_t*>(sA + elem_off(row, k, 2))
                           : sA[elem_off(row, k, 1)];
        b[k] = kBytes == 2 ? *reinterpret_cast<const uint16_t*>(sB + elem_off(col, k, 2))
                           : sB[elem_off(col, k, 1)];
      }
      const uint32_t c = wgmma_input_c(IN, p.seed, tile, row, col);
      const uint32_t got = __float_as_uint(d[i]);
      if (tile < p.sample_tiles) p.sample_d[tile * kWgmmaTileDots + uint64_t(row) * 64 + col] = got;
      if (cls == 0 && exact_sum_bits(IN, a, b, c) != got) ++bad_exact;
      for (int m = 0; m < p.n_models; ++m) {
        const uint32_t want = wgmma_dot(p.models[m], IN, a, b, c);
        if (want == got) continue;
        ++bad[m];
        // Past the first kWgmmaFirst, no more atomics on the shared counter (a wrong model or
        // layout mismatches everywhere).
        if (*static_cast<volatile unsigned int*>(p.first_count + m) >= unsigned(kWgmmaFirst))
          continue;
        const unsigned int slot = atomicAdd(&p.first_count[m], 1u);
        if (slot < unsigned(kWgmmaFirst))
          p.first[m * kWgmmaFirst + slot] = WgmmaMismatch{tile, row, col, got, want};
      }
    }
    for (int m = 0; m < p.n_models; ++m)
      if (bad[m]) atomicAdd(&p.mismatches[m * kWgmmaClasses + cls], (unsigned long long)bad[m]);
    if (bad_exact) atomicAdd(p.exact_mismatches, (unsigned long long)bad_exact);
    __syncthreads();  // every thread has read this tile's A and B before the next overwrites them
  }
}

template <WgmmaInput IN>
void launch(const WgmmaKernelParams& p, int blocks) {
  wgmma_verify_kernel<IN><<<blocks, 128>>>(p);
}

}  // namespace

WgmmaDeviceResult run_wgmma_verify(WgmmaInput in, uint64_t seed, uint64_t tiles,
                                   std::span<const WgmmaModel> models, uint64_t sample_tiles) {
  require();
  if (models.empty() || models.size() > size_t(kWgmmaCandidateSets))
    fail_usage("gpu::run_wgmma_verify: 1 to 10 models", "this is a bug in fa4sim");
  sample_tiles = sample_tiles < tiles ? sample_tiles : tiles;
  WgmmaKernelParams p;
  p.seed = seed;
  p.tiles = tiles;
  p.sample_tiles = sample_tiles;
  p.n_models = int(models.size());
  for (size_t m = 0; m < models.size(); ++m) p.models[m] = models[m];
  const size_t n_counts = models.size() * kWgmmaClasses;
  FA4_CUDA_CHECK(cudaMalloc(&p.mismatches, n_counts * sizeof(unsigned long long)));
  FA4_CUDA_CHECK(cudaMalloc(&p.exact_mismatches, sizeof(unsigned long long)));
  FA4_CUDA_CHECK(cudaMalloc(&p.first_count, models.size() * sizeof(unsigned int)));
  FA4_CUDA_CHECK(cudaMalloc(&p.first, models.size() * kWgmmaFirst * sizeof(WgmmaMismatch)));
  FA4_CUDA_CHECK(cudaMalloc(&p.sample_d, (sample_tiles * kWgmmaTileDots + 1) * sizeof(uint32_t)));
  FA4_CUDA_CHECK(cudaMemset(p.mismatches, 0, n_counts * sizeof(unsigned long long)));
  FA4_CUDA_CHECK(cudaMemset(p.exact_mismatches, 0, sizeof(unsigned long long)));
  FA4_CUDA_CHECK(cudaMemset(p.first_count, 0, models.size() * sizeof(unsigned int)));
  int sms = 0;
  FA4_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 8;  // 8 warpgroups per SM; each loops over tiles blockIdx.x + i * grid
  const auto t0 = std::chrono::steady_clock::now();
  switch (in) {
    case WgmmaInput::bf16: launch<WgmmaInput::bf16>(p, blocks); break;
    case WgmmaInput::fp16: launch<WgmmaInput::fp16>(p, blocks); break;
    case WgmmaInput::e4m3: launch<WgmmaInput::e4m3>(p, blocks); break;
    case WgmmaInput::e5m2: launch<WgmmaInput::e5m2>(p, blocks); break;
  }
  FA4_CUDA_CHECK(cudaGetLastError());
  FA4_CUDA_CHECK(cudaDeviceSynchronize());
  WgmmaDeviceResult r;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.mismatches.resize(n_counts);
  FA4_CUDA_CHECK(cudaMemcpy(r.mismatches.data(), p.mismatches, n_counts * sizeof(uint64_t),
                            cudaMemcpyDeviceToHost));
  FA4_CUDA_CHECK(cudaMemcpy(&r.exact_class_mismatches, p.exact_mismatches, sizeof(uint64_t),
                            cudaMemcpyDeviceToHost));
  std::vector<unsigned int> counts(models.size());
  std::vector<WgmmaMismatch> first(models.size() * kWgmmaFirst);
  FA4_CUDA_CHECK(cudaMemcpy(counts.data(), p.first_count, counts.size() * sizeof(unsigned int),
                            cudaMemcpyDeviceToHost));
  FA4_CUDA_CHECK(cudaMemcpy(first.data(), p.first, first.size() * sizeof(WgmmaMismatch),
                            cudaMemcpyDeviceToHost));
  r.first.resize(models.size());
  for (size_t m = 0; m < models.size(); ++m)
    for (unsigned int i = 0; i < counts[m] && i < unsigned(kWgmmaFirst); ++i)
      r.first[m].push_back(first[m * kWgmmaFirst + i]);
  r.sample_d.resize(sample_tiles * kWgmmaTileDots);
  FA4_CUDA_CHECK(cudaMemcpy(r.sample_d.data(), p.sample_d, r.sample_d.size() * sizeof(uint32_t),
                            cudaMemcpyDeviceToHost));
  FA4_CUDA_CHECK(cudaFree(p.mismatches));
  FA4_CUDA_CHECK(cudaFree(p.exact_mismatches));
  FA4_CUDA_CHECK(cudaFree(p.first_count));
  FA4_CUDA_CHECK(cudaFree(p.first));
  FA4_CUDA_CHECK(cudaFree(p.sample_d));
  return r;
}

}  // namespace fa4sim::gpu
