"""A sweep's points: the cross product built, filtered, every point's config resolved and
checked by its command's own loader, and every point keyed -- all before anything runs.

A point is (axis values, policy, seed). Its **config** is the base document with ``[set]``
and its axis values applied; the config hash covers that document, the command, the base
file's name (relative paths and, for some models, random streams depend on it) and the
SHA-256 of every file the document names (a trace): change a trace and its points are new.
Its **key** in the results store covers the config hash, the policy, the seed, ``quick``, the
model's code version (:func:`model.sweep.worker.code_version`) and, for a coupled model, the
policies it runs with. Equal keys are equal results, whichever sweep asked for them.

Checks, each a :class:`~model.sweep.spec.SweepError` of one line that names the axis: a path
that cannot be applied (an index past the end), a value the loader refuses (tried with that
axis alone to tell which axis it is; a combination only the other axes' values make wrong is
named as the combination), a policy the resolved scenario does not have, a filter that
fails on a point or removes every point.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from model.config import ConfigError, in_memory
from model.sweep.spec import Sweep, SweepError, check_points, value_text
from model.sweep.worker import code_version, point_module

__all__ = ["Plan", "Point", "Task", "build_plan", "canonical", "referenced_files"]


def canonical(data) -> str:
    """``data`` as canonical JSON (sorted keys, no spaces; dates as text): what is hashed."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Point:
    """One point: ``axes`` holds its values in the order of the sweep's axes; ``group`` the
    policies it runs with (a coupled model) or ``None``."""

    index: int
    axes: tuple
    policy: str
    seed: int
    config: str
    key: str
    group: tuple[str, ...] | None = None

    def label(self, names) -> str:
        parts = [f"{name} = {value_text(value)}" for name, value in zip(names, self.axes,
                                                                          strict=True)]
        return ", ".join([*parts, f"policy {self.policy}", f"seed {self.seed}"])


@dataclass(frozen=True)
class Task:
    """What one worker call runs: points of one config and seed (several for a coupled
    model's group), and the plain dict :func:`model.sweep.worker.run_task` takes."""

    points: tuple[Point, ...]
    payload: dict


@dataclass
class Plan:
    """A sweep's points, checked, with their resolved configs by hash."""

    sweep: Sweep
    code: str
    points: list[Point]
    documents: dict[str, dict]
    inputs: dict[str, dict[str, str]]
    headline: dict[str, bool]

    @property
    def keys(self) -> list[str]:
        return list(dict.fromkeys(point.key for point in self.points))

    def tasks(self, done: set[str] = frozenset()) -> list[Task]:
        """The tasks that compute every point whose key is not in ``done`` (each key once)."""
        groups: dict[tuple, list[Point]] = {}
        seen = set()
        for point in self.points:
            if point.key in done or point.key in seen:
                continue
            seen.add(point.key)
            unit = ((point.config, point.seed, point.group) if point.group
                    else (point.key,))
            groups.setdefault(unit, []).append(point)
        tasks = []
        for points in groups.values():
            first = points[0]
            tasks.append(Task(tuple(points), {
                "command": self.sweep.command, "base": str(self.sweep.base),
                "document": self.documents[first.config], "config": first.config,
                "policies": [point.policy for point in points], "seed": first.seed,
                "quick": self.sweep.quick, "code": self.code, "group": first.group is not None}))
        return tasks


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def referenced_files(document, folder: Path) -> dict[str, str]:
    """``{text: sha256}`` of every string in ``document`` that names a file (relative to
    ``folder``, where the loaders resolve them, or absolute)."""
    found: dict[str, str] = {}

    def walk(node) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str) and node and len(node) < 4096 and "\n" not in node:
            try:
                candidate = folder / node
                if candidate.is_file():
                    found[node] = _file_hash(candidate)
            except (OSError, ValueError):
                pass

    walk(document)
    return found


class _Loader:
    """Loads resolved documents through the command's own loader, once per config hash."""

    def __init__(self, sweep: Sweep):
        self.sweep = sweep
        self.module = point_module(sweep.command)
        self.folder = sweep.base.parent
        self.loaded: dict[str, object] = {}
        self.documents: dict[str, dict] = {}
        self.inputs: dict[str, dict[str, str]] = {}

    def config_hash(self, document: dict) -> str:
        inputs = referenced_files(document, self.folder)
        digest = _sha256(canonical({"command": self.sweep.command,
                                    "base": (self.sweep.base.name if self.sweep.named_base
                                             else None),
                                    "document": document, "inputs": inputs}))
        self.inputs.setdefault(digest, inputs)
        return digest

    def load(self, document: dict) -> tuple[str, object]:
        """``(config hash, scenario)``; the loader's :class:`ConfigError` (or ``ValueError``
        from a model's own checks) propagates."""
        digest = self.config_hash(document)
        if digest not in self.loaded:
            try:
                with in_memory(self.sweep.base, document):
                    scenario = self.module.load_scenario(self.sweep.base)
            except (ConfigError, ValueError) as error:
                self.loaded[digest] = error
            else:
                self.loaded[digest] = scenario
                self.documents[digest] = document
        result = self.loaded[digest]
        if isinstance(result, Exception):
            raise result
        return digest, result

    def fails(self, values, *, overrides: bool = True) -> Exception | None:
        """The error of the base with the overrides (unless ``overrides`` is false) and
        ``values``, or None when it loads."""
        try:
            self.load(self.sweep.resolved(values, overrides=overrides))
        except (ConfigError, ValueError) as error:
            return error
        return None


def _refused(sweep: Sweep, loader: _Loader, combination: tuple, error: Exception
             ) -> SweepError:
    """The one-line error for a config the loader refuses, naming what made it wrong: the
    base scenario, an override of ``[set]``, one axis (tried alone), or the combination."""
    where = sweep.file
    if not combination:
        # The base with the overrides is refused: the base itself, or which override?
        if loader.fails((), overrides=False) is not None:
            return SweepError(f"{where}: scenario: the base scenario is refused: "
                              f"{loader.fails((), overrides=False)}")
        for path, value in sweep.overrides:
            alone = loader.fails([(path, value)], overrides=False)
            if alone is not None:
                return SweepError(f"{where}: set.{path} = {value_text(value)}: {alone}")
        return SweepError(f"{where}: set: the overrides together: {error}")
    pairs = list(zip(sweep.axis_names, combination, strict=True))
    for path, value in pairs:
        alone = loader.fails([(path, value)])
        if alone is not None:
            return SweepError(f"{where}: axes.{path} = {value_text(value)}: {alone}")
    shown = ", ".join(f"{path} = {value_text(value)}" for path, value in pairs)
    return SweepError(f"{where}: axes: the combination {shown}: {error}")


def build_plan(sweep: Sweep) -> Plan:
    """Every point of ``sweep``, checked and keyed (see the module docstring)."""
    loader = _Loader(sweep)
    module = loader.module
    code = code_version(sweep.command)
    try:
        _, base = loader.load(sweep.resolved())
    except (ConfigError, ValueError) as error:
        raise _refused(sweep, loader, (), error) from None
    base_names = module.policy_names(base)
    if sweep.policies is not None:
        unknown = [name for name in sweep.policies if name not in base_names]
        if unknown:
            raise SweepError(f"{sweep.file}: policies: {unknown[0]!r} is not a policy of the "
                             f"scenario (known: {', '.join(base_names)})")
    check_points(sweep.file, sweep.axes, len(sweep.policies or base_names), len(sweep.seeds))
    coupled = getattr(module, "coupled", None)
    points: list[Point] = []
    combinations = list(itertools.product(*(axis.values for axis in sweep.axes)))
    considered = 0
    for combination in combinations:
        values = list(zip(sweep.axis_names, combination, strict=True))
        named = dict(values)

        def kept(policies, named=named):
            chosen = []
            for policy in policies:
                for seed in sweep.seeds:
                    if sweep.filter is None:
                        chosen.append((policy, seed))
                        continue
                    try:
                        keep = sweep.filter.keep({**named, "policy": policy, "seed": seed})
                    except ValueError as error:
                        raise SweepError(f"{sweep.file}: filter {error}") from None
                    if keep:
                        chosen.append((policy, seed))
            return chosen

        candidates = list(sweep.policies or base_names)
        considered += len(candidates) * len(sweep.seeds)
        if not kept(candidates):
            continue
        try:
            document = sweep.resolved(values)
        except ValueError as error:
            for path, value in values:
                try:
                    sweep.resolved([(path, value)])
                except ValueError as alone:
                    raise SweepError(f"{sweep.file}: axes.{path} = {value_text(value)}: "
                                     f"{alone}") from None
            raise SweepError(f"{sweep.file}: axes: {error}") from None
        try:
            config, scenario = loader.load(document)
        except (ConfigError, ValueError) as error:
            raise _refused(sweep, loader, combination, error) from None
        names = module.policy_names(scenario)
        if sweep.policies is not None:
            missing = [name for name in sweep.policies if name not in names]
            if missing:
                shown = ", ".join(f"{path} = {value_text(value)}" for path, value in values)
                raise SweepError(f"{sweep.file}: policies: {missing[0]!r} is not a policy of "
                                 f"the scenario at {shown} (it has: {', '.join(names)})")
        chosen = kept(sweep.policies or names)
        group = None
        if coupled is not None and coupled(scenario):
            group = tuple(dict.fromkeys(policy for policy, _ in chosen))
        for policy, seed in chosen:
            runs_with = None
            if group is not None:
                runs_with = tuple(p for p in group if (p, seed) in chosen)
            key = _sha256(canonical({"config": config, "policy": policy, "seed": seed,
                                     "quick": sweep.quick, "code": code,
                                     "with": runs_with}))
            points.append(Point(len(points), combination, policy, seed, config, key,
                                runs_with))
    if not points:
        raise SweepError(f"{sweep.file}: filter: removes every one of the {considered} points; "
                         f"the sweep has none left")
    headline = dict(getattr(module, "HEADLINE", {}))
    headline.update({name: True for name in sweep.report.higher_is_better})
    headline.update({name: False for name in sweep.report.lower_is_better})
    used = {point.config for point in points}
    return Plan(sweep, code, points, {h: d for h, d in loader.documents.items() if h in used},
                {h: loader.inputs[h] for h in used}, headline)
