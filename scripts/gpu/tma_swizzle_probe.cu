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
// Build and run on the GPU machine:
//   nvcc -O2 -gencode arch=compute_90a,code=sm_90a -o tma_probe scripts/gpu/tma_swizzle_probe.cu -lcuda && ./tma_probe
#include <cuda.h>
#include <cuda_bf16.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.cuh"

constexpr int kRows = 112, kStages = 3, kTensorRows = 16384, kSmem = 200 * 1024;

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
                      int box_stride, int iters, unsigned long long* clocks) {
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
  unsigned long long t0 = 0;
  for (int it = 0; it < iters + kStages; ++it) {
    if (it == kStages) t0 = clock64();  // the first fills are warm-up
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
}

struct Timing {
  double per_tile;
  float ms;
};

Timing measure(const CUtensorMap& map, int boxes, int inner, int box_stride, int sms,
               unsigned long long* clocks) {
  probe<<<sms, 32, kSmem>>>(map, boxes, inner, box_stride, 200, clocks);  // warm-up: L2 resident
  CK(cudaDeviceSynchronize());
  const int iters = 4000;
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a));
  probe<<<sms, 32, kSmem>>>(map, boxes, inner, box_stride, iters, clocks);
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  std::vector<unsigned long long> c(sms);
  CK(cudaMemcpy(c.data(), clocks, sizeof(unsigned long long) * sms, cudaMemcpyDeviceToHost));
  std::sort(c.begin(), c.end());
  return {double(c[sms / 2]) / iters, ms};
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

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned long long* clocks;
  CK(cudaMalloc(&clocks, sizeof(unsigned long long) * sms));
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
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
                                 rank == 2 ? box_stride : kRows * sw.bytes, sms, clocks);
        std::printf("%d,%d,%s,%dd,%d,%.1f,%.2f,%.3f\n", d, tile_d, sw.name, rank, boxes, t.per_tile,
                    double(kRows) * d * 2 / t.per_tile, t.ms);
      }
    }
    CK(cudaFree(g));
  }
  return 0;
}
