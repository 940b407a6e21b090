"""fa4sim: FlashAttention-4's softmax numerics for Python.

The same C++ library as the ``fa4sim`` command line (no second implementation): the software
exp2 (``ex2_emu``, bit for bit), the float32 -> bf16/fp16/E4M3/E5M2 and OCP MX conversions
(``encode``, ``decode``, ``quantize``, bit for bit), the attention-forward model (``attention``, ``check``;
the MMA's summation order is not modelled: docs/divergences.md), the online softmax with
conditional rescaling (``online_softmax``) and its experiment (``rescale``), the roofline
model (``roofline``), the schedule model (``schedule``), the exp2 error analysis
(``exp2_analysis``), the polynomial fit (``fit``), the formats table and per-value report
(``formats``, ``quantize_report``), the block-scaled formats MXFP8/6/4 and NVFP4
(``block_encode``, ``block_decode``, ``block_quantize``, ``block_tensor_scale``) and the
attention model on generated inputs (``attention_report``). Analyses return the ``results`` of
the CLI's ``--json`` report as a dict.

Arrays: NumPy arrays, torch CPU tensors, anything NumPy can view (``__array__``, DLPack), Python
numbers and lists; results come back as the input's kind (torch -> torch, NumPy -> NumPy,
number -> number). Inputs are used in place when they are C-contiguous and of the expected
dtype; a non-contiguous input is copied once. Formats are names ("e4m3", "bfloat16", ...) or
dtype objects (NumPy, ml_dtypes, torch), the same set everywhere. A wrong type raises TypeError,
a wrong value ValueError, both naming the argument. Long calls release the GIL and run on the
CLI's thread pool (``threads=0``: all cores); results do not depend on the thread count.
"""

import math as _math
import os as _os

import numpy as _np

from . import _fa4sim as _ext

# An installed wheel carries data/archs and friends: the library reads them from there (unless
# FA4SIM_DATA_DIR is set), without writing anything into the environment.
_data = _os.path.join(_os.path.dirname(__file__), "data")
if _os.path.isdir(_data):
    _ext.set_packaged_data_dir(_data)

__all__ = ["ex2_emu", "exp2_analysis", "fit", "encode", "decode", "quantize", "quantize_report",
           "format_info", "formats", "block_encode", "block_decode", "block_quantize",
           "block_tensor_scale", "attention", "attention_report", "check", "online_softmax",
           "rescale", "roofline", "schedule", "__version__", "__git_revision__"]

__version__ = _ext.version()  # PEP 440, e.g. "0.1.0"
__git_revision__ = _ext.git_revision()  # `git describe --always --dirty` of the build


# ---- argument checks: errors in Python's terms (the argument's name, the allowed values)


def _int(v, name, lo, hi):
    """v as an int in [lo, hi]; bools and floats (even 3.0) are refused: a degree of 2.7 or True
    is a mistake, not a request."""
    if isinstance(v, bool) or not isinstance(v, (int, _np.integer)):
        raise TypeError(f"{name} must be an int, got {v!r} ({type(v).__name__})")
    v = int(v)
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {v}")
    return v


def _threads(v):
    return _int(v, "threads", 0, 1024)  # the CLI's --threads range; 0 = all cores


def _seed(v):
    return None if v is None else _int(v, "seed", 0, 2**63 - 1)


def _number(v, name, finite=True):
    """v as a Python float (int, float or NumPy number; not bool, not a string)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, _np.integer, _np.floating)):
        raise TypeError(f"{name} must be a number, got {v!r} ({type(v).__name__})")
    f = float(v)
    if finite and not _math.isfinite(f):
        raise ValueError(f"{name} must be finite, got {f}")
    return f


_KERNEL_DTYPES = ["bf16", "fp16", "e4m3", "e5m2"]  # the kernel's input types (attention, check)


def _str(v, name):
    if not isinstance(v, str):
        raise TypeError(f"{name} must be a string, got {v!r} ({type(v).__name__})")
    return v


def _bool(v, name):
    if not isinstance(v, (bool, _np.bool_)):
        raise TypeError(f"{name} must be True or False, got {v!r}")
    return bool(v)


def _choice(v, name, choices):
    if not isinstance(v, str):
        raise TypeError(f"{name} must be a string, one of {', '.join(map(repr, choices))}; "
                        f"got {v!r} ({type(v).__name__})")
    if v not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {v!r}")
    return v


_CLI_FLAG = __import__("re").compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def _python_terms(message, rename=None):
    """A message of the C++ layer (written for the CLI) with `--some-flag` as `some_flag`, the
    Python argument, or as rename[flag] where the names differ."""
    rename = rename or {}
    out = _CLI_FLAG.sub(lambda m: rename.get(m.group(1), m.group(1).replace("-", "_")), message)
    return out.strip()


def _call(f, *args, rename=None):
    """f(*args) (a function of the extension), its ValueError in Python's terms."""
    try:
        return f(*args)
    except ValueError as e:
        raise ValueError(_python_terms(str(e), rename)) from None


# ---- formats: one set of names everywhere, or dtype objects (NumPy, ml_dtypes, torch)


def _format_names():
    return _ext.format_names()


def _fmt(fmt, name="fmt", allowed=None):
    """The canonical name ('e4m3', 'bf16', ...) of a format given as a string ("e4m3",
    "float8_e4m3fn", "bfloat16", ...) or a dtype object (numpy.float16, ml_dtypes.bfloat16,
    numpy.dtype(...), torch.float8_e5m2). allowed: the canonical names this argument takes."""
    if isinstance(fmt, str):
        text = fmt
    elif type(fmt).__module__.split(".")[0] == "torch" and type(fmt).__name__ == "dtype":
        text = str(fmt).split(".")[-1]
    else:
        try:
            text = _np.dtype(fmt).name if fmt is not None else None
        except TypeError:
            text = None
        if text is None:
            raise TypeError(f"{name} must be a format name such as 'e4m3' or a dtype (numpy, "
                            f"ml_dtypes, torch), got {fmt!r}")
    valid = allowed or _format_names()
    try:
        canon = _ext.format_info(text)["name"]
    except ValueError:
        canon = None
    if canon is None or canon not in valid:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, valid))} (or the NumPy/"
                         f"ml_dtypes/torch names and dtypes: 'bfloat16', 'float8_e4m3fn', ...), "
                         f"got {fmt!r}")
    return canon


def _typed_dtype(canon):
    """The NumPy dtype whose values are the format canon (ml_dtypes for FP8 and bfloat16)."""
    if canon == "fp32":
        return _np.dtype(_np.float32)
    if canon == "fp16":
        return _np.dtype(_np.float16)
    try:
        import ml_dtypes
    except ImportError as e:
        raise TypeError(f"{canon} arrays need ml_dtypes (pip install ml_dtypes)") from e
    name = _ext.format_info(canon)["name"]
    ml = _ML_DTYPES.get(name, name)
    if not hasattr(ml_dtypes, ml):
        raise TypeError(f"ml_dtypes {ml_dtypes.__version__} has no dtype for {canon}")
    return _np.dtype(getattr(ml_dtypes, ml))


# ml_dtypes' names of the formats NumPy lacks (each a 1- or 2-byte dtype holding the code).
_ML_DTYPES = {"bf16": "bfloat16", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2",
              "e2m1": "float4_e2m1fn", "e2m3": "float6_e2m3fn", "e3m2": "float6_e3m2fn",
              "e8m0": "float8_e8m0fnu"}
_TYPED_NAMES = tuple(_ML_DTYPES.values())


def _torch_dtype(canon):
    import torch
    # torch has no unpacked FP4/FP6 dtypes (float4_e2m1fn_x2 packs two codes per byte)
    name = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "e4m3": "float8_e4m3fn",
            "e5m2": "float8_e5m2", "e8m0": "float8_e8m0fnu"}.get(canon, canon)
    if not hasattr(torch, name):
        raise TypeError(f"torch {torch.__version__} has no dtype for {canon}")
    return getattr(torch, name)


# ---- arrays in, the caller's kind out


class _In:
    """An input as a NumPy array (no copy where possible) and how to give results back: kind is
    "torch", "numpy", "npscalar" (a NumPy scalar) or "scalar" (a Python number); fmt is the
    canonical format of a floating-point input (its dtype's), None for integers."""

    def __init__(self, a, kind, fmt, python=False):
        self.a, self.kind, self.fmt = a, kind, fmt
        self.python = python  # Python numbers (a number, a list): no dtype of their own

    def give(self, result):
        """result (a NumPy array of the input's shape) as the input's kind."""
        if self.kind == "torch":
            import torch
            if result.dtype.kind == "V" or result.dtype.name in _TYPED_NAMES:
                t = _torch_dtype(_fmt(result.dtype))
                return torch.from_numpy(result.view(_code_dtype(8 * result.itemsize))).view(t)
            return torch.from_numpy(result)
        if self.kind == "scalar":
            return result.reshape(())[()].item() if result.dtype.kind in "uif" else result[()]
        if self.kind == "npscalar":
            return result.reshape(())[()]
        return result


def _dtype_format(dt):
    """The canonical format of a floating-point NumPy dtype (float16/32, ml_dtypes), or None."""
    if dt.kind == "f" or dt.kind == "V" and dt.name in _TYPED_NAMES:
        try:
            return _fmt(dt)
        except (TypeError, ValueError):
            return None
    return None


def _from_torch(x, name):
    if x.device.type != "cpu":
        raise TypeError(f"{name} is on {x.device}; fa4sim runs on the CPU: pass {name}.cpu()")
    x = x.detach()
    if not x.is_contiguous():
        x = x.contiguous()
    import torch
    for canon in ("bf16", "e4m3", "e5m2", "e8m0"):
        try:
            td = _torch_dtype(canon)
        except TypeError:
            continue
        if x.dtype == td:
            raw = x.view(torch.uint8 if x.element_size() == 1 else torch.int16).numpy()
            return _In(raw.view(_code_dtype(8 * x.element_size())), "torch", canon)
    if x.dtype == torch.bool or x.is_complex():
        raise TypeError(f"{name} has dtype {x.dtype}, expected a real number type")
    a = x.numpy()
    return _In(a, "torch", _dtype_format(a.dtype))


def _input(x, name, text=True):
    """x (torch tensor, NumPy array or scalar, DLPack / __array__ producer, list, number) as an
    _In. Bools, strings, None and objects are refused. text: Python numbers are values, rounded
    to float32 as the CLI reads text (else kept as they are: decode's integer codes)."""
    if x is None or isinstance(x, (str, bytes, bool, _np.bool_)):
        raise TypeError(f"{name} must be a number or an array, got {x!r}")
    if type(x).__module__.split(".")[0] == "torch":
        return _from_torch(x, name)
    if isinstance(x, _np.ndarray):
        kind, a = "numpy", x
    elif isinstance(x, _np.generic):
        kind, a = "npscalar", _np.asarray(x)
    elif isinstance(x, (int, float)):
        kind, a = "scalar", _np.asarray(x)
    elif hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        kind, a = "numpy", _np.asarray(x)
    elif hasattr(x, "__dlpack__"):
        kind, a = "numpy", _np.from_dlpack(x)
    else:
        kind, a = "numpy", _np.asarray(x)  # a list or tuple
    if a.dtype.kind not in "uifV" or a.dtype.kind == "V" and _dtype_format(a.dtype) is None:
        raise TypeError(f"{name} has dtype {a.dtype}, expected numbers")
    python = kind == "scalar" or kind == "numpy" and not isinstance(x, _np.ndarray) and \
        not hasattr(x, "__array__") and not hasattr(x, "__dlpack__")
    if python and text:
        a = _text_values(a, name)  # Python numbers: rounded to float32 as the CLI reads text
    fmt = None if python and not text else _dtype_format(a.dtype)
    return _In(a, kind, fmt, python)


def _text_values(a, name):
    """Python numbers (float64/int64) as float32, refusing what `fa4sim quantize VALUE` refuses:
    finite values beyond the float32 range, nonzero values that read as 0."""
    if a.dtype.kind not in "if":
        raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}")
    with _np.errstate(over="ignore", under="ignore"):
        f = a.astype(_np.float32)
    wide = _np.asarray(a, dtype=_np.float64)
    big = _np.isinf(f) & _np.isfinite(wide)
    if big.any():
        v = float(wide[big].flat[0])
        raise ValueError(f"{name}: {v!r} is beyond the float32 range (max 3.40282347e38); "
                         "pass float('inf') for an infinity")
    tiny = (f == 0) & (wide != 0)
    if tiny.any():
        v = float(wide[tiny].flat[0])
        raise ValueError(f"{name}: {v!r} is below float32's smallest subnormal (1.4e-45) and "
                         "would read as 0 (write 0 if you mean zero)")
    return f


def _float32_in(x, name, fmt=None):
    """_In of x with float32 data: float32 used in place when C-contiguous; float16, bfloat16
    and FP8 inputs (exact in float32) converted; float64 and integer arrays refused."""
    i = _input(x, name)
    if i.fmt is None:
        raise TypeError(f"{name} has dtype {i.a.dtype}, expected float32 (or float16, bfloat16: "
                        f"exact in float32); convert explicitly, e.g. {name}.astype(numpy.float32)")
    if i.fmt != "fp32":
        i.a = _decode_codes(_contig(i.a.view(_code_dtype(8 * i.a.dtype.itemsize))), i.fmt, 0)
    i.a = _contig(i.a)
    return i


def _contig(a):
    """a itself when C-contiguous (0-d arrays stay 0-d), else a C-ordered copy."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _out_array(out, shape, dtype, name="out"):
    """out (a NumPy array or torch tensor of the given shape and dtype) as a writeable NumPy view
    on the same memory, and what to return."""
    if type(out).__module__.split(".")[0] == "torch":
        if out.device.type != "cpu" or not out.is_contiguous():
            raise TypeError(f"{name} must be a contiguous CPU tensor")
        i = _from_torch(out, name)
        a = i.a
        want = _np.dtype(dtype)
        if i.fmt is not None and i.fmt != "fp32" and want.kind == "u":
            a = a.view(want) if a.dtype.itemsize == want.itemsize else a
        if a.dtype != want or a.shape != tuple(shape):
            raise TypeError(f"{name} must have shape {tuple(shape)} and dtype {want}, got "
                            f"{tuple(out.shape)} {out.dtype}")
        return a, out
    if not isinstance(out, _np.ndarray) or out.shape != tuple(shape):
        raise TypeError(f"{name} must be a numpy array (or torch tensor) of shape {tuple(shape)}")
    a = out
    if a.dtype != _np.dtype(dtype) and a.dtype.itemsize == _np.dtype(dtype).itemsize and \
            _np.dtype(dtype).kind == "u" and _dtype_format(a.dtype) is not None:
        a = a.view(dtype)  # typed codes (ml_dtypes, float16): written through a view
    if a.dtype != _np.dtype(dtype):
        raise TypeError(f"{name} must be a numpy array of dtype {_np.dtype(dtype)} and shape "
                        f"{tuple(shape)}, got {out.dtype}")
    if not a.flags.c_contiguous or not a.flags.writeable:
        raise TypeError(f"{name} must be C-contiguous and writeable")
    return a, out


def _empty(shape, dtype):
    """A new output array for an elementwise call. Large ones reuse the memory of dropped outputs
    (no page zeroing by the kernel: src/python/module.cpp, Note [Output buffers])."""
    dtype = _np.dtype(dtype)
    nbytes = _math.prod(shape) * dtype.itemsize
    if nbytes < _ext.output_buffer_min_bytes:
        return _np.empty(shape, dtype)
    return _ext.output_buffer(nbytes).view(dtype).reshape(shape)


def _code_dtype(total_bits):
    """The unsigned integer type of a format's codes: uint8 up to 8 bits (FP4, FP6 and FP8 codes
    in the low bits), uint16, uint32."""
    return _np.uint8 if total_bits <= 8 else _np.uint16 if total_bits <= 16 else _np.uint32


def _decode_codes(codes, canon, threads):
    """float32 values of C-contiguous codes of format canon."""
    out = _empty(codes.shape, _np.float32)
    _call(_ext.decode, codes.reshape(-1), out.reshape(-1), canon, threads)
    return out


def _results(results):
    """An analysis' results: a dict built by the extension from the report (the values of the
    CLI's --json, no JSON text in between)."""
    return results


def _list_str(v, name):
    """An int, float or sequence of them as the CLI's comma-separated list."""
    if isinstance(v, (list, tuple)):
        if not v:
            raise ValueError(f"{name} must not be empty")
        return ",".join(_scalar_str(e, name) for e in v)
    return _scalar_str(v, name)


def _scalar_str(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, float, _np.integer, _np.floating)):
        raise TypeError(f"{name} must be a number, got {v!r} ({type(v).__name__})")
    if isinstance(v, (float, _np.floating)):
        v = float(v)
        if not _math.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v}")
        if v.is_integer() and abs(v) < 2.0**53:
            return str(int(v))  # "8", as one writes it on the command line
        return repr(v)  # round-trips exactly
    return str(int(v))


# ---- exp2


def ex2_emu(x, degree=3, *, out=None, threads=0):
    """FlashAttention-4's software exp2 (``ex2_emulation``), bit for bit.

    Args:
        x: float32 values: a NumPy array, a torch CPU tensor, a number or a list (Python
            numbers are rounded to float32 first, and refused where `fa4sim quantize` refuses
            them: beyond the float32 range, or nonzero but reading as 0). float16, bfloat16 and
            FP8 inputs are exact in float32 and accepted; float64 arrays are refused.
        degree: polynomial degree, an int 0..5 (upstream uses 3).
        out: optional float32 array (NumPy or torch) of x's shape to write into.
        threads: worker threads for large arrays, 0..1024 (0 = all cores); the bits do not
            depend on it.

    Returns:
        float32 values of x's shape and kind: torch in, torch out; NumPy in, NumPy out; a number
        in, a Python float out.

    Contract (include/fa4sim/core/exp2_emu.h): every float32 input gives the GPU's bits, for
    every degree. In the valid domain -126 <= x < 128 the result is 2^x up to the polynomial's
    error (float32 max rel over [-20, 8): degree 3 8.77e-5, 4 3.05e-6, 5 1.56e-7). Outside it
    the result is what the kernel's op sequence gives, not 2^x, on purpose:
      * x in [-127, -126): too small (a subnormal 2^-126 * (p - 1)); every x <= -127, -inf and
        NaN give +0;
      * x >= 128: garbage (only floor(x) mod 512 survives): 128 -> +inf, (128, 129) -> NaN
        patterns, 129 -> -0.0, 2^23 -> 1.0;
      * +inf: NaN (0x7FFFFFFF) for degree >= 1, 1.0 for degree 0; +-0 and subnormals: 1.0.
    The kernel only calls it on x - rowmax <= 0 plus its offset; use it as a model of the
    kernel, not as a general exp2.
    """
    i = _float32_in(x, "x")
    degree = _int(degree, "degree", 0, 5)
    threads = _threads(threads)
    if out is None:
        o, ret = _empty(i.a.shape, _np.float32), None
    else:
        o, ret = _out_array(out, i.a.shape, _np.float32)
    _call(_ext.ex2_emu, i.a.reshape(-1), o.reshape(-1), degree, threads)
    return ret if ret is not None else i.give(o)


def exp2_analysis(degree=None, range=(-20.0, 8.0), samples=4194304, sampling="uniform",
                  exhaustive=False, out_dtype="bf16", seed=1, reference="f64", threads=0, *,
                  coeffs=None):
    """Error of ex2_emu against 2^x: ``fa4sim exp2 --json``'s ``results`` dict.

    Args:
        degree: an int or a sequence of degrees 0..5 (``--degree``); None: 3, 4 and 5 (or
            the degree of ``coeffs``).
        range: (lo, hi): inputs in [lo, hi), within [-1022, 128] (``--range``).
        samples: sampled inputs, 1 .. 1e11; ignored when exhaustive (``--samples``).
        sampling: "uniform" (in value, what a softmax sees) or "bits" (over float32 patterns).
        exhaustive: every float32 of the range, with value-weighted statistics too.
        out_dtype: "bf16" or "fp16": the format results are rounded to.
        seed: seed of the counter-based input generator.
        reference: "f64" (double 2^x, near-midpoints re-decided in multiprecision) or "mp".
        threads: worker threads (0 = all cores); results are the same for any value.
        coeffs: your own polynomial instead of upstream's (``--coeffs``): a sequence of float32
            coefficients c0, c1, ... (degree = their count - 1; give no ``degree``), or the path
            of a file holding them (a fit's JSON report, or text).

    Returns:
        dict with ``degrees`` (one entry per degree: ``fp32_max_rel``, ``identical_pct``, ...)
        and the other keys of the CLI's report (README, "fa4sim exp2").
    """
    o = _ext.Exp2Options()
    if degree is not None:
        degrees = degree if isinstance(degree, (list, tuple)) else [degree]
        o.degree = ",".join(str(_int(d, "degree", 0, 5)) for d in degrees)
        o.degree_given = True
    if coeffs is not None:
        o.coeffs_given = True
        if isinstance(coeffs, (str, _os.PathLike)):
            o.coeffs = _os.fspath(coeffs)
        else:
            o.coeffs = _list_str(list(coeffs) if isinstance(coeffs, (list, tuple, _np.ndarray))
                                 else coeffs, "coeffs")
    if not isinstance(range, (list, tuple)) or len(range) != 2:
        raise TypeError(f"range must be a pair (lo, hi), got {range!r}")
    o.range = f"{_scalar_str(range[0], 'range')},{_scalar_str(range[1], 'range')}"
    o.samples = str(_int(samples, "samples", 1, 10**11))
    o.sampling = _choice(sampling, "sampling", ("uniform", "bits"))
    o.exhaustive = _bool(exhaustive, "exhaustive")
    o.out_dtype = _fmt(out_dtype, "out_dtype", ["bf16", "fp16"])
    o.seed = str(_int(seed, "seed", 0, 2**63 - 1))
    o.reference = _choice(reference, "reference", ("f64", "mp"))
    o.threads = _threads(threads)
    return _results(_call(_ext.exp2_analysis, o))


def fit(degree=3, objective="fp32-maxrel", range=(-20.0, 8.0), fix_c0=False, minimax_only=False,
        threads=0):
    """Fit the float32 polynomial p(f) ~ 2^f of ex2_emu for an objective and score it against
    upstream's: ``fa4sim fit --json``'s ``results`` dict (the same fit, the same numbers).

    Args:
        degree: polynomial degree, an int 1..5.
        objective: "fp32-maxrel" or "fp32-meanrel" (every float32 of [0, 1)), "bf16-identical",
            "fp16-identical" or "bf16-max-ulp" (value-weighted over ``range``).
        range: (lo, hi): inputs x of 2^x in [lo, hi) for the bf16/fp16 objectives, within
            [-1022, 128]; the fp32 objectives and minimax_only do not use it.
        fix_c0: keep c0 = 1 exactly (p(0) = 1, as upstream's fit).
        minimax_only: stop after the multiprecision minimax fit (no float32 rounding or search).
        threads: worker threads, 0..1024 (0 = all cores); results are the same for any value.

    Returns:
        dict: the coefficients found, their scores and upstream's (README, "fa4sim fit").
    """
    names = list(_ext.fit_objective_names())
    if not isinstance(range, (list, tuple)) or len(range) != 2:
        raise TypeError(f"range must be a pair (lo, hi), got {range!r}")
    return _results(_call(_ext.fit, _int(degree, "degree", 1, 5), _choice(objective, "objective", names),
                          _number(range[0], "range"), _number(range[1], "range"),
                          _bool(fix_c0, "fix_c0"), _bool(minimax_only, "minimax_only"),
                          _threads(threads)))


# ---- number formats


def format_info(fmt):
    """Parameters and limits of a format: name, total_bits, exp_bits, man_bits, bias, has_inf,
    max_code, nan_code, max_finite, min_normal, min_subnormal. ``fmt`` as in encode()."""
    return _ext.format_info(_fmt(fmt))


def _rounding(overflow, rounding, seed):
    overflow = _choice(overflow, "overflow", ("satfinite", "ieee"))
    rounding = _choice(rounding, "rounding", ("nearest", "stochastic"))
    seed = _seed(seed)
    if seed is not None and rounding != "stochastic":
        raise ValueError("seed is only used by stochastic rounding (add rounding='stochastic')")
    return overflow, rounding, seed


def encode(x, fmt="e4m3", overflow="satfinite", rounding="nearest", seed=None, *, typed=False,
           out=None, threads=0):
    """float32 -> the bits of ``fmt``, as the GPU's ``cvt.rn.satfinite`` (bit for bit).

    Args:
        x: float32 values (NumPy array, torch CPU tensor, number, list), as in ex2_emu().
            float16/bfloat16/FP8 inputs are exact in float32 and accepted.
        fmt: the format: "fp32", "bf16", "fp16", "e4m3" (E4M3FN), "e5m2", their NumPy /
            ml_dtypes / torch names ("float32", "bfloat16", "float16", "float8_e4m3fn",
            "float8_e5m2"), or a dtype object (numpy.float16, ml_dtypes.bfloat16,
            torch.float8_e5m2, ...). The same names work in every function. Also the OCP MX
            formats "e2m1" (FP4), "e2m3", "e3m2" (FP6) and "e8m0" (the MX scale), or
            ml_dtypes' float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e8m0fnu.
        overflow: "satfinite" (overflow and +-inf -> max finite, the kernel's) or "ieee"
            (-> inf; E4M3FN, E8M0: NaN). NaN -> the canonical NaN code in both. e2m1, e2m3 and
            e3m2 have no inf and no NaN: satfinite only (NaN -> +max), as in the CLI.
        rounding: "nearest" (ties to even, the hardware's) or "stochastic" (not for the MX
            formats, as in the CLI).
        seed: seed of the stochastic rounding stream, 0 .. 2^63-1 (default 1); element i uses
            random number i of the stream, so results do not depend on how the array is split.
        typed: False: unsigned integer codes (uint8 for FP8 and the MX formats, in the low
            bits; uint16 for bf16/fp16, uint32 for fp32). True: an array of the format itself
            (ml_dtypes.float8_e4m3fn, bfloat16, float4_e2m1fn, numpy.float16, ...;
            torch.float8_e4m3fn, ... for torch input, which has no unpacked FP4/FP6 dtype), the
            same bits.
        out: optional array (NumPy or torch) of x's shape to write into: codes, or of the format.
        threads: worker threads for large arrays, 0..1024 (0 = all cores).

    Returns:
        The codes, of x's kind: torch in, torch out; NumPy in, NumPy out; a number in, a Python
        int (typed: a NumPy scalar of the format) out.
    """
    i = _float32_in(x, "x")
    canon = _fmt(fmt)
    overflow, rounding, seed = _rounding(overflow, rounding, seed)
    threads = _threads(threads)
    dt = _code_dtype(_ext.format_info(canon)["total_bits"])
    if out is None:
        o, ret = _empty(i.a.shape, dt), None
    else:
        o, ret = _out_array(out, i.a.shape, dt)
    _call(_ext.encode, i.a.reshape(-1), o.reshape(-1), canon, overflow, rounding, seed, threads)
    if ret is not None:
        return ret
    return i.give(o.view(_typed_dtype(canon)) if typed else o)


def decode(codes, fmt=None, *, out=None, threads=0):
    """Bits of ``fmt`` -> float32, exactly (every value of these formats is a float32).

    Args:
        codes: either an array of the format itself (ml_dtypes float8_e4m3fn / float8_e5m2 /
            bfloat16, numpy float16 or float32, torch float8 / bfloat16 / float16 tensors), whose
            format is its dtype's; or unsigned integer codes of exactly the format's width
            (uint8 for FP8 and the MX formats, uint16 for bf16/fp16, uint32 for fp32), which
            need ``fmt``. Codes of
            another width, or a typed array whose format is not ``fmt``, raise TypeError; codes
            above the format's largest raise ValueError (nothing is truncated).
        fmt: the format, as in encode(); None: the format of the typed ``codes``.
        out: optional float32 array (NumPy or torch) of codes' shape to write into.
        threads: worker threads for large arrays, 0..1024 (0 = all cores).

    Returns:
        float32 values of codes' kind (torch, NumPy, Python float for a Python int code); NaN
        codes decode to a quiet NaN with the code's sign and payload.
    """
    i = _input(codes, "codes", text=False)
    if i.python and i.a.dtype.kind not in "iu":
        raise TypeError(f"codes must be integer codes or an array of the format, got {codes!r}")
    threads = _threads(threads)
    want = None if fmt is None else _fmt(fmt)
    if i.fmt is not None:  # typed: its dtype says the format
        if want is not None and want != i.fmt:
            raise TypeError(f"codes are {i.a.dtype} ({i.fmt}) but fmt is {fmt!r}: drop fmt, or "
                            f"pass raw codes (e.g. codes.view(numpy.uint8))")
        canon = i.fmt
        a = i.a.view(_code_dtype(8 * i.a.dtype.itemsize))
    else:
        if want is None:
            raise TypeError(f"codes has dtype {i.a.dtype}: integer codes need fmt (e.g. "
                            "fmt='e4m3'), or pass an array of the format (ml_dtypes, torch)")
        canon = want
        info = _ext.format_info(canon)
        dt = _np.dtype(_code_dtype(info["total_bits"]))
        top = (1 << info["total_bits"]) - 1
        if i.python:
            if (i.a < 0).any() or (i.a > top).any():
                raise ValueError(f"codes must be in 0..{top:#x} for {canon}")
            a = i.a.astype(dt)
        elif i.a.dtype != dt:
            raise TypeError(f"codes has dtype {i.a.dtype}, but {canon} codes are {dt} (pass "
                            f"codes.astype(numpy.{dt}) if every code is at most {top:#x})")
        else:
            a = i.a
        if info["total_bits"] < 8 * dt.itemsize and (a > top).any():
            raise ValueError(f"codes has values above {canon}'s largest code {top:#x}")
    a = _contig(a)
    if out is None:
        o, ret = _empty(a.shape, _np.float32), None
    else:
        o, ret = _out_array(out, a.shape, _np.float32)
    _call(_ext.decode, a.reshape(-1), o.reshape(-1), canon, threads)
    return ret if ret is not None else i.give(o)


def quantize(x, fmt="e4m3", overflow="satfinite", rounding="nearest", seed=None, *, out=None,
             threads=0):
    """decode(encode(x)): x rounded to ``fmt`` (bit for bit as the GPU), as float32.

    Args:
        x: float32 values (NumPy array, torch CPU tensor, number, list), as in ex2_emu().
        fmt: the format, as in encode() (a name or a dtype).
        overflow: "satfinite" or "ieee", as in encode().
        rounding: "nearest" or "stochastic", as in encode().
        seed: seed of the stochastic rounding stream, as in encode().
        out: optional float32 array (NumPy or torch) of x's shape to write into; may be x
            itself (in place).
        threads: worker threads for large arrays, 0..1024 (0 = all cores).

    Returns:
        float32 values of x's shape and kind (torch, NumPy, Python float).
    """
    i = _float32_in(x, "x")
    canon = _fmt(fmt)
    overflow, rounding, seed = _rounding(overflow, rounding, seed)
    threads = _threads(threads)
    if out is None:
        o, ret = _empty(i.a.shape, _np.float32), None
    else:
        o, ret = _out_array(out, i.a.shape, _np.float32)
    _call(_ext.quantize, i.a.reshape(-1), o.reshape(-1), canon, overflow, rounding, seed, threads)
    return ret if ret is not None else i.give(o)


# ---- attention


def _kernel_knobs(o, max_offset, causal, softmax_scale, preset, descale, q_scale, block_n,
                  block_m, warp_rows, exp, order, allow_saturation, split):
    """The kernel's knobs of attention() and attention_report() into AttentionOptions o."""
    if max_offset is not None:
        o.max_offset = _scalar_str(max_offset, "max_offset")
    o.causal = _bool(causal, "causal")
    if softmax_scale is not None:
        o.softmax_scale = _scalar_str(softmax_scale, "softmax_scale")
    o.preset = _str(preset, "preset")
    o.descale = _choice(descale, "descale", ("amax", "one"))
    o.q_scale = _scalar_str(q_scale, "q_scale")
    o.block_n = str(_int(block_n, "block_n", 1, 1 << 20))
    o.block_m = str(_int(block_m, "block_m", 1, 1 << 20))
    o.warp_rows = str(_int(warp_rows, "warp_rows", 1, 1024))
    o.exp = _str(exp, "exp")
    o.order = _choice(order, "order", ("reverse", "forward"))
    o.allow_saturation = _bool(allow_saturation, "allow_saturation")
    o.no_split = not _bool(split, "split")


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
        exp: exp2 of P: "mufu" (the H200's ex2/rcp/lg2.approx, bit-exact models read once from
            data/mufu/), "cr" (fast mode: correctly rounded float32, not bit-exact with the
            hardware), "exact", "emu0".."emu5" (ex2_emu of that degree), or
            "schedule:FREQ,RES,START_FRG" (upstream's mixed schedule).
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

    The error split and how its parts combine: ref_a is the float64 attention of the float32
    inputs, ref_b that of the dequantised inputs (the kernel's own error is measured against
    ref_b). Each part is the norm of the difference of two runs that differ in that part alone:
    qkv_quantization = ||ref_b - ref_a|| / ||ref_a||; with O the output, O_u the output with P
    converted without the clip and O_n with P not converted, saturation = ||O - O_u||,
    p_conversion = ||O_u - O_n||, kernel_rest = ||O_n - ref_b||, each / ||ref_b||. The parts
    are norms, not shares: they do not add up to the total. The differences do: O - ref_b =
    (O - O_u) + (O_u - O_n) + (O_n - ref_b), so always (triangle inequality)
    rel_l2_dequantized <= saturation + p_conversion + kernel_rest, and (as ||ref_b|| <= (1 +
    qkv_quantization) ||ref_a||) rel_l2_unquantized <= (1 + qkv_quantization)
    rel_l2_dequantized + qkv_quantization. Where the parts' errors are
    uncorrelated they add in quadrature, rel_l2_dequantized^2 ~ saturation^2 + p_conversion^2
    + kernel_rest^2: an estimate, not a bound. Correlated errors make the total larger or
    smaller: every run's output is rounded to bf16, so with 16-bit inputs p_conversion and
    kernel_rest share that rounding and partly cancel (the quadrature sum 32 % above the total
    in docs/commands/attention.md's run; within 0.6 % for e4m3 and e5m2 there).
    kernel_rest is the model's float32 rounding in its own order (Eigen's Q K^T, one fma per
    key for P V), not the tensor core's, and with a correctly rounded 1 / row_sum where the
    kernel uses rcp.approx (docs/divergences.md, "fa4sim attention"): it stands for the
    kernel's rest, it does not measure it.
    """
    ins = [_float32_in(t, n) for t, n in ((q, "q"), (k, "k"), (v, "v"))]
    for i, n in zip(ins, "qkv"):
        if i.a.ndim != 4:
            raise ValueError(f"{n} has shape {i.a.shape}, expected 4-D (batch, seq, heads, d)")
    o = _ext.AttentionOptions()
    o.dtype = _fmt(dtype, "dtype", _KERNEL_DTYPES)
    if tau is not None:
        o.tau = _scalar_str(tau, "tau")
    _kernel_knobs(o, max_offset, causal, softmax_scale, preset, descale, q_scale, block_n, block_m,
                  warp_rows, exp, order, allow_saturation, split)
    flat = []
    for i in ins:
        flat += [i.a.reshape(-1), [int(s) for s in i.a.shape]]
    out, lse, stats = _call(_ext.attention, *flat, o, _threads(threads))
    b, sq, h, d = ins[0].a.shape
    back = ins[0] if ins[0].kind == "torch" else _In(None, "numpy", None)
    return back.give(out.reshape(b, sq, h, d)), back.give(lse.reshape(b, h, sq)), stats


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
    elif isinstance(dtype, (list, tuple)):
        dtypes = [_fmt(d, "dtype", _KERNEL_DTYPES) for d in dtype]
    else:
        dtypes = [_fmt(dtype, "dtype", _KERNEL_DTYPES)]
    return _results(_call(_ext.check, dtypes, _str(preset, "preset"),
                          None if tau is None else _number(tau, "tau"),
                          None if max_offset is None else _number(max_offset, "max_offset")))


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
        exp: "mufu" (bit-exact MUFU models), "cr" (fast, correctly rounded), "exact",
            "emu0".."emu5" or "schedule:FREQ,RES,START_FRG".
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
    si = _float32_in(scores, "scores")
    s = si.a
    if s.ndim != 2 or s.shape[0] < 1 or s.shape[1] < 1:
        raise ValueError(f"scores has shape {s.shape}, expected 2-D (rows, keys) with at least "
                         "one row and one key")
    rows, keys = s.shape
    vv = None
    d = 0
    if v is not None:
        vv = _float32_in(v, "v").a
        if vv.ndim != 2 or vv.shape[0] != keys or vv.shape[1] < 1:
            raise ValueError(f"v has shape {vv.shape}, expected ({keys}, d): one row per key")
        d = vv.shape[1]
    block = _int(block, "block", 1, 1 << 20)
    if block > keys:
        raise ValueError(f"block = {block} is larger than the {keys} keys of scores (pass "
                         f"block <= {keys})")
    args = (s.reshape(-1), rows, keys, None if vv is None else vv.reshape(-1), d,
            _number(tau, "tau"), _fmt(dtype, "dtype", _KERNEL_DTYPES + ["fp32"]),
            None if max_offset is None else _number(max_offset, "max_offset"), block,
            _int(warp_rows, "warp_rows", 1, 1024), _str(exp, "exp"),
            None if scale is None else _number(scale, "scale"),
            _choice(order, "order", ("reverse", "forward")),
            _bool(allow_saturation, "allow_saturation"), _threads(threads))
    o, lse, flags, stats = _call(_ext.online_softmax, *args,
                                 rename={"dist": "", "softmax-scale": "scale", "block-n": "block"})
    n_blocks = flags.size // rows
    if vv is None:
        o, lse = None, None
    else:
        o = si.give(o.reshape(rows, d)) if si.kind == "torch" else o.reshape(rows, d)
        lse = si.give(lse) if si.kind == "torch" else lse
    return o, lse, flags.reshape(rows, n_blocks), stats


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
    archs = [arch] if isinstance(arch, str) else list(arch)
    o.arch = ",".join(_str(a, "arch") for a in archs)
    o.arch_files = [_os.fspath(f) for f in ([arch_file] if isinstance(arch_file, str) else arch_file)]
    ds = d if isinstance(d, (list, tuple)) else [d]
    o.d = ",".join(str(_int(x, "d", 1, 1024)) for x in ds)
    if sweep_d is not None:
        o.sweep_d = _str(sweep_d, "sweep_d")
    o.dtype = _choice(dtype, "dtype", ("bf16", "fp8", "all"))
    if not isinstance(tile, str):
        raise TypeError(f"tile must be 'MxN' (queries x keys), e.g. '128x128'; got {tile!r}")
    o.tile = tile
    o.direction = _choice(direction, "direction", ("fwd", "bwd", "all"))
    if emu_fraction is not None:
        o.emu_fraction = _scalar_str(emu_fraction, "emu_fraction")
    degrees = degree if isinstance(degree, (list, tuple)) else [degree]
    o.degree = ",".join(str(_int(x, "degree", 0, 5)) for x in degrees)
    if schedule is not None:
        o.schedule_given = True
        if isinstance(schedule, str) and schedule != "table":
            raise ValueError(f"schedule must be 'table' or (freq, res, start_frg), got {schedule!r}")
        o.schedule = "" if schedule == "table" else _list_str(schedule, "schedule")
    if measured is not None:
        o.measured = _os.fspath(measured)
    return _results(_call(_ext.roofline, o))


# ---- the schedule model


def schedule(arch="h200", *, batch=4, heads=32, kv_heads=None, seq=4096, seq_k=None, d=128,
             causal=False, tau=0.0, emu_fraction=0.0, degree=3, rescale_share=0.02, tile=None,
             search=True, spec=None, arch_file=(), inputs=None, kernel_factors=None):
    """FA4 forward's predicted time, TFLOP/s and binding resource (the schedule model):
    ``fa4sim schedule --json``'s ``results`` (the same numbers).

    Args:
        arch: a name from data/archs ("h100_sxm", "h200", "b200", "b300"), a path to an arch
            JSON file, or a list of them.
        batch: batch size, 1..65535.
        heads: query heads, 1..4096.
        kv_heads: key/value heads (GQA), 1..4096; None = heads.
        seq: sequence length (queries, and keys unless seq_k), 1..2^22.
        seq_k: keys, 1..2^22; None = seq.
        d: head dimension, a multiple of 8 in 8..256.
        causal: causal mask.
        tau: conditional rescaling threshold in log2 units, 0..64 (0 = always rescale).
        emu_fraction: share of exps emulated on the FMA pipe, 0..1.
        degree: polynomial degree of the emulated exp2, 0..5.
        rescale_share: with tau > 0, the share of iterations in which a warp still rescales O,
            0..1 (``rescale()`` measures it for a score distribution).
        tile: "MxN" instead of the kernel's own tile (M 64..256 a multiple of 64, N 16..256 a
            multiple of 16); None = the kernel's.
        search: also search tau in {0, 4, 8} x fraction in {0, 1/8, .., 1} for the best speed.
        spec: path of a kernel description (schema fa4sim/schedule-v1); None = the arch's own
            (data/schedule/sm90.json or sm100.json).
        arch_file: extra arch JSON files (added to arch).
        kernel_factors: measured / modelled time per compiled kernel (H200), applied to the kernels
            it holds: a path (schema fa4sim/schedule-kernel-factors-v1) or "none" for the model
            alone; None = data/schedule/sm90_kernel_factors.json without spec, none with spec.
        inputs: instead of one configuration, a list of dicts with any of the keys arch, batch,
            heads, heads_kv, seq, seq_k, d, causal, tau, emu_fraction, degree, rescale_share,
            tile ([m, n]); missing keys take the arguments' values (``--inputs FILE``).

    Returns:
        dict: ``rows`` (per arch: ``stock``, ``with_tricks``, ``best``), or with ``inputs``
        ``predictions`` (one per entry, each with its ``input``). A prediction holds ``ms``,
        ``tflops``, ``binding``, ``busy`` shares, ``iteration_cycles``, ``clock_mhz``, ... (docs/
        schedule.md says what the model covers and how well it matched measurements).
    """
    o = _ext.ScheduleOptions()
    archs = [arch] if isinstance(arch, (str, _os.PathLike)) else list(arch)
    if not archs:
        raise ValueError("arch must name at least one architecture")
    o.arch = ",".join(_os.fspath(a) if isinstance(a, _os.PathLike) else _str(a, "arch")
                      for a in archs)
    o.arch_files = [_os.fspath(f) for f in ([arch_file] if isinstance(arch_file, str)
                                            else arch_file)]
    if spec is not None:
        o.spec = _os.fspath(spec)
    if kernel_factors is not None:
        o.kernel_factors = (_os.fspath(kernel_factors) if isinstance(kernel_factors, _os.PathLike)
                            else _str(kernel_factors, "kernel_factors"))
        if not o.kernel_factors:
            raise ValueError("kernel_factors must be a path or 'none', got an empty string "
                             "(leave it None for the default)")
    o.batch = _int(batch, "batch", 1, 65535)
    o.heads = _int(heads, "heads", 1, 4096)
    o.kv_heads = 0 if kv_heads is None else _int(kv_heads, "kv_heads", 1, 4096)
    o.seq = _int(seq, "seq", 1, 1 << 22)
    o.seq_k = 0 if seq_k is None else _int(seq_k, "seq_k", 1, 1 << 22)
    o.d = _int(d, "d", 8, 256)
    o.causal = int(_bool(causal, "causal"))
    o.tau = _in_range(tau, "tau", 0.0, 64.0)
    o.emu_fraction = _in_range(emu_fraction, "emu_fraction", 0.0, 1.0)
    o.degree = _int(degree, "degree", 0, 5)
    o.rescale_share = _in_range(rescale_share, "rescale_share", 0.0, 1.0)
    if tile is not None:
        if not isinstance(tile, str):
            raise TypeError(f"tile must be 'MxN', e.g. '128x128'; got {tile!r}")
        o.tile = tile
    o.no_search = not _bool(search, "search")
    if inputs is not None:
        if not isinstance(inputs, (list, tuple)) or not all(isinstance(e, dict) for e in inputs):
            raise TypeError(f"inputs must be a list of dicts (one configuration each), got "
                            f"{type(inputs).__name__}")
        inputs = [{k: _plain(v) for k, v in e.items()} for e in inputs]
    return _call(_ext.schedule, o, inputs)


def _in_range(v, name, lo, hi):
    f = _number(v, name)
    if not lo <= f <= hi:
        raise ValueError(f"{name} must be in [{lo:g}, {hi:g}], got {f:g}")
    return f


def _plain(v):
    """NumPy scalars and arrays as Python numbers and lists (what JSON holds)."""
    if isinstance(v, _np.generic):
        return v.item()
    if isinstance(v, _np.ndarray):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_plain(e) for e in v]
    return v


# ---- the rescale experiment and the attention experiment on generated inputs


def _list_of(v, name, each):
    """A value or a non-empty list/tuple of values, each passed through each(x, name)."""
    items = list(v) if isinstance(v, (list, tuple)) else [v]
    if not items:
        raise ValueError(f"{name} must not be empty")
    return [each(x, name) for x in items]


def rescale(tau=(0, 8), dtype="bf16", max_offset=None, dist="normal:1.5", rows=None, keys=None, *,
            block=128, d=128, v_dist="normal", exp="mufu", scale=None, order="auto", warp_rows=32,
            seed=None, seeds=1, rng="fa4sim", allow_saturation=False, counts_only=False,
            threads=0):
    """The rescale experiment: FA4's online softmax with conditional rescaling on drawn score
    matrices against a float64 softmax(S) @ V, over every (dist, tau, dtype): ``fa4sim rescale
    --json``'s ``results`` (the same numbers for the same seed).

    Args:
        tau: rescale threshold(s) in log2 units, each 0..64 (0 = rescale on every increase).
        dtype: P's MMA input type(s): "bf16", "fp16", "e4m3", "e5m2", "fp32" (no cast), or a
            list of them.
        max_offset: P offset in log2 units, 0..64 (default: 8 for FP8, 0 otherwise).
        dist: score distribution(s) in log2 units: "normal:SIGMA", "rise:TOTAL[:SIGMA]",
            "peaked", "file:PATH.npy" (a 2-D float32 array), or a list of them.
        rows: query rows, 1..2^20 (None: 256, or a file's row count).
        keys: keys per row, 1..2^20 (None: 8192, or a file's key count).
        block: keys per tile, 1..2^20 (a ragged last tile is masked).
        d: head dimension (columns of V), 1..4096.
        v_dist: V's entries: "normal" (N(0,1)) or "uniform" (U[-1,1)).
        exp: exp2 of P: "mufu" (bit-exact MUFU models), "cr" (fast, correctly rounded), "exact",
            "emu0".."emu5" or "schedule:FREQ[,RES[,START_FRG]]".
        scale: softmax scale in natural units (> 0); None = scores in log2 units.
        order: key-tile order: "auto" (forward for drawn scores, reverse for file: scores),
            "reverse" (the sm100 kernel's) or "forward" (the seed article's).
        warp_rows: rows per warp for the rescale vote, 1..1024.
        seed: first seed, 0..2^53 (None: the CLI's default, 1).
        seeds: repeat over this many seeds (seed .. seed + seeds - 1), 1..10000.
        rng: "fa4sim" (thread-count independent) or "numpy:SEED" (NumPy's default_rng streams).
        allow_saturation: run (tau, dtype) pairs that fail the kernel's safety check.
        counts_only: only count rescales and saturations (no P @ V, no errors).
        threads: worker threads, 0..1024 (0 = all cores); results are the same for any value.

    Returns:
        dict: ``runs`` (one per dist x tau x dtype: rescale shares ``rows_pct``/``warps_pct``,
        ``rel_l2``, ``lse_max_err``, ``saturated``, ... as mean/sd/min/max over the seeds), the
        one-shot experiment and the rest of the CLI's report (docs/commands/rescale.md).
    """
    o = _ext.RescaleOptions()
    given = []
    o.tau = ",".join(_list_of(tau, "tau", lambda x, n: _scalar_str(_in_range(x, n, 0, 64), n)))
    o.dtype = ",".join(_list_of(dtype, "dtype",
                                lambda x, n: _fmt(x, n, _KERNEL_DTYPES + ["fp32"])))
    if max_offset is not None:
        o.max_offset = _scalar_str(_in_range(max_offset, "max_offset", 0, 64), "max_offset")
    o.dist = ",".join(_list_of(dist, "dist", _str))
    for name, v in (("rows", rows), ("keys", keys)):
        if v is not None:
            setattr(o, name, str(_int(v, name, 1, 1 << 20)))
            given.append("--" + name)
    o.block = str(_int(block, "block", 1, 1 << 20))
    o.d = str(_int(d, "d", 1, 4096))
    o.v_dist = _choice(v_dist, "v_dist", ("normal", "uniform"))
    o.exp = _str(exp, "exp")
    if scale is not None:
        f = _number(scale, "scale")
        if not f > 0:
            raise ValueError(f"scale must be > 0, got {f:g}")
        o.scale = _scalar_str(f, "scale")
    o.order = _choice(order, "order", ("auto", "reverse", "forward"))
    o.warp_rows = str(_int(warp_rows, "warp_rows", 1, 1024))
    if seed is not None:
        o.seed = str(_int(seed, "seed", 0, 1 << 53))
        given.append("--seed")
    o.seeds = str(_int(seeds, "seeds", 1, 10000))
    o.rng = _str(rng, "rng")
    o.allow_saturation = _bool(allow_saturation, "allow_saturation")
    o.counts_only = _bool(counts_only, "counts_only")
    o.threads = _threads(threads)
    return _call(_ext.rescale, o, given, rename={"softmax-scale": "scale", "block-n": "block"})


def attention_report(batch=1, heads=8, kv_heads=None, seq=1024, seq_k=None, d=128, dtype="bf16",
                     tau=None, max_offset=None, causal=False, softmax_scale=None, *, seed=None,
                     preset="upstream", descale="amax", q_scale=1.0, block_n=128, block_m=128,
                     warp_rows=32, exp="mufu", order="reverse", allow_saturation=False,
                     split=True, threads=0):
    """``fa4sim attention`` on its own seeded N(0, 1) Q, K, V (no tensors of yours: for those,
    ``attention()``): ``--json``'s ``results``, one run per (seq, dtype, tau), the same numbers.

    Args:
        batch: batch size, 1..2^20.
        heads: query heads, 1..4096.
        kv_heads: key/value heads (GQA: heads a multiple of it), 1..4096; None = heads.
        seq: query length in tokens (and keys unless seq_k), 1..2^20, or a list of lengths.
        seq_k: key length, 1..2^20; None = the query length.
        d: head dimension, 1..1024.
        dtype: the kernel's input type(s): "bf16", "fp16", "e4m3", "e5m2", or a list of them.
        tau: rescale threshold(s) in log2 units (default: the preset's per dtype).
        max_offset: P offset in log2 units (default: the preset's per dtype).
        causal: top-left causal mask.
        softmax_scale: default 1/sqrt(d).
        seed: seed of the generated inputs, 0..2^53 (None: the CLI's default, 1); every row of
            Q, K, V can be re-made with NumPy (README, "fa4sim attention").
        preset: "upstream" or "fp8-tau4".
        descale: "amax" or "one", as in attention().
        q_scale: multiply Q by this before quantisation.
        block_n, block_m, warp_rows: keys per tile, query rows per tile, rows per warp.
        exp: "mufu" (bit-exact MUFU models), "cr" (fast, correctly rounded), "exact",
            "emu0".."emu5" or "schedule:FREQ,RES,START_FRG".
        order: key-tile order, "reverse" (the kernel's) or "forward".
        allow_saturation: run configurations that fail the kernel's safety check.
        split: compute the error split (two extra model runs per run).
        threads: worker threads (0 = all cores); results are the same for any value.

    Returns:
        dict: ``runs`` (each as attention()'s stats, whose docstring says how the parts of
        ``error_split`` combine) and the rest of the CLI's report.
    """
    o = _ext.AttentionOptions()
    given = []
    o.batch = str(_int(batch, "batch", 1, 1 << 20))
    o.heads = str(_int(heads, "heads", 1, 4096))
    if kv_heads is not None:
        o.kv_heads = str(_int(kv_heads, "kv_heads", 1, 4096))
    o.seq = ",".join(_list_of(seq, "seq", lambda x, n: str(_int(x, n, 1, 1 << 20))))
    if seq_k is not None:
        o.seq_k = str(_int(seq_k, "seq_k", 1, 1 << 20))
    o.d = str(_int(d, "d", 1, 1024))
    if seed is not None:
        o.seed = str(_int(seed, "seed", 0, 1 << 53))
        given.append("--seed")
    o.dtype = ",".join(_list_of(dtype, "dtype", lambda x, n: _fmt(x, n, _KERNEL_DTYPES)))
    if tau is not None:
        o.tau = _list_str(tau, "tau")
    _kernel_knobs(o, max_offset, causal, softmax_scale, preset, descale, q_scale, block_n, block_m,
                  warp_rows, exp, order, allow_saturation, split)
    return _call(_ext.attention_report, o, given, _threads(threads))


# ---- the formats table and the per-value report of `fa4sim quantize`


def formats():
    """Every number format's parameters and derived limits: ``fa4sim formats --json``'s
    ``results`` (``formats``: name, bits, bias, max finite, log2(max), min normal, ...)."""
    return _ext.formats()


def quantize_report(x, fmt="e4m3", overflow="satfinite", rounding="nearest", seed=None):
    """Each value of x converted to ``fmt`` with its bits, decoded value, errors and flags:
    ``fa4sim quantize VALUES --json``'s ``results`` (the same entries).

    Args:
        x: float32 values (NumPy array, torch CPU tensor, number, list), as in quantize(); one
            dict per element, so meant for small arrays (quantize() for large ones).
        fmt: the format, as in encode() (a name or a dtype).
        overflow: "satfinite" or "ieee", as in encode().
        rounding: "nearest" or "stochastic", as in encode().
        seed: seed of the stochastic rounding stream, as in encode().

    Returns:
        dict: ``values`` (per element in C order: ``input``, ``bits`` (hex), ``decoded``,
        ``abs_err``, ``rel_err``, ``saturated``, ``flushed``, ...; non-finite numbers as the
        texts "nan", "inf", "-inf") and ``summary`` (counts and largest errors).
    """
    i = _float32_in(x, "x")
    canon = _fmt(fmt)
    overflow, rounding, seed = _rounding(overflow, rounding, seed)
    return _call(_ext.quantize_report, i.a.reshape(-1), canon, overflow, rounding, seed)


# ---- block-scaled formats (MXFP8/6/4, NVFP4)

_BLOCK_ELEMS = ["e4m3", "e5m2", "e2m3", "e3m2", "e2m1"]


def _block_options(fmt, elem, scale_format, block, rule, tensor_scale, auto=False):
    """The extension's BlockFormatOptions of the Python arguments (checked by type here, by
    value in the C++ layer with the CLI's messages in Python's terms)."""
    o = _ext.BlockFormatOptions()
    o.format = _choice(fmt, "fmt", list(_ext.block_format_names()))
    if elem is not None:
        o.elem = _fmt(elem, "elem", _BLOCK_ELEMS)
    if scale_format is not None:
        o.scale_format = _fmt(scale_format, "scale_format", ["e8m0", "e4m3"])
    if block is not None:
        o.block = str(_int(block, "block", 1, 4096))
    if rule is not None:
        o.rule = _choice(rule, "rule", list(_ext.block_rule_names()))
    if tensor_scale is not None:
        if auto and isinstance(tensor_scale, str):
            if tensor_scale != "auto":
                raise ValueError(f"tensor_scale must be 'auto' or a number > 0, got "
                                 f"{tensor_scale!r}")
            o.tensor_scale = "auto"
        else:
            t = _number(tensor_scale, "tensor_scale")
            if not t > 0:
                raise ValueError(f"tensor_scale must be > 0, got {t:g}")
            o.tensor_scale = _scalar_str(t, "tensor_scale")
    return o


_BLOCK_RENAME = {"format": "fmt", "block-n": "block"}


def _block_call(f, *args):
    return _call(f, *args, rename=_BLOCK_RENAME)


def _rows_of(a, name, block_size):
    """The row length (the last dimension) of a, checked against the block size."""
    if a.ndim == 0:
        raise ValueError(f"{name} must be an array with rows (its last dimension), got a scalar")
    row = a.shape[-1]
    if row == 0 or row % block_size != 0:
        raise ValueError(f"block = {block_size} does not divide the row length {row} of {name} "
                         "(its last dimension); pick a block size that divides it")
    return row


def _block_size(o):
    """The block size of the options (fmt's unless block is given), from the C++ table."""
    return _block_call(_ext.block_format_info, o)["block"]


def block_encode(x, fmt="mxfp8", *, elem=None, scale_format=None, block=None, rule=None,
                 tensor_scale=None, threads=0):
    """x -> element codes and block scales of a block-scaled format, bit for bit as torchao's
    reference quantisers (``fa4sim block --in X --codes-out C --scales-out S``).

    Args:
        x: float32 values (float16, bfloat16 accepted: exact in float32), NumPy array or torch
            CPU tensor; blocks run along the last dimension (a row), whose length the block size
            must divide.
        fmt: "mxfp8" (E4M3 elements), "mxfp8-e5m2", "mxfp6" (E2M3), "mxfp6-e3m2", "mxfp4"
            (E2M1): E8M0 scale, block 32, rule "floor"; "nvfp4": E2M1, E4M3 scale, block 16,
            rule "nearest".
        elem: element format instead of fmt's: "e4m3", "e5m2", "e2m3", "e3m2", "e2m1" (or a
            dtype such as ml_dtypes.float4_e2m1fn).
        scale_format: scale format instead of fmt's: "e8m0" (power-of-two rules) or "e4m3"
            (rule "nearest").
        block: elements per block instead of fmt's, 1..4096.
        rule: scale rule instead of fmt's: "floor" (OCP MX), "ceil", "even" (torchao), "rceil"
            (cuBLAS/cuDNN), "nearest" (NVFP4).
        tensor_scale: NVFP4's float32 tensor scale (> 0, rule "nearest" only); None = none.
            block_tensor_scale(x) gives torchao's per-tensor choice.
        threads: worker threads, 0..1024 (0 = all cores); the codes do not depend on it.

    Returns:
        (codes, scales): uint8 arrays of x's kind, codes of x's shape, scales of shape
        (..., row / block).
    """
    i = _float32_in(x, "x")
    o = _block_options(fmt, elem, scale_format, block, rule, tensor_scale)
    row = _rows_of(i.a, "x", _block_size(o))
    threads = _threads(threads)
    codes = _empty(i.a.shape, _np.uint8)
    scales = _empty(i.a.shape[:-1] + (row // _block_size(o),), _np.uint8)
    _block_call(_ext.block_encode, i.a.reshape(-1), row, codes.reshape(-1), scales.reshape(-1), o,
                threads)
    back = i if i.kind == "torch" else _In(None, "numpy", None)
    return back.give(codes), back.give(scales)


def block_decode(codes, scales, fmt="mxfp8", *, elem=None, scale_format=None, block=None,
                 rule=None, tensor_scale=None, threads=0):
    """Element codes and block scales -> float32 values (``fa4sim block --decode``): each
    element's value times its block's scale, rounded once to float32.

    Args:
        codes: uint8 element codes (NumPy or torch CPU), blocks along the last dimension; each
            at most the element format's largest code (0x0F for E2M1, 0x3F for E2M3/E3M2).
        scales: uint8 scale codes of shape (..., row / block).
        fmt, elem, scale_format, block, rule: the block format that encoded them, as in
            block_encode().
        tensor_scale: the tensor scale they were encoded with (> 0), None if none.
        threads: worker threads, 0..1024 (0 = all cores).

    Returns:
        float32 values of codes' shape and kind. A block whose scale code is NaN (E8M0 0xFF,
        E4M3 0x7F/0xFF) decodes to NaN everywhere; the sign and payload of those NaNs are not
        specified (they follow the compiler's operand order, and may differ between builds).
    """
    ci = _input(codes, "codes", text=False)
    si = _input(scales, "scales", text=False)
    for a, name in ((ci.a, "codes"), (si.a, "scales")):
        if a.dtype != _np.uint8:
            raise TypeError(f"{name} must be uint8 codes, got dtype {a.dtype}")
    o = _block_options(fmt, elem, scale_format, block, rule, tensor_scale)
    bs = _block_size(o)
    row = _rows_of(ci.a, "codes", bs)
    want = ci.a.shape[:-1] + (row // bs,)
    if si.a.shape != want:
        raise ValueError(f"scales has shape {si.a.shape}; codes of shape {ci.a.shape} in blocks "
                         f"of {bs} need {want}")
    elem_name = _block_call(_ext.block_format_info, o)["elem"]
    top = (1 << _ext.format_info(elem_name)["total_bits"]) - 1
    if ci.a.size and int(ci.a.max()) > top:
        raise ValueError(f"codes has values above {elem_name}'s largest code {top:#x}")
    threads = _threads(threads)
    out = _empty(ci.a.shape, _np.float32)
    _block_call(_ext.block_decode, _contig(ci.a).reshape(-1), _contig(si.a).reshape(-1), row,
                out.reshape(-1), o, threads)
    return ci.give(out) if ci.kind == "torch" else out


def block_quantize(x, fmt="mxfp8", *, elem=None, scale_format=None, block=None, rule=None,
                   tensor_scale=None):
    """The round trip of ``fa4sim block --in X --decoded-out D --json``: x encoded into the
    block format and decoded back, and the error summary.

    Args:
        x: float32 values, as in block_encode().
        fmt, elem, scale_format, block, rule: the block format, as in block_encode().
        tensor_scale: None, a float32 tensor scale > 0, or "auto" (torchao's per-tensor choice,
            block_tensor_scale(x)); rule "nearest" only.

    Returns:
        (decoded, stats): decoded, float32 of x's shape and kind (NaN-scale blocks as in
        block_decode()); stats, the CLI's ``results``:
        ``summary`` with ``elements``, ``blocks``, ``nan_scale_blocks``, ``saturated``,
        ``flushed_to_zero``, ``max_abs_err`` and ``rel_rms_err`` (over the blocks with a finite
        scale).
    """
    i = _float32_in(x, "x")
    o = _block_options(fmt, elem, scale_format, block, rule, tensor_scale, auto=True)
    row = _rows_of(i.a, "x", _block_size(o))
    decoded, stats = _block_call(_ext.block_quantize, i.a.reshape(-1), row, o)
    decoded = decoded.reshape(i.a.shape)
    return (i.give(decoded) if i.kind == "torch" else decoded), stats


def block_tensor_scale(x, fmt="nvfp4", *, elem=None, scale_format=None):
    """torchao's per-tensor scale for two-level scaling (``--tensor-scale auto``):
    fl32(amax(|x|) / fl32(scale max * element max)), amax / 2688 for NVFP4, as a Python float.

    Args:
        x: float32 values, as in block_encode().
        fmt: a block format whose rule is "nearest" (NVFP4).
        elem, scale_format: element and scale format instead of fmt's, as in block_encode().

    Raises ValueError when the result is not a finite positive number (x all zeros, or holding
    inf or NaN).
    """
    i = _float32_in(x, "x")
    o = _block_options(fmt, elem, scale_format, None, None, None)
    return _block_call(_ext.block_tensor_scale, i.a.reshape(-1), o)
