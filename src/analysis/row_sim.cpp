// row_sim.cpp: the pieces `fa4sim rescale` and `fa4sim attention` share around the online-softmax
// simulator (see row_sim.h).
#include "fa4sim/analysis/row_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/parse.h"

namespace fa4sim {

// ---- the simulator's knobs

Exp2Choice parse_exp2_choice(const std::string& s) {
  Exp2Choice e;
  if (s == "exact") {
    e.mode = Exp2Mode::exact;
  } else if (s == "mufu") {
    e.mode = Exp2Mode::ex2_approx;
    e.hardware = true;
  } else if (s == "cr") {
    e.mode = Exp2Mode::rounded_fp32;  // the MUFU's functions correctly rounded: the fast mode
  } else if (s.size() == 4 && s.rfind("emu", 0) == 0 && s[3] >= '0' && s[3] <= '5') {
    e.mode = Exp2Mode::emu;
    e.degree = s[3] - '0';
    e.hardware = true;  // acc_scale, 1 / row_sum and log2 still run on the MUFU
  } else if (s.rfind("schedule:", 0) == 0) {
    const EmulationSchedule v = parse_emulation_schedule("--exp schedule:", s.substr(9));
    e.mode = Exp2Mode::schedule;
    e.freq = v.freq, e.res = v.res, e.start_frg = v.start_frg;
    e.hardware = true;
  } else {
    throw Error(fmt::format("unknown --exp '{}'", s), kExp2ChoiceHint);
  }
  return e;
}

EmulationSchedule parse_emulation_schedule(const std::string& what, const std::string& text) {
  const std::vector<std::string> parts = split_on(text, ',');
  if (parts.size() > 3)
    throw Error(fmt::format("{} expects freq[,res[,start_frg]], got '{}'", what, text),
                "e.g. 10,4,1");
  const char* names[] = {"freq", "res", "start_frg"};
  const std::string valid = "valid: 0..2^20";
  int v[3] = {0, 4, 0};
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::optional<double> x = strtod_whole(trim_blanks(parts[i]));
    if (!x || *x != std::floor(*x))
      throw Error(fmt::format("{} {} expects an integer, got '{}'", what, names[i], parts[i]),
                  valid);
    if (*x < 0 || *x > kMaxScheduleValue)
      throw Error(fmt::format("{} {} = {} is out of range", what, names[i], parts[i]), valid);
    v[i] = int(*x);
  }
  if (v[0] == 0 && parts.size() == 1) v[1] = 0;  // "0": nothing emulated
  if (v[0] > 0 && v[1] >= v[0])
    throw Error(fmt::format("{} {}: res = {} must be below freq = {}", what, text, v[1], v[0]),
                "res of every freq columns are emulated: e.g. 10,4,1 (upstream uses res 4 or 6)");
  if (v[0] == 0 && (v[1] != 0 || v[2] != 0))
    throw Error(
        fmt::format("{} {}: freq = 0 emulates nothing, so res and start_frg must be 0", what, text),
        "e.g. 0 (no emulation) or 10,4,1");
  return {v[0], v[1], v[2]};
}

std::string exp2_choice_name(const Exp2Choice& e) {
  switch (e.mode) {
    case Exp2Mode::exact: return "exact";
    case Exp2Mode::rounded_fp32: return "cr";
    case Exp2Mode::ex2_approx: return "mufu";
    case Exp2Mode::emu: return fmt::format("emu{}", e.degree);
    default: return fmt::format("schedule:{},{},{}", e.freq, e.res, e.start_frg);
  }
}

SafetyCheck safety_check(const Format& f, double tau, double max_offset) {
  SafetyCheck c;
  c.dtype = f.name;
  c.tau = tau;
  c.max_offset = max_offset;
  c.log2_max = f.log2_max;
  c.largest_safe_tau = f.log2_max - max_offset;
  c.safe = max_offset + tau < f.log2_max;
  if (!c.safe) {
    const double over = max_offset + tau - f.log2_max;
    c.explanation = fmt::format(
        "tau {:g} with {} and max_offset {:g} saturates P: a max that lags by up to tau lets P "
        "reach 2^(max_offset + tau) = 2^{:g} = {:g}, above {}'s largest value {:g} = 2^{:.3f}; "
        "the conversion clips such P by up to {:.3g}x ({:.3f} in log2) while row_sum counts the "
        "unclipped value, so the output shrinks (upstream issue #2716)",
        tau, f.name, max_offset, max_offset + tau, std::exp2(max_offset + tau), f.name,
        f.max_finite, f.log2_max, std::exp2(over), over);
  }
  return c;
}

// ---- running it over score matrices

void check_scores(const float* s, int rows, int keys, const std::string& label) {
  const size_t n = size_t(rows) * size_t(keys);
  for (size_t j = 0; j < n; ++j)
    if (std::isnan(s[j]) || s[j] == std::numeric_limits<float>::infinity())
      throw Error(
          fmt::format("{}: score [{}, {}] is {}", label, j / size_t(keys), j % size_t(keys), s[j]),
          "scores must be finite; -inf marks a masked key");
}

RowBlockRunResult simulate_rows(const SoftmaxParams& params, const float* S, int rows, int keys,
                                int block, BlockOrder order, const float* V, int d, int threads,
                                uint8_t* rescale_flags) {
  RowBlockRunResult res;
  const int wr = std::max(params.warp_rows, 1);
  const int n_warps = (rows + wr - 1) / wr;
  const int n_blocks = (keys + block - 1) / block;
  std::vector<RescaleCounts> per(static_cast<size_t>(n_warps));
  if (V != nullptr) res.O.assign(size_t(rows) * size_t(d), 0.0f);
  res.lse.assign(size_t(rows), 0.0f);
  // Each thread takes a contiguous group of (at most 16) warps and walks the key tiles in the outer loop, so
  // a tile of V (64 KiB at 128 keys x d = 128) is read from L2 by every warp of the group. The
  // warps are independent simulators: grouping changes no value.
  const int n_threads = std::max(1, std::min(threads > 0 ? threads : default_threads(), n_warps));
  const uint64_t group = uint64_t(std::min((n_warps + n_threads - 1) / n_threads, 16));
  parallel_chunks(uint64_t(n_warps), group, threads, [&](uint64_t, uint64_t w0, uint64_t w1) {
    std::vector<RowBlockSim> sims;
    for (uint64_t w = w0; w < w1; ++w)
      sims.emplace_back(params, std::min(wr, rows - int(w) * wr), V != nullptr ? d : 0,
                        /*counts_only=*/V == nullptr);
    for (int i = 0; i < n_blocks; ++i) {
      const int b = order == BlockOrder::forward ? i : n_blocks - 1 - i;
      const int k0 = b * block;
      const int n = std::min(block, keys - k0);
      for (uint64_t w = w0; w < w1; ++w) {
        RowBlockSim& sim = sims[w - w0];
        sim.process_tile(S + size_t(w) * size_t(wr) * size_t(keys) + size_t(k0), size_t(keys),
                         V != nullptr ? V + size_t(k0) * size_t(d) : nullptr, size_t(d), n);
        if (rescale_flags)
          for (int r = 0; r < sim.rows(); ++r)
            rescale_flags[(size_t(w) * size_t(wr) + size_t(r)) * size_t(n_blocks) + size_t(b)] =
                sim.last_acc_scale()[size_t(r)] < 1.0f;
      }
    }
    for (uint64_t w = w0; w < w1; ++w) {
      const int r0 = int(w) * wr;
      sims[w - w0].finalize(V != nullptr ? res.O.data() + size_t(r0) * size_t(d) : nullptr,
                            size_t(d), res.lse.data() + r0);
      per[w] = sims[w - w0].counts();
    }
  });
  for (const auto& c : per) res.counts += c;
  return res;
}

}  // namespace fa4sim
