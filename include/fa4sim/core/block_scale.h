// block_scale.h: block-scaled formats (OCP MX: MXFP8, MXFP6, MXFP4; NVIDIA NVFP4): one shared
// scale per block of `block_size` consecutive elements of a row, elements in a narrow format.
//
// Models: torchao's reference quantisers, bit for bit (scripts/check/check_block_scale.py checks it):
//   * MX (E8M0 scale): `to_mx` in torchao/prototype/mx_formats/mx_tensor.py@36027d8
//     (https://github.com/pytorch/ao/blob/36027d82d1ad9949597ea16002ff4940374b1b94/torchao/prototype/mx_formats/mx_tensor.py),
//     scale rules FLOOR, CEIL, EVEN and RCEIL (ScaleCalculationMode in config.py there);
//   * NVFP4 (E4M3 scale, optional FP32 tensor scale): `nvfp4_quantize` and
//     `per_tensor_amax_to_scale` in torchao/prototype/mx_formats/nvfp4_tensor.py@36027d8.
// Does not model: scale swizzling and fp4 packing (layouts, not numerics), stochastic rounding,
// the bf16 inputs torchao also takes (fa4sim reads float32), MX's block scales of 2-D tiles.
//
// Note [MX scale rules]
// amax = max |x| over the block (NaN if any element is NaN, inf if any is inf). emax_elem is the
// exponent of the element format's largest power of two (8 E4M3, 15 E5M2, 2 E2M3, 4 E3M2,
// 2 E2M1). The scale is 2^s with s clamped to E8M0's [-127, 127]:
//   floor: s = floor(log2 amax) - emax_elem, read from amax's float32 exponent field (a float32
//          subnormal or zero amax counts as 2^-127). OCP MX v1.0 section 6.3,
//          https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf
//          Elements beyond max_elem (amax up to (2 - ulp) 2^emax_elem after scaling) saturate.
//   ceil:  s = ceil(log2 amax) - emax_elem: floor, plus one when amax's mantissa field is nonzero
//          (torchao CEIL).
//   even:  amax's significand is first rounded to the element's mantissa width (add half an
//          element ulp to the float32 bits, drop the mantissa), then floor (torchao EVEN). A
//          finite amax that rounds up to 2^128 (float32 bits 0x7F800000, inf's) has floor log2
//          128: scale 2^(128 - emax_elem), as the exact rule and torchao 0.18.0 give
//          (torchao@36027d8 gave such a block of finite values the NaN scale).
//   rceil: s = the E8M0 round-up of descale = fl32(amax * fl32(1 / max_elem)): the exponent of
//          descale plus one if any mantissa bit is set (float32 subnormals: if above 2^-127).
//          This is cuBLAS's 1D block quantisation rule
//          (https://docs.nvidia.com/cuda/cublas/#d-block-quantization) and cuDNN's
//          scale = round_up(amax / max_elem), the `cvt.rp.satfinite.ue8m0x2.f32` of Blackwell;
//          torchao RCEIL. No element saturates beyond rounding.
// A non-finite amax gives the NaN scale 0xFF: every element of the block decodes to NaN.
// Elements: y = fl32(x * 2^-s) (one float32 multiply by the E8M0 reciprocal, which can round
// when y is a float32 subnormal, as torchao's does), then encode(elem, y, satfinite).
//
// Note [NVFP4 scale]
// Scale format E4M3 (positive values only), elements E2M1, block 16. With no tensor scale:
//   bs = fl32(amax / 6); scale = e4m3(clamp(bs, 2^-6, 448)) (round to nearest even);
//   y = fl32(x * fl32(1 / scale)); code = e2m1(clamp(y, -6, 6)).
// With a tensor scale t (float32, > 0; torchao's per_tensor_amax_to_scale gives
// t = fl32(amax_tensor / 2688), 2688 = 448 * 6):
//   scale = e4m3(clamp(fl32(bs / t), 2^-6, 448)); y = fl32(x * fl32(fl32(1 / t) / scale)).
// The decoded value is fl32(elem * fl32(scale * t)) (t = 1 without a tensor scale).
// clamp() keeps NaN (torch.clamp): a NaN amax gives the E4M3 NaN scale 0x7F, the block decodes
// to NaN; an infinite amax gives scale 448 and the inf element becomes +-6.
//
// Contracts (block_encode / block_decode):
// Inputs:      any float32 bit patterns; block_size >= 1 (the shell checks block sizes and that
//              the rule fits the scale format: Note [MX scale rules] needs E8M0, `nearest` a
//              scale format with a mantissa).
// Bit-exact vs: torchao's reference code (above), scale codes and element codes of every block
//              whose scale is not NaN; NaN-scale blocks: the scale code, and all elements decode
//              to NaN (torchao's element codes there are whatever its bit tricks make of NaN).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fa4sim/core/formats.h"
#include "fa4sim/core/hd.h"

namespace fa4sim {

// floor/ceil/even/rceil: E8M0 power-of-two scales (Note [MX scale rules]); nearest: amax/max_elem
// rounded to nearest in the scale format (NVFP4's E4M3, Note [NVFP4 scale]).
enum class ScaleRule : uint8_t { floor, ceil, even, rceil, nearest };

struct BlockFormat {
  const Format* elem = &kE4M3;
  const Format* scale = &kE8M0;
  int block_size = 32;
  ScaleRule rule = ScaleRule::floor;
  float tensor_scale = 1.0f;  // rule nearest only: the FP32 tensor scale t (1 = none)
};

namespace block_detail {

// max |x| over x[0..n), NaN if any x is NaN (torch.amax). On the bits: |x| as an unsigned
// integer orders like |x| for numbers, and every NaN (0x7F800001..0x7FFFFFFF) lies above +inf, so
// the integer max is the float max, or a NaN when there is one (its payload is not used).
FA4_HD float max_abs(const float* x, size_t n) {
  uint32_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t a = f32_bits(x[i]) & 0x7FFFFFFFu;
    m = a > m ? a : m;
  }
  return f32_from_bits(m);
}

FA4_HD float clampf(float v, float lo, float hi) {  // torch.clamp: NaN stays NaN
  return v != v ? v : (v < lo ? lo : (v > hi ? hi : v));
}

// 2^(127 - code) as float32 (torchao's _e8m0_scale_to_reciprocal_fp32): code 0xFF -> NaN.
FA4_HD float e8m0_reciprocal(uint32_t code) {
  if (code == 0xFFu) return f32_from_bits(0x7FC00000u);
  return decode(kE8M0, 254u - code);
}

}  // namespace block_detail

// The E8M0 scale code of a block with max |x| = amax (Note [MX scale rules]).
FA4_HD uint32_t mx_scale_code(const Format& elem, ScaleRule rule, float amax) {
  uint32_t bits = f32_bits(amax);
  if (rule == ScaleRule::rceil) {
    const float descale = amax * float(1.0 / elem.max_finite);
    const uint32_t d = f32_bits(descale);
    if ((d & 0x7F800000u) == 0x7F800000u) return 0xFFu;  // inf or NaN
    const uint32_t e = d >> 23, m = d & 0x7FFFFFu;
    return e + (e == 0 ? (m > 0x400000u ? 1u : 0u) : (m != 0 ? 1u : 0u));
  }
  if (rule == ScaleRule::even && (bits & 0x7F800000u) != 0x7F800000u) {
    bits = (bits + (1u << (23 - elem.man_bits - 1))) & 0xFF800000u;
    // Rounded up to 2^128 (Note [MX scale rules]): s = 128 - emax, at most 128 - 2.
    if ((bits & 0x7F800000u) == 0x7F800000u) return uint32_t(128 - elem.emax + 127);
  }
  if ((bits & 0x7F800000u) == 0x7F800000u) return 0xFFu;  // amax inf or NaN
  int s = int((bits >> 23) & 0xFFu) - 127;
  if (rule == ScaleRule::ceil && (bits & 0x7FFFFFu) != 0) s += 1;
  s -= elem.emax;
  s = s < -127 ? -127 : (s > 128 ? 128 : s);
  return uint32_t(s + 127);
}

// The E4M3 scale code (Note [NVFP4 scale]).
FA4_HD uint32_t nv_scale_code(const Format& scale, const Format& elem, float amax, float t) {
  float bs = amax / float(elem.max_finite);
  if (t != 1.0f) bs = bs / t;
  bs = block_detail::clampf(bs, float(scale.min_normal), float(scale.max_finite));
  return encode(scale, bs, Overflow::satfinite);
}

// Encodes one block of f.block_size floats: element codes into `codes`, returns the scale code.
FA4_HD uint32_t block_encode(const BlockFormat& f, const float* x, uint32_t* codes) {
  const int n = f.block_size;
  const float amax = block_detail::max_abs(x, n);
  if (f.rule != ScaleRule::nearest) {
    const uint32_t sc = mx_scale_code(*f.elem, f.rule, amax);
    const float r = block_detail::e8m0_reciprocal(sc);
    for (int i = 0; i < n; ++i) codes[i] = encode(*f.elem, x[i] * r, Overflow::satfinite);
    return sc;
  }
  const uint32_t sc = nv_scale_code(*f.scale, *f.elem, amax, f.tensor_scale);
  const float s = decode(*f.scale, sc);
  const float r = f.tensor_scale != 1.0f ? (1.0f / f.tensor_scale) / s : 1.0f / s;
  const float lim = float(f.elem->max_finite);
  for (int i = 0; i < n; ++i)
    codes[i] = encode(*f.elem, block_detail::clampf(x[i] * r, -lim, lim), Overflow::satfinite);
  return sc;
}

// The float32 value of a scale code: 2^(code - 127) (E8M0), or fl32(scale * tensor_scale).
FA4_HD float block_scale_value(const BlockFormat& f, uint32_t scale_code) {
  const float s = decode(*f.scale, scale_code);
  return f.rule == ScaleRule::nearest && f.tensor_scale != 1.0f ? s * f.tensor_scale : s;
}

// Decodes one block: out[i] = fl32(decode(elem, codes[i]) * scale value).
FA4_HD void block_decode(const BlockFormat& f, uint32_t scale_code, const uint32_t* codes,
                         float* out) {
  const float s = block_scale_value(f, scale_code);
  for (int i = 0; i < f.block_size; ++i) out[i] = decode(*f.elem, codes[i]) * s;
}

}  // namespace fa4sim

// ---- Non-core shell (src/core/block_scale.cpp): names, validation, row loops. Host only; these
// allocate or throw fa4sim::Error (exit code 2 in the CLI, ValueError in Python).
#include <span>
#include <string>
#include <vector>

namespace fa4sim {

const char* scale_rule_name(ScaleRule r);
ScaleRule scale_rule_by_name(const std::string& name);  // unknown: Error naming --rule
std::vector<std::string> scale_rule_names();

// Named block formats: mxfp8 (e4m3), mxfp8-e5m2, mxfp6 (e2m3), mxfp6-e3m2, mxfp4 (e2m1): E8M0,
// block 32, rule floor; nvfp4: e2m1, E4M3 scale, block 16, rule nearest.
BlockFormat block_format_by_name(const std::string& name);  // unknown: Error naming --format
std::vector<std::string> block_format_names();

// Checks a block format before any work: element format one of e4m3, e5m2, e2m3, e3m2, e2m1
// (--elem); a scale format of at most 8 bits that can hold the rule's result (E8M0 for floor,
// ceil, even, rceil; a format with a mantissa for nearest) (--scale-format); block size
// 1..4096 (--block); tensor scale finite and > 0, only with rule nearest (--tensor-scale).
void validate_block_format(const BlockFormat& f);

// Encodes rows of `row_len` floats (in.size() a multiple of row_len; row_len a multiple of the
// block size, else Error naming --block): codes[i] per element, scales[b] per block in row-major
// block order. Spans must be sized in.size() and in.size() / block_size.
void block_encode_array(const BlockFormat& f, std::span<const float> in, size_t row_len,
                        std::span<uint8_t> codes, std::span<uint8_t> scales);
void block_decode_array(const BlockFormat& f, std::span<const uint8_t> codes, size_t row_len,
                        std::span<const uint8_t> scales, std::span<float> out);

// Quantise-dequantise: x[0..n) block by block through block_encode and block_decode, the decoded
// values to out[0..n) (out may alias x); a last partial block is padded with zeros, which leave
// its amax unchanged. Returns how many elements saturated: |x| beyond the block's largest value
// (max_elem * scale) by more than rounding, i.e. at or above the midpoint between max_elem and
// the next power of two's first value. Expects a validated format (validate_block_format).
uint64_t block_round(const BlockFormat& f, const float* x, size_t n, float* out);

// torchao's per_tensor_amax_to_scale generalised: fl32(amax / fl32(scale max * elem max)),
// 2688 for NVFP4. amax is max |x| over `in` (NaN if any NaN). Error when the result is not a
// finite positive number (an all-zero or non-finite tensor).
float tensor_scale_from_amax(const BlockFormat& f, std::span<const float> in);

}  // namespace fa4sim
