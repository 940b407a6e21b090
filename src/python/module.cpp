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
//   * analyses return their report as a JSON string (the package json.loads it): the same
//     results the CLI's --json writes.
#include <sys/mman.h>

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

#include "fa4sim/util/seed.h"
#include "fa4sim/analysis/attention.h"
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
#include "fa4sim/options/exp2_options.h"
#include "fa4sim/options/roofline_options.h"

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
  parallel_chunks(n, kChunk, threads, [&](uint64_t, uint64_t b, uint64_t e) { body(size_t(b), size_t(e)); });
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
  static constexpr size_t kMinBytes = size_t(4) << 20;   // below: numpy.empty (malloc reuses these)
  static constexpr size_t kKeepBytes = size_t(256) << 20;  // dropped buffers kept for reuse, at most
  static constexpr size_t kAlign = size_t(2) << 20;       // huge page

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

// An analysis run without the GIL: its report envelope as JSON text (what the CLI's --json writes).
template <class Config, class Run, class ToReport>
std::string run_report(const Config& cfg, Run run, ToReport to_report) {
  Stopwatch sw;
  Report rep;
  {
    nb::gil_scoped_release unlocked;
    rep = to_report(cfg, run(cfg));
  }
  return envelope(rep, sw.seconds()).dump();
}

std::string exp2_analysis_py(const Exp2Options& o) {
  const Exp2Config cfg = parse_exp2_options(o);
  return run_report(
      cfg, [](const Exp2Config& c) { return run_exp2(c); },
      [](const Exp2Config& c, const Exp2Result& r) { return exp2_report(c, r); });
}

// The fit of `fa4sim fit` (the same FitConfig checks and report); the range as two numbers.
std::string fit_py(int degree, const std::string& objective, double lo, double hi, bool fix_c0,
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

// The checks of `fa4sim quantize` on --overflow, --rounding and --seed, with its messages.
Rounding parse_rounding(const std::string& overflow, const std::string& rounding,
                        std::optional<int64_t> seed) {
  Rounding r{overflow_by_name(overflow), std::nullopt};
  const std::string mode = parse_choice("--rounding", rounding, {"nearest", "stochastic"});
  if (seed && mode != "stochastic")
    throw Error("--seed is only used by stochastic rounding", "add --rounding stochastic");
  if (mode == "stochastic")
    r.seed = seed ? uint64_t(parse_int("--seed", std::to_string(*seed), 0, INT64_MAX)) : kDefaultSeed;
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
  const Rounding r = parse_rounding(overflow, rounding, seed);
  check_same_size(x.size(), out.size());
  if (f.total_bits > int(8 * sizeof(T)))
    throw Error(fmt::format("{} codes need {}-bit integers, got {}-bit", f.name, f.total_bits, 8 * sizeof(T)));
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

void quantize_py(In1<float> x, Out1<float> out, const std::string& fmt_name, const std::string& overflow,
                 const std::string& rounding, std::optional<int64_t> seed, int threads) {
  const Format& f = format_by_name(fmt_name);
  const Rounding r = parse_rounding(overflow, rounding, seed);
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

// q, k, v: flattened (batch, seq, heads, d) float32 with their shapes. `o`: the CLI's option
// strings of `fa4sim attention` (geometry options unused: the shapes give it).
std::tuple<std::vector<float>, std::vector<float>, std::string> attention_py(
    In1<float> q, std::vector<uint64_t> q_shape, In1<float> k, std::vector<uint64_t> k_shape,
    In1<float> v, std::vector<uint64_t> v_shape, const AttentionCliOptions& o, int threads) {
  // No option counts as given: the shapes of q, k, v are the geometry.
  AttentionConfig c = parse_attention_options(o, no_options_given);
  if (c.dtypes.size() != 1) throw Error("give one dtype", "e.g. dtype=\"e4m3\"");
  if (c.taus.size() > 1) throw Error("give one tau", "e.g. tau=8");
  c.threads = threads;
  c.keep_outputs = true;
  c.tensors = {{q.data(), std::move(q_shape), "q"}, {k.data(), std::move(k_shape), "k"},
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
  const std::string stats = r.report.results["runs"][0].dump();
  return {std::move(run.o), std::move(run.lse), stats};
}

std::string check_py(const std::vector<std::string>& dtypes_in, const std::string& preset_in,
                     std::optional<double> tau, std::optional<double> max_offset) {
  std::vector<const Format*> dtypes;
  for (const auto& d : dtypes_in) dtypes.push_back(&parse_dtype("--dtype", d, FormatRole::attention_input));
  std::vector<std::string> presets;
  for (const auto& p : attention_presets()) presets.push_back(p.name);
  const std::string preset = parse_choice("--preset", preset_in, presets);
  Stopwatch sw;
  std::vector<double> taus;  // one tau here; the CLI's --tau takes a list
  if (tau) taus.push_back(*tau);
  const Report r = run_check(dtypes, preset, taus, max_offset);
  return envelope(r, sw.seconds()).dump();
}

// ---- online softmax (the simulator of `fa4sim rescale`, on a caller's score matrix)

struct SoftmaxOut {
  std::vector<float> o, lse;
  std::vector<uint8_t> flags;
  std::string counts;
};

SoftmaxOut online_softmax_py(In1<float> scores, int rows, int keys, std::optional<In1<float>> v, int d,
                             double tau, const std::string& dtype, std::optional<double> max_offset,
                             int block, int warp_rows, const std::string& exp, std::optional<double> scale,
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
  json j = {{"rows_pct", c.row_decisions ? 100.0 * double(c.row_rescales) / double(c.row_decisions) : 0.0},
            {"warps_pct", c.warp_decisions ? 100.0 * double(c.warp_rescales) / double(c.warp_decisions) : 0.0},
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
  out.counts = j.dump();
  return out;
}

// ---- roofline

std::string roofline_py(const RooflineCliOptions& c) {
  const RooflineOptions o = parse_roofline_options(c);
  Stopwatch sw;
  const Report r = run_roofline(o);
  return envelope(r, sw.seconds()).dump();
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

  m.def("ex2_emu", &ex2_emu_py, "x"_a.noconvert(), "out"_a.noconvert(), "degree"_a, "threads"_a);

  nb::class_<Exp2Options>(m, "Exp2Options")
      .def(nb::init<>())
      .def_rw("degree", &Exp2Options::degree)
      .def_rw("range", &Exp2Options::range)
      .def_rw("samples", &Exp2Options::samples)
      .def_rw("sampling", &Exp2Options::sampling)
      .def_rw("exhaustive", &Exp2Options::exhaustive)
      .def_rw("out_dtype", &Exp2Options::out_dtype)
      .def_rw("seed", &Exp2Options::seed)
      .def_rw("reference", &Exp2Options::reference)
      .def_prop_rw(
          "threads", [](const Exp2Options& o) { return o.common.threads; },
          [](Exp2Options& o, int t) { o.common.threads = t; });
  m.def("exp2_analysis", &exp2_analysis_py, "options"_a);

  m.def("fit", &fit_py, "degree"_a, "objective"_a, "lo"_a, "hi"_a, "fix_c0"_a, "minimax_only"_a, "threads"_a);
  m.def("fit_objective_names", &fit_objective_names);
  m.def("format_info", &format_info, "name"_a);
  m.def("format_names", static_cast<std::vector<std::string> (*)()>(&format_names));
  m.def("encode", &encode_py<uint8_t>, "x"_a.noconvert(), "out"_a.noconvert(), "fmt"_a, "overflow"_a,
        "rounding"_a, "seed"_a.none(), "threads"_a);
  m.def("encode", &encode_py<uint16_t>, "x"_a.noconvert(), "out"_a.noconvert(), "fmt"_a, "overflow"_a,
        "rounding"_a, "seed"_a.none(), "threads"_a);
  m.def("encode", &encode_py<uint32_t>, "x"_a.noconvert(), "out"_a.noconvert(), "fmt"_a, "overflow"_a,
        "rounding"_a, "seed"_a.none(), "threads"_a);
  m.def("decode", &decode_py<uint8_t>, "codes"_a.noconvert(), "out"_a.noconvert(), "fmt"_a, "threads"_a);
  m.def("decode", &decode_py<uint16_t>, "codes"_a.noconvert(), "out"_a.noconvert(), "fmt"_a, "threads"_a);
  m.def("decode", &decode_py<uint32_t>, "codes"_a.noconvert(), "out"_a.noconvert(), "fmt"_a, "threads"_a);
  m.def("quantize", &quantize_py, "x"_a.noconvert(), "out"_a.noconvert(), "fmt"_a, "overflow"_a,
        "rounding"_a, "seed"_a.none(), "threads"_a);

  nb::class_<AttentionCliOptions>(m, "AttentionOptions")
      .def(nb::init<>())
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
      [](In1<float> q, std::vector<uint64_t> qs, In1<float> k, std::vector<uint64_t> ks, In1<float> v,
         std::vector<uint64_t> vs, const AttentionCliOptions& o, int threads) {
        auto [out, lse, stats] = attention_py(q, std::move(qs), k, std::move(ks), v, std::move(vs), o, threads);
        return nb::make_tuple(to_numpy(std::move(out)), to_numpy(std::move(lse)), stats);
      },
      "q"_a.noconvert(), "q_shape"_a, "k"_a.noconvert(), "k_shape"_a, "v"_a.noconvert(), "v_shape"_a,
      "options"_a, "threads"_a);
  m.def("check", &check_py, "dtypes"_a, "preset"_a, "tau"_a.none(), "max_offset"_a.none());

  m.def(
      "online_softmax",
      [](In1<float> scores, int rows, int keys, std::optional<In1<float>> v, int d, double tau,
         const std::string& dtype, std::optional<double> max_offset, int block, int warp_rows,
         const std::string& exp, std::optional<double> scale, const std::string& order,
         bool allow_saturation, int threads) {
        SoftmaxOut r = online_softmax_py(scores, rows, keys, v, d, tau, dtype, max_offset, block, warp_rows,
                                         exp, scale, order, allow_saturation, threads);
        return nb::make_tuple(to_numpy(std::move(r.o)), to_numpy(std::move(r.lse)),
                              to_numpy_u8(std::move(r.flags)), r.counts);
      },
      "scores"_a.noconvert(), "rows"_a, "keys"_a, "v"_a.noconvert().none(), "d"_a, "tau"_a, "dtype"_a,
      "max_offset"_a.none(), "block"_a, "warp_rows"_a, "exp"_a, "scale"_a.none(), "order"_a,
      "allow_saturation"_a, "threads"_a);

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
