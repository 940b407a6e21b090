"""fa4sim.online_softmax against the CLI (`fa4sim rescale --dist file:S.npy`: the same rescale and
saturation counts), its per-(row, block) flags, and a float64 softmax."""
import numpy as np
import pytest

import fa4sim


def scores(rows=96, keys=640, sigma=3.0, seed=0):
    g = np.random.default_rng(seed)
    return (g.standard_normal((rows, keys)) * sigma + np.linspace(0, 12, keys)).astype(np.float32)


@pytest.mark.parametrize("tau,dtype,order,extra", [
    (0.0, "bf16", "reverse", []),
    (8.0, "bf16", "forward", []),
    (4.0, "e4m3", "reverse", ["--max-offset", "8", "--allow-saturation"]),
    (2.0, "e5m2", "forward", ["--exp", "emu3"]),
])
def test_counts_equal_cli_json(cli, tmp_path, tau, dtype, order, extra):
    S = scores()
    p = tmp_path / "S.npy"
    np.save(p, S)
    rep = cli.json("rescale", "--dist", f"file:{p}", "--tau", repr(tau), "--dtype", dtype,
                   "--order", order, "--counts-only", *extra)
    run = rep["results"]["runs"][0]
    kwargs = {"max_offset": 8.0, "allow_saturation": True} if "--allow-saturation" in extra else {}
    if "--exp" in extra:
        kwargs["exp"] = "emu3"
    o, lse, flags, stats = fa4sim.online_softmax(S, None, tau, dtype, order=order, **kwargs)
    assert o is None and lse is None
    assert flags.shape == (96, 5) and flags.dtype == np.uint8
    for key in ("rows_pct", "warps_pct", "saturated_pct"):
        assert stats[key] == run[key], key
    assert stats["saturated"] == run["saturated"]
    # the flags are the counts: rows % = flagged (row, block) pairs / (rows * (blocks - 1))
    assert 100.0 * flags.sum() / (96 * 4) == stats["rows_pct"]
    visited_first = 0 if order == "forward" else 4
    assert not flags[:, visited_first].any()
    warps = flags.reshape(3, 32, 5).any(axis=1)
    assert 100.0 * warps.sum() / (3 * 4) == stats["warps_pct"]


def test_outputs_against_float64_softmax():
    S = scores(rows=64, keys=512, sigma=1.0)
    V = np.random.default_rng(1).standard_normal((512, 32)).astype(np.float32)
    o, lse, flags, stats = fa4sim.online_softmax(S, V, tau=8.0, dtype="fp32", exp="exact")
    s = S.astype(np.float64) * np.log(2.0)  # log2 units
    m = s.max(1, keepdims=True)
    p = np.exp(s - m)
    ref = (p / p.sum(1, keepdims=True)) @ V.astype(np.float64)
    np.testing.assert_allclose(o, ref, rtol=0, atol=1e-5)
    np.testing.assert_allclose(lse, m[:, 0] + np.log(p.sum(1)), rtol=0, atol=1e-5)
    # the same call with V gives the same flags as the counts-only call
    _, _, flags2, stats2 = fa4sim.online_softmax(S, None, tau=8.0, dtype="fp32", exp="exact")
    np.testing.assert_array_equal(flags, flags2)
    assert stats["rows_pct"] == stats2["rows_pct"]


def test_threads_do_not_change_results():
    S = scores(rows=256, keys=1024)
    V = np.random.default_rng(2).standard_normal((1024, 64)).astype(np.float32)
    a = fa4sim.online_softmax(S, V, tau=0.0, threads=1)
    b = fa4sim.online_softmax(S, V, tau=0.0, threads=2)
    for x, y in zip(a[:3], b[:3]):
        np.testing.assert_array_equal(x, y)
    assert a[3] == b[3]


def test_errors_carry_the_cli_message(cli, tmp_path):
    S = scores(rows=32, keys=256)
    p = tmp_path / "S.npy"
    bad = S.copy()
    bad[3, 7] = np.nan
    np.save(p, bad)
    want = cli.py_error("rescale", "--dist", f"file:{p}").replace(str(p), "scores")
    with pytest.raises(ValueError) as e:
        fa4sim.online_softmax(bad)
    assert str(e.value) == want
    np.save(p, S)
    for kwargs, args in [({"tau": 4.0, "dtype": "e4m3"}, ["--tau", "4", "--dtype", "e4m3"]),
                         ({"tau": -1.0}, ["--tau", "-1"]),
                         ({"exp": "emu9"}, ["--exp", "emu9"])]:
        with pytest.raises(ValueError) as e:
            fa4sim.online_softmax(S, **kwargs)
        assert str(e.value) == cli.py_error("rescale", "--dist", f"file:{p}", *args), kwargs
    # refused by the Python layer, as by the CLI
    for kwargs, args, msg in [({"dtype": "e3m4"}, ["--dtype", "e3m4"], "dtype must be one of"),
                              ({"block": 512}, ["--block", "512"],
                               "block = 512 is larger than the 256 keys of scores")]:
        cli.error("rescale", "--dist", f"file:{p}", *args)
        with pytest.raises(ValueError, match=msg):
            fa4sim.online_softmax(S, **kwargs)
    with pytest.raises(ValueError, match="expected 2-D"):
        fa4sim.online_softmax(S[0])
    with pytest.raises(ValueError, match="one row per key"):
        fa4sim.online_softmax(S, np.ones((10, 4), np.float32))
