// schedule_sim_impl.h: the body of sched::simulate (schedule_sim.h).
#pragma once

#include <algorithm>
#include <limits>

namespace fa4sim::sched {

namespace detail {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

struct WarpState {
  State state = kBarrier;
  int iter = 0;
  double wait_until = 0, state_since = 0;
  const Program* prog = nullptr;
  int pc = 0;                 // first instruction not yet issued
  std::vector<double> ready;  // result time per instruction of prog (kNever: not issued)
  double drain = 0;           // latest result time of prog
  double g0_done = 0, g1_done = 0;
};

struct Sim {
  const SimConfig& c;
  std::vector<WarpState> w;
  std::array<double, kPipes> pipe_free{};
  double tensor_free = 0;
  int turn = 0;  // whose turn at the scheduler barrier
  int rr = 0;    // loose round robin: the warp after the last issuer is tried first
  SimResult r;

  void enter(WarpState& s, State st, double t) {
    r.state_clocks[s.state] += t - s.state_since;
    s.state = st;
    s.state_since = t;
  }
  void start_prog(WarpState& s, const Program& p) {
    s.prog = &p;
    s.pc = 0;
    s.ready.assign(p.size(), kNever);
    s.drain = 0;
  }
  double enqueue(double t, double dur) {
    if (dur <= 0) return t;
    const double start = std::max(t, tensor_free);
    tensor_free = start + dur;
    r.tensor_busy += dur;
    return tensor_free + c.gemm_latency;
  }
  // Whether clock t has reached `until`; if not, `next` learns when it will.
  static bool reached(double t, double until, double& next) {
    if (t >= until) return true;
    next = std::min(next, until);
    return false;
  }
  // Runs warp s's program at clock t (one issue at most, `issued` says whether it did): true once
  // every instruction has issued and its results are ready.
  bool program_done(WarpState& s, double t, double& next, bool& issued) {
    if (s.pc < static_cast<int>(s.prog->size())) {
      issued = try_issue(s, t, next);
      return false;
    }
    return reached(t, s.drain, next);
  }
  // Tries to issue one instruction of warp s at clock t; returns true if it did. `next` gets the
  // earliest clock at which one of the window's instructions could issue.
  bool try_issue(WarpState& s, double t, double& next) {
    const Program& p = *s.prog;
    const int end = std::min<int>(static_cast<int>(p.size()), s.pc + c.window);
    for (int i = s.pc; i < end; ++i) {
      if (s.ready[i] != kNever) continue;
      const Instr& in = p[i];
      double at = pipe_free[in.pipe];
      if (in.dep1 >= 0) at = std::max(at, s.ready[in.dep1]);
      if (in.dep2 >= 0) at = std::max(at, s.ready[in.dep2]);
      if (at <= t) {
        const double occ = c.rates.occupancy[in.pipe] * in.width;
        pipe_free[in.pipe] = t + occ;
        s.ready[i] = t + c.rates.latency[in.pipe];
        s.drain = std::max(s.drain, s.ready[i]);
        r.pipe_busy[in.pipe] += occ;
        r.issued += 1;
        // An FMA-pipe instruction issued while the tensor unit runs holds it back (calibrated; the
        // MMAs already queued keep their wake-up times, later ones start later).
        if (in.pipe == kFma && in.stalls_tensor && tensor_free > t)
          tensor_free += c.fma_tensor_stall * in.width;
        while (s.pc < static_cast<int>(p.size()) && s.ready[s.pc] != kNever) ++s.pc;
        return true;
      }
      next = std::min(next, at);
    }
    return false;
  }
};

}  // namespace detail

template <class WorkFn>
SimResult simulate(const SimConfig& c, int iters, WorkFn work) {
  detail::Sim sim{c, std::vector<detail::WarpState>(c.warps), {}, 0, 0, 0, {}};
  std::vector<IterationWork> works;
  works.reserve(iters + 1);
  for (int j = 0; j < iters; ++j) works.push_back(work(j));
  IterationWork tail;  // after the loop: the last GEMM1 alone
  tail.gemm1 = iters > 0 ? works.back().gemm1 > 0 ? works.back().gemm1 : works.front().gemm0 : 0;
  tail.issue_gemms = works.empty() ? Program{} : works.back().issue_gemms;
  sim.r.iter_start.assign(iters + 1, 0);
  double t = 0;
  int done = 0;
  while (done < c.warps) {
    bool issued = false, moved = false;
    double next = detail::kNever;
    for (int kk = 0; kk < c.warps && !issued; ++kk) {
      const int k = (sim.rr + kk) % c.warps;
      auto& s = sim.w[k];
      const bool last = s.iter >= iters;
      const IterationWork& wk = last ? tail : works[s.iter];
      switch (s.state) {
        case kBarrier:
          if (c.turn_barrier && sim.turn != k) break;
          if (k == 0 && s.iter <= iters) sim.r.iter_start[s.iter] = t;
          sim.enter(s, kIssueGemm, t);
          sim.start_prog(s, wk.issue_gemms);
          moved = true;
          [[fallthrough]];
        case kIssueGemm:
          if (s.pc < static_cast<int>(s.prog->size())) {
            issued = sim.try_issue(s, t, next);
            if (!issued || s.pc < static_cast<int>(s.prog->size())) break;
          }
          if (c.pv_first) {
            s.g1_done = sim.enqueue(t, last ? tail.gemm1 : wk.gemm1);
            s.g0_done = last ? t : sim.enqueue(t, wk.gemm0);
          } else {
            s.g0_done = last ? t : sim.enqueue(t, wk.gemm0);
            if (!last && !wk.rescale.empty()) {  // O *= row_scale, then O += PV
              sim.enter(s, kRescale, t);
              sim.start_prog(s, wk.rescale);
              moved = true;
              break;
            }
            s.g1_done = sim.enqueue(t, last ? tail.gemm1 : wk.gemm1);
          }
          sim.turn = (k + 1) % c.warps;
          sim.enter(s, last ? kWaitG1 : kWaitG0, t);
          s.wait_until = last ? s.g1_done : s.g0_done;
          moved = true;
          break;
        case kRescale:
          if (!sim.program_done(s, t, next, issued)) break;
          s.g1_done = sim.enqueue(t, wk.gemm1);
          sim.turn = (k + 1) % c.warps;
          sim.enter(s, kWaitG0, t);
          s.wait_until = s.g0_done;
          moved = true;
          [[fallthrough]];
        case kWaitG0:
          if (!detail::Sim::reached(t, s.wait_until, next)) break;
          sim.enter(s, kSoftmax, t);
          sim.start_prog(s, wk.softmax);
          moved = true;
          [[fallthrough]];
        case kSoftmax:
          if (!sim.program_done(s, t, next, issued)) break;
          sim.enter(s, kExtra, t);
          s.wait_until = t + wk.extra_wait;
          moved = true;
          [[fallthrough]];
        case kExtra:
          if (!detail::Sim::reached(t, s.wait_until, next)) break;
          sim.enter(s, kWaitG1, t);
          s.wait_until = s.g1_done;
          moved = true;
          [[fallthrough]];
        case kWaitG1:
          if (!detail::Sim::reached(t, s.wait_until, next)) break;
          if (last) {
            sim.enter(s, kDone, t);
            ++done;
            sim.r.end = std::max(sim.r.end, t);
            moved = true;
            break;
          }
          sim.enter(s, kPost, t);
          sim.start_prog(s, wk.post);
          moved = true;
          [[fallthrough]];
        case kPost:
          if (!sim.program_done(s, t, next, issued)) break;
          ++s.iter;
          sim.enter(s, kBarrier, t);
          moved = true;
          break;
        default: break;
      }
      if (issued) sim.rr = (k + 1) % c.warps;
    }
    if (issued || moved)
      t += issued ? 1 : 0;
    else
      t = std::max(t + 1, next == detail::kNever ? t + 1 : next);
  }
  if (iters > 0) sim.r.iter_start[iters] = sim.r.end;
  return sim.r;
}

}  // namespace fa4sim::sched
