// exp2_vs_mufu.cpp: the emulation against the MUFU's exp2 (see exp2_vs_mufu.h).
#include "fa4sim/analysis/exp2_vs_mufu.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/core/mufu.h"
#include "fa4sim/util/error.h"

namespace fa4sim {

namespace {

// Ordered distance of two non-negative float-format bit patterns (ULPs of that format).
double bit_distance(uint32_t a, uint32_t b) { return a > b ? double(a - b) : double(b - a); }

// Float neighbours for the value weights (same definition as exp2_analysis.cpp).
float next_up(float x) {
  const uint32_t u = f32_bits(x);
  if (x == 0.0f) return f32_from_bits(1u);
  return f32_from_bits(static_cast<int32_t>(u) >= 0 ? u + 1 : u - 1);
}
float next_down(float x) { return -next_up(-x); }

void merge_vs(Exp2VsMufu& t, const Exp2VsMufu& p) {
  t.n += p.n, t.wn += p.wn, t.identical += p.identical, t.widentical += p.widentical;
  t.within_1ulp += p.within_1ulp, t.wwithin_1ulp += p.wwithin_1ulp;
  t.max_ulp_out = std::max(t.max_ulp_out, p.max_ulp_out);
  if (p.max_ulp_f32 > t.max_ulp_f32 ||
      (p.max_ulp_f32 == t.max_ulp_f32 && p.max_ulp_f32_at < t.max_ulp_f32_at))
    t.max_ulp_f32 = p.max_ulp_f32, t.max_ulp_f32_at = p.max_ulp_f32_at;
}

}  // namespace

float exp2_first_input(double lo) {
  float f = static_cast<float>(lo);
  if (static_cast<double>(f) < lo) f = next_up(f);
  return f;
}

float exp2_last_input(double hi) {
  float f = static_cast<float>(hi);
  if (static_cast<double>(f) >= hi) f = next_down(f);
  return f;
}

MufuExp2 mufu_model_exp2() {
  const Ex2ApproxTable t = ex2_approx_table();  // loaded here, once: exit 2 if missing
  return [t](std::span<const float> x, std::span<float> y) {
    for (size_t i = 0; i < x.size(); ++i) y[i] = ex2_approx_ftz(x[i], t);
  };
}

Exp2MufuResult run_exp2_vs_mufu(const Exp2Config& cfg_in, const MufuExp2& source) {
  validate(cfg_in);
  Exp2Config cfg = cfg_in;
  cfg.degrees = {cfg_in.degrees.front()};  // the MUFU has no degree: evaluate it once per input
  const Format& fo = cfg.out_dtype == "fp16" ? kFP16 : kBF16;
  const float x_first = exp2_first_input(cfg.lo), x_last = exp2_last_input(cfg.hi);

  const size_t nd = cfg_in.degrees.size();
  std::vector<Exp2VsMufu> total(nd);
  for (size_t d = 0; d < nd; ++d) total[d].degree = cfg_in.degrees[d];
  const std::vector<Exp2VsMufu> total_init = total;
  std::map<size_t, std::vector<Exp2VsMufu>> groups;  // exhaustive: per 2^16 inputs, in order
  std::mutex mu;
  uint64_t seen = 0;
  const Exp2Function mufu = [&](int, std::span<const float> x, std::span<float> y) {
    source(x, y);
    std::vector<uint32_t> bits(x.size());
    for (size_t i = 0; i < x.size(); ++i) bits[i] = f32_bits(y[i]);
    // (b) emulation vs MUFU on the same inputs; block-local, then merged (counts and maxima:
    // independent of order, so of the thread count).
    std::vector<Exp2VsMufu> part(nd);
    for (size_t d = 0; d < nd; ++d) {
      Exp2VsMufu& p = part[d];
      for (size_t i = 0; i < x.size(); ++i) {
        const float e = ex2_emu(x[i], cfg_in.degrees[d]);
        const uint32_t eo = encode(fo, e, Overflow::ieee), mo = encode(fo, y[i], Overflow::ieee);
        const double dist = bit_distance(eo, mo);
        const double d32 = bit_distance(f32_bits(e), bits[i]);
        double w = 0;
        if (cfg.exhaustive) {
          const double xd = x[i];
          const double below =
              x[i] == x_first ? cfg.lo : 0.5 * (static_cast<double>(next_down(x[i])) + xd);
          const double above =
              x[i] == x_last ? cfg.hi : 0.5 * (xd + static_cast<double>(next_up(x[i])));
          w = above - below;
        }
        p.n += 1;
        p.wn += w;
        if (dist == 0) p.identical += 1, p.widentical += w;
        if (dist <= 1) p.within_1ulp += 1, p.wwithin_1ulp += w;
        p.max_ulp_out = std::max(p.max_ulp_out, dist);
        if (d32 > p.max_ulp_f32) p.max_ulp_f32 = d32, p.max_ulp_f32_at = x[i];
      }
    }
    std::lock_guard<std::mutex> lk(mu);
    seen += x.size();
    // Exhaustive runs: the value-weighted sums are doubles, so their order must not depend on
    // which thread finishes first. A block's partial goes into its 2^16-input group (one
    // run_exp2 chunk: one thread, blocks in order); groups are folded in order at the end.
    std::vector<Exp2VsMufu>& into =
        cfg.exhaustive ? groups[static_cast<size_t>((key_of(x[0]) - key_of(x_first)) >> 16)]
                       : total;
    if (into.empty()) into = total_init;
    for (size_t d = 0; d < nd; ++d) merge_vs(into[d], part[d]);
  };
  Exp2MufuResult hw;
  hw.mufu = run_exp2(cfg, mufu);
  for (const auto& [index, g] : groups)
    for (size_t d = 0; d < g.size(); ++d) merge_vs(total[d], g[d]);
  // run_exp2 pads its last block to a multiple of 8 with x = +0. Pads compare identical (both
  // paths give exactly 1.0 at 0): take them out of the counts and weights exactly.
  const double pads = static_cast<double>(seen) - static_cast<double>(hw.mufu.n);
  if (pads < 0 || pads > 7)
    throw Error(
        fmt::format("exp2 vs the MUFU: {} inputs evaluated for {} expected", seen, hw.mufu.n),
        "this is a bug in fa4sim");
  if (pads > 0) {
    const double w0 = cfg.exhaustive ? 0.5 * static_cast<double>(next_up(0.0f)) * 2 : 0.0;
    for (auto& t : total) {
      t.n -= pads, t.identical -= pads, t.within_1ulp -= pads;
      t.wn -= pads * w0, t.widentical -= pads * w0, t.wwithin_1ulp -= pads * w0;
    }
  }
  hw.vs_mufu = total;
  return hw;
}

void add_exp2_vs_mufu(Report& r, const Exp2Config& cfg, const Exp2MufuResult& hw,
                      const std::string& key, const std::string& source, const json& extra) {
  const std::string out = cfg.out_dtype;
  const auto& m = hw.mufu.degrees.front();
  auto pct = [](double a, double n) {
    return n > 0 ? fmt::format("{:.3f}%", 100.0 * a / n) : std::string("-");
  };
  json vs = json::array();
  Table t{fmt::format("Emulation vs the MUFU (ex2.approx.ftz.f32 on {}), same inputs", source),
          {"degree", out + " identical", "within 1 " + out + " ULP", "max " + out + " ULP",
           "max fp32 ULP", "at x"},
          {},
          {}};
  for (const auto& v : hw.vs_mufu) {
    json j = {{"degree", v.degree},
              {"n", v.n},
              {"identical_pct", 100.0 * v.identical / v.n},
              {"within_1ulp_pct", 100.0 * v.within_1ulp / v.n},
              {"max_ulp_out", v.max_ulp_out},
              {"max_ulp_f32", v.max_ulp_f32},
              {"max_ulp_f32_at", v.max_ulp_f32_at}};
    if (cfg.exhaustive)
      j["weighted"] = {{"identical_pct", 100.0 * v.widentical / v.wn},
                       {"within_1ulp_pct", 100.0 * v.wwithin_1ulp / v.wn}};
    vs.push_back(j);
    t.rows.push_back(
        {std::to_string(v.degree),
         cfg.exhaustive ? pct(v.identical, v.n) + " (weighted " + pct(v.widentical, v.wn) + ")"
                        : pct(v.identical, v.n),
         cfg.exhaustive ? pct(v.within_1ulp, v.n) + " (weighted " + pct(v.wwithin_1ulp, v.wn) + ")"
                        : pct(v.within_1ulp, v.n),
         fmt::format("{:.0f}", v.max_ulp_out), fmt::format("{:.0f}", v.max_ulp_f32),
         fmt::format("{:.9g}", v.max_ulp_f32_at)});
  }
  t.notes.push_back(fmt::format(
      "{} inputs in [{}, {}); {}. The paper: degree 3 'matches hardware to "
      "within 1 BF16 ULP on 99% of inputs'.",
      hw.mufu.n, cfg.lo, cfg.hi,
      cfg.exhaustive ? "every float32 (plain and value-weighted)" : "sampled as the CPU table"));
  Table u{fmt::format("MUFU ex2.approx.ftz.f32 on {} vs exact 2^x", source),
          {"function", "fp32 max rel", "at x", "fp32 mean rel", "max fp32 ULP", out + " identical",
           "within 1 ULP"},
          {},
          {}};
  u.rows.push_back(
      {"MUFU", fmt::format("{:.3g}", m.plain.max_rel), fmt::format("{:.9g}", m.plain.max_rel_at),
       fmt::format("{:.3g}", m.plain.mean_rel), fmt::format("{:.0f}", m.plain.max_ulp_f32),
       pct(m.plain.identical, m.plain.n), pct(m.plain.within_1ulp, m.plain.n)});
  json mj = {{"max_rel", m.plain.max_rel},
             {"max_rel_at", m.plain.max_rel_at},
             {"mean_rel", m.plain.mean_rel},
             {"max_ulp_f32", m.plain.max_ulp_f32},
             {"identical_pct", 100.0 * m.plain.identical / m.plain.n},
             {"within_1ulp_pct", 100.0 * m.plain.within_1ulp / m.plain.n}};
  if (cfg.exhaustive)
    mj["weighted"] = {{"mean_rel", m.weighted.mean_rel},
                      {"identical_pct", 100.0 * m.weighted.identical / m.weighted.n}};
  json res = {{"source", source},
              {"mufu_vs_exact", mj},
              {"emulation_vs_mufu", vs},
              {"ref_mp_fallbacks", hw.mufu.ref_mp_fallbacks}};
  res.update(extra);
  r.results[key] = res;
  r.params[key] = true;
  r.tables.push_back(std::move(u));
  r.tables.push_back(std::move(t));
}

}  // namespace fa4sim
