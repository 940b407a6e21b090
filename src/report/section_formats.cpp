// The `formats` section of `fa4sim report`: the table of every number format next to the
// published limits (data/published/formats.json, docs/facts.md §3), plus a short quantize demo on
// the values FlashAttention-4's P conversion meets. The analysis is src/analysis/formats_report.cpp.
#include <cmath>

#include <fmt/format.h>

#include "fa4sim/analysis/formats_report.h"
#include "fa4sim/report/sections.h"

namespace fa4sim {

namespace {

// Derived (by fa4sim) vs the published limits; the FP8 ones are findings (they bound max_offset + tau).
std::string published_limits(ReportContext& ctx) {
  const PublishedValues& pub = ctx.published("formats");
  Table t;
  t.title =
      "Derived limits vs the published ones (docs/facts.md §3; upstream's log2(dtype_max) check)";
  t.columns = {"format",    "max finite: fa4sim",    "published", "log2(max): fa4sim",
               "published", "min subnormal: fa4sim", "published"};
  const std::string note =
      "formats: the published limits state no tolerance; fa4sim derives each from the format's "
      "parameters (formats.h), the published figure is shown next to it";
  for (const Format* f : {&kE4M3, &kE5M2, &kFP16, &kBF16}) {
    const std::string n = f->name;
    const std::string max = fmt::format("{:.9g}", f->max_finite),
                      log2max = fmt::format("{:.4f}", f->log2_max);
    t.rows.push_back({n, max, pub.text(n + ".max_finite"), log2max, pub.text(n + ".log2_max"),
                      fmt::format("2^{}", f->emin - f->man_bits), pub.text(n + ".min_subnormal")});
    if (f == &kE4M3 || f == &kE5M2) {
      ctx.add_finding({n + " max finite", max, pub.text(n + ".max_finite"), std::nullopt, note});
      ctx.add_finding({n + " log2(max finite), the bound of max_offset + tau", log2max,
                       pub.text(n + ".log2_max"), std::nullopt, note});
    }
  }
  return render_markdown(t) + "\n";
}

}  // namespace

void report_formats(ReportContext& ctx) {
  Stopwatch sw;
  Report r = formats_table_report();
  r.threads = 1;
  ctx.write(r, "formats.json", sw.seconds());

  std::string md = "## Number formats (`fa4sim formats`, `fa4sim quantize`)\n\n";
  md += render_markdown(r.tables.front()) + "\n";
  md += published_limits(ctx);

  // A short demo: P values around E4M3's limit, including the 2^12 = 4096 that a stale max with
  // tau = 4 and max_offset = 8 let through (upstream issue #2716), in both overflow modes.
  const std::vector<float> demo = {1.0f,   0.3f,    1e-3f,    448.0f, 464.0f,
                                   465.0f, 4096.0f, INFINITY, NAN};
  for (Overflow ov : {Overflow::satfinite, Overflow::ieee}) {
    QuantizeConfig qc;
    qc.format = &kE4M3;
    qc.overflow = ov;
    Report q = quantize_report(qc, demo);
    q.params = {{"dtype", "e4m3"}, {"overflow", overflow_name(ov)}, {"values", "demo"}};
    q.threads = 1;
    ctx.write(q, fmt::format("quantize_e4m3_{}.json", overflow_name(ov)), sw.seconds());
    md += fmt::format(
        "`fa4sim quantize --dtype e4m3 --overflow {} 1 0.3 1e-3 448 464 465 4096 inf nan`:\n\n",
        overflow_name(ov));
    md += render_markdown(q.tables.front()) + "\n";
  }
  md +=
      "Bit-exactness: all 2^32 float32 inputs per format and overflow mode match an independent "
      "table reference (`ctest -L slow -R test_formats`), and ml_dtypes where its semantics agree "
      "(`python3 scripts/check/check_ml_dtypes.py`).\n\n";
  ctx.markdown += md;
}

}  // namespace fa4sim
