"""Errors in Python's terms: every refusal names the Python argument and, where there is a set,
the allowed values; no CLI flag ("--degree") and no nanobind internals ("incompatible function
arguments") reach the caller. Values the CLI refuses are refused here too."""
import re

import numpy as np
import pytest

import fa4sim

X = np.linspace(-4, 4, 64, dtype=np.float32)
Q = np.random.default_rng(0).standard_normal((1, 8, 2, 8), dtype=np.float32)

# (call, exception, message pattern)
CASES = [
    (lambda: fa4sim.ex2_emu(X, 2.7), TypeError, r"degree must be an int, got 2\.7"),
    (lambda: fa4sim.ex2_emu(X, True), TypeError, r"degree must be an int, got True"),
    (lambda: fa4sim.ex2_emu(X, 7), ValueError, r"degree must be in 0\.\.5, got 7"),
    (lambda: fa4sim.ex2_emu(X, 2**70), ValueError, r"degree must be in 0\.\.5"),
    (lambda: fa4sim.ex2_emu(X, threads=-1), ValueError, r"threads must be in 0\.\.1024, got -1"),
    (lambda: fa4sim.ex2_emu(X, threads=1025), ValueError, r"threads must be in 0\.\.1024"),
    (lambda: fa4sim.ex2_emu(X, threads=2**40), ValueError, r"threads must be in 0\.\.1024"),
    (lambda: fa4sim.ex2_emu(None), TypeError, r"x must be a number or an array, got None"),
    (lambda: fa4sim.ex2_emu("1.0"), TypeError, r"x must be a number or an array"),
    (lambda: fa4sim.ex2_emu([None]), TypeError, r"x has dtype object"),
    (lambda: fa4sim.encode(1e300), ValueError, r"x: 1e\+300 is beyond the float32 range"),
    (lambda: fa4sim.encode([1e-50]), ValueError, r"x: 1e-50 is below float32's smallest subnormal"),
    (lambda: fa4sim.quantize(-1e39), ValueError, r"x: -1e\+39 is beyond the float32 range"),
    (lambda: fa4sim.encode(X, None), TypeError, r"fmt must be a format name such as 'e4m3'"),
    (lambda: fa4sim.encode(X, seed=1.5, rounding="stochastic"), TypeError, r"seed must be an int"),
    (lambda: fa4sim.encode(X, seed=2**64, rounding="stochastic"), ValueError,
     r"seed must be in 0\.\.9223372036854775807"),
    (lambda: fa4sim.encode(X, seed=3), ValueError, r"seed is only used by stochastic rounding"),
    (lambda: fa4sim.encode(X, overflow="saturate"), ValueError,
     r"overflow must be one of 'satfinite', 'ieee', got 'saturate'"),
    (lambda: fa4sim.encode(X, rounding="up"), ValueError,
     r"rounding must be one of 'nearest', 'stochastic'"),
    (lambda: fa4sim.roofline(tile=(128, 128)), TypeError, r"tile must be 'MxN'"),
    (lambda: fa4sim.roofline(d=0), ValueError, r"d must be in 1\.\.1024, got 0"),
    (lambda: fa4sim.roofline(degree=9), ValueError, r"degree must be in 0\.\.5, got 9"),
    (lambda: fa4sim.exp2_analysis(degree=3.7), TypeError, r"degree must be an int, got 3\.7"),
    (lambda: fa4sim.exp2_analysis(samples=0), ValueError, r"samples must be in 1\.\."),
    (lambda: fa4sim.exp2_analysis(out_dtype="e4m3"), ValueError,
     r"out_dtype must be one of 'bf16', 'fp16'"),
    (lambda: fa4sim.attention(Q, Q[:, :, :1], Q[:, :, :1], dtype="bf16", block_n=2.5), TypeError,
     r"block_n must be an int"),
    (lambda: fa4sim.attention(Q[0], Q, Q), ValueError, r"q has shape \(8, 2, 8\), expected 4-D"),
    (lambda: fa4sim.attention(Q, Q[:, :, :1].repeat(3, axis=2), Q[:, :, :1].repeat(3, axis=2)),
     ValueError, r"q has 2 heads and k/v 3"),
    (lambda: fa4sim.attention(Q, Q, Q, tau=float("nan")), ValueError, r"tau must be finite"),
    (lambda: fa4sim.check("e4m3", tau=float("nan")), ValueError, r"tau must be finite, got nan"),
    (lambda: fa4sim.online_softmax(np.zeros((4, 0), np.float32)), ValueError,
     r"scores has shape \(4, 0\), expected 2-D \(rows, keys\) with at least one row and one key"),
    (lambda: fa4sim.online_softmax(np.zeros((0, 256), np.float32)), ValueError,
     r"scores has shape \(0, 256\)"),
    (lambda: fa4sim.online_softmax(np.zeros((4, 64), np.float32)), ValueError,
     r"block = 128 is larger than the 64 keys of scores"),
    (lambda: fa4sim.online_softmax(np.zeros((4, 64), np.float32), tau=float("nan"), block=64),
     ValueError, r"tau must be finite, got nan"),
    (lambda: fa4sim.online_softmax(np.zeros((4, 64), np.float32), block=64, warp_rows=True),
     TypeError, r"warp_rows must be an int"),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_refusals_speak_python(i):
    call, exc, pattern = CASES[i]
    with pytest.raises(exc) as e:
        call()
    msg = str(e.value)
    assert re.search(pattern, msg), msg
    assert "--" not in msg, msg
    assert "incompatible function arguments" not in msg, msg


def test_encode_large_value_like_the_cli(cli):
    """encode(1e300) is refused, as `fa4sim quantize 1e300` refuses it; a value the CLI takes
    gives the CLI's code."""
    assert "beyond the float32 range" in cli.error("quantize", "--dtype", "e4m3", "1e300")
    assert "would read as 0" in cli.error("quantize", "--dtype", "e4m3", "1e-50")
    with pytest.raises(ValueError, match="beyond the float32 range"):
        fa4sim.encode(1e300)
    assert fa4sim.encode(3e38) == fa4sim.encode(np.float32(3e38))


def test_ex2_emu_none_in_a_list_or_alone_is_refused_not_nan():
    for bad in (None, [1.0, None]):
        with pytest.raises(TypeError):
            fa4sim.ex2_emu(bad)


SCORES_BEYOND = [np.full((2, 8), 1e30, np.float32), np.full((2, 8), 3e7, np.float32),
                 (np.random.default_rng(0).standard_normal((4, 8)) * 3e7).astype(np.float32)]


@pytest.mark.parametrize("i", range(len(SCORES_BEYOND)))
def test_online_softmax_refuses_scores_beyond_2_24_like_the_cli(i, cli, tmp_path):
    s = SCORES_BEYOND[i]
    path = tmp_path / "s.npy"
    np.save(path, s)
    cli_msg = cli.error("rescale", "--dist", f"file:{path}", "--block-n", "8", "--seeds", "1")
    assert "beyond 2^24" in cli_msg
    with pytest.raises(ValueError, match=r"beyond 2\^24") as e:
        fa4sim.online_softmax(s, block=8)
    assert "--" not in str(e.value)


def test_online_softmax_refuses_a_fully_masked_row_like_the_cli(cli, tmp_path):
    s = np.zeros((4, 8), np.float32)
    s[3] = -np.inf
    path = tmp_path / "s.npy"
    np.save(path, s)
    assert "every key of row 3 is -inf" in cli.error("rescale", "--dist", f"file:{path}",
                                                     "--block-n", "8", "--seeds", "1")
    with pytest.raises(ValueError, match=r"scores: every key of row 3 is -inf"):
        fa4sim.online_softmax(s, block=8)
    s[3, 0] = 0.0  # one key left: fine
    fa4sim.online_softmax(s, block=8)
