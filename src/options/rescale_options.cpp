// rescale_options.cpp: `fa4sim rescale`'s options parsed into a RescaleConfig (see
// rescale_options.h).
#include "fa4sim/options/rescale_options.h"

#include <fmt/format.h>

#include "fa4sim/util/error.h"

namespace fa4sim {

std::vector<double> parse_rescale_taus(const std::string& s) {
  for (const auto& t : list_items("--tau", s, "a number"))
    if (t == "nan" || t == "NaN" || t == "-nan")
      throw Error(fmt::format("--tau must be a number, got '{}'", t), "e.g. --tau 0,8");
  return parse_double_list("--tau", s);
}

RescaleConfig parse_rescale_options(const RescaleCliOptions& o, const OptionGiven& given) {
  constexpr int64_t kMaxDim = kRescaleMaxDim;
  RescaleConfig c;
  c.taus = parse_rescale_taus(o.tau);
  c.dtypes = parse_dtype_list("--dtype", o.dtype, FormatRole::p_cast);
  if (!o.max_offset.empty()) c.max_offset = parse_double("--max-offset", o.max_offset);
  for (const auto& t : list_items("--dist", o.dist, "a distribution"))
    c.dists.push_back(parse_score_dist(t));
  c.rows = int(parse_int("--rows", o.rows, 1, kMaxDim));
  c.keys = int(parse_int("--keys", o.keys, 1, kMaxDim));
  c.block = int(parse_int("--block-n", o.block, 1, kMaxDim));
  c.d = int(parse_int("--d", o.d, 1, 4096));
  c.rows_set = given("--rows");
  c.keys_set = given("--keys");
  c.v_dist = parse_choice("--v-dist", o.v_dist, {"normal", "uniform"});
  c.exp2 = parse_exp2_choice(o.exp);
  if (!o.scale.empty()) c.scale = parse_double("--softmax-scale", o.scale);
  const std::string order = parse_choice("--order", o.order, {"auto", "reverse", "forward"});
  c.order = order == "auto"      ? OrderChoice::auto_
            : order == "reverse" ? OrderChoice::reverse
                                 : OrderChoice::forward;
  c.warp_rows = int(parse_int("--warp-rows", o.warp_rows, 1, 1024));
  c.seed = uint64_t(parse_int("--seed", o.seed, 0, int64_t(1) << 53));
  c.seeds = int(parse_int("--seeds", o.seeds, 1, 10000));
  if (o.rng == "fa4sim") {
    c.rng = RngChoice::Kind::fa4sim;
  } else if (o.rng.rfind("numpy:", 0) == 0) {
    c.rng = RngChoice::Kind::numpy;
    const uint64_t s =
        uint64_t(parse_int("--rng numpy:SEED", o.rng.substr(6), 0, int64_t(1) << 53));
    if (given("--seed") && s != c.seed)
      throw Error(fmt::format("--rng {} and --seed {} disagree", o.rng, o.seed),
                  "with --rng numpy:SEED the seed is SEED; leave out --seed");
    c.seed = s;
  } else {
    throw Error(fmt::format("unknown --rng '{}'", o.rng),
                "valid: fa4sim, numpy:SEED (e.g. numpy:1)");
  }
  c.allow_saturation = o.allow_saturation;
  c.counts_only = o.counts_only;
  c.threads = o.common.threads;
  return c;
}

}  // namespace fa4sim
