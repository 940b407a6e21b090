// schedule_report.cpp: `fa4sim schedule` computes (compute_schedule: the prediction per arch,
// stock and with the given tricks, and the best (tau, fraction) of a grid) and renders
// (schedule_report). The model: schedule.cpp.
#include <cmath>

#include <fmt/format.h>

#include "fa4sim/analysis/schedule.h"
#include "fa4sim/util/error.h"

namespace fa4sim {

namespace {

// The (tau, fraction) grid of the search: upstream's thresholds and emulated shares in eighths
// (the granularity of scripts/drivers/fa4_tricks.py's variant).
constexpr double kSearchTaus[] = {0, 4, 8};
constexpr int kSearchEighths = 8;

ScheduleBest search_best(const ArchSpec& a, const ScheduleSpec& s, const KernelFactors* kf,
                         ScheduleInput in, const SchedulePrediction& stock) {
  const double stock_tflops = stock.tflops;
  ScheduleBest best{0, 0, stock_tflops, 0, stock.kernel_factor, stock.kernel_factor_measurements};
  for (double tau : kSearchTaus)
    for (int e = 0; e <= kSearchEighths; ++e) {
      in.tricks.tau = tau;
      in.tricks.emu_fraction = e / 8.0;
      const SchedulePrediction p = predict_schedule(a, s, in, kf);
      // Like with like (Note [Kernel factors]): both with their factors when both have one, else
      // both without, the result scaled to stock's reported speed.
      const bool both = p.kernel_factor_measurements > 0 && stock.kernel_factor_measurements > 0;
      const double gain = both
                              ? p.tflops / stock_tflops
                              : (p.tflops * p.kernel_factor) / (stock_tflops * stock.kernel_factor);
      const double t = stock_tflops * gain;
      if (t > best.tflops * (1 + 1e-9))
        best = {tau, e / 8.0, t, 0, p.kernel_factor, p.kernel_factor_measurements};
    }
  best.gain = best.tflops / stock_tflops - 1;
  return best;
}

}  // namespace

ScheduleInput schedule_input_from_json(const json& e, const ScheduleInput& defaults,
                                       const std::string& where) {
  if (!e.is_object())
    throw Error(fmt::format("{} is not an object", where), "give {\"d\": 64, ...}");
  ScheduleInput in = defaults;
  AttnShape& s = in.shape;
  try {
    s.batch = e.value("batch", s.batch);
    s.heads = e.value("heads", s.heads);
    s.heads_kv = e.value("heads_kv", e.contains("heads") ? s.heads : s.heads_kv);
    s.seq_q = e.value("seq", s.seq_q);
    s.seq_k = e.value("seq_k", e.contains("seq") ? s.seq_q : s.seq_k);
    s.d = e.value("d", s.d);
    s.causal = e.value("causal", s.causal);
    in.tricks.tau = e.value("tau", in.tricks.tau);
    in.tricks.emu_fraction = e.value("emu_fraction", in.tricks.emu_fraction);
    in.tricks.degree = e.value("degree", in.tricks.degree);
    in.tricks.rescale_share = e.value("rescale_share", in.tricks.rescale_share);
    in.clock_mhz = e.value("clock_mhz", in.clock_mhz);
    if (e.contains("tile")) {
      in.tile_m = e["tile"].at(0).get<int>();
      in.tile_n = e["tile"].at(1).get<int>();
    }
  } catch (const json::exception& ex) {
    throw Error(fmt::format("{}: {}", where, ex.what()),
                "numbers, booleans and a [m, n] tile only");
  }
  return in;
}

ScheduleModelResult compute_schedule(const ScheduleModelOptions& o) {
  ScheduleModelResult r;
  for (const ArchSpec& a : o.archs) {
    const ScheduleSpec s =
        load_schedule_spec(o.spec_path.empty() ? schedule_spec_for_arch(a) : o.spec_path);
    const std::optional<KernelFactors> factors =
        resolve_kernel_factors(o.spec_path, o.kernel_factors, a);
    const KernelFactors* kf = factors ? &*factors : nullptr;
    ScheduleModelRow row;
    row.arch = a.name;
    ScheduleInput stock =
        o.input;  // upstream's own setting: sm90 none, sm100 tau 8 and its emulation table
    const TileRule& rule = tile_rule(s, o.input.shape.d, o.input.shape.causal);
    stock.tricks.tau = rule.stock_tau;
    stock.tricks.emu_fraction = rule.stock_emu_fraction;
    row.stock = predict_schedule(a, s, stock, kf);
    row.with_tricks = predict_schedule(a, s, o.input, kf);
    row.best = o.search ? search_best(a, s, kf, o.input, row.stock)
                        : ScheduleBest{0,
                                       0,
                                       row.stock.tflops,
                                       0,
                                       row.stock.kernel_factor,
                                       row.stock.kernel_factor_measurements};
    r.rows.push_back(std::move(row));
  }
  return r;
}

namespace {

std::vector<std::string> prediction_cells(const std::string& arch, const std::string& what,
                                          const SchedulePrediction& p, double stock_tflops) {
  return {arch,
          what,
          fmt::format("{}x{}", p.tile_m, p.tile_n),
          fmt::format("{} ({:.2f})", p.ctas, p.waves),
          fmt::format("{:.0f}", p.iter_cycles),
          fmt::format("{:.0f}", p.clock_mhz),
          fmt::format("{:.3f}", p.ms),
          fmt::format("{:.1f}", p.tflops),
          fmt::format("{:+.1f} %", 100 * (p.tflops / stock_tflops - 1)),
          fmt::format("{} ({:.0f} %)", p.binding,
                      100 * std::max({p.util_tensor, p.util_mufu, p.util_fma, p.util_alu,
                                      p.util_issue, p.util_tma})),
          p.critical_path,
          p.kernel_factor_measurements > 0
              ? fmt::format("{:.3f} ({})", p.kernel_factor, p.kernel_factor_measurements)
              : "-"};
}

}  // namespace

Report schedule_report(const ScheduleModelOptions& o, const ScheduleModelResult& r) {
  Report rep;
  rep.command = "schedule";
  rep.params = o.params;
  const AttnShape& sh = o.input.shape;
  Table t;
  t.title = fmt::format("FA4 forward, schedule model: B{} H{}/{} S{}x{} d{}{}", sh.batch, sh.heads,
                        sh.heads_kv, sh.seq_q, sh.seq_k, sh.d, sh.causal ? " causal" : "");
  t.columns = {"arch", "setting", "tile",     "CTAs (waves)",   "clk/iter",     "MHz",
               "ms",   "TFLOP/s", "vs stock", "binding (busy)", "longest wait", "kernel factor"};
  json rows = json::array();
  for (const ScheduleModelRow& row : r.rows) {
    const double st = row.stock.tflops;
    t.rows.push_back(prediction_cells(row.arch, "stock", row.stock, st));
    const Tricks& tr = o.input.tricks;
    t.rows.push_back(prediction_cells(
        row.arch,
        fmt::format("tau {:g}, {:.3g} emulated (deg {})", tr.tau, tr.emu_fraction, tr.degree),
        row.with_tricks, st));
    rows.push_back(json{{"arch", row.arch},
                        {"stock", to_json(row.stock)},
                        {"with_tricks", to_json(row.with_tricks)},
                        {"best",
                         {{"tau", row.best.tau},
                          {"emu_fraction", row.best.emu_fraction},
                          {"tflops", row.best.tflops},
                          {"gain_vs_stock", row.best.gain},
                          {"kernel_factor", row.best.kernel_factor},
                          {"kernel_factor_measurements", row.best.kernel_factor_measurements}}}});
    if (o.search)
      t.notes.push_back(
          row.best.gain > 0
              ? fmt::format(
                    "{}: best of tau {{0, 4, 8}} x fraction {{0, 1/8, .., 1}}: tau {:g}, {:.3g} "
                    "emulated, {:.1f} TFLOP/s ({:+.1f} % vs stock; {})",
                    row.arch, row.best.tau, row.best.emu_fraction, row.best.tflops,
                    100 * row.best.gain,
                    row.best.kernel_factor_measurements > 0
                        ? fmt::format("kernel factor {:.3f} from {} measured configurations",
                                      row.best.kernel_factor, row.best.kernel_factor_measurements)
                    : row.stock.kernel_factor_measurements > 0
                        ? std::string("this setting has no kernel factor: compared with stock "
                                      "by the model alone")
                        : std::string("no kernel factor: the model alone"))
              : fmt::format(
                    "{}: no (tau, fraction) of tau {{0, 4, 8}} x fraction {{0, 1/8, .., 1}} is "
                    "predicted faster than stock",
                    row.arch));
  }
  t.notes.push_back(
      "clk/iter: one main-loop iteration (one K/V block) of a CTA in steady state, SM clocks; busy: share "
      "of the CTA's clocks the resource is busy, per SM sub-partition; longest wait: where a warp "
      "waits longest per iteration (docs/schedule.md); kernel factor: measured / modelled time of this "
      "compiled kernel on the H200, the median over (n) measured configurations, applied to ms and TFLOP/s, "
      "and to a tricks variant's MHz in long runs (Note [Kernel factors], Note [Kernel factors in the "
      "clock]; --kernel-factors none: the model alone)");
  rep.results = json{{"rows", rows}};
  rep.tables.push_back(std::move(t));
  return rep;
}

}  // namespace fa4sim
