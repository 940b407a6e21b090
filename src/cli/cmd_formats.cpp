// `fa4sim formats`: the table of every number format's parameters and derived limits, and the
// `fa4sim report` section `formats` (that table next to docs/facts.md §3, plus a short quantize demo on
// the values FlashAttention-4's P conversion meets). The analysis is in src/analysis/formats_report.cpp.
#include <cmath>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/analysis/formats_report.h"

namespace fa4sim::cli {

void add_formats(CLI::App& root) {
  static CommonOptions c;
  auto* sub = root.add_subcommand(
      "formats", "Table of the number formats (fp32, bf16, fp16, e4m3, e5m2): bits, bias, limits, "
                 "log2(max finite)");
  add_common_options(sub, c);
  sub->callback([] {
    Stopwatch sw;
    check_report_path(c.json_path);
    Report r = formats_table_report();
    r.threads = 1;
    emit(r, c.json_path, sw.seconds());
  });
}

void report_formats(ReportContext& ctx) {
  Stopwatch sw;
  Report r = formats_table_report();
  r.threads = 1;
  ctx.write(r, "formats.json", sw.seconds());

  std::string md = "## Number formats (`fa4sim formats`, `fa4sim quantize`)\n\n";
  md += render_markdown(r.tables.front()) + "\n";
  // Measured (derived by fa4sim) next to the published figures of docs/facts.md §3 / the upstream assert.
  Table pub;
  pub.title = "Derived limits vs the published ones (docs/facts.md §3; upstream's log2(dtype_max) check)";
  pub.columns = {"format", "max finite: fa4sim", "published", "log2(max): fa4sim", "published",
                 "min subnormal: fa4sim", "published"};
  struct Published {
    const Format* f;
    const char* max;
    const char* log2max;
    const char* min_sub;
  };
  const Published kPub[] = {{&kE4M3, "448", "8.807", "2^-9"},
                            {&kE5M2, "57344", "15.807", "2^-16"},
                            {&kFP16, "65504", "log2(65504) (no figure given)", "2^-24"},
                            {&kBF16, "3.3895e38", "log2(3.3895313892515355e38) (no figure given)", "2^-133"}};
  for (const auto& p : kPub)
    pub.rows.push_back({p.f->name, fmt::format("{:.9g}", p.f->max_finite), p.max,
                        fmt::format("{:.4f}", p.f->log2_max), p.log2max,
                        fmt::format("2^{}", p.f->emin - p.f->man_bits), p.min_sub});
  md += render_markdown(pub) + "\n";

  // A short demo: P values around E4M3's limit, including the 2^12 = 4096 that a stale max with
  // tau = 4 and max_offset = 8 let through (upstream issue #2716), in both overflow modes.
  const std::vector<float> demo = {1.0f, 0.3f, 1e-3f, 448.0f, 464.0f, 465.0f, 4096.0f, INFINITY, NAN};
  for (Overflow ov : {Overflow::satfinite, Overflow::ieee}) {
    QuantizeConfig qc;
    qc.format = &kE4M3;
    qc.overflow = ov;
    Report q = quantize_report(qc, demo);
    q.params = {{"dtype", "e4m3"}, {"overflow", overflow_name(ov)}, {"values", "demo"}};
    q.threads = 1;
    ctx.write(q, fmt::format("quantize_e4m3_{}.json", overflow_name(ov)), sw.seconds());
    md += fmt::format("`fa4sim quantize --dtype e4m3 --overflow {} 1 0.3 1e-3 448 464 465 4096 inf nan`:\n\n",
                      overflow_name(ov));
    md += render_markdown(q.tables.front()) + "\n";
  }
  md += "Bit-exactness: all 2^32 float32 inputs per format and overflow mode match an independent "
        "table reference (`ctest -L slow -R test_formats`), and ml_dtypes where its semantics agree "
        "(`python3 scripts/check_ml_dtypes.py`).\n\n";
  ctx.markdown += md;
}

}  // namespace fa4sim::cli
