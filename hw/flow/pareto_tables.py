"""The tables and the plot of ``make pareto`` (:mod:`hw.flow.pareto`): one row per point with
its area, the view's routed clock where measured and every quality ratio with its interval;
the plot of LUT4 against the overloaded throughput ratio with the Pareto front."""

from pathlib import Path

__all__ = ["FRONT_MEASURE", "HEADERS", "markdown", "plot", "table_rows"]

#: The point the front is drawn against: the default mix, overloaded, throughput.
FRONT_MEASURE = ("default", "as written", "throughput")


def _ratio_text(entry: dict | None) -> str:
    if entry is None:
        return "-"
    return f"{entry['mean']:.3f} [{entry['low']:.3f}, {entry['high']:.3f}]"


def table_rows(rows: list[dict]) -> list[list]:
    out = []
    for row in rows:
        total = row.get("total", {})
        q = row["quality"]
        out.append([row["point"] + (" *" if row["front"] else ""), row["label"],
                    f"{total['luts']:,}" if total else row.get("error", "failed"),
                    f"{row['views']['luts']:,}" if "views" in row else "-",
                    f"{total['ffs']:,}" if total else "-",
                    _fmax_text(row),
                    _ratio_text(q["default/0.9/throughput"]),
                    _ratio_text(q["default/0.9/latency.p99"]),
                    _ratio_text(q["default/as written/throughput"]),
                    _ratio_text(q["default/as written/latency.p99"]),
                    _ratio_text(q["llama/as written/throughput"]),
                    _ratio_text(q["llama/as written/latency.p99"])])
    return out


def _fmax_text(row: dict) -> str:
    if row["view"] is None:
        return f"{row['fmax']} (whole)"
    route = row.get("route")
    if route is None:
        return "-"
    if route["status"] != "ok":
        return route["status"]
    return f"{route['fmax']:.1f} ({route['device']})"


HEADERS = ["point", "view", "LUT4", "of which views", "FF", "MHz, one AP's views",
           "thr. @0.9", "p99 lat. @0.9",
           "thr. overloaded", "p99 lat. overloaded", "llama thr.", "llama p99 lat."]


def markdown(rows: list[dict], rest: dict, seeds: int, rest_changed: dict | None = None) -> str:
    """The table as Markdown, with what its figures are (MIAOW's from its row)."""
    miaow = next(row for row in rows if row["view"] is None)
    lines = [f"| {' | '.join(HEADERS)} |", "|" + " --- |" * len(HEADERS)]
    lines += [f"| {' | '.join(map(str, r))} |" for r in table_rows(rows)]
    lines += ["", f"Ratios to exact L1 (95 % interval over {seeds} workload seeds); * = on the "
              "Pareto front of LUT4 against the overloaded throughput ratio. LUT4: the views "
              f"synthesized by parts plus the rest of the dispatcher ({rest['total']['luts']:,} "
              f"LUT4, the exact build's hierarchy of {rest['date']}"
              + (f"; for the views of the changed APs, {rest_changed['total']['luts']:,} LUT4, "
                 f"that build's: the status in LUT-RAM, no allocator multiplexers"
                 if rest_changed else "") + "). MHz: one AP's views alone "
              "(its 4 VGPR, 4 SGPR and 1 LDS view, or its shared unit) placed and routed in the "
              "register wrapper, nextpnr seed 1: the view's own clock limit, not the "
              f"dispatcher's. MIAOW: {miaow['source']}, {miaow['fmax']} MHz for the whole "
              "dispatcher."]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    """LUT4 against the overloaded throughput ratio: every point with MIAOW on the left, the
    builds alone on the right (their ratios differ by a few per cent); the front marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = "/".join(map(str, FRONT_MEASURE))
    shown = [r for r in rows if r["status"] == "ok" and r["quality"].get(key)]
    figure, panels = plt.subplots(1, 2, figsize=(12, 5.5))
    for panel, subset in zip(panels, (shown, [r for r in shown if r["view"]]), strict=True):
        labels: dict[tuple, list[str]] = {}
        for row in subset:
            q = row["quality"][key]
            colour = ("tab:red" if row["view"] is None else
                      "tab:blue" if row["front"] else "tab:gray")
            panel.errorbar(row["total"]["luts"], q["mean"],
                           yerr=[[q["mean"] - q["low"]], [q["high"] - q["mean"]]], fmt="o",
                           color=colour, capsize=3, ms=5)
            # Points of one circuit at latency 1 and 2 share their LUT4: one label.
            spot = (row["total"]["luts"], round(q["mean"], 2))
            labels.setdefault(spot, []).append(row["point"])
        for (luts, mean), names in labels.items():
            if panel is panels[0] and names != ["MIAOW"]:
                continue                    # the builds are named on the right
            panel.annotate(", ".join(names), (luts, mean), fontsize=7, rotation=25,
                           xytext=(4, 4), textcoords="offset points")
        front = sorted((r["total"]["luts"], r["quality"][key]["mean"]) for r in subset
                       if r["front"])
        if front:
            panel.step(*zip(*front, strict=True), where="post", color="tab:blue", lw=1,
                       label="Pareto front")
        panel.axvline(83640, color="k", ls=":", lw=1, label="LFE5U-85F (83,640 LUT4)")
        panel.set_xscale("log")
        panel.set_xlabel("LUT4 (ECP5, by parts)")
        panel.legend(fontsize=8, loc="lower right")
    panels[0].set_ylabel("throughput / exact L1, default mix overloaded (95 % interval)")
    panels[0].set_title("every view and MIAOW's dispatcher")
    panels[1].set_title("the seed-002 builds alone")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
