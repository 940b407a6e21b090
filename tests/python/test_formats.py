"""fa4sim.encode / decode / quantize against the CLI (`fa4sim quantize`, equal bits), ml_dtypes
and NumPy (in-range conversions, every code), torch (codes viewed as float8), and argument errors."""
import math

import numpy as np
import pytest

import fa4sim

FORMATS = ["fp32", "bf16", "fp16", "e4m3", "e5m2"]


def special_and_random_floats(n=20000, seed=0):
    """Random float32 bit patterns (NaNs, infs, subnormals included) and hand-picked edges."""
    bits = np.random.default_rng(seed).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    edges = np.array([0.0, -0.0, 1.0, -1.5, 448.0, 464.0, 463.99997, 480.0, 57344.0, 61440.0,
                      65504.0, 65520.0, 2.0**-9, 2.0**-10, 2.0**-133, 2.0**-149, np.inf, -np.inf,
                      np.nan, 3.4028235e38], dtype=np.float32)
    return np.concatenate([bits.view(np.float32), edges])


# The OCP MX formats too: e2m1, e2m3, e3m2 (satfinite only: no inf, no NaN) and e8m0.
@pytest.mark.parametrize("fmt,overflow", [(f, o) for f in FORMATS for o in ("satfinite", "ieee")]
                         + [("e2m1", "satfinite"), ("e2m3", "satfinite"), ("e3m2", "satfinite"),
                            ("e8m0", "satfinite"), ("e8m0", "ieee")])
def test_encode_equals_cli_binary_out(cli, fmt, overflow):
    x = special_and_random_floats()
    r = cli.run("quantize", "--dtype", fmt, "--overflow", overflow, "--stdin", "--binary",
                "--binary-out", "-", stdin=x.tobytes())
    assert r.returncode == 0, r.stderr
    codes = fa4sim.encode(x, fmt, overflow)
    want = np.frombuffer(r.stdout, dtype=codes.dtype)
    assert codes.shape == x.shape
    np.testing.assert_array_equal(codes, want)  # equal bits, 0 tolerance


def test_stochastic_rounding_equals_cli_json(cli):
    x = np.array([1.3, 1.01, -2.7, 300.5, 1e-3, 500.0, 0.1, 0.2, 0.3], dtype=np.float32)
    rep = cli.json("quantize", "--dtype", "e4m3", "--rounding", "stochastic", "--seed", 7,
                   *[repr(float(v)) for v in x])
    want = [int(v["bits"], 16) for v in rep["results"]["values"]]
    got = fa4sim.encode(x, "e4m3", rounding="stochastic", seed=7)
    assert got.tolist() == want
    dec = fa4sim.quantize(x, "e4m3", rounding="stochastic", seed=7)
    assert dec.tolist() == [v["decoded"] for v in rep["results"]["values"]]


def test_stochastic_rounding_does_not_depend_on_threads():
    x = np.random.default_rng(1).standard_normal(300_000).astype(np.float32)
    a = fa4sim.encode(x, "e5m2", rounding="stochastic", seed=3, threads=1)
    b = fa4sim.encode(x, "e5m2", rounding="stochastic", seed=3, threads=2)
    np.testing.assert_array_equal(a, b)
    # Element i uses random number i of the stream: a slice converted alone differs from the
    # whole array's slice only through the index, so converting x[1000:] alone is NOT x's tail.
    assert not np.array_equal(fa4sim.encode(x[1000:], "e5m2", rounding="stochastic", seed=3), a[1000:])


@pytest.mark.parametrize("fmt", FORMATS)
def test_quantize_is_decode_of_encode(fmt):
    x = special_and_random_floats()
    q = fa4sim.quantize(x, fmt)
    d = fa4sim.decode(fa4sim.encode(x, fmt), fmt)
    np.testing.assert_array_equal(q.view(np.uint32), d.view(np.uint32))


def _ml(name):
    ml = pytest.importorskip("ml_dtypes")
    return {"e4m3": ml.float8_e4m3fn, "e5m2": ml.float8_e5m2, "bf16": ml.bfloat16,
            "fp16": np.float16}[name]


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "bf16", "fp16"])
def test_in_range_encode_equals_ml_dtypes(fmt):
    """For finite x whose rounded magnitude is at most max finite, the codes are ml_dtypes' /
    NumPy's round-to-nearest-even cast, bit for bit (out of range they differ by design: satfinite)."""
    dt = _ml(fmt)
    info = fa4sim.format_info(fmt)
    x = special_and_random_floats(50000, seed=2)
    x = x[np.isfinite(x)]
    scaled = np.concatenate([x, (np.random.default_rng(3).standard_normal(50000) *
                                 min(info["max_finite"], 1e37) / 4).astype(np.float32)])
    in_range = np.abs(scaled.astype(np.float64)) < info["max_finite"]
    y = scaled[in_range]
    codes = fa4sim.encode(y, fmt)
    want = y.astype(dt).view(codes.dtype)
    np.testing.assert_array_equal(codes, want)
    # and the codes, viewed as the ml_dtypes type, are those values
    np.testing.assert_array_equal(codes.view(dt).astype(np.float32), fa4sim.quantize(y, fmt))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "bf16", "fp16"])
def test_decode_every_code_equals_ml_dtypes(fmt):
    dt = _ml(fmt)
    bits = 8 if fmt in ("e4m3", "e5m2") else 16
    codes = np.arange(2**bits, dtype=np.uint8 if bits == 8 else np.uint16)
    got = fa4sim.decode(codes, fmt)
    want = codes.view(dt).astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
    # decode also reads an array of the format itself
    np.testing.assert_array_equal(fa4sim.decode(codes.view(dt), fmt).view(np.uint32), got.view(np.uint32))


def test_ml_dtypes_format_names():
    x = np.array([1.1, -300.0, 1e6], dtype=np.float32)
    for ours, theirs in [("e4m3", "float8_e4m3fn"), ("e5m2", "float8_e5m2"), ("bf16", "bfloat16"),
                         ("fp16", "float16"), ("fp32", "float32")]:
        np.testing.assert_array_equal(fa4sim.encode(x, ours), fa4sim.encode(x, theirs))


def test_codes_view_as_torch_float8():
    torch = pytest.importorskip("torch", reason="torch is not installed: the PyTorch part is not tested")
    x = np.array([0.5, -1.75, 3.0, 448.0, 1000.0], dtype=np.float32)
    codes = fa4sim.encode(x, "e4m3")
    t = torch.from_numpy(codes).view(torch.float8_e4m3fn)
    np.testing.assert_array_equal(t.float().numpy(), fa4sim.quantize(x, "e4m3"))
    # and torch's own cast agrees in range (torch saturates nothing: 1000 is out of range)
    np.testing.assert_array_equal(torch.from_numpy(x[:4]).to(torch.float8_e4m3fn).view(torch.uint8).numpy(),
                                  codes[:4])
    np.testing.assert_array_equal(fa4sim.decode(t, "e4m3"), fa4sim.quantize(x, "e4m3"))


def test_shapes_and_non_contiguous_inputs():
    x = np.random.default_rng(4).standard_normal((6, 8)).astype(np.float32)
    c = fa4sim.encode(x, "e4m3")
    assert c.shape == (6, 8) and c.dtype == np.uint8
    assert fa4sim.encode(x, "bf16").dtype == np.uint16
    assert fa4sim.encode(x, "fp32").dtype == np.uint32
    np.testing.assert_array_equal(fa4sim.encode(x.T, "e4m3"), c.T)  # a transposed view: copied
    np.testing.assert_array_equal(fa4sim.encode(x[:, ::2], "e4m3"), c[:, ::2])
    assert fa4sim.encode(np.float32(1.5), "e4m3").shape == ()
    out = np.empty_like(c)
    assert fa4sim.encode(x, "e4m3", out=out) is out
    np.testing.assert_array_equal(out, c)
    q = x.copy()
    fa4sim.quantize(q, "e4m3", out=q)  # in place
    np.testing.assert_array_equal(q, fa4sim.quantize(x, "e4m3"))


def test_wrong_dtypes_raise_type_error():
    with pytest.raises(TypeError, match="float64, expected float32"):
        fa4sim.encode(np.ones(3), "e4m3")
    with pytest.raises(TypeError, match="e4m3 codes are uint8"):
        fa4sim.decode(np.ones(3, np.int64), "e4m3")
    with pytest.raises(TypeError, match="out must be"):
        fa4sim.encode(np.ones(3, np.float32), "e4m3", out=np.empty(3, np.uint16))
    assert math.isnan(fa4sim.quantize([float("nan")], "e4m3")[0])


# ---- the formats table and the per-value report of `fa4sim quantize` (with or without the CLI:
# Note [Stored CLI results] in conftest.py)


def test_parity_formats(parity):
    from conftest import report_equal
    want, _ = parity.results("formats", "formats")
    got = fa4sim.formats()
    report_equal(got, want)
    names = [f["name"] for f in got["formats"]]
    assert names == list(fa4sim._ext.format_names())  # every format of the table, no more


QUANTIZE_VALUES = ["1.5", "-0.0", "1e-3", "300.5", "448", "465", "-1e6", "inf", "-inf", "nan",
                   "1e-45", "0x1.8p-9", "57344", "3.4028235e38"]


@pytest.mark.parametrize("fmt,extra,kwargs", [
    ("e4m3", [], {}),
    ("e5m2", ["--overflow", "ieee"], {"overflow": "ieee"}),
    ("bf16", ["--rounding", "stochastic", "--seed", "7"], {"rounding": "stochastic", "seed": 7}),
    ("e2m1", [], {}),
    ("e8m0", ["--overflow", "ieee"], {"overflow": "ieee"}),
])
def test_parity_quantize_report(parity, fmt, extra, kwargs):
    from conftest import report_equal
    want, _ = parity.results(f"quantize-{fmt}", "quantize", "--dtype", fmt, *extra,
                             *QUANTIZE_VALUES)
    x = np.array([float.fromhex(v) if v.startswith("0x") else float(v) for v in QUANTIZE_VALUES],
                 dtype=np.float32)
    got = fa4sim.quantize_report(x, fmt, **kwargs)
    report_equal(got, want)
    assert len(got["values"]) == x.size
    # the same bits as encode()
    assert [int(v["bits"], 16) for v in got["values"]] == \
        fa4sim.encode(x, fmt, **kwargs).astype(np.int64).tolist()


def test_quantize_report_errors():
    with pytest.raises(ValueError, match=r"overflow must be one of 'satfinite', 'ieee', got 'clamp'"):
        fa4sim.quantize_report([1.0], overflow="clamp")
    with pytest.raises(ValueError, match=r"fmt must be one of"):
        fa4sim.quantize_report([1.0], "e4m4")
    with pytest.raises(TypeError, match=r"x has dtype float64"):
        fa4sim.quantize_report(np.ones(2))
    with pytest.raises(ValueError, match=r"seed is only used by stochastic rounding"):
        fa4sim.quantize_report([1.0], seed=3)


def test_overflow_refusal_names_the_option(cli):
    """The CLI's refusal of an unknown --overflow names the option with its dashes; the Python
    API names the argument."""
    msg = cli.error("quantize", "--dtype", "e4m3", "--overflow", "clamp", "1")
    assert msg.startswith("unknown --overflow 'clamp'"), msg
    assert cli.py_error("quantize", "--dtype", "e4m3", "--overflow", "clamp", "1").startswith(
        "unknown overflow 'clamp'")
    with pytest.raises(ValueError, match=r"overflow must be one of 'satfinite', 'ieee', got 'clamp'"):
        fa4sim.encode([1.0], overflow="clamp")


@pytest.mark.parametrize("fmt", ["e2m1", "e2m3", "e3m2"])
def test_mx_element_formats_refuse_what_the_cli_refuses(cli, fmt):
    """e2m1/e2m3/e3m2 have no inf and no NaN: overflow 'ieee' and stochastic rounding are
    refused, as by `fa4sim quantize`, with its message."""
    for f in (fa4sim.encode, fa4sim.quantize, fa4sim.quantize_report):
        with pytest.raises(ValueError) as e:
            f([1.0], fmt, overflow="ieee")
        assert str(e.value) == cli.py_error("quantize", "--dtype", fmt, "--overflow", "ieee", "1")
        with pytest.raises(ValueError) as e:
            f([1.0], fmt, rounding="stochastic")
        assert str(e.value) == cli.py_error("quantize", "--dtype", fmt, "--rounding",
                                            "stochastic", "1")


@pytest.mark.parametrize("fmt", ["e2m1", "e2m3", "e3m2"])
def test_mx_element_formats_refusals_without_the_cli(fmt):
    with pytest.raises(ValueError, match=r"overflow mode ieee: .* has no inf and no NaN"):
        fa4sim.encode([1.0], fmt, overflow="ieee")
    with pytest.raises(ValueError, match=r"stochastic rounding to the MX format .* is not modelled"):
        fa4sim.quantize([1.0], fmt, rounding="stochastic")


# ---- the OCP MX element formats and the MX scale (e2m1, e2m3, e3m2, e8m0) as typed arrays


@pytest.mark.parametrize("fmt,ml", [("e2m1", "float4_e2m1fn"), ("e2m3", "float6_e2m3fn"),
                                    ("e3m2", "float6_e3m2fn"), ("e8m0", "float8_e8m0fnu")])
def test_mx_formats_typed_arrays(fmt, ml):
    """Typed arrays of the MX formats (ml_dtypes): out of encode(typed=True), into decode(),
    with the codes' bits; every code decodes to ml_dtypes' value (NaN codes: NaN)."""
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    dt = np.dtype(getattr(ml_dtypes, ml))
    top = (1 << fa4sim.format_info(fmt)["total_bits"]) - 1
    codes = np.arange(top + 1, dtype=np.uint8)
    got = fa4sim.decode(codes, fmt)
    theirs = codes.view(dt).astype(np.float32)
    nan = np.isnan(theirs)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), theirs[~nan].view(np.uint32))
    typed = fa4sim.encode(got[~nan], fmt, typed=True)
    assert typed.dtype == dt
    np.testing.assert_array_equal(typed.view(np.uint8), codes[~nan])
    np.testing.assert_array_equal(fa4sim.decode(typed).view(np.uint32), got[~nan].view(np.uint32))
    if top < 255:  # FP4/FP6 codes in a byte: the bits above the format's are refused
        with pytest.raises(ValueError, match=f"codes has values above {fmt}'s largest code"):
            fa4sim.decode(np.array([top + 1], np.uint8), fmt)
