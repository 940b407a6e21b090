// `fa4sim fit`: fit the float32 polynomial of ex2_emulation for an objective, and prove it
// (include/fa4sim/analysis/fit.h). Parsing only; the fit is src/analysis/fit.cpp.
#include <tuple>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/analysis/exp2_analysis.h"
#include "fa4sim/analysis/fit.h"
#include "fa4sim/analysis/roofline.h"
#include "fa4sim/util/error.h"

namespace fa4sim::cli {

namespace {

struct FitOptions {
  std::string degree = "3";
  std::string objective = "fp32-maxrel";
  std::string range = "-20,8";
  bool fix_c0 = false;
  bool minimax_only = false;
  CommonOptions common;
};

FitConfig parse(const FitOptions& o) {
  FitConfig c;
  c.degree = static_cast<int>(parse_int("--degree", o.degree, kFitMinDegree, kFitMaxDegree));
  c.objective = parse_fit_objective(o.objective);
  const auto [lo, hi] = parse_range("--range", o.range);
  c.lo = lo;
  c.hi = hi;
  c.fix_c0 = o.fix_c0;
  c.minimax_only = o.minimax_only;
  c.threads = o.common.threads;
  validate(c);
  return c;
}

}  // namespace

void add_fit(CLI::App& root) {
  static FitOptions o;
  auto* sub = root.add_subcommand(
      "fit",
      "Fit the float32 polynomial p(f) ~ 2^f of the emulated exp2 for an objective (Remez in "
      "multiprecision, float32 rounding, exact local search) and score it against upstream's");
  int_in(sub->add_option("--degree", o.degree, "Polynomial degree"), kFitMinDegree, kFitMaxDegree)
      ->type_name("N")
      ->capture_default_str();
  sub->add_option("--objective", o.objective,
                  "fp32-maxrel | fp32-meanrel (every float of [0, 1)) | bf16-identical | "
                  "fp16-identical | bf16-max-ulp (value-weighted over --range)")
      ->type_name("NAME")
      ->capture_default_str();
  checked(sub->add_option(
              "--range", o.range,
              "Inputs x of 2^x in [LO, HI) of the bf16/fp16 objectives, within [-1022, 128] "
              "(write --range=-20,8 or --range -20,8)"),
          fmt::format("{:g}..{:g}", kExp2RangeMin, kExp2RangeMax),
          [](const std::string& opt, const std::string& v) {
            FitConfig f;  // the defaults with this range, checked by the fit's own rules
            std::tie(f.lo, f.hi) = parse_range(opt, v);
            validate(f);
          })
      ->type_name("LO,HI")
      ->capture_default_str();
  sub->add_flag("--fix-c0", o.fix_c0, "Keep c0 = 1 exactly (p(0) = 1, as upstream's fit)");
  sub->add_flag("--minimax-only", o.minimax_only,
                "Stop after the multiprecision minimax fit (no float32 rounding or search)");
  add_common_options(sub, o.common);
  sub->callback([sub] {
    const FitConfig cfg = parse(o);
    // docs/input-policy.md: an option the chosen mode ignores is named.
    if (sub->count("--range") > 0 && o.objective.rfind("fp32-", 0) == 0 && !o.minimax_only)
      warn_ignored("--range", "--objective " + o.objective,
                   "the fp32 objectives score every float32 of [0, 1)");
    if (o.minimax_only && sub->count("--objective") > 0)
      warn_ignored("--objective", "--minimax-only", "the minimax fit has no objective");
    if (o.minimax_only && sub->count("--range") > 0)
      warn_ignored("--range", "--minimax-only", "the minimax fit is over [0, 1)");
    check_report_path(o.common.json_path);
    Stopwatch sw;
    const FitResult r = run_fit(cfg);
    emit(fit_report(cfg, r), o.common.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli
