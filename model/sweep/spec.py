"""The sweep file: a base scenario, overrides, axes, policies, seeds, a filter, the report.

::

    name = "circuit latency"                       # optional: the file's stem
    scenario = "../dispatch/circuit_variants.toml"  # the base: any subcommand's scenario file
    command = "dispatch"                           # optional when the base is configs/<command>/
    policies = ["exact", "grouped /4"]             # optional: every policy the base lists
    seeds = [1, 2, 3, 4, 5]                        # or seeds = 5, meaning 1..5
    quick = false                                  # the subcommand's --quick
    filter = "policy != 'exact' or policies.circuit_latency == 0"   # optional

    [set]                                          # fixed changes to the base, every point
    cycles = 20000

    [axes]                                         # the cross product of these
    policies.circuit_latency = [0, 1, 2, 4]
    "channels[1].arrival" = [0.02, 0.05]

    [report]                                       # optional: what `sweep report` shows
    metrics = ["throughput", "wait.mean"]
    baseline = { policy = "exact" }                # per-seed ratios against this point
    higher_is_better = ["throughput"]              # directions of metrics the model lacks
    lower_is_better = []
    [[report.plots]]
    metric = "wait.mean"
    x = "policies.circuit_latency"                 # a line per policy, 95 % bands
    # y = "gpu.aps"                                # with y: a heat map over x and y
    # ratio = true                                 # the per-seed ratio to the baseline

**A field path** is a config field by its dotted path, each part a key or ``key[i]``:
``gpu.aps``, ``cycles``, ``channels[1].arrival``, ``policies[0].windows``,
``channels.mix[3]``. A key that holds an *array of tables* (``[[policies]]``,
``[[channels]]``, ``[[tasks]]``) without an index means **every element**:
``policies.circuit_latency = 2`` sets it in every ``[[policies]]`` table; ``[i]`` picks one
(0-based). A missing table on the way is created (the loader then says whether it is known);
an index past the end, or a path through a value that is not a table, is an error. In TOML a
path with brackets must be quoted; plain dotted keys may be written bare (TOML reads them as
nested tables, which come back as the same path).

**The filter** is an expression over the axes (by path), ``policy`` and ``seed`` with
``and or not``, comparisons (``== != < <= > >= in``), arithmetic and literals; a point is kept
when it is true. Anything else (calls, attributes of values) is refused when the file is read.
"""

from __future__ import annotations

import ast
import copy
import math
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path

from model.config import ConfigError, Fields, load_toml

__all__ = ["MAX_POINTS", "Axis", "Filter", "PlotSpec", "ReportSpec", "Sweep", "SweepError",
           "apply_path", "check_points", "flatten_table", "load_sweep", "parse_path",
           "value_text"]

#: The most points a sweep may have (the axes' combinations x policies x seeds, counted before
#: the filter), checked before any point is built: 100 times the largest shipped sweep (the
#: 1,000-point noop drill): every point is built, checked and keyed in memory before any runs.
MAX_POINTS = 100_000


class SweepError(ConfigError):
    """A sweep file, or one of its points, is wrong; the message names the file and the axis,
    override or field."""


_PART = re.compile(r"^([A-Za-z0-9_-]+)(?:\[(\d+)\])?$")


def parse_path(path: str) -> list[tuple[str, int | None]]:
    """``"channels[1].arrival"`` -> ``[("channels", 1), ("arrival", None)]``; a
    :class:`ValueError` saying what is wrong for anything else."""
    if not isinstance(path, str) or not path:
        raise ValueError("an empty field path")
    parts = []
    for text in path.split("."):
        match = _PART.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not a key or key[index] (letters, digits, _ and -)")
        parts.append((match.group(1), None if match.group(2) is None else int(match.group(2))))
    return parts


def value_text(value) -> str:
    """A value as a sweep's tables and labels show it (TOML-like: strings quoted)."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key} = {value_text(item)}" for key, item in value.items()) + "}"
    return str(value)


def apply_path(document: dict, path: str, value) -> None:
    """Set the field ``path`` of ``document`` (parsed TOML, changed in place) to ``value``,
    on every element of an array of tables named without an index. A :class:`ValueError`
    says why a path cannot be applied."""
    parts = parse_path(path)
    nodes = [document]
    walked = ""
    for number, (key, index) in enumerate(parts):
        last = number == len(parts) - 1
        name = f"{walked}.{key}" if walked else key
        following = []
        for node in nodes:
            if last and index is None:
                node[key] = value
                continue
            if key not in node:
                if index is not None:
                    raise ValueError(f"{name} is not in the base scenario, so it has no "
                                     f"element [{index}]")
                node[key] = {}
            child = node[key]
            if index is not None:
                if not isinstance(child, list):
                    raise ValueError(f"{name} is {value_text(child)} in the base scenario, not "
                                     f"an array, so it has no element [{index}]")
                if index >= len(child):
                    raise ValueError(f"{name} has {len(child)} elements in the base scenario; "
                                     f"[{index}] is past the end (indexes start at 0)")
                if last:
                    child[index] = value
                    continue
                child = child[index]
                if not isinstance(child, dict):
                    raise ValueError(f"{name}[{index}] is {value_text(child)}, not a table")
                following.append(child)
            elif isinstance(child, dict):
                following.append(child)
            elif isinstance(child, list) and child and all(isinstance(c, dict) for c in child):
                following.extend(child)       # an array of tables: every element
            elif isinstance(child, list) and not child:
                raise ValueError(f"{name} is an empty array in the base scenario: no element "
                                 f"to set {path.split('.', number + 1)[-1]} in")
            else:
                raise ValueError(f"{name} is {value_text(child)} in the base scenario, not a "
                                 f"table or an array of tables")
        nodes = following
        walked = name if index is None else f"{name}[{index}]"


def flatten_table(table: dict, prefix: str = "") -> list[tuple[str, object]]:
    """``{"policies": {"circuit_latency": [0, 1]}, "channels[1].arrival": [...]}`` ->
    ``[("policies.circuit_latency", [0, 1]), ("channels[1].arrival", [...])]``: TOML's
    nested tables back to the dotted paths they were written as (a table value is a leaf only
    where the table is empty)."""
    flat = []
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and value:
            flat += flatten_table(value, path)
        else:
            flat.append((path, value))
    return flat


# -- the filter -------------------------------------------------------------------------------

_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}


def _name_of(node) -> str | None:
    """The field path an expression spells (``policies.circuit_latency``,
    ``channels[1].arrival``), or None when it is not a plain name chain."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name_of(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int) and not isinstance(node.slice.value, bool)):
        base = _name_of(node.value)
        return None if base is None else f"{base}[{node.slice.value}]"
    return None


class Filter:
    """A sweep's ``filter``: parsed and checked once (names must be axes, ``policy`` or
    ``seed``; only the operations listed in the module docstring), then evaluated per point
    with :meth:`keep`."""

    def __init__(self, text: str, names: list[str]):
        self.text = text
        self._names = set(names)
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as error:
            raise ValueError(f"is not a valid expression ({error.msg} at column "
                             f"{error.offset})") from None
        self._check(tree.body)
        self._tree = tree.body

    def _check(self, node) -> None:
        name = _name_of(node)
        if name is not None:
            if name not in self._names:
                raise ValueError(f"names {name!r}, which is not an axis, 'policy' or 'seed' "
                                 f"(known: {', '.join(sorted(self._names))})")
            return
        if isinstance(node, ast.BoolOp | ast.Compare | ast.BinOp | ast.UnaryOp | ast.Constant
                      | ast.List | ast.Tuple | ast.IfExp):
            if isinstance(node, ast.BinOp) and type(node.op) not in _BINARY:
                raise ValueError(f"uses the operator {type(node.op).__name__}, which a filter "
                                 f"does not have")
            if isinstance(node, ast.Compare) and any(type(op) not in _COMPARE
                                                     for op in node.ops):
                raise ValueError("uses a comparison a filter does not have (is, is not)")
            if isinstance(node, ast.UnaryOp) and type(node.op) not in _UNARY:
                raise ValueError("uses ~, which a filter does not have")
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, ast.expr_context | ast.boolop | ast.cmpop
                                  | ast.operator | ast.unaryop):
                    self._check(child)
            return
        raise ValueError(f"uses {ast.unparse(node)!r}, which a filter does not allow (axes, "
                         f"policy, seed, literals, and or not, comparisons, arithmetic)")

    def _eval(self, node, values: dict):
        name = _name_of(node)
        if name is not None:
            return values[name]
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple):
            return [self._eval(item, values) for item in node.elts]
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                return all(self._eval(item, values) for item in node.values)
            return any(self._eval(item, values) for item in node.values)
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](self._eval(node.operand, values))
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](self._eval(node.left, values),
                                          self._eval(node.right, values))
        if isinstance(node, ast.IfExp):
            return (self._eval(node.body, values) if self._eval(node.test, values)
                    else self._eval(node.orelse, values))
        left = self._eval(node.left, values)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self._eval(right_node, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def keep(self, values: dict) -> bool:
        """Whether the point with ``values`` (axis path -> value, ``policy``, ``seed``) is
        kept; a :class:`ValueError` when the expression fails on it (``1 / 0``, a string
        compared with a number)."""
        try:
            return bool(self._eval(self._tree, values))
        except (TypeError, ZeroDivisionError, ValueError, OverflowError) as error:
            shown = ", ".join(f"{key} = {value_text(value)}" for key, value in values.items())
            raise ValueError(f"fails at {shown}: {error}") from None


# -- the file ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Axis:
    """One axis: a field path and the values it takes, in order."""

    path: str
    values: tuple


@dataclass(frozen=True)
class PlotSpec:
    """One plot of the report: ``metric`` over the axis ``x`` (a line per policy and per
    combination of the other axes, 95 % bands), or with ``y`` a heat map over ``x`` and
    ``y`` (one panel per policy); with ``ratio``, the per-seed ratio to the baseline."""

    metric: str
    x: str
    y: str | None = None
    ratio: bool = False


@dataclass(frozen=True)
class ReportSpec:
    """What ``gpusched sweep report`` shows (all optional)."""

    metrics: tuple[str, ...] = ()
    baseline: tuple[tuple[str, object], ...] = ()
    higher_is_better: tuple[str, ...] = ()
    lower_is_better: tuple[str, ...] = ()
    plots: tuple[PlotSpec, ...] = ()


@dataclass(frozen=True)
class Sweep:
    """A sweep file, read and checked (its points are built by :mod:`model.sweep.plan`).

    ``base`` is the base scenario file (the sweep file itself when the command needs none,
    as the ``noop`` drill: ``named_base`` is then false), ``document`` its parsed TOML as in
    the file; :meth:`resolved` applies ``overrides`` and a point's axis values to a copy.
    """

    name: str
    file: Path
    command: str
    base: Path
    document: dict
    overrides: tuple[tuple[str, object], ...]
    axes: tuple[Axis, ...]
    policies: tuple[str, ...] | None
    seeds: tuple[int, ...]
    quick: bool
    filter: Filter | None
    report: ReportSpec = field(default_factory=ReportSpec)
    named_base: bool = True

    @property
    def axis_names(self) -> list[str]:
        return [axis.path for axis in self.axes]

    def resolved(self, values=(), *, overrides: bool = True) -> dict:
        """A copy of the base document with the overrides (unless ``overrides`` is false),
        then ``values`` (``(path, value)`` pairs) applied; :class:`ValueError` from
        :func:`apply_path` when one cannot be."""
        document = copy.deepcopy(self.document)
        for path, value in (*(self.overrides if overrides else ()), *values):
            apply_path(document, path, value)
        return document


def _command(root: Fields, base: Path | None, commands) -> str:
    if "command" in root:
        return root.str("command", choices=tuple(commands))
    if base is not None and base.parent.name in commands:
        return base.parent.name
    raise root.error("command", f"is required: the scenario {base} is not under "
                                f"configs/<command>/ (one of {', '.join(commands)})")


def _seeds(root: Fields) -> tuple[int, ...]:
    value = root.peek("seeds", [1])
    if isinstance(value, int) and not isinstance(value, bool):
        count = root.int("seeds", minimum=1, maximum=100_000)
        return tuple(range(1, count + 1))
    seeds = root.int_list("seeds", [1], minimum=0)
    if not seeds:
        raise root.error("seeds", "is empty: the sweep has no points (give seeds = N for "
                                  "1..N, or a list)")
    if len(set(seeds)) != len(seeds):
        raise root.error("seeds", f"repeats a seed: {list(seeds)}")
    return seeds


def _report(root: Fields, path: Path, axes: list[Axis], policies: tuple[str, ...] | None
            ) -> ReportSpec:
    table = root.table("report", {})
    metrics = tuple(table.list("metrics", []))
    for index, metric in enumerate(metrics):
        if not isinstance(metric, str) or not metric:
            raise table.error(f"metrics[{index}]", f"must be a metric's name, not {metric!r}")
    directions = {}
    for key in ("higher_is_better", "lower_is_better"):
        names = table.list(key, [])
        for index, name in enumerate(names):
            if not isinstance(name, str):
                raise table.error(f"{key}[{index}]", f"must be a metric's name, not {name!r}")
        directions[key] = tuple(names)
    both = set(directions["higher_is_better"]) & set(directions["lower_is_better"])
    if both:
        raise table.error("lower_is_better", f"also lists {sorted(both)[0]!r}, which "
                                             f"higher_is_better has")
    axis_values = {axis.path: axis.values for axis in axes}
    baseline = []
    if "baseline" in table:
        for key, value in flatten_table(table.table("baseline").peek_all()):
            where = f"{path}: report.baseline.{key}"
            if key == "policy":
                if not isinstance(value, str) or (policies is not None
                                                  and value not in policies):
                    raise SweepError(f"{where} must be one of the sweep's policies"
                                     f"{'' if policies is None else ' ' + str(list(policies))}"
                                     f", not {value!r}")
            elif key not in axis_values:
                raise SweepError(f"{where}: {key!r} is not an axis (axes: "
                                 f"{', '.join(axis_values) or 'none'}; or policy)")
            elif value not in axis_values[key]:
                raise SweepError(f"{where} must be one of the axis's values "
                                 f"{value_text(list(axis_values[key]))}, not "
                                 f"{value_text(value)}")
            baseline.append((key, value))
        if not baseline:
            raise table.error("baseline", "is empty: give policy = NAME and/or axis values")
    plots = []
    for plot in table.tables("plots", []):
        metric = plot.str("metric")
        x = plot.str("x", choices=tuple(axis_values) or ("(no axes)",))
        y = plot.str("y", choices=tuple(a for a in axis_values if a != x) or ("(no axes)",)) \
            if "y" in plot else None
        ratio = plot.bool("ratio", False)
        plot.done()
        if ratio and not baseline:
            raise plot.error("ratio", "needs a baseline (report.baseline)")
        plots.append(PlotSpec(metric, x, y, ratio))
    table.done()
    return ReportSpec(metrics, tuple(baseline), directions["higher_is_better"],
                      directions["lower_is_better"], tuple(plots))


def load_sweep(path, commands) -> Sweep:
    """Read and check a sweep file (``commands``: the command names a sweep may run). Errors
    are :class:`SweepError` naming the file and the field; the points and their configs are
    checked later, by :func:`model.sweep.plan.plan`, still before anything runs."""
    path = Path(path)
    raw = load_toml(path)
    root = _Root(raw, source=path)
    name = root.str("name", path.stem)
    base = None
    if "scenario" in root:
        base = (path.parent / root.str("scenario")).resolve()
        if not base.is_file():
            raise root.error("scenario", f"names {str(base)!r}, which is not a file")
    command = _command(root, base, commands)
    if base is None and command != "noop":
        raise root.error("scenario", f"is required: the base scenario file of {command}")
    document = load_toml(base) if base is not None else {}
    overrides = []
    check = copy.deepcopy(document)
    for key, value in flatten_table(root.table("set", {}).peek_all()):
        try:
            apply_path(check, key, value)
        except ValueError as error:
            raise SweepError(f"{path}: set.{key}: {error}") from None
        overrides.append((key, value))
    axes = []
    for key, values in flatten_table(root.table("axes", {}).peek_all()):
        where = f"{path}: axes.{key}"
        try:
            parse_path(key)
        except ValueError as error:
            raise SweepError(f"{where}: {error}") from None
        if not isinstance(values, list):
            raise SweepError(f"{where} must be a list of the values the field takes, not "
                             f"{value_text(values)}")
        if not values:
            raise SweepError(f"{where} is empty: the sweep has no points")
        texts = [value_text(value) for value in values]
        if len(set(texts)) != len(texts):
            raise SweepError(f"{where} repeats a value: {value_text(values)}")
        if key in dict(overrides):
            raise SweepError(f"{where} is also in [set]; give it in one place")
        axes.append(Axis(key, tuple(values)))
    policies = None
    if "policies" in root:
        policies = tuple(root.list("policies"))
        if not policies:
            raise root.error("policies", "is empty: the sweep has no points (leave it out for "
                                         "every policy of the scenario)")
        for index, policy in enumerate(policies):
            if not isinstance(policy, str):
                raise root.error(f"policies[{index}]", f"must be a policy's name, not "
                                                       f"{policy!r}")
        if len(set(policies)) != len(policies):
            raise root.error("policies", f"repeats a policy: {list(policies)}")
    seeds = _seeds(root)
    # Every policy of the base is only known once it is loaded: build_plan checks again.
    check_points(path, axes, len(policies) if policies else 1, len(seeds))
    quick = root.bool("quick", False)
    expression = None
    if "filter" in root:
        text = root.str("filter")
        try:
            expression = Filter(text, [axis.path for axis in axes] + ["policy", "seed"])
        except ValueError as error:
            raise root.error("filter", str(error)) from None
    report = _report(root, path, axes, policies)
    root.done()
    return Sweep(name=name, file=path, command=command, base=base or path, document=document,
                 overrides=tuple(overrides), axes=tuple(axes), policies=policies, seeds=seeds,
                 quick=quick, filter=expression, report=report, named_base=base is not None)


def check_points(file, axes, policies: int, seeds: int) -> None:
    """A :class:`SweepError` giving the count and :data:`MAX_POINTS` when the cross product of
    ``axes`` x ``policies`` x ``seeds`` is larger."""
    combinations = math.prod(len(axis.values) for axis in axes)
    count = combinations * policies * seeds
    if count > MAX_POINTS:
        raise SweepError(f"{file}: the sweep has {count:,} points ({combinations:,} "
                         f"combination{'s' * (combinations != 1)} of the axes x {policies:,} "
                         f"polic{'ies' if policies != 1 else 'y'} x {seeds:,} "
                         f"seed{'s' * (seeds != 1)}); at most {MAX_POINTS:,} are accepted: "
                         f"split it into smaller sweeps")


class _Root(Fields):
    """:class:`Fields` with the raw value of a free-form table (``[set]``, ``[axes]``)."""

    def table(self, key, default=...):
        result = super().table(key) if default is ... else super().table(key, default)
        return _Root(result._data, result.path, source=result._source)

    def peek_all(self) -> dict:
        return self._data
