// exp2_options.h: the option set of `fa4sim exp2` as strings, and their parsing into an
// Exp2Config with fa4sim-style errors (exit 2): shared by the CLI and the Python module's
// `fa4sim.exp2_analysis()`, so both take the same options with the same messages.
#pragma once

#include <string>

#include "fa4sim/analysis/exp2_analysis.h"
#include "fa4sim/options/common.h"
#include "fa4sim/util/seed.h"

namespace fa4sim {

struct Exp2Options {
  std::string degree = "3,4,5";
  std::string range = "-20,8";
  std::string samples = "4194304";
  std::string sampling = "uniform";
  bool exhaustive = false;
  std::string out_dtype = "bf16";
  std::string seed = default_seed_text();
  std::string reference = "f64";
  bool hardware = false;
  bool mufu_model = false;    // --mufu-model: the emulation vs the H200's MUFU model (no GPU)
  std::string coeffs;         // --coeffs FILE|c0,c1,... (empty: upstream's POLY_EX2)
  bool coeffs_given = false;  // --coeffs was on the command line (even as an empty value)
  bool degree_given = false;  // --degree was on the command line (an error with --coeffs)
  CommonOptions common;
};

// --samples: an integer >= 1 (the limit kExp2MaxSamples is validate(Exp2Config)'s).
uint64_t parse_exp2_samples(const std::string& s);

// Validates every option (validate(Exp2Config) included) and builds the analysis' config.
Exp2Config parse_exp2_options(const Exp2Options& o);

}  // namespace fa4sim
