"""Largest-contiguous-free-block circuits (seed 002, embodiments 4-6).

Three components with the same ports and the same pipeline options:

* :class:`MaxFreeBlock` -- embodiment 4 as the seed writes it: exact, about n² gates;
* :class:`GroupedMaxFreeBlock` -- embodiment 5: the same circuit over wholly free groups;
* :class:`SampledMaxFreeBlock` -- embodiment 6: only the sampled run lengths;

and the project's exact allocator primitive, :class:`ExactMaxFreeBlock`: the longest free run
with its start address and a first-fit search, in O(n) gates.

Their golden models are in :mod:`model.maxblock`, which also holds the parameter checks, so
the model and the hardware reject a bad argument with the same error.
"""

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from model.maxblock import (
    check_block_count,
    check_exact_latency,
    check_free_level,
    check_groups,
    check_latency,
    check_samples,
    exact_max_latency,
)

__all__ = ["ExactMaxFreeBlock", "GroupedMaxFreeBlock", "MaxFreeBlock", "SampledMaxFreeBlock",
           "lengthen", "lowest_end", "named", "run_doubling", "scan_down"]


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


def run_doubling(m: Module, free: Value, *, breaks: Value | None = None,
                 prefix: str = "") -> list[Signal]:
    """Run-length doubling: ``runs[b][j]`` says "blocks ``j .. j + 2^b - 1`` are all free".

    ``free`` has a 1 for every free block; ``runs[b]`` is ``len(free) - 2^b + 1`` bits wide,
    ``runs[b] = runs[b-1] AND runs[b-1]`` moved down by ``2^(b-1)``: about ``n log2 n`` gates,
    ``log2 n`` deep. A 1 in ``breaks`` at bit ``k`` stops every run from continuing into block
    ``k`` (a field boundary of the shared unit).
    """
    width = len(free)
    runs = [free]
    for b in range(1, width.bit_length()):
        half, size = 1 << (b - 1), width - (1 << b) + 1
        joined = runs[-1][:size] & runs[-1][half:half + size]
        if breaks is not None:
            joined &= ~breaks[half:half + size]
        runs.append(named(m, f"{prefix}runs{1 << b}", joined))
    return runs


def lengthen(m: Module, ends: Value, runs: Value, step: int, name: str
             ) -> tuple[Signal, Value]:
    """One level of binary lifting over run ends.

    ``ends[e]`` says "a free run of the current length ends just below block ``e``"
    (``n + 1`` bits); ``runs`` is the doubling level for ``step = 2^b`` (``n - step + 1``
    bits). Returns whether some run can be lengthened by ``step`` and the ends after
    lengthening them if so (unchanged if not): one AND, one wide OR and one multiplexer deep.
    """
    survivors = named(m, f"survivors_{name}", ends[:len(runs)] & runs)
    found = named(m, f"found_{name}", survivors.any())
    return found, Mux(found, Cat(Const(0, step), survivors), ends)


def lowest_end(ends: Value) -> Value:
    """The index of the lowest set bit of ``ends`` (0 when none), as a multiplexer tree."""
    return scan_down([(ends[e], e) for e in reversed(range(len(ends)))])


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
        })

    def _both_free(self, a: Value, b: Value) -> Value:
        # d3: AND when free reads 1, OR when free reads 0.
        return a & b if self._free_level else a | b

    def _any_free(self, window: Value) -> Value:
        # d41: OR-reduce, or AND-reduce then invert.
        return window.any() if self._free_level else ~window.all()

    def _register(self, m: Module, value: Value, name: str, registered: bool) -> Value:
        """A pipeline cut: a register when ``registered``, else a wire.

        Either way the value gets a named signal, which the back end then shares between its
        users instead of copying the expression into each. Registers reset to "all occupied",
        so ``length`` reads 0 until the first input has reached the output.
        """
        if not registered and isinstance(value, Signal):
            return value
        signal = Signal(len(value), name=name,
                        init=0 if self._free_level or not registered else (1 << len(value)) - 1)
        if registered:
            m.d.sync += signal.eq(value)
        else:
            m.d.comb += signal.eq(value)
        return signal

    def _windows(self, m: Module, word: Value, samples: Sequence[int]) -> list[Signal]:
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
        word = self._register(m, self._first_stage(), "stage1_word", three_stage)

        # Stage 2 (d3 / e32 / f3): the running AND (or OR) of the shifted copies.
        samples, lengths = self._run_lengths()
        windows = self._windows(m, word, samples)
        if three_stage:
            windows = [self._register(m, window, f"stage2_sa{k}", True)
                       for k, window in zip(samples, windows, strict=True)]

        # Stage 3 (d4 / e33 / f4): reduce every window to one bit, scan from the top.
        length = scan_down([(self._any_free(window), value)
                            for window, value in zip(windows, lengths, strict=True)])
        if self._latency:
            m.d.sync += self.length.eq(length)
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
        ``status``. A new status word may be presented every clock. After reset ``length``
        reads 0 until the first word has passed through.
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
    status, length :
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
    status, length :
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


def _cross_run(prefix: Value, suffix_start: Value) -> Value:
    """``2^(k-1) + prefix - suffix_start`` for capped ``k``-bit operands: ``k + 1`` bits, capped.

    A ripple subtraction of the ``k - 1`` low bits; the two top bits follow from whether
    either operand is ``2^(k-1)`` (then its low bits are 0) and from the borrow.
    """
    k = len(prefix)
    bits, borrow = [], Const(0, 1)
    for i in range(k - 1):
        x, y = prefix[i], suffix_start[i]
        bits.append(x ^ y ^ borrow)
        borrow = (~x & (y | borrow)) | (y & borrow)
    # The value is 2^(k-1) * (1 + prefix_top - suffix_top - borrow) + low bits, and the
    # multiplier is 0, 1 or 2.
    prefix_top, suffix_top = prefix[k - 1], suffix_start[k - 1]
    one = (~prefix_top & ~suffix_top & ~borrow) | (prefix_top & suffix_top) | (
        prefix_top & ~suffix_top & borrow)
    two = prefix_top & ~suffix_top & ~borrow
    return Cat(*bits, one, two)


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


#: Blocks per leaf of the exact circuit's tree.
_LEAF = 4


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


class ExactMaxFreeBlock(_BlockParameters, wiring.Component):
    """The longest free run, where it starts, and a first-fit search: exact, O(n) gates.

    The allocator primitive of embodiment 1 (step a43 allocates at a start address). It gives
    the same ``length`` as :class:`MaxFreeBlock` for O(n) gates instead of ``n²``, and says
    where to allocate. It is a balanced tree over the blocks (see ``elaborate``): leaves of
    four blocks are constant tables, and every node merges its two halves with a few
    comparators of ``log2`` of its size bits, so the logic is ``O(log n)`` comparator levels
    deep.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    free_level : int
        1 when a free block reads 1, 0 when it reads 0.
    latency : int
        Clocks from inputs to outputs. 0: combinational. 1: registered outputs. 2 up to
        ``max_latency(n) = floor(log2 n) + 3``: pipelined -- the logic is a sequence of
        pieces: the leaf tables, then two per tree level above them (the run across the
        middle of every node with its comparisons; the multiplexers that pick the node's
        fields), ``2 ceil(log2 n) - 3`` pieces for ``n > 4``. ``latency - 1`` registers are
        spread evenly over the boundaries between pieces, then the output register; where
        there are more registers than boundaries (``n <= 32``), the rest delay the inputs.
        A new ``status`` and ``request`` may be presented every clock.

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

    After reset, and until the first inputs have passed through, the outputs read as for
    "all blocks occupied, request 0": ``length = start = fit_start = 0`` and ``fit = 1``.
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
            "fit": Out(1, init=1),
            "fit_start": Out(address),
        })

    @staticmethod
    def max_latency(n: int) -> int:
        """The deepest pipeline for ``n`` blocks (see ``latency``)."""
        return exact_max_latency(n)

    def _cut_positions(self, segments: int) -> list[int]:
        # How many registers go on each boundary: 0 is the inputs, i (1 .. segments - 1)
        # the boundary before piece i of the logic (the output register follows the last).
        # latency - 1 registers are spread evenly over the boundaries between pieces; only
        # when there are more registers than such boundaries do the rest go on the inputs.
        cuts = max(self._latency - 1, 0)
        counts = [0] * segments
        inner = segments - 1
        if cuts <= inner:
            for index in range(cuts):
                counts[(index + 1) * segments // (cuts + 1)] += 1
        else:
            counts[1:] = [1] * inner
            counts[0] = cuts - inner
        return counts

    def elaborate(self, platform):
        # A balanced tree over the blocks, padded with occupied blocks to a power of two (at
        # least one leaf of four). Every node of 2^k blocks knows, as capped values (see
        # _capped_at_least): its free prefix `pre` (0 .. 2^k), where its free suffix starts
        # `sfs` (2^k when none), its longest free run `best` and the lowest start of one
        # `bst` (k bits), and for the request r >= 1, `ffs`: the lowest start of a free run of
        # at least r blocks inside the node, or `sfs` when there is none.
        #
        # Merging halves L and R of h = 2^(k-1) blocks: the run across the middle is
        # `cross = h + pre_R - sfs_L` blocks from sfs_L. The longest run is the first of L's,
        # the crossing one and R's that is longest (so ties go to the lower start): with
        # `first` the longer of L's and the crossing one, best = first if first >= best_R,
        # else best_R. The first fit is ffs_L if L's best or the crossing run fits (ffs_L is
        # sfs_L when only the crossing run does) or if R is all free (then nothing fits and
        # the node's suffix starts at sfs_L); else h + ffs_R. A node costs O(k) gates: the tree
        # costs O(n) gates and O(log n) levels of small comparators.
        #
        # Request 0 fits at 0: the root's `fit_start` reads 0 for it, so the tree below may
        # treat it as it likes (it reads it as request 1 in the leaves).
        m = Module()
        n = self._n
        levels = max((n - 1).bit_length(), 2)           # the tree has 2^levels blocks
        merges = levels - 2                             # tree levels above the leaves
        segments = 1 + 2 * merges                       # leaf tables, then two halves a level
        counts = self._cut_positions(segments)
        parallel = self._latency >= 2

        free = self.status if self._free_level else ~self.status
        state = {"free": (Cat(free, Const(0, (1 << levels) - n)), 0),
                 "request": (self.request, 0)}

        def boundary(index, state):
            # `counts[index]` registers on every value of the state, each reset to what the
            # state holds for "all occupied, request 0".
            for copy in range(counts[index]):
                registered = {}
                for name, (value, init) in state.items():
                    register = Signal(len(value), name=f"{name}_q{index}_{copy}", init=init)
                    m.d.sync += register.eq(value)
                    registered[name] = (register, init)
                state = registered
            return {name: value for name, (value, _) in state.items()}

        # Reset values of the fields of a node of 2^k blocks: all occupied, request 0 (which
        # fits at once, so every node passes its leftmost leaf's `ffs` up).
        def node_inits(k):
            return {"pre": 0, "sfs": 1 << k, "best": 0, "bst": 0, "ffs": _LEAF}

        def node_state(nodes, k, state):
            inits = node_inits(k)
            for index, node in enumerate(nodes):
                for field, value in node.items():
                    state[f"n{k}_{index}_{field}"] = (value, inits[field])
            return state

        def read_nodes(values, count, k):
            return [{field: values[f"n{k}_{index}_{field}"] for field in node_inits(k)}
                    for index in range(count)]

        # Leaves: constant tables of their four status bits (each table bit an OR of one-hot
        # status words: plain logic, which synthesis and the equivalence checker take as it
        # is, unlike a ROM), and the first fit for requests 1 .. 4 (more fits in no leaf).
        values = boundary(0, state)
        free, request = values["free"], values["request"]
        fields = _leaf_fields()
        at_most = {j: named(m, f"request_at_most_{j}", ~_at_least(request, Const(j + 1, 3)))
                   for j in range(1, _LEAF + 1)}
        nodes = []
        for index in range(1 << merges):
            name = f"n2_{index}"
            w = free[index * _LEAF:(index + 1) * _LEAF]
            word_hot = named(m, f"{name}_word",
                             Cat(*(_equals(w, word) for word in range(1 << _LEAF))))
            node = {}
            for field in ("pre", "sfs", "best", "bst"):
                width = 2 if field == "bst" else 3
                node[field] = named(m, f"{name}_{field}", Cat(*(
                    Cat(*(word_hot[word] for word in range(1 << _LEAF)
                          if fields[word][field] >> i & 1), Const(0, 1)).any()
                    for i in range(width))))
            # In four blocks a maximal free run starts at 0 (the prefix), ends at 4 (the
            # suffix, from sfs) or lies strictly inside: [1, 2), [1, 3) or [2, 3). The first
            # fit is the first of them, in that order, that is long enough; else sfs.
            prefix_fits = _or_all([at_most[j] & w[:j].all() for j in range(1, _LEAF + 1)])
            inside_12 = ~w[0] & w[1] & ~w[2]
            inside_13 = ~w[0] & w[1] & w[2] & ~w[3]
            inside_23 = ~w[1] & w[2] & ~w[3]
            inside_fits = (at_most[1] & (inside_12 | inside_13 | inside_23)) | (
                at_most[2] & inside_13)
            node["ffs"] = named(m, f"{name}_ffs", Mux(
                prefix_fits, 0, Mux(inside_fits, Mux(inside_23, 2, 1), node["sfs"]))[:3])
            nodes.append(node)

        root_fits = None
        for level in range(merges):
            k = level + 3                               # the new nodes have 2^k blocks
            side_by_side = parallel or k == levels      # every comparison in the first half
            # First half: the crossing run and the comparisons that need no multiplexer.
            state = node_state(nodes, k - 1, {"request": (request, 0)})
            values = boundary(1 + 2 * level, state)
            request = values["request"]
            children = read_nodes(values, len(nodes), k - 1)
            state = node_state(children, k - 1, {"request": (request, 0)})
            for index in range(len(nodes) // 2):
                left, right = children[2 * index], children[2 * index + 1]
                name = f"n{k}_{index}"
                cross = named(m, f"{name}_cross", _cross_run(right["pre"], left["sfs"]))
                compared = {"cross": (cross, 0),
                            "left_first": (_capped_at_least(left["best"], cross), 1)}
                if side_by_side:
                    compared.update({
                        "left_over_right": (_capped_at_least(left["best"], right["best"]), 1),
                        "cross_over_right": (_capped_at_least(cross, right["best"]), 1),
                        "left_fits": (_fits(left["best"], request), 1),
                        "cross_fits": (_fits(cross, request), 1),
                    })
                if k == levels:
                    compared["right_fits"] = (_fits(right["best"], request), 1)
                for key, (value, init) in compared.items():
                    state[f"{name}_{key}"] = (named(m, f"{name}_{key}", value), init)
            # Second half: the multiplexers (and, building for area, the comparisons with
            # the first candidate).
            values = boundary(2 + 2 * level, state)
            request = values["request"]
            children = read_nodes(values, len(nodes), k - 1)
            nodes = []
            for index in range(len(children) // 2):
                left, right = children[2 * index], children[2 * index + 1]
                name = f"n{k}_{index}"
                cross, left_first = values[f"{name}_cross"], values[f"{name}_left_first"]
                first = named(m, f"{name}_first", Mux(left_first, left["best"], cross))
                first_start = Mux(left_first, left["bst"], left["sfs"])
                if side_by_side:
                    first_wins = Mux(left_first, values[f"{name}_left_over_right"],
                                     values[f"{name}_cross_over_right"])
                    first_fits = Mux(left_first, values[f"{name}_left_fits"],
                                     values[f"{name}_cross_fits"])
                else:
                    first_wins = _capped_at_least(first, right["best"])
                    first_fits = _fits(first, request)
                first_wins = named(m, f"{name}_first_wins", first_wins)
                first_fits = named(m, f"{name}_first_fits", first_fits)
                if k == levels:
                    root_fits = first_fits | values[f"{name}_right_fits"]
                left_full, right_full = left["pre"][k - 1], right["pre"][k - 1]
                nodes.append({
                    "pre": named(m, f"{name}_pre",
                                 Mux(left_full, _half_plus(right["pre"], k), left["pre"])),
                    "sfs": named(m, f"{name}_sfs",
                                 Mux(right_full, left["sfs"], _half_plus(right["sfs"], k))),
                    "best": named(m, f"{name}_best", Mux(first_wins, first, right["best"])),
                    "bst": named(m, f"{name}_bst",
                                 Mux(first_wins, first_start, Cat(right["bst"], 1))),
                    "ffs": named(m, f"{name}_ffs",
                                 Mux(first_fits | right_full, left["ffs"],
                                     _half_plus(right["ffs"], k))),
                })

        root = nodes[0]
        if root_fits is None:                           # a single leaf
            root_fits = _fits(root["best"], request)
        # With latency, the ports are the output registers; they reset (see their `init` in
        # the signature) to what "all occupied, request 0" gives.
        domain = m.d.sync if self._latency else m.d.comb
        domain += [
            self.length.eq(root["best"]),
            self.start.eq(root["bst"]),
            self.fit.eq(root_fits),
            self.fit_start.eq(Mux(root_fits & request.any(), root["ffs"], 0)),
        ]
        return m
