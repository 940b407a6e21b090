"""Types in, types out: formats as strings or dtype objects with one set of names in every
function, typed arrays that carry their format (decode reads it, a mismatch raises), the caller's
kind back (NumPy -> NumPy, scalar -> scalar, torch -> torch without copies), encode(typed=True).
The torch cases are skipped, visibly, where torch is not installed."""
import numpy as np
import pytest

import fa4sim

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed: the PyTorch "
                                 "paths are not tested here")

# (canonical, its other name, NumPy / ml_dtypes dtype, torch dtype name)
FORMATS = [
    ("fp32", "float32", np.float32, "float32"),
    ("bf16", "bfloat16", ml_dtypes.bfloat16, "bfloat16"),
    ("fp16", "float16", np.float16, "float16"),
    ("e4m3", "float8_e4m3fn", ml_dtypes.float8_e4m3fn, "float8_e4m3fn"),
    ("e5m2", "float8_e5m2", ml_dtypes.float8_e5m2, "float8_e5m2"),
]
KERNEL = [f for f in FORMATS if f[0] != "fp32"]


def values(n=4096, seed=0):
    g = np.random.default_rng(seed)
    return (g.standard_normal(n) * 50).astype(np.float32)


@pytest.mark.parametrize("canon,alias,dt,tname", FORMATS)
def test_one_name_set_in_encode_decode_quantize(canon, alias, dt, tname):
    x = values()
    want = fa4sim.encode(x, canon)
    forms = [alias, dt, np.dtype(dt)]
    if torch is not None:
        forms.append(getattr(torch, tname))
    for f in forms:
        np.testing.assert_array_equal(fa4sim.encode(x, f), want)
        np.testing.assert_array_equal(fa4sim.quantize(x, f), fa4sim.quantize(x, canon))
        np.testing.assert_array_equal(fa4sim.decode(want, f), fa4sim.decode(want, canon))
        assert fa4sim.format_info(f)["name"] == canon


@pytest.mark.parametrize("canon,alias,dt,tname", KERNEL)
def test_one_name_set_in_attention_check_online_softmax(canon, alias, dt, tname):
    g = np.random.default_rng(1)
    q = g.standard_normal((1, 16, 2, 16), dtype=np.float32)
    s = g.standard_normal((8, 64), dtype=np.float32)
    v = g.standard_normal((64, 8), dtype=np.float32)
    base_a = fa4sim.attention(q, q, q, dtype=canon, split=False)
    base_s = fa4sim.online_softmax(s, v, dtype=canon, block=32)
    for f in (alias, dt, np.dtype(dt)):
        o, lse, _ = fa4sim.attention(q, q, q, dtype=f, split=False)
        np.testing.assert_array_equal(o, base_a[0])
        assert fa4sim.check(f) == fa4sim.check(canon)
        assert fa4sim.check([f]) == fa4sim.check([canon])
        np.testing.assert_array_equal(fa4sim.online_softmax(s, v, dtype=f, block=32)[0], base_s[0])


def test_online_softmax_takes_fp32_and_float32():
    s = np.zeros((2, 4), np.float32)
    a = fa4sim.online_softmax(s, dtype="fp32", block=4)
    b = fa4sim.online_softmax(s, dtype=np.float32, block=4)
    assert a[3] == b[3]


def test_format_errors_name_the_argument_and_the_values():
    with pytest.raises(ValueError, match=r"fmt must be one of 'fp32', 'bf16'.*got 'e4m4'"):
        fa4sim.encode([1.0], "e4m4")
    for bad in (None, 3, object()):
        with pytest.raises(TypeError, match=r"fmt must be a format name such as 'e4m3' or a dtype"):
            fa4sim.encode([1.0], bad)
    with pytest.raises(ValueError, match=r"dtype must be one of 'bf16', 'fp16', 'e4m3', 'e5m2'"):
        fa4sim.attention(np.ones((1, 4, 1, 4), np.float32), np.ones((1, 4, 1, 4), np.float32),
                         np.ones((1, 4, 1, 4), np.float32), dtype="fp32")
    with pytest.raises(ValueError, match="fmt must be one of"):
        fa4sim.encode([1.0], np.int32)


@pytest.mark.parametrize("canon,alias,dt,tname", FORMATS)
def test_typed_arrays_carry_their_format(canon, alias, dt, tname):
    x = values(seed=2)
    typed = x.astype(dt)
    want = typed.astype(np.float32)
    for fmt in (None, canon, alias, dt):
        got = fa4sim.decode(typed, fmt)
        assert type(got) is np.ndarray and got.dtype == np.float32
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    other = "e5m2" if canon != "e5m2" else "e4m3"
    with pytest.raises(TypeError, match=f"codes are .*{canon}.* but fmt is '{other}'"):
        fa4sim.decode(typed, other)


def test_decode_wrong_cases_of_the_issue_raise_or_are_right():
    # bfloat16 ones decode to 1.0 (was -0.0); float16 1.0 as 'e4m3' raises (was 0.0)
    assert fa4sim.decode(np.ones(3, ml_dtypes.bfloat16)).tolist() == [1.0] * 3
    for arr, fmt in [(np.array([1.0], np.float16), "e4m3"),              # was 0.0
                     (np.array([1.0], ml_dtypes.bfloat16), "fp16"),     # was 1.875
                     (np.array([1.0], ml_dtypes.float8_e5m2), "e4m3"),  # was 1.5
                     (np.array([1.0], np.float32), "bf16")]:            # float32 is fp32
        with pytest.raises(TypeError, match=f"fmt is '{fmt}'"):
            fa4sim.decode(arr, fmt)
    # codes of another width than the format's: raised, not truncated
    for codes, fmt, want in [(np.array([0x3F800000], np.uint32), "bf16", "uint16"),  # was 0.0
                             (np.array([0x138], np.uint16), "e4m3", "uint8")]:
        with pytest.raises(TypeError, match=f"{fmt} codes are {want}"):
            fa4sim.decode(codes, fmt)
    with pytest.raises(TypeError, match="integer codes need fmt"):
        fa4sim.decode(np.array([0x38], np.uint8))
    # Python ints: range-checked, then decoded
    assert fa4sim.decode(0x38, "e4m3") == 1.0
    assert fa4sim.decode(0xB8, "e4m3") == -1.0
    with pytest.raises(ValueError, match=r"codes must be in 0\.\.0xff for e4m3"):
        fa4sim.decode(0x138, "e4m3")
    with pytest.raises(ValueError, match=r"codes must be in 0\.\.0xff for e4m3"):
        fa4sim.decode([-1], "e4m3")


def test_kinds_round_trip_numpy_and_scalars():
    x = values(64)
    for f in (fa4sim.ex2_emu, fa4sim.quantize):
        assert type(f(x)) is np.ndarray
        r = f(1.5)
        assert type(r) is float
        r = f(np.float32(1.5))
        assert type(r) is np.float32
    assert type(fa4sim.encode(1.5)) is int and fa4sim.encode(1.5) == 0x3C
    assert fa4sim.decode(fa4sim.encode(1.5), "e4m3") == 1.5
    assert type(fa4sim.encode(np.float32(1.5))) is np.uint8
    assert type(fa4sim.encode([1.5, 2.0])) is np.ndarray  # a list gives an array, like NumPy


@pytest.mark.parametrize("canon,alias,dt,tname", FORMATS)
def test_encode_typed_gives_arrays_of_the_format(canon, alias, dt, tname):
    x = values(seed=3)
    t = fa4sim.encode(x, canon, typed=True)
    assert t.dtype == np.dtype(dt)
    np.testing.assert_array_equal(t.view(fa4sim.encode(x, canon).dtype), fa4sim.encode(x, canon))
    # its values are quantize's, and decode reads it back without fmt
    np.testing.assert_array_equal(t.astype(np.float32), fa4sim.quantize(x, canon))
    np.testing.assert_array_equal(fa4sim.decode(t), fa4sim.quantize(x, canon))
    # out= may be an array of the format
    out = np.empty(x.shape, dt)
    assert fa4sim.encode(x, canon, out=out) is out
    np.testing.assert_array_equal(out.view(t.dtype), t)


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn])
def test_narrow_float_inputs_are_exact_float32(dt):
    x = values(seed=4).astype(dt)
    x32 = x.astype(np.float32)
    np.testing.assert_array_equal(fa4sim.ex2_emu(x).view(np.uint32), fa4sim.ex2_emu(x32).view(np.uint32))
    np.testing.assert_array_equal(fa4sim.encode(x, "e5m2"), fa4sim.encode(x32, "e5m2"))
    np.testing.assert_array_equal(fa4sim.quantize(x, "e4m3"), fa4sim.quantize(x32, "e4m3"))
    s = x32[:64].reshape(4, 16)
    a = fa4sim.online_softmax(s.astype(dt), block=16)
    b = fa4sim.online_softmax(s, block=16)
    np.testing.assert_array_equal(a[2], b[2])
    with pytest.raises(TypeError, match="float64"):
        fa4sim.ex2_emu(x32.astype(np.float64))


@needs_torch
@pytest.mark.parametrize("canon,alias,dt,tname", FORMATS)
def test_torch_in_torch_out(canon, alias, dt, tname):
    tdt = getattr(torch, tname)
    x = torch.from_numpy(values(seed=5))
    typed = x.to(tdt)
    d = fa4sim.decode(typed)  # its format is its dtype's
    assert isinstance(d, torch.Tensor) and d.dtype == torch.float32
    assert torch.equal(d, typed.float())
    e = fa4sim.encode(x, canon, typed=True)
    assert isinstance(e, torch.Tensor) and e.dtype == tdt
    assert torch.equal(e.float(), typed.float()) or canon == "e4m3" and torch.equal(
        e.float().nan_to_num(), typed.float().nan_to_num())
    q = fa4sim.quantize(x, canon)
    assert isinstance(q, torch.Tensor) and q.dtype == torch.float32
    assert isinstance(fa4sim.ex2_emu(x), torch.Tensor)


@needs_torch
def test_torch_decode_cases_of_the_issue():
    t = torch.ones(3).to(torch.float8_e5m2)
    assert fa4sim.decode(t).tolist() == [1.0] * 3  # was 1.5: read as the default e4m3
    with pytest.raises(TypeError, match="fmt is 'e4m3'"):
        fa4sim.decode(t, "e4m3")


@needs_torch
def test_torch_contiguous_inputs_and_outputs_are_not_copied(monkeypatch):
    """The extension gets the tensor's own memory, and the result tensor is the extension's
    output array (data pointers compared)."""
    seen = {}
    real = fa4sim._ext.quantize

    def spy(x, out, *rest):
        seen["x"], seen["out"] = x.ctypes.data, out.ctypes.data
        return real(x, out, *rest)

    monkeypatch.setattr(fa4sim._ext, "quantize", spy)
    x = torch.from_numpy(values(1 << 20, seed=6))
    y = fa4sim.quantize(x, "e4m3")
    assert seen["x"] == x.data_ptr()
    assert seen["out"] == y.data_ptr()
    z = fa4sim.quantize(x, "e4m3", out=x)  # in place on the tensor itself
    assert z is x and torch.equal(x, y)
