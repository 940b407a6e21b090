// progress.h: a progress bar on stderr, drawn only when stderr is a TTY.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace fa4sim {

class Progress {
 public:
  Progress(std::string label, uint64_t total);
  ~Progress();                 // finishes the line if anything was drawn
  void update(uint64_t done);  // cheap; redraws at most ~10 times a second
  bool enabled() const { return enabled_; }

 private:
  std::string label_;
  uint64_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace fa4sim
