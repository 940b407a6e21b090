// gpu_attention.cpp: the CPU side of the GPU attention kernel (include/fa4sim/gpu/gpu_attention.h):
// validation, inputs, the float64 reference, the CPU model run in the kernel's granularity, and
// the replay of the GPU's dumped S. Needs no GPU; the kernel itself is in src/cuda/attention*.
#include "fa4sim/gpu/gpu_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fa4sim/util/error.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/analysis/row_block_sim.h"
#include "fa4sim/core/constants.h"
#include "fa4sim/core/mufu.h"
#include "fa4sim/util/parallel.h"

namespace fa4sim {

const char* gpu_attn_dtype_name(GpuAttnDtype t) {
  switch (t) {
    case GpuAttnDtype::bf16: return "bf16";
    case GpuAttnDtype::fp16: return "fp16";
    case GpuAttnDtype::e4m3: return "e4m3";
    case GpuAttnDtype::e5m2: return "e5m2";
  }
  return "?";
}

GpuAttnDtype gpu_attn_dtype(const Format& f) {
  if (&f == &kFP16) return GpuAttnDtype::fp16;
  if (&f == &kE4M3) return GpuAttnDtype::e4m3;
  if (&f == &kE5M2) return GpuAttnDtype::e5m2;
  if (&f == &kBF16) return GpuAttnDtype::bf16;
  throw Error(fmt::format("the GPU kernel takes no {} inputs", f.name),
              fmt::format("valid: {}", fmt::join(format_names(FormatRole::attention_input), ", ")));
}

namespace {

const Format& storage_format(GpuAttnDtype t) {
  switch (t) {
    case GpuAttnDtype::fp16: return kFP16;
    case GpuAttnDtype::e4m3: return kE4M3;
    case GpuAttnDtype::e5m2: return kE5M2;
    case GpuAttnDtype::bf16:
    default: return kBF16;
  }
}

double scale_of(const GpuAttnShape& shape, const GpuAttnSoftmax& sm) {
  return sm.softmax_scale > 0 ? sm.softmax_scale : 1.0 / std::sqrt(double(shape.d));
}

// The kernel's float32 scale_log2 for one (batch, kv_head): float(scale * log2 e) times the
// float32 product q_descale * k_descale (attention_host.cpp computes that product in float).
float scale_log2_of(const GpuAttnShape& shape, const GpuAttnSoftmax& sm, const GpuAttnInputs& in,
                    int64_t bhk) {
  float sl2 = float(scale_of(shape, sm) * 1.4426950408889634);
  if (gpu_attn_is_fp8(sm.dtype))
    sl2 = sl2 * (in.q_descale[size_t(bhk)] * in.k_descale[size_t(bhk)]);
  return sl2;
}

// Decoded, descaled value of element i of a tensor whose (batch, kv_head) index is bhk.
struct Decoded {
  std::vector<float> q, k, v;  // float32 holds every bf16/fp16/FP8 value exactly
};
Decoded decode_inputs(const GpuAttnShape& shape, GpuAttnDtype dtype, const GpuAttnInputs& in,
                      bool apply_descale) {
  const Format& f = storage_format(dtype);
  Decoded d;
  d.q.resize(in.q.size());
  d.k.resize(in.k.size());
  d.v.resize(in.v.size());
  const int64_t per_q_head = int64_t(shape.seq_q) * shape.d;
  const int64_t per_kv_head = int64_t(shape.seq_k) * shape.d;
  const int group = shape.heads / shape.kv_heads;
  const bool fp8 = gpu_attn_is_fp8(dtype) && apply_descale;
  for (size_t i = 0; i < in.q.size(); ++i) {
    const int64_t bh = int64_t(i) / per_q_head;
    const int64_t bhk = (bh / shape.heads) * shape.kv_heads + (bh % shape.heads) / group;
    d.q[i] = decode(f, in.q[i]) * (fp8 ? in.q_descale[size_t(bhk)] : 1.f);
  }
  for (size_t i = 0; i < in.k.size(); ++i) {
    const int64_t bhk = int64_t(i) / per_kv_head;
    d.k[i] = decode(f, in.k[i]) * (fp8 ? in.k_descale[size_t(bhk)] : 1.f);
    d.v[i] = decode(f, in.v[i]) * (fp8 ? in.v_descale[size_t(bhk)] : 1.f);
  }
  return d;
}

// How far the causal diagonal is shifted right: 0 top-left, seq_k - seq_q bottom-right.
int causal_shift(const GpuAttnShape& shape) {
  return shape.causal_bottom_right ? shape.seq_k - shape.seq_q : 0;
}

bool visible(const GpuAttnShape& shape, int row, int col) {
  return col < shape.seq_k && (!shape.causal || col <= row + causal_shift(shape));
}

// Key blocks a CTA of block_m rows starting at row m0 visits, in the kernel's order.
std::vector<int> block_order(const GpuAttnShape& shape, const GpuAttnSoftmax& sm, int m0,
                             int block_m = kGpuAttnBlockM, int block_n = kGpuAttnBlockN) {
  int n_blocks = (shape.seq_k + block_n - 1) / block_n;
  if (shape.causal) {
    const int last_key = std::clamp(m0 + block_m + causal_shift(shape), 0, shape.seq_k);
    n_blocks = std::min(n_blocks, (last_key + block_n - 1) / block_n);
  }
  std::vector<int> order(size_t(std::max(n_blocks, 0)));
  for (int i = 0; i < n_blocks; ++i) order[size_t(i)] = sm.reverse_blocks ? n_blocks - 1 - i : i;
  return order;
}

const Format& p_format_of(GpuAttnDtype t) {
  return t == GpuAttnDtype::bf16   ? kBF16
         : t == GpuAttnDtype::e4m3 ? kE4M3
         : t == GpuAttnDtype::e5m2 ? kE5M2
                                   : kFP16;
}

}  // namespace

double gpu_attn_p_log2_max(GpuAttnDtype t) { return p_format_of(t).log2_max; }

void gpu_attn_validate(const GpuAttnShape& s, const GpuAttnSoftmax& sm, bool allow_saturation) {
  if (s.d != 64 && s.d != 128)
    throw Error("head dim " + std::to_string(s.d) + " is not supported by the GPU kernel",
                "use --d 64 or 128");
  if (s.batch < 1 || s.heads < 1 || s.kv_heads < 1 || s.seq_q < 1 || s.seq_k < 1)
    throw Error("batch, heads and sequence lengths must be >= 1", "check --batch/--heads/--seq");
  if (s.causal && s.causal_bottom_right && s.seq_q != s.seq_k)
    throw Error(
        "fa4sim's kernel aligns the causal mask top-left",
        "bottom-right alignment is modelled for upstream's kernel only (fa4sim gpu upstream)");
  if (s.heads % s.kv_heads != 0)
    throw Error("--heads " + std::to_string(s.heads) + " is not a multiple of --kv-heads " +
                    std::to_string(s.kv_heads),
                "GQA needs heads_q = g * heads_kv");
  if (s.heads > 65535 || s.batch > 65535 ||
      (int64_t(s.seq_q) + kGpuAttnBlockM) > (int64_t(1) << 30))
    throw Error("shape exceeds the kernel's grid limits", "heads and batch <= 65535");
  if (sm.emu_tiles < 0 || sm.emu_tiles > kGpuAttnTilesPerBlock)
    throw Error("--emu-tiles " + std::to_string(sm.emu_tiles) + " is out of range",
                "0..8 tiles of 8 columns per 64-key block (fraction k/8)");
  check_log2_knob("--tau", sm.tau);
  check_log2_knob("--max-offset", sm.max_offset);
  const double lim = gpu_attn_p_log2_max(sm.dtype);
  if (!allow_saturation && double(sm.max_offset) + double(sm.tau) >= lim)
    throw Error("max_offset + tau = " + std::to_string(sm.max_offset + sm.tau) +
                    " reaches log2(max finite of " + gpu_attn_dtype_name(sm.dtype) +
                    ") = " + std::to_string(lim) + ": P can saturate (upstream issue #2716)",
                "lower --tau or --max-offset, or pass --allow-saturation to study it");
}

int64_t gpu_attn_device_bytes(const GpuAttnShape& s, const GpuAttnSoftmax& sm, bool instrument,
                              bool dump) {
  const int64_t rows = int64_t(s.batch) * s.heads * s.seq_q;
  int64_t b = 2 * s.q_elems() + 2 * 2 * s.kv_elems() + 2 * s.q_elems() + 4 * rows;
  if (gpu_attn_is_fp8(sm.dtype)) b += s.kv_elems() * 2;  // widening staging buffers
  if (instrument) b += rows * s.key_blocks() * 5 + rows * 4;
  if (dump) b += rows * s.seq_k * 10;
  return b;
}

double gpu_attn_flops(const GpuAttnShape& s) {
  const double f = 4.0 * s.batch * s.heads * double(s.seq_q) * s.seq_k * s.d;
  return s.causal && s.seq_q == s.seq_k ? f / 2 : f;
}

GpuAttnInputs gpu_attn_make_inputs(const GpuAttnShape& shape, GpuAttnDtype dtype, double q_scale,
                                   uint64_t seed) {
  const Format& f = storage_format(dtype);
  const bool fp8 = gpu_attn_is_fp8(dtype);
  GpuAttnInputs in;
  const int64_t bhk_n = int64_t(shape.batch) * shape.kv_heads;
  if (fp8) {
    for (int64_t i = 0; i < bhk_n; ++i) {
      in.q_descale.push_back(float(std::exp2(-1.0 - double(i % 3))));
      in.k_descale.push_back(float(std::exp2(-1.0 - double((i + 1) % 3))));
      in.v_descale.push_back(float(std::exp2(-1.0 - double((i + 1) % 3))));
    }
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  const int group = shape.heads / shape.kv_heads;
  const int64_t per_q = int64_t(shape.seq_q) * shape.d;
  const int64_t per_kv = int64_t(shape.seq_k) * shape.d;
  auto fill = [&](std::vector<uint16_t>& out, int64_t n, double mul, bool is_q,
                  const std::vector<float>& ds) {
    out.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      int64_t bhk = 0;
      if (is_q) {
        const int64_t bh = i / per_q;
        bhk = (bh / shape.heads) * shape.kv_heads + (bh % shape.heads) / group;
      } else {
        bhk = i / per_kv;
      }
      const double x = nd(rng) * mul / (fp8 ? double(ds[size_t(bhk)]) : 1.0);
      out[size_t(i)] = uint16_t(encode_f64(f, x, Overflow::satfinite));
    }
  };
  fill(in.q, shape.q_elems(), q_scale, true, in.q_descale);
  fill(in.k, shape.kv_elems(), 1.0, false, in.k_descale);
  fill(in.v, shape.kv_elems(), 1.0, false, in.v_descale);
  return in;
}

GpuAttnReference gpu_attn_reference(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                                    const GpuAttnInputs& in, int threads) {
  const Decoded d = decode_inputs(shape, sm.dtype, in, true);
  const int D = shape.d, group = shape.heads / shape.kv_heads;
  const double scale = scale_of(shape, sm);
  const int64_t rows = int64_t(shape.batch) * shape.heads * shape.seq_q;
  GpuAttnReference ref;
  ref.o.assign(size_t(rows) * size_t(D), 0.0);
  ref.lse.assign(size_t(rows), 0.0);
  parallel_chunks(uint64_t(rows), 64, threads, [&](uint64_t, uint64_t begin, uint64_t end) {
    std::vector<double> s(size_t(shape.seq_k));
    for (uint64_t r = begin; r < end; ++r) {
      const int64_t bh = int64_t(r) / shape.seq_q;
      const int row = int(int64_t(r) % shape.seq_q);
      const int64_t bhk = (bh / shape.heads) * shape.kv_heads + (bh % shape.heads) / group;
      const float* q = &d.q[size_t(r) * size_t(D)];
      double mx = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < shape.seq_k; ++j) {
        if (!visible(shape, row, j)) {
          s[size_t(j)] = -std::numeric_limits<double>::infinity();
          continue;
        }
        const float* k = &d.k[size_t((bhk * shape.seq_k + j) * D)];
        double acc = 0;
        for (int t = 0; t < D; ++t) acc += double(q[t]) * double(k[t]);
        s[size_t(j)] = acc * scale;
        mx = std::max(mx, s[size_t(j)]);
      }
      double sum = 0;
      double* o = &ref.o[size_t(r) * size_t(D)];
      if (mx == -std::numeric_limits<double>::infinity()) {  // no visible key: O = 0, LSE = -inf
        ref.lse[size_t(r)] = mx;
        continue;
      }
      for (int j = 0; j < shape.seq_k; ++j) {
        if (!std::isfinite(s[size_t(j)])) continue;
        const double p = std::exp(s[size_t(j)] - mx);
        sum += p;
        const float* v = &d.v[size_t((bhk * shape.seq_k + j) * D)];
        for (int t = 0; t < D; ++t) o[t] += p * double(v[t]);
      }
      for (int t = 0; t < D; ++t) o[t] /= sum;
      ref.lse[size_t(r)] = mx + std::log(sum);
    }
  });
  return ref;
}

double gpu_attn_rel_l2(const std::vector<float>& o, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = double(o[i]) - ref[i];
    num += e * e;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

double gpu_attn_rel_l2_bits(const std::vector<uint16_t>& o_bits, bool fp16,
                            const std::vector<double>& ref) {
  const Format& f = fp16 ? kFP16 : kBF16;
  std::vector<float> o(o_bits.size());
  for (size_t i = 0; i < o.size(); ++i) o[i] = decode(f, o_bits[i]);
  return gpu_attn_rel_l2(o, ref);
}

double gpu_attn_rel_l2_bf16(const std::vector<uint16_t>& o_bf16, const std::vector<double>& ref) {
  return gpu_attn_rel_l2_bits(o_bf16, false, ref);
}

const char* gpu_attn_cpu_model_name(GpuAttnCpuModel m) {
  switch (m) {
    case GpuAttnCpuModel::sm90_mufu: return "sm90-mufu";
    case GpuAttnCpuModel::sm90_wgmma: return "sm90-wgmma";
    case GpuAttnCpuModel::sm90_cr: return "sm90-cr";
    case GpuAttnCpuModel::row_block_cr:
    default: return "rowblock-cr";
  }
}

namespace {

// The key block's scores (rows x BN, -inf where masked or past seq_k) and V (BN x d, zeros past
// seq_k), through the GEMM seam for S.
void load_block(const GpuAttnShape& shape, const Decoded& d, int64_t bh, int64_t bhk, int m0,
                int rows, int nb, int BN, const Sm90Gemm& gemm, std::vector<float>& S,
                std::vector<float>& V) {
  const int D = shape.d;
  // Every key of the block before seq_k through the seam at once, then the mask: a masked score
  // is computed and dropped (no side effects; causal blocks on the diagonal only).
  const int col0 = nb * BN;
  const int keys = std::clamp(int(shape.seq_k) - col0, 0, BN);
  if (keys > 0)
    gemm.qk_tile(S.data(), size_t(BN), &d.q[size_t((bh * shape.seq_q + m0) * D)], size_t(D), rows,
                 &d.k[size_t((bhk * shape.seq_k + col0) * D)], size_t(D), keys, D);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < BN; ++c)
      if (!visible(shape, m0 + r, col0 + c)) S[size_t(r) * size_t(BN) + size_t(c)] = neg_inf_f32();
  for (int c = 0; c < BN; ++c) {
    const int col = nb * BN + c;
    for (int x = 0; x < D; ++x)
      V[size_t(c) * size_t(D) + size_t(x)] =
          col < shape.seq_k ? d.v[size_t((bhk * shape.seq_k + col) * D + x)] : 0.f;
  }
}

// One CTA tile of a CPU model: its batch-head, first row, KV head and real rows (the GPU also
// computes phantom rows past seq_q; the counts here count real rows, as gpu_attn_counts does).
struct CtaTile {
  int64_t bh = 0, bhk = 0;
  int m0 = 0, rows = 0;
};

// Runs `tile(t, S, V, O, lse)` for every CTA tile in parallel: it feeds its key blocks (load_block
// fills S and V), writes O (rows x d, float32 before V's descale) and lse, and returns the tile's
// RescaleCounts. The driver multiplies O by V's descale and rounds it to the output dtype
// (the kernel: cvt.rn.bf16x2.f32; upstream: the input dtype), and sums the counts.
template <typename F>
GpuAttnModel run_cta_tiles(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                           const GpuAttnInputs& in, int threads, const GpuAttnTiling& tiling,
                           F&& tile) {
  const int D = shape.d, group = shape.heads / shape.kv_heads, BM = tiling.block_m,
            BN = tiling.block_n;
  const Format& out_format = tiling.out_fp16 ? kFP16 : kBF16;
  const int m_tiles = (shape.seq_q + BM - 1) / BM;
  const int64_t n_tiles = int64_t(shape.batch) * shape.heads * m_tiles;
  GpuAttnModel out;
  out.o.assign(size_t(shape.q_elems()), 0.f);
  out.lse.assign(size_t(int64_t(shape.batch) * shape.heads * shape.seq_q), 0.f);
  std::vector<RescaleCounts> per_tile(static_cast<size_t>(n_tiles));
  parallel_chunks(uint64_t(n_tiles), 1, threads, [&](uint64_t, uint64_t begin, uint64_t end) {
    std::vector<float> S(size_t(BM) * size_t(BN)), V(size_t(BN) * size_t(D));
    std::vector<float> O(size_t(BM) * size_t(D)), lse(static_cast<size_t>(BM));
    for (uint64_t t = begin; t < end; ++t) {
      CtaTile c;
      c.bh = int64_t(t) / m_tiles;
      c.m0 = int(int64_t(t) % m_tiles) * BM;
      c.bhk = (c.bh / shape.heads) * shape.kv_heads + (c.bh % shape.heads) / group;
      c.rows = std::min(BM, shape.seq_q - c.m0);
      per_tile[t] = tile(c, S, V, O, lse);
      const float vd = gpu_attn_is_fp8(sm.dtype) ? in.v_descale[size_t(c.bhk)] : 1.f;
      for (int r = 0; r < c.rows; ++r) {
        const int64_t row = c.bh * shape.seq_q + c.m0 + r;
        out.lse[size_t(row)] = lse[size_t(r)];
        for (int x = 0; x < D; ++x)
          out.o[size_t(row * D + x)] =
              decode(out_format,
                     encode(out_format, O[size_t(r) * size_t(D) + size_t(x)] * vd, Overflow::ieee));
      }
    }
  });
  RescaleCounts total;
  for (const auto& c : per_tile) total += c;
  out.row_decisions = total.row_decisions;
  out.row_rescales = total.row_rescales;
  out.warp_decisions = total.warp_decisions;
  out.warp_rescales = total.warp_rescales;
  out.p_count = total.p_count;
  out.saturated = total.saturated;
  return out;
}

// gpu_attn_cpu_model with tiling.model = sm90_*: Sm90RowBlock per CTA tile (no FP8: upstream's
// sm90 path refuses it, so there is no descale).
GpuAttnModel sm90_cpu_model(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                            const GpuAttnInputs& in, int threads, const GpuAttnTiling& tiling) {
  const Decoded d = decode_inputs(shape, sm.dtype, in, false);
  const int D = shape.d, BM = tiling.block_m, BN = tiling.block_n;
  Sm90Softmax base;
  // upstream: Float32(softmax_scale) * LOG2_E, a float32 product (utils.py:183-193)
  base.scale_log2 = float(scale_of(shape, sm)) * float(kLog2e);
  base.tau = sm.tau;
  base.max_offset = sm.max_offset;
  base.emu_eighths = sm.emu_tiles;
  base.p_format = &p_format_of(sm.dtype);
  base.fma = tiling.fma;
  base.warp_rows = tiling.warp_rows;
  if (tiling.model != GpuAttnCpuModel::sm90_cr) base.mufu = mufu_hardware();
  const Sm90Gemm plain;
  const Sm90WgmmaGemm tensor_core(storage_format(sm.dtype));
  const Sm90Gemm& gemm = tiling.model == GpuAttnCpuModel::sm90_wgmma
                             ? static_cast<const Sm90Gemm&>(tensor_core)
                             : plain;
  return run_cta_tiles(shape, sm, in, threads, tiling,
                       [&](const CtaTile& c, std::vector<float>& S, std::vector<float>& V,
                           std::vector<float>& O, std::vector<float>& lse) {
                         Sm90RowBlock blk(base, c.rows, D, gemm);
                         for (int nb : block_order(shape, sm, c.m0, BM, BN)) {
                           load_block(shape, d, c.bh, c.bhk, c.m0, c.rows, nb, BN, gemm, S, V);
                           blk.process_block(S.data(), size_t(BN), V.data(), size_t(D), BN);
                         }
                         blk.finalize(O.data(), size_t(D), lse.data());
                         RescaleCounts rc;
                         rc.row_decisions = blk.counts().row_decisions;
                         rc.row_rescales = blk.counts().row_rescales;
                         rc.warp_decisions = blk.counts().warp_decisions;
                         rc.warp_rescales = blk.counts().warp_rescales;
                         return rc;
                       });
}

}  // namespace

GpuAttnModel gpu_attn_cpu_model(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                                const GpuAttnInputs& in, int threads, const GpuAttnTiling& tiling) {
  if (sm.emu_tiles < 0 || sm.emu_tiles > kGpuAttnTilesPerBlock)
    throw Error("--emu-tiles must be in 0..8", "k of 8 eight-column tiles per key block");
  const int BM = tiling.block_m, BN = tiling.block_n;
  if (BM < 1 || BN < 1 || tiling.warp_rows < 1)
    throw Error("the CPU model's tiling needs block_m, block_n, warp_rows >= 1",
                "see GpuAttnTiling");
  if (tiling.model != GpuAttnCpuModel::row_block_cr) {
    if (gpu_attn_is_fp8(sm.dtype))
      throw Error("the sm90 CPU models take no FP8 inputs", "upstream's sm90 path refuses FP8");
    return sm90_cpu_model(shape, sm, in, threads, tiling);
  }
  // Undescaled Q/K (the descales are in scale_log2, as on the GPU), descaled V at the end.
  const Decoded d = decode_inputs(shape, sm.dtype, in, false);
  const int D = shape.d;
  return run_cta_tiles(
      shape, sm, in, threads, tiling,
      [&](const CtaTile& c, std::vector<float>& S, std::vector<float>& V, std::vector<float>& O,
          std::vector<float>& lse) {
        SoftmaxParams p;
        p.scale_log2 = scale_log2_of(shape, sm, in, c.bhk);
        p.max_offset = sm.max_offset;
        p.rescale_threshold = sm.tau;
        p.exp2.mode = Exp2Mode::rounded_fp32;
        if (sm.emu_tiles > 0) {  // emulated 8-column tiles: the rule of gpu_attn_emu_mask, t % 8
          p.exp2.mode = Exp2Mode::schedule;
          p.exp2.degree = 3;
          const uint32_t m8 = gpu_attn_emu_mask(sm.emu_tiles);
          for (int t = 0; t < 32; ++t) p.exp2.tile_mask |= ((m8 >> (t % 8)) & 1u) << t;
        }
        p.p_format = p_format_of(sm.dtype);
        p.warp_rows = tiling.warp_rows;
        RowBlockSim sim(p, c.rows, D);
        for (int nb : block_order(shape, sm, c.m0, BM, BN)) {
          load_block(shape, d, c.bh, c.bhk, c.m0, c.rows, nb, BN, Sm90Gemm{}, S, V);
          sim.process_tile(S.data(), size_t(BN), V.data(), size_t(D), BN);
        }
        sim.finalize(O.data(), size_t(D), lse.data());
        return sim.counts();
      });
}

GpuAttnCounts gpu_attn_counts(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                              const GpuAttnInstr& instr) {
  GpuAttnCounts c;
  const int nblk = shape.key_blocks();
  const int64_t bhn = int64_t(shape.batch) * shape.heads;
  for (int64_t bh = 0; bh < bhn; ++bh) {
    for (int m0 = 0; m0 < shape.seq_q; m0 += kGpuAttnBlockM) {
      const std::vector<int> order = block_order(shape, sm, m0);
      for (size_t i = 1; i < order.size(); ++i) {
        const int nb = order[i];
        for (int w = 0; w < kGpuAttnBlockM / kGpuAttnWarpRows; ++w) {
          const int r0 = m0 + w * kGpuAttnWarpRows;
          if (r0 >= shape.seq_q) break;
          ++c.warp_decisions;
          bool warp = false;
          for (int r = r0; r < std::min(r0 + kGpuAttnWarpRows, shape.seq_q); ++r) {
            const uint8_t f = instr.flags[size_t((bh * shape.seq_q + r) * nblk + nb)];
            ++c.row_decisions;
            c.row_rescales += (f & 2u) ? 1 : 0;
            warp = warp || (f & 4u);
          }
          c.warp_rescales += warp ? 1 : 0;
        }
      }
    }
  }
  for (uint32_t s : instr.saturated) c.saturated += s;
  return c;
}

GpuAttnReplay gpu_attn_replay(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                              const GpuAttnInputs& in, const GpuAttnOutputs& gpu) {
  const GpuAttnInstr& g = gpu.instr;
  if (g.s.empty())
    throw Error("the replay needs the S/P dumps", "run the instrumented kernel with dump = true");
  GpuAttnReplay rep;
  const Format& pf = p_format_of(sm.dtype);
  const uint32_t emu_mask = gpu_attn_emu_mask(sm.emu_tiles);
  const int nblk = shape.key_blocks(), group = shape.heads / shape.kv_heads;
  const int64_t bhn = int64_t(shape.batch) * shape.heads;
  auto note = [&](const std::string& what) {
    if (rep.first_mismatches.size() < 10) rep.first_mismatches.push_back(what);
  };
  for (int64_t bh = 0; bh < bhn; ++bh) {
    const int64_t bhk = (bh / shape.heads) * shape.kv_heads + (bh % shape.heads) / group;
    const float sl2 = scale_log2_of(shape, sm, in, bhk);
    for (int m0 = 0; m0 < shape.seq_q; m0 += kGpuAttnBlockM) {
      const std::vector<int> order = block_order(shape, sm, m0);
      std::vector<float> row_max(kGpuAttnBlockM, neg_inf_f32());
      for (size_t it = 0; it < order.size(); ++it) {
        const int nb = order[it];
        std::vector<char> want(kGpuAttnBlockM, 0);
        for (int r = 0; r < kGpuAttnBlockM; ++r) {
          const int row = m0 + r;
          const bool real = row < shape.seq_q;
          auto s_at = [&](int col) -> float {
            if (!visible(shape, row, col)) return neg_inf_f32();
            return real ? g.s[size_t((bh * shape.seq_q + row) * shape.seq_k + col)] : 0.f;
          };
          float bm = neg_inf_f32();
          for (int c = 0; c < kGpuAttnBlockN; ++c) bm = std::max(bm, s_at(nb * kGpuAttnBlockN + c));
          const RowUpdate u = update_row_max(row_max[size_t(r)], bm, sl2, sm.tau, it == 0, false);
          row_max[size_t(r)] = u.row_max;
          want[size_t(r)] = u.rescale ? 1 : 0;
          if (!real) continue;
          const size_t fi = size_t((bh * shape.seq_q + row) * nblk + nb);
          ++rep.row_max_checked;
          if (f32_bits(g.row_max[fi]) != f32_bits(u.row_max)) {
            ++rep.row_max_mismatch;
            note("row_max at (bh " + std::to_string(bh) + ", row " + std::to_string(row) +
                 ", block " + std::to_string(nb) + "): gpu " + std::to_string(g.row_max[fi]) +
                 " cpu " + std::to_string(u.row_max));
          }
          ++rep.flag_checked;
          if (bool(g.flags[fi] & 2u) != u.rescale) {
            ++rep.flag_mismatch;
            note("rescale flag at (bh " + std::to_string(bh) + ", row " + std::to_string(row) +
                 ", block " + std::to_string(nb) + ")");
          }
          // P of this row in this block, from the GPU's row_max (identical when the above match)
          const float bias = p_bias(u.row_max, sl2, sm.max_offset);
          for (int c = 0; c < kGpuAttnBlockN; ++c) {
            const int col = nb * kGpuAttnBlockN + c;
            if (col >= shape.seq_k) continue;
            const size_t pi = size_t((bh * shape.seq_q + row) * shape.seq_k + col);
            const float x = p_argument(s_at(col), sl2, bias);
            const float pg = g.p[pi];
            const bool emu = (emu_mask >> (c / 8)) & 1u;
            if (emu) {
              ++rep.p_emu_checked;
              if (f32_bits(pg) != f32_bits(ex2_emu(x, 3))) {
                ++rep.p_emu_mismatch;
                note("emulated P at (bh " + std::to_string(bh) + ", row " + std::to_string(row) +
                     ", col " + std::to_string(col) + ")");
              }
            } else if (std::isfinite(x)) {
              ++rep.p_mufu_checked;
              const float want_p = exp2_mufu_like(x);
              const int64_t du = std::llabs(int64_t(f32_bits(pg)) - int64_t(f32_bits(want_p)));
              ++rep.p_mufu_ulp[du > 2 ? 3 : du];
            }
            const uint32_t cvt = encode(pf, pg, Overflow::satfinite);
            ++rep.p_cvt_checked;
            if (cvt != g.p_cvt[pi]) {
              ++rep.p_cvt_mismatch;
              note("P cast at (bh " + std::to_string(bh) + ", row " + std::to_string(row) +
                   ", col " + std::to_string(col) + ")");
            }
            if (emu) {
              ++rep.p_cvt_emu_checked;
              if (encode(pf, ex2_emu(x, 3), Overflow::satfinite) != g.p_cvt[pi])
                ++rep.p_cvt_emu_mismatch;
            }
          }
        }
        // the warp vote, per kGpuAttnWarpRows-row warp (phantom rows vote too)
        for (int w = 0; w < kGpuAttnBlockM / kGpuAttnWarpRows; ++w) {
          const int r0 = m0 + w * kGpuAttnWarpRows;
          if (r0 >= shape.seq_q) break;
          bool any = false;
          for (int r = 0; r < kGpuAttnWarpRows; ++r)
            any = any || want[size_t(w * kGpuAttnWarpRows + r)];
          const size_t fi = size_t((bh * shape.seq_q + r0) * nblk + nb);
          ++rep.warp_checked;
          if (bool(g.flags[fi] & 4u) != any) {
            ++rep.warp_mismatch;
            note("warp vote at (bh " + std::to_string(bh) + ", rows " + std::to_string(r0) +
                 "+, block " + std::to_string(nb) + ")");
          }
        }
      }
    }
  }
  return rep;
}

}  // namespace fa4sim
