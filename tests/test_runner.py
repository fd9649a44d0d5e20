"""hw.flow.runner's builds: Verilator's runtime objects shared through ccache, only the ports
public, small designs as one C++ file; Icarus given the netlist Yosys cleaned."""

import shlex
import subprocess
import sys
from pathlib import Path

from hw.flow import dispatch_build, runner, verilator_pch


def test_verilator_compiles_go_through_ccache_in_the_build_tree(monkeypatch):
    monkeypatch.setattr(runner.shutil, "which",
                        lambda name: "/opt/bin/ccache" if name == "ccache" else None)
    (argument,) = runner.object_cache()
    name, value = argument.split("=", 1)
    assert name == "OBJCACHE"
    assert shlex.split(value) == ["env", f"CCACHE_DIR={runner.BUILD_ROOT / 'ccache'}",
                                  "/opt/bin/ccache"]


def test_without_ccache_the_build_compiles_everything(monkeypatch):
    monkeypatch.setattr(runner.shutil, "which", lambda name: None)
    assert runner.object_cache() == []


def _verilator_commands(tmp_path, monkeypatch, size: int) -> list[list[str]]:
    # The commands a build of a design of `size` bytes of Verilog would run (none is run).
    runner.use_packaged_verilator()
    commands = []
    monkeypatch.setattr(runner._PackagedVerilator, "_execute_cmds",
                        lambda self, cmds, cwd, stdout=None: commands.extend(cmds))
    source = tmp_path / "top.v"
    source.write_text("module top(input clk); endmodule\n")
    runner._PackagedVerilator().build(sources=[source], hdl_toplevel="top",
                                      build_dir=tmp_path / "build", timescale=("1ns", "1ps"),
                                      build_args=runner.one_file(size))
    return commands


def test_benches_make_only_the_ports_public_and_small_designs_one_file(tmp_path, monkeypatch):
    # cocotb's default --public-flat-rw kept every internal signal (and its symbol) in the
    # C++; the benches read ports only. Small designs compile as one C++ file.
    verilate, *_ = _verilator_commands(tmp_path, monkeypatch, 2**20)
    assert "--public-flat-rw" not in verilate
    assert verilate[verilate.index("--public-depth") + 1] == "1"
    assert verilate[verilate.index("--output-split") + 1] == "0"
    verilate, *_ = _verilator_commands(tmp_path, monkeypatch, runner.ONE_FILE_BELOW)
    assert "--output-split" not in verilate


def test_one_file_builds_get_the_shared_runtime_header_between_verilator_and_make(
        tmp_path, monkeypatch):
    # Every build compiled verilated.h and verilated_vpi.h twice (its model, cocotb's
    # verilator.cpp): about 1.8 s of each build's 3.4 s make. One-file builds now run
    # hw.flow.verilator_pch before make, which reads the fragment it writes; split builds use
    # Verilator's own per-build header (one precompiled header per g++ run).
    verilate, step, make = _verilator_commands(tmp_path, monkeypatch, 2**20)
    assert step[:2] == [sys.executable, verilator_pch.__file__]
    assert step[2] == make[make.index("-C") + 1] and "OPT_FAST=-O0" in step
    assert make[-2:] == ["-f", verilator_pch.MAKEFILE] and make[0] == "make"
    split = _verilator_commands(tmp_path, monkeypatch, runner.ONE_FILE_BELOW)
    assert len(split) == 2 and verilator_pch.MAKEFILE not in split[-1]


def _verilated(tmp_path) -> Path:
    runner.use_packaged_verilator()
    source = tmp_path / "top.v"
    source.write_text("module top(input clk, output reg q); always @(posedge clk) q <= ~q; "
                      "endmodule\n")
    build_dir = tmp_path / "build"
    subprocess.run(["verilator", "-cc", "--vpi", "-Mdir", str(build_dir), "--prefix", "Vtop",
                    str(source)], check=True, capture_output=True)
    return build_dir


def test_the_shared_header_is_one_g_plus_plus_accepts_for_the_builds_flags(tmp_path):
    # g++ silently parses the text when it cannot use a precompiled header: so -H must show
    # the .gch as used ("!") for a file compiled with the build's own OPT_FAST flags.
    build_dir = _verilated(tmp_path)
    variables = ["VM_TRACE=0", "OPT_FAST=-O0", "OPT_GLOBAL=-O0"]
    header = verilator_pch.prepare(build_dir, variables)
    assert header is not None and header.with_name(header.name + ".gch").exists()
    assert f"-include {header}" in (build_dir / verilator_pch.MAKEFILE).read_text()
    compiler, flags = verilator_pch._build_flags(build_dir, variables)
    (build_dir / "use.cpp").write_text('#include "verilated.h"\nint main() { return 0; }\n')
    run = subprocess.run([*compiler, *flags, "-include", str(header), "-H", "-Winvalid-pch",
                          "-c", "use.cpp", "-o", "use.o"], cwd=build_dir, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert f"! {header}.gch" in run.stderr, run.stderr[:2000]
    # A second build with the same flags finds the header made.
    assert verilator_pch.prepare(build_dir, variables) == header


def test_a_failed_shared_header_step_says_so_in_one_line_and_leaves_make_a_plain_build(
        tmp_path, capsys):
    # No Vtop.mk (make fails): the step exits 0, the fragment is empty, one line on stderr.
    assert verilator_pch.main([str(tmp_path), "OPT_FAST=-O0"]) == 0
    assert (tmp_path / verilator_pch.MAKEFILE).read_text() == ""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("verilator_pch: no shared header"), lines


def test_icarus_simulates_the_cleaned_netlist_and_verilator_the_users_text(tmp_path,
                                                                           monkeypatch):
    # Icarus spent most of each clock in Amaranth's `always @*` blocks and the wires between
    # them; it now runs the same design after Yosys's proc and opt_clean (3-5 times faster),
    # while Verilator keeps building the text `make verilog` gives users.
    from hw.flow.catalog import BlockConfig
    from hw.flow.verilog_files import netlist, simulation_verilog, verilog_text

    built = {}

    class Runner:
        def __init__(self, simulator="verilator"):
            self.simulator = simulator

        def build(self, *, sources, **options):
            built[self.simulator] = sources[0].read_text()

        def test(self, **options):
            return tmp_path / "results.xml"

    monkeypatch.setattr(runner, "BUILD_ROOT", tmp_path)
    monkeypatch.setattr(runner, "missing_simulator", lambda simulator: None)
    monkeypatch.setattr(runner, "_PackagedVerilator", Runner)
    monkeypatch.setattr(runner, "get_runner", Runner)
    config = BlockConfig("exact", 12, 1, 2)
    for simulator in ("icarus", "verilator"):
        runner.run_bench(config, simulator)
    assert built["verilator"] == verilog_text(config.component(), config.name)
    assert built["icarus"] == simulation_verilog([netlist(config.component(), config.name)],
                                                 config.name)
    assert "always @*" in built["verilator"] and "always @*" not in built["icarus"]


def test_one_netlist_gives_the_users_verilog_byte_for_byte():
    # dispatcher_verilog converts a design once and derives both texts from its RTLIL; the
    # users' text must be what Amaranth's own conversion gives.
    from hw.flow.catalog import BlockConfig
    from hw.flow.verilog_files import netlist, verilog_of_netlist, verilog_text

    for config in (BlockConfig("exact", 12, 1, 2), BlockConfig("grouped", 16, 0, 1, groups=4)):
        assert verilog_of_netlist(netlist(config.component(), config.name)) == \
            verilog_text(config.component(), config.name)


def test_the_dispatcher_verilog_cache_key_covers_every_hw_module_the_build_imports():
    # The cached Verilog is keyed by hw.flow.dispatch_build.SOURCES: a generating module left
    # out (verilog_files.py, whose passes make the Icarus text) kept a stale text after a change.
    probe = ("import sys; from pathlib import Path; import hw.flow.dispatch_build; "
             "print('\\n'.join(str(Path(m.__file__).resolve()) for m in list(sys.modules.values())"
             " if getattr(m, '__file__', None)))")
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=dispatch_build.ROOT, check=True,
                            capture_output=True, text=True).stdout.splitlines()
    hw = dispatch_build.ROOT / "hw"
    generating = {Path(path) for path in loaded if Path(path).is_relative_to(hw)
                  and Path(path).name != "__init__.py"} - {hw / "arbiter.py"}  # not in it
    assert generating and generating <= {path.resolve() for path in dispatch_build.SOURCES}
