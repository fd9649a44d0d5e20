"""Cluster placement as one sweep point (:mod:`model.sweep`): one policy of a loaded scenario
on one seed, as a flat dict of numbers.

The surface every model package gives a sweep (see :mod:`model.dispatch.point`), and one
more: in the timed experiment the policies of a seed are **coupled** -- each one's energy is
integrated over the latest makespan among them, so that all cover the same time
(:func:`model.cluster.cli.run_scenario`) -- so a sweep runs the policies it selects for a
configuration and seed together, through :func:`run_group`, and a point's numbers are those
of ``gpusched cluster --config FILE --policy A --policy B ... --seed SEED``. The inflation
experiment has no such coupling: its points run one policy each.
"""

from model.cluster.cli import prepare, run_scenario
from model.cluster.config import Scenario, load_scenario
from model.stats import flat_metrics

__all__ = ["HEADLINE", "coupled", "load_scenario", "policy_names", "run_group", "run_point"]

#: The metrics a sweep's report shows by default, each with whether higher is better (those
#: of the scenario's experiment are shown).
HEADLINE = {"energy_kwh": False, "wait_s.mean": False, "card_utilisation": True,
            "allocation_at_full": True, "fragmentation_rate_at_full": False,
            "watts_per_allocated_gpu": False}


def policy_names(scenario: Scenario) -> list[str]:
    """The scenario's policies, in file order."""
    return list(scenario.policies)


def coupled(scenario: Scenario) -> bool:
    """Whether the policies of one seed must run together (the timed experiment's common
    energy horizon)."""
    return scenario.experiment == "timed"


def run_group(scenario: Scenario, policies, seed: int, *, quick: bool = False
              ) -> dict[str, dict[str, float]]:
    """``policies`` on the cluster and pods of ``seed`` (``quick`` as ``--quick``), run
    together: ``{policy: every number of its results by dotted path}``."""
    prepared = prepare(scenario, seed, quick=quick)
    results = run_scenario(prepared, seed, policies=list(policies))
    return {policy: flat_metrics(results[policy]) for policy in policies}


def run_point(scenario: Scenario, policy: str, seed: int, *, quick: bool = False
              ) -> dict[str, float]:
    """One policy alone (in the timed experiment, energy over its own makespan)."""
    return run_group(scenario, [policy], seed, quick=quick)[policy]
