// exp2_analysis.h: the error analysis behind `fa4sim exp2` and the report's exp2 section.
//
// Measures a float32 exp2 implementation (by default the bit-exact ex2_emu; a GPU backend can
// pass its own, e.g. MUFU ex2.approx values) against 2^x, per polynomial degree:
//   * float32 relative error (max, where, mean) and the float32 ULP distance to the correctly
//     rounded 2^x;
//   * after rounding both to the out dtype (bf16 or fp16, round to nearest even, subnormals kept,
//     overflow to inf: `cvt.rn`): how often the emulated value equals the correctly rounded
//     reference, how often it is within 1 ULP, and the largest ULP distance.
// Inputs come from uniform-in-value sampling (what a softmax sees), uniform sampling over the
// float32 bit patterns in the range, or every float32 in the range (--exhaustive). Exhaustive
// runs also give value-weighted statistics (Note [Value weights]).
//
// Note [Value weights]: uniform-in-value sampling draws a real u in [lo, hi) and rounds it to the
// nearest float32 (clamped into the range). A float x is therefore drawn with probability
// |[lo, hi) ∩ (mid(x-, x), mid(x, x+))| / (hi - lo), where x- and x+ are its float neighbours.
// Weighting every float of the range with that width gives the exact expectation of each sampled
// statistic: the limit of infinitely many samples, with no sampling noise. (-0 and +0 each stand
// for half of the zero interval.)
//
// Determinism: inputs are cut into fixed chunks of kExp2Chunk (independent of --threads); each
// chunk's random inputs come from a counter-based generator keyed by (seed, sample index); chunk
// results are combined in chunk order. Results are bit-identical for every thread count.
// Streaming: nothing is allocated per sample; memory is O(threads * block), so any allowed
// --samples value runs (kExp2MaxSamples bounds the run time, not the memory).
//
// Reference: exp2_ref (double, rel. error < 1e-15). A rounding decision (fp32 and out dtype)
// whose double reference lies within 2e-15 (relative) of a rounding midpoint is re-decided with
// the multiprecision reference (results.ref_mp_fallbacks counts them), so every decision is that
// of the exact 2^x. `reference = mp` uses the multiprecision value for every input (slow; audits).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fa4sim/util/seed.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

enum class Exp2Sampling { uniform, bits };
enum class Exp2Reference { f64, mp };

// Largest --samples accepted: about 5-10 minutes on a 2-core machine. More samples than that
// only shrink sampling noise that --exhaustive removes entirely (and faster).
inline constexpr uint64_t kExp2MaxSamples = 100'000'000'000ull;
// The range must lie in [kExp2RangeMin, kExp2RangeMax]: the double reference's domain below,
// and above, 128, where ex2_emulation's output is garbage by design (see exp2_emu.h).
inline constexpr double kExp2RangeMin = -1022.0;
inline constexpr double kExp2RangeMax = 128.0;
inline constexpr uint64_t kExp2Chunk = 1u << 16;  // inputs per chunk (fixed: determinism)

struct Exp2Config {
  std::vector<int> degrees{3, 4, 5};
  double lo = -20.0, hi = 8.0;  // inputs in [lo, hi)
  uint64_t samples = 4194304;
  Exp2Sampling sampling = Exp2Sampling::uniform;
  bool exhaustive = false;
  std::string out_dtype = "bf16";  // bf16 | fp16
  uint64_t seed = kDefaultSeed;
  int threads = 0;  // 0 = all cores
  Exp2Reference reference = Exp2Reference::f64;
  bool progress = true;  // progress bar on stderr (only drawn when stderr is a TTY)
  // Uniform sampling with the built-in emulator runs one fused loop per block when the build has
  // AVX2 (src/analysis/exp2_analysis.cpp, Note [Fused sampled pass]), and exhaustive runs take
  // the constant reference for tiny inputs (Note [Tiny x]); false forces the plain passes, whose
  // results are the same bits (tests compare the two).
  bool fused_sampling = true;
  // Non-empty: analyse this float32 polynomial (c0, c1, ...) instead of upstream's POLY_EX2
  // (`fa4sim exp2 --coeffs`); `degrees` must then be {coeffs.size() - 1}.
  std::vector<float> coeffs{};
};

// Throws fa4sim::Error (exit code 2) with a hint for any invalid field. run_exp2 calls it too.
void validate(const Exp2Config& cfg);

// The function under test: y[i] = exp2 of x[i] for one degree (y.size() == x.size()). Results
// must be +0 or positive finite floats for x < 128 (true for ex2_emu and for the MUFU).
using Exp2Function = std::function<void(int degree, std::span<const float> x, std::span<float> y)>;
Exp2Function exp2_emu_function();  // the CPU emulator, array form

// Statistics over a set of inputs. In `plain`, every input counts 1 (n = count); in `weighted`,
// every float counts with its value weight (n = total width = hi - lo).
struct Exp2Stats {
  double n = 0;
  double max_rel = -1.0;  // float32 relative error |y - 2^x| / 2^x
  float max_rel_at = 0;   // the input x carrying max_rel (first one in input order)
  double mean_rel = 0;
  double max_ulp_f32 = 0;  // |y - RN_fp32(2^x)| in float32 ULPs (ordered bit distance)
  double identical = 0;    // count (or weight) with RN_out(y) == RN_out(2^x)
  double within_1ulp = 0;  // count (or weight) with distance <= 1 ULP of the out dtype
  double max_ulp = 0;      // largest out-dtype ULP distance
};

struct Exp2DegreeResult {
  int degree = 0;
  Exp2Stats plain;
  Exp2Stats weighted;  // only filled for exhaustive runs
};

struct Exp2Result {
  uint64_t n = 0;            // inputs evaluated
  uint64_t float_count = 0;  // float32 values in [lo, hi)
  uint64_t ref_mp_fallbacks = 0;
  bool weighted = false;
  std::vector<Exp2DegreeResult> degrees;
};

// Runs the analysis (validates first). `fn` defaults to exp2_emu_function().
Exp2Result run_exp2(const Exp2Config& cfg, const Exp2Function& fn = {});

// The report (params = every option, results as documented in docs/commands/exp2.md, tables for humans).
Report exp2_report(const Exp2Config& cfg, const Exp2Result& r);

// Number of float32 values x with lo <= x < hi (both zeros count when 0 is inside).
uint64_t exp2_float_count(double lo, double hi);

// float32 <-> ordered key: consecutive floats have consecutive keys (..., -min_sub -> -2,
// -0 -> -1, +0 -> 0, +min_sub -> 1, ...); the order of exhaustive runs.
int64_t key_of(float x);
float float_of_key(int64_t k);

// Ordered index of RN_fmt(v) for v >= 0 (fmt = "fp32", "bf16" or "fp16"): equals the format's bit
// pattern for every finite result, the inf pattern on overflow. Exposed for tests.
double exp2_rounded_index(double v, const std::string& fmt);

}  // namespace fa4sim
