// rescale.h: the `fa4sim rescale` experiment. Draws score matrices, runs the online-softmax
// simulator (online_softmax.h) over every (distribution, tau, dtype), and compares with a float64
// softmax(S) @ V: how often rows and warps rescale, the output error, LSE error and saturation.
// Also the seed article's one-shot experiment (dominant P = 1 exactly vs 2^u).
//
// Modelling choices (docs/commands/rescale.md says which are the article's and which are ours):
//   * one V of shape (keys, d) shared by all rows, drawn once per seed, the same in the simulation
//     and the float64 reference; V is not quantised (float32 in the simulation);
//   * scores in log2 units (scale_log2 = 1) unless --scale; stored as float32 (the kernel's S);
//   * "peaked" = i.i.d. N(0, 6^2); "rise:TOTAL[:SIGMA]" = N(0, SIGMA^2) + TOTAL * k / keys;
//   * row_sum from the float32 P; P quantised round-to-nearest-even, subnormals kept, satfinite.
// Denominators: rows % = row rescales / (rows * (blocks - 1)), warps % = warp rescales /
// (warps * (blocks - 1)) with warps = ceil(rows / warp_rows) (a partial last warp votes once).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fa4sim/util/seed.h"
#include "fa4sim/core/online_softmax.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

struct ScoreDist {
  enum class Kind { normal, rise, peaked, file };
  Kind kind = Kind::normal;
  double sigma = 1.5;   // normal, rise (noise), peaked (6)
  double total = 0.0;   // rise: TOTAL * k / keys added to key k
  std::string path;     // file
  std::string label;    // canonical spelling, e.g. "normal:1.5", "rise:24", "peaked"
};

// Parses "normal:SIGMA", "rise:TOTAL[:SIGMA]", "peaked", "file:PATH.npy". Throws Error (exit 2)
// naming the option, with a did-you-mean for unknown kinds.
ScoreDist parse_score_dist(const std::string& s);

// Parses "exact", "mufu", "emuN" (N = 0..5), "schedule:F,R,S". Throws Error.
Exp2Choice parse_exp2_choice(const std::string& s);
std::string exp2_choice_name(const Exp2Choice& e);

// Which generator draws V and the scores.
struct RngChoice {
  enum class Kind { fa4sim, numpy };
  Kind kind = Kind::fa4sim;  // fa4sim: counter-based per-row streams (thread-count independent)
  uint64_t seed = kDefaultSeed;
};

enum class OrderChoice { auto_, reverse, forward };

struct RescaleConfig {
  std::vector<double> taus = {0.0, 8.0};
  std::vector<std::string> dtypes = {"bf16"};  // bf16, fp16, e4m3, e5m2 (and fp32: no cast)
  std::optional<double> max_offset;            // default: 8 for FP8, 0 otherwise
  std::vector<ScoreDist> dists;                // default: normal:1.5
  int rows = 256, keys = 8192, block = 128, d = 128;
  bool rows_set = false, keys_set = false;     // given explicitly (checked against a file's shape)
  std::string v_dist = "normal";               // normal: N(0,1); uniform: U[-1, 1)
  Exp2Choice exp2;                             // default mufu
  std::optional<double> scale;                 // softmax scale (natural units); none = log2 units
  OrderChoice order = OrderChoice::auto_;
  int warp_rows = 32;
  uint64_t seed = kDefaultSeed;
  int seeds = 1;
  RngChoice::Kind rng = RngChoice::Kind::fa4sim;
  bool allow_saturation = false;
  bool counts_only = false;                    // skip P @ V, the reference and the errors
  bool oneshot = true;                         // run the one-shot experiment
  int threads = 0;
};

// The kernel's per-dtype max_offset (docs/facts.md §2): 8 for FP8 inputs, 0 otherwise.
double default_max_offset(const Format& f);

// The kernel's assertion max_offset + tau < log2(dtype_max), with what saturates and by how much.
struct SafetyCheck {
  std::string dtype;
  double tau = 0, max_offset = 0, log2_max = 0;
  bool safe = true;
  double largest_safe_tau = 0;  // supremum: safe iff tau < largest_safe_tau (may be <= 0)
  std::string explanation;      // empty when safe
};
SafetyCheck safety_check(const Format& f, double tau, double max_offset);

// The block order a run uses: auto = the article's (forward) for the synthetic distributions it
// reproduces, the kernel's (reverse) for scores from a file (a kernel prediction).
BlockOrder resolve_order(OrderChoice c, const ScoreDist& dist);

// Validates everything (throws Error, exit 2, before any work), then runs. The safety check
// refuses unless cfg.allow_saturation.
void validate_rescale_config(const RescaleConfig& cfg);
Report run_rescale(const RescaleConfig& cfg);

// ---- building blocks, exposed for tests and for `fa4sim attention`

// Draws the (rows x keys) float32 scores of `dist` (not file) for `seed` with fa4sim's generator.
std::vector<float> draw_scores_fa4sim(const ScoreDist& dist, int rows, int keys, uint64_t seed,
                                      int threads);

struct RowBlockRunResult {
  RescaleCounts counts;
  std::vector<float> O;    // rows x d (empty when V is null)
  std::vector<float> lse;  // rows
};
// Runs the simulator over a whole (rows x keys) score matrix: row-blocks of params.warp_rows
// rows in parallel, key tiles of `block` keys in `order` (a ragged last block is processed with
// its valid keys only). V may be nullptr: counts only (RowBlockSim's counts_only path; O and lse
// are then not computed). Deterministic for any thread count.
// rescale_flags (optional, rows x ceil(keys / block), indexed by key block in key order): 1 where
// that row rescaled (acc_scale < 1) on visiting that block, else 0 (the first block visited: 0).
RowBlockRunResult simulate_rows(const SoftmaxParams& params, const float* S, int rows, int keys,
                                int block, BlockOrder order, const float* V, int d, int threads,
                                uint8_t* rescale_flags = nullptr);

// The simulator's parameters for one (dtype, tau) run of `cfg` (scale, max_offset, exp2, warps).
SoftmaxParams rescale_softmax_params(const RescaleConfig& cfg, const std::string& dtype, double tau);

// Refuses NaN and +inf scores (-inf marks a masked key): Error "<label>: score [r, k] is nan".
void check_scores(const float* s, int rows, int keys, const std::string& label);

// float64 softmax(S * scale_log2 in base 2) @ V and the natural-log LSE.
void softmax_reference(const float* S, int rows, int keys, float scale_log2, const float* V, int d,
                       std::vector<double>& O_ref, std::vector<double>& lse_ref, int threads);

}  // namespace fa4sim
