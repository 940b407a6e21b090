// scripts/gpu/mufu_structure.cu: how the H200's MUFU builds ex2.approx.ftz.f32 and lg2.approx.ftz.f32
// out of one table each (the structure behind the CPU models of include/fa4sim/core/mufu.h).
//
// Every hypothesis is tested against the hardware itself over all its inputs; no reference enters
// a pass/fail count:
//   ex2, sign s, resolution k (k = 23..26, and k = 99 for "no truncation"): for every non-NaN x
//        with |x| < 128 of that sign, split |x| = i + g (i integer, g in [0, 1)), truncate g toward
//        zero to a multiple of 2^-k (g_k; exact in float32: a prefix of g's bits), then
//        model = ex2(+g_k) * 2^i for x >= 0 and ex2(-g_k) * 2^-i for x < 0, flushed below 2^-126.
//        Mismatches counted, the first ones printed.
//   lg2: for every mantissa m = 1 + j 2^-23, F(m) = lg2(m) if that is < 1/2, else 1 + lg2(m / 2)
//        (both exact in double); the finest bit of F is histogrammed (the unit's fixed-point
//        width), then for every normal x = m 2^e > 0: lg2(x) == e + F(m) rounded to float32
//        by each of RN, RZ, RD, RU (exact integer sum, then one rounding). Counted per mode.
//   lg2, two-table form: with y0(m) = lg2(m) and y1(m) = lg2(m / 2) read off the unit, for every
//        normal x = m 2^e > 0: lg2(x) == RZ(e + y0(m)) for e >= 0 and RZ(e + 1 + y1(m)) for e < 0
//        (exact integer sums, one rounding toward zero). Counted, the first ones printed.
// Tables written (gzip them before they travel):
//   ex2_neg23.bin int8 [2^23]: ex2(-j 2^-23) minus (float)exp2((double)x), in ulps;
//   ex2_neg24.bin int8 [2^24]: ex2(-j 2^-24), same;
//   lg2_fixed.bin int32 [2^23]: F(1 + j 2^-23) 2^K minus rint(log2(m) 2^K), K the finest bit seen;
//   lg2_y0.bin, lg2_y1.bin int32 [2^23]: lg2(m), lg2(m / 2) minus (float)log2((double)x), in ulps
//   (bit patterns read as ordered integers).
// The JSON on stdout also holds, per table, the sum of the hardware results' bit patterns (uint64,
// mod 2^64), so that a CPU rebuild of a table from its deltas can be checked to be the hardware's.
// Build and run: nvcc -std=c++20 -O2 -gencode arch=compute_90a,code=sm_90a -Iinclude -o mufu_structure
//   scripts/gpu/mufu_structure.cu && ./mufu_structure OUT_DIR > OUT_DIR/mufu_structure.json
// (data/gpu/mufu/2026-12-02-structure was made before the probe used src/cuda/ex2_ptx.cuh's
// wrappers, which need -std=c++20 -Iinclude; the PTX instructions are the same.)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "../../src/cuda/ex2_ptx.cuh"
#include "cuda_check.cuh"

constexpr int kFirst = 8;
constexpr int kEx2Ks = 5;   // k = 23, 24, 25, 26, 99
constexpr int kModes = 4;   // RN RZ RD RU
constexpr int kScale = 56;  // lg2: F held as an integer multiple of 2^-56

struct Stats {
  unsigned long long ex2_tested[2][kEx2Ks], ex2_bad[2][kEx2Ks];
  unsigned int ex2_first[2][kEx2Ks][kFirst];
  unsigned long long lg2_bit_hist[64];  // finest set bit of F, as p in 2^-p; [63]: F == 0
  unsigned long long lg2_tested, lg2_bad[kModes];
  unsigned int lg2_first[kModes][kFirst];
  unsigned long long lg2_y0_check_bad;  // y0 >= 1/2 and y0 != RN(F)
  unsigned long long sum_neg23, sum_neg24, sum_pos23, sum_lg2_y0;
  unsigned long long lg2_two_bad, sum_lg2_y1;
  unsigned int lg2_two_first[kFirst];
};

// The units themselves: the wrappers the GPU backend runs (src/cuda/ex2_ptx.cuh).
__device__ __forceinline__ float ex2(float x) { return fa4sim::cuda::ex2_mufu(x); }
__device__ __forceinline__ float lg2(float x) { return fa4sim::cuda::lg2_mufu(x); }
__device__ void record(unsigned long long* count, unsigned int* first, uint32_t b) {
  const unsigned long long i = atomicAdd(count, 1ull);
  if (i < kFirst) first[i] = b;
}

__global__ void k_ex2(uint64_t base, Stats* st) {
  const uint32_t b = static_cast<uint32_t>(base + blockIdx.x * 256ull + threadIdx.x);
  const float x = __uint_as_float(b);
  if (isnan(x) || fabsf(x) >= 128.0f || fabsf(x) < 1.17549435e-38f) return;
  const int s = x < 0.0f ? 1 : 0;
  const float ax = fabsf(x);
  const float i = floorf(ax), g = ax - i;  // exact
  const uint32_t y = __float_as_uint(ex2(x));
  const int ks[kEx2Ks] = {23, 24, 25, 26, 99};
  for (int t = 0; t < kEx2Ks; ++t) {
    float gk = g;
    if (ks[t] < 99) gk = ldexpf(floorf(ldexpf(g, ks[t])), -ks[t]);  // exact: a prefix of g
    const float u = ex2(s ? -gk : gk);
    // Scaled in double (exact), flushed before any rounding to a subnormal.
    const double d = ldexp(static_cast<double>(u), s ? -static_cast<int>(i) : static_cast<int>(i));
    const float m = d < 0x1p-126 ? 0.0f : static_cast<float>(d);
    atomicAdd(&st->ex2_tested[s][t], 1ull);
    if (__float_as_uint(m) != y) record(&st->ex2_bad[s][t], st->ex2_first[s][t], b);
  }
}

__global__ void k_ex2_tables(int8_t* neg23, int8_t* neg24, Stats* st) {
  const uint32_t j = blockIdx.x * 256u + threadIdx.x;
  if (j >= (1u << 24)) return;
  unsigned long long s24 = 0, s23 = 0, sp = 0;
  {
    const float x = -ldexpf(static_cast<float>(j), -24);
    const float y = ex2(x), r = static_cast<float>(exp2(static_cast<double>(x)));
    neg24[j] = static_cast<int8_t>(static_cast<int>(__float_as_uint(y)) -
                                   static_cast<int>(__float_as_uint(r)));
    s24 = __float_as_uint(y);
  }
  if (j < (1u << 23)) {
    const float x = -ldexpf(static_cast<float>(j), -23);
    const float y = ex2(x), r = static_cast<float>(exp2(static_cast<double>(x)));
    neg23[j] = static_cast<int8_t>(static_cast<int>(__float_as_uint(y)) -
                                   static_cast<int>(__float_as_uint(r)));
    s23 = __float_as_uint(y);
    sp = __float_as_uint(ex2(ldexpf(static_cast<float>(j), -23)));
  }
  atomicAdd(&st->sum_neg24, s24);
  atomicAdd(&st->sum_neg23, s23);
  atomicAdd(&st->sum_pos23, sp);
}

// F(m) 2^56 per mantissa; the finest-bit histogram; the y0 consistency check.
__global__ void k_lg2_f(long long* ftab, Stats* st) {
  const uint32_t j = blockIdx.x * 256u + threadIdx.x;
  if (j >= (1u << 23)) return;
  const float m = __uint_as_float(0x3f800000u | j);
  const float y0 = lg2(m), y1 = lg2(m * 0.5f);
  const double f = y0 < 0.5f ? static_cast<double>(y0) : 1.0 + static_cast<double>(y1);
  const double scaled = ldexp(f, kScale);
  const long long v = static_cast<long long>(scaled);
  ftab[j] = v;
  atomicAdd(&st->sum_lg2_y0, static_cast<unsigned long long>(__float_as_uint(y0)));
  if (static_cast<double>(v) != scaled) {  // finer than 2^-56
    atomicAdd(&st->lg2_bit_hist[62], 1ull);
    return;
  }
  if (v == 0)
    atomicAdd(&st->lg2_bit_hist[63], 1ull);
  else
    atomicAdd(&st->lg2_bit_hist[kScale - __ffsll(v) + 1], 1ull);
  if (y0 >= 0.5f && __ll2float_rn(v) * 0x1p-56f != y0) atomicAdd(&st->lg2_y0_check_bad, 1ull);
}

__global__ void k_lg2(const long long* ftab, Stats* st) {
  const uint32_t b = blockIdx.x * 256u + threadIdx.x + 0x00800000u;  // positive normals
  if (b >= 0x7f800000u) return;
  const int e = static_cast<int>(b >> 23) - 127;
  const long long v = static_cast<long long>(e) * (1ll << kScale) + ftab[b & 0x7fffffu];
  const float y = lg2(__uint_as_float(b));
  const float r[kModes] = {__ll2float_rn(v), __ll2float_rz(v), __ll2float_rd(v), __ll2float_ru(v)};
  atomicAdd(&st->lg2_tested, 1ull);
  for (int t = 0; t < kModes; ++t) {
    const float m = r[t] * 0x1p-56f;  // exact: a power-of-two scale of a normal float
    if (__float_as_uint(m) != __float_as_uint(y)) record(&st->lg2_bad[t], st->lg2_first[t], b);
  }
}

__device__ __forceinline__ int ordered_delta(float y, float r) {
  const int a = static_cast<int>(__float_as_uint(y)), b = static_cast<int>(__float_as_uint(r));
  return (a < 0 ? -(a & 0x7fffffff) : a) - (b < 0 ? -(b & 0x7fffffff) : b);
}

__global__ void k_lg2_two_tables(float* y0, float* y1, int* d0, int* d1, Stats* st) {
  const uint32_t j = blockIdx.x * 256u + threadIdx.x;
  if (j >= (1u << 23)) return;
  const float m = __uint_as_float(0x3f800000u | j), h = m * 0.5f;
  y0[j] = lg2(m);
  y1[j] = lg2(h);
  d0[j] = ordered_delta(y0[j], static_cast<float>(log2(static_cast<double>(m))));
  d1[j] = ordered_delta(y1[j], static_cast<float>(log2(static_cast<double>(h))));
  atomicAdd(&st->sum_lg2_y1, static_cast<unsigned long long>(__float_as_uint(y1[j])));
}

// The two-table form: every y0, y1 is a multiple of 2^-56 (their ulps are >= 2^-47), so the sum
// e + y0 or e + 1 + y1, times 2^56, is an exact int64 (|e| <= 127).
__global__ void k_lg2_two(const float* y0, const float* y1, Stats* st) {
  const uint32_t b = blockIdx.x * 256u + threadIdx.x + 0x00800000u;
  if (b >= 0x7f800000u) return;
  const int e = static_cast<int>(b >> 23) - 127;
  const uint32_t j = b & 0x7fffffu;
  const long long base = static_cast<long long>(e >= 0 ? e : e + 1) * (1ll << kScale);
  const float t = e >= 0 ? y0[j] : y1[j];
  const long long v = base + static_cast<long long>(ldexp(static_cast<double>(t), kScale));
  const float m = __ll2float_rz(v) * 0x1p-56f;
  if (__float_as_uint(m) != __float_as_uint(lg2(__uint_as_float(b))))
    record(&st->lg2_two_bad, st->lg2_two_first, b);
}

// Deltas of F 2^K from rint(log2(m) 2^K), K the finest bit seen (<= 56).
__global__ void k_lg2_table(const long long* ftab, int k, int* out) {
  const uint32_t j = blockIdx.x * 256u + threadIdx.x;
  if (j >= (1u << 23)) return;
  const double m = 1.0 + ldexp(static_cast<double>(j), -23);
  const long long ref = llrint(ldexp(log2(m), k));
  out[j] = static_cast<int>((ftab[j] >> (kScale - k)) - ref);
}

static bool write_file(const std::string& path, const void* p, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  const bool ok = f && std::fwrite(p, 1, n, f) == n;
  if (f) std::fclose(f);
  return ok;
}

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : ".";
  Stats* st;
  CK(cudaMallocManaged(&st, sizeof(Stats)));
  std::memset(st, 0, sizeof(Stats));
  for (uint64_t base = 0; base < (1ull << 32); base += (1ull << 30))
    k_ex2<<<(1u << 30) / 256, 256>>>(base, st);
  int8_t *neg23, *neg24;
  CK(cudaMallocManaged(&neg23, 1u << 23));
  CK(cudaMallocManaged(&neg24, 1u << 24));
  k_ex2_tables<<<(1u << 24) / 256, 256>>>(neg23, neg24, st);
  long long* ftab;
  CK(cudaMallocManaged(&ftab, sizeof(long long) << 23));
  k_lg2_f<<<(1u << 23) / 256, 256>>>(ftab, st);
  CK(cudaDeviceSynchronize());
  k_lg2<<<(0x7f800000u - 0x00800000u + 255) / 256, 256>>>(ftab, st);
  CK(cudaDeviceSynchronize());
  int kfine = 0;
  for (int p = 0; p <= kScale; ++p)
    if (st->lg2_bit_hist[p]) kfine = p;
  int* ltab;
  CK(cudaMallocManaged(&ltab, sizeof(int) << 23));
  k_lg2_table<<<(1u << 23) / 256, 256>>>(ftab, kfine, ltab);
  CK(cudaDeviceSynchronize());
  float *y0, *y1;
  int *d0, *d1;
  CK(cudaMallocManaged(&y0, sizeof(float) << 23));
  CK(cudaMallocManaged(&y1, sizeof(float) << 23));
  CK(cudaMallocManaged(&d0, sizeof(int) << 23));
  CK(cudaMallocManaged(&d1, sizeof(int) << 23));
  k_lg2_two_tables<<<(1u << 23) / 256, 256>>>(y0, y1, d0, d1, st);
  CK(cudaDeviceSynchronize());
  k_lg2_two<<<(0x7f800000u - 0x00800000u + 255) / 256, 256>>>(y0, y1, st);
  CK(cudaDeviceSynchronize());
  if (!write_file(out + "/lg2_y0.bin", d0, sizeof(int) << 23) ||
      !write_file(out + "/lg2_y1.bin", d1, sizeof(int) << 23) ||
      !write_file(out + "/ex2_neg23.bin", neg23, 1u << 23) ||
      !write_file(out + "/ex2_neg24.bin", neg24, 1u << 24) ||
      !write_file(out + "/lg2_fixed.bin", ltab, sizeof(int) << 23)) {
    std::fprintf(stderr, "cannot write tables to %s\n", out.c_str());
    return 1;
  }
  const int ks[kEx2Ks] = {23, 24, 25, 26, 99};
  std::printf("{\"ex2\": [\n");
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < kEx2Ks; ++t) {
      std::printf("  {\"sign\": \"%s\", \"k\": %d, \"tested\": %llu, \"bad\": %llu, \"first\": [",
                  s ? "negative" : "positive", ks[t], st->ex2_tested[s][t], st->ex2_bad[s][t]);
      for (int i = 0; i < kFirst && i < static_cast<int>(st->ex2_bad[s][t]); ++i)
        std::printf("%s\"0x%08x\"", i ? ", " : "", st->ex2_first[s][t][i]);
      std::printf("]}%s\n", s == 1 && t == kEx2Ks - 1 ? "" : ",");
    }
  std::printf("], \"ex2_table_bit_sums\": {\"neg23\": %llu, \"neg24\": %llu, \"pos23\": %llu},\n",
              st->sum_neg23, st->sum_neg24, st->sum_pos23);
  std::printf("\"lg2_finest_bit_hist\": {");
  bool first = true;
  for (int p = 0; p < 64; ++p)
    if (st->lg2_bit_hist[p]) {
      std::printf("%s\"%s\": %llu", first ? "" : ", ",
                  p == 63 ? "zero" : (p == 62 ? "finer_than_56" : std::to_string(p).c_str()),
                  st->lg2_bit_hist[p]);
      first = false;
    }
  std::printf("}, \"lg2_table_k\": %d, \"lg2_y0_check_bad\": %llu, \"lg2_sum_y0\": %llu,\n", kfine,
              st->lg2_y0_check_bad, st->sum_lg2_y0);
  const char* modes[kModes] = {"rn", "rz", "rd", "ru"};
  std::printf("\"lg2_tested\": %llu, \"lg2_rounding\": [\n", st->lg2_tested);
  for (int t = 0; t < kModes; ++t) {
    std::printf("  {\"mode\": \"%s\", \"bad\": %llu, \"first\": [", modes[t], st->lg2_bad[t]);
    for (int i = 0; i < kFirst && i < static_cast<int>(st->lg2_bad[t]); ++i)
      std::printf("%s\"0x%08x\"", i ? ", " : "", st->lg2_first[t][i]);
    std::printf("]}%s\n", t < kModes - 1 ? "," : "");
  }
  std::printf("], \"lg2_two_table\": {\"bad\": %llu, \"first\": [", st->lg2_two_bad);
  for (int i = 0; i < kFirst && i < static_cast<int>(st->lg2_two_bad); ++i)
    std::printf("%s\"0x%08x\"", i ? ", " : "", st->lg2_two_first[i]);
  std::printf("], \"sum_y1\": %llu}}\n", st->sum_lg2_y1);
  return 0;
}
