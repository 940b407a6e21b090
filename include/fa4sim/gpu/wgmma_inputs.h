// wgmma_inputs.h: the inputs of `fa4sim gpu verify --what wgmma`, counter-based so that the
// device kernel (src/cuda/wgmma_verify.cu) and the host (first mismatches, the sample file)
// draw the same bits for (seed, tile, element) without storing them.
//
// One wgmma per tile: A is 64 x K, B is K x 64, C is 64 x 64 (K = 16 for bf16/fp16, 32 for FP8).
// The tile's class is tile % kWgmmaClasses; element bits come from
// splitmix64_mix(splitmix64_mix(seed * kSplitmixSeedMul + tile) + key * kSplitmixGamma), key =
// (stream << 32) | index, stream 0 for A (index row * K + k), 1 for B (col * K + k), 2 for C
// (row * 64 + col) (core/splitmix.h). The classes:
//   exact      integers -7..7 in A and B, -255..255 in C: every sum is exact in every candidate
//              model, so a mismatch here is the harness's (layout, descriptors), not the model's
//   normal     exponents -4..4, C -6..10 (1/16 signed zeros)
//   cancel     pairs x, -x times equal B in the first 3K/4 products (exponents 6..10), small
//              products (exponents down to -12 and the subnormals) after them, C -30..4
//   spread     exponents over each format's whole range, subnormals included; C over float32's
//   subnormal  A, B: 1/4 signed zeros, 3/8 subnormals, 3/8 the lowest normals; C zero, float32
//              subnormal, or near the smallest products; every 8th row of A all -0 and every 8th
//              column of B all +0, with C = -0 where they meet (products and C all -0)
//   tiny       products near float32's subnormals and the zero exponent 2^-133 (bf16: exponents
//              -75..-60; the others: their subnormals), 1/4 zeros, C zero or -149..-120
//   special    1 element in 24 replaced by +-0, +-inf or NaN (E4M3: NaN 0x7F/0xFF only), C 1 in 5
//   overflow   the top 4 exponents of each format; C near +-FLT_MAX half of the time
#pragma once

#include <cstdint>

#include "fa4sim/core/hd.h"
#include "fa4sim/core/splitmix.h"
#include "fa4sim/core/wgmma_model.h"

namespace fa4sim {

inline constexpr int kWgmmaClasses = 8;
inline constexpr int kWgmmaTileDots = 64 * 64;  // dot products per tile (m64n64)

FA4_HD constexpr const char* wgmma_class_name(int c) {
  switch (c) {
    case 0: return "exact";
    case 1: return "normal";
    case 2: return "cancel";
    case 3: return "spread";
    case 4: return "subnormal";
    case 5: return "tiny";
    case 6: return "special";
    case 7: return "overflow";
  }
  return "?";
}

FA4_HD uint64_t wgmma_input_hash(uint64_t seed, uint64_t tile, uint32_t stream, uint32_t index) {
  const uint64_t key = (uint64_t(stream) << 32) | index;
  return splitmix64_mix(splitmix64_mix(seed * kSplitmixSeedMul + tile) + key * kSplitmixGamma);
}

// The bit layout of an input format: exponent and mantissa bits, bias, top exponent.
struct WgmmaBits {
  int eb, mb, emin, emax;
  bool e4m3;
};
FA4_HD constexpr WgmmaBits wgmma_bits(WgmmaInput in) {
  switch (in) {
    case WgmmaInput::bf16: return {8, 7, -126, 127, false};
    case WgmmaInput::fp16: return {5, 10, -14, 15, false};
    case WgmmaInput::e4m3: return {4, 3, -6, 8, true};
    case WgmmaInput::e5m2: return {5, 2, -14, 15, false};
  }
  return {8, 7, -126, 127, false};
}
FA4_HD constexpr WgmmaBits wgmma_f32_bits() { return {8, 23, -126, 127, false}; }

// A finite value of format f from 64 random bits: unbiased exponent uniform in [lo, hi] (clamped to
// [emin - mb, emax]; below emin a subnormal), random sign and mantissa.
FA4_HD uint32_t wgmma_rand_finite(const WgmmaBits& f, int lo, int hi, uint64_t h) {
  lo = lo < f.emin - f.mb ? f.emin - f.mb : lo;
  hi = hi > f.emax ? f.emax : hi;
  hi = hi < lo ? lo : hi;
  const int e = lo + int((h & 0xFFFFu) % uint32_t(hi - lo + 1));
  const uint32_t man = uint32_t(h >> 16) & ((1u << f.mb) - 1u);
  const uint32_t sign = uint32_t(h >> 63) << (f.eb + f.mb);
  const int bias = 1 - f.emin;
  uint32_t bits;
  if (e < f.emin) {
    bits = ((man | (1u << f.mb)) >> (f.emin - e));  // subnormal (low bits dropped)
  } else {
    bits = (uint32_t(e + bias) << f.mb) | man;
  }
  if (f.e4m3 && (bits & 0x7Fu) == 0x7Fu) --bits;  // S.1111.111 is NaN
  return sign | bits;
}

// |v| <= 15 exactly, in format f.
FA4_HD uint32_t wgmma_small_int(const WgmmaBits& f, int v) {
  const uint32_t sign = v < 0 ? 1u << (f.eb + f.mb) : 0u;
  const uint32_t a = uint32_t(v < 0 ? -v : v);
  if (a == 0) return sign;
  int e = 0;
  while ((a >> (e + 1)) != 0) ++e;
  const uint32_t man = (a - (1u << e)) << (f.mb - e);
  return sign | (uint32_t(e + 1 - f.emin) << f.mb) | man;
}

// A one-in-`n` draw from the high bits (the low ones pick exponents and mantissas).
FA4_HD bool wgmma_one_in(uint64_t h, uint32_t n) { return uint32_t(h >> 40) % n == 0; }

// Element (r, k) of A (stream 0: r = row) or B (stream 1: r = column), as input bits.
FA4_HD uint16_t wgmma_input_ab(WgmmaInput in, uint64_t seed, uint64_t tile, int stream, int r,
                               int k) {
  const WgmmaBits f = wgmma_bits(in);
  const int kk = wgmma_k(in);
  const int cls = int(tile % kWgmmaClasses);
  const uint64_t h = wgmma_input_hash(seed, tile, uint32_t(stream), uint32_t(r * kk + k));
  const uint32_t zero = uint32_t(h >> 63) << (f.eb + f.mb);
  switch (cls) {
    case 0: return uint16_t(wgmma_small_int(f, int(h % 15u) - 7));
    case 1: return uint16_t(wgmma_rand_finite(f, -4, 4, h));
    case 2: {
      if (k >= kk * 3 / 4) return uint16_t(wgmma_rand_finite(f, -12, -2, h));
      const uint64_t h0 =
          wgmma_input_hash(seed, tile, uint32_t(stream), uint32_t(r * kk + (k & ~1)));
      if (stream == 1) return uint16_t(wgmma_rand_finite(f, -2, 2, h0));
      const uint32_t x = wgmma_rand_finite(f, 6, 10, h0);
      return uint16_t((k & 1) ? x ^ (1u << (f.eb + f.mb)) : x);  // x, -x
    }
    case 3: return uint16_t(wgmma_rand_finite(f, -999, 999, h));
    case 4: {
      // Rows of A that are all -0 and columns of B that are all +0: every product -0 (the sign
      // of an exact zero result, with C = -0 there).
      if (r % 8 == 0) return uint16_t(stream == 0 ? 1u << (f.eb + f.mb) : 0u);
      const uint32_t p = uint32_t(h >> 40) % 8u;
      if (p < 2) return uint16_t(zero);
      return uint16_t(p < 5 ? wgmma_rand_finite(f, f.emin - f.mb, f.emin - 1, h)
                            : wgmma_rand_finite(f, f.emin, f.emin + 3, h));
    }
    case 5: {
      if (wgmma_one_in(h, 4)) return uint16_t(zero);
      return uint16_t(f.eb == 8 ? wgmma_rand_finite(f, -75, -60, h)
                                : wgmma_rand_finite(f, f.emin - f.mb, f.emin + 4, h));
    }
    case 6: {
      if (!wgmma_one_in(h, 24)) return uint16_t(wgmma_rand_finite(f, -3, 3, h));
      const uint32_t s = uint32_t(h >> 20) % 5u, sign = uint32_t(h >> 63) << (f.eb + f.mb);
      const uint32_t all = (1u << f.eb) - 1u;
      if (s < 2) return uint16_t(sign);                                                   // +-0
      if (f.e4m3 || s == 4) return uint16_t(sign | (all << f.mb) | ((1u << f.mb) - 1u));  // NaN
      return uint16_t(sign | (all << f.mb));                                              // +-inf
    }
    default: return uint16_t(wgmma_rand_finite(f, f.emax - 3, f.emax, h));
  }
}

// Element (row, col) of C, as float32 bits.
FA4_HD uint32_t wgmma_input_c(WgmmaInput in, uint64_t seed, uint64_t tile, int row, int col) {
  const WgmmaBits f = wgmma_bits(in);
  const WgmmaBits g = wgmma_f32_bits();
  const int cls = int(tile % kWgmmaClasses);
  const uint64_t h = wgmma_input_hash(seed, tile, 2u, uint32_t(row * 64 + col));
  const uint32_t zero = uint32_t(h >> 63) << 31;
  switch (cls) {
    case 0: return f32_bits(float(int(h % 511u) - 255));
    case 1: return wgmma_one_in(h, 16) ? zero : wgmma_rand_finite(g, -6, 10, h);
    case 2: return wgmma_one_in(h, 3) ? zero : wgmma_rand_finite(g, -30, 4, h);
    case 3: return wgmma_one_in(h, 10) ? zero : wgmma_rand_finite(g, -999, 999, h);
    case 4: {
      if (row % 8 == 0 && col % 8 == 0) return 0x80000000u;  // -0 (see wgmma_input_ab)
      const uint32_t p = uint32_t(h >> 40) % 3u;
      if (p == 0) return zero;
      if (p == 1) return wgmma_rand_finite(g, -149, -127, h);
      return wgmma_rand_finite(g, 2 * (f.emin - f.mb) - 2, 2 * f.emin + 4, h);
    }
    case 5: return wgmma_one_in(h, 3) ? zero : wgmma_rand_finite(g, -149, -120, h);
    case 6: {
      if (!wgmma_one_in(h, 5)) return wgmma_rand_finite(g, -3, 8, h);
      constexpr uint32_t kSpecial[6] = {0u,          0x80000000u, 0x7F800000u,
                                        0xFF800000u, 0x7FC00000u, 0xFFFFFFFFu};
      return kSpecial[uint32_t(h >> 20) % 6u];
    }
    default:
      return wgmma_one_in(h, 2) ? wgmma_rand_finite(g, 124, 127, h)
                                : wgmma_rand_finite(g, -3, 3, h);
  }
}

}  // namespace fa4sim
