// NumPy's default_rng streams (include/fa4sim/util/numpy_rng.h) checked bit for bit against numpy
// itself: python3 writes the raw draws to a file, the test compares every bit. Without python3 +
// numpy the test is skipped visibly (GTEST_SKIP), never passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_helpers.h"
#include "fa4sim/util/numpy_rng.h"

namespace fa4sim {
namespace {

bool have_numpy() { return std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

template <class T>
std::vector<T> read_raw(const std::string& path) {
  const std::string b = test::slurp(path);
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

TEST(NumpyRng, MatchesNumpyBitForBit) {
  if (!have_numpy())
    GTEST_SKIP()
        << "python3 with numpy not found: cannot cross-check (scripts/setup.sh installs it)";
  const auto dir = test::temp_dir("numpy-rng");
  const int kNormals = 300000, kUniform = 1000;
  for (uint64_t seed : {uint64_t(1), uint64_t(0), uint64_t(12345), (uint64_t(1) << 40) + 7}) {
    const std::string base = (dir / ("s" + std::to_string(seed))).string();
    const std::string py =
        "import numpy as np, sys\n"
        "s=int(sys.argv[1]); b=sys.argv[2]\n"
        "np.random.SeedSequence(s).generate_state(8, np.uint32).tofile(b+'.ss')\n"
        "np.random.PCG64(s).random_raw(16).astype(np.uint64).tofile(b+'.raw')\n"
        "g=np.random.default_rng(s)\n"
        "g.standard_normal(" +
        std::to_string(kNormals) +
        ").tofile(b+'.norm')\n"
        "g.random(" +
        std::to_string(kUniform) +
        ").tofile(b+'.unif')\n"
        "g.normal(0, 6, (3, 7)).tofile(b+'.n6')\n";
    const std::string script = base + ".py";
    std::ofstream(script) << py;
    ASSERT_EQ(std::system(("python3 " + script + " " + std::to_string(seed) + " " + base).c_str()),
              0);

    const auto ss = read_raw<uint32_t>(base + ".ss");
    EXPECT_EQ(ss, numpy_seed_sequence_state(seed, 8)) << "SeedSequence, seed " << seed;

    NumpyGenerator raw(seed);
    const auto r = read_raw<uint64_t>(base + ".raw");
    ASSERT_EQ(r.size(), 16u);
    for (size_t i = 0; i < r.size(); ++i) ASSERT_EQ(raw.next_uint64(), r[i]) << "PCG64 draw " << i;

    NumpyGenerator g(seed);
    const auto norm = read_raw<double>(base + ".norm");
    ASSERT_EQ(norm.size(), size_t(kNormals));
    size_t mismatches = 0, first = 0;
    for (size_t i = 0; i < norm.size(); ++i) {
      const double x = g.standard_normal();
      if (std::memcmp(&x, &norm[i], sizeof x) != 0 && mismatches++ == 0) first = i;
    }
    EXPECT_EQ(mismatches, 0u) << "standard_normal, seed " << seed << ", first mismatch at "
                              << first;
    // The same draws four at a time (standard_normals), in uneven pieces: the stream must not
    // depend on how it is cut.
    NumpyGenerator g4(seed);
    std::vector<double> batch(norm.size());
    for (size_t at = 0, piece = 1; at < batch.size(); at += piece, piece = piece * 3 % 1001 + 1)
      g4.standard_normals(batch.data() + at, std::min(piece, batch.size() - at));
    EXPECT_EQ(std::memcmp(batch.data(), norm.data(), norm.size() * sizeof(double)), 0)
        << "standard_normals, seed " << seed;
    EXPECT_EQ(g4.next_uint64(), NumpyGenerator(g).next_uint64()) << "state after standard_normals";
    for (double u : read_raw<double>(base + ".unif")) ASSERT_EQ(g.random(), u);
    const std::vector<float> s6 = g.scores_f32(6.0, 0.0, 3, 7);
    const auto n6 = read_raw<double>(base + ".n6");
    for (size_t i = 0; i < n6.size(); ++i) ASSERT_EQ(s6[i], float(n6[i]));
    std::printf(
        "  seed %llu: %d standard normals, %d uniforms, 21 normal(0,6): bit-identical to numpy\n",
        static_cast<unsigned long long>(seed), kNormals, kUniform);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fa4sim
