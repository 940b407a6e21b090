// hd.h: the one file that looks at __CUDACC__.
//
// The emulator cores (exp2_emu.h, formats.h, online-softmax bookkeeping) are header-only and
// marked FA4_HD so the same text compiles for the CPU and under nvcc. They do no I/O, no
// allocation, and throw nothing.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FA4_HD __host__ __device__ __forceinline__
#else
#define FA4_HD inline
#endif

#ifndef NDEBUG
#include <cassert>
#define FA4_DASSERT(x) assert(x)
#else
#define FA4_DASSERT(x) ((void)0)
#endif

namespace fa4sim {

// Bit views of float32 (std::bit_cast is not usable in device code with every nvcc).
FA4_HD uint32_t f32_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
FA4_HD float f32_from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace fa4sim
