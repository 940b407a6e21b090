"""fa4sim: FlashAttention-4's softmax numerics, emulated bit for bit, for Python.

The same C++ library as the ``fa4sim`` command line (no second implementation): the software
exp2 (``ex2_emu``), the float32 -> bf16/fp16/E4M3/E5M2 conversions (``encode``, ``decode``,
``quantize``), the attention-forward model (``attention``, ``check``), the online softmax with
conditional rescaling (``online_softmax``), the roofline model (``roofline``) and the exp2 error
analysis (``exp2_analysis``). Analyses return the ``results`` of the CLI's ``--json`` report.

Arrays: NumPy arrays, or anything NumPy can view (``__array__``, DLPack, CPU torch tensors).
Inputs are used in place when they are C-contiguous and of the expected dtype; a non-contiguous
input is copied once. A wrong dtype raises TypeError; a bad option raises ValueError with the
message the CLI prints (after ``fa4sim: error:``). Long calls release the GIL and run on the
CLI's thread pool (``threads=0``: all cores); results do not depend on the thread count.
"""

import json as _json
import math as _math
import os as _os

import numpy as _np

_data = _os.path.join(_os.path.dirname(__file__), "data")
if _os.path.isdir(_data):  # an installed wheel carries data/archs and friends
    _os.environ.setdefault("FA4SIM_DATA_DIR", _data)

from . import _fa4sim as _ext  # noqa: E402

__all__ = ["ex2_emu", "exp2_analysis", "encode", "decode", "quantize", "format_info",
           "attention", "check", "online_softmax", "roofline", "__version__"]

__version__ = _ext.version()


# ---- argument conversion


def _to_numpy(x, name):
    """x as a NumPy array without copying where possible (torch CPU tensors, DLPack)."""
    if isinstance(x, _np.ndarray):
        return x
    if type(x).__module__.split(".")[0] == "torch":
        if x.device.type != "cpu":
            raise TypeError(f"{name} is on {x.device}; fa4sim runs on the CPU: pass {name}.cpu()")
        x = x.detach()
        if not x.is_contiguous():
            x = x.contiguous()
        import torch
        if x.dtype == torch.bfloat16:
            return x.view(torch.uint16).numpy().view(_bfloat16_dtype())
        if x.dtype in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None)):
            return x.view(torch.uint8).numpy()
        return x.numpy()
    if hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        return _np.asarray(x)
    if hasattr(x, "__dlpack__"):
        return _np.from_dlpack(x)
    return None  # a list, tuple or scalar


def _bfloat16_dtype():
    try:
        import ml_dtypes
    except ImportError as e:
        raise TypeError("bfloat16 input needs ml_dtypes (pip install ml_dtypes)") from e
    return _np.dtype(ml_dtypes.bfloat16)


def _float32(x, name):
    """A C-contiguous float32 array of x. Lists and scalars are rounded to float32 (as the CLI
    parses text values); arrays of another dtype are refused."""
    a = _to_numpy(x, name)
    if a is None:
        return _contig(_np.asarray(x, dtype=_np.float32))
    if a.dtype != _np.float32:
        raise TypeError(f"{name} has dtype {a.dtype}, expected float32 "
                        f"(convert explicitly, e.g. {name}.astype(numpy.float32))")
    return _contig(a)


def _attention_input(x, name):
    """float32, float16 or bfloat16 (the dtypes `fa4sim attention --q FILE.npy` reads), 4-D,
    as float32 (exact: every float16 and bfloat16 is a float32)."""
    a = _to_numpy(x, name)
    if a is None:
        a = _np.asarray(x, dtype=_np.float32)
    if a.dtype == _np.float16 or a.dtype.name == "bfloat16":
        a = a.astype(_np.float32)
    if a.dtype != _np.float32:
        raise TypeError(f"{name} has dtype {a.dtype}, expected float32, float16 or bfloat16")
    return _contig(a)


def _contig(a):
    """a itself when C-contiguous (0-d arrays stay 0-d), else a C-ordered copy."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _check_out(out, shape, dtype, name="out"):
    if not isinstance(out, _np.ndarray) or out.dtype != dtype or out.shape != shape:
        raise TypeError(f"{name} must be a numpy array of dtype {_np.dtype(dtype)} and shape {shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise TypeError(f"{name} must be C-contiguous and writeable")
    return out


def _empty(shape, dtype):
    """A new output array for an elementwise call. Large ones reuse the memory of dropped outputs
    (no page zeroing by the kernel: src/python/module.cpp, Note [Output buffers])."""
    dtype = _np.dtype(dtype)
    nbytes = _math.prod(shape) * dtype.itemsize
    if nbytes < _ext.output_buffer_min_bytes:
        return _np.empty(shape, dtype)
    return _ext.output_buffer(nbytes).view(dtype).reshape(shape)


def _code_dtype(total_bits):
    return {8: _np.uint8, 16: _np.uint16, 32: _np.uint32}[total_bits]


def _results(report_json):
    return _json.loads(report_json)["results"]


def _list_str(v):
    """An int, float or sequence of them as the CLI's comma-separated list."""
    if isinstance(v, (list, tuple)):
        return ",".join(_scalar_str(e) for e in v)
    return _scalar_str(v)


def _scalar_str(v):
    if isinstance(v, bool):
        raise TypeError(f"expected a number, got {v!r}")
    if isinstance(v, (float, _np.floating)):
        v = float(v)
        if v.is_integer() and abs(v) < 2.0**53:
            return str(int(v))  # "8", as one writes it on the command line
        return repr(v)  # round-trips exactly
    if isinstance(v, (int, _np.integer)):
        return str(int(v))
    if isinstance(v, str):
        return v
    raise TypeError(f"expected a number, got {type(v).__name__}")


# ---- exp2


def ex2_emu(x, degree=3, *, out=None, threads=0):
    """FlashAttention-4's software exp2 (``ex2_emulation``), bit for bit.

    Args:
        x: float32 array of any shape (lists and scalars are rounded to float32 first).
        degree: polynomial degree 0..5 (upstream uses 3).
        out: optional float32 array of x's shape to write into (no allocation).
        threads: worker threads for large arrays (0 = all cores); the bits do not depend on it.

    Returns:
        float32 array of x's shape: the GPU's result for every input, including the documented
        garbage outside [-127, 128) (see include/fa4sim/exp2_emu.h, the contract block).
    """
    a = _float32(x, "x")
    if out is None:
        out = _empty(a.shape, _np.float32)
    else:
        _check_out(out, a.shape, _np.float32)
    _ext.ex2_emu(a.reshape(-1), out.reshape(-1), int(degree), int(threads))
    return out


def exp2_analysis(degree=(3, 4, 5), range=(-20.0, 8.0), samples=4194304, sampling="uniform",
                  exhaustive=False, out_dtype="bf16", seed=1, reference="f64", threads=0):
    """Error of ex2_emu against 2^x: ``fa4sim exp2 --json``'s ``results`` dict.

    Args:
        degree: an int or a sequence of degrees 0..5 (``--degree``).
        range: (lo, hi): inputs in [lo, hi), within [-1022, 128] (``--range``).
        samples: sampled inputs, 1 .. 1e11; ignored when exhaustive (``--samples``).
        sampling: "uniform" (in value, what a softmax sees) or "bits" (over float32 patterns).
        exhaustive: every float32 of the range, with value-weighted statistics too.
        out_dtype: "bf16" or "fp16": the format results are rounded to.
        seed: seed of the counter-based input generator.
        reference: "f64" (double 2^x, near-midpoints re-decided in multiprecision) or "mp".
        threads: worker threads (0 = all cores); results are the same for any value.

    Returns:
        dict with ``degrees`` (one entry per degree: ``fp32_max_rel``, ``identical_pct``, ...)
        and the other keys of the CLI's report (README, "fa4sim exp2").
    """
    o = _ext.Exp2Options()
    o.degree = _list_str(degree)
    lo, hi = range
    o.range = f"{_scalar_str(lo)},{_scalar_str(hi)}"
    o.samples = _scalar_str(samples)
    o.sampling = sampling
    o.exhaustive = bool(exhaustive)
    o.out_dtype = out_dtype
    o.seed = _scalar_str(seed)
    o.reference = reference
    o.threads = int(threads)
    return _results(_ext.exp2_analysis(o))


# ---- number formats


def format_info(fmt):
    """Parameters and limits of a format: name, total_bits, exp_bits, man_bits, bias, has_inf,
    max_code, nan_code, max_finite, min_normal, min_subnormal. ``fmt`` as in encode()."""
    return _ext.format_info(fmt)


def encode(x, fmt="e4m3", overflow="satfinite", rounding="nearest", seed=None, *, out=None,
           threads=0):
    """float32 -> the bits of ``fmt``, as the GPU's ``cvt.rn.satfinite`` (bit for bit).

    Args:
        x: float32 array of any shape (lists and scalars are rounded to float32 first).
        fmt: "fp32", "bf16", "fp16", "e4m3" (E4M3FN), "e5m2", or the ml_dtypes / NumPy names
            ("float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", ...).
        overflow: "satfinite" (overflow and +-inf -> max finite, the kernel's) or "ieee"
            (-> inf; E4M3FN: NaN). NaN -> the canonical NaN code in both.
        rounding: "nearest" (ties to even, the hardware's) or "stochastic".
        seed: seed of the stochastic rounding stream (default 1); element i uses random number
            i of the stream, so results do not depend on how the array is split.
        out: optional array of codes (dtype below, x's shape) to write into.
        threads: worker threads for large arrays (0 = all cores).

    Returns:
        uint8 codes for FP8 (view them with ``.view(ml_dtypes.float8_e4m3fn)`` or
        ``torch.from_numpy(c).view(torch.float8_e4m3fn)``), uint16 for bf16/fp16, uint32 for fp32.
    """
    a = _float32(x, "x")
    dt = _code_dtype(_ext.format_info(fmt)["total_bits"])
    if out is None:
        out = _empty(a.shape, dt)
    else:
        _check_out(out, a.shape, dt)
    _ext.encode(a.reshape(-1), out.reshape(-1), fmt, overflow, rounding,
                None if seed is None else int(seed), int(threads))
    return out


def decode(codes, fmt="e4m3", *, out=None, threads=0):
    """Bits of ``fmt`` -> float32, exactly (every value of these formats is a float32).

    Args:
        codes: unsigned integer array (uint8, uint16 or uint32) of any shape, or an array of the
            format itself (ml_dtypes float8_e4m3fn / float8_e5m2 / bfloat16, numpy float16, torch
            float8/bfloat16 tensors): its bits are read. Bits above the format's width are ignored.
        fmt: the format, as in encode().
        out: optional float32 array of codes' shape to write into.
        threads: worker threads for large arrays (0 = all cores).

    Returns:
        float32 array; NaN codes decode to a quiet NaN with the code's sign and payload.
    """
    a = _to_numpy(codes, "codes")
    if a is None:
        a = _np.asarray(codes)
    if a.dtype.kind != "u":
        if a.dtype.itemsize in (1, 2) and (a.dtype.kind == "V" or a.dtype.kind == "f"):
            a = a.view(_np.uint8 if a.dtype.itemsize == 1 else _np.uint16)
        elif a.dtype == _np.float32:
            a = a.view(_np.uint32)
        else:
            raise TypeError(f"codes has dtype {a.dtype}, expected uint8, uint16 or uint32 codes "
                            "(or an array of the format itself, e.g. ml_dtypes.float8_e4m3fn)")
    if a.dtype.itemsize > 4:
        raise TypeError(f"codes has dtype {a.dtype}, expected uint8, uint16 or uint32")
    a = _contig(a)
    if out is None:
        out = _empty(a.shape, _np.float32)
    else:
        _check_out(out, a.shape, _np.float32)
    _ext.decode(a.reshape(-1), out.reshape(-1), fmt, int(threads))
    return out


def quantize(x, fmt="e4m3", overflow="satfinite", rounding="nearest", seed=None, *, out=None,
             threads=0):
    """decode(encode(x)): x rounded to ``fmt`` (bit for bit as the GPU), as float32.

    Args:
        x: float32 array of any shape (lists and scalars are rounded to float32 first).
        fmt: the format, as in encode().
        overflow: "satfinite" or "ieee", as in encode().
        rounding: "nearest" or "stochastic", as in encode().
        seed: seed of the stochastic rounding stream, as in encode().
        out: optional float32 array of x's shape to write into; may be x itself (in place).
        threads: worker threads for large arrays (0 = all cores).

    Returns:
        float32 array of x's shape.
    """
    a = _float32(x, "x")
    if out is None:
        out = _empty(a.shape, _np.float32)
    else:
        _check_out(out, a.shape, _np.float32)
    _ext.quantize(a.reshape(-1), out.reshape(-1), fmt, overflow, rounding,
                  None if seed is None else int(seed), int(threads))
    return out


# ---- attention


def attention(q, k, v, dtype="bf16", tau=None, max_offset=None, causal=False, softmax_scale=None,
              *, preset="upstream", descale="amax", q_scale=1.0, block_n=128, block_m=128,
              warp_rows=32, exp="mufu", order="reverse", allow_saturation=False, split=True,
              threads=0):
    """One attention forward pass as FlashAttention-4's sm100 kernel computes it, on your tensors.

    The model of ``fa4sim attention --q Q.npy --k K.npy --v V.npy`` (README "fa4sim attention"):
    Q, K, V quantised to ``dtype`` (FP8 with amax descales per (batch, kv_head)), S = Q K^T in
    float32, the online softmax with conditional rescaling, P converted to ``dtype``, O in float32,
    the bf16 output.

    Args:
        q: (batch, seq_q, heads, d) float32, float16 or bfloat16 (NumPy, torch CPU, DLPack).
        k: (batch, seq_k, kv_heads, d); heads must be a multiple of kv_heads (GQA).
        v: the shape of k.
        dtype: the kernel's input type: "bf16", "fp16", "e4m3" or "e5m2".
        tau: rescale threshold in log2 units (default: the preset's, 8 for 16-bit, 0 for FP8).
        max_offset: P offset in log2 units (default: the preset's, 8 for FP8, 0 for 16-bit).
        causal: top-left causal mask (query i sees keys j <= i); needs seq_q <= seq_k.
        softmax_scale: default 1/sqrt(d).
        preset: "upstream" (the kernel today) or "fp8-tau4" (the FP8 setting before the fix).
        descale: "amax" (FP8 descale = amax / fp8_max per (batch, kv_head)) or "one".
        q_scale: multiply Q by this before quantisation.
        block_n: keys per tile (128 on sm100).
        block_m: query rows per tile (the CTA's M).
        warp_rows: rows per warp for the O-rescale vote (sm100: 32).
        exp: exp2 of P: "mufu" (correctly rounded float32), "exact", "emu0".."emu5" (ex2_emu of
            that degree), or "schedule:FREQ,RES,START_FRG" (upstream's mixed schedule).
        order: key-tile order, "reverse" (the kernel's) or "forward".
        allow_saturation: run a (tau, max_offset) that fails the kernel's safety check (see
            check()); otherwise such a configuration raises ValueError.
        split: compute the error split (two extra model runs).
        threads: worker threads (0 = all cores); results are the same for any value.

    Returns:
        (o, lse, stats): o, (batch, seq_q, heads, d) float32 holding the kernel's bf16 output;
        lse, (batch, heads, seq_q) float32, natural log (flash-attention's softmax_lse);
        stats, the dict of ``fa4sim attention --json``'s ``results.runs[0]``: ``rows_pct`` and
        ``warps_pct`` (rescale shares), ``saturated`` / ``saturated_pct`` (P values the
        conversion clipped), ``error_split`` (qkv_quantization, saturation, p_conversion,
        kernel_rest), ``rel_l2_unquantized`` / ``rel_l2_dequantized`` against float64
        references, ``descales``, ...
    """
    arrs = [_attention_input(t, n) for t, n in ((q, "q"), (k, "k"), (v, "v"))]
    o = _ext.AttentionOptions()
    o.dtype = dtype
    if tau is not None:
        o.tau = _scalar_str(tau)
    if max_offset is not None:
        o.max_offset = _scalar_str(max_offset)
    o.causal = bool(causal)
    if softmax_scale is not None:
        o.softmax_scale = _scalar_str(softmax_scale)
    o.preset = preset
    o.descale = descale
    o.q_scale = _scalar_str(q_scale)
    o.block_n = _scalar_str(block_n)
    o.block_m = _scalar_str(block_m)
    o.warp_rows = _scalar_str(warp_rows)
    o.exp = exp
    o.order = order
    o.allow_saturation = bool(allow_saturation)
    o.no_split = not split
    flat = []
    for a in arrs:
        flat += [a.reshape(-1), [int(s) for s in a.shape]]
    out, lse, stats = _ext.attention(*flat, o, int(threads))
    b, sq, h, d = arrs[0].shape
    return out.reshape(b, sq, h, d), lse.reshape(b, h, sq), _json.loads(stats)


def check(dtype=None, tau=None, max_offset=None, preset="upstream"):
    """The kernel's safety condition max_offset + tau < log2(dtype_max): ``fa4sim check --json``'s
    ``results`` (``safe``, ``rows`` with worst_p, dtype_max, largest_safe_tau, explanation).

    Args:
        dtype: "bf16", "fp16", "e4m3", "e5m2", a list of them, or None for all four.
        tau, max_offset: log2 units; None = the preset's value per dtype.
        preset: "upstream" or "fp8-tau4".

    Unlike the CLI (exit code 1), an unsafe configuration does not raise: read ``["safe"]``.
    """
    if dtype is None:
        dtypes = []
    elif isinstance(dtype, str):
        dtypes = [dtype]
    else:
        dtypes = list(dtype)
    return _results(_ext.check(dtypes, preset, None if tau is None else float(tau),
                               None if max_offset is None else float(max_offset)))


# ---- online softmax


def online_softmax(scores, v=None, tau=0.0, dtype="bf16", max_offset=None, *, block=128,
                   warp_rows=32, exp="mufu", scale=None, order="reverse", allow_saturation=False,
                   threads=0):
    """FlashAttention-4's online softmax with conditional rescaling on a 2-D score matrix: the
    simulator of ``fa4sim rescale --dist file:S.npy``.

    Args:
        scores: (rows, keys) float32; -inf marks a masked key, NaN and +inf are refused. In
            log2 units unless ``scale`` is given.
        v: (keys, d) float32, or None to compute only the maxima, rescale flags and counts.
        tau: rescale threshold (log2 units); 0 = rescale on every increase of the max.
        dtype: the type P is converted to before P @ V: "bf16", "fp16", "e4m3", "e5m2", "fp32".
        max_offset: P offset in log2 units (default 8 for FP8, 0 otherwise).
        block: keys per tile.
        warp_rows: rows per warp (one rescale vote per warp and tile).
        exp: "mufu", "exact", "emu0".."emu5" or "schedule:FREQ,RES,START_FRG".
        scale: softmax scale in natural units (scores * scale * log2(e)); None = log2 units.
        order: "reverse" (the kernel's) or "forward" (the seed article's).
        allow_saturation: run a (tau, max_offset) that fails the kernel's safety check.
        threads: worker threads (0 = all cores); results are the same for any value.

    Returns:
        (o, lse, flags, stats): o, (rows, d) float32 (None without v); lse, (rows,) natural log
        (None without v); flags, (rows, ceil(keys / block)) uint8, 1 where that row rescaled
        (acc_scale < 1) on visiting that key block (blocks in key order); stats, a dict with
        ``rows_pct``, ``warps_pct``, ``saturated``, ``saturated_pct`` (as the CLI's JSON) and
        the raw counts.
    """
    s = _float32(scores, "scores")
    if s.ndim != 2:
        raise ValueError(f"scores has shape {s.shape}, expected 2-D (rows, keys)")
    rows, keys = s.shape
    vv = None
    d = 0
    if v is not None:
        vv = _float32(v, "v")
        if vv.ndim != 2 or vv.shape[0] != keys:
            raise ValueError(f"v has shape {vv.shape}, expected ({keys}, d): one row per key")
        d = vv.shape[1]
    o, lse, flags, stats = _ext.online_softmax(
        s.reshape(-1), rows, keys, None if vv is None else vv.reshape(-1), d, float(tau), dtype,
        None if max_offset is None else float(max_offset), int(block), int(warp_rows), exp,
        None if scale is None else float(scale), order, bool(allow_saturation), int(threads))
    n_blocks = flags.size // rows
    if vv is None:
        o, lse = None, None
    else:
        o = o.reshape(rows, d)
    return o, lse, flags.reshape(rows, n_blocks), _json.loads(stats)


# ---- roofline


def roofline(arch="all", d=128, dtype="bf16", tile="128x128", direction="fwd", emu_fraction=None,
             degree=3, schedule=None, measured=None, arch_file=(), sweep_d=None):
    """Per-architecture FA4 tile costs and the exp pipe model: ``fa4sim roofline --json``'s
    ``results`` (the same rows).

    Args:
        arch: "all", a name from data/archs ("a100", "h100_sxm" or "h100", "h200", "b200",
            "b300"), a list of names, or a path to an arch JSON file.
        d: head dimension or a list of them, 1..1024.
        dtype: MMA operand type "bf16", "fp8" or "all".
        tile: "MxN" (queries x keys), e.g. "128x128".
        direction: "fwd", "bwd" or "all".
        emu_fraction: also give the exp and softmax cycles with this fraction of exps emulated.
        degree: pipe-model degree(s) 0..5.
        schedule: None; "table" for every tuning-table entry; or (freq, res, start_frg).
        measured: path of a measured exp-throughput JSON (schema fa4sim/bench-exp-v1).
        arch_file: extra arch JSON files.
        sweep_d: "LO:HI:STEP" head dimensions (added to d).
    """
    o = _ext.RooflineOptions()
    o.arch = arch if isinstance(arch, str) else ",".join(arch)
    o.arch_files = [str(f) for f in arch_file]
    o.d = _list_str(d)
    if sweep_d is not None:
        o.sweep_d = sweep_d
    o.dtype = dtype
    o.tile = tile
    o.direction = direction
    if emu_fraction is not None:
        o.emu_fraction = _scalar_str(float(emu_fraction))
    o.degree = _list_str(degree)
    if schedule is not None:
        o.schedule_given = True
        o.schedule = "" if schedule == "table" else _list_str(schedule)
    if measured is not None:
        o.measured = str(measured)
    return _results(_ext.roofline(o))
