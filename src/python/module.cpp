// module.cpp: the extension `fa4sim._fa4sim` (nanobind). Every function here only moves arrays
// and options into fa4sim_lib (its option sets: include/fa4sim/options/, shared with the CLI) and
// the results back: no numerics of its own. The package python/fa4sim/__init__.py checks and
// converts the arguments (dtype, shape, contiguity) and documents them; it is the public API.
//
// Conventions:
//   * arrays arrive 1-D (flattened by the package), C-contiguous float32/uint*, CPU, never
//     converted here (noconvert: an output array that nanobind copied would lose the results);
//     outputs are allocated by the package and filled in place: large ones (>= 4 MiB) from
//     output_buffer() below, which reuses the memory of dropped outputs (Note [Output buffers]),
//     smaller ones by numpy.empty;
//   * the GIL is released around every loop over the data;
//   * elementwise work runs through parallel_chunks (the CLI's thread pool) in chunks of
//     kChunk elements: the same bits for every thread count (stochastic rounding numbers its
//     random stream by element index);
//   * fa4sim::Error becomes ValueError with the CLI's message ("<what> (<hint>)").
//   * analyses return their report's `results` as Python values (dicts, lists, numbers; built by
//     json_values.h, no JSON text in between): the values the CLI's --json writes.
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "json_values.h"

#include "fa4sim/util/seed.h"
#include "fa4sim/analysis/attention.h"
#include "fa4sim/analysis/block_report.h"
#include "fa4sim/analysis/formats_report.h"
#include "fa4sim/analysis/schedule.h"
#include "fa4sim/util/error.h"
#include "fa4sim/analysis/exp2_analysis.h"
#include "fa4sim/analysis/fit.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/paths.h"
#include "fa4sim/analysis/rescale.h"
#include "fa4sim/util/version.h"
#include "fa4sim/options/attention_options.h"
#include "fa4sim/options/block_options.h"
#include "fa4sim/options/exp2_options.h"
#include "fa4sim/options/rescale_options.h"
#include "fa4sim/options/roofline_options.h"
#include "fa4sim/options/schedule_options.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace fa4sim::python {

namespace {

constexpr uint64_t kChunk = uint64_t(1) << 16;

template <class T>
using In1 = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using Out1 = nb::ndarray<T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

void check_same_size(size_t in, size_t out) {
  if (in != out) throw Error(fmt::format("output has {} elements for {} inputs", out, in));
}

// Runs body(begin, end) over [0, n): directly for one chunk, else on the CLI's thread pool.
template <class Body>
void for_chunks(size_t n, int threads, Body&& body) {
  if (n <= kChunk || threads == 1) {
    body(size_t(0), n);
    return;
  }
  parallel_chunks(n, kChunk, threads,
                  [&](uint64_t, uint64_t b, uint64_t e) { body(size_t(b), size_t(e)); });
}

// ---- output buffers
//
// Note [Output buffers]
// A new output array of an elementwise function (ex2_emu, encode, decode, quantize without
// out=) is written exactly once, by the workers that compute it. Fresh memory from the kernel
// costs more than that write: every page is zero-filled on its first touch (with 4 KiB pages
// also one fault per page), and glibc maps every block above 32 MiB anew on each allocation, so
// a loop `y = fa4sim.ex2_emu(x)` on 2^24 floats paid for zeroing 64 MiB per call, about 0.7x
// the exp2 itself (docs/python.md, "Speed"). Zero-filling fresh pages cannot be skipped; memory
// the process already owns needs none. So outputs of 4 MiB and more come from here: 2 MiB
// aligned anonymous mappings advised as huge pages (what NumPy does for large arrays, with
// fewer faults), and when such an array is dropped its mapping is kept, at most kKeepBytes
// of them, and handed to the next output that fits (capacity within 2x of the request). The
// first call, and any call while the earlier outputs are alive, still gets fresh memory.
// Contents of a reused buffer are stale until the workers overwrite every element.

class OutputBuffers {
 public:
  static constexpr size_t kMinBytes = size_t(4) << 20;  // below: numpy.empty (malloc reuses these)
  static constexpr size_t kKeepBytes = size_t(256)
                                       << 20;        // dropped buffers kept for reuse, at most
  static constexpr size_t kAlign = size_t(2) << 20;  // huge page

  static OutputBuffers& get() {
    static auto* b = new OutputBuffers;  // never destroyed: arrays may outlive static destruction
    return *b;
  }

  // A buffer of at least `bytes`; its capacity in *cap. Reuses the smallest kept buffer that
  // fits, the most recently dropped of equals (warmest in cache).
  void* take(size_t bytes, size_t* cap) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      size_t best = free_.size();
      for (size_t i = 0; i < free_.size(); ++i) {
        const bool fits = free_[i].cap >= bytes && free_[i].cap / 2 <= bytes;
        if (fits && (best == free_.size() || free_[i].cap <= free_[best].cap)) best = i;
      }
      if (best != free_.size()) {
        const Block b = free_[best];
        free_.erase(free_.begin() + std::ptrdiff_t(best));
        kept_ -= b.cap;
        *cap = b.cap;
        return b.p;
      }
    }
    *cap = (bytes + kAlign - 1) / kAlign * kAlign;
    return map_aligned(*cap);
  }

  // Called when the last array on the buffer is dropped.
  void give(void* p, size_t cap) noexcept {
    std::vector<Block> evicted;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (cap > kKeepBytes) {
        evicted.push_back({p, cap});
      } else {
        free_.push_back({p, cap});  // newest last; evict the oldest
        kept_ += cap;
        while (kept_ > kKeepBytes) {
          evicted.push_back(free_.front());
          kept_ -= free_.front().cap;
          free_.erase(free_.begin());
        }
      }
    }
    for (const Block& b : evicted) munmap(b.p, b.cap);
  }

 private:
  struct Block {
    void* p;
    size_t cap;
  };

  static void* map_aligned(size_t cap) {
    const size_t len = cap + kAlign;
    void* raw = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t r = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t a = (r + kAlign - 1) / kAlign * kAlign;
    if (a > r) munmap(raw, a - r);  // trim to [a, a + cap)
    if (r + len > a + cap) munmap(reinterpret_cast<void*>(a + cap), r + len - (a + cap));
    void* p = reinterpret_cast<void*>(a);
#ifdef MADV_HUGEPAGE  // Linux; a hint: fine where transparent huge pages are off
    (void)madvise(p, cap, MADV_HUGEPAGE);
#endif
    return p;
  }

  std::mutex mu_;
  std::vector<Block> free_;
  size_t kept_ = 0;
};

// A uint8 array of `bytes` bytes (>= OutputBuffers::kMinBytes) on a reusable buffer; the package
// views it as the output's dtype and shape.
nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>> output_buffer(size_t bytes) {
  size_t cap = 0;
  void* p = OutputBuffers::get().take(bytes, &cap);
  struct Owner {
    void* p;
    size_t cap;
  };
  auto* owner = new Owner{p, cap};
  nb::capsule c(owner, [](void* o) noexcept {
    auto* w = static_cast<Owner*>(o);
    OutputBuffers::get().give(w->p, w->cap);
    delete w;
  });
  return nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(p, {bytes}, c);
}

// ---- exp2

void ex2_emu_py(In1<float> x, Out1<float> out, int degree, int threads) {
  parse_int("--degree", std::to_string(degree), 0, kExp2MaxDegree);  // the CLI's message
  check_same_size(x.size(), out.size());
  const float* in = x.data();
  float* o = out.data();
  nb::gil_scoped_release unlocked;
  for_chunks(x.size(), threads, [&](size_t b, size_t e) {
    ex2_emu(std::span<const float>(in + b, e - b), std::span<float>(o + b, e - b), degree);
  });
}

// An analysis run without the GIL: its report's results (what the CLI's --json writes).
template <class Config, class Run, class ToReport>
nb::object run_report(const Config& cfg, Run run, ToReport to_report) {
  Report rep;
  {
    nb::gil_scoped_release unlocked;
    rep = to_report(cfg, run(cfg));
  }
  return results_to_py(rep);
}

nb::object exp2_analysis_py(const Exp2Options& o) {
  const Exp2Config cfg = parse_exp2_options(o);
  return run_report(
      cfg, [](const Exp2Config& c) { return run_exp2(c); },
      [](const Exp2Config& c, const Exp2Result& r) { return exp2_report(c, r); });
}

// The fit of `fa4sim fit` (the same FitConfig checks and report); the range as two numbers.
nb::object fit_py(int degree, const std::string& objective, double lo, double hi, bool fix_c0,
                  bool minimax_only, int threads) {
  FitConfig c;
  c.degree = degree;
  c.objective = parse_fit_objective(objective);
  c.lo = lo;
  c.hi = hi;
  c.fix_c0 = fix_c0;
  c.minimax_only = minimax_only;
  c.threads = threads;
  validate(c);
  return run_report(
      c, [](const FitConfig& f) { return run_fit(f); },
      [](const FitConfig& f, const FitResult& r) { return fit_report(f, r); });
}

// ---- formats

struct Rounding {
  Overflow overflow;
  std::optional<uint64_t> seed;  // set: stochastic rounding
};

// The checks of `fa4sim quantize` on --overflow, --rounding and --seed for format f, with its
// messages (the MX element formats have no ieee overflow and no stochastic rounding).
Rounding parse_rounding(const Format& f, const std::string& overflow, const std::string& rounding,
                        std::optional<int64_t> seed) {
  Rounding r{overflow_by_name(parse_choice("--overflow", overflow, {"satfinite", "ieee"})),
             std::nullopt};
  require_overflow_mode(f, r.overflow);
  const std::string mode = parse_choice("--rounding", rounding, {"nearest", "stochastic"});
  if (mode == "stochastic") require_stochastic_rounding(f);
  if (seed && mode != "stochastic")
    throw Error("--seed is only used by stochastic rounding", "add --rounding stochastic");
  if (mode == "stochastic")
    r.seed =
        seed ? uint64_t(parse_int("--seed", std::to_string(*seed), 0, INT64_MAX)) : kDefaultSeed;
  return r;
}

nb::dict format_info(const std::string& name) {
  const Format& f = format_by_name(name);
  nb::dict d;
  d["name"] = f.name;
  d["total_bits"] = f.total_bits;
  d["exp_bits"] = f.exp_bits;
  d["man_bits"] = f.man_bits;
  d["bias"] = f.bias;
  d["has_inf"] = f.has_inf;
  d["max_code"] = f.max_code;
  d["nan_code"] = f.nan_code;
  d["max_finite"] = f.max_finite;
  d["min_normal"] = f.min_normal;
  d["min_subnormal"] = f.min_subnormal;
  return d;
}

template <class T>
void encode_py(In1<float> x, Out1<T> out, const std::string& fmt_name, const std::string& overflow,
               const std::string& rounding, std::optional<int64_t> seed, int threads) {
  const Format& f = format_by_name(fmt_name);
  const Rounding r = parse_rounding(f, overflow, rounding, seed);
  check_same_size(x.size(), out.size());
  if (f.total_bits > int(8 * sizeof(T)))
    throw Error(fmt::format("{} codes need {}-bit integers, got {}-bit", f.name, f.total_bits,
                            8 * sizeof(T)));
  const float* in = x.data();
  T* o = out.data();
  nb::gil_scoped_release unlocked;
  for_chunks(x.size(), threads, [&](size_t b, size_t e) {
    const std::span<const float> src(in + b, e - b);
    if (!r.seed) {
      encode_array(f, src, std::span<T>(o + b, e - b), r.overflow);
    } else if constexpr (sizeof(T) == 4) {
      encode_sr_array(f, src, std::span<uint32_t>(o + b, e - b), r.overflow, *r.seed, b);
    } else {
      std::vector<uint32_t> wide(e - b);
      encode_sr_array(f, src, wide, r.overflow, *r.seed, b);
      for (size_t i = 0; i < wide.size(); ++i) o[b + i] = T(wide[i]);
    }
  });
}

template <class T>
void decode_py(In1<T> codes, Out1<float> out, const std::string& fmt_name, int threads) {
  const Format& f = format_by_name(fmt_name);
  check_same_size(codes.size(), out.size());
  const T* in = codes.data();
  float* o = out.data();
  nb::gil_scoped_release unlocked;
  for_chunks(codes.size(), threads, [&](size_t b, size_t e) {
    decode_array(f, std::span<const T>(in + b, e - b), std::span<float>(o + b, e - b));
  });
}

void quantize_py(In1<float> x, Out1<float> out, const std::string& fmt_name,
                 const std::string& overflow, const std::string& rounding,
                 std::optional<int64_t> seed, int threads) {
  const Format& f = format_by_name(fmt_name);
  const Rounding r = parse_rounding(f, overflow, rounding, seed);
  check_same_size(x.size(), out.size());
  const float* in = x.data();
  float* o = out.data();
  nb::gil_scoped_release unlocked;
  for_chunks(x.size(), threads, [&](size_t b, size_t e) {
    const std::span<const float> src(in + b, e - b);
    const std::span<float> dst(o + b, e - b);
    if (r.seed)
      quantize_sr_array(f, src, dst, r.overflow, *r.seed, b);
    else
      quantize_array(f, src, dst, r.overflow);
  });
}

// ---- attention and check

// The set of option names a Python call gave explicitly (the CLI asks its parser).
OptionGiven given_of(std::vector<std::string> names) {
  return [names = std::move(names)](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
}

// q, k, v: flattened (batch, seq, heads, d) float32 with their shapes. `o`: the CLI's option
// strings of `fa4sim attention` (geometry options unused: the shapes give it).
std::tuple<std::vector<float>, std::vector<float>, json> attention_py(
    In1<float> q, std::vector<uint64_t> q_shape, In1<float> k, std::vector<uint64_t> k_shape,
    In1<float> v, std::vector<uint64_t> v_shape, const AttentionCliOptions& o, int threads) {
  // No option counts as given: the shapes of q, k, v are the geometry.
  AttentionConfig c = parse_attention_options(o, no_options_given);
  if (c.dtypes.size() != 1) throw Error("give one dtype", "e.g. dtype=\"e4m3\"");
  if (c.taus.size() > 1) throw Error("give one tau", "e.g. tau=8");
  c.threads = threads;
  c.keep_outputs = true;
  c.tensors = {{q.data(), std::move(q_shape), "q"},
               {k.data(), std::move(k_shape), "k"},
               {v.data(), std::move(v_shape), "v"}};
  for (size_t i = 0; i < 3; ++i) {
    size_t n = 1;
    for (auto s : c.tensors[i].shape) n *= size_t(s);
    const size_t have = i == 0 ? q.size() : i == 1 ? k.size() : v.size();
    if (n != have) throw Error(fmt::format("{}: shape and data disagree", c.tensors[i].label));
  }
  validate_attention_config(c);
  nb::gil_scoped_release unlocked;
  AttentionResult r = run_attention(c);
  AttentionRun& run = r.runs.front();
  json stats = with_nonfinite_as_text(r.report.results["runs"][0]);
  return {std::move(run.o), std::move(run.lse), std::move(stats)};
}

// `fa4sim attention` on its own seeded N(0, 1) inputs: the options as the CLI's strings, `given`
// the names of those the caller set (as the CLI's command line would have them).
nb::object attention_report_py(const AttentionCliOptions& o, std::vector<std::string> given,
                               int threads) {
  AttentionConfig c = parse_attention_options(o, given_of(std::move(given)));
  c.threads = threads;
  validate_attention_config(c);
  Report r;
  {
    nb::gil_scoped_release unlocked;
    r = std::move(run_attention(c).report);
  }
  return results_to_py(r);
}

nb::object check_py(const std::vector<std::string>& dtypes_in, const std::string& preset_in,
                    std::optional<double> tau, std::optional<double> max_offset) {
  std::vector<const Format*> dtypes;
  for (const auto& d : dtypes_in)
    dtypes.push_back(&parse_dtype("--dtype", d, FormatRole::attention_input));
  std::vector<std::string> presets;
  for (const auto& p : attention_presets()) presets.push_back(p.name);
  const std::string preset = parse_choice("--preset", preset_in, presets);
  std::vector<double> taus;  // one tau here; the CLI's --tau takes a list
  if (tau) taus.push_back(*tau);
  return results_to_py(run_check(dtypes, preset, taus, max_offset));
}

// ---- online softmax (the simulator of `fa4sim rescale`, on a caller's score matrix)

struct SoftmaxOut {
  std::vector<float> o, lse;
  std::vector<uint8_t> flags;
  json counts;
};

SoftmaxOut online_softmax_py(In1<float> scores, int rows, int keys, std::optional<In1<float>> v,
                             int d, double tau, const std::string& dtype,
                             std::optional<double> max_offset, int block, int warp_rows,
                             const std::string& exp, std::optional<double> scale,
                             const std::string& order, bool allow_saturation, int threads) {
  // The checks `fa4sim rescale` makes while parsing its options, with its messages.
  RescaleConfig cfg;
  cfg.taus = {tau};
  cfg.dtypes = {&parse_dtype("--dtype", dtype, FormatRole::p_cast)};
  parse_int("--block-n", std::to_string(block), 1, 1 << 20);
  parse_int("--warp-rows", std::to_string(warp_rows), 1, 1024);
  cfg.max_offset = max_offset;
  cfg.rows = rows, cfg.keys = keys, cfg.block = block, cfg.d = v ? d : 1;
  cfg.warp_rows = warp_rows;
  cfg.exp2 = parse_exp2_choice(exp);
  cfg.scale = scale;
  cfg.allow_saturation = allow_saturation;
  const BlockOrder ord = parse_choice("--order", order, {"reverse", "forward"}) == "reverse"
                             ? BlockOrder::reverse
                             : BlockOrder::forward;
  if (block > keys)
    throw Error(fmt::format("--block-n {} is larger than the file's {} keys", block, keys));
  validate_rescale_config(cfg);
  if (size_t(rows) * size_t(keys) != scores.size()) throw Error("scores: shape and data disagree");
  if (v && size_t(keys) * size_t(d) != v->size()) throw Error("v: shape and data disagree");
  const SoftmaxParams p = rescale_softmax_params(cfg, *cfg.dtypes.front(), tau);
  const int n_blocks = (keys + block - 1) / block;
  SoftmaxOut out;
  out.flags.assign(size_t(rows) * size_t(n_blocks), 0);
  nb::gil_scoped_release unlocked;
  check_scores(scores.data(), rows, keys, "scores");
  check_file_scores(scores.data(), rows, keys, cfg, "scores");  // as `fa4sim rescale --dist file:`
  RowBlockRunResult rr = simulate_rows(p, scores.data(), rows, keys, block, ord,
                                       v ? v->data() : nullptr, d, threads, out.flags.data());
  const RescaleCounts& c = rr.counts;
  out.counts = {
      {"rows_pct",
       c.row_decisions ? 100.0 * double(c.row_rescales) / double(c.row_decisions) : 0.0},
      {"warps_pct",
       c.warp_decisions ? 100.0 * double(c.warp_rescales) / double(c.warp_decisions) : 0.0},
      {"saturated", c.saturated},
      {"saturated_pct", c.p_count ? 100.0 * double(c.saturated) / double(c.p_count) : 0.0},
      {"tiles", c.tiles},
      {"row_decisions", c.row_decisions},
      {"row_rescales", c.row_rescales},
      {"warp_decisions", c.warp_decisions},
      {"warp_rescales", c.warp_rescales},
      {"p_count", c.p_count},
      {"order", block_order_name(ord)},
      {"max_offset", p.max_offset},
      {"exp2", exp2_choice_name(cfg.exp2)}};
  out.o = std::move(rr.O);
  out.lse = std::move(rr.lse);
  return out;
}

// ---- the experiments and models without array inputs: `fa4sim rescale`, `schedule`, `formats`,
// `roofline`

nb::object rescale_py(const RescaleCliOptions& o, std::vector<std::string> given) {
  const RescaleConfig c = parse_rescale_options(o, given_of(std::move(given)));
  validate_rescale_config(c);
  Report r;
  {
    nb::gil_scoped_release unlocked;
    r = run_rescale(c);
  }
  return results_to_py(r);
}

// One prediction (`fa4sim schedule`), or with `inputs` (a list of dicts) every entry's
// (`fa4sim schedule --inputs FILE`).
nb::object schedule_py(const ScheduleCliOptions& c, nb::handle inputs) {
  Report r;
  if (!inputs.is_none()) {
    const json list = from_py(inputs, "inputs");
    nb::gil_scoped_release unlocked;
    r = schedule_inputs_report(c, list, "inputs", "inputs");
  } else {
    const ScheduleModelOptions o = schedule_model_options(c);
    nb::gil_scoped_release unlocked;
    r = schedule_report(o, compute_schedule(o));
  }
  return results_to_py(r);
}

nb::object roofline_py(const RooflineCliOptions& c) {
  return results_to_py(run_roofline(parse_roofline_options(c)));
}

// ---- block-scaled formats (`fa4sim block`)

// The block format of the options; "auto" tensor scales from `x` (torchao's per-tensor amax rule).
BlockFormat block_format_py(const BlockFormatOptions& o, std::span<const float> x) {
  BlockFormat f = parse_block_format(o);
  if (o.tensor_scale == "auto") f.tensor_scale = tensor_scale_from_amax(f, x);
  return f;
}

// Element codes and block scales of x (row length row_len), in parallel over whole blocks (every
// block is encoded on its own: the same codes for any thread count).
void block_encode_py(In1<float> x, uint64_t row_len, Out1<uint8_t> codes, Out1<uint8_t> scales,
                     const BlockFormatOptions& o, int threads) {
  const BlockFormat f = block_format_py(o, {x.data(), x.size()});
  const size_t bs = size_t(f.block_size), n = x.size();
  if (row_len == 0 || row_len % bs != 0 || n % row_len != 0)
    throw Error(fmt::format("--block {} does not divide the row length {}", bs, row_len),
                "the last dimension is the row; pick a block size that divides it");
  check_same_size(n, codes.size());
  check_same_size(n / bs, scales.size());
  const float* in = x.data();
  uint8_t *c = codes.data(), *s = scales.data();
  nb::gil_scoped_release unlocked;
  for_chunks(n / bs, threads, [&](size_t b, size_t e) {
    block_encode_array(f, {in + b * bs, (e - b) * bs}, bs, {c + b * bs, (e - b) * bs},
                       {s + b, e - b});
  });
}

void block_decode_py(In1<uint8_t> codes, In1<uint8_t> scales, uint64_t row_len, Out1<float> out,
                     const BlockFormatOptions& o, int threads) {
  const BlockFormat f = parse_block_format(o);
  const size_t bs = size_t(f.block_size), n = codes.size();
  if (row_len == 0 || row_len % bs != 0 || n % row_len != 0)
    throw Error(fmt::format("--block {} does not divide the row length {}", bs, row_len),
                "the last dimension is the row; pick a block size that divides it");
  check_same_size(n, out.size());
  if (scales.size() != n / bs)
    throw Error(fmt::format("scales has {} entries; {} codes in blocks of {} need {}",
                            scales.size(), n, bs, n / bs),
                "decode with the block format that encoded them");
  const uint8_t *c = codes.data(), *s = scales.data();
  float* y = out.data();
  nb::gil_scoped_release unlocked;
  for_chunks(n / bs, threads, [&](size_t b, size_t e) {
    block_decode_array(f, {c + b * bs, (e - b) * bs}, bs, {s + b, e - b},
                       {y + b * bs, (e - b) * bs});
  });
}

// The round trip of `fa4sim block --in X --decoded-out D --json`: the decoded values and the
// report's results.
std::pair<std::vector<float>, Report> block_quantize_py(In1<float> x, uint64_t row_len,
                                                        const BlockFormatOptions& o) {
  const std::span<const float> in(x.data(), x.size());
  const BlockFormat f = block_format_py(o, in);
  nb::gil_scoped_release unlocked;
  BlockQuantized q = block_quantize(f, in, size_t(row_len));
  Report r = block_report(f, in, size_t(row_len), q);
  return {std::move(q.decoded), std::move(r)};
}

float block_tensor_scale_py(In1<float> x, const BlockFormatOptions& o) {
  BlockFormatOptions a = o;
  a.tensor_scale = "auto";
  return block_format_py(a, {x.data(), x.size()}).tensor_scale;
}

// `fa4sim quantize VALUES --json`'s results: every value's bits, decoded value, errors and flags,
// and the summary.
nb::object quantize_report_py(In1<float> x, const std::string& fmt_name,
                              const std::string& overflow, const std::string& rounding,
                              std::optional<int64_t> seed) {
  const Format& f = format_by_name(fmt_name);
  const Rounding r = parse_rounding(f, overflow, rounding, seed);
  QuantizeConfig c;
  c.format = &f;
  c.overflow = r.overflow;
  c.stochastic_seed = r.seed;
  Report rep;
  {
    nb::gil_scoped_release unlocked;
    rep = quantize_report(c, std::span<const float>(x.data(), x.size()));
  }
  return results_to_py(rep);
}

nb::ndarray<nb::numpy, float, nb::ndim<1>> to_numpy(std::vector<float>&& v) {
  auto* heap = new std::vector<float>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
  return nb::ndarray<nb::numpy, float, nb::ndim<1>>(heap->data(), {heap->size()}, owner);
}

nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>> to_numpy_u8(std::vector<uint8_t>&& v) {
  auto* heap = new std::vector<uint8_t>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<uint8_t>*>(p); });
  return nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(heap->data(), {heap->size()}, owner);
}

// ---- bindings, by concern

void bind_elementwise(nb::module_& m) {
  m.def("ex2_emu", &ex2_emu_py, "x"_a.noconvert(), "out"_a.noconvert(), "degree"_a, "threads"_a);
  m.def("format_info", &format_info, "name"_a);
  m.def("format_names", static_cast<std::vector<std::string> (*)()>(&format_names));
  m.def("encode", &encode_py<uint8_t>, "x"_a.noconvert(), "out"_a.noconvert(), "fmt"_a,
        "overflow"_a, "rounding"_a, "seed"_a.none(), "threads"_a);
  m.def("encode", &encode_py<uint16_t>, "x"_a.noconvert(), "out"_a.noconvert(), "fmt"_a,
        "overflow"_a, "rounding"_a, "seed"_a.none(), "threads"_a);
  m.def("encode", &encode_py<uint32_t>, "x"_a.noconvert(), "out"_a.noconvert(), "fmt"_a,
        "overflow"_a, "rounding"_a, "seed"_a.none(), "threads"_a);
  m.def("decode", &decode_py<uint8_t>, "codes"_a.noconvert(), "out"_a.noconvert(), "fmt"_a,
        "threads"_a);
  m.def("decode", &decode_py<uint16_t>, "codes"_a.noconvert(), "out"_a.noconvert(), "fmt"_a,
        "threads"_a);
  m.def("decode", &decode_py<uint32_t>, "codes"_a.noconvert(), "out"_a.noconvert(), "fmt"_a,
        "threads"_a);
  m.def("quantize", &quantize_py, "x"_a.noconvert(), "out"_a.noconvert(), "fmt"_a, "overflow"_a,
        "rounding"_a, "seed"_a.none(), "threads"_a);
  m.def("quantize_report", &quantize_report_py, "x"_a.noconvert(), "fmt"_a, "overflow"_a,
        "rounding"_a, "seed"_a.none());
  m.def("formats", [] { return results_to_py(formats_table_report()); });
}

void bind_block(nb::module_& m) {
  nb::class_<BlockFormatOptions>(m, "BlockFormatOptions")
      .def(nb::init<>())
      .def_rw("format", &BlockFormatOptions::format)
      .def_rw("elem", &BlockFormatOptions::elem)
      .def_rw("scale_format", &BlockFormatOptions::scale_format)
      .def_rw("rule", &BlockFormatOptions::rule)
      .def_rw("block", &BlockFormatOptions::block)
      .def_rw("tensor_scale", &BlockFormatOptions::tensor_scale);
  m.def("block_format_names", &block_format_names);
  m.def("block_format_info", [](const BlockFormatOptions& o) {  // the validated format
    const BlockFormat f = parse_block_format(o);
    nb::dict d;
    d["elem"] = f.elem->name;
    d["scale_format"] = f.scale->name;
    d["block"] = f.block_size;
    d["rule"] = scale_rule_name(f.rule);
    return d;
  });
  m.def("block_rule_names", &scale_rule_names);
  m.def("block_encode", &block_encode_py, "x"_a.noconvert(), "row_len"_a, "codes"_a.noconvert(),
        "scales"_a.noconvert(), "options"_a, "threads"_a);
  m.def("block_decode", &block_decode_py, "codes"_a.noconvert(), "scales"_a.noconvert(),
        "row_len"_a, "out"_a.noconvert(), "options"_a, "threads"_a);
  m.def(
      "block_quantize",
      [](In1<float> x, uint64_t row_len, const BlockFormatOptions& o) {
        auto [decoded, report] = block_quantize_py(x, row_len, o);
        return nb::make_tuple(to_numpy(std::move(decoded)), results_to_py(report));
      },
      "x"_a.noconvert(), "row_len"_a, "options"_a);
  m.def("block_tensor_scale", &block_tensor_scale_py, "x"_a.noconvert(), "options"_a);
}

void bind_attention(nb::module_& m) {
  nb::class_<AttentionCliOptions>(m, "AttentionOptions")
      .def(nb::init<>())
      .def_rw("batch", &AttentionCliOptions::batch)
      .def_rw("heads", &AttentionCliOptions::heads)
      .def_rw("kv_heads", &AttentionCliOptions::kv_heads)
      .def_rw("seq", &AttentionCliOptions::seq)
      .def_rw("seq_q", &AttentionCliOptions::seq_q)
      .def_rw("seq_k", &AttentionCliOptions::seq_k)
      .def_rw("d", &AttentionCliOptions::d)
      .def_rw("seed", &AttentionCliOptions::seed)
      .def_rw("causal", &AttentionCliOptions::causal)
      .def_rw("softmax_scale", &AttentionCliOptions::softmax_scale)
      .def_rw("q_scale", &AttentionCliOptions::q_scale)
      .def_rw("dtype", &AttentionCliOptions::dtype)
      .def_rw("preset", &AttentionCliOptions::preset)
      .def_rw("tau", &AttentionCliOptions::tau)
      .def_rw("max_offset", &AttentionCliOptions::max_offset)
      .def_rw("descale", &AttentionCliOptions::descale)
      .def_rw("block_n", &AttentionCliOptions::block_n)
      .def_rw("block_m", &AttentionCliOptions::block_m)
      .def_rw("warp_rows", &AttentionCliOptions::warp_rows)
      .def_rw("exp", &AttentionCliOptions::exp)
      .def_rw("order", &AttentionCliOptions::order)
      .def_rw("allow_saturation", &AttentionCliOptions::allow_saturation)
      .def_rw("no_split", &AttentionCliOptions::no_split);
  m.def(
      "attention",
      [](In1<float> q, std::vector<uint64_t> qs, In1<float> k, std::vector<uint64_t> ks,
         In1<float> v, std::vector<uint64_t> vs, const AttentionCliOptions& o, int threads) {
        auto [out, lse, stats] =
            attention_py(q, std::move(qs), k, std::move(ks), v, std::move(vs), o, threads);
        return nb::make_tuple(to_numpy(std::move(out)), to_numpy(std::move(lse)), to_py(stats));
      },
      "q"_a.noconvert(), "q_shape"_a, "k"_a.noconvert(), "k_shape"_a, "v"_a.noconvert(),
      "v_shape"_a, "options"_a, "threads"_a);
  m.def("attention_report", &attention_report_py, "options"_a, "given"_a, "threads"_a);
  m.def("check", &check_py, "dtypes"_a, "preset"_a, "tau"_a.none(), "max_offset"_a.none());
  m.def(
      "online_softmax",
      [](In1<float> scores, int rows, int keys, std::optional<In1<float>> v, int d, double tau,
         const std::string& dtype, std::optional<double> max_offset, int block, int warp_rows,
         const std::string& exp, std::optional<double> scale, const std::string& order,
         bool allow_saturation, int threads) {
        SoftmaxOut r = online_softmax_py(scores, rows, keys, v, d, tau, dtype, max_offset, block,
                                         warp_rows, exp, scale, order, allow_saturation, threads);
        return nb::make_tuple(to_numpy(std::move(r.o)), to_numpy(std::move(r.lse)),
                              to_numpy_u8(std::move(r.flags)), to_py(r.counts));
      },
      "scores"_a.noconvert(), "rows"_a, "keys"_a, "v"_a.noconvert().none(), "d"_a, "tau"_a,
      "dtype"_a, "max_offset"_a.none(), "block"_a, "warp_rows"_a, "exp"_a, "scale"_a.none(),
      "order"_a, "allow_saturation"_a, "threads"_a);
}

void bind_exp2(nb::module_& m) {
  nb::class_<Exp2Options>(m, "Exp2Options")
      .def(nb::init<>())
      .def_rw("degree", &Exp2Options::degree)
      .def_rw("degree_given", &Exp2Options::degree_given)
      .def_rw("range", &Exp2Options::range)
      .def_rw("samples", &Exp2Options::samples)
      .def_rw("sampling", &Exp2Options::sampling)
      .def_rw("exhaustive", &Exp2Options::exhaustive)
      .def_rw("out_dtype", &Exp2Options::out_dtype)
      .def_rw("seed", &Exp2Options::seed)
      .def_rw("reference", &Exp2Options::reference)
      .def_rw("coeffs", &Exp2Options::coeffs)
      .def_rw("coeffs_given", &Exp2Options::coeffs_given)
      .def_prop_rw(
          "threads", [](const Exp2Options& o) { return o.common.threads; },
          [](Exp2Options& o, int t) { o.common.threads = t; });
  m.def("exp2_analysis", &exp2_analysis_py, "options"_a);
  m.def("fit", &fit_py, "degree"_a, "objective"_a, "lo"_a, "hi"_a, "fix_c0"_a, "minimax_only"_a,
        "threads"_a);
  m.def("fit_objective_names", &fit_objective_names);
}

void bind_models(nb::module_& m) {
  nb::class_<RescaleCliOptions>(m, "RescaleOptions")
      .def(nb::init<>())
      .def_rw("tau", &RescaleCliOptions::tau)
      .def_rw("dtype", &RescaleCliOptions::dtype)
      .def_rw("max_offset", &RescaleCliOptions::max_offset)
      .def_rw("dist", &RescaleCliOptions::dist)
      .def_rw("rows", &RescaleCliOptions::rows)
      .def_rw("keys", &RescaleCliOptions::keys)
      .def_rw("block", &RescaleCliOptions::block)
      .def_rw("d", &RescaleCliOptions::d)
      .def_rw("v_dist", &RescaleCliOptions::v_dist)
      .def_rw("exp", &RescaleCliOptions::exp)
      .def_rw("scale", &RescaleCliOptions::scale)
      .def_rw("order", &RescaleCliOptions::order)
      .def_rw("warp_rows", &RescaleCliOptions::warp_rows)
      .def_rw("seed", &RescaleCliOptions::seed)
      .def_rw("seeds", &RescaleCliOptions::seeds)
      .def_rw("rng", &RescaleCliOptions::rng)
      .def_rw("allow_saturation", &RescaleCliOptions::allow_saturation)
      .def_rw("counts_only", &RescaleCliOptions::counts_only)
      .def_prop_rw(
          "threads", [](const RescaleCliOptions& o) { return o.common.threads; },
          [](RescaleCliOptions& o, int t) { o.common.threads = t; });
  m.def("rescale", &rescale_py, "options"_a, "given"_a);

  nb::class_<ScheduleCliOptions>(m, "ScheduleOptions")
      .def(nb::init<>())
      .def_rw("arch", &ScheduleCliOptions::arch)
      .def_rw("arch_files", &ScheduleCliOptions::arch_files)
      .def_rw("spec", &ScheduleCliOptions::spec)
      .def_rw("kernel_factors", &ScheduleCliOptions::kernel_factors)
      .def_rw("batch", &ScheduleCliOptions::batch)
      .def_rw("heads", &ScheduleCliOptions::heads)
      .def_rw("kv_heads", &ScheduleCliOptions::kv_heads)
      .def_rw("seq", &ScheduleCliOptions::seq)
      .def_rw("seq_k", &ScheduleCliOptions::seq_k)
      .def_rw("d", &ScheduleCliOptions::d)
      .def_rw("causal", &ScheduleCliOptions::causal)
      .def_rw("tau", &ScheduleCliOptions::tau)
      .def_rw("emu_fraction", &ScheduleCliOptions::emu_fraction)
      .def_rw("rescale_share", &ScheduleCliOptions::rescale_share)
      .def_rw("degree", &ScheduleCliOptions::degree)
      .def_rw("tile", &ScheduleCliOptions::tile)
      .def_rw("no_search", &ScheduleCliOptions::no_search);
  m.def("schedule", &schedule_py, "options"_a, "inputs"_a.none());

  nb::class_<RooflineCliOptions>(m, "RooflineOptions")
      .def(nb::init<>())
      .def_rw("arch", &RooflineCliOptions::arch)
      .def_rw("arch_files", &RooflineCliOptions::arch_files)
      .def_rw("d", &RooflineCliOptions::d)
      .def_rw("sweep_d", &RooflineCliOptions::sweep_d)
      .def_rw("dtype", &RooflineCliOptions::dtype)
      .def_rw("tile", &RooflineCliOptions::tile)
      .def_rw("direction", &RooflineCliOptions::direction)
      .def_rw("emu_fraction", &RooflineCliOptions::emu_fraction)
      .def_rw("degree", &RooflineCliOptions::degree)
      .def_rw("schedule", &RooflineCliOptions::schedule)
      .def_rw("schedule_given", &RooflineCliOptions::schedule_given)
      .def_rw("measured", &RooflineCliOptions::measured);
  m.def("roofline", &roofline_py, "options"_a);
}

}  // namespace

}  // namespace fa4sim::python

NB_MODULE(_fa4sim, m) {
  using namespace fa4sim;
  using namespace fa4sim::python;
  m.doc() = "fa4sim's C++ core (nanobind). Use the package `fa4sim`, which checks arguments.";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("version", [] { return std::string(version()); });
  m.def("git_revision", [] { return std::string(git_describe()); });
  m.def("set_packaged_data_dir", &set_packaged_data_dir, "dir"_a);
  m.def("ex2_emu_array_is_simd", &ex2_emu_array_is_simd);
  m.def("default_threads", &default_threads);
  m.def("output_buffer", &output_buffer, "bytes"_a);
  m.attr("output_buffer_min_bytes") = OutputBuffers::kMinBytes;
  bind_elementwise(m);
  bind_block(m);
  bind_attention(m);
  bind_exp2(m);
  bind_models(m);
}
