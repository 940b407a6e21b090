// The `roofline` section of `fa4sim report`: `fa4sim roofline` over every architecture and head
// dim, the published figures against the model (data/published/roofline.json; the schedule
// fractions' published values are data/fa4_tuning.json's seed_fraction), the 25-60 %
// investigation and the figures drawn by scripts/drivers/plot.py. The analysis is src/analysis/roofline.cpp.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include <fmt/format.h>

#include "fa4sim/analysis/roofline.h"
#include "fa4sim/report/sections.h"
#include "fa4sim/util/paths.h"
#include "fa4sim/util/subprocess.h"

namespace fa4sim {

void check_roofline_data() {
  for (const auto& n : known_arch_names()) load_known_arch(n);
}

namespace {

// Whether `prog` (a name looked up on PATH, or a path) names an executable file.
bool executable(const std::string& prog) {
  if (prog.find('/') != std::string::npos) return ::access(prog.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  for (size_t b = 0; b <= dirs.size();) {
    size_t e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    const std::string dir = e > b ? dirs.substr(b, e - b) : ".";
    const std::string f = dir + "/" + prog;
    if (::access(f.c_str(), X_OK) == 0 && !std::filesystem::is_directory(f)) return true;
    b = e + 1;
  }
  return false;
}

}  // namespace

PlotRun draw_with_matplotlib(const std::string& json_path, const std::string& out_dir) {
  const std::string script = drivers_dir() + "/plot.py";
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    if (!executable(py)) continue;  // as the shell's "not found": the next one
    const int rc = run_shell(
        shell_command({py, script, json_path, "--out", out_dir, "--if-matplotlib"}, ">/dev/null"));
    if (rc == kPlotNoMatplotlib) continue;
    return {rc == 0 ? PlotRun::drawn : PlotRun::failed,
            shell_command({py, script, json_path, "--out", out_dir}, ">/dev/null")};
  }
  return {PlotRun::no_matplotlib, ""};
}

namespace {

std::string fmt_figure(double x) {  // as the roofline tables print counts and ratios
  if (x == std::floor(x) && std::fabs(x) < 1e15) return fmt::format("{:.0f}", x);
  return fmt::format("{:.4g}", x);
}

// The model's value for one published tile figure: the entry names the arch, direction, operand
// type, cta_group, d and the TileCost field ("cycles_mma", ...). nullopt when the arch is absent.
std::optional<double> model_figure(const PublishedValues& pub, const std::string& key,
                                   const std::vector<ArchSpec>& archs) {
  const json& e = pub.entry(key);
  for (const char* f : {"arch", "direction", "dtype", "quantity"})
    if (!e.contains(f) || !e[f].is_string()) pub.fail(key, fmt::format("needs a string '{}'", f));
  for (const char* f : {"cta_group", "d"})
    if (!e.contains(f) || !e[f].is_number_integer())
      pub.fail(key, fmt::format("needs an integer '{}'", f));
  const auto a = std::find_if(archs.begin(), archs.end(), [&](const ArchSpec& s) {
    return s.name == e["arch"].get<std::string>();
  });
  if (a == archs.end()) return std::nullopt;
  const Direction dir = e["direction"] == "bwd" ? Direction::bwd : Direction::fwd;
  const OperandType t = e["dtype"] == "fp8" ? OperandType::fp8 : OperandType::bf16;
  const TileCost c = tile_cost(*a, dir, t, e["cta_group"].get<int>(), 128, 128, e["d"].get<int>());
  const std::string q = e["quantity"].get<std::string>();
  if (q == "cycles_mma") return c.cycles_mma;
  if (q == "cycles_exp") return c.cycles_exp;
  if (q == "cycles_smem") return c.cycles_smem;
  if (q == "exp_over_mma") return c.exp_over_mma;
  if (q == "smem_over_mma") return c.smem_over_mma;
  if (q == "emu_fraction_to_tie") return c.emu_fraction_to_tie;
  pub.fail(key, fmt::format("names an unknown quantity '{}'", q));
}

}  // namespace

// The paper's and the seed's published figures next to the model's: a figure matches within 1e-9
// relative (the model is exact arithmetic on the published rates). Appended to `r`'s tables and
// results ("published").
void add_published_comparison(Report& r, const std::vector<ArchSpec>& archs,
                              const PublishedValues& pub, ReportContext* ctx) {
  Table t{"Published figures vs fa4sim roofline",
          {"quantity", "published", "fa4sim", "source", "match"},
          {},
          {}};
  json out = json::array();
  size_t matched = 0;
  auto add = [&](const std::string& q, double published, double model, const std::string& src,
                 bool finding) {
    const bool match = std::fabs(model - published) <= 1e-9 * std::max(1.0, std::fabs(published));
    matched += match;
    t.rows.push_back({q, fmt_figure(published), fmt_figure(model), src, match ? "yes" : "NO"});
    out.push_back({{"quantity", q},
                   {"published", published},
                   {"model", model},
                   {"source", src},
                   {"match", match}});
    if (finding && ctx)
      ctx->add_finding(
          {"roofline " + q, fmt_figure(model), fmt_figure(published), match,
           "roofline: pass = the model's figure within 1e-9 relative of the published one"});
  };
  for (auto it = pub.values().begin(); it != pub.values().end(); ++it)
    if (const auto model = model_figure(pub, it.key(), archs))
      add(it.key(), pub.value(it.key()), *model, pub.source(it.key()),
          it.value().value("finding", false));
  const TuningTable tt = load_tuning();
  for (const auto& e : tt.entries)
    if (e.seed_fraction)
      add(fmt::format("schedule {} ({}): emulated fraction", tuning_key(e), e.seed_case),
          *e.seed_fraction,
          compute_schedule(e.freq, e.res, e.start_frg, tt.row_width, tuning_key(e)).fraction,
          "seed article", false);
  if (ctx)
    ctx->add_finding(
        {"roofline: published tile figures and schedule fractions reproduced",
         fmt::format("{} of {} match", matched, out.size()), fmt::format("{} figures", out.size()),
         matched == out.size(),
         "roofline: pass = the model's figure within 1e-9 relative of the published one"});
  r.tables.push_back(t);
  r.results["published"] = out;
}

namespace {

// Measured vs predicted exp throughput: degree 3 here (every degree in roofline.json).
std::string measured_table(ReportContext& ctx, const Report& r, const Table* t) {
  if (!t)
    return "No measured exp throughput in data/gpu/ (written by `fa4sim gpu bench-exp`): the pipe model is "
           "unchecked here.\n\n";
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
  small.notes = {fmt::format(
      "all {} points, every degree: measured/predicted from {:.3f} to {:.3f}. The pipe "
      "model is a throughput bound (no latency, perfect overlap): a ratio above 1 would "
      "mean a wrong rate or instruction count",
      r.results["measured"]["points"].size(), lo, hi)};
  ctx.add_finding(
      {fmt::format("{} exp2 throughput, measured / pipe model (all {} points)",
                   r.results["measured"]["device"].get<std::string>(),
                   r.results["measured"]["points"].size()),
       fmt::format("{:.3f} .. {:.3f}", lo, hi), "-", std::nullopt,
       "roofline: measured / predicted exp throughput has no published counterpart; the pipe model is "
       "an upper bound, so a ratio above 1 would mean a wrong rate or instruction count"});
  return render_markdown(small) + "\n";
}

std::string figures(const ReportContext& ctx) {
  const std::string& out_dir = ctx.out_dir;
  const std::string json_path = (std::filesystem::path(out_dir) / "roofline.json").string();
  for (const char* png : {"roofline_exp_over_mma.png", "roofline_pipe_model.png"})
    (void)ctx.own_path(png);  // plot.py writes these: never through a link out of the folder
  const PlotRun run = draw_with_matplotlib(json_path, out_dir);
  if (run.outcome == PlotRun::no_matplotlib)
    return "Figures: not drawn, because no python3 with matplotlib was found (install Debian's "
           "python3-matplotlib or `pip install matplotlib`, then run `python3 scripts/drivers/plot.py " +
           out_dir + "/roofline.json --out " + out_dir + "`).\n\n";
  if (run.outcome == PlotRun::drawn)
    return "Figures (drawn by `scripts/drivers/plot.py` with matplotlib):\n\n"
           "![T_exp/T_mma vs d](roofline_exp_over_mma.png)\n\n"
           "![Predicted exp throughput vs f](roofline_pipe_model.png)\n\n";
  return fmt::format("Figures: `{}` failed (see its message above); the JSON is complete.\n\n",
                     run.cmd);
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
    if (e.path().filename().string().ends_with("-bench-exp.json"))
      measured.push_back(e.path().string());
  std::sort(measured.begin(), measured.end());
  if (!measured.empty()) o.measured_path = measured.front();
  o.params = {{"arch", "all"},
              {"d", o.ds},
              {"direction", "all"},
              {"dtype", "all"},
              {"tile", "128x128"},
              {"degree", o.degrees},
              {"schedule", "table"},
              {"measured", o.measured_path ? json(*o.measured_path) : json(nullptr)}};
  Report r = run_roofline(o);
  add_published_comparison(r, o.archs, ctx.published("roofline"), &ctx);
  add_excess_investigation(r, o.archs);
  r.threads = 1;
  ctx.write(r, "roofline.json", sw.seconds());

  std::string md = "## Roofline (`fa4sim roofline`)\n\n";
  md +=
      "Command: `fa4sim roofline --arch all --sweep-d 32:256:32 --direction all --dtype all --degree 3,2,4,5 "
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
  for (const char* prefix :
       {"Published figures", "Investigation", "Head dim d at which", "Exp pipe model",
        "Predicted exps", "Predicted softmax", "Exp2 emulation schedule"})
    if (const Table* t = find_table(prefix)) md += render_markdown(*t) + "\n";
  md += measured_table(ctx, r, find_table("Measured vs predicted"));
  // The tile table is long (5 archs x 8 d x 3 directions x 2 dtypes): show d = 64 and 128 here.
  if (const Table* t = find_table("Tile costs")) {
    Table small = *t;
    small.title += ", d = 64 and 128 (every d in roofline.json)";
    small.rows.clear();
    for (const auto& row : t->rows)
      if (row.size() > 4 && (row[4] == "64" || row[4] == "128")) small.rows.push_back(row);
    md += render_markdown(small) + "\n";
  }
  md += figures(ctx);
  ctx.markdown += md;
}

}  // namespace fa4sim
