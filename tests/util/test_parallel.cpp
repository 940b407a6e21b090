// parallel module: chunk boundaries do not depend on the thread count.
#include "fa4sim/util/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

using namespace fa4sim;

TEST(Parallel, EveryItemOnceAndChunkMapFixed) {
  const uint64_t n = 1000, cs = 64;
  for (int threads : {1, 2, 3, 7}) {
    std::vector<std::atomic<int>> seen(n);
    std::vector<uint64_t> begins(chunk_count(n, cs), ~0ull);
    parallel_chunks(n, cs, threads, [&](uint64_t c, uint64_t b, uint64_t e) {
      begins[c] = b;
      for (uint64_t i = b; i < e; ++i) seen[i]++;
    });
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << i;
    for (uint64_t c = 0; c < begins.size(); ++c) EXPECT_EQ(begins[c], c * cs);
  }
}

TEST(Parallel, ExceptionPropagates) {
  EXPECT_THROW(parallel_chunks(100, 10, 2,
                               [](uint64_t c, uint64_t, uint64_t) {
                                 if (c == 3) throw std::runtime_error("boom");
                               }),
               std::runtime_error);
}
