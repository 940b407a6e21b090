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

#include "fa4sim/analysis/row_sim.h"
#include "fa4sim/core/online_softmax.h"
#include "fa4sim/util/report.h"
#include "fa4sim/util/seed.h"

namespace fa4sim {

struct ScoreDist {
  enum class Kind { normal, rise, peaked, file };
  Kind kind = Kind::normal;
  double sigma = 1.5;  // normal, rise (noise), peaked (6)
  double total = 0.0;  // rise: TOTAL * k / keys added to key k
  std::string path;    // file
  std::string label;   // canonical spelling, e.g. "normal:1.5", "rise:24", "peaked"
};

// Parses "normal:SIGMA", "rise:TOTAL[:SIGMA]", "peaked", "file:PATH.npy". Throws Error (exit 2)
// naming the option, with a did-you-mean for unknown kinds.
ScoreDist parse_score_dist(const std::string& s);

// Which generator draws V and the scores.
struct RngChoice {
  enum class Kind { fa4sim, numpy };
  Kind kind = Kind::fa4sim;  // fa4sim: counter-based per-row streams (thread-count independent)
  uint64_t seed = kDefaultSeed;
};

enum class OrderChoice { auto_, reverse, forward };

struct RescaleConfig {
  std::vector<double> taus = {0.0, 8.0};
  std::vector<const Format*> dtypes = {&kBF16};  // formats_of(FormatRole::p_cast)
  std::optional<double> max_offset;              // default: 8 for FP8, 0 otherwise
  std::vector<ScoreDist> dists;                  // default: normal:1.5
  int rows = 256, keys = 8192, block = 128, d = 128;
  bool rows_set = false, keys_set = false;  // given explicitly (checked against a file's shape)
  std::string v_dist = "normal";            // normal: N(0,1); uniform: U[-1, 1)
  Exp2Choice exp2;                          // default mufu
  std::optional<double> scale;              // softmax scale (natural units); none = log2 units
  OrderChoice order = OrderChoice::auto_;
  int warp_rows = 32;
  uint64_t seed = kDefaultSeed;
  int seeds = 1;
  RngChoice::Kind rng = RngChoice::Kind::fa4sim;
  bool allow_saturation = false;
  bool counts_only = false;  // skip P @ V, the reference and the errors
  bool oneshot = true;       // run the one-shot experiment
  int threads = 0;
};

// The kernel's per-dtype max_offset (docs/facts.md §2): 8 for FP8 inputs, 0 otherwise.
double default_max_offset(const Format& f);

// The block order a run uses: auto = the article's (forward) for the synthetic distributions it
// reproduces, the kernel's (reverse) for scores from a file (a kernel prediction).
BlockOrder resolve_order(OrderChoice c, const ScoreDist& dist);

// Validates everything (throws Error, exit 2, before any work). The safety check refuses unless
// cfg.allow_saturation.
void validate_rescale_config(const RescaleConfig& cfg);

// One (distribution, tau, dtype) run's metrics, one entry per seed in seed order (rel_l2,
// max_abs and lse_max_err stay empty with counts_only).
struct RescaleRunSamples {
  size_t dist = 0, tau = 0, dtype = 0;  // indices into RescaleResult::dists, cfg.taus, cfg.dtypes
  std::vector<double> rows_pct, warps_pct, rel_l2, max_abs, lse_max_err, saturated, saturated_pct;
};

// What the experiment measured, before any rendering.
struct RescaleResult {
  std::vector<ScoreDist> dists;  // cfg.dists, or the default normal:1.5 when none was given
  int rows = 0, keys = 0;        // as run: a --dist file's shape where --rows/--keys were not given
  int threads = 0;               // as run (cfg.threads, or all cores)
  std::vector<RescaleRunSamples> runs;          // dists x taus x dtypes, in that nesting
  std::vector<double> oneshot_p1, oneshot_p2u;  // the one-shot experiment per seed (empty: not run)
};

// Validates (as validate_rescale_config), reads the --dist files, then runs every seed.
RescaleResult compute_rescale(const RescaleConfig& cfg);
// The report: params = every option, results as documented in docs/commands/rescale.md, tables.
Report rescale_report(const RescaleConfig& cfg, const RescaleResult& r);
// rescale_report(cfg, compute_rescale(cfg)).
Report run_rescale(const RescaleConfig& cfg);

// ---- building blocks, exposed for tests and for the Python module

// Draws the (rows x keys) float32 scores of `dist` (not file) for `seed` with fa4sim's generator.
std::vector<float> draw_scores_fa4sim(const ScoreDist& dist, int rows, int keys, uint64_t seed,
                                      int threads);

// The simulator's parameters for one (dtype, tau) run of `cfg` (scale, max_offset, exp2, warps).
SoftmaxParams rescale_softmax_params(const RescaleConfig& cfg, const Format& dtype, double tau);
// The check `--dist file:` scores get (Note [Score range] in online_softmax.h), on a caller's
// rows x keys matrix (the Python module's online_softmax): the same refusals (scaled scores
// beyond 2^24, rows whose every key is -inf) with the same messages; `label` names the input.
void check_file_scores(const float* S, int rows, int keys, const RescaleConfig& cfg,
                       const std::string& label);

}  // namespace fa4sim
