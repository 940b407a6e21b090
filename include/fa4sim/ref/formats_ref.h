// formats_ref.h: an independent reference for the float32 -> narrow-format conversions of
// formats.h (role `_ref`, docs/style.md §2), and the exhaustive sweep that compares the two.
//
// Written differently on purpose: no bit arithmetic on the float32 input. The reference lists
// every non-negative finite value of the format, in code order, as a double computed from the
// format's parameters with std::ldexp; appends one phantom value max_finite + ulp(max) (the value
// an unbounded exponent range would have next, e.g. 480 for E4M3); and rounds |x| to the nearest
// table entry by exact comparison of doubles against the midpoints of neighbours, ties to the
// even code. Landing on the phantom, or x = +-inf, is an overflow. The special-value rules are
// restated from docs/facts.md §3, not taken from formats.h:
//   satfinite -> sign | max finite code;  ieee -> sign | inf (formats with inf), canonical NaN
//   (E4M3FN); NaN input -> canonical NaN = every bit but the sign set (0x7F, 0x7FFF).
// Does not model: fp32 as a target (the table would have 2^31 entries; encode to fp32 is the
// identity on finite inputs and is tested directly).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fa4sim/core/formats.h"

namespace fa4sim {

class FormatTableRef {
 public:
  explicit FormatTableRef(const Format& f);  // f: bf16, fp16, e4m3, e5m2 or another <= 16-bit one
  // Nearest by binary search over the midpoints: slow-ish, for spot checks.
  uint32_t encode_ref(float x, Overflow ov) const;
  // The rounded code of a non-negative finite magnitude; max_code + 1 means overflow.
  // `hint` is the index the previous call ended on (start with 0): for inputs in increasing
  // order the search walks forward from it, O(1) per input; otherwise it binary-searches.
  uint32_t nearest_code(double x, uint32_t& hint) const;
  // The same for the magnitude bits a < 0x7F800000 of a float32, through float32 boundaries
  // derived once from the midpoints by exact comparison (below_end_, tie_, after_): for a sweep
  // in increasing order this is one integer compare per input. Inline: it is the sweep's loop.
  uint32_t nearest_code_bits(uint32_t a, uint32_t& hint) const {
    const uint32_t n = uint32_t(mids_.size());
    uint32_t i = hint;
    if (i > n || (i > 0 && a < after_[i - 1]))  // behind the hint: restart by binary search
      i = uint32_t(std::upper_bound(after_.begin(), after_.end(), a) - after_.begin());
    while (i < n && a > below_end_[i]) {
      if (a == tie_[i]) {  // exactly the midpoint: the even code of i, i + 1
        hint = i;
        return (i & 1u) ? i + 1 : i;
      }
      ++i;
    }
    hint = i;
    return i;
  }
  // The overflow and sign rules (restated from docs/facts.md §3, see the file comment).
  uint32_t apply_sign_and_limits(uint32_t code, bool negative, Overflow ov) const {
    const uint32_t sign = negative ? 1u << (total_bits_ - 1) : 0u;
    if (code <= max_code_) return sign | code;
    if (ov == Overflow::satfinite) return sign | max_code_;
    return has_inf_ ? (sign | inf_code_) : nan_;
  }
  uint32_t nan_code() const { return nan_; }
  const std::vector<double>& values() const { return values_; }

 private:
  int total_bits_;
  bool has_inf_;
  uint32_t max_code_ = 0, inf_code_ = 0, nan_ = 0;
  std::vector<double> values_;  // finite values by code 0..max_code, then the phantom
  std::vector<double> mids_;    // mids_[i] = (values_[i] + values_[i+1]) / 2 (exact)
  // Per midpoint, as float32 magnitude bits: the last float32 below it, the float32 equal to it
  // (0xFFFFFFFF when it is not a float32), and the first float32 above it.
  std::vector<uint32_t> below_end_, tie_, after_;
};

struct SweepMismatch {
  uint32_t input_bits;
  uint32_t expected;  // reference
  uint32_t actual;    // encode_array
};

struct SweepResult {
  std::string format;
  Overflow overflow;
  uint64_t inputs = 0;  // 2^32
  uint64_t mismatches = 0;
  std::vector<SweepMismatch> first;  // the first (lowest input bits) up to 10
  double seconds = 0;
  int threads = 1;
};

// Converts all 2^32 float32 inputs with encode_array (the fast path) and compares every result
// with FormatTableRef. threads 0 = all cores. Progress bar on a TTY when `progress`.
SweepResult sweep_all_float32(const Format& f, Overflow ov, int threads, bool progress = false);

}  // namespace fa4sim
