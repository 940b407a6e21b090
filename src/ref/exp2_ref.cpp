// exp2_ref.cpp: the multiprecision 2^x reference (Boost.Multiprecision cpp_bin_float).
#include "fa4sim/ref/exp2_ref.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include <boost/multiprecision/cpp_bin_float.hpp>

namespace fa4sim {

namespace {

using Mp = boost::multiprecision::cpp_bin_float_50;  // 50 decimal digits, ~166 bits

const Mp& ln2() {
  static const Mp v = boost::multiprecision::log(Mp(2));
  return v;
}

// 2^x = 2^n * exp(f ln 2) with n = floor(x), f = x - n in [0, 1) (exact in Mp). The last input's
// value is kept per thread: a caller that asks both exp2_mp_round_odd(x) and
// exp2_ref_rel_error(x) (tests/ref/test_exp2_ref.cpp) pays for one multiprecision exp, not two.
Mp exp2_mp(float x) {
  thread_local uint32_t last_bits = 0;
  thread_local Mp last;
  thread_local bool have = false;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if (have && bits == last_bits) return last;
  const double n = std::floor(static_cast<double>(x));
  const Mp f = Mp(static_cast<double>(x)) - Mp(n);
  last = boost::multiprecision::ldexp(boost::multiprecision::exp(f * ln2()), static_cast<int>(n));
  last_bits = bits;
  have = true;
  return last;
}

double next_toward_zero(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  --u;  // d > 0
  std::memcpy(&d, &u, sizeof d);
  return d;
}

}  // namespace

double exp2_mp_round_odd(float x) {
  const Mp v = exp2_mp(x);  // > 0
  double d = v.convert_to<double>();
  if (Mp(d) > v) d = next_toward_zero(d);  // now d = RZ(v)
  if (Mp(d) != v) {                        // inexact: force the last bit to 1 (round to odd)
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    u |= 1u;
    std::memcpy(&d, &u, sizeof d);
  }
  return d;
}

double exp2_ref_rel_error(float x) {
  const Mp v = exp2_mp(x);
  const Mp r = Mp(exp2_ref(static_cast<double>(x)));
  return (boost::multiprecision::abs(r - v) / v).convert_to<double>();
}

}  // namespace fa4sim
