"""hw.flow.crude_timing on hand-made netlists: its charges, where paths start and end, the
carry chain, the slice multiplexers, and a clear line for what it cannot read."""

import json

import pytest

from hw.flow.crude_timing import DELAYS, Timing, main


def _cell(kind, inputs, outputs):
    ports = {**{p: "input" for p in inputs}, **{p: "output" for p in outputs}}
    return {"type": kind, "port_directions": ports, "connections": {**inputs, **outputs}}


def _module():
    """q0 -> LUT a -> LUT b -> PFUMX (a, b; select q1) -> ff0; q0 -> carry chain of two
    cells -> ff1 (from the second cell's sum)."""
    cells = {
        "ff_q0": _cell("TRELLIS_FF", {"CLK": [1], "DI": [40]}, {"Q": [2]}),
        "ff_q1": _cell("TRELLIS_FF", {"CLK": [1], "DI": [41]}, {"Q": [3]}),
        "lut_a": _cell("LUT4", {"A": [2], "B": ["0"]}, {"Z": [10]}),
        "lut_b": _cell("LUT4", {"A": [10]}, {"Z": [11]}),
        "mux": _cell("PFUMX", {"ALUT": [10], "BLUT": [11], "C0": [3]}, {"Z": [12]}),
        "ff0": _cell("TRELLIS_FF", {"CLK": [1], "DI": [12]}, {"Q": [40]}),
        "cc0": _cell("CCU2C", {"A0": [2], "CIN": ["0"]}, {"S0": [20], "COUT": [21]}),
        "cc1": _cell("CCU2C", {"A0": [3], "CIN": [21]}, {"S0": [22], "COUT": [23]}),
        "ff1": _cell("TRELLIS_FF", {"CLK": [1], "DI": [22]}, {"Q": [41]}),
    }
    names = {"q0": 2, "q1": 3, "a": 10, "b": 11, "m": 12, "sum": 22, "r0": 40, "r1": 41}
    return {"attributes": {"top": 1}, "cells": cells,
            "netnames": {name: {"bits": [bit]} for name, bit in names.items()}}


def test_charges_follow_the_table():
    d = DELAYS
    timing = Timing(_module())
    assert timing.arrival(2) == 0                                   # a register's output
    assert timing.arrival(10) == pytest.approx(d["net"] + d["lut"])
    assert timing.arrival(11) == pytest.approx(2 * (d["net"] + d["lut"]))
    # The multiplexer's data inputs come from the LUTs of its slice: no net.
    assert timing.arrival(12) == pytest.approx(timing.arrival(11) + d["mux"])
    # Into the first carry cell, along the chain, out of the second's sum.
    assert timing.arrival(21) == pytest.approx(d["net"] + d["carry_io"])
    assert timing.arrival(22) == pytest.approx(timing.arrival(21) + d["carry_io"])
    groups, every = timing.endpoints()
    assert groups["r0"][0] == pytest.approx(timing.arrival(12) + d["net"])
    assert groups["r1"][0] == pytest.approx(timing.arrival(22) + d["net"])
    assert len(every) == 4                  # the four flip-flops' data inputs
    path = [net for _, _, net in timing.path(groups["r0"][1])]
    assert path == ["m", "b", "a", "q0"]


def test_a_loop_is_named(tmp_path, capsys):
    module = _module()
    module["cells"]["lut_a"]["connections"]["B"] = [12]            # a -> b -> m -> a
    with pytest.raises(ValueError, match="combinational loop"):
        Timing(module).endpoints()
    looped = tmp_path / "looped.json"
    looped.write_text(json.dumps({"modules": {"top": module}}))
    assert main([str(looped)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "combinational loop through" in err[0]


def test_bad_input_is_one_line(tmp_path, capsys):
    good = tmp_path / "netlist.json"
    good.write_text(json.dumps({"modules": {"top": _module()}}))
    assert main([str(good), "--top", "2", "--path", "r0"]) == 0
    assert "the worst path into r0" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("{\"modules\": 3}")
    assert main([str(bad)]) == 2
    assert main([str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "not a Yosys JSON netlist" in err[0] and "cannot be read" in err[1]
