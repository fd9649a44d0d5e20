"""``gpusched procsched``: every scenario with every policy, one table and one plot per scenario,
then the seed's claims over several workload seeds.

Each scenario's workload is drawn once (``--seed``) and given to every policy it lists; the
claims (:mod:`~model.procsched.claims`) run seeds ``--seed .. --seed + --seeds - 1``.
"""

import argparse
import csv
import dataclasses
import random
from pathlib import Path

import numpy as np

from model.cli import CLAIMS_SKIPPED, add_claims_options, select_policies, wants_claims
from model.config import ConfigError
from model.procsched.claims import (
    CLAIM_HEADERS,
    SENSITIVITY_HEADERS,
    claim_rows,
    evaluate_claims,
    sensitivity_rows,
)
from model.procsched.config import PRIORITY_RULES, RELOAD_RULES, Scenario
from model.procsched.policies import make_policy, switch_cost_for
from model.procsched.sim import measure, simulate
from model.procsched.workload import generate_tasks
from model.report import RunProgress, figure, print_table, save_figure

__all__ = ["add_arguments", "run"]

#: ``--quick`` multiplies every work, arrival and spacing by this.
QUICK_SCALE = 0.25


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--seeds N`` (claims over N workload seeds), ``--events FILE.csv`` (every event of
    every run at ``--seed``), ``--reload RULE`` and ``--priority-rule RULE`` (override every
    scenario's seed knobs)."""
    parser.add_argument("--seeds", type=_at_least_two, default=5, metavar="N",
                        help="judge the claims over N workload seeds from --seed (default 5)")
    add_claims_options(parser)
    parser.add_argument("--events", type=Path, metavar="FILE.csv",
                        help="write every event (arrivals, cache loads, switches, slices, "
                             "completions) of every scenario and policy at --seed as CSV")
    parser.add_argument("--reload", choices=RELOAD_RULES,
                        help="the seed's reload rule in every scenario (default: the file's)")
    parser.add_argument("--priority-rule", choices=PRIORITY_RULES,
                        help="when a higher priority takes over, in every scenario")


def _at_least_two(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"a claim over seeds needs at least 2, not {value}")
    return value


# Short stacked headers keep the table narrow (docs/procsched.md spells them out).
_HEADERS = ("policy", "switch\n/s", "effic.\n%", "slice ms\np50/p99", "slice\nmax\n/t0",
            "Jain\nlife", "Jain\nwindow", "top\nresp\np99 ms", "max\nwait s",
            "inver-\nsion\nms")


def _row(metrics: dict, t0_us: int) -> list:
    """One table row: switches per second, efficiency, the granted slices (p50/p99 in ms, the
    longest in units of t0), the worst priority's two Jain indexes (the window one: its mean
    over windows), the highest priority's p99 response, the longest wait of a runnable task
    and the inversion time."""
    top = metrics["per_priority"][metrics["top_priority"]]
    slices = metrics["slice_us"]
    return [metrics["policy"], round(metrics["switches_per_s"], 1),
            round(100 * metrics["efficiency"], 2),
            f"{slices['p50'] / 1e3:.0f}/{slices['p99'] / 1e3:.0f}",
            round(slices["max"] / t0_us, 1), round(metrics["jain_life_min"], 3),
            round(metrics["jain_window_min"], 3), round(top["response_us"]["p99"] / 1e3, 1),
            round(metrics["max_wait_us"] / 1e6, 2), round(metrics["inversion_us"] / 1e3)]


def _plot(scenario: Scenario, runs: dict, path: Path) -> Path:
    """Six panels: switches per second, efficiency, the granted slices (p50, p99 and max on
    a log scale), received / entitled per task (one colour per priority), the window Jain
    index over time of the most populous priority, and the inversion time."""
    fig, axes = figure(2, 3, figsize=(16, 8))
    (ax_switch, ax_eff, ax_slice), (ax_fair, ax_time, ax_inv) = axes
    names = list(runs)
    positions = np.arange(len(names))
    ax_switch.bar(positions, [runs[name]["switches_per_s"] for name in names], color="tab:blue")
    ax_switch.set_ylabel("context switches per second")
    efficiency = [100 * runs[name]["efficiency"] for name in names]
    ax_eff.bar(positions, efficiency, color="tab:green")
    ax_eff.set_ylabel("efficiency: useful / busy GPU time (%)")
    ax_eff.set_ylim(max(0.0, min(efficiency) - 2 * (100 - min(efficiency)) - 1), 100)
    for key, marker in (("p50", "o"), ("p99", "^"), ("max", "v")):
        ax_slice.scatter(positions, [runs[name]["slice_us"][key] / 1e3 for name in names],
                         marker=marker, label=key)
    ax_slice.axhline(scenario.t0_us / 1e3, color="grey", linewidth=0.8, linestyle="--",
                     label=f"t0 = {scenario.t0_us / 1e3:g} ms")
    ax_slice.set_yscale("log")
    ax_slice.set_ylabel("granted slice (ms)")
    ax_slice.legend(fontsize=7)
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
    ax_inv.bar(positions, [runs[name]["inversion_us"] / 1e3 for name in names],
               color="tab:red")
    ax_inv.set_ylabel("priority inversion (ms): lower priority ran, higher waited")
    for axis in (ax_switch, ax_eff, ax_slice, ax_fair, ax_inv):
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
    fig.suptitle(f"procsched: {scenario.name} - {scenario.description} (reload = "
                 f"{scenario.reload}, priority = {scenario.priority_rule})")
    return save_figure(fig, path)


_EVENT_FIELDS = ("scenario", "policy", "time_us", "event", "task", "priority", "duration_us",
                 "detail")


def _write_events(path: Path, rows: list) -> None:
    """The event log as CSV, one row per event, in time order per scenario and policy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(_EVENT_FIELDS)
        writer.writerows(rows)
def _expected_us(specs) -> int:
    """A run's simulated length, roughly (for the progress bar): the later of the last
    arrival and all the work done back to back."""
    return max(max((spec.arrival_us + spec.work_us for spec in specs), default=1),
               sum(spec.work_us for spec in specs))


def run(args) -> int:
    """Run every scenario of ``args.config`` with each of its policies; tables, plots, JSON;
    then the claims over ``args.seeds`` seeds."""
    scenarios = [Scenario.from_toml(path) for path in args.config]
    if not scenarios:
        raise ConfigError("no scenario files (configs/procsched/*.toml)")
    overrides = {key: value for key, value in (("reload", getattr(args, "reload", None)),
                                               ("priority_rule",
                                                getattr(args, "priority_rule", None)))
                 if value is not None}
    scenarios = [dataclasses.replace(scenario, **overrides) for scenario in scenarios]
    chosen = select_policies(args, {str(path): scenario.policies
                                    for path, scenario in zip(args.config, scenarios,
                                                              strict=True)})
    files = {scenario.name: path for path, scenario in zip(args.config, scenarios, strict=True)}
    scenarios = [scenario for path, scenario in zip(args.config, scenarios, strict=True)
                 if chosen[str(path)]]
    scale = QUICK_SCALE if args.quick else 1.0
    events_path = getattr(args, "events", None)
    event_rows: list = []
    workloads = {scenario.name: generate_tasks(scenario, random.Random(args.seed), scale=scale)
                 for scenario in scenarios}
    jobs = [(scenario, policy) for scenario in scenarios
            for policy in chosen[str(files[scenario.name])]]
    results: dict[str, dict] = {scenario.name: {} for scenario in scenarios}
    mean_slices: dict[str, int | None] = {}
    record = args.record
    with RunProgress("procsched", runs=len(jobs), quiet=args.quiet) as bar:
        for scenario, policy in jobs:
            specs = workloads[scenario.name]
            window = max(1, round(scenario.fairness_window_us * scale))
            if policy == "timeshare-mean" and scenario.name not in mean_slices:
                # Round-robin at the seed's own mean slice needs the seed's run first.
                outcome = simulate(specs, make_policy("seed", scenario),
                                   switch_cost_for("seed", scenario), name="seed", check=True)
                mean_slices[scenario.name] = measure(outcome, window)["mean_slice_us"]
            with bar.run(f"{scenario.name} {policy}", expected=_expected_us(specs),
                         unit="us") as tick:
                outcome = simulate(specs, make_policy(policy, scenario,
                                                      mean_slice_us=mean_slices.get(
                                                          scenario.name)),
                                   switch_cost_for(policy, scenario), name=policy, check=True,
                                   events=events_path is not None, progress=tick)
            metrics = measure(outcome, window)
            if policy == "seed":
                mean_slices[scenario.name] = metrics["mean_slice_us"]
            if outcome.events is not None:
                event_rows += [(scenario.name, policy, *event) for event in outcome.events]
            results[scenario.name][policy] = metrics
            record.add(scenario.name, policy, _json_metrics(metrics),
                       file=files[scenario.name])
    record.note(quick=bool(args.quick))
    for scenario in scenarios:
        runs = results[scenario.name]
        specs = workloads[scenario.name]
        gpu = scenario.gpu
        caption = (f"{len(specs)} tasks, {sum(s.work_us for s in specs) / 1e6:.3g} s of work; "
                   f"switch {gpu.switch_cost_us} us over the {gpu.save_to} path "
                   f"({gpu.device_switch_us} us inside the seed's cache), cache load "
                   f"{gpu.transfer_us} us per context; L={scenario.cache_tasks}, t0="
                   f"{scenario.t0_us / 1e3:g} ms, reload = {scenario.reload}, priority = "
                   f"{scenario.priority_rule}; time-sharing slice "
                   f"{scenario.timeshare_slice_us / 1e3:g} ms"
                   + (f", timeshare-mean {runs['seed']['mean_slice_us'] / 1e3:.1f} ms"
                      if "timeshare-mean" in runs else ""))
        print_table(f"procsched: {scenario.name} - {scenario.description}", _HEADERS,
                    [_row(metrics, scenario.t0_us) for metrics in runs.values()],
                    caption=caption)
        _plot(scenario, runs, Path(args.plots) / f"procsched_{scenario.name}.png")
        record.scenario(scenario.name, {
            "name": scenario.name, "description": scenario.description,
            "tasks": len(specs), "switch_cost_us": gpu.switch_cost_us,
            "device_switch_us": gpu.device_switch_us, "cache_load_us": gpu.transfer_us,
            "save_to": gpu.save_to, "cache_tasks": scenario.cache_tasks,
            "t0_us": scenario.t0_us, "reload": scenario.reload,
            "priority_rule": scenario.priority_rule,
            "timeshare_slice_us": scenario.timeshare_slice_us,
            "policies": {name: _json_metrics(metrics) for name, metrics in runs.items()}},
            file=files[scenario.name])
    seeds = getattr(args, "seeds", 5)
    judge = wants_claims(args)
    claims = (evaluate_claims(scenarios, first_seed=args.seed, seeds=seeds,
                              scale=scale)
              if judge else [])
    if not judge:
        print(CLAIMS_SKIPPED)
    if claims:
        print_table(f"procsched: the seed's claims over seeds {args.seed}..{args.seed + seeds - 1}"
                    f" (95 % intervals; verdict from the per-seed ratio)", CLAIM_HEADERS,
                    claim_rows(claims))
        print_table("procsched: each claim with the parameter it leans on changed",
                    SENSITIVITY_HEADERS, sensitivity_rows(claims))
    record.note(claims=claims)
    if events_path is not None:
        _write_events(events_path, event_rows)
    return 0


def _json_metrics(metrics: dict) -> dict:
    """``metrics`` with the per-priority keys as strings, as JSON has them."""
    return {**metrics, "per_priority": {str(level): entry
                                        for level, entry in metrics["per_priority"].items()}}
