"""The join of the exact circuit: a range that is not one power-of-two node, from its parts.

``n = 100`` is blocks 0..63, 64..95 and 96..99: :func:`_join_piece` merges the trees' roots of
such aligned parts (and single blocks below four) left to right, with plain arithmetic, into
the range's longest run, its start and its first fit. Part of the exact allocator primitive
(:class:`hw.maxblock.exact.ExactMaxFreeBlock`, seed 002, the first fit of embodiment 1's step
a43) and of the exact shared unit (:mod:`hw.shared_maxblock`).

Model twin: :func:`model.maxblock.exact_free_block` (the values), with
:func:`model.maxblock.aligned_blocks` (the parts). Contract and latency: one combinational
piece, the last of the exact circuit's pipeline.
"""

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Value

from hw.maxblock.arith import _add_constant, _at_least, _equals, _subtract
from hw.maxblock.contract import _resized, named
from hw.maxblock.pipeline import _consumed, _Piece
from hw.maxblock.tree import _LEAF, _NODE_FIELDS, _field_width

__all__: list[str] = []


def _single(free: Value) -> dict:
    """The fields of one block as a node of size 1 (its first fit is its suffix start)."""
    return {"size": 1, "pre": free, "sfs": ~free, "best": free, "bst": Const(0, 1),
            "ffs": ~free}


def _join(m: Module, name: str, left: dict, right: dict, request: Value, *, last: bool
          ) -> dict:
    """Two adjacent ranges of any sizes as one (see _select_piece for the same merge on capped
    values of equal halves): the longest run is the first longest of the left's, the one
    across the middle and the right's; the first fit is the left's when it or the run across
    fits, or when the right is all free (then nothing fits), else the right's.

    The arithmetic is written out bit by bit, as in the tree (a Verilog operator on operands
    of unequal widths is one that lint rightly flags). A join's prefix is never read (it is
    only ever a left side), its suffix start only when it is not the ``last``; the fields of
    the last are left unnamed for the piece's outputs to take the bits they need."""
    size = left["size"]
    total = size + right["size"]
    width = total.bit_length()

    def share(part):
        return lambda label, value: named(m, f"{name}_{part}_{label}", value)

    def plus_size(value, part):
        return Cat(*_add_constant(value, size, width, share(part)))

    def keep(field, value):
        return value if last and field in ("best", "bst", "ffs") else \
            named(m, f"{name}_{field}", value)

    right_full = named(m, f"{name}_right_full", _equals(right["pre"], right["size"]))
    cross = Cat(*_subtract(_add_constant(right["pre"], size, width, share("pre_plus")),
                           left["sfs"], width, share("cross")))
    left_first = named(m, f"{name}_left_first", _at_least(left["best"], cross))
    first = named(m, f"{name}_first", Mux(left_first, _resized(left["best"], width), cross))
    first_wins = named(m, f"{name}_first_wins", _at_least(first, right["best"]))
    joined = {
        "size": total,
        "best": keep("best", Mux(first_wins, first, _resized(right["best"], width))),
        "bst": keep("bst", Mux(first_wins, Mux(left_first, _resized(left["bst"], width),
                                               _resized(left["sfs"], width)),
                               plus_size(right["bst"], "bst"))),
        "ffs": keep("ffs", Mux(_at_least(first, request) | right_full,
                               _resized(left["ffs"], width), plus_size(right["ffs"], "ffs"))),
    }
    if not last:
        joined["sfs"] = keep("sfs", Mux(right_full, _resized(left["sfs"], width),
                                        plus_size(right["sfs"], "sfs")))
    return joined


def _join_fields(position: int, count: int) -> set:
    """The fields a join reads of the tree node at ``position`` of ``count`` blocks. The first
    block is only ever a left side: its prefix is never read; the last only a right side,
    whose suffix start only the joined suffix start would read."""
    fields = {"best", "bst", "ffs"}
    if position:
        fields.add("pre")
    if position < count - 1:
        fields.add("sfs")
    return fields


def _join_demands(blocks: Sequence[tuple[int, int]]) -> dict:
    """``{(k, index): fields}`` a join of ``blocks`` reads from the tree."""
    demands = {}
    for position, (start, size) in enumerate(blocks):
        if size >= _LEAF:
            k = size.bit_length() - 1
            demands[(k, start >> k)] = _join_fields(position, len(blocks))
    return demands


def _join_piece(name: str, blocks: Sequence[tuple[int, int]], request: tuple,
                request_width: int, widths: dict) -> _Piece:
    """Joins the aligned ``blocks`` ``(start, size)`` of one range, left to right, into its
    ``best``, ``bst``, ``ffs`` and ``fit`` (of the widths in ``widths``). A block of four or
    more is a tree node; smaller ones are single blocks (keys ``("bit", address)``)."""
    uses = {request: request_width}
    for position, (start, size) in enumerate(blocks):
        if size < _LEAF:
            for address in range(start, start + size):
                uses[("bit", address)] = 1
            continue
        k = size.bit_length() - 1
        for field in _join_fields(position, len(blocks)):
            uses[("node", k, start >> k, field)] = _field_width(field, k)
    produces = {(name, field): width for field, width in widths.items()}

    def build(m, get):
        r = get(request)
        parts = []
        for start, size in blocks:
            if size < _LEAF:
                parts += [_single(get(("bit", address)))
                          for address in range(start, start + size)]
            else:
                k = size.bit_length() - 1
                parts.append({"size": size, **{
                    field: get(("node", k, start >> k, field))
                    for field in _NODE_FIELDS if ("node", k, start >> k, field) in uses}})
        whole = parts[0]
        for number, part in enumerate(parts[1:], start=1):
            whole = _join(m, f"{name}_part{number}", whole, part, r,
                          last=number == len(parts) - 1)
        values = {"best": whole["best"], "bst": whole["bst"], "ffs": whole["ffs"],
                  "fit": _at_least(whole["best"], r)}
        return {(name, field): values[field][:width] for field, width in widths.items()}

    return _Piece(name, _consumed(uses), produces, build)
