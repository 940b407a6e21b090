"""Long calls release the GIL (docs/python.md): another Python thread runs while they compute.
Checked to fail (every test but the two controls) with the releases in module.cpp removed.

How: a ticker thread counts in a loop that sleeps briefly between counts. The switch interval is
raised to an hour for the test, so the interpreter never takes the GIL from a running thread:
the ticker can only run while the calling thread gives the GIL up by itself. The caller reads
the count, makes the call, reads it again, with no Python code in between that gives up the GIL.
A call that holds the GIL therefore leaves the count exactly unchanged, however slow or loaded
the machine (the negative control checks that); a call that releases it lets the ticker count.
Calls are repeated until the ticker has counted or 20 s have passed, so a loaded machine that
starves the ticker during one call does not fail the test.
"""
import sys
import threading
import time

import numpy as np
import pytest

import fa4sim

DEADLINE_S = 20.0


@pytest.fixture
def ticker():
    old = sys.getswitchinterval()
    sys.setswitchinterval(3600.0)  # before the thread starts: its waits for the GIL use it
    count = [0]
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            time.sleep(1e-4)  # gives up the GIL; takes it back to count
            count[0] += 1

    t = threading.Thread(target=tick, daemon=True)
    t.start()
    try:
        yield count
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)


def ticks_during(count, call, tries=None):
    """Ticks counted while `call()` ran, repeating it until some were or DEADLINE_S passed
    (or `tries` calls were made). Returns (ticks, calls made)."""
    deadline = time.monotonic() + DEADLINE_S
    ticks = calls = 0
    while ticks == 0 and time.monotonic() < deadline and (tries is None or calls < tries):
        before = count[0]
        call()
        ticks += count[0] - before
        calls += 1
    return ticks, calls


def test_ticker_counts_while_the_caller_sleeps(ticker):
    # Positive control: time.sleep gives the GIL up.
    assert ticks_during(ticker, lambda: time.sleep(0.01))[0] > 0


def test_a_call_that_holds_the_gil_leaves_the_count_unchanged(ticker):
    # Negative control: Python bytecode and a C loop that keep the GIL (50 calls of ~10 ms).
    ticks, calls = ticks_during(ticker, lambda: (sum(i * i for i in range(50_000)),
                                                 sum(range(1_000_000))), tries=50)
    assert (ticks, calls) == (0, 50)


N = 1 << 23  # 32 MiB of float32: milliseconds per call


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(7).uniform(-20, 8, N).astype(np.float32)


ELEMENTWISE = {
    "ex2_emu out=": lambda x, y, t: fa4sim.ex2_emu(x, out=y, threads=t),
    "ex2_emu": lambda x, y, t: fa4sim.ex2_emu(x, threads=t),
    "encode e4m3": lambda x, y, t: fa4sim.encode(x, "e4m3", threads=t),
    "encode bf16 stochastic": lambda x, y, t: fa4sim.encode(x, "bf16", rounding="stochastic",
                                                            seed=1, threads=t),
    "decode e4m3": lambda codes, y, t: fa4sim.decode(codes, "e4m3", out=y, threads=t),
    "quantize e5m2": lambda x, y, t: fa4sim.quantize(x, "e5m2", out=y, threads=t),
}


@pytest.mark.parametrize("threads", [1, 0])
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_calls_release_the_gil(ticker, x, name, threads):
    y = np.empty_like(x)
    arg = x.view(np.uint32).astype(np.uint8) if name.startswith("decode") else x  # codes
    assert ticks_during(ticker, lambda: ELEMENTWISE[name](arg, y, threads))[0] > 0


def test_exp2_analysis_releases_the_gil(ticker):
    ticks, _ = ticks_during(ticker, lambda: fa4sim.exp2_analysis(degree=3, samples=1 << 20, threads=1))
    assert ticks > 0


def test_attention_releases_the_gil(ticker):
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 256, 2, 64), dtype=np.float32) for _ in range(3))
    ticks, _ = ticks_during(ticker, lambda: fa4sim.attention(q, k, v, dtype="e4m3", threads=1))
    assert ticks > 0


def test_online_softmax_releases_the_gil(ticker):
    s = np.random.default_rng(4).standard_normal((512, 1024), dtype=np.float32) * 4
    ticks, _ = ticks_during(ticker, lambda: fa4sim.online_softmax(s, tau=8.0, threads=1))
    assert ticks > 0
