"""The seed-002 claims over workload seeds, offered loads and execution models, with 95 %
confidence intervals (issue 15 §4).

A scenario file's ``[[claims]]`` (:class:`model.dispatch.config.Claim`) names a metric, the
seed's policy, the baseline it is set against, which way is better, the execution model it
is measured under (the scenario's unless it says) and the loads it is judged at:

``"as written"``
    the scenario's own rates (for the shipped files: more than the GPU can serve, the
    overload case);
``"batch"``
    the same WGs, all queued at cycle 0: the claim's metric is then usually the makespan;
a fraction, e.g. ``0.7``
    the channels' rates scaled (proportions kept) so that the offered load is that fraction
    of the **baseline's capacity, measured** here: the steady-state throughput the baseline
    sustains when it is offered more than it can serve. Starting from the rates as written,
    the rates are doubled until the baseline serves less than 90 % of what it is offered
    (at most 16 times the written rates); the capacity is its mean steady throughput over the
    seeds at that load.

Every (load, execution) is run on seeds ``first .. first + seeds - 1`` (the same workloads
for the policy and its baseline); the claim is judged by :func:`model.stats.compare`, the
interval of the per-seed ratio: "holds", "does not hold" or "cannot tell". Metrics under
``steady.`` leave out the scenario's warm-up (``warmup`` cycles, scaled with shorter runs).
A workload that does not depend on the seed (a CSV or kernel trace without a random
stagger) runs once and is judged exactly: "holds" when the policy is strictly better,
"does not hold" otherwise.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from model.dispatch.config import LOAD_AS_WRITTEN, LOAD_BATCH, Scenario, generate_workload
from model.dispatch.engine import DispatchSimulator
from model.report import progress, progress_bar
from model.stats import VERDICTS, compare, interval

__all__ = ["BATCH_LIMIT", "CLAIM_HEADERS", "Settings", "capacity_rows", "claim_cycles",
           "claim_table_rows", "evaluate", "run_key", "scaled_scenario", "workload_for"]

#: A batch run may take this many times the scenario's cycle limit to finish.
BATCH_LIMIT = 20


@dataclass(frozen=True)
class Settings:
    """How claims are measured: ``seeds`` workload seeds from ``first_seed``, each run of a
    generated workload ``cycles`` long (``None``: the scenario's limit; the warm-up is scaled
    with it). A trace always runs its scenario's limit: a trace cut short is another
    workload, whose makespan would be the cut."""

    seeds: int = 5
    first_seed: int = 1
    cycles: int | None = None

    def __post_init__(self):
        if not isinstance(self.seeds, int) or isinstance(self.seeds, bool) or self.seeds < 2:
            raise ValueError(f"Claims over seeds need at least 2 seeds, not {self.seeds!r}")


def scaled_scenario(scenario: Scenario, factor: float) -> Scenario:
    """``scenario`` with every channel's rate multiplied by ``factor`` (at most one WG per
    cycle per channel); every channel must be a rate channel."""
    channels = tuple(replace(c, arrival=min(1.0, c.arrival * factor))
                     for c in scenario.channels)
    return replace(scenario, channels=channels)


def _nominal_rate(scenario: Scenario) -> float:
    """The offered load as written, WG per 1000 cycles (the channels' rates summed)."""
    return 1000.0 * sum(c.arrival for c in scenario.channels)


def workload_for(scenario: Scenario, load, seed: int, cycles: int) -> list:
    """The WGs of ``scenario`` at ``load`` (``"as written"``, ``"batch"`` or a rate factor)
    drawn with ``seed`` for a run of ``cycles``."""
    if load == LOAD_BATCH:
        workload = [wg for wg in workload_for(scenario, LOAD_AS_WRITTEN, seed, cycles)
                    if wg.arrival < cycles]
        for wg in workload:
            wg.arrival = 0
        return workload
    if load != LOAD_AS_WRITTEN:
        scenario = scaled_scenario(scenario, load)
    if scenario.workgroups is None and scenario.trace is None:
        # The generators up to this run's limit only: the WGs before it are the same.
        return generate_workload(scenario.channels, cycles, seed)
    return scenario.workload(seed)


def _seeded(scenario: Scenario) -> bool:
    """Whether the workload depends on the seed (generators, or a staggered kernel trace)."""
    if scenario.trace is not None:
        return False
    if scenario.workgroups is not None or scenario.kernel_trace is not None:
        return scenario.stagger > 0
    return True


class _Runs:
    """Every run the claims need, each made once: ``(scenario, execution, load, seed,
    policy) -> results``."""

    def __init__(self, settings: Settings, quiet: bool, known: dict | None = None):
        self.settings, self.quiet = settings, quiet
        self.results: dict[tuple, dict] = dict(known or {})
        self.count = 0

    def cycles(self, scenario: Scenario) -> int:
        traced = scenario.trace is not None or scenario.workgroups is not None
        if traced or not self.settings.cycles:
            return scenario.cycles
        return min(self.settings.cycles, scenario.cycles)

    def seeds(self, scenario: Scenario) -> list[int]:
        first = self.settings.first_seed
        return list(range(first, first + (self.settings.seeds if _seeded(scenario) else 1)))

    def missing(self, scenario: Scenario, execution: str, load, policies: Sequence[str],
                planned: set | None = None) -> list[tuple]:
        """The runs :meth:`get` would make for these arguments, as :func:`simulate`'s
        arguments: one task per seed, with the policies not yet run (nor in ``planned``,
        the keys already given to other tasks, which this adds to)."""
        if load == 1.0:
            load = LOAD_AS_WRITTEN              # the same runs
        planned = set() if planned is None else planned
        tasks = []
        for seed in self.seeds(scenario):
            names = []
            for name in policies:
                key = (scenario.name, execution, load, seed, name)
                if key not in self.results and key not in planned:
                    planned.add(key)
                    names.append(name)
            if names:
                tasks.append((scenario, execution, load, seed, tuple(names),
                              self.cycles(scenario)))
        return tasks

    def get(self, scenario: Scenario, execution: str, load, policies: Sequence[str]
            ) -> dict[int, dict[str, dict]]:
        """``{seed: {policy: results}}`` at ``load`` under ``execution``."""
        for task in self.missing(scenario, execution, load, policies):
            self.store(task, simulate(*task))
        if load == 1.0:
            load = LOAD_AS_WRITTEN
        return {seed: {name: self.results[(scenario.name, execution, load, seed, name)]
                       for name in policies}
                for seed in self.seeds(scenario)}

    def store(self, task: tuple, results: Sequence[dict]) -> None:
        """Keep the results of one :meth:`missing` task (its policies' runs, in order)."""
        scenario, execution, load, seed, names, _ = task
        for name, result in zip(names, results, strict=True):
            self.results[(scenario.name, execution, load, seed, name)] = result
            self.count += 1


def simulate(scenario: Scenario, execution: str, load, seed: int, policies: Sequence[str],
             cycles: int) -> list[dict]:
    """The claim runs of one seed at ``load`` under ``execution``: each of ``policies`` on
    the same workload (drawn for a run of ``cycles``; a batch may take
    :data:`BATCH_LIMIT` times as long), its results in order. A pure function of its
    arguments, so it may run in another process (:func:`evaluate`'s ``jobs``)."""
    warmup = scenario.warmup * cycles // scenario.cycles
    limit = cycles * BATCH_LIMIT if load == LOAD_BATCH else cycles
    by_name = {policy.name: policy for policy in scenario.policies}
    workload = workload_for(scenario, load, seed, cycles)
    return [DispatchSimulator(scenario.gpu, by_name[name], workload, channels=scenario.channels,
                              cycles=limit, sample_interval=scenario.sample_interval,
                              power_window=scenario.power_window, execution=execution,
                              warmup=0 if load == LOAD_BATCH else warmup,
                              keep=False).run()
            for name in policies]


def _capacity(runs: _Runs, scenario: Scenario, execution: str, baseline: str) -> dict:
    """The baseline's measured capacity (module docstring): WG per 1000 cycles at which it
    clears a backlog of the scenario's mix, with its interval over the seeds."""
    results = [by_policy[baseline] for by_policy in
               runs.get(scenario, execution, LOAD_BATCH, [baseline]).values()]
    rates = [1000.0 * r["workgroups_completed"] / r["makespan"] if r["makespan"] else 0.0
             for r in results]
    return {"capacity": interval(rates).as_dict(),
            "workgroups": sum(r["workgroups_submitted"] for r in results) / len(results),
            "unfinished": sum(r["workgroups_unfinished"] for r in results),
            "offered": _nominal_rate(scenario)}


def _judge(mine: list[float], theirs: list[float], higher_is_better: bool) -> dict:
    """:func:`model.stats.compare` over seeds; one deterministic run is judged exactly."""
    if len(mine) > 1:
        return compare(mine, theirs, higher_is_better=higher_is_better).as_dict()
    a, b = mine[0], theirs[0]
    better = a > b if higher_is_better else a < b
    ratio = a / b if b else (1.0 if a == b else math.inf)
    point = {"mean": a, "low": a, "high": a, "count": 1, "confidence": 1.0}
    return {"policy": point, "baseline": {**point, "mean": b, "low": b, "high": b},
            "ratio": {**point, "mean": ratio, "low": ratio, "high": ratio},
            "difference": {**point, "mean": a - b, "low": a - b, "high": a - b},
            "verdict": VERDICTS[0] if better else VERDICTS[1], "exact": True}


def _loads_needed(scenario: Scenario) -> list[tuple[str, str, object]]:
    """``(execution, baseline, load)`` of every claim row, in claim order."""
    rows = []
    for claim in scenario.claims:
        execution = claim.execution or scenario.execution
        rows += [(execution, claim.baseline, load) for load in claim.loads]
    return rows


def run_key(scenario: Scenario, execution: str, seed: int, policy: str) -> tuple:
    """The key of a run at the load as written, for :func:`evaluate`'s ``known``."""
    return (scenario.name, execution, LOAD_AS_WRITTEN, seed, policy)


def claim_cycles(scenario: Scenario, settings: Settings) -> int:
    """The cycle limit of the scenario's claim runs (see :class:`Settings`)."""
    return _Runs(settings, True).cycles(scenario)


def _run_ahead(runs: _Runs, jobs: Sequence[tuple], workers: int, quiet: bool) -> None:
    """Make every run :func:`evaluate`'s loop will ask for, on ``workers`` processes
    (:func:`model.pool.run_all`), in two rounds: the loads as written, the batches and the
    capacities' batches; then the fractions of a measured capacity (the capacities computed
    from the first round, as the loop will compute them). The loop then finds every run."""
    from model.pool import run_all

    def round_of(needed: list[tuple]) -> None:
        planned: set = set()
        tasks = [task for args in needed for task in runs.missing(*args, planned=planned)]
        # The longest first (a batch may run BATCH_LIMIT times the limit), so that the last
        # task to finish is a short one; results are kept by key, so order changes nothing.
        tasks.sort(key=lambda task: -task[5] * (BATCH_LIMIT if task[2] == LOAD_BATCH else 1)
                   * len(task[4]))
        with progress_bar(len(tasks), "claims over seeds", quiet) as advance:
            for task, results in zip(tasks, run_all(simulate, tasks, workers,
                                                    preload=[__name__], done=advance),
                                     strict=True):
                runs.store(task, results)

    first, capacities = [], {}
    for scenario, claim in jobs:
        execution = claim.execution or scenario.execution
        for load in claim.loads:
            if isinstance(load, str):
                first.append((scenario, execution, load, [claim.policy, claim.baseline]))
            else:
                first.append((scenario, execution, LOAD_BATCH, [claim.baseline]))
    round_of(first)
    second = []
    for scenario, claim in jobs:
        execution = claim.execution or scenario.execution
        for load in claim.loads:
            if not isinstance(load, str):
                key = (scenario.name, execution, claim.baseline)
                if key not in capacities:
                    capacities[key] = _capacity(runs, scenario, execution, claim.baseline)
                factor = load * capacities[key]["capacity"]["mean"] / _nominal_rate(scenario)
                second.append((scenario, execution, factor, [claim.policy, claim.baseline]))
    round_of(second)


def evaluate(scenarios: Sequence[Scenario], settings: Settings = Settings(), *,
             quiet: bool = True, known: dict | None = None, jobs: int = 1) -> dict:
    """Judge every claim of ``scenarios`` (kernel traces already converted) at each of its
    loads. Returns ``{"rows": [...], "capacities": [...], "runs": n}``: one row per claim
    and load (its fields, the load, the seeds, the comparison as a dict, and the mean served
    and offered load of the baseline), one entry per measured capacity; ``runs`` counts the
    runs made here. ``known``: results already run (:func:`run_key`, at
    :func:`claim_cycles`), reused instead of run again. ``jobs``: processes the runs are
    spread over (:mod:`model.pool`; 1: one after the other, here); the result is the same."""
    runs = _Runs(settings, quiet, known)
    rows, capacities = [], {}
    pairs = [(scenario, claim) for scenario in scenarios for claim in scenario.claims]
    if jobs > 1:
        _run_ahead(runs, pairs, jobs, quiet)
    for scenario, claim in progress(pairs, "claims over seeds", quiet=quiet or jobs > 1):
        execution = claim.execution or scenario.execution
        policies = [claim.policy, claim.baseline]
        for load in claim.loads:
            detail = {"label": load if isinstance(load, str) else f"{load:g} x capacity"}
            run_load = load
            if not isinstance(load, str):
                key = (scenario.name, execution, claim.baseline)
                if key not in capacities:
                    capacities[key] = _capacity(runs, scenario, execution, claim.baseline)
                measured = capacities[key]
                run_load = load * measured["capacity"]["mean"] / _nominal_rate(scenario)
                detail.update(capacity=measured["capacity"]["mean"], factor=run_load)
            results = runs.get(scenario, execution, run_load, policies)
            mine = [claim.value(by_policy[claim.policy]) for by_policy in results.values()]
            theirs = [claim.value(by_policy[claim.baseline]) for by_policy in results.values()]
            base = [by_policy[claim.baseline] for by_policy in results.values()]
            detail["offered"] = sum(r["steady"]["offered"] for r in base) / len(base)
            detail["served"] = sum(r["steady"]["throughput"] for r in base) / len(base)
            if load == LOAD_BATCH or claim.metric == "makespan":
                # A makespan of a run the limit cut is the last completion so far: say so.
                detail["unfinished"] = sum(r["workgroups_unfinished"]
                                           for by_policy in results.values()
                                           for r in by_policy.values())
            rows.append({"scenario": scenario.name, "claim": claim.text,
                         "metric": claim.metric, "policy": claim.policy,
                         "baseline": claim.baseline, "higher_is_better": claim.higher_is_better,
                         "execution": execution, "load": detail,
                         "seeds": list(results), "deterministic": len(results) == 1,
                         "comparison": _judge(mine, theirs, claim.higher_is_better)})
    return {"rows": rows, "runs": runs.count,
            "capacities": [{"scenario": name, "execution": execution, "baseline": baseline,
                            **measured}
                           for (name, execution, baseline), measured in capacities.items()]}


def _number(value: float) -> str:
    """Four significant digits without exponents: 30,040 rather than 3.004e+04."""
    if math.isinf(value) or math.isnan(value):
        return str(value)
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _interval_text(entry: dict | None) -> str:
    if entry is None:
        return "-"
    if entry.get("count") == 1:
        return _number(entry["mean"])
    return f"{_number(entry['mean'])} [{_number(entry['low'])}, {_number(entry['high'])}]"


def _judged_text(comparison: dict) -> str:
    """The interval the verdict was read from: the per-seed ratio, or the difference when a
    baseline value was 0."""
    if comparison["ratio"] is not None:
        return "x " + _interval_text(comparison["ratio"])
    return "+ " + _interval_text(comparison["difference"])


def _load_text(row: dict) -> str:
    load = row["load"]
    text = f"{row['execution']}, {load['label']}"
    if "capacity" in load:
        text += f" ({_number(load['offered'])}/kcyc)"
    if load.get("unfinished"):
        text += f", {load['unfinished']} WGs unfinished"
    if row["deterministic"]:
        text += ", 1 exact run"
    return text


#: Headers of :func:`claim_table_rows`.
CLAIM_HEADERS = ("#", "scenario: claim (metric, better)", "execution, load",
                 "policy\nmean [95 % CI]", "baseline\nmean [95 % CI]",
                 "per seed\npolicy / baseline", "verdict")


def claim_table_rows(rows: Sequence[dict]) -> list[list[str]]:
    """One table row per claim and load: number, scenario and claim, execution and load,
    the policy's and the baseline's means with their 95 % intervals, the per-seed ratio's
    interval and the verdict."""
    return [[str(number), f"{row['scenario']}: {row['claim']} ({row['metric']}, "
                          f"{'higher' if row['higher_is_better'] else 'lower'})",
             _load_text(row),
             f"{row['policy']}\n{_interval_text(row['comparison']['policy'])}",
             f"{row['baseline']}\n{_interval_text(row['comparison']['baseline'])}",
             _judged_text(row["comparison"]), row["comparison"]["verdict"]]
            for number, row in enumerate(rows, 1)]


def capacity_rows(capacities: Sequence[dict]) -> list[list]:
    """One row per measured capacity: scenario, execution, baseline, capacity with its
    interval, the mean batch size it was measured on, the load offered as written, and the
    WGs a batch left unfinished (then the capacity is a lower bound)."""
    return [[entry["scenario"], entry["execution"], entry["baseline"],
             _interval_text(entry["capacity"]), f"{entry['workgroups']:,.0f}",
             _number(entry["offered"]), entry["unfinished"]]
            for entry in capacities]
