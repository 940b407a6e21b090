#!/usr/bin/env python3
"""scripts/datagen/torch_cuda_randn.py against published numbers: Random123's Philox4x32-10
known-answer vectors (DEShawResearch random123, examples/kat_vectors) and torch's own printout of
torch.randn(8, 8, device="cuda") after torch.manual_seed(0) (github.com/kapilsh/cuda-mode-lecture,
README.md, 4 printed decimals), and the philox offsets torch's calc_execution_policy gives
flash-attention PR #2582's benchmark shapes on a B200. Exit 77 without NumPy."""
import os
import sys

try:
    import numpy as np
except ImportError:
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                "datagen"))
import torch_cuda_randn as t  # noqa: E402

KAT = [((0, 0, 0, 0), (0, 0), "6627e8d5 e169c58d bc57ac4c 9b00dbd8"),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, "408f276d 41c83b0e a20bc7c6 6d5451fd"),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        "d16cfe09 94fdcceb 5001e420 24126ea1")]
PRINTED = [[-0.9247, -0.4253, -2.6438, 0.1452, -0.1209, -0.5797, -0.6229, -0.3284],
           [-1.0745, -0.3631, -1.6711, 2.2655, 0.3117, -0.1842, 1.2866, 1.1820],
           [-0.1271, 1.2169, 1.4353, 1.0605, -0.4941, -1.4244, -0.7244, -1.2973],
           [0.0697, -0.0074, 1.8969, 0.6878, -0.0779, -0.8373, 1.3506, -0.2879],
           [-0.5965, -0.3283, -0.9086, -0.8059, -0.7407, -0.0504, 0.5435, 1.5150],
           [0.0141, 0.4532, 1.6349, 0.7124, -0.1806, 1.0252, -1.4622, -0.7554],
           [-0.1836, 0.3824, 0.3918, -0.0830, 0.8971, -1.1123, 0.1116, 0.4863],
           [-0.5499, -0.3231, -0.5469, 0.9049, 0.2837, 0.1210, 0.4730, -1.0823]]


def main():
    bad = 0
    for ctr, key, want in KAT:
        got = " ".join(f"{int(w[0]):08x}" for w in t.philox4x32_10(tuple([c] for c in ctr),
                                                                     tuple([k] for k in key)))
        if got != want:
            print(f"KAT {ctr} {key}: {got} != {want}")
            bad += 1
    x = t.CudaGenerator(0).randn(8, 8)
    n = int(np.count_nonzero(np.round(x.astype(np.float64), 4) != np.array(PRINTED)))
    if n:
        print(f"torch.randn(8, 8) after manual_seed(0): {n} of 64 differ at 4 decimals")
        bad += 1
    # bench_fp4.py's first shapes: q, k, v of (1, 256, 16, 128) then of (1, 1024, 16, 128)
    g, offs = t.CudaGenerator(0), []
    for shape in [(1, 256, 16, 128)] * 3 + [(1, 1024, 16, 128)] * 3:
        offs.append(g.offset)
        _, inc = t.policy(int(np.prod(shape)))
        g.offset += (inc + 3) // 4 * 4
    if offs != [0, 4, 8, 12, 20, 28]:
        print(f"philox offsets {offs} != [0, 4, 8, 12, 20, 28]")
        bad += 1
    if t.policy(4) != (256, 4) or t.policy(1 << 26) != (148 * 8 * 256, 224):
        print(f"policy: {t.policy(4)}, {t.policy(1 << 26)}")
        bad += 1
    # a multi-pass draw: element idx + i * 4T + j * T is pass i's component j of thread idx
    g = t.CudaGenerator(0)
    big = g.randn(2 * 4 * 148 * 8 * 256 + 5).ravel()
    T = 148 * 8 * 256
    r = t.philox4x32_10(([1], [0], [7], [0]), ([0], [0]))  # pass 1 (counter x = 0 / 4 + 1), thread 7
    a, b = t.box_muller(r[0], r[1])
    c, d = t.box_muller(r[2], r[3])
    want = [a[0], b[0], c[0], d[0]]
    got = [big[7 + 4 * T + j * T] for j in range(4)]
    if got != want:
        print(f"multi-pass layout: {got} != {want}")
        bad += 1
    print("torch_cuda_randn: " + ("ok" if not bad else f"{bad} failed"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
