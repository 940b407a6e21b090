// monotone.cpp: the exhaustive monotonicity walk of include/fa4sim/analysis/monotone.h.
#include "fa4sim/analysis/monotone.h"

#include <algorithm>
#include <span>

#include <fmt/format.h>

#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/parallel.h"

namespace fa4sim {

namespace {

constexpr uint64_t kNegatives = 0x7F800001u;  // -inf .. -0, in value order
constexpr uint64_t kChunk = uint64_t(1) << 20;
// Each chunk is walked in blocks of kWalkBlock steps, so the inputs and results of a block stay in the
// core's cache; the counts and the order of the first down-steps are those of the chunk.
constexpr uint64_t kWalkBlock = uint64_t(1) << 13;

struct Part {
  uint64_t steps = 0, nan_steps = 0, down = 0, down_below = 0;
  std::vector<MonotoneStep> first;
};

// in[i] = the input of value-order index k + i, for i in [0, n).
void fill_value_order(uint64_t k, uint64_t n, float* in) {
  const uint64_t neg = k < kNegatives ? std::min(n, kNegatives - k) : 0;
  for (uint64_t i = 0; i < neg; ++i)
    in[i] = f32_from_bits(static_cast<uint32_t>(0xFF800000u - (k + i)));
  for (uint64_t i = neg; i < n; ++i)
    in[i] = f32_from_bits(static_cast<uint32_t>(k + i - kNegatives));
}

// Steps k -> k + 1 for k in [b, e) (value-order indices).
void walk(const ArrayFn& fn, float domain_hi, uint64_t b, uint64_t e, Part& p) {
  thread_local std::vector<float> in(kWalkBlock + 1), out(kWalkBlock + 1);
  for (uint64_t s = b; s < e; s += kWalkBlock) {
    const uint64_t m = std::min(kWalkBlock, e - s);  // steps s .. s + m - 1: inputs s .. s + m
    fill_value_order(s, m + 1, in.data());
    fn(in.data(), out.data(), m + 1);
    // Counting without branches (the loop vectorises); a second pass over a block that has a
    // down-step finds them in order.
    uint64_t nan = 0, down = 0;
    for (uint64_t i = 0; i < m; ++i) {
      const float y = out[i], yn = out[i + 1];
      nan += static_cast<uint64_t>((y != y) | (yn != yn));
      down += static_cast<uint64_t>(yn < y);  // false when either is NaN
    }
    p.nan_steps += nan;
    p.steps += m - nan;
    p.down += down;
    if (down == 0) continue;
    for (uint64_t i = 0; i < m; ++i) {
      const float y = out[i], yn = out[i + 1];
      if (!(yn < y)) continue;
      if (in[i + 1] < domain_hi) ++p.down_below;
      if (p.first.size() < kMonotoneFirst)
        p.first.push_back({f32_bits(in[i]), f32_bits(in[i + 1]), f32_bits(y), f32_bits(yn)});
    }
  }
}

std::string hex(uint32_t v) { return fmt::format("0x{:08X}", v); }

}  // namespace

uint32_t ordered_float_bits(uint64_t k) {
  return k < kNegatives ? static_cast<uint32_t>(0xFF800000u - k)
                        : static_cast<uint32_t>(k - kNegatives);
}

MonotoneResult monotone_steps(const ArrayFn& fn, float domain_hi, int threads, uint64_t k_begin,
                              uint64_t k_end) {
  if (k_begin > k_end || k_end > kOrderedFloats - 1)
    throw Error(fmt::format("monotone_steps: steps [{}, {}) outside [0, {})", k_begin, k_end,
                            kOrderedFloats - 1),
                "give value-order indices of float32 inputs");
  const uint64_t n_steps = k_end - k_begin;
  std::vector<Part> parts(chunk_count(n_steps, kChunk));
  parallel_chunks(n_steps, kChunk, threads, [&](uint64_t c, uint64_t b, uint64_t e) {
    walk(fn, domain_hi, k_begin + b, k_begin + e, parts[c]);
  });
  MonotoneResult r;
  for (const Part& p : parts) {
    r.steps += p.steps;
    r.nan_steps += p.nan_steps;
    r.down += p.down;
    r.down_below += p.down_below;
    for (const auto& s : p.first)
      if (r.first.size() < kMonotoneFirst) r.first.push_back(s);
  }
  return r;
}

MonotoneResult ex2_emu_monotone(int degree, int threads) {
  if (degree < 0 || degree > kExp2MaxDegree)
    throw Error(fmt::format("exp2 emulation degree {} does not exist", degree), "valid: 0..5");
  return monotone_steps(
      [degree](const float* in, float* out, size_t n) {
        ex2_emu(std::span<const float>(in, n), std::span<float>(out, n), degree);
      },
      128.0f, threads);
}

Report ex2_emu_monotone_report(const std::vector<int>& degrees, int threads) {
  Report r;
  r.command = "ex2_emu monotonicity";
  r.threads = threads;
  r.params = {{"degree", degrees}};
  Table t{
      "ex2_emu: steps between neighbouring float32 inputs (value order, all non-NaN inputs) "
      "where the result goes down",
      {"degree", "steps compared", "NaN steps", "down, x < 128", "down, x >= 128"},
      {},
      {}};
  Table firsts{"First down-steps (x -> next float up: result bits)",
               {"degree", "x", "next", "ex2_emu(x)", "ex2_emu(next)"},
               {},
               {}};
  json per = json::array();
  for (int d : degrees) {
    const MonotoneResult m = ex2_emu_monotone(d, threads);
    json first = json::array();
    for (const auto& s : m.first) {
      first.push_back(
          {{"x", hex(s.x)}, {"next", hex(s.next)}, {"y", hex(s.y)}, {"y_next", hex(s.y_next)}});
      firsts.rows.push_back({std::to_string(d),
                             fmt::format("{} ({:g})", hex(s.x), f32_from_bits(s.x)), hex(s.next),
                             fmt::format("{} ({:g})", hex(s.y), f32_from_bits(s.y)),
                             fmt::format("{} ({:g})", hex(s.y_next), f32_from_bits(s.y_next))});
    }
    per.push_back({{"degree", d},
                   {"steps", m.steps},
                   {"nan_steps", m.nan_steps},
                   {"down", m.down},
                   {"down_below_128", m.down_below},
                   {"first_down", first}});
    t.rows.push_back({std::to_string(d), std::to_string(m.steps), std::to_string(m.nan_steps),
                      std::to_string(m.down_below), std::to_string(m.down - m.down_below)});
  }
  t.notes.push_back(
      "x >= 128 lies outside the emulation's domain (exp2_emu.h: only floor(x) mod 512 "
      "survives the splice); NaN steps are not comparable.");
  r.results = {{"degrees", per}};
  r.tables.push_back(std::move(t));
  if (!firsts.rows.empty()) r.tables.push_back(std::move(firsts));
  return r;
}

}  // namespace fa4sim
