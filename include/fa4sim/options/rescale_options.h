// rescale_options.h: the option set of `fa4sim rescale` as strings, and their parsing into a
// RescaleConfig with fa4sim-style errors (exit 2), in one place: the CLI (src/cli/cmd_rescale.cpp)
// and the Python module's `fa4sim.rescale()` take the same options with the same messages.
#pragma once

#include <string>

#include "fa4sim/analysis/rescale.h"
#include "fa4sim/options/common.h"

namespace fa4sim {

struct RescaleCliOptions {
  std::string tau = "0,8";
  std::string dtype = "bf16";
  std::string max_offset;
  std::string dist = "normal:1.5";
  std::string rows = "256", keys = "8192", block = "128", d = "128";
  std::string v_dist = "normal";
  std::string exp = "mufu";
  std::string scale;
  std::string order = "auto";
  std::string warp_rows = "32";
  std::string seed = default_seed_text();
  std::string seeds = "1";
  std::string rng = "fa4sim";
  bool allow_saturation = false;
  bool counts_only = false;
  CommonOptions common;
};

inline constexpr int64_t kRescaleMaxDim = 1 << 20;  // --rows, --keys, --block-n

// --tau: a list of numbers (NaN refused by name).
std::vector<double> parse_rescale_taus(const std::string& s);

// Validates every option but the safety check (validate_rescale_config's) and builds the config.
// `given` says which of --rows, --keys and --seed were given explicitly.
RescaleConfig parse_rescale_options(const RescaleCliOptions& o, const OptionGiven& given);

}  // namespace fa4sim
