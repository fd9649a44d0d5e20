"""``python -m hw.flow.dispatch_stages`` without the tools: every part builds inside the
register wrapper, the table says what each part costs, bad input is one line."""

import json

import pytest
from amaranth.back import verilog

from hw.flow import dispatch_stages as ds
from hw.flow.fpga_wrapper import RegisterWrapper, data_inputs


def _built(part):
    component = ds.build_part("small", part)
    component._MustUse__silence = True          # inspected, not elaborated
    return component


def test_the_one_part_builds_isolate_what_they_say():
    # The WG choice alone: one AP, so no AP logic; the AP choice alone: one channel.
    assert len(_built("channel").fit[0]) == 1 and len(_built("ap").fit) == 1
    assert len(_built("selector").fit) == 2 and len(_built("selector").fit[0]) == 4
    assert _built("first_fit").n == 32          # the largest resource of the small GPU
    with pytest.raises(ValueError, match="Part must be one of"):
        ds.build_part("small", "decoder")


@pytest.mark.parametrize("part", ["matcher", "allocator"])
def test_a_part_converts_inside_the_wrapper(part):
    component = ds.build_part("small", part)
    assert data_inputs(component)
    assert "module top" in verilog.convert(RegisterWrapper(component), name="top",
                                           emit_src=False)


def test_table_and_bad_parts(capsys):
    rows = [{"part": "matcher", "status": "ok", "luts": 574, "carries": 176, "multipliers": 0,
             "depth": 14, "device": "25k", "fmax": 80.0},
            {"part": "ap", "status": "timed out", "luts": 9, "carries": 0, "depth": 3,
             "device": "45k", "fmax": None}]
    table = ds.format_table(rows)
    assert "| matcher | R x P x Q fit compares | 574 | 176 | 0 | 14 | 25k | 80.0 MHz | 12.5 ns |" \
        in table
    assert "| timed out | - |" in table
    assert ds.main(["--parts", "matcher,decoder", "--results", ""]) == 2
    assert "decoder" in capsys.readouterr().err


def test_results_file_keeps_what_was_not_measured_again(tmp_path):
    path = tmp_path / "stages.json"
    row = {"configuration": "small", "status": "ok", "luts": 1, "carries": 0, "ffs": 0,
           "multipliers": 0, "depth": 1, "device": "25k", "fmax": 50.0, "critical_cells": 1}
    ds.write_results(path, [{**row, "part": "matcher"}, {**row, "part": "ap"}])
    ds.write_results(path, [{**row, "part": "ap", "fmax": 60.0},
                            {**row, "part": "selector", "status": "timed out"}])
    rows = json.loads(path.read_text())["rows"]
    assert [(r["part"], r["fmax"]) for r in rows] == [("matcher", 50.0), ("ap", 60.0)]


def test_the_cache_key_does_not_depend_on_the_verilog_text():
    # Amaranth's Verilog of one design differs between Python processes; the key must not.
    key = ds._identity("small", "ap_all")
    assert key == ds._identity("small", "ap_all") and key != ds._identity("small", "ap")
    assert "verilog" not in key


def test_the_pipelined_parts_are_built_from_the_pipelined_view():
    # The choice reads the registered order of the APs; the plan is built for k = 4.
    choice = _built("choice")
    assert hasattr(choice, "beats") and not hasattr(choice, "view")
    params = ds._part_params("small", "plan")
    assert params.pipeline == 4 and params.score_layers == 5
    assert "module top" in verilog.convert(RegisterWrapper(ds.build_part("small", "scores")),
                                           name="top", emit_src=False)
