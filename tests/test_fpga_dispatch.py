"""The dispatcher's rows of ``make fpga-report`` (``hw/flow/fpga_dispatch.py``) without the
tools: every configuration and view builds, the tables and the results file say what was
measured and keep what was not."""

import json

import pytest

from hw.flow import fpga_dispatch as fd


@pytest.mark.parametrize("configuration", fd.CONFIGURATIONS)
@pytest.mark.parametrize("view", fd.VIEWS)
def test_every_row_is_a_valid_dispatcher(configuration, view):
    params = fd.shape(configuration, view).params          # every parameter checked
    gpu, channels = fd.CONFIGURATIONS[configuration]
    assert (params.aps, params.peus, params.channels) == (gpu.aps, gpu.peus, channels)
    assert params.policy.circuit == fd.VIEWS[view][1]["circuit"]


def test_the_pipelined_row_of_latency_2_is_the_build_the_cosimulation_runs():
    # The FPGA table's fastest row must be a build that the co-simulation holds to the model
    # clock for clock (tests/test_cocotb_dispatch.py runs SHAPES["small_l2"]).
    from hw.flow.dispatch_build import DispatchShape
    from tb.dispatch_cases import SHAPES
    shape = SHAPES["small_l2"]
    assert DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options()) \
        == fd.shape("small", "pipelined_l2")



def test_the_full_size_cosimulation_runs_the_default_build_of_the_50_mhz_row():
    # configs/cosim/default_pipelined.toml (make cosim at full size) must build what the
    # FPGA table's default pipelined_l2 row synthesizes: the same Verilog, held to the model.
    from pathlib import Path

    from hw.flow.dispatch_cosim import scenario_shape
    from model.dispatch.config import load_scenario
    path = Path(__file__).resolve().parents[1] / "configs" / "cosim" / "default_pipelined.toml"
    scenario = load_scenario(path)
    (policy,) = scenario.policies
    assert scenario_shape(scenario, policy) == fd.shape("default", "pipelined_l2")
    # configs/cosim/default_rotating.toml and default_grouped8.toml with VIEW_REFRESH=changed:
    # the builds for the 85F (the second, grouped /8 at latency 4, is the one placed flat).
    for name, view in (("default_rotating.toml", "changed_l3_rotating"),
                       ("default_grouped8.toml", "grouped8_changed_l4_rotating")):
        scenario = load_scenario(path.with_name(name))
        (policy,) = scenario.policies
        assert scenario_shape(scenario, policy, view_refresh="changed") == \
            fd.shape("default", view)
    assert "grouped8_changed_l4_rotating" in fd.DEFAULT_FLAT

def _row(configuration, view, family, kind, **fields):
    parts = {p: {"luts": 10, "ffs": 1, "carries": 0} for p in (*fd.PARTS, "control")}
    return {"configuration": configuration, "view": view, "family": family, "kind": kind,
            "status": "ok", "luts": 70, "ffs": 7, "carries": 0, "parts": parts,
            "device": "25k", "fmax": 55.5, **fields}


def test_tables_and_results_file(tmp_path):
    rows = [_row("small", "exact", "ecp5", "flat"), _row("small", "exact", "ecp5", "hierarchy"),
            _row("default", "exact", "ecp5", "hierarchy"),
            _row("small", "full", "ice40", "flat", status="does not fit", fmax=None),
            _row("small", "shared", "ecp5", "flat", status="failed", error="boom")]
    small, default, by_part = fd.format_tables(rows)
    assert "55.5" in small and "does not fit" in small
    assert "| exact, latency 1 | - | - | 70 | 7 | - |" in default
    # The LUT4 sites: a carry cell takes two, a LUT-RAM cell six.
    rows[2] = _row("default", "exact", "ecp5", "hierarchy", carries=5, rams=3)
    assert "| exact, latency 1 | - | - | 70 | 7 | 98 |" in fd.format_tables(rows)[1]
    assert "resource table" in by_part and "10 (14%)" in by_part
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"rows": [{"key": "default/full/ice40/hierarchy", "luts": 5}]}))
    fd.write_results(path, rows)
    data = json.loads(path.read_text())
    keys = [r["key"] for r in data["rows"]]
    # The old row is kept, the failed one not written, every measured one is.
    assert "default/full/ice40/hierarchy" in keys and "small/shared/ecp5/flat" not in keys
    assert {"small/exact/ecp5/flat", "small/full/ice40/flat"} <= set(keys)
    assert data["configurations"]["small"]["gpu"]["aps"] == 4


@pytest.mark.parametrize("part", [*fd.PARTS, None])
def test_every_part_is_renamed_and_keeps_its_circuits_as_black_boxes(part):
    # Yosys 0.70's ABC9 fails an assertion on wires named like another wire's bit
    # (``x[0]`` next to ``x``) unless they are renamed before synthesis; the allocator too
    # keeps its first-fit trees as black boxes (they are counted once per role).
    # Every part is flattened first: the renaming renames a kept submodule's ports (the
    # pipelined decision's score pipeline in the top level, the grouped view's exact tree in
    # its GroupedExact) but not its instance's connections, and Yosys then refused the
    # build ("does not have a port named ...").
    lines = fd._part_script(fd.FAMILIES["ecp5"], "top", part).splitlines()
    assert lines[0] == "read_verilog -lib blocks.v"
    hierarchy = lines.index(next(line for line in lines if line.startswith("hierarchy")))
    assert lines[hierarchy + 1:lines.index(fd.UNESCAPE)] == ["flatten"]
    assert lines.index(fd.UNESCAPE) < lines.index(next(
        line for line in lines if line.startswith("synth_ecp5")))
    assert [line for line in lines if line.startswith("blackbox")] == (
        [] if part else [f"blackbox top.{p}" for p in fd.PARTS])
    circuit = fd._circuit_script(fd.FAMILIES["ecp5"]).splitlines()
    assert circuit.index(fd.UNESCAPE) < circuit.index("synth_ecp5 -top top")


def test_cell_counts_include_multipliers_distributed_and_block_ram():
    cells = {"LUT4": 7, "CCU2C": 2, "TRELLIS_FF": 3, "MULT18X18D": 4, "TRELLIS_DPR16X4": 5,
             "DP16KD": 6, "PFUMX": 9}
    assert fd.cell_counts(fd.FAMILIES["ecp5"], cells) == {
        "luts": 7, "carries": 2, "ffs": 3, "multipliers": 4, "rams": 5, "block_rams": 6}
    ice40 = fd.cell_counts(fd.FAMILIES["ice40"], {"SB_LUT4": 1, "SB_MAC16": 2,
                                                  "SB_RAM40_4K": 3})
    assert (ice40["multipliers"], ice40["rams"], ice40["block_rams"]) == (2, 0, 3)


def test_carry_chains_are_counted_by_their_heads(tmp_path):
    # Two chains: cells 1 -> 2 -> 3 (COUT into the next CIN) and cell 4 alone, whose carry
    # in comes from a LUT; the LUT and a carry in of constant 1 do not chain anything.
    def carry(cin, cout):
        return {"type": "CCU2C", "connections": {"CIN": [cin], "COUT": [cout]}}
    cells = {"c1": carry("1", 10), "c2": carry(10, 11), "c3": carry(11, 12),
             "lut": {"type": "LUT4", "connections": {"Z": [13]}}, "c4": carry(13, 14)}
    netlist = tmp_path / "netlist.json"
    netlist.write_text(json.dumps({"modules": {
        "sub": {"attributes": {}, "cells": {"x": carry("0", 20)}},
        "top": {"attributes": {"top": "00000000000000000000000000000001"}, "cells": cells}}}))
    assert fd.carry_chains(netlist) == 2


def test_circuits_are_counted_per_instance_in_their_role():
    one = {"luts": 1, "carries": 0, "ffs": 1, "multipliers": 0, "rams": 0, "block_rams": 0}
    parts = {p: dict(one) for p in (*fd.PARTS, "control")}
    circuits = [{"module": "exact128", "role": "view", "instances": 64, "luts": 100, "ffs": 7,
                 "carries": 3, "seconds": 1.0},
                {"module": "exact128", "role": "allocator", "instances": 4, "luts": 300,
                 "ffs": 0, "carries": 5, "seconds": 2.0}]
    result = fd.combine(parts, circuits)
    assert result["parts"]["views"] == {"luts": 1 + 6400, "carries": 192, "ffs": 1 + 448,
                                        "multipliers": 0, "rams": 0, "block_rams": 0}
    assert result["parts"]["allocator"]["luts"] == 1 + 1200
    assert result["parts"]["table"] == one and parts["views"] == one    # inputs unchanged
    assert result["luts"] == 7 + 6400 + 1200 and result["carries"] == 192 + 20
    assert result["ffs"] == 7 + 448
    counts, listed = fd.format_details([{
        "configuration": "default", "view": "exact", "family": "ecp5", "kind": "hierarchy",
        "status": "ok", **result, "circuits": circuits, "seconds": 3.0}])
    assert "| 6,401 | 192 | 449 | 0 | 0 | 0 |" in counts and "**7,607**" in counts
    assert "| exact128 | allocator | 4 | 300 | 5 | 0 | 2.0 |" in listed


def test_each_role_keeps_only_the_ports_it_reads():
    from amaranth.hdl import Module
    from amaranth.sim import Simulator

    from hw.maxblock import ExactMaxFreeBlock

    view = fd.ROLE_USE["view"](ExactMaxFreeBlock(8, latency=0))
    assert set(view.signature.members) == {"status", "length"}
    allocator = fd.ROLE_USE["allocator"](ExactMaxFreeBlock(8, latency=0))
    assert set(allocator.signature.members) == {"status", "request", "fit", "fit_start"}

    async def bench(ctx):
        # Free blocks 1-2 and 4-7 (bit i = block i): the longest run is 4, a request of 3
        # fits first at block 4, one of 5 nowhere.
        ctx.set(view.status, 0b11110110)
        assert ctx.get(view.length) == 4
        ctx.set(allocator.status, 0b11110110)
        ctx.set(allocator.request, 3)
        assert (ctx.get(allocator.fit), ctx.get(allocator.fit_start)) == (1, 4)
        ctx.set(allocator.request, 5)
        assert ctx.get(allocator.fit) == 0

    top = Module()
    top.submodules.view, top.submodules.allocator = view, allocator
    simulator = Simulator(top)
    simulator.add_testbench(bench)
    simulator.run()


def test_cache_identity_of_the_circuits_does_not_depend_on_the_hash_seed():
    # Amaranth orders a submodule's ports by string hashes, so the Verilog of the same tree
    # differs between Python processes; the cache key must not (or no run is ever warm).
    import os
    import subprocess
    import sys

    from hw.flow.dispatch_build import BlockLibrary
    from hw.maxblock import ExactMaxFreeBlock

    def key():
        library = BlockLibrary()
        instance = library.wrap(ExactMaxFreeBlock(12), "allocator")
        instance._MustUse__silence = True           # only its module is asked for
        return fd._cache_key(fd._library_identity(library))

    # This process's hash seed is random (or whatever the caller set); the other's is fixed.
    other = subprocess.run(
        [sys.executable, "-c", "from hw.flow import fpga_dispatch as fd; "
         "from hw.flow.dispatch_build import BlockLibrary; "
         "from hw.maxblock import ExactMaxFreeBlock; library = BlockLibrary(); "
         "library.wrap(ExactMaxFreeBlock(12), 'allocator')._MustUse__silence = True; "
         "print(fd._cache_key(fd._library_identity(library)))"],
        check=True, capture_output=True, text=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout.strip()
    assert other == key()


def test_a_default_build_gets_the_time_its_placement_needs(monkeypatch):
    seen = {}
    monkeypatch.setattr(fd, "place_and_route",
                        lambda configuration, *args: seen.setdefault(configuration, args[-1]))
    for configuration in ("small", "default"):
        fd._job("flat", configuration, "exact", "ecp5", None, None, 1200)
    assert seen == {"small": 1200, "default": fd.DEFAULT_FLAT_TIMEOUT}
