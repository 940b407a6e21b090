#include "fa4sim/util/progress.h"

#include <unistd.h>

#include <cstdio>

namespace fa4sim {

Progress::Progress(std::string label, uint64_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) == 1) {
  start_ = last_ = std::chrono::steady_clock::now();
}

Progress::~Progress() {
  if (drawn_) {
    update(total_);
    std::fputc('\n', stderr);
  }
}

void Progress::update(uint64_t done) {
  if (!enabled_ || total_ == 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  const double frac = static_cast<double>(done) / static_cast<double>(total_);
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double eta = frac > 0 ? secs * (1 - frac) / frac : 0.0;
  constexpr int kWidth = 30;
  const int fill = static_cast<int>(frac * kWidth);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < fill ? '#' : '.';
  bar[kWidth] = 0;
  std::fprintf(stderr, "\r%s [%s] %5.1f%%  %.1fs elapsed, ~%.1fs left ", label_.c_str(), bar,
               100 * frac, secs, eta);
  std::fflush(stderr);
}

}  // namespace fa4sim
