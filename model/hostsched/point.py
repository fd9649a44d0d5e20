"""Host-side dispatch as one sweep point (:mod:`model.sweep`): one policy of a loaded scenario
on one workload seed, as a flat dict of numbers.

The surface every model package gives a sweep (see :mod:`model.dispatch.point`). A point
gives the numbers of ``gpusched hostsched --config FILE --policy NAME --seed SEED
[--quick]`` (:func:`model.hostsched.claims.run_policies`: the workload and, with a random
static binding, the binding drawn with that seed; invariants checked).
"""

from model.config import check_flag
from model.hostsched.claims import run_policies
from model.hostsched.config import QUICK_SCALE, Scenario, load_scenario
from model.hostsched.policies import policy_names
from model.stats import flat_metrics

__all__ = ["HEADLINE", "load_scenario", "policy_names", "run_point"]

#: The metrics a sweep's report shows by default, each with whether higher is better.
HEADLINE = {"makespan_us": False, "useful_utilisation": True, "task_latency_us.p99": False}


def run_point(scenario: Scenario, policy: str, seed: int, *, quick: bool = False
              ) -> dict[str, float]:
    """``policy`` on the workload drawn with ``seed`` (``quick``: times scaled by
    :data:`~model.hostsched.config.QUICK_SCALE`); every number of its metrics by dotted path
    (the per-thread and per-instance lists kept for plots are left out)."""
    check_flag("", "quick", quick)
    if policy not in policy_names(scenario):
        raise ValueError(f"policy must be one of {', '.join(map(repr, policy_names(scenario)))}, "
                         f"not {policy!r}")
    metrics = run_policies(scenario, seed, scale=QUICK_SCALE if quick else 1.0,
                           policies=[policy])
    return flat_metrics(metrics[policy])
