"""fa4sim.attention and fa4sim.check against the CLI (`fa4sim attention --q/--k/--v FILE.npy`,
`fa4sim check`: equal JSON), O and LSE against float64 references, and argument errors."""
import re

import numpy as np
import pytest

import fa4sim

from conftest import report_equal
from test_exp2 import strip_timing


def qkv(batch=1, seq_q=80, seq_k=96, heads=4, kv_heads=2, d=32, seed=0, scale=1.0):
    g = np.random.default_rng(seed)
    q = (g.standard_normal((batch, seq_q, heads, d)) * scale).astype(np.float32)
    k = g.standard_normal((batch, seq_k, kv_heads, d)).astype(np.float32)
    v = g.standard_normal((batch, seq_k, kv_heads, d)).astype(np.float32)
    return q, k, v


def save(tmp_path, q, k, v):
    paths = []
    for name, a in (("q", q), ("k", k), ("v", v)):
        p = tmp_path / f"{name}.npy"
        np.save(p, a)
        paths.append(str(p))
    return paths


@pytest.mark.parametrize("dtype,extra,kwargs", [
    ("bf16", [], {}),
    ("e4m3", ["--causal", "--block-n", "32"], {"causal": True, "block_n": 32}),
    ("e5m2", ["--tau", "4", "--exp", "emu3"], {"tau": 4, "exp": "emu3"}),
    ("e4m3", ["--preset", "fp8-tau4", "--allow-saturation", "--no-split"],
     {"preset": "fp8-tau4", "allow_saturation": True, "split": False}),
])
def test_stats_equal_cli_json(cli, tmp_path, dtype, extra, kwargs):
    q, k, v = qkv(scale=3.0)
    pq, pk, pv = save(tmp_path, q, k, v)
    rep = cli.json("attention", "--q", pq, "--k", pk, "--v", pv, "--dtype", dtype, *extra)
    o, lse, stats = fa4sim.attention(q, k, v, dtype, **kwargs)
    assert o.shape == q.shape and o.dtype == np.float32
    assert lse.shape == (1, 4, 80) and lse.dtype == np.float32
    report_equal(strip_timing(stats), strip_timing(rep["results"]["runs"][0]))  # equal bits
    # o holds bf16 values
    np.testing.assert_array_equal(fa4sim.quantize(o, "bf16"), o)


def test_outputs_against_float64_reference():
    """O and LSE are the outputs the stats describe: for bf16 the dequantised inputs are
    quantize(x, bf16), so the float64 reference on them reproduces rel_l2_dequantized and
    lse_max_err (to float64 summation-order noise)."""
    q, k, v = qkv(batch=2, seq_q=64, seq_k=64, heads=2, kv_heads=1, d=16)
    o, lse, stats = fa4sim.attention(q, k, v, "bf16", causal=True)
    qb, kb, vb = (fa4sim.quantize(t, "bf16").astype(np.float64) for t in (q, k, v))
    kb = np.repeat(kb, 2, axis=2)
    vb = np.repeat(vb, 2, axis=2)
    s = np.einsum("bqhd,bkhd->bhqk", qb, kb) / np.sqrt(16)
    s = np.where(np.tril(np.ones((64, 64), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    ref_lse = (m[..., 0] + np.log(p.sum(-1)))
    ref = np.einsum("bhqk,bkhd->bqhd", p / p.sum(-1, keepdims=True), vb)
    assert np.abs(lse - ref_lse).max() == pytest.approx(stats["lse_max_err"], rel=1e-6)
    rel_l2 = np.linalg.norm(o - ref) / np.linalg.norm(ref)
    assert rel_l2 == pytest.approx(stats["rel_l2_dequantized"], rel=1e-9)
    assert rel_l2 < 1e-2


def test_exp_mufu_is_the_hardware_and_cr_the_fast_mode():
    """exp="mufu" (the default) runs the MUFU's steps through the H200's models, exp="cr" through
    correctly rounded functions: the LSE (lg2.approx vs log2) differs on some rows, both stay
    within float32 noise of each other, and exp2's name is reported back."""
    q, k, v = qkv(batch=1, seq_q=64, seq_k=64, heads=2, kv_heads=2, d=16)
    o_hw, lse_hw, s_hw = fa4sim.attention(q, k, v, "bf16", split=False)
    o_cr, lse_cr, s_cr = fa4sim.attention(q, k, v, "bf16", split=False, exp="cr")
    assert s_hw["exp2"] == "mufu" and s_cr["exp2"] == "cr"
    assert (lse_hw != lse_cr).any()
    assert np.abs(lse_hw - lse_cr).max() < 1e-5
    assert np.abs(o_hw.astype(np.float64) - o_cr).max() < 1e-2
    with pytest.raises(ValueError, match="unknown exp 'fast'.*cr"):
        fa4sim.attention(q, k, v, "bf16", exp="fast")


def test_torch_tensors_and_layouts():
    q, k, v = qkv(seq_q=32, seq_k=32)
    o, lse, stats = fa4sim.attention(q, k, v, "fp16")
    # a non-contiguous view with the same values gives the same bits
    q2 = np.ascontiguousarray(q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    assert not q2.flags.c_contiguous
    o2, lse2, _ = fa4sim.attention(q2, k, v, "fp16")
    np.testing.assert_array_equal(o2, o)
    np.testing.assert_array_equal(lse2, lse)
    # float16 inputs are exact float32 values
    o3, _, _ = fa4sim.attention(q.astype(np.float16), k, v, "fp16")
    o4, _, _ = fa4sim.attention(q.astype(np.float16).astype(np.float32), k, v, "fp16")
    np.testing.assert_array_equal(o3, o4)
    torch = pytest.importorskip("torch", reason="torch is not installed: the PyTorch part is not tested")
    ot, lset, _ = fa4sim.attention(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v), "fp16")
    np.testing.assert_array_equal(ot, o)


def test_errors_carry_the_cli_message(cli, tmp_path):
    """The CLI's refusal in Python's terms: the CLI names the file (--q 'path/q.npy') where
    Python names the tensor (q), and a flag (--block-n) where Python names the argument
    (block_n). `python`: the pattern of a refusal made by the Python layer itself (types and
    ranges), which the CLI makes too (exit 2)."""
    def check(q, k, v, cli_args=(), python=None, **kwargs):
        pq, pk, pv = save(tmp_path, q, k, v)
        want = cli.error("attention", "--q", pq, "--k", pk, "--v", pv, *cli_args)
        for name, p in (("q", pq), ("k", pk), ("v", pv)):
            want = want.replace(f"--{name} '{p}'", name).replace(f"'{p}'", name)
        with pytest.raises(ValueError) as e:
            fa4sim.attention(q, k, v, **kwargs)
        assert "--" not in str(e.value)
        if python:
            assert re.search(python, str(e.value)), str(e.value)
        else:
            assert str(e.value) == fa4sim._python_terms(want)

    q, k, v = qkv()
    check(q, k, v[:, :, :1])                              # K and V shapes differ
    check(q, k[..., :16], v[..., :16])                    # d differs
    check(q[:, :, :3], k, v)                              # heads not a multiple of kv heads
    check(q[0], k, v, python=r"q has shape \(\d+, 4, 32\), expected 4-D")
    check(q, k[:, :40], v[:, :40], ["--causal"], causal=True)  # causal with seq_q > seq_k
    bad = q.copy()
    bad[0, 5, 1, 3] = np.nan
    check(bad, k, v)                                      # NaN input
    check(q, k, v, ["--dtype", "e4m3", "--tau", "4"], dtype="e4m3", tau=4)  # unsafe tau
    check(q, k, v, ["--dtype", "fp8"], python="dtype must be one of 'bf16'", dtype="fp8")
    check(q, k, v, ["--exp", "emu7"], exp="emu7")
    check(q, k, v, ["--block-n", "0"], python=r"block_n must be in 1\.\.", block_n=0)
    with pytest.raises(TypeError, match="float64"):
        fa4sim.attention(q.astype(np.float64), k, v)


def test_parity_check(parity):
    for i, (args, kwargs) in enumerate([
            ([], {}), (["--dtype", "e4m3", "--tau", "4", "--max-offset", "8"],
                       {"dtype": "e4m3", "tau": 4, "max_offset": 8}),
            (["--preset", "fp8-tau4"], {"preset": "fp8-tau4"}),
            (["--dtype", "bf16,e5m2"], {"dtype": ["bf16", "e5m2"]})]):
        want, _ = parity.results(f"check-{i}", "check", *args)
        report_equal(fa4sim.check(**kwargs), want)


def test_check_errors(cli):
    cli.error("check", "--dtype", "e4m4")
    with pytest.raises(ValueError, match="dtype must be one of 'bf16', 'fp16', 'e4m3', 'e5m2'"):
        fa4sim.check(dtype="e4m4")
    with pytest.raises(ValueError) as e:
        fa4sim.check(tau=-1)
    assert str(e.value) == cli.py_error("check", "--tau", "-1")


def hashed_normalish(shape, seed):
    """Deterministic float32 values in (-4, 4) from integer hashing (the same bits on every
    machine and NumPy version, so a stored CLI result stays valid)."""
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.uint64) + np.uint64(seed) * np.uint64(1 << 40)
    with np.errstate(over="ignore"):
        h = i * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(31)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(29)
    u = [((h >> np.uint64(s)) & np.uint64(0xFFFF)).astype(np.float64) / 65536.0 for s in (0, 16, 32)]
    return ((u[0] + u[1] + u[2] - 1.5) * 2.8).astype(np.float32).reshape(shape)  # sd ~1.4


@pytest.mark.parametrize("dtype,extra,kwargs", [
    ("e4m3", ["--causal", "--block-n", "32"], {"causal": True, "block_n": 32}),
    ("bf16", ["--tau", "8", "--exp", "emu3"], {"tau": 8, "exp": "emu3"}),
])
def test_parity_attention_on_arrays(parity, dtype, extra, kwargs):
    q = hashed_normalish((1, 64, 4, 32), 1)
    k = hashed_normalish((1, 96, 2, 32), 2)
    v = hashed_normalish((1, 96, 2, 32), 3)
    want, _ = parity.results(f"attention-arrays-{dtype}", "attention", "--q", "{q}", "--k", "{k}",
                             "--v", "{v}", "--dtype", dtype, *extra,
                             inputs={"q": q, "k": k, "v": v})
    o, lse, stats = fa4sim.attention(q, k, v, dtype, **kwargs)
    assert o.shape == q.shape and lse.shape == (1, 4, 64)
    report_equal(strip_timing(stats), want["runs"][0])


ATTENTION_REPORT_CASES = [
    ("attention-generated", ["--batch", "1", "--heads", "4", "--kv-heads", "2", "--seq", "128",
                             "--d", "64"],
     {"batch": 1, "heads": 4, "kv_heads": 2, "seq": 128, "d": 64}),
    ("attention-generated-lists", ["--dtype", "e4m3,e5m2", "--tau", "0,4", "--max-offset", "8",
                                   "--preset", "fp8-tau4", "--allow-saturation", "--heads", "2",
                                   "--seq", "64,160", "--seq-k", "192", "--d", "32", "--seed", "3",
                                   "--causal", "--no-split"],
     {"dtype": ["e4m3", "e5m2"], "tau": [0, 4], "max_offset": 8, "preset": "fp8-tau4",
      "allow_saturation": True, "heads": 2, "seq": [64, 160], "seq_k": 192, "d": 32, "seed": 3,
      "causal": True, "split": False}),
]


@pytest.mark.parametrize("name,args,kwargs", ATTENTION_REPORT_CASES,
                         ids=[c[0] for c in ATTENTION_REPORT_CASES])
def test_parity_attention_report(parity, name, args, kwargs):
    want, _ = parity.results(name, "attention", *args)
    report_equal(strip_timing(fa4sim.attention_report(**kwargs)), want)


def test_error_split_bounds_the_total():
    """The error split's parts are norms of differences between model runs whose sum is the
    whole difference (attention()'s docstring), so the totals obey the triangle inequality:
    rel_l2_dequantized <= saturation + p_conversion + kernel_rest, and with ||ref_b|| <=
    (1 + qkv) ||ref_a||, rel_l2_unquantized <= (1 + qkv) rel_l2_dequantized + qkv (the norms'
    own float64 rounding aside: 1e-12). The quadrature sum is printed, not asserted: an
    estimate."""
    rep = fa4sim.attention_report(dtype=["bf16", "e4m3", "e5m2"], tau=[0, 4], max_offset=8,
                                  preset="fp8-tau4", allow_saturation=True, heads=2, seq=256,
                                  d=64, threads=2)
    for run in rep["runs"]:
        s = run["error_split"]
        parts = [s["saturation"], s["p_conversion"], s["kernel_rest"]]
        total, qkv = run["rel_l2_dequantized"], s["qkv_quantization"]
        assert total <= sum(parts) * (1 + 1e-12), (run["dtype"], total, parts)
        assert run["rel_l2_unquantized"] <= ((1 + qkv) * total + qkv) * (1 + 1e-12), run
        quad = sum(p * p for p in parts) ** 0.5
        print(f"{run['dtype']} tau {run['tau']}: total {total:.4g}, sum {sum(parts):.4g}, "
              f"quadrature {quad:.4g} ({quad / total - 1:+.1%})")


@pytest.mark.parametrize("kwargs,err,match", [
    ({"batch": 0}, ValueError, r"batch must be in 1\.\.1048576, got 0"),
    ({"heads": 3, "kv_heads": 2}, ValueError, r"heads"),
    ({"seq": []}, ValueError, r"seq must not be empty"),
    ({"seq": [64, 0]}, ValueError, r"seq must be in 1\.\."),
    ({"seq": 64.0}, TypeError, r"seq must be an int"),
    ({"d": 2000}, ValueError, r"d must be in 1\.\.1024"),
    ({"dtype": "fp32"}, ValueError, r"dtype must be one of 'bf16', 'fp16', 'e4m3', 'e5m2'"),
    ({"dtype": "e4m3", "tau": 4, "max_offset": 8}, ValueError, r"max_offset \+ tau|unsafe|saturat"),
    ({"seed": -2}, ValueError, r"seed must be in 0\.\."),
    ({"causal": "yes"}, TypeError, r"causal must be True or False"),
    ({"descale": "max"}, ValueError, r"descale must be one of 'amax', 'one'"),
    ({"exp": "emu7"}, ValueError, r"exp"),
    ({"block_n": 0}, ValueError, r"block_n must be in 1\.\."),
    ({"threads": 2000}, ValueError, r"threads must be in 0\.\.1024"),
    ({"warp_rows": 0}, ValueError, r"warp_rows must be in 1\.\.1024"),
])
def test_attention_report_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match) as e:
        fa4sim.attention_report(**dict({"heads": 2, "seq": 64, "d": 32}, **kwargs))
    assert "--" not in str(e.value)
