// exp2_options.cpp: `fa4sim exp2`'s options parsed into an Exp2Config (see the header).
#include "fa4sim/options/exp2_options.h"

#include <limits>

#include <fmt/format.h>

#include "fa4sim/analysis/fit.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/parse.h"

namespace fa4sim {

uint64_t parse_exp2_samples(const std::string& s) {
  // 1e308 and 1e19 are integers too, only beyond the limit (and int64): say so, not "out of range".
  if (const std::optional<double> v = strtod_whole(s); v && *v >= 0x1p62)
    throw Error(
        fmt::format("--samples {} is above the limit of {:.0e}", s, double(kExp2MaxSamples)),
        "more samples only shrink sampling noise: --exhaustive evaluates every float in the "
        "range once and gives the exact value-weighted limit");
  const int64_t n = parse_int("--samples", s, std::numeric_limits<int64_t>::min() / 2,
                              std::numeric_limits<int64_t>::max() / 2);
  if (n <= 0)
    throw Error(fmt::format("--samples must be at least 1, got '{}'", s),
                "e.g. --samples 4194304 (the default)");
  return static_cast<uint64_t>(n);
}

Exp2Config parse_exp2_options(const Exp2Options& o) {
  Exp2Config c;
  c.degrees.clear();
  for (int64_t d : parse_int_list("--degree", o.degree, 0, 5))
    c.degrees.push_back(static_cast<int>(d));
  const auto [lo, hi] = parse_range("--range", o.range);
  c.lo = lo;
  c.hi = hi;
  c.samples = parse_exp2_samples(o.samples);
  c.sampling = parse_choice("--sampling", o.sampling, {"uniform", "bits"}) == "bits"
                   ? Exp2Sampling::bits
                   : Exp2Sampling::uniform;
  c.exhaustive = o.exhaustive;
  c.out_dtype = parse_choice("--out-dtype", o.out_dtype, {"bf16", "fp16"});
  c.seed = static_cast<uint64_t>(
      parse_int("--seed", o.seed, 0, std::numeric_limits<int64_t>::max() / 2));
  c.reference = parse_choice("--reference", o.reference, {"f64", "mp"}) == "mp"
                    ? Exp2Reference::mp
                    : Exp2Reference::f64;
  c.threads = o.common.threads;
  if (!o.coeffs.empty() || o.coeffs_given) {
    if (o.degree_given)
      throw Error("--coeffs sets the degree (the number of coefficients - 1)",
                  "leave --degree out");
    c.coeffs = load_coeffs("--coeffs", o.coeffs);
    c.degrees = {static_cast<int>(c.coeffs.size()) - 1};
  }
  validate(c);
  return c;
}

}  // namespace fa4sim
