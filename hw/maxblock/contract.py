"""The pipeline contract of the free-block circuits, and the helpers every circuit shares.

Seed 002 gives its circuits one clock (embodiment 4) or three registered steps (d2, d3, d4);
every block of this package with a latency of one clock or more has the same stall interface,
:data:`PIPELINE_CONTRACT`: ``valid`` travels with the data, ``enable`` is the clock enable of
the whole pipeline and ``result_valid`` says which outputs answer a word. Only that control
state has a reset; the data registers have none.

Model twin: :class:`model.maxblock.PipelineModel`, the cycle-exact model of a registered
circuit (the same latency, the same hold on ``enable``, the same reset of ``result_valid``).

Here also the pieces of circuit all four blocks use: the reset-less data register, the
registered ``result_valid`` (:func:`_valid_pipe`), the seed's downward scan
(:func:`scan_down`, a tree of multiplexers ``ceil(log2(len(flags)))`` levels deep) and the
read-only parameters (:class:`_BlockParameters`). No logic of its own, so no latency.
"""

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PIPELINE_CONTRACT", "named", "pipeline_ports", "scan_down"]

#: The stall interface of every block with a latency of one clock or more, in its own words.


PIPELINE_CONTRACT = """\
``valid`` (in, default 1) marks the inputs of a clock that carry a word to answer; ``enable``
(in, default 1) is the clock enable of the whole pipeline: while it is 0 every register holds,
the inputs of that clock are ignored and the outputs stay as they are. ``result_valid`` (out)
is high when the outputs answer a word presented with ``valid``: the one captured at the
``latency``-th enabled clock edge before. A consumer takes one result in each clock in which
``result_valid`` and ``enable`` are both high; a word presented every clock with ``enable``
high comes out ``latency`` clocks later.

Read after write: the outputs describe the inputs as they were ``latency`` enabled clocks
earlier. A block taken (its status bit changed) in clock t still reads as free in the outputs
until clock t + latency; an allocator that acts on them must allow for what it allocated in
the last ``latency`` clocks (the dispatcher model counts these as stale aborts).

Reset clears only the control state: ``result_valid`` reads 0 until a word presented with
``valid`` after the reset has come through. The data registers have no reset (a reset net
would reach every one of them for nothing); while ``result_valid`` is 0 the other outputs are
not specified (they show whatever passed through last; after power-on, X in a four-state
simulator such as Icarus, zero in Verilator and Amaranth's simulator)."""


def pipeline_ports(latency: int) -> dict:
    """The stall interface's ports for a block of ``latency`` clocks (none when it is 0)."""
    if not latency:
        return {}
    return {"valid": In(1, init=1), "enable": In(1, init=1), "result_valid": Out(1)}


def _data_register(m: Module, value: Value, name: str, enable: Value) -> Signal:
    """A register of the datapath: no reset, loads when ``enable`` is high."""
    register = Signal(len(value), name=name, reset_less=True)
    with m.If(enable):
        m.d.sync += register.eq(value)
    return register


def _reset_less_outputs(component: wiring.Component, names: Sequence[str]) -> None:
    """Make the output ports ``names`` of ``component`` registers without reset.

    They are the block's data outputs, registered in the block (see PIPELINE_CONTRACT), and
    the data registers have no reset; ``wiring`` gives every port signal one. Each is replaced
    by a reset-less signal of the same shape, so the signature still holds; registering the
    value in a signal of its own and assigning that to the port would make the two one net,
    and the Verilog would declare the second name and read it nowhere.
    """
    for name in names:
        shape = component.signature.members[name].shape
        setattr(component, name, Signal(shape, name=name, reset_less=True))


def _drive(m: Module, port: Signal, value: Value) -> None:
    """``port`` = ``value``, combinationally. A port of two bits or more is assigned in two
    parts: assigned whole from a named signal, the port would become that signal's net, and
    the Verilog would declare the signal's name and read it nowhere (see _bundle)."""
    if len(port) < 2:
        m.d.comb += port.eq(value)
        return
    value = _resized(value, len(port))
    m.d.comb += [port[:1].eq(value[:1]), port[1:].eq(value[1:])]


def _resized(value: Value, width: int) -> Value:
    """``value`` cut or zero-extended to exactly ``width`` bits."""
    if len(value) >= width:
        return value[:width]
    return Cat(value, Const(0, width - len(value)))


def _valid_pipe(m: Module, block) -> None:
    """``result_valid``: ``block.valid`` delayed by ``block.latency`` enabled clocks. This is
    the block's control state, so it alone has a reset."""
    value = block.valid
    if block.latency > 1:
        pipe = Signal(block.latency - 1, name="valid_pipe")
        with m.If(block.enable):
            m.d.sync += pipe.eq(Cat(value, pipe[:-1]) if block.latency > 2 else value)
        value = pipe[-1]
    with m.If(block.enable):
        m.d.sync += block.result_valid.eq(value)


def scan_down(flags: Sequence[tuple[Value, int]]) -> Value:
    """The constant paired with the highest asserted flag, 0 when no flag is set.

    This is the seed's downward scan (d432: read from the top, stop at the first 1) built as a
    balanced tree of 2:1 multiplexers, so its depth is ``ceil(log2(len(flags)))`` levels rather
    than a chain as long as the list. It does not rely on the flags forming a thermometer code.
    """
    def tree(part):
        if len(part) == 1:
            flag, value = part[0]
            return flag, Const(value)
        half = len(part) // 2
        low_any, low_value = tree(part[:half])
        high_any, high_value = tree(part[half:])
        return high_any | low_any, Mux(high_any, high_value, low_value)

    any_set, value = tree(list(flags))
    return Mux(any_set, value, 0)


def named(m: Module, name: str, value: Value) -> Signal:
    """``value`` as a named combinational signal (its users then share one copy of it)."""
    signal = Signal(len(value), name=name)
    m.d.comb += signal.eq(value)
    return signal


class _BlockParameters:
    """The read-only parameters every free-block component has (set by its constructor)."""

    @property
    def n(self) -> int:
        """Number of blocks (width of ``status``)."""
        return self._n

    @property
    def free_level(self) -> int:
        """The level of a free block in ``status``."""
        return self._free_level

    @property
    def latency(self) -> int:
        """Clocks from the inputs to the outputs."""
        return self._latency


def _with_contract_notes(block: type) -> type:
    """Class decorator: append :data:`PIPELINE_CONTRACT` to ``block``'s docstring as its Notes
    section (every circuit's docstring ends with the contract in full)."""
    block.__doc__ += ("\n    Notes\n    -----\n    With ``latency`` of one clock or more, the "
                      "stall interface (:data:`PIPELINE_CONTRACT`):\n\n"
                      + "\n".join(("    " + line) if line else ""
                                  for line in PIPELINE_CONTRACT.splitlines()) + "\n")
    return block
