// exp2_ref.h: reference values of 2^x for the exp2 error analyses (role `_ref`, docs/style.md §2).
//
// Two references:
//   exp2_ref(x)            a fast double 2^x, branch-free so the analyses' hot loops vectorise it;
//   exp2_mp_round_odd(x)   2^x in Boost.Multiprecision (cpp_bin_float, 50 decimal digits), rounded
//                          ONCE to a double with round-to-odd (src/ref/exp2_ref.cpp): rounding that
//                          double again to nearest gives the correctly rounded fp32/bf16/fp16 of
//                          the exact 2^x (double has 53 >= 24 + 2 bits).
// Does not model: any GPU instruction (the MUFU's ex2.approx is measured by the GPU backend).
//
// ---- Contract: exp2_ref(x)
// Inputs:        a float32 value x (passed as double) with -1022 <= x <= 1023.
// Max error vs:  relative error < kExp2RefMaxRelErr = 1e-15 against exp2_mp (tests/ref/test_exp2_ref.cpp
//                measures the max on millions of inputs and every rounding decision it implies).
// Method:        n = floor(x + 0.5), t = x - n in [-0.5, 0.5] (both exact for a float32 x);
//                2^t = exp(t ln 2) by its Taylor series to degree 13 (truncation < 5e-18), Horner
//                with explicit std::fma; then times 2^n built from the exponent bits (exact).
// Special values: none inside the domain (outside it the scaling bits are meaningless).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace fa4sim {

inline constexpr double kExp2RefMaxRelErr = 1e-15;

// (ln 2)^k / k!, k = 0..13, each rounded to nearest double.
inline constexpr double kExp2RefTaylor[14] = {
    1.0,
    0.6931471805599453,
    0.24022650695910072,
    0.05550410866482158,
    0.009618129107628477,
    0.0013333558146428443,
    0.0001540353039338161,
    1.5252733804059841e-05,
    1.321548679014431e-06,
    1.01780860092397e-07,
    7.054911620801123e-09,
    4.4455382718708116e-10,
    2.5678435993488206e-11,
    1.3691488853904128e-12,
};

inline double exp2_ref(double x) {
  const double n = std::floor(x + 0.5);
  const double t = x - n;
  double p = kExp2RefTaylor[13];
  for (int k = 12; k >= 0; --k) p = std::fma(p, t, kExp2RefTaylor[k]);
  const uint64_t scale_bits = static_cast<uint64_t>(static_cast<int64_t>(n) + 1023) << 52;
  double scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return p * scale;
}

// 2^x (x any float32 in [-1022, 1023]) in multiprecision, rounded once to double with
// round-to-odd. Slow (microseconds); thread-safe.
double exp2_mp_round_odd(float x);
// |exp2_ref(x) - 2^x| / 2^x, computed in multiprecision.
double exp2_ref_rel_error(float x);

}  // namespace fa4sim
