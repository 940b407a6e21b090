// sm90_forward.cpp: upstream's sm90 forward softmax, operation for operation (see sm90_forward.h,
// which cites each step to upstream's source).
#include "fa4sim/analysis/sm90_forward.h"

#include <algorithm>
#include <cmath>

#include "fa4sim/core/constants.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/online_softmax.h"
#include "fa4sim/core/wgmma_model.h"

namespace fa4sim {

float Sm90Gemm::qk(const float* q, const float* k, int d) const {
  double acc = 0;
  for (int x = 0; x < d; ++x) acc += double(q[x]) * double(k[x]);
  return float(acc);
}

void Sm90Gemm::pv(float* o, const float* p, const float* v, size_t ldv, int n, int d) const {
  for (int k = 0; k < n; ++k) {
    const float* vk = v + size_t(k) * ldv;
    for (int j = 0; j < d; ++j) o[j] = std::fma(p[k], vk[j], o[j]);
  }
}

void Sm90Gemm::qk_tile(float* S, size_t lds, const float* Q, size_t ldq, int rows, const float* K,
                       size_t ldk, int n, int d) const {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < n; ++c)
      S[size_t(r) * lds + size_t(c)] = qk(Q + size_t(r) * ldq, K + size_t(c) * ldk, d);
}

void Sm90Gemm::pv_rows(float* O, size_t ldo, const float* P, size_t ldp, int rows, const float* V,
                       size_t ldv, int n, int d) const {
  for (int r = 0; r < rows; ++r) pv(O + size_t(r) * ldo, P + size_t(r) * ldp, V, ldv, n, d);
}

Sm90WgmmaGemm::Sm90WgmmaGemm(const Format& in_format)
    : f_(&in_format), fp16_(&in_format == &kFP16) {}

namespace {

constexpr int kWgmmaK = 16;  // m64nNk16: 16 products per step for bf16 / fp16

// The 16-bit pattern of a value of the input format (exact: the value is one of the format's).
uint16_t in_bits(const Format& f, bool fp16, float x) {
  return fp16 ? uint16_t(encode(f, x, Overflow::ieee)) : uint16_t(f32_bits(x) >> 16);
}

}  // namespace

float Sm90WgmmaGemm::qk(const float* q, const float* k, int d) const {
  const WgmmaInput in = fp16_ ? WgmmaInput::fp16 : WgmmaInput::bf16;
  const WgmmaModel m = wgmma_model_hopper(in);
  uint16_t a[kWgmmaK], b[kWgmmaK];
  uint32_t c = 0;  // zero_init: +0
  for (int k0 = 0; k0 < d; k0 += kWgmmaK) {
    for (int x = 0; x < kWgmmaK; ++x) {
      const bool in_range = k0 + x < d;  // d is a multiple of 8: pad a last half step with zeros
      a[x] = in_range ? in_bits(*f_, fp16_, q[k0 + x]) : uint16_t(0);
      b[x] = in_range ? in_bits(*f_, fp16_, k[k0 + x]) : uint16_t(0);
    }
    c = wgmma_dot(m, in, a, b, c);
  }
  return f32_from_bits(c);
}

void Sm90WgmmaGemm::pv(float* o, const float* p, const float* v, size_t ldv, int n, int d) const {
  const WgmmaInput in = fp16_ ? WgmmaInput::fp16 : WgmmaInput::bf16;
  const WgmmaModel m = wgmma_model_hopper(in);
  std::vector<uint16_t> pb(static_cast<size_t>(n)), vb(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) pb[size_t(k)] = in_bits(*f_, fp16_, p[k]);
  uint16_t a[kWgmmaK], b[kWgmmaK];
  for (int j = 0; j < d; ++j) {
    for (int k = 0; k < n; ++k) vb[size_t(k)] = in_bits(*f_, fp16_, v[size_t(k) * ldv + size_t(j)]);
    uint32_t c = f32_bits(o[j]);
    for (int k0 = 0; k0 < n; k0 += kWgmmaK) {
      for (int x = 0; x < kWgmmaK; ++x) {
        a[x] = k0 + x < n ? pb[size_t(k0 + x)] : uint16_t(0);
        b[x] = k0 + x < n ? vb[size_t(k0 + x)] : uint16_t(0);
      }
      c = wgmma_dot(m, in, a, b, c);
    }
    o[j] = f32_from_bits(c);
  }
}

namespace {

// Operands decoded once for a block: row r of a rows x n matrix (row stride ld, or column stride
// ld when `transpose`) becomes `padded` decoded operands from out[r * padded], n rounded up to
// the wgmma K with zeros (the bit path's zero padding).
std::vector<WgmmaOperand> decoded_rows(const Format& f, bool fp16, const float* x, size_t ld,
                                       bool transpose, int rows, int n, int padded) {
  const WgmmaInput in = fp16 ? WgmmaInput::fp16 : WgmmaInput::bf16;
  std::vector<WgmmaOperand> out(size_t(rows) * size_t(padded), wgmma_decode(in, 0));
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < n; ++k)
      out[size_t(r) * size_t(padded) + size_t(k)] = wgmma_decode(
          in, in_bits(f, fp16,
                      transpose ? x[size_t(k) * ld + size_t(r)] : x[size_t(r) * ld + size_t(k)]));
  return out;
}

int padded_k(int n) { return (n + kWgmmaK - 1) / kWgmmaK * kWgmmaK; }

// MMA-Sim's Hopper model, the same for bf16 and fp16.
constexpr WgmmaModel kHopper16 = wgmma_model_hopper(WgmmaInput::bf16);
static_assert(wgmma_k(WgmmaInput::bf16) == kWgmmaK && wgmma_k(WgmmaInput::fp16) == kWgmmaK);
static_assert(kHopper16.group == kWgmmaK);

// A block's operands decoded once (decoded_rows), and the same as arrays of significands,
// exponents and signs for finite_step when none is inf or NaN.
struct DecodedBlock {
  std::vector<WgmmaOperand> ops;
  std::vector<uint32_t> sig, neg;
  std::vector<int32_t> exp;
  bool finite = true;
  int frac = 0;  // fraction bits of every operand (the format's mantissa bits)

  explicit DecodedBlock(std::vector<WgmmaOperand> o)
      : ops(std::move(o)), sig(ops.size()), neg(ops.size()), exp(ops.size()) {
    for (size_t i = 0; i < ops.size(); ++i) {
      finite = finite && ops[i].kind <= 1;
      sig[i] = ops[i].sig;
      neg[i] = ops[i].neg ? 1u : 0u;
      exp[i] = ops[i].exp;
      frac = ops[i].frac;
    }
  }
};

// wgmma_step_pairs under kHopper16 for 16 finite operand pairs (a and b: offsets into two
// DecodedBlocks) and a finite c: the same terms, alignment and packing, in loops of selects over
// arrays (the general step copies operand structs and branches on their kinds).
// test_sm90_forward checks it against the general step.
// Under kHopper16 an aligned product fits in 32 bits: it is below 2^(2 frac + 2), shifted left by
// at most frac_bits - 2 frac (exact), or right (capped at 31: the product, below 2^22, is gone).
static_assert(kHopper16.align == WgmmaAlign::toward_zero && !kHopper16.renormalize_products &&
              kHopper16.zero_positive && kHopper16.frac_bits <= 25);
uint32_t finite_step(const DecodedBlock& A, size_t a0, const DecodedBlock& B, size_t b0,
                     const WgmmaOperand& oc) {
  const WgmmaModel& m = kHopper16;
  const int frac2 = A.frac + B.frac;
  uint32_t prod[kWgmmaK];
  int32_t e[kWgmmaK];
  int e_max = wgmma_c_term(m, oc).exp;
  for (int k = 0; k < kWgmmaK; ++k) {
    prod[k] = A.sig[a0 + size_t(k)] * B.sig[b0 + size_t(k)];
    e[k] = prod[k] != 0 ? A.exp[a0 + size_t(k)] + B.exp[b0 + size_t(k)] : m.zero_exp;
  }
  for (int k = 0; k < kWgmmaK; ++k) e_max = e[k] > e_max ? e[k] : e_max;
  int64_t sum = wgmma_align(m, wgmma_c_term(m, oc), e_max);
  for (int k = 0; k < kWgmmaK; ++k) {
    const int sh = m.frac_bits + e[k] - e_max - frac2;
    const int rs = -sh < 31 ? -sh : 31;
    const uint32_t mag = sh >= 0 ? prod[k] << sh : prod[k] >> rs;
    const uint32_t neg = A.neg[a0 + size_t(k)] ^ B.neg[b0 + size_t(k)];
    sum += neg ? -int64_t(mag) : int64_t(mag);
  }
  // An exact zero sum is +0 under kHopper16 (zero_positive): the sign of the zeros is not needed.
  return wgmma_pack(m, sum, e_max, false);
}

// A chain of 16-product steps from c: pairs a0 .. a0 + k - 1 of A with b0 .. of B.
uint32_t chain(const DecodedBlock& A, size_t a0, const DecodedBlock& B, size_t b0, int k,
               uint32_t c) {
  const bool finite = A.finite && B.finite;
  for (int k0 = 0; k0 < k; k0 += kWgmmaK) {
    const WgmmaOperand oc = wgmma_decode_f32(c);
    if (finite && oc.kind <= 1)
      c = finite_step(A, a0 + size_t(k0), B, b0 + size_t(k0), oc);
    else
      c = wgmma_dot_pairs(
          kHopper16, kWgmmaK,
          WgmmaDecodedPairs{A.ops.data() + a0 + size_t(k0), B.ops.data() + b0 + size_t(k0)}, c);
  }
  return c;
}

}  // namespace

void Sm90WgmmaGemm::qk_tile(float* S, size_t lds, const float* Q, size_t ldq, int rows,
                            const float* K, size_t ldk, int n, int d) const {
  const int kd = padded_k(d);
  const DecodedBlock q(decoded_rows(*f_, fp16_, Q, ldq, false, rows, d, kd));
  const DecodedBlock k(decoded_rows(*f_, fp16_, K, ldk, false, n, d, kd));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < n; ++c)  // zero_init: C = +0
      S[size_t(r) * lds + size_t(c)] =
          f32_from_bits(chain(q, size_t(r) * size_t(kd), k, size_t(c) * size_t(kd), kd, 0u));
}

void Sm90WgmmaGemm::pv_rows(float* O, size_t ldo, const float* P, size_t ldp, int rows,
                            const float* V, size_t ldv, int n, int d) const {
  const int kn = padded_k(n);
  const DecodedBlock p(decoded_rows(*f_, fp16_, P, ldp, false, rows, n, kn));
  const DecodedBlock vt(decoded_rows(*f_, fp16_, V, ldv, true, d, n, kn));
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < d; ++j) {
      float& o = O[size_t(r) * ldo + size_t(j)];
      o = f32_from_bits(
          chain(p, size_t(r) * size_t(kn), vt, size_t(j) * size_t(kn), kn, f32_bits(o)));
    }
}

Sm90RowBlock::Sm90RowBlock(const Sm90Softmax& sm, int rows, int d, const Sm90Gemm& gemm)
    : sm_(sm),
      rows_(std::max(rows, 1)),
      d_(std::max(d, 0)),
      gemm_(gemm),
      row_max_(size_t(rows_), neg_inf_f32()),
      row_sum_(size_t(rows_) * 4, 0.0f),
      o_(size_t(rows_) * size_t(d_), 0.0f) {
  if (sm_.warp_rows < 1) sm_.warp_rows = 1;
}

namespace {

// The variant's emulated n8 tiles (fa4_tricks.py emulated_tile): tile t iff ((t % 8) k) % 8 < k.
bool emulated_tile(int t, int k) { return k > 0 && ((t % 8) * k) % 8 < k; }

float mul_add(bool fused, float a, float b, float c) {
  return fused ? std::fma(a, b, c) : a * b + c;
}

}  // namespace

void Sm90RowBlock::process_block(const float* S, size_t lds, const float* V, size_t ldv, int n) {
  if (n < 1) return;
  const float sl2 = sm_.scale_log2;
  p_.resize(size_t(n));
  pc_.resize(size_t(rows_) * size_t(n));  // P after its cast, row by row, for pv_rows
  std::vector<char> wants(size_t(rows_), 0);
  for (int r = 0; r < rows_; ++r) {
    const float* s = S + size_t(r) * lds;
    // fmax_reduce over the thread's values, then the quad: a max, exact in any order.
    float m = first_ ? neg_inf_f32() : row_max_[size_t(r)];
    for (int c = 0; c < n; ++c) m = s[c] > m ? s[c] : m;
    const float prev = row_max_[size_t(r)];
    const float safe = row_max_safe(m);
    float used = safe, row_scale = 1.0f;
    row_max_[size_t(r)] = m;
    if (!first_) {
      const float a = (prev - safe) * sl2;
      row_scale = mufu_exp2(a, sm_.mufu);
      if (sm_.tau > 0.0f && a >= -sm_.tau) {  // the variant keeps the stale max
        used = prev;
        row_max_[size_t(r)] = prev;
        row_scale = 1.0f;
      }
      wants[size_t(r)] = row_scale < 1.0f ? 1 : 0;
    }
    // row_max_scaled = used * scale_log2 - max_offset (stock: max_offset 0, no subtraction)
    const float scaled = sm_.max_offset == 0.0f
                             ? used * sl2
                             : mul_add(sm_.fma.exp_argument, used, sl2, -sm_.max_offset);
    for (int c = 0; c < n; ++c) {
      const float x = sm_.fma.exp_argument ? std::fma(s[c], sl2, -scaled) : s[c] * sl2 - scaled;
      p_[size_t(c)] = emulated_tile(c / 8, sm_.emu_eighths) ? ex2_emu(x, sm_.emu_degree)
                                                            : mufu_exp2(x, sm_.mufu);
    }
    // Each thread q of the quad: columns 8 i + 2 q, 8 i + 2 q + 1, i ascending, from its init.
    for (int q = 0; q < 4; ++q) {
      float& acc = row_sum_[size_t(r) * 4 + size_t(q)];
      bool lead = true;
      for (int i = 0; 8 * i + 2 * q < n; ++i)
        for (int v = 0; v < 2; ++v) {
          const int c = 8 * i + 2 * q + v;
          if (c >= n) continue;
          const float pv = p_[size_t(c)];
          if (lead) {
            acc = first_ ? 0.0f + pv : mul_add(sm_.fma.row_sum_init, acc, row_scale, pv);
            lead = false;
          } else {
            acc += pv;
          }
        }
      if (lead) acc = first_ ? 0.0f : acc * row_scale;  // a thread without columns (n < 8)
    }
    // P to the input dtype (cvt.rn), O rescaled; O += P V for every row after this loop.
    float* pc = pc_.data() + size_t(r) * size_t(n);
    for (int c = 0; c < n; ++c) pc[c] = quantize(*sm_.p_format, p_[size_t(c)], Overflow::ieee);
    float* o = o_.data() + size_t(r) * size_t(d_);
    if (row_scale != 1.0f)
      for (int j = 0; j < d_; ++j) o[j] *= row_scale;
  }
  gemm_.pv_rows(o_.data(), size_t(d_), pc_.data(), size_t(n), rows_, V, ldv, n, d_);
  if (!first_) {
    for (int w0 = 0; w0 < rows_; w0 += sm_.warp_rows) {
      bool any = false;
      for (int r = w0; r < std::min(rows_, w0 + sm_.warp_rows); ++r) {
        ++counts_.row_decisions;
        counts_.row_rescales += uint64_t(wants[size_t(r)]);
        any = any || wants[size_t(r)];
      }
      ++counts_.warp_decisions;
      counts_.warp_rescales += any ? 1 : 0;
    }
  }
  first_ = false;
}

void Sm90RowBlock::finalize(float* O, size_t ldo, float* lse) const {
  constexpr float kLn2f = static_cast<float>(kLn2);  // LN2 = math.log(2.0), a Float32 constant
  for (int r = 0; r < rows_; ++r) {
    const float* t = row_sum_.data() + size_t(r) * 4;
    const float sum = (t[0] + t[1]) + (t[2] + t[3]);  // butterfly: offset 1, then 2
    const bool zero_or_nan = sum == 0.0f || std::isnan(sum);
    const float scale = mufu_rcp(zero_or_nan ? 1.0f : sum, sm_.mufu);
    if (O != nullptr) {
      const float* o = o_.data() + size_t(r) * size_t(d_);
      for (int j = 0; j < d_; ++j) O[size_t(r) * ldo + size_t(j)] = o[j] * scale;
    }
    if (lse != nullptr) {
      float l = neg_inf_f32();
      if (!zero_or_nan) {
        const float lg = mufu_log2(sum, sm_.mufu);
        l = mul_add(sm_.fma.lse, row_max_[size_t(r)], sm_.scale_log2, lg) * kLn2f;
        // the variant: LSE - max_offset * LN2 (a Python constant, rounded once to float32)
        if (sm_.max_offset != 0.0f) l = l - float(double(sm_.max_offset) * kLn2);
      }
      lse[r] = l;
    }
  }
}

}  // namespace fa4sim
