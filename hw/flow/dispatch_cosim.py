"""Co-simulation of the RTL dispatcher against the model: ``make cosim``.

``python -m hw.flow.dispatch_cosim --config FILE --policy NAME --cycles N [--sim SIM]`` builds
the dispatcher for the scenario's GPU and the policy's circuit (one build per shape, kept in
``build/cocotb/<simulator>/<shape>``), runs the scenario's workload through the model and
through the RTL (cocotb, ``tb/test_dispatch.py``), compares every clock and prints
``N cycles, M dispatches compared, K mismatches`` as its last line; on a mismatch it prints the
first differing clock before it and exits with status 1. A configuration error is one line and
status 2. It says what it builds and how long that is expected to take, and every 30 s how long
it has been at it; the simulator's output goes to ``build.log`` and ``run.log`` in the build
directory, not to the terminal. Ctrl-C is one line and status 130.

Shipped co-simulation shapes (``configs/cosim/``) build and run in about a minute or two;
the full-size dispatch scenarios take a Verilator build of many minutes. A scenario whose
workload has in-order barriers, every kernel-trace replay among them (each launch after the
first on a stream waits for the one before), is built with the dispatcher's barriers
(``DispatchShape.barriers``); its kernel trace is converted first
(:func:`model.dispatch.kernels.prepare`).

:func:`run_cosim` is the same for a list of jobs on one build (the tests use it).
"""

import argparse
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from cocotb_tools.runner import get_runner

from hw.dispatch.params import VIEW_REFRESHES
from hw.flow.dispatch_build import Design, DispatchShape, dispatcher_verilog
from hw.flow.runner import BUILD_ROOT, SIMULATORS, _PackagedVerilator, missing_simulator, one_file
from model.config import ConfigError
from model.dispatch import ChannelConfig, load_scenario
from model.dispatch.config import ignored_fields
from model.dispatch.config.policy import RTL_SELECTIONS

__all__ = ["REDUCTION", "main", "policy_unsupported", "prepared", "reduced", "run_cosim",
           "scenario_shape", "unsupported"]

#: How ``make test`` reduces a shipped scenario (the 16 x 4 GPU of 128-block VGPR files takes
#: minutes to build and runs at a few clocks per second on Icarus): APs / 8, every block count
#: and every WG's needs / 4 (rounded up), time / 8 (durations, windows, split threshold,
#: history length; a WG's work under the shared execution model too), arrivals unchanged: the
#: same load per AP, on a quarter-size GPU.
REDUCTION = {"aps": 8, "blocks": 4, "time": 8}

BLOCK_CACHE = BUILD_ROOT / "verilog_cache"


def cocotb_version() -> str:
    from importlib import metadata
    return metadata.version("cocotb")


def _down(value: int, divisor: int, least: int = 1) -> int:
    return max(least, -(-value // divisor)) if value else 0


def reduced(gpu, policies, workload, reduction=None):
    """``(gpu, policies, workload)`` reduced as :data:`REDUCTION` says."""
    r = reduction or REDUCTION
    gpu = replace(gpu, aps=max(1, gpu.aps // r["aps"]), vgpr=_down(gpu.vgpr, r["blocks"]),
                  sgpr=_down(gpu.sgpr, r["blocks"]), lds=_down(gpu.lds, r["blocks"]))
    t = r["time"]
    policies = [replace(p, windows=tuple(max(1, w // t) for w in p.windows),
                        split_threshold=_down(p.split_threshold, t),
                        history_cycles=(p.history_cycles if "history_cycles" in
                                        ignored_fields(p) else max(1, p.history_cycles // t)))
                for p in policies]
    workload = [replace(wg, vgpr=_down(wg.vgpr, r["blocks"], 0),
                        sgpr=_down(wg.sgpr, r["blocks"], 0), lds=_down(wg.lds, r["blocks"], 0),
                        duration=_down(wg.duration, t),
                        work=None if wg.work is None else _down(wg.work, t))
                for wg in workload]
    return gpu, policies, workload


def prepared(scenario, cycles: int | None = None):
    """``scenario`` with its kernel trace converted to WGs (those arriving before ``cycles``,
    default the scenario's limit; :func:`model.dispatch.kernels.prepare`); any other
    scenario as it is."""
    if scenario.kernel_trace is None or scenario.workgroups is not None:
        return scenario
    from model.dispatch.kernels import prepare
    return prepare(scenario, cycles)[0]


def scenario_shape(scenario, policy, *, reduce: bool = False, pad: bool = True,
                   seed: int = 1, view_refresh: str = "every") -> DispatchShape:
    """The build that runs ``policy`` of ``scenario``: the scenario's GPU and channels (with
    ``pad``, at least 4, so that scenarios of up to 4 channels share a build), reduced with
    ``reduce``, with in-order barriers when the workload of ``seed`` has any (every
    kernel-trace replay of more than one launch on a stream), its view computed as
    ``view_refresh`` says (:class:`hw.dispatch.DispatcherParams`)."""
    barriers = _has_barriers(scenario, seed)
    scenario = prepared(scenario)
    channels = tuple(scenario.channels)
    if len(channels) < scenario.channel_count:
        channels = scenario.channel_count if not channels else channels + tuple(
            ChannelConfig() for _ in range(scenario.channel_count - len(channels)))
    if pad and isinstance(channels, tuple) and len(channels) < 4:
        channels = channels + tuple(ChannelConfig() for _ in range(4 - len(channels)))
    gpu = scenario.gpu
    if reduce:
        gpu, (policy,), _ = reduced(gpu, [policy], [])
    options = {**({"barriers": True} if barriers else {}),
               **({"view_refresh": view_refresh} if view_refresh != "every" else {})}
    return DispatchShape.of(gpu, policy, channels, **options)


def policy_unsupported(policy) -> str | None:
    """Why the RTL dispatcher cannot be built for ``policy`` (``None``: it can)."""
    if policy.selection not in RTL_SELECTIONS:
        return (f'selection = "{policy.selection}" is not built: the RTL does not implement '
                f"it (it builds {', '.join(RTL_SELECTIONS)}; the faithful baselines are "
                f"model-only, docs/dispatch.md)")
    if policy.wave_placement != "split":
        return (f'wave_placement = "{policy.wave_placement}" is not built: the RTL places '
                f'a WG\'s waves by embodiment 8 ("split", one comparison per PEU in the '
                f'decision\'s clock), not by a per-wave least-loaded choice '
                f'(docs/dispatch_rtl.md, \'Not built\')')
    if policy.decision_pipeline and policy.ap_choice == "combined" and \
            policy.combined_scale != "all":
        return ('a pipelined decision computes the combined score ahead of the choice, with '
                'the maxima over every AP: it needs combined_scale = "all"')
    return None


def _has_barriers(scenario, seed: int) -> bool:
    """Whether ``scenario``'s workload of ``seed`` has an in-order barrier. Only a CSV trace,
    given WGs or a kernel trace can (``generate_workload`` draws none: a test keeps it so),
    so a generated workload is not drawn for the answer: drawing the default mix cost about
    a second per scenario and policy when the regression is collected. A kernel trace
    replayed in order has one unless every stream launches once: it counts as having them
    without being converted (a build with barriers runs a workload without any just as
    well)."""
    if scenario.kernel_trace is not None and scenario.workgroups is None:
        return scenario.kernel_trace.in_order
    if scenario.workgroups is None and scenario.trace is None:
        return False
    return any(wg.barrier for wg in scenario.workload(seed))


def unsupported(scenario, policy, seed: int = 1) -> str | None:
    """Why ``policy`` of ``scenario`` cannot be co-simulated (``None``: it can): the RTL
    places waves by embodiment 8 only (a workload with in-order barriers, a kernel-trace
    replay among them, is built with the dispatcher's barriers)."""
    return policy_unsupported(policy)


#: Verilator's build flags: its lint and style warnings off (``make verilog`` lints the same
#: Verilog with the waivers; here they were most of the build's output, hundreds of thousands
#: of lines for the full-size dispatcher, and slowed the build).
VERILATOR_BUILD_ARGS = ["-Wno-fatal", "-Wno-lint", "-Wno-style"]

#: A Verilator build's fixed cost (s) and its cost per KiB of the dispatcher's Verilog, from
#: this project's builds in CPU seconds with the bench's flags (``hw.flow.runner``: ports
#: public only, one C++ file below 16 MiB, no C++ optimisation, the runtime from ccache): the
#: 4 x 2 x 3 shape, 1,686 KiB, 28 s; the medium 4 x 4 x 4, 7,395 KiB, 78 s. The full-size
#: 16 x 4 x 4 (36 MiB) then comes out at 6 min, within the 4-7 min of docs/dispatch_rtl.md.
#: What :func:`expected_build_seconds` says before a build (a busy machine takes longer).
BUILD_SECONDS = 15.0
BUILD_SECONDS_PER_KIB = 0.009
#: The same for Icarus (``iverilog`` on the netlist Yosys cleaned: 1.4-2.3 s for 1.2 MiB).
ICARUS_BUILD_SECONDS, ICARUS_BUILD_SECONDS_PER_KIB = 1.0, 0.0015


def expected_build_seconds(text: str, simulator: str) -> float:
    """The expected build time of Verilog ``text`` on ``simulator`` (seconds)."""
    kib = len(text) / 1024
    if simulator == "verilator":
        return BUILD_SECONDS + kib * BUILD_SECONDS_PER_KIB
    return ICARUS_BUILD_SECONDS + kib * ICARUS_BUILD_SECONDS_PER_KIB


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def _verilog(shape: DispatchShape, component, simulation: bool) -> str:
    if component is None:
        return dispatcher_verilog(shape, BLOCK_CACHE, simulation=simulation)
    design = Design(component, shape.name, BLOCK_CACHE)
    return design.simulation_verilog() if simulation else design.verilog()


def run_cosim(shape: DispatchShape, jobs: list[dict], simulator: str, *, component=None,
              tag: str = "", fail: bool = True, progress=None,
              users_text: bool = False) -> list[dict]:
    """Build ``shape`` (or ``component``, a variant of it, under ``tag``) for ``simulator``,
    run ``jobs`` (see ``tb/test_dispatch.py``) and return their summaries.

    Verilator builds the Verilog users get (:func:`hw.flow.dispatch_build.dispatcher_verilog`);
    Icarus the same design after Yosys's ``proc`` and ``opt_clean``
    (:func:`hw.flow.verilog_files.simulation_verilog`), 3-5 times faster; with
    ``users_text``, Icarus too simulates the users' text (its build under the tag ``_users``).

    The build is kept in ``build/cocotb/<simulator>/<shape name><tag>`` and redone only when
    the Verilog changed; its output goes to ``build.log`` there and the simulation's to
    ``run.log`` (nothing on the terminal). ``progress(text)``, when given, is called with what
    happens (the build and its expected time, then the run). Under pytest a job with a
    mismatch ends the run with ``SystemExit`` (the cocotb test fails) unless ``fail`` is
    false; otherwise the summaries say what differed.
    """
    reason = missing_simulator(simulator)
    if reason:
        raise RuntimeError(reason)
    simulation = simulator == "icarus" and not users_text
    if simulator == "icarus" and users_text:
        tag += "_users"
    build_dir = BUILD_ROOT / "cocotb" / simulator / (shape.name + tag)
    build_dir.mkdir(parents=True, exist_ok=True)
    if progress is not None:
        progress(f"generating the Verilog of {shape.name} (cached in {BLOCK_CACHE})")
    text = _verilog(shape, component, simulation)
    source = build_dir / f"{shape.name}.v"
    if not source.exists() or source.read_text() != text:
        source.write_text(text)           # unchanged text keeps the last build
    runner = _PackagedVerilator() if simulator == "verilator" else get_runner(simulator)
    build_args = ([*VERILATOR_BUILD_ARGS, *one_file(len(text.encode()))]
                  if simulator == "verilator" else [])
    build_log, run_log = build_dir / "build.log", build_dir / "run.log"
    # One build per shape and simulator, shared by every later run: when the Verilog and the
    # flags are those of the finished build, not even the simulator's parse is redone
    # (Verilator's alone took tens of seconds of each run on a shape built before).
    key = hashlib.sha256("\0".join([text, simulator, *build_args, cocotb_version()])
                         .encode()).hexdigest()
    stamp = build_dir / "built.sha256"
    binary = build_dir / (shape.name if simulator == "verilator" else "sim.vvp")
    if stamp.exists() and stamp.read_text() == key and binary.exists():
        if progress is not None:
            progress(f"{shape.name} on {simulator}: built before ({build_dir})")
    else:
        stamp.unlink(missing_ok=True)
        if progress is not None:
            progress(f"building {shape.name} on {simulator} (expected: about "
                     f"{_duration(expected_build_seconds(text, simulator))}; log: {build_log})")
        try:
            runner.build(sources=[source], hdl_toplevel=shape.name, build_dir=build_dir,
                         timescale=("1ns", "1ps"), build_args=build_args, log_file=build_log)
        except RuntimeError as error:
            raise RuntimeError(f"the {simulator} build of {shape.name} failed ({error}); its "
                               f"output: {build_log}") from None
        stamp.write_text(key)
    if progress is not None:
        progress(f"running {len(jobs)} job(s) (log: {run_log})")
    with tempfile.TemporaryDirectory(dir=build_dir) as work:
        jobs_file, results = Path(work) / "jobs.json", Path(work) / "results.json"
        jobs_file.write_text(json.dumps(jobs))
        try:
            try:
                runner.test(test_module="tb.test_dispatch", hdl_toplevel=shape.name,
                            hdl_toplevel_lang="verilog",
                            build_dir=build_dir, timescale=("1ns", "1ps"), log_file=run_log,
                            extra_env={"DISPATCH_SHAPE": shape.to_json(),
                                       "DISPATCH_JOBS": str(jobs_file),
                                       "DISPATCH_RESULTS": str(results),
                                       "TB_SIMULATOR": simulator})
            except SystemExit:
                if fail or not results.exists():
                    raise
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


class _Progress:
    """What a long ``make cosim`` is doing: each step on its own line, and every
    ``interval`` seconds how long it has taken (and the bench's last progress line)."""

    def __init__(self, interval: float = 30.0):
        import threading
        import time

        self._time, self._interval = time, interval
        self._step, self._since, self._log = "", time.monotonic(), None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def __call__(self, text: str) -> None:
        print(text, flush=True)
        self._step, self._since = text.split(" (")[0], self._time.monotonic()
        found = text.rsplit("log: ", 1)
        self._log = Path(found[1].rstrip(")")) if len(found) == 2 else None
        if self._log is None or not self._log.name.endswith(".log"):
            self._log = None

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            elapsed = self._time.monotonic() - self._since
            last = ""
            if self._log is not None and self._log.exists():
                lines = [line for line in self._log.read_text(errors="replace").splitlines()
                         if "progress:" in line]
                last = f"; {lines[-1].split('progress:', 1)[1].strip()}" if lines else ""
            print(f"  ... {self._step}: {_duration(elapsed)}{last}", flush=True)

    def stop(self) -> None:
        self._stop.set()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.flow.dispatch_cosim",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path, help="a dispatch scenario")
    parser.add_argument("--policy", help="the policy to run (default: the scenario's first)")
    parser.add_argument("--cycles", type=int, help="cycles (default: the scenario's)")
    parser.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    parser.add_argument("--sim", default="verilator", choices=SIMULATORS)
    parser.add_argument("--view-refresh", default="every", choices=VIEW_REFRESHES,
                        help="the view's circuits: every instance's every clock (default) or "
                             "the changed APs' only (circuit_latency 1 or more)")
    args = parser.parse_args(argv)
    try:
        scenario = load_scenario(args.config)
        names = [p.name for p in scenario.policies]
        name = args.policy or names[0]
        if name not in names:
            raise ConfigError(f"{args.config}: no policy {name!r}; it has "
                              f"{', '.join(repr(n) for n in names)}")
        if args.cycles is not None and args.cycles < 1:
            raise ConfigError(f"--cycles must be at least 1, not {args.cycles}")
        policy = next(p for p in scenario.policies if p.name == name)
        reason = unsupported(scenario, policy, args.seed)
        if reason:
            raise ConfigError(f"{args.config}: policy {name!r}: {reason}")
        shape = scenario_shape(scenario, policy, seed=args.seed,
                               view_refresh=args.view_refresh)
        _ = shape.params                # every parameter checked before anything is built
    except (ConfigError, ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    cycles = args.cycles or scenario.cycles
    job = {"kind": "scenario", "path": str(args.config.resolve()), "policy": name,
           "cycles": cycles, "seed": args.seed}
    print(f"{args.config.name} / {name}: {scenario.gpu.aps} APs x {scenario.gpu.peus} PEUs, "
          f"{len(shape.channels)} channels, {policy.circuit} circuit, latency "
          f"{policy.circuit_latency}{', in-order barriers' if shape.barriers else ''}"
          f"{', view of the changed APs' if shape.view_refresh == 'changed' else ''}, "
          f"{cycles} cycles, on {args.sim}", flush=True)
    progress = _Progress()
    try:
        summaries = run_cosim(shape, [job], args.sim, fail=False, progress=progress)
    except KeyboardInterrupt:
        progress.stop()
        print("\ninterrupted: nothing compared (a finished build is kept for the next run)",
              file=sys.stderr)
        return 130
    except RuntimeError as error:
        progress.stop()
        print(f"error: {error}", file=sys.stderr)
        return 1
    progress.stop()
    if not summaries:
        print("error: the simulation produced no result (see its log above)", file=sys.stderr)
        return 1
    summary = summaries[0]
    for note in summary["notes"][:5]:
        print(f"note: {note}")
    for violation in summary["violations"][:5]:
        print(f"protocol: {violation}")
    bad = summary["mismatches"] or summary["violations"]
    if bad and summary["first"]:
        print(f"first difference: {summary['first']}")
    print(f"{summary['cycles']} cycles, {summary['dispatches']} dispatches compared, "
          f"{summary['mismatches']} mismatches", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
