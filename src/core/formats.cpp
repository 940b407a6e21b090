// formats.cpp: the shell around the header-only formats core: name lookup, validation of
// hand-made formats, and the array loops. The loops call the FA4_HD scalar functions; for the
// five named formats the format is a compile-time constant, so shifts and limits fold and the
// branch-free encode() vectorises (AVX2 with -march=native).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/util/suggest.h"

namespace fa4sim {

const std::vector<const Format*>& all_formats() {
  static const std::vector<const Format*> kAll = {&kFP32, &kBF16, &kFP16, &kE4M3, &kE5M2,
                                                  &kE2M1, &kE2M3, &kE3M2, &kE8M0};
  return kAll;
}

std::vector<std::string> format_names() { return format_names(all_formats()); }

const char* overflow_name(Overflow ov) { return ov == Overflow::satfinite ? "satfinite" : "ieee"; }

Overflow overflow_by_name(const std::string& name) {
  if (name == "satfinite") return Overflow::satfinite;
  if (name == "ieee") return Overflow::ieee;
  throw_unknown_choice("overflow mode", name, {"satfinite", "ieee"});
}

const Format& format_by_name(const std::string& name) {
  for (const Format* f : all_formats())
    if (name == f->name) return *f;
  // The spellings of ml_dtypes and numpy, for users coming from there.
  static const std::pair<const char*, const Format*> kAliases[] = {
      {"float8_e4m3fn", &kE4M3},  {"e4m3fn", &kE4M3},        {"float8_e5m2", &kE5M2},
      {"bfloat16", &kBF16},       {"float16", &kFP16},       {"half", &kFP16},
      {"float32", &kFP32},        {"float", &kFP32},         {"float4_e2m1fn", &kE2M1},
      {"e2m1fn", &kE2M1},         {"fp4", &kE2M1},           {"float6_e2m3fn", &kE2M3},
      {"e2m3fn", &kE2M3},         {"float6_e3m2fn", &kE3M2}, {"e3m2fn", &kE3M2},
      {"float8_e8m0fnu", &kE8M0}, {"e8m0fnu", &kE8M0},       {"ue8m0", &kE8M0},
  };
  for (const auto& [alias, f] : kAliases)
    if (name == alias) return *f;
  throw_unknown_choice("dtype", name, format_names());
}

// ---- roles

namespace {
// The kernel's input types (docs/facts.md §2): FA4's forward takes 16-bit and FP8 Q, K, V and
// converts P to the same type. The one place that says which formats play this role.
bool is_attention_input(const Format* f) {
  return f == &kBF16 || f == &kFP16 || f == &kE4M3 || f == &kE5M2;
}
}  // namespace

const std::vector<const Format*>& formats_of(FormatRole role) {
  static const std::vector<const Format*> kAttentionInput = [] {
    std::vector<const Format*> v;
    for (const Format* f : all_formats())
      if (is_attention_input(f)) v.push_back(f);
    return v;
  }();
  // fp32 last: "no cast" is the odd one out, and the options list it after the casts.
  static const std::vector<const Format*> kPCast = [] {
    std::vector<const Format*> v = kAttentionInput;
    v.push_back(&kFP32);
    return v;
  }();
  return role == FormatRole::attention_input ? kAttentionInput : kPCast;
}

bool plays(const Format& f, FormatRole role) {
  const auto& list = formats_of(role);
  return std::find(list.begin(), list.end(), &f) != list.end();
}

std::vector<std::string> format_names(const std::vector<const Format*>& formats) {
  std::vector<std::string> names;
  for (const Format* f : formats) names.emplace_back(f->name);
  return names;
}

std::vector<std::string> format_names(FormatRole role) { return format_names(formats_of(role)); }

void require_overflow_mode(const Format& f, Overflow ov) {
  if (ov == Overflow::ieee && f.nan_encoding == NanEncoding::none)
    throw Error(fmt::format("overflow mode ieee: {} has no inf and no NaN, so overflow can only "
                            "saturate",
                            f.name),
                "use satfinite, its only overflow rule");
}

void require_stochastic_rounding(const Format& f) {
  if (!f.has_sign || f.nan_encoding == NanEncoding::none)
    throw Error(fmt::format("stochastic rounding to the MX format {} is not modelled", f.name),
                "use round to nearest");
}

std::vector<std::string> validate(const Format& f) {
  std::vector<std::string> errs;
  const std::string n = f.name ? f.name : "(unnamed)";
  if (f.exp_bits < 2 || f.exp_bits > 8)
    errs.push_back(fmt::format("{}: exp_bits = {} is outside 2..8", n, f.exp_bits));
  if (f.has_sign && (f.man_bits < 1 || f.man_bits > 23))
    errs.push_back(fmt::format("{}: man_bits = {} is outside 1..23", n, f.man_bits));
  if (!f.has_sign && (f.man_bits != 0 || f.nan_encoding != NanEncoding::all_ones || f.has_inf))
    errs.push_back(
        fmt::format("{}: an unsigned format is E8M0-style: man_bits 0, all-ones NaN, "
                    "no inf",
                    n));
  if (!errs.empty()) return errs;  // the rest would shift by nonsense
  if (f.total_bits != int(f.has_sign) + f.exp_bits + f.man_bits)
    errs.push_back(
        fmt::format("{}: total_bits = {} is not sign + exp_bits + man_bits", n, f.total_bits));
  if (f.nan_encoding == NanEncoding::none && f.has_inf)
    errs.push_back(fmt::format("{}: a format without NaN (MX FP4/FP6 style) has no inf", n));
  if (f.nan_encoding == NanEncoding::all_ones && f.has_inf)
    errs.push_back(fmt::format("{}: an all-ones-NaN format (E4M3FN style) has no inf", n));
  if (f.nan_encoding == NanEncoding::ieee && !f.has_inf)
    errs.push_back(fmt::format("{}: an IEEE-NaN format reserves the all-ones exponent for inf", n));
  // Every value must be a float32 (decode is exact, encode's shifts stay in range):
  // emax <= 127 and the min subnormal >= 2^-149.
  const Format d =
      make_format(f.name, f.exp_bits, f.man_bits, f.bias, f.has_inf, f.nan_encoding, f.has_sign);
  if (d.emax > 127 || d.emin - f.man_bits < -149)
    errs.push_back(fmt::format("{}: range 2^{}..2^{} is not inside float32's 2^-149..2^127", n,
                               d.emin - f.man_bits, d.emax));
  if (d.max_code != f.max_code || d.nan_code != f.nan_code || d.inf_code != f.inf_code ||
      d.max_finite != f.max_finite || d.min_subnormal != f.min_subnormal || d.emin != f.emin)
    errs.push_back(
        fmt::format("{}: derived limits differ from make_format(); build it with "
                    "make_format()",
                    n));
  return errs;
}

// ---- array loops

// A baseline build (the wheel, FA4SIM_RUNTIME_DISPATCH) compiles the public array loops twice,
// for the baseline and for AVX2, and the loader picks one per CPU (GCC's target_clones: an
// ifunc); flatten inlines the per-element conversion into each copy so that the AVX2 copy's loop
// is vectorised as in a -march=native build. Lane-wise integer ops, compares and IEEE float ops
// without contraction (-ffp-contract=off): the same bits in every copy. A native build flattens
// too: without it GCC calls the per-element encode out of line for some formats (a scalar loop,
// a call per element: 3x the time of the inlined, vectorised loop over all 2^32 inputs).
#if FA4SIM_RUNTIME_DISPATCH && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FA4SIM_ARRAY_CLONES [[gnu::target_clones("avx2", "default"), gnu::flatten]]
#elif defined(__GNUC__)
#define FA4SIM_ARRAY_CLONES [[gnu::flatten]]
#else
#define FA4SIM_ARRAY_CLONES
#endif

namespace {

// The format either as a compile-time constant (named formats) or at run time.
template <const Format* P>
struct ConstFormat {
  static constexpr const Format* ptr = P;
  static constexpr const Format& get() { return *P; }
};
struct RuntimeFormat {
  const Format* p;
  const Format& get() const { return *p; }
};

bool same_format(const Format& a, const Format& b) {
  return a.exp_bits == b.exp_bits && a.man_bits == b.man_bits && a.bias == b.bias &&
         a.has_inf == b.has_inf && a.nan_encoding == b.nan_encoding && a.max_code == b.max_code &&
         a.nan_code == b.nan_code && a.inf_code == b.inf_code && a.total_bits == b.total_bits &&
         a.has_sign == b.has_sign;
}

template <class Body>
void with_format(const Format& f, Body&& body) {
  if (same_format(f, kE4M3)) return body(ConstFormat<&kE4M3>{});
  if (same_format(f, kE5M2)) return body(ConstFormat<&kE5M2>{});
  if (same_format(f, kBF16)) return body(ConstFormat<&kBF16>{});
  if (same_format(f, kFP16)) return body(ConstFormat<&kFP16>{});
  if (same_format(f, kFP32)) return body(ConstFormat<&kFP32>{});
  if (same_format(f, kE2M1)) return body(ConstFormat<&kE2M1>{});
  if (same_format(f, kE2M3)) return body(ConstFormat<&kE2M3>{});
  if (same_format(f, kE3M2)) return body(ConstFormat<&kE3M2>{});
  if (same_format(f, kE8M0)) return body(ConstFormat<&kE8M0>{});
  const auto errs = validate(f);
  if (!errs.empty()) throw Error(fmt::format("invalid number format: {}", errs.front()));
  return body(RuntimeFormat{&f});
}

void check_sizes(size_t in, size_t out, const char* what) {
  if (in != out)
    throw Error(fmt::format("{}: output has {} elements for {} inputs", what, out, in),
                "size the output like the input");
}

template <class T>
void encode_array_impl(const Format& f, std::span<const float> in, std::span<T> out, Overflow ov) {
  check_sizes(in.size(), out.size(), "encode_array");
  if (f.total_bits > int(8 * sizeof(T)))
    throw Error(fmt::format("encode_array: {}-bit format {} into {}-bit outputs", f.total_bits,
                            f.name, 8 * sizeof(T)),
                "use a wider output element type");
  require_overflow_mode(f, ov);
  with_format(f, [&](auto fmt_) {
    const float* src = in.data();
    T* dst = out.data();
    const size_t n = in.size();
    if (ov == Overflow::satfinite) {
      for (size_t i = 0; i < n; ++i) dst[i] = T(encode(fmt_.get(), src[i], Overflow::satfinite));
    } else {
      for (size_t i = 0; i < n; ++i) dst[i] = T(encode(fmt_.get(), src[i], Overflow::ieee));
    }
  });
}

}  // namespace

FA4SIM_ARRAY_CLONES void encode_array(const Format& f, std::span<const float> in,
                                      std::span<uint32_t> out, Overflow ov) {
  encode_array_impl(f, in, out, ov);
}
FA4SIM_ARRAY_CLONES void encode_array(const Format& f, std::span<const float> in,
                                      std::span<uint16_t> out, Overflow ov) {
  encode_array_impl(f, in, out, ov);
}
FA4SIM_ARRAY_CLONES void encode_array(const Format& f, std::span<const float> in,
                                      std::span<uint8_t> out, Overflow ov) {
  encode_array_impl(f, in, out, ov);
}

namespace {

template <class T>
void decode_array_impl(const Format& f, std::span<const T> bits, std::span<float> out) {
  check_sizes(bits.size(), out.size(), "decode_array");
  with_format(f, [&](auto fmt_) {
    for (size_t i = 0; i < bits.size(); ++i) out[i] = decode(fmt_.get(), uint32_t(bits[i]));
  });
}

}  // namespace

FA4SIM_ARRAY_CLONES void decode_array(const Format& f, std::span<const uint32_t> bits,
                                      std::span<float> out) {
  decode_array_impl(f, bits, out);
}
FA4SIM_ARRAY_CLONES void decode_array(const Format& f, std::span<const uint16_t> bits,
                                      std::span<float> out) {
  decode_array_impl(f, bits, out);
}
FA4SIM_ARRAY_CLONES void decode_array(const Format& f, std::span<const uint8_t> bits,
                                      std::span<float> out) {
  decode_array_impl(f, bits, out);
}

namespace {

// decode() of every code of a named format of 8 or 16 bits, built once (a function-local static:
// thread-safe, shared by the target_clones copies of quantize_array, which call it out of line).
template <const Format* P>
[[gnu::noinline]] const float* decode_table() {
  static_assert(P->total_bits <= 16);
  static const std::vector<float> table = [] {
    std::vector<float> t(size_t(1) << P->total_bits);
    for (uint32_t c = 0; c < t.size(); ++c) t[c] = decode(*P, c);
    return t;
  }();
  return table.data();
}

// quantize() = decode(encode()) over an array. For the named signed formats of up to 16 bits,
// block by block: the codes by the vectorised encode loop, then decode() of each code read from
// the table above (the same values: the table holds decode() of every code; decode() itself has
// branches and a float product that keep its loop scalar, 2-4x the time of encode's). fp32,
// E8M0 (its decode is a shift that vectorises: the table is slower) and run-time formats keep
// decode(encode()) per element.
template <class F>
constexpr bool quantizes_by_table() {
  if constexpr (requires { F::ptr; })
    return F::ptr->total_bits <= 16 && F::ptr->has_sign;
  else
    return false;
}

template <const Format* P, Overflow kOv>
void quantize_by_table(const float* src, float* dst, size_t n) {
  constexpr uint32_t kMask = (uint32_t(1) << P->total_bits) - 1u;
  constexpr size_t kBlock = 1024;
  const float* table = decode_table<P>();
  uint32_t codes[kBlock];
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t m = std::min(kBlock, n - b);
    for (size_t i = 0; i < m; ++i) codes[i] = encode(*P, src[b + i], kOv) & kMask;
    for (size_t i = 0; i < m; ++i) dst[b + i] = table[codes[i]];
  }
}

}  // namespace

FA4SIM_ARRAY_CLONES void quantize_array(const Format& f, std::span<const float> in,
                                        std::span<float> out, Overflow ov) {
  check_sizes(in.size(), out.size(), "quantize_array");
  require_overflow_mode(f, ov);
  with_format(f, [&](auto fmt_) {
    // One loop per overflow mode, as encode_array: the mode is a constant in each.
    const float* src = in.data();
    float* dst = out.data();
    const size_t n = in.size();
    using F = decltype(fmt_);
    if constexpr (quantizes_by_table<F>()) {
      if (ov == Overflow::satfinite)
        quantize_by_table<F::ptr, Overflow::satfinite>(src, dst, n);
      else
        quantize_by_table<F::ptr, Overflow::ieee>(src, dst, n);
    } else if (ov == Overflow::satfinite) {
      for (size_t i = 0; i < n; ++i) dst[i] = quantize(fmt_.get(), src[i], Overflow::satfinite);
    } else {
      for (size_t i = 0; i < n; ++i) dst[i] = quantize(fmt_.get(), src[i], Overflow::ieee);
    }
  });
}

void encode_sr_array(const Format& f, std::span<const float> in, std::span<uint32_t> out,
                     Overflow ov, uint64_t seed, uint64_t first_index) {
  check_sizes(in.size(), out.size(), "encode_sr_array");
  require_overflow_mode(f, ov);
  require_stochastic_rounding(f);
  with_format(f, [&](auto fmt_) {
    for (size_t i = 0; i < in.size(); ++i)
      out[i] = encode_sr(fmt_.get(), in[i], ov, sr_random_bits(seed, first_index + i));
  });
}

void quantize_sr_array(const Format& f, std::span<const float> in, std::span<float> out,
                       Overflow ov, uint64_t seed, uint64_t first_index) {
  check_sizes(in.size(), out.size(), "quantize_sr_array");
  require_overflow_mode(f, ov);
  require_stochastic_rounding(f);
  with_format(f, [&](auto fmt_) {
    for (size_t i = 0; i < in.size(); ++i)
      out[i] = decode(fmt_.get(),
                      encode_sr(fmt_.get(), in[i], ov, sr_random_bits(seed, first_index + i)));
  });
}

}  // namespace fa4sim
