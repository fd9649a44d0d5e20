"""Build the compiled core, :mod:`model.dispatch.core._core`, with the system's C++ compiler
(``make venv`` runs ``python -m model.dispatch.core.build``; issue 32).

One compiler call (C++20, ``-O2``, no fused multiply-add: the metrics' floats are numpy's),
pybind11's headers from the virtual environment, the module written next to this file
with the interpreter's extension suffix. When the compiler is missing or fails, one line
says so and the status is 0: the Python engine serves everything then
(:mod:`model.dispatch.core` says why the compiled one is absent).
"""

import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = sorted((HERE / "src").glob("*.cpp"))
HEADERS = sorted((HERE / "src").glob("*.hpp"))


def target() -> Path:
    """Where the module goes: ``_core`` plus this interpreter's extension suffix."""
    return HERE / f"_core{sysconfig.get_config_var('EXT_SUFFIX')}"


def command(compiler: str, output: Path) -> list[str]:
    """The compiler call that builds ``output``."""
    import pybind11

    include = sysconfig.get_paths()["include"]
    return [compiler, "-std=c++20", "-O2", "-ffp-contract=off", "-shared", "-fPIC",
            "-fvisibility=hidden",
            f"-I{pybind11.get_include()}", f"-I{include}", *map(str, SOURCES),
            "-o", str(output)]


def build(force: bool = False) -> tuple[bool, str]:
    """Build the module unless it is newer than every source; ``(built or current, one-line
    message)``."""
    output = target()
    newest = max(path.stat().st_mtime for path in SOURCES + HEADERS)
    if not force and output.exists() and output.stat().st_mtime >= newest:
        return True, f"compiled core up to date ({output.name})"
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        return False, "compiled core not built: no C++ compiler (g++) on PATH; the Python " \
                      "engine will be used"
    try:
        import pybind11  # noqa: F401
    except ImportError:
        return False, "compiled core not built: pybind11 is not installed; the Python " \
                      "engine will be used"
    call = command(compiler, output.with_suffix(".tmp"))
    result = subprocess.run(call, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        # A module built from older sources would not match the Python side: none at all.
        output.unlink(missing_ok=True)
        first = next((line for line in result.stderr.splitlines() if "error" in line),
                     result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "")
        return False, (f"compiled core not built ({Path(compiler).name} failed: "
                       f"{first.strip()}); the Python engine will be used. The command: "
                       f"{shlex.join(call)}")
    output.with_suffix(".tmp").replace(output)
    return True, f"compiled core built ({output.name})"


def main(argv=None) -> int:
    force = "--force" in (argv if argv is not None else sys.argv[1:])
    _, message = build(force)
    print(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
