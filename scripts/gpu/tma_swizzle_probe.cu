// scripts/gpu/tma_swizzle_probe.cu: TMA load throughput per shared-memory swizzle mode on sm_90a
// (Note [Swizzle width] in include/fa4sim/analysis/schedule.h). Upstream FA4's sm90 forward
// stages K and V tiles of tile_n rows x d bf16 columns with TMA, boxes as wide as the swizzle
// (128, 64 or 32 bytes), the widest that divides a row of d elements. One CTA per SM, one thread
// loading 112-row tiles into three stages guarded by mbarriers, the tensor (16384 rows x d)
// resident in L2 after a warm-up. Two ways to load a tile: "2d", one 2-D box (inner dimension =
// swizzle width) per column block; "3d", one copy of a 3-D box (swizzle width x column blocks x
// rows) per tile, as one TMA instruction. Prints, per (d, swizzle, way), the clocks per tile and
// the useful bytes per clock per SM (the median over SMs); rows of d not a multiple of 16 are read
// (2-D only) with the boxes of the padded tile, as upstream does.
// `./tma_probe clock` instead asks whether TMA's throughput follows the SM clock: a few (d, swizzle)
// tiles are timed with the GPU idle and again while a heater kernel (mma.sync in registers, FMAs and
// shared-memory reads, one CTA per SM, no global memory traffic) holds the chip at its power cap and pulls the SM clock down; each
// probe CTA reads its SM's clock (clock64) and the time (globaltimer), so the CSV gives the clocks
// per tile next to the SM clock they ran at. If the unit ran in SM clocks, clocks per tile would
// not move with the clock; if in nanoseconds, they would fall in proportion.
// Build and run on the GPU machine:
//   nvcc -O2 -gencode arch=compute_90a,code=sm_90a -o tma_probe scripts/gpu/tma_swizzle_probe.cu -lcuda && ./tma_probe [clock]
#include <cuda.h>
#include <cuda_bf16.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

#include "cuda_check.cuh"

constexpr int kRows = 112, kStages = 3, kTensorRows = 16384, kSmem = 200 * 1024;

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void mbar_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar));
}
__device__ __forceinline__ void mbar_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                         uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

__device__ __forceinline__ void tma_load3(uint32_t dst, const CUtensorMap* map, int row,
                                          uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(0), "r"(0), "r"(row), "r"(bar)
      : "memory");
}

// boxes > 0: that many 2-D boxes per tile; boxes < 0: one 3-D copy of -boxes column blocks.
__global__ void probe(const __grid_constant__ CUtensorMap map, int boxes, int box_inner,
                      int box_stride, int iters, unsigned long long* clocks,
                      unsigned long long* ns) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ __align__(8) uint64_t bars[kStages];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t bar0 = static_cast<uint32_t>(__cvta_generic_to_shared(bars));
  if (threadIdx.x != 0) return;
  for (int s = 0; s < kStages; ++s) mbar_init(bar0 + 8 * s);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  const bool three_d = boxes < 0;
  if (three_d) boxes = -boxes;
  const uint32_t tile_bytes = uint32_t(boxes) * kRows * box_inner * 2;
  const int stage_bytes = boxes * box_stride;
  unsigned long long t0 = 0, g0 = 0;
  for (int it = 0; it < iters + kStages; ++it) {
    if (it == kStages) t0 = clock64(), g0 = globaltimer();  // the first fills are warm-up
    const int s = it % kStages;
    if (it >= kStages) mbar_wait(bar0 + 8 * s, ((it / kStages) - 1) & 1);
    mbar_expect(bar0 + 8 * s, tile_bytes);
    const int row = ((blockIdx.x * 37 + it) * kRows) % (kTensorRows - kRows);
    if (three_d)
      tma_load3(base + s * stage_bytes, &map, row, bar0 + 8 * s);
    else
      for (int b = 0; b < boxes; ++b)
        tma_load(base + s * stage_bytes + b * box_stride, &map, b * box_inner, row, bar0 + 8 * s);
  }
  for (int it = iters + kStages; it < iters + 2 * kStages; ++it) {
    const int s = it % kStages;
    mbar_wait(bar0 + 8 * s, ((it / kStages) - 1) & 1);
  }
  clocks[blockIdx.x] = clock64() - t0;
  ns[blockIdx.x] = globaltimer() - g0;
}

// Power without global memory traffic: chains of mma.sync on register operands, FMAs and
// shared-memory reads (16 KiB: the probe's 200 KiB still fits beside it), for `dur_ns`.
__global__ void heater(unsigned long long dur_ns, float* sink) {
  const unsigned long long until_ns = globaltimer() + dur_ns;
  __shared__ volatile float4 pool[1024];
  pool[threadIdx.x % 1024].x = threadIdx.x, pool[threadIdx.x % 1024].y = 1;
  pool[threadIdx.x % 1024].z = 2, pool[threadIdx.x % 1024].w = 3;
  __syncthreads();
  float4 f = make_float4(1.0001f, 0.9999f, 1.0002f, 0.9998f);
  uint32_t a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = 0x3f813f7fu ^ (threadIdx.x * 0x9E3779B9u + i);
  b[0] = a[1] ^ 0x00ff00ffu, b[1] = a[2] ^ 0x0f0f0f0fu;
  float c[4][4] = {};
  while (globaltimer() < until_ns) {
    for (int rep = 0; rep < 64; ++rep) {
      const volatile float4& q = pool[(threadIdx.x + rep * 33) % 1024];
      const float4 v = make_float4(q.x, q.y, q.z, q.w);
      f.x = fmaf(f.x, v.x, v.y), f.y = fmaf(f.y, v.z, v.w), f.z = fmaf(f.z, v.y, v.x);
      for (int k = 0; k < 4; ++k)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, "
            "%7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    a[0] += 0x00010001u;  // keep the operands' bits moving
  }
  float s = f.x + f.y + f.z;
  for (auto& r : c)
    for (float v : r) s += v;
  if (s == 12345.f) sink[threadIdx.x] = s;
}

struct Timing {
  double per_tile;
  float ms;
  double mhz;  // the SM clock the probe ran at (median over SMs of clock64 over globaltimer)
};

struct Buffers {
  unsigned long long *clocks, *ns;
};

Timing measure(const CUtensorMap& map, int boxes, int inner, int box_stride, int sms, Buffers buf,
               cudaStream_t st) {
  // warm-up: the tensor L2-resident
  probe<<<sms, 32, kSmem, st>>>(map, boxes, inner, box_stride, 200, buf.clocks, buf.ns);
  CK(cudaStreamSynchronize(st));
  const int iters = 4000;
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a, st));
  probe<<<sms, 32, kSmem, st>>>(map, boxes, inner, box_stride, iters, buf.clocks, buf.ns);
  CK(cudaEventRecord(b, st));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  std::vector<unsigned long long> c(sms), n(sms);
  CK(cudaMemcpy(c.data(), buf.clocks, sizeof(unsigned long long) * sms, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(n.data(), buf.ns, sizeof(unsigned long long) * sms, cudaMemcpyDeviceToHost));
  std::vector<double> f(sms);
  for (int i = 0; i < sms; ++i) f[i] = 1e3 * double(c[i]) / double(std::max(n[i], 1ull));
  std::sort(c.begin(), c.end());
  std::sort(f.begin(), f.end());
  return {double(c[sms / 2]) / iters, ms, f[sms / 2]};
}

// rank 2: (d, rows), boxes (inner, 112); rank 3: (inner, d / inner, rows), box (inner, d / inner, 112).
bool encode(CUtensorMap* map, int rank, void* g, int d, int inner, CUtensorMapSwizzle mode) {
  const cuuint64_t dims2[2] = {cuuint64_t(d), cuuint64_t(kTensorRows)};
  const cuuint64_t strides2[1] = {cuuint64_t(d) * 2};
  const cuuint32_t box2[2] = {cuuint32_t(inner), cuuint32_t(kRows)};
  const cuuint64_t dims3[3] = {cuuint64_t(inner), cuuint64_t(d / inner), cuuint64_t(kTensorRows)};
  const cuuint64_t strides3[2] = {cuuint64_t(inner) * 2, cuuint64_t(d) * 2};
  const cuuint32_t box3[3] = {cuuint32_t(inner), cuuint32_t(d / inner), cuuint32_t(kRows)};
  const cuuint32_t estr[3] = {1, 1, 1};
  return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, g,
                                rank == 2 ? dims2 : dims3, rank == 2 ? strides2 : strides3,
                                rank == 2 ? box2 : box3, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, mode,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// `clock` mode: the clocks per tile of a few tiles with the GPU idle and under the heater.
int clock_mode(int sms, Buffers buf, cudaStream_t st) {
  cudaStream_t hs;
  CK(cudaStreamCreateWithFlags(&hs, cudaStreamNonBlocking));
  // the SM keeps its shared-memory carveout for the probe's 200 KiB beside the heater (with the
  // default the heater's CTAs choose a small carveout and the probe waits for them to finish)
  CK(cudaFuncSetAttribute(heater, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  float* sink;
  CK(cudaMalloc(&sink, 1024 * sizeof(float)));
  const struct {
    int d, bytes;
    CUtensorMapSwizzle mode;
  } cases[] = {{64, 128, CU_TENSOR_MAP_SWIZZLE_128B},
               {128, 128, CU_TENSOR_MAP_SWIZZLE_128B},
               {144, 32, CU_TENSOR_MAP_SWIZZLE_32B},
               {176, 32, CU_TENSOR_MAP_SWIZZLE_32B},
               {128, 32, CU_TENSOR_MAP_SWIZZLE_32B}};
  std::printf("d,swizzle_bytes,state,rep,clocks_per_tile_median,sm_mhz_median,ns_per_tile\n");
  for (const auto& cs : cases) {
    void* g;
    CK(cudaMalloc(&g, size_t(kTensorRows) * cs.d * 2));
    CK(cudaMemset(g, 0, size_t(kTensorRows) * cs.d * 2));
    const int inner = cs.bytes / 2, boxes = (cs.d + inner - 1) / inner;
    const int box_stride = ((kRows * cs.bytes + 1023) / 1024) * 1024;
    CUtensorMap map;
    if (!encode(&map, 2, g, cs.d, inner, cs.mode)) return 1;
    for (int heat = 0; heat <= 1; ++heat) {
      for (int rep = 0; rep < 3; ++rep) {
        if (heat) {
          // the heater runs 1.5 s from its launch; the probe starts 0.8 s in, clocks settled
          heater<<<sms, 1024, 0, hs>>>(1500ull * 1000 * 1000, sink);
          CK(cudaGetLastError());
          usleep(800 * 1000);
        }
        const Timing t = measure(map, boxes, inner, box_stride, sms, buf, st);
        std::printf("%d,%d,%s,%d,%.1f,%.0f,%.2f\n", cs.d, cs.bytes, heat ? "heated" : "idle", rep,
                    t.per_tile, t.mhz, 1e3 * t.per_tile / t.mhz);
        std::fflush(stdout);
        if (heat) CK(cudaStreamSynchronize(hs));
      }
    }
    CK(cudaFree(g));
  }
  return 0;
}

int main(int argc, char** argv) {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  Buffers buf;
  CK(cudaMalloc(&buf.clocks, sizeof(unsigned long long) * sms));
  CK(cudaMalloc(&buf.ns, sizeof(unsigned long long) * sms));
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  if (argc > 1 && std::string(argv[1]) == "clock") return clock_mode(sms, buf, st);
  // (d, the tile's d): upstream pads the tile's head dim to a multiple of 16; a d that is not one
  // reads rows that are not 32-byte aligned, and the boxes run past the row's end (zero fill).
  const int ds[][2] = {{64, 64},   {80, 80},   {96, 96},   {112, 112}, {128, 128}, {144, 144},
                       {160, 160}, {176, 176}, {192, 192}, {224, 224}, {240, 240}, {256, 256},
                       {72, 80},   {88, 96},   {104, 112}, {120, 128}, {136, 144}, {152, 160}};
  const struct {
    int bytes;
    CUtensorMapSwizzle mode;
    const char* name;
  } sws[] = {{128, CU_TENSOR_MAP_SWIZZLE_128B, "sw128"},
             {64, CU_TENSOR_MAP_SWIZZLE_64B, "sw64"},
             {32, CU_TENSOR_MAP_SWIZZLE_32B, "sw32"}};
  std::printf(
      "d,tile_d,swizzle,way,boxes,clocks_per_tile_median,useful_bytes_per_clock_median,kernel_ms\n");
  for (const auto& dd : ds) {
    const int d = dd[0], tile_d = dd[1];
    void* g;
    CK(cudaMalloc(&g, size_t(kTensorRows) * d * 2));
    CK(cudaMemset(g, 0, size_t(kTensorRows) * d * 2));
    for (const auto& sw : sws) {
      const int inner = sw.bytes / 2, boxes = (tile_d + inner - 1) / inner;
      const int box_stride = ((kRows * sw.bytes + 1023) / 1024) * 1024;
      if (boxes * box_stride * kStages > kSmem) continue;
      for (int rank = 2; rank <= 3; ++rank) {
        if (rank == 3 && (d != tile_d || d % inner != 0)) continue;  // whole column blocks only
        CUtensorMap map;
        if (!encode(&map, rank, g, d, inner, sw.mode)) {
          std::printf("%d,%d,%s,%dd,encode error\n", d, tile_d, sw.name, rank);
          continue;
        }
        // the 3-D box lands as rows of d elements: column blocks kRows * sw bytes apart only in 2-D
        const Timing t = measure(map, rank == 2 ? boxes : -boxes, inner,
                                 rank == 2 ? box_stride : kRows * sw.bytes, sms, buf, st);
        std::printf("%d,%d,%s,%dd,%d,%.1f,%.2f,%.3f\n", d, tile_d, sw.name, rank, boxes, t.per_tile,
                    double(kRows) * d * 2 / t.per_tile, t.ms);
      }
    }
    CK(cudaFree(g));
  }
  return 0;
}
