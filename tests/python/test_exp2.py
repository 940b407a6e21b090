"""fa4sim.ex2_emu and fa4sim.exp2_analysis against the CLI (`fa4sim exp2 --json`, equal bits) and
the contract block of include/fa4sim/exp2_emu.h."""
import numpy as np
import pytest

import fa4sim
from conftest import report_equal, strip_timing


def bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


@pytest.mark.parametrize("degree", range(6))
def test_contract_special_values(degree):
    x = np.array([-127.0, -200.0, -np.inf, np.nan, 0.0, -0.0, 1e-40, 128.0, 129.0, 2.0**23],
                 dtype=np.float32)
    y = bits(fa4sim.ex2_emu(x, degree))
    one = 0x3F800000
    assert y[:4].tolist() == [0, 0, 0, 0]           # x <= -127, -inf and NaN give +0
    assert y[4:7].tolist() == [one, one, one]       # +-0 and subnormals flush to 0: exactly 1
    assert y[7] == 0x7F800000                       # x = 128: +inf by the splice
    assert y[8] == 0x80000000                       # x = 129: -0 (floor mod 512 wraps)
    assert y[9] == one                              # x = 2^23: floor mod 512 = 0
    inf = bits(fa4sim.ex2_emu(np.float32(np.inf), degree))
    assert inf == (one if degree == 0 else 0x7FFFFFFF)  # the GPU's canonical NaN


def test_integers_are_exact_and_shape_is_kept():
    x = np.arange(-126, 128, dtype=np.float32).reshape(2, 127)
    y = fa4sim.ex2_emu(x, 3)
    assert y.shape == x.shape
    np.testing.assert_array_equal(y, np.exp2(x.astype(np.float64)).astype(np.float32))


def test_threads_and_layout_do_not_change_bits():
    x = np.random.default_rng(0).uniform(-20, 8, 300_000).astype(np.float32)
    a = fa4sim.ex2_emu(x, 5, threads=1)
    np.testing.assert_array_equal(bits(fa4sim.ex2_emu(x, 5, threads=2)), bits(a))
    np.testing.assert_array_equal(bits(fa4sim.ex2_emu(x[::3], 5)), bits(a[::3]))  # non-contiguous


@pytest.mark.parametrize("degree", [3, 5])
def test_exhaustive_max_error_matches_cli(cli, degree):
    """Every float32 of [-0.2578125, -0.25) (2^18 floats): ex2_emu's largest relative error and where it occurs, as
    `fa4sim exp2 --exhaustive` reports them (its reference is its own double 2^x, NumPy's is libm's:
    both within 1e-15, so the maxima agree to 1e-9 relative and the argmax exactly)."""
    lo, hi = np.float32(-0.2578125), np.float32(-0.25)
    start = lo.view(np.uint32)
    stop = hi.view(np.uint32)  # negative floats: larger bit patterns are more negative
    x = np.arange(stop + 1, start + 1, dtype=np.uint32).view(np.float32)[::-1]
    assert x[0] == lo and x[-1] < hi
    rep = cli.json("exp2", "--exhaustive", "--range=-0.2578125,-0.25", "--degree", degree)
    r = rep["results"]["degrees"][0]
    assert r["n"] == x.size
    y = fa4sim.ex2_emu(x, degree).astype(np.float64)
    ref = np.exp2(x.astype(np.float64))
    rel = np.abs(y - ref) / ref
    i = int(np.argmax(rel))
    assert float(x[i]) == r["fp32_max_rel_at"]
    assert rel[i] == pytest.approx(r["fp32_max_rel"], rel=1e-9)
    assert rel.mean() == pytest.approx(r["fp32_mean_rel"], rel=1e-9)


def test_parity_exp2_analysis(parity):
    want, _ = parity.results("exp2-sampled", "exp2", "--samples", 65536, "--degree", "0,3,5",
                             "--range=-10,4", "--seed", 9, "--out-dtype", "fp16")
    got = fa4sim.exp2_analysis(degree=[0, 3, 5], range=(-10, 4), samples=65536, seed=9,
                               out_dtype="fp16")
    report_equal(strip_timing(got), want)
    want, _ = parity.results("exp2-exhaustive", "exp2", "--exhaustive", "--range=1,1.01",
                             "--sampling", "bits")
    got = fa4sim.exp2_analysis(range=(1.0, 1.01), exhaustive=True, sampling="bits", threads=1)
    report_equal(strip_timing(got), want)


def test_parity_exp2_own_coefficients(parity):
    """coeffs: your polynomial instead of upstream's (`fa4sim exp2 --coeffs c0,c1,...`), as a
    list or as a file."""
    c = [1.0, 0.6951461434364319, 0.22756439447402954, 0.0771723911166191]
    text = ",".join(repr(v) for v in c)
    want, _ = parity.results("exp2-coeffs", "exp2", "--coeffs", text, "--samples", 65536)
    report_equal(strip_timing(fa4sim.exp2_analysis(coeffs=c, samples=65536)), want)
    report_equal(strip_timing(fa4sim.exp2_analysis(coeffs=np.float32(c), samples=65536)), want)


def test_coeffs_errors(tmp_path):
    with pytest.raises(ValueError, match=r"coeffs sets the degree.*leave degree out"):
        fa4sim.exp2_analysis(degree=3, coeffs=[1.0, 0.7])
    with pytest.raises(ValueError, match=r"coeffs: cannot read"):
        fa4sim.exp2_analysis(coeffs=str(tmp_path / "missing.txt"))
    with pytest.raises(TypeError, match=r"coeffs must be a number"):
        fa4sim.exp2_analysis(coeffs=["1", "0.7"])
    with pytest.raises(ValueError, match=r"coeffs must not be empty"):
        fa4sim.exp2_analysis(coeffs=[])


def test_errors_carry_the_cli_message(cli):
    x = np.ones(2, np.float32)
    cli.error("exp2", "--degree", "6")
    with pytest.raises(ValueError, match=r"degree must be in 0\.\.5, got 6"):
        fa4sim.ex2_emu(x, degree=6)
    for kwargs, args in [({"range": (8, -20)}, ["--range=8,-20"]),
                         ({"range": (-2000, 0)}, ["--range=-2000,0"])]:
        with pytest.raises(ValueError) as e:
            fa4sim.exp2_analysis(**kwargs)
        assert str(e.value) == cli.py_error("exp2", *args), kwargs
    # refused by the Python layer, as by the CLI
    for kwargs, args, msg in [({"samples": 0}, ["--samples", "0"], r"samples must be in 1\.\."),
                              ({"sampling": "gauss"}, ["--sampling", "gauss"],
                               "sampling must be one of 'uniform', 'bits'"),
                              ({"out_dtype": "e4m3"}, ["--out-dtype", "e4m3"],
                               "out_dtype must be one of 'bf16', 'fp16'")]:
        cli.error("exp2", *args)
        with pytest.raises(ValueError, match=msg):
            fa4sim.exp2_analysis(**kwargs)
    with pytest.raises(TypeError, match="float64, expected float32"):
        fa4sim.ex2_emu(np.ones(3))


def test_parity_fit(parity):
    """fa4sim.fit is `fa4sim fit --json`'s results (the minimax stage: seconds, not minutes)."""
    for degree, fix_c0 in [(2, False), (3, True)]:
        args = ["fit", "--degree", str(degree), "--minimax-only"] + (["--fix-c0"] if fix_c0 else [])
        want, _ = parity.results(f"fit-minimax-{degree}", *args)
        report_equal(strip_timing(fa4sim.fit(degree, minimax_only=True, fix_c0=fix_c0)), want)


def test_fit_errors_speak_python(cli):
    cli.error("fit", "--degree", "0")
    with pytest.raises(ValueError, match=r"degree must be in 1\.\.5, got 0"):
        fa4sim.fit(0)
    with pytest.raises(TypeError, match=r"degree must be an int, got 2\.5"):
        fa4sim.fit(2.5)
    cli.error("fit", "--objective", "max")
    with pytest.raises(ValueError, match=r"objective must be one of 'fp32-maxrel'"):
        fa4sim.fit(objective="max")
