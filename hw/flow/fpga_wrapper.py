"""A register wrapper that puts any max-free-block circuit on an FPGA with four pins.

Synthesis and place-and-route measure a circuit best between registers: the wrapper gives the
circuit under test (the DUT) a register on every input and on every output, and keeps the pin
count tiny by loading the inputs serially and folding the outputs to one bit, so that a design
of a thousand input bits still fits the smallest package and nothing is optimised away.
"""

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["STALL_INPUTS", "RegisterWrapper", "data_inputs", "input_ports", "output_ports"]


def _ports(component: wiring.Component, flow) -> list[tuple[str, Signal]]:
    # The component's own ports of one direction, in signature order (flattened, so that a
    # structured port would contribute its leaves; a struct view counts as its raw bits).
    return [(".".join(map(str, path)), Value.cast(value))
            for path, member, value in component.signature.flatten(component)
            if member.flow == flow]


#: The stall inputs of a pipelined block, which the wrapper holds at 1.
STALL_INPUTS = ("valid", "enable")


def input_ports(component: wiring.Component) -> list[tuple[str, Signal]]:
    """``(name, signal)`` for every input port of ``component``, in signature order."""
    return _ports(component, In)


def data_inputs(component: wiring.Component) -> list[tuple[str, Signal]]:
    """The input ports of ``component`` but its stall inputs."""
    return [(name, signal) for name, signal in input_ports(component)
            if name not in STALL_INPUTS]


def output_ports(component: wiring.Component) -> list[tuple[str, Signal]]:
    """``(name, signal)`` for every output port of ``component``, in signature order."""
    return _ports(component, Out)


class RegisterWrapper(wiring.Component):
    """Serial-in, parallel-load registers in front of a DUT and a one-bit fold behind it.

    Every clock, ``serial_in`` enters bit 0 of a shift register as wide as all of the DUT's data
    inputs together (its ``status``, and its ``request`` where it has one, in signature order);
    when ``load`` is high the shift register is copied into the input register, whose bits drive
    the DUT's inputs. The stall inputs of a pipelined DUT, ``valid`` and ``enable`` (see
    :data:`hw.maxblock.PIPELINE_CONTRACT`), are held at 1: the circuit is measured as a free-
    running pipeline (what driving ``enable`` costs is measured apart, see the README). The XOR
    of every bit of every DUT output (``result_valid`` too) is registered and drives
    ``serial_out``. With a DUT of latency 1 or more the slowest path is therefore the DUT's own
    logic between the input register and the DUT's first pipeline register (or its output
    register), which is what the timing report measures.

    The wrapper owns the ``sync`` clock domain: it has no reset (the registers start from
    their initial values), so a reset net does not load every flip-flop of the design, and its
    clock is the ``clk`` port.

    Parameters
    ----------
    dut : wiring.Component
        The circuit under test. Its input and output ports must be plain signals; it may use
        the ``sync`` domain.

    Attributes
    ----------
    clk : In(1)
        The clock of every register.
    serial_in : In(1)
        Shifted into bit 0 of the shift register every clock.
    load : In(1)
        Copies the shift register into the input register at the next clock edge.
    serial_out : Out(1)
        The XOR of all DUT output bits, one clock later.
    input_width : int
        Width of the shift register and of the input register.
    """

    clk: In(1)
    serial_in: In(1)
    load: In(1)
    serial_out: Out(1)

    def __init__(self, dut: wiring.Component):
        # A rejected argument leaves no component to use: keep Amaranth from reporting the
        # half-built object as "created but never used" on top of the exception.
        if not isinstance(dut, wiring.Component):
            self._MustUse__silence = True
            raise TypeError(f"The circuit under test must be a wiring.Component, not {dut!r}")
        if not data_inputs(dut) or not output_ports(dut):
            self._MustUse__silence = True
            raise ValueError("The circuit under test must have at least one input and one "
                             "output port")
        self._dut = dut
        super().__init__()

    @property
    def dut(self) -> wiring.Component:
        """The circuit under test."""
        return self._dut

    @property
    def input_width(self) -> int:
        return sum(len(signal) for _, signal in data_inputs(self._dut))

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync", reset_less=True)
        m.d.comb += ClockSignal("sync").eq(self.clk)
        m.submodules.dut = dut = self._dut

        width = self.input_width
        shift = Signal(width, name="shift")
        loaded = Signal(width, name="loaded")
        m.d.sync += shift.eq(Cat(self.serial_in, shift[:-1]) if width > 1 else self.serial_in)
        with m.If(self.load):
            m.d.sync += loaded.eq(shift)

        offset = 0
        for _, signal in data_inputs(dut):
            m.d.comb += signal.eq(loaded[offset:offset + len(signal)])
            offset += len(signal)
        for name, signal in input_ports(dut):
            if name in STALL_INPUTS:
                m.d.comb += signal.eq(1)

        # XOR of all output bits: it depends on every one of them, so no DUT output (and no
        # logic behind it) can be removed by synthesis.
        folded = Cat(*(signal for _, signal in output_ports(dut))).xor()
        m.d.sync += self.serial_out.eq(folded)
        return m
