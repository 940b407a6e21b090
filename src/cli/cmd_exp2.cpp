// `fa4sim exp2`: error table of the emulated exp2 (ex2_emulation) per polynomial degree.
// Parsing only (the report's exp2 section is src/report/section_exp2.cpp); the analysis is src/analysis/exp2_analysis.cpp.
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "cli_util.h"
#include "fa4sim/options/exp2_options.h"
#include "commands.h"
#include "fa4sim/analysis/fit.h"
#include "fa4sim/util/error.h"
#include "fa4sim/analysis/exp2_analysis.h"
#include "fa4sim/analysis/exp2_vs_mufu.h"
#include "fa4sim/core/mufu.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_exp2.h"

namespace fa4sim::cli {

static_assert(kExp2MaxSamples == 100'000'000'000ull, "--samples shows 1..1e11 in --help");

void add_exp2(CLI::App& root) {
  static Exp2Options o;
  auto* sub = root.add_subcommand(
      "exp2",
      "Error of the emulated exp2 (FA4's ex2_emulation, degrees 0-5) vs 2^x, in float32 and after "
      "rounding to bf16/fp16");
  ints_in(sub->add_option("--degree", o.degree, "Polynomial degrees, comma-separated, each 0..5"),
          0, 5)
      ->type_name("N[,N...]")
      ->capture_default_str();
  checked(
      sub->add_option("--range", o.range,
                      "Inputs x of 2^x in [LO, HI), within [-1022, 128] (write --range=-20,8 or "
                      "--range -20,8)"),
      fmt::format("{:g}..{:g}", kExp2RangeMin, kExp2RangeMax),
      [](const std::string& opt, const std::string& v) {
        Exp2Config e;  // the defaults with this range, checked by the analysis' own rules
        std::tie(e.lo, e.hi) = parse_range(opt, v);
        validate(e);
      })
      ->type_name("LO,HI")
      ->capture_default_str();
  checked(sub->add_option("--samples", o.samples,
                          "Number of sampled inputs, 1 .. 1e11; ignored with --exhaustive"),
          "1..1e11",
          [](const std::string&, const std::string& v) {
            Exp2Config e;
            e.samples = parse_exp2_samples(v);
            validate(e);
          })
      ->type_name("N")
      ->capture_default_str();
  sub->add_option("--sampling", o.sampling,
                  "uniform: uniform in value, what a softmax sees; bits: uniform over the float32 "
                  "bit patterns in the range")
      ->type_name("uniform|bits")
      ->capture_default_str();
  sub->add_flag("--exhaustive", o.exhaustive,
                "Every float32 in the range, with plain and value-weighted (exact limit of uniform "
                "sampling) statistics");
  sub->add_option("--out-dtype", o.out_dtype,
                  "Format the results are rounded to (P's MMA input type)")
      ->type_name("bf16|fp16")
      ->capture_default_str();
  int_in(sub->add_option("--seed", o.seed, "Seed of the counter-based input generator"), 0,
         std::numeric_limits<int64_t>::max() / 2)
      ->type_name("S")
      ->capture_default_str();
  sub->add_option("--reference", o.reference,
                  "f64: fast double 2^x (near-midpoint cases re-decided in multiprecision); mp: "
                  "Boost multiprecision for every input (slow, for audits)")
      ->type_name("f64|mp")
      ->capture_default_str();
  sub->add_flag(
      "--hardware", o.hardware,
      "Also run the MUFU (ex2.approx.ftz.f32) on the GPU: MUFU vs exact, and the emulation vs "
      "the MUFU on the same inputs (needs a CUDA device, exit code 3 without one)");
  sub->add_flag(
      "--mufu-model", o.mufu_model,
      "Also compare with the H200's MUFU on the CPU (ex2.approx.ftz.f32's bit-exact model, "
      "data/mufu/): MUFU vs exact, and the emulation vs the MUFU on the same inputs; with "
      "--exhaustive exact over every float32 of the range, no GPU needed");
  auto* coeffs = sub->add_option(
      "--coeffs", o.coeffs,
      "Analyse this float32 polynomial instead of upstream's: c0,c1,... (2 to 6 numbers, decimal "
      "or hex float) or a file holding them; sets the degree (e.g. from `fa4sim fit`)");
  coeffs->type_name("FILE|c0,c1,...");
  refuses_empty_itself(coeffs);
  add_common_options(sub, o.common);
  sub->callback([sub, coeffs] {
    o.degree_given = sub->count("--degree") > 0;
    o.coeffs_given = coeffs->count() > 0;
    const Exp2Config cfg = parse_exp2_options(o);
    if (o.exhaustive)  // docs/input-policy.md: an ignored option is named
      for (const char* opt : {"--seed", "--sampling", "--samples"})
        if (sub->count(opt) > 0)
          warn_ignored(opt, "--exhaustive", "every float32 of the range is evaluated once");
    check_report_path(o.common.json_path);
    if ((o.hardware || o.mufu_model) && !cfg.coeffs.empty())
      throw Error(fmt::format("{} compares upstream's polynomials with the MUFU",
                              o.hardware ? "--hardware" : "--mufu-model"),
                  "leave --coeffs out");
    if (o.hardware) gpu::require();
    Stopwatch sw;
    const Exp2Result r = run_exp2(cfg);
    Report rep = exp2_report(cfg, r);
    if (o.mufu_model)
      add_exp2_vs_mufu(rep, cfg, run_exp2_vs_mufu(cfg, mufu_model_exp2()), "mufu_model",
                       "the H200's MUFU model (data/mufu/ex2_approx_ftz.bin)",
                       json{{"table", ex2_table_path()}});
    if (o.hardware) add_exp2_hardware(rep, cfg, run_exp2_hardware(cfg));
    emit(rep, o.common.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli
