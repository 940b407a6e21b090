// block_check.cpp: `fa4sim check --p-format`: when P's block scale saturates or flushes under
// each scale rule, for FA4's P = exp2(... + max_offset) with a lagging max (Note [Lazy rescale])
// or SageAttention3's two-level rule (Note [Block-scaled attention], attention.h).
//
// Per row: P's largest value is 2^(max_offset + tau) (the stale max); the block scale
// saturates beyond rounding when a block amax exceeds element max x the scale format's midpoint
// above its max (NVFP4: 6 x 464 = 2784; E8M0's 2^127 x max_elem is beyond float32, never). What each rule does to a block's largest element
// is measured, not derived: 2^16 amax significands over [1, 2) (and, for the nearest rule, at a
// magnitude its scale clamps do not touch) go through block_encode/block_decode as one-element
// blocks; the clip share is the fraction whose element saturates (block_round's criterion: at or
// beyond the midpoint above max_elem), the worst clip the largest relative loss among them.
// Flush: the smallest scale (E8M0 2^-127, E4M3's 2^-6 under torchao's clamp) serves every block
// whose amax is below floor_amax; inside a block, P below amax x 2^flush_ratio_log2 rounds to 0
// (half the element's smallest subnormal, at the rule's smallest scaled amax).
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "fa4sim/analysis/attention.h"
#include "fa4sim/util/error.h"

namespace fa4sim {

namespace {

struct RuleSweep {
  double clip_share = 0, worst_clip = 0, min_scaled_amax = 0;
};

// One-element blocks with amax = significand x 2^e for 2^16 significands in [1, 2).
RuleSweep sweep_rule(const BlockFormat& b0) {
  BlockFormat b = b0;
  b.block_size = 1;
  b.tensor_scale = 1.0f;
  const Format& e = *b.elem;
  const double clip =
      e.max_finite + std::ldexp(1.0, int(std::floor(std::log2(e.max_finite))) - e.man_bits - 1);
  // The nearest rule at a magnitude inside its scale range (amax / max_elem in [1, 2)).
  const float mag = b.rule == ScaleRule::nearest ? float(e.max_finite) : 1.0f;
  RuleSweep r;
  r.min_scaled_amax = std::numeric_limits<double>::infinity();
  constexpr int kN = 1 << 16;
  int clipped = 0;
  for (int i = 0; i < kN; ++i) {
    const float amax = (1.0f + float(i) / float(kN)) * mag;
    uint32_t code = 0;
    const uint32_t sc = block_encode(b, &amax, &code);
    float dec = 0;
    block_decode(b, sc, &code, &dec);
    const double s = block_scale_value(b, sc);
    const double y = double(amax) / s;
    r.min_scaled_amax = std::min(r.min_scaled_amax, y);
    if (y >= clip) {
      ++clipped;
      r.worst_clip = std::max(r.worst_clip, 1.0 - double(dec) / double(amax));
    }
  }
  r.clip_share = double(clipped) / kN;
  return r;
}

}  // namespace

BlockCheckRow block_check_row(const std::string& name, const BlockFormat& b, PRule p_rule,
                              double tau, double max_offset) {
  BlockCheckRow r;
  r.p_format = name;
  r.rule = scale_rule_name(b.rule);
  r.p_rule = p_rule_name(p_rule);
  r.tau = tau, r.max_offset = max_offset;
  r.worst_p = std::exp2(max_offset + tau);
  const Format& e = *b.elem;
  const bool e8 = b.rule != ScaleRule::nearest;
  // The nearest rule's scale saturates beyond rounding from amax / max_elem = the scale format's
  // midpoint above its max (E4M3: 464, so amax 6 x 464 = 2784).
  const double s_max =
      b.scale->max_finite +
      std::ldexp(1.0, int(std::floor(std::log2(b.scale->max_finite))) - b.scale->man_bits - 1);
  r.scale_clip_amax = e8 ? std::numeric_limits<double>::infinity() : s_max * e.max_finite;
  const RuleSweep sw = sweep_rule(b);
  r.elem_clip_pct = 100.0 * sw.worst_clip;
  r.elem_clip_share_pct = 100.0 * sw.clip_share;
  r.floor_amax = (e8 ? std::ldexp(1.0, -127) : b.scale->min_normal) *
                 (e8 ? std::ldexp(1.0, e.emax) : e.max_finite);
  r.floor_rel_log2 = std::log2(r.floor_amax) - max_offset;
  r.flush_ratio_log2 = std::log2(e.min_subnormal / 2.0 / sw.min_scaled_amax);
  r.safe = !(r.worst_p > r.scale_clip_amax);
  if (!r.safe)
    r.explanation = fmt::format(
        "with tau {:g} the max may lag and P reach 2^{:.4g} = {:.4g}, above {:g} = element max {:g} "
        "x {:g} (where {}'s {} scale saturates beyond rounding): those blocks' P clip while "
        "row_sum counts them unclipped",
        tau, max_offset + tau, r.worst_p, r.scale_clip_amax, e.max_finite, s_max, name,
        b.scale->name);
  return r;
}

BlockCheckResult compute_block_check(const std::vector<std::string>& p_formats,
                                     const std::vector<ScaleRule>& rules, PRule p_rule,
                                     const std::string& preset_name,
                                     const std::vector<double>& taus,
                                     std::optional<double> max_offset) {
  const AttentionPreset& preset = attention_preset(preset_name);
  for (double t : taus) check_log2_knob("--tau", t);
  if (max_offset) check_log2_knob("--max-offset", *max_offset);
  const std::vector<std::string> names =
      p_formats.empty() ? std::vector<std::string>{"mxfp8", "mxfp6", "mxfp4", "nvfp4"} : p_formats;
  BlockCheckResult res;
  for (const auto& name : names) {
    AttentionConfig cfg;
    cfg.p_rule = p_rule;
    const OperandFormat o = attention_operand(cfg, name, "--p-format");
    if (!o.block)
      throw Error(fmt::format("--p-format {} is not a block format", name),
                  "`fa4sim check --dtype` checks an element-wise P; --p-format takes mxfp8, "
                  "mxfp8-e5m2, mxfp6, mxfp6-e3m2, mxfp4, nvfp4");
    const bool e8 = o.block->scale == &kE8M0;
    if (p_rule == PRule::two_level && e8)
      throw Error(fmt::format("--p-rule two-level needs a P format whose block scale has a "
                              "mantissa (nvfp4), not '{}'",
                              name),
                  "use --p-rule max-offset with MX formats");
    if (p_rule == PRule::two_level && max_offset)
      throw Error("--max-offset is set by --p-rule two-level (log2 of scale max x element max)",
                  "drop --max-offset, or use --p-rule max-offset");
    std::vector<ScaleRule> rs;
    for (ScaleRule sr :
         rules.empty() ? std::vector<ScaleRule>{ScaleRule::floor, ScaleRule::ceil, ScaleRule::even,
                                                ScaleRule::rceil, ScaleRule::nearest}
                       : rules)
      if ((sr != ScaleRule::nearest) == e8) rs.push_back(sr);
    if (rs.empty())
      throw Error(fmt::format("--scale-rule: none of the rules given fits {}'s {} scale", name,
                              o.block->scale->name),
                  e8 ? "MX formats take floor, ceil, even, rceil" : "nvfp4 takes nearest");
    const double mo =
        p_rule == PRule::two_level
            ? double(float(std::log2(o.block->scale->max_finite * o.block->elem->max_finite)))
        : max_offset ? *max_offset
                     : preset_max_offset(preset, kE4M3);
    const std::vector<double> ts =
        taus.empty() ? std::vector<double>{preset_tau(preset, kE4M3)} : taus;
    for (ScaleRule sr : rs) {
      BlockFormat b = *o.block;
      b.rule = sr;
      for (double t : ts) {
        res.rows.push_back(block_check_row(name, b, p_rule, t, mo));
        res.all_safe = res.all_safe && res.rows.back().safe;
      }
    }
  }
  return res;
}

Report block_check_report(const BlockCheckResult& c) {
  Report rep;
  rep.command = "check";
  Table t;
  t.title = "Block-scaled P: can the block scale saturate or flush (per scale rule)";
  t.columns = {"P format",
               "rule",
               "P rule",
               "tau",
               "max_offset",
               "worst P",
               "block amax clips above",
               "block max clipped (share, worst)",
               "smallest scale below amax",
               "in-block flush",
               "verdict"};
  json rows = json::array();
  for (const BlockCheckRow& r : c.rows) {
    t.rows.push_back(
        {r.p_format, r.rule, r.p_rule, fmt::format("{:g}", r.tau),
         fmt::format("{:.4g}", r.max_offset),
         fmt::format("2^{:.4g} = {:.4g}", r.max_offset + r.tau, r.worst_p),
         std::isinf(r.scale_clip_amax) ? "never" : fmt::format("{:g}", r.scale_clip_amax),
         r.elem_clip_pct > 0 ? fmt::format("{:.3g} % of maxima, by up to {:.3g} %",
                                           r.elem_clip_share_pct, r.elem_clip_pct)
                             : "none",
         fmt::format("{:.3g} (2^{:.1f} x row max)", r.floor_amax, r.floor_rel_log2),
         fmt::format("P < amax x 2^{:.2f} -> 0", r.flush_ratio_log2), r.safe ? "safe" : "UNSAFE"});
    rows.push_back(
        {{"p_format", r.p_format},
         {"rule", r.rule},
         {"p_rule", r.p_rule},
         {"tau", r.tau},
         {"max_offset", r.max_offset},
         {"worst_p", r.worst_p},
         {"scale_clip_amax", std::isinf(r.scale_clip_amax) ? json("inf") : json(r.scale_clip_amax)},
         {"elem_clip_pct", r.elem_clip_pct},
         {"elem_clip_share_pct", r.elem_clip_share_pct},
         {"floor_amax", r.floor_amax},
         {"floor_rel_log2", r.floor_rel_log2},
         {"flush_ratio_log2", r.flush_ratio_log2},
         {"safe", r.safe},
         {"explanation", r.explanation}});
    if (!r.safe) t.notes.push_back(fmt::format("{} {}: {}", r.p_format, r.rule, r.explanation));
  }
  t.notes.push_back(
      "block max clipped: the rule's own clipping of a block's largest P (floor puts amax / scale "
      "in [2^emax, 2^(emax+1)), above max_elem for part of the range); smallest scale: blocks "
      "with a smaller amax share the smallest scale and lose their small P; in-block flush: P "
      "this far below its block's amax rounds to 0");
  for (const BlockCheckRow& r : c.rows)
    if (r.rule == std::string("floor")) {
      t.notes.push_back(
          "floor and P: a row's largest P is 2^max_offset within an ulp (exp2 of a float32 "
          "argument); one ulp below the power of two, floor's scale puts it at 2^emax x (2 - ulp) "
          "and clips it by the worst figure above, so the error follows the argument's rounding "
          "(`fa4sim attention`'s exp2 part); ceil never clips but doubles the scale one ulp "
          "above 2^k; even and rceil have no edge there");
      break;
    }
  t.notes.push_back(c.all_safe ? "verdict: safe (exit 0)" : "verdict: UNSAFE (exit 1)");
  rep.results = {{"safe", c.all_safe}, {"rows", rows}};
  rep.tables.push_back(std::move(t));
  return rep;
}

}  // namespace fa4sim
