"""Largest-contiguous-free-block circuits (seed 002, embodiments 4-6) and the exact allocator.

Three components with the same ports and the same pipeline options:

* :class:`MaxFreeBlock` -- embodiment 4 as the seed writes it: exact, about n² gates;
* :class:`GroupedMaxFreeBlock` -- embodiment 5: the same circuit over wholly free groups;
* :class:`SampledMaxFreeBlock` -- embodiment 6: only the sampled run lengths;

and the project's exact allocator primitive, :class:`ExactMaxFreeBlock`: the longest free run
with its start address and a first-fit search, in O(n) gates.

Every block with a latency of one clock or more has the same stall interface (see
:data:`PIPELINE_CONTRACT`): ``valid`` travels with the data, ``enable`` is the clock enable
of the whole pipeline and ``result_valid`` says which outputs answer a word. Only that control
state has a reset; the data registers have none.

Their golden models are in :mod:`model.maxblock`, which also holds the parameter checks, so
the model and the hardware reject a bad argument with the same error.
"""

from collections.abc import Callable, Hashable, Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from model.maxblock import (
    aligned_blocks,
    check_block_count,
    check_exact_latency,
    check_free_level,
    check_groups,
    check_latency,
    check_samples,
    exact_max_latency,
)

__all__ = ["PIPELINE_CONTRACT", "ExactMaxFreeBlock", "GroupedMaxFreeBlock", "MaxFreeBlock",
           "SampledMaxFreeBlock", "named", "pipeline_ports", "scan_down"]

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


class _MaxFreeBlockBase(_BlockParameters, wiring.Component):
    """Ports, parameters and the pieces of circuit shared by the three variants.

    Subclasses provide ``_first_stage`` (the word that enters the shifter, registered as the
    first of three stages) and ``_run_lengths`` (the sampled ``k`` and the length each stands
    for).
    """

    def __init__(self, n, *, free_level, latency):
        # Every parameter is checked before anything is built (a half-built component would
        # also leave Amaranth's "created but never used" warning behind).
        self._n = check_block_count(n)
        self._free_level = check_free_level(free_level)
        self._latency = check_latency(latency)
        super().__init__({
            "status": In(self._n),
            "length": Out(range(self._n + 1)),
            **pipeline_ports(self._latency),
        })
        if self._latency:
            _reset_less_outputs(self, ["length"])

    def _both_free(self, a: Value, b: Value) -> Value:
        # d3: AND when free reads 1, OR when free reads 0.
        return a & b if self._free_level else a | b

    def _any_free(self, window: Value) -> Value:
        # d41: OR-reduce, or AND-reduce then invert. The inversion is written on the bits
        # (~window).any() rather than on the flag: the back end turns a multiplexer on an
        # inverted flag into one on the flag and would leave the inverter behind, unused.
        return window.any() if self._free_level else (~window).any()

    def _windows(self, m: Module, word: Value, samples: Sequence[int]) -> list[Value]:
        """``SA_k`` for each ``k`` in ``samples`` (strictly increasing), over ``word``.

        Only the ``len(word) - k`` meaningful bits of ``SA_k`` are built: its top ``k`` bits
        come from the vacated, "occupied" bits of ``S_k`` and are constants that change no
        reduction. Bit ``j`` of ``SA_k`` is "blocks ``j`` to ``j + k`` are all free".

        Each window is built from the previous one (length ``L1``): a run of ``L2`` blocks is
        covered by windows of ``L1`` at offsets ``0, L1, 2 L1, ...`` and ``L2 - L1``. With
        consecutive samples this is the seed's running chain ``SA_k = SA_(k-1) AND S_k``
        exactly; with sparse samples it needs about two gates per bit per sample, not ``k``.
        """
        width = len(word)
        windows = []
        previous, previous_length = word, 1
        for k in samples:
            length = k + 1
            if length == previous_length:           # k = 0: SA_0 = S_0
                windows.append(previous)
                continue
            if previous_length == length - 1:       # the seed's chain: SA_(k-1) AND S_k
                result = self._both_free(previous[:width - k], word[k:])
            else:
                result = None
                for offset in [*range(0, length - previous_length, previous_length),
                               length - previous_length]:
                    term = previous[offset:offset + width - k]
                    result = term if result is None else self._both_free(result, term)
            # A signal per window keeps the expression trees shallow for the back end.
            window = named(m, f"sa{k}", result)
            windows.append(window)
            previous, previous_length = window, length
        return windows

    def elaborate(self, platform):
        m = Module()
        three_stage = self._latency == 3

        # Stage 1 (d2 / e2 / f2): the word to scan. Its shifted copies S_i are wiring.
        word = self._first_stage()
        if three_stage:
            word = _data_register(m, word, "stage1_word", self.enable)

        # Stage 2 (d3 / e32 / f3): the running AND (or OR) of the shifted copies.
        samples, lengths = self._run_lengths()
        windows = self._windows(m, word, samples)
        if three_stage:
            windows = [_data_register(m, window, f"stage2_sa{k}", self.enable)
                       for k, window in zip(samples, windows, strict=True)]

        # Stage 3 (d4 / e33 / f4): reduce every window to one bit, scan from the top.
        length = scan_down([(self._any_free(window), value)
                            for window, value in zip(windows, lengths, strict=True)])
        if self._latency:
            with m.If(self.enable):
                m.d.sync += self.length.eq(length)
            _valid_pipe(m, self)
        else:
            m.d.comb += self.length.eq(length)
        return m

class MaxFreeBlock(_MaxFreeBlockBase):
    """The largest contiguous free block, exactly, as embodiment 4 of seed 002 builds it.

    The ``n`` shifted copies ``S_i`` of the status word, their running AND ``SA_i`` (OR when
    free reads 0), the reduction ``SAR_i`` of each and a scan from ``SAR_(n-1)`` downwards:
    the first set ``SAR_i'`` gives ``length = i' + 1``. Cost: about n²/2 two-input gates for
    the running AND and as many again for the reductions; depth n gates in the running chain.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    free_level : int
        1 when a free block reads 1 (AND, then OR-reduce); 0 when it reads 0 (OR, then
        AND-reduce and invert).
    latency : int
        0: ``length`` is a combinational function of ``status``. 1: ``length`` is registered
        (the seed's one clock). 3: the seed's three registered steps -- the status word, the
        ``SA_i`` (``n(n+1)/2`` flip-flops) and the length are each registered.

    Attributes
    ----------
    status : In(n)
        Bit ``i`` is block ``i`` (address ``i``).
    length : Out(range(n + 1))
        Length of the longest free run, 0 when no block is free, ``latency`` clocks after
        ``status``. A new status word may be presented every clock.
    valid, enable : In(1); result_valid : Out(1)
        With ``latency`` 1 or 3 only: the stall interface (see Notes).
    """

    def __init__(self, n, *, free_level=1, latency=0):
        super().__init__(n, free_level=free_level, latency=latency)

    def _first_stage(self) -> Value:
        return self.status

    def _run_lengths(self):
        return range(self._n), [k + 1 for k in range(self._n)]


class GroupedMaxFreeBlock(_MaxFreeBlockBase):
    """Embodiment 5 of seed 002: the longest run of wholly free groups, in blocks.

    The status word is cut into ``groups`` equal groups; each is reduced to one bit, "this
    group is wholly free" (e2), and the circuit of :class:`MaxFreeBlock` runs on those bits:
    ``length = j' * (n // groups)``. The result is a multiple of the group size and may
    under-estimate the true longest run (a run that straddles a group boundary is cut).
    Cost: about ``groups``²/2 gates plus ``n`` for the group reduction.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    groups : int
        Number of groups; must divide ``n``. ``groups == n`` is :class:`MaxFreeBlock`.
    free_level, latency :
        As for :class:`MaxFreeBlock`; with ``latency=3`` the first register holds the
        ``groups``-bit reduced word (e2 and e31), the second the ``FA_j`` (e32).

    Attributes
    ----------
    status, length, valid, enable, result_valid :
        As for :class:`MaxFreeBlock`.
    """

    def __init__(self, n, groups, *, free_level=1, latency=0):
        self._groups = check_groups(n, groups)
        super().__init__(n, free_level=free_level, latency=latency)

    @property
    def groups(self) -> int:
        return self._groups

    def _first_stage(self) -> Value:
        size = self._n // self._groups
        # e2: AND over a group when free reads 1, OR over it when free reads 0.
        return Cat(*(self.status[g * size:(g + 1) * size].all() if self._free_level
                     else self.status[g * size:(g + 1) * size].any()
                     for g in range(self._groups)))

    def _run_lengths(self):
        size = self._n // self._groups
        return range(self._groups), [(j + 1) * size for j in range(self._groups)]


class SampledMaxFreeBlock(_MaxFreeBlockBase):
    """Embodiment 6 of seed 002: the largest sampled run length that is free.

    Only the windows ``SA_k`` for the sampled ``k`` are built, and the downward scan gives
    ``length = k' + 1`` for the largest sampled ``k'`` whose ``SAR_k'`` is set (0 when none).
    The result is exact when the true longest run is ``k + 1`` for a sample ``k`` and is the
    next sampled length below it otherwise. Each window is built from the one before it with
    about two gates per bit (see ``_windows``), so the cost is about ``2 n`` gates per sample.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    samples : sequence of int
        Strictly increasing ``k`` in ``0 .. n - 1`` whose steps never decrease; see
        :func:`model.maxblock.default_samples` for the default set.
    free_level, latency :
        As for :class:`MaxFreeBlock`; with ``latency=3`` the second register holds the
        sampled ``SA_k`` only.

    Attributes
    ----------
    status, length, valid, enable, result_valid :
        As for :class:`MaxFreeBlock`.
    """

    def __init__(self, n, samples, *, free_level=1, latency=0):
        self._samples = check_samples(n, samples)
        super().__init__(n, free_level=free_level, latency=latency)

    @property
    def samples(self) -> tuple[int, ...]:
        return self._samples

    def _first_stage(self) -> Value:
        return self.status

    def _run_lengths(self):
        return self._samples, [k + 1 for k in self._samples]


def _at_least(a: Value, b: Value) -> Value:
    """``a >= b`` (unsigned) as plain logic: a ripple from the lowest bit up.

    Written out rather than as ``>=`` so that synthesis maps it into LUTs with the logic
    around it instead of a carry chain of its own (the tree has hundreds of small ones). The
    operands here are a few bits wide; a ripple maps to fewer LUTs than a balanced tree of
    (greater, equal) pairs, and no deeper once mapped (the first version of the tree used one).
    """
    result = Const(1, 1)                    # equal so far: at least
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else Const(0, 1)
        y = b[i] if i < len(b) else Const(0, 1)
        result = (x & ~y) | (~(x ^ y) & result)
    return result


# The tree's run lengths and positions are "capped" values: w bits holding 0 .. 2^(w-1), so
# the top bit is set only for the largest value, when the rest are 0. The comparisons below
# use that to compare one bit fewer than plain comparators would (synthesis cannot know it).

def _capped_at_least(a: Value, b: Value) -> Value:
    """``a >= b`` for capped ``a`` and ``b`` whose widths differ by at most one bit."""
    if len(a) == len(b):
        return a[-1] | (~b[-1] & _at_least(a[:-1], b[:-1]))
    if len(a) == len(b) + 1:                # a >= 2^(w-1) >= b, where w = len(b)
        return a[-1] | a[-2] | (~b[-1] & _at_least(a[:-2], b[:-1]))
    assert len(b) == len(a) + 1
    return ~b[-1] & Mux(b[-2], a[-1] & ~b[:-2].any(), a[-1] | _at_least(a[:-1], b[:-2]))


def _fits(length: Value, request: Value) -> Value:
    """``length >= request`` for a capped ``length`` and any ``request``."""
    w = len(length)
    request = Cat(request, Const(0, w))     # at least w + 1 bits
    low_fits = ~request[w - 1] & _at_least(length[:w - 1], request[:w - 1])
    top_fits = ~(request[w - 1] & request[:w - 1].any())
    return ~request[w:].any() & Mux(length[w - 1], top_fits, low_fits)


def _cross_run(prefix: Value, suffix_start: Value,
               share: Callable[[str, Value], Value] = lambda name, value: value) -> list[Value]:
    """``2^(k-1) + prefix - suffix_start`` for capped ``k``-bit operands: ``k + 1`` bits, capped,
    as a list of bit expressions (low bit first).

    A ripple subtraction of the ``k - 1`` low bits; the two top bits follow from whether
    either operand is ``2^(k-1)`` (then its low bits are 0) and from the borrow. Each borrow
    goes through ``share`` (a named signal in the tree), since every later bit reads it.
    """
    k = len(prefix)
    bits, borrow = [], Const(0, 1)
    for i in range(k - 1):
        x, y = prefix[i], suffix_start[i]
        bits.append(x ^ y ^ borrow)
        borrow = share(f"borrow{i + 1}", (~x & (y | borrow)) | (y & borrow))
    # The value is 2^(k-1) * (1 + prefix_top - suffix_top - borrow) + low bits, and the
    # multiplier is 0, 1 or 2.
    prefix_top, suffix_top = prefix[k - 1], suffix_start[k - 1]
    one = (~prefix_top & ~suffix_top & ~borrow) | (prefix_top & suffix_top) | (
        prefix_top & ~suffix_top & borrow)
    two = prefix_top & ~suffix_top & ~borrow
    return [*bits, one, two]


def _half_plus(value: Value, k: int) -> Value:
    """``2^(k-1) + value`` for ``value`` in ``0 .. 2^(k-1)`` (``k`` bits): ``k + 1`` bits, wiring
    and one inverter (bit ``k - 1`` of ``value`` is set only for ``value = 2^(k-1)``)."""
    return Cat(value[:k - 1], ~value[k - 1], value[k - 1])


def _equals(value: Value, constant: int) -> Value:
    """``value == constant`` as an AND of the value's bits, each inverted where the constant
    has a 0 (a comparison with a constant would come out in Verilog with the constant at its
    minimal width, which lint rightly flags)."""
    return Cat(*(value[i] if constant >> i & 1 else ~value[i]
                 for i in range(len(value)))).all()


def _or_all(values: list[Value]) -> Value:
    """The bitwise OR of ``values``."""
    result = values[0]
    for value in values[1:]:
        result = result | value
    return result



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


def _field_width(field: str, k: int) -> int:
    """Bits of a field of a node of 2^k blocks ("full" is the top bit of "pre")."""
    if field == "bst":
        return k
    if field in ("fit", "full"):
        return 1
    return k + 1


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
        for field in fields:
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
            for field in fields:
                uses[("node", k - 1, child, field)] = _field_width(field, k - 1)
        if request:
            key = ("request", request_of(k, index))
            uses[key] = request_widths[key[1]]
        for what in compared:
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
            for what in compared:
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
            for field in child_fields:
                uses[("node", k - 1, child, field)] = _field_width(field, k - 1)
        for what in compared:
            uses[("cmp", k, index, what)] = k + 1 if what == "cross" else 1
        if request:
            key = ("request", request_of(k, index))
            uses[key] = request_widths[key[1]]
        for field in fields:
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


def _single(free: Value) -> dict:
    """The fields of one block as a node of size 1 (its first fit is its suffix start)."""
    return {"size": 1, "pre": free, "sfs": ~free, "best": free, "bst": Const(0, 1),
            "ffs": ~free}


def _is_wiring(value: Value) -> bool:
    """Whether ``value`` is a constant, a signal or a slice of one: no logic of its own, so
    naming it would only give its net a second name."""
    if isinstance(value, Const | Signal):
        return True
    # A slice of logic is logic: left unnamed, it would be built where it is read (outside
    # its piece's submodule).
    return type(value).__name__ == "Slice" and _is_wiring(value.value)


def _add_constant(value: Value, constant: int, width: int, share) -> list[Value]:
    """``value + constant`` in ``width`` bits (the caller knows it fits), as a ripple of bit
    operations. Carries known to be 0 are not built; each other carry that is logic goes
    through ``share``, since two bits read it."""
    bits, carry = [], None                  # None: a carry of 0
    for i in range(width):
        x = value[i] if i < len(value) else None
        one = constant >> i & 1
        if x is None and carry is None:
            bits.append(Const(one, 1))
            continue
        if x is None:
            bits.append(~carry if one else carry)
            carry = carry if one else None
        elif carry is None:
            bits.append(~x if one else x)
            carry = x if one else None
        else:
            bits.append(~(x ^ carry) if one else x ^ carry)
            carry = (x | carry) if one else (x & carry)
        if carry is not None and i < width - 1 and not _is_wiring(carry):
            carry = share(f"carry{i + 1}", carry)
    return bits


def _subtract(a: Sequence[Value], b: Value, width: int, share) -> list[Value]:
    """``a - b`` in ``width`` bits for ``a >= b`` (``a`` a list of bits), as a ripple of bit
    operations; each borrow goes through ``share``."""
    bits, borrow = [], Const(0, 1)
    for i in range(width):
        x = a[i] if i < len(a) else Const(0, 1)
        y = b[i] if i < len(b) else Const(0, 1)
        bits.append(x ^ y ^ borrow)
        if i < width - 1:
            borrow = share(f"borrow{i + 1}", (~x & (y | borrow)) | (y & borrow))
    return bits


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

class ExactMaxFreeBlock(_BlockParameters, wiring.Component):
    """The longest free run, where it starts, and a first-fit search: exact, O(n) gates.

    The allocator primitive of embodiment 1 (step a43 allocates at a start address). It gives
    the same ``length`` as :class:`MaxFreeBlock` for O(n) gates instead of ``n²``, and says
    where to allocate. It is a balanced tree over the blocks (see ``elaborate``): leaves of
    four blocks are constant tables, and every node merges its two halves with a few
    comparators of ``log2`` of its size bits, so the logic is ``O(log n)`` comparator levels
    deep. Each tree level is a submodule (``leaves``, ``level<k>_compare``,
    ``level<k>_select`` for the nodes of 2^k blocks, and ``join`` when ``n`` is not a power of
    two), so synthesis and timing reports show where the logic and the paths are.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    free_level : int
        1 when a free block reads 1, 0 when it reads 0.
    latency : int
        Clocks from inputs to outputs. 0: combinational. 1: registered outputs. 2 up to
        ``max_latency(n)``: pipelined. The logic is a sequence of pieces: the leaf tables,
        two per tree level above them (the run across the middle of every node with its
        comparisons; the multiplexers that pick the node's fields), and, when ``n`` is not a
        power of two, the join of its power-of-two parts. ``latency - 1`` registers are spread
        evenly over the boundaries between pieces, then the output register; ``max_latency``
        puts one on every boundary (``2 log2(n) - 3`` for ``n = 2^p >= 4``), and no latency
        beyond it is accepted, since a register that cuts no logic would only delay the
        inputs. A new ``status`` and ``request`` may be presented every clock.

        Latency 0 and 1 build for area: below the root, a node compares its left half's
        longest run with the run across its middle, and only the winner with its right
        half's. The root, and every node of a pipelined circuit, compare all three pairs
        side by side, which takes a third comparator but one comparator delay less.

    Attributes
    ----------
    status : In(n)
        Bit ``i`` is block ``i``.
    request : In(range(n + 1))
        Blocks wanted by the first-fit search.
    length : Out(range(n + 1))
        Length of the longest free run, 0 when nothing is free.
    start : Out(range(max(n, 2)))
        Lowest address at which a longest free run starts; 0 when nothing is free.
    fit : Out(1)
        A free run of at least ``request`` blocks exists (always 1 for ``request = 0``).
    fit_start : Out(range(max(n, 2)))
        Lowest address at which such a run starts; 0 when ``fit`` is 0 or ``request`` is 0.
    valid, enable : In(1); result_valid : Out(1)
        With ``latency`` >= 1 only: the stall interface (see Notes).
    """

    def __init__(self, n, *, free_level=1, latency=0):
        self._n = check_block_count(n)
        self._free_level = check_free_level(free_level)
        self._latency = check_exact_latency(n, latency)
        address = range(max(self._n, 2))
        super().__init__({
            "status": In(self._n),
            "request": In(range(self._n + 1)),
            "length": Out(range(self._n + 1)),
            "start": Out(address),
            "fit": Out(1),
            "fit_start": Out(address),
            **pipeline_ports(self._latency),
        })
        if self._latency:
            _reset_less_outputs(self, ["length", "start", "fit", "fit_start"])

    @staticmethod
    def max_latency(n: int) -> int:
        """The deepest pipeline for ``n`` blocks: a register on every boundary between pieces
        of logic (see ``latency``)."""
        return exact_max_latency(n)

    def _cut_positions(self, segments: int) -> list[int]:
        # Which boundaries get a register: index i (1 .. segments - 1) is the boundary before
        # piece i of the logic (the output register follows the last). latency - 1 registers
        # are spread evenly over them.
        cuts = max(self._latency - 1, 0)
        counts = [0] * segments
        for index in range(cuts):
            counts[(index + 1) * segments // (cuts + 1)] += 1
        return counts

    def _pieces(self):
        """The pieces of logic in order, and the keys of the outputs' values."""
        n = self._n
        blocks = aligned_blocks(0, n)
        parallel = self._latency >= 2
        request_width = len(self.request)
        widths = {"best": len(self.length), "bst": len(self.start), "ffs": len(self.fit_start),
                  "fit": 1}
        if len(blocks) == 1 and n >= _LEAF:
            # One power-of-two tree; its root compares side by side and gives `fit` itself.
            k = n.bit_length() - 1
            fields = {"best", "bst", "ffs"} | ({"fit"} if k > _LEAF_LEVEL else set())
            pieces = _tree_pieces({(k, 0): fields},
                                  side_by_side=lambda level: parallel or level == k,
                                  request_of=lambda *_: 0, request_widths={0: request_width},
                                  ffs_widths={(k, 0): widths["ffs"]})
            outputs = {field: ("node", k, 0, field) for field in fields}
            return pieces, outputs
        # Power-of-two parts, largest first, joined (and single blocks below four).
        demands = _join_demands(blocks)
        pieces = []
        if demands:
            pieces = _tree_pieces(demands, side_by_side=lambda level: parallel,
                                  request_of=lambda *_: 0, request_widths={0: request_width})
        pieces.append(_join_piece("join", blocks, ("request", 0), request_width, widths))
        return pieces, {field: ("join", field) for field in widths}

    def elaborate(self, platform):
        # The tree and its pieces are described at the top of this section; the pipeline
        # registers sit between pieces, each carrying only what later pieces read.
        m = Module()
        pieces, outputs = self._pieces()
        assert len(pieces) == exact_max_latency(self._n), "pieces and latencies disagree"
        free = self.status if self._free_level else ~self.status
        stage = {("request", 0): self.request}
        for start, size in aligned_blocks(0, self._n):
            if size >= _LEAF:
                for leaf in range(start // _LEAF, (start + size) // _LEAF):
                    stage[("free", leaf)] = free[leaf * _LEAF:(leaf + 1) * _LEAF]
            else:
                for address in range(start, start + size):
                    stage[("bit", address)] = free[address]
        final = {*outputs.values(), ("request", 0)}
        # Combinational, length, start and fit are the last piece's values as they are.
        drive = {} if self._latency else {
            outputs[field]: port for field, port in (("best", self.length),
                                                     ("bst", self.start), ("fit", self.fit))
            if field in outputs}
        stage = _build_pipeline(m, pieces, stage, final,
                                self._cut_positions(len(pieces)),
                                self.enable if self._latency else None, drive=drive)
        best, start, ffs = (stage[outputs[field]] for field in ("best", "bst", "ffs"))
        request = stage[("request", 0)]
        fit = stage[outputs["fit"]] if "fit" in outputs else _fits(best, request)
        fit_start = Mux(fit & request.any(), ffs, 0)
        ports = (self.length, self.start, self.fit, self.fit_start)
        values = (best, start, fit, fit_start)
        if self._latency:
            with m.If(self.enable):
                m.d.sync += [port.eq(value) for port, value in zip(ports, values, strict=True)]
            _valid_pipe(m, self)
        else:
            for port, value in zip(ports, values, strict=True):
                if value is not port:
                    _drive(m, port, value)
        return m


for _block in (MaxFreeBlock, GroupedMaxFreeBlock, SampledMaxFreeBlock, ExactMaxFreeBlock):
    _block.__doc__ += ("\n    Notes\n    -----\n    With ``latency`` of one clock or more, the "
                       "stall interface (:data:`PIPELINE_CONTRACT`):\n\n"
                       + "\n".join(("    " + line) if line else ""
                                   for line in PIPELINE_CONTRACT.splitlines()) + "\n")
