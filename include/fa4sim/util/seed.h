// seed.h: the one default seed of every command, config and Python function that draws random
// numbers (exp2's sampled inputs, rescale's and attention's scores, quantize's stochastic
// rounding, the GPU commands' inputs). Seeds are explicit, printed, and part of every report's
// parameters (docs/style.md §5); a user who changes nothing gets seed 1 everywhere.
#pragma once

#include <cstdint>
#include <string>

namespace fa4sim {

inline constexpr uint64_t kDefaultSeed = 1;

inline std::string default_seed_text() { return std::to_string(kDefaultSeed); }

}  // namespace fa4sim
