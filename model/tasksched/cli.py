"""``gpusched tasksched``: every scenario with every policy on the same workload; one table and
one plot (``<plots>/tasksched_<scenario>.png``) per scenario, the seed's claims over several
workload seeds (:mod:`~model.tasksched.claims`), and the results as JSON on request."""

import argparse
import csv
from pathlib import Path

import numpy as np

from model.cli import CLAIMS_SKIPPED, add_claims_options, select_policies, wants_claims
from model.config import ConfigError
from model.report import RunProgress, figure, print_table, save_figure
from model.tasksched.claims import (
    CLAIM_HEADERS,
    SENSITIVITY_HEADERS,
    claim_rows,
    evaluate_claims,
    sensitivity_rows,
)
from model.tasksched.config import (
    MIN_SHARE_ROUNDS,
    POLICIES,
    POLICY_LABELS,
    POLICY_SHORT,
    Scenario,
    load_scenario,
)
from model.tasksched.sim import simulate
from model.tasksched.workload import build_workload

__all__ = ["add_arguments", "run"]


def add_arguments(parser) -> None:
    """``--seeds N`` (claims over N workload seeds) and ``--events FILE.csv`` (every event of
    every scenario and policy at ``--seed``)."""
    parser.add_argument("--seeds", type=_at_least_two, default=5, metavar="N",
                        help="judge the claims over N workload seeds from --seed (default 5)")
    add_claims_options(parser)
    parser.add_argument("--events", type=Path, metavar="FILE.csv",
                        help="write every event (arrivals, registration, reservations, "
                             "failures, slot writes, sends, job ends) at --seed as CSV")


def _at_least_two(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"a claim over seeds needs at least 2, not {value}")
    return value


_HEADERS = ("policy", "util %", "resv\nidle %", "tasks\n/kbeat", "lat\nmean", "lat\np99",
            "share\nerr pp", "task\nerr pp", "lag", "fails")


def _row(result: dict) -> list:
    return [POLICY_SHORT[result["policy"]], round(100 * result["utilisation"], 1),
            round(100 * result["reserved_idle"], 1),
            round(result["throughput_per_1000_beats"], 2), round(result["latency"]["mean"]),
            round(result["latency"]["p99"]), round(result["share_error_max_pp"], 2),
            round(result["task_share_error_max_pp"], 2), round(result["lag_max"], 1),
            result["schedule_failures"]]


def _caption(by_policy: dict) -> str:
    first = next(iter(by_policy.values()))
    parts = ["DF: the seed's delay-factor arbiter; FIFO: FIFO per class, round-robin across "
             "classes; SWRR: smooth weighted round-robin",
             f"{first['admitted']} tasks admitted; resv idle: processor time held idle by "
             f"reservations; lat: arrival to completion, beats; share "
             f"err: largest |achieved - configured| share of a stream within its class, pp; "
             f"task err: the same per task (>= {MIN_SHARE_ROUNDS} rounds); lag: jobs"]
    for policy in by_policy:
        unfinished = by_policy[policy]["unfinished"]
        livelock = by_policy[policy].get("livelock")
        if livelock:
            parts.append(f"{POLICY_SHORT[policy]}: LIVELOCK, stopped at beat {livelock['beat']}: "
                         f"{livelock['failures']} schedule failures and no "
                         f"{livelock['processor']!r} job sent or running since beat "
                         f"{livelock['since']}; {len(unfinished)} tasks "
                         f"unfinished")
        elif unfinished:
            parts.append(f"{POLICY_SHORT[policy]}: {len(unfinished)} tasks unfinished at beat "
                         f"{by_policy[policy]['beats']} ({by_policy[policy]['stopped']})")
    rejected = first["rejected"]
    if rejected:
        reasons = dict.fromkeys(f"{entry['task'].split('#')[0]}: {entry['reason']}"
                                for entry in rejected)
        parts.append(f"{len(rejected)} rejected at admission ({'; '.join(reasons)})")
    return ". ".join(parts)


def _plot(scenario: Scenario, results: dict, path: Path) -> None:
    """Three panels per stream and policy: achieved minus configured share, latency (mean
    bar, p99 tick) and schedule failures (the processor type's count in the title)."""
    fig, (shares, latency, failures) = figure(1, 3, figsize=(17, 4.8))
    names = [stream.name for stream in scenario.streams]
    positions = np.arange(len(names))
    policies = list(results)
    width = 0.8 / len(policies)
    for index, policy in enumerate(policies):
        streams = results[policy]["streams"]
        error = [100 * (streams[n]["achieved_share"] - streams[n]["configured_share"])
                 for n in names]
        mean = [streams[n]["latency"]["mean"] for n in names]
        p99 = [streams[n]["latency"]["p99"] for n in names]
        offset = positions + (index - (len(policies) - 1) / 2) * width
        label = f"{POLICY_LABELS[policy]} ({results[policy]['schedule_failures']} failures)"
        shares.bar(offset, error, width, label=POLICY_LABELS[policy])
        latency.bar(offset, mean, width, label=POLICY_LABELS[policy])
        latency.scatter(offset, p99, marker="_", color="black", s=60)
        bars = failures.bar(offset, [streams[n]["failures"] for n in names], width,
                            label=label)
        failures.bar_label(bars, fontsize=7)
    rejected = {entry["task"].split("#")[0]
                for entry in next(iter(results.values()))["rejected"]}
    for axis in (shares, latency, failures):
        axis.set_xticks(positions, [f"{n}\nw {s.weight} {s.task_class}\n{s.processor}"
                                    + ("\nrejected" if n in rejected else "")
                                    for n, s in zip(names, scenario.streams, strict=True)],
                        fontsize=7)
        axis.grid(axis="y", alpha=0.3)
    shares.axhline(0, color="black", linewidth=0.8)
    shares.set_ylabel("achieved - configured share (pp)")
    shares.set_title("share of grants within the class")
    latency.set_ylabel("task latency (beats): bar mean, tick p99")
    latency.set_title("latency per stream")
    failures.set_ylabel("schedule failures (timeouts)")
    counts = {}
    for group in scenario.processors:
        counts[group.type] = counts.get(group.type, 0) + group.count
    failures.set_title("schedule failures per stream; processors: "
                       + ", ".join(f"{count} {kind}" for kind, count in counts.items()),
                       fontsize=9)
    most = max(max(results[policy]["streams"][n]["failures"] for n in names)
               for policy in results)
    failures.set_ylim(0, 1.4 * most + 1)            # room for the legend above the bars
    failures.legend(fontsize=7, loc="upper left")
    shares.legend(fontsize=7)
    config = scenario.scheduler
    fig.suptitle(f"tasksched: {scenario.name} (matching = {config.matching}, gate = "
                 f"{config.gate}, reserve order {config.reserve_order}, timeout "
                 f"{config.timeout}, {scenario.arbiter.tasks} slots)")
    save_figure(fig, path)


_EVENT_FIELDS = ("scenario", "policy", "beat", "event", "task", "stream", "processor",
                 "detail")
def _expected_beats(scenario: Scenario, tasks) -> int:
    """A run's length in beats, roughly (for the progress bar): the later of the last arrival
    and every job's beats spread over the processors."""
    processors = sum(group.count for group in scenario.processors)
    work = sum(sum(task.durations) for task in tasks) // max(1, processors)
    return min(scenario.scheduler.max_beats,
               max(max((task.arrival for task in tasks), default=1), work))


def run(args) -> int:
    """Run every scenario of ``args.config`` with every policy; tables, plots, JSON; then the
    claims over ``args.seeds`` seeds."""
    scenarios = [load_scenario(path) for path in args.config]
    if not scenarios:
        raise ConfigError("no scenario files given (configs/tasksched/*.toml is empty)")
    files = dict(zip((scenario.name for scenario in scenarios), args.config, strict=True))
    chosen = select_policies(args, {scenario.name: POLICIES for scenario in scenarios})
    scenarios = [scenario for scenario in scenarios if chosen[scenario.name]]
    workloads = {scenario.name: build_workload(scenario, args.seed, quick=args.quick)
                 for scenario in scenarios}
    runs = [(scenario, policy) for scenario in scenarios for policy in chosen[scenario.name]]
    events_path = getattr(args, "events", None)
    event_rows: list = []
    results: dict[str, dict] = {scenario.name: {} for scenario in scenarios}
    record = args.record
    with RunProgress("tasksched", runs=len(runs), quiet=args.quiet) as bar:
        for scenario, policy in runs:
            tasks = workloads[scenario.name]
            events = [] if events_path is not None else None
            with bar.run(f"{scenario.name} {policy}", expected=_expected_beats(scenario, tasks),
                         unit="beats") as tick:
                result = simulate(scenario, policy, tasks=tasks, events=events, progress=tick)
            results[scenario.name][policy] = result
            record.add(scenario.name, policy, result, file=files[scenario.name])
            if events is not None:
                event_rows += [(scenario.name, policy, *event) for event in events]
    record.note(quick=bool(args.quick))
    for scenario in scenarios:
        by_policy = results[scenario.name]
        print_table(f"tasksched {scenario.name}: {scenario.description}", _HEADERS,
                    [_row(by_policy[policy]) for policy in by_policy],
                    caption=_caption(by_policy))
        _plot(scenario, by_policy, Path(args.plots) / f"tasksched_{scenario.name}.png")
        record.scenario(scenario.name, {"policies": by_policy}, file=files[scenario.name])
    seeds = getattr(args, "seeds", 5)
    judge = wants_claims(args)
    claims = (evaluate_claims(scenarios, first_seed=args.seed, seeds=seeds,
                              quick=args.quick)
              if judge else [])
    if not judge:
        print(CLAIMS_SKIPPED)
    if claims:
        print_table(f"tasksched: the seed's claims over seeds {args.seed}..{args.seed + seeds - 1}"
                    f" (95 % intervals; verdict from the per-seed ratio)", CLAIM_HEADERS,
                    claim_rows(claims))
        print_table("tasksched: each claim with the parameter it leans on changed",
                    SENSITIVITY_HEADERS, sensitivity_rows(claims))
    record.note(claims=claims)
    if events_path is not None:
        events_path.parent.mkdir(parents=True, exist_ok=True)
        with events_path.open("w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(_EVENT_FIELDS)
            writer.writerows(event_rows)
    return 0
