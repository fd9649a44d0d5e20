"""``gpusched procsched``: every scenario with every policy, one table and one plot per scenario.

Each scenario's workload is drawn once (``--seed``) and given to every policy it lists.
"""

import argparse
import random
from pathlib import Path

import numpy as np

from model.cli import select_policies
from model.config import ConfigError
from model.procsched.config import Scenario
from model.procsched.policies import make_policy
from model.procsched.sim import measure, simulate
from model.procsched.workload import generate_tasks
from model.report import RunProgress, figure, print_table, save_figure

__all__ = ["add_arguments", "run"]

#: ``--quick`` multiplies every work, arrival and spacing by this.
QUICK_SCALE = 0.25


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``gpusched procsched`` has no options beyond the common ones."""


# Short stacked headers keep the table inside 80 columns (docs/procsched.md spells them out).
_HEADERS = ("policy", "switch\n/s", "effic.\n%", "Jain\nlife", "Jain\nwindow",
            "top\nresp\np99 ms", "top\nmax\nwait s", "inver-\nsion\nms")


def _row(metrics: dict) -> list:
    """One table row: switches per second, efficiency, the worst priority's two Jain indexes
    (the window one: its mean over windows), the highest priority's p99 response and longest
    wait, and the inversion time."""
    top = metrics["per_priority"][metrics["top_priority"]]
    return [metrics["policy"], round(metrics["switches_per_s"], 1),
            round(100 * metrics["efficiency"], 2), round(metrics["jain_life_min"], 3),
            round(metrics["jain_window_min"], 3), round(top["response_us"]["p99"] / 1e3, 1),
            round(top["max_wait_us"] / 1e6, 2), round(metrics["inversion_us"] / 1e3)]


def _plot(scenario: Scenario, runs: dict, path: Path) -> Path:
    """Four panels: switches per second, efficiency, received / entitled per task (one colour
    per priority), and the window Jain index over time of the most populous priority."""
    fig, axes = figure(2, 2, figsize=(12, 8))
    (ax_switch, ax_eff), (ax_fair, ax_time) = axes
    names = list(runs)
    positions = np.arange(len(names))
    ax_switch.bar(positions, [runs[name]["switches_per_s"] for name in names], color="tab:blue")
    ax_switch.set_ylabel("context switches per second")
    efficiency = [100 * runs[name]["efficiency"] for name in names]
    ax_eff.bar(positions, efficiency, color="tab:green")
    ax_eff.set_ylabel("efficiency: useful / busy GPU time (%)")
    ax_eff.set_ylim(max(0.0, min(efficiency) - 2 * (100 - min(efficiency)) - 1), 100)
    levels = sorted({level for name in names for level in runs[name]["per_priority"]})
    colours = {level: f"C{index % 10}" for index, level in enumerate(levels)}
    for position, name in enumerate(names):
        for level, entry in runs[name]["per_priority"].items():
            ratios = entry["received_over_entitled"]
            jitter = np.linspace(-0.3, 0.3, len(ratios)) if len(ratios) > 1 else np.zeros(1)
            ax_fair.scatter(position + jitter, ratios, s=10, color=colours[level],
                            label=f"priority {level}" if position == 0 else None)
    ax_fair.axhline(1.0, color="grey", linewidth=0.8)
    ax_fair.set_ylabel("received / entitled time per task (life)")
    ax_fair.legend(fontsize=7)
    for axis in (ax_switch, ax_eff, ax_fair):
        axis.set_xticks(positions, names, rotation=20, ha="right", fontsize=8)
    first = runs[names[0]]
    level = max(first["per_priority"], key=lambda key: first["per_priority"][key]["tasks"])
    window_s = first["fairness_window_us"] / 1e6
    for name in names:
        values = runs[name]["per_priority"][level]["jain_window"]["values"]
        ax_time.plot([index * window_s for index, _ in values], [value for _, value in values],
                     marker=".", label=name)
    ax_time.set_xlabel("window start (s)")
    ax_time.set_ylabel(f"Jain index per {window_s:g} s window, priority {level}")
    ax_time.set_ylim(0, 1.02)
    ax_time.legend(fontsize=7)
    fig.suptitle(f"procsched: {scenario.name} - {scenario.description}")
    return save_figure(fig, path)


def _expected_us(specs) -> int:
    """A run's simulated length, roughly (for the progress bar): the later of the last
    arrival and all the work done back to back."""
    return max(max((spec.arrival_us + spec.work_us for spec in specs), default=1),
               sum(spec.work_us for spec in specs))


def run(args) -> int:
    """Run every scenario of ``args.config`` with each of its policies; tables, plots, JSON."""
    scenarios = [Scenario.from_toml(path) for path in args.config]
    if not scenarios:
        raise ConfigError("no scenario files (configs/procsched/*.toml)")
    chosen = select_policies(args, {str(path): scenario.policies
                                    for path, scenario in zip(args.config, scenarios,
                                                              strict=True)})
    files = {scenario.name: path for path, scenario in zip(args.config, scenarios, strict=True)}
    scenarios = [scenario for path, scenario in zip(args.config, scenarios, strict=True)
                 if chosen[str(path)]]
    scale = QUICK_SCALE if args.quick else 1.0
    workloads = {scenario.name: generate_tasks(scenario, random.Random(args.seed), scale=scale)
                 for scenario in scenarios}
    jobs = [(scenario, policy) for scenario in scenarios
            for policy in chosen[str(files[scenario.name])]]
    results: dict[str, dict] = {scenario.name: {} for scenario in scenarios}
    record = args.record
    with RunProgress("procsched", runs=len(jobs), quiet=args.quiet) as bar:
        for scenario, policy in jobs:
            specs = workloads[scenario.name]
            with bar.run(f"{scenario.name} {policy}", expected=_expected_us(specs),
                         unit="us") as tick:
                outcome = simulate(specs, make_policy(policy, scenario),
                                   scenario.gpu.switch_cost_us, name=policy, check=True,
                                   progress=tick)
            metrics = measure(outcome, max(1, round(scenario.fairness_window_us * scale)))
            results[scenario.name][policy] = metrics
            record.add(scenario.name, policy, _json_metrics(metrics),
                       file=files[scenario.name])
    record.note(quick=bool(args.quick))
    for scenario in scenarios:
        runs = results[scenario.name]
        specs = workloads[scenario.name]
        caption = (f"{len(specs)} tasks, {sum(s.work_us for s in specs) / 1e6:.3g} s of work; "
                   f"switch {scenario.gpu.switch_cost_us} us; L={scenario.cache_tasks}, "
                   f"t0={scenario.t0_us / 1e3:g} ms, time-sharing slice "
                   f"{scenario.timeshare_slice_us / 1e3:g} ms")
        print_table(f"procsched: {scenario.name} - {scenario.description}", _HEADERS,
                    [_row(metrics) for metrics in runs.values()], caption=caption)
        _plot(scenario, runs, Path(args.plots) / f"procsched_{scenario.name}.png")
        record.scenario(scenario.name, {
            "name": scenario.name, "description": scenario.description,
            "tasks": len(specs), "switch_cost_us": scenario.gpu.switch_cost_us,
            "cache_tasks": scenario.cache_tasks, "t0_us": scenario.t0_us,
            "timeshare_slice_us": scenario.timeshare_slice_us,
            "policies": {name: _json_metrics(metrics) for name, metrics in runs.items()}},
            file=files[scenario.name])
    return 0


def _json_metrics(metrics: dict) -> dict:
    """``metrics`` with the per-priority keys as strings, as JSON has them."""
    return {**metrics, "per_priority": {str(level): entry
                                        for level, entry in metrics["per_priority"].items()}}
