#include "fa4sim/util/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace fa4sim {

int default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void parallel_chunks(uint64_t n, uint64_t chunk_size, int threads,
                     const std::function<void(uint64_t, uint64_t, uint64_t)>& body,
                     const std::function<void(uint64_t)>& on_chunk_done) {
  if (n == 0) return;
  if (chunk_size == 0) chunk_size = 1;
  const uint64_t chunks = chunk_count(n, chunk_size);
  if (threads <= 0) threads = default_threads();
  const int workers = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(threads), chunks));
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  uint64_t done = 0;
  std::exception_ptr failure;
  auto worker = [&] {
    for (;;) {
      const uint64_t c = next.fetch_add(1);
      if (c >= chunks) return;
      const uint64_t b = c * chunk_size, e = std::min(n, b + chunk_size);
      try {
        body(c, b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu);
        if (!failure) failure = std::current_exception();
        next.store(chunks);
        return;
      }
      if (on_chunk_done) {
        std::lock_guard<std::mutex> lk(mu);
        done += e - b;
        on_chunk_done(done);
      }
    }
  };
  if (workers <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(workers));
    for (int t = 0; t < workers; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace fa4sim
