// formats_ref.cpp: the table reference for the number formats and the exhaustive sweep.
// See formats_ref.h for why it is written this way.
#include "fa4sim/ref/formats_ref.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/progress.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

FormatTableRef::FormatTableRef(const Format& f)
    : total_bits_(1 + f.exp_bits + f.man_bits), has_inf_(f.has_inf) {
  if (total_bits_ > 16)
    throw Error(fmt::format("the table reference handles formats up to 16 bits, not {} ({})",
                            f.name, total_bits_));
  const uint32_t mags = 1u << (total_bits_ - 1);  // codes of the non-negative half
  const uint32_t exp_all = (1u << f.exp_bits) - 1u, man_all = (1u << f.man_bits) - 1u;
  for (uint32_t c = 0; c < mags; ++c) {
    const uint32_t e = c >> f.man_bits, m = c & man_all;
    const bool special =
        f.nan_encoding == NanEncoding::all_ones ? (e == exp_all && m == man_all) : e == exp_all;
    if (special) break;  // codes are ordered: everything from here on is inf or NaN
    // Subnormal: m * 2^(1 - bias - man_bits); normal: (2^man_bits + m) * 2^(e - bias - man_bits).
    values_.push_back(
        e == 0 ? std::ldexp(double(m), 1 - f.bias - f.man_bits)
               : std::ldexp(double((1u << f.man_bits) + m), int(e) - f.bias - f.man_bits));
  }
  max_code_ = uint32_t(values_.size() - 1);
  const size_t k = values_.size();
  values_.push_back(values_[k - 1] + (values_[k - 1] - values_[k - 2]));  // the phantom
  for (size_t i = 0; i + 1 < values_.size(); ++i)
    mids_.push_back((values_[i] + values_[i + 1]) / 2);
  // Float32 boundaries of each midpoint, by exact comparison in double: fl = the largest float32
  // <= mid (RNE cast, stepped down when it rounded up), capped at the largest finite float32.
  for (const double mid : mids_) {
    float fl = mid >= double(FLT_MAX) ? FLT_MAX : float(mid);
    if (double(fl) > mid) fl = std::nextafter(fl, 0.0f);
    uint32_t fb;
    std::memcpy(&fb, &fl, sizeof fb);
    const bool equal = double(fl) == mid;
    below_end_.push_back(equal ? fb - 1u : fb);
    tie_.push_back(equal ? fb : 0xFFFFFFFFu);
    after_.push_back(fb + 1u);
  }
  inf_code_ = has_inf_ ? exp_all << f.man_bits : 0u;
  nan_ = mags - 1u;  // docs/facts.md §3: 0x7F (FP8), 0x7FFF (16-bit)
}

uint32_t FormatTableRef::nearest_code(double x, uint32_t& hint) const {
  const uint32_t n = uint32_t(mids_.size());  // == max_code + 1, the phantom's index
  uint32_t i = hint;
  if (i > n || (i > 0 && !(x > mids_[i - 1])))  // not at or after the hint: search
    i = uint32_t(std::lower_bound(mids_.begin(), mids_.end(), x) - mids_.begin());
  while (i < n && x > mids_[i]) ++i;
  hint = i;
  // Now mids_[i-1] < x <= mids_[i]: the nearest is i, or on the midpoint the even of i, i+1.
  if (i < n && x == mids_[i] && (i & 1u)) return i + 1;
  return i;
}

uint32_t FormatTableRef::encode_ref(float x, Overflow ov) const {
  if (std::isnan(x)) return nan_;
  const bool neg = std::signbit(x);
  if (std::isinf(x)) return apply_sign_and_limits(max_code_ + 1, neg, ov);
  uint32_t hint = 0;
  return apply_sign_and_limits(nearest_code(std::fabs(double(x)), hint), neg, ov);
}

SweepResult sweep_all_float32(const Format& f, Overflow ov, int threads, bool progress) {
  const FormatTableRef ref(f);
  Stopwatch sw;
  constexpr uint64_t kMagnitudes = uint64_t(1) << 31;  // each checked with both signs
  constexpr uint64_t kChunk = uint64_t(1) << 21;
  constexpr size_t kBlock = 4096;
  constexpr size_t kKeep = 10;
  const uint64_t chunks = chunk_count(kMagnitudes, kChunk);
  std::vector<uint64_t> counts(chunks, 0);
  std::vector<std::vector<SweepMismatch>> firsts(chunks);
  Progress bar(fmt::format("{} {} all float32", f.name, overflow_name(ov)), kMagnitudes);
  parallel_chunks(
      kMagnitudes, kChunk, threads,
      [&](uint64_t c, uint64_t begin, uint64_t end) {
        std::array<float, kBlock> pos, neg;
        std::array<uint32_t, kBlock> out_pos, out_neg, exp_pos, exp_neg;
        uint32_t hint = UINT32_MAX;  // first call binary-searches
        uint64_t bad = 0;
        // Each magnitude yields two inputs: +a then -a. Mismatches are recorded in input-bits
        // order within the chunk (positive half first), merged in chunk order below.
        std::vector<SweepMismatch> neg_bad;
        for (uint64_t b0 = begin; b0 < end; b0 += kBlock) {
          const size_t nb = size_t(std::min<uint64_t>(kBlock, end - b0));
          for (size_t k = 0; k < nb; ++k) {
            pos[k] = f32_from_bits(uint32_t(b0 + k));
            neg[k] = f32_from_bits(uint32_t(b0 + k) | 0x80000000u);
          }
          encode_array(f, std::span<const float>(pos.data(), nb), std::span(out_pos.data(), nb),
                       ov);
          encode_array(f, std::span<const float>(neg.data(), nb), std::span(out_neg.data(), nb),
                       ov);
          // Expected codes from the reference (finite magnitudes are the common case).
          for (size_t k = 0; k < nb; ++k) {
            const uint32_t a = uint32_t(b0 + k);
            if (a < 0x7F800000u) {
              const uint32_t code = ref.nearest_code_bits(a, hint);
              exp_pos[k] = ref.apply_sign_and_limits(code, false, ov);
              exp_neg[k] = ref.apply_sign_and_limits(code, true, ov);
            } else if (a == 0x7F800000u) {
              exp_pos[k] = ref.encode_ref(pos[k], ov);
              exp_neg[k] = ref.encode_ref(neg[k], ov);
            } else {
              exp_pos[k] = exp_neg[k] = ref.nan_code();
            }
          }
          uint32_t block_bad = 0;  // vectorised count, details only when something differs
          for (size_t k = 0; k < nb; ++k)
            block_bad += uint32_t(out_pos[k] != exp_pos[k]) + uint32_t(out_neg[k] != exp_neg[k]);
          if (block_bad == 0) continue;
          bad += block_bad;
          for (size_t k = 0; k < nb; ++k) {
            const uint32_t a = uint32_t(b0 + k);
            if (out_pos[k] != exp_pos[k] && firsts[c].size() < kKeep)
              firsts[c].push_back({a, exp_pos[k], out_pos[k]});
            if (out_neg[k] != exp_neg[k] && neg_bad.size() < kKeep)
              neg_bad.push_back({a | 0x80000000u, exp_neg[k], out_neg[k]});
          }
        }
        counts[c] = bad;
        firsts[c].insert(firsts[c].end(), neg_bad.begin(), neg_bad.end());
      },
      [&](uint64_t done) {
        if (progress) bar.update(done);
      });
  SweepResult r;
  r.format = f.name;
  r.overflow = ov;
  r.inputs = 2 * kMagnitudes;
  r.threads = threads > 0 ? threads : default_threads();
  std::vector<SweepMismatch> all;
  for (uint64_t c = 0; c < chunks; ++c) {
    r.mismatches += counts[c];
    all.insert(all.end(), firsts[c].begin(), firsts[c].end());
  }
  std::sort(all.begin(), all.end(), [](const SweepMismatch& a, const SweepMismatch& b) {
    return a.input_bits < b.input_bits;
  });
  if (all.size() > kKeep) all.resize(kKeep);
  r.first = all;
  r.seconds = sw.seconds();
  return r;
}

}  // namespace fa4sim
