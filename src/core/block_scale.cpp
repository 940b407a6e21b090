// block_scale.cpp: the shell around block_scale.h: rule and format names, validation of a
// block format (each failure names the option that set it), and the row loops.
#include "fa4sim/core/block_scale.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/suggest.h"

namespace fa4sim {

namespace {

struct RuleName {
  ScaleRule rule;
  const char* name;
};
constexpr RuleName kRules[] = {{ScaleRule::floor, "floor"},
                               {ScaleRule::ceil, "ceil"},
                               {ScaleRule::even, "even"},
                               {ScaleRule::rceil, "rceil"},
                               {ScaleRule::nearest, "nearest"}};

struct NamedBlockFormat {
  const char* name;
  BlockFormat f;
};
const NamedBlockFormat kBlockFormats[] = {
    {"mxfp8", {&kE4M3, &kE8M0, 32, ScaleRule::floor, 1.0f}},
    {"mxfp8-e5m2", {&kE5M2, &kE8M0, 32, ScaleRule::floor, 1.0f}},
    {"mxfp6", {&kE2M3, &kE8M0, 32, ScaleRule::floor, 1.0f}},
    {"mxfp6-e3m2", {&kE3M2, &kE8M0, 32, ScaleRule::floor, 1.0f}},
    {"mxfp4", {&kE2M1, &kE8M0, 32, ScaleRule::floor, 1.0f}},
    {"nvfp4", {&kE2M1, &kE4M3, 16, ScaleRule::nearest, 1.0f}},
};

bool is_power_of_two_rule(ScaleRule r) { return r != ScaleRule::nearest; }

}  // namespace

const char* scale_rule_name(ScaleRule r) {
  for (const auto& x : kRules)
    if (x.rule == r) return x.name;
  return "?";
}

namespace {

// The names of a table's entries, and the entry called `name` (unknown: Error naming `option`).
template <class Entry, size_t N>
std::vector<std::string> names_of(const Entry (&table)[N]) {
  std::vector<std::string> v;
  for (const auto& x : table) v.emplace_back(x.name);
  return v;
}

template <class Entry, size_t N>
const Entry& find_named(const Entry (&table)[N], const std::string& name, const char* option) {
  for (const auto& x : table)
    if (name == x.name) return x;
  throw_unknown_choice(option, name, names_of(table));
}

}  // namespace

std::vector<std::string> scale_rule_names() { return names_of(kRules); }

ScaleRule scale_rule_by_name(const std::string& name) {
  return find_named(kRules, name, "--rule").rule;
}

std::vector<std::string> block_format_names() { return names_of(kBlockFormats); }

BlockFormat block_format_by_name(const std::string& name) {
  return find_named(kBlockFormats, name, "--format").f;
}

void validate_block_format(const BlockFormat& f) {
  const Format* elems[] = {&kE4M3, &kE5M2, &kE2M3, &kE3M2, &kE2M1};
  bool elem_ok = false;
  for (const Format* e : elems) elem_ok = elem_ok || e == f.elem;
  if (!elem_ok)
    throw Error(
        fmt::format("--elem {}: not an element format of a block-scaled type", f.elem->name),
        "use e4m3, e5m2, e2m3, e3m2 or e2m1");
  if (f.block_size < 1 || f.block_size > 4096)
    throw Error(fmt::format("--block {} is outside 1..4096", f.block_size), "MX uses 32, NVFP4 16");
  const Format& s = *f.scale;
  if (s.total_bits > 8)
    throw Error(fmt::format("--scale-format {}: a {}-bit scale is not stored by fa4sim's block "
                            "codes (uint8)",
                            s.name, s.total_bits),
                "use e8m0 (MX) or e4m3 (NVFP4)");
  const char* rule = scale_rule_name(f.rule);
  if (is_power_of_two_rule(f.rule) && &s != &kE8M0)
    throw Error(fmt::format("--scale-format {} cannot hold the '{}' rule's scales, powers of two "
                            "from 2^-127 to 2^127",
                            s.name, rule),
                "use --scale-format e8m0, or --rule nearest for a scale with a mantissa");
  if (!is_power_of_two_rule(f.rule) && (!s.has_sign || s.man_bits == 0))
    throw Error(
        fmt::format("--scale-format {} cannot hold the '{}' rule's scale amax / {}, "
                    "which is not a power of two",
                    s.name, rule, f.elem->max_finite),
        "use --scale-format e4m3 (NVFP4), or a power-of-two rule: floor, ceil, even, rceil");
  if (f.tensor_scale != 1.0f && is_power_of_two_rule(f.rule))
    throw Error(fmt::format("--tensor-scale is for the 'nearest' rule (NVFP4), not '{}'", rule),
                "drop --tensor-scale, or use --rule nearest");
  if (!(std::isfinite(f.tensor_scale) && f.tensor_scale > 0.0f))
    throw Error(fmt::format("--tensor-scale {} is not a finite positive number", f.tensor_scale),
                "give a value > 0, or 'auto'");
}

namespace {

void check_rows(const BlockFormat& f, size_t n, size_t row_len) {
  if (row_len == 0 || n % row_len != 0)
    throw Error(fmt::format("{} values do not form rows of {}", n, row_len),
                "the last dimension is the row");
  if (row_len % size_t(f.block_size) != 0)
    throw Error(fmt::format("--block {} does not divide the row length {}", f.block_size, row_len),
                fmt::format("pick a block size that divides {} (MX: 32, NVFP4: 16)", row_len));
}

void check_span(size_t got, size_t want, const char* what) {
  if (got != want)
    throw Error(fmt::format("block arrays: {} has {} elements, expected {}", what, got, want),
                "size codes like the input and scales as input / block size");
}

}  // namespace

namespace {

// Element codes of x[0..n) as uint32 first: a uint8 output would make the vector width 64
// elements (AVX-512), more than a 16- or 32-element block, and leave the loop scalar.
template <const Format* E, class Scale>
void encode_elements(const float* x, size_t n, uint8_t* c, Scale scale_one) {
  uint32_t tmp[64];
  for (size_t j = 0; j < n; j += 64) {
    const size_t m = n - j < 64 ? n - j : 64;
    for (size_t i = 0; i < m; ++i) tmp[i] = encode(*E, scale_one(x[j + i]), Overflow::satfinite);
    for (size_t i = 0; i < m; ++i) c[j + i] = uint8_t(tmp[i]);
  }
}

// The scale code and the element multiplier r of one block (block_encode's first half).
template <const Format* E>
void block_scale_and_r(const BlockFormat& f, const float* x, uint32_t& sc, float& r) {
  const float amax = block_detail::max_abs(x, size_t(f.block_size));
  if (f.rule != ScaleRule::nearest) {
    sc = mx_scale_code(*E, f.rule, amax);
    r = block_detail::e8m0_reciprocal(sc);
    return;
  }
  // NVFP4's E4M3 scale as a compile-time format too.
  const bool e4 = f.scale == &kE4M3;
  sc = e4 ? nv_scale_code(kE4M3, *E, amax, f.tensor_scale)
          : nv_scale_code(*f.scale, *E, amax, f.tensor_scale);
  const float s = e4 ? decode(kE4M3, sc) : decode(*f.scale, sc);
  r = f.tensor_scale != 1.0f ? (1.0f / f.tensor_scale) / s : 1.0f / s;
}

// block_encode() for every block, with the element format a compile-time constant so that the
// element loop folds its shifts and vectorises; the same operations in the same order (the
// test BlockScale.ArraysEqualTheCore checks it bit for bit). The scales of a batch of blocks
// come first, in a loop of independent iterations (their divisions overlap), then the elements.
template <const Format* E>
void encode_blocks(const BlockFormat& f, const float* in, size_t nb, uint8_t* codes,
                   uint8_t* scales) {
  const size_t bs = size_t(f.block_size);
  const float lim = float(E->max_finite);
  constexpr size_t kBatch = 256;
  uint32_t sc[kBatch];
  float rs[kBatch];
  for (size_t b0 = 0; b0 < nb; b0 += kBatch) {
    const size_t n = nb - b0 < kBatch ? nb - b0 : kBatch;
    for (size_t k = 0; k < n; ++k) block_scale_and_r<E>(f, in + (b0 + k) * bs, sc[k], rs[k]);
    for (size_t k = 0; k < n; ++k) {
      const size_t b = b0 + k;
      const float* x = in + b * bs;
      uint8_t* c = codes + b * bs;
      const float r = rs[k];
      scales[b] = uint8_t(sc[k]);
      if (f.rule != ScaleRule::nearest) {
        encode_elements<E>(x, bs, c, [r](float v) { return v * r; });
      } else if (r != r) {  // NaN scale: every x * r is NaN, which clampf keeps
        encode_elements<E>(x, bs, c, [r](float) { return r; });
      } else {
        // r > 0 finite and x not NaN (a NaN x makes the scale NaN), so x * r is never NaN and
        // clampf is a plain min/max, which vectorises.
        encode_elements<E>(x, bs, c, [r, lim](float v) {
          const float y = v * r;
          const float lo = -lim > y ? -lim : y;  // maxps / minps
          return lim < lo ? lim : lo;
        });
      }
    }
  }
}

}  // namespace

void block_encode_array(const BlockFormat& f, std::span<const float> in, size_t row_len,
                        std::span<uint8_t> codes, std::span<uint8_t> scales) {
  validate_block_format(f);
  check_rows(f, in.size(), row_len);
  const size_t nb = in.size() / size_t(f.block_size);
  check_span(codes.size(), in.size(), "codes");
  check_span(scales.size(), nb, "scales");
  const float* x = in.data();
  if (f.elem == &kE4M3) return encode_blocks<&kE4M3>(f, x, nb, codes.data(), scales.data());
  if (f.elem == &kE5M2) return encode_blocks<&kE5M2>(f, x, nb, codes.data(), scales.data());
  if (f.elem == &kE2M3) return encode_blocks<&kE2M3>(f, x, nb, codes.data(), scales.data());
  if (f.elem == &kE3M2) return encode_blocks<&kE3M2>(f, x, nb, codes.data(), scales.data());
  encode_blocks<&kE2M1>(f, x, nb, codes.data(), scales.data());  // validated: the last one
}

void block_decode_array(const BlockFormat& f, std::span<const uint8_t> codes, size_t row_len,
                        std::span<const uint8_t> scales, std::span<float> out) {
  validate_block_format(f);
  check_rows(f, codes.size(), row_len);
  const size_t bs = size_t(f.block_size), nb = codes.size() / bs;
  check_span(out.size(), codes.size(), "output");
  check_span(scales.size(), nb, "scales");
  std::vector<uint32_t> c(bs);
  for (size_t b = 0; b < nb; ++b) {
    for (size_t i = 0; i < bs; ++i) c[i] = codes[b * bs + i];
    block_decode(f, scales[b], c.data(), out.data() + b * bs);
  }
}

uint64_t block_round(const BlockFormat& f, const float* x, size_t n, float* out) {
  const size_t bs = size_t(f.block_size);
  std::vector<float> buf(bs), dec(bs);
  std::vector<uint32_t> codes(bs);
  const Format& e = *f.elem;
  // max_elem + half an ulp at max_elem: every |y| from here clips (Note [MX scale rules]).
  const float clip = float(
      e.max_finite + std::ldexp(1.0, int(std::floor(std::log2(e.max_finite))) - e.man_bits - 1));
  uint64_t saturated = 0;
  for (size_t b = 0; b < n; b += bs) {
    const size_t m = n - b < bs ? n - b : bs;
    std::copy_n(x + b, m, buf.begin());
    std::fill(buf.begin() + std::ptrdiff_t(m), buf.end(), 0.0f);
    const uint32_t sc = block_encode(f, buf.data(), codes.data());
    block_decode(f, sc, codes.data(), dec.data());
    const float s = block_scale_value(f, sc);
    for (size_t i = 0; i < m; ++i) saturated += std::fabs(buf[i]) >= clip * s ? 1 : 0;
    std::copy_n(dec.begin(), m, out + b);
  }
  return saturated;
}

float tensor_scale_from_amax(const BlockFormat& f, std::span<const float> in) {
  const float amax = block_detail::max_abs(in.data(), in.size());
  const float t = amax / float(f.scale->max_finite * f.elem->max_finite);
  if (!(std::isfinite(t) && t > 0.0f))
    throw Error(
        fmt::format("--tensor-scale auto: the tensor's amax {} gives the tensor scale {}", amax, t),
        "give --tensor-scale VALUE, or leave it out for one-level scaling");
  return t;
}

}  // namespace fa4sim
