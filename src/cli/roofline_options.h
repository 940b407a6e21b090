// roofline_options.h: the option set of `fa4sim roofline` as strings, and their parsing into
// RooflineOptions with fa4sim-style errors (exit 2), in one place so that the Python module's
// `fa4sim.roofline()` takes exactly the CLI's options with the CLI's messages.
#pragma once

#include <string>
#include <vector>

#include "cli_util.h"
#include "fa4sim/analysis/roofline.h"

namespace fa4sim::cli {

struct RooflineCliOptions {
  std::string arch = "all";
  std::vector<std::string> arch_files;
  std::string d;
  std::string sweep_d;
  std::string dtype = "bf16";
  std::string tile = "128x128";
  std::string direction = "fwd";
  std::string emu_fraction;
  std::string degree = "3";
  std::string schedule;
  bool schedule_given = false;
  std::string measured;
  CommonOptions common;
};

// Validates every option before any work and builds the analysis' options (params included).
RooflineOptions build_options(const RooflineCliOptions& c);

}  // namespace fa4sim::cli
