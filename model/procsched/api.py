"""The process scheduler from Python: :func:`run` takes a scenario (or its file) and gives the
numbers ``gpusched procsched --config FILE [--policy NAME] --seed SEED`` gives.

    >>> import model.procsched as procsched
    >>> results = procsched.run("configs/procsched/crowded_pool.toml", "seed", quick=True)
    >>> results["seed"]["switches_per_s"]                # the metrics of measure()

Every setting comes from the scenario unless given as a keyword: a field of
:class:`~model.procsched.config.Scenario` (``t0_us``, ``cache_tasks``, ``reload``,
``priority_rule`` ...) or of its :class:`~model.procsched.config.GpuContext`
(``switch_us``, ``save_to`` ...), checked as the TOML reader checks it.
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from model.config import run_settings
from model.procsched.claims import evaluate_claims, run_policies
from model.procsched.cli import QUICK_SCALE
from model.procsched.config import GpuContext, Scenario

__all__ = ["Results", "run"]

_SCENARIO_FIELDS = tuple(field.name for field in dataclasses.fields(Scenario)
                         if field.name not in ("name", "gpu", "groups"))
_GPU_FIELDS = tuple(field.name for field in dataclasses.fields(GpuContext))


@dataclass(frozen=True)
class Results:
    """What :func:`run` returns: the scenario as run, the workload seed, ``policies``
    (policy -> the metrics of :func:`~model.procsched.sim.measure`, the objects the command's
    JSON is written from) and ``claims`` (the claims' rows over ``seeds`` seeds, or ``None``
    when not asked for). ``results[policy]`` reads one policy's metrics."""

    scenario: Scenario
    seed: int
    policies: dict
    claims: list | None = None

    def __getitem__(self, policy: str) -> dict:
        return self.policies[policy]


def _scenario(scenario_or_path) -> Scenario:
    if isinstance(scenario_or_path, Scenario):
        return scenario_or_path
    if isinstance(scenario_or_path, str | Path):
        return Scenario.from_toml(scenario_or_path)
    raise TypeError(f"scenario_or_path must be a procsched Scenario or the path of its TOML "
                    f"file, not {scenario_or_path!r}")


def run(scenario_or_path, policy: str | None = None, *, seed: int | None = None,
        quick: bool = False, claims: bool = False, seeds: int = 5, **overrides) -> Results:
    """Run a scenario as ``gpusched procsched`` does and return its :class:`Results`.

    ``policy``: one of the scenario's ``policies``, or ``None`` for all of them (on the same
    workload; ``timeshare-mean`` runs the seed's scheduler first for its slice). ``seed``: the
    workload seed (``None``: 1, the command's default). ``quick``: as ``--quick``.
    ``claims``: also judge the seed's claims over ``seeds`` seeds from ``seed`` (off by
    default: it runs every claim's scenario ``2 x seeds`` times). ``overrides``: scenario
    settings, see the module's docstring. Raises ``TypeError``/``ValueError`` naming the
    argument for anything the command line would refuse.
    """
    scenario = _scenario(scenario_or_path)
    scenario, seed = run_settings(scenario, seed=seed, quick=quick, claims=claims,
                                  seeds=seeds, overrides=overrides,
                                  fields=_SCENARIO_FIELDS, nested="gpu",
                                  nested_fields=_GPU_FIELDS)
    if policy is not None and policy not in scenario.policies:
        raise ValueError(f"policy must be None or one of the scenario's policies "
                         f"({', '.join(map(repr, scenario.policies))}), not {policy!r}")
    policies = scenario.policies if policy is None else (policy,)
    scale = QUICK_SCALE if quick else 1.0
    results = run_policies(scenario, seed, policies, scale=scale)
    judged = (evaluate_claims([scenario], first_seed=seed, seeds=seeds, scale=scale)
              if claims else None)
    return Results(scenario, seed, results, judged)
