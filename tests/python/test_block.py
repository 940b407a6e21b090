"""fa4sim.block_encode / block_decode / block_quantize / block_tensor_scale (the block-scaled
formats of `fa4sim block`) against the CLI's codes, scales, decoded values and summary, bit for
bit (with or without the CLI: Note [Stored CLI results] in conftest.py), and their errors."""
import numpy as np
import pytest

import fa4sim
from conftest import array_digest, report_equal


def block_input(rows, row_len, seed):
    """float32 values of every magnitude from 2^-140 to 2^120 (scales over E8M0's range, float32
    subnormals), made by integer hashing (the same bits on every machine and NumPy); row 0 holds a
    NaN, row 1 an inf, row 2 starts with a zero block, row 3 with float32 subnormals."""
    i = np.arange(rows * row_len, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = (i + np.uint64(seed)) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(31)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(29)
    u = (h >> np.uint64(11)).astype(np.float64) / 2.0**53 * 2 - 1
    block_exp = ((i // 16) * np.uint64(7919) % np.uint64(261)).astype(np.int64) - 140
    x = (u * np.exp2(block_exp.astype(np.float64))).astype(np.float32).reshape(rows, row_len)
    x[0, 5] = np.nan
    x[1, 40] = np.inf
    x[2, :32] = 0
    x[3, :32] = np.float32(1e-40) * np.arange(32, dtype=np.float32)
    return x


X = block_input(8, 128, 1)
ENCODE_CASES = [
    ("block-mxfp8", ["--format", "mxfp8"], {"fmt": "mxfp8"}),
    ("block-mxfp4-rceil", ["--format", "mxfp4", "--rule", "rceil"], {"fmt": "mxfp4", "rule": "rceil"}),
    ("block-mxfp6-e3m2-even-64", ["--format", "mxfp6-e3m2", "--rule", "even", "--block", "64"],
     {"fmt": "mxfp6-e3m2", "rule": "even", "block": 64}),
    ("block-custom-e5m2-ceil", ["--elem", "e5m2", "--scale-format", "e8m0", "--block", "16",
                                "--rule", "ceil"],
     {"elem": "e5m2", "scale_format": "e8m0", "block": 16, "rule": "ceil"}),
    ("block-nvfp4", ["--format", "nvfp4"], {"fmt": "nvfp4"}),
    ("block-nvfp4-tensor-scale", ["--format", "nvfp4", "--tensor-scale", "0.0625"],
     {"fmt": "nvfp4", "tensor_scale": 0.0625}),
]


@pytest.mark.parametrize("name,args,kwargs", ENCODE_CASES, ids=[c[0] for c in ENCODE_CASES])
def test_parity_block(parity, name, args, kwargs):
    want, outs = parity.results(
        name, "block", *args, "--in", "{x}", "--codes-out", "{codes}", "--scales-out",
        "{scales}", "--decoded-out", "{decoded}", inputs={"x": X},
        outputs=("codes", "scales", "decoded"))
    codes, scales = fa4sim.block_encode(X, **kwargs)
    assert codes.shape == X.shape and codes.dtype == np.uint8
    assert array_digest(codes) == outs["codes"]
    assert array_digest(scales) == outs["scales"]
    decoded, stats = fa4sim.block_quantize(X, **kwargs)
    assert array_digest(decoded) == outs["decoded"]
    report_equal(stats, want)
    back = fa4sim.block_decode(codes, scales, **kwargs)
    assert array_digest(back) == outs["decoded"]


def test_parity_block_tensor_scale_auto(parity):
    """--tensor-scale auto: torchao's per-tensor scale from the input (finite rows only)."""
    x = block_input(8, 64, 7)
    x = x[np.isfinite(x).all(axis=1)]
    want, outs = parity.results("block-nvfp4-auto", "block", "--format", "nvfp4",
                                "--tensor-scale", "auto", "--in", "{x}", "--codes-out", "{codes}",
                                "--decoded-out", "{decoded}", inputs={"x": x},
                                outputs=("codes", "decoded"))
    t = fa4sim.block_tensor_scale(x)
    amax = np.float32(np.abs(x).max())
    assert t == float(np.float32(amax / np.float32(448 * 6)))
    codes, _ = fa4sim.block_encode(x, "nvfp4", tensor_scale=t)
    assert array_digest(codes) == outs["codes"]
    decoded, stats = fa4sim.block_quantize(x, "nvfp4", tensor_scale="auto")
    assert array_digest(decoded) == outs["decoded"]
    report_equal(stats, want)


def test_parity_block_decode(parity):
    """--decode: codes and scales of our own making (every code value) back to float32."""
    codes = (np.arange(4 * 64, dtype=np.uint32) * 37 % 256).astype(np.uint8).reshape(4, 64)
    scales = np.array([[0, 100], [127, 200], [254, 255], [1, 130]], dtype=np.uint8)
    _, outs = parity.results("block-decode-mxfp8", "block", "--format", "mxfp8", "--decode",
                             "--codes", "{codes}", "--scales", "{scales}", "--decoded-out",
                             "{decoded}", inputs={"codes": codes, "scales": scales},
                             outputs=("decoded",))
    assert array_digest(fa4sim.block_decode(codes, scales, "mxfp8")) == outs["decoded"]


def test_decode_inverts_encode_where_nothing_clips():
    """decode(encode(x)) is x where x is exactly an element value times its block's scale."""
    codes = np.arange(64, dtype=np.uint8).reshape(2, 32) % 0x10  # every E2M1 code
    scales = np.array([[127], [120]], dtype=np.uint8)             # 1 and 2^-7
    x = fa4sim.block_decode(codes, scales, "mxfp4")
    c2, s2 = fa4sim.block_encode(x, "mxfp4")
    np.testing.assert_array_equal(fa4sim.block_decode(c2, s2, "mxfp4"), x)


def test_threads_do_not_change_codes():
    x = block_input(1 << 8, 1 << 13, 3)  # 2^16 blocks of 32: more than one chunk
    a = fa4sim.block_encode(x, "mxfp8", threads=1)
    b = fa4sim.block_encode(x, "mxfp8", threads=2)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(fa4sim.block_decode(*a, "mxfp8", threads=1),
                                  fa4sim.block_decode(*a, "mxfp8", threads=2))


def test_typed_inputs_and_formats_as_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    x = X[4:].copy()
    want = fa4sim.block_encode(x, "mxfp4")
    got = fa4sim.block_encode(x, "mxfp8", elem=ml_dtypes.float4_e2m1fn)
    np.testing.assert_array_equal(got[0], want[0])
    xb = x.astype(ml_dtypes.bfloat16)  # exact in float32: accepted
    np.testing.assert_array_equal(fa4sim.block_encode(xb)[0],
                                  fa4sim.block_encode(xb.astype(np.float32))[0])


BAD = [
    (lambda: fa4sim.block_encode(X, "mxfp9"), ValueError, r"fmt must be one of 'mxfp8'"),
    (lambda: fa4sim.block_encode(X, elem="bf16"), ValueError, r"elem must be one of 'e4m3'"),
    (lambda: fa4sim.block_encode(X, scale_format="fp16"), ValueError,
     r"scale_format must be one of 'e8m0', 'e4m3'"),
    (lambda: fa4sim.block_encode(X, block=24), ValueError,
     r"block = 24 does not divide the row length 128 of x"),
    (lambda: fa4sim.block_encode(X, block=0), ValueError, r"block must be in 1\.\.4096, got 0"),
    (lambda: fa4sim.block_encode(X, block=32.0), TypeError, r"block must be an int"),
    (lambda: fa4sim.block_encode(X, rule="round"), ValueError, r"rule must be one of 'floor'"),
    (lambda: fa4sim.block_encode(X, rule="nearest"), ValueError, r"rule 'nearest'|nearest"),
    (lambda: fa4sim.block_encode(X, tensor_scale=2.0), ValueError,
     r"tensor_scale is for the 'nearest' rule \(NVFP4\), not 'floor'"),
    (lambda: fa4sim.block_encode(X, "nvfp4", tensor_scale=0), ValueError,
     r"tensor_scale must be > 0, got 0"),
    (lambda: fa4sim.block_encode(X, "nvfp4", tensor_scale="auto"), TypeError,
     r"tensor_scale must be a number"),
    (lambda: fa4sim.block_encode(1.5), ValueError, r"x must be an array with rows"),
    (lambda: fa4sim.block_encode(X.astype(np.float64)), TypeError, r"x has dtype float64"),
    (lambda: fa4sim.block_encode("x"), TypeError, r"x must be a number or an array"),
    (lambda: fa4sim.block_encode(X, threads=-1), ValueError, r"threads must be in 0\.\.1024"),
    (lambda: fa4sim.block_decode(np.zeros((2, 32), np.uint16), np.zeros((2, 1), np.uint8)),
     TypeError, r"codes must be uint8 codes, got dtype uint16"),
    (lambda: fa4sim.block_decode(np.zeros((2, 32), np.uint8), np.zeros((2, 2), np.uint8)),
     ValueError, r"scales has shape \(2, 2\); codes of shape \(2, 32\) in blocks of 32 need \(2, 1\)"),
    (lambda: fa4sim.block_decode(np.full((1, 32), 0x10, np.uint8), np.zeros((1, 1), np.uint8),
                                 "mxfp4"), ValueError, r"codes has values above e2m1's largest code 0xf"),
    (lambda: fa4sim.block_decode(np.zeros((1, 30), np.uint8), np.zeros((1, 1), np.uint8)),
     ValueError, r"block = 32 does not divide the row length 30 of codes"),
    (lambda: fa4sim.block_quantize(X, tensor_scale="half"), ValueError,
     r"tensor_scale must be 'auto' or a number > 0, got 'half'"),
    (lambda: fa4sim.block_quantize(X, "mxfp8", tensor_scale="auto"), ValueError,
     r"tensor_scale is for the 'nearest' rule"),
    (lambda: fa4sim.block_tensor_scale(np.zeros(16, np.float32)), ValueError,
     r"tensor_scale auto: the tensor's amax 0 gives the tensor scale 0"),
    (lambda: fa4sim.block_tensor_scale(X[4:], "mxfp8"), ValueError,
     r"tensor_scale is for the 'nearest' rule"),
]


@pytest.mark.parametrize("call,err,match", BAD, ids=range(len(BAD)))
def test_bad_arguments(call, err, match):
    with pytest.raises(err, match=match) as e:
        call()
    assert "--" not in str(e.value)


def test_errors_carry_the_cli_message(cli):
    for kwargs, args in [({"rule": "nearest"}, ["--rule", "nearest"]),
                         ({"fmt": "nvfp4", "scale_format": "e8m0"},
                          ["--format", "nvfp4", "--scale-format", "e8m0"])]:
        with pytest.raises(ValueError) as e:
            fa4sim.block_encode(X, **kwargs)
        assert str(e.value) == cli.py_error("block", *args, "--in", "x.npy"), kwargs
