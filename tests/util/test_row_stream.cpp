// Tests for row_stream.h: fa4sim's counter-based row streams. The AVX2 normals() is normal() draw
// for draw (and leaves the same state), and the seeding and uniforms are the documented ones.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "fa4sim/core/splitmix.h"
#include "fa4sim/util/row_stream.h"

namespace fa4sim {
namespace {

// Lengths that are and are not multiples of four; 3 x 10000 draws include about 200 that leave
// the ziggurat's fast path (the scalar redo).
TEST(RowStream, NormalsAreNormalDrawForDraw) {
  for (int n : {1, 3, 4, 7, 10000})
    for (uint64_t row : {uint64_t(0), uint64_t(1), uint64_t(12345)}) {
      RowStream a(7, "scores:normal:1.5", row);
      RowStream b = a;
      std::vector<double> x(static_cast<size_t>(n));
      a.normals(x.data(), n);
      for (int i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<uint64_t>(x[size_t(i)]), std::bit_cast<uint64_t>(b.normal()))
            << "n " << n << " row " << row << " draw " << i;
      EXPECT_EQ(a.state, b.state) << "n " << n << " row " << row;
    }
}

// state = splitmix64_next(seed ^ fnv1a(stream)) ^ (row * kSplitmixSeedMul), advanced once;
// uniform() = the top 53 bits of the next draw times 2^-53.
TEST(RowStream, DocumentedSeedingAndUniform) {
  EXPECT_EQ(fnv1a(""), 0xCBF29CE484222325ull);   // FNV-1a's offset basis
  EXPECT_EQ(fnv1a("a"), 0xAF63DC4C8601EC8Cull);  // the published FNV-1a 64 value of "a"
  uint64_t s = 5 ^ fnv1a("V");
  uint64_t st = splitmix64_next(s) ^ (3 * kSplitmixSeedMul);
  splitmix64_next(st);
  RowStream g(5, "V", 3);
  EXPECT_EQ(g.state, st);
  for (int i = 0; i < 1000; ++i) {
    const double want = double(splitmix64_next(st) >> 11) * 0x1p-53;
    const double u = g.uniform();
    ASSERT_EQ(std::bit_cast<uint64_t>(u), std::bit_cast<uint64_t>(want)) << i;
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace fa4sim
