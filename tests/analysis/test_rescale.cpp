// Tests for rescale.h: the experiment's --dist parsing and block order, fa4sim's own score stream,
// and compute_rescale / rescale_report against run_rescale.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "fa4sim/analysis/rescale.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/numpy_rng.h"

namespace fa4sim {
namespace {

// Parsing of the experiment's distributions (the --exp modes: test_row_sim).
TEST(Rescale, ParseDist) {
  EXPECT_EQ(parse_score_dist("normal:1.5").label, "normal:1.5");
  EXPECT_EQ(parse_score_dist("rise:24").total, 24.0);
  EXPECT_EQ(parse_score_dist("rise:24").sigma, 1.5);
  EXPECT_EQ(parse_score_dist("rise:96:2").sigma, 2.0);
  EXPECT_EQ(parse_score_dist("peaked").sigma, 6.0);
  EXPECT_THROW(parse_score_dist("gauss:1"), Error);
  EXPECT_THROW(parse_score_dist("normal:-1"), Error);
  EXPECT_EQ(resolve_order(OrderChoice::auto_, parse_score_dist("rise:24")), BlockOrder::forward);
  EXPECT_EQ(resolve_order(OrderChoice::auto_, parse_score_dist("file:x.npy")), BlockOrder::reverse);
}

// fa4sim's own generator: draw_scores_fa4sim (four draws at a time, scalar redo off the fast path)
// = the scalar stream it documents: splitmix64 seeded per (seed, "scores:" + label, row), NumPy's
// ziggurat on its bits, score = float(sigma * z [+ TOTAL * k / keys]). 3 x 5000 draws include
// about 100 that leave the ziggurat's fast path.
TEST(Rescale, OwnGeneratorIsTheDocumentedScalarStream) {
  auto mix = [](uint64_t& st) {
    uint64_t z = (st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const int rows = 3, keys = 5000;
  for (const char* spec : {"normal:1.5", "peaked", "rise:24"}) {
    const ScoreDist dist = parse_score_dist(spec);
    const auto S = draw_scores_fa4sim(dist, rows, keys, 7, 2);
    for (int r = 0; r < rows; ++r) {
      uint64_t h = 0xCBF29CE484222325ull;
      for (unsigned char c : "scores:" + dist.label) h = (h ^ c) * 0x100000001B3ull;
      uint64_t s0 = 7 ^ h;
      uint64_t st = mix(s0) ^ (uint64_t(r) * 0xD1B54A32D192ED03ull);
      mix(st);
      for (int k = 0; k < keys; ++k) {
        const double z = ziggurat_normal([&] { return mix(st); });
        const double sigma = dist.kind == ScoreDist::Kind::peaked ? 6.0 : dist.sigma;
        const float want = dist.kind == ScoreDist::Kind::rise
                               ? float(sigma * z + dist.total * double(k) / double(keys))
                               : float(sigma * z);
        ASSERT_EQ(std::bit_cast<uint32_t>(S[size_t(r) * size_t(keys) + size_t(k)]),
                  std::bit_cast<uint32_t>(want))
            << spec << " row " << r << " key " << k;
      }
    }
  }
}

// run_rescale is rescale_report of compute_rescale; the result holds the default distribution,
// one run per (distribution, tau, dtype) with one sample per seed, and the one-shot per seed.
TEST(Rescale, ComputeThenReportIsRunRescale) {
  RescaleConfig cfg;
  cfg.rows = 40, cfg.keys = 512, cfg.block = 64, cfg.d = 8;
  cfg.taus = {0.0, 8.0};
  cfg.dtypes = {&kBF16, &kFP16};
  cfg.seeds = 2;
  cfg.threads = 2;
  const RescaleResult r = compute_rescale(cfg);
  ASSERT_EQ(r.dists.size(), 1u);
  EXPECT_EQ(r.dists[0].label, "normal:1.5");
  EXPECT_EQ(r.rows, 40);
  EXPECT_EQ(r.keys, 512);
  ASSERT_EQ(r.runs.size(), 4u);
  EXPECT_EQ(r.runs[1].tau, 0u);
  EXPECT_EQ(r.runs[1].dtype, 1u);
  for (const RescaleRunSamples& s : r.runs) {
    EXPECT_EQ(s.rows_pct.size(), 2u);
    EXPECT_EQ(s.rel_l2.size(), 2u);
  }
  EXPECT_EQ(r.oneshot_p1.size(), 2u);  // the one-shot experiment, once per seed
  EXPECT_EQ(r.oneshot_p2u.size(), 2u);
  const Report a = rescale_report(cfg, r), b = run_rescale(cfg);
  EXPECT_EQ(a.results.dump(), b.results.dump());
  EXPECT_EQ(a.params.dump(), b.params.dump());
}

}  // namespace
}  // namespace fa4sim
