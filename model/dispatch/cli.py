"""``gpusched dispatch`` (alias ``gpusched sim``): run the dispatcher scenarios, compare the
policies, plot, write JSON.

Every scenario file runs every policy it lists on the same workload (same seed), under the
scenario's execution model (``--execution`` overrides it), through the same functions as the
Python API (:mod:`model.dispatch.api`, ``model.dispatch.run``). Per scenario: a table comparing
the policies, notes on anything not used or not submitted, a PNG
(``<plots>/dispatch_<scenario>.png``, :mod:`model.dispatch.plots`); after all scenarios, the
scenarios' claims over ``--seeds`` workload seeds at each of their loads and execution models,
with 95 % intervals and a verdict (:mod:`model.dispatch.claims`; ``--generated-cycles``
shortens every run on a generated workload, tables and claims alike, so that the claims reuse
the tables' runs; ``--quick`` cuts them, tables and claims alike, to at most
:data:`QUICK_CYCLES` and judges the claims over :data:`QUICK_SEEDS` seeds; traces run whole;
``--no-claims`` skips the claims). ``--policy NAME`` alone runs that policy's table only: the
claims (and the capacity they measure) then run only with ``--claims``.
``--events FILE.csv`` writes the per-WG event log of each run (docs/dispatch.md).
A kernel trace's per-launch results (:mod:`model.dispatch.launches`) go to ``--launches CSV``
(default: beside ``--json``, else in ``--plots``), with a table of the kernels that differ
most between policies; its plot shows the launches over time instead of the AP imbalance.
``--bench`` instead times every policy on the default scenario under both execution models
(with ``--kernel-trace``: on the trace's replay) and prints simulated cycles and WGs per CPU
second, and the process's peak memory.
``--kernel-trace FILE --preset GPU`` replays a profiler's kernel trace instead
(:mod:`model.dispatch.kernels`).
"""

import argparse
import os
import resource
import sys
import time
from pathlib import Path

from model.cli import CONFIG_ROOT, output_problem, positive_int, select_policies
from model.config import ConfigError
from model.dispatch import claims as claims_over_seeds
from model.dispatch.api import (
    engine_notes,
    measure_claims,
    run_policy,
    run_scenario,
    summary_table,
    workload_notes,
)
from model.dispatch.config import EXECUTIONS, LOAD_AS_WRITTEN, load_scenario, write_trace
from model.dispatch.core.engine import unsupported
from model.dispatch.engine import ENGINES, chosen_engine, write_events
from model.dispatch.gpus import GPU_PRESETS
from model.dispatch.kernels import parse_replay_spec, prepare, print_summary, replay_scenario
from model.dispatch.launches import LaunchCollector, LaunchTally, launches_target
from model.dispatch.plots import plot_scenario
from model.dispatch.profilers import FORMATS
from model.pool import default_jobs
from model.report import RunProgress, print_table

__all__ = ["add_arguments", "claim_rows", "events_path", "run", "run_scenario",
           "workload_notes"]

QUICK_CYCLES = 3000

#: The claims' workload seeds when ``--seeds`` is not given; under ``--quick`` the fewest an
#: interval needs (every claim is still measured and judged, on fewer runs).
SEEDS, QUICK_SEEDS = 5, 2


def add_arguments(parser) -> None:
    """The dispatcher's own options (``--policy`` is common to every subcommand)."""
    parser.add_argument("--cycles", type=positive_int, metavar="N",
                        help="cycle limit of every run, traces and claims included, >= 1 "
                             "(default: the scenario's)")
    parser.add_argument("--write-trace", type=Path, metavar="CSV",
                        help="write the (first) scenario's workload as a CSV trace")
    parser.add_argument("--debug", action="store_true",
                        help="check every invariant every cycle (as the tests do)")
    parser.add_argument("--engine", choices=ENGINES,
                        help="the model's implementation: compiled (the C++ core, the default "
                             "where it was built; a run it does not take yet runs on the "
                             "Python one, with a note) or python (the golden model); both "
                             "give the same results")
    parser.add_argument("--bench", action="store_true",
                        help="print simulated cycles and WGs per CPU second per policy (on "
                             "the default scenario, or the --kernel-trace replay)")
    parser.add_argument("--execution", choices=EXECUTIONS,
                        help="run the scenarios under this execution model (default: each "
                             "scenario's; claims keep their own)")
    parser.add_argument("--seeds", type=int, metavar="N",
                        help=f"workload seeds of the claims, from --seed (default {SEEDS}, "
                             f"{QUICK_SEEDS} with --quick; at least 2)")
    parser.add_argument("--jobs", type=positive_int, metavar="N",
                        help="processes the claims' runs and a kernel trace's policies are "
                             "spread over (default: every core; 1: one after the other in "
                             "this process); the results are the same")
    parser.add_argument("--generated-cycles", type=int, metavar="N",
                        help="cycle limit of every run on a generated workload, the scenario "
                             "tables and the claims (default: each scenario's; --quick: "
                             f"at most {QUICK_CYCLES}); trace scenarios run whole")
    claims = parser.add_mutually_exclusive_group()
    # --claims is left out of the JSON's options unless given (default SUPPRESS), so that the
    # options of every earlier command line are recorded as before.
    claims.add_argument("--claims", action="store_true", default=argparse.SUPPRESS,
                        help="measure the claims over seeds (the capacity and --seeds workload "
                             "seeds) also with --policy (without --policy they run unless "
                             "--no-claims)")
    claims.add_argument("--no-claims", action="store_true",
                        help="do not measure the claims over seeds")
    parser.add_argument("--launches", type=Path, metavar="CSV",
                        help="a kernel trace's per-launch results (start, finish, simulated "
                             "duration, slowdown against the measured duration), every policy, "
                             "as CSV (default: beside --json as <stem>.launches.csv, else "
                             "<plots>/launches_<trace>.csv)")
    parser.add_argument("--events", type=Path, metavar="CSV",
                        help="write every run's per-WG event log (arrive, reject, dispatch, "
                             "stale-abort, split, release) as CSV; with several runs, one "
                             "file per run named CSV-stem.<scenario>.<policy>.csv")
    # -- kernel traces (issue 15) --
    traces = parser.add_argument_group("kernel traces (instead of the scenario files)")
    traces.add_argument("--kernel-trace", action="append", metavar="FILE[:OPTIONS]",
                        help="a profiler's per-launch kernel trace (formats: "
                             f"{', '.join(FORMATS)}), replayed whole unless --cycles; "
                             "repeat it to run several traces as concurrent channels, each "
                             "as FILE:offset=N,priority=P,channel=C (any of them: arrival "
                             "offset in cycles, the channels' priority, one shared channel "
                             "number instead of one channel per stream)")
    traces.add_argument("--compress-gaps", type=positive_int, metavar="CYCLES",
                        help="shorten every idle host gap (no launch running) longer than "
                             "CYCLES to CYCLES, and say what it removed")
    traces.add_argument("--preset", choices=tuple(GPU_PRESETS),
                        help="the GPU it runs on (required with --kernel-trace)")
    traces.add_argument("--format", choices=tuple(FORMATS),
                        help="the trace's format (default: detected from its header)")
    traces.add_argument("--kernels", type=_window, metavar="FIRST:LAST",
                        help="launches FIRST..LAST-1 only (0-based, file order; FIRST: to "
                             "the end, :LAST from the first)")
    traces.add_argument("--clock-mhz", type=positive_int, metavar="MHZ",
                        help="the clock that turns the trace's time into cycles (default: the "
                             "preset's)")


def _window(text: str) -> tuple[int, int | None]:
    first, colon, last = text.partition(":")
    if not colon:
        raise argparse.ArgumentTypeError(f"must be FIRST:LAST (either may be left out: "
                                         f"FIRST: or :LAST), not {text!r}")
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
        if getattr(args, "config_given", False):
            raise ConfigError("--config and --kernel-trace cannot be combined: --kernel-trace "
                              "builds its own scenario from the trace and --preset (to combine "
                              "a trace with a scenario's settings, name it in the file's "
                              "[kernel_trace] table)")
        if args.preset is None:
            raise ConfigError("--kernel-trace needs --preset (one of "
                              f"{', '.join(GPU_PRESETS)})")
        specs = [parse_replay_spec(text) for text in args.kernel_trace]
        scenario, args.replay = replay_scenario(
            specs, args.preset, format=args.format, kernels=args.kernels or (0, None),
            clock_mhz=args.clock_mhz,
            cycles=args.cycles or (QUICK_CYCLES if args.quick else None),
            compress=args.compress_gaps)
        for spec in specs[1:]:
            args.record.input_file(spec.path)
        loaded = [(specs[0].path, scenario)]
    elif getattr(args, "compress_gaps", None) is not None:
        raise ConfigError("--compress-gaps applies to --kernel-trace only")
    else:
        loaded = [(path, load_scenario(path)) for path in args.config]
    return loaded


def _generated_cycles(args) -> int | None:
    """The cycle limit of a run on a generated workload when ``--cycles`` is not given:
    ``--generated-cycles``, at most :data:`QUICK_CYCLES` under ``--quick`` (the tables'
    limit, so that the claims reuse the tables' runs there too); ``None``: the scenario's."""
    if args.quick:
        return min(args.generated_cycles or QUICK_CYCLES, QUICK_CYCLES)
    return args.generated_cycles


def _converted(args, scenario):
    """``scenario`` with its kernel trace (if any) turned into WGs; says what it did."""
    horizon = args.cycles or (min(scenario.cycles, QUICK_CYCLES) if args.quick
                              else scenario.cycles)
    scenario, converted = prepare(scenario, horizon)
    replayed = getattr(args, "replay", None)
    if replayed is not None:                # --kernel-trace: converted by _load
        converted = replayed
    if converted is not None:
        print_summary(converted, scenario.name)
    return scenario, (converted.launches if converted is not None else None)


def events_path(base: Path, scenario, policy: str, single: bool) -> Path:
    """Where ``--events`` writes one run: ``base`` itself for a single run, else
    ``<base stem>.<scenario file stem>.<policy>.csv`` beside it."""
    if single:
        return base
    stem = Path(scenario.path).stem if scenario.path else scenario.name
    slug = "".join(c if c.isalnum() or c in "-_" else "_" for c in policy)
    return base.with_name(f"{base.stem}.{stem}.{slug}{base.suffix or '.csv'}")


def claim_rows(scenario, results: dict) -> list[list]:
    """One row per claim that these runs can show (its policies ran, under its execution
    model, and it is judged at the load as written): scenario, claim, metric, policy value,
    baseline value, ratio, whether the policy is better. One seed; the claims over seeds
    are :mod:`model.dispatch.claims`."""
    rows = []
    for claim in scenario.claims:
        if claim.policy not in results or claim.baseline not in results:
            continue
        execution = results[claim.policy].get("execution", scenario.execution)
        if (claim.execution or scenario.execution) != execution or \
                LOAD_AS_WRITTEN not in claim.loads:
            continue
        mine, theirs = claim.value(results[claim.policy]), claim.value(results[claim.baseline])
        ratio = mine / theirs if theirs else float("inf") if mine else 1.0
        better = mine > theirs if claim.higher_is_better else mine < theirs
        rows.append([scenario.name, claim.text, claim.metric, mine, theirs, ratio,
                     "yes" if better else "no"])
    return rows


def _table(scenario, results: dict) -> None:
    print_table(*summary_table(scenario, results))
    for name, r in results.items():
        for rejection in r["rejections"][:3]:
            print(f"  [{name}] rejected: {rejection['reason']}")


#: Runs of each policy on the compiled engine in ``--bench``, in rounds, the fastest counted
#: (a run of milliseconds is at the mercy of the machine's other work; the Python engine's
#: runs of a second or so run once).
BENCH_REPEATS = 5


def _bench(args) -> int:
    """Time every chosen policy in CPU seconds on both engines: on the default scenario (or
    the one ``--config``) under both execution models (or ``--execution``), or with
    ``--kernel-trace FILE --preset GPU`` on the trace's replay (whole unless ``--cycles``)
    under the trace's execution model. The workload is made once per scenario, before the
    clock starts (its time is printed apart); each run is checked to give the same result on
    both engines; the compiled engine's time is the fastest of :data:`BENCH_REPEATS` runs.
    Then the peak memory of the process."""
    if args.kernel_trace is not None:
        ((_, scenario),) = _load(args)
        executions = [args.execution or scenario.execution]
    else:
        default = CONFIG_ROOT / "dispatch" / "default.toml"
        scenario = load_scenario(args.config[0] if args.config and len(args.config) == 1
                                 else default)
        executions = [args.execution] if args.execution else EXECUTIONS
    chosen = select_policies(args, {scenario.name: [p.name for p in scenario.policies]})
    scenario, _ = prepare(scenario, args.cycles)
    limit = args.cycles or scenario.cycles
    warmup = scenario.warmup * limit // scenario.cycles
    started = time.process_time()
    workload = scenario.workload(args.seed, copy=False)
    made = time.process_time() - started
    asked = os.environ.get("GPUSCHED_ENGINE")
    rows, python_only = [], {}
    chosen_runs = [(execution, policy) for execution in executions
                   for policy in scenario.policies if policy.name in chosen[scenario.name]]

    def timed(engine: str, execution: str, policy) -> tuple[float, dict]:
        os.environ["GPUSCHED_ENGINE"] = engine
        started = time.process_time()
        result, _ = run_policy(scenario, policy.name, args.seed, limit, warmup, execution,
                               False, False, True, None, workload=workload)
        return max(time.process_time() - started, 1e-9), result
    try:
        python = {index: timed("python", *run) for index, run in enumerate(chosen_runs)}
        # In rounds over every run, so that a slow spell of the machine does not take all of
        # one run's repeats; the fastest counts.
        compiled: dict[int, tuple[float, dict]] = {}
        for _ in range(BENCH_REPEATS):
            for index, run in enumerate(chosen_runs):
                seconds, result = timed("compiled", *run)
                if index not in compiled or seconds < compiled[index][0]:
                    compiled[index] = (seconds, result)
        for index, (execution, policy) in enumerate(chosen_runs):
            seconds, result = python[index]
            row = [execution, policy.name, result["cycles"], result["workgroups_completed"],
                   round(result["cycles"] / seconds)]
            why = unsupported(policy, execution=execution)
            if why is not None:
                python_only.setdefault(why, []).append(f"{policy.name} ({execution})")
                row += ["-", "-", "-"]
            else:
                fastest, same = compiled[index]
                if _differs(result, same):
                    raise ConfigError(f"{policy.name}: the engines' results differ "
                                      f"(tests/test_core_engine.py should have caught it)")
                row += [round(result["cycles"] / fastest),
                        round(result["workgroups_completed"] / fastest),
                        f"{seconds / fastest:.0f}x"]
            rows.append(row)
    finally:
        if asked is None:
            os.environ.pop("GPUSCHED_ENGINE", None)
        else:
            os.environ["GPUSCHED_ENGINE"] = asked
    print_table(f"dispatcher speed, {scenario.name} ({scenario.gpu.aps} APs x "
                f"{scenario.gpu.peus} PEUs, {scenario.channel_count} channels), one core, "
                f"per CPU second of the run (compiled: the fastest of {BENCH_REPEATS})",
                ["execution", "policy", "simulated cycles", "WGs done", "Python cycles/s",
                 "compiled cycles/s", "compiled WGs/s", "compiled / Python"], rows)
    print(f"  the workload ({len(workload):,} WGs) was made once, in {made:.3f} s of CPU, "
          f"before the runs")
    for why, names in python_only.items():
        print(f"  note: Python engine only for {', '.join(names)}: {why}")
    print(f"  peak memory of the process: {peak_memory_mb():,.0f} MB")
    return 0


def _differs(python: dict, compiled: dict) -> bool:
    """Whether two runs' results differ in anything but their timing and engine."""
    ignored = ("seconds",)
    return {k: v for k, v in python.items() if k not in ignored} != \
        {k: v for k, v in compiled.items() if k not in ignored}


def peak_memory_mb() -> float:
    """The process's peak resident memory in MB (``getrusage``; Linux counts kilobytes,
    macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def _written(path: Path, write) -> Path:
    """Run ``write()``; a file that cannot be written is a one-line error, not a traceback."""
    try:
        return write()
    except OSError as error:
        raise ConfigError(f"{path}: cannot write: {error.strerror}") from None


def run(args) -> int:
    if args.engine is not None:
        # Read by every run, here and in the pool's workers (model.dispatch.engine).
        os.environ["GPUSCHED_ENGINE"] = args.engine
    chosen_engine(None)
    if args.bench:
        return _bench(args)
    problem = args.launches is not None and output_problem(args.launches, "a file")
    if problem:
        raise ConfigError(f"--launches {args.launches}: {problem} (checked before the run; "
                          f"--launches names a file)")
    record = args.record
    # The claims over seeds run by default, but not for --policy alone (one policy's table
    # in about a second): --claims asks for them, --no-claims never.
    measure = not args.no_claims and (getattr(args, "claims", False) or not args.policy)
    if args.seeds is None:
        args.seeds = QUICK_SEEDS if args.quick else SEEDS
        record.options["seeds"] = args.seeds        # the JSON records the seeds used
    if measure:                  # checked before anything runs
        if args.seeds < 2:
            raise ConfigError(f"--seeds must be at least 2 (an interval needs two runs), not "
                              f"{args.seeds}")
        settings = claims_over_seeds.Settings(
            seeds=args.seeds, first_seed=args.seed,
            cycles=args.cycles or _generated_cycles(args))
    if args.generated_cycles is not None and args.generated_cycles < 1:
        raise ConfigError(f"--generated-cycles must be at least 1, not {args.generated_cycles}")
    # Load (and check) every file before anything runs.
    loaded = _load(args)
    chosen = select_policies(args, {str(path): [policy.name for policy in scenario.policies]
                                    for path, scenario in loaded})
    jobs = [(path, scenario) for path, scenario in loaded if chosen[str(path)]]
    runs = sum(len(chosen[str(path)]) for path, _ in jobs)
    _check_derived_outputs(args, jobs, chosen, runs)
    converted, known = [], {}
    with RunProgress("dispatch", runs=runs, quiet=args.quiet) as bar:
        for number, (path, scenario) in enumerate(jobs):
            scenario, spans = _converted(args, scenario)
            if args.write_trace and number == 0:
                _written(args.write_trace,
                         lambda s=scenario: write_trace(args.write_trace, s.workload(args.seed)))
            for source in (scenario.trace, getattr(scenario.kernel_trace, "path", None)):
                if source is not None:
                    record.input_file(source)
            cycles = args.cycles
            if cycles is None and _generated_cycles(args) and scenario.workgroups is None and \
                    scenario.trace is None:
                cycles = min(_generated_cycles(args), scenario.cycles)
            if cycles is None and args.quick:
                cycles = min(scenario.cycles, QUICK_CYCLES)
            # Per-launch results of a trace (model.dispatch.launches), from each run's events
            # (tallied as they happen unless the event log is written).
            events = {} if args.events or spans else None
            collect = LaunchCollector(spans, events, bool(args.events)) if spans else None
            # A kernel trace's policies run on --jobs processes (a whole trace takes minutes
            # per policy), unless every event row is written (they would travel back).
            results = run_scenario(
                scenario, seed=args.seed, cycles=cycles, policies=chosen[str(path)],
                debug=args.debug, events=events, execution=args.execution, bar=bar,
                event_sink=collect.sink if collect is not None else None,
                jobs=(getattr(args, "jobs", None) or default_jobs())
                if spans and not args.events else 1,
                done=lambda policy, result, name=scenario.name, path=path, c=collect: (
                    record.add(name, policy, result, file=path), c and c(policy)))
            if collect is not None:         # in policy order, however the runs ended
                collect.by_policy = {name: collect.by_policy[name] for name in results
                                     if name in collect.by_policy}
            notes = workload_notes(scenario, results, cycles or scenario.cycles) \
                + engine_notes(scenario, list(results), execution=args.execution,
                               debug=args.debug,
                               events=None if events is None
                               else [] if collect is None or args.events else LaunchTally([]))
            with bar.paused():
                _table(scenario, results)
                for note in notes:
                    print(f"  note: {note}")
            for name, rows in (events or {}).items():
                target = events_path(args.events, scenario, name, runs == 1)
                _written(target,
                         lambda t=target, r=rows, q=scenario.gpu.peus: write_events(t, r, q))
            if collect is not None:
                target = launches_target(args.launches, args.json, args.plots, scenario,
                                         len(jobs) == 1)
                _written(target, lambda t=target, c=collect, s=scenario: c.report(t, s.name))
            plot_scenario(scenario, results, Path(args.plots) / f"dispatch_{Path(path).stem}.png",
                          launches=collect.by_policy if collect is not None else None)
            converted.append(scenario)
            if measure and (cycles or scenario.cycles) == \
                    claims_over_seeds.claim_cycles(scenario, settings):
                # The claims over seeds reuse these runs (seed, load as written, same length).
                for name, result in results.items():
                    known[claims_over_seeds.run_key(scenario, result["execution"], args.seed,
                                                    name)] = result
            record.scenario(scenario.name, {"notes": notes, "policies": results}, file=path)
    if measure and any(scenario.claims for scenario in converted):
        record.note(claims=_claims(converted, settings, args, known))
    elif not args.no_claims and any(scenario.claims for scenario in converted):
        print("  note: the scenarios' claims were not measured (--policy alone); --claims "
              "measures them")
    return 0


def _check_derived_outputs(args, jobs, chosen, runs: int) -> None:
    """The files named after the options (each run's event log, a trace's launches CSV
    beside --json or in --plots, each scenario's plot) checked before anything runs: the
    options themselves are checked by model.cli, not an existing read-only file or a folder
    of that name."""
    for path, scenario in jobs:
        targets = [Path(args.plots) / f"dispatch_{Path(path).stem}.png"]
        if args.events:
            targets += [events_path(args.events, scenario, name, runs == 1)
                        for name in chosen[str(path)]]
        if getattr(args, "replay", None) is not None or scenario.kernel_trace is not None:
            targets.append(launches_target(args.launches, args.json, args.plots, scenario,
                                           len(jobs) == 1))
        for target in targets:
            problem = output_problem(target, "a file")
            if problem:
                raise ConfigError(f"{target}: {problem} (checked before the run)")


def _claims(scenarios, settings, args, known: dict) -> dict:
    """Measure every claim over seeds and print the capacities and the claims table."""
    measured = measure_claims(scenarios, settings, quiet=args.quiet, known=known,
                              jobs=getattr(args, "jobs", None) or default_jobs())
    last = settings.first_seed + settings.seeds - 1
    length = (f"{settings.cycles:,} cycles per generated run, traces whole" if settings.cycles
              else "each scenario's cycle limit")
    if measured["capacities"]:
        print_table("Capacity of each claim's baseline: the rate (WG/1000 cycles) at which "
                    f"it clears a backlog of the scenario's mix, seeds {settings.first_seed}.."
                    f"{last}",
                    ["scenario", "execution", "baseline", "capacity [95 % CI]",
                     "batch WGs", "offered as written", "unfinished"],
                    claims_over_seeds.capacity_rows(measured["capacities"]))
    print_table(f"The seed's claims over seeds {settings.first_seed}..{last} ({length}; "
                f"95 % intervals; verdict from the per-seed ratio)",
                claims_over_seeds.CLAIM_HEADERS,
                claims_over_seeds.claim_table_rows(measured["rows"]))
    if settings.cycles:
        print(f"  {measured['runs']} more runs, generated workloads cut at {settings.cycles:,} "
              f"cycles;\n  the full figures: `gpusched dispatch --seeds {settings.seeds}` (each "
              f"scenario's cycle limit)")
    return measured
