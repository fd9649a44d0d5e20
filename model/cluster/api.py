"""Cluster placement from Python: :func:`run` takes a scenario (or its file) and gives the
numbers ``gpusched cluster --config FILE [--policy NAME] --seed SEED`` writes to its JSON.

    >>> import model.cluster as cluster
    >>> result = cluster.run("configs/cluster/mixed_steady.toml", "seed-004", seeds=1)
    >>> result.summary["seed-004"]["energy_kwh"]["mean"]

Every setting comes from the scenario unless given as a keyword: ``seeds``, ``tie_break``
(``"name"``, the FGD artifact's rule, or ``"random"``), ``backfill``, ``inflation_ratio``,
``fgd_popularity``, ``pwr_fgd_weights`` (a pair of integers 0..1000, not both 0), checked as
the TOML reader checks them; ``quick`` is ``--quick``.
"""

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

from model.cluster.cli import _inflated, _run_one, check_claims, prepare, summarise
from model.cluster.config import POLICY_NAMES, TIE_BREAKS, Scenario, load_scenario

__all__ = ["ClusterResult", "run"]

#: Scenario settings :func:`run` accepts as keywords, and how each is checked.
OVERRIDES = ("seeds", "tie_break", "backfill", "inflation_ratio", "fgd_popularity",
             "pwr_fgd_weights")


@dataclass(frozen=True)
class ClusterResult:
    """What :func:`run` returns: the scenario as run, the seeds, and ``entry``, the object
    the command's JSON ``scenarios`` entry is written from. ``summary`` (policy -> metric ->
    mean and 95 % interval over the seeds), ``policies`` (the first seed's full results) and
    ``claims`` read its parts; ``result[policy]`` is one policy's first-seed results."""

    scenario: Scenario
    seeds: tuple[int, ...]
    entry: dict

    @property
    def summary(self) -> dict:
        return self.entry["summary"]

    @property
    def policies(self) -> dict:
        return self.entry["policies"]

    @property
    def claims(self) -> list:
        return self.entry["claims"]

    def __getitem__(self, policy: str) -> dict:
        return self.entry["policies"][policy]


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check(name: str, value) -> None:
    """The TOML reader's checks of one override, as TypeError/ValueError naming it."""
    if name == "seeds":
        if not _is_int(value):
            raise TypeError(f"seeds must be an integer in 1..1000, not {value!r}")
        if not 1 <= value <= 1000:
            raise ValueError(f"seeds must be an integer in 1..1000, not {value!r}")
    elif name == "tie_break":
        if value not in TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {', '.join(map(repr, TIE_BREAKS))}, "
                             f"not {value!r}")
    elif name == "backfill":
        if not isinstance(value, bool):
            raise TypeError(f"backfill must be True or False, not {value!r}")
    elif name in ("inflation_ratio", "fgd_popularity"):
        low, high = (0.01, 10.0) if name == "inflation_ratio" else (0.01, 1.0)
        accepted = f"a number in {low:g}..{high:g}"
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise TypeError(f"{name} must be {accepted}, not {value!r}")
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(f"{name} must be {accepted}, not {value!r}")
    elif name == "pwr_fgd_weights":
        accepted = "a pair of integers in 0..1000, not both 0"
        if (not isinstance(value, tuple | list) or len(value) != 2
                or not all(_is_int(item) for item in value)):
            raise TypeError(f"pwr_fgd_weights must be {accepted}, not {value!r}")
        if not all(0 <= item <= 1000 for item in value) or sum(value) == 0:
            raise ValueError(f"pwr_fgd_weights must be {accepted}, not {value!r}")


def _scenario(scenario_or_path) -> Scenario:
    if isinstance(scenario_or_path, Scenario):
        return scenario_or_path
    if isinstance(scenario_or_path, str | Path):
        return load_scenario(scenario_or_path)
    raise TypeError(f"scenario_or_path must be a cluster Scenario or the path of its TOML "
                    f"file, not {scenario_or_path!r}")


def run(scenario_or_path, policy=None, *, seed: int | None = None, quick: bool = False,
        **overrides) -> ClusterResult:
    """Run a scenario as ``gpusched cluster`` does and return its :class:`ClusterResult`.

    ``policy``: a policy name of the scenario, a list of them, or ``None`` for all (the
    scenario's ``policies``). ``seed``: the first seed (``None``: 1, the command's default);
    the scenario's ``seeds`` seeds from it are run. ``quick``: as ``--quick`` (one seed, the
    scenario's quick sizes). ``overrides``: scenario settings, see the module's docstring.
    Raises ``TypeError``/``ValueError`` naming the argument and what is accepted for
    anything the command line would refuse, and :class:`~model.config.ConfigError` for a bad
    scenario file.
    """
    scenario = _scenario(scenario_or_path)
    seed = 1 if seed is None else seed
    if not _is_int(seed):
        raise TypeError(f"seed must be an integer or None, not {seed!r}")
    if not isinstance(quick, bool):
        raise TypeError(f"quick must be True or False, not {quick!r}")
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise TypeError(f"run() got unknown setting(s) {', '.join(map(repr, unknown))}; "
                        f"accepted: {', '.join(OVERRIDES)}")
    for name, value in overrides.items():
        _check(name, value)
    if overrides.get("backfill") and scenario.experiment == "inflation":
        raise ValueError("backfill has no meaning in the inflation experiment (pods never "
                         "wait there)")
    if "pwr_fgd_weights" in overrides:
        overrides["pwr_fgd_weights"] = tuple(overrides["pwr_fgd_weights"])
    if overrides:
        scenario = dataclasses.replace(scenario, **overrides)
    if scenario.claims and scenario.seeds < 2 and "seeds" in overrides:
        scenario = dataclasses.replace(scenario, claims=())   # one seed judges nothing
    chosen = [policy] if isinstance(policy, str) else policy
    if chosen is None:
        chosen = list(scenario.policies)
    if not isinstance(chosen, list | tuple) or not chosen:
        raise TypeError(f"policy must be None, a policy name or a non-empty list of them, "
                        f"not {policy!r}")
    for name in chosen:
        if name not in scenario.policies:
            known = ", ".join(map(repr, scenario.policies))
            extra = (" (a policy of the model, but not of this scenario; add it to its "
                     "policies)" if name in POLICY_NAMES else "")
            raise ValueError(f"policy must be None or among the scenario's policies "
                             f"({known}), not {name!r}{extra}")
    chosen = [name for name in scenario.policies if name in chosen]
    check_claims(scenario)
    seeds = [seed] if quick else [seed + offset for offset in range(scenario.seeds)]
    per_policy: dict[str, list[dict]] = {name: [] for name in chosen}
    first = None
    for current in seeds:
        prepared = prepare(scenario, current, quick=quick)
        first = first or prepared
        pods = _inflated(prepared, current) if scenario.experiment == "inflation" else None
        runs = [_run_one(prepared, name, current, False, pods) for name in chosen]
        if scenario.experiment == "inflation":
            for name, one in zip(chosen, runs, strict=True):
                per_policy[name].append(one.results())
        else:
            horizon = max(one.makespan_s for one in runs)
            for name, one in zip(chosen, runs, strict=True):
                per_policy[name].append(one.results(horizon))
    return ClusterResult(scenario, tuple(seeds), summarise(first, per_policy, seeds))
