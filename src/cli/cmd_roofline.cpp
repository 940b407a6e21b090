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
#include "roofline_options.h"

namespace fa4sim::cli {

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
  ints_in(sub->add_option("--d", c.d, "Head dimension(s), comma-separated (default 128)"), 1, kRooflineMaxD)
      ->type_name("D[,D...]");
  checked(sub->add_option("--sweep-d", c.sweep_d, "Head dimensions LO:HI:STEP, each 1..1024, e.g. 32:256:32"), "",
          [](const std::string&, const std::string& v) { parse_sweep(v); })
      ->type_name("LO:HI:STEP");
  sub->add_option("--dtype", c.dtype, "MMA operand type: bf16 (stands for fp16 too: same bytes, same rate), fp8, or all")
      ->type_name("bf16|fp8|all")
      ->capture_default_str();
  checked(sub->add_option("--tile", c.tile,
                          "Tile: M queries x N keys, each 1..4096 (N is also the schedule's row width)"),
          "", [](const std::string&, const std::string& v) { parse_tile(v); })
      ->type_name("MxN")
      ->capture_default_str();
  sub->add_option("--direction", c.direction, "fwd, bwd (1-CTA and 2-CTA rows) or all")
      ->type_name("fwd|bwd|all")
      ->capture_default_str();
  checked(sub->add_option("--emu-fraction", c.emu_fraction,
                          "Also give each tile's exp and softmax cycles with this fraction of exps emulated "
                          "(pipe model)"),
          "0..1", [](const std::string&, const std::string& v) { parse_emu_fraction(v); })
      ->type_name("F");
  ints_in(sub->add_option("--degree", c.degree, "Polynomial degree(s) of the emulated exp2 for the pipe model"), 0, 5)
      ->type_name("N[,N...]")
      ->capture_default_str();
  sub->add_option("--schedule", c.schedule,
                  "Emulation schedule: with freq[,res[,start_frg]] (in columns, each 0..2^20, res < freq; "
                  "defaults res 4, start_frg 0) compute that one; alone, list every entry of "
                  "data/fa4_tuning.json")
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
  o.directions = {Direction::fwd, Direction::bwd};
  o.dtypes = {OperandType::bf16, OperandType::fp8};
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
