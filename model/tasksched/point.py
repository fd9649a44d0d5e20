"""The hardware task scheduler as one sweep point (:mod:`model.sweep`): one policy of a loaded
scenario on one workload seed, as a flat dict of numbers.

The surface every model package gives a sweep (see :mod:`model.dispatch.point`). A point
gives the numbers of ``gpusched tasksched --config FILE --policy NAME --seed SEED
[--quick]`` (:func:`model.tasksched.sim.simulate` on the workload of that seed).
"""

from model.stats import flat_metrics
from model.tasksched.config import POLICIES, Scenario, load_scenario
from model.tasksched.sim import simulate

__all__ = ["HEADLINE", "load_scenario", "policy_names", "run_point"]

#: The metrics a sweep's report shows by default, each with whether higher is better.
HEADLINE = {"utilisation": True, "share_error_max_pp": False, "latency.mean": False}


def policy_names(scenario: Scenario) -> list[str]:
    """Every policy (a tasksched scenario runs them all)."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a tasksched Scenario, not {scenario!r}")
    return list(POLICIES)


def run_point(scenario: Scenario, policy: str, seed: int, *, quick: bool = False
              ) -> dict[str, float]:
    """``policy`` on the workload built with ``seed`` (``quick`` as ``--quick``), invariants
    checked; every number of its metrics by dotted path (``latency_by_class.block.p99``)."""
    return flat_metrics(simulate(scenario, policy, seed=seed, quick=quick))
