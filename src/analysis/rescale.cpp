// rescale.cpp: the `fa4sim rescale` experiment (see rescale.h): compute_rescale draws the inputs
// and runs the simulator and the reference, rescale_report renders what it measured.
#include "fa4sim/analysis/rescale.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "fa4sim/core/constants.h"
#include "fa4sim/analysis/row_block_sim.h"
#include "fa4sim/core/exp2_schedule.h"
#include "fa4sim/ref/softmax_ref.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/npy.h"
#include "fa4sim/util/numpy_rng.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/parse.h"
#include "fa4sim/util/row_stream.h"

namespace fa4sim {

namespace {

std::string num_label(double v) { return fmt::format("{:g}", v); }

// The simulator's scale_log2: --softmax-scale * log2(e) in float32, or 1 (scores in log2 units).
float scale_log2_of(const RescaleConfig& cfg) {
  return cfg.scale ? float(*cfg.scale * kLog2e) : 1.0f;
}

// `f` when P can be converted to it (formats_of(FormatRole::p_cast)); Error otherwise.
const Format& p_format(const Format* f) {
  if (f != nullptr && plays(*f, FormatRole::p_cast)) return *f;
  throw Error(fmt::format("unknown --dtype '{}'", f != nullptr ? f->name : ""),
              fmt::format("valid: {}", fmt::join(format_names(FormatRole::p_cast), ", ")));
}

// ---- fa4sim's own generator (row_stream.h): V and the score matrices, row by row

// Fills rows x cols with `gen(stream, r, c)` per row, rows in parallel.
template <class Fn>
void fill_rows(std::vector<float>& out, int rows, int cols, int threads, Fn&& row_fn) {
  out.assign(size_t(rows) * size_t(cols), 0.0f);
  parallel_chunks(uint64_t(rows), 16, threads, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t r = b; r < e; ++r) row_fn(int(r), out.data() + r * uint64_t(cols));
  });
}

// Score value of key k from a standard normal draw z (and the dist's parameters).
double score_from_normal(const ScoreDist& d, double z, int k, int keys) {
  switch (d.kind) {
    case ScoreDist::Kind::rise: return d.sigma * z + d.total * double(k) / double(keys);
    case ScoreDist::Kind::peaked: return 6.0 * z;
    default: return d.sigma * z;
  }
}

std::vector<float> draw_v_fa4sim(const std::string& v_dist, int keys, int d, uint64_t seed,
                                 const std::string& stream, int threads) {
  std::vector<float> V;
  fill_rows(V, keys, d, threads, [&](int r, float* out) {
    RowStream g(seed, stream, uint64_t(r));
    if (v_dist == "uniform") {
      for (int j = 0; j < d; ++j) out[j] = float(2.0 * g.uniform() - 1.0);
      return;
    }
    thread_local std::vector<double> z;
    z.resize(size_t(d));
    g.normals(z.data(), d);
    for (int j = 0; j < d; ++j) out[j] = float(z[size_t(j)]);
  });
  return V;
}

// ---- statistics over seeds

json stat(const std::vector<double>& xs) {
  if (xs.size() == 1) return xs[0];
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= double(xs.size());
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / double(xs.size() - 1));  // sample sd (n - 1)
  return json{{"mean", mean},
              {"sd", sd},
              {"min", *std::min_element(xs.begin(), xs.end())},
              {"max", *std::max_element(xs.begin(), xs.end())}};
}

std::string fmt_stat(const std::vector<double>& xs, const char* f) {
  if (xs.empty() || std::isnan(xs[0])) return "-";
  if (xs.size() == 1) return fmt::format(fmt::runtime(f), xs[0]);
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= double(xs.size());
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  return fmt::format(fmt::runtime(f), mean) + " ± " +
         fmt::format(fmt::runtime(f), std::sqrt(ss / double(xs.size() - 1)));
}

}  // namespace

// ---- parsing

ScoreDist parse_score_dist(const std::string& s) {
  ScoreDist d;
  const auto colon = s.find(':');
  const std::string kind = s.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : s.substr(colon + 1);
  const std::vector<std::string> kinds = {"normal", "rise", "peaked", "file"};
  if (kind == "file") {
    if (rest.empty()) throw Error("--dist file: needs a path", "e.g. --dist file:scores.npy");
    d.kind = ScoreDist::Kind::file;
    d.path = rest;
    d.label = "file:" + rest;
    return d;
  }
  if (kind == "peaked") {
    if (colon != std::string::npos)
      throw Error(fmt::format("--dist '{}': peaked takes no parameter", s),
                  "peaked = i.i.d. N(0, 6^2); use normal:SIGMA for another width");
    d.kind = ScoreDist::Kind::peaked;
    d.sigma = 6.0;
    d.label = "peaked";
    return d;
  }
  if (kind == "normal") {
    if (rest.empty()) throw Error("--dist normal needs a SIGMA", "e.g. --dist normal:1.5");
    d.kind = ScoreDist::Kind::normal;
    d.sigma = parse_finite("--dist normal:SIGMA", rest);
    if (!(d.sigma > 0)) throw Error(fmt::format("--dist '{}': SIGMA must be > 0", s));
    d.label = "normal:" + num_label(d.sigma);
    return d;
  }
  if (kind == "rise") {
    const auto parts = split_on(rest, ':');
    if (rest.empty() || parts.size() > 2)
      throw Error(fmt::format("--dist '{}': expected rise:TOTAL[:SIGMA]", s), "e.g. rise:24");
    d.kind = ScoreDist::Kind::rise;
    d.total = parse_finite("--dist rise:TOTAL", parts[0]);
    d.sigma = parts.size() == 2 ? parse_finite("--dist rise:TOTAL:SIGMA", parts[1]) : 1.5;
    if (!(d.sigma >= 0)) throw Error(fmt::format("--dist '{}': SIGMA must be >= 0", s));
    d.label = "rise:" + num_label(d.total) + (parts.size() == 2 ? ":" + num_label(d.sigma) : "");
    return d;
  }
  std::string hint = "valid: normal:SIGMA, rise:TOTAL[:SIGMA], peaked, file:PATH.npy";
  std::string best;
  size_t best_d = 99;
  for (const auto& k : kinds) {  // did-you-mean on the kind
    size_t diff = 0;
    for (size_t i = 0; i < std::max(k.size(), kind.size()); ++i)
      diff += i >= k.size() || i >= kind.size() || k[i] != kind[i];
    if (diff < best_d) best_d = diff, best = k;
  }
  if (best_d <= 2) hint = fmt::format("did you mean '{}'? {}", best, hint);
  throw Error(fmt::format("unknown --dist '{}'", s), hint);
}

double default_max_offset(const Format& f) { return f.total_bits == 8 ? 8.0 : 0.0; }

BlockOrder resolve_order(OrderChoice c, const ScoreDist& dist) {
  if (c == OrderChoice::reverse) return BlockOrder::reverse;
  if (c == OrderChoice::forward) return BlockOrder::forward;
  return dist.kind == ScoreDist::Kind::file ? kKernelBlockOrder : kArticleBlockOrder;
}

// ---- simulation building blocks

std::vector<float> draw_scores_fa4sim(const ScoreDist& dist, int rows, int keys, uint64_t seed,
                                      int threads) {
  std::vector<float> S;
  const std::string stream = "scores:" + dist.label;
  fill_rows(S, rows, keys, threads, [&](int r, float* out) {
    RowStream g(seed, stream, uint64_t(r));
    thread_local std::vector<double> z;
    z.resize(size_t(keys));
    g.normals(z.data(), keys);
    // Same expressions as score_from_normal, element by element (no contraction: the vector
    // multiply, divide and add round exactly as the scalar ones).
    const double sigma = dist.kind == ScoreDist::Kind::peaked ? 6.0 : dist.sigma;
    int k = 0;
    if (dist.kind == ScoreDist::Kind::rise) {
#if defined(__AVX2__) && defined(__FMA__)
      const __m256d vs = _mm256_set1_pd(dist.sigma), vt = _mm256_set1_pd(dist.total),
                    vk = _mm256_set1_pd(double(keys));
      for (; k + 4 <= keys; k += 4) {
        const __m256d kd = _mm256_set_pd(double(k + 3), double(k + 2), double(k + 1), double(k));
        const __m256d v = _mm256_add_pd(_mm256_mul_pd(vs, _mm256_loadu_pd(z.data() + k)),
                                        _mm256_div_pd(_mm256_mul_pd(vt, kd), vk));
        _mm_storeu_ps(out + k, _mm256_cvtpd_ps(v));
      }
#endif
      for (; k < keys; ++k) out[k] = float(score_from_normal(dist, z[size_t(k)], k, keys));
    } else {
#if defined(__AVX2__) && defined(__FMA__)
      const __m256d vs = _mm256_set1_pd(sigma);
      for (; k + 4 <= keys; k += 4)
        _mm_storeu_ps(out + k, _mm256_cvtpd_ps(_mm256_mul_pd(vs, _mm256_loadu_pd(z.data() + k))));
#endif
      for (; k < keys; ++k) out[k] = float(sigma * z[size_t(k)]);
    }
  });
  return S;
}

SoftmaxParams rescale_softmax_params(const RescaleConfig& cfg, const Format& dtype, double tau) {
  const Format& f = p_format(&dtype);
  SoftmaxParams p;
  p.scale_log2 = scale_log2_of(cfg);
  p.max_offset = float(cfg.max_offset ? *cfg.max_offset : default_max_offset(f));
  p.rescale_threshold = float(tau);
  p.exp2 = cfg.exp2;
  p.p_format = f;
  p.warp_rows = cfg.warp_rows;
  return p;
}

namespace {

struct Errors {
  double rel_l2 = NAN, max_abs = NAN, lse_max_err = NAN;
};

Errors compare(const std::vector<float>& O, const std::vector<float>& lse,
               const std::vector<double>& O_ref, const std::vector<double>& lse_ref) {
  Errors e;
  double num = 0, den = 0, mx = 0;
  for (size_t i = 0; i < O_ref.size(); ++i) {
    const double diff = double(O[i]) - O_ref[i];
    num += diff * diff;
    den += O_ref[i] * O_ref[i];
    mx = std::max(mx, std::fabs(diff));
  }
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : 0.0;
  e.max_abs = mx;
  double le = 0;
  for (size_t r = 0; r < lse_ref.size(); ++r)
    if (std::isfinite(lse_ref[r])) le = std::max(le, std::fabs(double(lse[r]) - lse_ref[r]));
  e.lse_max_err = le;
  return e;
}

// The one-shot experiment: one tile holding every key, no online steps; the dominant P is 1.0
// exactly (bias 0) or 2^u (bias u_r per row). bf16 cast, row_sum from float32 P, exact exp2.
struct OneShot {
  double rel_l2_p1 = 0, rel_l2_p2u = 0;
};
// `ref` (optional): the float64 reference of these S and V at scale_log2 = 1, if already computed.
OneShot run_oneshot(const std::vector<float>& V, const std::vector<float>& S,
                    const std::vector<double>& u, int rows, int keys, int d, int threads,
                    const std::pair<std::vector<double>, std::vector<double>>* ref = nullptr) {
  std::vector<double> O_ref_own, lse_ref_own;
  if (ref == nullptr)
    softmax_reference(S.data(), rows, keys, 1.0f, V.data(), d, O_ref_own, lse_ref_own, threads);
  const std::vector<double>& O_ref = ref ? ref->first : O_ref_own;
  const std::vector<double>& lse_ref = ref ? ref->second : lse_ref_own;
  OneShot res;
  for (int variant = 0; variant < 2; ++variant) {
    std::vector<float> O(size_t(rows) * size_t(d)), lse(static_cast<size_t>(rows));
    // Rows are independent (one tile each); 64 rows per simulator share each pass over V.
    parallel_chunks(uint64_t(rows), 64, threads, [&](uint64_t, uint64_t b, uint64_t e) {
      SoftmaxParams p;
      p.exp2.mode = Exp2Mode::exact;
      p.p_format = kBF16;
      std::vector<float> offsets(size_t(e - b), 0.0f);
      for (uint64_t r = b; r < e; ++r)  // P = 2^(s - max + u): the top P = 2^u
        if (variant == 1) offsets[size_t(r - b)] = float(u[r]);
      RowBlockSim sim(p, int(e - b), d);
      sim.set_row_max_offsets(std::move(offsets));
      sim.process_tile(S.data() + b * uint64_t(keys), size_t(keys), V.data(), size_t(d), keys);
      sim.finalize(O.data() + b * uint64_t(d), size_t(d), lse.data() + b);
    });
    const Errors e = compare(O, lse, O_ref, lse_ref);
    (variant == 0 ? res.rel_l2_p1 : res.rel_l2_p2u) = e.rel_l2;
  }
  return res;
}

// The score check of Note [Score range] (online_softmax.h): refuses scores that overflow, scaled scores beyond kMaxScaledScore and
// rows whose every key is masked (-inf: softmax has no value there). Only a file's -inf is a mask:
// a generated -inf (rise:-1e308) is an overflow like its mirror +inf.
void check_score_range(const float* S, int rows, int keys, float scale_log2,
                       const std::string& label, const std::optional<double>& scale,
                       bool masks_allowed) {
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    bool any = false;
    for (int k = 0; k < keys; ++k) {
      const float x = S[size_t(r) * size_t(keys) + size_t(k)];
      if (masks_allowed && x == -std::numeric_limits<float>::infinity()) continue;
      any = true;
      if (!std::isfinite(x))
        throw Error(fmt::format("--dist {}: score [{}, {}] overflows float32 (|score| > 3.4e38)",
                                label, r, k),
                    "give scores of at most about 1e3, as attention logits are");
      worst = std::max(worst, std::fabs(double(x) * double(scale_log2)));
    }
    if (!any)
      throw Error(
          fmt::format("--dist {}: every key of row {} is -inf (masked): softmax is undefined there",
                      label, r),
          "leave at least one key unmasked per row");
  }
  if (worst > kMaxScaledScore)
    throw Error(
        fmt::format(
            "--dist {}: scores{} reach {:.3g} in log2 units, beyond 2^24 = 16777216, where "
            "float32 keeps no fraction of the exponent",
            label, scale ? fmt::format(" x --softmax-scale {:g} x log2(e)", *scale) : std::string(),
            worst),
        "scale the scores down: attention logits stay below ~1e3");
}

}  // namespace

void check_file_scores(const float* S, int rows, int keys, const RescaleConfig& cfg,
                       const std::string& label) {
  check_score_range(S, rows, keys, scale_log2_of(cfg), label, cfg.scale, true);
}

namespace {

// ---- running the experiment

// The scores of every `--dist file:`, by index into cfg.dists, read and checked before any
// simulation; sets cfg.rows and cfg.keys to the files' shape where --rows/--keys were not given.
using FileScores = std::map<size_t, std::vector<float>>;

FileScores read_file_scores(RescaleConfig& cfg) {
  FileScores file_scores;
  int rows = cfg.rows, keys = cfg.keys;
  for (size_t i = 0; i < cfg.dists.size(); ++i) {
    const ScoreDist& dist = cfg.dists[i];
    if (dist.kind != ScoreDist::Kind::file) continue;
    const NpyArray a = read_npy_2d_f32(dist.path);
    const int fr = int(a.shape[0]), fk = int(a.shape[1]);
    if ((cfg.rows_set && fr != cfg.rows) || (cfg.keys_set && fk != cfg.keys))
      throw Error(fmt::format("{} has shape {} but {} given", dist.path, a.shape_string(),
                              cfg.rows_set && cfg.keys_set
                                  ? fmt::format("--rows {} --keys {} were", cfg.rows, cfg.keys)
                              : cfg.rows_set ? fmt::format("--rows {} was", cfg.rows)
                                             : fmt::format("--keys {} was", cfg.keys)),
                  "leave out --rows/--keys to take the file's shape");
    if (!file_scores.empty() && (fr != rows || fk != keys))
      throw Error(fmt::format("{} has shape {}, another file has ({}, {})", dist.path,
                              a.shape_string(), rows, keys),
                  "every --dist file must have the same (rows, keys)");
    rows = fr, keys = fk;
    std::vector<float> s = a.to_float32();
    check_scores(s.data(), fr, fk, dist.path);
    if (fr < 1 || fk < 1) throw Error(fmt::format("{} is empty ({})", dist.path, a.shape_string()));
    file_scores[i] = std::move(s);
  }
  if (!file_scores.empty() && cfg.block > keys)
    throw Error(fmt::format("--block-n {} is larger than the file's {} keys", cfg.block, keys));
  if (!file_scores.empty() && cfg.rows_set == false) cfg.rows = rows;
  if (!file_scores.empty() && cfg.keys_set == false) cfg.keys = keys;
  return file_scores;
}

// One seed's draws shared by its runs: V, and the one-shot experiment's scores and reference when
// they are the peaked run's own (fa4sim's generator draws exactly these for the one-shot).
struct SeedInputs {
  std::vector<float> V;
  std::vector<float> oneshot_S;
  std::pair<std::vector<double>, std::vector<double>> oneshot_ref;
};

// The scores of cfg.dists[di] for this seed: the file's, NumPy's next matrix (in --dist order
// after V), or fa4sim's own stream.
std::vector<float> seed_scores(const RescaleConfig& cfg, const FileScores& files, size_t di,
                               NumpyGenerator& np, uint64_t seed, int threads) {
  const ScoreDist& dist = cfg.dists[di];
  if (dist.kind == ScoreDist::Kind::file) return files.at(di);
  if (cfg.rng == RngChoice::Kind::numpy)
    return np.scores_f32(dist.kind == ScoreDist::Kind::peaked ? 6.0 : dist.sigma,
                         dist.kind == ScoreDist::Kind::rise ? dist.total : 0.0, cfg.rows, cfg.keys);
  return draw_scores_fa4sim(dist, cfg.rows, cfg.keys, seed, threads);
}

// Appends one run's metrics for one seed.
void record_run(const RowBlockRunResult& rr, bool counts_only, const std::vector<double>& O_ref,
                const std::vector<double>& lse_ref, RescaleRunSamples& smp) {
  const auto& c = rr.counts;
  smp.rows_pct.push_back(c.row_decisions ? 100.0 * double(c.row_rescales) / double(c.row_decisions)
                                         : 0.0);
  smp.warps_pct.push_back(
      c.warp_decisions ? 100.0 * double(c.warp_rescales) / double(c.warp_decisions) : 0.0);
  smp.saturated.push_back(double(c.saturated));
  smp.saturated_pct.push_back(c.p_count ? 100.0 * double(c.saturated) / double(c.p_count) : 0.0);
  if (!counts_only) {
    const Errors e = compare(rr.O, rr.lse, O_ref, lse_ref);
    smp.rel_l2.push_back(e.rel_l2);
    smp.max_abs.push_back(e.max_abs);
    smp.lse_max_err.push_back(e.lse_max_err);
  }
}

// Every (tau, dtype) run of cfg.dists[di] for one seed; keeps the peaked scores and their
// reference in `in` for the one-shot experiment.
void run_dist(const RescaleConfig& cfg, const FileScores& files, size_t di, NumpyGenerator& np,
              uint64_t seed, SeedInputs& in, RescaleResult& res) {
  const int rows = cfg.rows, keys = cfg.keys, d = cfg.d, threads = res.threads;
  const float scale_log2 = scale_log2_of(cfg);
  const bool numpy_rng = cfg.rng == RngChoice::Kind::numpy;
  const ScoreDist& dist = cfg.dists[di];
  const std::vector<float> S = seed_scores(cfg, files, di, np, seed, threads);
  check_score_range(S.data(), rows, keys, scale_log2, dist.label, cfg.scale,
                    dist.kind == ScoreDist::Kind::file);
  std::vector<double> O_ref, lse_ref;
  if (!cfg.counts_only)
    softmax_reference(S.data(), rows, keys, scale_log2, in.V.data(), d, O_ref, lse_ref, threads);
  // fa4sim's own one-shot scores are exactly these (the same stream): keep them and their
  // reference instead of drawing and computing both again.
  if (cfg.oneshot && !cfg.counts_only && !numpy_rng && dist.kind == ScoreDist::Kind::peaked &&
      scale_log2 == 1.0f && in.oneshot_S.empty()) {
    in.oneshot_S = S;
    in.oneshot_ref = {O_ref, lse_ref};
  }
  const BlockOrder order = resolve_order(cfg.order, dist);
  for (RescaleRunSamples& smp : res.runs) {
    if (smp.dist != di) continue;
    const SoftmaxParams p = rescale_softmax_params(cfg, *cfg.dtypes[smp.dtype], cfg.taus[smp.tau]);
    const RowBlockRunResult rr = simulate_rows(p, S.data(), rows, keys, cfg.block, order,
                                               cfg.counts_only ? nullptr : in.V.data(), d, threads);
    record_run(rr, cfg.counts_only, O_ref, lse_ref, smp);
  }
}

// The one-shot experiment of one seed: NumPy's fresh generator (V, the N(0, 6^2) scores, then u),
// or fa4sim's peaked scores (reused from the peaked run when there was one) and its "oneshot:u".
void run_oneshot_seed(const RescaleConfig& cfg, uint64_t seed, const SeedInputs& in,
                      RescaleResult& res) {
  const int rows = cfg.rows, keys = cfg.keys, d = cfg.d, threads = res.threads;
  const bool numpy_rng = cfg.rng == RngChoice::Kind::numpy;
  std::vector<float> V1, S1;
  std::vector<double> u(static_cast<size_t>(rows));
  if (numpy_rng) {
    NumpyGenerator g(seed);  // a fresh generator: V, the N(0, 6^2) scores, then u
    V1 = g.standard_normal_f32(size_t(keys) * size_t(d));
    S1 = g.scores_f32(6.0, 0.0, rows, keys);
    for (auto& x : u) x = g.random();
  } else {
    if (in.oneshot_S.empty())
      S1 = draw_scores_fa4sim(parse_score_dist("peaked"), rows, keys, seed, threads);
    RowStream g(seed, "oneshot:u", 0);
    for (auto& x : u) x = g.uniform();
  }
  const bool reuse = !numpy_rng && !in.oneshot_S.empty();
  const OneShot os = run_oneshot(numpy_rng ? V1 : in.V, reuse ? in.oneshot_S : S1, u, rows, keys, d,
                                 threads, reuse ? &in.oneshot_ref : nullptr);
  res.oneshot_p1.push_back(os.rel_l2_p1);
  res.oneshot_p2u.push_back(os.rel_l2_p2u);
}

// Every run and the one-shot experiment for one seed. With --rng numpy one generator draws V,
// then the score matrices in --dist order.
void run_seed(const RescaleConfig& cfg, const FileScores& files, uint64_t seed,
              RescaleResult& res) {
  SeedInputs in;
  NumpyGenerator np(seed);
  if (cfg.rng == RngChoice::Kind::numpy) {
    in.V = np.standard_normal_f32(size_t(cfg.keys) * size_t(cfg.d));
    if (cfg.v_dist == "uniform")
      throw Error("--rng numpy draws V as standard normal only", "use --v-dist normal");
  } else if (!cfg.counts_only) {
    in.V = draw_v_fa4sim(cfg.v_dist, cfg.keys, cfg.d, seed, "V", res.threads);
  }
  for (size_t di = 0; di < cfg.dists.size(); ++di) run_dist(cfg, files, di, np, seed, in, res);
  if (cfg.oneshot && !cfg.counts_only) run_oneshot_seed(cfg, seed, in, res);
}

}  // namespace

// ---- validation and the experiment

void validate_rescale_config(const RescaleConfig& cfg) {
  if (cfg.taus.empty()) throw Error("--tau is empty", "e.g. --tau 0,8");
  for (double t : cfg.taus) check_log2_knob("--tau", t);
  if (cfg.dtypes.empty()) throw Error("--dtype is empty", "e.g. --dtype bf16,e4m3");
  for (const Format* n : cfg.dtypes) p_format(n);
  if (cfg.max_offset) check_log2_knob("--max-offset", *cfg.max_offset);
  if (cfg.block < 1) throw Error(fmt::format("--block-n {} must be >= 1", cfg.block), "e.g. 128");
  if (cfg.rows < 1 || cfg.keys < 1 || cfg.d < 1) throw Error("--rows, --keys and --d must be >= 1");
  if (cfg.block > cfg.keys)
    throw Error(fmt::format("--block-n {} is larger than --keys {}", cfg.block, cfg.keys),
                "a row would be a single block: nothing to rescale");
  if (cfg.warp_rows < 1) throw Error("--warp-rows must be >= 1", "32 (sm100) or 16");
  if (cfg.seeds < 1) throw Error("--seeds must be >= 1");
  if (cfg.v_dist != "normal" && cfg.v_dist != "uniform")
    throw Error(fmt::format("unknown --v-dist '{}'", cfg.v_dist), "valid: normal, uniform");
  if (cfg.scale && !(*cfg.scale > 0 && std::isfinite(*cfg.scale)))
    throw Error("--softmax-scale must be a positive finite number", "e.g. 0.0883883 = 1/sqrt(128)");
  if (cfg.exp2.mode == Exp2Mode::schedule &&
      !schedule_valid(cfg.block, cfg.exp2.freq, cfg.exp2.res, cfg.exp2.start_frg))
    throw Error(fmt::format("--exp {} needs --block-n to be a multiple of 32 (got {})",
                            exp2_choice_name(cfg.exp2), cfg.block),
                "the schedule works on fragments of 32 columns");
  const double scale_log2 = cfg.scale ? *cfg.scale * kLog2e : 1.0;
  (void)scale_log2;
  // The kernel's assertion, for every (tau, dtype).
  if (!cfg.allow_saturation) {
    for (const Format* n : cfg.dtypes) {
      const Format& f = p_format(n);
      const double mo = cfg.max_offset ? *cfg.max_offset : default_max_offset(f);
      for (double t : cfg.taus) {
        const SafetyCheck c = safety_check(f, t, mo);
        if (!c.safe)
          throw Error(
              "refusing to run: " + c.explanation,
              fmt::format("the kernel asserts max_offset + tau < log2(dtype_max); for {} with "
                          "max_offset {:g} every tau below {:.4g} is safe (upstream uses 0 for "
                          "FP8); add --allow-saturation to run it anyway and see the saturation",
                          f.name, mo, c.largest_safe_tau));
      }
    }
  }
}

RescaleResult compute_rescale(const RescaleConfig& cfg_in) {
  RescaleConfig cfg = cfg_in;
  if (cfg.dists.empty()) cfg.dists.push_back(parse_score_dist("normal:1.5"));
  validate_rescale_config(cfg);
  RescaleResult res;
  res.threads = cfg.threads > 0 ? cfg.threads : default_threads();
  const FileScores files = read_file_scores(cfg);
  res.dists = cfg.dists;
  res.rows = cfg.rows, res.keys = cfg.keys;
  for (size_t di = 0; di < cfg.dists.size(); ++di)
    for (size_t ti = 0; ti < cfg.taus.size(); ++ti)
      for (size_t fi = 0; fi < cfg.dtypes.size(); ++fi) {
        RescaleRunSamples run;
        run.dist = di, run.tau = ti, run.dtype = fi;
        res.runs.push_back(std::move(run));
      }
  for (int si = 0; si < cfg.seeds; ++si) run_seed(cfg, files, cfg.seed + uint64_t(si), res);
  return res;
}

// ---- the report

namespace {

json rescale_params(const RescaleConfig& cfg, const RescaleResult& r) {
  json dists = json::array(), taus = json::array(), dtypes = json::array();
  for (const auto& x : r.dists) dists.push_back(x.label);
  for (double t : cfg.taus) taus.push_back(t);
  for (const Format* x : cfg.dtypes) dtypes.push_back(x->name);
  const char* order_opt = cfg.order == OrderChoice::auto_     ? "auto"
                          : cfg.order == OrderChoice::reverse ? "reverse"
                                                              : "forward";
  return {{"tau", taus},
          {"dtype", dtypes},
          {"max_offset",
           cfg.max_offset ? json(*cfg.max_offset) : json("per dtype: 8 for FP8, 0 otherwise")},
          {"dist", dists},
          {"rows", r.rows},
          {"keys", r.keys},
          {"block", cfg.block},
          {"d", cfg.d},
          {"v_dist", cfg.v_dist},
          {"exp", exp2_choice_name(cfg.exp2)},
          {"scale", cfg.scale ? json(*cfg.scale) : json(nullptr)},
          {"scale_log2", scale_log2_of(cfg)},
          {"order", order_opt},
          {"warp_rows", cfg.warp_rows},
          {"seed", cfg.seed},
          {"seeds", cfg.seeds},
          {"rng", cfg.rng == RngChoice::Kind::numpy ? fmt::format("numpy:{}", cfg.seed)
                                                    : std::string("fa4sim")},
          {"allow_saturation", cfg.allow_saturation},
          {"counts_only", cfg.counts_only}};
}

// The runs table's rows and the JSON `runs`, one per (distribution, tau, dtype).
json runs_table(const RescaleConfig& cfg, const RescaleResult& r, Table& t) {
  const int rows = r.rows, keys = r.keys, block = cfg.block, d = cfg.d;
  json runs = json::array();
  t.title = fmt::format("fa4sim rescale: {} rows x {} keys, {}-key blocks, d = {}, exp2 {}, {}",
                        rows, keys, block, d, exp2_choice_name(cfg.exp2),
                        cfg.seeds > 1 ? fmt::format("mean ± sd over {} seeds ({}..{})", cfg.seeds,
                                                    cfg.seed, cfg.seed + uint64_t(cfg.seeds) - 1)
                                      : fmt::format("seed {}", cfg.seed));
  t.columns = {"scores",  "order",  "tau",     "dtype",   "max_off",   "rows %",
               "warps %", "rel-L2", "max abs", "LSE err", "saturated", "sat %"};
  for (const RescaleRunSamples& s : r.runs) {
    const Format& f = p_format(cfg.dtypes[s.dtype]);
    const double mo = cfg.max_offset ? *cfg.max_offset : default_max_offset(f);
    const double tau = cfg.taus[s.tau];
    const SafetyCheck sc = safety_check(f, tau, mo);
    const BlockOrder order = resolve_order(cfg.order, r.dists[s.dist]);
    auto metric = [&](const std::vector<double>& xs) {
      return xs.empty() ? json(nullptr) : stat(xs);
    };
    runs.push_back({{"dist", r.dists[s.dist].label},
                    {"tau", tau},
                    {"dtype", f.name},
                    {"max_offset", mo},
                    {"block", block},
                    {"rows", rows},
                    {"keys", keys},
                    {"d", d},
                    {"seeds", cfg.seeds},
                    {"order", block_order_name(order)},
                    {"rows_pct", metric(s.rows_pct)},
                    {"warps_pct", metric(s.warps_pct)},
                    {"rel_l2", metric(s.rel_l2)},
                    {"max_abs", metric(s.max_abs)},
                    {"lse_max_err", metric(s.lse_max_err)},
                    {"saturated", metric(s.saturated)},
                    {"saturated_pct", metric(s.saturated_pct)},
                    {"safe", sc.safe}});
    t.rows.push_back({r.dists[s.dist].label, block_order_name(order), num_label(tau), f.name,
                      num_label(mo), fmt_stat(s.rows_pct, "{:.2f}"),
                      fmt_stat(s.warps_pct, "{:.1f}"), fmt_stat(s.rel_l2, "{:.5f}"),
                      fmt_stat(s.max_abs, "{:.2e}"), fmt_stat(s.lse_max_err, "{:.1e}"),
                      fmt_stat(s.saturated, "{:.0f}"), fmt_stat(s.saturated_pct, "{:.3f}")});
  }
  return runs;
}

// The JSON safety checks of every (dtype, tau); a note on the table for each unsafe one.
json safety_checks(const RescaleConfig& cfg, Table& t) {
  json safety = json::array();
  for (const Format* n : cfg.dtypes) {
    const Format& f = p_format(n);
    const double mo = cfg.max_offset ? *cfg.max_offset : default_max_offset(f);
    for (double tau : cfg.taus) {
      const SafetyCheck sc = safety_check(f, tau, mo);
      safety.push_back({{"dtype", f.name},
                        {"tau", tau},
                        {"max_offset", mo},
                        {"log2_dtype_max", sc.log2_max},
                        {"safe", sc.safe},
                        {"largest_safe_tau_below", sc.largest_safe_tau},
                        {"explanation", sc.explanation}});
      if (!sc.safe)
        t.notes.push_back(
            fmt::format("UNSAFE (the kernel would assert; run because of --allow-saturation): {}",
                        sc.explanation));
    }
  }
  return safety;
}

// The notes under the runs table: denominators, ragged block, order, model, generator.
void add_model_notes(const RescaleConfig& cfg, const RescaleResult& r, Table& t) {
  const int rows = r.rows, keys = r.keys, block = cfg.block;
  const int n_blocks = (keys + block - 1) / block;
  const int n_warps = (rows + cfg.warp_rows - 1) / cfg.warp_rows;
  t.notes.push_back(fmt::format(
      "rows % = row rescales / (rows x (blocks - 1)) = / ({} x {}); warps % = warps with any row "
      "rescaling / (warps x (blocks - 1)) = / ({} x {}), warps of {} rows{}",
      rows, n_blocks - 1, n_warps, n_blocks - 1, cfg.warp_rows,
      rows % cfg.warp_rows
          ? fmt::format(" (the last warp has only {} rows and votes once)", rows % cfg.warp_rows)
          : ""));
  if (keys % block)
    t.notes.push_back(fmt::format(
        "ragged last block: {} keys; it is processed with its valid keys only (the kernel masks "
        "the rest with -inf, P = 0)",
        keys % block));
  t.notes.push_back(
      "order: the key blocks are walked forward (the seed article's simulation) or in reverse "
      "(the sm100 kernel: last block first); --order auto (default) = forward for the article's "
      "synthetic scores, reverse for file: scores");
  t.notes.push_back(fmt::format(
      "model: one V ~ {} of shape ({}, {}) shared by all rows, not quantised; scores in {} "
      "(float32); peaked = N(0, 6^2); rise:T = N(0, 1.5^2) + T*k/keys; P cast with "
      "round-to-nearest-even, subnormals, satfinite; row_sum from float32 P; errors vs float64 "
      "softmax(S) @ V (rel-L2 = Frobenius norm ratio, max abs, LSE in natural log)",
      cfg.v_dist == "normal" ? "N(0, 1)" : "U[-1, 1)", keys, cfg.d,
      cfg.scale ? "natural units x --scale" : "log2 units", ""));
  t.notes.push_back(fmt::format(
      "generator: {}",
      cfg.rng == RngChoice::Kind::numpy
          ? fmt::format(
                "NumPy default_rng({}) (PCG64): V first, then the score matrices in --dist order",
                cfg.seed)
          : std::string(
                "fa4sim's own (counter-based, per row; --rng numpy:SEED draws NumPy's streams)")));
}

// The one-shot table and its JSON (null when the experiment did not run).
json oneshot_table(const RescaleConfig& cfg, const RescaleResult& r, Report& rep) {
  if (r.oneshot_p1.empty()) return nullptr;
  Table o;
  o.title = "one-shot softmax (no online steps), bf16 P, peaked N(0, 6^2) scores";
  o.columns = {"dominant P", "rel-L2"};
  o.rows.push_back({"1.0 exactly (P = 2^(s - max))", fmt_stat(r.oneshot_p1, "{:.5f}")});
  o.rows.push_back(
      {"2^u, u ~ U[0,1) per row (P = 2^(s - max + u))", fmt_stat(r.oneshot_p2u, "{:.5f}")});
  o.notes.push_back("the lagging max's cost in bf16: the dominant P is no longer exactly 1.0");
  rep.tables.push_back(o);
  return {{"dtype", "bf16"},
          {"dist", "peaked"},
          {"rows", r.rows},
          {"keys", r.keys},
          {"d", cfg.d},
          {"seeds", cfg.seeds},
          {"rel_l2_top_p_1", stat(r.oneshot_p1)},
          {"rel_l2_top_p_2u", stat(r.oneshot_p2u)}};
}

}  // namespace

Report rescale_report(const RescaleConfig& cfg, const RescaleResult& r) {
  Report rep;
  rep.command = "rescale";
  rep.threads = r.threads;
  rep.params = rescale_params(cfg, r);
  Table t;
  const json runs = runs_table(cfg, r, t);
  const json safety = safety_checks(cfg, t);
  add_model_notes(cfg, r, t);
  rep.tables.push_back(t);
  const json oneshot = oneshot_table(cfg, r, rep);
  const int n_blocks = (r.keys + cfg.block - 1) / cfg.block;
  const int n_warps = (r.rows + cfg.warp_rows - 1) / cfg.warp_rows;
  rep.results = {
      {"runs", runs},
      {"oneshot", oneshot},
      {"safety", {{"allow_saturation", cfg.allow_saturation}, {"checks", safety}}},
      {"denominators",
       {{"rows", fmt::format("rows * (blocks - 1) = {}", int64_t(r.rows) * (n_blocks - 1))},
        {"warps", fmt::format("ceil(rows / warp_rows) * (blocks - 1) = {}",
                              int64_t(n_warps) * (n_blocks - 1))}}},
      {"blocks", n_blocks},
      {"warps", n_warps}};
  return rep;
}

Report run_rescale(const RescaleConfig& cfg) { return rescale_report(cfg, compute_rescale(cfg)); }

}  // namespace fa4sim
