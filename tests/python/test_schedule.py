"""fa4sim.schedule against `fa4sim schedule --json` (the same predictions; with or without the
CLI: Note [Stored CLI results] in conftest.py), and its errors."""
import pytest

import fa4sim
from conftest import report_equal

CASES = [
    ("schedule-default", [], {}),
    ("schedule-b200-tricks", ["--arch", "b200", "--seq", "8192", "--d", "64", "--tau", "8",
                              "--emu-fraction", "0.25", "--degree", "3", "--no-search"],
     {"arch": "b200", "seq": 8192, "d": 64, "tau": 8, "emu_fraction": 0.25, "degree": 3,
      "search": False}),
    ("schedule-gqa-causal", ["--arch", "h200,b200", "--batch", "2", "--heads", "16",
                             "--kv-heads", "4", "--seq", "2048", "--seq-k", "4096", "--causal",
                             "1", "--tile", "128x64", "--rescale-share", "0.1", "--tau", "4"],
     {"arch": ["h200", "b200"], "batch": 2, "heads": 16, "kv_heads": 4, "seq": 2048,
      "seq_k": 4096, "causal": True, "tile": "128x64", "rescale_share": 0.1, "tau": 4}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[c[0] for c in CASES])
def test_parity_schedule(parity, name, args, kwargs):
    want, _ = parity.results(name, "schedule", *args)
    report_equal(fa4sim.schedule(**kwargs), want)


def test_parity_schedule_inputs(parity):
    """A list of configurations (--inputs FILE): each entry's keys over the arguments."""
    import json
    entries = [{"d": 64}, {"arch": "b200", "seq": 1024, "causal": True, "tile": [128, 128]},
               {"tau": 8, "emu_fraction": 0.5, "rescale_share": 0.05}]
    # "{inputs_json}": the file the test writes (its text's digest is stored with the results).
    want, _ = parity.results("schedule-inputs", "schedule", "--inputs", "{inputs_json}", "--seq",
                             "2048", inputs={"inputs_json": json.dumps(entries)})
    got = fa4sim.schedule(seq=2048, inputs=entries)
    report_equal(got, want)
    assert [p["input"] for p in got["predictions"]] == entries



def test_kernel_factors():
    """Note [Kernel factors]: the default file scales a kernel it holds; "none" is the model alone."""
    shape = {"d": 224, "batch": 2, "heads": 8, "seq": 2048, "search": False}
    with_f = fa4sim.schedule(**shape)["rows"][0]["stock"]
    alone = fa4sim.schedule(**shape, kernel_factors="none")["rows"][0]["stock"]
    assert with_f["kernel_factor_measurements"] > 0 and alone["kernel_factor_measurements"] == 0
    assert with_f["ms"] / alone["ms"] == pytest.approx(with_f["kernel_factor"], rel=1e-12)


@pytest.mark.parametrize("kwargs,err,match", [
    ({"arch": "h201"}, ValueError, r"unknown arch.*h201|h201"),
    ({"d": 100}, ValueError, r"multiple of 8"),
    ({"d": 512}, ValueError, r"d must be in 8\.\.256, got 512"),
    ({"batch": 0}, ValueError, r"batch must be in 1\.\.65535, got 0"),
    ({"heads": 2.0}, TypeError, r"heads must be an int"),
    ({"kv_heads": 5}, ValueError, r"heads"),
    ({"seq": -1}, ValueError, r"seq must be in"),
    ({"seq_k": 0}, ValueError, r"seq_k must be in"),
    ({"causal": 1}, TypeError, r"causal must be True or False"),
    ({"tau": -1}, ValueError, r"tau must be in \[0, 64\]"),
    ({"tau": float("nan")}, ValueError, r"tau must be finite"),
    ({"emu_fraction": 1.5}, ValueError, r"emu_fraction must be in \[0, 1\]"),
    ({"degree": 6}, ValueError, r"degree must be in 0\.\.5"),
    ({"rescale_share": "0.1"}, TypeError, r"rescale_share must be a number"),
    ({"tile": "128"}, ValueError, r"tile"),
    ({"tile": (128, 128)}, TypeError, r"tile must be 'MxN'"),
    ({"search": "yes"}, TypeError, r"search must be True or False"),
    ({"arch": []}, ValueError, r"arch must name at least one"),
    ({"spec": "/nonexistent/spec.json"}, ValueError, r"spec.json"),
    ({"kernel_factors": "/nonexistent/kf.json"}, ValueError, r"kernel factors file.*kf\.json"),
    ({"kernel_factors": 1.5}, TypeError, r"kernel_factors must be a string"),
    ({"kernel_factors": ""}, ValueError, r"kernel_factors must be a path or 'none'"),
    ({"inputs": {"d": 64}}, TypeError, r"inputs must be a list of dicts"),
    ({"inputs": [{"d": "64"}]}, ValueError, r"inputs: entry 0"),
    ({"inputs": [{"d": object()}]}, ValueError, r"inputs\[0\]\['d'\]: object is not a JSON value"),
])
def test_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match) as e:
        fa4sim.schedule(**kwargs)
    assert "--" not in str(e.value)


def in_folder(message):
    """A message with each quoted path as its file name."""
    import re
    return re.sub(r"'[^' ]*/", "'", message)


def test_errors_carry_the_cli_message(cli):
    for kwargs, args in [({"arch": "h201"}, ["--arch", "h201"]),
                         ({"d": 100}, ["--d", "100"]),
                         ({"tile": "96x64"}, ["--tile", "96x64"])]:
        with pytest.raises(ValueError) as e:
            fa4sim.schedule(**kwargs)
        # an arch file's folder: the wheel's packaged data or the source tree's
        assert in_folder(str(e.value)) == in_folder(cli.py_error("schedule", *args)), kwargs
