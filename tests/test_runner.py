"""hw.flow.runner's builds: Verilator's runtime objects shared through ccache, only the ports
public, small designs as one C++ file; Icarus given the netlist Yosys cleaned."""

import shlex
import subprocess
import sys
from pathlib import Path

from hw.flow import dispatch_build, runner


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
