"""Pieces of combinational logic and the pipeline built from them (the exact circuits).

A :class:`_Piece` says which values it reads and which it makes; :func:`_build_pipeline`
builds a sequence of pieces, each a submodule named after it, and puts a reset-less data
register on every value that crosses a chosen boundary (only the values a later piece
reads). This is how :class:`hw.maxblock.exact.ExactMaxFreeBlock` (seed 002, the first fit of
embodiment 1's step a43) and the exact form of :class:`hw.shared_maxblock.SharedMaxFreeBlock`
(embodiment 7) are pipelined to any latency up to one register per boundary.

Model twin: :class:`model.maxblock.PipelineModel` (a word in, its answer ``latency`` enabled
clocks later). Contract: the registers load on ``enable`` and have no reset, as
:data:`hw.maxblock.contract.PIPELINE_CONTRACT` says of every data register; the latency is the
number of boundaries cut (the caller adds the output register).
"""

from collections.abc import Callable, Sequence

from amaranth.hdl import Cat, Const, Module, Signal, Value

from hw.maxblock.arith import _is_wiring
from hw.maxblock.contract import _data_register, _drive, named

__all__: list[str] = []


def _label(key: tuple) -> str:
    return "_".join(map(str, key))


def _name(key: tuple) -> str:
    """The signal name of a value of the tree: ``level5_node3_best``, ``join_fit``."""
    if key[0] in ("node", "cmp"):
        return f"level{key[1]}_node{key[2]}_{key[3]}"
    return "_".join(map(str, key))


def _bundle(m: Module, name: str, parts: Sequence[Value]) -> Signal:
    """One named signal made of two or more ``parts``, assigned part by part.

    Why part by part: Amaranth's back end treats a signal assigned whole from an expression
    that is not one cell (a concatenation, a slice) as another name for those nets; its
    readers then read the nets, and the Verilog declares the name and never reads it. Assigned
    in parts, the signal is one net of its own that every reader shares (a value used twice
    without a signal of its own may be built twice). For one cell (an operator, a
    multiplexer) :func:`named` is enough.
    """
    assert len(parts) >= 2, "one part: use named()"
    signal = Signal(sum(len(part) for part in parts), name=name)
    offset = 0
    for part in parts:
        m.d.comb += signal[offset:offset + len(part)].eq(part)
        offset += len(part)
    return signal


class _Piece:
    """One combinational piece of a pipeline: the values it reads and those it makes.

    ``consumes`` and ``produces`` map value keys to widths, in port order; ``build(m, get)``
    makes the produced values in module ``m``, reading consumed ones with ``get(key)``.
    """

    def __init__(self, name: str, consumes: dict, produces: dict,
                 build: Callable[[Module, Callable[[tuple], Value]], dict]):
        self.name, self.consumes, self.produces, self.build = name, consumes, produces, build


def _consumed(uses: dict) -> dict:
    """``{key: width}`` in a fixed order; "full" is dropped where "pre" of the node is read."""
    keys = set(uses)
    return {key: uses[key] for key in sorted(keys, key=_label)
            if not (key[-1] == "full" and (*key[:-1], "pre") in keys)}


def _build_pipeline(m: Module, pieces: Sequence[_Piece], stage: dict, final: set,
                    cuts: Sequence[int], enable: Value | None, *, drive: dict | None = None
                    ) -> dict:
    """Build ``pieces`` in order into ``m``, with a register on every value that crosses
    boundary ``j`` (before piece ``j``) when ``cuts[j]`` is set.

    ``stage`` holds the values available before the first piece, ``final`` the keys read after
    the last. Each piece is a submodule of ``m`` named after it. ``drive`` maps keys of the last
    piece's values to ports of the block that the piece drives itself (a combinational
    block's outputs: a port assigned in ``m`` from the piece's value would make the two one
    net, and the Verilog would declare the value's name and read it nowhere). Returns every
    value available after the last piece (the ports for the keys of ``drive``). A register
    carries only the values that some later piece (or ``final``) reads, and loads when
    ``enable`` is high; it has no reset (the data registers never do, see
    :data:`PIPELINE_CONTRACT`).
    """
    stage = dict(stage)
    for index, piece in enumerate(pieces):
        if cuts[index]:
            later = set(final)
            for after in pieces[index:]:
                later |= set(after.consumes)
            carried = {}
            for key in sorted(later, key=_label):
                if key in stage:
                    carried[key] = stage[key]
                elif key[-1] == "full" and (*key[:-1], "pre") in stage \
                        and (*key[:-1], "pre") not in later:
                    carried[key] = stage[(*key[:-1], "pre")][-1]
            register = _data_register(m, Cat(*carried.values()), f"cut{index}", enable)
            stage, offset = {}, 0
            for key, value in carried.items():
                stage[key] = register[offset:offset + len(value)]
                offset += len(value)
        def outer(key, stage=stage):
            if key in stage:
                return stage[key]
            if key[0] == "node" and key[-1] == "full":      # the top bit of "pre"
                return stage[(*key[:-1], "pre")][-1]
            raise KeyError(key)

        # Each piece is a submodule of its own (`leaves`, `level5_compare`, ...), so the
        # netlist and timing reports keep the tree's hierarchy. It reads every value through an
        # input of exactly the bits it uses (a field, a leaf's four status bits; the single
        # bits together): a submodule that read a part of a wider signal (a pipeline register,
        # the status word) would have an input port of which bits go unread. (One wide input
        # for all would do too, but Icarus then wakes every reader of it on any change, and
        # ran the benches six times slower.)
        sub = Module()
        m.submodules[piece.name] = sub
        parts = {key: outer(key) for key in piece.consumes}
        for key, width in piece.consumes.items():
            assert len(parts[key]) == width, \
                f"{piece.name} reads {key} as {width} bits, not {len(parts[key])}"
        inputs, bits = {}, {}
        for key, value in parts.items():
            if isinstance(value, Signal | Const):
                inputs[key] = value                 # a whole value of an earlier piece
            elif len(value) >= 2:
                inputs[key] = _bundle(m, f"{piece.name}_{_name(key)}", [value[:1], value[1:]])
            else:
                bits[key] = value
        if len(bits) >= 2:
            # The single bits (the "full" bit of a prefix, a single block) as one input.
            bundle = _bundle(m, f"{piece.name}_bits", list(bits.values()))
            inputs.update({key: bundle[index] for index, key in enumerate(bits)})
        else:
            # One bit alone: passed as the slice it is, the submodule would take the whole
            # signal it is cut from as its input; a signal of its own that is another name
            # for the slice would be the same net. So it goes through a cell (a one-bit OR
            # reduction, which synthesis removes).
            for key, value in bits.items():
                inputs[key] = named(m, f"{piece.name}_{_name(key)}", value.any())

        def get(key, inputs=inputs):
            if key in inputs:
                return inputs[key]
            if key[0] == "node" and key[-1] == "full":
                return inputs[(*key[:-1], "pre")][-1]
            raise KeyError(key)

        values = piece.build(sub, get)
        # Every value a piece makes is one named signal, `level5_node3_best` (the longest run
        # of the fourth node of 32 blocks), which waveforms and timing reports show, and
        # which every reader shares.
        for key, width in piece.produces.items():
            value = values[key]
            assert len(value) == width, f"{key} is {len(value)} bits, not {width}"
            if drive and key in drive and index == len(pieces) - 1:
                _drive(sub, drive[key], value)
                stage[key] = drive[key]
                continue
            stage[key] = value if _is_wiring(value) else named(sub, _name(key), value)
    return stage
