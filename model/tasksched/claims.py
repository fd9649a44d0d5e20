"""The seed's claims about the task scheduler, measured over several workload seeds.

A :class:`Claim` sets the seed's policy against a baseline on one scenario -- another policy,
or the same policy under another reading of the seed (``baseline_variant``: the other gate,
for instance) -- on one metric, and names the parameter the claim leans on
(``sensitivity``). :func:`evaluate_claims` runs seeds ``first .. first + seeds - 1`` (the same
workloads for both sides) and judges each claim with :func:`model.stats.compare`, then again
with the parameter changed.
"""

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from model.config import check_claim_run, check_flag
from model.stats import compare
from model.tasksched.config import Scenario
from model.tasksched.sim import simulate
from model.tasksched.workload import build_workload

__all__ = ["CLAIMS", "CLAIM_HEADERS", "SENSITIVITY_HEADERS", "Claim", "Variant", "claim_rows",
           "evaluate_claims", "sensitivity_rows"]


@dataclass(frozen=True)
class Variant:
    """A changed parameter: ``label`` for the table, ``apply`` the scenario it gives."""

    label: str
    apply: Callable[[Scenario], Scenario]


@dataclass(frozen=True)
class Claim:
    """``policy`` beats ``baseline`` on ``metric`` (``value`` reads it from the metrics of
    :func:`~model.tasksched.sim.simulate`, in the metric's unit) in ``scenario``. With
    ``baseline_variant`` the baseline runs on that variant of the scenario."""

    scenario: str
    text: str
    metric: str
    policy: str
    baseline: str
    value: Callable[[dict], float]
    higher_is_better: bool
    sensitivity: Variant
    baseline_variant: Variant | None = None


def _scheduler(**changes) -> Callable[[Scenario], Scenario]:
    return lambda scenario: dataclasses.replace(
        scenario, scheduler=dataclasses.replace(scenario.scheduler, **changes))


def _arbiter(**changes) -> Callable[[Scenario], Scenario]:
    return lambda scenario: dataclasses.replace(
        scenario, arbiter=dataclasses.replace(scenario.arbiter, **changes))


_ONE_CLOCK = Variant("weight update in 1 clock (the RTL: 6 per slot)",
                     _arbiter(weight_update_clocks=1))
_PER_JOB = Variant("per-job gate ([0096])", _scheduler(gate="per-job"))

#: The claims ``make sim`` measures, in table order; values in the metric's unit.
CLAIMS = (
    Claim("weighted_shares", "shares follow the weights more closely than FIFO",
          "worst stream share error, pp", "delay-factor", "fifo-rr",
          lambda m: m["share_error_max_pp"], False, _ONE_CLOCK),
    Claim("weighted_shares", "shares as close to the weights as smooth WRR",
          "worst stream share error, pp", "delay-factor", "smooth-wrr",
          lambda m: m["share_error_max_pp"], False, _ONE_CLOCK),
    Claim("weighted_shares", "keeps the processors as busy as FIFO", "utilisation %",
          "delay-factor", "fifo-rr", lambda m: 100 * m["utilisation"], True, _ONE_CLOCK),
    Claim("scarce_type", "fewer schedule failures than FIFO on a scarce type",
          "schedule failures", "delay-factor", "fifo-rr", lambda m: m["schedule_failures"],
          False, Variant("8 arbiter slots (4)", _arbiter(tasks=8))),
    Claim("dependency_chains", "dependency chains finish as fast as under FIFO",
          "mean latency, beats", "delay-factor", "fifo-rr", lambda m: m["latency"]["mean"],
          False, Variant("32 arbiter slots (8)", _arbiter(tasks=32))),
    Claim("weighted_shares", "the all-jobs-matched gate keeps the processors as busy as "
          "the per-job gate", "utilisation %", "delay-factor", "delay-factor",
          lambda m: 100 * m["utilisation"], True,
          Variant("timeout 256 beats (128)", _scheduler(timeout=256)), _PER_JOB),
    Claim("scarce_type", "the all-jobs-matched gate fails no more often than the per-job "
          "gate", "schedule failures", "delay-factor", "delay-factor",
          lambda m: m["schedule_failures"], False,
          Variant("timeout 256 beats (128)", _scheduler(timeout=256)), _PER_JOB),
)


def evaluate_claims(scenarios: Sequence[Scenario], *, first_seed: int = 1, seeds: int = 5,
                    quick: bool = False, claims: Sequence[Claim] = CLAIMS) -> list[dict]:
    """Every claim whose scenario is among ``scenarios``, judged over ``seeds`` seeds (each
    scenario variant runs once per seed and policy); one dictionary per claim with
    ``comparison`` and ``sensitivity`` as in :func:`model.procsched.claims.evaluate_claims`.
    """
    check_claim_run(scenarios, Scenario, "tasksched", first_seed=first_seed, seeds=seeds,
                    claims=claims)
    check_flag("", "quick", quick)
    by_name = {scenario.name: scenario for scenario in scenarios}
    seed_range = range(first_seed, first_seed + seeds)
    cache: dict[tuple, dict] = {}

    def run(key: str, scenario: Scenario, policy: str, seed: int) -> dict:
        if (key, policy, seed) not in cache:
            tasks = build_workload(scenario, seed, quick=quick)
            cache[key, policy, seed] = simulate(scenario, policy, tasks=tasks)
        return cache[key, policy, seed]

    def judge(claim: Claim, key: str, scenario: Scenario) -> dict:
        other_key, other = key, scenario
        if claim.baseline_variant is not None:
            other_key = f"{key}/{claim.baseline_variant.label}"
            other = claim.baseline_variant.apply(scenario)
        mine = [claim.value(run(key, scenario, claim.policy, seed)) for seed in seed_range]
        theirs = [claim.value(run(other_key, other, claim.baseline, seed))
                  for seed in seed_range]
        return compare(mine, theirs, higher_is_better=claim.higher_is_better).as_dict()

    rows = []
    for claim in claims:
        scenario = by_name.get(claim.scenario)
        if scenario is None:
            continue
        baseline = claim.baseline if claim.baseline_variant is None else \
            f"{claim.baseline}, {claim.baseline_variant.label}"
        label = claim.sensitivity.label
        rows.append({"scenario": claim.scenario, "claim": claim.text, "metric": claim.metric,
                     "policy": claim.policy, "baseline": baseline,
                     "higher_is_better": claim.higher_is_better, "seeds": list(seed_range),
                     "comparison": judge(claim, scenario.name, scenario),
                     "sensitivity": {"label": label, "comparison": judge(
                         claim, f"{scenario.name}/{label}", claim.sensitivity.apply(scenario))}})
    return rows


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
