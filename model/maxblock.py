"""Golden models of the largest-contiguous-free-block circuits (seed 002, embodiments 4-6).

A resource of ``n`` blocks is described by a status word: bit ``i`` is block ``i`` (address
``i``). ``free_level`` says which level means "free": 1 for the seed's first form (free = 1,
AND the shifted sequences, OR-reduce), 0 for its second form (free = 0, OR the shifted
sequences, AND-reduce and invert). Every function here is bit-exact to the matching circuit in
``hw.maxblock``:

* :func:`max_free_run` -- embodiment 4, the exact length of the longest free run;
* :func:`grouped_max_free_run` -- embodiment 5, the run over groups that are wholly free,
  times the group size (a multiple of ``n // groups``, never more than the exact length);
* :func:`sampled_max_free_run` -- embodiment 6, the largest sampled length ``k + 1`` that
  still fits (never more than the exact length);
* :func:`largest_free_block`, :func:`first_fit` and :func:`exact_free_block` -- the project's
  exact O(n)-gate allocator primitive (``hw.maxblock.ExactMaxFreeBlock``): where the longest
  free run starts, and the lowest start of a run of at least ``request`` blocks.

:func:`seed_procedure` and friends are literal, step-by-step transcriptions of the seed's
procedure (the shifted sequences S_i, their running AND/OR SA_i, the reductions SAR_i and the
downward scan); the tests hold them against the simple run-length functions so that the two
descriptions are proven to agree. :class:`PipelineModel` adds the clock: it is the cycle-exact
model of the registered circuits (``latency`` 1 or 3).

The parameter checks live here and are shared with the RTL constructors, so a bad argument
raises the same error from the model and from the hardware.

:class:`SharedSchedule` and :class:`SharedMaxFreeBlockModel` describe and model embodiment 7,
one unit time-multiplexed over several resource types (``hw.shared_maxblock``).

Run ``python -m model.maxblock_report`` for the accuracy report of the approximate variants.

Kept as one module (about 720 lines, over the guide's 600 lines) on purpose: it is the one
golden model every ``hw.maxblock`` circuit is checked against (``hw.maxblock.MODEL_TWINS``);
each circuit's function is a few lines over the shared parameter checks and run-length helpers,
and the rest is the seed's literal procedure and the two clocked models built on the same
helpers, so one module keeps the twins, the checks they share and the seed's text side by side."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from model.checks import is_integer as _is_int

__all__ = [
    "ExactOutputs",
    "FREE_LEVELS",
    "LATENCIES",
    "PipelineModel",
    "SeedTrace",
    "SharedMaxFreeBlockModel",
    "SharedSchedule",
    "aligned_blocks",
    "check_block_count",
    "check_exact_latency",
    "check_request",
    "check_free_level",
    "check_first_fit_latency",
    "first_fit_max_latency",
    "check_groups",
    "check_latency",
    "check_samples",
    "check_status",
    "default_samples",
    "exact_free_block",
    "exact_max_latency",
    "first_fit",
    "first_fit_unchecked",
    "free_mask",
    "grouped_max_free_run",
    "grouped_run_unchecked",
    "grouped_seed_procedure",
    "largest_free_block",
    "longest_run_unchecked",
    "max_free_run",
    "sampled_max_free_run",
    "sampled_seed_procedure",
    "seed_procedure",
]

#: The two encodings of the status word (the level that means "free").
FREE_LEVELS = (0, 1)

#: Clocks from ``status`` to ``length``: 0 combinational, 1 registered output (the seed's
#: "one clock"), 3 the seed's three registered steps (d2, d3 and d4 each a clock).
LATENCIES = (0, 1, 3)


# -- parameter checks (shared with hw.maxblock) -------------------------------------------------

def check_block_count(n) -> int:
    """Return ``n`` if it is a valid block count (a positive integer), else raise."""
    if not _is_int(n) or n < 1:
        raise TypeError(f"Block count must be a positive integer, not {n!r}")
    return n


def check_free_level(free_level) -> int:
    """Return ``free_level`` if it is 0 or 1, else raise."""
    if not _is_int(free_level):
        raise TypeError(f"Free level must be the integer 0 or 1, not {free_level!r}")
    if free_level not in FREE_LEVELS:
        raise ValueError(
            f"Free level must be 1 (free blocks read 1) or 0 (free blocks read 0), "
            f"not {free_level}")
    return free_level


def check_latency(latency) -> int:
    """Return ``latency`` if it is one of :data:`LATENCIES`, else raise."""
    if not _is_int(latency):
        raise TypeError(f"Latency must be an integer, not {latency!r}")
    if latency not in LATENCIES:
        raise ValueError(
            f"Latency must be 0 (combinational), 1 (registered output) or 3 (the seed's "
            f"three registered steps), not {latency}")
    return latency


def check_groups(n: int, groups) -> int:
    """Return ``groups`` if it is a positive integer dividing the block count ``n``."""
    check_block_count(n)
    if not _is_int(groups) or groups < 1:
        raise TypeError(f"Group count must be a positive integer, not {groups!r}")
    if groups > n or n % groups:
        raise ValueError(f"Group count {groups} must divide the block count {n}")
    return groups


def check_samples(n: int, samples) -> tuple[int, ...]:
    """Return ``samples`` as a tuple if it is a valid sample set for ``n`` blocks, else raise.

    A sample ``k`` stands for the run length ``k + 1``. The seed asks for a non-empty,
    strictly increasing set of ``k`` in ``0 .. n - 1`` whose steps never decrease
    (``k[w + 1] - k[w] >= k[w] - k[w - 1]``), so that small lengths are sampled densely.
    """
    check_block_count(n)
    if isinstance(samples, (str, bytes)) or not isinstance(samples, Sequence):
        raise TypeError(f"Samples must be a sequence of integers, not {samples!r}")
    samples = tuple(samples)
    if not samples:
        raise ValueError("Samples must not be empty")
    for k in samples:
        if not _is_int(k):
            raise TypeError(f"Samples must be integers, not {k!r}")
        if not 0 <= k < n:
            raise ValueError(f"Sample {k} is out of range: samples must lie in 0..{n - 1}")
    for prev, k in zip(samples, samples[1:], strict=False):
        if k <= prev:
            raise ValueError(f"Samples must be strictly increasing, but {k} follows {prev}")
    for w in range(1, len(samples) - 1):
        before, after = samples[w] - samples[w - 1], samples[w + 1] - samples[w]
        if after < before:
            raise ValueError(
                f"Sample steps must not decrease, but the step {after} after sample "
                f"{samples[w]} is smaller than the step {before} before it")
    return samples


def aligned_blocks(low: int, high: int) -> list[tuple[int, int]]:
    """Blocks ``low .. high - 1`` as the fewest aligned power-of-two ranges, left to right.

    Each is ``(start, size)`` with ``size`` a power of two dividing ``start``: the nodes of a
    binary tree over the addresses that cover the range exactly. ``aligned_blocks(0, 100)`` is
    ``[(0, 64), (64, 32), (96, 4)]``.
    """
    blocks = []
    while low < high:
        size = 1 << ((high - low).bit_length() - 1)
        while low % size:
            size //= 2
        blocks.append((low, size))
        low += size
    return blocks


def first_fit_max_latency() -> int:
    """The deepest pipeline of ``hw.maxblock.FirstFit`` for any ``n``: 3 (a register after
    the runs' search, one in the middle of the lowest-start tree, and the outputs')."""
    return 3


def check_first_fit_latency(latency) -> int:
    """``latency`` if ``hw.maxblock.FirstFit`` can be built with it (0 to
    :func:`first_fit_max_latency`), else ``ValueError`` in one line."""
    top = first_fit_max_latency()
    if isinstance(latency, bool) or not isinstance(latency, int) or not 0 <= latency <= top:
        raise ValueError(f"First-fit latency must be an integer from 0 to {top}, "
                         f"not {latency!r}")
    return latency


def exact_max_latency(n: int) -> int:
    """The deepest pipeline of the exact circuit for ``n`` blocks: one register per piece.

    ``hw.maxblock.ExactMaxFreeBlock`` is built from pieces of logic: the leaf tables (when
    there is a part of four blocks or more), two per tree level above them, and one that joins
    the power-of-two parts when ``n`` is not a power of two. Its deepest pipeline has a
    register after every piece: ``2 log2(n) - 3`` for ``n = 2^p >= 4`` (11 for 128),
    ``2 floor(log2 n) - 2`` for other ``n >= 4`` and 1 below four blocks. More registers would
    cut no logic.
    """
    blocks = aligned_blocks(0, check_block_count(n))
    top = blocks[0][1].bit_length() - 1               # the level of the largest part
    tree = 1 + 2 * (top - 2) if top >= 2 else 0
    return tree + (1 if len(blocks) > 1 or top < 2 else 0)


def check_exact_latency(n: int, latency) -> int:
    """Return ``latency`` if the exact circuit for ``n`` blocks can be built with it."""
    if not _is_int(latency):
        raise TypeError(f"Latency must be an integer, not {latency!r}")
    deepest = exact_max_latency(n)
    if not 0 <= latency <= deepest:
        if deepest == 1:
            raise ValueError(
                f"Latency of the exact circuit for {n} blocks must be 0 (combinational) or 1 "
                f"(registered outputs): it is one piece of logic, with nothing to pipeline, "
                f"not {latency}")
        raise ValueError(
            f"Latency of the exact circuit for {n} blocks must be 0 (combinational), 1 "
            f"(registered outputs) or up to {deepest} (a register after each of its "
            f"{deepest} pieces of logic), not {latency}")
    return latency


def check_request(request, n: int) -> int:
    """Return ``request`` if it is a block count in ``0 .. n``, else raise."""
    if not _is_int(request):
        raise TypeError(f"Request must be an integer, not {request!r}")
    if not 0 <= request <= n:
        raise ValueError(f"Request {request} is out of range: requests must lie in 0..{n}")
    return request


def check_status(status, n: int) -> int:
    """Return ``status`` if it is an ``n``-bit unsigned integer, else raise."""
    if not _is_int(status):
        raise TypeError(f"Status must be an integer, not {status!r}")
    if not 0 <= status < 1 << n:
        raise ValueError(f"Status {status:#x} does not fit in {n} bits")
    return status


# -- the functional models ------------------------------------------------------------------------

def free_mask(status: int, n: int, free_level: int = 1) -> int:
    """The status word re-encoded so that 1 means free, whatever ``free_level`` is."""
    return status if free_level else ~status & ((1 << n) - 1)


def _longest_run(bits: int) -> int:
    # Each step shortens every run of ones by one; the step count is the longest run.
    length = 0
    while bits:
        bits &= bits >> 1
        length += 1
    return length


def max_free_run(status: int, n: int, *, free_level: int = 1) -> int:
    """Length of the longest run of free blocks in ``status`` (0 when nothing is free)."""
    check_block_count(n)
    check_free_level(free_level)
    check_status(status, n)
    return _longest_run(free_mask(status, n, free_level))


def _group_bits(free: int, n: int, groups: int) -> int:
    # Bit g is 1 when every block of group g is free (step e2).
    size = n // groups
    full = (1 << size) - 1
    return sum(1 << g for g in range(groups) if (free >> (g * size)) & full == full)


def grouped_max_free_run(status: int, n: int, groups: int, *, free_level: int = 1) -> int:
    """Embodiment 5: the longest run of wholly free groups, times the group size ``n // groups``.

    A multiple of the group size and never more than :func:`max_free_run`.
    """
    check_groups(n, groups)
    check_free_level(free_level)
    check_status(status, n)
    return _longest_run(_group_bits(free_mask(status, n, free_level), n, groups)) * (n // groups)


def sampled_max_free_run(status: int, n: int, samples: Sequence[int], *,
                         free_level: int = 1) -> int:
    """Embodiment 6: the largest ``k + 1`` over the samples ``k`` with a free run of ``k + 1``.

    0 when no sampled length fits. Never more than :func:`max_free_run`.
    """
    samples = check_samples(n, samples)
    exact = max_free_run(status, n, free_level=free_level)
    return max((k + 1 for k in samples if k + 1 <= exact), default=0)


def _run_starts(free: int, length: int) -> int:
    """Bit j set when blocks ``j .. j + length - 1`` are all free (``length`` >= 1)."""
    starts, covered = free, 1
    while covered < length:                 # double the covered length, then top it up
        step = min(covered, length - covered)
        starts &= starts >> step
        covered += step
    return starts


def _lowest_bit(bits: int) -> int:
    return (bits & -bits).bit_length() - 1


def largest_free_block(status: int, n: int, *, free_level: int = 1) -> tuple[int, int]:
    """``(start, length)`` of the longest free run; the lowest start among equals.

    ``(0, 0)`` when no block is free.
    """
    check_block_count(n)
    check_free_level(free_level)
    check_status(status, n)
    free = free_mask(status, n, free_level)
    length = _longest_run(free)
    if not length:
        return 0, 0
    return _lowest_bit(_run_starts(free, length)), length


def first_fit(status: int, n: int, request: int, *, free_level: int = 1) -> int | None:
    """The lowest address where a free run of at least ``request`` blocks starts.

    ``None`` when there is no such run; 0 for ``request = 0`` (which always fits).
    """
    check_block_count(n)
    check_free_level(free_level)
    check_status(status, n)
    check_request(request, n)
    if not request:
        return 0
    starts = _run_starts(free_mask(status, n, free_level), request)
    return _lowest_bit(starts) if starts else None


# -- unchecked fast paths (the system models' inner loops) ---------------------------------------

def longest_run_unchecked(free: int) -> int:
    """:func:`max_free_run` of a free-level-1 word (1 = free), without argument checks: the
    caller guarantees a valid word. O(log n) word operations: runs of 1, 2, 4, ... blocks
    until none is left, then a binary search of the remainder (a run of ``length + step``
    starts at ``j`` when runs of ``length`` start at ``j`` and ``j + step``, ``step <=
    length``). Equal to :func:`max_free_run` (tests: exhaustive to 12 bits, random 128)."""
    if not free:
        return 0
    starts, length = free, 1
    while True:
        longer = starts & (starts >> length)
        if not longer:
            break
        starts, length = longer, length << 1
    step = length >> 1
    while step:
        longer = starts & (starts >> step)
        if longer:
            starts, length = longer, length + step
        step >>= 1
    return length


def first_fit_unchecked(free: int, request: int) -> int | None:
    """:func:`first_fit` of a free-level-1 word, without argument checks (``request >= 1``)."""
    starts, covered = free, 1
    while covered < request and starts:     # _run_starts, stopping early when none is left
        step = covered if covered <= request - covered else request - covered
        starts &= starts >> step
        covered += step
    return (starts & -starts).bit_length() - 1 if starts else None


def grouped_run_unchecked(free: int, n: int, groups: int) -> int:
    """:func:`grouped_max_free_run` of a free-level-1 word, without argument checks."""
    return longest_run_unchecked(_group_bits(free, n, groups)) * (n // groups)


@dataclass(frozen=True)
class ExactOutputs:
    """The outputs of ``hw.maxblock.ExactMaxFreeBlock`` for one status word and request."""

    length: int
    start: int
    fit: int
    fit_start: int


def exact_free_block(status: int, request: int, n: int, *, free_level: int = 1
                     ) -> ExactOutputs:
    """Everything the exact circuit answers, bit-exact: :func:`largest_free_block` and
    :func:`first_fit` as port values (``fit_start`` reads 0 when ``fit`` is 0)."""
    start, length = largest_free_block(status, n, free_level=free_level)
    fit_start = first_fit(status, n, request, free_level=free_level)
    return ExactOutputs(length, start, int(fit_start is not None), fit_start or 0)


def _is_prime(value: int) -> bool:
    return value >= 2 and all(value % d for d in range(2, int(value ** 0.5) + 1))


def default_samples(n: int, *, exclude_primes: bool = False) -> list[int]:
    """The default sample set (values of ``k``; each stands for the run length ``k + 1``).

    Lengths 1 to 8 are sampled densely; above that each octave ``(2**j, 2**(j + 1)]`` is
    sampled at four evenly spaced, power-of-two steps: 10, 12, 14, 16, 20, 24, 28, 32, 40, ...
    up to ``n``. For ``n = 128`` this is 24 samples instead of 128; the result is exact for
    every length up to 8 and under-estimates a longer run by less than a quarter.

    ``exclude_primes`` drops the lengths that are prime. The seed names the excluded values
    among ``0 .. n - 1`` but motivates them as request sizes that are rarely asked for, so the
    test is on the length ``k + 1`` (excluding prime ``k`` would drop lengths 3, 4, 6 and 8).
    Samples are then dropped, smallest first, wherever keeping them would make a step smaller
    than the one before it, so the result still obeys the seed's step rule: for ``n = 128``,
    lengths 1, 4, 8, 12, 16, 20, 24, 28, 32, 40, ..., 128.
    """
    check_block_count(n)
    lengths = list(range(1, min(n, 8) + 1))
    octave = 8
    while octave < n:
        step = octave // 4
        lengths += [length for length in range(octave + step, 2 * octave + 1, step)
                    if length <= n]
        octave *= 2
    if exclude_primes:
        kept: list[int] = []
        for length in lengths:
            if _is_prime(length):
                continue
            if len(kept) >= 2 and length - kept[-1] < kept[-1] - kept[-2]:
                continue
            kept.append(length)
        lengths = kept
    return [length - 1 for length in lengths]


# -- the seed's procedure, step by step -----------------------------------------------------------

@dataclass(frozen=True)
class SeedTrace:
    """Every intermediate value of the seed's procedure, in the status word's own encoding.

    Attributes
    ----------
    shifted : dict[int, int]
        ``S_i``: the input shifted by ``i`` towards address 0, the ``i`` vacated top bits set
        to "occupied" (step d2).
    accumulated : dict[int, int]
        ``SA_i``: ``S_0`` AND ``S_1`` AND ... ``S_i`` (OR when free blocks read 0), step d3.
        Bit ``j`` of ``SA_i`` says whether the ``i + 1`` blocks from address ``j`` are free.
    reduced : dict[int, int]
        ``SAR_i``: the OR-reduction of ``SA_i`` (AND-reduce then invert), step d41.
    length : int
        The result of the downward scan: ``i' + 1`` for the highest ``i'`` with
        ``SAR_i' = 1``, 0 if none (steps d432, d433), scaled for the grouped variant.
    """

    shifted: dict[int, int]
    accumulated: dict[int, int]
    reduced: dict[int, int]
    length: int


def _trace(status: int, n: int, free_level: int, indices: Sequence[int], scale: int = 1
           ) -> SeedTrace:
    full = (1 << n) - 1
    occupied = 0 if free_level else full
    shifted, accumulated, reduced = {}, {}, {}
    running = None
    for i in range(n):
        vacated = occupied & ~(full >> i)       # the top i bits, set to "occupied"
        shifted[i] = (status >> i) | vacated
        if running is None:
            running = shifted[i]
        elif free_level:
            running &= shifted[i]
        else:
            running |= shifted[i]
        if i in indices:
            accumulated[i] = running
            reduced[i] = int(running != 0) if free_level else int(running != full)
    length = 0
    for i in sorted(indices, reverse=True):     # the scan, from the top down
        if reduced[i]:
            length = (i + 1) * scale
            break
    return SeedTrace(shifted, accumulated, reduced, length)


def seed_procedure(status: int, n: int, *, free_level: int = 1) -> SeedTrace:
    """Embodiment 4 exactly as the seed writes it (steps d1 to d433)."""
    check_block_count(n)
    check_free_level(free_level)
    check_status(status, n)
    return _trace(status, n, free_level, range(n))


def grouped_seed_procedure(status: int, n: int, groups: int, *, free_level: int = 1
                           ) -> SeedTrace:
    """Embodiment 5 exactly as the seed writes it: reduce each group (e2), then steps e31-e3332.

    The trace is of the ``groups``-bit sequence F0; its ``length`` is ``j' * (n / groups)``.
    """
    check_groups(n, groups)
    check_free_level(free_level)
    check_status(status, n)
    size = n // groups
    group_full = (1 << size) - 1
    reduced_status = 0
    for g in range(groups):
        chunk = (status >> (g * size)) & group_full
        # AND over the group when free reads 1; OR over the group when free reads 0.
        bit = int(chunk == group_full) if free_level else int(chunk != 0)
        reduced_status |= bit << g
    return _trace(reduced_status, groups, free_level, range(groups), scale=size)


def sampled_seed_procedure(status: int, n: int, samples: Sequence[int], *,
                           free_level: int = 1) -> SeedTrace:
    """Embodiment 6 exactly as the seed writes it: SA_k and SAR_k for the sampled k only."""
    samples = check_samples(n, samples)
    check_free_level(free_level)
    check_status(status, n)
    return _trace(status, n, free_level, samples)


# -- the clock ------------------------------------------------------------------------------------

class PipelineModel:
    """Cycle-exact model of a block with ``latency`` clocks and its stall interface.

    The block (``hw.maxblock``, see its ``PIPELINE_CONTRACT``) has ``valid`` and ``enable``
    inputs and a ``result_valid`` output when ``latency`` is 1 or more. :meth:`cycle` is one
    clock: it takes the inputs presented during that clock and returns the outputs and
    ``result_valid`` seen during the same clock (before the edge), then advances. At each edge
    with ``enable`` high the data move one stage on (``function(*inputs)`` enters) and
    ``valid`` moves with them; with ``enable`` low nothing moves. So with ``enable`` high
    every clock, the output in clock ``t`` is ``function(*inputs[t - L])``.

    The reset input clears only the valid stages (the block's control state): the data stages
    have no reset and keep moving. What they hold at power-on is ``reset_output``; ``None``
    says it is not known (the hardware does not specify it), and the outputs read ``None``
    until known data have reached them.

    Parameters
    ----------
    function : callable
        Maps the inputs of one clock to the outputs, e.g.
        ``functools.partial(max_free_run, n=16)``.
    latency : int
        Clocks from input to output, 0 or more (the circuit's constructor says which values
        it accepts).
    reset_output :
        What every data stage holds at power-on (``None``: unknown).
    """

    def __init__(self, function: Callable, latency: int, *, reset_output=0):
        if not _is_int(latency) or latency < 0:
            raise TypeError(f"Latency must be a non-negative integer, not {latency!r}")
        self._function = function
        self._latency = latency
        self._data = [reset_output] * latency           # index 0 drives the outputs
        self._valid = [0] * latency

    @property
    def latency(self) -> int:
        return self._latency

    def reset(self) -> None:
        """What the reset input does at an edge: every valid stage to 0, the data untouched."""
        self._valid = [0] * self._latency

    def cycle(self, *inputs, valid: int = 1, enable: int = 1, reset: bool = False):
        """Advance one clock; return ``(outputs, result_valid)`` seen during it.

        ``valid`` and ``enable`` are those inputs of the block in this clock, ``reset`` its
        synchronous reset. A combinational block (latency 0) passes ``valid`` through.
        """
        if not self._latency:
            return self._function(*inputs), int(valid)
        seen = self._data[0], self._valid[0]
        if enable:
            self._data = [*self._data[1:], self._function(*inputs)]
            self._valid = [*self._valid[1:], int(valid)]
        if reset:
            self.reset()
        return seen

    def step(self, *inputs, valid: int = 1, enable: int = 1, reset: bool = False):
        """:meth:`cycle`, returning only the outputs."""
        return self.cycle(*inputs, valid=valid, enable=enable, reset=reset)[0]


# -- embodiment 7: one unit shared by several resource types -----------------------------------

#: The seed's example schedule: a 128-block type alone, then a 64-block and a 48-block type.
SEED_SCHEDULE = ((("vgpr", 128),), (("sgpr", 64), ("lds", 48)))


@dataclass(frozen=True)
class SharedSchedule:
    """A static schedule of resource types over the periods of a shared unit ``width`` bits wide.

    Period ``c`` packs its types side by side from bit 0 in the order given; the bits left
    over read as occupied. Every type appears in exactly one period.

    Parameters
    ----------
    periods : sequence of sequences of (name, size)
        Per period, the resource types it serves: a name (a Python identifier, unique in the
        schedule) and a block count.
    width : int
        Bits of the shared unit (the seed's E); every period's sizes must add up to at most it.
    """

    periods: tuple[tuple[tuple[str, int], ...], ...] = SEED_SCHEDULE
    width: int = 128

    def __post_init__(self):
        if not _is_int(self.width) or self.width < 1:
            raise TypeError(f"Unit width must be a positive integer, not {self.width!r}")
        if isinstance(self.periods, (str, bytes)) or not isinstance(self.periods, Sequence) \
                or not self.periods:
            raise ValueError(f"Schedule must be a non-empty sequence of periods, not "
                             f"{self.periods!r}")
        periods, seen = [], {}
        for number, period in enumerate(self.periods, start=1):
            if isinstance(period, (str, bytes)) or not isinstance(period, Sequence) \
                    or not period:
                raise ValueError(f"Period {number} must be a non-empty sequence of "
                                 f"(name, size) pairs, not {period!r}")
            types = []
            for entry in period:
                if not (isinstance(entry, Sequence) and len(entry) == 2):
                    raise ValueError(f"Period {number}: a resource type is a (name, size) "
                                     f"pair, not {entry!r}")
                name, size = entry
                if not isinstance(name, str) or not name.isidentifier():
                    raise ValueError(f"Period {number}: resource type name must be an "
                                     f"identifier, not {name!r}")
                if not _is_int(size) or size < 1:
                    raise TypeError(f"Resource type {name!r} must have a positive integer "
                                    f"size, not {size!r}")
                if name in seen:
                    raise ValueError(f"Resource type {name!r} appears in periods {seen[name]} "
                                     f"and {number}; every type must appear exactly once")
                seen[name] = number
                types.append((name, size))
            total = sum(size for _, size in types)
            if total > self.width:
                sizes = " + ".join(str(size) for _, size in types)
                raise ValueError(f"Period {number} packs {sizes} = {total} blocks, more than "
                                 f"the unit's width {self.width}")
            periods.append(tuple(types))
        object.__setattr__(self, "periods", tuple(periods))

    @property
    def types(self) -> dict[str, int]:
        """Every resource type and its size, in schedule order."""
        return {name: size for period in self.periods for name, size in period}

    def placement(self, name: str) -> tuple[int, int]:
        """``(period index, bit offset in the unit)`` of resource type ``name``."""
        for index, period in enumerate(self.periods):
            offset = 0
            for other, size in period:
                if other == name:
                    return index, offset
                offset += size
        raise KeyError(name)


class SharedMaxFreeBlockModel:
    """Cycle-exact model of ``hw.shared_maxblock.SharedMaxFreeBlock``.

    One enabled clock is one period. In the ``c``-th enabled clock (modulo the schedule's
    length) the unit serves period ``c``: when ``valid`` is high it reads the status words
    (and, with ``exact``, the requests) of that period's types and, at the edge, registers
    each one's answer and raises that type's ``result_valid`` strobe for the next clock. A
    clock with ``enable`` low changes nothing. So a type's answer is one clock old when it
    appears, is refreshed every ``C`` enabled clocks, and stays put in between.

    The reset input clears the control state only: the period counter and the strobes. The
    answers are data registers without reset: what they hold before a type is first served
    is not specified, and the model says ``None`` for it.

    With ``pipeline = P`` the answers of a period read in an enabled clock are registered
    ``P`` enabled clocks later (and its strobes rise then): the period's read, and so the
    schedule, stay where they were. A reset drops the periods in flight.

    ``step(statuses, requests=None, *, valid=1, enable=1, reset=False)`` takes
    ``{name: status word}`` (and, with ``exact``, ``{name: request}``) for this clock and
    returns ``{"length": {name: ...}, "result_valid": {name: 0/1}}`` (plus ``"start"``,
    ``"fit"`` and ``"fit_start"`` with ``exact``) as seen during this clock, before the edge.
    """

    def __init__(self, schedule: SharedSchedule, *, free_level: int = 1, exact: bool = False,
                 pipeline: int = 0):
        self._schedule = schedule
        self._free_level = check_free_level(free_level)
        self._exact = bool(exact)
        types = schedule.types
        ports = ["length", *(["start", "fit", "fit_start"] if self._exact else [])]
        self._outputs = {port: dict.fromkeys(types) for port in ports}
        self._outputs["result_valid"] = dict.fromkeys(types, 0)
        self._period = 0
        self._pipeline = int(pipeline)
        # The periods in flight, oldest first: None, or the answers by type (empty when the
        # period was read without `valid`).
        self._inflight: list = [None] * self._pipeline

    def _exact_answer(self, status: int, request: int, size: int) -> ExactOutputs:
        # The request port of a type holds range(size + 1), so it can carry values above the
        # size; like the circuit, the model answers them "does not fit".
        if _is_int(request) and size < request < 1 << size.bit_length():
            start, length = largest_free_block(status, size, free_level=self._free_level)
            return ExactOutputs(length, start, 0, 0)
        return exact_free_block(status, request, size, free_level=self._free_level)

    def reset(self) -> None:
        """What the reset input does at an edge: period 0, every strobe 0, answers kept."""
        self._period = 0
        self._outputs["result_valid"] = dict.fromkeys(self._schedule.types, 0)
        self._inflight = [None] * self._pipeline

    def step(self, statuses: dict[str, int], requests: dict[str, int] | None = None, *,
             valid: int = 1, enable: int = 1, reset: bool = False) -> dict:
        """One clock; see the class documentation."""
        seen = {key: dict(value) for key, value in self._outputs.items()}
        if enable:
            served = self._schedule.periods[self._period]
            answers = {}
            if valid:
                for name, size in served:
                    if self._exact:
                        result = self._exact_answer(statuses[name], requests[name], size)
                        answers[name] = {port: getattr(result, port)
                                         for port in ("length", "start", "fit", "fit_start")}
                    else:
                        answers[name] = {"length": max_free_run(
                            statuses[name], size, free_level=self._free_level)}
            self._inflight.append(answers)
            leaving = self._inflight.pop(0)
            self._outputs["result_valid"] = dict.fromkeys(self._schedule.types, 0)
            for name, ports in (leaving or {}).items():
                self._outputs["result_valid"][name] = 1
                for port, value in ports.items():
                    self._outputs[port][name] = value
            self._period = (self._period + 1) % len(self._schedule.periods)
        if reset:
            self.reset()
        return seen
