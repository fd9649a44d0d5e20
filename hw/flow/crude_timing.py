"""A crude static timing pass over a flat ECP5 netlist (``synth_ecp5 -json``), in seconds.

nextpnr's placement of the default dispatcher on the LFE5U-85F takes 30-45 minutes before it
estimates a clock; this pass reads the netlist Yosys wrote and ranks the register-to-register
paths in a few seconds, so a change can be compared with the build before it first. Its
delays are fixed charges, not a timing model of the part:

=====================================  ========
a LUT4                                  0.24 ns
a net between cells                     0.90 ns
a slice multiplexer (PFUMX, L6MUX21)    0.15 ns
into or out of a carry cell (CCU2C)     0.30 ns
along a carry chain, per cell           0.03 ns
an asynchronous LUT-RAM read            0.50 ns
a multiplier (MULT18X18D, ALU54B)       4.00 ns
=====================================  ========

No net is charged between a LUT4 and the slice multiplexer it feeds, nor along a chain.
Paths start at flip-flops, block RAM outputs and the top's inputs; they end at flip-flops'
data, clock-enable and set/reset inputs and at the inputs of block RAM, LUT-RAM and
multipliers. Its figures compare builds with one another only: on the small changed-APs
build it read 16.4 ns where nextpnr routed 20.7, and on the default build at 95 % of the
85F nextpnr's placed paths are about 1.9 times its figures (docs/dispatch_rtl.md).

Usage::

    python -m hw.flow.crude_timing netlist.json [--top N] [--path REGEX] [--nets REGEX]
"""

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DELAYS", "Timing", "main"]

DELAYS = {"lut": 0.24, "net": 0.90, "mux": 0.15, "carry_io": 0.30, "carry_chain": 0.03,
          "lutram": 0.50, "multiplier": 4.00}

#: Cells whose outputs start paths (their inputs end them).
_REGISTERS = ("TRELLIS_FF", "DP16KD")
#: Cells whose inputs end paths besides the registers'.
_ENDS = ("DP16KD", "TRELLIS_DPR16X4", "MULT18X18D")
_CLOCKS = re.compile(r"^(CLK|WCK|CLKA|CLKB)\d*$")


@dataclass
class Timing:
    """The arrival time of every net bit of ``module`` (a module of a Yosys JSON netlist)."""

    module: dict
    delays: dict = field(default_factory=lambda: dict(DELAYS))

    def __post_init__(self):
        cells = self.module["cells"]
        self._driver = {}
        for name, cell in cells.items():
            for port, direction in cell["port_directions"].items():
                if direction == "output":
                    for bit in self._bits(cell, port):
                        self._driver[bit] = (name, port)
        self._names = {}
        for name, net in self.module["netnames"].items():
            for i, bit in enumerate(net["bits"]):
                if isinstance(bit, str):
                    continue
                label = f"{name}[{i}]" if len(net["bits"]) > 1 else name
                old = self._names.get(bit)
                # A public name over Yosys's ``$`` names; the shorter among equals.
                if old is None or (old.startswith("$"), len(old)) > (label.startswith("$"),
                                                                      len(label)):
                    self._names[bit] = label
        self._arrival, self._from = {}, {}

    @staticmethod
    def _bits(cell, port):
        return [bit for bit in cell["connections"].get(port, []) if not isinstance(bit, str)]

    def name(self, bit) -> str:
        return self._names.get(bit, str(bit))

    def _driver_type(self, bit) -> str | None:
        source = self._driver.get(bit)
        return self.module["cells"][source[0]]["type"] if source else None

    def _inputs(self, cell):
        """``(bits, cell delay, net delay)`` groups of the inputs of ``cell``'s output."""
        d = self.delays
        kind = cell["type"]
        ins = [(port, self._bits(cell, port)) for port, direction
               in cell["port_directions"].items() if direction == "input"
               and not _CLOCKS.match(port)]
        if kind == "LUT4":
            return [(bits, d["lut"], d["net"]) for _, bits in ins]
        if kind in ("PFUMX", "L6MUX21"):
            # A slice multiplexer's data inputs from the LUTs or multiplexers below it in the
            # same block: no net.
            fed, below = ((("ALUT", "BLUT"), ("LUT4",)) if kind == "PFUMX"
                          else (("D0", "D1"), ("PFUMX", "L6MUX21")))
            return [(bits, d["mux"], 0.0 if port in fed and all(
                self._driver_type(bit) in below for bit in bits) else d["net"])
                for port, bits in ins]
        if kind == "CCU2C":
            return [(bits, d["carry_io"], d["net"]) for port, bits in ins if port != "CIN"]
        if kind == "TRELLIS_DPR16X4":
            return [(bits, d["lutram"], d["net"]) for port, bits in ins if port == "RAD"]
        if kind.startswith("MULT18") or kind.startswith("ALU54"):
            return [(bits, d["multiplier"], d["net"]) for _, bits in ins]
        return [(bits, d["lut"], d["net"]) for _, bits in ins]

    def _groups(self, bit):
        """The input groups of ``bit``'s driver, or None where a path starts."""
        source = self._driver.get(bit)
        cell = self.module["cells"][source[0]] if source else None
        if cell is None or cell["type"] in _REGISTERS:
            return None
        groups = self._inputs(cell)
        if cell["type"] == "CCU2C":
            carry = "carry_chain" if source[1] == "COUT" else "carry_io"
            groups.append((self._bits(cell, "CIN"), self.delays[carry], 0.0))
        return groups

    def arrival(self, bit) -> float:
        """When ``bit`` settles at its driver's output (0 where a path starts): a depth-first
        walk without recursion, so a path of any length is fine."""
        # (bit, None): not yet expanded; (bit, groups): its inputs are done.
        stack, open_ = [(bit, None)], set()
        while stack:
            current, expanded = stack.pop()
            if current in self._arrival:
                continue
            if expanded is None:
                groups = self._groups(current)
                if groups is None:
                    self._arrival[current] = 0.0
                    continue
                if current in open_:
                    raise ValueError(f"combinational loop through {self.name(current)}")
                open_.add(current)
                stack.append((current, groups))
                stack.extend((b, None) for bits, _, _ in groups for b in bits
                             if b not in self._arrival)
                continue
            open_.discard(current)
            best, via = 0.0, None
            for bits, cell_delay, net_delay in expanded:
                for b in bits:
                    t = self._arrival[b] + net_delay + cell_delay
                    if t > best:
                        best, via = t, b
            self._arrival[current], self._from[current] = best, via
        return self._arrival[bit]

    def endpoints(self) -> tuple[dict[str, tuple[float, object]], list[float]]:
        """The worst arrival (net delay included) at each group of endpoints, with the bit
        it arrives at (a register by its output's name less its index, a block's input by
        cell type and port), and the arrival at every endpoint bit."""
        worst, every = defaultdict(lambda: (0.0, None)), []
        for name, cell in self.module["cells"].items():
            kind = cell["type"]
            if kind == "TRELLIS_FF":
                q = self._bits(cell, "Q")
                group = re.sub(r"\[\d+\]$", "", self.name(q[0]) if q else name)
                ports = ("DI", "CE", "LSR")
            elif kind in _ENDS:
                group, ports = None, [p for p, d in cell["port_directions"].items()
                                      if d == "input" and not _CLOCKS.match(p)]
            else:
                continue
            for port in ports:
                label = group or f"{kind}:{port.rstrip('0123456789')}"
                for bit in self._bits(cell, port):
                    t = self.arrival(bit) + self.delays["net"]
                    every.append(t)
                    if t > worst[label][0]:
                        worst[label] = (t, bit)
        return dict(worst), every

    def path(self, bit) -> list[tuple[float, str, str]]:
        """``(arrival, cell type, net)`` from ``bit`` back to where its path starts."""
        steps = []
        while bit is not None:
            source = self._driver.get(bit)
            kind = self.module["cells"][source[0]]["type"] if source else "input"
            steps.append((self.arrival(bit), kind, self.name(bit)))
            bit = self._from.get(bit)
        return steps


def _top(netlist: dict) -> dict:
    modules = netlist["modules"]
    return next((m for m in modules.values() if m.get("attributes", {}).get("top")),
                next(iter(modules.values())))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("netlist", type=Path)
    parser.add_argument("--top", type=int, default=25, help="endpoint groups to list")
    parser.add_argument("--path", help="print the worst path into the first group matching")
    parser.add_argument("--nets", help="print the arrival of the nets matching")
    args = parser.parse_args(argv)
    try:
        timing = Timing(_top(json.loads(args.netlist.read_text())))
    except OSError as error:
        print(f"{args.netlist}: cannot be read ({error.strerror})", file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError):
        print(f"{args.netlist}: not a Yosys JSON netlist (synth_ecp5 -json writes one)",
              file=sys.stderr)
        return 2
    try:
        groups, every = timing.endpoints()
    except ValueError as error:                 # a combinational loop: no arrival times
        print(f"{args.netlist}: {error}", file=sys.stderr)
        return 2
    ends = sorted(groups.items(), key=lambda item: -item[1][0])
    print(f"{len(every)} endpoint bits in {len(ends)} groups; bits over "
          + ", ".join(f"{limit} ns: {sum(t > limit for t in every)}" for limit in (12, 16, 18)))
    for group, (t, _) in ends[:args.top]:
        print(f"{t:7.2f}  {group}")
    if args.path:
        match = next(((g, v) for g, v in ends if re.search(args.path, g)), None)
        if match is None:
            print(f"no endpoint group matches {args.path!r}", file=sys.stderr)
            return 1
        group, (t, bit) = match
        print(f"\nthe worst path into {group} ({t:.2f} ns):")
        for arrival, kind, net in timing.path(bit):
            print(f"{arrival:7.2f}  {kind:16} {net}")
    if args.nets:
        for bit, label in timing._names.items():
            if re.search(args.nets, label):
                print(f"{timing.arrival(bit):7.2f}  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
