// exp2_emu.cpp: the array form of ex2_emu (the scalar core is include/fa4sim/core/exp2_emu.h).
//
// The AVX2 path (src/core/exp2_emu_avx2.h) runs the same GPU op sequence 8 lanes at a time.
// tests/core/test_exp2_emu.cpp (slow) checks array == scalar == an independent model for all 2^32
// inputs and degrees 0-5.
#include <cstddef>

#include "fa4sim/core/exp2_emu.h"

#include "cpu_features.h"
#include "exp2_emu_avx2.h"

namespace fa4sim {

#if FA4SIM_RUNTIME_DISPATCH && !FA4SIM_EX2_AVX2
// A baseline build (the wheel): the AVX2/FMA loops live in exp2_emu_dispatch.cpp, compiled apart
// with -mavx2 -mfma, and run only on a CPU that has both (checked once).
#define FA4SIM_EX2_RUNTIME 1
namespace detail {
size_t ex2_emu_avx2_lanes(const float* in, float* out, size_t n, int degree);
size_t ex2_emu_poly_avx2_lanes(const float* in, float* out, size_t n, const float* c, int degree);
}  // namespace detail
#endif

namespace {

void ex2_emu_scalar(const float* in, float* out, size_t n, int degree) {
  for (size_t i = 0; i < n; ++i) out[i] = ex2_emu(in[i], degree);
}

#if FA4SIM_EX2_AVX2
template <int D>
void ex2_emu_avx2(const float* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        detail::ex2_finish8<D>(detail::ex2_split8(u)));
  }
  ex2_emu_scalar(in + i, out + i, n - i, D);
}
#endif

}  // namespace

bool ex2_emu_array_is_simd() {
#if FA4SIM_EX2_AVX2
  return true;
#elif FA4SIM_EX2_RUNTIME
  return detail::cpu_has_avx2_fma();
#else
  return false;
#endif
}

void ex2_emu(std::span<const float> in, std::span<float> out, int degree) {
  FA4_DASSERT(out.size() >= in.size());
  FA4_DASSERT(degree >= 0 && degree <= kExp2MaxDegree);
  const size_t n = in.size() <= out.size() ? in.size() : out.size();
#if FA4SIM_EX2_AVX2
  switch (degree < 0 ? 0 : degree) {  // out-of-range degrees clamp like the scalar form
    case 0: return ex2_emu_avx2<0>(in.data(), out.data(), n);
    case 1: return ex2_emu_avx2<1>(in.data(), out.data(), n);
    case 2: return ex2_emu_avx2<2>(in.data(), out.data(), n);
    case 3: return ex2_emu_avx2<3>(in.data(), out.data(), n);
    case 4: return ex2_emu_avx2<4>(in.data(), out.data(), n);
    default: return ex2_emu_avx2<5>(in.data(), out.data(), n);
  }
#else
  size_t done = 0;
#if FA4SIM_EX2_RUNTIME
  if (detail::cpu_has_avx2_fma())
    done = detail::ex2_emu_avx2_lanes(in.data(), out.data(), n, degree);
#endif
  ex2_emu_scalar(in.data() + done, out.data() + done, n - done, degree);
#endif
}

void ex2_emu_poly(std::span<const float> in, std::span<float> out, std::span<const float> coeffs) {
  FA4_DASSERT(out.size() >= in.size());
  FA4_DASSERT(!coeffs.empty() && coeffs.size() <= kExp2MaxDegree + 1);
  const size_t n = in.size() <= out.size() ? in.size() : out.size();
  const int degree = static_cast<int>(coeffs.size()) - 1;
  const float* c = coeffs.data();
  size_t i = 0;
#if FA4SIM_EX2_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in.data() + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.data() + i),
                        detail::ex2_finish8_poly(detail::ex2_split8(u), c, degree));
  }
#elif FA4SIM_EX2_RUNTIME
  if (detail::cpu_has_avx2_fma())
    i = detail::ex2_emu_poly_avx2_lanes(in.data(), out.data(), n, c, degree);
#endif
  for (; i < n; ++i) out[i] = ex2_emu_poly(in[i], c, degree);
}

}  // namespace fa4sim
