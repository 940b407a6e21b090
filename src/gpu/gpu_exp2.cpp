// gpu_exp2.cpp: `fa4sim exp2 --hardware` (see gpu_exp2.h).
#include "fa4sim/gpu/gpu_exp2.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/formats.h"

namespace fa4sim {

namespace {

// Note [Exhaustive MUFU table]
// run_exp2 calls the evaluated function once per block of 512 inputs, from every worker thread;
// one device round trip per block made `--exhaustive` (2^31 inputs) take hours. In exhaustive
// runs the inputs are consecutive floats, so the MUFU results come instead from whole runs of
// 2^22 consecutive floats of the range (one device call each, 16 MiB), kept while the workers
// move through them (they take chunks in increasing order) and looked up per block. Inputs
// outside the block's run (the +0 padding of the last block) go to the device directly.
class MufuTable {
 public:
  MufuTable(float x_first, float x_last, size_t keep)
      : k0_(key_of(x_first)), k1_(key_of(x_last)), keep_(keep) {}

  void lookup(std::span<const float> x, std::span<float> y) {
    if (x.empty()) return;
    const int64_t run = (key_of(x[0]) - k0_) >> kLog2Run;
    const auto t = table(run);
    const int64_t base = k0_ + (run << kLog2Run);
    std::vector<float> rest_x;
    std::vector<size_t> rest_i;
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t k = key_of(x[i]) - base;
      if (k >= 0 && k < static_cast<int64_t>(t->size())) {
        y[i] = f32_from_bits((*t)[static_cast<size_t>(k)]);
      } else {
        rest_x.push_back(x[i]);
        rest_i.push_back(i);
      }
    }
    if (!rest_x.empty()) {
      std::vector<uint32_t> bits(rest_x.size());
      {
        std::lock_guard<std::mutex> lk(device_);
        gpu::run_ex2_mufu(rest_x, bits);
      }
      for (size_t j = 0; j < rest_i.size(); ++j) y[rest_i[j]] = f32_from_bits(bits[j]);
    }
  }

 private:
  static constexpr int kLog2Run = 22;
  std::shared_ptr<const std::vector<uint32_t>> table(int64_t run) {
    std::lock_guard<std::mutex> lk(mu_);
    if (auto it = runs_.find(run); it != runs_.end()) return it->second;
    const int64_t first = k0_ + (run << kLog2Run);
    const int64_t last = std::min(k1_, first + (int64_t{1} << kLog2Run) - 1);
    std::vector<float> xs(static_cast<size_t>(last - first + 1));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = float_of_key(first + static_cast<int64_t>(i));
    auto bits = std::make_shared<std::vector<uint32_t>>(xs.size());
    {
      std::lock_guard<std::mutex> dk(device_);
      gpu::run_ex2_mufu(xs, *bits);
    }
    while (runs_.size() >= keep_) runs_.erase(runs_.begin());  // the lowest run: workers moved on
    runs_.emplace(run, bits);
    return bits;
  }

  int64_t k0_, k1_;
  size_t keep_;
  std::mutex mu_, device_;
  std::map<int64_t, std::shared_ptr<const std::vector<uint32_t>>> runs_;
};

}  // namespace

Exp2HardwareResult run_exp2_hardware(const Exp2Config& cfg) {
  validate(cfg);
  gpu::require();
  // The workers' chunks (2^16 inputs, handed out in order) lie in one or two runs of 2^22 at a
  // time; 4 kept runs are 64 MiB (Note [Exhaustive MUFU table]).
  std::optional<MufuTable> mufu_table;
  if (cfg.exhaustive) mufu_table.emplace(exp2_first_input(cfg.lo), exp2_last_input(cfg.hi), 4);
  return run_exp2_vs_mufu(cfg, [&](std::span<const float> x, std::span<float> y) {
    if (mufu_table) {
      mufu_table->lookup(x, y);
      return;
    }
    std::vector<uint32_t> bits(x.size());
    gpu::run_ex2_mufu(x, bits);
    for (size_t i = 0; i < x.size(); ++i) y[i] = f32_from_bits(bits[i]);
  });
}

void add_exp2_hardware(Report& r, const Exp2Config& cfg, const Exp2HardwareResult& hw) {
  const auto dev = gpu::device_info();
  add_exp2_vs_mufu(r, cfg, hw, "hardware", dev.name,
                   json{{"device", dev.name}, {"driver", dev.driver_version}});
}

}  // namespace fa4sim
