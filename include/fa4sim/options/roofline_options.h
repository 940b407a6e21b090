// roofline_options.h: the option set of `fa4sim roofline` as strings, and their parsing into
// RooflineOptions with fa4sim-style errors (exit 2), in one place so that the Python module's
// `fa4sim.roofline()` takes exactly the CLI's options with the CLI's messages.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fa4sim/analysis/roofline.h"
#include "fa4sim/options/common.h"

namespace fa4sim {

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

inline constexpr int kRooflineMaxD =
    1024;  // FA4 supports d <= 256; the model is kept sane up to 1024

// The parts parse_roofline_options() parses, also checked by the CLI as each option is read.
std::pair<int, int> parse_tile(const std::string& s);  // MxN, each 1..4096
std::vector<int> parse_sweep(const std::string& s);    // LO:HI:STEP, each 1..kRooflineMaxD
// One --arch item: an arch JSON path (it holds '/' or ends in .json), "h100" (h100_sxm, the one
// H100 modelled), or a name of data/archs; an unknown name is refused as `opt`, listing `choices`.
ArchSpec load_arch_item(const std::string& opt, const std::string& item,
                        const std::vector<std::string>& choices);
double parse_emu_fraction(const std::string& s);  // 0..1

// Validates every option before any work and builds the analysis' options (params included).
RooflineOptions parse_roofline_options(const RooflineCliOptions& c);

}  // namespace fa4sim
