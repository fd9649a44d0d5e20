"""Largest-contiguous-free-block circuits (seed 002, embodiments 4-6).

Three components with the same ports and the same pipeline options:

* :class:`MaxFreeBlock` -- embodiment 4 as the seed writes it: exact, about n² gates;
* :class:`GroupedMaxFreeBlock` -- embodiment 5: the same circuit over wholly free groups;
* :class:`SampledMaxFreeBlock` -- embodiment 6: only the sampled run lengths;

and the project's exact allocator primitive, :class:`ExactMaxFreeBlock`: the longest free run
with its start address and a first-fit search, in O(n log n) gates.

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


class ExactMaxFreeBlock(_BlockParameters, wiring.Component):
    """The longest free run, where it starts, and a first-fit search: exact, O(n log n) gates.

    The allocator primitive of embodiment 1 (step a43 allocates at a start address). It gives
    the same ``length`` as :class:`MaxFreeBlock` for about ``n log2 n`` gates instead of
    ``n²``, and says where to allocate.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    free_level : int
        1 when a free block reads 1, 0 when it reads 0.
    latency : int
        Clocks from inputs to outputs. 0: combinational. 1: registered outputs. 2 up to
        ``max_latency(n) = floor(log2 n) + 3``: pipelined -- a register after the run-length
        doubling, then ``latency - 2`` registers spread evenly over the ``floor(log2 n) + 1``
        lifting levels (the last possible one just before the address encoders), and the
        output register. Each lifting level is one AND, one wide OR and one multiplexer
        deep, so the deepest pipeline has about ``log2 n`` logic levels per stage. A new
        ``status`` and ``request`` may be presented every clock.

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
        Lowest address at which such a run starts; 0 when ``fit`` is 0.

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

    def _cut_after_levels(self, levels: int) -> set[int]:
        # Which lifting levels (0 = the first, for the largest power of two) get a register
        # after them when the latency asks for latency - 2 of them.
        cuts = max(self._latency - 2, 0)
        return {(index + 1) * levels // (cuts + 1) if cuts < levels else index
                for index in range(cuts)}

    def elaborate(self, platform):
        # Run-length doubling: Q_b[j] says "blocks j .. j + 2^b - 1 are free"; Q_b is Q_(b-1)
        # AND Q_(b-1) moved down by 2^(b-1), n - 2^b + 1 bits wide. Binary lifting then
        # works on run *ends*: E[e] says "a free run of the current length ends just below
        # e" (n + 1 bits, all set for length 0). Lengthening every such run by 2^b is
        # (E AND Q_b) moved *up* by 2^b -- a constant shift, so each level is one AND, one
        # multiplexer and (for the longest run) one wide OR per bit: n log n gates, log² n
        # deep. The longest run takes a level whenever some run survives it; the first-fit
        # search takes the levels of the bits of `request`. The lowest surviving end minus
        # the length is the lowest start.
        m = Module()
        n = self._n
        top = n.bit_length() - 1                        # the largest b with 2^b <= n
        ends_width = n + 1
        everywhere = (1 << ends_width) - 1

        def cut(name, value, init):
            register = Signal(len(value), name=name, init=init)
            m.d.sync += register.eq(value)
            return register

        free = self.status if self._free_level else ~self.status
        runs = run_doubling(m, free)

        request = self.request
        if self._latency >= 2:                          # the register after the doubling
            runs = [cut(f"runs{1 << b}_q", runs[b], 0) for b in range(top + 1)]
            request = cut("request_q", request, 0)

        longest_ends = Const(everywhere, ends_width)
        fit_ends = Const(everywhere, ends_width)
        found = []
        cuts = self._cut_after_levels(top + 1)
        for level, b in enumerate(range(top, -1, -1)):
            step, width = 1 << b, n - (1 << b) + 1
            found_here, longer = lengthen(m, longest_ends, runs[b], step, str(step))
            found.append(found_here)
            longest_ends = named(m, f"longest_ends{level}", longer)
            fitted = Cat(Const(0, step), fit_ends[:width] & runs[b])
            fit_ends = named(m, f"fit_ends{level}", Mux(request[b], fitted, fit_ends))
            if level in cuts:
                longest_ends = cut(f"longest_ends{level}_q", longest_ends, everywhere)
                fit_ends = cut(f"fit_ends{level}_q", fit_ends, everywhere)
                found = [cut(f"found{level}_{index}_q", bit, 0) for index, bit in enumerate(found)]
                runs = [cut(f"runs{1 << k}_l{level}_q", runs[k], 0) if k < b else runs[k]
                        for k in range(top + 1)]
                request = cut(f"request_l{level}_q", request, 0)

        length = Cat(*reversed(found))                  # found[0] is the top bit
        fit = fit_ends.any()
        # With latency, the ports are the output registers; they reset (see their `init` in
        # the signature) to what "all occupied, request 0" gives.
        domain = m.d.sync if self._latency else m.d.comb
        domain += [
            self.length.eq(length),
            self.start.eq(lowest_end(longest_ends) - length),
            self.fit.eq(fit),
            self.fit_start.eq(Mux(fit, lowest_end(fit_ends) - request, 0)),
        ]
        return m
