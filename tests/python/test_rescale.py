"""fa4sim.rescale (the experiment of `fa4sim rescale`) against `fa4sim rescale --json` (the same
numbers for the same seed; with or without the CLI: Note [Stored CLI results] in conftest.py),
and its errors."""
import numpy as np
import pytest

import fa4sim
from conftest import report_equal

SMALL = ["--rows", "64", "--keys", "1024", "--d", "32", "--threads", "2"]
SMALL_KW = {"rows": 64, "keys": 1024, "d": 32, "threads": 2}

CASES = [
    ("rescale-default-small", [], {}),
    ("rescale-fp8-lists", ["--tau", "0,4", "--dtype", "e4m3,e5m2", "--max-offset", "8",
                           "--dist", "normal:1.5,rise:24,peaked", "--allow-saturation",
                           "--seeds", "2", "--seed", "5", "--v-dist", "uniform"],
     {"tau": [0, 4], "dtype": ["e4m3", "e5m2"], "max_offset": 8,
      "dist": ["normal:1.5", "rise:24", "peaked"], "allow_saturation": True, "seeds": 2,
      "seed": 5, "v_dist": "uniform"}),
    ("rescale-knobs", ["--tau", "8", "--exp", "emu3", "--order", "reverse", "--warp-rows", "16",
                       "--block-n", "64", "--softmax-scale", "0.125",
                       "--rng", "numpy:3"],
     {"tau": 8, "exp": "emu3", "order": "reverse", "warp_rows": 16, "block": 64,
      "scale": 0.125, "rng": "numpy:3"}),
    ("rescale-counts-only", ["--tau", "0,2,8", "--counts-only", "--exp", "schedule:10,4,1"],
     {"tau": (0, 2, 8), "counts_only": True, "exp": "schedule:10,4,1"}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[c[0] for c in CASES])
def test_parity_rescale(parity, name, args, kwargs):
    want, _ = parity.results(name, "rescale", *SMALL, *args)
    report_equal(fa4sim.rescale(**SMALL_KW, **kwargs), want)


def test_parity_rescale_file_scores(parity, tmp_path):
    """dist="file:PATH": the file's shape is the experiment's (rows, keys not given)."""
    s = (np.arange(32 * 512, dtype=np.float32).reshape(32, 512) % 97) / 8.0
    want, _ = parity.results("rescale-file", "rescale", "--dist", "file:{scores}", "--d", "16",
                             "--tau", "0,8", inputs={"scores": s})
    path = tmp_path / "rescale-file-scores.npy"  # the file name of the CLI's run
    np.save(path, s)
    got = fa4sim.rescale(dist=f"file:{path}", d=16, tau=(0, 8))
    report_equal(file_names(got), file_names(want))


def file_names(r):
    """Results with each "file:PATH" as "file:NAME" (the same file, in another folder)."""
    import os
    if isinstance(r, dict):
        return {k: file_names(v) for k, v in r.items()}
    if isinstance(r, list):
        return [file_names(v) for v in r]
    if isinstance(r, str) and r.startswith("file:"):
        return "file:" + os.path.basename(r[5:])
    return r


def test_threads_do_not_change_results():
    a = fa4sim.rescale(**dict(SMALL_KW, threads=1), tau=8, seeds=2)
    b = fa4sim.rescale(**dict(SMALL_KW, threads=2), tau=8, seeds=2)
    a.pop("threads", None), b.pop("threads", None)
    assert a == b


@pytest.mark.parametrize("kwargs,err,match", [
    ({"tau": -1}, ValueError, r"tau must be in \[0, 64\], got -1"),
    ({"tau": []}, ValueError, r"tau must not be empty"),
    ({"tau": "8"}, TypeError, r"tau must be a number"),
    ({"tau": 8, "dtype": "e4m3"}, ValueError, r"max_offset \+ tau"),
    ({"dtype": "e2m1"}, ValueError, r"dtype must be one of"),
    ({"max_offset": 65}, ValueError, r"max_offset must be in \[0, 64\]"),
    ({"dist": "gauss:1"}, ValueError, r"dist"),
    ({"dist": 1.5}, TypeError, r"dist must be a string"),
    ({"rows": 0}, ValueError, r"rows must be in 1\.\.1048576, got 0"),
    ({"keys": 100, "block": 128}, ValueError, r"block 128 is larger than keys 100"),
    ({"d": 5000}, ValueError, r"d must be in 1\.\.4096"),
    ({"v_dist": "cauchy"}, ValueError, r"v_dist must be one of 'normal', 'uniform'"),
    ({"exp": "emu9"}, ValueError, r"exp"),
    ({"scale": 0}, ValueError, r"scale must be > 0"),
    ({"order": "sideways"}, ValueError, r"order must be one of 'auto', 'reverse', 'forward'"),
    ({"warp_rows": 0}, ValueError, r"warp_rows must be in 1\.\.1024"),
    ({"seed": -1}, ValueError, r"seed must be in 0\.\."),
    ({"seeds": 0}, ValueError, r"seeds must be in 1\.\.10000"),
    ({"rng": "mt19937"}, ValueError, r"unknown rng 'mt19937'"),
    ({"rng": "numpy:3", "seed": 4}, ValueError, r"rng numpy:3 and seed 4 disagree"),
    ({"rng": "numpy:3", "v_dist": "uniform"}, ValueError, r"rng numpy draws V as standard normal"),
    ({"counts_only": 1}, TypeError, r"counts_only must be True or False"),
    ({"threads": -1}, ValueError, r"threads must be in 0\.\.1024"),
])
def test_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match) as e:
        fa4sim.rescale(**dict({"rows": 8, "keys": 256}, **kwargs))
    assert "--" not in str(e.value)


def test_errors_carry_the_cli_message(cli):
    for kwargs, args in [({"dist": "gauss:1"}, ["--dist", "gauss:1"]),
                         ({"tau": 8, "dtype": "e4m3"}, ["--tau", "8", "--dtype", "e4m3"]),
                         ({"exp": "emu9"}, ["--exp", "emu9"])]:
        with pytest.raises(ValueError) as e:
            fa4sim.rescale(**kwargs)
        assert str(e.value) == cli.py_error("rescale", *args), kwargs
