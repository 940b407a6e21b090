"""fa4sim.roofline against `fa4sim roofline --json` (the same rows), and its errors."""
import os

import pytest

import fa4sim


@pytest.mark.parametrize("args,kwargs", [
    ([], {}),
    (["--arch", "b200", "--d", "64"], {"arch": "b200", "d": 64}),
    (["--arch", "h100_sxm,b200,b300", "--d", "64,128", "--direction", "all", "--dtype", "all",
      "--emu-fraction", "0.25", "--degree", "3,5"],
     {"arch": ["h100_sxm", "b200", "b300"], "d": [64, 128], "direction": "all", "dtype": "all",
      "emu_fraction": 0.25, "degree": [3, 5]}),
    (["--arch", "b200", "--schedule"], {"arch": "b200", "schedule": "table"}),
    (["--arch", "b200", "--schedule", "10,4,1"], {"arch": "b200", "schedule": (10, 4, 1)}),
])
def test_rows_equal_cli_json(cli, args, kwargs):
    got, want = fa4sim.roofline(**kwargs), cli.json("roofline", *args)["results"]
    # An installed wheel reads its packaged copy of data/archs (fa4sim/data/archs/NAME.json),
    # the CLI the source tree's: the same files; the path itself may differ.
    for a, b in zip(got.get("archs", []), want.get("archs", [])):
        assert os.path.basename(a.pop("origin")) == os.path.basename(b.pop("origin"))
    assert got == want


def test_errors_carry_the_cli_message(cli):
    for kwargs, args in [({"arch": "b201"}, ["--arch", "b201"]),
                         ({"tile": "128"}, ["--tile", "128"]),
                         ({"emu_fraction": 2}, ["--emu-fraction", "2"]),
                         ({"schedule": (4, 4)}, ["--schedule", "4,4"])]:
        with pytest.raises(ValueError) as e:
            fa4sim.roofline(**kwargs)
        assert str(e.value) == cli.py_error("roofline", *args), kwargs
        assert "--" not in str(e.value)
    cli.error("roofline", "--d", "0")
    with pytest.raises(ValueError, match=r"d must be in 1\.\.1024, got 0"):
        fa4sim.roofline(d=0)
