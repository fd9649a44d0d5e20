"""A sweep's results as tables, plots and CSV: the mean of each metric over the seeds of every
(axis values, policy) with its 95 % Student-t interval (:func:`model.stats.interval`), and,
with a baseline, the per-seed ratio to it with a verdict (:func:`model.stats.compare`).

* **Tables** (stdout): one per metric; a row per (axis values, policy): the seeds that have
  results, ``mean [low, high]``, and with a baseline ``x ratio [low, high]`` and the verdict
  ("holds" / "does not hold" / "cannot tell", read from the ratio's interval; "-" where the
  metric's direction is unknown).
* **Plots** (PNG): a metric over one axis, a line per policy (and per value of the other
  axes) with its 95 % band; a heat map of the means over two axes, a panel per policy; with
  no axes, each policy's mean with its interval as an error bar.
* **CSV**: the summary (one row per point, policy and metric) and every seed's numbers.

A baseline is a selector -- ``policy = "exact"``, an axis value (``"policies.circuit_latency" =
0``) or both -- and each row is compared with the row that differs from it only there, seed
by seed (seeds missing on either side are left out, and the count says so).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.report import figure, format_cell, print_table, save_figure
from model.stats import Comparison, Interval, compare, interval
from model.sweep.plan import canonical
from model.sweep.spec import SweepError, value_text

__all__ = ["Group", "Summary", "as_json", "plot_heat", "plot_lines", "plot_points", "plots",
           "print_summary", "slug", "summarise", "write_csv"]


@dataclass
class Group:
    """The points of one (axis values, policy): their per-seed metrics and the intervals."""

    axes: list
    policy: str
    seeds: dict[int, dict] = field(default_factory=dict)
    missing: int = 0
    intervals: dict[str, Interval] = field(default_factory=dict)
    versus: dict[str, tuple[Comparison, int, bool]] = field(default_factory=dict)
    is_baseline: bool = False

    def values(self, metric: str) -> list[float]:
        return [metrics[metric] for metrics in self.seeds.values() if metric in metrics]


@dataclass
class Summary:
    """Every group of a sweep, the metrics summarised and the baseline used."""

    name: str
    axes: list[str]
    groups: list[Group]
    metrics: list[str]
    directions: dict[str, bool]
    baseline: list[tuple[str, object]]
    total: int
    computed: int

    def short(self, axis: str) -> str:
        """An axis's column header: its last part when that is unique among the axes."""
        last = axis.rsplit(".", 1)[-1]
        return last if [a.rsplit(".", 1)[-1] for a in self.axes].count(last) == 1 else axis


def _known_metrics(groups: list[Group]) -> list[str]:
    names: dict[str, None] = {}
    for group in groups:
        for metrics in group.seeds.values():
            names.update(dict.fromkeys(metrics))
    return list(names)


def summarise(name: str, definition: dict, members: list[dict], *, metrics=None,
              baseline=None) -> Summary:
    """Group a sweep's points (``members`` from :meth:`Store.members`) and compute the
    intervals of ``metrics`` (default: the sweep's ``[report] metrics``, else its model's
    headline metrics that the results have) and the comparisons with ``baseline``."""
    axes = [axis["path"] for axis in definition["axes"]]
    groups: dict[tuple, Group] = {}
    computed = 0
    for member in members:
        key = (canonical(member["axes"]), member["policy"])
        group = groups.setdefault(key, Group(member["axes"], member["policy"]))
        if member["metrics"] is None:
            group.missing += 1
        else:
            group.seeds[member["seed"]] = member["metrics"]
            computed += 1
    ordered = list(groups.values())
    known = _known_metrics(ordered)
    directions = dict(definition.get("directions", {}))
    report = definition.get("report", {})
    if metrics:
        chosen = list(metrics)
    elif report.get("metrics"):
        chosen = list(report["metrics"])
    else:
        chosen = [metric for metric in directions if metric in known][:4] or known[:3]
    if known:
        for metric in chosen:
            if metric not in known:
                raise SweepError(f"sweep {name!r}: {metric!r} is not a metric of its results "
                                 f"(they have: {', '.join(known)})")
    selector = list(baseline if baseline is not None else report.get("baseline", []))
    for key, value in selector:
        if key != "policy" and key not in axes:
            raise SweepError(f"sweep {name!r}: the baseline names {key!r}, which is not an "
                             f"axis (axes: {', '.join(axes) or 'none'}; or policy)")
        if key == "policy" and value not in {group.policy for group in ordered}:
            raise SweepError(f"sweep {name!r}: the baseline policy {value!r} is not in the "
                             f"sweep")
    for group in ordered:
        for metric in chosen:
            values = group.values(metric)
            if values:
                group.intervals[metric] = interval(values)
    if selector:
        _compare(ordered, axes, chosen, selector, directions)
    return Summary(name, axes, ordered, chosen, directions, selector, len(members), computed)


def _compare(groups: list[Group], axes: list[str], metrics: list[str], selector,
             directions: dict[str, bool]) -> None:
    index = {(canonical(group.axes), group.policy): group for group in groups}
    positions = {axis: number for number, axis in enumerate(axes)}
    for group in groups:
        target = list(group.axes)
        policy = group.policy
        for key, value in selector:
            if key == "policy":
                policy = value
            else:
                target[positions[key]] = value
        other = index.get((canonical(target), policy))
        if other is group:
            group.is_baseline = True
            continue
        if other is None:
            continue
        for metric in metrics:
            seeds = [seed for seed in group.seeds
                     if seed in other.seeds and metric in group.seeds[seed]
                     and metric in other.seeds[seed]]
            if not seeds:
                continue
            known = metric in directions
            comparison = compare([group.seeds[seed][metric] for seed in seeds],
                                 [other.seeds[seed][metric] for seed in seeds],
                                 higher_is_better=directions.get(metric, True))
            group.versus[metric] = (comparison, len(seeds), known)


def _interval_text(entry: Interval | None, cell=format_cell) -> str:
    """``mean ± half-width`` of a Student-t interval (symmetric, so the same interval as
    ``[low, high]``, in half the width of a table column)."""
    if entry is None:
        return "-"
    if entry.count < 2 or not math.isfinite(entry.low):
        return f"{cell(entry.mean)} (1 seed)"
    return f"{cell(entry.mean)} ± {cell((entry.high - entry.low) / 2)}"


def _ratio_cell(value: float) -> str:
    return f"{value:.3f}" if abs(value) < 100 else format_cell(value)


def _ratio_text(comparison: Comparison) -> str:
    if comparison.ratio is not None:
        return _interval_text(comparison.ratio, _ratio_cell)
    return "+" + _interval_text(comparison.difference)


def _selector_text(selector) -> str:
    return ", ".join(f"{key} = {value_text(value)}" for key, value in selector)


def print_summary(summary: Summary) -> None:
    """One table per metric (see the module docstring)."""
    base = ", ".join(f"{key if key == 'policy' else summary.short(key)} = {value_text(value)}"
                     for key, value in summary.baseline)
    for metric in summary.metrics:
        direction = summary.directions.get(metric)
        better = "" if direction is None else (", higher is better" if direction
                                               else ", lower is better")
        headers = [*(summary.short(axis) for axis in summary.axes), "policy", "n",
                   "mean ± 95 % CI"]
        if summary.baseline:
            headers += ["/ baseline\n± 95 % CI", "better than\nbaseline?"]
        rows = []
        for group in summary.groups:
            seeds = len(group.values(metric))
            row = [*(value_text(value) for value in group.axes), group.policy,
                   f"{seeds}" + (f" ({group.missing} missing)" if group.missing else ""),
                   _interval_text(group.intervals.get(metric))]
            if summary.baseline:
                entry = group.versus.get(metric)
                if group.is_baseline:
                    row += ["(the baseline)", ""]
                elif entry is None:
                    row += ["-", "-"]
                else:
                    comparison, paired, known = entry
                    row += [_ratio_text(comparison) + (f" ({paired} paired)"
                                                       if paired != seeds else ""),
                            comparison.verdict if known else "-"]
            rows.append(row)
        missing = summary.total - summary.computed
        caption = ((f"baseline: {base}; / baseline: the per-seed ratio (+: the difference, "
                    f"where the baseline is 0), paired by seed; n: seeds; " if base
                    else "n: seeds; ")
                   + f"{summary.computed} of {summary.total} points computed"
                   + (f"; {missing} missing: run the sweep again to compute them" if missing
                      else ""))
        if summary.baseline and any(not entry[2] for group in summary.groups
                                    for m, entry in group.versus.items() if m == metric):
            caption += ("; no verdict: the model does not say which way is better (add it "
                        "to [report] higher_is_better or lower_is_better)")
        print_table(f"sweep {summary.name}: {metric}{better}, mean over seeds", headers, rows,
                    caption=caption)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "x"


def _numeric(values) -> bool:
    return all(isinstance(value, int | float) and not isinstance(value, bool)
               for value in values)


def _axis_values(summary: Summary, axis: str) -> list:
    position = summary.axes.index(axis)
    seen: dict[str, object] = {}
    for group in summary.groups:
        seen.setdefault(canonical(group.axes[position]), group.axes[position])
    return list(seen.values())


def _statistic(group: Group, metric: str, ratio: bool) -> Interval | None:
    """What a plot shows for a group: the metric's interval, or with ``ratio`` the interval
    of its per-seed ratio to the baseline (1 for the baseline itself)."""
    if not ratio:
        return group.intervals.get(metric)
    if group.is_baseline:
        count = len(group.values(metric))
        return Interval(1.0, 1.0, 1.0, count) if count else None
    entry = group.versus.get(metric)
    return None if entry is None else entry[0].ratio


def _series(summary: Summary, metric: str, fixed: list[str], ratio: bool):
    """Groups split by (policy, values of the axes not in ``fixed``): label -> groups."""
    free = [number for number, axis in enumerate(summary.axes) if axis not in fixed]
    series: dict[str, list[Group]] = {}
    for group in summary.groups:
        if _statistic(group, metric, ratio) is None:
            continue
        others = ", ".join(f"{summary.short(summary.axes[n])} = {value_text(group.axes[n])}"
                           for n in free)
        label = group.policy + (f" ({others})" if others else "")
        series.setdefault(label, []).append(group)
    return series


def _what(summary: Summary, metric: str, ratio: bool) -> str:
    if not ratio:
        return metric
    base = ", ".join(f"{key if key == 'policy' else summary.short(key)} = {value_text(value)}"
                     for key, value in summary.baseline)
    return f"{metric} / baseline ({base})"


def plot_lines(summary: Summary, metric: str, x: str, folder: Path, *, ratio: bool = False
               ) -> Path:
    """``metric`` (or with ``ratio`` its per-seed ratio to the baseline) over the axis ``x``:
    a line per policy and per value of the other axes, the 95 % interval as a band (none
    where only one seed has a result)."""
    position = summary.axes.index(x)
    values = _axis_values(summary, x)
    numeric = _numeric(values)
    where = {canonical(value): number for number, value in enumerate(values)}
    fig, axis = figure(figsize=(8, 5))
    for label, groups in _series(summary, metric, [x], ratio).items():
        groups = sorted(groups, key=lambda g: where[canonical(g.axes[position])])
        xs = [g.axes[position] if numeric else where[canonical(g.axes[position])]
              for g in groups]
        stats = [_statistic(g, metric, ratio) for g in groups]
        means = [stat.mean for stat in stats]
        (line,) = axis.plot(xs, means, marker="o", label=label)
        finite = [math.isfinite(stat.low) and math.isfinite(stat.high) for stat in stats]
        if any(finite):
            axis.fill_between(np.asarray(xs, dtype=float),
                              [stat.low if ok else stat.mean for stat, ok in zip(stats, finite,
                                                                                 strict=True)],
                              [stat.high if ok else stat.mean for stat, ok in zip(stats, finite,
                                                                                  strict=True)],
                              color=line.get_color(), alpha=0.2, linewidth=0)
    if ratio:
        axis.axhline(1.0, color="grey", linewidth=0.8)
    if not numeric:
        axis.set_xticks(range(len(values)), [value_text(v) for v in values], rotation=20,
                        ha="right")
    what = _what(summary, metric, ratio)
    axis.set_xlabel(x)
    axis.set_ylabel(f"{what}\n(mean over seeds, 95 % band)")
    axis.set_title(f"sweep {summary.name}: {what} over {x}", fontsize=10)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    kind = "_ratio" if ratio else ""
    return save_figure(fig, folder / f"sweep_{slug(summary.name)}_{slug(metric)}{kind}_"
                                     f"{slug(x)}.png")


#: At most this many panels in one heat-map figure.
MAX_PANELS = 12


def plot_heat(summary: Summary, metric: str, x: str, y: str, folder: Path, *,
              ratio: bool = False) -> Path:
    """The mean of ``metric`` (or with ``ratio`` of its per-seed ratio to the baseline) over
    the axes ``x`` and ``y``: a panel per policy (and per value of the other axes), each cell
    annotated with its value."""
    px, py = summary.axes.index(x), summary.axes.index(y)
    xs, ys = _axis_values(summary, x), _axis_values(summary, y)
    xi = {canonical(value): n for n, value in enumerate(xs)}
    yi = {canonical(value): n for n, value in enumerate(ys)}
    panels = _series(summary, metric, [x, y], ratio)
    if len(panels) > MAX_PANELS:
        raise SweepError(f"sweep {summary.name!r}: a heat map of {metric} over {x} and {y} "
                         f"would have {len(panels)} panels (a policy and a value of each other "
                         f"axis each); at most {MAX_PANELS}: filter the other axes")
    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = figure(rows, columns, figsize=(4.5 * columns + 1, 3.8 * rows + 0.6),
                       squeeze=False)
    every = [_statistic(g, metric, ratio).mean for groups in panels.values() for g in groups]
    low, high = (min(every), max(every)) if every else (0, 1)
    colours = "viridis"
    if ratio:
        # A ratio: a diverging map centred on 1 (no change), blue below and red above.
        spread = max(abs(low - 1), abs(high - 1)) or 0.01
        low, high, colours = 1 - spread, 1 + spread, "coolwarm"
    image = None
    for number, (label, groups) in enumerate(panels.items()):
        axis = axes[number // columns][number % columns]
        grid = np.full((len(ys), len(xs)), np.nan)
        for group in groups:
            grid[yi[canonical(group.axes[py])], xi[canonical(group.axes[px])]] = \
                _statistic(group, metric, ratio).mean
        image = axis.imshow(grid, origin="lower", aspect="auto", cmap=colours, vmin=low,
                            vmax=high if high > low else low + 1)
        for row in range(len(ys)):
            for column in range(len(xs)):
                if not np.isnan(grid[row, column]):
                    value = float(grid[row, column])
                    dark = (not ratio and value < (low + high) / 2) or (
                        ratio and abs(value - 1) > 0.6 * (high - 1))
                    axis.text(column, row, f"{value:.3f}" if ratio else format_cell(value),
                              ha="center", va="center", fontsize=7,
                              color="white" if dark else "black")
        axis.set_xticks(range(len(xs)), [value_text(v) for v in xs], fontsize=8)
        axis.set_yticks(range(len(ys)), [value_text(v) for v in ys], fontsize=8)
        axis.set_xlabel(x, fontsize=8)
        axis.set_ylabel(y, fontsize=8)
        axis.set_title(label, fontsize=9)
    for number in range(len(panels), rows * columns):
        axes[number // columns][number % columns].axis("off")
    what = _what(summary, metric, ratio)
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), label=f"{metric} (mean over seeds)"
                     if not ratio else f"{metric} / baseline (mean of per-seed ratios)")
    fig.suptitle(f"sweep {summary.name}: {what} over {x} and {y}", fontsize=10)
    kind = "_ratio" if ratio else ""
    path = folder / (f"sweep_{slug(summary.name)}_{slug(metric)}{kind}_heat_{slug(x)}_"
                     f"{slug(y)}.png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    from matplotlib import pyplot
    pyplot.close(fig)
    return path


def plot_points(summary: Summary, metric: str, folder: Path, *, ratio: bool = False) -> Path:
    """A sweep without axes: each policy's mean of ``metric`` (or its ratio to the baseline)
    with its 95 % interval."""
    groups = [g for g in summary.groups if _statistic(g, metric, ratio) is not None]
    stats = [_statistic(g, metric, ratio) for g in groups]
    fig, axis = figure(figsize=(max(5, 1.2 * len(groups) + 2), 4.5))
    means = [stat.mean for stat in stats]
    errors = [[stat.mean - stat.low if math.isfinite(stat.low) else 0 for stat in stats],
              [stat.high - stat.mean if math.isfinite(stat.high) else 0 for stat in stats]]
    axis.errorbar(range(len(groups)), means, yerr=errors, fmt="o", capsize=4)
    if ratio:
        axis.axhline(1.0, color="grey", linewidth=0.8)
    axis.set_xticks(range(len(groups)), [g.policy for g in groups], rotation=20, ha="right")
    what = _what(summary, metric, ratio)
    axis.set_ylabel(f"{what}\n(mean, 95 % interval)")
    axis.set_title(f"sweep {summary.name}: {what}", fontsize=10)
    axis.grid(alpha=0.3)
    kind = "_ratio" if ratio else ""
    return save_figure(fig, folder / f"sweep_{slug(summary.name)}_{slug(metric)}{kind}.png")


def _prepare(summary: Summary, metric: str, ratio: bool) -> None:
    """Intervals (and comparisons, for a ratio plot) of a metric the tables do not show."""
    for group in summary.groups:
        values = group.values(metric)
        if values:
            group.intervals.setdefault(metric, interval(values))
    if ratio:
        if not summary.baseline:
            raise SweepError(f"sweep {summary.name!r}: a ratio plot needs a baseline ([report] "
                             f"baseline, or --baseline)")
        if not any(metric in group.versus for group in summary.groups):
            _compare(summary.groups, summary.axes, [metric], summary.baseline,
                     summary.directions)


def plots(summary: Summary, definition: dict, folder: Path) -> list[Path]:
    """The sweep's ``[[report.plots]]``, or by default for each of the first two metrics: a
    line plot over the first axis, a heat map over the first two (or, with no axes, the
    policies side by side); with a baseline, each also as the ratio to it."""
    wanted = definition.get("report", {}).get("plots") or []
    if not wanted:
        for metric in summary.metrics[:2]:
            for ratio in (False, True) if summary.baseline else (False,):
                wanted.append({"metric": metric, "x": None, "y": None, "ratio": ratio})
                if len(summary.axes) >= 2:
                    wanted.append({"metric": metric, "x": summary.axes[0],
                                   "y": summary.axes[1], "ratio": ratio})
    known = _known_metrics(summary.groups)
    written = []
    for plot in wanted:
        metric, ratio = plot["metric"], bool(plot.get("ratio"))
        if known and metric not in known:
            raise SweepError(f"sweep {summary.name!r}: report.plots: {metric!r} is not a "
                             f"metric of its results (they have: {', '.join(known)})")
        _prepare(summary, metric, ratio)
        x = plot.get("x") or (summary.axes[0] if summary.axes else None)
        if x is None:
            written.append(plot_points(summary, metric, folder, ratio=ratio))
        elif plot.get("y"):
            written.append(plot_heat(summary, metric, x, plot["y"], folder, ratio=ratio))
        else:
            written.append(plot_lines(summary, metric, x, folder, ratio=ratio))
    return written


def write_csv(summary: Summary, path: Path) -> tuple[Path, Path]:
    """``path``: one row per (axis values, policy, metric) with seeds, mean, low, high and,
    with a baseline, the per-seed ratio's interval and verdict; ``<stem>_seeds.csv`` beside
    it: one row per point with every metric."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        header = ["sweep", *summary.axes, "policy", "metric", "seeds", "mean", "low", "high"]
        if summary.baseline:
            header += ["baseline", "ratio_mean", "ratio_low", "ratio_high", "verdict"]
        writer.writerow(header)
        for group in summary.groups:
            for metric in summary.metrics:
                entry = group.intervals.get(metric)
                if entry is None:
                    continue
                row = [summary.name, *(_csv_value(v) for v in group.axes), group.policy,
                       metric, entry.count, entry.mean, entry.low, entry.high]
                if summary.baseline:
                    versus = group.versus.get(metric)
                    ratio = versus[0].ratio if versus else None
                    row += [_selector_text(summary.baseline),
                            *((ratio.mean, ratio.low, ratio.high) if ratio else ("", "", "")),
                            ("baseline" if group.is_baseline else
                             versus[0].verdict if versus and versus[2] else "")]
                writer.writerow(row)
    seeds_path = path.with_name(f"{path.stem}_seeds{path.suffix or '.csv'}")
    metrics = _known_metrics(summary.groups)
    with seeds_path.open("w", newline="") as file:
        writer = csv.writer(file)
        fixed = {"sweep", *summary.axes, "policy", "seed"}
        writer.writerow(["sweep", *summary.axes, "policy", "seed",
                         *(f"metric.{m}" if m in fixed else m for m in metrics)])
        for group in summary.groups:
            for seed, values in group.seeds.items():
                writer.writerow([summary.name, *(_csv_value(v) for v in group.axes),
                                 group.policy, seed, *(values.get(m, "") for m in metrics)])
    return path, seeds_path


def _csv_value(value):
    return value if isinstance(value, int | float | str) and not isinstance(value, bool) \
        else value_text(value)


def as_json(summary: Summary) -> list[dict]:
    """The summary for the JSON envelope: one entry per (axis values, policy)."""
    entries = []
    for group in summary.groups:
        entry = {"axes": dict(zip(summary.axes, group.axes, strict=True)),
                 "policy": group.policy, "seeds": sorted(group.seeds),
                 "missing": group.missing,
                 "metrics": {m: i.as_dict() for m, i in group.intervals.items()}}
        if summary.baseline:
            entry["baseline"] = dict(summary.baseline)
            entry["versus_baseline"] = {m: v[0].as_dict() for m, v in group.versus.items()}
        entries.append(entry)
    return entries
