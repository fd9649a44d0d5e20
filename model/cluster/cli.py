"""``gpusched cluster``: every scenario with every policy, one table and one plot per scenario.

Each scenario's jobs are generated (or read) once and given to every policy; each policy gets
its own seeded ``random.Random`` for its tie-breaks. The energy of every policy of a scenario
is integrated over the same horizon (the latest makespan among them), so a policy that
finishes early is charged for its idle cluster until the others finish.
"""

import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.cli import select_policies
from model.cluster.config import NodeSpec, Scenario, load_scenario
from model.cluster.placement import POLICIES
from model.cluster.sim import ClusterSimulation
from model.cluster.trace import read_nodes, read_pods
from model.cluster.workload import Job, generate_jobs
from model.report import RunProgress, console, figure, print_table, save_figure

__all__ = ["BASELINES", "PreparedScenario", "add_arguments", "binned_average", "prepare", "run",
           "run_scenario", "savings"]

#: The baselines the seed's saving is stated against, in report order.
BASELINES = ("spread", "bin-pack", "random")
SEED_POLICY = "seed-004"


@dataclass
class PreparedScenario:
    """A scenario with its cluster and jobs built, and what the input readers skipped."""

    scenario: Scenario
    nodes: tuple[NodeSpec, ...]
    jobs: list[Job]
    input_notes: dict[str, int] = field(default_factory=dict)


def add_arguments(parser) -> None:
    """``--debug``: check the invariants after every event (the tests always do)."""
    parser.add_argument("--debug", action="store_true",
                        help="check the model's invariants after every event (slower)")


def prepare(scenario: Scenario, seed: int, *, quick: bool = False) -> PreparedScenario:
    """Build the cluster and the job list of ``scenario`` (the trace files are read here)."""
    notes: dict[str, int] = {}
    if scenario.trace is not None and scenario.trace.nodes is not None:
        nodes, skipped = read_nodes(scenario.trace.nodes, scenario.card_types, scenario.trace)
        notes.update({f"node list: {reason}": count for reason, count in skipped.items()})
    else:
        nodes = scenario.nodes
    if scenario.trace is not None:
        jobs, counts = read_pods(scenario.trace.pods, scenario.trace, quick=quick)
        notes.update({f"pod list: {reason}": count for reason, count in counts.items()})
    else:
        rng = random.Random(f"{seed}:{scenario.source.stem}:workload")
        jobs = generate_jobs(scenario.workload, nodes, rng, quick=quick)
    return PreparedScenario(scenario, nodes, jobs, notes)


def _simulation(prepared: PreparedScenario, policy_name: str, seed: int,
                debug: bool) -> ClusterSimulation:
    scenario = prepared.scenario
    policy = POLICIES[policy_name]
    standby = (scenario.power.standby == "all"
               or (scenario.power.standby == "seed" and policy.power_aware))
    rng = random.Random(f"{seed}:{scenario.source.stem}:{policy_name}")
    return ClusterSimulation(prepared.nodes, scenario.card_types, prepared.jobs, policy,
                             rng=rng, backfill=scenario.backfill, standby=standby,
                             standby_after_s=scenario.power.standby_after_s,
                             wake_s=scenario.power.wake_s, debug=debug)


def run_scenario(prepared: PreparedScenario, seed: int, *, debug: bool = False,
                 runs=None) -> dict[str, dict]:
    """Run every policy of the scenario; ``{policy: results}`` over a common horizon.
    ``runs`` (optional) is a callback invoked after each policy, for a progress bar."""
    sims = []
    for policy_name in prepared.scenario.policies:
        sims.append(_simulation(prepared, policy_name, seed, debug).run())
        if runs is not None:
            runs()
    horizon = max(sim.makespan_s for sim in sims)
    return {sim.policy.name: sim.results(horizon) for sim in sims}


def savings(results: dict[str, dict], policy: str = SEED_POLICY) -> dict[str, float]:
    """Energy saved by ``policy`` against each baseline present, in percent of the baseline's
    energy (negative: the policy used more)."""
    if policy not in results:
        return {}
    mine = results[policy]["energy_kwh"]
    return {base: 100.0 * (results[base]["energy_kwh"] - mine) / results[base]["energy_kwh"]
            for base in BASELINES if base in results and results[base]["energy_kwh"] > 0}


def _saving_against(results: dict[str, dict], policy: str, base: str) -> float | None:
    if base not in results or results[base]["energy_kwh"] <= 0:
        return None
    energy = results[base]["energy_kwh"]
    return 100.0 * (energy - results[policy]["energy_kwh"]) / energy


def _print_scenario(prepared: PreparedScenario, results: dict[str, dict]) -> None:
    scenario = prepared.scenario
    # Few, short columns: the table must stay readable in an 80-column terminal.
    headers = ["policy", "kWh", "vs\nspread", "vs\nbin-pack", "queued", "wait\np99 s",
               "frag %\n(jobs)", "idle\nnodes"]
    rows = []
    for name, result in results.items():
        rows.append([name, result["energy_kwh"], _saving_against(results, name, "spread"),
                     _saving_against(results, name, "bin-pack"), result["queued"],
                     result["wait_s"]["p99"],
                     f"{100.0 * result['fragmented_fraction']:.3g} ({result['fragmented']})",
                     result["fully_idle_nodes_mean"]])
    first = next(iter(results.values()))
    caption = [f"{first['nodes']} nodes, {first['cards']} cards, {first['jobs']} jobs "
               f"({first['rejected']} rejected at admission), "
               f"{first['horizon_s'] / 3600:.4g} h. kWh: cards and hosts, busy + idle + standby; "
               f"vs X: % of X's energy saved; idle nodes: time-average of fully idle nodes"]
    caption += [f"{reason}: {count}" for reason, count in first["rejection_reasons"].items()]
    caption += [f"{note}: {count}" for note, count in prepared.input_notes.items()]
    title = f"cluster: {scenario.name} ({scenario.source.name})"
    print_table(title, headers, rows, caption="\n".join(caption))


def binned_average(series, horizon: float, bins: int = 120):
    """Time-averages of a step series ``[[time, value], ...]`` (each value holding until the
    next time, the last until ``horizon``) over ``bins`` equal bins of ``[0, horizon]``:
    ``(bin centres, averages)`` as numpy arrays. The raw series changes at every event and
    is unreadable as a line."""
    edges = np.linspace(0.0, horizon, bins + 1)
    times = np.array([time for time, _ in series] + [horizon], dtype=float)
    values = np.array([value for _, value in series], dtype=float)
    # The integral of the step function at each edge, by interpolating its running integral.
    running = np.concatenate([[0.0], np.cumsum(values * np.diff(times))])
    integral = np.interp(edges, times, running)
    width = np.diff(edges)
    averages = np.divide(np.diff(integral), width, out=np.zeros(bins), where=width > 0)
    return (edges[:-1] + edges[1:]) / 2, averages


#: How the energy bars draw each part: greys and hatches, so that no part takes the colour of
#: a policy's line in the left panel.
_ENERGY_PARTS = (("busy", {"color": "0.35"}),
                 ("idle", {"color": "white", "edgecolor": "0.35", "hatch": "////"}),
                 ("standby", {"color": "0.8", "edgecolor": "0.5", "hatch": ".."}))


def _plot(prepared: PreparedScenario, results: dict[str, dict], path: Path) -> None:
    """Left: fully idle nodes over time, a line per policy. Right: each policy's energy as a
    bar of its parts (busy, idle, standby), every part's kWh written above the bar so a part
    too thin to see (an idle part of 0 when cards go to standby at once) is still read."""
    fig, (series_axis, energy_axis) = figure(1, 2, figsize=(12, 4.4),
                                             gridspec_kw={"width_ratios": [1.6, 1]})
    colours = {name: f"C{index % 10}" for index, name in enumerate(results)}
    for name, result in results.items():
        centres, averages = binned_average(result["fully_idle_series"], result["horizon_s"])
        series_axis.plot(centres / 3600, averages, label=name, linewidth=1.2,
                         color=colours[name])
    series_axis.set_xlabel("time (h)")
    series_axis.set_ylabel("fully idle nodes (time-average per bin)")
    series_axis.set_title(f"{prepared.scenario.name}: fully idle nodes over time")
    series_axis.legend(loc="best", fontsize="small")
    names = list(results)
    positions = np.arange(len(names))
    bottom = np.zeros(len(names))
    for part, style in _ENERGY_PARTS:
        # "busy" includes the hosts of nodes with a busy card.
        values = np.array([results[name][f"{part}_kwh"] for name in names])
        energy_axis.bar(positions, values, 0.6, bottom=bottom, label=part, linewidth=0.8,
                        **style)
        bottom += values
    top = max(bottom.max(), 1e-9)
    for position, name in zip(positions, names, strict=True):
        parts = "\n".join(f"{part} {results[name][f'{part}_kwh']:.3g}"
                          for part, _ in reversed(_ENERGY_PARTS))
        energy_axis.annotate(f"{bottom[position]:.4g} kWh\n{parts}",
                             (position, bottom[position]), xytext=(0, 3),
                             textcoords="offset points", ha="center", va="bottom", fontsize=7)
    energy_axis.set_ylim(0, top * 1.45)
    energy_axis.set_xticks(positions, names, rotation=20, ha="right")
    for label, name in zip(energy_axis.get_xticklabels(), names, strict=True):
        label.set_color(colours[name])           # the policy's colour in the left panel
    energy_axis.set_ylabel("energy (kWh)")
    energy_axis.set_title("cluster energy by part, kWh")
    energy_axis.legend(loc="upper left", fontsize="small", ncol=3)
    save_figure(fig, path)


def _expected_s(prepared: PreparedScenario) -> float:
    """A run's length, roughly (for the progress bar): the last arrival plus a mean job."""
    jobs = prepared.jobs
    if not jobs:
        return 1.0
    return max(job.arrival_s for job in jobs) + sum(job.duration_s for job in jobs) / len(jobs)


def run(args) -> int:
    """Run every scenario of ``args.config`` with every policy; tables, plots, JSON."""
    scenarios = [load_scenario(path) for path in args.config]
    chosen = select_policies(args, {str(scenario.source): scenario.policies
                                    for scenario in scenarios})
    scenarios = [scenario for scenario in scenarios if chosen[str(scenario.source)]]
    prepared = [prepare(scenario, args.seed, quick=args.quick) for scenario in scenarios]
    record = args.record
    for entry in prepared:
        if entry.scenario.trace is not None:
            for path in (entry.scenario.trace.pods, entry.scenario.trace.nodes):
                if path is not None:
                    record.input_file(path)
    debug = getattr(args, "debug", False)
    items = [(index, policy) for index, entry in enumerate(prepared)
             for policy in chosen[str(entry.scenario.source)]]
    sims: dict[int, list[ClusterSimulation]] = {}
    with RunProgress("cluster", runs=len(items), quiet=args.quiet) as bar:
        for index, policy in items:
            entry = prepared[index]
            with bar.run(f"{entry.scenario.name} {policy}", expected=_expected_s(entry),
                         unit="s") as tick:
                sim = _simulation(entry, policy, args.seed, debug).run(tick)
            finished = sims.setdefault(index, [])
            finished.append(sim)
            # Energy is integrated over the scenario's common horizon, known once every
            # policy has run: an interrupted run's JSON uses the horizon of those that did.
            record.add(entry.scenario.name, policy, file=entry.scenario.source,
                       result=lambda sim=sim, finished=finished: sim.results(
                           max(other.makespan_s for other in finished)))
    record.note(quick=bool(args.quick))
    report = []
    for index, entry in enumerate(prepared):
        horizon = max(sim.makespan_s for sim in sims[index])
        results = {sim.policy.name: sim.results(horizon) for sim in sims[index]}
        _print_scenario(entry, results)
        _plot(entry, results, Path(args.plots) / f"cluster_{entry.scenario.source.stem}.png")
        summary = {"name": entry.scenario.name, "file": str(entry.scenario.source),
                   "description": entry.scenario.description,
                   "input_notes": entry.input_notes,
                   "energy_saving_percent": savings(results), "policies": results}
        record.scenario(entry.scenario.name, summary, file=entry.scenario.source)
        report.append(summary)
    lines = []
    for entry in report:
        saved = entry["energy_saving_percent"]
        if saved:
            text = ", ".join(f"{value:.1f}% vs {base}" for base, value in saved.items())
            lines.append(f"  {entry['name']}: {text}")
    if lines:
        console.print(f"{SEED_POLICY} energy saving (seed {args.seed}):\n" + "\n".join(lines))
    return 0
