"""The GPU process scheduler as one sweep point (:mod:`model.sweep`): one policy of a loaded
scenario on one workload seed, as a flat dict of numbers.

The surface every model package gives a sweep (see :mod:`model.dispatch.point`). A point
gives the numbers of ``gpusched procsched --config FILE --policy NAME --seed SEED
[--quick]``: the same workload, policies and measurement
(:func:`model.procsched.claims.run_policies`); ``timeshare-mean`` runs the seed's scheduler
first on the same workload for its slice, as the command does.
"""

from model.config import check_choice, check_flag
from model.procsched.claims import run_policies
from model.procsched.cli import QUICK_SCALE
from model.procsched.config import POLICIES, Scenario
from model.stats import flat_metrics

__all__ = ["HEADLINE", "load_scenario", "policy_names", "run_point"]

#: The metrics a sweep's report shows by default, each with whether higher is better.
HEADLINE = {"switches_per_s": False, "efficiency": True, "max_wait_us": False,
            "jain_window_min": True}


def load_scenario(path) -> Scenario:
    """The subcommand's own loader (:meth:`Scenario.from_toml`)."""
    return Scenario.from_toml(path)


def policy_names(scenario: Scenario) -> list[str]:
    """The scenario's policies, in file order."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a procsched Scenario, not {scenario!r}")
    return list(scenario.policies)


def run_point(scenario: Scenario, policy: str, seed: int, *, quick: bool = False
              ) -> dict[str, float]:
    """``policy`` on the workload drawn with ``seed`` (``quick``: every time scaled by
    :data:`~model.procsched.cli.QUICK_SCALE`); every number of its metrics by dotted path
    (``per_priority.2.response_us.p99``)."""
    check_flag("", "quick", quick)
    check_choice("", "policy", policy, POLICIES)
    metrics = run_policies(scenario, seed, [policy], scale=QUICK_SCALE if quick else 1.0)
    return flat_metrics(metrics[policy])
