// `fa4sim exp2`: error table of the emulated exp2 (ex2_emulation) per polynomial degree, and the
// report's exp2 section. Parsing only; the analysis is src/exp2_analysis.cpp.
#include <cmath>
#include <cstdio>
#include <limits>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/error.h"
#include "fa4sim/exp2_analysis.h"
#include "fa4sim/gpu.h"
#include "fa4sim/gpu_exp2.h"

namespace fa4sim::cli {

namespace {

struct Exp2Options {
  std::string degree = "3,4,5";
  std::string range = "-20,8";
  std::string samples = "4194304";
  std::string sampling = "uniform";
  bool exhaustive = false;
  std::string out_dtype = "bf16";
  std::string seed = "0";
  std::string reference = "f64";
  bool hardware = false;
  CommonOptions common;
};

Exp2Config parse(const Exp2Options& o) {
  Exp2Config c;
  c.degrees.clear();
  for (int64_t d : parse_int_list("--degree", o.degree, 0, 5)) c.degrees.push_back(static_cast<int>(d));
  const auto [lo, hi] = parse_range("--range", o.range);
  c.lo = lo;
  c.hi = hi;
  const int64_t n = parse_int("--samples", o.samples, std::numeric_limits<int64_t>::min() / 2,
                              std::numeric_limits<int64_t>::max() / 2);
  if (n <= 0)
    throw Error(fmt::format("--samples must be at least 1, got '{}'", o.samples),
                "e.g. --samples 4194304 (the default)");
  c.samples = static_cast<uint64_t>(n);
  c.sampling = parse_choice("--sampling", o.sampling, {"uniform", "bits"}) == "bits"
                   ? Exp2Sampling::bits
                   : Exp2Sampling::uniform;
  c.exhaustive = o.exhaustive;
  c.out_dtype = parse_choice("--out-dtype", o.out_dtype, {"bf16", "fp16"});
  c.seed = static_cast<uint64_t>(
      parse_int("--seed", o.seed, 0, std::numeric_limits<int64_t>::max() / 2));
  c.reference = parse_choice("--reference", o.reference, {"f64", "mp"}) == "mp" ? Exp2Reference::mp
                                                                                : Exp2Reference::f64;
  c.threads = o.common.threads;
  validate(c);
  return c;
}

}  // namespace

void add_exp2(CLI::App& root) {
  static Exp2Options o;
  auto* sub = root.add_subcommand(
      "exp2",
      "Error of the emulated exp2 (FA4's ex2_emulation, degrees 0-5) vs 2^x, in float32 and after "
      "rounding to bf16/fp16");
  sub->add_option("--degree", o.degree, "Polynomial degrees, comma-separated, each 0..5")
      ->type_name("LIST")
      ->capture_default_str();
  sub->add_option("--range", o.range,
                  "Inputs x in [LO, HI), within [-1022, 128] (write --range=-20,8 or --range -20,8)")
      ->type_name("LO,HI")
      ->capture_default_str();
  sub->add_option("--samples", o.samples, "Number of sampled inputs (1 .. 1e11); ignored with --exhaustive")
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
  sub->add_option("--out-dtype", o.out_dtype, "Format the results are rounded to (P's MMA input type)")
      ->type_name("bf16|fp16")
      ->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of the counter-based input generator")
      ->type_name("S")
      ->capture_default_str();
  sub->add_option("--reference", o.reference,
                  "f64: fast double 2^x (near-midpoint cases re-decided in multiprecision); mp: "
                  "Boost multiprecision for every input (slow, for audits)")
      ->type_name("f64|mp")
      ->capture_default_str();
  sub->add_flag("--hardware", o.hardware,
                "Also run the MUFU (ex2.approx.ftz.f32) on the GPU: MUFU vs exact, and the emulation vs "
                "the MUFU on the same inputs (needs a CUDA device, exit code 3 without one)");
  add_common_options(sub, o.common);
  sub->callback([] {
    const Exp2Config cfg = parse(o);
    check_report_path(o.common.json_path);
    if (o.hardware) gpu::require();
    Stopwatch sw;
    const Exp2Result r = run_exp2(cfg);
    Report rep = exp2_report(cfg, r);
    if (o.hardware) add_exp2_hardware(rep, cfg, run_exp2_hardware(cfg));
    emit(rep, o.common.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli

namespace fa4sim::cli {

void report_exp2(ReportContext& ctx) {
  Exp2Config sampled;
  sampled.threads = ctx.threads;
  Stopwatch sw;
  const Exp2Result rs = run_exp2(sampled);
  ctx.write(exp2_report(sampled, rs), "exp2.json", sw.seconds());
  ctx.markdown += "## exp2\n\n(section in progress)\n\n";
}

}  // namespace fa4sim::cli
