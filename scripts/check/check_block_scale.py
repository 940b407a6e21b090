#!/usr/bin/env python3
"""Cross-check fa4sim's block quantisers (`fa4sim block`) against torchao's MX and NVFP4 reference
code on CPU, block for block: the scale code of every block, and the element codes of every
block whose scale is not NaN (a block holding NaN or inf gets the NaN scale: there fa4sim's
elements must all decode to NaN; torchao's element codes are what its bit tricks make of NaN).

The reference is a line-by-line numpy + ml_dtypes port of torchao's functions (CI has no torch),
written from torchao@36027d82d1ad9949597ea16002ff4940374b1b94:
  torchao/prototype/mx_formats/mx_tensor.py    to_mx, _to_mx_rceil, _f32_to_e8m0_rceil,
                                               _e8m0_scale_to_reciprocal_fp32
  torchao/prototype/mx_formats/nvfp4_tensor.py nvfp4_quantize, per_tensor_amax_to_scale
  torchao/prototype/custom_fp_utils.py         _f32_to_floatx_unpacked (FP6/FP4 elements)
Every float operation is a float32 numpy operation, as torch's are on float32 tensors. One step
departs from torchao@36027d8: under EVEN a finite amax that rounds up to 2^128 keeps the scale
2^(128 - emax) (the exact rule, and torchao 0.18.0's), where 36027d8 gave the NaN scale.
When `import torch, torchao` works, torchao itself checks the port on each mode's first chunk;
with --torchao-all it runs on every block and fa4sim is compared with its output. torchao 0.18.0's
eager to_mx parts from torchao@36027d8 in three documented classes (TORCHAO_CLASSES,
docs/divergences.md), counted apart; any other difference is a mismatch.

Blocks: random (normal values times a per-block power of two in 2^-40..2^40, and raw random
float32 bit patterns) and adversarial (all-zero blocks, a NaN or inf in a block, amax exactly a
power of two, amax just above max_elem times a power of two, float32-subnormal-only blocks, amax
at the top of float32). --blocks per mode (default 10^7).

Exit codes: 0 no mismatch, 1 mismatches, 2 usage, 77 numpy or ml_dtypes missing.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:
    print(f"check_block_scale: SKIP: {e} (pip install numpy ml_dtypes)", flush=True)
    sys.exit(77)

F32 = np.float32
# element name -> (ml_dtypes type or None for the FP6/FP4 bit port, ebits, mbits, max_pos, max_pow2)
ELEMS = {
    "e4m3": (ml_dtypes.float8_e4m3fn, 4, 3, 448.0, 8),
    "e5m2": (ml_dtypes.float8_e5m2, 5, 2, 57344.0, 15),
    "e2m3": (None, 2, 3, 7.5, 2),
    "e3m2": (None, 3, 2, 28.0, 4),
    "e2m1": (None, 2, 1, 6.0, 2),
}
RULES = ("floor", "ceil", "even", "rceil")


# ---- the numpy port of torchao (names and steps as there)

def _f32_to_floatx_unpacked(x, ebits, mbits):
    """custom_fp_utils._f32_to_floatx_unpacked: RNE, saturating, no NaN/inf."""
    exp_bias = (1 << (ebits - 1)) - 1
    max_int = (1 << (ebits + mbits)) - 1
    sign_mask = 1 << (ebits + mbits)
    magic_adder = (1 << (23 - mbits - 1)) - 1
    max_normal = 2 ** ((1 << ebits) - 1 - exp_bias) * (((1 << (mbits + 1)) - 1) / (2 ** mbits))
    min_normal = 2 ** (1 - exp_bias)
    denorm_exp = (127 - exp_bias) + (23 - mbits) + 1
    denorm_mask_int = denorm_exp << 23
    denorm_mask_float = np.array(denorm_mask_int, dtype=np.int32).view(F32)
    xi = x.view(np.int32)
    sign = xi & np.int32(-0x80000000)
    xi = xi ^ sign
    xf = xi.view(F32)
    with np.errstate(invalid="ignore"):
        saturate_mask = xf >= F32(max_normal)
        denormal_mask = np.logical_and(~saturate_mask, xf < F32(min_normal))
    normal_mask = ~(saturate_mask | denormal_mask)
    denormal_x = (xf + denorm_mask_float).view(np.int32) - np.int32(denorm_mask_int)
    denormal_x = denormal_x.astype(np.uint8)
    normal_x = xf.view(np.int32).copy()
    mant_odd = (normal_x >> (23 - mbits)) & 1
    val_to_add = ((exp_bias - 127) << 23) + magic_adder
    with np.errstate(over="ignore"):
        normal_x = normal_x + np.int32(val_to_add) + mant_odd
    normal_x = (normal_x >> (23 - mbits)).astype(np.uint8)
    out = np.full(x.shape, max_int, dtype=np.uint8)
    out = np.where(denormal_mask, denormal_x, out)
    out = np.where(normal_mask, normal_x, out)
    sign_lp = (sign.view(np.uint32) >> np.uint32(32 - 1 - ebits - mbits)).astype(np.uint8) & sign_mask
    return out | sign_lp


def _cast_elem(x, elem):
    dt, ebits, mbits, _, _ = ELEMS[elem]
    if dt is None:
        return _f32_to_floatx_unpacked(x, ebits, mbits)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dt).view(np.uint8)


def _e8m0_scale_to_reciprocal_fp32(biased):
    rb = (254 - biased.astype(np.int32)).astype(np.uint8).astype(np.int32)
    bits = rb << 23
    bits = np.where(rb == 0, 0x00400000, bits)
    bits = np.where(rb == 255, 0x7F800001, bits)
    return bits.astype(np.int32).view(F32)


def _f32_to_e8m0_rceil(value):
    bits = value.view(np.int32)
    be = (bits >> 23) & 0xFF
    m = bits & 0x7FFFFF
    up = np.where(be == 0, m > 0x400000, m != 0)
    e = be + up.astype(np.int32)
    return np.where(np.isfinite(value), e, 255).astype(np.uint8)


def to_mx(x, elem, rule):
    """mx_tensor.to_mx on blocks x[nblocks, block] (float32): (scale codes, element codes)."""
    _, _, mbits, max_pos, max_pow2 = ELEMS[elem]
    with np.errstate(invalid="ignore"):
        max_abs = np.max(np.abs(x), axis=-1, keepdims=True)
    if rule == "rceil":
        with np.errstate(invalid="ignore", over="ignore"):
            descale = max_abs * F32(1.0 / max_pos)
        biased = _f32_to_e8m0_rceil(descale)
        with np.errstate(invalid="ignore", over="ignore"):
            data_lp = x * _e8m0_scale_to_reciprocal_fp32(biased)
    else:
        finite_amax = np.isfinite(max_abs)
        if rule == "even":
            nan_mask = np.isnan(max_abs)
            mi = max_abs.view(np.int32)
            val_to_add = 1 << (23 - mbits - 1)
            mask = ((1 << 9) - 1) << 23
            mi = (mi + np.int32(val_to_add)) & np.int32(mask - (1 << 32))
            max_abs = mi.view(F32).copy()
            max_abs[nan_mask] = np.nan
        mi = max_abs.view(np.int32)
        extracted = ((mi >> 23) & 0xFF) - 127
        if rule == "ceil":
            extracted = extracted + ((mi & 0x7FFFFF) > 0).astype(np.int32)
        unb = np.clip(extracted - max_pow2, -127, 128)
        biased = (unb + 127).astype(np.uint8)
        # The NaN scale for an inf or NaN amax only: a finite amax that EVEN rounds up to 2^128
        # (inf's bits) keeps its scale 2^(128 - emax), the exact rule and torchao 0.18.0's
        # (torchao@36027d8 tested the rounded amax here and gave the NaN scale).
        biased = np.where(finite_amax, biased, np.uint8(255)).astype(np.uint8)
        with np.errstate(invalid="ignore", over="ignore"):
            data_lp = x * _e8m0_scale_to_reciprocal_fp32(biased)
        if elem in ("e4m3", "e5m2"):  # torchao's saturation before the float8 cast
            data_lp = np.clip(data_lp, F32(-max_pos), F32(max_pos))
    return biased[..., 0], _cast_elem(data_lp, elem)


def nvfp4_quantize(x, per_tensor_scale=None):
    """nvfp4_tensor.nvfp4_quantize on blocks x[nblocks, 16]: (E4M3 scale codes, E2M1 codes)."""
    e4m3_eps, f8_max = F32(2.0 ** -6), F32(448.0)
    with np.errstate(invalid="ignore"):
        max_abs = np.max(np.abs(x), axis=-1)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        block_scale = max_abs / F32(6.0)
        if per_tensor_scale is None:
            s8 = np.clip(block_scale, e4m3_eps, f8_max).astype(ml_dtypes.float8_e4m3fn)
            s32 = s8.astype(F32)
            data_scaled = x * (F32(1.0) / s32)[:, None]
        else:
            pts = F32(per_tensor_scale)
            s8 = np.clip(block_scale / pts, e4m3_eps, f8_max).astype(ml_dtypes.float8_e4m3fn)
            s32 = s8.astype(F32)
            recip = (F32(1.0) / pts) / s32
            data_scaled = x * recip[:, None]
        data_scaled = np.clip(data_scaled, F32(-6.0), F32(6.0))
    return s8.view(np.uint8), _f32_to_floatx_unpacked(data_scaled, 2, 1)


def per_tensor_amax_to_scale(amax):
    return F32(amax) / F32(448.0 * 6.0)


# ---- torchao itself, when it can be imported: checks the port on the first chunk of each mode
# (this path could not be run where the script was written: no torch wheel for that machine)

def torchao_reference(x, mode, pts):
    import torch
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_mx
    from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize
    t = torch.from_numpy(np.ascontiguousarray(x))
    if mode[0] == "nvfp4":
        sc, packed = nvfp4_quantize(t, 16, None if pts is None else torch.tensor(float(pts)))
        p = packed.view(torch.uint8).numpy().reshape(x.shape[0], -1)
        codes = np.stack([p & 0xF, p >> 4], axis=-1).reshape(x.shape)  # pack_uint4: low nibble first
        return sc.view(torch.uint8).numpy().reshape(-1), codes
    elem = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "e2m3": "fp6_e2m3",
            "e3m2": "fp6_e3m2", "e2m1": torch.float4_e2m1fn_x2}[mode[1]]
    rule = getattr(ScaleCalculationMode, mode[2].upper())
    sc, d = to_mx(t.reshape(1, -1), elem, 32, rule)
    codes = d.view(torch.uint8).numpy().reshape(-1)
    if mode[1] == "e2m1":
        codes = np.stack([codes & 0xF, codes >> 4], axis=-1).reshape(-1)
    return sc.view(torch.uint8).numpy().reshape(-1), codes.reshape(x.shape)


# ---- blocks

def make_blocks(rng, n, bs, max_pos, kind):
    """n blocks of bs float32 of one kind."""
    if kind == "random":
        x = rng.standard_normal((n, bs)).astype(F32)
        x *= np.exp2(rng.integers(-40, 41, size=(n, 1))).astype(F32)
        return x
    if kind == "bits":  # any float32, NaN and inf included
        return rng.integers(0, 1 << 32, size=(n, bs), dtype=np.uint64).astype(np.uint32).view(F32)
    x = (rng.standard_normal((n, bs)) * 0.3).astype(F32)
    x *= np.exp2(rng.integers(-30, 31, size=(n, 1))).astype(F32)
    col = rng.integers(0, bs, size=n)
    rows = np.arange(n)
    sgn = np.where(rng.integers(0, 2, size=n) == 1, F32(-1), F32(1))
    k = np.exp2(rng.integers(-60, 61, size=n)).astype(F32)
    if kind == "zero":
        return np.where(rng.integers(0, 2, size=(n, 1)) == 1, F32(0), F32(-0.0)) * np.ones((n, bs), F32)
    if kind == "nan_inf":
        x[rows, col] = rng.choice(np.array([np.nan, np.inf, -np.inf, -np.nan], dtype=F32), size=n)
        return x
    if kind == "pow2":
        x = np.clip(x, -k[:, None] * F32(0.99), k[:, None] * F32(0.99))
        x[rows, col] = sgn * k
        return x
    if kind == "above_max":  # amax = max_elem 2^j and the next float32 or two above it
        base = (F32(max_pos) * k).astype(F32)
        up = rng.integers(1, 3, size=n).astype(np.int32)
        top = (base.view(np.int32) + up).view(F32)
        x = np.clip(x, -base[:, None], base[:, None])
        x[rows, col] = sgn * top
        return x
    if kind == "subnormal":
        b = rng.integers(1, 1 << 23, size=(n, bs), dtype=np.int64).astype(np.uint32)
        b |= (rng.integers(0, 2, size=(n, bs)).astype(np.uint32) << 31)
        return b.view(F32)
    if kind == "huge":  # amax near the top of float32
        x = (rng.standard_normal((n, bs))).astype(F32) * F32(2.0 ** 120)
        x[rows, col] = sgn * F32(3.4e38)
        return x
    raise ValueError(kind)


KINDS = ("random", "bits", "zero", "nan_inf", "pow2", "above_max", "subnormal", "huge")


# ---- running fa4sim

def fa4sim_block(fa4sim, tmp, x, args):
    inp, c, s, d = (os.path.join(tmp, n) for n in ("in.npy", "c.npy", "s.npy", "d.npy"))
    np.save(inp, x)
    subprocess.run([fa4sim, "block", "--in", inp, "--codes-out", c, "--scales-out", s,
                    "--decoded-out", d] + args, check=True, stdout=subprocess.DEVNULL)
    return np.load(s), np.load(c), np.load(d)


def compare(name, x, ref_s, ref_c, s, c, d, first):
    """Mismatching blocks: scale code, then element codes where the scale is not NaN, and
    all-NaN decoded values where it is."""
    nan_scale = ~np.isfinite(d).any(axis=1) & np.isnan(d).all(axis=1)
    bad = ref_s != s
    bad |= ~nan_scale & (ref_c != c).any(axis=1)
    scale_is_nan = (s == 0xFF) if name.startswith("mx") else ((s & 0x7F) == 0x7F)
    bad |= scale_is_nan & ~nan_scale
    for i in np.nonzero(bad)[0][:max(0, 3 - len(first))]:
        first.append(f"{name} block {x[i].view(np.uint32)[:8]}...: scale fa4sim 0x{s[i]:02X} "
                     f"torchao 0x{ref_s[i]:02X}; codes fa4sim {c[i][:8]} torchao {ref_c[i][:8]}")
    return int(bad.sum())


# Documented classes of torchao 0.18.0's eager to_mx (mx_tensor.py) against the port of
# torchao@36027d8, which fa4sim and the hardware rules follow (docs/divergences.md).
TORCHAO_CLASSES = (
    "amax inf: torchao 0.18.0 gives the block a finite scale (rceil 0xFE, x 2^-127; floor/ceil/even "
    "2^(128 - emax)), fa4sim and the port the NaN scale 0xFF",
    "scale code 0 (2^-127): torchao 0.18.0 multiplies by 1.0 (rceil) or divides by 2^-126 "
    "(floor/ceil/even: its clamp of the scale to the smallest normal), not by 2^-127",
    "rceil, descale just above 2^k: torchao 0.18.0 eager ceil(log2) in float32 gives 2^k, fa4sim "
    "and cvt.rp.satfinite.ue8m0x2.f32 2^(k+1)")


def classify_torchao(x, elem, rule, torchao_s, s, port_s, port_c, c):
    """For blocks where fa4sim and torchao 0.18.0 differ: an index into TORCHAO_CLASSES per block,
    -1 where no class fits or where fa4sim is not the port of torchao@36027d8 on that block; and
    the largest relative excess of descale over 2^k seen in the third class."""
    max_pos = ELEMS[elem][3]
    with np.errstate(invalid="ignore", over="ignore"):
        amax = np.max(np.abs(x), axis=-1)
        descale = amax * F32(1.0 / max_pos)
    # fa4sim is the port on the block (element codes aside under a NaN scale, where compare()
    # asks for all-NaN decoded values instead)
    ok = (s == port_s) & ((c == port_c).all(axis=1) | (s == 0xFF))
    out = np.full(s.shape, -1, dtype=np.int8)
    out[ok & np.isinf(amax) & (torchao_s != 0xFF) & (s == 0xFF)] = 0
    out[ok & (torchao_s == 0) & (s == 0)] = 1
    if rule != "rceil":
        return out, 0.0
    k = torchao_s.astype(np.int32) - 127
    with np.errstate(invalid="ignore", over="ignore"):
        rel = descale.astype(np.float64) / np.exp2(k.astype(np.float64)) - 1.0
    # log2(descale) = k + log2(1 + rel) within one float32 ulp of the integer k: torch's float32
    # log2 returns k, whose ceil is k
    ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(k), 1))) - 23)
    third = ok & np.isfinite(descale) & (s.astype(np.int32) == torchao_s.astype(np.int32) + 1) & (
        rel > 0) & (np.log1p(np.maximum(rel, 0)) / np.log(2) <= ulp)
    out[third] = 2
    return out, float(rel[third].max()) if third.any() else 0.0


def run_mode(fa4sim, tmp, rng, mode, blocks, chunk, use_torchao, torchao_all=False):
    """One mode: ('mx', elem, rule) or ('nvfp4', two_level). torchao_all: torchao itself on every
    chunk, the reference fa4sim is compared with (else the port, torchao on the first chunk)."""
    bs = 32 if mode[0] == "mx" else 16
    max_pos = ELEMS[mode[1]][3] if mode[0] == "mx" else 6.0
    done, bad, first, per_kind, port_total = 0, 0, [], {}, 0
    classes, max_rel = {}, 0.0  # torchao_all: documented classes of torchao 0.18.0's to_mx
    i = 0
    while done < blocks:
        n = min(chunk, blocks - done)
        kind = KINDS[i % len(KINDS)]
        i += 1
        x = make_blocks(rng, n, bs, max_pos, kind)
        pts = None
        if mode[0] == "mx":
            ref_s, ref_c = to_mx(x, mode[1], mode[2])
            args = ["--format", "mxfp8", "--elem", mode[1], "--rule", mode[2], "--block", "32"]
            name = f"mx {mode[1]} {mode[2]}"
        else:
            args = ["--format", "nvfp4"]
            if mode[1]:
                with np.errstate(invalid="ignore"):
                    amax = np.max(np.abs(x))
                pts = per_tensor_amax_to_scale(amax)
                if not (np.isfinite(pts) and pts > 0):
                    pts = F32(1.0 / 1024)
                args += ["--tensor-scale", float(pts).hex()]
            ref_s, ref_c = nvfp4_quantize(x, pts)
            name = "nvfp4" + (" two-level" if mode[1] else "")
        if use_torchao and (torchao_all or done == 0):  # the port against torchao itself
            ts, tc = torchao_reference(x, mode, pts if mode[0] == "nvfp4" else None)
            finite = np.isfinite(x).all(axis=1)
            differ = (ts != ref_s) | (finite[:, None] & (tc != ref_c)).any(axis=1)
            if mode[0] == "mx":  # torchao 0.18.0's documented classes are not counted
                cl, _ = classify_torchao(x, mode[1], mode[2], ts, ref_s, ref_s, ref_c, ref_c)
                differ &= cl < 0
            port_bad = int(differ.sum())
            if not torchao_all:
                print(f"   torchao itself vs the port on {n} blocks: {port_bad} differ outside the "
                      "documented classes", flush=True)
            port_total += port_bad
            bad += 0 if torchao_all else port_bad  # torchao_all: counted apart, below
            port_s, port_c = ref_s, ref_c
            if torchao_all:  # fa4sim is compared with torchao's own output, not the port's
                ref_s, ref_c = ts, tc
        s, c, d = fa4sim_block(fa4sim, tmp, x.reshape(n, bs), args)
        s, c, d = s.reshape(-1), c.reshape(n, bs), d.reshape(n, bs)
        if torchao_all and mode[0] == "mx":
            # Blocks of a documented class of torchao 0.18.0's to_mx are counted apart.
            cl, rel = classify_torchao(x, mode[1], mode[2], ref_s, s, port_s, port_c, c)
            known = (cl >= 0) & ((ref_s != s) | (ref_c != c).any(axis=1))
            for k in range(len(TORCHAO_CLASSES)):
                classes[k] = classes.get(k, 0) + int((known & (cl == k)).sum())
            max_rel = max(max_rel, rel)
            keep = ~known
            nb = compare(name, x[keep], ref_s[keep], ref_c[keep], s[keep], c[keep], d[keep], first)
        else:
            nb = compare(name, x, ref_s, ref_c, s, c, d, first)
        per_kind[kind] = per_kind.get(kind, 0) + nb
        bad += nb
        done += n
    if torchao_all:
        print(f"   torchao itself vs the port on {done} blocks: {port_total} differ outside the "
              "documented classes", flush=True)
    for k, v in classes.items():
        if v:
            print(f"   known (docs/divergences.md), {v} blocks: {TORCHAO_CLASSES[k]}", flush=True)
    if classes.get(2):
        print(f"   largest descale / 2^k - 1 in that class: {max_rel:.3g}", flush=True)
    return name, bad, first, per_kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fa4sim", default=os.environ.get("FA4SIM_BIN", "build/fa4sim"))
    ap.add_argument("--blocks", type=int, default=10_000_000, help="blocks per mode (default 10^7)")
    # 2^17 blocks: a chunk's float32 arrays (16 MiB for 32-element blocks) stay below glibc's
    # largest dynamic mmap threshold (32 MiB), so numpy's temporaries are reused from the heap
    # instead of being mapped and zeroed for every operation; and 10^6 blocks are 8 chunks, one of
    # each block kind (KINDS).
    ap.add_argument("--chunk", type=int, default=1 << 17, help="blocks per fa4sim call")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--modes", default="all", help="all, or a comma list like mx:e2m1:floor,nvfp4,nvfp4-2")
    ap.add_argument("--torchao-all", action="store_true",
                    help="run torchao itself on every chunk and compare fa4sim with it (default: the "
                         "port is the reference, torchao checks it on each mode's first chunk)")
    a = ap.parse_args()
    if not os.access(a.fa4sim, os.X_OK):
        print(f"check_block_scale: error: fa4sim binary '{a.fa4sim}' not found (--fa4sim)", file=sys.stderr)
        return 2
    modes = [("mx", e, r) for e in ELEMS for r in RULES] + [("nvfp4", False), ("nvfp4", True)]
    if a.modes != "all":
        by_name = {(f"mx:{m[1]}:{m[2]}" if m[0] == "mx" else ("nvfp4-2" if m[1] else "nvfp4")): m for m in modes}
        unknown = [w for w in a.modes.split(",") if w not in by_name]
        if unknown:
            print(f"check_block_scale: error: --modes: unknown mode '{unknown[0]}' (one of "
                  f"{', '.join(by_name)})", file=sys.stderr)
            return 2
        modes = [by_name[w] for w in a.modes.split(",")]  # in the order given
    try:
        import torch
        import torchao
        use_torchao = True
        torch.set_num_threads(1)
        ref = (f"torchao {torchao.__version__} itself (torch {torch.__version__}, CPU, 1 thread) on every "
               "block, and its numpy + ml_dtypes port of torchao@36027d8 against it" if a.torchao_all else
               "numpy + ml_dtypes port of torchao@36027d8, itself checked against the installed torchao")
    except ImportError:
        if a.torchao_all:
            print("check_block_scale: error: --torchao-all needs torch and torchao importable", file=sys.stderr)
            return 2
        use_torchao = False
        ref = "numpy + ml_dtypes port of torchao@36027d8"
        print("check_block_scale: SKIP (torchao part): torch/torchao not importable; the port alone "
              "is the reference", flush=True)
    print(f"check_block_scale: reference {ref}; ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}; "
          f"{a.blocks} blocks per mode, seed {a.seed}", flush=True)
    rng = np.random.default_rng(a.seed)
    total_bad = 0
    # The files passed to and from fa4sim (an input and three outputs per chunk) go to tmpfs where
    # there is one: writing them to a disk's page cache cost more system time than the check's own
    # arithmetic on the 2-core VM.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=shm, prefix="fa4sim-block-") as tmp:
        for m in modes:
            t0 = time.time()
            name, bad, first, per_kind = run_mode(a.fa4sim, tmp, rng, m, a.blocks, a.chunk, use_torchao,
                                                    a.torchao_all)
            total_bad += bad
            kinds = ", ".join(f"{k} {v}" for k, v in per_kind.items())
            print(f"{name:<22} {a.blocks} blocks: {bad} mismatching ({kinds}) [{time.time() - t0:.0f} s]", flush=True)
            for f in first:
                print("   first:", f)
    if total_bad:
        print(f"check_block_scale: FAIL: {total_bad} mismatching blocks", flush=True)
        return 1
    print("check_block_scale: OK: 0 mismatching blocks in every mode", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
