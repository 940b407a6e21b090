// attention.cpp: the `fa4sim attention` model and `fa4sim check` (see attention.h).
#include "fa4sim/analysis/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include <Eigen/Dense>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fa4sim/core/constants.h"
#include "fa4sim/core/splitmix.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/npy.h"
#include "fa4sim/util/numpy_rng.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/progress.h"
#include "fa4sim/util/suggest.h"
#include "fa4sim/analysis/row_sim.h"
#include "attention_gemm.h"
#include "attention_scores.h"

namespace fa4sim {

namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace

// ---- presets

const std::vector<AttentionPreset>& attention_presets() {
  static const std::vector<AttentionPreset> kPresets = {
      {"upstream",
       "flash_attn/cute/flash_fwd_sm100.py @0251105a (2026-08-15), after PR #2717 and PR #2731: "
       "rescale_threshold 8 for 16-bit inputs and 0 for FP8; max_offset 8 for FP8, 0 otherwise",
       8.0, 0.0, 0.0, 8.0},
      {"fp8-tau4",
       "the FP8 setting before the fix of issue #2716 (July 2026): rescale_threshold 4 with "
       "max_offset 8 for FP8 (16-bit inputs as upstream: tau 8, max_offset 0)",
       8.0, 4.0, 0.0, 8.0},
  };
  return kPresets;
}

const AttentionPreset& attention_preset(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& p : attention_presets()) {
    if (name == p.name) return p;
    names.push_back(p.name);
  }
  std::string hint = fmt::format("valid: {}", fmt::join(names, ", "));
  // Nearest by common prefix length, then by length difference: a small did-you-mean.
  std::string best;
  size_t best_score = 0;
  for (const auto& n : names) {
    size_t k = 0;
    while (k < n.size() && k < name.size() && n[k] == name[k]) ++k;
    if (k > best_score) best_score = k, best = n;
  }
  if (best_score >= 2) hint = fmt::format("did you mean '{}'? {}", best, hint);
  throw Error(fmt::format("unknown preset '{}'", name), hint);
}

bool is_fp8(const Format& f) { return f.total_bits == 8; }
double preset_tau(const AttentionPreset& p, const Format& f) {
  return is_fp8(f) ? p.tau_fp8 : p.tau_16bit;
}
double preset_max_offset(const AttentionPreset& p, const Format& f) {
  return is_fp8(f) ? p.max_offset_fp8 : p.max_offset_16bit;
}

const Format& attention_dtype(const Format* f) {
  if (f != nullptr && plays(*f, FormatRole::attention_input)) return *f;
  throw Error(fmt::format("unknown --dtype '{}'", f != nullptr ? f->name : ""),
              fmt::format("valid: {} (the kernel's input types)",
                          fmt::join(format_names(FormatRole::attention_input), ", ")));
}

// ---- block-scaled operands (Note [Block-scaled attention])

const char* p_rule_name(PRule r) { return r == PRule::two_level ? "two-level" : "max-offset"; }

OperandFormat attention_operand(const AttentionConfig& c, const std::string& name,
                                const char* option) {
  OperandFormat o;
  o.name = name;
  for (const Format* f : formats_of(FormatRole::attention_input))
    if (name == f->name) {
      o.plain = f;
      return o;
    }
  const std::vector<std::string> blocks = block_format_names();
  if (std::find(blocks.begin(), blocks.end(), name) == blocks.end()) {
    std::vector<std::string> valid = format_names(FormatRole::attention_input);
    valid.insert(valid.end(), blocks.begin(), blocks.end());
    throw_unknown_choice(option, name, valid);
  }
  BlockFormat b = block_format_by_name(name);
  if (c.scale_rule) {
    const bool pow2 = *c.scale_rule != ScaleRule::nearest;
    if (pow2 && b.scale != &kE8M0)
      throw Error(fmt::format("--scale-rule {}: {}'s {} scale cannot hold the rule's power-of-two "
                              "scales 2^-127..2^127 ({} {})",
                              scale_rule_name(*c.scale_rule), name, b.scale->name, option, name),
                  "use --scale-rule nearest with nvfp4, or an MX format (mxfp8, mxfp6, mxfp4)");
    if (!pow2 && b.scale == &kE8M0)
      throw Error(
          fmt::format("--scale-rule nearest: {}'s E8M0 scale cannot hold amax / {:g}, which "
                      "is not a power of two ({} {})",
                      name, b.elem->max_finite, option, name),
          "use floor, ceil, even or rceil with MX formats, or nearest with nvfp4");
    b.rule = *c.scale_rule;
  }
  if (c.block) b.block_size = *c.block;
  validate_block_format(b);
  o.block = b;
  return o;
}

namespace {

struct BlockOperands {
  OperandFormat qk, p, v;
};

BlockOperands block_operands(const AttentionConfig& c) {
  const std::string base = c.dtypes.front()->name;
  return {attention_operand(c, c.qk_format.empty() ? base : c.qk_format, "--qk-format"),
          attention_operand(c, c.p_format.empty() ? base : c.p_format, "--p-format"),
          attention_operand(c, c.v_format.empty() ? base : c.v_format, "--v-format")};
}

// Where an operand's block size came from, for messages: --scale-block, or the format's own.
std::string block_source(const AttentionConfig& c, const char* option, const OperandFormat& o) {
  return c.block ? fmt::format("--scale-block {}", *c.block)
                 : fmt::format("{} {}: block {}", option, o.name, o.block->block_size);
}

// Q and K are scaled per block of the head dim: the block must divide d.
void check_qk_block(const AttentionConfig& c, const OperandFormat& qk, int d) {
  if (qk.block && d % qk.block->block_size != 0)
    throw Error(fmt::format("the block size {} does not divide the head dim d = {} ({}; Q and K "
                            "are scaled per block of d)",
                            qk.block->block_size, d, block_source(c, "--qk-format", qk)),
                "pick a block size that divides d (MX: 32, NVFP4: 16)");
}

// The max_offset of a P in a block format: SageAttention3's log2(scale max x element max) under
// two-level, else --max-offset or the preset's for a narrow P (FP8's: 8; its tau: FP8's 0).
double block_p_max_offset(const AttentionConfig& c, const AttentionPreset& preset,
                          const OperandFormat& p) {
  if (c.p_rule == PRule::two_level)
    return double(float(std::log2(p.block->scale->max_finite * p.block->elem->max_finite)));
  if (c.max_offset) return *c.max_offset;
  return preset_max_offset(preset, p.plain != nullptr ? *p.plain : kE4M3);
}

std::vector<double> block_p_taus(const AttentionConfig& c, const AttentionPreset& preset,
                                 const OperandFormat& p) {
  if (!c.taus.empty()) return c.taus;
  return {preset_tau(preset, p.plain != nullptr ? *p.plain : kE4M3)};
}

void validate_block_mode(const AttentionConfig& c, const AttentionPreset& preset) {
  if (c.dtypes.size() != 1)
    throw Error("--dtype lists do not apply with --qk-format, --p-format or --v-format",
                "give one --dtype (the format of the operands not named), or none");
  const BlockOperands ops = block_operands(c);
  const bool any_block = ops.qk.block || ops.p.block || ops.v.block;
  if (c.scale_rule && !any_block)
    throw Error("--scale-rule applies to block formats, and no operand has one",
                "give e.g. --p-format nvfp4 or --qk-format mxfp8, or drop --scale-rule");
  if (c.block && !any_block)
    throw Error("--scale-block applies to block formats, and no operand has one",
                "give e.g. --p-format nvfp4 or --qk-format mxfp8, or drop --scale-block");
  if (c.q_path.empty() && c.tensors.empty()) check_qk_block(c, ops.qk, c.d);
  for (const auto& [opt, o, what] :
       {std::tuple{"--p-format", &ops.p, "P is scaled per block of a key tile's row"},
        std::tuple{"--v-format", &ops.v,
                   "V is scaled per block of keys, aligned with the key tiles"}})
    if (o->block && c.block_n % o->block->block_size != 0)
      throw Error(fmt::format("the block size {} does not divide --block-n {} ({}; {})",
                              o->block->block_size, c.block_n, block_source(c, opt, *o), what),
                  "pick a block size that divides --block-n (MX: 32, NVFP4: 16)");
  if (c.p_rule == PRule::two_level) {
    if (!ops.p.block || ops.p.block->rule != ScaleRule::nearest)
      throw Error(fmt::format("--p-rule two-level needs a P format whose block scale has a "
                              "mantissa (nvfp4), not '{}'",
                              ops.p.name),
                  "E8M0 scales span 2^-127..2^127 and need no row normalisation: use --p-rule "
                  "max-offset, or --p-format nvfp4");
    if (c.max_offset)
      throw Error("--max-offset is set by --p-rule two-level (log2 of scale max x element max)",
                  "drop --max-offset, or use --p-rule max-offset");
  }
  const double mo = block_p_max_offset(c, preset, ops.p);
  for (double t : block_p_taus(c, preset, ops.p)) {
    std::string why;
    double safe_tau = 0;
    if (ops.p.plain != nullptr) {
      const CheckRow r = check_safety(*ops.p.plain, t, mo);
      if (!r.safe) why = r.explanation, safe_tau = r.largest_safe_tau;
    } else {
      const BlockCheckRow r = block_check_row(ops.p.name, *ops.p.block, c.p_rule, t, mo);
      if (!r.safe) why = r.explanation, safe_tau = std::log2(r.scale_clip_amax) - mo;
    }
    if (!why.empty() && !c.allow_saturation)
      throw Error("refusing to run: " + why,
                  fmt::format("for --p-format {} with max_offset {:g} every tau below {:.4g} is "
                              "safe (see `fa4sim check --p-format {}`); add --allow-saturation to "
                              "run it anyway and measure the saturation",
                              ops.p.name, mo, safe_tau, ops.p.name));
  }
}

}  // namespace

Format unclipped_format(const Format& f) {
  if (f.exp_bits >= 8) return f;  // bf16, fp32: float32's own range, nothing to clip
  return make_format(
      is_fp8(f) ? (f.exp_bits == 4 ? "e4m3-unclipped" : "e5m2-unclipped") : "fp16-unclipped",
      f.exp_bits + 1, f.man_bits, f.bias, true, NanEncoding::ieee);
}

// ---- check

CheckRow check_safety(const Format& f, double tau, double max_offset) {
  const SafetyCheck c = safety_check(f, tau, max_offset);
  CheckRow r;
  r.dtype = f.name;
  r.tau = tau;
  r.max_offset = max_offset;
  r.worst_p = std::exp2(max_offset + tau);
  r.dtype_max = f.max_finite;
  r.largest_safe_tau = c.largest_safe_tau;
  r.safe = c.safe;
  r.explanation = c.explanation;
  return r;
}

CheckResult compute_check(const std::vector<const Format*>& dtypes_in,
                          const std::string& preset_name, const std::vector<double>& taus,
                          std::optional<double> max_offset) {
  const std::optional<double> tau = taus.empty() ? std::nullopt : std::optional<double>(taus[0]);
  const AttentionPreset& preset = attention_preset(preset_name);
  CheckResult res;
  res.dtypes = dtypes_in;
  if (res.dtypes.empty()) res.dtypes = formats_of(FormatRole::attention_input);
  for (const auto& d : res.dtypes) attention_dtype(d);
  for (double t : taus) check_log2_knob("--tau", t);
  if (max_offset) check_log2_knob("--max-offset", *max_offset);
  res.taus = taus;
  res.max_offset = max_offset;
  res.from_preset = !tau || !max_offset;
  res.preset = preset.name;
  res.preset_source = preset.source;
  for (const auto& name : res.dtypes)
    for (size_t ti = 0; ti < std::max<size_t>(taus.size(), 1); ++ti) {
      const Format& f = attention_dtype(name);
      const double t_ = tau ? taus[ti] : preset_tau(preset, f);
      const double m_ = max_offset ? *max_offset : preset_max_offset(preset, f);
      res.rows.push_back(check_safety(f, t_, m_));
      res.log2_dtype_max.push_back(f.log2_max);
      res.all_safe = res.all_safe && res.rows.back().safe;
    }
  return res;
}

Report check_report(const CheckResult& c) {
  Report rep;
  rep.command = "check";
  const auto& taus = c.taus;
  rep.params = {{"dtype", format_names(c.dtypes)},
                {"preset", c.from_preset ? c.preset : ""},
                {"tau", taus.empty()       ? json(nullptr)
                        : taus.size() == 1 ? json(taus[0])
                                           : json(taus)},
                {"max_offset", c.max_offset ? json(*c.max_offset) : json(nullptr)}};
  Table t;
  t.title = c.from_preset ? fmt::format(
                                "Kernel safety check: max_offset + tau < log2(dtype_max), "
                                "preset '{}'",
                                c.preset)
                          : "Kernel safety check: max_offset + tau < log2(dtype_max)";
  t.columns = {"dtype",      "tau",
               "max_offset", "worst P = 2^(max_offset+tau)",
               "dtype max",  "largest safe tau",
               "verdict"};
  json rows = json::array();
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const CheckRow& r = c.rows[i];
    t.rows.push_back({r.dtype, fmt::format("{:g}", r.tau), fmt::format("{:g}", r.max_offset),
                      fmt::format("2^{:g} = {:g}", r.max_offset + r.tau, r.worst_p),
                      fmt::format("{:g} = 2^{:.3f}", r.dtype_max, c.log2_dtype_max[i]),
                      fmt::format("< {:.4g}", r.largest_safe_tau), r.safe ? "safe" : "UNSAFE"});
    rows.push_back({{"dtype", r.dtype},
                    {"tau", r.tau},
                    {"max_offset", r.max_offset},
                    {"worst_p", r.worst_p},
                    {"dtype_max", r.dtype_max},
                    {"log2_dtype_max", c.log2_dtype_max[i]},
                    {"largest_safe_tau", r.largest_safe_tau},
                    {"safe", r.safe},
                    {"explanation", r.explanation}});
    if (!r.safe) t.notes.push_back(fmt::format("{}: {}", r.dtype, r.explanation));
  }
  if (c.from_preset) t.notes.push_back(fmt::format("preset '{}': {}", c.preset, c.preset_source));
  t.notes.push_back(c.all_safe ? "verdict: safe (exit 0)" : "verdict: UNSAFE (exit 1)");
  rep.results = {{"safe", c.all_safe},
                 {"preset_source", c.from_preset ? c.preset_source : ""},
                 {"rows", rows}};
  rep.tables.push_back(std::move(t));
  return rep;
}

Report run_check(const std::vector<const Format*>& dtypes, const std::string& preset,
                 const std::vector<double>& taus, std::optional<double> max_offset) {
  return check_report(compute_check(dtypes, preset, taus, max_offset));
}

// ---- inputs

uint64_t input_row_seed(uint64_t seed, int tensor, int b, int s) {
  // splitmix64 of (seed, tensor, b, s): distinct, well-mixed seeds < 2^64 per row.
  const uint64_t key = seed * kSplitmixGamma ^ (uint64_t(uint32_t(tensor)) << 56) ^
                       (uint64_t(uint32_t(b)) << 32) ^ uint64_t(uint32_t(s));
  return splitmix64_mix(key + kSplitmixGamma);
}

std::vector<float> seeded_input(uint64_t seed, int tensor, int batch, int seq, int heads, int d,
                                int threads) {
  const size_t row = size_t(heads) * size_t(d);
  std::vector<float> x(size_t(batch) * size_t(seq) * row);
  const uint64_t rows = uint64_t(batch) * uint64_t(seq);
  parallel_chunks(rows, 256, threads, [&](uint64_t, uint64_t b0, uint64_t b1) {
    for (uint64_t r = b0; r < b1; ++r) {
      NumpyGenerator g(
          input_row_seed(seed, tensor, int(r / uint64_t(seq)), int(r % uint64_t(seq))));
      float* out = x.data() + r * row;
      for (size_t i = 0; i < row; ++i) out[i] = float(g.standard_normal());
    }
  });
  return x;
}

namespace {

// One run's inputs, layout (batch, seq, heads, d).
struct Inputs {
  int batch = 0, seq_q = 0, seq_k = 0, heads = 0, kv_heads = 0, d = 0;
  std::vector<float> q, k, v;
};

// Quantised inputs: the stored values decoded to float32 (without descale), and the descales.
struct Stored {
  std::vector<float> q, k, v;
  std::vector<float> qd, kd, vd;      // per (batch, kv_head)
  uint64_t saturated[3] = {0, 0, 0};  // Q, K, V inputs beyond the format's max finite
};

// `label`: "'q.npy'" for a file, "q" for an in-memory tensor.
void refuse_nonfinite(const std::vector<float>& x, const std::string& label) {
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i])) {
      size_t n = 0;
      for (float y : x) n += std::isfinite(y) ? 0 : 1;
      throw Error(fmt::format("{} holds {} non-finite value(s) (NaN or inf); the first is {} at "
                              "flat index {}",
                              label, n, x[i], i),
                  "attention inputs must be finite: fa4sim refuses them rather than propagate "
                  "NaN through every row that reads that key");
    }
}

// `label` names the input in messages: "--q 'q.npy'" for a file, "q" for an in-memory tensor.
void check_input_shape(const std::vector<uint64_t>& shape, const std::string& label) {
  if (shape.size() != 4)
    throw Error(fmt::format("{} has shape {}, expected 4-D (batch, seq, heads, d)", label,
                            shape_string(shape)),
                "fa4sim reads Q, K and V in the layout (batch, seq, heads, d)");
  for (auto s : shape)
    if (s == 0 || s > uint64_t(1) << 30)
      throw Error(fmt::format("{} has shape {}: every dimension must be 1..2^30", label,
                              shape_string(shape)));
}

std::string file_label(const char* what, const std::string& path) {
  return fmt::format("--{} '{}'", what, path);
}

NpyArray read_input_header(const std::string& path, const char* what) {
  NpyArray a = read_npy(path);
  check_input_shape(a.shape, file_label(what, path));
  return a;
}

struct FileGeometry {
  int batch, seq_q, seq_k, heads, kv_heads, d;
};

// Shapes of Q, K, V (each already 4-D) and their labels (see check_input_shape).
FileGeometry check_file_shapes(const std::vector<uint64_t>& sq, const std::vector<uint64_t>& sk,
                               const std::vector<uint64_t>& sv, const std::string& lq,
                               const std::string& lk, const std::string& lv,
                               const AttentionConfig& c) {
  if (sk != sv)
    throw Error(fmt::format("{} has shape {} but {} has shape {}; K and V must match", lk,
                            shape_string(sk), lv, shape_string(sv)));
  if (sq[0] != sk[0] || sq[3] != sk[3])
    throw Error(fmt::format("{} has shape {} and {} has shape {}: batch (dim 0) and d "
                            "(dim 3) must agree",
                            lq, shape_string(sq), lk, shape_string(sk)),
                "layout (batch, seq, heads, d) for all three");
  if (sq[2] % sk[2] != 0)
    throw Error(
        fmt::format("--q has {} heads and --k/--v {}: the query heads must be a multiple "
                    "of the kv heads (GQA)",
                    sq[2], sk[2]));
  if (c.causal && sq[1] > sk[1])
    throw Error(fmt::format("--causal with seq_q = {} > seq_k = {} is not supported", sq[1], sk[1]),
                "give seq_q <= seq_k");
  return {int(sq[0]), int(sq[1]), int(sk[1]), int(sq[2]), int(sk[2]), int(sq[3])};
}

}  // namespace

void validate_attention_config(const AttentionConfig& c) {
  if (c.batch < 1 || c.heads < 1 || c.kv_heads < 1 || c.d < 1)
    throw Error(fmt::format("batch, heads, kv-heads and d must be >= 1 (got {}, {}, {}, {})",
                            c.batch, c.heads, c.kv_heads, c.d));
  if (c.heads % c.kv_heads != 0)
    throw Error(fmt::format("--heads {} is not a multiple of --kv-heads {}", c.heads, c.kv_heads),
                "GQA shares each kv head among heads / kv-heads query heads");
  if (c.seq_q.empty()) throw Error("--seq needs at least one length");
  for (int s : c.seq_q)
    if (s < 1) throw Error(fmt::format("--seq must be >= 1, got {}", s));
  if (c.seq_k && *c.seq_k < 1) throw Error(fmt::format("--seq-k must be >= 1, got {}", *c.seq_k));
  if (c.causal && c.seq_k)
    for (int s : c.seq_q)
      if (s > *c.seq_k)
        throw Error(
            fmt::format("--causal with seq_q = {} > seq_k = {} is not supported", s, *c.seq_k),
            "give seq_q <= seq_k");
  if (c.softmax_scale && !(std::isfinite(*c.softmax_scale) && *c.softmax_scale > 0))
    throw Error(fmt::format("--softmax-scale must be finite and > 0, got {}", *c.softmax_scale));
  if (!(std::isfinite(c.q_scale) && c.q_scale > 0))
    throw Error(fmt::format("--q-scale must be finite and > 0, got {}", c.q_scale));
  if (c.block_n < 1 || c.block_n > 4096)
    throw Error(fmt::format("--block-n must be 1..4096, got {}", c.block_n));
  if (c.block_m < 1 || c.warp_rows < 1) throw Error("block_m and warp_rows must be >= 1");
  if (c.block_m % c.warp_rows != 0)
    throw Error(fmt::format("--warp-rows {} does not divide --block-m {}", c.warp_rows, c.block_m),
                "a warp's rows lie inside one tile: e.g. --block-m 128 --warp-rows 16 or 32");
  for (double t : c.taus) check_log2_knob("--tau", t);
  if (c.max_offset) check_log2_knob("--max-offset", *c.max_offset);
  if (c.dtypes.empty()) throw Error("--dtype needs at least one type");
  const AttentionPreset& preset = attention_preset(c.preset);
  const bool files = !c.q_path.empty() || !c.k_path.empty() || !c.v_path.empty();
  if (files && (c.q_path.empty() || c.k_path.empty() || c.v_path.empty()))
    throw Error("--q, --k and --v go together",
                "give all three .npy files, or none for seeded inputs");
  if (files) {
    if (c.seq_q.size() != 1) throw Error("--seq lists do not apply to .npy inputs");
    // Headers and shapes (the data are read again, and checked for NaN/inf, by run_attention).
    const NpyArray q = read_input_header(c.q_path, "q");
    const NpyArray k = read_input_header(c.k_path, "k");
    const NpyArray v = read_input_header(c.v_path, "v");
    check_file_shapes(q.shape, k.shape, v.shape, file_label("q", c.q_path),
                      file_label("k", c.k_path), file_label("v", c.v_path), c);
  }
  if (!c.tensors.empty()) {
    if (files) throw Error("give Q, K and V as files or as tensors, not both");
    if (c.tensors.size() != 3) throw Error("q, k and v go together");
    if (c.seq_q.size() != 1) throw Error("--seq lists do not apply to .npy inputs");
    for (const auto& t : c.tensors) check_input_shape(t.shape, t.label);
    check_file_shapes(c.tensors[0].shape, c.tensors[1].shape, c.tensors[2].shape,
                      c.tensors[0].label, c.tensors[1].label, c.tensors[2].label, c);
  }
  // Sizes: refuse runs whose inputs alone would not fit comfortably in memory.
  for (int s : c.seq_q) {
    const int sk = c.seq_k ? *c.seq_k : s;
    const double bytes = 8.0 * c.batch * c.d * (double(s) * c.heads + 2.0 * sk * c.kv_heads);
    if (!files && c.tensors.empty() && bytes > 16.0 * (1ull << 30))
      throw Error(
          fmt::format("inputs of {:.1f} GiB (batch {}, heads {}, seq {}, d {}) are too large",
                      bytes / double(1ull << 30), c.batch, c.heads, s, c.d),
          "fa4sim keeps Q, K, V and their quantised copies in memory: at most 16 GiB");
  }
  if (c.block_mode()) return validate_block_mode(c, preset);
  for (const Format* name : c.dtypes) {
    const Format& f = attention_dtype(name);
    const std::vector<double> taus =
        c.taus.empty() ? std::vector<double>{preset_tau(preset, f)} : c.taus;
    const double mo = c.max_offset ? *c.max_offset : preset_max_offset(preset, f);
    for (double t : taus) {
      const CheckRow r = check_safety(f, t, mo);
      if (!r.safe && !c.allow_saturation)
        throw Error(
            "refusing to run: " + r.explanation,
            fmt::format("the kernel asserts max_offset + tau < log2(dtype_max) (see `fa4sim "
                        "check`); for {} with max_offset {:g} every tau below {:.4g} is "
                        "safe; add --allow-saturation to run it anyway and measure the "
                        "saturation",
                        f.name, mo, r.largest_safe_tau));
    }
  }
}

// ---- the model

namespace {

Inputs load_inputs(const AttentionConfig& c, int seq_q, int threads) {
  Inputs in;
  if (!c.q_path.empty()) {
    const NpyArray q = read_input_header(c.q_path, "q");
    const NpyArray k = read_input_header(c.k_path, "k");
    const NpyArray v = read_input_header(c.v_path, "v");
    const FileGeometry g =
        check_file_shapes(q.shape, k.shape, v.shape, file_label("q", c.q_path),
                          file_label("k", c.k_path), file_label("v", c.v_path), c);
    in.batch = g.batch, in.seq_q = g.seq_q, in.seq_k = g.seq_k, in.heads = g.heads;
    in.kv_heads = g.kv_heads, in.d = g.d;
    in.q = q.to_float32();
    in.k = k.to_float32();
    in.v = v.to_float32();
    refuse_nonfinite(in.q, fmt::format("'{}'", c.q_path));
    refuse_nonfinite(in.k, fmt::format("'{}'", c.k_path));
    refuse_nonfinite(in.v, fmt::format("'{}'", c.v_path));
  } else if (!c.tensors.empty()) {
    const auto& t = c.tensors;
    const FileGeometry g = check_file_shapes(t[0].shape, t[1].shape, t[2].shape, t[0].label,
                                             t[1].label, t[2].label, c);
    in.batch = g.batch, in.seq_q = g.seq_q, in.seq_k = g.seq_k, in.heads = g.heads;
    in.kv_heads = g.kv_heads, in.d = g.d;
    auto copy = [](const AttentionConfig::Tensor& x) {
      size_t n = 1;
      for (auto s : x.shape) n *= size_t(s);
      return std::vector<float>(x.data, x.data + n);
    };
    in.q = copy(t[0]);
    in.k = copy(t[1]);
    in.v = copy(t[2]);
    refuse_nonfinite(in.q, t[0].label);
    refuse_nonfinite(in.k, t[1].label);
    refuse_nonfinite(in.v, t[2].label);
  } else {
    in.batch = c.batch, in.seq_q = seq_q, in.seq_k = c.seq_k ? *c.seq_k : seq_q;
    in.heads = c.heads, in.kv_heads = c.kv_heads, in.d = c.d;
    in.q = seeded_input(c.seed, 0, in.batch, in.seq_q, in.heads, in.d, threads);
    in.k = seeded_input(c.seed, 1, in.batch, in.seq_k, in.kv_heads, in.d, threads);
    in.v = seeded_input(c.seed, 2, in.batch, in.seq_k, in.kv_heads, in.d, threads);
  }
  // --q-scale multiplies Q before quantisation (float32 multiply).
  if (c.q_scale != 1.0) {
    const float a = float(c.q_scale);
    for (float& x : in.q) x *= a;
  }
  // Note [Score range] (online_softmax.h): bound every score by Cauchy-Schwarz,
  // |q.k| * scale * log2(e) <= max|q| * max|k| * scale * log2(e), and refuse beyond 2^24.
  auto max_norm = [&](const std::vector<float>& x) {
    double m = 0;
    for (size_t i = 0; i + size_t(in.d) <= x.size(); i += size_t(in.d)) {
      double ss = 0;
      for (int j = 0; j < in.d; ++j) ss += double(x[i + size_t(j)]) * double(x[i + size_t(j)]);
      m = std::max(m, ss);
    }
    return std::sqrt(m);
  };
  const double nq = max_norm(in.q), nk = max_norm(in.k);
  const double scale = c.softmax_scale ? *c.softmax_scale : 1.0 / std::sqrt(double(in.d));
  const double bound = nq * nk * scale * kLog2e;
  if (!std::isfinite(nq) || !(bound <= kMaxScaledScore))
    throw Error(
        fmt::format("scores may reach {:.3g} in log2 units (|Q row| up to {:.3g}{}, |K row| up to "
                    "{:.3g}, softmax scale {:.3g}), beyond 2^24 = 16777216, where float32 keeps "
                    "no fraction of the exponent",
                    bound, nq,
                    c.q_scale != 1.0 ? fmt::format(" after --q-scale {:g}", c.q_scale) : "", nk,
                    scale),
        "use a smaller --q-scale or --softmax-scale: attention logits stay below ~1e3");
  return in;
}

// Quantises Q, K, V to `f` (Note in attention.h): FP8 with per-(batch, kv_head) descales.
Stored quantize_inputs(const Inputs& in, const Format& f, bool descale_one) {
  Stored st;
  const int group = in.heads / in.kv_heads;
  const size_t nbg = size_t(in.batch) * size_t(in.kv_heads);
  st.qd.assign(nbg, 1.0f);
  st.kd.assign(nbg, 1.0f);
  st.vd.assign(nbg, 1.0f);
  const float fmax = float(f.max_finite);
  // Element (b, s, head, j) of a (batch, seq, heads, d) tensor belongs to kv group head / hg.
  auto amax_of = [&](const std::vector<float>& x, int seq, int heads, int hg,
                     std::vector<float>& out) {
    std::vector<float> amax(nbg, 0.0f);
    for (int b = 0; b < in.batch; ++b)
      for (int s = 0; s < seq; ++s)
        for (int h = 0; h < heads; ++h) {
          const float* p =
              x.data() +
              ((size_t(b) * size_t(seq) + size_t(s)) * size_t(heads) + size_t(h)) * size_t(in.d);
          float& a = amax[size_t(b) * size_t(in.kv_heads) + size_t(h / hg)];
          for (int j = 0; j < in.d; ++j) a = std::max(a, std::fabs(p[j]));
        }
    for (size_t i = 0; i < nbg; ++i) out[i] = amax[i] > 0.0f ? amax[i] / fmax : 1.0f;
  };
  const bool scaled = is_fp8(f) && !descale_one;
  if (scaled) {
    amax_of(in.q, in.seq_q, in.heads, group, st.qd);
    amax_of(in.k, in.seq_k, in.kv_heads, 1, st.kd);
    amax_of(in.v, in.seq_k, in.kv_heads, 1, st.vd);
  }
  auto store = [&](const std::vector<float>& x, int seq, int heads, int hg,
                   const std::vector<float>& ds, std::vector<float>& out, uint64_t& saturated) {
    out.resize(x.size());
    for (int b = 0; b < in.batch; ++b)
      for (int s = 0; s < seq; ++s)
        for (int h = 0; h < heads; ++h) {
          const size_t off =
              ((size_t(b) * size_t(seq) + size_t(s)) * size_t(heads) + size_t(h)) * size_t(in.d);
          const float dsc = ds[size_t(b) * size_t(in.kv_heads) + size_t(h / hg)];
          for (int j = 0; j < in.d; ++j) {
            const float y = scaled ? x[off + size_t(j)] / dsc : x[off + size_t(j)];
            // Saturated: beyond max finite by more than the rounding (amax / descale may land
            // an ulp above max finite, which rounds to it without saturating).
            saturated +=
                std::fabs(y) > fmax && !std::isfinite(quantize(f, y, Overflow::ieee)) ? 1 : 0;
            out[off + size_t(j)] = quantize(f, y, Overflow::satfinite);
          }
        }
  };
  store(in.q, in.seq_q, in.heads, group, st.qd, st.q, st.saturated[0]);
  store(in.k, in.seq_k, in.kv_heads, 1, st.kd, st.k, st.saturated[1]);
  store(in.v, in.seq_k, in.kv_heads, 1, st.vd, st.v, st.saturated[2]);
  return st;
}

// Block mode's stored operands (Note [Block-scaled attention]): an input dtype as
// quantize_inputs makes it (FP8 with its descales), a block format quantise-dequantised with unit
// descales (Q and K per block of d, V per block of keys down each column).
Stored block_stored(const Inputs& in, const OperandFormat& qk, const OperandFormat& v,
                    bool descale_one, bool tensor_scale_one) {
  Stored st;
  if (qk.plain != nullptr) st = quantize_inputs(in, *qk.plain, descale_one);
  const size_t nbg = size_t(in.batch) * size_t(in.kv_heads);
  const bool amax_scale = !tensor_scale_one;
  auto rows = [amax_scale](const BlockFormat& f0, const std::vector<float>& x,
                           std::vector<float>& out, uint64_t& sat) {
    BlockFormat f = f0;
    if (f.rule == ScaleRule::nearest && amax_scale) f.tensor_scale = tensor_scale_from_amax(f, x);
    out.resize(x.size());
    sat = block_round(f, x.data(), x.size(), out.data());
  };
  if (qk.block) {
    st.qd.assign(nbg, 1.0f), st.kd.assign(nbg, 1.0f);
    rows(*qk.block, in.q, st.q, st.saturated[0]);
    rows(*qk.block, in.k, st.k, st.saturated[1]);
  }
  if (v.plain != nullptr) {
    Stored sv = quantize_inputs(in, *v.plain, descale_one);
    st.v = std::move(sv.v), st.vd = std::move(sv.vd), st.saturated[2] = sv.saturated[2];
    return st;
  }
  BlockFormat f = *v.block;
  if (f.rule == ScaleRule::nearest && amax_scale) f.tensor_scale = tensor_scale_from_amax(f, in.v);
  st.vd.assign(nbg, 1.0f);
  st.v.resize(in.v.size());
  std::vector<float> col(size_t(in.seq_k));
  const size_t stride = size_t(in.kv_heads) * size_t(in.d);
  for (int b = 0; b < in.batch; ++b)
    for (size_t hj = 0; hj < stride; ++hj) {  // (kv_head, j): one column of V over the keys
      const size_t base = size_t(b) * size_t(in.seq_k) * stride + hj;
      for (int s = 0; s < in.seq_k; ++s) col[size_t(s)] = in.v[base + size_t(s) * stride];
      st.saturated[2] += block_round(f, col.data(), col.size(), col.data());
      for (int s = 0; s < in.seq_k; ++s) st.v[base + size_t(s) * stride] = col[size_t(s)];
    }
  return st;
}

// Note [Attention phase times]: each worker thread adds its own CPU time (thread_cpu_seconds, not
// wall time: a shared machine's other jobs do not inflate it) per phase of run_unit to the unit's
// AttentionPhases, with the FLOPs each product executed (P V: only the variants that ran, the
// unclipped shortcut skips one). The report gives them as timings (provenance): seconds per phase
// and GFLOP per CPU second of each product, i.e. the products' rate against the FMA peak of one
// core, whatever the thread count and load. A dozen clock reads per 128-row tile.
// Sums of one (batch, head), combined in (batch, head) order afterwards.
struct UnitMetrics {
  double d2_a = 0, ref2_a = 0, max_abs = 0, dot_a = 0, o2 = 0;  // output vs reference (a)
  double d2_b = 0, ref2_b = 0;                                  // output vs reference (b)
  double lse_err = 0;
  double qkv2 = 0, sat2 = 0, pconv2 = 0, rest2 = 0;  // error split (squared norms)
  double qk2 = 0, v2 = 0, p2 = 0, e2 = 0, r2 = 0;    // block mode's split
  RescaleCounts counts;
  double visible = 0;  // sum over query tiles of rows * visible keys
  uint64_t o_overflow =
      0;  // outputs of the full model that overflowed float32 (before the bf16 cvt)
  AttentionPhases phases;  // (Note [Attention phase times])
};

// Note [Shared references]: reference (a) depends on the unquantised inputs alone and reference
// (b) on the stored (quantised) inputs alone, not on tau (nor, for (a), on the dtype). A list of
// runs over one seq (`--dtype e4m3,e5m2 --tau 0,4`) computes each of them once: the first run that
// needs it keeps its per-tile O (and (b)'s LSE) here, later runs read them back. The values are
// the ones a run of its own computes (the same code on the same inputs), so every result is the
// same bits as with each run alone; only the time (timings.phases_cpu_s) changes.
struct RefCache {
  bool keep_a = false, keep_b = false;    // this run fills the cache
  bool ready_a = false, ready_b = false;  // an earlier run filled it
  std::vector<double> oa, ob, lb;         // (batch * heads, seq_q, d); lb: (batch * heads, seq_q)
};

struct RunSetup {
  const Inputs* in;
  const Stored* st;
  const Format* f;
  double softmax_scale;
  float tau, max_offset;
  const AttentionConfig* cfg;
  float* o_out = nullptr;              // (batch, seq_q, heads, d), or nullptr
  float* lse_out = nullptr;            // (batch, heads, seq_q), or nullptr
  const BlockOperands* blk = nullptr;  // block mode (Note [Block-scaled attention])
  RefCache* refs = nullptr;            // Note [Shared references], or nullptr
};

// One (batch, head)'s operands as contiguous matrices, and the model's parameter variants.
struct UnitOperands {
  RowMat<float> Qs, Ks, Vs;   // the stored (quantised) values, without descale
  RowMat<double> Qa, Ka, Va;  // the float32 inputs before quantisation (reference a)
  RowMat<double> Qb, Kb, Vb;  // dequantised: stored * descale, exact in float64 (reference b)
  detail::Panels8 Kap, Vap, Kbp, Vbp;  // K^T and V of references a and b as column panels
  detail::Panels<float> Ksp;           // the model's K^T as column panels (score_product)
  std::vector<SoftmaxParams>
      variants;               // the full model; with the split, P unclipped, P not converted
                              // (block mode: P float32, exp2 exact, tau 0)
  std::vector<char> block_p;  // per variant: P through the block format
  float vdf = 1.0f;           // V's descale, applied at the final normalisation
};

// Rows of head `head` of batch `b` in a (batch, seq, heads, d) tensor, as a (seq x d) matrix.
RowMat<float> gather_head(const std::vector<float>& x, int b, int seq, int heads, int head, int d) {
  RowMat<float> M(seq, d);
  for (int s = 0; s < seq; ++s)
    std::copy_n(x.data() + ((size_t(b) * size_t(seq) + size_t(s)) * size_t(heads) + size_t(head)) *
                               size_t(d),
                d, M.data() + size_t(s) * size_t(d));
  return M;
}

UnitOperands unit_operands(const RunSetup& rs, int b, int h) {
  const Inputs& in = *rs.in;
  const Stored& st = *rs.st;
  const AttentionConfig& c = *rs.cfg;
  const int d = in.d, sq = in.seq_q, sk = in.seq_k;
  const int g = h / (in.heads / in.kv_heads);
  const size_t bg = size_t(b) * size_t(in.kv_heads) + size_t(g);
  const double qd = st.qd[bg], kd = st.kd[bg], vd = st.vd[bg];
  UnitOperands u;
  u.Qs = gather_head(st.q, b, sq, in.heads, h, d);
  u.Ks = gather_head(st.k, b, sk, in.kv_heads, g, d);
  u.Vs = gather_head(st.v, b, sk, in.kv_heads, g, d);
  u.Qa = gather_head(in.q, b, sq, in.heads, h, d).cast<double>();
  u.Ka = gather_head(in.k, b, sk, in.kv_heads, g, d).cast<double>();
  u.Va = gather_head(in.v, b, sk, in.kv_heads, g, d).cast<double>();
  u.Qb = u.Qs.cast<double>() * qd;
  u.Kb = u.Ks.cast<double>() * kd;
  u.Vb = u.Vs.cast<double>() * vd;
  // Always: the wheel's baseline build runs the score product's AVX2 copy on an AVX2 CPU.
  u.Ksp = detail::panels_of_transpose(u.Ks.data(), size_t(d), sk, d);
#if defined(__AVX2__) && defined(__FMA__)
  u.Kap = detail::panels_of_transpose(u.Ka.data(), size_t(d), sk, d);
  u.Kbp = detail::panels_of_transpose(u.Kb.data(), size_t(d), sk, d);
  u.Vap = detail::panels_of(u.Va.data(), size_t(d), sk, d);
  u.Vbp = detail::panels_of(u.Vb.data(), size_t(d), sk, d);
#endif

  SoftmaxParams p;
  // softmax_scale_log2 * q_descale * k_descale, in float32 as the kernel multiplies them.
  p.scale_log2 = float(rs.softmax_scale * kLog2e) * float(qd) * float(kd);
  p.max_offset = rs.max_offset;
  p.rescale_threshold = rs.tau;
  p.exp2 = c.exp2;
  p.p_format = *rs.f;
  p.p_overflow = Overflow::satfinite;
  p.warp_rows = c.warp_rows;
  u.variants = {p};
  if (rs.blk != nullptr) {
    const bool bp = rs.blk->p.block.has_value();
    if (bp) u.variants[0].p_format = kFP32;
    u.block_p = {char(bp)};
    if (c.split) {
      SoftmaxParams p_exact = u.variants[0], e_exact = u.variants[0], no_tau = u.variants[0];
      p_exact.p_format = kFP32;
      e_exact.exp2.mode = Exp2Mode::exact;
      no_tau.rescale_threshold = 0.0f;
      u.variants.insert(u.variants.end(), {p_exact, e_exact, no_tau});
      u.block_p.insert(u.block_p.end(), {0, char(bp), char(bp)});
    }
    u.vdf = float(vd);
    return u;
  }
  if (c.split) {
    SoftmaxParams pu = p, pn = p;
    pu.p_format = unclipped_format(*rs.f);
    pn.p_format = kFP32;
    u.variants.push_back(pu);
    u.variants.push_back(pn);
  }
  u.vdf = float(vd);
  return u;
}

// The kernel model on one query tile's float32 scores S (rows x nv), per variant: key tiles in
// the kernel's order, then V's descale and the bf16 output. outs[0] and lse are the full model's.
void model_tile(const RunSetup& rs, const UnitOperands& u, const RowMat<float>& S, int rows, int nv,
                std::vector<std::vector<float>>& outs, std::vector<float>& lse, UnitMetrics& m) {
  const AttentionConfig& c = *rs.cfg;
  const int d = rs.in->d;
  const int tiles = (nv + c.block_n - 1) / c.block_n;
  uint64_t tile_saturated = 0;
  for (size_t vi = 0; vi < u.variants.size(); ++vi) {
    // Note [Unclipped shortcut]: the unclipped variant differs from the full model only in the
    // conversion of P values at or above saturation_threshold(f) (the two formats round every
    // smaller value identically; row_max, row_sum and P do not depend on the P format). When the
    // full model saturated no P in this tile, its output IS the unclipped output, bit for bit.
    if (vi == 1 && tile_saturated == 0 && rs.blk == nullptr) {
      outs[1] = outs[0];
      continue;
    }
    RowBlockSim sim(u.variants[vi], rows, d);
    sim.set_pv_timer(&m.phases.pv);
    m.phases.pv_flops += 2.0 * double(rows) * double(nv) * double(d);
    if (rs.blk != nullptr && u.block_p[vi]) sim.set_p_block(&*rs.blk->p.block);
    for (int i = 0; i < tiles; ++i) {
      const int t = c.order == BlockOrder::reverse ? tiles - 1 - i : i;
      const int k0 = t * c.block_n, n = std::min(c.block_n, nv - k0);
      sim.process_tile(S.data() + k0, size_t(nv), u.Vs.data() + size_t(k0) * size_t(d), size_t(d),
                       n);
    }
    auto& o = outs[vi];
    o.resize(size_t(rows) * size_t(d));
    sim.finalize(o.data(), size_t(d), vi == 0 ? lse.data() : nullptr);
    // V's descale at the normalisation, then the bf16 output. The conversion saturates an
    // overflowed float32 output (inf) to bf16's max: count those, so the run can say so.
    if (vi == 0)
      for (const float x : o) m.o_overflow += std::isfinite(x * u.vdf) ? 0 : 1;
    for (float& x : o) x = quantize(kBF16, x * u.vdf, Overflow::satfinite);
    if (vi == 0) {
      m.counts += sim.counts();
      tile_saturated = sim.counts().saturated;
    }
  }
}

// A float64 reference operand: the matrix and its column panels (attention_gemm.h).
struct RefOperand {
  const RowMat<double>& M;
  const detail::Panels8& P;
};

// The float64 reference of one query tile (rows m0.., keys 0..nv): two-pass softmax in natural
// units, O = softmax(Q K^T * scale) V and L = the natural-log LSE. The products are
// attention_gemm.h's (one fma chain per element) where AVX2/FMA is compiled in, Eigen's otherwise.
void reference_tile(const RefOperand& q, const RefOperand& k, const RefOperand& v, int m0, int rows,
                    int nv, double softmax_scale, bool causal, RowMat<double>& O,
                    Eigen::VectorXd& L, AttentionPhases& ph) {
  const RowMat<double>&Q = q.M, &K = k.M, &V = v.M;
  const int d = int(V.cols());
  const double t0 = thread_cpu_seconds();
  RowMat<double> Sd(rows, nv);
  O.resize(rows, d);
#if defined(__AVX2__) && defined(__FMA__)
  detail::gemm_panels(Q.data() + size_t(m0) * size_t(d), size_t(d), rows, d, k.P, K.data(), 1,
                      size_t(d), nv, Sd.data(), size_t(nv));
#else
  Sd.noalias() = Q.middleRows(m0, rows) * K.topRows(nv).transpose();
#endif
  const double t1 = thread_cpu_seconds();
  Sd *= softmax_scale;
  if (causal)
    for (int r = 0; r < rows; ++r)
      for (int j = m0 + r + 1; j < nv; ++j) Sd(r, j) = -std::numeric_limits<double>::infinity();
  const Eigen::VectorXd mx = Sd.rowwise().maxCoeff();
  Sd.colwise() -= mx;
  Sd = Sd.array().exp().matrix();
  const Eigen::VectorXd l = Sd.rowwise().sum();
  const double t2 = thread_cpu_seconds();
#if defined(__AVX2__) && defined(__FMA__)
  detail::gemm_panels(Sd.data(), size_t(nv), rows, nv, v.P, V.data(), size_t(d), 1, d, O.data(),
                      size_t(d));
#else
  O.noalias() = Sd * V.topRows(nv);
#endif
  const double t3 = thread_cpu_seconds();
  for (int r = 0; r < rows; ++r) O.row(r) /= l(r);
  L = mx.array() + l.array().log();
  ph.ref_gemm += (t1 - t0) + (t3 - t2);
  ph.ref_softmax += (t2 - t1) + (thread_cpu_seconds() - t3);
  ph.ref_flops += 4.0 * double(rows) * double(nv) * double(d);
}

// Reference `which` (0: a, 1: b) of one query tile: computed, or read back from rs.refs (Note
// [Shared references]); a run that keeps it stores what it computed.
void shared_reference_tile(const RunSetup& rs, int which, int unit, const RefOperand& q,
                           const RefOperand& k, const RefOperand& v, int m0, int rows, int nv,
                           RowMat<double>& O, Eigen::VectorXd& L, AttentionPhases& ph) {
  RefCache* rc = rs.refs;
  const int d = rs.in->d;
  const size_t row0 = size_t(unit) * size_t(rs.in->seq_q) + size_t(m0);
  std::vector<double>* store = rc == nullptr ? nullptr : which == 0 ? &rc->oa : &rc->ob;
  const bool ready = rc != nullptr && (which == 0 ? rc->ready_a : rc->ready_b);
  if (ready) {
    O.resize(rows, d);
    std::copy_n(store->data() + row0 * size_t(d), size_t(rows) * size_t(d), O.data());
    L.resize(rows);
    if (which == 1) std::copy_n(rc->lb.data() + row0, rows, L.data());
    return;
  }
  reference_tile(q, k, v, m0, rows, nv, rs.softmax_scale, rs.cfg->causal, O, L, ph);
  if (rc == nullptr || !(which == 0 ? rc->keep_a : rc->keep_b)) return;
  std::copy_n(O.data(), size_t(rows) * size_t(d), store->data() + row0 * size_t(d));
  if (which == 1) std::copy_n(L.data(), rows, rc->lb.data() + row0);
}

// Adds one query tile's differences to the unit's sums (outs: the model's variants; Oa, Ob and Lb
// the references a and b), and copies the tile's output and LSE out when they are kept.
void accumulate_tile(const RunSetup& rs, int b, int h, int m0, int rows,
                     const std::vector<std::vector<float>>& outs, const std::vector<float>& lse,
                     const RowMat<double>& Oa, const RowMat<double>& Ob, const Eigen::VectorXd& Lb,
                     UnitMetrics& m) {
  const Inputs& in = *rs.in;
  const int d = in.d, sq = in.seq_q;
  const std::vector<float>& o = outs[0];
  if (rs.o_out)
    for (int r = 0; r < rows; ++r)
      std::copy_n(
          o.data() + size_t(r) * size_t(d), d,
          rs.o_out + ((size_t(b) * size_t(sq) + size_t(m0 + r)) * size_t(in.heads) + size_t(h)) *
                         size_t(d));
  if (rs.lse_out)
    std::copy_n(lse.data(), rows,
                rs.lse_out + (size_t(b) * size_t(in.heads) + size_t(h)) * size_t(sq) + size_t(m0));
  for (int r = 0; r < rows; ++r) {
    m.lse_err = std::max(m.lse_err, std::fabs(double(lse[size_t(r)]) - Lb(r)));
    for (int j = 0; j < d; ++j) {
      const size_t i = size_t(r) * size_t(d) + size_t(j);
      const double x = o[i], a = Oa(r, j), bb = Ob(r, j);
      m.d2_a += (x - a) * (x - a);
      m.ref2_a += a * a;
      m.max_abs = std::max(m.max_abs, std::fabs(x - a));
      m.dot_a += x * a;
      m.o2 += x * x;
      m.d2_b += (x - bb) * (x - bb);
      m.ref2_b += bb * bb;
      m.qkv2 += (bb - a) * (bb - a);
      if (rs.cfg->split && rs.blk != nullptr) {
        const double pe = outs[1][i], ee = outs[2][i], te = outs[3][i];
        m.p2 += (x - pe) * (x - pe);
        m.e2 += (ee - bb) * (ee - bb);  // the error with exp2 exact, and with tau 0
        m.r2 += (te - bb) * (te - bb);
      } else if (rs.cfg->split) {
        const double u = outs[1][i], n = outs[2][i];
        m.sat2 += (x - u) * (x - u);
        m.pconv2 += (u - n) * (u - n);
        m.rest2 += (n - bb) * (n - bb);
      }
    }
  }
}

// One (batch, head): every query tile through the model variants and both references.
void run_unit(const RunSetup& rs, int b, int h, UnitMetrics& m) {
  const AttentionConfig& c = *rs.cfg;
  const int sq = rs.in->seq_q, sk = rs.in->seq_k;
  AttentionPhases& ph = m.phases;
  double t0 = thread_cpu_seconds();
  const UnitOperands u = unit_operands(rs, b, h);
  const RefOperand qa{u.Qa, u.Kap}, ka{u.Ka, u.Kap}, va{u.Va, u.Vap};  // (Q's panels unused)
  const RefOperand qb{u.Qb, u.Kbp}, kb{u.Kb, u.Kbp}, vb{u.Vb, u.Vbp};
  std::vector<std::vector<float>> outs(u.variants.size());
  std::vector<float> lse(size_t(c.block_m));
  double t1 = thread_cpu_seconds();
  ph.operands += t1 - t0;
  for (int m0 = 0; m0 < sq; m0 += c.block_m) {
    const int rows = std::min(c.block_m, sq - m0);
    // Top-left causal: query i sees keys j <= i, so this tile needs keys [0, m0 + rows).
    const int nv = c.causal ? std::min(sk, m0 + rows) : sk;
    m.visible += double(rows) * double(nv);
    t0 = thread_cpu_seconds();
    RowMat<float> S(rows, nv);
    detail::score_product(u.Qs.data() + size_t(m0) * size_t(rs.in->d), rows, u.Ksp, u.Ks.data(), nv,
                          rs.in->d, S.data());
    t1 = thread_cpu_seconds();
    ph.s_gemm += t1 - t0;
    ph.s_flops += 2.0 * double(rows) * double(nv) * double(rs.in->d);
    if (c.causal)
      for (int r = 0; r < rows; ++r)
        for (int j = m0 + r + 1; j < nv; ++j) S(r, j) = neg_inf_f32();
    const double pv0 = ph.pv;
    model_tile(rs, u, S, rows, nv, outs, lse, m);
    t0 = thread_cpu_seconds();
    ph.softmax += (t0 - t1) - (ph.pv - pv0);
    RowMat<double> Oa, Ob;
    Eigen::VectorXd La, Lb;
    const int unit = b * rs.in->heads + h;
    shared_reference_tile(rs, 0, unit, qa, ka, va, m0, rows, nv, Oa, La, ph);
    shared_reference_tile(rs, 1, unit, qb, kb, vb, m0, rows, nv, Ob, Lb, ph);
    t0 = thread_cpu_seconds();
    accumulate_tile(rs, b, h, m0, rows, outs, lse, Oa, Ob, Lb, m);
    ph.metrics += thread_cpu_seconds() - t0;
    if (rs.blk != nullptr && c.split) {
      // Block mode's split by source: Q/K alone and V alone quantised, in float64.
      RowMat<double> Oqk, Ov;
      Eigen::VectorXd Lqk, Lv;
      reference_tile(qb, kb, va, m0, rows, nv, rs.softmax_scale, c.causal, Oqk, Lqk, ph);
      reference_tile(qa, ka, vb, m0, rows, nv, rs.softmax_scale, c.causal, Ov, Lv, ph);
      t0 = thread_cpu_seconds();
      m.qk2 += (Oqk - Oa).squaredNorm();
      m.v2 += (Ov - Oa).squaredNorm();
      ph.metrics += thread_cpu_seconds() - t0;
    }
  }
}

double safe_div(double a, double b) { return b > 0 ? a / b : 0.0; }

json run_json(const AttentionRun& r) {
  json j = {{"dtype", r.dtype},
            {"tau", r.tau},
            {"max_offset", r.max_offset},
            {"batch", r.batch},
            {"heads", r.heads},
            {"kv_heads", r.kv_heads},
            {"seq_q", r.seq_q},
            {"seq_k", r.seq_k},
            {"d", r.d},
            {"causal", r.causal},
            {"q_scale", r.q_scale},
            {"seed", r.seed},
            {"exp2", r.exp2},
            {"rel_l2_unquantized", r.rel_l2_unquantized},
            {"rel_l2_dequantized", r.rel_l2_dequantized},
            {"max_abs", r.max_abs},
            {"cosine", r.cosine},
            {"lse_max_err", r.lse_max_err},
            {"saturated", r.saturated},
            {"p_count", r.p_count},
            {"saturated_pct", r.saturated_pct},
            {"rows_pct", r.rows_pct},
            {"warps_pct", r.warps_pct}};
  if (r.inputs_saturated[0] + r.inputs_saturated[1] + r.inputs_saturated[2] > 0)
    j["inputs_saturated"] = {
        {"q", r.inputs_saturated[0]}, {"k", r.inputs_saturated[1]}, {"v", r.inputs_saturated[2]}};
  if (r.block) {
    j["formats"] = {
        {"qk", r.qk_format}, {"p", r.p_format}, {"v", r.v_format}, {"p_rule", r.p_rule}};
    j["error_split"] = {{"qkv_quantization", r.split_qkv}};
    if (r.split)
      j["error_split"].update({{"qk_quantization", r.split_qk},
                               {"v_quantization", r.split_v},
                               {"p_quantization", r.split_p},
                               {"exp2", r.split_exp2},
                               {"rescaling", r.split_rescale}});
  } else if (r.split) {
    j["error_split"] = {{"qkv_quantization", r.split_qkv},
                        {"saturation", r.split_saturation},
                        {"p_conversion", r.split_p_conversion},
                        {"kernel_rest", r.split_kernel_rest}};
  } else {
    j["error_split"] = {{"qkv_quantization", r.split_qkv}};
  }
  j["descales"] = {
      {"q", r.q_descale},
      {"k", r.k_descale},
      {"v", r.v_descale},
      {"rule", r.q_descale.empty() ? "" : "descale = amax / fp8_max per (batch, kv_head)"}};
  j["flops_per_pass"] = r.flops;  // (the run's wall time goes to provenance.run_elapsed_s)
  return j;
}

}  // namespace

AttentionPhases& AttentionPhases::operator+=(const AttentionPhases& o) {
  operands += o.operands, s_gemm += o.s_gemm, softmax += o.softmax, pv += o.pv;
  ref_gemm += o.ref_gemm, ref_softmax += o.ref_softmax, metrics += o.metrics;
  s_flops += o.s_flops, pv_flops += o.pv_flops, ref_flops += o.ref_flops;
  return *this;
}

namespace {

// Every unit's sums in unit order: the same sums for any thread count.
UnitMetrics sum_units(const std::vector<UnitMetrics>& um) {
  UnitMetrics m;
  for (const auto& x : um) {
    m.d2_a += x.d2_a, m.ref2_a += x.ref2_a, m.max_abs = std::max(m.max_abs, x.max_abs);
    m.dot_a += x.dot_a, m.o2 += x.o2, m.d2_b += x.d2_b, m.ref2_b += x.ref2_b;
    m.lse_err = std::max(m.lse_err, x.lse_err);
    m.qkv2 += x.qkv2, m.sat2 += x.sat2, m.pconv2 += x.pconv2, m.rest2 += x.rest2;
    m.qk2 += x.qk2, m.v2 += x.v2, m.p2 += x.p2, m.e2 += x.e2, m.r2 += x.r2;
    m.counts += x.counts;
    m.visible += x.visible;
    m.o_overflow += x.o_overflow;
    m.phases += x.phases;
  }
  return m;
}

// A run's metrics from its summed units.
AttentionRun make_run(const AttentionConfig& c, const Inputs& in, const Format& f, const Stored& st,
                      double tau, double mo, const UnitMetrics& m) {
  AttentionRun r;
  r.dtype = f.name, r.tau = tau, r.max_offset = mo;
  r.batch = in.batch, r.heads = in.heads, r.kv_heads = in.kv_heads;
  r.seq_q = in.seq_q, r.seq_k = in.seq_k, r.d = in.d, r.causal = c.causal;
  r.q_scale = c.q_scale, r.seed = c.seed;
  r.exp2 = exp2_choice_name(c.exp2) + (c.exp2.masked_tiles_mufu ? " (masked tiles: mufu)" : "");
  r.rel_l2_unquantized = std::sqrt(safe_div(m.d2_a, m.ref2_a));
  r.rel_l2_dequantized = std::sqrt(safe_div(m.d2_b, m.ref2_b));
  r.max_abs = m.max_abs;
  // Cosine is undefined when either vector is zero (Q = 0, V = 0): nan, not 0.
  r.cosine = m.o2 * m.ref2_a > 0 ? m.dot_a / std::sqrt(m.o2 * m.ref2_a) : std::nan("");
  r.lse_max_err = m.lse_err;
  r.saturated = m.counts.saturated;
  r.p_count = m.counts.p_count;
  r.saturated_pct = 100.0 * safe_div(double(m.counts.saturated), double(m.counts.p_count));
  r.rows_pct = 100.0 * safe_div(double(m.counts.row_rescales), double(m.counts.row_decisions));
  r.warps_pct = 100.0 * safe_div(double(m.counts.warp_rescales), double(m.counts.warp_decisions));
  r.split = c.split;
  r.split_qkv = std::sqrt(safe_div(m.qkv2, m.ref2_a));
  r.split_saturation = std::sqrt(safe_div(m.sat2, m.ref2_b));
  r.split_p_conversion = std::sqrt(safe_div(m.pconv2, m.ref2_b));
  r.split_kernel_rest = std::sqrt(safe_div(m.rest2, m.ref2_b));
  if (is_fp8(f)) r.q_descale = st.qd, r.k_descale = st.kd, r.v_descale = st.vd;
  std::copy(std::begin(st.saturated), std::end(st.saturated), std::begin(r.inputs_saturated));
  r.flops = 4.0 * m.visible * in.d;
  return r;
}

// Block mode's fields of a run (Note [Block-scaled attention]).
void add_block_fields(const AttentionConfig& c, const BlockOperands& ops, const Stored& st,
                      const UnitMetrics& m, AttentionRun& r) {
  r.block = true;
  r.qk_format = ops.qk.name, r.p_format = ops.p.name, r.v_format = ops.v.name;
  r.p_rule = ops.p.block ? p_rule_name(c.p_rule) : "";
  r.dtype = fmt::format("{}/{}/{}", r.qk_format, r.p_format, r.v_format);
  r.split_qk = std::sqrt(safe_div(m.qk2, m.ref2_a));
  r.split_v = std::sqrt(safe_div(m.v2, m.ref2_a));
  r.split_p = std::sqrt(safe_div(m.p2, m.ref2_b));
  // exp2 and lazy rescaling: the kernel's error minus the error with that part exact (the two
  // variants round P differently, so the norm of their difference would count both roundings).
  r.split_exp2 = r.rel_l2_dequantized - std::sqrt(safe_div(m.e2, m.ref2_b));
  r.split_rescale = r.rel_l2_dequantized - std::sqrt(safe_div(m.r2, m.ref2_b));
  const bool qk8 = ops.qk.plain != nullptr && is_fp8(*ops.qk.plain);
  const bool v8 = ops.v.plain != nullptr && is_fp8(*ops.v.plain);
  r.q_descale = qk8 ? st.qd : std::vector<float>{};
  r.k_descale = qk8 ? st.kd : std::vector<float>{};
  r.v_descale = v8 ? st.vd : std::vector<float>{};
}

// The note under the main table that says what each block operand is.
std::string block_note(const AttentionConfig& c) {
  const BlockOperands ops = block_operands(c);
  auto one = [](const char* what, const OperandFormat& o) {
    if (!o.block) return fmt::format("{} {}", what, o.name);
    return fmt::format("{} {} ({} elements, {} scale per block of {}, rule {})", what, o.name,
                       o.block->elem->name, o.block->scale->name, o.block->block_size,
                       scale_rule_name(o.block->rule));
  };
  auto nv = [](const OperandFormat& o) { return o.block && o.block->rule == ScaleRule::nearest; };
  const std::string ts =
      nv(ops.qk) || nv(ops.v)
          ? (c.tensor_scale_one ? "; NVFP4 Q/K/V tensor scale 1 (--tensor-scale one)"
                                : "; NVFP4 Q/K/V tensor scale amax / 2688 per tensor")
          : "";
  return fmt::format("block-scaled operands: {}; {}{}; {}{}", one("Q/K", ops.qk), one("P", ops.p),
                     ops.p.block ? fmt::format(", P rule {}", p_rule_name(c.p_rule)) : "",
                     one("V", ops.v), ts);
}

// One (seq, dtype, tau) run: every (batch, head) unit in parallel; appends the run and its
// executed work to `out`.
void run_one(const AttentionConfig& c, const Inputs& in, const Format& f, const Stored& st,
             double tau, double mo, AttentionMetrics& out, const BlockOperands* blk = nullptr,
             RefCache* refs = nullptr) {
  Stopwatch sw;
  RunSetup rs{
      &in,        &st,       &f, c.softmax_scale ? *c.softmax_scale : 1.0 / std::sqrt(double(in.d)),
      float(tau), float(mo), &c};
  rs.blk = blk;
  rs.refs = refs;
  std::vector<float> o_out, lse_out;
  if (c.keep_outputs) {
    o_out.assign(size_t(in.batch) * size_t(in.seq_q) * size_t(in.heads) * size_t(in.d), 0.0f);
    lse_out.assign(size_t(in.batch) * size_t(in.heads) * size_t(in.seq_q), 0.0f);
    rs.o_out = o_out.data();
    rs.lse_out = lse_out.data();
  }
  const uint64_t units = uint64_t(in.batch) * uint64_t(in.heads);
  std::vector<UnitMetrics> um(units);
  Progress prog(fmt::format("attention {} tau {:g} seq {}", f.name, tau, in.seq_q), units);
  parallel_chunks(
      units, 1, out.threads,
      [&](uint64_t, uint64_t u0, uint64_t u1) {
        for (uint64_t u = u0; u < u1; ++u)
          run_unit(rs, int(u / uint64_t(in.heads)), int(u % uint64_t(in.heads)), um[u]);
      },
      [&](uint64_t done) { prog.update(done); });
  const UnitMetrics m = sum_units(um);
  if (m.o_overflow > 0)
    throw Error(
        fmt::format(
            "the float32 O accumulator overflows (|O| > 3.4e38) in {} output value(s) of the {} run: "
            "V is too large for float32 attention, and the bf16 conversion would hide it as +-3.39e38",
            m.o_overflow, f.name),
        "scale V down: sum over keys of P * |V| must stay below 3.4e38");
  AttentionRun r = make_run(c, in, f, st, tau, mo, m);
  if (blk != nullptr) add_block_fields(c, *blk, st, m, r);
  r.elapsed_s = sw.seconds();
  // Executed work: Q K^T once and P V once per variant in float32; two float64 references.
  const double pass = 2.0 * m.visible * in.d;
  const double variants = blk != nullptr ? (c.split ? 4.0 : 1.0) : (c.split ? 3.0 : 1.0);
  out.executed_fp32_flops += pass * (1.0 + variants);
  out.executed_fp64_flops += pass * (blk != nullptr && c.split ? 8.0 : 4.0);
  out.phases += m.phases;
  if (refs != nullptr) {
    refs->ready_a = refs->ready_a || refs->keep_a, refs->keep_a = false;
    refs->ready_b = refs->ready_b || refs->keep_b, refs->keep_b = false;
  }
  r.o = std::move(o_out);
  r.lse = std::move(lse_out);
  out.runs.push_back(std::move(r));
}

// ---- the report

// The seq column: seq_q, or seq_q/seq_k when they differ.
std::string seq_cell(const AttentionRun& r) {
  return r.seq_k == r.seq_q ? std::to_string(r.seq_q) : fmt::format("{}/{}", r.seq_q, r.seq_k);
}

// A run's row in the main table and, with the split, in the error-split table.
void add_run_rows(const AttentionConfig& c, const AttentionRun& r, Table& t, Table& ts) {
  t.rows.push_back({r.dtype, fmt::format("{:g}", r.tau), fmt::format("{:g}", r.max_offset),
                    seq_cell(r), fmt::format("{:.4g}", r.rel_l2_unquantized),
                    fmt::format("{:.4g}", r.rel_l2_dequantized), fmt::format("{:.3g}", r.max_abs),
                    fmt::format("{:.6f}", r.cosine), fmt::format("{:.3g}", r.lse_max_err),
                    fmt::format("{} ({:.3g}%)", r.saturated, r.saturated_pct),
                    fmt::format("{:.2f}", r.rows_pct), fmt::format("{:.1f}", r.warps_pct)});
  if (c.split && r.block)
    ts.rows.push_back({r.dtype, fmt::format("{:g}", r.tau), seq_cell(r),
                       fmt::format("{:.4g}", r.split_qk), fmt::format("{:.4g}", r.split_v),
                       fmt::format("{:.4g}", r.split_p), fmt::format("{:.4g}", r.split_exp2),
                       fmt::format("{:.4g}", r.split_rescale)});
  else if (c.split)
    ts.rows.push_back(
        {r.dtype, fmt::format("{:g}", r.tau), seq_cell(r), fmt::format("{:.4g}", r.split_qkv),
         fmt::format("{:.4g}", r.split_saturation), fmt::format("{:.4g}", r.split_p_conversion),
         fmt::format("{:.4g}", r.split_kernel_rest)});
}

// The notes under the main table: geometry and inputs (from the first run), preset, references.
void add_attention_notes(const AttentionConfig& c, const AttentionPreset& preset,
                         const AttentionRun& r0, Table& t) {
  t.notes.push_back(fmt::format(
      "geometry: batch {}, heads {}, kv-heads {}, d {}, {}; inputs: {}; softmax scale {}; "
      "key blocks of {} walked {} ({}); exp2 {}; output bf16",
      r0.batch, r0.heads, r0.kv_heads, r0.d, c.causal ? "causal (top-left)" : "non-causal",
      !c.tensors.empty() ? fmt::format("in-memory tensors (q-scale {:g})", c.q_scale)
      : c.q_path.empty()
          ? fmt::format("seeded N(0,1), seed {}, q-scale {:g}", c.seed, c.q_scale)
          : fmt::format("{}, {}, {} (q-scale {:g})", c.q_path, c.k_path, c.v_path, c.q_scale),
      c.softmax_scale ? fmt::format("{:g}", *c.softmax_scale) : "1/sqrt(d)", c.block_n,
      block_order_name(c.order),
      c.order == kKernelBlockOrder ? "the kernel's order" : "the article's order", r0.exp2));
  t.notes.push_back(fmt::format("preset '{}': {}", preset.name, preset.source));
  t.notes.push_back(
      "rel-L2 (unquant) is against float64 attention on the inputs before quantisation (what a user "
      "sees); rel-L2 (dequant) against float64 attention on the dequantised inputs (the kernel's own "
      "error); max abs and cosine vs the unquantised reference; LSE err vs the dequantised one.");
  if (is_fp8(attention_dtype(c.dtypes.front())) || c.dtypes.size() > 1)
    t.notes.push_back(
        c.descale_one
            ? "FP8 descales: 1 (--descale one)"
            : "FP8 descales: amax / fp8_max per (batch, kv_head) (JSON: runs[].descales)");
}

json attention_params(const AttentionConfig& c, const AttentionPreset& preset) {
  return {{"batch", c.batch},
          {"heads", c.heads},
          {"kv_heads", c.kv_heads},
          {"d", c.d},
          {"seq_q", c.seq_q},
          {"seq_k", c.seq_k ? json(*c.seq_k) : json(nullptr)},
          {"causal", c.causal},
          {"softmax_scale", c.softmax_scale ? json(*c.softmax_scale) : json("1/sqrt(d)")},
          {"seed", c.seed},
          {"q_scale", c.q_scale},
          {"q", c.q_path},
          {"k", c.k_path},
          {"v", c.v_path},
          {"dtype", format_names(c.dtypes)},
          {"preset", c.preset},
          {"preset_source", preset.source},
          {"tau", c.taus},
          {"max_offset", c.max_offset ? json(*c.max_offset) : json("preset")},
          {"descale", c.descale_one ? "one" : "amax"},
          {"block_n", c.block_n},
          {"block_m", c.block_m},
          {"warp_rows", c.warp_rows},
          {"exp", exp2_choice_name(c.exp2)},
          {"masked_exp", c.exp2.masked_tiles_mufu ? "mufu" : "schedule"},
          {"order", block_order_name(c.order)},
          {"allow_saturation", c.allow_saturation},
          {"split", c.split},
          {"qk_format", c.qk_format},
          {"p_format", c.p_format},
          {"v_format", c.v_format},
          {"scale_rule", c.scale_rule ? json(scale_rule_name(*c.scale_rule)) : json(nullptr)},
          {"block", c.block ? json(*c.block) : json(nullptr)},
          {"p_rule", p_rule_name(c.p_rule)},
          {"tensor_scale", c.tensor_scale_one ? "one" : "amax"}};
}

// The reference cache for the runs of one seq (Note [Shared references]), when more than one run
// shares a reference and the cache stays within 1 GiB (else each run computes its own, as before).
RefCache make_ref_cache(const Inputs& in, size_t runs, size_t runs_per_dtype) {
  RefCache rc;
  const size_t rows = size_t(in.batch) * size_t(in.heads) * size_t(in.seq_q);
  const size_t one = rows * size_t(in.d) * sizeof(double);
  constexpr size_t kMaxBytes = size_t(1) << 30;
  rc.keep_a = runs > 1 && one <= kMaxBytes / 2;
  rc.keep_b = runs_per_dtype > 1 && one + rows * sizeof(double) <= kMaxBytes / 2;
  if (rc.keep_a) rc.oa.resize(rows * size_t(in.d));
  if (rc.keep_b) rc.ob.resize(rows * size_t(in.d)), rc.lb.resize(rows);
  return rc;
}

}  // namespace

AttentionMetrics compute_attention(const AttentionConfig& c) {
  validate_attention_config(c);
  AttentionMetrics out;
  out.threads = c.threads > 0 ? c.threads : default_threads();
  const AttentionPreset& preset = attention_preset(c.preset);
  Stopwatch total;
  for (int seq : c.seq_q) {
    const Inputs in = load_inputs(c, seq, out.threads);
    if (c.block_mode()) {
      const BlockOperands ops = block_operands(c);
      check_qk_block(c, ops.qk, in.d);
      const Stored st = block_stored(in, ops.qk, ops.v, c.descale_one, c.tensor_scale_one);
      const double mo = block_p_max_offset(c, preset, ops.p);
      const Format& pf = ops.p.plain != nullptr ? *ops.p.plain : kFP32;
      const std::vector<double> taus = block_p_taus(c, preset, ops.p);
      RefCache refs = make_ref_cache(in, taus.size(), taus.size());
      for (double tau : taus) run_one(c, in, pf, st, tau, mo, out, &ops, &refs);
      continue;
    }
    // Every dtype has as many taus (the preset's one, or the list): Note [Shared references].
    const size_t per_dtype = c.taus.empty() ? 1 : c.taus.size();
    RefCache refs = make_ref_cache(in, c.dtypes.size() * per_dtype, per_dtype);
    for (const Format* dname : c.dtypes) {
      const Format& f = attention_dtype(dname);
      const Stored st = quantize_inputs(in, f, c.descale_one);
      const std::vector<double> taus =
          c.taus.empty() ? std::vector<double>{preset_tau(preset, f)} : c.taus;
      const double mo = c.max_offset ? *c.max_offset : preset_max_offset(preset, f);
      refs.ready_b = false;  // reference (b) is this dtype's
      refs.keep_b = per_dtype > 1 && !refs.ob.empty();
      for (double tau : taus) run_one(c, in, f, st, tau, mo, out, nullptr, &refs);
    }
  }
  out.elapsed_s = total.seconds();
  return out;
}

Report attention_report(const AttentionConfig& c, const AttentionMetrics& m) {
  const AttentionPreset& preset = attention_preset(c.preset);
  Report rep;
  rep.command = "attention";
  rep.threads = m.threads;
  Table t;
  t.title = "Attention forward: kernel model vs float64 references";
  t.columns = {"dtype",   "tau",    "max_off", "seq",       "rel-L2 (unquant)", "rel-L2 (dequant)",
               "max abs", "cosine", "LSE err", "saturated", "rows %",           "warps %"};
  Table ts;
  ts.title = "Error split: what each part adds (||difference|| / ||reference||)";
  ts.columns = {
      "dtype",        "tau",           "seq", "Q/K/V quantisation", "stale-max saturation",
      "P conversion", "rest of kernel"};
  if (c.block_mode()) {
    ts.title =
        "Error split by source: what each part adds (Q/K, V, P: ||difference|| / ||reference||; "
        "exp2, lazy rescaling: rel-L2 minus rel-L2 with that part exact)";
    ts.columns = {"Q/K, P, V",      "tau",  "seq",           "Q/K quantisation", "V quantisation",
                  "P quantisation", "exp2", "lazy rescaling"};
    t.columns[0] = "Q/K, P, V";
  }
  json runs = json::array();
  for (const AttentionRun& r : m.runs) {
    add_run_rows(c, r, t, ts);
    runs.push_back(run_json(r));
    if (r.inputs_saturated[0] + r.inputs_saturated[1] + r.inputs_saturated[2] == 0) continue;
    const std::string note =
        r.block
            ? fmt::format(
                  "{} inputs saturated: Q {}, K {}, V {} values beyond their block's largest value "
                  "(element max x scale) were clipped to it (the scale rule's own clipping, Note [MX "
                  "scale rules], or an FP8 operand's satfinite); the error columns include it",
                  r.dtype, r.inputs_saturated[0], r.inputs_saturated[1], r.inputs_saturated[2])
            : fmt::format(
                  "{} inputs saturated: Q {}, K {}, V {} values beyond {}'s max finite were "
                  "clamped to it (the satfinite conversion); the error columns include it",
                  r.dtype, r.inputs_saturated[0], r.inputs_saturated[1], r.inputs_saturated[2],
                  r.dtype);
    if (std::find(t.notes.begin(), t.notes.end(), note) == t.notes.end()) t.notes.push_back(note);
  }
  add_attention_notes(c, preset, m.runs.front(), t);
  if (c.block_mode()) t.notes.push_back(block_note(c));
  rep.tables.push_back(std::move(t));
  if (c.split) rep.tables.push_back(std::move(ts));
  rep.params = attention_params(c, preset);
  rep.results = {{"runs", runs},
                 {"perf",
                  {{"executed_fp32_flops", m.executed_fp32_flops},
                   {"executed_fp64_flops", m.executed_fp64_flops}}}};
  // Wall-clock measurements are provenance, not results (identical runs: identical results).
  json run_s = json::array();
  for (const auto& r : m.runs) run_s.push_back(r.elapsed_s);
  const double elapsed = m.elapsed_s, flops_fp32 = m.executed_fp32_flops;
  const AttentionPhases& ph = m.phases;
  auto rate = [](double flops, double s) { return s > 0 ? flops / s * 1e-9 : 0.0; };
  rep.timings = {{"run_elapsed_s", run_s},
                 {"phases_cpu_s",
                  {{"operands", ph.operands},
                   {"s_gemm_fp32", ph.s_gemm},
                   {"softmax", ph.softmax},
                   {"pv_fp32", ph.pv},
                   {"ref_gemm_fp64", ph.ref_gemm},
                   {"ref_softmax_fp64", ph.ref_softmax},
                   {"metrics", ph.metrics}}},
                 {"gemm_gflop",
                  {{"s_fp32", ph.s_flops * 1e-9},
                   {"pv_fp32", ph.pv_flops * 1e-9},
                   {"ref_fp64", ph.ref_flops * 1e-9}}},
                 {"gemm_gflop_per_cpu_s",
                  {{"s_fp32", rate(ph.s_flops, ph.s_gemm)},
                   {"pv_fp32", rate(ph.pv_flops, ph.pv)},
                   {"fp32", rate(ph.s_flops + ph.pv_flops, ph.s_gemm + ph.pv)},
                   {"ref_fp64", rate(ph.ref_flops, ph.ref_gemm)}}},
                 {"perf",
                  {{"elapsed_s", elapsed},
                   {"fp32_gflop_per_s", flops_fp32 / elapsed * 1e-9},
                   {"all_gflop_per_s", (flops_fp32 + m.executed_fp64_flops) / elapsed * 1e-9},
                   {"threads", m.threads}}}};
  return rep;
}

AttentionResult run_attention(const AttentionConfig& c) {
  AttentionMetrics m = compute_attention(c);
  AttentionResult res;
  res.report = attention_report(c, m);
  res.runs = std::move(m.runs);
  return res;
}

}  // namespace fa4sim
