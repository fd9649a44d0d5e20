"""Write Verilog for the default parameter sets and lint it: ``python -m hw.flow.generate``.

Each block of :data:`hw.flow.catalog.VERILOG_DEFAULTS` becomes ``<out>/<module name>.v``. With
``--lint`` each file is checked with ``verilator --lint-only -Wall`` and the waivers in
``hw/flow/lint.vlt`` (which waive only Amaranth's own idioms); any other warning fails the run.
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

from hw.flow.catalog import VERILOG_DEFAULTS
from hw.flow.runner import use_packaged_verilator, write_verilog

WAIVERS = Path(__file__).resolve().parent / "lint.vlt"


def lint(path: Path) -> subprocess.CompletedProcess:
    use_packaged_verilator()
    return subprocess.run(["verilator", "--lint-only", "-Wall", str(WAIVERS), str(path)],
                          capture_output=True, text=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/verilog"))
    parser.add_argument("--lint", action="store_true", help="lint each file with Verilator")
    args = parser.parse_args(argv)
    failures = 0
    for config in VERILOG_DEFAULTS:
        start = time.perf_counter()
        path = write_verilog(config, args.out)
        elapsed = time.perf_counter() - start
        status = ""
        if args.lint:
            result = lint(path)
            status = "lint clean" if result.returncode == 0 else "LINT FAILED"
            if result.returncode:
                failures += 1
                sys.stderr.write(result.stdout + result.stderr)
        print(f"{path}  ({path.stat().st_size // 1024} KiB, {elapsed:.1f} s)  {status}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
