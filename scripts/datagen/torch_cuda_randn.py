#!/usr/bin/env python3
"""torch.randn(..., device="cuda", dtype=float32) on the CPU: the same Philox stream, the same layout.

flash-attention PR #2582's benchmark draws its inputs with `torch.manual_seed(0)` once and then
`torch.randn` on the GPU, shape after shape (flash_attn/cute/benchmarks/bench_fp4.py at the PR's head
6cb6f160). This module recomputes those draws without torch or a GPU, from the public code that makes
them:

  * pytorch/pytorch aten/src/ATen/native/cuda/DistributionTemplates.h (@0140b62d):
    calc_execution_policy (256 threads per block, grid = min(SMs x maxThreadsPerSM / 256,
    ceil(numel / 256)), philox offset += ((numel - 1) / (256 x grid x 4) + 1) x 4 per call) and
    distribution_elementwise_grid_stride_kernel (thread idx runs curand_init(seed, idx, offset), then
    for each pass i one curand_normal4: element idx + i x 4T + j x T gets component j, T = 256 x grid);
  * cuRAND's curand_kernel.h / curand_philox4x32_x.h / curand_normal.h (CUDA toolkit):
    curand_init(seed, subsequence, offset) puts the counter at (offset / 4, 0, subsequence, 0), key
    (seed lo, seed hi); each curand4 returns Philox4x32-10 of the counter and then adds one to it;
    curand_normal4 = two Box-Muller pairs (x, y) and (z, w): u = x 2^-32 + 2^-33,
    v = y 2^-32 2 pi + 2^-32 pi, s = sqrtf(-2 logf(u)), (sin v, cos v) x s.

What is not bit-exact: the GPU's logf (<= 1 ulp) and __sincosf (the MUFU's approximate sin/cos,
absolute error ~2^-21.4) are replaced by correctly rounded float32 results here, so a drawn float32
may differ from the GPU's in its last bits; `uncertain_bf16` counts the draws close enough to a bf16
rounding boundary that such a difference could change the bf16 value the benchmark uses.
The device enters through two numbers: SMs and maxThreadsPerMultiProcessor (B200: 148 and 2048).

    python3 scripts/datagen/torch_cuda_randn.py   # prints torch.randn(4) for seed 0 and the KATs
"""
import numpy as np

MASK = np.uint64(0xFFFFFFFF)
PHILOX_M0, PHILOX_M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
PHILOX_W0, PHILOX_W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
B200 = {"sms": 148, "threads_per_sm": 2048}
BLOCK = 256  # block_size_bound
UNROLL = 4   # sizeof(float4) / sizeof(float)


def philox4x32_10(ctr, key):
    """Philox4x32-10 (Random123, cuRAND's curand_Philox4x32_10): ctr = 4 uint64 arrays holding
    32-bit words, key = 2 of them; returns the 4 output words."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in ctr)
    k0, k1 = (np.asarray(k, dtype=np.uint64) for k in key)
    for r in range(10):
        p0 = PHILOX_M0 * c0
        p1 = PHILOX_M1 * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & MASK)
        if r < 9:
            k0 = (k0 + PHILOX_W0) & MASK
            k1 = (k1 + PHILOX_W1) & MASK
    return c0, c1, c2, c3


def box_muller(x, y):
    """cuRAND's _curand_box_muller of two uint32 arrays -> (sin, cos) x s as float32. The float32
    steps: u = fma(float(x), 2^-32, 2^-33) (exact product: fma and mul+add agree), v =
    fma(float(y), C, C / 2) with C = float32(2^-32 2 pi) (nvcc contracts x * C + D to an fma),
    s = sqrtf(-2 logf(u)); logf, sinf and cosf correctly rounded here (see the module note)."""
    f32 = np.float32
    c_inv = np.float64(f32(2.0 ** -32))
    c_2pi = np.float64(f32(2.0 ** -32 * 2.0 * np.pi))
    xf = np.asarray(x, dtype=np.float64).astype(f32).astype(np.float64)
    yf = np.asarray(y, dtype=np.float64).astype(f32).astype(np.float64)
    u = (xf * c_inv + np.float64(f32(c_inv / 2))).astype(f32)
    v = (yf * c_2pi + np.float64(f32(c_2pi / 2))).astype(f32)
    lg = np.log(u.astype(np.float64)).astype(f32)
    s = np.sqrt((f32(-2.0) * lg).astype(np.float64)).astype(f32)
    sn = np.sin(v.astype(np.float64)).astype(f32)
    cs = np.cos(v.astype(np.float64)).astype(f32)
    return sn * s, cs * s


def policy(numel, device=B200):
    """calc_execution_policy: (threads in the grid, philox offset increment)."""
    grid = min(device["sms"] * (device["threads_per_sm"] // BLOCK), (numel + BLOCK - 1) // BLOCK)
    threads = BLOCK * grid
    return threads, ((numel - 1) // (threads * UNROLL) + 1) * 4


class CudaGenerator:
    """torch's default CUDA generator after torch.manual_seed(seed): randn() advances the offset
    exactly as torch does, so successive calls give successive tensors."""

    def __init__(self, seed=0, device=B200):
        self.seed = seed
        self.offset = 0
        self.device = device

    def randn(self, *shape):
        numel = int(np.prod(shape))
        threads, inc = policy(numel, self.device)
        offset = self.offset
        self.offset += (inc + 3) // 4 * 4  # philox_cuda_state rounds the increment up to 4
        out = np.empty(numel, dtype=np.float32)
        idx = np.arange(threads, dtype=np.uint64)
        key = (np.uint64(self.seed & 0xFFFFFFFF), np.uint64(self.seed >> 32))
        passes = (numel - 1) // (threads * UNROLL) + 1
        for i in range(passes):  # pass i: counter (offset / 4 + i, 0, idx, 0)
            ctr0 = np.full(threads, offset // 4 + i, dtype=np.uint64)
            r = philox4x32_10((ctr0 & MASK, ctr0 >> np.uint64(32), idx & MASK, idx >> np.uint64(32)), key)
            a, b = box_muller(r[0], r[1])
            c, d = box_muller(r[2], r[3])
            base = np.arange(threads, dtype=np.int64) + i * threads * UNROLL
            for j, val in enumerate((a, b, c, d)):
                li = base + j * threads
                ok = li < numel
                out[li[ok]] = val[ok]
        return out.reshape(shape)


def uncertain_bf16(x, rel=2.0 ** -20):
    """How many float32 draws lie within `rel` (relative) of a bf16 rounding boundary (a tie), so
    that a last-bits difference from the GPU's logf / __sincosf could change their bf16 value."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    low = bits & 0xFFFF
    dist = np.abs(low - 0x8000).astype(np.float64) / 2.0 ** 23  # in units of the float's 2^e
    return int(np.count_nonzero(dist < rel))


def main():
    kat = philox4x32_10(([0], [0], [0], [0]), ([0], [0]))
    print("philox4x32-10 (0, 0):", " ".join(f"{int(w[0]):08x}" for w in kat))
    kat = philox4x32_10(([0xFFFFFFFF],) * 4, ([0xFFFFFFFF],) * 2)
    print("philox4x32-10 (ff, ff):", " ".join(f"{int(w[0]):08x}" for w in kat))
    kat = philox4x32_10(([0x243F6A88], [0x85A308D3], [0x13198A2E], [0x03707344]),
                        ([0xA4093822], [0x299F31D0]))
    print("philox4x32-10 (pi):", " ".join(f"{int(w[0]):08x}" for w in kat))
    g = CudaGenerator(0)
    print("torch.manual_seed(0); torch.randn(4, device='cuda') ->", g.randn(4))


if __name__ == "__main__":
    main()
