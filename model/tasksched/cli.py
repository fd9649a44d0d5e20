"""``gpusched tasksched``: every scenario with every policy on the same workload; one table and
one plot (``<plots>/tasksched_<scenario>.png``) per scenario, and the results as JSON on
request."""

from pathlib import Path

import numpy as np

from model.cli import select_policies
from model.config import ConfigError
from model.report import RunProgress, figure, print_table, save_figure
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
    """``gpusched tasksched`` has only the common options."""


_HEADERS = ("policy", "util %", "tasks /kbeat", "lat mean", "lat p99", "share err",
            "task err", "lag", "fails")


def _row(result: dict) -> list:
    return [POLICY_SHORT[result["policy"]], round(100 * result["utilisation"], 1),
            round(result["throughput_per_1000_beats"], 2), round(result["latency"]["mean"]),
            round(result["latency"]["p99"]), round(result["share_error_max_pp"], 2),
            round(result["task_share_error_max_pp"], 2), round(result["lag_max"], 1),
            result["schedule_failures"]]


def _caption(by_policy: dict) -> str:
    first = next(iter(by_policy.values()))
    parts = ["DF: the seed's delay-factor arbiter; FIFO: FIFO per class, round-robin across "
             "classes; SWRR: smooth weighted round-robin",
             f"{first['admitted']} tasks admitted; lat: arrival to completion, beats; share "
             f"err: largest |achieved - configured| share of a stream within its class, pp; "
             f"task err: the same per task (>= {MIN_SHARE_ROUNDS} rounds); lag: jobs"]
    for policy in by_policy:
        unfinished = by_policy[policy]["unfinished"]
        if unfinished:
            parts.append(f"{POLICY_SHORT[policy]}: {len(unfinished)} tasks unfinished at beat "
                         f"{by_policy[policy]['beats']}")
    rejected = first["rejected"]
    if rejected:
        reasons = dict.fromkeys(f"{entry['task'].split('#')[0]}: {entry['reason']}"
                                for entry in rejected)
        parts.append(f"{len(rejected)} rejected at admission ({'; '.join(reasons)})")
    return ". ".join(parts)


def _plot(scenario: Scenario, results: dict, path: Path) -> None:
    fig, (shares, latency) = figure(1, 2, figsize=(12, 4.5))
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
        shares.bar(offset, error, width, label=POLICY_LABELS[policy])
        latency.bar(offset, mean, width, label=POLICY_LABELS[policy])
        latency.scatter(offset, p99, marker="_", color="black", s=60)
    for axis in (shares, latency):
        axis.set_xticks(positions, [f"{n}\n(w {s.weight}, {s.task_class})"
                                    for n, s in zip(names, scenario.streams, strict=True)],
                        fontsize=8)
        axis.grid(axis="y", alpha=0.3)
    shares.axhline(0, color="black", linewidth=0.8)
    shares.set_ylabel("achieved - configured share (pp)")
    shares.set_title("share of grants within the class")
    latency.set_ylabel("task latency (beats): bar mean, tick p99")
    latency.set_title("latency per stream")
    shares.legend(fontsize=8)
    fig.suptitle(f"tasksched: {scenario.name}")
    save_figure(fig, path)


def _expected_beats(scenario: Scenario, tasks) -> int:
    """A run's length in beats, roughly (for the progress bar): the later of the last arrival
    and every job's beats spread over the processors."""
    processors = sum(group.count for group in scenario.processors)
    work = sum(sum(task.durations) for task in tasks) // max(1, processors)
    return min(scenario.scheduler.max_beats,
               max(max((task.arrival for task in tasks), default=1), work))


def run(args) -> int:
    """Run every scenario of ``args.config`` with every policy; tables, plots, JSON."""
    scenarios = [load_scenario(path) for path in args.config]
    if not scenarios:
        raise ConfigError("no scenario files given (configs/tasksched/*.toml is empty)")
    files = dict(zip((scenario.name for scenario in scenarios), args.config, strict=True))
    chosen = select_policies(args, {scenario.name: POLICIES for scenario in scenarios})
    scenarios = [scenario for scenario in scenarios if chosen[scenario.name]]
    workloads = {scenario.name: build_workload(scenario, args.seed, quick=args.quick)
                 for scenario in scenarios}
    runs = [(scenario, policy) for scenario in scenarios for policy in chosen[scenario.name]]
    results: dict[str, dict] = {scenario.name: {} for scenario in scenarios}
    record = args.record
    with RunProgress("tasksched", runs=len(runs), quiet=args.quiet) as bar:
        for scenario, policy in runs:
            tasks = workloads[scenario.name]
            with bar.run(f"{scenario.name} {policy}", expected=_expected_beats(scenario, tasks),
                         unit="beats") as tick:
                result = simulate(scenario, policy, tasks=tasks, progress=tick)
            results[scenario.name][policy] = result
            record.add(scenario.name, policy, result, file=files[scenario.name])
    record.note(quick=bool(args.quick))
    for scenario in scenarios:
        by_policy = results[scenario.name]
        print_table(f"tasksched {scenario.name}: {scenario.description}", _HEADERS,
                    [_row(by_policy[policy]) for policy in by_policy],
                    caption=_caption(by_policy))
        _plot(scenario, by_policy, Path(args.plots) / f"tasksched_{scenario.name}.png")
        record.scenario(scenario.name, {"policies": by_policy}, file=files[scenario.name])
    return 0
