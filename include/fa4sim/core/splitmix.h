// splitmix.h: the splitmix64 finaliser and its constants, the one mixing function behind every
// counter-based random stream in fa4sim (the exp2 sampler, the rescale and attention inputs, the
// stochastic-rounding bits of formats.h). A counter-based stream draws element i as
// splitmix64_mix(key + i * kSplitmixGamma), so results do not depend on how work is split.
//
// The finaliser is Stafford's "Mix13" as used by splitmix64 (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014; java.util.SplittableRandom).
#pragma once

#include <cstdint>

#include "fa4sim/core/hd.h"

namespace fa4sim {

// The Weyl increment of splitmix64: 2^64 / golden ratio, odd.
inline constexpr uint64_t kSplitmixGamma = 0x9E3779B97F4A7C15ull;
// A second odd multiplier (Steele and Vigna's LXM constant) that keys streams by seed.
inline constexpr uint64_t kSplitmixSeedMul = 0xD1B54A32D192ED03ull;
// The finaliser's two multipliers (the AVX2 versions use them lane by lane).
inline constexpr uint64_t kMixMul1 = 0xBF58476D1CE4E5B9ull;
inline constexpr uint64_t kMixMul2 = 0x94D049BB133111EBull;

// splitmix64's output function: a bijection of 64-bit words with full avalanche.
FA4_HD constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * kMixMul1;
  z = (z ^ (z >> 27)) * kMixMul2;
  return z ^ (z >> 31);
}

// The sequential generator: advances `state` by the Weyl increment and mixes it.
FA4_HD constexpr uint64_t splitmix64_next(uint64_t& state) {
  return splitmix64_mix(state += kSplitmixGamma);
}

}  // namespace fa4sim
