"""What each free-block view costs and what it buys: ``make pareto``.

For the default configuration (16 APs x 4 PEUs x 4 channels, VGPR 128 / SGPR 64 / LDS 48
blocks, the seed's policy as the RTL builds it), every view seed 002 offers and ours
(:data:`VIEWS`: exact tree, embodiment 4's full circuit, embodiment 5 grouped /4 and /8,
embodiment 6 sampled, embodiment 7's unit shared per AP with the seed's circuit or with the
exact tree, and the exact tree computed for the changed APs only, :data:`CHANGED`), each at
view latencies 1 and 2 (:data:`LATENCIES`), plus the exact view at latency 0, the shared
unit with the exact tree at 3 and 4 (its own pipelines) and the changed APs' view at 3
(:data:`EXTRA_POINTS`), and MIAOW's dispatcher as an outside point:

* **Area** (ECP5, Yosys through YoWASP, the mapper of :mod:`hw.flow.fpga_dispatch`): the
  views part of each build synthesized by parts, exactly as :mod:`hw.flow.fpga_dispatch`
  does it for the whole dispatcher: :class:`hw.dispatch.views.FreeBlockViews` alone with
  every free-block circuit a black box (its delay registers and wiring), plus each distinct
  circuit once as the view uses it, times its instance count. The rest of the dispatcher
  (queues, matcher, selector, allocator, resource table, control) does not depend on the
  view: the same Verilog in every build (the view's lengths have the same widths), so its
  parts are taken from the measured hierarchy of the exact build in
  ``results/dispatch_fpga.json`` (:func:`rest_of_dispatcher`), and the table says so --
  except for the :data:`CHANGED` views, whose table (the status in LUT-RAM) and allocator
  (no multiplexers) differ: their rest is the changed build's own hierarchy. Sums of
  parts synthesized alone, not a flat run: no optimisation across the parts' boundaries.
* **Quality** (the Python model; :mod:`model.dispatch.claims`, the machinery of the README's
  claims): throughput and p99 latency over workload seeds 1..5, each a ratio to the exact
  view at latency 1 (:data:`REFERENCE`, the one-clock dispatcher the RTL builds by default)
  with its 95 % interval, seed by seed: on the default mix at 0.9 of the reference's
  measured capacity and as written (overloaded), and on the llama.cpp two-request trace
  (``configs/dispatch/llamacpp_requests.toml``, its own rates: a trace cannot be scaled).
  The sweep files cannot express "0.9 of a capacity measured first"; the claims' machinery
  does, and is what ``make sim`` reports with.

* **Clock** (``--no-route`` skips it): one AP's views of the points :data:`ROUTED` (the
  front's ends and the shared unit at every latency) placed and routed alone, flat in the
  register wrapper, on the smallest ECP5 that holds them (:func:`route_view`): the view's
  own clock limit, since no whole build fits a device.

Both sides are cached under ``<out>/cache`` (synthesis by the circuits' identity and the
tools, the model by :func:`model.sweep.worker.code_version` and the scenarios), so a second
run only reports. Results: ``results/pareto.json``, ``<out>/pareto.md`` and the plot
``<out>/pareto.png`` (LUT4 against the overloaded throughput ratio, the Pareto front
marked).

Run ``python -m hw.flow.pareto --help`` for the options.
"""

import argparse
import hashlib
import inspect
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from amaranth.back import verilog

from hw.dispatch.views import FreeBlockViews
from hw.flow.dispatch_build import BlockLibrary, DispatchShape, _source_digest
from hw.flow.fpga_dispatch import (
    COUNTS,
    MAPPER,
    ROLE_USE,
    _cached,
    _circuit_script,
    _FlatPorts,
    _part_script,
    _progress,
    _synthesize_cached,
    combine,
    synthesize_circuits,
)
from hw.flow.fpga_dispatch import (
    RESULTS as DISPATCH_RESULTS,
)
from hw.flow.fpga_flow import DEFAULT_TIMEOUT, nextpnr_command, run_flow, synth_script
from hw.flow.fpga_report import FAMILIES, tool_versions
from hw.flow.fpga_wrapper import RegisterWrapper
from hw.flow.pareto_tables import FRONT_MEASURE, HEADERS, markdown, plot, table_rows
from model.cli import output_problem
from model.config import ConfigError
from model.dispatch.claims import Settings, evaluate
from model.dispatch.config import (
    PRESETS,
    Claim,
    GpuConfig,
    check_policy,
    load_scenario,
    with_policy,
)
from model.dispatch.kernels import prepare
from model.pool import run_all
from model.report import print_table
from model.sweep.worker import code_version

__all__ = ["LATENCIES", "MIAOW", "REFERENCE", "ROUTED", "VIEWS", "assemble", "main",
           "markdown", "pareto_front", "plot", "route_view", "table_rows", "view_area",
           "view_policy"]

ROOT = Path(__file__).resolve().parents[2]
#: The measured rows, kept in the repository.
RESULTS = ROOT / "results" / "pareto.json"

#: The views, in table order: label, the embodiment, the policy fields, and the circuit that
#: fills embodiment 7's shared unit (``None`` for the others).
VIEWS = {
    "exact": ("exact tree", "ours", {"circuit": "exact"}, None),
    "full": ("full (emb. 4)", "4", {"circuit": "full"}, None),
    "grouped4": ("grouped /4 (emb. 5)", "5", {"circuit": "grouped", "group_size": 4}, None),
    "grouped8": ("grouped /8 (emb. 5)", "5", {"circuit": "grouped", "group_size": 8}, None),
    "sampled": ("sampled (emb. 6)", "6", {"circuit": "sampled"}, None),
    "shared_seed": ("shared per AP, seed's circuit (emb. 7)", "7", {"circuit": "shared"},
                    "seed"),
    "shared_exact": ("shared per AP, exact tree (emb. 7)", "7", {"circuit": "shared"},
                     "exact"),
    "exact_changed": ("exact tree, changed APs only", "ours", {"circuit": "exact"}, None),
}

#: Views built with ``view_refresh = "changed"`` (:class:`hw.dispatch.DispatcherParams`):
#: the exact view, computed only for the two APs whose status can change in a clock.
CHANGED = ("exact_changed",)

#: The view latencies measured (the exact view also at 0, the model's ideal).
LATENCIES = (1, 2)

#: What every quality figure is a ratio to: the exact view at latency 1.
REFERENCE = ("exact", 1)

#: MIAOW's dispatcher, the outside point: its area and clock through this project's flow (8
#: CUs, its default parameters), issue 34's figures on the ECP5-85k; re-measured here with
#: :mod:`hw.flow.miaow_area` from its public source (36,680 LUT4, 10,834 FF with the
#: wrapper's, 15 block RAMs, 25.3 MHz on the ECP5-45k). Its dispatch quality comes from the
#: faithful MIAOW baseline (``preset = "miaow"``: its 64-entry buffer and its clocks per WG,
#: docs/baselines.md).
MIAOW = {"luts": 36627, "ffs": 10414, "block_rams": 15, "fmax": 27.4,
         "source": "issue 34: MIAOW's dispatcher (8 CUs, default parameters) through this "
                   "project's ECP5 flow, LFE5U-85F; re-measured by python -m "
                   "hw.flow.miaow_area: 36,680 LUT4, 10,834 FF, 15 DP16KD, 25.3 MHz on the "
                   "ECP5-45k"}

#: The model's measurements: (scenario key, load, metric key, results' dotted path, higher
#: is better). The default mix at 0.9 of the reference's capacity and as written; the trace
#: at its own rates.
MEASURES = (
    ("default", 0.9, "throughput", "steady.throughput", True),
    ("default", 0.9, "latency.p99", "steady.latency.p99", False),
    ("default", "as written", "throughput", "steady.throughput", True),
    ("default", "as written", "latency.p99", "steady.latency.p99", False),
    ("llama", "as written", "throughput", "throughput", True),
    ("llama", "as written", "latency.p99", "latency.p99", False),
)

#: The scenario files of the model side.
SCENARIOS = {"default": ROOT / "configs" / "dispatch" / "default.toml",
             "llama": ROOT / "configs" / "dispatch" / "llamacpp_requests.toml"}


#: Points beyond :data:`LATENCIES`: the shared unit with the exact tree at view latencies 3
#: and 4, its pipelines of 2 and 3 (the packed word registered, the tree cut in two or three).
EXTRA_POINTS = (("shared_exact", 3), ("shared_exact", 4), ("exact_changed", 3))


def points() -> list[tuple[str, int]]:
    """Every (view, latency) of the table, in order: the exact view at 0, then each view
    at each of :data:`LATENCIES` (and :data:`EXTRA_POINTS` after its others)."""
    found = [("exact", 0)]
    for view in VIEWS:
        found += [(view, latency) for latency in LATENCIES]
        found += [point for point in EXTRA_POINTS if point[0] == view]
    return found


def point_name(view: str, latency: int) -> str:
    return f"{view} L{latency}"


def view_build(view: str, latency: int, gpu: GpuConfig, channels: int) -> DispatchShape:
    """The dispatcher build of ``view`` at ``latency`` on ``gpu``."""
    options = {"view_refresh": "changed"} if view in CHANGED else {}
    return DispatchShape.of(gpu, view_policy(view, latency), channels, **options)


def view_policy(view: str, latency: int, name: str | None = None):
    """The seed's policy as the RTL builds it (:func:`hw.flow.fpga_dispatch.shape`: EMA
    history) with ``view`` at view latency ``latency``: the age of the status the matcher
    sees. A per-instance circuit has ``circuit_latency = latency``; the shared unit shows a
    status at least one clock old (its answer is registered) and up to ``C`` clocks
    (the schedule's length) older, so ``circuit_latency = latency - 1``, and latency 0 does
    not exist for it. (Its ``circuit_latency`` is first the unit's own pipeline, up to 3:
    :attr:`hw.dispatch.views.FreeBlockViews.shared_pipeline`.)"""
    fields = dict(VIEWS[view][2])
    if fields["circuit"] == "shared":
        if latency < 1:
            raise ValueError("the shared unit's view is at least one clock old")
        fields["circuit_latency"] = latency - 1
    else:
        fields["circuit_latency"] = latency
    return with_policy(PRESETS["seed"], name=name or point_name(view, latency),
                       history="ema", **fields)


# -- area -----------------------------------------------------------------------------------------

def view_area(view: str, latency: int, work: Path, cache: Path, family_name: str = "ecp5",
              gpu: GpuConfig | None = None, channels: int = 4) -> dict:
    """The views part of ``view`` at ``latency`` on ``gpu`` (default: the default GPU):
    its own cells plus each distinct circuit's, times its instances (see the module
    docstring); ``{"status", "luts", ..., "circuits": [...]}``. Cached as a whole by what
    decides it (the build, the shared unit's circuit, the generating sources, the scripts
    and the tools), so a second run elaborates nothing; each synthesis is cached on its own
    too, so a run that stops part way keeps what it measured."""
    family = FAMILIES[family_name]
    gpu = gpu or GpuConfig()
    build = view_build(view, latency, gpu, channels)
    shared = VIEWS[view][3] or "exact"
    top = f"views_{view}_l{latency}"
    script = _part_script(family, top, None, parts=())       # the views alone
    material = {"kind": "pareto-views", "build": build.to_json(), "shared": shared,
                "sources": _source_digest(), "script": script,
                "circuit_script": _circuit_script(family), "tools": tool_versions(family),
                "use": inspect.getsource(ROLE_USE["view"])}

    def compute() -> dict:
        library = BlockLibrary()
        # Embodiment 5 as the seed builds it (the dispatcher's grouped view searches the
        # groups with the exact tree instead: the same view, fewer LUT4 from 16 groups).
        views = FreeBlockViews(build.params, library.wrap, shared_circuit=shared,
                               grouped_circuit="seed")
        top_text = verilog.convert(views, name=top, emit_src=False)
        blocks_text = library.verilog()
        identity = {"build": build.to_json(), "shared": shared,
                    "modules": sorted(library.modules), "sources": _source_digest()}
        root = work / f"{top}_{family_name}"
        own = _synthesize_cached(cache, family, root / "views",
                                 {"top.v": top_text, "blocks.v": blocks_text}, script, identity)
        if own["status"] == "failed":
            return {"status": "failed", "error": f"yosys on the views: {own['error']}"}
        _progress(f"{point_name(view, latency)}: the views' own cells", own)
        circuits = synthesize_circuits(library, family, root, cache, point_name(view, latency))
        if isinstance(circuits, str):
            return {"status": "failed", "error": circuits}
        total = combine({"views": {key: own[key] for key in COUNTS}}, circuits)
        return {"status": "ok", **total["parts"]["views"],
                "own": {k: own[k] for k in COUNTS}, "circuits": circuits}

    result = _cached(cache, material, compute)
    if result.get("cached") and result["status"] == "ok":
        print(f"    {point_name(view, latency)}: {result['luts']:,} LUT4 in the views (cached)",
              flush=True)
    return result


#: The points routed for the view's own clock limit (unless ``--no-route``): the reference,
#: the cheapest seed-002 build on the front at both latencies, and the knee, the shared unit
#: with the exact tree, at every latency (its pipelines).
ROUTED = (("exact", 1), ("exact", 2), ("shared_exact", 1), ("shared_exact", 2),
          ("shared_exact", 3), ("shared_exact", 4), ("grouped8", 1), ("grouped8", 2),
          ("exact_changed", 1), ("exact_changed", 3))


def route_view(view: str, latency: int, work: Path, cache: Path,
               timeout: float = DEFAULT_TIMEOUT) -> dict:
    """The views of one AP of the default GPU (its four VGPR, four SGPR and one LDS view,
    or its one shared unit) flat in the register wrapper, placed and routed on the smallest
    ECP5 that holds them (:func:`hw.flow.fpga_flow.run_flow`, nextpnr seed 1): the view's
    own clock limit. Not the dispatcher's: the rest of it is not in the design."""
    gpu = replace(GpuConfig(), aps=1)
    build = view_build(view, latency, gpu, 4)
    shared = VIEWS[view][3] or "exact"
    family = FAMILIES["ecp5"]
    wrapper = Path(sys.modules[RegisterWrapper.__module__].__file__).read_bytes()
    material = {"kind": "pareto-route", "build": build.to_json(), "shared": shared,
                "sources": _source_digest(), "wrapper": hashlib.sha256(wrapper).hexdigest(),
                "ports": inspect.getsource(_FlatPorts), "script": synth_script(family),
                "tools": tool_versions(family), "timeout": timeout,
                "nextpnr": nextpnr_command(family, family.devices[0])}

    def compute() -> dict:
        views = FreeBlockViews(build.params, shared_circuit=shared, grouped_circuit="seed")
        text = verilog.convert(RegisterWrapper(_FlatPorts(views)), name="top", emit_src=False)
        return run_flow(f"views {point_name(view, latency)}", max(build.params.sizes.values()),
                        "ecp5", text, str(work / f"route_{view}_l{latency}"), timeout)

    result = _cached(cache, material, compute)
    print(f"    {point_name(view, latency)}, one AP's views routed: {result['status']}, "
          f"{result.get('luts')} LUT4, {result.get('fmax')} MHz on {result.get('device')}"
          f"{' (cached)' if result.get('cached') else ''}", flush=True)
    return result


def rest_of_dispatcher(path: Path = DISPATCH_RESULTS, build: str = "exact") -> dict:
    """Every part of the default build but its views, from the measured hierarchy of the
    exact build (``default/exact/ecp5/hierarchy``), or of ``build`` (``changed``: the
    builds whose view is computed for the changed APs, their status in LUT-RAM and their
    allocator without its multiplexers); ``{"parts": ..., "total": ...}``."""
    key = f"default/{build}/ecp5/hierarchy"
    try:
        rows = json.loads(path.read_text())["rows"]
        (row,) = [r for r in rows if r.get("key") == key]
    except (OSError, ValueError, KeyError) as error:
        raise ConfigError(f"{path}: no measured hierarchy of the default {build} build "
                          f"(make fpga-report-dispatch): {error}") from None
    parts = {name: counts for name, counts in row["parts"].items() if name != "views"}
    total = {key: sum(counts.get(key, 0) for counts in parts.values()) for key in COUNTS}
    return {"parts": parts, "total": total, "date": row.get("date")}


# -- quality --------------------------------------------------------------------------------------

def _scenarios() -> tuple[dict, dict]:
    """The model side's scenarios: each shipped file with its policies replaced by every
    distinct model point and MIAOW, and one claim per point, measure and load against the
    reference. Views the model cannot tell apart (the full circuit reports the exact
    length; the shared unit's two circuits the same) share one policy. A view the
    scenario's GPU cannot have (a group size that does not divide a resource: RDNA4's one
    SGPR block) is left out of it: ``(scenarios, {(scenario, policy): why})``."""
    scenarios, left_out = {}, {}
    reference = model_point(*REFERENCE)
    for key, path in SCENARIOS.items():
        scenario = load_scenario(path)
        policies = {reference: view_policy(*REFERENCE, name=reference)}
        for view, latency in points():
            name = model_point(view, latency)
            policies.setdefault(name, view_policy(view, latency, name=name))
        policies["miaow"] = PRESETS["miaow"]
        for name, policy in list(policies.items()):
            try:
                check_policy(policy, scenario.gpu)
            except ConfigError as error:
                left_out[(key, name)] = str(error)
                del policies[name]
        claims = []
        for scenario_key, load, metric, path_, higher in MEASURES:
            if scenario_key != key:
                continue
            claims += [Claim(text=f"{name} vs {reference}: {metric}, {load}", metric=path_,
                             policy=name, baseline=reference, higher_is_better=higher,
                             loads=(load,))
                       for name in policies if name != reference]
        scenarios[key] = replace(scenario, policies=tuple(policies.values()),
                                 claims=tuple(claims))
    return scenarios, left_out


def model_point(view: str, latency: int) -> str:
    """The model's policy of a point: views with the same model share one."""
    if view in ("full", *CHANGED):
        view = "exact"
    if view == "shared_seed":
        view = "shared_exact"
    return point_name(view, latency)


def model_side(settings: Settings, cache: Path, jobs: int, quiet: bool) -> dict:
    """``{(scenario, load, metric, policy): comparison}`` with the capacities, cached by the
    model's code version, the scenario files and the settings."""
    scenarios, left_out = _scenarios()
    material = {"kind": "pareto-model", "code": code_version("dispatch"),
                "files": {k: hashlib.sha256(p.read_bytes()).hexdigest()
                          for k, p in SCENARIOS.items()},
                "scenarios": {k: [repr(s.policies), repr(s.claims)]
                              for k, s in scenarios.items()},
                "settings": repr(settings)}

    def compute() -> dict:
        prepared = [prepare(s, s.cycles)[0] for s in scenarios.values()]
        judged = evaluate(prepared, settings, quiet=quiet, jobs=jobs)
        rows = []
        for row, key in zip(judged["rows"], _row_keys(scenarios), strict=True):
            comparison = row["comparison"]
            rows.append({"scenario": key[0], "load": key[1], "metric": key[2],
                         "policy": row["policy"], "comparison": comparison,
                         "seeds": row["seeds"], "served": row["load"]["served"],
                         "offered": row["load"]["offered"]})
        return {"status": "ok", "rows": rows, "capacities": judged["capacities"],
                "runs": judged["runs"],
                "left_out": [{"scenario": k, "policy": p, "why": why}
                             for (k, p), why in left_out.items()]}

    return _cached(cache, material, compute)


def _row_keys(scenarios: dict) -> list[tuple]:
    """(scenario, load, metric) of each claim row, in :func:`evaluate`'s order."""
    keys = []
    for key, scenario in scenarios.items():
        for claim in scenario.claims:
            metric = next(m[2] for m in MEASURES if m[0] == key and m[3] == claim.metric)
            for load in claim.loads:
                keys.append((key, load, metric))
    return keys


# -- the table ------------------------------------------------------------------------------------

def pareto_front(items: list[tuple[str, float, float]]) -> set[str]:
    """The names of ``(name, cost, quality)`` that no other item beats: none costs no more
    and gives at least as much, and one of the two strictly."""
    front = set()
    for name, cost, quality in items:
        if not any(c <= cost and q >= quality and (c < cost or q > quality)
                   for other, c, q in items if other != name):
            front.add(name)
    return front


def _ratio(comparison: dict | None) -> dict | None:
    if comparison is None:
        return None
    ratio = comparison.get("ratio")
    return None if ratio is None else {k: ratio[k] for k in ("mean", "low", "high")}


def assemble(areas: dict, rest: dict, model: dict, routes: dict | None = None,
             rest_changed: dict | None = None) -> list[dict]:
    """One row per point (and MIAOW): area (the views' plus ``rest``, or ``rest_changed``
    for the :data:`CHANGED` views), the view's routed fmax where it was routed (``routes``:
    point to :func:`route_view`'s result), and every quality ratio."""
    routes = routes or {}
    by_key = {}
    for row in model["rows"]:
        by_key[(row["scenario"], row["load"], row["metric"], row["policy"])] = row
    reference = model_point(*REFERENCE)
    rows = []
    for view, latency in points():
        area = areas[(view, latency)]
        name = model_point(view, latency)
        quality = {}
        for scenario, load, metric, _, _ in MEASURES:
            key = f"{scenario}/{load}/{metric}"
            if name == reference:
                quality[key] = {"mean": 1.0, "low": 1.0, "high": 1.0}
            else:
                found = by_key.get((scenario, load, metric, name))
                quality[key] = _ratio(found["comparison"]) if found else None
        row = {"point": point_name(view, latency), "view": view, "label": VIEWS[view][0],
               "embodiment": VIEWS[view][1], "latency": latency, "model_policy": name,
               "status": area["status"], "quality": quality}
        route = routes.get((view, latency))
        if route is not None:
            row["route"] = {k: route.get(k) for k in ("status", "device", "fmax", "luts",
                                                      "ffs", "critical_cells", "error")}
        if area["status"] == "ok":
            row["views"] = {k: area[k] for k in COUNTS}
            others = rest_changed if view in CHANGED and rest_changed else rest
            row["total"] = {k: area[k] + others["total"][k] for k in COUNTS}
            row["circuits"] = area["circuits"]
        else:
            row["error"] = area.get("error", "")
        rows.append(row)
    quality = {}
    for scenario, load, metric, _, _ in MEASURES:
        found = by_key.get((scenario, load, metric, "miaow"))
        quality[f"{scenario}/{load}/{metric}"] = _ratio(found["comparison"]) if found else None
    rows.append({"point": "MIAOW", "view": None, "label": "MIAOW's dispatcher (outside)",
                 "embodiment": "", "latency": None, "model_policy": "miaow", "status": "ok",
                 "total": {"luts": MIAOW["luts"], "ffs": MIAOW["ffs"],
                           "block_rams": MIAOW["block_rams"]},
                 "fmax": MIAOW["fmax"], "source": MIAOW["source"], "quality": quality})
    front_key = "/".join(map(str, FRONT_MEASURE))
    items = [(r["point"], r["total"]["luts"], r["quality"][front_key]["mean"])
             for r in rows if r["status"] == "ok" and r["quality"].get(front_key)]
    front = pareto_front(items)
    for row in rows:
        row["front"] = row["point"] in front
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.flow.pareto", description=__doc__
                                     .split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/pareto"))
    parser.add_argument("--seeds", type=int, default=5, help="workload seeds (default 5)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--cycles", type=int, default=None,
                        help="cycle limit of the generated workload's runs (default: the "
                             "scenario's)")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help=f"where the rows are written (default {RESULTS.relative_to(ROOT)})")
    parser.add_argument("--no-route", action="store_true",
                        help="do not place and route one AP's views of the routed points")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds allowed to one nextpnr run")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        settings = Settings(seeds=args.seeds, cycles=args.cycles)
    except ValueError as error:
        print(f"error: --seeds: {error}", file=sys.stderr)
        return 2
    for option, path, kind in (("--out", args.out, "a folder"),
                               ("--results", args.results, "a file")):
        problem = output_problem(path, kind)
        if problem:
            print(f"error: {option} {path}: {problem} (checked before the run; {option} "
                  f"names {kind})", file=sys.stderr)
            return 2
    cache = args.out / "cache"
    try:
        rest = rest_of_dispatcher()
        rest_changed = rest_of_dispatcher(build="changed")
        areas = {}
        for view, latency in points():
            areas[(view, latency)] = view_area(view, latency, args.out / "work", cache)
        routes = {}
        if not args.no_route:
            tasks = [(*point, args.out / "work", cache, args.timeout) for point in ROUTED]
            routes = dict(zip(ROUTED, run_all(route_view, tasks, args.jobs), strict=True))
        print("  the model side (claims over seeds) ...", flush=True)
        model = model_side(settings, cache, args.jobs, args.quiet)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped: what finished is cached", file=sys.stderr)
        return 130
    rows = assemble(areas, rest, model, routes, rest_changed)
    print_table(f"views of the default dispatcher: LUT4 (ECP5) against dispatch quality, "
                f"ratios to exact L1 over {args.seeds} seeds", HEADERS, table_rows(rows))
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "pareto.md").write_text(markdown(rows, rest, args.seeds, rest_changed))
        plot(rows, args.out / "pareto.png")
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps({
            "command": "make pareto", "tools": tool_versions(FAMILIES["ecp5"]),
            "mapper": MAPPER, "seeds": args.seeds, "reference": point_name(*REFERENCE),
            "rest": rest, "rest_changed": rest_changed, "capacities": model["capacities"],
            "rows": rows}, indent=1) + "\n")
    except OSError as error:
        print(f"error: {error.filename}: cannot write: {error.strerror} (every measurement is "
              f"cached in {cache}: run again with a writable path)", file=sys.stderr)
        return 2
    print(f"  written: {args.results}, {args.out / 'pareto.md'}, {args.out / 'pareto.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
