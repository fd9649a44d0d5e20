"""Each part of the RTL dispatcher's decision as a pipeline stage of its own: where its clock
period goes.

``python -m hw.flow.dispatch_stages`` (``make fpga-report-stages``) places and routes every
part of the one-clock decision alone, between the register wrapper's input and output
registers (:class:`hw.flow.fpga_wrapper.RegisterWrapper`, the flow of
:func:`hw.flow.fpga_report.run_flow`: Yosys ``synth_ecp5`` with the ``abc9 -fast`` mapping,
nextpnr-ecp5 on the smallest device that holds it), for the small configuration of
:mod:`hw.flow.fpga_dispatch` with the exact view. A part's fmax is the rate it would run at
if the decision were cut into stages at its borders, and ``1000 / fmax`` is what it adds to the
one-clock decision's period:

* ``matcher``: every head against every AP (R x P x Q compares, embodiment 8's pointer);
* ``selector``: the target WG and the target AP, every selection rule and AP choice;
* ``channel choice``: the selector built for one AP, so that the AP choice is a constant and
  what remains is the WG choice (priority, windows, a41/a42 flags and LFSR, the baselines);
* ``AP choice``: the selector built for one channel, so that the WG choice is a constant and
  what remains is the AP choice (round robin, lowest, embodiment 9's products, embodiment 10's
  history, the combined score);
* ``selector_all``, ``ap_all``: the same two built with ``combined_scale = "all"`` (the
  combined score's maxima taken over every AP, so that its products do not wait for the match
  and the chosen channel);
* ``allocator``: the chosen AP's status words (P:1 multiplexers) through ``2Q + 1`` exact
  first-fit trees;
* ``first fit``: one exact first-fit tree of the largest resource, alone.

The record and status update after the allocation is not a part of its own; the whole
decision (``hw.flow.fpga_dispatch``) holds it. Results go to ``build/reports/
dispatch_stages.{md,json}`` and ``results/dispatch_stages.json``; runs are cached like the
other reports' (by the Verilog, the tools and the flow).
"""

import argparse
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

from amaranth.back import verilog

from hw.dispatch.allocator import Allocator
from hw.dispatch.matcher import Matcher
from hw.dispatch.params import DispatcherParams
from hw.dispatch.pipeline import PipelinedSelector, ScorePipeline
from hw.dispatch.selector import Selector
from hw.flow.dispatch_build import _source_digest
from hw.flow.fpga_dispatch import CONFIGURATIONS, RESULTS, shape
from hw.flow.fpga_report import DEFAULT_TIMEOUT, FAMILIES, run_flow, synth_script, tool_versions
from hw.flow.fpga_wrapper import RegisterWrapper
from hw.maxblock import FirstFit

__all__ = ["PARTS", "build_part", "format_table", "main", "write_results"]

FLOW_VERSION = 2

#: The parts, in table order, with what each one is.
PARTS = {
    "matcher": "R x P x Q fit compares",
    "selector": "WG choice and AP choice",
    "channel": "selector, WG choice only (P = 1)",
    "ap": "selector, AP choice only (R = 1)",
    "selector_all": "selector, combined score scaled by every AP",
    "ap_all": "AP choice only, scaled by every AP",
    "allocator": "P:1 mux + 2Q+1 first-fit trees",
    "first_fit": "one first-fit circuit (hw.maxblock.FirstFit)",
    "choice": "pipelined: WG choice + AP by the registered order",
    "scores": "pipelined: score pipeline, 5 register layers",
    "plan": "pipelined: P:1 mux + first-fit trees over 3 clocks",
}

#: The parts of the pipelined decision (the ``pipelined`` view of hw.flow.fpga_dispatch).
PIPELINED = ("choice", "scores", "plan")

STAGES_RESULTS = RESULTS.with_name("dispatch_stages.json")


def _params(configuration: str, *, aps: int | None = None, channels: int | None = None,
            every: bool = False, pipelined: bool = False) -> DispatcherParams:
    build = shape(configuration, "pipelined" if pipelined else "exact")
    if every:
        build = replace(build, policy=replace(build.policy, combined_scale="all"))
    gpu = build.gpu if aps is None else replace(build.gpu, aps=aps)
    count = len(build.channels) if channels is None else channels
    return DispatcherParams.build(gpu, build.policy, count, queue_depth=build.queue_depth,
                                  id_bits=build.id_bits, weight_bits=build.weight_bits)


#: The component each part is.
BUILDERS = {"matcher": Matcher, "selector": Selector, "channel": Selector, "ap": Selector,
            "selector_all": Selector, "ap_all": Selector, "allocator": Allocator,
            "first_fit": FirstFit, "choice": PipelinedSelector,
            "scores": ScorePipeline,
            "plan": lambda params: Allocator(params, latency=params.pipeline - 1)}


def _part_params(configuration: str, part: str):
    """What ``part`` is built from: :class:`DispatcherParams` (one AP for ``channel``, one
    channel for ``ap`` and ``ap_all``, every AP's scale for the ``_all`` parts), or the block
    count of the largest resource for ``first_fit``."""
    if part not in PARTS:
        raise ValueError(f"Part must be one of {', '.join(PARTS)}, not {part!r}")
    if part == "first_fit":
        return max(_params(configuration).sizes.values())
    return _params(configuration, aps=1 if part == "channel" else None,
                   channels=1 if part in ("ap", "ap_all") else None,
                   every=part in ("selector_all", "ap_all"), pipelined=part in PIPELINED)


def build_part(configuration: str, part: str):
    """A new component for ``part`` (a key of :data:`PARTS`) of ``configuration``."""
    parameters = _part_params(configuration, part)          # checks the name
    return BUILDERS[part](parameters)


def _identity(configuration: str, part: str) -> dict:
    """What decides the Verilog of ``part``: its parameters and the sources that build it. Not
    the text, which Amaranth changes from one Python process to the next (a submodule's port
    order follows string hashes), so a key over it never hits in a new run."""
    own = [sys.modules[RegisterWrapper.__module__].__file__, __file__]
    return {"part": part, "parameters": repr(_part_params(configuration, part)),
            "sources": _source_digest(),
            "flow": [hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in own]}


def measure(configuration: str, part: str, work: Path, cache: Path, timeout: float) -> dict:
    """Synthesis and place-and-route of ``part`` in the register wrapper (cached by
    :func:`_identity`, the flow, the tools and the time limit)."""
    family = FAMILIES["ecp5"]
    material = {"version": FLOW_VERSION, "identity": _identity(configuration, part),
                "script": synth_script(family), "tools": tool_versions(family),
                "timeout": timeout}
    key = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    path = cache / f"stage_{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    text = verilog.convert(RegisterWrapper(build_part(configuration, part)), name="top",
                           emit_src=False)
    directory = work / f"{configuration}_{part}"
    result = run_flow(part, 0, family.name, text, str(directory), timeout, key=key)
    stat = directory / "stat.json"
    if stat.exists():
        cells = json.loads(stat.read_text())["design"]["num_cells_by_type"]
        result["multipliers"] = cells.get("MULT18X18D", 0)
    result.update(configuration=configuration, part=part)
    if result["status"] == "ok":
        cache.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1))
    return result


def format_table(results: list[dict]) -> str:
    """Markdown: one row per part, its cells, depth, device, fmax and the period it takes."""
    lines = ["| part | what | LUT4 | carries | MULT18X18D | logic depth | device | fmax | "
             "period |", "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
    for r in results:
        ok = r["status"] == "ok"
        fmax = f"{r['fmax']:.1f} MHz" if ok else r["status"]
        period = f"{1000 / r['fmax']:.1f} ns" if ok else "-"
        lines.append(f"| {r['part']} | {PARTS[r['part']]} | {r['luts'] or 0:,} | "
                     f"{r['carries'] or 0:,} | {r.get('multipliers', 0)} | {r['depth']} | "
                     f"{r['device'] or '-'} | {fmax} | {period} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.flow.dispatch_stages",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--configuration", default="small", choices=tuple(CONFIGURATIONS))
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--out", type=Path, default=Path("build/reports"))
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    parser.add_argument("--results", default=str(STAGES_RESULTS),
                        help="the results file kept in the repository ('' for none)")
    args = parser.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        print(f"error: --parts: {', '.join(unknown) or 'none given'}; known: "
              f"{', '.join(PARTS)}", file=sys.stderr)
        return 2
    results = []
    for part in parts:
        result = measure(args.configuration, part, args.out / "stages", args.out / "cache",
                         args.timeout)
        print(f"  {part}: {result['status']}, {result.get('fmax')} MHz", flush=True)
        results.append(result)
    table = format_table(results)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dispatch_stages.md").write_text(table + "\n")
    (args.out / "dispatch_stages.json").write_text(json.dumps(results, indent=1))
    if args.results:
        write_results(Path(args.results), results)
    return 0


def write_results(path: Path, results: list[dict]) -> None:
    """Merge the measured rows of ``results`` into the results file at ``path`` (a row per
    configuration and part; rows not measured this time are kept, failed ones not written)."""
    rows = {}
    if path.exists():
        rows = {(r["configuration"], r["part"]): r
                for r in json.loads(path.read_text()).get("rows", [])}
    for r in results:
        if r["status"] == "ok":
            rows[(r["configuration"], r["part"])] = (
                {k: r.get(k) for k in ("configuration", "part", "status", "luts", "carries",
                                       "ffs", "multipliers", "depth", "device", "fmax",
                                       "critical_cells")}
                | {"tools": tool_versions(FAMILIES["ecp5"])})
    order = {part: index for index, part in enumerate(PARTS)}
    kept = sorted(rows.values(), key=lambda r: (r["configuration"], order.get(r["part"], 99)))
    path.write_text(json.dumps({"command": "python -m hw.flow.dispatch_stages", "rows": kept},
                               indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
