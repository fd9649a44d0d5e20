"""The seed's claims about host-side dispatch, measured over several workload seeds, and the
two sweeps the claims lean on: where static binding overtakes the shared FIFO as the state
grows (the crossover) and what the batch size costs and buys.

Every seed draws its own workload and, with ``binding = "random"``, its own binding of
threads to instances, so a claim over seeds is a claim over bindings too.
"""

import dataclasses
import random
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from model.config import check_claim_run, check_hooks, check_int, check_names
from model.hostsched.config import Scenario
from model.hostsched.policies import make_policies, policy_names
from model.hostsched.sim import simulate
from model.hostsched.workload import generate_workload
from model.stats import compare, interval

__all__ = ["BATCH_FACTORS", "CLAIMS", "CLAIM_HEADERS", "DURATION_DIVISORS", "SENSITIVITY_HEADERS",
           "Claim", "Variant", "batch_sweep", "claim_rows", "crossover", "evaluate_claims",
           "run_policies", "sensitivity_rows"]


@dataclass(frozen=True)
class Variant:
    """A changed parameter: ``label`` for the table, ``apply`` the scenario it gives."""

    label: str
    apply: Callable[[Scenario], Scenario]


@dataclass(frozen=True)
class Claim:
    """``policy`` beats ``baseline`` on ``metric`` (``value`` reads it from
    :meth:`~model.hostsched.sim.RunResult.metrics`, in the metric's unit) in ``scenario``."""

    scenario: str
    text: str
    metric: str
    policy: str
    baseline: str
    value: Callable[[dict], float]
    higher_is_better: bool
    sensitivity: Variant


def _system(**changes) -> Callable[[Scenario], Scenario]:
    return lambda scenario: dataclasses.replace(
        scenario, system=dataclasses.replace(scenario.system, **changes))


def _set(**changes) -> Callable[[Scenario], Scenario]:
    return lambda scenario: dataclasses.replace(scenario, **changes)


def _shorter(divisor: int) -> Callable[[Scenario], Scenario]:
    """Every time of the workload (durations, starts, intervals) divided by ``divisor``: the
    same work cut into sub-tasks that many times shorter, each still moving a whole state."""
    def apply(scenario: Scenario) -> Scenario:
        def cut(pair):
            return tuple(max(1, value // divisor) for value in pair)
        return dataclasses.replace(scenario, groups=tuple(
            dataclasses.replace(group, duration_us=cut(group.duration_us),
                                start_us=cut(group.start_us),
                                interval_us=group.interval_us // divisor)
            for group in scenario.groups))
    return apply


def _top_p50_ms(metrics: dict) -> float:
    return next(iter(metrics["thread_completion_by_priority_us"].values()))["p50"] / 1e3


_SEED = "seed003-arrival"
_SHORT = Variant("sub-tasks 1/64 as long (a state move ~ 40 % of one)", _shorter(64))

#: The claims ``make sim`` measures, in table order; values in the metric's unit.
CLAIMS = (
    Claim("transcode", "finishes sooner than static binding", "makespan ms", _SEED,
          "static-rr", lambda m: m["makespan_us"] / 1e3, False, _SHORT),
    Claim("transcode", "keeps the instances usefully busier than static binding",
          "useful utilisation %", _SEED, "static-rr",
          lambda m: 100 * m["useful_utilisation"], True,
          Variant("instance cache 6 states (2)", _system(instance_cache=6))),
    Claim("transcode", "finishes as soon as a plain work queue", "makespan ms", _SEED,
          "work-queue", lambda m: m["makespan_us"] / 1e3, False,
          Variant("scatter-gather DMA, no packing copy", _set(pack_gb_s=0.0))),
    Claim("skewed", "keeps the instances usefully busier than static binding",
          "useful utilisation %", _SEED, "static-rr", lambda m: 100 * m["useful_utilisation"],
          True, Variant("binding t mod 4: both heavy threads on instance 0",
                        _set(binding="round-robin"))),
    Claim("priority", "the priority order finishes the urgent threads sooner than the "
          "arrival order", "top-priority threads done p50 ms", "seed003-priority", _SEED,
          _top_p50_ms, False, Variant("batch 32 (8)", _set(batch=32))),
    Claim("priority", "the priority order finishes the urgent threads sooner than a work "
          "queue", "top-priority threads done p50 ms", "seed003-priority", "work-queue",
          _top_p50_ms, False, _SHORT),
    Claim("live_spills", "finishes live streams sooner than static binding", "makespan ms",
          _SEED, "static-rr", lambda m: m["makespan_us"] / 1e3, False, _SHORT),
)


def expected_us(workload, system) -> int:
    """A run's length, roughly (for a progress bar): the later of the last arrival and every
    sub-task's time spread over the instances."""
    subtasks = workload.subtasks
    return max(max((sub.arrival + sub.duration for sub in subtasks), default=1),
               sum(sub.duration for sub in subtasks) // system.instances)


def run_policies(scenario: Scenario, seed: int, *, scale: float = 1.0,
                 policies: Sequence[str] | None = None, events: list | None = None,
                 check: bool = True, bar=None, on_result=None) -> dict[str, dict]:
    """``{policy: metrics}`` for the scenario's policies (or ``policies``) on its workload
    drawn with ``seed`` (and, with a random binding, the binding drawn with it too).
    ``events`` collects every event, each prefixed with the policy's name; ``check`` runs
    the invariant checker. Keys starting with ``_`` carry per-thread and per-instance data
    for the plots. ``bar`` (a :class:`model.report.RunProgress`) shows each run's simulated
    time; ``on_result(policy, metrics)`` is called as each run finishes."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a hostsched Scenario, not {scenario!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an integer, not {seed!r}")
    if policies is not None:
        check_names("", "policies", policies, policy_names(scenario))
    check_hooks(events, None)
    workload = generate_workload(scenario, random.Random(seed), scale=scale)
    results = {}
    for policy in make_policies(scenario, len(workload.threads), seed=seed):
        if policies is not None and policy.name not in policies:
            continue
        log = [] if events is not None else None
        running = (nullcontext(None) if bar is None else
                   bar.run(f"{scenario.name} {policy.name}", unit="us",
                           expected=expected_us(workload, scenario.system)))
        with running as tick:
            outcome = simulate(workload, scenario.system, policy, debug=check,
                               pack_gb_s=scenario.pack_gb_s, refill_us=scenario.refill_us,
                               events=log, progress=tick)
        metrics = outcome.metrics()
        if on_result is not None:
            on_result(policy.name, dict(metrics))
        metrics["_thread_done"] = outcome.thread_done
        metrics["_thread_priority"] = outcome.thread_priority
        metrics["_useful_per_instance"] = [compute / outcome.makespan if outcome.makespan
                                           else 0.0 for compute in outcome.compute]
        metrics["_threads"] = len(workload.threads)
        metrics["_tasks"] = workload.task_count
        metrics["_subtasks"] = len(workload.subtasks)
        results[policy.name] = metrics
        if log is not None:
            events += [(policy.name, *event) for event in log]
    return results


def evaluate_claims(scenarios: Sequence[Scenario], *, first_seed: int = 1, seeds: int = 5,
                    scale: float = 1.0, claims: Sequence[Claim] = CLAIMS) -> list[dict]:
    """Every claim whose scenario is among ``scenarios``, judged over ``seeds`` seeds; one
    dictionary per claim with ``comparison`` and ``sensitivity`` as in
    :func:`model.procsched.claims.evaluate_claims`."""
    check_claim_run(scenarios, Scenario, "hostsched", first_seed=first_seed, seeds=seeds,
                    scale=scale, claims=claims)
    by_name = {scenario.name: scenario for scenario in scenarios}
    seed_range = range(first_seed, first_seed + seeds)
    cache: dict[tuple, dict] = {}

    def judge(claim: Claim, key: str, scenario: Scenario) -> dict:
        mine, theirs = [], []
        for seed in seed_range:
            if (key, seed) not in cache:
                cache[key, seed] = run_policies(scenario, seed, scale=scale)
            runs = cache[key, seed]
            mine.append(claim.value(runs[claim.policy]))
            theirs.append(claim.value(runs[claim.baseline]))
        return compare(mine, theirs, higher_is_better=claim.higher_is_better).as_dict()

    rows = []
    for claim in claims:
        scenario = by_name.get(claim.scenario)
        if scenario is None:
            continue
        label = claim.sensitivity.label
        rows.append({"scenario": claim.scenario, "claim": claim.text, "metric": claim.metric,
                     "policy": claim.policy, "baseline": claim.baseline,
                     "higher_is_better": claim.higher_is_better, "seeds": list(seed_range),
                     "comparison": judge(claim, scenario.name, scenario),
                     "sensitivity": {"label": label, "comparison": judge(
                         claim, f"{scenario.name}/{label}", claim.sensitivity.apply(scenario))}})
    return rows


def _check_positive_ints(name: str, values, minimum: int) -> None:
    """``values`` is a non-empty list or tuple of integers >= ``minimum``."""
    if not isinstance(values, tuple | list) or not values:
        raise TypeError(f"{name} must be a non-empty list of integers >= {minimum}, "
                        f"not {values!r}")
    for index, value in enumerate(values):
        check_int("", f"{name}[{index}]", value, minimum)


#: Divisors of the sub-task durations in the crossover sweep: from the scenario's own
#: segments down to sub-tasks about as long as one state move.
DURATION_DIVISORS = (1, 4, 16, 32, 64, 128, 256)

#: The seed's two readings the crossover compares with static binding: as written (the
#: state packed with every sub-task, copied by the host) and the first, optimistic reading
#: (the state fetched only on a miss, nothing copied).
_READINGS = {"as written": {"ship_state": "always"},
             "state on a miss, no copy": {"ship_state": "on-miss", "pack_gb_s": 0.0}}


def crossover(scenario: Scenario, *, first_seed: int = 1, seeds: int = 5, scale: float = 1.0,
              divisors: Sequence[int] = DURATION_DIVISORS, caches: Sequence[int] = (2, 6)
              ) -> dict:
    """Where static binding overtakes the shared FIFO: the makespan of the seed (arrival
    order, in both readings), static binding and the work queue as the sub-tasks get shorter
    against one state move (the workload's times divided by each of ``divisors``), for each
    instance cache size. Each point is the mean over seeds with its interval; ``ratio`` is
    one state move over the mean sub-task duration; per reading and cache,
    ``static_faster_from_ratio`` is the smallest swept ratio from which static binding
    finishes sooner than the seed on every later point, judged per seed
    (:func:`model.stats.compare` "holds"; ``None`` when nowhere)."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a hostsched Scenario, not {scenario!r}")
    check_claim_run([scenario], Scenario, "hostsched", first_seed=first_seed, seeds=seeds,
                    scale=scale, claims=())
    _check_positive_ints("divisors", divisors, 1)
    _check_positive_ints("caches", caches, 0)
    move = scenario.system.state_move_us
    curves = {}
    for cache in caches:
        rows = []
        for divisor in divisors:
            shorter = _shorter(divisor)(scenario)
            system = dataclasses.replace(scenario.system, instance_cache=cache)
            mean_duration = sum((group.duration_us[0] + group.duration_us[1]) / 2 * group.count
                                for group in shorter.groups) / sum(group.count
                                                                   for group in shorter.groups)
            row = {"divisor": divisor, "ratio": move / mean_duration}
            wanted = (_SEED, "static-rr", "work-queue")
            for reading, changes in _READINGS.items():
                changed = dataclasses.replace(shorter, system=system, orders=("arrival",),
                                              **changes)
                runs = [run_policies(changed, seed, scale=scale, policies=wanted)
                        for seed in range(first_seed, first_seed + seeds)]
                if "static-rr" in wanted:
                    static_ms = [run["static-rr"]["makespan_us"] / 1e3 for run in runs]
                    row["static-rr"] = interval(static_ms).as_dict()
                    row["work-queue"] = interval([run["work-queue"]["makespan_us"] / 1e3
                                                  for run in runs]).as_dict()
                    wanted = (_SEED,)           # the baselines do not depend on the reading
                seed_ms = [run[_SEED]["makespan_us"] / 1e3 for run in runs]
                row[reading] = interval(seed_ms).as_dict()
                row[f"static faster than {reading}"] = compare(
                    static_ms, seed_ms, higher_is_better=False).verdict
            rows.append(row)
        found = {}
        for reading in _READINGS:
            verdicts = [row[f"static faster than {reading}"] == "holds" for row in rows]
            found[reading] = next((row["ratio"] for index, row in enumerate(rows)
                                   if all(verdicts[index:])), None)
        curves[str(cache)] = {"rows": rows, "static_faster_from_ratio": found}
    return {"scenario": scenario.name, "state_move_us": move, "readings": list(_READINGS),
            "caches": curves}


#: Batch sizes of the batch sweep, in multiples of the instance count (plus ``I + 1``).
BATCH_FACTORS = (2, 4, 8, 16)


def batch_sweep(scenario: Scenario, *, first_seed: int = 1, seeds: int = 5,
                scale: float = 1.0, shorter: int = 1,
                factors: Sequence[int] = BATCH_FACTORS) -> dict:
    """The seed's makespan, host packing time, batch count and (with priorities) the
    top-priority threads' median completion against the batch size, from ``I + 1`` (the
    smallest the seed allows) to ``16 I``; means over seeds with intervals. ``shorter``
    divides the workload's times (sub-tasks that much shorter against the same moves)."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a hostsched Scenario, not {scenario!r}")
    check_claim_run([scenario], Scenario, "hostsched", first_seed=first_seed, seeds=seeds,
                    scale=scale, claims=())
    check_int("", "shorter", shorter, 1)
    # A batch of factor x I threads must outnumber the I instances ([0007]).
    _check_positive_ints("factors", factors, 2)
    label = scenario.name if shorter == 1 else f"{scenario.name}, sub-tasks 1/{shorter}"
    scenario = _shorter(shorter)(scenario) if shorter != 1 else scenario
    instances = scenario.system.instances
    rows = []
    for batch in (instances + 1, *(factor * instances for factor in factors)):
        changed = dataclasses.replace(scenario, batch=batch)
        runs = [run_policies(changed, seed, scale=scale)
                for seed in range(first_seed, first_seed + seeds)]
        row = {"batch": batch}
        for name in changed.orders:
            policy = f"seed003-{name}"
            row[policy] = {
                "makespan_ms": interval([r[policy]["makespan_us"] / 1e3 for r in runs]).as_dict(),
                "pack_ms": interval([r[policy]["host_pack_us"] / 1e3 for r in runs]).as_dict(),
                "batches": interval([r[policy]["batches"] for r in runs]).as_dict(),
                "top_p50_ms": interval([_top_p50_ms(r[policy]) for r in runs]).as_dict()}
        rows.append(row)
    return {"scenario": label, "rows": rows}


def _number(value: float) -> str:
    """Four significant digits, without exponents: 30,040 rather than 3.004e+04."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _interval_text(entry: dict | None) -> str:
    if entry is None:
        return "-"
    return (f"{_number(entry['mean'])} [{_number(entry['low'])}, "
            f"{_number(entry['high'])}]")


def _judged_text(comparison: dict) -> str:
    """The interval the verdict was read from: the per-seed ratio, or the difference when a
    baseline value was 0."""
    if comparison["ratio"] is not None:
        return "x " + _interval_text(comparison["ratio"])
    return "+ " + _interval_text(comparison["difference"])


#: Headers of :func:`claim_rows` and :func:`sensitivity_rows`.
CLAIM_HEADERS = ("#", "scenario: claim (metric, better)", "seed's policy\nmean [95 % CI]",
                 "baseline\nmean [95 % CI]", "per seed\npolicy / baseline", "verdict")
SENSITIVITY_HEADERS = ("#", "the parameter the claim leans on, changed",
                       "seed's policy\nmean [95 % CI]", "baseline\nmean [95 % CI]",
                       "per seed", "verdict")


def claim_rows(rows: Sequence[dict]) -> list[list[str]]:
    """One table row per claim: number, scenario and claim, the policy's and the baseline's
    means with their 95 % intervals, the per-seed ratio's interval and the verdict."""
    return [[str(number), f"{row['scenario']}: {row['claim']} ({row['metric']}, "
                          f"{'higher' if row['higher_is_better'] else 'lower'})",
             f"{row['policy']}\n{_interval_text(row['comparison']['policy'])}",
             f"{row['baseline']}\n{_interval_text(row['comparison']['baseline'])}",
             _judged_text(row["comparison"]), row["comparison"]["verdict"]]
            for number, row in enumerate(rows, 1)]


def sensitivity_rows(rows: Sequence[dict]) -> list[list[str]]:
    """One table row per claim: the same judgement with the parameter it leans on changed."""
    return [[str(number), row["sensitivity"]["label"],
             _interval_text(row["sensitivity"]["comparison"]["policy"]),
             _interval_text(row["sensitivity"]["comparison"]["baseline"]),
             _judged_text(row["sensitivity"]["comparison"]),
             row["sensitivity"]["comparison"]["verdict"]]
            for number, row in enumerate(rows, 1)]
