// row_sim.h: what `fa4sim rescale` and `fa4sim attention` share around the online-softmax
// simulator (core/online_softmax.h): the --exp choice (parsed and named), the kernel's safety
// assertion max_offset + tau < log2(dtype_max), the score check, and simulate_rows, which runs
// RowBlockSim over a whole score matrix, warps in parallel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fa4sim/core/formats.h"
#include "fa4sim/analysis/row_block_sim.h"

namespace fa4sim {

// Parses "exact", "mufu", "cr", "emuN" (N = 0..5), "schedule:FREQ[,RES[,START_FRG]]". Throws
// Error. mufu, emuN and schedule run the MUFU's functions (exp2 where not emulated, acc_scale,
// 1 / row_sum, log2) through the H200's bit-exact models (Exp2Choice::hardware; the tables load
// once, about 1.5 s); cr is the fast mode: the same steps with correctly rounded float32
// functions, not bit-exact with the hardware (no tables loaded).
Exp2Choice parse_exp2_choice(const std::string& s);
inline constexpr const char* kExp2ChoiceHint =
    "valid: exact, mufu, cr, emu0..emu5, schedule:FREQ[,RES[,START_FRG]]";

// The one grammar of an emulation schedule (roofline --schedule, --exp schedule:):
// FREQ[,RES[,START_FRG]], integers 0..2^20, RES defaults to 4 and START_FRG to 0; RES < FREQ,
// except FREQ = 0 (nothing emulated), where RES and START_FRG must be 0 or left out. `what`
// names the option in errors ("--schedule", "--exp schedule:").
struct EmulationSchedule {
  int freq = 0, res = 0, start_frg = 0;
};
inline constexpr int kMaxScheduleValue = 1 << 20;
EmulationSchedule parse_emulation_schedule(const std::string& what, const std::string& text);
std::string exp2_choice_name(const Exp2Choice& e);

// The kernel's assertion max_offset + tau < log2(dtype_max), with what saturates and by how much.
struct SafetyCheck {
  std::string dtype;
  double tau = 0, max_offset = 0, log2_max = 0;
  bool safe = true;
  double largest_safe_tau = 0;  // supremum: safe iff tau < largest_safe_tau (may be <= 0)
  std::string explanation;      // empty when safe
};
SafetyCheck safety_check(const Format& f, double tau, double max_offset);

// Refuses NaN and +inf scores (-inf marks a masked key): Error "<label>: score [r, k] is nan".
void check_scores(const float* s, int rows, int keys, const std::string& label);

struct RowBlockRunResult {
  RescaleCounts counts;
  std::vector<float> O;    // rows x d (empty when V is null)
  std::vector<float> lse;  // rows
};
// Runs the simulator over a whole (rows x keys) score matrix: row-blocks of params.warp_rows
// rows in parallel, key tiles of `block` keys in `order` (a ragged last block is processed with
// its valid keys only). V may be nullptr: counts only (RowBlockSim's counts_only path; O and lse
// are then not computed). Deterministic for any thread count.
// rescale_flags (optional, rows x ceil(keys / block), indexed by key block in key order): 1 where
// that row rescaled (acc_scale < 1) on visiting that block, else 0 (the first block visited: 0).
RowBlockRunResult simulate_rows(const SoftmaxParams& params, const float* S, int rows, int keys,
                                int block, BlockOrder order, const float* V, int d, int threads,
                                uint8_t* rescale_flags = nullptr);

}  // namespace fa4sim
