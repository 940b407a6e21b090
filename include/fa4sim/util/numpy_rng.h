// numpy_rng.h: NumPy's default generator, bit for bit: `numpy.random.default_rng(seed)` =
// Generator(PCG64(SeedSequence(seed))), with the streams `standard_normal` (256-layer ziggurat),
// `normal(0, sigma)` and `random()` that the seed article's simulation draws from.
//
// Models: numpy/random/bit_generator.pyx (SeedSequence: hashmix pool of 4 uint32 words,
// generate_state), numpy/random/src/pcg64/pcg64.h (PCG64 = 128-bit LCG, multiplier
// 0x2360ED051FC65DA44385DF649FCCF645, XSL-RR output; set_seed(state words 0-1, inc words 2-3)),
// numpy/random/src/distributions/distributions.c (random_standard_normal, next_double) and the
// ziggurat tables of ziggurat_constants.h (src/util/numpy_ziggurat_tables.inc, extracted from NumPy
// by scripts/build/extract_numpy_ziggurat.py). NumPy is BSD-3-Clause.
// Bit-exact vs: numpy itself (tests/util/test_numpy_rng.cpp runs python3 + numpy when available and
// compares the first values of each stream bit for bit; skipped visibly without numpy).
// Does not model: other bit generators, legacy RandomState, spawn keys, numpy's uint32 buffering
// (only 64-bit draws are used here).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fa4sim {

class NumpyGenerator {
 public:
  explicit NumpyGenerator(uint64_t seed);  // default_rng(seed), seed < 2^64
  uint64_t next_uint64();                  // PCG64 step + XSL-RR
  double random();                         // Generator.random(): (u64 >> 11) * 2^-53
  double standard_normal();                // Generator.standard_normal()
  // out[0..n) = n successive standard_normal() draws (with AVX2 the ziggurat's fast path is
  // taken four draws at a time; the values and the stream are the same).
  void standard_normals(double* out, size_t n);
  // `count` standard normals, rounded to float32 (the simulator's V).
  std::vector<float> standard_normal_f32(size_t count);
  // A (rows x keys) score matrix drawn as numpy.normal(0, sigma, (rows, keys)) (C order) plus
  // total * k / keys on key k, rounded to float32.
  std::vector<float> scores_f32(double sigma, double total, int rows, int keys);

 private:
  unsigned __int128 state_ = 0, inc_ = 0;
};

namespace numpy_detail {
extern const double kZigFi[256];
extern const double kZigWi[256];
extern const uint64_t kZigKi[256];
inline constexpr double kZigNorR = 3.6541528853610087963519472518;
inline constexpr double kZigNorInvR = 0.27366123732975827203338247596;
}  // namespace numpy_detail

// NumPy's 256-layer ziggurat (distributions.c, random_standard_normal) on any uniform 64-bit
// source `next()`: NumPy's stream when the source is its PCG64, fa4sim's own normals with its
// counter-based streams. Inline so the 99.3 % fast path costs a few ns.
template <class Next>
double ziggurat_normal(Next&& next) {
  using namespace numpy_detail;
  auto next_double = [&] { return double(next() >> 11) * (1.0 / 9007199254740992.0); };
  for (;;) {
    uint64_t r = next();
    const int idx = int(r & 0xff);
    r >>= 8;
    const int sign = int(r & 0x1);
    const uint64_t rabs = (r >> 1) & 0x000fffffffffffffull;
    double x = double(rabs) * kZigWi[idx];
    if (sign & 0x1) x = -x;
    if (rabs < kZigKi[idx]) return x;  // 99.3% of draws
    if (idx == 0) {
      for (;;) {
        const double xx = -kZigNorInvR * std::log1p(-next_double());
        const double yy = -std::log1p(-next_double());
        if (yy + yy > xx * xx) return ((rabs >> 8) & 0x1) ? -(kZigNorR + xx) : kZigNorR + xx;
      }
    } else if (((kZigFi[idx - 1] - kZigFi[idx]) * next_double() + kZigFi[idx]) <
               std::exp(-0.5 * x * x)) {
      return x;
    }
  }
}

// SeedSequence(seed).generate_state(n_words, uint32) (exposed for tests).
std::vector<uint32_t> numpy_seed_sequence_state(uint64_t seed, int n_words32);

}  // namespace fa4sim
