"""The dispatcher as one sweep point (:mod:`model.sweep`): one policy of a loaded scenario on
one workload seed, as a flat dict of numbers.

The surface a sweep uses, the same in every model package (``model/<command>/point.py``):
:func:`load_scenario` (the subcommand's own loader, so a sweep's point is checked exactly as
``gpusched dispatch --config`` checks a file), :func:`policy_names`, :func:`run_point` and
:data:`HEADLINE`. A point gives the same numbers as ``gpusched dispatch --config FILE --policy
NAME --seed SEED [--quick]`` (the same run loop, :func:`model.dispatch.cli.run_scenario`).
"""

from model.dispatch.cli import QUICK_CYCLES, run_scenario
from model.dispatch.config import Scenario, load_scenario, metric_paths
from model.dispatch.kernels import prepare

__all__ = ["HEADLINE", "load_scenario", "policy_names", "run_point"]

#: The metrics a sweep's report shows by default, each with whether higher is better.
HEADLINE = {"throughput": True, "wait.mean": False, "wait.p99": False}


def policy_names(scenario: Scenario) -> list[str]:
    """The scenario's policies, in file order."""
    return [policy.name for policy in scenario.policies]


def run_point(scenario: Scenario, policy: str, seed: int, *, quick: bool = False
              ) -> dict[str, float]:
    """Run ``policy`` on the scenario's workload drawn with ``seed`` (the scenario's cycle
    limit, or ``min(cycles, QUICK_CYCLES)`` with ``quick``, as ``--quick`` does); every
    number of the results by its dotted path (:func:`~model.dispatch.config.metric_paths`,
    the names a claim's ``metric`` uses). The wall-clock time is not a metric."""
    cycles = min(scenario.cycles, QUICK_CYCLES) if quick else scenario.cycles
    scenario, _ = prepare(scenario, cycles)           # a kernel trace becomes WGs here
    result = run_scenario(scenario, seed=seed, cycles=cycles, policies=[policy])[policy]
    metrics = {}
    for path in metric_paths(scenario.gpu.priorities, scenario.channel_count):
        node = result
        for part in path.split("."):
            node = node[part]
        metrics[path] = node
    return metrics
