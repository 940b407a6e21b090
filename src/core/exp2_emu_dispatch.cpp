// exp2_emu_dispatch.cpp: ex2_emu's AVX2/FMA array loops for builds that target a baseline below
// AVX2 (the wheel: FA4SIM_NATIVE=OFF, FA4SIM_ISA=x86-64-v2). CMake compiles this file alone with
// -mavx2 -mfma (FA4SIM_RUNTIME_DISPATCH); exp2_emu.cpp calls it only when the CPU has AVX2 and FMA
// (__builtin_cpu_supports), so the rest of the library stays at the baseline. It runs the
// same lane kernel (exp2_emu_avx2.h) as a -march=native build, so the bits are the same.
// Every function here has "avx2" in its name: the wheel test's objdump check
// (tests/python/wheel_check.py) allows AVX2/FMA instructions in those functions only, and this
// file defines no inline function of a shared header (those could be picked by the linker for
// baseline callers).
#include <cstddef>

#include "exp2_emu_avx2.h"

#if FA4SIM_RUNTIME_DISPATCH && FA4SIM_EX2_AVX2

namespace fa4sim::detail {

namespace {

template <int D>
size_t ex2_emu_avx2_lanes_d(const float* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), ex2_finish8<D>(ex2_split8(u)));
  }
  return i;
}

}  // namespace

// The first multiple of 8 elements of ex2_emu(in, out, degree); returns how many were done.
size_t ex2_emu_avx2_lanes(const float* in, float* out, size_t n, int degree) {
  switch (degree < 0 ? 0 : degree) {  // out-of-range degrees clamp like the scalar form
    case 0: return ex2_emu_avx2_lanes_d<0>(in, out, n);
    case 1: return ex2_emu_avx2_lanes_d<1>(in, out, n);
    case 2: return ex2_emu_avx2_lanes_d<2>(in, out, n);
    case 3: return ex2_emu_avx2_lanes_d<3>(in, out, n);
    case 4: return ex2_emu_avx2_lanes_d<4>(in, out, n);
    default: return ex2_emu_avx2_lanes_d<5>(in, out, n);
  }
}

// The same for ex2_emu_poly (coefficients c[0..degree]).
size_t ex2_emu_poly_avx2_lanes(const float* in, float* out, size_t n, const float* c, int degree) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        ex2_finish8_poly(ex2_split8(u), c, degree));
  }
  return i;
}

}  // namespace fa4sim::detail

#endif
