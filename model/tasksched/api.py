"""The task scheduler from Python: :func:`run` takes a scenario (or its file) and gives the
numbers ``gpusched tasksched --config FILE [--policy NAME] --seed SEED`` gives.

    >>> import model.tasksched as tasksched
    >>> results = tasksched.run("configs/tasksched/dependency_chains.toml", "delay-factor")
    >>> results["delay-factor"]["utilisation"]          # the JSON's metrics of that policy

Every setting comes from the scenario unless given as a keyword: a field of
:class:`~model.tasksched.config.Scenario` (``quick_divisor``) or of its
:class:`~model.tasksched.config.SchedulerConfig` (``timeout``, ``gate``, ``reserve_order``,
``livelock_rounds`` ...), checked as the TOML reader checks it.
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from model.config import run_settings
from model.tasksched.claims import evaluate_claims
from model.tasksched.config import POLICIES, Scenario, SchedulerConfig, load_scenario
from model.tasksched.sim import simulate
from model.tasksched.workload import build_workload

__all__ = ["Results", "run"]

_SCENARIO_FIELDS = ("quick_divisor", "description")
_SCHEDULER_FIELDS = tuple(field.name for field in dataclasses.fields(SchedulerConfig))


@dataclass(frozen=True)
class Results:
    """What :func:`run` returns: the scenario as run, the workload seed, ``policies``
    (policy -> the metrics of :func:`~model.tasksched.sim.simulate`, the objects the
    command's JSON is written from) and ``claims`` (the claims' rows over ``seeds`` seeds, or
    ``None`` when not asked for). ``results[policy]`` reads one policy's metrics."""

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
        return load_scenario(scenario_or_path)
    raise TypeError(f"scenario_or_path must be a tasksched Scenario or the path of its TOML "
                    f"file, not {scenario_or_path!r}")


def run(scenario_or_path, policy: str | None = None, *, seed: int | None = None,
        quick: bool = False, claims: bool = False, seeds: int = 5, **overrides) -> Results:
    """Run a scenario as ``gpusched tasksched`` does and return its :class:`Results`.

    ``policy``: one of :data:`~model.tasksched.config.POLICIES`, or ``None`` for all three
    (on the same workload). ``seed``: the workload seed (``None``: 1, the command's default).
    ``quick``: as ``--quick``. ``claims``: also judge the seed's claims over ``seeds`` seeds
    from ``seed`` (as the command does after its tables; off by default because it runs
    every claim's scenario ``2 x seeds`` times). ``overrides``: scenario settings, see the
    module's docstring. Raises ``TypeError``/``ValueError`` naming the argument for anything
    the command line would refuse.
    """
    scenario = _scenario(scenario_or_path)
    if policy is not None and policy not in POLICIES:
        raise ValueError(f"policy must be None or one of {', '.join(map(repr, POLICIES))}, "
                         f"not {policy!r}")
    scenario, seed = run_settings(scenario, seed=seed, quick=quick, claims=claims,
                                  seeds=seeds, overrides=overrides,
                                  fields=_SCENARIO_FIELDS, nested="scheduler",
                                  nested_fields=_SCHEDULER_FIELDS)
    tasks = build_workload(scenario, seed, quick=quick)
    policies = POLICIES if policy is None else (policy,)
    results = {name: simulate(scenario, name, tasks=tasks) for name in policies}
    judged = (evaluate_claims([scenario], first_seed=seed, seeds=seeds, quick=quick)
              if claims else None)
    return Results(scenario, seed, results, judged)
