// schedule_sim.h: the discrete-event simulation of one SM sub-partition running a CTA's main
// loop (Note [Schedule model] in include/fa4sim/analysis/schedule.h). Internal to src/analysis.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace fa4sim::sched {

enum Pipe : uint8_t { kIssue = 0, kFma, kAlu, kMufu, kShfl, kPipes };

struct Instr {
  Pipe pipe = kIssue;
  int dep1 = -1, dep2 = -1;  // indices of earlier instructions of the same program
  int width = 1;  // 2: a packed f32x2 instruction (one issue slot, twice the pipe's lanes)
  bool stalls_tensor = true;  // an FMA-pipe instruction that holds the tensor unit back
};

using Program = std::vector<Instr>;

struct PipeRates {
  std::array<double, kPipes> occupancy{};  // clocks a warp instruction holds the pipe
  std::array<double, kPipes> latency{};    // clocks until the result can be used
};

// What one warp does in one main-loop iteration. GEMM jobs are in clocks of the tensor unit.
struct IterationWork {
  Program issue_gemms;  // instructions that issue the iteration's MMAs
  double gemm0 = 0;     // S = Q K^T (this iteration)
  double gemm1 = 0;     // O += P V (the previous iteration's P; 0 on the first)
  Program softmax;      // after GEMM0 completes
  Program post;         // after GEMM1 completes (convert P, rescale O)
  Program rescale;      // between the issue of GEMM0 and of GEMM1 (O rescaled before O += PV; GEMM1
                        // enters the tensor unit once it is done)
  double extra_wait = 0;  // exposed clocks after the softmax (calibrated: tau's vote and branch)
};

struct SimConfig {
  int warps = 1;             // consumer warps per SMSP
  bool turn_barrier = true;  // warps issue their MMAs in turn (upstream's scheduler barrier)
  bool pv_first = false;  // O += P V enters the tensor unit before the next S (sm100: P aliases S)
  int window = 8;
  double gemm_latency = 0;  // clocks from an MMA's end to the waiting warp's wake-up
  double fma_tensor_stall =
      0;  // tensor clocks lost per FMA-pipe warp instruction issued while it runs
  PipeRates rates;
};

enum State : int {
  kBarrier = 0,
  kIssueGemm,
  kWaitG0,
  kSoftmax,
  kExtra,
  kWaitG1,
  kPost,
  kRescale,
  kDone,
  kStates
};

struct SimResult {
  double end = 0;                  // clock at which the last warp finished the last MMA
  std::vector<double> iter_start;  // warp 0's clock at the start of each iteration
  std::array<double, kPipes> pipe_busy{};
  double tensor_busy = 0, issued = 0;
  std::array<double, kStates> state_clocks{};  // summed over warps
};

// Runs `iters` iterations; work(j) gives iteration j's work (the same for every warp).
// After the loop each warp issues the last GEMM1 and waits for it.
template <class WorkFn>
SimResult simulate(const SimConfig& c, int iters, WorkFn work);

}  // namespace fa4sim::sched

#include "schedule_sim_impl.h"
