"""The exact circuit's tree (seed 002, the first fit of embodiment 1's step a43): its pieces.

A power-of-two range of blocks is a binary tree: the leaves of four blocks are constant tables
(:func:`_leaf_piece`), and each level above them is two pieces of logic, ``compare``
(:func:`_compare_piece`) and ``select`` (:func:`_select_piece`). :func:`_tree_pieces` gives the
pieces, bottom up, that make the node fields a reader asks for, and nothing else. The pieces
are built, and registers put between them, by :func:`hw.maxblock.pipeline._build_pipeline`.
Used by :class:`hw.maxblock.exact.ExactMaxFreeBlock` and the exact form of
:class:`hw.shared_maxblock.SharedMaxFreeBlock`.

Model twin: :func:`model.maxblock.exact_free_block` gives the root's fields (longest run, its
start, the first fit); :func:`_leaf_fields` is the leaves' table, computed in Python.

Contract and latency: combinational pieces; the latency is the exact circuit's, set by where
its registers cut the sequence of pieces (``model.maxblock.exact_max_latency`` pieces, one
register on every boundary at the deepest).
"""

from collections.abc import Callable, Hashable

from amaranth.hdl import Cat, Const, Mux

from hw.maxblock.arith import (
    _at_least,
    _capped_at_least,
    _cross_run,
    _equals,
    _fits,
    _half_plus,
    _or_all,
)
from hw.maxblock.contract import named
from hw.maxblock.pipeline import _bundle, _consumed, _label, _Piece

__all__: list[str] = []


# -- the exact tree --------------------------------------------------------------------------------
#
# ExactMaxFreeBlock (and the exact shared unit) describe every block of a status word as a
# node of a binary tree. A node of 2^k blocks has the fields
#
#   pre   its free prefix (0 .. 2^k)          sfs  where its free suffix starts (2^k: none)
#   best  its longest free run                bst  the lowest start of such a run
#   ffs   the lowest start of a free run of at least `request` blocks inside it, or sfs
#
# held as "capped" values (see _capped_at_least). Leaves of four blocks are constant tables;
# a parent merges its halves in two pieces of logic: `compare` (the run across the middle and
# the comparisons that need no multiplexer) and `select` (the multiplexers). Every tree level
# is built as these two submodules, so the netlist and timing reports keep the hierarchy
# (`leaves`, `level3_compare`, `level3_select`, ...). Inside a piece its ports are read through
# `amaranth.lib.data` views; the ports themselves are plain vectors, and carry exactly the
# fields that later logic reads (a field nobody reads is never built), so nothing dead reaches
# the Verilog. A range that is not one power-of-two node (n = 100: blocks 0..63, 64..95 and
# 96..99) is joined from its aligned nodes by a `join` piece with plain arithmetic.

#: Blocks per leaf of the exact circuit's tree, and the level of a leaf (2^2 = 4).
_LEAF = 4
_LEAF_LEVEL = 2

#: The fields a node can be asked for ("fit": the root's "a run of `request` fits").
_NODE_FIELDS = ("pre", "sfs", "best", "bst", "ffs", "fit")

#: The comparisons of a `compare` piece, per parent node.
_COMPARISONS = ("cross", "left_first", "left_over_right", "cross_over_right", "left_fits",
                "cross_fits", "right_fits")


def _leaf_fields() -> list[dict[str, int]]:
    """Per status word of one leaf (bit i set: block i free): its free prefix ``pre``, where its
    free suffix starts ``sfs`` (4 when none), its longest free run ``best`` and the lowest
    start of one ``bst``."""
    fields = []
    for word in range(1 << _LEAF):
        free = [word >> i & 1 for i in range(_LEAF)]
        prefix = next((i for i in range(_LEAF) if not free[i]), _LEAF)
        suffix_start = next((i + 1 for i in reversed(range(_LEAF)) if not free[i]), 0)
        best, best_start = 0, 0
        for begin in range(_LEAF):
            end = begin
            while end < _LEAF and free[end]:
                end += 1
            if end - begin > best:
                best, best_start = end - begin, begin
        fields.append({"pre": prefix, "sfs": suffix_start, "best": best, "bst": best_start})
    return fields


def _field_width(field: str, k: int) -> int:
    """Bits of a field of a node of 2^k blocks ("full" is the top bit of "pre")."""
    if field == "bst":
        return k
    if field in ("fit", "full"):
        return 1
    return k + 1


def _select_needs(fields: set, side_by_side: bool):
    """What `select` reads to make ``fields`` of a node: (comparisons, left child's fields,
    right child's fields, whether it reads the request)."""
    compared, left, right = set(), set(), set()
    request = False

    def first():
        compared.update({"left_first", "cross"})
        left.add("best")

    def first_wins():
        if side_by_side:
            compared.update({"left_first", "left_over_right", "cross_over_right"})
        else:
            first()
            right.add("best")

    def first_fits():
        nonlocal request
        if side_by_side:
            compared.update({"left_first", "left_fits", "cross_fits"})
        else:
            first()
            request = True

    if "pre" in fields:
        left.add("pre")
        right.add("pre")
    if "sfs" in fields:
        left.add("sfs")
        right.update({"full", "sfs"})
    if "best" in fields:
        first()
        first_wins()
        right.add("best")
    if "bst" in fields:
        compared.add("left_first")
        left.update({"bst", "sfs"})
        first_wins()
        right.add("bst")
    if "ffs" in fields:
        first_fits()
        left.add("ffs")
        right.update({"full", "ffs"})
    if "fit" in fields:
        first_fits()
        if side_by_side:
            compared.add("right_fits")
        else:
            right.add("best")
            request = True
    return compared, left, right, request


def _compare_needs(compared: set):
    """What `compare` reads to make ``compared``: (left child's, right child's fields, whether
    it reads the request)."""
    left, right = set(), set()
    if compared & {"cross", "left_first", "cross_over_right", "cross_fits"}:
        right.add("pre")
        left.add("sfs")
    if compared & {"left_first", "left_over_right", "left_fits"}:
        left.add("best")
    if compared & {"left_over_right", "cross_over_right", "right_fits"}:
        right.add("best")
    return left, right, bool(compared & {"left_fits", "cross_fits", "right_fits"})


def _leaf_piece(leaves: dict, request_of, request_widths, ffs_widths: dict) -> _Piece:
    """The leaf tables: ``leaves`` maps a leaf index to the fields asked of it."""
    consumes, produces = {}, {}
    for index, fields in leaves.items():
        consumes[("free", index)] = _LEAF
        if "ffs" in fields:
            key = ("request", request_of(_LEAF_LEVEL, index))
            consumes[key] = request_widths[key[1]]
        for field in sorted(fields):
            produces[("node", _LEAF_LEVEL, index, field)] = (
                ffs_widths.get((_LEAF_LEVEL, index), 3) if field == "ffs"
                else _field_width(field, _LEAF_LEVEL))
    tables = _leaf_fields()

    def build(m, get):
        # Each table bit is an OR of one-hot status words: plain logic, which synthesis and the
        # equivalence checker take as it is, unlike a ROM. The first fit covers requests 1..4
        # (more fits in no leaf); request 0 reads as 1 here (the root answers it).
        values, at_most = {}, {}
        for index, fields in leaves.items():
            w = get(("free", index))
            # The status words each table bit is true for. A word read by an OR of several is
            # one bit of a shared one-hot vector; a bit true for one word only is that word's
            # comparison of its own (else the vector's bit would be another name for the
            # output, read by nothing).
            # The bits of each table field that something reads (the root of four blocks
            # reads of its suffix start only the bits of its first fit).
            ffs_width = ffs_widths.get((_LEAF_LEVEL, index), 3)
            widths = {field: _field_width(field, _LEAF_LEVEL)
                      for field in ("pre", "sfs", "best", "bst") if field in fields}
            if "ffs" in fields and "sfs" not in fields:
                widths["sfs"] = ffs_width
            bits = {(field, i): [word for word in range(1 << _LEAF)
                                 if tables[word][field] >> i & 1]
                    for field, width in widths.items() for i in range(width)}
            shared = sorted({word for words in bits.values() if len(words) > 1
                             for word in words})
            hot = (dict(zip(shared, _bundle(m, f"level{_LEAF_LEVEL}_node{index}_words",
                                            [_equals(w, word) for word in shared]),
                            strict=True)) if shared else {})

            def table(field, bits=bits, hot=hot, w=w, widths=widths):
                column = []
                for i in range(widths[field]):
                    words = bits[(field, i)]
                    column.append(Const(0, 1) if not words else _equals(w, words[0])
                                  if len(words) == 1 else _or_all([hot[word] for word in words]))
                return column

            for field in ("pre", "sfs", "best", "bst"):
                if field in fields and not (field == "sfs" and "ffs" in fields):
                    values[("node", _LEAF_LEVEL, index, field)] = _bundle(
                        m, f"level{_LEAF_LEVEL}_node{index}_{field}", table(field))
            if "ffs" in fields:
                key = ("request", request_of(_LEAF_LEVEL, index))
                if key not in at_most:
                    request = get(key)
                    at_most[key] = {j: named(m, f"request_{key[1]}_at_most_{j}",
                                             ~_at_least(request, Const(j + 1, 3)))
                                    for j in range(1, _LEAF + 1)}
                below = at_most[key]
                # In four blocks a maximal free run starts at 0 (the prefix), ends at 4 (the
                # suffix, from sfs) or lies strictly inside: [1, 2), [1, 3) or [2, 3). The
                # first fit is the first of them, in that order, that is long enough; else sfs.
                prefix_fits = _or_all([below[j] & w[:j].all() for j in range(1, _LEAF + 1)])
                inside_12 = ~w[0] & w[1] & ~w[2]
                inside_13 = ~w[0] & w[1] & w[2] & ~w[3]
                inside_23 = ~w[1] & w[2] & ~w[3]
                inside_fits = (below[1] & (inside_12 | inside_13 | inside_23)) | (
                    below[2] & inside_13)
                width = ffs_width
                sfs = _bundle(m, f"level{_LEAF_LEVEL}_node{index}_sfs", table("sfs"))
                if "sfs" in fields:
                    values[("node", _LEAF_LEVEL, index, "sfs")] = sfs
                values[("node", _LEAF_LEVEL, index, "ffs")] = Mux(
                    prefix_fits, Const(0, width),
                    Mux(inside_fits, Mux(inside_23, Const(2, width), Const(1, width)),
                        sfs[:width]))
        return values

    return _Piece("leaves", _consumed(consumes), produces, build)


def _compare_piece(k: int, nodes: dict, request_of, request_widths) -> _Piece:
    """The first half of tree level ``k``: ``nodes`` maps a parent index to its comparisons."""
    uses, produces = {}, {}
    for index, compared in nodes.items():
        left, right, request = _compare_needs(compared)
        for child, fields in ((2 * index, left), (2 * index + 1, right)):
            for field in sorted(fields):
                uses[("node", k - 1, child, field)] = _field_width(field, k - 1)
        if request:
            key = ("request", request_of(k, index))
            uses[key] = request_widths[key[1]]
        for what in sorted(compared):
            produces[("cmp", k, index, what)] = k + 1 if what == "cross" else 1

    def build(m, get):
        values = {}
        for index, compared in nodes.items():
            def left(field, index=index):
                return get(("node", k - 1, 2 * index, field))

            def right(field, index=index):
                return get(("node", k - 1, 2 * index + 1, field))

            def request(index=index):
                return get(("request", request_of(k, index)))

            cross = None
            if compared & {"cross", "left_first", "cross_over_right", "cross_fits"}:
                cross = _bundle(m, f"level{k}_node{index}_cross", _cross_run(
                    right("pre"), left("sfs"),
                    lambda name, value, index=index: named(m, f"level{k}_node{index}_{name}",
                                                           value)))
            for what in sorted(compared):
                values[("cmp", k, index, what)] = (
                    cross if what == "cross" else
                    _capped_at_least(left("best"), cross) if what == "left_first" else
                    _capped_at_least(left("best"), right("best"))
                    if what == "left_over_right" else
                    _capped_at_least(cross, right("best")) if what == "cross_over_right" else
                    _fits(left("best"), request()) if what == "left_fits" else
                    _fits(cross, request()) if what == "cross_fits" else
                    _fits(right("best"), request()))
        return values

    return _Piece(f"level{k}_compare", _consumed(uses), dict(sorted(produces.items(),
                                                                  key=lambda i: _label(i[0]))),
                  build)


def _select_piece(k: int, nodes: dict, side_by_side: bool, request_of, request_widths,
                  ffs_widths: dict) -> _Piece:
    """The second half of tree level ``k``: ``nodes`` maps a parent index to its fields."""
    uses, produces = {}, {}
    for index, fields in nodes.items():
        compared, left, right, request = _select_needs(fields, side_by_side)
        for child, child_fields in ((2 * index, left), (2 * index + 1, right)):
            for field in sorted(child_fields):
                uses[("node", k - 1, child, field)] = _field_width(field, k - 1)
        for what in sorted(compared):
            uses[("cmp", k, index, what)] = k + 1 if what == "cross" else 1
        if request:
            key = ("request", request_of(k, index))
            uses[key] = request_widths[key[1]]
        for field in sorted(fields):
            width = ffs_widths.get((k, index), k + 1) if field == "ffs" else _field_width(field, k)
            produces[("node", k, index, field)] = width

    def build(m, get):
        values = {}
        for index, fields in nodes.items():
            def left(field, index=index):
                return get(("node", k - 1, 2 * index, field))

            def right(field, index=index):
                return get(("node", k - 1, 2 * index + 1, field))

            def compared(what, index=index):
                return get(("cmp", k, index, what))

            def request(index=index):
                return get(("request", request_of(k, index)))

            # Each shared term is one named signal (read twice without one, the back end may
            # build it twice), made only when a wanted field reads it: the rules of
            # _select_needs.
            made = {}

            def once(name, make, made=made, index=index):
                if name not in made:
                    made[name] = named(m, f"level{k}_node{index}_{name}", make())
                return made[name]

            def first():
                return once("first", lambda: Mux(compared("left_first"), left("best"),
                                                  compared("cross")))

            def first_wins():
                if side_by_side:
                    return once("first_wins", lambda: Mux(
                        compared("left_first"), compared("left_over_right"),
                        compared("cross_over_right")))
                return once("first_wins", lambda: _capped_at_least(first(), right("best")))

            def first_fits():
                if side_by_side:
                    return once("first_fits", lambda: Mux(
                        compared("left_first"), compared("left_fits"), compared("cross_fits")))
                return once("first_fits", lambda: _fits(first(), request()))

            node = ("node", k, index)
            if "pre" in fields:
                values[(*node, "pre")] = Mux(left("full"), _half_plus(right("pre"), k),
                                             left("pre"))
            if "sfs" in fields:
                values[(*node, "sfs")] = Mux(right("full"), left("sfs"),
                                             _half_plus(right("sfs"), k))
            if "best" in fields:
                values[(*node, "best")] = Mux(first_wins(), first(), right("best"))
            if "bst" in fields:
                first_start = Mux(compared("left_first"), left("bst"), left("sfs"))
                values[(*node, "bst")] = Mux(first_wins(), first_start, Cat(right("bst"), 1))
            if "ffs" in fields:
                width = ffs_widths.get((k, index), k + 1)
                values[(*node, "ffs")] = Mux(first_fits() | right("full"), left("ffs")[:width],
                                             _half_plus(right("ffs"), k)[:width])
            if "fit" in fields:
                right_fits = (compared("right_fits") if side_by_side
                              else _fits(right("best"), request()))
                values[(*node, "fit")] = first_fits() | right_fits
        return values

    return _Piece(f"level{k}_select", _consumed(uses), produces, build)


def _tree_pieces(demands: dict, *, side_by_side: Callable[[int], bool],
                 request_of: Callable[[int, int], Hashable], request_widths: dict,
                 ffs_widths: dict | None = None) -> list[_Piece]:
    """The pieces of a tree that gives the node fields in ``demands``, bottom up.

    ``demands`` maps ``(k, index)`` (the node of 2^k blocks from ``index * 2^k``) to the set of
    fields wanted from it; only what those need is built. ``side_by_side(k)`` says whether
    level ``k`` compares all pairs at once (speed) or the first candidate after the
    multiplexer (area); ``request_of(k, index)`` names the request a node answers (a key of
    ``request_widths``); ``ffs_widths`` narrows a node's ``ffs`` where its reader needs fewer
    bits (the root's, whose top bit only ever says "nothing fits").
    """
    ffs_widths = ffs_widths or {}
    need = {}
    for node, fields in demands.items():
        need.setdefault(node, set()).update(fields)
    top = max(k for k, _ in need)
    levels = []
    for k in range(top, _LEAF_LEVEL, -1):
        selected = {index: need[(kk, index)] for kk, index in sorted(need) if kk == k}
        compared = {}
        for index, fields in selected.items():
            wanted, left, right, _ = _select_needs(fields, side_by_side(k))
            compared[index] = wanted
            more_left, more_right, _ = _compare_needs(wanted)
            for child, child_fields in ((2 * index, left | more_left),
                                        (2 * index + 1, right | more_right)):
                need.setdefault((k - 1, child), set()).update(
                    "pre" if field == "full" else field for field in child_fields)
        levels.append((k, compared, selected))
    leaves = {index: need[(k, index)] for k, index in sorted(need) if k == _LEAF_LEVEL}
    pieces = [_leaf_piece(leaves, request_of, request_widths, ffs_widths)]
    for k, compared, selected in reversed(levels):
        wanted = {index: what for index, what in compared.items() if what}
        if wanted:
            pieces.append(_compare_piece(k, wanted, request_of, request_widths))
        pieces.append(_select_piece(k, selected, side_by_side(k), request_of, request_widths,
                                    ffs_widths))
    return pieces
