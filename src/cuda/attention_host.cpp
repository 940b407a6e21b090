// attention_host.cpp: host side of the sm_90a attention kernel (kernels in attention.cu).
//
// Device selection, memory checks, uploads, the instrumented and timed launches. Compiled by the
// host compiler (it includes fmt through error.h, which nvcc's C++20 front end rejects). Every
// CUDA call goes through FA4_CUDA_CHECK (file:line).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention_params.h"
#include "cuda_check.h"
#include "fa4sim/util/error.h"
#include "gpu_host.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/analysis/row_block_sim.h"

namespace fa4sim {
namespace {

void require_device() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0)
    throw Error("no CUDA device found (" +
                    gpu::no_device_reason(e != cudaSuccess ? cudaGetErrorString(e) : "",
                                          e == cudaErrorInsufficientDriver) +
                    ")",
                "gpu commands need an NVIDIA GPU with compute capability 9.0 (H100/H200)",
                kExitNoGpu);
  cudaDeviceProp prop{};
  FA4_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9)
    throw Error("GPU '" + std::string(prop.name) + "' has compute capability " +
                    std::to_string(prop.major) + "." + std::to_string(prop.minor),
                "the attention kernel is built for sm_90a (H100/H200)", kExitNoGpu);
}

// Device buffer owning its memory (freed on scope exit, also when an Error unwinds).
struct DevBuf {
  void* ptr = nullptr;
  DevBuf() = default;
  explicit DevBuf(size_t bytes) {
    if (bytes > 0) FA4_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

void check_fits(const GpuAttnShape& shape, const GpuAttnSoftmax& sm, bool instrument, bool dump) {
  size_t free_b = 0, total_b = 0;
  FA4_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const int64_t need = gpu_attn_device_bytes(shape, sm, instrument, dump);
  if (double(need) > 0.95 * double(free_b))
    throw Error("the problem needs " + std::to_string(need >> 20) + " MiB on the GPU but only " +
                    std::to_string(free_b >> 20) + " MiB are free",
                "use a smaller --batch, --heads or --seq", kExitUsage);
}

struct Launch {
  cuda::AttnParams p{};
  struct {
    unsigned x = 1, y = 1, z = 1;
  } grid;
};

// Kernel arguments for one problem; q/k/v/o/lse are device buffers (q/k/v 16-bit).
Launch make_launch(const GpuAttnShape& shape, const GpuAttnSoftmax& sm, const DevBuf& q,
                   const DevBuf& k, const DevBuf& v, const DevBuf& o, const DevBuf& lse) {
  Launch l;
  cuda::AttnParams& p = l.p;
  p.q = q.ptr;
  p.k = k.ptr;
  p.v = v.ptr;
  p.o = o.ptr;
  p.lse = lse.as<float>();
  p.batch = shape.batch;
  p.heads = shape.heads;
  p.kv_heads = shape.kv_heads;
  p.seq_q = shape.seq_q;
  p.seq_k = shape.seq_k;
  p.causal = shape.causal ? 1 : 0;
  p.reverse_blocks = sm.reverse_blocks ? 1 : 0;
  const double scale = sm.softmax_scale > 0 ? sm.softmax_scale : 1.0 / std::sqrt(double(shape.d));
  p.scale_log2 = float(scale * 1.4426950408889634);
  p.tau = sm.tau;
  p.max_offset = sm.max_offset;
  p.emu_mask = gpu_attn_emu_mask(sm.emu_tiles);
  p.emu_tiles = sm.emu_tiles;
  p.p_cast = sm.dtype == GpuAttnDtype::e4m3   ? cuda::kPCastE4M3
             : sm.dtype == GpuAttnDtype::e5m2 ? cuda::kPCastE5M2
                                              : cuda::kPCastInput;
  p.p_max_finite = saturation_threshold(sm.dtype == GpuAttnDtype::bf16   ? kBF16
                                        : sm.dtype == GpuAttnDtype::e4m3 ? kE4M3
                                        : sm.dtype == GpuAttnDtype::e5m2 ? kE5M2
                                                                         : kFP16);
  l.grid.x = unsigned((shape.seq_q + kGpuAttnBlockM - 1) / kGpuAttnBlockM);
  l.grid.y = unsigned(shape.heads);
  l.grid.z = unsigned(shape.batch);
  return l;
}

void launch(const Launch& l, const GpuAttnShape& shape, const GpuAttnSoftmax& sm, bool instrument) {
  FA4_CUDA_CHECK(
      cudaError_t(cuda::launch_attention(l.p, sm.dtype == GpuAttnDtype::bf16, shape.d, instrument,
                                         l.grid.x, l.grid.y, l.grid.z, nullptr)));
}

}  // namespace

std::string gpu_attn_device_name() {
  require_device();
  cudaDeviceProp prop{};
  FA4_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return std::string(prop.name) + " (" + std::to_string(prop.multiProcessorCount) + " SMs, sm_" +
         std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

GpuAttnOutputs gpu_attn_run(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                            const GpuAttnInputs& in, bool instrument, bool dump) {
  require_device();
  if (in.q.size() != size_t(shape.q_elems()) || in.k.size() != size_t(shape.kv_elems()) ||
      in.v.size() != size_t(shape.kv_elems()))
    throw Error("Q/K/V sizes do not match the shape", "internal: build inputs from the shape");
  const int64_t dumped = int64_t(shape.batch) * shape.heads * shape.seq_q * shape.seq_k;
  if (dump && dumped > (int64_t(1) << 26))
    throw Error("S/P dumps of " + std::to_string(dumped) + " elements are too large",
                "dump only small problems (batch*heads*seq_q*seq_k <= 2^26)");
  check_fits(shape, sm, instrument, dump);
  const bool fp8 = gpu_attn_is_fp8(sm.dtype);
  const int64_t nq = shape.q_elems(), nkv = shape.kv_elems();
  const int64_t bhkv = int64_t(shape.batch) * shape.kv_heads;

  DevBuf dq(size_t(nq) * 2), dk(size_t(nkv) * 2), dv(size_t(nkv) * 2);
  auto upload = [&](const std::vector<uint16_t>& h, DevBuf& d, int64_t n) {
    if (!fp8) {
      FA4_CUDA_CHECK(cudaMemcpy(d.ptr, h.data(), size_t(n) * 2, cudaMemcpyHostToDevice));
      return;
    }
    std::vector<uint8_t> bytes(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) bytes[size_t(i)] = uint8_t(h[size_t(i)] & 0xFFu);
    DevBuf tmp(static_cast<size_t>(n));
    FA4_CUDA_CHECK(cudaMemcpy(tmp.ptr, bytes.data(), size_t(n), cudaMemcpyHostToDevice));
    const int64_t pairs = n / 2;  // d is even, so n is
    FA4_CUDA_CHECK(cudaError_t(cuda::launch_widen_fp8(tmp.as<uint8_t>(), d.as<uint16_t>(), pairs,
                                                      sm.dtype == GpuAttnDtype::e5m2)));
    FA4_CUDA_CHECK(cudaDeviceSynchronize());
  };
  upload(in.q, dq, nq);
  upload(in.k, dk, nkv);
  upload(in.v, dv, nkv);

  DevBuf d_qk, d_vd;
  if (fp8) {
    if (in.q_descale.size() != size_t(bhkv) || in.k_descale.size() != size_t(bhkv) ||
        in.v_descale.size() != size_t(bhkv))
      throw Error("FP8 inputs need one q/k/v descale per (batch, kv_head)",
                  "internal: build descales from the shape");
    std::vector<float> qk(static_cast<size_t>(bhkv));
    for (size_t i = 0; i < qk.size(); ++i) qk[i] = in.q_descale[i] * in.k_descale[i];
    DevBuf a(qk.size() * 4), b(qk.size() * 4);
    std::swap(d_qk.ptr, a.ptr);
    std::swap(d_vd.ptr, b.ptr);
    FA4_CUDA_CHECK(cudaMemcpy(d_qk.ptr, qk.data(), qk.size() * 4, cudaMemcpyHostToDevice));
    FA4_CUDA_CHECK(
        cudaMemcpy(d_vd.ptr, in.v_descale.data(), qk.size() * 4, cudaMemcpyHostToDevice));
  }

  const int64_t rows = int64_t(shape.batch) * shape.heads * shape.seq_q;
  const int nblk = shape.key_blocks();
  DevBuf d_o(size_t(nq) * 2), d_lse(size_t(rows) * 4);
  // Poison the outputs so an unwritten element shows (NaN bf16 0x7FFF.., NaN float).
  FA4_CUDA_CHECK(cudaMemset(d_o.ptr, 0xFF, size_t(nq) * 2));
  FA4_CUDA_CHECK(cudaMemset(d_lse.ptr, 0xFF, size_t(rows) * 4));
  DevBuf d_flags, d_rm, d_sat, d_s, d_p, d_pc;
  Launch l = make_launch(shape, sm, dq, dk, dv, d_o, d_lse);
  l.p.qk_descale = d_qk.as<float>();
  l.p.v_descale = d_vd.as<float>();
  if (instrument) {
    DevBuf f(size_t(rows * nblk)), r(size_t(rows * nblk) * 4), s(size_t(rows) * 4);
    std::swap(d_flags.ptr, f.ptr);
    std::swap(d_rm.ptr, r.ptr);
    std::swap(d_sat.ptr, s.ptr);
    FA4_CUDA_CHECK(cudaMemset(d_flags.ptr, 0, size_t(rows * nblk)));
    FA4_CUDA_CHECK(cudaMemset(d_rm.ptr, 0xFF, size_t(rows * nblk) * 4));
    FA4_CUDA_CHECK(cudaMemset(d_sat.ptr, 0xFF, size_t(rows) * 4));
    l.p.flags = d_flags.as<uint8_t>();
    l.p.row_max_out = d_rm.as<float>();
    l.p.saturated = d_sat.as<uint32_t>();
    if (dump) {
      DevBuf a(size_t(dumped) * 4), b(size_t(dumped) * 4), c(size_t(dumped) * 2);
      std::swap(d_s.ptr, a.ptr);
      std::swap(d_p.ptr, b.ptr);
      std::swap(d_pc.ptr, c.ptr);
      FA4_CUDA_CHECK(cudaMemset(d_s.ptr, 0xFF, size_t(dumped) * 4));
      l.p.s_dump = d_s.as<float>();
      l.p.p_dump = d_p.as<float>();
      l.p.pc_dump = d_pc.as<uint16_t>();
    }
    launch(l, shape, sm, true);
  } else {
    launch(l, shape, sm, false);
  }
  FA4_CUDA_CHECK(cudaDeviceSynchronize());

  GpuAttnOutputs out;
  out.o.resize(size_t(nq));
  out.lse.resize(size_t(rows));
  FA4_CUDA_CHECK(cudaMemcpy(out.o.data(), d_o.ptr, size_t(nq) * 2, cudaMemcpyDeviceToHost));
  FA4_CUDA_CHECK(cudaMemcpy(out.lse.data(), d_lse.ptr, size_t(rows) * 4, cudaMemcpyDeviceToHost));
  if (instrument) {
    GpuAttnInstr& ins = out.instr;
    ins.flags.resize(size_t(rows * nblk));
    ins.row_max.resize(size_t(rows * nblk));
    ins.saturated.resize(size_t(rows));
    FA4_CUDA_CHECK(
        cudaMemcpy(ins.flags.data(), d_flags.ptr, ins.flags.size(), cudaMemcpyDeviceToHost));
    FA4_CUDA_CHECK(
        cudaMemcpy(ins.row_max.data(), d_rm.ptr, ins.row_max.size() * 4, cudaMemcpyDeviceToHost));
    FA4_CUDA_CHECK(cudaMemcpy(ins.saturated.data(), d_sat.ptr, ins.saturated.size() * 4,
                              cudaMemcpyDeviceToHost));
    if (dump) {
      ins.s.resize(size_t(dumped));
      ins.p.resize(size_t(dumped));
      ins.p_cvt.resize(size_t(dumped));
      FA4_CUDA_CHECK(cudaMemcpy(ins.s.data(), d_s.ptr, size_t(dumped) * 4, cudaMemcpyDeviceToHost));
      FA4_CUDA_CHECK(cudaMemcpy(ins.p.data(), d_p.ptr, size_t(dumped) * 4, cudaMemcpyDeviceToHost));
      FA4_CUDA_CHECK(
          cudaMemcpy(ins.p_cvt.data(), d_pc.ptr, size_t(dumped) * 2, cudaMemcpyDeviceToHost));
    }
  }
  return out;
}

std::vector<double> gpu_attn_time(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                                  uint64_t seed, int warmup, int iters) {
  require_device();
  if (gpu_attn_is_fp8(sm.dtype))
    throw Error("--bench times the 16-bit kernels only",
                "FP8 runs through the fp16 MMA (README, Divergences); time bf16 or fp16");
  check_fits(shape, sm, false, false);
  const int64_t nq = shape.q_elems(), nkv = shape.kv_elems();
  const int64_t rows = int64_t(shape.batch) * shape.heads * shape.seq_q;
  DevBuf dq(size_t(nq) * 2), dk(size_t(nkv) * 2), dv(size_t(nkv) * 2), d_o(size_t(nq) * 2),
      d_lse(size_t(rows) * 4);
  const bool bf16 = sm.dtype == GpuAttnDtype::bf16;
  FA4_CUDA_CHECK(cudaError_t(cuda::launch_fill_normal(dq.as<uint16_t>(), nq, seed * 3 + 0, bf16)));
  FA4_CUDA_CHECK(cudaError_t(cuda::launch_fill_normal(dk.as<uint16_t>(), nkv, seed * 3 + 1, bf16)));
  FA4_CUDA_CHECK(cudaError_t(cuda::launch_fill_normal(dv.as<uint16_t>(), nkv, seed * 3 + 2, bf16)));
  Launch l = make_launch(shape, sm, dq, dk, dv, d_o, d_lse);
  cudaEvent_t e0, e1;
  FA4_CUDA_CHECK(cudaEventCreate(&e0));
  FA4_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    FA4_CUDA_CHECK(cudaEventRecord(e0));
    launch(l, shape, sm, false);
    FA4_CUDA_CHECK(cudaEventRecord(e1));
    FA4_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    FA4_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (i >= warmup) ms.push_back(double(t));
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms;
}

}  // namespace fa4sim
