// numpy_rng.cpp: NumPy's SeedSequence, PCG64 and ziggurat normal (see numpy_rng.h).
#include "fa4sim/util/numpy_rng.h"

#include <cmath>

#include "ziggurat_avx2.h"

namespace fa4sim {

namespace numpy_detail {
#include "numpy_ziggurat_tables.inc"
}  // namespace numpy_detail

namespace {

// ---- SeedSequence (bit_generator.pyx); every operation is uint32 arithmetic.
constexpr uint32_t kInitA = 0x43b0d7e5u, kMultA = 0x931e8875u;
constexpr uint32_t kInitB = 0x8b51f9ddu, kMultB = 0x58f38dedu;
constexpr uint32_t kMixMultL = 0xca01f9ddu, kMixMultR = 0x4973f715u;
constexpr int kXShift = 16;
constexpr int kPoolSize = 4;

uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t r = kMixMultL * x - kMixMultR * y;
  r ^= r >> kXShift;
  return r;
}

}  // namespace

std::vector<uint32_t> numpy_seed_sequence_state(uint64_t seed, int n_words32) {
  // entropy: the integer as little-endian uint32 words (0 -> [0]).
  std::vector<uint32_t> entropy;
  if (seed == 0) entropy.push_back(0);
  for (uint64_t s = seed; s != 0; s >>= 32) entropy.push_back(uint32_t(s));
  uint32_t pool[kPoolSize];
  uint32_t hc = kInitA;
  for (int i = 0; i < kPoolSize; ++i)
    pool[i] = hashmix(size_t(i) < entropy.size() ? entropy[size_t(i)] : 0u, hc);
  for (int s = 0; s < kPoolSize; ++s)
    for (int d = 0; d < kPoolSize; ++d)
      if (s != d) pool[d] = mix(pool[d], hashmix(pool[s], hc));
  for (size_t s = kPoolSize; s < entropy.size(); ++s)
    for (int d = 0; d < kPoolSize; ++d) pool[d] = mix(pool[d], hashmix(entropy[s], hc));
  std::vector<uint32_t> out(static_cast<size_t>(n_words32));
  uint32_t hb = kInitB;
  for (int i = 0; i < n_words32; ++i) {
    uint32_t v = pool[i % kPoolSize];
    v ^= hb;
    hb *= kMultB;
    v *= hb;
    v ^= v >> kXShift;
    out[size_t(i)] = v;
  }
  return out;
}

namespace {
using u128 = unsigned __int128;
constexpr u128 kPcgMult = (u128(0x2360ED051FC65DA4ull) << 64) | u128(0x4385DF649FCCF645ull);
}  // namespace

NumpyGenerator::NumpyGenerator(uint64_t seed) {
  const std::vector<uint32_t> w = numpy_seed_sequence_state(seed, 8);
  uint64_t v[4];
  for (int i = 0; i < 4; ++i)
    v[i] = uint64_t(w[size_t(2 * i)]) | (uint64_t(w[size_t(2 * i + 1)]) << 32);
  const u128 initstate = (u128(v[0]) << 64) | v[1];
  const u128 initseq = (u128(v[2]) << 64) | v[3];
  state_ = 0;
  inc_ = (initseq << 1) | 1u;
  state_ = state_ * kPcgMult + inc_;
  state_ += initstate;
  state_ = state_ * kPcgMult + inc_;
}

uint64_t NumpyGenerator::next_uint64() {
  state_ = state_ * kPcgMult + inc_;
  const uint64_t x = uint64_t(state_ >> 64) ^ uint64_t(state_);
  const unsigned rot = unsigned(state_ >> 122);
  return (x >> rot) | (x << ((64u - rot) & 63u));
}

double NumpyGenerator::random() { return double(next_uint64() >> 11) * (1.0 / 9007199254740992.0); }

double NumpyGenerator::standard_normal() {
  return ziggurat_normal([this] { return next_uint64(); });
}

// PCG64's state is a 128-bit LCG, stepped one draw at a time; the four raw outputs then go
// through the ziggurat's fast path together (ziggurat_avx2.h). At the first lane off the fast
// path the state is rewound to just before that draw and the scalar standard_normal() takes it.
void NumpyGenerator::standard_normals(double* out, size_t n) {
  size_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  while (i + 4 <= n) {
    unsigned __int128 before[4];
    alignas(32) uint64_t r[4];
    for (int l = 0; l < 4; ++l) {
      before[l] = state_;
      r[l] = next_uint64();
    }
    const int ok =
        simd::ziggurat_fast4(_mm256_load_si256(reinterpret_cast<const __m256i*>(r)), out + i);
    if (ok == 0xF) {
      i += 4;
      continue;
    }
    const int j = __builtin_ctz(unsigned(~ok) & 0xFu);  // first lane off the fast path
    i += size_t(j);
    state_ = before[j];
    out[i++] = standard_normal();
  }
#endif
  for (; i < n; ++i) out[i] = standard_normal();
}

std::vector<float> NumpyGenerator::standard_normal_f32(size_t count) {
  std::vector<double> z(count);
  standard_normals(z.data(), count);
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = float(z[i]);
  return out;
}

std::vector<float> NumpyGenerator::scores_f32(double sigma, double total, int rows, int keys) {
  std::vector<float> out(size_t(rows) * size_t(keys));
  std::vector<double> z(static_cast<size_t>(keys));
  for (int r = 0; r < rows; ++r) {
    standard_normals(z.data(), size_t(keys));
    for (int k = 0; k < keys; ++k) {
      const double x = 0.0 + sigma * z[size_t(k)];  // Generator.normal(loc=0, scale=sigma)
      out[size_t(r) * size_t(keys) + size_t(k)] = float(x + total * double(k) / double(keys));
    }
  }
  return out;
}

}  // namespace fa4sim
