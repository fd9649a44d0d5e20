"""One precompiled Verilator runtime header, shared by every Verilator build of the project.

Every build compiles two files of its own: the model (``Vtop__ALL.cpp``, one file below
:data:`hw.flow.runner.ONE_FILE_BELOW`) and cocotb's ``verilator.cpp`` (it includes the model's
``Vtop.h``, so ``ccache`` cannot reuse it between designs). Each first parses ``verilated.h``
and ``verilated_vpi.h``: without C++ optimisation, 1.0-1.1 s of the 1.2-1.5 s that g++ takes for
``verilator.cpp`` or for a small model (measured on this project's builds: the exact circuit at
n = 8, 1.44 s, 0.37 s with the header precompiled; ``verilator.cpp`` 1.23-1.47 s, 0.34-0.43 s).
The regression makes about fifty builds.

Run between Verilator and ``make`` (:class:`hw.flow.runner._PackagedVerilator`), this step
precompiles both headers once per compiler, flags and Verilator (in
``build/verilator_pch/<key>/``, shared by the builds: created in a temporary directory and
renamed, so parallel builds never see half a file) and writes ``pch.mk`` into the build
directory; ``make -f Vtop.mk -f pch.mk`` then force-includes it into the files compiled with
``OPT_FAST``. The flags are the build's own (``make`` prints them), so g++ accepts the header;
where it would not (another compiler, flags changed between builds), g++ ignores a precompiled
header it cannot use and parses the text, which is the same header: a failed step costs time,
never a wrong build. When the step fails (no compiler, no space), ``pch.mk`` is left empty and
one line in the build log says why.

``python -m hw.flow.verilator_pch BUILD_DIR [MAKE_VARIABLE=VALUE ...]`` (the variables the
build's ``make`` gets).
"""

import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["PCH_ROOT", "MAKEFILE", "prepare"]

PCH_ROOT = Path(__file__).resolve().parents[2] / "build" / "verilator_pch"
#: The makefile fragment this step writes into the build directory.
MAKEFILE = "pch.mk"
HEADER = "verilated_pch.h"
_TEXT = '#include "verilated.h"\n#include "verilated_vpi.h"\n'
_PRINT = "print-pch-flags"


def _build_flags(build_dir: Path, variables: list[str]) -> tuple[list[str], list[str]]:
    """``(compiler, flags)`` of the build's ``OPT_FAST`` compiles, as its ``make`` sets them."""
    rule = f"{_PRINT}: ; @echo '$(CXX)'; echo '$(OPT_FAST) $(CXXFLAGS) $(CPPFLAGS)'"
    run = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(build_dir), "-f",
                          "Vtop.mk", *variables, f"--eval={rule}", _PRINT],
                         capture_output=True, text=True, check=True)
    compiler, flags = run.stdout.splitlines()[-2:]
    # Dependency files are the build's business, not the shared header's.
    return shlex.split(compiler), [flag for flag in shlex.split(flags) if flag != "-MMD"]


def _key(compiler: list[str], flags: list[str]) -> str:
    digest = hashlib.sha256("\0".join([*compiler, *flags, _TEXT]).encode())
    version = subprocess.run([*compiler, "--version"], capture_output=True, text=True,
                             check=True)
    digest.update(version.stdout.encode())
    include = Path(os.environ.get("VERILATOR_ROOT", "")) / "include"
    for header in sorted(include.glob("verilated*.h")) + sorted(include.glob("vltstd/*.h")):
        digest.update(header.name.encode() + header.read_bytes())
    return digest.hexdigest()[:20]


def prepare(build_dir: Path, variables: list[str]) -> Path:
    """Make sure the shared header for ``build_dir``'s flags exists, write ``pch.mk`` there
    and return the header. When it cannot be made, ``pch.mk`` is left empty and the error
    (``OSError``, ``subprocess.CalledProcessError``, ``ValueError``) passes to the caller:
    :func:`main` reports it in one line."""
    makefile = build_dir / MAKEFILE
    makefile.write_text("")
    compiler, flags = _build_flags(build_dir, variables)
    directory = PCH_ROOT / _key(compiler, flags)
    header = directory / HEADER
    if not (directory / (HEADER + ".gch")).exists():
        PCH_ROOT.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=PCH_ROOT) as work:
            staging = Path(work) / "pch"
            staging.mkdir()
            (staging / HEADER).write_text(_TEXT)
            subprocess.run([*compiler, *flags, "-x", "c++-header", HEADER, "-o", HEADER + ".gch"],
                           cwd=staging, capture_output=True, text=True, check=True)
            try:
                staging.rename(directory)
            except OSError:
                if not directory.exists():     # another build renamed the same header first
                    raise
    makefile.write_text(f"# The shared Verilator header (hw/flow/verilator_pch.py).\n"
                        f"override OPT_FAST += -include {shlex.quote(str(header))}\n")
    return header


def main(argv: list[str]) -> int:
    build_dir, variables = Path(argv[0]), argv[1:]
    try:
        prepare(build_dir, variables)
    except (OSError, subprocess.CalledProcessError, ValueError) as error:
        detail = getattr(error, "stderr", "") or ""
        print(f"verilator_pch: no shared header, the build parses it ({error}"
              f"{': ' + detail.strip().splitlines()[-1] if detail.strip() else ''})",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
