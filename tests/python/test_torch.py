"""fa4sim with PyTorch: FP8/bf16 codes against torch's own conversions, torch tensors and DLPack
producers as inputs. Skipped (visibly, with the reason) where torch is not installed; the
README's set-up does not install it. Run with torch 2.15.0 (CPU) on 2026-12-01, before results
came back as tensors for tensor inputs; not run since (no torch on the machine)."""
import numpy as np
import pytest

import fa4sim

torch = pytest.importorskip("torch", reason="torch is not installed: the PyTorch interop is not tested")


def in_range(fmt_max, n=1 << 16, seed=0):
    """float32 values a conversion must round, not clip: random magnitudes over the format's
    whole exponent range (subnormals included), exact midpoints, signed zeros, the max."""
    g = np.random.default_rng(seed)
    mag = np.exp2(g.uniform(-22, np.log2(fmt_max), n)).astype(np.float32)
    x = np.where(g.random(n) < 0.5, -mag, mag).astype(np.float32)
    x = x[np.abs(x) <= fmt_max]
    return np.concatenate([x, np.float32([0.0, -0.0, fmt_max, -fmt_max])])


@pytest.mark.parametrize("fmt,tdtype,fmax", [
    ("e4m3", "float8_e4m3fn", 448.0),
    ("e5m2", "float8_e5m2", 57344.0),
])
def test_fp8_codes_equal_torch_conversion(fmt, tdtype, fmax):
    tdt = getattr(torch, tdtype)
    x = in_range(fmax)
    # midpoints between neighbouring codes: ties to even in both
    codes = np.arange(1, 0x7F if fmt == "e4m3" else 0x7C, dtype=np.uint8)  # up to the max
    v = fa4sim.decode(codes, fmt)
    mid = ((v[:-1].astype(np.float64) + v[1:]) / 2).astype(np.float32)
    x = np.concatenate([x, mid, -mid])
    ours = fa4sim.encode(x, fmt)
    theirs = torch.from_numpy(x).to(tdt)
    np.testing.assert_array_equal(ours, theirs.view(torch.uint8).numpy())
    # the codes view as torch's dtype, and decode reads torch's tensors
    as_torch = torch.from_numpy(ours).view(tdt)
    np.testing.assert_array_equal(as_torch.float().numpy().view(np.uint32),
                                  fa4sim.quantize(x, fmt).view(np.uint32))
    np.testing.assert_array_equal(fa4sim.decode(theirs, fmt).numpy().view(np.uint32),
                                  theirs.float().numpy().view(np.uint32))


def test_bf16_and_fp16_codes_equal_torch_conversion():
    x = in_range(3e38, seed=1)
    bf = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(fa4sim.encode(x, "bf16"), bf)
    x = in_range(65504.0, seed=2)
    h = torch.from_numpy(x).to(torch.float16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(fa4sim.encode(x, "fp16"), h)


def qkv(seed=0, shape=(2, 48, 4, 32), kv_heads=2):
    g = np.random.default_rng(seed)
    q = g.standard_normal(shape, dtype=np.float32)
    kshape = shape[:2] + (kv_heads, shape[3])
    return q, g.standard_normal(kshape, dtype=np.float32), g.standard_normal(kshape, dtype=np.float32)


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


class DLPackOnly:
    """A producer that offers nothing but the DLPack protocol (no __array__)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, **kw):
        return self._t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_attention_reads_torch_tensors_and_dlpack():
    q, k, v = qkv()
    want = fa4sim.attention(q, k, v, dtype="e4m3", causal=True)
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    # torch CPU tensors are read in place, without a copy
    assert np.shares_memory(fa4sim._input(tq, "q").a, q)
    for inputs in [(tq, tk, tv), tuple(DLPackOnly(t) for t in (tq, tk, tv))]:
        o, lse, stats = fa4sim.attention(*inputs, dtype="e4m3", causal=True)
        same(o, want[0])
        same(lse, want[1])
        assert stats["rows_pct"] == want[2]["rows_pct"]
        assert stats["rel_l2_unquantized"] == want[2]["rel_l2_unquantized"]
    # a tensor that needs grad, and a non-contiguous one (copied once): same bits
    tq2 = tq.clone().requires_grad_(True)
    tk2 = tk.transpose(1, 2).contiguous().transpose(1, 2)
    assert not tk2.is_contiguous()
    o, lse, _ = fa4sim.attention(tq2, tk2, tv, dtype="e4m3", causal=True)
    same(o, want[0])
    same(lse, want[1])


def test_attention_reads_bf16_and_fp16_tensors():
    q, k, v = qkv(seed=5)
    for tdt, ndt in [(torch.bfloat16, "bf16"), (torch.float16, "fp16")]:
        ts = [torch.from_numpy(a).to(tdt) for a in (q, k, v)]
        exact = [t.float().numpy() for t in ts]  # the same values in float32
        o, lse, _ = fa4sim.attention(*ts, dtype=ndt)
        o2, lse2, _ = fa4sim.attention(*exact, dtype=ndt)
        same(o, o2)
        same(lse, lse2)


def test_elementwise_functions_read_tensors():
    x = torch.linspace(-20, 8, 1000, dtype=torch.float32)
    same(fa4sim.ex2_emu(x), fa4sim.ex2_emu(x.numpy()))
    np.testing.assert_array_equal(fa4sim.encode(DLPackOnly(x), "e4m3"), fa4sim.encode(x.numpy(), "e4m3"))
    with pytest.raises(TypeError, match="float64"):
        fa4sim.ex2_emu(x.double())


def test_attention_output_compares_with_sdpa():
    """fa4sim's bf16 model against torch's float32 SDPA on the same tensors: the gap is the
    quantisation error fa4sim reports, not a layout mix-up (heads/seq swapped would be far off)."""
    import torch.nn.functional as F
    q, k, v = (torch.from_numpy(a) for a in qkv(seed=9, kv_heads=4))
    ref = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v))).transpose(1, 2)
    o, _, stats = fa4sim.attention(q, k, v, dtype="bf16")
    assert isinstance(o, torch.Tensor)  # torch in, torch out
    err = ((ref - o).norm() / ref.norm()).item()
    assert err == pytest.approx(stats["rel_l2_unquantized"], rel=1e-3, abs=1e-6)
    assert err < 1e-2


def test_block_functions_take_and_give_tensors():
    """Block-scaled formats: torch in, torch out; the input read in place (data pointer)."""
    x = torch.linspace(-300, 300, 4 * 64, dtype=torch.float32).reshape(4, 64)
    assert fa4sim._input(x, "x").a.ctypes.data == x.data_ptr()  # no copy
    codes, scales = fa4sim.block_encode(x, "mxfp4")
    assert isinstance(codes, torch.Tensor) and codes.dtype == torch.uint8
    assert tuple(scales.shape) == (4, 2)
    want = fa4sim.block_encode(x.numpy(), "mxfp4")
    np.testing.assert_array_equal(codes.numpy(), want[0])
    np.testing.assert_array_equal(scales.numpy(), want[1])
    y = fa4sim.block_decode(codes, scales, "mxfp4")
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    d, _ = fa4sim.block_quantize(x, "mxfp4")
    assert isinstance(d, torch.Tensor)
    same(d.numpy(), y.numpy())
    with pytest.raises(TypeError, match="float64"):
        fa4sim.block_encode(x.double())
