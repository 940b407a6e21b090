// row_stream.h: fa4sim's own random generator, the one behind `fa4sim rescale`'s V and score
// matrices (--rng fa4sim): counter-based splitmix64 streams (core/splitmix.h), one per
// (seed, stream name, row), so that draws do not depend on the thread count. Normals by NumPy's
// ziggurat (numpy_rng.h, ziggurat_normal) on these bits; uniforms on [0, 1) from the top 53 bits.
//
// Not NumPy's stream: `--rng numpy:SEED` draws NumPy's own (NumpyGenerator, numpy_rng.h).
#pragma once

#include <cstdint>
#include <string>

#include "fa4sim/core/splitmix.h"
#include "fa4sim/util/numpy_rng.h"

namespace fa4sim {

// FNV-1a (64 bit) of a stream name: "V", "scores:normal:1.5", "oneshot:u".
uint64_t fnv1a(const std::string& s);

// The stream of (seed, stream, row): state = splitmix64_next(seed ^ fnv1a(stream)) ^
// (row * kSplitmixSeedMul), advanced once; draw i is splitmix64_next(state).
struct RowStream {
  uint64_t state;
  RowStream(uint64_t seed, const std::string& stream, uint64_t row) {
    uint64_t s = seed ^ fnv1a(stream);
    state = splitmix64_next(s) ^ (row * kSplitmixSeedMul);
    splitmix64_next(state);
  }
  double uniform() { return double(splitmix64_next(state) >> 11) * 0x1p-53; }  // [0, 1)
  double normal() {
    return ziggurat_normal([this] { return splitmix64_next(state); });
  }
  // out[0..n) = n successive normal() draws, the same values in the same stream order (AVX2: four
  // draws at a time; row_stream.cpp says how).
  void normals(double* out, int n);
};

}  // namespace fa4sim
