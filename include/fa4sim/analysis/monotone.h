// monotone.h: is a float32 -> float32 function monotone over every input? The exhaustive check
// behind the side result of docs/mufu.md: block-scaled attention kernels derive block scales from
// max(exp2(x)) = exp2(max(x)), which holds only where exp2 never steps down.
//
// Walks every non-NaN float32 input in value order (-inf .. -0, +0 .. +inf: 2^32 - 2^24 + 2
// inputs; the step -0 -> +0 is one of them), evaluates the function in chunks with its array form,
// and counts each step x -> next(x) whose result goes down (y(next) < y(x) as floats; -0 == +0).
// Steps with a NaN result on either side are not comparable and counted apart. Deterministic: the
// counts and the first steps do not depend on the thread count.
// Does not check: the MUFU itself (scripts/gpu/mufu_probe.cu does that on the GPU: 0 down-steps for
// ex2/rcp/lg2.approx over all inputs on the H200, data/gpu/mufu/2026-12-01).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "fa4sim/util/report.h"

namespace fa4sim {

struct MonotoneStep {
  uint32_t x = 0, next = 0;    // input bits, and the next float up in value order
  uint32_t y = 0, y_next = 0;  // result bits
};

struct MonotoneResult {
  uint64_t steps = 0;               // steps compared (both results non-NaN)
  uint64_t nan_steps = 0;           // steps with a NaN result on either side
  uint64_t down = 0;                // y(next) < y(x): non-monotone steps, everywhere
  uint64_t down_below = 0;          // ... those with next(x) < domain_hi (the function's domain)
  std::vector<MonotoneStep> first;  // the first kMonotoneFirst down-steps in value order
};
inline constexpr size_t kMonotoneFirst = 16;

// The number of non-NaN float32 inputs, and the k-th of them in value order (k = 0 is -inf).
inline constexpr uint64_t kOrderedFloats = (uint64_t(1) << 32) - (uint64_t(1) << 24) + 2;
uint32_t ordered_float_bits(uint64_t k);

// fn(in, out, n) evaluates the function on n inputs (the array form). `domain_hi`: the steps
// ending below it are counted in down_below as well. The steps walked are k -> k + 1 for the
// value-order indices k in [k_begin, k_end) (default: all of them, up to kOrderedFloats - 1).
using ArrayFn = std::function<void(const float* in, float* out, size_t n)>;
MonotoneResult monotone_steps(const ArrayFn& fn, float domain_hi, int threads, uint64_t k_begin = 0,
                              uint64_t k_end = kOrderedFloats - 1);

// monotone_steps of ex2_emu(x, degree) (exp2_emu.h), domain x < 128.
MonotoneResult ex2_emu_monotone(int degree, int threads);

// ex2_emu_monotone for each degree, as a report: one row per degree, the first down-steps.
Report ex2_emu_monotone_report(const std::vector<int>& degrees, int threads);

}  // namespace fa4sim
