// `fa4sim roofline`: per-architecture tile costs, the exp pipe model and the emulation schedule.
// Parses and validates the options, then calls run_roofline() (src/analysis/roofline.cpp). Also the
// `fa4sim report` section `roofline`, which adds the published-figures check, the 25-60 %
// investigation and the figures drawn by scripts/plot.py.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/paths.h"
#include "fa4sim/util/error.h"
#include "fa4sim/analysis/roofline.h"

namespace fa4sim::cli {

namespace {

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

constexpr int kMaxD = 1024;     // FA4 supports d <= 256; the model is kept sane up to 1024
constexpr int kMaxTile = 4096;

std::vector<ArchSpec> parse_archs(const std::string& spec, const std::vector<std::string>& files) {
  std::vector<ArchSpec> out;
  const auto known = known_arch_names();
  if (!spec.empty()) {
    for (const auto& item : split(spec, ',')) {
      if (item == "all") {
        for (const auto& n : known) out.push_back(load_known_arch(n));
      } else if (item.find('/') != std::string::npos || item.ends_with(".json")) {
        out.push_back(load_arch_file(item));
      } else {
        if (item == "h100") {  // the common name of the one H100 we model
          out.push_back(load_known_arch("h100_sxm"));
          continue;
        }
        std::vector<std::string> choices = known;
        choices.push_back("all");
        out.push_back(load_known_arch(parse_choice("--arch", item, choices)));
      }
    }
  }
  for (const auto& f : files) out.push_back(load_arch_file(f));
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (out[i].name == out[j].name)
        throw Error(fmt::format("architecture '{}' is given twice ({} and {})", out[i].name, out[j].origin,
                                out[i].origin),
                    "give each once; a custom file needs its own \"name\"");
  return out;
}

std::pair<int, int> parse_tile(const std::string& s) {
  const auto x = s.find('x');
  if (x == std::string::npos || s.find('x', x + 1) != std::string::npos)
    throw Error(fmt::format("--tile expects MxN (two whole numbers), got '{}'", s), "e.g. --tile 128x128");
  const int m = static_cast<int>(parse_int("--tile M", s.substr(0, x), 1, kMaxTile));
  const int n = static_cast<int>(parse_int("--tile N", s.substr(x + 1), 1, kMaxTile));
  return {m, n};
}

std::vector<int> parse_sweep(const std::string& s) {
  const auto parts = split(s, ':');
  if (parts.size() != 3)
    throw Error(fmt::format("--sweep-d expects LO:HI:STEP, got '{}'", s), "e.g. --sweep-d 32:256:32");
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

ScheduleResult parse_schedule(const std::string& s, int row_width) {
  const auto parts = split(s, ',');
  if (parts.empty() || parts.size() > 3)
    throw Error(fmt::format("--schedule expects freq[,res[,start_frg]], got '{}'", s), "e.g. --schedule 10,4,1");
  const int freq = static_cast<int>(parse_int("--schedule freq", parts[0], 0, 1 << 20));
  const int res = parts.size() > 1 ? static_cast<int>(parse_int("--schedule res", parts[1], 0, 1 << 20)) : 4;
  const int start = parts.size() > 2 ? static_cast<int>(parse_int("--schedule start_frg", parts[2], 0, 1 << 20)) : 0;
  if (freq > 0 && res >= freq)
    throw Error(fmt::format("--schedule {}: res = {} must be below freq = {}", s, res, freq),
                "res of every freq columns are emulated: e.g. --schedule 10,4,1");
  return compute_schedule(freq, res, start, row_width, fmt::format("custom {},{},{}", freq, res, start));
}

RooflineOptions build_options(const RooflineCliOptions& c) {
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
  const std::string dt = parse_choice("--dtype", c.dtype, {"bf16", "fp8", "all"});
  o.dtypes = dt == "bf16" ? std::vector<OperandType>{OperandType::kBf16}
             : dt == "fp8" ? std::vector<OperandType>{OperandType::kFp8}
                           : std::vector<OperandType>{OperandType::kBf16, OperandType::kFp8};
  const std::string dir = parse_choice("--direction", c.direction, {"fwd", "bwd", "all"});
  o.directions = dir == "fwd" ? std::vector<Direction>{Direction::kFwd}
                 : dir == "bwd" ? std::vector<Direction>{Direction::kBwd}
                                : std::vector<Direction>{Direction::kFwd, Direction::kBwd};
  std::tie(o.tile_m, o.tile_n) = parse_tile(c.tile);
  if (!c.emu_fraction.empty()) {
    const double f = parse_double("--emu-fraction", c.emu_fraction);
    if (f < 0 || f > 1)
      throw Error(fmt::format("--emu-fraction = {} is outside [0, 1]", c.emu_fraction), "e.g. --emu-fraction 0.1875");
    o.emu_fraction = f;
  }
  o.degrees.clear();
  for (auto v : parse_int_list("--degree", c.degree, 0, 5)) o.degrees.push_back(static_cast<int>(v));
  if (c.schedule_given) {
    if (c.schedule.empty())
      o.schedule_table = true;
    else
      o.schedule = parse_schedule(c.schedule, o.tile_n);
    if (o.schedule_table && o.tile_n % 32 != 0)
      throw Error(fmt::format("--schedule needs a row width (tile N) that is a multiple of 32, got {}", o.tile_n),
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
      std::string hint = "known: " + fmt::format("{}", fmt::join(known, ", ")) + ", or pass it with --arch-file";
      if (auto near = did_you_mean(m.arch, known)) hint = fmt::format("did you mean '{}'? ", *near) + hint;
      throw Error(fmt::format("measured file '{}': arch '{}' is not a known architecture", *o.measured_path, m.arch),
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
              {"schedule", c.schedule_given ? json(c.schedule.empty() ? "table" : c.schedule) : json(nullptr)},
              {"measured", c.measured.empty() ? json(nullptr) : json(c.measured)}};
  return o;
}

}  // namespace

void add_roofline(CLI::App& root) {
  static RooflineCliOptions c;
  auto* sub = root.add_subcommand(
      "roofline",
      "Per-architecture FA4 tile costs (MMA, exp, smem), a pipe model of the emulated exp2, and the "
      "emulation-schedule calculator");
  sub->add_option("--arch", c.arch,
                  "Architectures: comma-separated names from data/archs (a100, h100_sxm, h200, b200, b300), "
                  "'all', or a path to an arch JSON file")
      ->type_name("NAME|all|FILE")
      ->capture_default_str();
  sub->add_option("--arch-file", c.arch_files,
                  "Add a custom architecture JSON (schema fa4sim/arch-v1, format of data/archs/b200.json); "
                  "may be repeated")
      ->type_name("FILE");
  sub->add_option("--d", c.d, "Head dimension(s), comma-separated, 1..1024 (default 128)")->type_name("D[,D...]");
  sub->add_option("--sweep-d", c.sweep_d, "Head dimensions LO:HI:STEP, e.g. 32:256:32")->type_name("LO:HI:STEP");
  sub->add_option("--dtype", c.dtype, "MMA operand type: bf16 (stands for fp16 too: same bytes, same rate), fp8, or all")
      ->type_name("bf16|fp8|all")
      ->capture_default_str();
  sub->add_option("--tile", c.tile, "Tile: M queries x N keys (N is also the schedule's row width)")
      ->type_name("MxN")
      ->capture_default_str();
  sub->add_option("--direction", c.direction, "fwd, bwd (1-CTA and 2-CTA rows) or all")
      ->type_name("fwd|bwd|all")
      ->capture_default_str();
  sub->add_option("--emu-fraction", c.emu_fraction,
                  "Also give each tile's exp and softmax cycles with this fraction of exps emulated (pipe model)")
      ->type_name("F");
  sub->add_option("--degree", c.degree, "Polynomial degree(s) of the emulated exp2 for the pipe model, 0..5")
      ->type_name("N[,N...]")
      ->capture_default_str();
  sub->add_option("--schedule", c.schedule,
                  "Emulation schedule: with freq[,res[,start_frg]] (defaults res 4, start_frg 0) compute that "
                  "one; alone, list every entry of data/fa4_tuning.json")
      ->type_name("[FREQ,RES,START]")
      ->expected(0, 1);
  sub->add_option("--measured", c.measured,
                  "Compare the pipe model with measured exps/clk/SM (schema fa4sim/bench-exp-v1, e.g. "
                  "data/gpu/<device>-bench-exp.json; see README)")
      ->type_name("FILE");
  add_common_options(sub, c.common);
  sub->callback([sub] {
    c.schedule_given = sub->count("--schedule") > 0;
    Stopwatch sw;
    const RooflineOptions o = build_options(c);
    check_report_path(c.common.json_path);
    Report r = run_roofline(o);
    r.threads = resolved_threads(c.common);
    emit(r, c.common.json_path, sw.seconds());
  });
}

// ---- `fa4sim report` section

namespace {

// A python3 that can import matplotlib: the one on PATH, else Debian's. Empty when none.
std::string python_with_matplotlib() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    const std::string cmd = fmt::format("{} -c 'import matplotlib' >/dev/null 2>&1", py);
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return {};
}

}  // namespace

void report_roofline(ReportContext& ctx) {
  Stopwatch sw;
  RooflineOptions o;
  for (const auto& n : known_arch_names()) o.archs.push_back(load_known_arch(n));
  o.ds = {32, 64, 96, 128, 160, 192, 224, 256};
  o.directions = {Direction::kFwd, Direction::kBwd};
  o.dtypes = {OperandType::kBf16, OperandType::kFp8};
  o.degrees = {3, 2, 4, 5};
  o.schedule_table = true;
  // The GPU backend's measured exp throughput, when one is in data/gpu (first by name).
  std::vector<std::string> measured;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(roofline_data_dir() + "/gpu", ec))
    if (e.path().filename().string().ends_with("-bench-exp.json")) measured.push_back(e.path().string());
  std::sort(measured.begin(), measured.end());
  if (!measured.empty()) o.measured_path = measured.front();
  o.params = {{"arch", "all"}, {"d", o.ds}, {"direction", "all"}, {"dtype", "all"}, {"tile", "128x128"},
              {"degree", o.degrees}, {"schedule", "table"},
              {"measured", o.measured_path ? json(*o.measured_path) : json(nullptr)}};
  Report r = run_roofline(o);
  add_published_comparison(r, o.archs);
  add_excess_investigation(r, o.archs);
  r.threads = 1;
  ctx.write(r, "roofline.json", sw.seconds());

  std::string md = "## Roofline (`fa4sim roofline`)\n\n";
  md += "Command: `fa4sim roofline --arch all --sweep-d 32:256:32 --direction all --dtype all --degree 3,2,4,5 "
        "--schedule [--measured data/gpu/<device>-bench-exp.json]` plus the published-figures check and the \"25-60 %\" investigation; full results in "
        "`roofline.json`. Counting convention: `include/fa4sim/analysis/roofline.h`, Note [Counting convention]. "
        "Inputs: `data/archs/*.json` (each number with its source; fields marked `assumption` are listed under "
        "the tile table), `data/exp_pipe_model.json`, `data/fa4_tuning.json`.\n\n";
  // Published-vs-model first, then the investigation, the pipe model, the schedule.
  auto find_table = [&](const std::string& prefix) -> const Table* {
    for (const auto& t : r.tables)
      if (t.title.rfind(prefix, 0) == 0) return &t;
    return nullptr;
  };
  for (const char* prefix : {"Published figures", "Investigation", "Head dim d at which", "Exp pipe model", "Predicted exps",
                             "Predicted softmax", "Exp2 emulation schedule"})
    if (const Table* t = find_table(prefix)) md += render_markdown(*t) + "\n";
  // Measured vs predicted: degree 3 here (every degree in roofline.json).
  if (const Table* t = find_table("Measured vs predicted")) {
    Table small = *t;
    small.title += ", degree 3 (every degree in roofline.json)";
    small.rows.clear();
    for (const auto& row : t->rows)
      if (!row.empty() && row[0] == "3") small.rows.push_back(row);
    double lo = 1e300, hi = 0;
    for (const auto& p : r.results["measured"]["points"]) {
      lo = std::min(lo, p["ratio"].get<double>());
      hi = std::max(hi, p["ratio"].get<double>());
    }
    small.notes = {fmt::format("all {} points, every degree: measured/predicted from {:.3f} to {:.3f}. The pipe "
                               "model is a throughput bound (no latency, perfect overlap): a ratio above 1 would "
                               "mean a wrong rate or instruction count",
                               r.results["measured"]["points"].size(), lo, hi)};
    md += render_markdown(small) + "\n";
  } else {
    md += "No measured exp throughput in data/gpu/ (written by `fa4sim gpu bench-exp`): the pipe model is "
          "unchecked here.\n\n";
  }
  // The tile table is long (5 archs x 8 d x 3 directions x 2 dtypes): show d = 64 and 128 here.
  if (const Table* t = find_table("Tile costs")) {
    Table small = *t;
    small.title += ", d = 64 and 128 (every d in roofline.json)";
    small.rows.clear();
    for (const auto& row : t->rows)
      if (row.size() > 4 && (row[4] == "64" || row[4] == "128")) small.rows.push_back(row);
    md += render_markdown(small) + "\n";
  }

  const std::string py = python_with_matplotlib();
  const std::string script = scripts_dir() + "/plot.py";
  if (py.empty()) {
    md += "Figures: not drawn, because no python3 with matplotlib was found (install Debian's "
          "python3-matplotlib or `pip install matplotlib`, then run `python3 scripts/plot.py " +
          ctx.out_dir + "/roofline.json --out " + ctx.out_dir + "`).\n\n";
  } else {
    const std::string json_path = (std::filesystem::path(ctx.out_dir) / "roofline.json").string();
    const std::string cmd = fmt::format("{} '{}' '{}' --out '{}' >/dev/null", py, script, json_path, ctx.out_dir);
    if (std::system(cmd.c_str()) == 0) {
      md += "Figures (drawn by `scripts/plot.py` with matplotlib):\n\n"
            "![T_exp/T_mma vs d](roofline_exp_over_mma.png)\n\n"
            "![Predicted exp throughput vs f](roofline_pipe_model.png)\n\n";
    } else {
      md += fmt::format("Figures: `{}` failed (see its message above); the JSON is complete.\n\n", cmd);
    }
  }
  ctx.markdown += md;
}

}  // namespace fa4sim::cli
