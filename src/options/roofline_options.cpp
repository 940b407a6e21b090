// roofline_options.cpp: `fa4sim roofline`'s options parsed into RooflineOptions (see the header).
#include "fa4sim/options/roofline_options.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fa4sim/analysis/row_sim.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/suggest.h"

namespace fa4sim {

namespace {

constexpr int kMaxD = kRooflineMaxD;
constexpr int kMaxTile = 4096;

std::vector<ArchSpec> parse_archs(const std::string& spec, const std::vector<std::string>& files) {
  std::vector<ArchSpec> out;
  const auto known = known_arch_names();
  if (!spec.empty()) {
    for (const auto& item : split(spec, ',')) {
      if (item == "all") {
        for (const auto& n : known) out.push_back(load_known_arch(n));
      } else {
        std::vector<std::string> choices = known;
        choices.push_back("all");
        out.push_back(load_arch_item("--arch", item, choices));
      }
    }
  }
  for (const auto& f : files) out.push_back(load_arch_file(f));
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (out[i].name == out[j].name)
        throw Error(fmt::format("architecture '{}' is given twice ({} and {})", out[i].name,
                                out[j].origin, out[i].origin),
                    "give each once; a custom file needs its own \"name\"");
  return out;
}

}  // namespace

ArchSpec load_arch_item(const std::string& opt, const std::string& item,
                        const std::vector<std::string>& choices) {
  if (item.find('/') != std::string::npos || item.ends_with(".json")) return load_arch_file(item);
  if (item == "h100")
    return load_known_arch("h100_sxm");  // the common name of the one H100 we model
  return load_known_arch(parse_choice(opt, item, choices));
}

std::pair<int, int> parse_tile(const std::string& s) {
  const auto x = s.find('x');
  if (x == std::string::npos || s.find('x', x + 1) != std::string::npos)
    throw Error(fmt::format("--tile expects MxN (two whole numbers), got '{}'", s),
                "e.g. --tile 128x128");
  const int m = static_cast<int>(parse_int("--tile M", s.substr(0, x), 1, kMaxTile));
  const int n = static_cast<int>(parse_int("--tile N", s.substr(x + 1), 1, kMaxTile));
  return {m, n};
}

std::vector<int> parse_sweep(const std::string& s) {
  const auto parts = split(s, ':');
  if (parts.size() != 3)
    throw Error(fmt::format("--sweep-d expects LO:HI:STEP, got '{}'", s),
                "e.g. --sweep-d 32:256:32");
  const int lo = static_cast<int>(parse_int("--sweep-d LO", parts[0], 1, kMaxD));
  const int hi = static_cast<int>(parse_int("--sweep-d HI", parts[1], 1, kMaxD));
  const int step = static_cast<int>(parse_int("--sweep-d STEP", parts[2], 1, kMaxD));
  if (lo > hi)
    throw Error(fmt::format("--sweep-d is empty: LO = {} is above HI = {}", lo, hi),
                fmt::format("did you mean {}:{}:{}?", hi, lo, step));
  std::vector<int> out;
  for (int d = lo; d <= hi; d += step) out.push_back(d);
  return out;
}

double parse_emu_fraction(const std::string& s) {
  const double f = parse_double("--emu-fraction", s);
  if (f < 0 || f > 1)
    throw Error(fmt::format("--emu-fraction = {} is outside [0, 1]", s),
                "e.g. --emu-fraction 0.1875");
  return f;
}

namespace {

ScheduleResult parse_schedule(const std::string& s, int row_width) {
  const EmulationSchedule v = parse_emulation_schedule("--schedule", s);
  return compute_schedule(v.freq, v.res, v.start_frg, row_width,
                          fmt::format("custom {},{},{}", v.freq, v.res, v.start_frg));
}

}  // namespace

RooflineOptions parse_roofline_options(const RooflineCliOptions& c) {
  RooflineOptions o;
  // Validate every option before any work.
  std::vector<int> ds;
  if (!c.d.empty())
    for (auto v : parse_int_list("--d", c.d, 1, kMaxD)) ds.push_back(static_cast<int>(v));
  if (!c.sweep_d.empty())
    for (int v : parse_sweep(c.sweep_d)) ds.push_back(v);
  if (ds.empty()) ds = {128};
  std::sort(ds.begin(), ds.end());
  ds.erase(std::unique(ds.begin(), ds.end()), ds.end());
  o.ds = ds;
  const std::string dt = parse_choice("--dtype", c.dtype, {"bf16", "fp8", "fp6", "fp4", "all"});
  o.dtypes = dt == "bf16"  ? std::vector<OperandType>{OperandType::bf16}
             : dt == "fp8" ? std::vector<OperandType>{OperandType::fp8}
             : dt == "fp6" ? std::vector<OperandType>{OperandType::fp6}
             : dt == "fp4" ? std::vector<OperandType>{OperandType::fp4}
                           : std::vector<OperandType>{OperandType::bf16, OperandType::fp8,
                                                      OperandType::fp6, OperandType::fp4};
  const std::string dir = parse_choice("--direction", c.direction, {"fwd", "bwd", "all"});
  o.directions = dir == "fwd"   ? std::vector<Direction>{Direction::fwd}
                 : dir == "bwd" ? std::vector<Direction>{Direction::bwd}
                                : std::vector<Direction>{Direction::fwd, Direction::bwd};
  std::tie(o.tile_m, o.tile_n) = parse_tile(c.tile);
  if (!c.emu_fraction.empty()) o.emu_fraction = parse_emu_fraction(c.emu_fraction);
  o.degrees.clear();
  for (auto v : parse_int_list("--degree", c.degree, 0, 5))
    o.degrees.push_back(static_cast<int>(v));
  if (c.schedule_given) {
    if (c.schedule.empty())
      o.schedule_table = true;
    else
      o.schedule = parse_schedule(c.schedule, o.tile_n);
    if (o.schedule_table && o.tile_n % 32 != 0)
      throw Error(
          fmt::format("--schedule needs a row width (tile N) that is a multiple of 32, got {}",
                      o.tile_n),
          "e.g. --tile 128x128");
  }
  if (!c.measured.empty()) o.measured_path = c.measured;
  o.archs = parse_archs(c.arch, c.arch_files);
  if (o.measured_path) {  // validate before the analysis, including the arch it names
    const MeasuredFile m = load_measured(*o.measured_path);
    bool found = false;
    for (const auto& a : o.archs) found = found || a.name == m.arch;
    const auto known = known_arch_names();
    if (!found && std::find(known.begin(), known.end(), m.arch) == known.end()) {
      std::string hint =
          "known: " + fmt::format("{}", fmt::join(known, ", ")) + ", or pass it with --arch-file";
      if (auto near = did_you_mean(m.arch, known))
        hint = fmt::format("did you mean '{}'? ", *near) + hint;
      throw Error(fmt::format("measured file '{}': arch '{}' is not a known architecture",
                              *o.measured_path, m.arch),
                  hint);
    }
  }
  o.params = {{"arch", c.arch},
              {"arch_file", c.arch_files},
              {"d", ds},
              {"dtype", dt},
              {"tile", fmt::format("{}x{}", o.tile_m, o.tile_n)},
              {"direction", dir},
              {"emu_fraction", o.emu_fraction ? json(*o.emu_fraction) : json(nullptr)},
              {"degree", o.degrees},
              {"schedule",
               c.schedule_given ? json(c.schedule.empty() ? "table" : c.schedule) : json(nullptr)},
              {"measured", c.measured.empty() ? json(nullptr) : json(c.measured)}};
  return o;
}

}  // namespace fa4sim
