// parallel_merge.h: the other half of parallel_chunks (parallel.h): per-chunk results combined in
// chunk order, whatever order the chunks finish in, so that a reduction is bit-identical for any
// thread count. A finished chunk waits until every earlier chunk has been merged (at most about
// one entry per thread waits).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

namespace fa4sim {

template <class T>
class OrderedMerge {
 public:
  // `merge` folds one chunk's result into the caller's total; it runs under the lock, chunk 0
  // first, then 1, 2, ...
  explicit OrderedMerge(std::function<void(T&)> merge) : merge_(std::move(merge)) {}

  // Hands over chunk `chunk`'s result (any thread, each chunk once).
  void add(uint64_t chunk, T result) {
    std::lock_guard<std::mutex> lk(mu_);
    pending_.emplace(chunk, std::move(result));
    for (auto it = pending_.find(next_); it != pending_.end(); it = pending_.find(next_)) {
      merge_(it->second);
      pending_.erase(it);
      ++next_;
    }
  }

  // Chunks merged so far (all of them once parallel_chunks has returned).
  uint64_t merged() const {
    std::lock_guard<std::mutex> lk(mu_);
    return next_;
  }

 private:
  std::function<void(T&)> merge_;
  std::map<uint64_t, T> pending_;
  uint64_t next_ = 0;
  mutable std::mutex mu_;
};

}  // namespace fa4sim
