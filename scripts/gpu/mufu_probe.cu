// scripts/gpu/mufu_probe.cu: what the H200's MUFU computes for ex2/rcp/lg2.approx.ftz.f32, over all
// 2^32 inputs (the first measurements behind a bit-exact CPU model of these units).
//
// For each unit: the histogram of the distance in float32 ulps to the correctly rounded result
// (reference: the double-precision function rounded to float32; results that the unit flushes or
// that are not finite are counted apart), monotonicity over all inputs in value order (each
// violation counted, the first ones printed), and structure hypotheses:
//   ex2: H1 "exponent shift": ex2(x) == 2^n * ex2(x - n), n = floor(x), wherever both are normal;
//        H2 "fixed point": on (-1, 1), two neighbouring floats with the same floor(x * 2^k) give the
//        same result, for which k (the smallest k with no change is the unit's input resolution);
//   rcp: H1 "mantissa only": rcp(m * 2^e) == rcp(m) * 2^-e wherever both are normal;
//   lg2: H1 "exponent add": lg2(m * 2^e) == e + lg2(m) computed in double and rounded once, for
//        m in [1, 2) (counted; expected to fail where the sum needs rounding).
// Tables (gzip them before they travel): for j in [0, 2^23): rcp_table.bin int8 delta in ulps of
// rcp(1 + j 2^-23) from the correctly rounded float32 1/x; ex2_table.bin int8 delta of
// ex2(j 2^-23) from exp2 rounded to float32.
// Build and run on the GPU machine: nvcc -O2 -arch=sm_90a -o mufu_probe scripts/gpu/mufu_probe.cu &&
//   ./mufu_probe OUT_DIR
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <string>
#include <vector>

#include "cuda_check.cuh"

enum Op { kEx2 = 0, kRcp = 1, kLg2 = 2 };
constexpr int kHist = 17;  // ulp distances -8..8 (clipped)
constexpr int kFirst = 8;

struct Stats {
  unsigned long long hist[3][kHist + 1];  // last bin: special-class mismatch (nan/inf/zero class)
  unsigned long long nonmono[3];
  unsigned int nonmono_first[3][kFirst];
  unsigned long long h1_bad[3], h1_tested[3];
  unsigned int h1_first[3][kFirst];
  unsigned long long h2_changes[2][40];  // [sign][k]
};

__device__ __forceinline__ float mufu(int op, float x) {
  float y;
  if (op == kEx2)
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  else if (op == kRcp)
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  else
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float reference(int op, float x) {
  const double d = x;
  if (op == kEx2) return static_cast<float>(exp2(d));
  if (op == kRcp) return __frcp_rn(x);
  return static_cast<float>(log2(d));
}

__device__ __forceinline__ long long ordered(uint32_t b) {
  return (b & 0x80000000u) ? -static_cast<long long>(b & 0x7fffffffu) : static_cast<long long>(b);
}

__device__ __forceinline__ bool normal(float v) {
  const float a = fabsf(v);
  return a >= 1.17549435e-38f && a <= 3.40282347e38f;
}

__device__ void record(unsigned long long* count, unsigned int* first, uint32_t b) {
  const unsigned long long i = atomicAdd(count, 1ull);
  if (i < kFirst) first[i] = b;
}

__global__ void k_sweep(int op, uint64_t base, Stats* st) {
  const uint64_t i64 = base + blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint32_t b = static_cast<uint32_t>(i64);
  const float x = __uint_as_float(b);
  if (isnan(x)) return;
  // FTZ input: subnormal inputs read as zero by the unit; the reference sees the same zero.
  const bool sub = fabsf(x) < 1.17549435e-38f && x != 0.0f;
  const float xin = sub ? copysignf(0.0f, x) : x;
  const float y = mufu(op, x);
  float r = reference(op, xin);
  if (fabsf(r) < 1.17549435e-38f) r = copysignf(0.0f, r);  // FTZ output
  const uint32_t yb = __float_as_uint(y), rb = __float_as_uint(r);
  int bin;
  if (isfinite(y) && isfinite(r) && y != 0.0f && r != 0.0f) {
    long long dlt = ordered(yb) - ordered(rb);
    dlt = dlt < -8 ? -8 : (dlt > 8 ? 8 : dlt);
    bin = static_cast<int>(dlt) + 8;
  } else {
    bin = (yb == rb || (isnan(y) && isnan(r)) || (y == 0.0f && r == 0.0f)) ? 8 : kHist;
  }
  atomicAdd(&st->hist[op][bin], 1ull);
  // Monotonicity: the next float in value order (b+1 for +, b-1 for - except -0 -> +0).
  if (b != 0x7f800000u && b != 0xff800000u && !sub) {
    uint32_t nb;
    if (b == 0x80000000u)
      nb = 0x00000000u;
    else
      nb = (b & 0x80000000u) ? b - 1 : b + 1;
    const float xn = __uint_as_float(nb);
    if (!isnan(xn) && !(fabsf(xn) < 1.17549435e-38f && xn != 0.0f)) {
      const float yn = mufu(op, xn);
      const bool ok = op == kRcp ? (yn <= y || (x < 0.0f) != (xn < 0.0f) || x == 0.0f) : yn >= y;
      if (!ok && !isnan(y) && !isnan(yn)) record(&st->nonmono[op], st->nonmono_first[op], b);
    }
  }
  // H1 per unit.
  if (op == kEx2 && x > -126.0f && x < 128.0f) {
    const float n = floorf(x), f = x - n;  // exact
    const float y1 = ldexpf(mufu(op, f), static_cast<int>(n));
    if (normal(y) && normal(y1)) {
      atomicAdd(&st->h1_tested[op], 1ull);
      if (__float_as_uint(y1) != yb) record(&st->h1_bad[op], st->h1_first[op], b);
    }
  } else if (op == kRcp && normal(x)) {
    int e;
    const float m = frexpf(fabsf(x), &e) * 2.0f;  // [1, 2)
    const float y1 = copysignf(ldexpf(mufu(op, m), 1 - e), x);
    if (normal(y) && normal(y1)) {
      atomicAdd(&st->h1_tested[op], 1ull);
      if (__float_as_uint(y1) != yb) record(&st->h1_bad[op], st->h1_first[op], b);
    }
  } else if (op == kLg2 && normal(x) && x > 0.0f) {
    int e;
    const float m = frexpf(x, &e) * 2.0f;
    const float y1 =
        static_cast<float>(static_cast<double>(e - 1) + static_cast<double>(mufu(op, m)));
    atomicAdd(&st->h1_tested[op], 1ull);
    if (__float_as_uint(y1) != yb) record(&st->h1_bad[op], st->h1_first[op], b);
  }
  // H2 for ex2 on (-1, 1): neighbours in value order with the same floor(x 2^k).
  if (op == kEx2 && fabsf(x) < 1.0f && b != 0x80000000u) {
    const uint32_t nb = (b & 0x80000000u) ? b - 1 : b + 1;
    const float xn = __uint_as_float(nb);
    if (fabsf(xn) < 1.0f) {
      const bool changes = mufu(op, xn) != y;
      if (changes) {
        const int sign = x < 0.0f ? 1 : 0;
        for (int k = 10; k < 40; ++k) {
          const double s = ldexp(1.0, k);
          if (floor(static_cast<double>(x) * s) == floor(static_cast<double>(xn) * s))
            atomicAdd(&st->h2_changes[sign][k], 1ull);
        }
      }
    }
  }
}

__global__ void k_table(int op, int8_t* out) {
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= (1u << 23)) return;
  const float x =
      op == kRcp ? 1.0f + ldexpf(static_cast<float>(j), -23) : ldexpf(static_cast<float>(j), -23);
  const float y = mufu(op, x), r = reference(op, x);
  long long d = ordered(__float_as_uint(y)) - ordered(__float_as_uint(r));
  out[j] = static_cast<int8_t>(d < -127 ? -127 : (d > 127 ? 127 : d));
}

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : ".";
  Stats* st;
  CK(cudaMallocManaged(&st, sizeof(Stats)));
  std::memset(st, 0, sizeof(Stats));
  const char* names[3] = {"ex2.approx.ftz.f32", "rcp.approx.ftz.f32", "lg2.approx.ftz.f32"};
  for (int op = 0; op < 3; ++op) {
    for (uint64_t base = 0; base < (1ull << 32); base += (1ull << 30))
      k_sweep<<<(1u << 30) / 256, 256>>>(op, base, st);
    CK(cudaDeviceSynchronize());
  }
  std::printf("{\"units\": [\n");
  for (int op = 0; op < 3; ++op) {
    std::printf("  {\"unit\": \"%s\", \"ulp_hist_m8_to_p8\": [", names[op]);
    for (int i = 0; i < kHist; ++i) std::printf("%s%llu", i ? ", " : "", st->hist[op][i]);
    std::printf("], \"special_mismatch\": %llu, \"non_monotone\": %llu, \"non_monotone_first\": [",
                st->hist[op][kHist], st->nonmono[op]);
    for (int i = 0; i < kFirst && i < static_cast<int>(st->nonmono[op]); ++i)
      std::printf("%s\"0x%08x\"", i ? ", " : "", st->nonmono_first[op][i]);
    std::printf("], \"h1_tested\": %llu, \"h1_bad\": %llu, \"h1_first\": [", st->h1_tested[op],
                st->h1_bad[op]);
    for (int i = 0; i < kFirst && i < static_cast<int>(st->h1_bad[op]); ++i)
      std::printf("%s\"0x%08x\"", i ? ", " : "", st->h1_first[op][i]);
    std::printf("]}%s\n", op < 2 ? "," : "");
  }
  std::printf("], \"ex2_h2_changes_within_bucket\": {");
  for (int s = 0; s < 2; ++s) {
    std::printf("%s\"%s\": {", s ? ", " : "", s ? "negative" : "positive");
    for (int k = 10; k < 40; ++k)
      std::printf("%s\"%d\": %llu", k > 10 ? ", " : "", k, st->h2_changes[s][k]);
    std::printf("}");
  }
  std::printf("}}\n");
  int8_t* tab;
  CK(cudaMallocManaged(&tab, 1u << 23));
  const char* files[2] = {"ex2_table.bin", "rcp_table.bin"};
  const int ops[2] = {kEx2, kRcp};
  for (int t = 0; t < 2; ++t) {
    k_table<<<(1u << 23) / 256, 256>>>(ops[t], tab);
    CK(cudaDeviceSynchronize());
    FILE* f = std::fopen((out + "/" + files[t]).c_str(), "wb");
    if (!f || std::fwrite(tab, 1, 1u << 23, f) != (1u << 23)) {
      std::fprintf(stderr, "cannot write table\n");
      return 1;
    }
    std::fclose(f);
  }
  return 0;
}
