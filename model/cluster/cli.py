"""``gpusched cluster``: every scenario with every policy over its seeds; tables, claims, plots.

Each scenario's cluster and pods are built (or read) once per seed and given to every policy;
each policy gets its own seeded ``random.Random`` for its tie-breaks. In the timed experiment
the energy of every policy of a seed is integrated over the same horizon (the latest makespan
among them). In the inflation experiment the inflated, shuffled pod list of a seed is the same
for every policy. Claims are judged over the seeds with :func:`model.stats.compare`.

``--bench`` times the whole real v2023 trace (1,213 nodes, the default list's 8,152 pods, the
copy in tests/data) with every policy, timed and inflation, one seed, one process on one
core.
"""

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.cli import (
    CLAIMS_SKIPPED,
    add_claims_options,
    positive_int,
    select_policies,
    wants_claims,
)
from model.cluster.config import AlibabaWorkload, Scenario, load_scenario
from model.cluster.fragmentation import TypicalPods, typical_pods
from model.cluster.inflation import InflationRun, inflate
from model.cluster.policies import POLICY_CLASSES, shuffled_rank
from model.cluster.power import BUILTIN_CARD_TYPES
from model.cluster.sim import ClusterSimulation
from model.cluster.trace import read_nodes, read_pods
from model.cluster.workload import Job, generate_jobs
from model.config import ConfigError
from model.report import RunProgress, console, figure, print_table, save_figure
from model.stats import compare, interval

__all__ = ["BASELINES", "INFLATION_METRICS", "TIMED_METRICS", "PreparedScenario",
           "add_arguments", "binned_average", "check_claims", "metric", "prepare", "run",
           "run_scenario", "savings", "summarise"]

#: The policies the seed's energy saving is stated against, in report order.
BASELINES = ("fgd", "pwr", "pwr-fgd", "best-fit", "dot-product", "gpu-packing",
             "gpu-clustering", "spread", "bin-pack", "random")
SEED_POLICY = "seed-004"

#: Numeric results a claim may name, by experiment (dotted: a summary's field).
TIMED_METRICS = ("energy_kwh", "busy_kwh", "idle_kwh", "standby_kwh", "mean_power_kw", "queued",
                 "wait_s.mean", "wait_s.p50", "wait_s.p99", "wait_s.max", "fragmented",
                 "fragmented_fraction", "fragmentation_gpus", "fragmentation_rate",
                 "fully_idle_nodes_mean", "card_utilisation", "unplaced", "wakeups",
                 "makespan_s")
INFLATION_METRICS = ("allocation_at_first_failure", "allocation_at_full",
                     "unallocated_percent_at_full", "fragmentation_rate_at_full",
                     "allocation_at_end", "fragmentation_gpus_end", "fragmentation_rate_end",
                     "power_kw_end", "power_kw_at_full", "watts_per_allocated_gpu", "unplaced",
                     "unplaced_gpus")

# Undisclosed GPU codes of the trace: their power is a placeholder, which reports must say.
_UNDISCLOSED = ("G1", "G2", "G3")


@dataclass
class PreparedScenario:
    """A scenario with its cluster and pods built for one seed, and what the readers
    skipped or noted."""

    scenario: Scenario
    nodes: tuple
    jobs: list[Job]
    input_notes: dict[str, int] = field(default_factory=dict)
    typical: TypicalPods | None = None


def add_arguments(parser) -> None:
    """``--seeds N``: every scenario on N seeds; ``--debug``: check the invariants after
    every event; ``--bench``: time the whole-trace-sized run of every policy;
    ``--claims``/``--no-claims`` (:func:`model.cli.add_claims_options`)."""
    parser.add_argument("--seeds", type=positive_int, default=None, metavar="N",
                        help="run every scenario on N seeds from --seed (default: the "
                             "scenario's seeds, 1 with --quick); claims need 2 or more")
    parser.add_argument("--debug", action="store_true",
                        help="check the model's invariants after every event (slower)")
    parser.add_argument("--bench", action="store_true",
                        help="time every policy on the whole real v2023 trace (1,213 "
                             "nodes, 8,152 pods), or on --config scenarios")
    add_claims_options(parser)


def prepare(scenario: Scenario, seed: int, *, quick: bool = False) -> PreparedScenario:
    """Build the cluster and the pods of ``scenario`` for ``seed`` (trace files are read here)."""
    from model.cluster.synthetic import alibaba_jobs, alibaba_nodes

    notes: dict[str, int] = {}
    trace = scenario.trace
    if trace is not None and trace.nodes is not None:
        nodes, skipped = read_nodes(trace.nodes, scenario.card_types, scenario.hosts, trace,
                                    quick=quick)
        notes.update({f"node list: {reason}": count for reason, count in skipped.items()})
    elif scenario.cluster is not None:
        nodes = alibaba_nodes(scenario.cluster.quick_scale if quick else scenario.cluster.scale,
                              hosts=scenario.hosts)
    else:
        nodes = scenario.nodes
    timed = scenario.experiment == "timed"
    rng = random.Random(f"{seed}:{scenario.source.stem}:workload")
    if trace is not None:
        jobs, counts = read_pods(trace.pods, trace, timed=timed, quick=quick)
        notes.update({f"pod list: {reason}": count for reason, count in counts.items()})
    elif isinstance(scenario.workload, AlibabaWorkload):
        jobs = alibaba_jobs(scenario.workload, rng, quick=quick, timed=timed)
    else:
        jobs = generate_jobs(scenario.workload, nodes, rng, quick=quick)
    if not jobs:
        raise ConfigError(f"{scenario.source}: no pod is left to simulate (see the skipped "
                          f"rows: {notes or 'none'})")
    undisclosed = sorted({card for node in nodes for card in node.cards
                          if card in _UNDISCLOSED and scenario.card_types[card].source
                          != "scenario"})
    if undisclosed:
        notes[f"{', '.join(undisclosed)}: undisclosed GPU types, power as PWR's plugin "
              f"models them (G2 an A10, G3 an A100) (GPUs)"] = sum(
                  node.cards.count(card) for node in nodes for card in undisclosed)
    return PreparedScenario(scenario, tuple(nodes), jobs, notes,
                            typical_pods(jobs, scenario.fgd_popularity))


def _policy_rng(scenario: Scenario, seed: int, policy: str) -> random.Random:
    return random.Random(f"{seed}:{scenario.source.stem}:{policy}")


def _node_rank(prepared: PreparedScenario, seed: int) -> np.ndarray | None:
    """The seed's node order for ties under ``tie_break = "shuffled"`` (the same for every
    policy of the seed, as the artifact's renaming is); ``None`` under the other rules."""
    if prepared.scenario.tie_break != "shuffled":
        return None
    return shuffled_rank([node.name for node in prepared.nodes],
                         random.Random(f"{seed}:{prepared.scenario.source.stem}:nodes"))


def _standby(scenario: Scenario, policy: str) -> bool:
    return (scenario.power.standby == "all"
            or (scenario.power.standby == "seed" and POLICY_CLASSES[policy].power_aware))


def _inflated(prepared: PreparedScenario, seed: int) -> list[Job]:
    scenario = prepared.scenario
    capacity = sum(len(node.cards) for node in prepared.nodes) * 1000
    rng = random.Random(f"{seed}:{scenario.source.stem}:inflation")
    try:
        return inflate(prepared.jobs, capacity, scenario.inflation_ratio, rng)
    except ValueError as error:
        raise ConfigError(f"{scenario.source}: {error}") from None


def _run_one(prepared: PreparedScenario, policy: str, seed: int, debug: bool, pods=None,
             progress=None):
    """One policy on one seed; ``progress`` (optional) is called with the simulated time
    (timed experiment) or the pods submitted so far (inflation)."""
    scenario = prepared.scenario
    common = dict(rng=_policy_rng(scenario, seed, policy), debug=debug,
                  shared_card=scenario.power.shared_card, typical=prepared.typical,
                  pwr_fgd_weights=scenario.pwr_fgd_weights, tie_break=scenario.tie_break,
                  node_rank=_node_rank(prepared, seed))
    if scenario.experiment == "inflation":
        return InflationRun(prepared.nodes, scenario.card_types, pods, policy,
                            **common).run(progress)
    return ClusterSimulation(prepared.nodes, scenario.card_types, prepared.jobs, policy,
                             backfill=scenario.backfill, standby=_standby(scenario, policy),
                             standby_after_s=scenario.power.standby_after_s,
                             wake_s=scenario.power.wake_s, **common).run(progress)


def _expected(prepared: PreparedScenario, pods) -> tuple[float, str]:
    """A run's length, roughly, and its unit (for the progress bar): the pods to submit
    (inflation), or the last arrival plus a mean job (timed)."""
    if pods is not None:
        return max(len(pods), 1), "pods"
    jobs = prepared.jobs
    if not jobs:
        return 1.0, "s"
    return (max(job.arrival_s for job in jobs)
            + sum(job.duration_s for job in jobs) / len(jobs)), "s"


def run_scenario(prepared: PreparedScenario, seed: int, *, debug: bool = False,
                 runs=None, policies=None) -> dict[str, dict]:
    """Run every policy of the scenario (or those of ``policies``, in the scenario's order)
    on one seed: ``{policy: results}``; a timed run's energy is integrated over the latest
    makespan among the policies run. ``runs`` (optional) is called after each policy, for a
    progress bar."""
    scenario = prepared.scenario
    pods = _inflated(prepared, seed) if scenario.experiment == "inflation" else None
    done = []
    for policy in scenario.policies:
        if policies is not None and policy not in policies:
            continue
        done.append(_run_one(prepared, policy, seed, debug, pods))
        if runs is not None:
            runs()
    if scenario.experiment == "inflation":
        return {run.policy.name: run.results() for run in done}
    horizon = max(sim.makespan_s for sim in done)
    return {sim.policy.name: sim.results(horizon) for sim in done}


def summarise(entry: PreparedScenario, per_policy: dict[str, list[dict]],
              seeds: list[int], *, claims: bool = True) -> dict:
    """The JSON entry of one scenario (``gpusched cluster``'s ``scenarios`` part): every
    metric's mean and 95 % interval over the seeds per policy (``summary``), the claims
    (none when ``claims`` is false), the first seed's results (``policies``) and the other
    seeds' (``per_seed``)."""
    scenario = entry.scenario
    first = {policy: results[0] for policy, results in per_policy.items()}
    known = TIMED_METRICS if scenario.experiment == "timed" else INFLATION_METRICS
    summary = {policy: {name: interval([metric(result, name) for result in results])
                        .as_dict() for name in known}
               for policy, results in per_policy.items()}
    return {"name": scenario.name, "file": str(scenario.source),
            "description": scenario.description,
            "experiment": scenario.experiment, "seeds": seeds,
            "input_notes": entry.input_notes,
            "typical_pods": entry.typical.as_dict() if entry.typical else None,
            "energy_saving_percent": savings(first), "summary": summary,
            "claims": _claim_rows(scenario, per_policy) if claims else [],
            "policies": first,
            "per_seed": {policy: results[1:] for policy, results in per_policy.items()}}


def metric(result: dict, name: str) -> float:
    """The value of ``name`` (dotted for a nested field) in one policy's results."""
    value = result
    for part in name.split("."):
        value = value[part]
    return float(value)


def check_claims(scenario: Scenario) -> None:
    """Every claim names a metric of the scenario's experiment (checked before running)."""
    known = TIMED_METRICS if scenario.experiment == "timed" else INFLATION_METRICS
    for index, claim in enumerate(scenario.claims):
        if claim.metric not in known:
            raise ConfigError(f"{scenario.source}: claims[{index}].metric must be one of "
                              f"{', '.join(known)}, not {claim.metric!r}")


def savings(results: dict[str, dict], policy: str = SEED_POLICY) -> dict[str, float]:
    """Energy saved by ``policy`` against each baseline present, in percent of the
    baseline's energy (negative: the policy used more). Timed experiment only."""
    if policy not in results or "energy_kwh" not in results[policy]:
        return {}
    mine = results[policy]["energy_kwh"]
    return {base: 100.0 * (results[base]["energy_kwh"] - mine) / results[base]["energy_kwh"]
            for base in BASELINES if base in results and results[base]["energy_kwh"] > 0}


def _mean(per_seed: list[dict], name: str) -> float:
    return float(np.mean([metric(result, name) for result in per_seed]))


def _timed_rows(per_policy: dict[str, list[dict]]) -> tuple[list[str], list[list]]:
    headers = ["policy", "kWh", "vs seed\n%", "queued", "wait\np99 s", "FGD frag\nGPUs",
               "frag\nrate %", "idle\nnodes", "util\n%"]
    seed_energy = (_mean(per_policy[SEED_POLICY], "energy_kwh")
                   if SEED_POLICY in per_policy else None)
    rows = []
    for name, results in per_policy.items():
        energy = _mean(results, "energy_kwh")
        rows.append([name, energy,
                     None if seed_energy is None else 100.0 * (energy - seed_energy)
                     / seed_energy,
                     _mean(results, "queued"), _mean(results, "wait_s.p99"),
                     _mean(results, "fragmentation_gpus"),
                     100 * _mean(results, "fragmentation_rate"),
                     _mean(results, "fully_idle_nodes_mean"),
                     100 * _mean(results, "card_utilisation")])
    return headers, rows


def _inflation_rows(per_policy: dict[str, list[dict]]) -> tuple[list[str], list[list]]:
    headers = ["policy", "alloc %\n1st fail", "alloc %\nat 100%", "alloc %\nend",
               "frag\nrate %", "power\nkW", "W per\nGPU", "unplaced\npods", "unplaced\nGPUs"]
    rows = []
    for name, results in per_policy.items():
        rows.append([name, 100 * _mean(results, "allocation_at_first_failure"),
                     100 * _mean(results, "allocation_at_full"),
                     100 * _mean(results, "allocation_at_end"),
                     100 * _mean(results, "fragmentation_rate_end"),
                     _mean(results, "power_kw_end"), _mean(results, "watts_per_allocated_gpu"),
                     _mean(results, "unplaced"), _mean(results, "unplaced_gpus")])
    return headers, rows


def _print_scenario(prepared: PreparedScenario, per_policy: dict[str, list[dict]],
                    seeds: list[int]) -> None:
    scenario = prepared.scenario
    first = next(iter(per_policy.values()))[0]
    if scenario.experiment == "timed":
        headers, rows = _timed_rows(per_policy)
        caption = [f"{first['nodes']} nodes, {first['cards']} GPUs, {first['jobs']} pods "
                   f"({first['rejected']} unplaceable, rejected at admission), "
                   f"{first['horizon_s'] / 3600:.4g} h. kWh: cards and hosts; vs seed: % more "
                   f"energy than seed-004; FGD frag: time-average fragmented GPUs (rate: of "
                   f"free GPUs); util: allocated GPU share"]
        caption += [f"{reason}: {count}" for reason, count in first["rejection_reasons"].items()]
    else:
        headers, rows = _inflation_rows(per_policy)
        caption = [f"Inflation (no times): {first['nodes']} nodes, {first['cards']} GPUs, "
                   f"{first['pods']} pods asking for {first['arrived_percent']:.0f}% of the "
                   f"GPUs, submitted in a shuffled order until all are tried. alloc: "
                   f"allocated GPU share when the first pod fails, when the arrived pods ask "
                   f"for 100%, at the end; power: every card and host awake at the end"]
    caption.append(f"means over {len(seeds)} seed{'s' * (len(seeds) > 1)} ({seeds[0]}.."
                   f"{seeds[-1]}); typical pods: {first['typical_pods']} shapes")
    caption += [f"{note}: {count}" for note, count in prepared.input_notes.items()]
    print_table(f"cluster: {scenario.name} ({scenario.source.name})", headers, rows,
                caption="\n".join(caption))


def _claim_rows(scenario: Scenario, per_policy: dict[str, list[dict]]) -> list[dict]:
    judged = []
    for claim in scenario.claims:
        if claim.policy not in per_policy or claim.baseline not in per_policy:
            continue                             # left out by --policy
        mine = [metric(result, claim.metric) for result in per_policy[claim.policy]]
        theirs = [metric(result, claim.metric) for result in per_policy[claim.baseline]]
        comparison = compare(mine, theirs, higher_is_better=claim.higher_is_better)
        judged.append({"scenario": scenario.name, "text": claim.text, "metric": claim.metric,
                       "policy": claim.policy, "baseline": claim.baseline,
                       **comparison.as_dict()})
    return judged


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


def _colours(names):
    from matplotlib import colormaps

    palette = colormaps["tab20"].colors
    return {name: palette[(2 * index) % 20 + (index >= 10)] for index, name in enumerate(names)}


#: How the energy bars draw each part: greys and hatches, so that no part takes the colour of
#: a policy's line in the left panel.
_ENERGY_PARTS = (("busy", {"color": "0.35"}),
                 ("idle", {"color": "white", "edgecolor": "0.35", "hatch": "////"}),
                 ("standby", {"color": "0.8", "edgecolor": "0.5", "hatch": ".."}))


def _plot_timed(prepared: PreparedScenario, results: dict[str, dict], path: Path) -> None:
    """Left: fully idle nodes over time, a line per policy. Right: each policy's energy as a
    bar of its parts (busy, idle, standby), every part's kWh written beside the bar so a part
    too thin to see (an idle part of 0 when cards go to standby at once) is still read."""
    fig, (series_axis, energy_axis) = figure(1, 2, figsize=(12, 4.5),
                                             gridspec_kw={"width_ratios": [3, 2]})
    colours = _colours(results)
    for name, result in results.items():
        centres, averages = binned_average(result["fully_idle_series"], result["horizon_s"])
        series_axis.plot(centres / 3600, averages, label=name, linewidth=1.2,
                         color=colours[name])
    series_axis.set_xlabel("time (h)")
    series_axis.set_ylabel("fully idle nodes (time-average per bin)")
    series_axis.set_title(f"{prepared.scenario.name}: fully idle nodes")
    series_axis.legend(loc="best", fontsize="x-small", ncol=2)
    names = list(results)
    positions = np.arange(len(names))
    bottom = np.zeros(len(names))
    for part, style in _ENERGY_PARTS:
        # "busy" includes the hosts of nodes with a busy card.
        values = np.array([results[name][f"{part}_kwh"] for name in names])
        energy_axis.barh(positions, values, 0.6, left=bottom, label=part, linewidth=0.8,
                         **style)
        bottom += values
    for position, name in zip(positions, names, strict=True):
        parts = ", ".join(f"{part} {results[name][f'{part}_kwh']:.3g}"
                          for part, _ in _ENERGY_PARTS)
        energy_axis.annotate(f"{bottom[position]:.4g} kWh ({parts})",
                             (bottom[position], position), xytext=(3, 0),
                             textcoords="offset points", ha="left", va="center", fontsize=6)
    energy_axis.set_xlim(0, max(bottom.max(), 1e-9) * 1.9)
    energy_axis.set_yticks(positions, names)
    for label, name in zip(energy_axis.get_yticklabels(), names, strict=True):
        label.set_color(colours[name])           # the policy's colour in the left panel
    energy_axis.set_xlabel("energy (kWh): busy + idle + standby")
    energy_axis.set_title("cluster energy by part")
    energy_axis.invert_yaxis()
    energy_axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3,
                       fontsize="small", frameon=False)
    save_figure(fig, path)


def _plot_inflation(prepared: PreparedScenario, results: dict[str, dict], path: Path) -> None:
    fig, axes = figure(1, 3, figsize=(14, 4.2))
    colours = _colours(results)
    labels = ("GPU allocation ratio (%)", "FGD fragmentation rate (%)", "cluster power (kW)")
    for name, result in results.items():
        curve = np.array(result["curve"]) if result["curve"] else np.zeros((0, 4))
        for column, axis in enumerate(axes, start=1):
            axis.plot(curve[:, 0], curve[:, column], label=name, linewidth=1.1,
                      color=colours[name])
    for axis, label in zip(axes, labels, strict=True):
        axis.set_xlabel("arrived workload (% of GPU capacity)")
        axis.set_ylabel(label)
    axes[0].set_title(f"{prepared.scenario.name}: inflation")
    axes[0].legend(loc="upper left", fontsize="x-small", ncol=2)
    save_figure(fig, path)


def _bench(args) -> int:
    """Time every policy on the whole-trace-sized run, or on the given scenarios."""
    from model.cli import default_configs

    given = sorted(Path(path) for path in args.config or [])
    scenarios = None
    if given and given != default_configs("cluster"):
        scenarios = [load_scenario(path) for path in given]
    rows, total = [], 0.0
    if scenarios is None:
        from model.cluster.config import TraceSource
        from model.cluster.power import BUILTIN_HOSTS
        from model.cluster.repro import DATA, NODES

        source = TraceSource(pods=DATA / "openb_pod_list_default.csv", nodes=DATA / NODES)
        card_types = dict(BUILTIN_CARD_TYPES)
        nodes, _ = read_nodes(source.nodes, card_types, BUILTIN_HOSTS, source)
        jobs, _ = read_pods(source.pods, source, timed=True)
        untimed, _ = read_pods(source.pods, source, timed=False)
        typical = typical_pods(untimed)
        capacity = sum(len(node.cards) for node in nodes) * 1000
        pods = inflate(untimed, capacity, 1.3, random.Random(args.seed))
        for policy in POLICY_CLASSES:
            row = [policy]
            for experiment, workload in ((ClusterSimulation, jobs), (InflationRun, pods)):
                wall, cpu = time.perf_counter(), time.process_time()
                experiment(nodes, card_types, workload, policy, rng=random.Random(args.seed),
                           typical=typical).run().results()
                row += [time.process_time() - cpu, time.perf_counter() - wall]
            rows.append(row)
        cpu_total = sum(row[1] + row[3] for row in rows)
        wall_total = sum(row[2] + row[4] for row in rows)
        caption = (f"The real v2023 trace: {len(nodes)} nodes, {capacity // 1000} GPUs; timed: "
                   f"{len(jobs)} pods of the default list at their own times; inflation: "
                   f"{len(pods)} pods (130%). One process, "
                   f"one core: {cpu_total:.1f} s of CPU time, {wall_total:.1f} s of wall time "
                   f"in all")
        print_table("cluster --bench: the whole real trace, every policy, one seed",
                    ["policy", "timed\nCPU s", "timed\nwall s", "inflation\nCPU s",
                     "inflation\nwall s"], rows, caption=caption)
        args.record.note(bench=True, cpu_seconds=cpu_total, wall_seconds=wall_total,
                         rows=rows)
        return 0
    for scenario in scenarios:
        prepared = prepare(scenario, args.seed, quick=args.quick)
        pods = _inflated(prepared, args.seed) if scenario.experiment == "inflation" else None
        for policy in scenario.policies:
            started = time.perf_counter()
            _run_one(prepared, policy, args.seed, False, pods).results()
            seconds = time.perf_counter() - started
            rows.append([f"{scenario.name}: {policy}", seconds, None])
            total += seconds
    print_table("cluster --bench", ["scenario: policy", "seconds", "-"], rows,
                caption=f"Total: {total:.1f} s of wall time on one core")
    return 0


def _seeds(scenario: Scenario, quick: bool, seeds: int | None = None) -> int:
    """Seeds to run: ``--seeds`` when given, else the scenario's, one under ``--quick`` (its
    claims then read "cannot tell": one run says nothing about the spread)."""
    if seeds is not None:
        return seeds
    return 1 if quick else scenario.seeds


def _with_claims(scenario: Scenario, policies) -> list[str]:
    """``policies`` and every policy and baseline the scenario's claims name, in the
    scenario's order (the claims need both sides run)."""
    named = set(policies) | {name for claim in scenario.claims
                             for name in (claim.policy, claim.baseline)}
    return [policy for policy in scenario.policies if policy in named]


def run(args) -> int:
    """Run every scenario of ``args.config`` with every policy and seed; tables, claims,
    plots, JSON."""
    if getattr(args, "bench", False):
        return _bench(args)
    scenarios = [load_scenario(path) for path in args.config]
    chosen = select_policies(args, {str(scenario.source): scenario.policies
                                    for scenario in scenarios})
    scenarios = [scenario for scenario in scenarios if chosen[str(scenario.source)]]
    for scenario in scenarios:
        check_claims(scenario)
    # --policy alone runs that policy's table only; --claims (or no --policy) judges the
    # claims, running the policies they name too.
    judge = wants_claims(args)
    if judge and getattr(args, "policy", None):
        chosen = {source: _with_claims(scenario, chosen[source]) for scenario in scenarios
                  for source in [str(scenario.source)]}
    seeds_given = getattr(args, "seeds", None)
    record = args.record
    debug = getattr(args, "debug", False)
    plan = [(scenario, args.seed + offset) for scenario in scenarios
            for offset in range(_seeds(scenario, args.quick, seeds_given))]
    prepared = {(id(scenario), seed): prepare(scenario, seed, quick=args.quick)
                for scenario, seed in plan}
    for entry in prepared.values():
        if entry.scenario.trace is not None:
            for path in (entry.scenario.trace.pods, entry.scenario.trace.nodes):
                if path is not None:
                    record.input_file(path)
    items = [(scenario, seed, policy) for scenario, seed in plan
             for policy in chosen[str(scenario.source)]]
    per_seed: dict[tuple[int, int], dict[str, dict]] = {}
    inflated: dict[tuple[int, int], list[Job]] = {}
    done: dict[tuple[int, int], list] = {}
    with RunProgress("cluster", runs=len(items), quiet=args.quiet) as bar:
        for scenario, seed, policy in items:
            key = (id(scenario), seed)
            entry = prepared[key]
            if scenario.experiment == "inflation" and key not in inflated:
                inflated[key] = pods = _inflated(entry, seed)
                tuned = sum("-tuned-" in pod.name for pod in pods)
                note = (f"inflation, seed {seed}: {len(entry.jobs)} pods resampled to "
                        f"{len(pods)} ({tuned} copies appended, "
                        f"{len(entry.jobs) - (len(pods) - tuned)} removed)")
                # Every seed's note goes with the first seed's, which the report prints.
                prepared[(id(scenario), args.seed)].input_notes[note] = len(pods)
            expected, unit = _expected(entry, inflated.get(key))
            with bar.run(f"{scenario.name} {policy} seed {seed}", expected=expected,
                         unit=unit) as tick:
                one = _run_one(entry, policy, seed, debug, inflated.get(key), progress=tick)
            finished = done.setdefault(key, [])
            finished.append(one)
            # A timed run's energy is integrated over the common horizon of the seed's
            # policies, known once all have run: an interrupted run's JSON uses the horizon
            # of those that did. The scenario's summary replaces these entries.
            label = policy if seed == args.seed else f"{policy} (seed {seed})"
            record.add(scenario.name, label, file=scenario.source,
                       result=(one.results if scenario.experiment == "inflation" else
                               lambda one=one, finished=finished: one.results(
                                   max(other.makespan_s for other in finished))))
    record.note(quick=bool(args.quick))
    for key, runs in done.items():
        if prepared[key].scenario.experiment == "inflation":
            per_seed[key] = {one.policy.name: one.results() for one in runs}
        else:
            horizon = max(sim.makespan_s for sim in runs)
            per_seed[key] = {sim.policy.name: sim.results(horizon) for sim in runs}
    report, claims = [], []
    for scenario in scenarios:
        seeds = [args.seed + offset
                 for offset in range(_seeds(scenario, args.quick, seeds_given))]
        per_policy = {policy: [per_seed[(id(scenario), seed)][policy] for seed in seeds]
                      for policy in chosen[str(scenario.source)]}
        entry = prepared[(id(scenario), seeds[0])]
        _print_scenario(entry, per_policy, seeds)
        first = {policy: results[0] for policy, results in per_policy.items()}
        plot = (_plot_inflation if scenario.experiment == "inflation" else _plot_timed)
        plot(entry, first, Path(args.plots) / f"cluster_{scenario.source.stem}.png")
        summary = summarise(entry, per_policy, seeds, claims=judge)
        claims += summary["claims"]
        record.scenario(scenario.name, summary, file=scenario.source)
        report.append(summary)
    if not judge:
        print(CLAIMS_SKIPPED)
    if claims:
        print_table("Claims over seeds: policy / baseline, mean [95% interval]",
                    ["scenario: claim", "policy", "baseline", "ratio", "verdict"],
                    [[f"{claim['scenario']}: {claim['text']} ({claim['metric']})",
                      claim["policy"]["mean"], claim["baseline"]["mean"],
                      "-" if claim["ratio"] is None else
                      f"{claim['ratio']['mean']:.3f} [{claim['ratio']['low']:.3f}, "
                      f"{claim['ratio']['high']:.3f}]", claim["verdict"]] for claim in claims])
    lines = []
    for entry in report:
        saved = entry["energy_saving_percent"]
        if saved:
            text = ", ".join(f"{value:.1f}% vs {base}" for base, value in saved.items())
            lines.append(f"  {entry['name']}: {text}")
    if lines:
        console.print(f"{SEED_POLICY} energy saving (seed {args.seed}):\n" + "\n".join(lines))
    record.note(claims=claims)
    return 0

