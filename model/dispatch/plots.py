"""The dispatcher's plots: one PNG per scenario, six panels that show what the scenario
claims (:func:`plot_scenario`).

1. mean utilisation over time, one step line per policy (the samples are exact in every
   sample cycle, skipped cycles included); a policy that finished every WG early goes on at
   zero, dotted, from its "done" marker to the end of the longest run;
2. wait per priority, one box per policy (p25-p75, whiskers p1-p99) on a symmetric-log axis,
   so a zero wait is drawn at zero rather than clipped to 1; the legend sits below the axes;
3. waves received per PEU (sorted), relative to the mean: embodiment 8's balance;
4. and 5. the coefficient of variation across APs of resource use and of instruction power
   over time (thin), with each run's time average (dashed): embodiments 9 and 10;
6. the claims these runs can show (under the runs' execution model, at the load as
   written): for each claim's metric, every policy's value relative to the claim's baseline,
   in per cent, one horizontal bar per policy under a header row naming the claim, each bar
   labelled at its end, so a 1-2 % difference can be read and no label overlaps another
   however many claims and policies there are. The claims over seeds, loads and execution
   models are the command's claims table.

For a kernel trace (``launches`` given, :mod:`model.dispatch.launches`), panels 4 and 5 give
way to one timeline: the launches as measured (arrival to arrival + measured duration) and as
each policy ran them (first dispatch to last release), one band per policy and one row per
stream within it, each launch a bar coloured by kernel (the eight kernels with the most
measured time named, the others grey).
"""

from pathlib import Path

import numpy as np

from model.dispatch.config import LOAD_AS_WRITTEN
from model.report import figure, save_figure

__all__ = ["plot_scenario"]


def _utilisation(axis, results: dict) -> None:
    end = max((r["cycles"] for r in results.values()), default=0)
    for index, (name, r) in enumerate(results.items()):
        series = r["series"]
        colour = f"C{index}"
        axis.step(series["cycle"], series["utilisation"], where="post", label=name,
                  linewidth=1, color=colour)
        if series["cycle"] and r["cycles"] < end and not r["workgroups_unfinished"]:
            axis.plot([r["cycles"]], [series["utilisation"][-1]], marker="o", color=colour)
            axis.plot([r["cycles"], end], [0, 0], linestyle=":", color=colour)
            axis.annotate("done", (r["cycles"], series["utilisation"][-1]), fontsize=7,
                          textcoords="offset points", xytext=(4, 4), color=colour)
    axis.set_xlabel("cycle")
    axis.set_ylabel("mean utilisation of the four resources")
    axis.set_title("utilisation over time")
    axis.set_ylim(bottom=0)
    axis.legend(fontsize=7, loc="best")


def _waits(axis, scenario, results: dict) -> None:
    priorities = range(scenario.gpu.priorities)
    width = 0.8 / max(1, len(results))
    for index, (name, r) in enumerate(results.items()):
        boxes = r["series"]["wait_boxes"]
        positions = [p + (index - (len(results) - 1) / 2) * width for p in priorities]
        # The run's wait box per priority (metrics.box): p1, p25, p50, p75, p99.
        kept = []
        for p, x in zip(priorities, positions, strict=True):
            if boxes.get(str(p)):
                low, q1, median, q3, high = boxes[str(p)]
                kept.append(({"whislo": low, "q1": q1, "med": median, "q3": q3,
                              "whishi": high}, x))
        if kept:
            drawn = axis.bxp([stats for stats, _ in kept], positions=[x for _, x in kept],
                             widths=width * 0.9, showfliers=False, patch_artist=True,
                             manage_ticks=False)
            for patch in drawn["boxes"]:
                patch.set_facecolor(f"C{index}")
                patch.set_alpha(0.6)
            for median in drawn["medians"]:
                median.set_color("black")
        axis.plot([], [], color=f"C{index}", linewidth=6, alpha=0.6, label=name)
    axis.set_yscale("symlog", linthresh=1)
    axis.set_ylim(bottom=0)
    axis.set_xticks(list(priorities), [f"P{p}" for p in priorities])
    axis.set_ylabel("wait, cycles (box p25-p75, whiskers p1-p99)")
    axis.set_title("wait per priority (symmetric log: 0 is 0)")
    axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08),
                ncol=min(len(results), 3), frameon=False)


def _peu_balance(axis, results: dict) -> None:
    for index, (name, r) in enumerate(results.items()):
        waves = np.sort(np.array(r["series"]["peu_waves"], dtype=float))
        mean = waves.mean() if waves.size and waves.mean() else 1.0
        axis.plot(np.arange(waves.size), waves / mean, label=name, linewidth=1,
                  color=f"C{index}")
    axis.axhline(1.0, color="grey", linewidth=0.5)
    axis.set_xlabel("PEU (sorted by waves received)")
    axis.set_ylabel("waves received / mean")
    axis.set_title("per-PEU wave balance (emb. 8), PEU CV in the legend")
    axis.legend([f"{name}: {r['peu_imbalance']:.3f}" for name, r in results.items()],
                fontsize=7)


def _ap_cv(axis, results: dict, key: str, metric: str, title: str) -> None:
    means = [r["ap_imbalance"][metric] for r in results.values()]
    values = np.concatenate([np.asarray(r["series"][key], dtype=float)
                             for r in results.values()] + [np.zeros(1)])
    # The first samples, with a handful of WGs on a few APs, reach CVs of 1-4: clip them so
    # the differences between the policies stay readable.
    top = max(np.percentile(values, 98), 2 * max(means, default=0)) * 1.1 or 1.0
    for index, (name, r) in enumerate(results.items()):
        series = r["series"]
        colour = f"C{index}"
        axis.plot(series["cycle"], series[key], linewidth=0.6, alpha=0.5, color=colour)
        value = r["ap_imbalance"][metric]
        axis.axhline(value, color=colour, linestyle="--", linewidth=1.2,
                     label=f"{name}: mean {value:.3f}")
    axis.set_xlabel("cycle")
    axis.set_ylabel("CV across APs")
    axis.set_title(title)
    axis.set_ylim(0, top)
    axis.legend(fontsize=7, loc="upper right")


def _metric(results: dict, path: str) -> float:
    node = results
    for part in path.split("."):
        node = node[part]
    return float(node)


def _shown(scenario, claim, results: dict) -> bool:
    """Whether this scenario's runs measure ``claim``: its execution model, load as written."""
    first = next(iter(results.values()), {})
    execution = first.get("execution", scenario.execution)
    return (claim.execution or scenario.execution) == execution and \
        LOAD_AS_WRITTEN in claim.loads


def _claims(axis, scenario, results: dict) -> None:
    claims, seen = [], set()
    for claim in (c for c in scenario.claims if _shown(scenario, c, results)):
        # Claims that share a metric and a baseline share one group of bars.
        if claim.policy in results and claim.baseline in results and \
                (claim.metric, claim.baseline) not in seen:
            seen.add((claim.metric, claim.baseline))
            claims.append(claim)
    policies = {c.policy for c in scenario.claims}
    if not claims:
        text = ("no claim in this scenario" if not scenario.claims else
                "its claims are under another execution model or load:\nsee the claims table")
        axis.text(0.5, 0.5, text, ha="center", va="center")
        axis.set_axis_off()
        return
    names = list(results)
    # One row per (claim, policy), top to bottom, a header row per claim: each label has a
    # row of its own, so none can overlap another.
    row, ticks, labels, bold, changes = 0, [], [], [], []
    for claim in claims:
        arrow = "higher" if claim.higher_is_better else "lower"
        ticks.append(row)
        labels.append(f"{claim.metric} vs {claim.baseline} ({arrow} is better)")
        bold.append(True)
        row += 1
        base = _metric(results[claim.baseline], claim.metric)
        for name in (n for n in names if n != claim.baseline):
            value = _metric(results[name], claim.metric)
            change = 100.0 * (value / base - 1.0) if base else 0.0
            changes.append(change)
            bar = axis.barh(row, change, 0.7, color=f"C{names.index(name)}",
                            edgecolor="black" if name in policies else "none")
            axis.bar_label(bar, [f"{change:+.1f}%"], fontsize=7, padding=2)
            ticks.append(row)
            labels.append(name)
            bold.append(False)
            row += 1
    axis.axvline(0, color="black", linewidth=0.6)
    # Header rows are written inside the axes, on their own row (no bar there), so a long
    # claim does not squeeze the figure's other panels.
    axis.set_yticks(ticks, ["" if header else label
                            for label, header in zip(labels, bold, strict=True)], fontsize=7)
    for tick, label, header in zip(ticks, labels, bold, strict=True):
        if header:
            axis.text(0.01, tick, label, transform=axis.get_yaxis_transform(), fontsize=7,
                      fontweight="bold", va="center", ha="left",
                      bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    axis.set_ylim(row - 0.5, -0.5)
    low, high = min(changes + [0.0]), max(changes + [0.0])
    pad = 0.3 * (high - low or 1.0)
    axis.set_xlim(low - (pad if low < 0 else 0.05 * pad), high + (pad if high > 0 else 0.05 * pad))
    axis.set_xlabel("change against the claim's baseline, %")
    axis.set_title("the claims (outlined: a claim's policy)")


def _timeline(axis, launches: dict) -> None:
    """Panel for a kernel trace: measured and simulated launches per stream, one band per
    policy (see the module docstring)."""
    first = next(iter(launches.values()), [])
    if not first:
        axis.text(0.5, 0.5, "no launch ran", ha="center", va="center")
        axis.set_axis_off()
        return
    channels = sorted({row["channel"] for row in first})
    weight: dict[str, int] = {}
    for row in first:
        weight[row["kernel"]] = weight.get(row["kernel"], 0) + row["measured_cycles"]
    named = sorted(weight, key=lambda name: -weight[name])[:8]
    colour = {name: f"C{index}" for index, name in enumerate(named)}
    bands = [("measured", [(row["channel"], row["arrival"], row["measured_cycles"],
                            row["kernel"]) for row in first])]
    for policy, rows in launches.items():
        bands.append((policy, [(row["channel"], row["start"], row["duration"], row["kernel"])
                               for row in rows if row["duration"] is not None]))
    height = len(channels) + 1
    ticks, labels = [], []
    for number, (label, bars) in enumerate(bands):
        base = number * height
        for channel in channels:
            mine = [(start, max(1, length), kernel) for c, start, length, kernel in bars
                    if c == channel]
            if mine:
                axis.broken_barh([(start, length) for start, length, _ in mine],
                                 (base + channels.index(channel) + 0.1, 0.8),
                                 facecolors=[colour.get(kernel, "lightgrey")
                                             for _, _, kernel in mine],
                                 edgecolor="black", linewidth=0.2)
        ticks.append(base + (len(channels) - 1) / 2 + 0.5)
        streams = f" ({len(channels)} streams)" if len(channels) > 1 else ""
        labels.append(f"{label}{streams}")
        if number:
            axis.axhline(base - 0.1, color="grey", linewidth=0.5)
    axis.set_yticks(ticks, labels, fontsize=7)
    axis.set_ylim(len(bands) * height - 0.5, -0.5)
    axis.set_xlabel("cycle")
    axis.set_title("kernel launches over time: measured, then as each policy ran them "
                   "(one row per stream)")
    for name in named:
        # matplotlib leaves out (and warns about) a label that starts with '_', which
        # every mangled C++ kernel name (_Z...) does: a leading space keeps it.
        label = name[:40]
        axis.plot([], [], color=colour[name], linewidth=6,
                  label=f" {label}" if label.startswith("_") else label)
    axis.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.12),
                ncol=min(4, len(named)), frameon=False)


def plot_scenario(scenario, results: dict, path: Path, launches: dict | None = None) -> Path:
    """Write the scenario's PNG (six panels, see the module docstring) to ``path``;
    ``launches`` (``{policy: per-launch rows}``, :func:`model.dispatch.launches.launch_rows`)
    puts the kernel timeline in place of the two per-cycle imbalance panels."""
    fig, axes = figure(2, 3, figsize=(17, 9))
    _utilisation(axes[0, 0], results)
    _waits(axes[0, 1], scenario, results)
    _peu_balance(axes[0, 2], results)
    if launches:
        grid = axes[1, 0].get_gridspec()
        axes[1, 0].remove()
        axes[1, 1].remove()
        _timeline(fig.add_subplot(grid[1, 0:2]), launches)
    else:
        _ap_cv(axes[1, 0], results, "ap_resource_cv", "resource",
               "AP resource-use imbalance (emb. 9)")
        _ap_cv(axes[1, 1], results, "ap_power_cv", "power",
               f"AP instruction-power imbalance over {scenario.power_window} cycles (emb. 10)")
    _claims(axes[1, 2], scenario, results)
    fig.suptitle(scenario.name)
    return save_figure(fig, path)
