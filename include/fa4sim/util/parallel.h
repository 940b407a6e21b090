// parallel.h: a deterministic parallel-for over [0, n) in fixed chunks.
//
// Work is cut into chunks whose boundaries depend only on n and chunk size, never on the
// thread count, and per-chunk results are combined in chunk order by the caller. That makes
// every reduction bit-identical for any --threads value.
#pragma once

#include <cstdint>
#include <functional>

namespace fa4sim {

// Number of threads to use when the user says 0 ("all cores").
int default_threads();

// Calls body(chunk_index, begin, end) for every chunk of [0, n), chunk_size items each (the
// last may be shorter), on `threads` threads (0 = default_threads()). Chunks are handed out
// dynamically; the mapping chunk -> range is fixed. `on_chunk_done` (optional) is called
// under a lock after each chunk with the number of items finished so far (for progress bars).
void parallel_chunks(uint64_t n, uint64_t chunk_size, int threads,
                     const std::function<void(uint64_t chunk, uint64_t begin, uint64_t end)>& body,
                     const std::function<void(uint64_t done)>& on_chunk_done = {});

inline uint64_t chunk_count(uint64_t n, uint64_t chunk_size) {
  return (n + chunk_size - 1) / chunk_size;
}

}  // namespace fa4sim
