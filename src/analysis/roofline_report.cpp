// roofline_report.cpp: `fa4sim roofline`'s report: the tables of a RooflineResult
// (roofline.cpp computes it) and the 25-60 % investigation's table.
#include "fa4sim/analysis/roofline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fa4sim/util/paths.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/json_input.h"
#include "fa4sim/core/exp2_schedule.h"

namespace fa4sim {

namespace {

std::string fmt_num(double x) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) return fmt::format("{:.0f}", x);
  return fmt::format("{:.4g}", x);
}
std::string fmt_ratio(double x) { return fmt::format("{:.3f}", x); }
std::string fmt_signed_pct(double x) { return fmt::format("{:+.1f} %", 100.0 * x); }

json arch_json(const ArchSpec& a) {
  return {{"name", a.name},     {"full_name", a.full_name},     {"sm_arch", a.sm_arch},
          {"origin", a.origin}, {"assumptions", a.assumptions}, {"fields", a.fields}};
}

// "38-41 48-51" for {38, 39, 40, 41, 48, 49, 50, 51}; "none" when empty.
std::string column_ranges(const std::vector<int>& cols) {
  std::string s;
  for (size_t i = 0; i < cols.size();) {
    size_t j = i;
    while (j + 1 < cols.size() && cols[j + 1] == cols[j] + 1) ++j;
    s += (s.empty() ? "" : " ") +
         (i == j ? std::to_string(cols[i]) : fmt::format("{}-{}", cols[i], cols[j]));
    i = j + 1;
  }
  return s.empty() ? "none" : s;
}

// ---- roofline_report, table by table

void render_tiles(const RooflineOptions& o, const RooflineResult& res, Report& r) {
  Table tiles{"Tile costs (cycles per SM per tile; Note [Counting convention] in roofline.h)",
              {"arch", "dir", "dtype", "cta", "d", "tile", "MMA", "exp", "smem", "exp/MMA",
               "smem/MMA", "bottleneck", "f to tie", "softmax@tie/MMA"},
              {},
              {}};
  if (o.emu_fraction) {
    tiles.columns.push_back(fmt::format("exp@f={:g}", *o.emu_fraction));
    tiles.columns.push_back(fmt::format("softmax@f={:g}", *o.emu_fraction));
  }
  json rows = json::array();
  for (const auto& t : res.tiles) {
    const TileCost& c = t.cost;
    const double elems = static_cast<double>(c.tile_m) * c.tile_n;
    const PipePoint& at_tie = t.softmax_at_tie;
    const double sm_tie = elems / at_tie.exps_per_clk_sm;
    json row = {{"arch", c.arch},
                {"d", c.d},
                {"direction", to_string(c.direction)},
                {"dtype", to_string(c.dtype)},
                {"cta_group", c.cta_group},
                {"tile_m", c.tile_m},
                {"tile_n", c.tile_n},
                {"cycles_mma", c.cycles_mma},
                {"cycles_exp", c.cycles_exp},
                {"cycles_smem", c.cycles_smem},
                {"exp_over_mma", c.exp_over_mma},
                {"smem_over_mma", c.smem_over_mma},
                {"bottleneck", c.bottleneck},
                {"emu_fraction_to_tie", c.emu_fraction_to_tie},
                {"cycles_softmax_at_tie", sm_tie},
                {"softmax_over_mma_at_tie", sm_tie / c.cycles_mma},
                {"softmax_bound_at_tie", at_tie.bound}};
    std::vector<std::string> cells = {
        c.arch,
        to_string(c.direction),
        to_string(c.dtype),
        std::to_string(c.cta_group),
        std::to_string(c.d),
        fmt::format("{}x{}", c.tile_m, c.tile_n),
        fmt_num(c.cycles_mma),
        fmt_num(c.cycles_exp),
        fmt_num(c.cycles_smem),
        fmt_ratio(c.exp_over_mma),
        fmt_ratio(c.smem_over_mma),
        c.bottleneck,
        fmt_percent(100.0 * c.emu_fraction_to_tie, 2, " %"),
        fmt::format("{} ({})", fmt_ratio(sm_tie / c.cycles_mma), at_tie.bound)};
    if (o.emu_fraction) {
      const double exp_cycles = elems / t.exp_at_f->exps_per_clk_sm;
      const double softmax_cycles = elems / t.softmax_at_f->exps_per_clk_sm;
      row["emu_fraction"] = *o.emu_fraction;
      row["cycles_exp_at_f"] = exp_cycles;
      row["cycles_softmax_at_f"] = softmax_cycles;
      cells.push_back(fmt_num(exp_cycles));
      cells.push_back(fmt_num(softmax_cycles));
    }
    rows.push_back(row);
    tiles.rows.push_back(cells);
  }
  if (!res.skipped.empty())
    tiles.notes.push_back(
        fmt::format("skipped (no such path: fp8 needs fp8 MMA, the backward is 16-bit only): {}",
                    fmt::join(res.skipped, ", ")));
  tiles.notes.push_back(fmt::format(
      "f to tie = fraction of exps that must leave the MUFU so that exp = MMA; softmax@tie/MMA = the "
      "whole softmax at that f under the pipe model (degree {}, with scale FMA, row sum, row max, "
      "cvt), and its binding pipe",
      res.degree));
  for (const auto& a : o.archs)
    if (!a.assumptions.empty())
      tiles.notes.push_back(fmt::format("{}: assumptions (not sourced exactly): {}", a.name,
                                        fmt::join(a.assumptions, ", ")));
  r.results["rows"] = rows;
  r.tables.push_back(tiles);
}

void render_pipe_counts(const RooflineResult& res, Report& r) {
  Table t{
      "Exp pipe model: instructions per element (data/exp_pipe_model.json)",
      {"path", "degree", "FMA-pipe lane ops", "ALU ops", "MUFU ops", "issue (scalar)",
       "issue (f32x2)"},
      {},
      {"issue = warp instructions per element-lane; f32x2 packs two elements per FMA-pipe instruction "
       "(Blackwell); lane ops are the same either way",
       "softmax_other (per element, every path): scale-subtract FMA, row-sum add, row max, 1/2 cvt"}};
  json counts = json::array();
  for (const auto& row : res.pipe_counts) {
    const PipeCounts &s = row.scalar, &p = row.packed;
    const int deg = row.degree;
    t.rows.push_back({row.path, deg < 0 ? "-" : std::to_string(deg), fmt_num(s.fma), fmt_num(s.alu),
                      fmt_num(s.mufu), fmt_num(s.issue), fmt_num(p.issue)});
    counts.push_back({{"path", row.path},
                      {"degree", deg < 0 ? json(nullptr) : json(deg)},
                      {"fma_lane_ops", s.fma},
                      {"alu_ops", s.alu},
                      {"mufu_ops", s.mufu},
                      {"issue_scalar", s.issue},
                      {"issue_f32x2", p.issue}});
  }
  const PipeModelSpec& pm = res.pipe_model;
  for (const auto* ops : {&pm.hardware_exp2, &pm.emulated_exp2, &pm.softmax_other})
    for (const auto& op : *ops)
      if (op.assumption) t.notes.push_back(fmt::format("assumption: {} ({})", op.op, op.source));
  r.results["pipe_counts"] = counts;
  r.tables.push_back(t);
}

void render_pipe_model(const RooflineOptions& o, const RooflineResult& res, Report& r) {
  json curve = json::array();
  for (const auto& c : res.curve)
    curve.push_back({{"arch", c.arch},
                     {"degree", c.degree},
                     {"f", c.exp_only.f},
                     {"exps_per_clk_sm", c.exp_only.exps_per_clk_sm},
                     {"bound", c.exp_only.bound},
                     {"softmax_elems_per_clk_sm", c.softmax.exps_per_clk_sm},
                     {"softmax_bound", c.softmax.bound}});
  r.results["pipe_model"] = curve;

  for (int ws = 0; ws < 2; ++ws) {
    Table t{
        fmt::format("Predicted {} per clock per SM vs emulated fraction f (degree {})",
                    ws == 1 ? "softmax elements (exp + other softmax work)" : "exps (exp2 only)",
                    res.degree),
        {"f"},
        {},
        {}};
    for (const auto& a : o.archs) t.columns.push_back(a.name);
    for (int i = 0; i <= 8; ++i) {
      std::vector<std::string> cells = {fmt::format("{:.3f}", i / 8.0)};
      for (const auto& ap : res.arch_pipe) {
        const PipePoint& p = ap.eighths[ws][i];
        cells.push_back(fmt::format("{:.2f} {}", p.exps_per_clk_sm, p.bound));
      }
      t.rows.push_back(cells);
    }
    std::vector<std::string> best_cells = {"best"};
    for (const auto& ap : res.arch_pipe)
      best_cells.push_back(
          fmt::format("{:.2f} @ f={:.3f}", ap.best[ws].exps_per_clk_sm, ap.best[ws].f));
    t.rows.push_back(best_cells);
    t.notes.push_back("each cell: predicted rate and the binding pipe(s); the full curve (step " +
                      fmt::format("{:g}", o.f_step) +
                      ", every degree asked) is results.pipe_model in --json");
    r.tables.push_back(t);
  }

  json best = json::array();
  for (const auto& b : res.best)
    best.push_back({{"arch", b.arch},
                    {"degree", b.degree},
                    {"mode", b.with_softmax ? "softmax" : "exp_only"},
                    {"f_best", b.best.f},
                    {"per_clk_sm_best", b.best.exps_per_clk_sm},
                    {"bound", b.best.bound},
                    {"per_clk_sm_mufu_only", b.mufu_only.exps_per_clk_sm},
                    {"gain", b.best.exps_per_clk_sm / b.mufu_only.exps_per_clk_sm}});
  r.results["pipe_best"] = best;
}

void render_schedule(const RooflineOptions& o, const RooflineResult& res, Report& r) {
  json sched = json::array();
  Table t{"Exp2 emulation schedule (apply_exp2_convert; include/fa4sim/core/exp2_schedule.h)",
          {"key", "freq", "res", "start_frg", "row", "emulated", "fraction", "emulated columns",
           "seed"},
          {},
          {}};
  for (const auto& row : res.schedule) {
    const ScheduleResult& s = row.schedule;
    sched.push_back(json{{"key", s.key},
                         {"freq", s.freq},
                         {"res", s.res},
                         {"start_frg", s.start_frg},
                         {"row_width", s.row_width},
                         {"emulated", s.emulated},
                         {"emulated_count", s.emulated.size()},
                         {"fraction", s.fraction}});
    std::string seed;
    if (row.seed_fraction) {
      seed = fmt::format("{}: {} ({})", row.seed_matches ? "match" : "DIFFERS",
                         fmt_percent(100.0 * *row.seed_fraction, 2, " %"), row.seed_case);
      sched.back()["seed_fraction"] = *row.seed_fraction;
      sched.back()["seed_case"] = row.seed_case;
    }
    t.rows.push_back({s.key, std::to_string(s.freq), std::to_string(s.res),
                      std::to_string(s.start_frg), std::to_string(s.row_width),
                      std::to_string(s.emulated.size()), fmt_percent(100.0 * s.fraction, 2, " %"),
                      column_ranges(s.emulated), seed});
  }
  if (o.schedule_table) {
    t.notes.push_back("tuning table: " + res.tuning_source);
    t.notes.push_back(
        "key = use_2cta, causal, head_dim_padded, sm100/sm103, input dtype; seed = the seed article's fraction of a 128-wide row");
  }
  if (o.schedule_table || o.schedule) r.tables.push_back(t);
  r.results["schedule"] = sched;
}

void render_measured(const RooflineOptions& o, const RooflineResult& res, Report& r) {
  if (!res.measured) return;
  const RooflineMeasured& m = *res.measured;
  Table t{fmt::format("Measured vs predicted exps/clk/SM (exp only): {} ({}), predicted with {}",
                      m.file.device, *o.measured_path, m.arch),
          {"degree", "f", "measured", "predicted", "measured/predicted", "predicted bound"},
          {},
          {}};
  json meas = json::array();
  for (size_t i = 0; i < m.file.points.size(); ++i) {
    const MeasuredPoint& p = m.file.points[i];
    const PipePoint& pp = m.predicted[i];
    const double ratio = p.exps_per_clk_sm / pp.exps_per_clk_sm;
    meas.push_back({{"arch", m.arch},
                    {"degree", p.degree},
                    {"f", p.f},
                    {"measured_exps_per_clk_sm", p.exps_per_clk_sm},
                    {"predicted_exps_per_clk_sm", pp.exps_per_clk_sm},
                    {"ratio", ratio},
                    {"bound", pp.bound}});
    t.rows.push_back({std::to_string(p.degree), fmt::format("{:.4f}", p.f),
                      fmt::format("{:.2f}", p.exps_per_clk_sm),
                      fmt::format("{:.2f}", pp.exps_per_clk_sm), fmt::format("{:.3f}", ratio),
                      pp.bound});
  }
  if (!m.file.provenance.empty())
    t.notes.push_back("measured provenance: " + m.file.provenance.dump());
  r.results["measured"] = {{"file", *o.measured_path},
                           {"device", m.file.device},
                           {"arch", m.file.arch},
                           {"points", meas}};
  r.tables.push_back(t);
}

}  // namespace

Report roofline_report(const RooflineOptions& o, const RooflineResult& res) {
  Report r;
  r.command = "roofline";
  r.params = o.params;
  r.results["convention"] = "include/fa4sim/analysis/roofline.h, Note [Counting convention]";
  json archs = json::array();
  for (const auto& a : o.archs) archs.push_back(arch_json(a));
  r.results["archs"] = archs;
  render_tiles(o, res, r);
  render_pipe_counts(res, r);
  render_pipe_model(o, res, r);
  render_schedule(o, res, r);
  render_measured(o, res, r);
  return r;
}

Report run_roofline(const RooflineOptions& o) { return roofline_report(o, compute_roofline(o)); }

void append_excess_investigation(Report& r, const ExcessInvestigation& x) {
  Table t{
      "Investigation: \"shared memory and exp exceed MMA compute by 25-60 %\" (FA4 introduction)",
      {"reading", "arch", "exp vs MMA", "smem vs MMA", "exp+smem serial vs MMA", "largest excess",
       "in 25..60 %"},
      {},
      {}};
  json out = json::array();
  for (const auto& rd : x.readings) {
    t.rows.push_back({rd.reading, rd.arch, fmt_signed_pct(rd.exp_excess),
                      fmt_signed_pct(rd.smem_excess), fmt_signed_pct(rd.serial_excess),
                      fmt_signed_pct(rd.largest_excess), rd.in_range ? "yes" : "no"});
    out.push_back({{"reading", rd.reading},
                   {"arch", rd.arch},
                   {"direction", to_string(rd.direction)},
                   {"dtype", to_string(rd.dtype)},
                   {"cta_group", rd.cta_group},
                   {"d", rd.d},
                   {"exp_excess", rd.exp_excess},
                   {"smem_excess", rd.smem_excess},
                   {"exp_plus_smem_excess", rd.serial_excess},
                   {"largest_excess", rd.largest_excess},
                   {"in_25_60", rd.in_range}});
  }
  t.notes.push_back(
      "causal masking: per tile, MMA, exp and smem all scale with the computed tiles, so every ratio "
      "is the causal one too (no reading of its own)");
  t.notes.push_back(
      "exp+smem serial = the two non-MMA resources added as if they could not overlap (an upper reading)");
  t.notes.push_back("finding: " + x.finding);
  Table solve{"Head dim d at which a resource exceeds MMA by exactly +25 % / +60 % (128x128 tile)",
              {"family", "arch", "resource", "ratio(d)", "d for +25 %", "d for +60 %"},
              {},
              {}};
  json solved = json::array();
  auto show = [](const std::optional<double>& d) {
    return d ? fmt::format("{:.1f}", *d) : std::string("never");
  };
  for (const auto& s : x.solved) {
    solve.rows.push_back({s.family, s.arch, s.smem ? "smem" : "exp",
                          fmt::format("{:.4g} + {:.4g} / d", s.a, s.b), show(s.d_for_25),
                          show(s.d_for_60)});
    solved.push_back({{"family", s.family},
                      {"arch", s.arch},
                      {"resource", s.smem ? "smem" : "exp"},
                      {"a", s.a},
                      {"b", s.b},
                      {"d_for_25", s.d_for_25 ? json(*s.d_for_25) : json(nullptr)},
                      {"d_for_60", s.d_for_60 ? json(*s.d_for_60) : json(nullptr)}});
  }
  solve.notes.push_back(
      "the backward's d-dependence rests on our reconstruction of the per-item smem traffic "
      "(Note [Counting convention]); only its totals at d = 128 are published");
  r.tables.push_back(t);
  r.tables.push_back(solve);
  r.results["excess_solve_d"] = solved;
  r.results["excess_investigation"] = {{"readings", out}, {"finding", x.finding}};
}

void add_excess_investigation(Report& r, const std::vector<ArchSpec>& archs) {
  append_excess_investigation(r, compute_excess_investigation(archs));
}

}  // namespace fa4sim
