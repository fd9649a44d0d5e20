"""``gpusched dispatch`` (alias ``gpusched sim``): run the dispatcher scenarios, compare the
policies, plot, write JSON.

Every scenario file runs every policy it lists on the same workload (same seed). Per scenario:
a table comparing the policies, notes on anything not used or not submitted, a PNG
(``<plots>/dispatch_<scenario>.png``, :mod:`model.dispatch.plots`); after all scenarios, a
table of the scenarios' claims (the seed's assertions, each as a measured ratio).
``--events FILE.csv`` writes the per-WG event log of each run (docs/dispatch.md).
``--bench`` instead times every policy on the default scenario and prints simulated cycles
per second.
``--kernel-trace FILE --preset GPU`` replays a profiler's kernel trace instead
(:mod:`model.dispatch.kernels`).
"""

import argparse
import contextlib
import time
from pathlib import Path

from model.cli import CONFIG_ROOT, positive_int, select_policies
from model.config import ConfigError
from model.dispatch.config import load_scenario, write_trace
from model.dispatch.engine import DispatchSimulator, write_events
from model.dispatch.gpus import GPU_PRESETS
from model.dispatch.kernels import prepare, print_summary, trace_scenario
from model.dispatch.plots import plot_scenario
from model.dispatch.profilers import FORMATS
from model.report import RunProgress, print_table

__all__ = ["add_arguments", "claim_rows", "events_path", "run", "run_scenario",
           "workload_notes"]

QUICK_CYCLES = 3000
TRACE_CYCLES = 200_000          # default cycle limit of --kernel-trace


def add_arguments(parser) -> None:
    """The dispatcher's own options (``--policy`` is common to every subcommand)."""
    parser.add_argument("--cycles", type=positive_int, metavar="N",
                        help="cycle limit, >= 1 (default: the scenario's)")
    parser.add_argument("--write-trace", type=Path, metavar="CSV",
                        help="write the (first) scenario's workload as a CSV trace")
    parser.add_argument("--debug", action="store_true",
                        help="check every invariant every cycle (as the tests do)")
    parser.add_argument("--bench", action="store_true",
                        help="print simulated cycles per second per policy")
    parser.add_argument("--events", type=Path, metavar="CSV",
                        help="write every run's per-WG event log (arrive, reject, dispatch, "
                             "stale-abort, split, release) as CSV; with several runs, one "
                             "file per run named CSV-stem.<scenario>.<policy>.csv")
    # -- kernel traces (issue 15) --
    traces = parser.add_argument_group("kernel traces (instead of the scenario files)")
    traces.add_argument("--kernel-trace", type=Path, metavar="FILE",
                        help="a profiler's per-launch kernel trace (formats: "
                             f"{', '.join(FORMATS)})")
    traces.add_argument("--preset", choices=tuple(GPU_PRESETS),
                        help="the GPU it runs on (required with --kernel-trace)")
    traces.add_argument("--format", choices=tuple(FORMATS),
                        help="the trace's format (default: detected from its header)")
    traces.add_argument("--kernels", type=_window, metavar="FIRST:LAST",
                        help="launches FIRST..LAST-1 only (0-based, file order)")
    traces.add_argument("--clock-mhz", type=int, metavar="MHZ",
                        help="the clock that turns the trace's time into cycles (default: the "
                             "preset's)")


def _window(text: str) -> tuple[int, int | None]:
    first, _, last = text.partition(":")
    try:
        window = (int(first or 0), int(last) if last else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be FIRST:LAST, not {text!r}") from None
    if window[0] < 0 or (window[1] is not None and window[1] <= window[0]):
        raise argparse.ArgumentTypeError(f"must be FIRST:LAST with 0 <= FIRST < LAST, not "
                                         f"{text!r}")
    return window


def _load(args) -> list:
    """``(file, scenario)`` of every scenario to run, all loaded (and so checked) before
    anything runs; kernel traces are converted later, by :func:`_converted`."""
    if args.kernel_trace is not None:
        if args.preset is None:
            raise ConfigError("--kernel-trace needs --preset (one of "
                              f"{', '.join(GPU_PRESETS)})")
        loaded = [(args.kernel_trace, trace_scenario(
            args.kernel_trace, args.preset, format=args.format,
            kernels=args.kernels or (0, None), clock_mhz=args.clock_mhz,
            cycles=args.cycles or TRACE_CYCLES))]
    else:
        loaded = [(path, load_scenario(path)) for path in args.config]
    return loaded


def _converted(args, scenario):
    """``scenario`` with its kernel trace (if any) turned into WGs; says what it did."""
    horizon = args.cycles or (min(scenario.cycles, QUICK_CYCLES) if args.quick
                              else scenario.cycles)
    scenario, converted = prepare(scenario, horizon)
    if converted is not None:
        print_summary(converted, scenario.name)
    return scenario


def run_scenario(scenario, *, seed: int = 1, cycles: int | None = None, policies=None,
                 debug: bool = False, quiet: bool = True, strict: bool = False,
                 events: dict | None = None, skip: bool = True,
                 bar: RunProgress | None = None, done=None) -> dict:
    """Run the scenario's policies on its workload; ``{policy name: results}`` (plus the
    wall-clock seconds of each run under ``"seconds"``). WGs arriving at or after the cycle
    limit are not submitted; each result counts them (``workgroups_after_end``). With
    ``events`` (a dict), ``events[policy name]`` receives each run's event rows. ``bar``
    shows the simulated cycles; ``done(policy, result)`` is called after each policy."""
    limit = cycles or scenario.cycles
    workload = scenario.workload(seed)
    chosen = [p for p in scenario.policies if policies is None or p.name in policies]
    results = {}
    with contextlib.ExitStack() as stack:
        if bar is None:
            bar = stack.enter_context(RunProgress(scenario.name, runs=len(chosen),
                                                  quiet=quiet))
        for policy in chosen:
            started = time.perf_counter()
            rows = [] if events is not None else None
            with bar.run(f"{scenario.name} {policy.name}", expected=limit,
                         unit="cycles") as tick:
                simulator = DispatchSimulator(
                    scenario.gpu, policy, workload, channels=scenario.channels, cycles=limit,
                    debug=debug, strict=strict, skip=skip,
                    sample_interval=scenario.sample_interval,
                    power_window=scenario.power_window, events=rows,
                    observer=None if tick is None else lambda cycle, _: tick(cycle))
                result = simulator.run()
            result["seconds"] = time.perf_counter() - started
            results[policy.name] = result
            if events is not None:
                events[policy.name] = rows
            if done is not None:
                done(policy.name, result)
    return results


def workload_notes(scenario, results: dict, limit: int) -> list[str]:
    """What a reader must know about the workload: WGs not submitted because they arrive at
    or after the cycle limit, channels that submitted nothing, an empty workload, and what
    the scenario file gives that is not used."""
    notes = list(scenario.notes)
    first = next(iter(results.values()), None)
    if first is None:
        return notes
    if first["workgroups_after_end"]:
        notes.append(f"{first['workgroups_after_end']} WGs arrive at or after cycle {limit} "
                     f"(the cycle limit) and are not submitted")
    if not first["workgroups_submitted"]:
        source = (f"the trace {scenario.trace.name} has no rows before the cycle limit"
                  if scenario.trace else "no channel generated a WG before the cycle limit")
        notes.append(f"no WG was submitted ({source}): every figure is zero because "
                     f"nothing ran")
    else:
        for channel, stats in first["wait"]["per_channel"].items():
            if not stats["count"]:
                index = int(channel)
                why = ""
                if index < len(scenario.channels) and not scenario.trace:
                    config = scenario.channels[index]
                    why = (" (count = 0)" if not config.count else
                           f" (start = {config.start})" if config.start >= limit
                           else "")
                notes.append(f"channel {channel} submitted no WG{why}")
    return notes


def events_path(base: Path, scenario, policy: str, single: bool) -> Path:
    """Where ``--events`` writes one run: ``base`` itself for a single run, else
    ``<base stem>.<scenario file stem>.<policy>.csv`` beside it."""
    if single:
        return base
    stem = Path(scenario.path).stem if scenario.path else scenario.name
    slug = "".join(c if c.isalnum() or c in "-_" else "_" for c in policy)
    return base.with_name(f"{base.stem}.{stem}.{slug}{base.suffix or '.csv'}")


def claim_rows(scenario, results: dict) -> list[list]:
    """One row per claim: scenario, claim, metric, policy value, baseline value, ratio,
    whether the policy is better."""
    rows = []
    for claim in scenario.claims:
        if claim.policy not in results or claim.baseline not in results:
            continue
        mine, theirs = claim.value(results[claim.policy]), claim.value(results[claim.baseline])
        ratio = mine / theirs if theirs else float("inf") if mine else 1.0
        better = mine > theirs if claim.higher_is_better else mine < theirs
        rows.append([scenario.name, claim.text, claim.metric, mine, theirs, ratio,
                     "yes" if better else "no"])
    return rows


def _table(scenario, results: dict) -> None:
    lowest = str(scenario.gpu.priorities - 1)
    headers = ["policy", "done", "rej", "WG/kcyc", "wait mean", "wait p99", "wait max",
               f"P{lowest} max", "VGPR util", "PEU CV", "AP res CV", "AP pwr CV", "frag",
               "splits", "stale", "viol"]
    rows = []
    for name, r in results.items():
        rows.append([name, r["workgroups_completed"], r["workgroups_rejected"], r["throughput"],
                     r["wait"]["mean"], r["wait"]["p99"], r["wait"]["max"],
                     r["wait"]["per_priority"][lowest]["max"], r["utilisation"]["vgpr"],
                     r["peu_imbalance"], r["ap_imbalance"]["resource"],
                     r["ap_imbalance"]["power"], r["fragmentation"], r["splits"],
                     r["stale_aborts"], r["invariant_violations"]])
    first = next(iter(results.values()))
    print_table(f"{scenario.name}: {first['workgroups_submitted']} WGs, "
                f"{scenario.gpu.aps} APs x {scenario.gpu.peus} PEUs", headers, rows)
    for name, r in results.items():
        for rejection in r["rejections"][:3]:
            print(f"  [{name}] rejected: {rejection['reason']}")


def _bench(args) -> int:
    default = CONFIG_ROOT / "dispatch" / "default.toml"
    scenario = load_scenario(args.config[0] if args.config and len(args.config) == 1
                             else default)
    chosen = select_policies(args, {scenario.name: [p.name for p in scenario.policies]})
    rows = []
    for policy in scenario.policies:
        if policy.name not in chosen[scenario.name]:
            continue
        results = run_scenario(scenario, seed=args.seed, cycles=args.cycles,
                               policies=[policy.name])[policy.name]
        rows.append([policy.name, results["cycles"], results["processed_cycles"],
                     results["seconds"], results["cycles"] / results["seconds"]])
    print_table(f"dispatcher speed, {scenario.name} ({scenario.gpu.aps} APs x "
                f"{scenario.gpu.peus} PEUs, {len(scenario.channels)} channels), one core",
                ["policy", "simulated cycles", "cycles evaluated", "seconds", "cycles/s"], rows)
    return 0


def _written(path: Path, write) -> Path:
    """Run ``write()``; a file that cannot be written is a one-line error, not a traceback."""
    try:
        return write()
    except OSError as error:
        raise ConfigError(f"{path}: cannot write: {error.strerror}") from None


def run(args) -> int:
    if args.bench:
        return _bench(args)
    claims = []
    record = args.record
    # Load (and check) every file before anything runs.
    loaded = _load(args)
    chosen = select_policies(args, {str(path): [policy.name for policy in scenario.policies]
                                    for path, scenario in loaded})
    jobs = [(path, scenario) for path, scenario in loaded if chosen[str(path)]]
    runs = sum(len(chosen[str(path)]) for path, _ in jobs)
    with RunProgress("dispatch", runs=runs, quiet=args.quiet) as bar:
        for number, (path, scenario) in enumerate(jobs):
            scenario = _converted(args, scenario)
            if args.write_trace and number == 0:
                _written(args.write_trace,
                         lambda s=scenario: write_trace(args.write_trace, s.workload(args.seed)))
            for source in (scenario.trace, getattr(scenario.kernel_trace, "path", None)):
                if source is not None:
                    record.input_file(source)
            cycles = args.cycles or (min(scenario.cycles, QUICK_CYCLES) if args.quick
                                     else None)
            events = {} if args.events else None
            results = run_scenario(
                scenario, seed=args.seed, cycles=cycles, policies=chosen[str(path)],
                debug=args.debug, events=events, bar=bar,
                done=lambda policy, result, name=scenario.name, path=path: record.add(
                    name, policy, result, file=path))
            notes = workload_notes(scenario, results, cycles or scenario.cycles)
            with bar.paused():
                _table(scenario, results)
                for note in notes:
                    print(f"  note: {note}")
            for name, rows in (events or {}).items():
                target = events_path(args.events, scenario, name, runs == 1)
                _written(target,
                         lambda t=target, r=rows, q=scenario.gpu.peus: write_events(t, r, q))
            plot_scenario(scenario, results, Path(args.plots) / f"dispatch_{Path(path).stem}.png")
            claims += claim_rows(scenario, results)
            record.scenario(scenario.name, {"notes": notes, "policies": results}, file=path)
    if claims:
        # The scenario leads the claim's text, so the table fits 100 columns.
        print_table("The seed's claims, measured (policy vs baseline on the same workload)",
                    ["claim", "metric", "policy", "baseline", "ratio", "better"],
                    [[f"{scenario}: {claim}", *rest] for scenario, claim, *rest in claims])
    return 0
