"""Host-side dispatch from Python: :func:`run` takes a scenario (or its file) and gives the
numbers ``gpusched hostsched --config FILE [--policy NAME] --seed SEED`` gives.

    >>> import model.hostsched as hostsched
    >>> results = hostsched.run("configs/hostsched/transcode.toml", "seed003-arrival")
    >>> results["seed003-arrival"]["makespan_us"]

Every setting comes from the scenario unless given as a keyword: a field of
:class:`~model.hostsched.config.Scenario` (``batch``, ``ship_state``, ``binding`` ...) or of
its :class:`~model.hostsched.config.SystemParams` (``instances``, ``instance_cache`` ...),
checked as the TOML reader checks it.
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from model.config import run_settings
from model.hostsched.claims import evaluate_claims, run_policies
from model.hostsched.config import QUICK_SCALE, Scenario, SystemParams, load_scenario
from model.hostsched.policies import policy_names

__all__ = ["Results", "run"]

_SCENARIO_FIELDS = tuple(field.name for field in dataclasses.fields(Scenario)
                         if field.name not in ("name", "system", "groups"))
_SYSTEM_FIELDS = tuple(field.name for field in dataclasses.fields(SystemParams))


@dataclass(frozen=True)
class Results:
    """What :func:`run` returns: the scenario as run, the workload seed, ``policies``
    (policy -> its metrics, the objects the command's JSON is written from; keys starting
    with ``_`` hold the per-thread and per-instance data of the plots) and ``claims`` (the
    claims' rows over ``seeds`` seeds, or ``None`` when not asked for). ``results[policy]``
    reads one policy's metrics."""

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
    raise TypeError(f"scenario_or_path must be a hostsched Scenario or the path of its TOML "
                    f"file, not {scenario_or_path!r}")


def run(scenario_or_path, policy: str | None = None, *, seed: int | None = None,
        quick: bool = False, claims: bool = False, seeds: int = 5, **overrides) -> Results:
    """Run a scenario as ``gpusched hostsched`` does and return its :class:`Results`.

    ``policy``: one of :func:`~model.hostsched.policies.policy_names` (``seed003-arrival``,
    ``seed003-priority``, ``static-rr``, ``work-queue``), or ``None`` for all of them (on
    the same workload). ``seed``: the workload seed, also the random binding's (``None``: 1,
    the command's default). ``quick``: as ``--quick``. ``claims``: also judge the seed's
    claims over ``seeds`` seeds from ``seed`` (off by default). ``overrides``: scenario
    settings, see the module's docstring. Raises ``TypeError``/``ValueError`` naming the
    argument for anything the command line would refuse.
    """
    scenario = _scenario(scenario_or_path)
    scenario, seed = run_settings(scenario, seed=seed, quick=quick, claims=claims,
                                  seeds=seeds, overrides=overrides,
                                  fields=_SCENARIO_FIELDS, nested="system",
                                  nested_fields=_SYSTEM_FIELDS)
    names = policy_names(scenario)
    if policy is not None and policy not in names:
        raise ValueError(f"policy must be None or one of {', '.join(map(repr, names))}, "
                         f"not {policy!r}")
    scale = QUICK_SCALE if quick else 1.0
    results = run_policies(scenario, seed, scale=scale,
                           policies=None if policy is None else [policy])
    judged = (evaluate_claims([scenario], first_seed=seed, seeds=seeds, scale=scale)
              if claims else None)
    return Results(scenario, seed, results, judged)
