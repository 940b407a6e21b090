// schedule.cpp: the schedule model (Note [Schedule model] in include/fa4sim/analysis/schedule.h):
// kernel descriptions, the per-iteration instruction streams of FA4's warps, the CTA and grid
// times. Rendering: schedule_report.cpp. The simulation: schedule_sim.h.
#include "fa4sim/analysis/schedule.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <queue>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "schedule_sim.h"

namespace fa4sim {

namespace fs = std::filesystem;

// ---- kernel descriptions (data/schedule/*.json)

namespace {

// A number at a dotted path of a data file (`what` names the kind of file in messages, `example`
// the file to look at for the format).
double num_field(const json& j, const std::string& origin, const std::string& path, double lo,
                 double hi, const char* what = "schedule file",
                 const char* example = "data/schedule/sm90.json") {
  const json* cur = &j;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool index =
        cur->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
    if (index ? std::stoul(key) >= cur->size() : !cur->is_object() || !cur->contains(key))
      throw Error(fmt::format("{} '{}': missing field '{}'", what, origin, path),
                  fmt::format("see {} for the format", example));
    cur = index ? &(*cur)[std::stoul(key)] : &(*cur)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (cur->is_object() && cur->contains("value")) cur = &(*cur)["value"];
  if (!cur->is_number())
    throw Error(fmt::format("{} '{}': field '{}' is not a number", what, origin, path),
                "give a number");
  const double v = cur->get<double>();
  if (!(v >= lo && v <= hi))
    throw Error(fmt::format("{} '{}': field '{}' = {} is out of range", what, origin, path, v),
                fmt::format("allowed {} .. {}", lo, hi));
  return v;
}

// An optional true/false field of a schedule file; `fallback` when absent.
bool bool_field(const json& j, const std::string& origin, const char* name, bool fallback) {
  if (!j.contains(name)) return fallback;
  if (!j[name].is_boolean())
    throw Error(fmt::format("schedule file '{}': field '{}' must be true or false", origin, name),
                "see data/schedule/sm90.json for the format");
  return j[name].get<bool>();
}

void parse_tma(const json& j, const std::string& origin, ScheduleSpec& s) {
  s.tma_rows = static_cast<int>(num_field(j, origin, "tma.rows_per_tile", 1, 256));
  if (j["tma"].contains("probe_clock_mhz"))
    s.tma_probe_clock_mhz = num_field(j, origin, "tma.probe_clock_mhz", 100, 10000);
  if (!j["tma"].contains("clocks") || !j["tma"]["clocks"].is_array())
    throw Error(fmt::format("schedule file '{}': missing field 'tma.clocks'", origin),
                "a list of measured tiles");
  for (size_t i = 0; i < j["tma"]["clocks"].size(); ++i) {
    TmaClocks c;
    c.d = static_cast<int>(num_field(j, origin, fmt::format("tma.clocks.{}.d", i), 8, 256));
    c.tile_d =
        static_cast<int>(num_field(j, origin, fmt::format("tma.clocks.{}.tile_d", i), 16, 256));
    c.swizzle =
        static_cast<int>(num_field(j, origin, fmt::format("tma.clocks.{}.swizzle", i), 32, 128));
    c.clocks = num_field(j, origin, fmt::format("tma.clocks.{}.clocks", i), 1, 1e6);
    s.tma.push_back(c);
  }
}

ScheduleSpec parse_schedule_fields(const json& j, const std::string& origin) {
  if (!j.is_object() || j.value("schema", "") != "fa4sim/schedule-v1")
    throw Error(fmt::format("schedule file '{}' is not a fa4sim/schedule-v1 object", origin),
                "see data/schedule/sm90.json for the format");
  ScheduleSpec s;
  s.origin = origin;
  s.raw = j;
  s.name = j.value("name", "");
  s.kernel = j.value("kernel", "");
  if (s.kernel != "sm90" && s.kernel != "sm100")
    throw Error(
        fmt::format("schedule file '{}': field 'kernel' must be \"sm90\" or \"sm100\"", origin),
        "the two kernels fa4sim models");
  if (!j.contains("tiles") || !j["tiles"].is_array() || j["tiles"].empty())
    throw Error(fmt::format("schedule file '{}': missing field 'tiles'", origin),
                "a list of tile rules");
  for (size_t i = 0; i < j["tiles"].size(); ++i) {
    const json& t = j["tiles"][i];
    TileRule r;
    r.d_max = static_cast<int>(num_field(j, origin, fmt::format("tiles.{}.d_max", i), 8, 512));
    r.tile_m = static_cast<int>(num_field(j, origin, fmt::format("tiles.{}.tile_m", i), 64, 256));
    r.tile_n = static_cast<int>(num_field(j, origin, fmt::format("tiles.{}.tile_n", i), 16, 256));
    r.causal = t.contains("causal") ? (t["causal"].get<bool>() ? 1 : 0) : -1;
    r.rs = t.value("rs", true);
    if (t.contains("stock_tau"))
      r.stock_tau = num_field(j, origin, fmt::format("tiles.{}.stock_tau", i), 0, 64);
    if (t.contains("stock_emu_fraction"))
      r.stock_emu_fraction =
          num_field(j, origin, fmt::format("tiles.{}.stock_emu_fraction", i), 0, 1);
    s.tiles.push_back(r);
  }
  if (j.contains("tma")) parse_tma(j, origin, s);
  s.lat_fma = num_field(j, origin, "latency.fma", 1, 1000);
  s.lat_alu = num_field(j, origin, "latency.alu", 1, 1000);
  s.lat_mufu = num_field(j, origin, "latency.mufu", 1, 1000);
  s.lat_shfl = num_field(j, origin, "latency.shfl", 1, 1000);
  s.window = static_cast<int>(num_field(j, origin, "window", 1, 64));
  if (j.contains("window_three_warpgroups"))
    s.window_three_warpgroups =
        static_cast<int>(num_field(j, origin, "window_three_warpgroups", 1, 64));
  s.overhead_instructions = num_field(j, origin, "overhead_instructions", 0, 1e4);
  s.tensor_efficiency = num_field(j, origin, "calibrated.tensor_efficiency", 0.05, 1);
  s.wgmma_latency = num_field(j, origin, "calibrated.wgmma_latency", 0, 1e5);
  s.cta_fixed_cycles = num_field(j, origin, "calibrated.cta_fixed_cycles", 0, 1e7);
  s.tau_cycles = num_field(j, origin, "calibrated.tau_cycles", 0, 1e5);
  // Optional calibrated terms (absent: the values that leave earlier spec files' predictions as they were).
  const json& cal = j["calibrated"];
  if (cal.contains("tau_cycles_fixed"))
    s.tau_cycles_fixed = num_field(j, origin, "calibrated.tau_cycles_fixed", 0, 1e5);
  if (cal.contains("tau_pv_wait_cycles"))
    s.tau_pv_wait_cycles = num_field(j, origin, "calibrated.tau_pv_wait_cycles", 0, 1e5);
  if (cal.contains("smem_p_cycles"))
    s.smem_p_cycles = num_field(j, origin, "calibrated.smem_p_cycles", 0, 1e5);
  if (cal.contains("fma_tensor_stall"))
    s.fma_tensor_stall = num_field(j, origin, "calibrated.fma_tensor_stall", 0, 64);
  if (cal.contains("mask_instructions"))
    s.mask_instructions = num_field(j, origin, "calibrated.mask_instructions", 0, 64);
  if (cal.contains("clock_duration_slope"))
    s.clock_duration_slope = num_field(j, origin, "calibrated.clock_duration_slope", -1, 1);
  if (cal.contains("clock_tricks_slope"))
    s.clock_tricks_slope = num_field(j, origin, "calibrated.clock_tricks_slope", 0, 100);
  if (cal.contains("clock_tricks_c0"))
    s.clock_tricks_c0 = num_field(j, origin, "calibrated.clock_tricks_c0", 1, 1e12);
  if (cal.contains("tma_clock_scale"))
    s.tma_clock_scale = num_field(j, origin, "calibrated.tma_clock_scale", 0.1, 10);
  if (cal.contains("cta_fixed_cycles_per_d"))
    s.cta_fixed_cycles_per_d = num_field(j, origin, "calibrated.cta_fixed_cycles_per_d", 0, 1e5);
  if (j.contains("rescale_o_before_gemm_above_d"))
    s.rescale_before_gemm_above_d =
        static_cast<int>(num_field(j, origin, "rescale_o_before_gemm_above_d", 0, 512));
  s.clock_from_stock = bool_field(j, origin, "clock_from_stock", s.clock_from_stock);
  s.rescale_stalls_tensor = bool_field(j, origin, "rescale_stalls_tensor", s.rescale_stalls_tensor);
  s.clock_mhz_base = num_field(j, origin, "calibrated.clock_mhz_base", 100, 10000);
  s.clock_tensor_slowdown = num_field(j, origin, "calibrated.clock_tensor_slowdown", 0, 100);
  return s;
}

}  // namespace

ScheduleSpec parse_schedule_spec(const json& j, const std::string& origin) {
  // A field of the wrong type ({"schema": {}}, "causal": 1) makes the library throw its own
  // type_error: say which file, as every other malformed input does.
  try {
    return parse_schedule_fields(j, origin);
  } catch (const json::exception& e) {
    throw Error(fmt::format("schedule file '{}': {}", origin, e.what()),
                "see data/schedule/sm90.json for the format");
  }
}

ScheduleSpec load_schedule_spec(const std::string& name_or_path) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  const std::string path =
      is_path ? name_or_path : roofline_data_dir() + "/schedule/" + name_or_path + ".json";
  return parse_schedule_spec(read_json_file(path, "schedule file"), path);
}

// ---- kernel factors (Note [Kernel factors])

KernelFactors load_kernel_factors(const std::string& path) {
  constexpr const char* kWhat = "kernel factors file";
  constexpr const char* kExample = "data/schedule/sm90_kernel_factors.json";
  const json j = read_json_file(path, kWhat);
  const auto refuse = [&](const std::string& what) {
    return Error(fmt::format("{} '{}': {}", kWhat, path, what),
                 fmt::format("see {} for the format", kExample));
  };
  if (!j.is_object() || j.value("schema", "") != "fa4sim/schedule-kernel-factors-v1")
    throw refuse("not a fa4sim/schedule-kernel-factors-v1 object");
  KernelFactors f;
  f.origin = path;
  try {
    if (!j.contains("spec") || !j["spec"].is_string())
      throw refuse("field 'spec' must name the kernel description the factors were taken against");
    f.spec = j["spec"].get<std::string>();
    const bool names = j.contains("archs") && j["archs"].is_array() && !j["archs"].empty() &&
                       std::all_of(j["archs"].begin(), j["archs"].end(),
                                   [](const json& x) { return x.is_string(); });
    if (!names) throw refuse("field 'archs' must be a non-empty list of arch names");
    f.archs = j["archs"].get<std::vector<std::string>>();
    if (!j.contains("kernels") || !j["kernels"].is_array()) throw refuse("missing field 'kernels'");
    for (size_t i = 0; i < j["kernels"].size(); ++i) {
      const json& k = j["kernels"][i];
      const auto field = [&](const char* name, double lo, double hi) {
        return num_field(j, path, fmt::format("kernels.{}.{}", i, name), lo, hi, kWhat, kExample);
      };
      const auto whole = [&](const char* name, double lo, double hi, int multiple) {
        const double v = field(name, lo, hi);
        if (v != std::floor(v) || static_cast<long>(v) % multiple != 0)
          throw refuse(fmt::format("field 'kernels.{}.{}' = {} is not a whole multiple of {}", i,
                                   name, v, multiple));
        return static_cast<int>(v);
      };
      KernelFactor kf;
      kf.d = whole("d", 8, 256, 8);
      if (!k.contains("causal") || !k["causal"].is_boolean())
        throw refuse(fmt::format("field 'kernels.{}.causal' must be true or false", i));
      kf.causal = k["causal"].get<bool>();
      kf.tau = field("tau", 0, 64);
      kf.emu_fraction = field("emu_fraction", 0, 1);
      // optional: files before it was keyed held degree-3 kernels only (the only degree measured)
      if (k.contains("degree")) kf.degree = whole("degree", 0, 5, 1);
      kf.factor = field("factor", 0.25, 4);
      kf.measurements = whole("measurements", 1, 1e6, 1);
      for (const KernelFactor& o : f.kernels)
        if (o.d == kf.d && o.causal == kf.causal && o.tau == kf.tau &&
            o.emu_fraction == kf.emu_fraction && o.degree == kf.degree)
          throw refuse(
              fmt::format("kernels.{} repeats an earlier kernel (d {}, causal {}, tau {}, "
                          "fraction {}, degree {})",
                          i, kf.d, kf.causal, kf.tau, kf.emu_fraction, kf.degree));
      f.kernels.push_back(kf);
    }
  } catch (const json::exception& e) {
    throw refuse(e.what());
  }
  return f;
}

const KernelFactor* find_kernel_factor(const KernelFactors& f, const ArchSpec& a,
                                       const ScheduleInput& in) {
  if (in.tile_m != 0 || in.tile_n != 0) return nullptr;
  if (std::find(f.archs.begin(), f.archs.end(), a.name) == f.archs.end()) return nullptr;
  for (const KernelFactor& k : f.kernels)
    if (k.d == in.shape.d && k.causal == in.shape.causal &&
        std::abs(k.tau - in.tricks.tau) < 1e-9 &&
        std::abs(k.emu_fraction - in.tricks.emu_fraction) < 1e-9 &&
        (in.tricks.emu_fraction == 0 || k.degree == in.tricks.degree))
      return &k;
  return nullptr;
}

std::optional<KernelFactors> resolve_kernel_factors(const std::string& spec_path,
                                                    const std::string& kernel_factors,
                                                    const ArchSpec& a) {
  if (kernel_factors == "none") return std::nullopt;
  if (!kernel_factors.empty()) return load_kernel_factors(kernel_factors);
  if (!spec_path.empty())
    return std::nullopt;  // factors belong to the spec they were taken against
  const std::string path =
      roofline_data_dir() + "/schedule/" + schedule_spec_for_arch(a) + "_kernel_factors.json";
  if (!fs::exists(path)) return std::nullopt;
  return load_kernel_factors(path);
}

std::string schedule_spec_for_arch(const ArchSpec& a) {
  if (a.sm_arch == "sm_90") return "sm90";
  if (a.sm_arch == "sm_100" || a.sm_arch == "sm_103") return "sm100";
  throw Error(
      fmt::format("no schedule model for {} ({})", a.name, a.sm_arch),
      "the schedule model covers FA4's sm90 and sm100 forward kernels: h100_sxm, h200, b200, b300");
}

// ---- instruction streams (thread view of one warp, one iteration)

namespace {

struct Builder {
  sched::Program p;
  int add(sched::Pipe pipe, int d1 = -1, int d2 = -1, int width = 1) {
    p.push_back(sched::Instr{pipe, d1, d2, width});
    return static_cast<int>(p.size()) - 1;
  }
};

// Is element `col` of a row (the thread's col-th column: n8 tile col / 2) emulated? The rule of
// scripts/drivers/fa4_tricks.py generalised to any fraction f: tile t is emulated iff frac(t f) < f.
bool emulated(int col, double f) {
  if (f <= 0) return false;
  if (f >= 1) return true;
  const int t = col / 2;
  const double x = t * f;
  return x - std::floor(x) < f - 1e-12;
}

// The exp2 of `n` (1 or 2) scaled scores from `src`: the MUFU, or the emulation of
// flash_attn/cute/utils.py ex2_emulation / ex2_emulation_2 (data/exp_pipe_model.json: clamp
// per element, floor by add.rm, two subs and Horner as one packed f32x2 instruction per pair
// where the arch packs, splice per element). Returns the last result.
int add_exp(Builder& b, int src, bool emu, int degree, int n = 1) {
  if (!emu) {
    int r = -1;
    for (int i = 0; i < n; ++i) r = b.add(sched::kMufu, src);
    return r;
  }
  int clamp = -1;
  for (int i = 0; i < n; ++i) clamp = b.add(sched::kAlu, src);
  const int fl = b.add(sched::kFma, clamp, -1, n);
  int h = fl;
  if (degree >= 1) {
    const int back = b.add(sched::kFma, fl, -1, n);
    h = b.add(sched::kFma, clamp, back, n);
    for (int k = 0; k < degree; ++k) h = b.add(sched::kFma, h, -1, n);
  }
  int r = -1;
  for (int i = 0; i < n; ++i) r = b.add(sched::kAlu, fl, h);
  return r;
}

// Reduction of `vals` into one value with `chains` independent accumulators (pipe `pipe`).
int reduce(Builder& b, const std::vector<int>& vals, sched::Pipe pipe, int chains, int init = -1) {
  std::vector<int> acc(chains, -1);
  if (init >= 0) acc[0] = init;
  for (size_t i = 0; i < vals.size(); ++i) acc[i % chains] = b.add(pipe, acc[i % chains], vals[i]);
  int r = acc[0];
  for (int c = 1; c < chains; ++c) r = acc[c] < 0 ? r : b.add(pipe, r, acc[c]);
  return r;
}

struct StreamSpec {
  int rows = 2, cols = 64;  // per thread
  int d = 64;
  bool masked = false, rs = true, packed = false;
  const Tricks* tricks = nullptr;
  bool tmem = false;  // sm100: S comes from and P goes to tensor memory (tcgen05.ld / st)
  double mask_instructions = 2;  // ALU instructions per masked score (a share spread evenly)
  bool rescale_stalls_tensor =
      true;  // O's rescale FMULs hold the tensor unit back (Note [O rescale and the tensor unit])
};

// O *= row_scale: one FMA-pipe instruction per O accumulator of a thread (sm100: per row element,
// charged to the same sub-partition), the share of iterations that rescale with tau > 0.
sched::Program rescale_stream(const StreamSpec& s) {
  Builder b;
  const Tricks& tr = *s.tricks;
  const double share = tr.tau > 0 ? tr.rescale_share : 1.0;
  const double o_per_thread = s.tmem ? s.rows * s.d : s.rows * s.d / 4.0;
  const int step = s.packed ? 2 : 1;
  const int o_instr = static_cast<int>(std::lround(o_per_thread * share / step));
  for (int i = 0; i < o_instr; ++i) b.add(sched::kFma, -1, -1, step);
  for (auto& in : b.p) in.stalls_tensor = s.rescale_stalls_tensor;
  return std::move(b.p);
}

// The online softmax of one S block (flash_attn/cute/softmax.py Softmax.online_softmax; with tau,
// fa4_tricks' update_row_max): mask, row max (+ quad shuffles), scale FMA, exp2, row sum.
sched::Program softmax_stream(const StreamSpec& s) {
  Builder b;
  const Tricks& tr = *s.tricks;
  int ld = -1;
  for (int i = 0; s.tmem && i < 4; ++i)
    ld = b.add(sched::kShfl, ld);  // tcgen05.ld of S, 32 columns each
  std::vector<std::vector<int>> src(s.rows, std::vector<int>(s.cols, ld));
  if (s.masked) {
    long e = 0;
    for (auto& row : src)
      for (int& v : row) {
        const long n = static_cast<long>(std::floor((e + 1) * s.mask_instructions)) -
                       static_cast<long>(std::floor(e * s.mask_instructions));
        ++e;
        for (long i = 0; i < n; ++i) v = b.add(sched::kAlu, i == 0 ? ld : v);
      }
  }
  std::vector<int> scaled_max(s.rows);
  for (int r = 0; r < s.rows; ++r) {
    int m = reduce(b, src[r], sched::kAlu, 4);
    for (int sh = 0; sh < 2 && s.rows > 1; ++sh) m = b.add(sched::kAlu, m, b.add(sched::kShfl, m));
    scaled_max[r] = b.add(sched::kFma, m);
    const int diff = b.add(sched::kFma, scaled_max[r]);
    if (tr.tau > 0) scaled_max[r] = b.add(sched::kAlu, b.add(sched::kAlu, diff), scaled_max[r]);
    b.add(sched::kMufu, diff);  // row_scale = exp2((old - new) * scale_log2)
  }
  if (tr.tau > 0) b.add(sched::kAlu);  // the warp's vote
  const int chunk = 8;
  for (int r = 0; r < s.rows; ++r) {
    std::vector<int> acc(4, -1);
    for (int c0 = 0; c0 < s.cols; c0 += chunk) {
      const int c1 = std::min(s.cols, c0 + chunk);
      std::vector<int> f(c1 - c0), x(c1 - c0);
      const int step = s.packed ? 2 : 1;  // elements per FMA-pipe instruction
      for (int c = c0; c < c1; c += step)
        f[c - c0] = b.add(sched::kFma, scaled_max[r], src[r][c], step);
      for (int c = c0; c < c1; c += step)
        x[c - c0] = add_exp(b, f[c - c0], emulated(c, tr.emu_fraction), tr.degree, step);
      for (int c = c0; c < c1; c += step)
        acc[(c / step) % 4] = b.add(sched::kFma, acc[(c / step) % 4], x[c - c0], step);
    }
  }
  return std::move(b.p);
}

// After GEMM1: P to 16 bits (cvt_f16, pairs), P to shared memory when not RS, O *= row_scale
// unless it comes before GEMM1 (rescale_stream). sm100: P converted and stored to tensor memory;
// O is rescaled by the correction warpgroup (on the same sub-partition: its instructions are
// charged here).
sched::Program post_stream(const StreamSpec& s, bool with_rescale) {
  Builder b;
  const int elems = s.rows * s.cols;
  for (int i = 0; i < elems / 2; ++i) b.add(sched::kAlu);
  if (!s.rs)
    for (int i = 0; i < elems / 4; ++i) b.add(sched::kShfl);
  if (s.tmem)
    for (int i = 0; i < 2; ++i) b.add(sched::kShfl);  // tcgen05.st of P
  if (with_rescale)
    for (const sched::Instr& in : rescale_stream(s)) b.p.push_back(in);
  return std::move(b.p);
}

sched::Program issue_stream(int n_instr) {
  Builder b;
  for (int i = 0; i < n_instr; ++i) b.add(sched::kIssue);
  return std::move(b.p);
}

}  // namespace

// ---- one CTA

namespace {

struct Kernel {
  int tile_m = 0, tile_n = 0, warps = 0,
      d = 0;  // d: the tile's head dim (padded to a multiple of 16)
  bool rs = true, turn_barrier = true;
  bool rescale_before_gemm = false;  // O *= row_scale between the issue of GEMM0 and of GEMM1
  bool causal = false;
  double gemm_clocks = 0;  // one GEMM of one warpgroup on one SMSP's tensor unit
  double tma_clocks = 0;   // TMA's clocks for one iteration's K and V tiles (0: not modelled)
};

void check_input(const ScheduleInput& in) {
  const AttnShape& a = in.shape;
  if (a.d < 8 || a.d > 256 || a.d % 8 != 0)
    throw Error(fmt::format("head dim {} cannot run in FA4's forward", a.d),
                "d must be a multiple of 8 in 8..256");
  if (a.seq_q < 1 || a.seq_k < 1) throw Error("seq must be at least 1", "give --seq >= 1");
  if (a.batch < 1 || a.heads < 1 || a.heads_kv < 1)
    throw Error("batch and heads must be at least 1", "give positive sizes");
  if (a.heads % a.heads_kv != 0)
    throw Error(fmt::format("heads {} is not a multiple of kv heads {}", a.heads, a.heads_kv),
                "GQA needs heads = kv_heads * group size");
  const Tricks& t = in.tricks;
  if (!(t.emu_fraction >= 0 && t.emu_fraction <= 1))
    throw Error(fmt::format("emulated fraction {} is outside [0, 1]", t.emu_fraction),
                "give a share of the exps");
  if (t.degree < 0 || t.degree > 5)
    throw Error("degree must be 0..5", "the polynomials of ex2_emulation");
  if (!(t.tau >= 0 && t.tau <= 64))
    throw Error(fmt::format("tau {} is outside [0, 64]", t.tau), "tau is in log2 units");
  if (!(t.rescale_share >= 0 && t.rescale_share <= 1))
    throw Error("rescale share outside [0, 1]", "a share");
  if (!(in.clock_mhz == 0 || (in.clock_mhz >= 100 && in.clock_mhz <= 10000)))
    throw Error(fmt::format("clock {} MHz is not a clock", in.clock_mhz),
                "give MHz in 100..10000, or 0 for the power-cap clock");
}

}  // namespace

int tma_swizzle_bytes(int tile_d) {
  const int row = 2 * tile_d;
  return row % 128 == 0 ? 128 : row % 64 == 0 ? 64 : 32;
}

double tma_tile_clocks(const ScheduleSpec& s, int d, int rows) {
  const int tile_d = (d + 15) / 16 * 16, sw = tma_swizzle_bytes(tile_d);
  auto boxes = [&](int td) { return (2 * td + sw - 1) / sw; };  // boxes of sw bytes per row
  const TmaClocks* near = nullptr;
  for (const TmaClocks& c : s.tma) {
    if (c.swizzle != sw || (c.d == c.tile_d) != (d == tile_d)) continue;
    if (c.d == d && c.tile_d == tile_d) return c.clocks * rows / s.tma_rows;
    if (!near || std::abs(c.tile_d - tile_d) < std::abs(near->tile_d - tile_d)) near = &c;
  }
  if (!near) return 0;
  return near->clocks / boxes(near->tile_d) * boxes(tile_d) * rows / s.tma_rows;
}

const TileRule& tile_rule(const ScheduleSpec& s, int d, bool causal) {
  for (const auto& r : s.tiles)
    if (d <= r.d_max && (r.causal < 0 || r.causal == (causal ? 1 : 0))) return r;
  throw Error(fmt::format("no tile rule of '{}' covers d = {}", s.origin, d), "d <= 256");
}

namespace {

Kernel choose_kernel(const ArchSpec& a, const ScheduleSpec& s, const ScheduleInput& in) {
  Kernel k;
  k.d = (in.shape.d + 15) / 16 * 16;  // upstream's tile_hdim
  const TileRule* rule = &tile_rule(s, in.shape.d, in.shape.causal);
  k.tile_m = in.tile_m > 0 ? in.tile_m : rule->tile_m;
  k.tile_n = in.tile_n > 0 ? in.tile_n : rule->tile_n;
  k.rs = rule->rs;
  if (k.tile_m % 64 != 0 || k.tile_m < 64 || k.tile_m > 256 || k.tile_n % 16 != 0 ||
      k.tile_n < 16 || k.tile_n > 256)
    throw Error(fmt::format("tile {}x{} is not one the kernel can run", k.tile_m, k.tile_n),
                "M a multiple of 64 in 64..256, N a multiple of 16 in 16..256");
  const int wg_rows = s.kernel == "sm100" ? 128 : 64;
  k.warps = std::max(1, k.tile_m / wg_rows);
  k.turn_barrier = s.kernel == "sm90" && k.warps >= 2 && k.d <= 128;
  k.rescale_before_gemm = s.rescale_before_gemm_above_d > 0 && k.d > s.rescale_before_gemm_above_d;
  k.causal = in.shape.causal;
  const double rate_smsp = a.mma_bf16_flop_per_clk_sm / a.smsp_per_sm * s.tensor_efficiency;
  k.gemm_clocks = 2.0 * wg_rows / a.smsp_per_sm * k.tile_n * k.d / rate_smsp;
  k.tma_clocks = 2 * s.tma_clock_scale * tma_tile_clocks(s, in.shape.d, k.tile_n);
  return k;
}

sched::SimConfig sim_config(const ArchSpec& a, const ScheduleSpec& s, const Kernel& k) {
  sched::SimConfig c;
  c.warps = k.warps;
  c.turn_barrier = k.turn_barrier;
  c.pv_first = s.kernel == "sm100";
  // tile M 192: its own window (Note [Issue window with three warpgroups])
  c.window = k.warps >= 3 && s.window_three_warpgroups > 0 ? s.window_three_warpgroups : s.window;
  c.gemm_latency = s.wgmma_latency;
  c.fma_tensor_stall = s.fma_tensor_stall;
  const double lanes_smsp_fma = a.fp32_fma_lanes_per_clk_sm / a.smsp_per_sm;
  const double lanes_smsp_alu = a.alu_lanes_per_clk_sm / a.smsp_per_sm;
  const double lanes_smsp_mufu = a.mufu_ex2_per_clk_sm / a.smsp_per_sm;
  c.rates.occupancy = {0, 32 / lanes_smsp_fma, 32 / lanes_smsp_alu, 32 / lanes_smsp_mufu, 2};
  c.rates.latency = {1, s.lat_fma, s.lat_alu, s.lat_mufu, s.lat_shfl};
  return c;
}

struct CtaTime {
  double sim_period = 0;  // the period of the simulated warps alone (before the load bound)
  double fixed = 0;       // a CTA's fixed clocks
  sched::SimResult sim;
  int sim_iters = 0;
};

// Iterations simulated for a CTA of n iterations with `masked` masked ones; the rest run at the
// steady-state period.
int simulated_iters(int n, int masked) { return std::min(n, std::max(masked + 6, 10)); }

// One CTA of n iterations whose first `masked` iterations apply the causal mask.
CtaTime cta_time(const ArchSpec& a, const ScheduleSpec& s, const Kernel& k, const Tricks& tr,
                 bool packed, int n, int masked) {
  const sched::SimConfig c = sim_config(a, s, k);
  const bool sm100 = s.kernel == "sm100";
  const int rows =
      sm100 ? 1
            : 2;  // per thread: sm100 a row of the 128-row tile, sm90 2 rows of a wgmma m64 tile
  const int cols = sm100 ? k.tile_n : k.tile_n / 4;
  StreamSpec plain{rows, cols, k.d, false, k.rs, packed, &tr, sm100};
  plain.rescale_stalls_tensor = s.rescale_stalls_tensor;
  StreamSpec mask = plain;
  mask.masked = true;
  mask.mask_instructions = s.mask_instructions;
  const sched::Program sm_plain = softmax_stream(plain), sm_mask = softmax_stream(mask),
                       post = post_stream(plain, !k.rescale_before_gemm),
                       rescale = k.rescale_before_gemm ? rescale_stream(plain) : sched::Program{};
  const int overhead = static_cast<int>(std::lround(s.overhead_instructions));
  // sm90: the consumer warps issue their wgmmas; sm100: a separate MMA warp does (no slots here)
  const sched::Program first_issue = issue_stream(sm100 ? overhead : k.d / 16 + 4 + overhead),
                       issue =
                           issue_stream(sm100 ? overhead : k.d / 16 + k.tile_n / 16 + 6 + overhead);
  const int iters = simulated_iters(n, masked);
  const double o_per_thread = rows * k.d / (sm100 ? 1.0 : 4.0);  // O accumulators a thread rescales
  auto work = [&](int j) {
    sched::IterationWork w;
    w.issue_gemms = j == 0 ? first_issue : issue;
    w.gemm0 = k.gemm_clocks;
    w.gemm1 = j == 0 ? 0 : k.gemm_clocks;
    w.softmax = j < masked ? sm_mask : sm_plain;
    w.post = post;
    w.rescale = j == 0 ? sched::Program{} : rescale;  // nothing to rescale before the first O += PV
    w.extra_wait = tr.tau > 0 ? s.tau_cycles_fixed + s.tau_cycles * o_per_thread / 32.0 : 0;
    if (tr.tau > 0 && k.rescale_before_gemm && !k.causal)
      w.extra_wait += s.tau_pv_wait_cycles;      // Note [PV wait with tau]
    if (!k.rs) w.extra_wait += s.smem_p_cycles;  // P through shared memory: fence and warp sync
    return w;
  };
  CtaTime t;
  t.sim = sched::simulate(c, iters, work);
  t.sim_iters = iters;
  const int lo = std::max(masked, iters / 2), hi = iters - 1;
  t.sim_period = hi > lo ? (t.sim.iter_start[hi] - t.sim.iter_start[lo]) / (hi - lo)
                         : t.sim.end / std::max(1, iters);
  t.fixed = s.cta_fixed_cycles + s.cta_fixed_cycles_per_d * k.d;
  return t;
}

// A simulated CTA under the load bound: TMA streams K and V ahead of the consumers, `tma_clocks`
// per iteration at the kernel's clock, which bounds the period from below.
struct BoundCta {
  const CtaTime* sim = nullptr;
  double period = 0, cycles = 0;  // cycles: of the simulated iterations, fixed clocks included
  // a CTA of n iterations: the simulated ones, then the steady-state period for the rest
  double cycles_for(int n) const { return cycles + (n - sim->sim_iters) * period; }
};

BoundCta bounded(const CtaTime& raw, double tma_clocks) {
  return {&raw, std::max(raw.sim_period, tma_clocks),
          std::max(raw.sim.end, raw.sim_iters * tma_clocks) + raw.fixed};
}

// The grid's makespan: CTAs list-scheduled on `sms` SMs, longest first (upstream's causal LPT
// order; non-causal CTAs are all equal, so the order does not matter).
double makespan(std::vector<double> ctas, int sms) {
  std::sort(ctas.rbegin(), ctas.rend());
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int i = 0; i < sms; ++i) free_at.push(0);
  double end = 0;
  for (double c : ctas) {
    const double t = free_at.top() + c;
    free_at.pop();
    free_at.push(t);
    end = std::max(end, t);
  }
  return end;
}

const char* state_name(int st) {
  static const char* names[] = {"turn barrier",
                                "MMA issue",
                                "wait S = QK^T",
                                "softmax",
                                "tau vote/branch",
                                "wait O += PV",
                                "P convert + O rescale",
                                "O rescale before PV",
                                "done"};
  return names[st];
}

}  // namespace

namespace {

// The simulated CTAs of one configuration, before the load bound and the clock.
struct GridSim {
  Kernel k;
  AttnShape shape;
  std::map<std::pair<int, int>, CtaTime> cache;             // by (simulated iterations, masked)
  std::vector<std::pair<std::pair<int, int>, int>> blocks;  // per M block: cache key, iterations
};

GridSim simulate_ctas(const ArchSpec& a, const ScheduleSpec& s, const ScheduleInput& in) {
  GridSim g;
  g.k = choose_kernel(a, s, in);
  g.shape = in.shape;
  const Kernel& k = g.k;
  const AttnShape& sh = in.shape;
  const int qpk = sh.heads / sh.heads_kv;
  const long rows =
      static_cast<long>(sh.seq_q) * qpk;  // pack_gqa: a KV head's query heads share a tile
  const long m_blocks = (rows + k.tile_m - 1) / k.tile_m;
  const int n_all = (sh.seq_k + k.tile_n - 1) / k.tile_n;
  for (long m = 0; m < m_blocks; ++m) {
    int n = n_all, masked = 0;
    if (sh.causal) {
      const long first = m * k.tile_m / qpk,
                 last = std::min<long>(rows - 1, (m + 1) * k.tile_m - 1) / qpk;
      const long off = sh.seq_k - sh.seq_q;
      n = static_cast<int>(std::clamp<long>((last + off + 1 + k.tile_n - 1) / k.tile_n, 0, n_all));
      const int n_full = static_cast<int>(std::clamp<long>((first + off + 1) / k.tile_n, 0, n));
      masked = n - n_full;
    }
    if (n == 0) continue;
    const std::pair<int, int> key{simulated_iters(n, masked), masked};
    if (!g.cache.count(key))
      g.cache.emplace(key, cta_time(a, s, k, in.tricks, a.packed_f32x2, key.first, masked));
    g.blocks.push_back({key, n});
  }
  return g;
}

// TMA's clocks per iteration at an SM clock: the table's clocks when they are SM clocks at any
// clock, or its nanoseconds at the probe's clock (Note [Loads in nanoseconds]).
double tma_clocks_at(const ScheduleSpec& s, const Kernel& k, double clock_mhz) {
  return s.tma_probe_clock_mhz > 0 ? k.tma_clocks * clock_mhz / s.tma_probe_clock_mhz
                                   : k.tma_clocks;
}

// The grid's cycles and the per-CTA breakdown at an SM clock (which sets the loads' clocks);
// predict_schedule adds the clock.
SchedulePrediction finish_grid(const ArchSpec& a, const ScheduleSpec& s, const GridSim& g,
                               double clock_mhz) {
  const Kernel& k = g.k;
  const AttnShape& sh = g.shape;
  const double tma = tma_clocks_at(s, k, clock_mhz);
  std::map<std::pair<int, int>, BoundCta> cta;
  for (const auto& [key, raw] : g.cache) cta.emplace(key, bounded(raw, tma));
  std::vector<double> ctas;
  const BoundCta* longest = nullptr;
  double longest_cycles = 0;
  for (const auto& [key, n] : g.blocks) {
    const BoundCta& b = cta.at(key);
    const double cycles = b.cycles_for(n);
    if (cycles > longest_cycles) longest = &b, longest_cycles = cycles;
    for (long r = 0; r < static_cast<long>(sh.batch) * sh.heads_kv; ++r) ctas.push_back(cycles);
  }
  SchedulePrediction p;
  p.tile_m = k.tile_m;
  p.tile_n = k.tile_n;
  p.warps = k.warps;
  p.rs = k.rs;
  p.ctas = static_cast<long>(ctas.size());
  p.waves = static_cast<double>(p.ctas) / a.sm_count;
  p.total_cycles = makespan(ctas, a.sm_count);
  p.flops = 4.0 * sh.batch * sh.heads * static_cast<double>(sh.seq_q) * sh.seq_k * sh.d;
  if (sh.causal) p.flops /= 2;  // the convention of upstream's benchmarks
  if (!longest) return p;
  const CtaTime& t = *longest->sim;
  p.iter_cycles = longest->period;
  p.cta_cycles = longest_cycles;
  const double span =  // stretched when the loads bind
      t.sim.end * (longest->period / std::max(t.sim_period, 1e-9));
  p.util_tensor = t.sim.tensor_busy / span;
  p.util_fma = t.sim.pipe_busy[sched::kFma] / span;
  p.util_alu = t.sim.pipe_busy[sched::kAlu] / span;
  p.util_mufu = t.sim.pipe_busy[sched::kMufu] / span;
  p.util_issue = t.sim.issued / span;
  p.instructions_per_iteration = t.sim.issued / (k.warps * static_cast<double>(t.sim_iters));
  p.tensor_share_grid = p.flops / (p.total_cycles * a.sm_count * a.mma_bf16_flop_per_clk_sm);
  p.util_tma = longest->period > 0 ? tma / longest->period : 0;
  const std::pair<const char*, double> res[] = {{"tensor", p.util_tensor}, {"mufu", p.util_mufu},
                                                {"fma", p.util_fma},       {"alu", p.util_alu},
                                                {"issue", p.util_issue},   {"tma", p.util_tma}};
  p.binding = std::max_element(std::begin(res), std::end(res), [](auto& x, auto& y) {
                return x.second < y.second;
              })->first;
  p.path_breakdown = json::object();
  int worst = 0;
  for (int st = 0; st < sched::kDone; ++st) {
    const double per_iter = t.sim.state_clocks[st] / (k.warps * static_cast<double>(t.sim_iters));
    p.path_breakdown[state_name(st)] = per_iter;
    if (st != sched::kSoftmax && st != sched::kPost &&
        per_iter > t.sim.state_clocks[worst] / (k.warps * double(t.sim_iters)))
      worst = st;
  }
  p.critical_path = state_name(worst);
  return p;
}

// The clock line under the power cap (Note [Schedule model], Note [Clock and duration]) for a
// kernel of tensor share u and `cycles` clocks at head dim d, before the arch's clock ceiling.
double clock_line_uncapped(const ScheduleSpec& s, double u, double cycles, int d) {
  // The tensor core draws power for the padded head dim it multiplies (upstream's tile_hdim), and
  // the clock settles lower the longer a kernel runs.
  u *= static_cast<double>((d + 15) / 16 * 16) / d;
  const double slow = 1 + s.clock_tensor_slowdown * u +
                      s.clock_duration_slope * std::log(std::max(cycles, 1.0) / 1e6);
  return s.clock_mhz_base / std::max(slow, 0.1);
}

double clock_line(const ArchSpec& a, const ScheduleSpec& s, double u, double cycles, int d) {
  return std::min(a.sm_clock_mhz, clock_line_uncapped(s, u, cycles, d));
}

// The weight of a tricks variant's own tensor share in its clock (Note [Clock follows the tricks
// in long runs]) for a stock kernel of `stock_cycles`.
double clock_tricks_weight(const ScheduleSpec& s, double stock_cycles) {
  return std::clamp(
      s.clock_tricks_slope * std::log(std::max(stock_cycles, 1.0) / s.clock_tricks_c0), 0.0, 1.0);
}

}  // namespace

SchedulePrediction predict_schedule(const ArchSpec& a, const ScheduleSpec& s,
                                    const ScheduleInput& in, const KernelFactors* factors) {
  check_input(in);
  const GridSim g = simulate_ctas(a, s, in);
  // Under the power cap, power / clock grows with the tensor share (Note [Schedule model]); with
  // clock_from_stock the share and the length are the stock kernel's on the same shape: the tricks
  // move work between pipes, not the power the shape draws (measured: docs/schedule.md).
  const TileRule& rule = tile_rule(s, in.shape.d, in.shape.causal);
  const bool same =
      !s.clock_from_stock || (in.tile_m == 0 && in.tile_n == 0 && in.tricks.tau == rule.stock_tau &&
                              in.tricks.emu_fraction == rule.stock_emu_fraction);
  const bool no_tile = in.tile_m == 0 && in.tile_n == 0;  // tile overrides keep the stock clock
  ScheduleInput stock = in;
  stock.tile_m = stock.tile_n = 0;
  stock.tricks.tau = rule.stock_tau;
  stock.tricks.emu_fraction = rule.stock_emu_fraction;
  const GridSim gs = same ? GridSim{} : simulate_ctas(a, s, stock);
  // With kernel factors, the clock of a tricks variant sees the factors' cycles (Note [Kernel
  // factors in the clock]): each kernel's tensor share divided by its factor, the stock kernel's
  // length multiplied by its own.
  const KernelFactor* kf = factors ? find_kernel_factor(*factors, a, in) : nullptr;
  // A variant without a factor of its own keeps the model alone's clock.
  const KernelFactor* kf_stock = kf && !same ? find_kernel_factor(*factors, a, stock) : nullptr;
  const double f_variant = kf ? kf->factor : 1, f_stock = kf_stock ? kf_stock->factor : 1;
  // The loads' clocks depend on the clock and the clock on the cycles: a fixed point, reached in
  // a few steps (the clock's sensitivity to the loads is well below 1).
  double clock = in.clock_mhz > 0 ? in.clock_mhz : a.sm_clock_mhz;
  SchedulePrediction p;
  for (int step = 0; step < 12; ++step) {
    p = finish_grid(a, s, g, clock);
    if (in.clock_mhz > 0) break;
    const SchedulePrediction sp = same ? p : finish_grid(a, s, gs, clock);
    const double u = sp.tensor_share_grid;
    double next = clock_line(a, s, u, sp.total_cycles, in.shape.d);
    if (!same && no_tile &&
        s.clock_tricks_slope > 0) {  // Note [Clock follows the tricks in long runs]
      if (f_variant == 1 && f_stock == 1) {
        const double w = clock_tricks_weight(s, sp.total_cycles);
        next = clock_line(a, s, u + w * (p.tensor_share_grid - u), sp.total_cycles, in.shape.d);
      } else {  // Note [Kernel factors in the clock]: the stock clock times the variant's change
        const double us = u / f_stock, uv = p.tensor_share_grid / f_variant;
        const double cs = sp.total_cycles * f_stock, w = clock_tricks_weight(s, cs);
        next = std::min(a.sm_clock_mhz,
                        clock_line_uncapped(s, u, sp.total_cycles, in.shape.d) *
                            clock_line_uncapped(s, us + w * (uv - us), cs, in.shape.d) /
                            clock_line_uncapped(s, us, cs, in.shape.d));
      }
    }
    const bool done = std::abs(next - clock) < 0.01;
    clock = next;
    if (done) break;
  }
  p.clock_mhz = clock;
  if (kf) {
    p.kernel_factor = kf->factor;
    p.kernel_factor_measurements = kf->measurements;
    p.total_cycles *= kf->factor;
  }
  p.ms = p.total_cycles / (p.clock_mhz * 1e3);
  p.tflops = p.flops / (p.ms * 1e-3) / 1e12;
  return p;
}

json to_json(const SchedulePrediction& p) {
  return json{{"tile_m", p.tile_m},
              {"tile_n", p.tile_n},
              {"consumer_warps_per_smsp", p.warps},
              {"p_from_registers", p.rs},
              {"ctas", p.ctas},
              {"waves", p.waves},
              {"iteration_cycles", p.iter_cycles},
              {"cta_cycles", p.cta_cycles},
              {"total_cycles", p.total_cycles},
              {"clock_mhz", p.clock_mhz},
              {"ms", p.ms},
              {"tflops", p.tflops},
              {"flops", p.flops},
              {"busy",
               {{"tensor", p.util_tensor},
                {"mufu", p.util_mufu},
                {"fma", p.util_fma},
                {"alu", p.util_alu},
                {"issue", p.util_issue},
                {"tma", p.util_tma}}},
              {"instructions_per_warp_iteration", p.instructions_per_iteration},
              {"tensor_share_grid", p.tensor_share_grid},
              {"binding", p.binding},
              {"critical_path", p.critical_path},
              {"clocks_per_iteration_by_state", p.path_breakdown},
              {"kernel_factor", p.kernel_factor},
              {"kernel_factor_measurements", p.kernel_factor_measurements}};
}

}  // namespace fa4sim
