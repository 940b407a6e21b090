// schedule.h: the schedule model of FlashAttention-4's forward kernel (`fa4sim schedule`): from a
// shape, an architecture and FA4's softmax tricks to a predicted time, TFLOP/s, the binding
// resource and the exposed critical path. It sits beside the tile-cost roofline (roofline.h),
// which stays: the roofline counts each resource alone; this model overlaps them as the kernel's
// warps do.
//
// ---- Note [Schedule model]
// Modelled kernel: upstream's sm90 forward, Dao-AILab/flash-attention flash_attn/cute/
// flash_fwd_sm90.py (FlashAttentionForwardSm90, flash-attn-4 4.0.0b36), and its sm100 forward
// (flash_fwd_sm100.py), each described by a data file (data/schedule/*.json: tiles, warp roles,
// latencies, calibrated constants, each with its source or its calibration run).
// Per SM sub-partition (SMSP), a discrete-event simulation of one CTA's main loop:
//  - W consumer warps, one from each consumer warpgroup (the warpgroup's 4 warps sit one per SMSP
//    and run in step, so one SMSP stands for the SM); one tensor unit, a FIFO of warpgroup MMAs
//    at the arch's rate / smsp_per_sm, times the calibrated tensor efficiency;
//  - one issue slot per clock (every arch fa4sim knows has issue_slots_per_clk_smsp = 1; the
//    simulation does not read it), pipes fma / alu / mufu with occupancy
//    32 / (lanes per clock per SMSP) clocks per warp instruction and latencies from the data file;
//    a warp issues the first instruction of a small window (the compiler's interleaving) whose
//    operands are ready and whose pipe is free; warps take turns (loose round robin);
//  - sm90 (intra-warpgroup overlap): each iteration a warp waits its turn at the scheduler barrier
//    (when upstream uses one), issues GEMM0 = Q K_j^T and GEMM1 = P_{j-1} V_{j-1}, waits GEMM0,
//    runs the online softmax of S_j (row max, scale FMA, exp2 on the MUFU or emulated, row sum),
//    waits GEMM1, converts P to 16 bits and rescales O (above d 128 O is rescaled between the
//    issue of GEMM0 and of GEMM1 instead: Note [O rescale before the GEMM]);
//  - sm100: two softmax warpgroups (one per Q tile) and a correction warpgroup, the MMA warp
//    issuing asynchronously (no issue slots of the softmax warps), S and P in tensor memory.
// The CTA's time: the simulated iterations, then the steady-state period times the rest, plus a
// calibrated per-CTA cost (prologue, epilogue, launch). The grid: CTAs list-scheduled on the SMs
// (non-causal: waves; causal: longest first, as upstream's LPT scheduler). Clock: at the power cap
// (the H200 runs these kernels at 680-690 W of 700) power / clock grows with the share u of the
// MMA peak the grid reaches, so clock = base / (1 + slowdown u), capped at the arch's
// sm_clock_mhz. With clock_from_stock, u is the stock kernel's on the same shape (Nsight Compute's
// cycle counts over the timed runs show the clock set by the shape, not by the tricks); the cycle
// constants are calibrated on those counts, the clock's on the timed runs.
// Loads (with a "tma" table): K and V tiles come in by TMA, boxes as wide as the shared-memory
// swizzle, the widest of 128/64/32 bytes that divides a row of the tile's head dim (d padded to a
// multiple of 16, as upstream's tile_hdim); the TMA unit's time per tile is measured
// (Note [Swizzle width], Note [Loads in nanoseconds]) and bounds the iteration's period from below.
// Not modelled: HBM traffic, register spills, smem bank conflicts.
// ---- Note [Kernel factors]
// What the model leaves over is mostly a property of the compiled kernel, not of the shape: over
// the 1060 H200 configurations measured before round 15 (data/schedule/eval_h200.json), a factor
// per compiled kernel (head dim, mask, tau, emulated fraction and, with emulation, the degree)
// takes 68 % of the variance of log(predicted / measured), and the same kernel at another shape
// misses the same way (stock at d 224: 6-10 % slower than the model in 8 of 8 shapes; tau 8 at
// d 224: 3-10 % faster). ptxas schedules each kernel's main loop its own way (docs/schedule.md,
// Round 14), which instruction counts cannot see. A kernel-factors file
// (data/schedule/sm90_kernel_factors.json, written by scripts/datagen/schedule_fit.py factors)
// holds, per kernel measured on the H200, the median of measured / modelled time over its measured
// configurations; a prediction of that kernel on an arch the file names has its time multiplied
// by it (total_cycles and ms; TFLOP/s divided; the per-iteration figures and the busy shares stay
// the model's, and so does the clock but for a tricks variant's, Note [Kernel factors in the
// clock]). A kernel the file lacks, any --tile, or `--kernel-factors none` gives
// the schedule model alone (kernel_factor 1). The search for the best (tau, fraction) compares like
// with like: a setting against stock with both factors when both kernels have one, else both
// without.

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fa4sim/analysis/roofline.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

// A kernel description: data/schedule/<name>.json (schema fa4sim/schedule-v1).
struct TileRule {
  int d_max = 0;
  int causal = -1;  // -1: either, 0: non-causal only, 1: causal only
  int tile_m = 0, tile_n = 0;
  bool rs = true;                                // P from registers (true) or through shared memory
  double stock_tau = 0, stock_emu_fraction = 0;  // the tricks upstream itself runs with (sm100)
};

// ---- Note [Swizzle width]
// Upstream's sm90 forward keeps K and V tiles in shared memory with the widest swizzle (128, 64 or
// 32 bytes) that divides a row of the tile's head dim (d padded to a multiple of 16), and TMA
// brings them in as boxes that wide. On the H200 (scripts/gpu/tma_swizzle_probe.cu, one thread per SM,
// 112-row tiles from L2) a 32-byte box row costs ~1.6 clocks: ~19.5 useful bytes per clock per SM
// whatever d, against ~36 for 64-byte and 36-56 for 128-byte boxes; rows of a d that is not a
// multiple of 16 (not 32-byte aligned in memory, the last box partly outside) cost 1.5-2.2x more.
// The tensor core does not care (scripts/gpu/wgmma_swizzle_probe.py: the same clocks per wgmma for all
// three modes). So at d = 144, 176, 240 (32-byte swizzle) K and V take longer to load than the
// 128 x 112 tile's MMAs take to use them, and the kernel is load-bound; at d = 80 and 112 the loads
// bind by less (the model puts d 112 up to 10 % slower than measured, unexplained: one 3-D copy of
// the whole tile costs TMA the same as its 2-D boxes, within 2 %). The model takes the measured
// clocks per tile (data/schedule/sm90.json "tma") as a lower bound on an iteration's period.
// In the kernel the loads run a little faster than the probe's single issuing thread (d 112, 176,
// 240: 20.8-22.4 bytes per clock against 19.5; d 144 at the probe's rate): the optional
// calibrated.tma_clock_scale, fitted on the cycle counts, scales the whole table.
//
// ---- Note [Loads in nanoseconds]
// TMA's rate does not follow the SM clock. The probe (scripts/gpu/tma_swizzle_probe.cu `clock`
// mode, data/gpu/schedule/2026-12-02j) timed the same tiles at SM clocks of 1860-1980 MHz: a
// 32-byte-swizzle tile takes the same nanoseconds (d 144: 834.5-835.4 ns; d 176: 1016.9-1018.1)
// and its clocks move with the clock, while the 128-byte d 64 tile takes the same clocks. In the
// kernel likewise (Nsight Compute's single launch against the timed runs, all plans): load-bound
// shapes run as long in the timed runs as under the profiler (0-2 % apart) though their clock is
// up to 12 % lower there, while tensor-bound ones longer than 1 ms run 4-21 % longer. So the table's clocks, read at the
// probe's clock (tma.probe_clock_mhz), are taken as nanoseconds per tile: in a kernel at clock f
// an iteration's loads take table x tma_clock_scale x f / probe_clock_mhz clocks. The clock in
// turn depends on the cycles (the clock line): predict_schedule finds the fixed point. The
// 128-byte tiles, which follow the SM clock in the probe, never bind in upstream's kernel.
//
// ---- Note [Clock and duration]
// The H200 runs under its power cap, so the clock a kernel gets falls with the power it draws
// (Note [Schedule model]: the tensor share u). Two findings of the Nsight Compute counts against the
// timed runs (data/gpu/schedule, docs/schedule.md "Round 5"): the tensor core multiplies the padded
// head dim (d 72 as 80), so u counts FLOPs at the padded d; and after u the residual clock falls
// with the kernel's length: the clock is 5-9 % above the tensor-share line for kernels of 0.4-1 ms
// and 6 % below it for 15-27 ms ones (fitted: 1.4 % per e-fold of the cycles).
// Modelled as an empirical term in ln(cycles / 1e6), calibrated.clock_duration_slope, the cycles
// the stock kernel's on the same shape when clock_from_stock (as the share: the clock follows the
// shape, not the tricks).
//
// ---- Note [Clock follows the tricks in long runs]
// clock_from_stock gives a tricks variant the stock kernel's clock: in the H200's timed runs the
// effective clock (Nsight Compute's cycles of one launch over the timed time) of half-emulated
// variants is 0.7-1.1 % above stock's at seq <= 8192 but 3.3-3.6 % above it at seq >= 16384, head
// dim <= 128 (median over 9-14 shapes, docs/schedule.md "Round 16"), while the cycles' effects
// agree with the model at every length. The longer the run, the more the power cap sets the clock
// by the kernel's own draw, and an emulated variant draws less tensor power per second. Modelled:
// the variant's u moves from the stock kernel's towards its own by the weight w of
// ScheduleSpec::clock_tricks_slope, growing with the stock kernel's length; tile overrides keep
// the stock clock (not measured). Fitted on the calibration plans to heldout13 only (the effects'
// squared error), judged on heldout14-22 and on heldout23, planned after the change and measured
// blind.
//
// ---- Note [Kernel factors in the clock]
// A kernel factor (Note [Kernel factors]) says how many more cycles than the model a compiled
// kernel takes; those cycles draw no tensor power (Nsight Compute: no variant changes the tensor
// pipe's active cycles against stock by more than 0.5 %, Note [O rescale and the tensor unit]). So
// with factors, the clock of a tricks variant under Note [Clock follows the tricks in long runs]
// takes each kernel's tensor share divided by its factor, and the stock kernel's length multiplied
// by its own: the variant's clock is the stock clock times line(u's + w (u'v - u's)) / line(u's),
// w from the stock's corrected length. The stock kernel's own clock, and any prediction without a
// factor, are as before. Why: in the H200's long runs above d 128 the effective clock of emulated
// variants is up to 9.5 % above stock's, where the model alone gave 1.5 % (d 256, half emulated,
// 17 M cycles: Nsight Compute counts 17.5 % more cycles than stock, the model 6.9 %;
// docs/schedule.md "Round 17"). The factors file is taken at the fixed point this makes
// (schedule_fit.py factors: each factor re-taken against the predictions with the factors, twice).
//
// ---- Note [O rescale before the GEMM]
// Upstream's sm90 forward rescales O before issuing O += PV when the tile's V head dim exceeds 128
// (flash_fwd_sm90.py: rescale_O_before_gemm = tile_hdimv > 128 and intra_wg_overlap), after it
// otherwise. Nsight Compute's source counters at d 160 (data/gpu/schedule/2026-12-02p) show the
// compiled loop: the first HGMMA of S = QK^T, the 80 O FMULs, the other nine HGMMAs, then O += PV;
// with tau the FMULs sit behind the warp's vote and a branch, and O += PV is issued right after
// S = QK^T. The model runs the rescale there (spec field rescale_o_before_gemm_above_d): GEMM0
// enters the tensor unit, the warp issues the FMULs (a share of the iterations with tau), then
// GEMM1 enters. (Where ptxas puts the wait for GEMM1 inside the softmax is not modelled: splitting
// the softmax there fitted worse, docs/schedule.md "Round 8"; what it costs with tau is charged
// instead, Note [PV wait with tau].)
//
// ---- Note [O rescale and the tensor unit]
// The calibrated fma_tensor_stall charges each FMA-pipe instruction issued while the tensor unit
// runs some clocks of the tensor unit's time. Nsight Compute's counts of every profiled variant
// (scripts/datagen/ncu_tensor_active.py, data/schedule/ncu_tensor_active.json) show no variant
// changing the tensor pipe's active cycles against stock by more than 0.5 %, whatever the FMA work
// it adds or removes: the tricks cost tensor idle time, never slower MMAs. Above d 128 round 11
// counted 6-12 % too many clocks for the stock kernel (median by head dim 192 and 256, both
// masks; `schedule_fit.py cyclerms --by-kind`), whose O rescale runs every iteration beside
// GEMM0's MMAs (Note [O rescale before the GEMM]). With rescale_stalls_tensor false the
// rescale's FMULs no longer stall the tensor unit; the softmax's FMA-pipe instructions still do.
// Refitted, that is the round-13 candidate (data/schedule/sm90_candidate_r13.json): it fits the
// cycles of kernels no fit used better (rms log error 0.0344 against 0.0386), but judged blind on
// two fresh sets it lost the 10 % bound (stock at d 224 without a mask), so it is not the
// default (docs/schedule.md "Round 13"); absent, the field is true (round 11, sm90.json).
//
// ---- Note [Issue window with three warpgroups]
// At d <= 96 upstream runs three consumer warpgroups (tile M 192), and ptxas gives each thread 128
// registers there against 168 with two warpgroups (data/schedule/upstream_sass.json, every
// variant). With fewer registers the compiler keeps fewer independent exp chains in flight. With
// round 10's single window of 2 the model's d 64 kernels with half the exps emulated ran 5.5-7.6 %
// fewer clocks than Nsight Compute counted (median by mask over every profiled set), while its
// instruction counts follow the kernel's within 3 %. A window of its own for three warpgroups
// (window_three_warpgroups, fitted on the same cycle counts: 1) brings them to -0.6 and -3.0 % and
// the cycles' rms log error from 0.0392 to 0.0363 over 271 kernels, with no other constant
// refitted (docs/schedule.md "Round 11").
//
// ---- Note [PV wait with tau]
// With tau > 0 the compiled sm90 loop waits for O += PV right after the row max and the warp's
// vote, before the scale FFMAs and exps (SASS of every variant, data/schedule/upstream_sass.json:
// 62-74 instructions after S is ready at d 128-176, against 143-162 for stock). Nsight Compute's
// stall sampling (data/gpu/schedule/2026-12-02p, data/schedule/ncu_stalls_diag9.json) finds
// stock's warps at that wait in 0.1-2.8 % of samples, tau's in 6.3 % at d 128 and 11-13.5 % above
// d 128, where tau 8 alone costs 20 % more clocks at d 160. Simulated as such (the softmax split
// at that wait, tau only, with a wake-up latency of its own) the early wait costs tau 8 at d 160
// 4 % in this model, as the other warpgroup's MMAs keep the tensor unit busy, and the refitted
// constants fit worse (docs/schedule.md "Round 9"). So the cost is charged as a measured
// quantity: with tau, in the non-causal kernel, where O is rescaled before the GEMM (the 128 x 112
// and 128 x 80 tiles above d 128), each iteration waits calibrated.tau_pv_wait_cycles more after
// the softmax. The timed runs split by the mask: at d 160 tau 8 alone measured -10.7 to -17.2 %
// against stock in four non-causal shapes and +5.4 to +7.7 % in three causal ones; with a quarter
// emulated at d 192, -12.3 to -22.2 % non-causal and -4.8 to -8.8 % causal (docs/schedule.md
// "Round 10"). Why the causal kernel does not pay it is not known (its loop also holds the masked
// iterations). The term is fitted on the timed runs with the clock constants (495 clocks); the
// cycle constants were not refitted, and Nsight Compute's counts fit better with it too.
//
// TMA's clocks to bring one tile of `rows` rows of d bf16 columns into shared memory, boxes as
// wide as the swizzle (data/schedule/sm90.json "tma", measured by scripts/gpu/tma_swizzle_probe.cu).
struct TmaClocks {
  int d = 0, tile_d = 0, swizzle = 0;  // tile_d: d padded to a multiple of 16; swizzle in bytes
  double clocks = 0;
};

struct ScheduleSpec {
  std::string name, kernel, origin;  // kernel: "sm90" or "sm100"
  std::vector<TileRule> tiles;
  std::vector<TmaClocks> tma;  // empty: no load bound (optional field)
  int tma_rows = 112;
  // latencies (clocks) and issue costs
  double lat_fma = 4, lat_alu = 4, lat_mufu = 18, lat_shfl = 24;
  int window = 8;  // instructions a warp may choose from (the compiler's interleaving)
  // the same with three consumer warpgroups (tile M 192, d <= 96; 0: `window`; optional field;
  // Note [Issue window with three warpgroups])
  int window_three_warpgroups = 0;
  double overhead_instructions = 0;  // per warp and iteration beyond the modelled streams (ncu)
  // calibrated
  double tensor_efficiency = 1, wgmma_latency = 0, cta_fixed_cycles = 0;
  double tau_cycles =
      0;  // exposed clocks per iteration with tau > 0, per 32 O accumulators of a thread
  double tau_cycles_fixed = 0;  // and per iteration whatever the head dim (optional field)
  // and per iteration of the non-causal kernel where O is rescaled before the GEMM (above d 128):
  // the exposed wait for O += PV of Note [PV wait with tau] (optional field)
  double tau_pv_wait_cycles = 0;
  double mask_instructions = 2;       // ALU instructions per masked score (optional field)
  double cta_fixed_cycles_per_d = 0;  // a CTA's fixed clocks per unit of head dim (optional field)
  double fma_tensor_stall =
      0;  // tensor clocks lost per FMA-pipe instruction beside an MMA (optional)
  double smem_p_cycles =
      0;  // exposed clocks per iteration when P goes through shared memory (optional)
  // clock under load = min(sm_clock_mhz, clock_mhz_base / (1 + clock_tensor_slowdown * u
  //                       + clock_duration_slope * ln(cycles / 1e6))),
  // u the grid's FLOPs over its clocks at the MMA peak, FLOPs counted at the padded head dim the
  // MMAs run (Note [Clock and duration]); cycles the kernel's modelled clocks (both the stock
  // kernel's with clock_from_stock)
  double clock_mhz_base = 0, clock_tensor_slowdown = 0;
  double clock_duration_slope = 0;  // optional field
  double tma_clock_scale = 1;       // the measured TMA table's clocks times this (optional field)
  // The SM clock the TMA table was measured at: the table's time per tile is then taken in
  // nanoseconds, its clocks scaled by the kernel's clock over this (Note [Loads in nanoseconds];
  // optional field tma.probe_clock_mhz; 0: the table's clocks hold at any clock)
  double tma_probe_clock_mhz = 0;
  bool clock_from_stock = false;  // u of the stock kernel on the same shape (optional field)
  // With clock_from_stock, how far a tricks variant's clock follows its own tensor share instead
  // (Note [Clock follows the tricks in long runs]): u = u_stock + w (u_variant - u_stock), w =
  // clamp(clock_tricks_slope * ln(cycles_stock / clock_tricks_c0), 0, 1) (optional fields; 0: w = 0)
  double clock_tricks_slope = 0, clock_tricks_c0 = 1e6;
  // O's rescale FMULs hold the tensor unit back as the softmax's FMA-pipe instructions do (optional
  // field; Note [O rescale and the tensor unit])
  bool rescale_stalls_tensor = true;
  // Head dims above which O is rescaled between the issue of S = QK^T and of O += PV rather than
  // after O += PV completes (upstream sm90's rescale_O_before_gemm, Note [O rescale before the
  // GEMM]; optional field rescale_o_before_gemm_above_d, 0: never)
  int rescale_before_gemm_above_d = 0;
  json raw;
};

ScheduleSpec parse_schedule_spec(const json& j, const std::string& origin);
// The rule for a head dim (the first that covers it); throws Error if none does.
const TileRule& tile_rule(const ScheduleSpec& s, int d, bool causal);
ScheduleSpec load_schedule_spec(const std::string& name_or_path);
// The kernel an arch runs: sm_90 -> data/schedule/sm90.json, sm_100/sm_103 -> sm100.json.
std::string schedule_spec_for_arch(const ArchSpec& a);

struct AttnShape {
  int batch = 1, heads = 1, heads_kv = 1, seq_q = 1, seq_k = 1, d = 128;
  bool causal = false;
};

struct Tricks {
  double tau = 0;           // conditional rescaling threshold (log2 units), 0 = always rescale
  double emu_fraction = 0;  // share of exps emulated on the FMA pipe
  int degree = 3;
  // With tau > 0: share of iterations in which a warp still rescales O. 0.02 stands for random
  // inputs (`fa4sim rescale` measures it for a score distribution).
  double rescale_share = 0.02;
};

struct ScheduleInput {
  AttnShape shape;
  Tricks tricks;
  int tile_m = 0, tile_n = 0;  // 0: the kernel's own choice (spec.tiles)
  double clock_mhz = 0;        // the SM clock the kernel runs at; 0: the power-cap clock line's
};

struct SchedulePrediction {
  int tile_m = 0, tile_n = 0, warps = 0;  // consumer warps per SMSP
  bool rs = true;
  long ctas = 0;
  double waves = 0;
  double iter_cycles = 0;   // steady-state period of one main-loop iteration (one K/V block)
  double cta_cycles = 0;    // of the longest CTA
  double total_cycles = 0;  // makespan over the grid
  double clock_mhz = 0, ms = 0, tflops = 0, flops = 0;
  // busy shares of the steady-state iteration, per SMSP
  double instructions_per_iteration = 0;
  double tensor_share_grid =
      0;  // FLOPs over the grid's clocks at the MMA peak (feeds the clock line)  // issued per consumer warp and iteration
  double util_tensor = 0, util_mufu = 0, util_fma = 0, util_alu = 0, util_issue = 0;
  double util_tma = 0;        // the TMA unit's clocks for K and V over the iteration's period
  std::string binding;        // the resource with the largest busy share
  std::string critical_path;  // what a warp waits for most in one iteration
  json path_breakdown;        // clocks per iteration a warp spends in each state
  // measured / modelled time of this compiled kernel on the H200 (Note [Kernel factors]); 1: none
  double kernel_factor = 1;
  int kernel_factor_measurements = 0;  // the shapes its median was taken over
};

// One compiled kernel's factor (Note [Kernel factors]).
struct KernelFactor {
  int d = 0;
  bool causal = false;
  double tau = 0, emu_fraction = 0;
  int degree = 3;     // the emulation's polynomial degree (matched only when emu_fraction > 0)
  double factor = 1;  // measured / modelled time, median over `measurements` configurations
  int measurements = 0;
};

struct KernelFactors {
  std::string origin, spec;        // spec: the kernel description the factors were taken against
  std::vector<std::string> archs;  // the archs whose predictions they correct
  std::vector<KernelFactor> kernels;
};

// Reads a fa4sim/schedule-kernel-factors-v1 file; throws Error naming the file and the field.
KernelFactors load_kernel_factors(const std::string& path);
// The factor of the kernel `in` runs on arch `a` (nullptr: none; a --tile override is another
// kernel).
const KernelFactor* find_kernel_factor(const KernelFactors& f, const ArchSpec& a,
                                       const ScheduleInput& in);

// One configuration as JSON: {arch, batch, heads, heads_kv, seq, seq_k, d, causal, tau,
// emu_fraction, degree, rescale_share, tile: [m, n]}; missing keys take `defaults`' values (arch
// excepted: the caller reads it). Throws Error naming `where` for a value of the wrong type.
ScheduleInput schedule_input_from_json(const json& e, const ScheduleInput& defaults,
                                       const std::string& where);

// The swizzle (bytes) of a tile whose rows hold tile_d bf16 elements, and TMA's clocks for one
// tile of `rows` rows of d columns (0 without a table). Exact entries first; otherwise the per-box
// clocks of the nearest entry with the same swizzle and the same alignment (d == tile_d or not).
int tma_swizzle_bytes(int tile_d);
double tma_tile_clocks(const ScheduleSpec& s, int d, int rows);

// Throws Error for shapes the kernel cannot run (d not a multiple of 8 or > 256, seq 0, heads
// not a multiple of heads_kv) and tricks out of range (fraction outside [0, 1], degree 0..5).
// With `factors`, a kernel they hold is scaled by its factor, and a tricks variant that has one
// reads it (and its stock kernel's) in its clock (Note [Kernel factors], Note [Kernel factors in
// the clock]).
SchedulePrediction predict_schedule(const ArchSpec& a, const ScheduleSpec& s,
                                    const ScheduleInput& in,
                                    const KernelFactors* factors = nullptr);

struct ScheduleModelOptions {
  std::vector<ArchSpec> archs;
  std::string spec_path;  // empty: the arch's own (schedule_spec_for_arch)
  // kernel factors (Note [Kernel factors]): empty: data/schedule/<spec>_kernel_factors.json
  // when spec_path is empty, none otherwise; "none": none; else a path
  std::string kernel_factors;
  ScheduleInput input;
  bool search = true;  // also search (tau, fraction) for the best predicted speed
  json params;
};

struct ScheduleBest {
  double tau = 0, emu_fraction = 0, tflops = 0, gain = 0;  // gain: predicted / stock - 1
  double kernel_factor = 1;  // the best kernel's (Note [Kernel factors]); 1 with no measurement
  int kernel_factor_measurements = 0;
};

struct ScheduleModelRow {
  std::string arch;
  SchedulePrediction stock, with_tricks;
  ScheduleBest best;
};

struct ScheduleModelResult {
  std::vector<ScheduleModelRow> rows;
};

// The kernel factors for a --spec / --kernel-factors pair (Note [Kernel factors]); nullopt: none.
std::optional<KernelFactors> resolve_kernel_factors(const std::string& spec_path,
                                                    const std::string& kernel_factors,
                                                    const ArchSpec& a);

ScheduleModelResult compute_schedule(const ScheduleModelOptions& o);
Report schedule_report(const ScheduleModelOptions& o, const ScheduleModelResult& r);
json to_json(const SchedulePrediction& p);

}  // namespace fa4sim
