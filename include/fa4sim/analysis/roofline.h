// roofline.h: per-architecture tile costs of FlashAttention-4, a pipe model of the emulated
// exp2, and the emulation-schedule calculator (`fa4sim roofline`).
//
// Models: the roofline of the FA4 paper (Zadouri et al., arXiv 2603.05451, Table 1 and the
// backward figures) as quoted by the seed article and docs/facts.md §4; the instruction sequences of
// Dao-AILab/flash-attention flash_attn/cute/utils.py ex2_emulation_2 and softmax.py SoftmaxSm100,
// and the tuning table of flash_fwd_sm100.py, at commit 0251105a (docs/facts.md §1-§2).
// Inputs live in data/: archs/*.json (every number with a source and an `assumption` mark),
// exp_pipe_model.json (instructions per element, per pipe), fa4_tuning.json (freq, res, start_frg).
// Does not model: latency, overlap between warps, the correction warp, TMEM traffic, HBM, the
// causal mask's partial tiles, register pressure (the reason upstream emulates only some exps).
//
// ---- Note [Counting convention] (the one place it is written; everything else refers here)
// All costs are cycles of ONE SM for ONE tile of M queries x N keys x head dim d, each resource
// running alone at its per-SM peak (no overlap loss). Rates are per clock per SM, from archs/*.json.
//  MMA    one multiply-add = 2 FLOP. Forward: S = Q K^T (2 M N d) and O = P V (2 M N d), so
//         T_mma = 4 M N d / mma_flop_per_clk_sm[dtype]. Backward: five GEMMs of 2 M N d each
//         (S = Q K^T recomputed, dP = dO V^T, dV = P^T dO, dK = dS^T Q, dQ = dS K):
//         T_mma = 10 M N d / mma_flop_per_clk_sm[bf16]. With 2-CTA MMA (cta_group::2, the
//         tile pair spans 2M rows) each SM still computes its own M rows, so T_mma is unchanged.
//  exp    one exp2 per score: T_exp = M N / mufu_ex2_per_clk_sm (the backward recomputes P, so
//         it also pays M N exps). Nothing else is charged to the MUFU.
//  smem   bytes of MMA operands read from shared memory, plus what the kernel writes to and reads
//         back from shared memory, / smem_bytes_per_clk_sm. Operands are `b` bytes (2 for
//         bf16/fp16, 1 for fp8; the block-scaled fp6 = MXFP6 0.75 + 1/32 for its E8M0 scale per
//         32, fp4 = NVFP4 0.5 + 1/16 for its E4M3 scale per 16; forward only, at the arch's
//         mma_fp6/fp4 rate). In each GEMM the operand listed second is the "B" operand.
//         Forward: Q (M d, A) and K (N d, B) for S; P comes from TMEM (registers on Hopper) and
//         V (N d, B) from smem for O: bytes = (M d + 2 N d) b.
//         Backward, 1-CTA (our reconstruction: it reproduces the paper's totals 3328 and 2688
//         cycles for M = N = d = 128, the per-item split is not in the sources we have):
//           A operands from smem: K (S^T = K Q^T), V (dP^T = V dO^T), dS (dQ = dS K): (2 N d + M N) b
//           A operands from TMEM: P^T (dV), dS^T (dK): 0
//           B operands from smem: Q, dO, dO, Q, K: (4 M d + N d) b
//           dS written to smem for dQ: M N b;  dQ partial in fp32 written and read back by the
//           TMA reduce-add: 2 * 4 M d.
//         2-CTA: each CTA of the pair loads half of every B operand, so the B term is halved.
//         Forward 2-CTA likewise halves K and V.
//  Ratios exp_over_mma = T_exp / T_mma and smem_over_mma = T_smem / T_mma; "+30 %" means 1.30.
//  bottleneck = the resource(s) with the largest cycles (ties joined by '=').
//  emu_fraction_to_tie = the fraction f of exps that must leave the MUFU so that
//         (1 - f) T_exp = T_mma, i.e. max(0, 1 - T_mma / T_exp) (the seed's "half at d = 64").
//  Pipe model (exp throughput, see exp_pipe_model.json): per element, count lane-operations on
//         each pipe (fma, alu, mufu) and issued warp instructions. A packable op on an arch with
//         packed_f32x2 issues one .f32x2 instruction per two elements but still occupies two
//         FMA lanes (packing saves issue slots, not FMA throughput: B200's published FP32 peak is
//         128 FMA/clk/SM). Issue capacity = smsp_per_sm * issue_slots_per_clk_smsp * 32 lane-
//         instructions per clock. With a fraction f emulated, each pipe p takes
//         t_p(f) = ((1 - f) hw_p + f emu_p [+ other_p]) / rate_p clocks per element, and
//         exps_per_clk_sm(f) = 1 / max_p t_p(f). "exp only" counts the exp2 alone (what a
//         microbenchmark of exp2 measures); "softmax" adds softmax_other (scale FMA, row-sum add,
//         row max, conversion of P). best f minimises max_p t_p(f) exactly (the optimum is at
//         f = 0, f = 1, or where the falling MUFU line meets a rising one).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fa4sim/util/report.h"

namespace fa4sim {

// ---- data

// The directory holding archs/, exp_pipe_model.json, fa4_tuning.json: $FA4SIM_DATA_DIR if set,
// else <source dir>/data.
std::string roofline_data_dir();

// Reads a JSON input file; `what` names it in errors ("arch file 'x.json' does not exist").
json read_json_file(const std::string& path, const std::string& what);

struct ArchSpec {
  std::string name, full_name, sm_arch, origin;  // origin: the file it was read from
  int sm_count = 0;
  double sm_clock_mhz = 0;
  double mma_bf16_flop_per_clk_sm = 0;
  std::optional<double> mma_fp8_flop_per_clk_sm;  // none: the arch has no fp8 MMA
  // Block-scaled MMA (MXFP6 with E8M0 scales per 32; FP4 as NVFP4 with E4M3 scales per 16 or
  // MXFP4): none, or the field left out of the arch file: the arch has no such MMA.
  std::optional<double> mma_fp6_flop_per_clk_sm, mma_fp4_flop_per_clk_sm;
  double mufu_ex2_per_clk_sm = 0;
  double fp32_fma_lanes_per_clk_sm = 0;
  double alu_lanes_per_clk_sm = 0;
  bool packed_f32x2 = false;
  int smsp_per_sm = 0;
  double issue_slots_per_clk_smsp = 0;
  double smem_bytes_per_clk_sm = 0;
  std::vector<std::string> assumptions;  // names of the fields marked "assumption": true
  json fields;                           // the raw {value, source, assumption} objects
};

// Strict validation of an arch JSON (schema "fa4sim/arch-v1"). Throws Error naming the bad field
// ("fields.mufu_ex2_per_clk_sm.value"), e.g. missing, wrong type, or a rate <= 0.
ArchSpec parse_arch(const json& j, const std::string& origin);
ArchSpec load_arch_file(const std::string& path);
// Names of data/archs/*.json in a fixed order (a100, h100_sxm, h200, b200, b300, then others).
std::vector<std::string> known_arch_names();
ArchSpec load_known_arch(const std::string& name);

// ---- tile model (Note [Counting convention])

enum class Direction { fwd, bwd };
// fp6 and fp4: block-scaled operands (Note [Counting convention]: their bytes include the scales).
enum class OperandType { bf16, fp8, fp6, fp4 };
const char* to_string(Direction d);
const char* to_string(OperandType t);

struct TileCost {
  std::string arch;
  Direction direction = Direction::fwd;
  OperandType dtype = OperandType::bf16;
  int cta_group = 1;
  int tile_m = 0, tile_n = 0, d = 0;
  double cycles_mma = 0, cycles_exp = 0, cycles_smem = 0;
  double exp_over_mma = 0, smem_over_mma = 0;
  std::string bottleneck;
  double emu_fraction_to_tie = 0;
};

// Throws Error for an fp8 tile on an arch without fp8 MMA, or an fp8 backward (FA4's backward
// is 16-bit only), or non-positive sizes.
TileCost tile_cost(const ArchSpec& a, Direction dir, OperandType t, int cta_group, int m, int n,
                   int d);

// ---- exp pipe model

struct PipeOp {
  std::string op, pipe;  // pipe: "fma", "alu" or "mufu"
  double count = 0;      // per element; ignored when per_degree
  bool per_degree = false;
  int min_degree = 0;  // counted only for degree >= min_degree (dead code below it)
  bool packable = false;
  bool assumption = false;
  std::string source;
};
struct PipeModelSpec {
  std::string source;
  std::vector<PipeOp> hardware_exp2, emulated_exp2, softmax_other;
};
PipeModelSpec parse_pipe_model(const json& j, const std::string& origin);
PipeModelSpec load_pipe_model();  // data/exp_pipe_model.json

// Per element: lane-operations on each pipe and issued (warp) instructions.
struct PipeCounts {
  double fma = 0, alu = 0, mufu = 0, issue = 0;
};
PipeCounts pipe_counts(const std::vector<PipeOp>& ops, const ArchSpec& a, int degree);

struct PipePoint {
  double f = 0;
  double exps_per_clk_sm = 0;  // elements (exps) per clock per SM
  std::string bound;           // the binding pipe(s): "mufu", "fma", "alu", "issue"
  double t_fma = 0, t_alu = 0, t_mufu = 0, t_issue = 0;  // clocks per element
};
// `with_softmax` adds the softmax_other ops to every element.
PipePoint pipe_point(const PipeModelSpec& s, const ArchSpec& a, int degree, double f,
                     bool with_softmax);
PipePoint best_pipe_point(const PipeModelSpec& s, const ArchSpec& a, int degree, bool with_softmax);

// ---- emulation schedule (include/fa4sim/core/exp2_schedule.h holds the rule)

struct TuningEntry {
  bool use_2cta = false, causal = false, is_sm103 = false;
  int head_dim_padded = 0;
  std::string dtype;  // "bf16" (16-bit inputs) or "fp8"
  int freq = 0, res = 4, start_frg = 0;
  std::optional<double> seed_fraction;  // the seed article's published fraction, if any
  std::string seed_case;
};
struct TuningTable {
  std::string source;
  int row_width = 128;
  std::vector<TuningEntry> entries;
};
TuningTable load_tuning();                     // data/fa4_tuning.json
std::string tuning_key(const TuningEntry& e);  // "2cta,noncausal,hd128,sm100,bf16"

struct ScheduleResult {
  std::string key;  // tuning key, or "custom"
  int freq = 0, res = 0, start_frg = 0, row_width = 0;
  std::vector<int> emulated;  // emulated column indices
  double fraction = 0;
};
// Throws Error when the schedule is ill formed (see schedule_valid()).
ScheduleResult compute_schedule(int freq, int res, int start_frg, int row_width,
                                const std::string& key = "custom");

// ---- measured exp throughput (written by the GPU backend)
// File data/gpu/<device>-bench-exp.json, schema "fa4sim/bench-exp-v1":
//   {"schema": "fa4sim/bench-exp-v1",
//    "device": "NVIDIA H200",            free text
//    "arch": "h200",                      the data/archs entry to predict with
//    "provenance": {"command": "...", "date": "...", "host": "..."},
//    "points": [{"degree": 3, "f": 0.25, "exps_per_clk_sm": 19.8}, ...]}
// degree in 0..5, f in [0, 1], exps_per_clk_sm > 0 (exp2 results per clock per SM, exp only,
// i.e. comparable to the pipe model's "exp only" prediction).
struct MeasuredPoint {
  int degree = 3;
  double f = 0;
  double exps_per_clk_sm = 0;
};
struct MeasuredFile {
  std::string device, arch, origin;
  json provenance;
  std::vector<MeasuredPoint> points;
};
MeasuredFile parse_measured(const json& j, const std::string& origin);
MeasuredFile load_measured(const std::string& path);

// ---- the analysis behind `fa4sim roofline` and the report section

struct RooflineOptions {
  std::vector<ArchSpec> archs;
  std::vector<int> ds = {128};
  std::vector<Direction> directions = {Direction::fwd};
  std::vector<OperandType> dtypes = {OperandType::bf16};
  int tile_m = 128, tile_n = 128;
  std::optional<double> emu_fraction;      // evaluate the pipe model at this f for every row
  std::vector<int> degrees = {3};          // pipe-model degrees (printed: the first)
  double f_step = 1.0 / 16;                // pipe-model curve resolution
  bool schedule_table = false;             // list every tuning-table entry
  std::optional<ScheduleResult> schedule;  // one user-given schedule
  std::optional<std::string> measured_path;
  json params = json::object();  // the CLI's options, echoed into the report
};

// What compute_roofline finds, before any rendering. The pipe-model figures are evaluated at the
// first of o.degrees (`degree`) unless a field says otherwise.
struct RooflineTileRow {
  TileCost cost;
  PipePoint softmax_at_tie;           // the whole softmax at f = cost.emu_fraction_to_tie
  std::optional<PipePoint> exp_at_f;  // with o.emu_fraction: exp only / softmax at that f
  std::optional<PipePoint> softmax_at_f;
};
struct RooflinePipeCountRow {
  std::string path;
  int degree = -1;            // -1: a path without a polynomial (counted at degree 0)
  PipeCounts scalar, packed;  // on an arch without / with packed f32x2
};
struct RooflineCurvePoint {  // one point of results.pipe_model (every arch, every degree)
  std::string arch;
  int degree = 3;
  PipePoint exp_only, softmax;
};
struct RooflineBestPoint {  // one entry of results.pipe_best
  std::string arch;
  int degree = 3;
  bool with_softmax = false;
  PipePoint best, mufu_only;  // mufu_only: f = 0
};
struct
    RooflineArchPipe {  // per arch at `degree`, for the printed tables; index 0 exp only, 1 softmax
  std::vector<PipePoint> eighths[2];  // f = 0, 1/8, ..., 1
  PipePoint best[2];
};
struct RooflineScheduleRow {
  ScheduleResult schedule;
  std::optional<double> seed_fraction;  // the tuning entry's published fraction, if any
  std::string seed_case;
  bool seed_matches = false;  // same row width as the table and the same fraction
};
struct RooflineMeasured {
  MeasuredFile file;
  std::string arch;                  // the arch predicted with
  std::vector<PipePoint> predicted;  // one per file.points, exp only
};
struct RooflineResult {
  int degree = 3;
  std::vector<RooflineTileRow> tiles;
  std::vector<std::string> skipped;  // "b200 bwd fp8": paths that do not exist
  PipeModelSpec pipe_model;
  std::vector<RooflinePipeCountRow> pipe_counts;
  std::vector<RooflineCurvePoint> curve;
  std::vector<RooflineArchPipe> arch_pipe;  // parallel to o.archs
  std::vector<RooflineBestPoint> best;
  std::vector<RooflineScheduleRow> schedule;  // the user's schedule first, then the tuning table
  std::string tuning_source;                  // when the tuning table was listed
  std::optional<RooflineMeasured> measured;
};

// Throws Error when no arch is selected or no tile exists (every one an fp8 path without fp8 MMA).
RooflineResult compute_roofline(const RooflineOptions& o);
Report roofline_report(const RooflineOptions& o, const RooflineResult& r);
Report run_roofline(const RooflineOptions& o);  // roofline_report(o, compute_roofline(o))

// The "exceed MMA compute by 25-60 %" investigation: one row per reading of the claim, with the
// largest non-MMA resource over MMA, and per family the head dim at which a resource exceeds MMA
// by exactly +25 % / +60 %.
struct ExcessReading {
  std::string reading, arch;
  Direction direction = Direction::fwd;
  OperandType dtype = OperandType::bf16;
  int cta_group = 1, d = 128;
  double exp_excess = 0, smem_excess = 0, serial_excess = 0, largest_excess = 0;
  bool in_range = false;  // largest_excess in [25 %, 60 %]
};
struct ExcessSolve {  // ratio(d) = a + b / d for a 128x128 tile
  std::string family, arch;
  bool smem = false;  // the resource: smem, else exp
  double a = 0, b = 0;
  std::optional<double> d_for_25, d_for_60;  // none: never
};
struct ExcessInvestigation {
  std::vector<ExcessReading> readings;
  std::vector<ExcessSolve> solved;
  std::vector<std::string> hit60, hit25;  // exact hits (to 0.5 %) of either end of the claim
  std::string finding;
};
ExcessInvestigation compute_excess_investigation(const std::vector<ArchSpec>& archs);
void append_excess_investigation(Report& r, const ExcessInvestigation& x);
// Both: appended to the report's tables and results.
void add_excess_investigation(Report& r, const std::vector<ArchSpec>& archs);

}  // namespace fa4sim
