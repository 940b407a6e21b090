// fit.h: `fa4sim fit`, designing the float32 polynomial p(f) ~ 2^f on [0, 1) of ex2_emulation
// for what the kernel does with its result (rounding to bf16 / fp16), and proving what it gets.
//
// Four stages (src/analysis/fit.cpp):
//   1. Start: the relative-error minimax (Remez) polynomial of 2^f on [0, 1], computed in
//      Boost.Multiprecision (cpp_bin_float_50); with fix_c0, p(0) = 1 exactly (c0 = 1, as
//      upstream's Sollya fit). For the bf16/fp16-identical and fp32-meanrel objectives a second
//      start, the L1 fit (Note [Identical rate and L1]), also in multiprecision.
//   2. Rounding to float32: to nearest, Babai's nearest plane in the LLL-reduced coefficient
//      lattice (fpminimax's rounding), and every coefficient rounded down or up (2^n corners).
//   3. Lattice search (Note [Lattice moves]): moves of +-s along the axes and the LLL-reduced
//      vectors, s doubling when one move wins twice in a row and halving when none improves,
//      until no move of 1 ulp improves; ranked on proxy ranges (Note [Proxy and exact scores]).
//   4. The best 5 proxy candidates (and upstream's) scored exhaustively; the exact best wins.
// Every candidate is scored exactly (on its ranges) by the exhaustive analysis of `fa4sim exp2 --exhaustive`
// (run_exp2 with the candidate's coefficients through ex2_emu_poly, the bit-exact model):
//   fp32-maxrel   max relative error over every float f of [0, 1) (the polynomial's own error,
//                 what Sollya's fpminimax minimises), tie-break: fp32-meanrel;
//   fp32-meanrel  value-weighted mean relative error over [0, 1);
//   bf16-identical / fp16-identical   value-weighted share of the range where the emulated
//                 exp2 rounded to bf16 / fp16 equals the correctly rounded 2^x (maximised),
//                 tie-break: smaller max ULP;
//   bf16-max-ulp  the largest bf16 ULP distance over the range, then the share within 1 ULP,
//                 then the identical share.
// Deterministic: the same inputs give the same coefficients for any thread count (run_exp2 is).
//
// Note [Identical rate and L1]: p(f) and 2^f lie in [1, 2), where the bf16 (fp16) spacing is one
// constant u. If 2^f sits anywhere in its bf16 cell with equal probability, p(f) = 2^f + e rounds
// to a different bf16 value with probability |e| / u (for |e| < u). Value weighting makes f
// (nearly) uniform on [0, 1), so the mismatch share is about the integral of |p - 2^f| / u: the
// polynomial that maximises the identical rate is close to the L1 (least absolute) fit of 2^f,
// not the minimax one. The L1 start is computed by iteratively reweighted least squares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fa4sim/util/report.h"

namespace fa4sim {

enum class FitObjective { fp32_maxrel, fp32_meanrel, bf16_identical, fp16_identical, bf16_max_ulp };

inline constexpr int kFitMinDegree = 1;
inline constexpr int kFitMaxDegree = 5;
// The best proxy candidates that are scored exhaustively at the end (with upstream's: one pass).
inline constexpr size_t kFitFinalists = 5;

// "fp32-maxrel" etc.; parse throws the usual unknown-choice Error (with did-you-mean).
const std::vector<std::string>& fit_objective_names();
std::string fit_objective_name(FitObjective o);
FitObjective parse_fit_objective(const std::string& s);

struct FitConfig {
  int degree = 3;
  FitObjective objective = FitObjective::fp32_maxrel;
  double lo = -20.0, hi = 8.0;  // the softmax range of the bf16/fp16 objectives
  bool fix_c0 = false;          // c0 = 1 exactly (p(0) = 1, as upstream)
  bool minimax_only = false;    // stop after stage 1 (the multiprecision minimax fit)
  int threads = 0;
  bool progress = true;  // stderr, only when it is a TTY
  // The result's and upstream's figures for every objective (PolyScore), which costs up to two
  // more exhaustive passes over [lo, hi) after the search; false keeps only the figures of the pass
  // the objective was decided on (the others NaN), for callers that need the objective alone.
  bool score_every_objective = true;
};

void validate(const FitConfig& c);

// Every objective's value for one float32 polynomial, all exhaustive.
struct PolyScore {
  double fp32_max_rel = 0, fp32_max_rel_at = 0, fp32_mean_rel = 0;            // floats of [0, 1)
  double bf16_identical_pct = 0, bf16_within_1ulp_pct = 0, bf16_max_ulp = 0;  // weighted, range
  double fp16_identical_pct = 0, fp16_within_1ulp_pct = 0, fp16_max_ulp = 0;
};
PolyScore score_poly(const std::vector<float>& c, double lo, double hi, int threads);
// The same for several polynomials at once (they share each exhaustive pass's reference).
std::vector<PolyScore> score_polys(const std::vector<std::vector<float>>& cs, double lo, double hi,
                                   int threads);

// The relative minimax polynomial of 2^f on [0, 1] (c0 = 1 when fix_c0), as decimal strings of
// 30 significant digits, and its max relative error (equioscillation level).
struct Minimax {
  std::vector<std::string> coeffs;
  std::vector<double> coeffs_d;
  double max_rel = 0;
  int iterations = 0;
};
Minimax remez_exp2(int degree, bool fix_c0);
// The L1 fit of 2^f on [0, 1] (Note [Identical rate and L1]), same form.
Minimax l1_fit_exp2(int degree, bool fix_c0);

struct FitResult {
  Minimax minimax;
  std::vector<float> coeffs;      // the result (degree + 1 float32 values)
  PolyScore score;                // of coeffs
  PolyScore upstream;             // of POLY_EX2[degree]
  uint64_t candidates = 0;        // polynomials scored (proxy + exact)
  uint64_t proxy_candidates = 0;  // scored on the proxy ranges (Note [Proxy and exact scores])
  uint64_t exact_candidates = 0;  // scored exhaustively on the objective's full range
  int rounds = 0;                 // rounds of the lattice pattern search
  double objective_value = 0;     // of coeffs, in the objective's own unit
  double upstream_objective = 0;
};

FitResult run_fit(const FitConfig& cfg);
Report fit_report(const FitConfig& cfg, const FitResult& r);

// Parses "c0,c1,..." or the text of a file with the numbers separated by commas, blanks or new
// lines ('#' starts a comment): 1 to 6 finite numbers (decimal or hex float), each rounded to
// the nearest float32 (must stay finite). Throws Error (exit 2) naming `what`.
std::vector<float> parse_coeff_list(const std::string& what, const std::string& text);
// `spec` is a list if it contains a comma or parses as one number, otherwise a file name.
std::vector<float> load_coeffs(const std::string& what, const std::string& spec);

}  // namespace fa4sim
