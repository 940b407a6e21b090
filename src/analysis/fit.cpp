// fit.cpp: `fa4sim fit` (include/fa4sim/analysis/fit.h says what and why).
#include "fa4sim/analysis/fit.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include <boost/multiprecision/cpp_bin_float.hpp>
#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/parse.h"
#include "fa4sim/analysis/exp2_analysis.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/progress.h"
#include "fa4sim/util/suggest.h"

namespace fa4sim {

namespace {

using Mp = boost::multiprecision::cpp_bin_float_50;

const Mp& mp_ln2() {
  static const Mp v = boost::multiprecision::log(Mp(2));
  return v;
}
Mp mp_exp2(const Mp& x) { return boost::multiprecision::exp(x * mp_ln2()); }

std::string mp_str(const Mp& v) { return v.str(30, std::ios_base::scientific); }

// ---- a small dense solver (Gaussian elimination, partial pivoting), any scalar type
template <class T>
std::vector<T> solve(std::vector<std::vector<T>> a, std::vector<T> b) {
  const size_t n = b.size();
  for (size_t k = 0; k < n; ++k) {
    size_t piv = k;
    for (size_t i = k + 1; i < n; ++i)
      if (abs(a[i][k]) > abs(a[piv][k])) piv = i;
    std::swap(a[k], a[piv]);
    std::swap(b[k], b[piv]);
    for (size_t i = k + 1; i < n; ++i) {
      const T m = a[i][k] / a[k][k];
      for (size_t j = k; j < n; ++j) a[i][j] -= m * a[k][j];
      b[i] -= m * b[k];
    }
  }
  std::vector<T> x(n);
  for (size_t k = n; k-- > 0;) {
    T s = b[k];
    for (size_t j = k + 1; j < n; ++j) s -= a[k][j] * x[j];
    x[k] = s / a[k][k];
  }
  return x;
}

// p(f) = sum c_i f^i (Horner, in T).
template <class T>
T horner(const std::vector<T>& c, const T& f) {
  T p = c.back();
  for (size_t i = c.size() - 1; i-- > 0;) p = p * f + c[i];
  return p;
}

// Relative error of p against 2^f.
Mp rel_err(const std::vector<Mp>& c, const Mp& f) {
  const Mp e = mp_exp2(f);
  return (horner(c, f) - e) / e;
}

Minimax make_minimax(const std::vector<Mp>& c, double max_rel, int iterations) {
  Minimax m;
  for (const Mp& v : c) {
    m.coeffs.push_back(mp_str(v));
    m.coeffs_d.push_back(static_cast<double>(v));
  }
  m.max_rel = max_rel;
  m.iterations = iterations;
  return m;
}

// ---- float32 lattice moves: the float `steps` representable values away (ordered keys).
float step_float(float v, int64_t steps) { return float_of_key(key_of(v) + steps); }

float round_f32(double v) { return static_cast<float>(v); }  // round to nearest even

std::string fit_fmt_e(double v) { return fmt::format("{:.3e}", v); }

// ---- exact scoring of a batch of polynomials by the exhaustive analysis (run_exp2)

struct Stats3 {
  Exp2Stats plain, weighted;
};

// The stats of some candidates on one exhaustive pass (a range and an out dtype).
struct KnownPass {
  double lo = 0, hi = 0;
  std::string out_dtype;
  std::vector<Stats3> stats;
};

// Scores up to 6 polynomials in one exhaustive pass: run_exp2 computes the reference once per
// block and calls the function under test once per "degree" entry, so each candidate rides on
// one of the tags 0..5 (the tag is an index into `cands`, not a degree).
std::vector<Stats3> run_batch(const std::vector<std::vector<float>>& cands, double lo, double hi,
                              const std::string& out_dtype, int threads) {
  std::vector<Stats3> out;
  for (size_t b = 0; b < cands.size(); b += kExp2MaxDegree + 1) {
    const size_t n = std::min<size_t>(kExp2MaxDegree + 1, cands.size() - b);
    Exp2Config cfg;
    cfg.degrees.clear();
    for (size_t i = 0; i < n; ++i) cfg.degrees.push_back(static_cast<int>(i));
    cfg.lo = lo;
    cfg.hi = hi;
    cfg.exhaustive = true;
    cfg.out_dtype = out_dtype;
    cfg.threads = threads;
    cfg.progress = false;
    const Exp2Function fn = [&cands, b](int tag, std::span<const float> x, std::span<float> y) {
      ex2_emu_poly(x, y, cands[b + static_cast<size_t>(tag)]);
    };
    const Exp2Result r = run_exp2(cfg, fn);
    for (const auto& d : r.degrees) out.push_back({d.plain, d.weighted});
  }
  return out;
}

// Objective key: lexicographic, smaller is better.
using Key = std::array<double, 3>;

// The weighted statistics of several disjoint ranges as one (sums add, maxima combine).
Exp2Stats combine(const std::vector<Exp2Stats>& parts) {
  if (parts.size() == 1) return parts[0];  // the exact figures, bit for bit
  Exp2Stats t;
  double wsum_rel = 0;
  for (const Exp2Stats& s : parts) {
    t.n += s.n;
    t.max_rel = std::max(t.max_rel, s.max_rel);
    wsum_rel += s.mean_rel * s.n;
    t.identical += s.identical;
    t.within_1ulp += s.within_1ulp;
    t.max_ulp = std::max(t.max_ulp, s.max_ulp);
  }
  t.mean_rel = wsum_rel / t.n;
  return t;
}

// Note [Proxy and exact scores]: the search ranks candidates on a proxy, the exhaustive analysis
// restricted to the floats that carry almost all of the objective's value weight, and the
// winners are then scored on the full range (what is reported). For the bf16/fp16 objectives the
// proxy drops (-1, 1): its 2^31 floats are 98 % of the floats of [-20, 8) but 2/28 of its weight,
// and the reduced argument f of x in [1, 2) already runs over every multiple of 2^-23 in [0, 1)
// (ex2_emulation's result is p(f) * 2^floor(x), so x and x + 1 test the same f). For the fp32
// objectives the proxy is [1/128, 1) (the floats below 1/128 are 87 % of [0, 1)'s, with 0.8 % of
// its weight and errors near p(0)'s), and for fp32-maxrel also f = 0 itself (p(0) = c0 is an
// extremum of the error when c0 is free). The proxy is about 36x (fp32: 18x) cheaper per candidate.
struct Evaluator {
  FitObjective obj;
  double lo, hi;
  int threads;
  uint64_t proxy_count = 0, exact_count = 0;
  KnownPass last_exact;  // the stats of the last exhaustive call (one range, the candidates')

  bool range_objective() const {
    return obj != FitObjective::fp32_maxrel && obj != FitObjective::fp32_meanrel;
  }
  std::vector<std::pair<double, double>> pieces(bool exact) const {
    if (exact && !range_objective()) return {{0.0, 1.0}};
    // fp32-maxrel: f = 0 too (and the 511 subnormals above it), where a fit with c0 free has an
    // extremum of its error (|c0 - 1|).
    if (obj == FitObjective::fp32_maxrel) return {{0.0, 0x1p-140}, {1.0 / 128, 1.0}};
    if (obj == FitObjective::fp32_meanrel) return {{1.0 / 128, 1.0}};
    if (exact) return {{lo, hi}};
    std::vector<std::pair<double, double>> p;
    if (lo < -1) p.emplace_back(lo, std::min(hi, -1.0));
    if (hi > 1) p.emplace_back(std::max(lo, 1.0), hi);
    if (p.empty()) p.emplace_back(lo, hi);
    return p;
  }
  std::vector<Key> keys(const std::vector<std::vector<float>>& cands, bool exact) {
    const std::string od = obj == FitObjective::fp16_identical ? "fp16" : "bf16";
    std::vector<std::vector<Exp2Stats>> parts(cands.size());
    for (const auto& [a, b] : pieces(exact)) {
      const auto st = run_batch(cands, a, b, od, threads);
      for (size_t i = 0; i < st.size(); ++i) parts[i].push_back(st[i].weighted);
      if (exact) last_exact = {a, b, od, st};
    }
    (exact ? exact_count : proxy_count) += cands.size();
    std::vector<Key> out;
    for (const auto& p : parts) {
      const Exp2Stats w = combine(p);
      switch (obj) {
        case FitObjective::fp32_maxrel: out.push_back({w.max_rel, w.mean_rel, 0}); break;
        case FitObjective::fp32_meanrel: out.push_back({w.mean_rel, w.max_rel, 0}); break;
        case FitObjective::bf16_identical:
        case FitObjective::fp16_identical:
          out.push_back({-w.identical / w.n, w.max_ulp, -w.within_1ulp / w.n});
          break;
        case FitObjective::bf16_max_ulp:
          out.push_back({w.max_ulp, -w.within_1ulp / w.n, -w.identical / w.n});
          break;
      }
    }
    return out;
  }
};

// The objective's value in its own unit (for reports): max/mean rel, identical %, max ULP.
double objective_value(FitObjective o, const Key& k) {
  switch (o) {
    case FitObjective::fp32_maxrel:
    case FitObjective::fp32_meanrel: return k[0];
    case FitObjective::bf16_identical:
    case FitObjective::fp16_identical: return -100.0 * k[0];
    case FitObjective::bf16_max_ulp: return k[0];
  }
  return 0;
}

}  // namespace

// ---- objectives

const std::vector<std::string>& fit_objective_names() {
  static const std::vector<std::string> k = {"fp32-maxrel", "fp32-meanrel", "bf16-identical",
                                             "fp16-identical", "bf16-max-ulp"};
  return k;
}

std::string fit_objective_name(FitObjective o) {
  return fit_objective_names()[static_cast<size_t>(o)];
}

FitObjective parse_fit_objective(const std::string& s) {
  const auto& n = fit_objective_names();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == s) return static_cast<FitObjective>(i);
  throw_unknown_choice("--objective", s, n);
}

void validate(const FitConfig& c) {
  if (c.degree < kFitMinDegree || c.degree > kFitMaxDegree)
    throw Error(
        fmt::format("--degree {} is outside {}..{}", c.degree, kFitMinDegree, kFitMaxDegree),
        "fit a polynomial of degree 1 to 5 (degree 0 is the constant 1)");
  Exp2Config e;
  e.lo = c.lo;
  e.hi = c.hi;
  e.exhaustive = true;
  validate(e);  // the range rules of `fa4sim exp2`
  if (c.threads < 0) throw Error("--threads must be >= 0", "0 = all cores");
}

// ---- stage 1: Remez (relative error, multiprecision)

Minimax remez_exp2(int degree, bool fix_c0) {
  FA4_DASSERT(degree >= 1 && degree <= kFitMaxDegree);
  const int first = fix_c0 ? 1 : 0;  // first free coefficient
  const int m = degree + 1 - first;  // free coefficients
  const int nref = m + 1;            // reference points (m coefficients + E)
  const double pi = 3.14159265358979323846;
  std::vector<Mp> x(static_cast<size_t>(nref));
  for (int j = 0; j < nref; ++j) {  // Chebyshev extrema; with c0 fixed the error vanishes at 0
    const double t = fix_c0 ? pi * (j + 1) / nref : pi * j / (nref - 1);
    x[static_cast<size_t>(j)] = Mp(0.5 - 0.5 * std::cos(t));
  }
  std::vector<Mp> c(static_cast<size_t>(degree + 1), Mp(0));
  if (fix_c0) c[0] = 1;
  constexpr int kGrid = 2000;
  double level = 0;
  int it = 0;
  for (; it < 60; ++it) {
    // p(x_j) - 2^x_j = (-1)^j E 2^x_j.
    std::vector<std::vector<Mp>> a(static_cast<size_t>(nref),
                                   std::vector<Mp>(static_cast<size_t>(nref)));
    std::vector<Mp> rhs(static_cast<size_t>(nref));
    for (int j = 0; j < nref; ++j) {
      const Mp& xj = x[static_cast<size_t>(j)];
      const Mp e = mp_exp2(xj);
      Mp pw = 1;
      for (int i = 0; i < first; ++i) pw *= xj;
      for (int i = 0; i < m; ++i, pw *= xj) a[static_cast<size_t>(j)][static_cast<size_t>(i)] = pw;
      a[static_cast<size_t>(j)][static_cast<size_t>(m)] = (j % 2 ? 1 : -1) * e;
      rhs[static_cast<size_t>(j)] = e - (fix_c0 ? Mp(1) : Mp(0));
    }
    const std::vector<Mp> sol = solve(a, rhs);
    for (int i = 0; i < m; ++i) c[static_cast<size_t>(first + i)] = sol[static_cast<size_t>(i)];
    // Extrema of the error: a grid, then a ternary search around each local extremum of |e|.
    std::vector<Mp> g(kGrid + 1), eg(kGrid + 1);
    for (int i = 0; i <= kGrid; ++i) {
      g[static_cast<size_t>(i)] = Mp(i) / kGrid;
      eg[static_cast<size_t>(i)] = rel_err(c, g[static_cast<size_t>(i)]);
    }
    std::vector<std::pair<Mp, Mp>> ext;  // (x, e)
    for (int i = 0; i <= kGrid; ++i) {
      const Mp ai = abs(eg[static_cast<size_t>(i)]);
      const bool l = i == 0 || ai >= abs(eg[static_cast<size_t>(i - 1)]);
      const bool r = i == kGrid || ai > abs(eg[static_cast<size_t>(i + 1)]);
      if (!(l && r) || eg[static_cast<size_t>(i)] == 0) continue;
      Mp xa = g[static_cast<size_t>(std::max(i - 1, 0))],
         xb = g[static_cast<size_t>(std::min(i + 1, kGrid))];
      for (int s = 0; s < 80; ++s) {  // |e| is unimodal near an extremum
        const Mp m1 = xa + (xb - xa) / 3, m2 = xb - (xb - xa) / 3;
        if (abs(rel_err(c, m1)) < abs(rel_err(c, m2)))
          xa = m1;
        else
          xb = m2;
      }
      Mp xm = (xa + xb) / 2;
      Mp em = rel_err(c, xm);
      if (abs(em) < ai)
        xm = g[static_cast<size_t>(i)], em = eg[static_cast<size_t>(i)];  // endpoints
      ext.emplace_back(xm, em);
    }
    // Alternating subsequence: merge same-sign neighbours (keep the larger), trim the ends.
    std::vector<std::pair<Mp, Mp>> alt;
    for (auto& p : ext) {
      if (!alt.empty() && (alt.back().second > 0) == (p.second > 0)) {
        if (abs(p.second) > abs(alt.back().second)) alt.back() = p;
      } else {
        alt.push_back(p);
      }
    }
    while (static_cast<int>(alt.size()) > nref) {
      if (abs(alt.front().second) < abs(alt.back().second))
        alt.erase(alt.begin());
      else
        alt.pop_back();
    }
    Mp emax = 0, emin = 1;
    for (auto& p : ext) emax = std::max(emax, Mp(abs(p.second)));
    for (auto& p : alt) emin = std::min(emin, Mp(abs(p.second)));
    level = static_cast<double>(emax);
    if (static_cast<int>(alt.size()) < nref) break;  // cannot happen for 2^f; keep the last solve
    for (int j = 0; j < nref; ++j) x[static_cast<size_t>(j)] = alt[static_cast<size_t>(j)].first;
    if (emax - emin <= emax * Mp(1e-25)) break;
  }
  return make_minimax(c, level, it + 1);
}

// ---- the L1 start (Note [Identical rate and L1]): iteratively reweighted least squares.
// Minimises the integral of |p(f) - 2^f| on [0, 1] (midpoint grid); in long double, which is
// ample for a start that the exact float32 search refines.
Minimax l1_fit_exp2(int degree, bool fix_c0) {
  using LD = long double;
  constexpr int kN = 4096;
  const int first = fix_c0 ? 1 : 0;
  const int m = degree + 1 - first;
  std::vector<LD> f(kN), t(kN), w(kN, 1.0L);
  for (int i = 0; i < kN; ++i) {
    f[static_cast<size_t>(i)] = (i + 0.5L) / kN;
    t[static_cast<size_t>(i)] = std::exp2(f[static_cast<size_t>(i)]) - (fix_c0 ? 1.0L : 0.0L);
  }
  std::vector<LD> c(static_cast<size_t>(degree + 1), 0.0L);
  if (fix_c0) c[0] = 1;
  for (int it = 0; it < 200; ++it) {
    std::vector<std::vector<LD>> a(static_cast<size_t>(m),
                                   std::vector<LD>(static_cast<size_t>(m), 0.0L));
    std::vector<LD> b(static_cast<size_t>(m), 0.0L);
    for (int i = 0; i < kN; ++i) {
      std::vector<LD> phi(static_cast<size_t>(m));
      LD pw = first ? f[static_cast<size_t>(i)] : 1.0L;
      for (int k = 0; k < m; ++k, pw *= f[static_cast<size_t>(i)]) phi[static_cast<size_t>(k)] = pw;
      for (int r = 0; r < m; ++r) {
        for (int s = 0; s < m; ++s)
          a[static_cast<size_t>(r)][static_cast<size_t>(s)] +=
              w[static_cast<size_t>(i)] * phi[static_cast<size_t>(r)] * phi[static_cast<size_t>(s)];
        b[static_cast<size_t>(r)] +=
            w[static_cast<size_t>(i)] * phi[static_cast<size_t>(r)] * t[static_cast<size_t>(i)];
      }
    }
    const std::vector<LD> sol = solve(a, b);
    for (int k = 0; k < m; ++k) c[static_cast<size_t>(first + k)] = sol[static_cast<size_t>(k)];
    for (int i = 0; i < kN; ++i) {
      const LD r = horner(c, f[static_cast<size_t>(i)]) - std::exp2(f[static_cast<size_t>(i)]);
      w[static_cast<size_t>(i)] = 1.0L / std::max(std::fabs(r), 1e-14L);
    }
  }
  double max_rel = 0;
  for (int i = 0; i <= kN; ++i) {
    const LD x = static_cast<LD>(i) / kN;
    max_rel = std::max(max_rel, static_cast<double>(std::fabs(horner(c, x) / std::exp2(x) - 1)));
  }
  std::vector<Mp> cm;
  for (LD v : c) cm.emplace_back(v);
  return make_minimax(cm, max_rel, 200);
}

// ---- exact scores of polynomials (every objective; the candidates share each pass)

namespace {

// `known`: the stats of `cs` on one of the three passes, already computed (that pass is skipped).
// only: when set, the passes of the other objectives are not run and their figures stay NaN
// (FitConfig::score_every_objective = false).
std::vector<PolyScore> score_polys_known(const std::vector<std::vector<float>>& cs, double lo,
                                         double hi, int threads, const KnownPass* known,
                                         std::optional<FitObjective> only = std::nullopt) {
  auto pass = [&](double a, double b, const char* od,
                  bool wanted) -> std::optional<std::vector<Stats3>> {
    if (known && known->lo == a && known->hi == b && known->out_dtype == od) return known->stats;
    if (!wanted) return std::nullopt;
    return run_batch(cs, a, b, od, threads);
  };
  const bool fp32 = only == FitObjective::fp32_maxrel || only == FitObjective::fp32_meanrel;
  const bool bf16 = only == FitObjective::bf16_identical || only == FitObjective::bf16_max_ulp;
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::vector<PolyScore> out(cs.size(),
                             PolyScore{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN});
  const auto f = pass(0.0, 1.0, "bf16", !only || fp32);
  const auto b = pass(lo, hi, "bf16", !only || bf16);
  const auto h = pass(lo, hi, "fp16", !only || only == FitObjective::fp16_identical);
  for (size_t i = 0; i < cs.size(); ++i) {
    PolyScore& s = out[i];
    if (f) {
      s.fp32_max_rel = (*f)[i].plain.max_rel;
      s.fp32_max_rel_at = (*f)[i].plain.max_rel_at;
      s.fp32_mean_rel = (*f)[i].weighted.mean_rel;
    }
    if (b) {
      const Exp2Stats& bw = (*b)[i].weighted;
      s.bf16_identical_pct = 100.0 * bw.identical / bw.n;
      s.bf16_within_1ulp_pct = 100.0 * bw.within_1ulp / bw.n;
      s.bf16_max_ulp = bw.max_ulp;
    }
    if (h) {
      const Exp2Stats& hw = (*h)[i].weighted;
      s.fp16_identical_pct = 100.0 * hw.identical / hw.n;
      s.fp16_within_1ulp_pct = 100.0 * hw.within_1ulp / hw.n;
      s.fp16_max_ulp = hw.max_ulp;
    }
  }
  return out;
}

}  // namespace

std::vector<PolyScore> score_polys(const std::vector<std::vector<float>>& cs, double lo, double hi,
                                   int threads) {
  return score_polys_known(cs, lo, hi, threads, nullptr);
}

PolyScore score_poly(const std::vector<float>& c, double lo, double hi, int threads) {
  return score_polys({c}, lo, hi, threads)[0];
}

namespace {

// ---- the coefficient lattice (Note [Lattice moves])
//
// Note [Lattice moves]: a float32 polynomial is a point of the lattice spanned by the ulps of
// its coefficients. Moving one coefficient alone by a few ulps changes p(f) a lot near f = 1,
// while good polynomials differ along combinations that nearly cancel (raise c1, lower c2 ...):
// a walk along the axes needs many small steps to follow them. The LLL algorithm turns the basis
// "one ulp of c_i" (each vector: the change of the relative error p(t) / 2^t at kLatPts Chebyshev
// points t of [0, 1]) into a reduced basis of short, nearly orthogonal vectors: integer moves
// of all coefficients at once that change p little and independently. The search moves along
// both, the axes and the reduced vectors, and the first rounding of the real start is Babai's
// nearest plane in the reduced basis (the closest lattice point to the real polynomial at those
// points), as in fpminimax (Brisebarre and Chevillard, "Efficient polynomial L-infinity
// approximations", ARITH 2007).
using LD = long double;
using IntVec = std::vector<int64_t>;
constexpr int kLatPts = 48;

struct Lattice {
  std::vector<std::vector<LD>> b;  // real vectors (one per free coefficient)
  std::vector<IntVec> u;           // their integer coordinates: ulps of each free coefficient
};

std::vector<LD> lattice_points() {
  std::vector<LD> t(kLatPts);
  for (int j = 0; j < kLatPts; ++j)
    t[static_cast<size_t>(j)] =
        0.5L - 0.5L * std::cos(3.14159265358979323846L * (j + 0.5L) / kLatPts);
  return t;
}

// The relative error change at the lattice points of the polynomial sum d_i t^i, in 2^-24 units.
std::vector<LD> lattice_image(const std::vector<LD>& d) {
  std::vector<LD> v;
  for (LD t : lattice_points()) {
    LD p = 0;
    for (size_t i = d.size(); i-- > 0;) p = p * t + d[i];
    v.push_back(p / std::exp2(t) * 0x1p24L);
  }
  return v;
}

LD dot(const std::vector<LD>& a, const std::vector<LD>& b) {
  LD s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Gram-Schmidt: bs[k] = b[k] minus its projections on bs[0..k-1]; mu[k][j] the coefficients.
void gram_schmidt(const std::vector<std::vector<LD>>& b, std::vector<std::vector<LD>>& bs,
                  std::vector<std::vector<LD>>& mu) {
  const size_t n = b.size();
  bs = b;
  mu.assign(n, std::vector<LD>(n, 0));
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < k; ++j) {
      mu[k][j] = dot(b[k], bs[j]) / dot(bs[j], bs[j]);
      for (size_t t = 0; t < bs[k].size(); ++t) bs[k][t] -= mu[k][j] * bs[j][t];
    }
}

void sub_multiple(Lattice& L, size_t k, size_t j, int64_t q) {
  for (size_t t = 0; t < L.b[k].size(); ++t) L.b[k][t] -= static_cast<LD>(q) * L.b[j][t];
  for (size_t t = 0; t < L.u[k].size(); ++t) L.u[k][t] -= q * L.u[j][t];
}

// LLL reduction (delta = 0.99), recomputing Gram-Schmidt after each change: n <= 6.
void lll_reduce(Lattice& L) {
  const size_t n = L.b.size();
  std::vector<std::vector<LD>> bs, mu;
  size_t k = 1;
  for (int guard = 0; k < n && guard < 10000; ++guard) {
    for (size_t j = k; j-- > 0;) {
      gram_schmidt(L.b, bs, mu);
      const auto q = static_cast<int64_t>(std::llround(mu[k][j]));
      if (q != 0) sub_multiple(L, k, j, q);
    }
    gram_schmidt(L.b, bs, mu);
    if (dot(bs[k], bs[k]) >= (0.99L - mu[k][k - 1] * mu[k][k - 1]) * dot(bs[k - 1], bs[k - 1])) {
      ++k;
    } else {
      std::swap(L.b[k], L.b[k - 1]);
      std::swap(L.u[k], L.u[k - 1]);
      k = std::max<size_t>(k - 1, 1);
    }
  }
}

Lattice coefficient_lattice(const std::vector<float>& c, int first) {
  Lattice L;
  const size_t m = c.size() - static_cast<size_t>(first);
  for (size_t i = 0; i < m; ++i) {
    const size_t ci = i + static_cast<size_t>(first);
    std::vector<LD> d(c.size(), 0);
    d[ci] = static_cast<LD>(step_float(c[ci], 1)) - static_cast<LD>(c[ci]);
    L.b.push_back(lattice_image(d));
    L.u.emplace_back(m, 0);
    L.u.back()[i] = 1;
  }
  if (m > 1) lll_reduce(L);
  return L;
}

// Babai's nearest plane: integer coordinates z with sum z_k u_k close to the target vector.
IntVec babai(const Lattice& L, std::vector<LD> target) {
  std::vector<std::vector<LD>> bs, mu;
  gram_schmidt(L.b, bs, mu);
  IntVec z(L.u.empty() ? 0 : L.u[0].size(), 0);
  for (size_t k = L.b.size(); k-- > 0;) {
    const auto q = static_cast<int64_t>(std::llround(dot(target, bs[k]) / dot(bs[k], bs[k])));
    for (size_t t = 0; t < target.size(); ++t) target[t] -= static_cast<LD>(q) * L.b[k][t];
    for (size_t t = 0; t < z.size(); ++t) z[t] += q * L.u[k][t];
  }
  return z;
}

// c with its free coefficients moved by z (ulps, along the ordered float32 keys).
std::vector<float> moved(const std::vector<float>& c, int first, const IntVec& z, int64_t scale) {
  std::vector<float> r = c;
  for (size_t i = 0; i < z.size(); ++i) {
    float& v = r[i + static_cast<size_t>(first)];
    v = step_float(v, z[i] * scale);
  }
  return r;
}

// The polynomial must stay a plausible 2^f on [0, 1) (finite, within 0.5..4, as --coeffs
// requires): the exponent splice of anything else makes a result that is not an exp2 at all.
bool plausible(const std::vector<float>& c) {
  for (float v : c)
    if (!std::isfinite(v)) return false;
  for (int i = 0; i <= 64; ++i) {
    const double f = i / 64.0;
    double p = 0;
    for (size_t k = c.size(); k-- > 0;) p = p * f + double(c[k]);
    if (!(p >= 0.5 && p <= 4)) return false;
  }
  return true;
}

// ---- the search (proxy scores, memoised; Note [Proxy and exact scores])

struct Search {
  Evaluator& ev;
  bool progress;
  std::map<std::vector<float>, Key> seen;  // every candidate scored on the proxy

  std::vector<Key> keys(const std::string& label, const std::vector<std::vector<float>>& cands) {
    std::vector<std::vector<float>> fresh;
    for (const auto& c : cands)
      if (!seen.count(c) && std::find(fresh.begin(), fresh.end(), c) == fresh.end())
        fresh.push_back(c);
    std::optional<Progress> bar;
    if (progress && !fresh.empty()) bar.emplace(label, fresh.size());
    for (size_t b = 0; b < fresh.size(); b += kExp2MaxDegree + 1) {
      const std::vector<std::vector<float>> part(
          fresh.begin() + static_cast<std::ptrdiff_t>(b),
          fresh.begin() +
              static_cast<std::ptrdiff_t>(std::min(fresh.size(), b + kExp2MaxDegree + 1)));
      const auto k = ev.keys(part, false);
      for (size_t i = 0; i < part.size(); ++i) seen[part[i]] = k[i];
      if (bar) bar->update(std::min(fresh.size(), b + part.size()));
    }
    std::vector<Key> out;
    for (const auto& c : cands) out.push_back(seen.at(c));
    return out;
  }
};

// Pattern search on the lattice: each round tries +-s along every direction (the axes and the
// LLL vectors) and takes the best improving move; s doubles when the same move wins twice in a
// row (a far optimum is reached in a logarithmic number of rounds) and halves when nothing
// improves; the search ends when no move of size 1 improves.
int pattern_search(Search& se, const std::vector<IntVec>& dirs, int first, int64_t s,
                   std::vector<float>& best, Key& best_key) {
  constexpr int64_t kMaxStep = int64_t{1} << 22;
  constexpr int kMaxRounds = 2000;
  int rounds = 0, streak = 0;
  size_t last = SIZE_MAX;
  for (; rounds < kMaxRounds; ++rounds) {
    std::vector<std::vector<float>> moves;
    std::vector<size_t> tag;
    for (size_t d = 0; d < dirs.size(); ++d)
      for (int sign : {-1, 1}) {
        std::vector<float> c = moved(best, first, dirs[d], sign * s);
        if (c != best && plausible(c)) moves.push_back(c), tag.push_back(2 * d + (sign > 0));
      }
    const auto mk = se.keys(fmt::format("fit: moves of {} ulp", s), moves);
    const size_t bi =
        moves.empty() ? 0
                      : static_cast<size_t>(std::min_element(mk.begin(), mk.end()) - mk.begin());
    if (!moves.empty() && mk[bi] < best_key) {
      best_key = mk[bi];
      best = moves[bi];
      streak = tag[bi] == last ? streak + 1 : 1;
      last = tag[bi];
      if (streak >= 2) s = std::min(s * 2, kMaxStep), streak = 0;
    } else if (s == 1) {
      break;
    } else {
      s /= 2;
      last = SIZE_MAX;
      streak = 0;
    }
  }
  return rounds;
}

// The float32 roundings of one real start: to nearest, Babai's lattice rounding, and (at most
// 5 free coefficients) every coefficient rounded down or up.
std::vector<std::vector<float>> roundings(const std::vector<double>& start, int first) {
  const size_t nc = start.size();
  std::vector<float> rn(nc);
  for (size_t i = 0; i < nc; ++i) rn[i] = round_f32(start[i]);
  std::vector<std::vector<float>> out = {rn};
  std::vector<LD> d(nc, 0);
  for (size_t i = static_cast<size_t>(first); i < nc; ++i)
    d[i] = static_cast<LD>(start[i]) - static_cast<LD>(rn[i]);
  out.push_back(moved(rn, first, babai(coefficient_lattice(rn, first), lattice_image(d)), 1));
  const int nfree = static_cast<int>(nc) - first;
  if (nfree <= 5)
    for (int mask = 0; mask < (1 << nfree); ++mask) {
      std::vector<float> c = rn;
      for (int i = first; i < static_cast<int>(nc); ++i) {
        const double v = start[static_cast<size_t>(i)];
        float dn = round_f32(v);
        if (static_cast<double>(dn) > v) dn = step_float(dn, -1);  // RD(v)
        c[static_cast<size_t>(i)] = (mask >> (i - first)) & 1
                                        ? (static_cast<double>(dn) == v ? dn : step_float(dn, 1))
                                        : dn;
      }
      out.push_back(c);
    }
  std::vector<std::vector<float>> ok;
  for (auto& c : out)
    if (plausible(c)) ok.push_back(c);
  return ok;
}

}  // namespace

// ---- the fit

FitResult run_fit(const FitConfig& cfg) {
  validate(cfg);
  FitResult res;
  res.minimax = remez_exp2(cfg.degree, cfg.fix_c0);
  if (cfg.minimax_only) return res;

  const int first = cfg.fix_c0 ? 1 : 0;
  Evaluator ev{cfg.objective, cfg.lo, cfg.hi, cfg.threads, 0, 0, {}};
  Search se{ev, cfg.progress, {}};

  // Starts: the minimax fit, and for the mean-type objectives the L1 fit too; each rounded to
  // float32 in every way of `roundings`, all scored on the proxy.
  std::vector<std::vector<double>> starts = {res.minimax.coeffs_d};
  if (cfg.objective != FitObjective::fp32_maxrel && cfg.objective != FitObjective::bf16_max_ulp)
    starts.push_back(l1_fit_exp2(cfg.degree, cfg.fix_c0).coeffs_d);
  std::vector<std::vector<float>> cands;
  for (const auto& s : starts)
    for (auto& c : roundings(s, first)) cands.push_back(c);
  const auto ck = se.keys("fit: float32 roundings", cands);
  const size_t si = static_cast<size_t>(std::min_element(ck.begin(), ck.end()) - ck.begin());
  std::vector<float> best = cands[si];
  Key best_key = ck[si];

  // Directions: the axes and the LLL-reduced vectors of the lattice at the start.
  const size_t nfree = best.size() - static_cast<size_t>(first);
  std::vector<IntVec> dirs;
  for (size_t i = 0; i < nfree; ++i) {
    dirs.emplace_back(nfree, 0);
    dirs.back()[i] = 1;
  }
  for (const IntVec& u : coefficient_lattice(best, first).u) {
    IntVec neg(u);
    for (auto& v : neg) v = -v;
    if (std::find(dirs.begin(), dirs.end(), u) == dirs.end() &&
        std::find(dirs.begin(), dirs.end(), neg) == dirs.end())
      dirs.push_back(u);
  }
  const bool coarse = ev.range_objective() || cfg.objective == FitObjective::fp32_meanrel;
  res.rounds = pattern_search(se, dirs, first, coarse ? 64 : 8, best, best_key);

  // Confirmation: the best proxy candidates (up to 5) and upstream's, scored exhaustively in one
  // pass; the exact best is the result.
  std::vector<std::pair<Key, std::vector<float>>> ranked;
  for (const auto& [c, k] : se.seen) ranked.emplace_back(k, c);
  std::sort(ranked.begin(), ranked.end());
  const size_t nc = static_cast<size_t>(cfg.degree + 1);
  const std::vector<float> up(kPolyEx2[cfg.degree], kPolyEx2[cfg.degree] + nc);
  std::vector<std::vector<float>> finalists;
  for (size_t i = 0; i < ranked.size() && finalists.size() < kFitFinalists; ++i)
    finalists.push_back(ranked[i].second);
  finalists.push_back(up);
  std::optional<Progress> bar;
  if (cfg.progress) bar.emplace("fit: exhaustive scores of the finalists", 1);
  const auto fk = ev.keys(finalists, true);
  bar.reset();
  const size_t fi = static_cast<size_t>(std::min_element(fk.begin(), fk.end() - 1) - fk.begin());
  res.coeffs = finalists[fi];
  res.objective_value = objective_value(cfg.objective, fk[fi]);
  res.upstream_objective = objective_value(cfg.objective, fk.back());
  res.proxy_candidates = ev.proxy_count;
  res.exact_candidates = ev.exact_count;
  res.candidates = ev.proxy_count + ev.exact_count;
  KnownPass known = ev.last_exact;  // the finalists' pass has the result's and upstream's stats
  known.stats = {known.stats[fi], known.stats.back()};
  const auto sc = score_polys_known(
      {res.coeffs, up}, cfg.lo, cfg.hi, cfg.threads, &known,
      cfg.score_every_objective ? std::nullopt : std::optional<FitObjective>(cfg.objective));
  res.score = sc[0];
  res.upstream = sc[1];
  return res;
}

// ---- report

namespace {

json score_json(const PolyScore& s) {
  return {{"fp32_max_rel", s.fp32_max_rel},
          {"fp32_max_rel_at", s.fp32_max_rel_at},
          {"fp32_mean_rel", s.fp32_mean_rel},
          {"bf16_identical_pct", s.bf16_identical_pct},
          {"bf16_within_1ulp_pct", s.bf16_within_1ulp_pct},
          {"bf16_max_ulp", static_cast<int64_t>(s.bf16_max_ulp)},
          {"fp16_identical_pct", s.fp16_identical_pct},
          {"fp16_within_1ulp_pct", s.fp16_within_1ulp_pct},
          {"fp16_max_ulp", static_cast<int64_t>(s.fp16_max_ulp)}};
}

std::string exact_decimal(float v) { return fmt::format("{:.40g}", static_cast<double>(v)); }

}  // namespace

Report fit_report(const FitConfig& cfg, const FitResult& r) {
  Report rep;
  rep.command = "fit";
  rep.threads = cfg.threads > 0 ? cfg.threads : default_threads();
  rep.params = {{"degree", cfg.degree},
                {"objective", fit_objective_name(cfg.objective)},
                {"range", {cfg.lo, cfg.hi}},
                {"fix_c0", cfg.fix_c0},
                {"minimax_only", cfg.minimax_only},
                {"threads", cfg.threads}};
  json mm = {{"coeffs", r.minimax.coeffs},
             {"max_rel", r.minimax.max_rel},
             {"iterations", r.minimax.iterations}};
  rep.results = {{"minimax", mm}};
  Table tm;
  tm.title = fmt::format("relative minimax of 2^f on [0, 1], degree {}{} (Remez, cpp_bin_float_50)",
                         cfg.degree, cfg.fix_c0 ? ", c0 = 1" : "");
  tm.columns = {"i", "c_i"};
  for (size_t i = 0; i < r.minimax.coeffs.size(); ++i)
    tm.rows.push_back({std::to_string(i), r.minimax.coeffs[i]});
  tm.notes.push_back(
      fmt::format("max relative error (equioscillation level): {:.6e}", r.minimax.max_rel));
  rep.tables.push_back(tm);
  if (cfg.minimax_only) return rep;

  json cs = json::array();
  Table tc;
  tc.title = fmt::format("float32 coefficients, degree {}, objective {}", cfg.degree,
                         fit_objective_name(cfg.objective));
  tc.columns = {"i", "fa4sim fit", "hex", "upstream POLY_EX2"};
  for (size_t i = 0; i < r.coeffs.size(); ++i) {
    const float v = r.coeffs[i];
    cs.push_back({{"decimal", fmt::format("{:.9g}", v)},
                  {"exact", exact_decimal(v)},
                  {"hex", fmt::format("{:a}", v)},
                  {"bits", fmt::format("0x{:08X}", f32_bits(v))}});
    tc.rows.push_back({std::to_string(i), fmt::format("{:.9g}", v), fmt::format("{:a}", v),
                       fmt::format("{:.9g}", kPolyEx2[cfg.degree][i])});
  }
  rep.results["coeffs"] = cs;
  rep.results["coeffs_list"] = [&] {
    std::string s;
    for (float v : r.coeffs) s += (s.empty() ? "" : ",") + fmt::format("{:.9g}", v);
    return s;
  }();
  rep.results["objective"] = {{"name", fit_objective_name(cfg.objective)},
                              {"fit", r.objective_value},
                              {"upstream", r.upstream_objective}};
  rep.results["scores"] = {{"fit", score_json(r.score)}, {"upstream", score_json(r.upstream)}};
  rep.results["candidates_scored"] = r.candidates;
  rep.results["search"] = {{"proxy_candidates", r.proxy_candidates},
                           {"exact_candidates", r.exact_candidates},
                           {"rounds", r.rounds}};
  rep.tables.push_back(tc);

  Table ts;
  ts.title = fmt::format(
      "every objective, exhaustive (fp32: every float of [0, 1); bf16/fp16: value-weighted over [{}, {}))",
      cfg.lo, cfg.hi);
  ts.columns = {"",
                "fp32 max rel",
                "fp32 mean rel",
                "bf16 identical",
                "bf16 <=1 ULP",
                "bf16 max ULP",
                "fp16 identical",
                "fp16 <=1 ULP",
                "fp16 max ULP"};
  auto row = [](const std::string& name, const PolyScore& s) {
    return std::vector<std::string>{name,
                                    fit_fmt_e(s.fp32_max_rel),
                                    fit_fmt_e(s.fp32_mean_rel),
                                    fmt_percent(s.bf16_identical_pct, 4),
                                    fmt_percent(s.bf16_within_1ulp_pct, 4),
                                    fmt::format("{}", static_cast<int64_t>(s.bf16_max_ulp)),
                                    fmt_percent(s.fp16_identical_pct, 4),
                                    fmt_percent(s.fp16_within_1ulp_pct, 4),
                                    fmt::format("{}", static_cast<int64_t>(s.fp16_max_ulp))};
  };
  ts.rows.push_back(row("fa4sim fit", r.score));
  ts.rows.push_back(row("upstream", r.upstream));
  ts.notes.push_back(
      fmt::format("{} candidate polynomials scored on the proxy ranges, {} exhaustively "
                  "(the figures above are exhaustive)",
                  r.proxy_candidates, r.exact_candidates));
  rep.tables.push_back(ts);
  return rep;
}

// ---- coefficient lists

namespace {
// The polynomial stands for 2^f on [0, 1): its values there must be near [1, 2), or the exponent
// splice overflows (1,3e38 gave a max rel of 1.5e38 next to a mean rel of nan) or underflows
// (0,0). Checked in float64 at 1025 points, a bound far looser than any fit's error.
void check_coeff_range(const std::string& what, const std::vector<float>& c) {
  for (int i = 0; i <= 1024; ++i) {
    const double f = i / 1024.0;
    double p = 0;
    for (size_t k = c.size(); k-- > 0;) p = p * f + double(c[k]);
    if (!(p >= 0.5 && p <= 4))
      throw Error(fmt::format("{}: the polynomial is {:.4g} at f = {:g}, far from 2^f", what, p, f),
                  "the coefficients approximate 2^f on [0, 1): its values must stay within 0.5..4");
  }
}
}  // namespace

std::vector<float> parse_coeff_list(const std::string& what, const std::string& text) {
  std::string clean;
  bool comment = false;
  for (char ch : text) {
    if (ch == '#') comment = true;
    if (ch == '\n') comment = false;
    if (comment) continue;
    clean += (ch == ',' || ch == '\n' || ch == '\t' || ch == '\r') ? ' ' : ch;
  }
  // Empty fields between commas are errors: count the commas' fields on the raw text too.
  std::vector<float> out;
  std::istringstream ss(clean);
  std::string tok;
  while (ss >> tok) {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(tok.c_str(), &end);
    if (end == tok.c_str() || end != tok.c_str() + tok.size())
      throw Error(
          fmt::format("{}: '{}' is not a number", what, printable_text(tok)),
          "give c0,c1,... as decimal or hex floats, e.g. 1,0.695146143,0.227564394,0.0771190897");
    if (!std::isfinite(v))
      throw Error(fmt::format("{}: coefficient {} is '{}', not finite", what, out.size(), tok),
                  "every coefficient must be a finite float32 value");
    const float f = static_cast<float>(v);
    if (!std::isfinite(f))
      throw Error(fmt::format("{}: coefficient {} = {} overflows float32", what, out.size(), tok),
                  "every coefficient must be a finite float32 value");
    out.push_back(f);
  }
  if (out.size() < 2 || out.size() > static_cast<size_t>(kExp2MaxDegree + 1))
    throw Error(
        fmt::format("{}: {} coefficient{} given", what, out.size(), out.size() == 1 ? "" : "s"),
        "give 2 to 6 (c0,c1,... for degrees 1 to 5)");
  // A comma-separated field that is empty ("1,,2" or a trailing comma) is malformed.
  std::string fields;
  comment = false;
  for (char ch : text) {
    if (ch == '#') comment = true;
    if (ch == '\n') comment = false, fields += ' ';
    if (!comment && ch != '\n') fields += ch;
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i] != ',') continue;
    size_t j = i + 1;
    while (j < fields.size() && (fields[j] == ' ' || fields[j] == '\t' || fields[j] == '\r')) ++j;
    size_t k = i;
    while (k > 0 && (fields[k - 1] == ' ' || fields[k - 1] == '\t' || fields[k - 1] == '\r')) --k;
    if (j >= fields.size() || fields[j] == ',' || k == 0)
      throw Error(fmt::format("{}: an empty field in '{}'", what, text),
                  "separate the numbers by single commas");
  }
  check_coeff_range(what, out);
  return out;
}

std::vector<float> load_coeffs(const std::string& what, const std::string& spec) {
  if (spec.empty()) throw Error(fmt::format("{} needs c0,c1,... or a file name", what));
  char* end = nullptr;
  (void)std::strtod(spec.c_str(), &end);
  const bool one_number = end != spec.c_str() && *end == '\0';
  if (spec.find(',') != std::string::npos || one_number) return parse_coeff_list(what, spec);
  std::error_code ec;
  if (std::filesystem::is_directory(spec, ec))
    throw Error(fmt::format("{}: '{}' is a directory", what, spec),
                "give c0,c1,... or a file holding them (commas, blanks or new lines between)");
  std::ifstream in(spec);
  if (!in)
    throw Error(fmt::format("{}: cannot read '{}'", what, spec),
                "give c0,c1,... or a file holding them (commas, blanks or new lines between)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_coeff_list(fmt::format("{} ({})", what, spec), ss.str());
}

}  // namespace fa4sim
