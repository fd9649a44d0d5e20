"""``gpusched hostsched``: every scenario with every policy, on the same workload per scenario;
a table and a plot (per-instance utilisation, per-thread completion) each, and JSON of every
metric when ``--json`` is given."""

import random
from pathlib import Path

from model.cli import select_policies
from model.config import ConfigError
from model.hostsched.config import QUICK_SCALE, Scenario, load_scenario
from model.hostsched.policies import make_policies
from model.hostsched.sim import simulate
from model.hostsched.workload import generate_workload
from model.report import RunProgress, figure, print_table, save_figure

__all__ = ["add_arguments", "run"]


def add_arguments(parser) -> None:
    """``--no-checks``: run without the invariant checker (it is on by default)."""
    parser.add_argument("--no-checks", action="store_true",
                        help="skip the invariant checks (faster; they are on by default)")


# Stacked headers keep the table inside 100 columns.
_HEADERS = ("policy", "util\n%", "useful\n%", "make-\nspan\nms", "sub-\ntasks\n/s",
            "thread\ndone\np50 ms", "thread\ndone\np99 ms", "top\nprio\np50 ms",
            "FIFO\nwait\np50 µs", "ready\nwait\np50 µs", "ready\nwait\np99 µs",
            "spills\nspare\n/host")


def _row(metrics: dict) -> list:
    thread_done = metrics["thread_completion_us"]
    # Priorities are sorted, so the first is the highest (0 is the highest).
    top = next(iter(metrics["thread_completion_by_priority_us"].values()))
    return [metrics["policy"], 100 * metrics["utilisation"],
            100 * metrics["useful_utilisation"], metrics["makespan_us"] / 1000,
            metrics["subtasks_per_second"], thread_done["p50"] / 1000, thread_done["p99"] / 1000,
            top["p50"] / 1000, metrics["fifo_wait_us"]["p50"], metrics["ready_wait_us"]["p50"],
            metrics["ready_wait_us"]["p99"],
            f"{metrics['spills_spare']}/{metrics['spills_host']}"]


def _gains(policies: dict) -> dict:
    """Utilisation of each seed variant over static binding, in percentage points and %."""
    if "static-rr" not in policies:
        return {}
    static = policies["static-rr"]["utilisation"]
    gains = {}
    for name, metrics in policies.items():
        if name.startswith("seed003"):
            util = metrics["utilisation"]
            gains[name] = {"points": 100 * (util - static),
                           "relative_percent": 100 * (util / static - 1) if static else 0.0}
    return gains


def _plot(scenario: Scenario, results: dict, path: Path) -> None:
    fig, (bars, curves) = figure(1, 2, figsize=(11, 4))
    names = list(results)
    width = 0.8 / len(names)
    for number, name in enumerate(names):
        values = results[name]["instance_utilisation"]
        bars.bar([instance + number * width for instance in range(len(values))],
                 [100 * value for value in values], width, label=name)
        done = sorted(results[name]["_thread_done"])
        curves.step([value / 1000 for value in done],
                    [(index + 1) / len(done) for index in range(len(done))],
                    where="post", label=name)
    instances = len(results[names[0]]["instance_utilisation"])
    bars.set_xticks([instance + 0.4 - width / 2 for instance in range(instances)],
                    [str(instance) for instance in range(instances)])
    bars.set_xlabel("instance")
    bars.set_ylabel("busy %")
    bars.set_title(f"{scenario.name}: instance utilisation")
    bars.set_ylim(0, 125)   # room for the legend above the bars
    bars.legend(fontsize=7, loc="upper center", ncol=2)
    curves.set_xlabel("thread completion time (ms)")
    curves.set_ylabel("fraction of threads done")
    curves.set_title("per-thread completion")
    curves.legend(fontsize=7)
    save_figure(fig, path)


def _expected_us(workload, system) -> int:
    """A run's length, roughly (for the progress bar): the later of the last arrival and
    every sub-task's time spread over the instances."""
    subtasks = workload.subtasks
    return max(max((sub.arrival + sub.duration for sub in subtasks), default=1),
               sum(sub.duration for sub in subtasks) // system.instances)


def run(args) -> int:
    """``gpusched hostsched``: every scenario with every policy; a table and a plot each, and
    JSON of every metric when ``--json`` is given."""
    scenarios = [load_scenario(path) for path in args.config]
    if not scenarios:
        raise ConfigError("no scenario files given and none in configs/hostsched/")
    files = [Path(path) for path in args.config]
    chosen = select_policies(args, {str(path): [policy.name for policy in
                                                make_policies(scenario)]
                                    for path, scenario in zip(files, scenarios, strict=True)})
    kept = [index for index, path in enumerate(files) if chosen[str(path)]]
    scenarios, files = [scenarios[index] for index in kept], [files[index] for index in kept]
    scale = QUICK_SCALE if args.quick else 1.0
    workloads = [generate_workload(scenario, random.Random(args.seed), scale=scale)
                 for scenario in scenarios]
    jobs = [(index, policy) for index, scenario in enumerate(scenarios)
            for policy in make_policies(scenario) if policy.name in chosen[str(files[index])]]
    results: list[dict] = [{} for _ in scenarios]
    record = args.record
    with RunProgress("hostsched", runs=len(jobs), quiet=args.quiet) as bar:
        for index, policy in jobs:
            scenario = scenarios[index]
            with bar.run(f"{scenario.name} {policy.name}", unit="us",
                         expected=_expected_us(workloads[index], scenario.system)) as tick:
                outcome = simulate(workloads[index], scenario.system, policy,
                                   debug=not getattr(args, "no_checks", False), progress=tick)
            metrics = outcome.metrics()
            record.add(scenario.name, policy.name, dict(metrics), file=files[index])
            metrics["_thread_done"] = outcome.thread_done
            results[index][policy.name] = metrics
    record.note(time_unit="us", quick=bool(args.quick))
    for scenario, workload, policies, path in zip(scenarios, workloads, results, files,
                                                  strict=True):
        gains = _gains(policies)
        caption = "; ".join(f"{name} vs static-rr: {gain['points']:+.1f} points "
                            f"({gain['relative_percent']:+.1f} %) utilisation"
                            for name, gain in gains.items())
        title = (f"hostsched {scenario.name}: {len(workload.threads)} threads, "
                 f"{workload.task_count} tasks, {len(workload.subtasks)} sub-tasks, "
                 f"{scenario.system.instances} instances, batch {scenario.batch}")
        print_table(title, _HEADERS, [_row(metrics) for metrics in policies.values()],
                    caption=caption or None)
        _plot(scenario, policies, Path(args.plots) / f"hostsched_{scenario.name}.png")
        for metrics in policies.values():
            del metrics["_thread_done"]
        record.scenario(scenario.name, {
            "description": scenario.description, "threads": len(workload.threads),
            "tasks": workload.task_count, "subtasks": len(workload.subtasks),
            "instances": scenario.system.instances, "batch": scenario.batch,
            "utilisation_gain_over_static": gains, "policies": policies}, file=path)
    return 0
