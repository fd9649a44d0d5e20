"""The seed's claims, measured over several workload seeds with confidence intervals.

A :class:`Claim` names a scenario, the seed's policy, the baseline it is set against, the
metric and which way is better, and one *sensitivity*: the parameter the claim leans on,
changed to another plausible value (:class:`Variant`). :func:`evaluate_claims` runs every
claim's scenario on seeds ``first .. first + seeds - 1`` (the same workloads for the policy
and its baseline), judges the claim with :func:`model.stats.compare` (the paired per-seed
ratio: "holds", "does not hold" or "cannot tell") and does the same with the variant.
"""

import dataclasses
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from model.config import check_claim_run, check_names
from model.procsched.config import POLICIES, Scenario
from model.procsched.policies import make_policy, switch_cost_for
from model.procsched.sim import measure, simulate
from model.procsched.workload import generate_tasks
from model.stats import compare

__all__ = ["CLAIMS", "CLAIM_HEADERS", "SENSITIVITY_HEADERS", "Claim", "Variant", "claim_rows",
           "evaluate_claims", "run_policies", "sensitivity_rows"]


@dataclass(frozen=True)
class Variant:
    """A changed parameter: ``label`` for the table, ``apply`` the scenario it gives."""

    label: str
    apply: Callable[[Scenario], Scenario]


@dataclass(frozen=True)
class Claim:
    """One claim: ``policy`` beats ``baseline`` on ``metric`` in ``scenario``.

    ``value`` reads the metric from :func:`~model.procsched.sim.measure`'s dictionary;
    ``sensitivity`` is the variant of the parameter the claim leans on.
    """

    scenario: str
    text: str
    metric: str
    policy: str
    baseline: str
    value: Callable[[dict], float]
    higher_is_better: bool
    sensitivity: Variant


def _gpu(**changes) -> Callable[[Scenario], Scenario]:
    return lambda scenario: dataclasses.replace(
        scenario, gpu=dataclasses.replace(scenario.gpu, **changes))


def _set(**changes) -> Callable[[Scenario], Scenario]:
    return lambda scenario: dataclasses.replace(scenario, **changes)


def _top_response_p99(metrics: dict) -> float:
    return metrics["per_priority"][metrics["top_priority"]]["response_us"]["p99"]


_DEVICE = Variant("save_to = device (contexts kept in device memory, 300 GB/s)",
                  _gpu(save_to="device"))

#: The claims ``make sim`` measures, in table order. Every value is in the unit its metric
#: names.
CLAIMS = (
    Claim("heavy_switch", "fewer context switches than time sharing at 4 ms",
          "switches/s", "seed", "timeshare", lambda m: m["switches_per_s"], False,
          Variant("t0 = 10 ms", _set(t0_us=10_000))),
    Claim("heavy_switch", "higher efficiency than time sharing at 4 ms", "useful/busy %",
          "seed", "timeshare", lambda m: 100 * m["efficiency"], True, _DEVICE),
    Claim("heavy_switch", "beyond the long slice: efficiency against round-robin at the "
          "seed's mean slice", "useful/busy %", "seed", "timeshare-mean",
          lambda m: 100 * m["efficiency"], True, _DEVICE),
    Claim("crowded_pool", "beyond the long slice: fewer switches than round-robin at the "
          "seed's mean slice", "switches/s", "seed", "timeshare-mean",
          lambda m: m["switches_per_s"], False, Variant("reload = rerank", _set(reload="rerank"))),
    Claim("cached_weights", "fairness within a priority against round-robin at the seed's "
          "mean slice", "Jain, 1 s windows", "seed", "timeshare-mean",
          lambda m: m["jain_window_min"], True, Variant("t0 = 40 ms", _set(t0_us=40_000))),
    Claim("crowded_pool", "no starvation: longest wait of a runnable task against "
          "round-robin at the seed's mean slice", "max wait s", "seed", "timeshare-mean",
          lambda m: m["max_wait_us"] / 1e6, False, Variant("reload = slice",
                                                           _set(reload="slice"))),
    Claim("late_high_priority", "strict priority: less lower-priority work while a higher "
          "priority waits than round-robin at the seed's mean slice", "inversion ms", "seed",
          "timeshare-mean", lambda m: m["inversion_us"] / 1e3, False,
          Variant("priority = reload", _set(priority_rule="reload"))),
    Claim("late_high_priority", "urgent tasks answered as fast as by round-robin at the "
          "seed's mean slice", "top-priority response p99 ms", "seed", "timeshare-mean",
          lambda m: _top_response_p99(m) / 1e3, False, Variant("t0 = 40 ms",
                                                               _set(t0_us=40_000))),
)


def run_policies(scenario: Scenario, seed: int, policies: Sequence[str], *,
                 scale: float = 1.0, check: bool = True) -> dict[str, dict]:
    """``{policy: measure(...)}`` for ``policies`` on the scenario's workload drawn with
    ``seed`` (``scale`` as ``--quick``). ``timeshare-mean`` takes the mean slice of the seed's
    scheduler on the same workload, which is run for it when not listed."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a procsched Scenario, not {scenario!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an integer, not {seed!r}")
    check_names("", "policies", policies, POLICIES)
    specs = generate_tasks(scenario, random.Random(seed), scale=scale)
    window = max(1, round(scenario.fairness_window_us * scale))
    order = list(policies)
    if "timeshare-mean" in order and "seed" not in order:
        order.insert(order.index("timeshare-mean"), "seed")
    results, mean_slice = {}, None
    for name in order:
        outcome = simulate(specs, make_policy(name, scenario, mean_slice_us=mean_slice),
                           switch_cost_for(name, scenario), name=name, check=check)
        results[name] = measure(outcome, window)
        if name == "seed":
            mean_slice = results[name]["mean_slice_us"]
    return {name: results[name] for name in policies}


def evaluate_claims(scenarios: Sequence[Scenario], *, first_seed: int = 1, seeds: int = 5,
                    scale: float = 1.0, claims: Sequence[Claim] = CLAIMS) -> list[dict]:
    """Every claim whose scenario is among ``scenarios``, judged over ``seeds`` seeds.

    Returns one dictionary per claim: its fields, ``seeds``, ``comparison`` (the
    :class:`model.stats.Comparison` as a dict) and ``sensitivity`` (``label`` and the same
    comparison under the variant). Each scenario (and variant) runs once per seed with every
    policy its claims need.
    """
    check_claim_run(scenarios, Scenario, "procsched", first_seed=first_seed, seeds=seeds,
                    scale=scale, claims=claims)
    by_name = {scenario.name: scenario for scenario in scenarios}
    chosen = [claim for claim in claims if claim.scenario in by_name]
    needed: dict[str, tuple[Scenario, list[str]]] = {}
    for claim in chosen:
        for key, scenario in ((claim.scenario, by_name[claim.scenario]),
                              (f"{claim.scenario}/{claim.sensitivity.label}",
                               claim.sensitivity.apply(by_name[claim.scenario]))):
            policies = needed.setdefault(key, (scenario, []))[1]
            policies += [name for name in (claim.policy, claim.baseline) if name not in policies]
    seed_range = range(first_seed, first_seed + seeds)
    runs = {(key, seed): run_policies(scenario, seed, policies, scale=scale)
            for key, (scenario, policies) in needed.items() for seed in seed_range}

    def judge(key: str, claim: Claim) -> dict:
        mine = [claim.value(runs[key, seed][claim.policy]) for seed in seed_range]
        theirs = [claim.value(runs[key, seed][claim.baseline]) for seed in seed_range]
        return compare(mine, theirs, higher_is_better=claim.higher_is_better).as_dict()

    return [{"scenario": claim.scenario, "claim": claim.text, "metric": claim.metric,
             "policy": claim.policy, "baseline": claim.baseline,
             "higher_is_better": claim.higher_is_better, "seeds": list(seed_range),
             "comparison": judge(claim.scenario, claim),
             "sensitivity": {"label": claim.sensitivity.label,
                             "comparison": judge(f"{claim.scenario}/{claim.sensitivity.label}",
                                                 claim)}}
            for claim in chosen]


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
