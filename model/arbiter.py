"""Golden model of the delay-factor weight arbiter (seed 001) and its parameter checks.

The seed's task scheduler keeps, per job class (block, cluster, union), a set of tasks with
jobs waiting, and picks one job per scheduling round:

* the **expected weight** of a task is its configured weight over the total configured
  weight of its class, quantised to 1..256: ``W = clamp(floor(256 * cfg / total), 1, 256)``
  (:func:`expected_weight`);
* its **delay factor** ``D`` comes from ``W`` through a table, by default the seed's
  ``1 -> 256, 2 -> 128, 3-4 -> 64, 5-8 -> 32, 9-256 -> 16`` (:func:`delay_factor`);
* its **history weight** ``H`` starts at its configured weight; after every round a task that
  was not chosen has ``H <- H - H/D``, the chosen one ``H <- H - H/D + 256/D``;
* its **target weight** is ``T = W - H``; the job with the largest ``T`` is its class's
  pre-issue job and the largest ``T`` across classes is issued; ties go to the larger ``W``,
  then (a parameter) to the smaller ``H`` or the lower slot.

Two knobs go beyond the seed (see :class:`ArbiterParams`): ``decay=False`` replaces the
decaying history by a deficit that each round conserves (every requesting task
``H <- H - W``, the granted one ``+ sum of requesting W``: smooth weighted round-robin), and
``weight_bits`` resolves ``W`` more finely than 1/256 (only without decay).

:class:`DelayFactorArbiterModel` is the cycle-exact model of ``hw.arbiter.DelayFactorArbiter``
(ports, latency, reset and every decision the seed leaves open are described there);
:func:`simulate_shares` runs the same arithmetic round after round for the fairness questions
(:mod:`model.fairness`). :class:`ArbiterParams` validates the parameters for the model and the
RTL alike, so both reject a bad argument with the same message.

Kept as one module (about 720 lines, over the guide's 600 lines) on purpose: it is the golden
model of one RTL block (``hw/arbiter.py``), and its checks, parameters, per-slot state and
clocked model share the fixed-point arithmetic that must stay bit-exact with that block's, so
the model is one hop from its RTL and read in one place."""

import enum
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cached_property

from model.checks import is_integer as _is_int

__all__ = [
    "CLASS_NAMES",
    "DEFAULT_TABLE",
    "DIVIDER_CLOCKS",
    "MAX_CLASSES",
    "MAX_FRAC_BITS",
    "MAX_TASKS",
    "MAX_WEIGHT_BITS",
    "MAX_WEIGHT",
    "TIE_BREAKS",
    "WEIGHT_BITS",
    "WEIGHT_SCALE",
    "ArbiterInputs",
    "ArbiterOutputs",
    "ArbiterParams",
    "DelayFactorArbiterModel",
    "SlotState",
    "WriteOp",
    "check_class_count",
    "check_decay",
    "check_frac_bits",
    "check_table",
    "check_task_count",
    "check_tie_break",
    "check_weight_bits",
    "check_weights",
    "delay_factor",
    "delay_shift",
    "expected_weight",
    "grant_round",
    "select_winner",
    "simulate_shares",
]

#: The scale of the seed's expected weight: ``W = 256`` is the whole class (8 bits of
#: resolution, ``weight_bits``; the no-decay variant may use more).
WEIGHT_BITS = 8
WEIGHT_SCALE = 1 << WEIGHT_BITS
MAX_WEIGHT_BITS = 16

#: The seed's delay-factor table as ``(largest W, D)`` rows: 1 -> 256, 2 -> 128, 3-4 -> 64,
#: 5-8 -> 32, 9-256 -> 16.
DEFAULT_TABLE = ((1, 256), (2, 128), (4, 64), (8, 32), (256, 16))

#: The seed's three data-processing job classes, in the fixed order that breaks the last tie
#: across classes (class 0 first).
CLASS_NAMES = ("block", "cluster", "union")

#: What breaks a tie of target and expected weight: the smaller history weight (then the
#: class order, then the lower slot), or the class order and the lower slot directly.
TIE_BREAKS = ("history", "index")

#: Clocks the expected-weight divider spends on one slot: one to take its weight and its
#: class's total, then two quotient bits per clock, 9 bits (0..256) for the seed's 8-bit
#: expected weight (``1 + (weight_bits + 2) // 2`` clocks in general).
DIVIDER_CLOCKS = 1 + (WEIGHT_BITS + 2) // 2

MAX_TASKS = 64
MAX_CLASSES = 16
MAX_FRAC_BITS = 16

#: The largest configured weight (an 8-bit field).
MAX_WEIGHT = 255


class WriteOp(enum.IntEnum):
    """The operation of a write to a task slot."""

    CLEAR = 0
    LOAD = 1


# -- parameter checks (shared with hw.arbiter) ----------------------------------------------------

def check_task_count(tasks) -> int:
    """Return ``tasks`` if it is a valid number of task slots, else raise."""
    if not _is_int(tasks) or tasks < 1:
        raise TypeError(f"Task count must be a positive integer, not {tasks!r}")
    if tasks > MAX_TASKS:
        raise ValueError(f"Task count must be at most {MAX_TASKS}, not {tasks}")
    return tasks


def check_class_count(classes) -> int:
    """Return ``classes`` if it is a valid number of job classes, else raise."""
    if not _is_int(classes) or classes < 1:
        raise TypeError(f"Class count must be a positive integer, not {classes!r}")
    if classes > MAX_CLASSES:
        raise ValueError(f"Class count must be at most {MAX_CLASSES}, not {classes}")
    return classes


def check_frac_bits(frac_bits) -> int:
    """Return ``frac_bits`` if it is a valid number of fraction bits of ``H``, else raise."""
    if not _is_int(frac_bits) or frac_bits < 0:
        raise TypeError(f"Fraction bits must be a non-negative integer, not {frac_bits!r}")
    if frac_bits > MAX_FRAC_BITS:
        raise ValueError(f"Fraction bits must be at most {MAX_FRAC_BITS}, not {frac_bits}")
    return frac_bits


def check_table(table, frac_bits: int = 8) -> tuple[tuple[int, int], ...]:
    """Return ``table`` as a tuple of ``(largest W, D)`` rows if it is a valid delay table.

    The rows' largest expected weights must rise strictly and the last must be 256, so that
    every ``W`` in 1..256 has a row (the first whose bound is at least ``W``). Every delay
    factor must be a power of two (a shift in hardware) for which ``256 / D`` is a whole
    number of ``2**-frac_bits`` (so ``D <= 2**(8 + frac_bits)``).
    """
    check_frac_bits(frac_bits)
    if isinstance(table, (str, bytes)) or not isinstance(table, Sequence):
        raise TypeError(f"Delay table must be a sequence of (largest weight, delay factor) "
                        f"pairs, not {table!r}")
    rows = []
    for row in table:
        if (isinstance(row, (str, bytes)) or not isinstance(row, Sequence) or len(row) != 2
                or not all(_is_int(value) for value in row)):
            raise TypeError(f"Delay table rows must be (largest weight, delay factor) pairs "
                            f"of integers, not {row!r}")
        rows.append((row[0], row[1]))
    if not rows:
        raise ValueError("Delay table must not be empty")
    previous = 0
    for bound, delay in rows:
        if not previous < bound <= WEIGHT_SCALE:
            raise ValueError(f"Delay table bounds must rise strictly within 1..{WEIGHT_SCALE}, "
                             f"but {bound} follows {previous}")
        previous = bound
        if delay < 1 or delay & (delay - 1):
            raise ValueError(f"Delay factor {delay} must be a power of two")
        if delay > 1 << (8 + frac_bits):
            need = (delay.bit_length() - 1) - 8
            raise ValueError(f"Delay factor {delay} needs at least {need} fraction bits "
                             f"(256/{delay} must be representable), not {frac_bits}")
    if previous != WEIGHT_SCALE:
        raise ValueError(f"Delay table must end with the bound {WEIGHT_SCALE}, not {previous}")
    return tuple(rows)


def check_tie_break(tie_break) -> str:
    """Return ``tie_break`` if it is one of :data:`TIE_BREAKS`, else raise."""
    if not isinstance(tie_break, str):
        raise TypeError(f"Tie break must be a string, not {tie_break!r}")
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"Tie break must be 'history' (smaller H first) or 'index' (lower "
                         f"class, then lower slot first), not {tie_break!r}")
    return tie_break


def check_decay(decay) -> bool:
    """Return ``decay`` if it is a bool, else raise."""
    if not isinstance(decay, bool):
        raise TypeError(f"Decay must be True or False, not {decay!r}")
    return decay


def check_weight_bits(weight_bits, decay: bool = True) -> int:
    """Return ``weight_bits`` if it is a valid resolution of ``W`` (with ``decay``), else raise.

    The seed's decaying history is defined on the 8-bit scale (``256 / D``, ``H <= 256``), so
    only the no-decay variant may resolve ``W`` more finely.
    """
    if not _is_int(weight_bits):
        raise TypeError(f"Weight bits must be an integer, not {weight_bits!r}")
    if not WEIGHT_BITS <= weight_bits <= MAX_WEIGHT_BITS:
        raise ValueError(f"Weight bits must lie in {WEIGHT_BITS}..{MAX_WEIGHT_BITS}, "
                         f"not {weight_bits}")
    if decay and weight_bits != WEIGHT_BITS:
        raise ValueError(f"The decaying history works on the seed's {WEIGHT_BITS}-bit expected "
                         f"weight; {weight_bits} weight bits need decay=False")
    return weight_bits


def check_weights(weights) -> tuple[int, ...]:
    """Return ``weights`` as a tuple if it is a non-empty sequence of weights in 1..255."""
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
        raise TypeError(f"Weights must be a sequence of integers, not {weights!r}")
    weights = tuple(weights)
    if not weights:
        raise ValueError("Weights must not be empty")
    for weight in weights:
        if not _is_int(weight):
            raise TypeError(f"Weights must be integers, not {weight!r}")
        if not 1 <= weight <= MAX_WEIGHT:
            raise ValueError(f"Weight {weight} is out of range: configured weights lie in "
                             f"1..{MAX_WEIGHT}")
    return weights


# -- the seed's functions -------------------------------------------------------------------------

def expected_weight(cfg: int, total: int, *, weight_bits: int = WEIGHT_BITS) -> int:
    """The expected weight ``W = clamp(floor(256 * cfg / total), 1, 256)``.

    ``cfg`` is the task's configured weight (1..255), ``total`` the sum of the configured
    weights of the valid tasks of its class, the task included (so ``total >= cfg``). With
    ``weight_bits`` other than 8 the scale is ``2**weight_bits`` instead of 256.
    """
    if not _is_int(cfg) or not _is_int(total):
        raise TypeError(f"Weight and total must be integers, not {cfg!r} and {total!r}")
    if not 1 <= cfg <= MAX_WEIGHT:
        raise ValueError(f"Weight {cfg} is out of range: configured weights lie in "
                         f"1..{MAX_WEIGHT}")
    if total < cfg:
        raise ValueError(f"Total {total} must include the weight {cfg} itself")
    scale = 1 << check_weight_bits(weight_bits, decay=False)
    return min(max(scale * cfg // total, 1), scale)


def delay_factor(w: int, table=DEFAULT_TABLE) -> int:
    """The delay factor ``D`` of an expected weight ``w`` (1..256): the ``D`` of the first
    table row whose bound is at least ``w``."""
    if not _is_int(w):
        raise TypeError(f"Expected weight must be an integer, not {w!r}")
    if not 1 <= w <= WEIGHT_SCALE:
        raise ValueError(f"Expected weight {w} is out of range: it lies in 1..{WEIGHT_SCALE}")
    table = check_table(table, MAX_FRAC_BITS)
    return next(delay for bound, delay in table if w <= bound)


def delay_shift(w: int, table=DEFAULT_TABLE) -> int:
    """``log2`` of :func:`delay_factor`: the right shift that divides by ``D``."""
    return delay_factor(w, table).bit_length() - 1


# -- parameters -----------------------------------------------------------------------------------

def _clog2(value: int) -> int:
    return max(value - 1, 0).bit_length()


@dataclass(frozen=True)
class ArbiterParams:
    """The parameters of one arbiter, validated; shared by the model and the RTL.

    Attributes
    ----------
    tasks : int
        Task slots, 1..64.
    classes : int
        Job classes, 1..16 (the seed's three: block, cluster, union).
    frac_bits : int
        Fraction bits of the history weight ``H`` (0..16).
    table : tuple of (int, int)
        The delay table, ``(largest W, D)`` rows (see :func:`check_table`).
    tie_break : str
        ``"history"`` or ``"index"`` (see :data:`TIE_BREAKS`).
    decay : bool
        ``True``: the seed's history update. ``False``: no decay -- see
        :class:`DelayFactorArbiterModel`.
    weight_bits : int
        Resolution of ``W``: ``W = clamp(floor(2**weight_bits * cfg / total), 1,
        2**weight_bits)``; the seed's 8, or up to 16 without decay.
    """

    tasks: int = 8
    classes: int = 3
    frac_bits: int = 8
    table: tuple[tuple[int, int], ...] = DEFAULT_TABLE
    tie_break: str = "history"
    decay: bool = True
    weight_bits: int = WEIGHT_BITS

    def __post_init__(self):
        check_task_count(self.tasks)
        check_class_count(self.classes)
        check_frac_bits(self.frac_bits)
        object.__setattr__(self, "table", check_table(self.table, self.frac_bits))
        check_tie_break(self.tie_break)
        check_decay(self.decay)
        check_weight_bits(self.weight_bits, self.decay)

    # Widths and ranges (the RTL's signal shapes).

    @property
    def weight_scale(self) -> int:
        """``W`` of a task alone in its class: ``2**weight_bits`` (256 for the seed)."""
        return 1 << self.weight_bits

    @property
    def divider_clocks(self) -> int:
        """Clocks the divider spends on one slot: ``1 + (weight_bits + 2) // 2`` (one to
        take the operands, then two of the ``weight_bits + 1`` quotient bits per clock)."""
        return 1 + (self.weight_bits + 2) // 2

    @property
    def pass_clocks(self) -> int:
        """Clocks the divider takes to recompute every slot: ``tasks * divider_clocks``."""
        return self.tasks * self.divider_clocks

    @property
    def total_bits(self) -> int:
        """Bits of a class's total configured weight (up to ``tasks * 255``)."""
        return (self.tasks * MAX_WEIGHT).bit_length()

    @property
    def history_integer_bits(self) -> int:
        """Without decay: ``H`` is kept in ``-2**k .. 2**k - 1`` (integer part), this ``k``.

        Room for the weights of every class several times over; ``H`` saturates there (the
        tests find it never gets near, see ``tests/test_arbiter_model.py``).
        """
        return ((self.classes * (self.weight_scale + self.tasks)).bit_length()
                + _clog2(self.tasks) + 1)

    @property
    def history_range(self) -> tuple[int, int]:
        """The least and the largest raw ``H`` (in units of ``2**-frac_bits``).

        With decay ``H`` never leaves 0..256 (the update is a convex mix of ``H`` and 256),
        so the register is unsigned, ``9 + frac_bits`` bits; without decay it is signed and
        saturates at :attr:`history_integer_bits`.
        """
        if self.decay:
            return 0, WEIGHT_SCALE << self.frac_bits
        top = 1 << (self.history_integer_bits + self.frac_bits)
        return -top, top - 1

    @property
    def target_range(self) -> tuple[int, int]:
        """The least and the largest target weight ``T = W - floor(H)``."""
        low, high = self.history_range
        return 1 - (high >> self.frac_bits), self.weight_scale - (low >> self.frac_bits)

    @cached_property
    def shifts(self) -> tuple[int, ...]:
        """``log2 D`` for every expected weight: ``shifts[w]`` for ``w`` in 1..256."""
        return (0, *(next(delay for bound, delay in self.table if w <= bound).bit_length() - 1
                     for w in range(1, WEIGHT_SCALE + 1)))

    @property
    def label(self) -> str:
        """A short description: ``seed table, 8 fraction bits, decay, ties by history``."""
        table = "seed table" if self.table == DEFAULT_TABLE else f"table {_table_text(self.table)}"
        weights = "" if self.weight_bits == WEIGHT_BITS else f", {self.weight_bits}-bit W"
        return (f"{table}, {self.frac_bits} fraction bits, "
                f"{'decay' if self.decay else 'no decay'}{weights}, ties by {self.tie_break}")

    @property
    def name(self) -> str:
        """The Verilog module name, unique per parameter set."""
        parts = [f"arbiter_t{self.tasks}_c{self.classes}_f{self.frac_bits}"]
        if self.table != DEFAULT_TABLE:
            parts.append("d" + "_".join(f"{bound}x{delay}" for bound, delay in self.table))
        parts.append("hist" if self.tie_break == "history" else "index")
        if not self.decay:
            parts.append("nodecay")
        if self.weight_bits != WEIGHT_BITS:
            parts.append(f"w{self.weight_bits}")
        return "_".join(parts)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str):
        fields = json.loads(text)
        fields["table"] = tuple(tuple(row) for row in fields["table"])
        return cls(**fields)


def _table_text(table) -> str:
    rows, low = [], 1
    for bound, delay in table:
        rows.append(f"{low}->{delay}" if low == bound else f"{low}-{bound}->{delay}")
        low = bound + 1
    return ", ".join(rows)


# -- the arbitration core, shared by the cycle-exact model and simulate_shares --------------------

@dataclass
class SlotState:
    """The registers of one task slot.

    ``weighted`` says that ``expected`` (``W``) was computed for the task now in the slot;
    ``history`` is ``H`` in units of ``2**-frac_bits``.
    """

    valid: bool = False
    job_class: int = 0
    weight: int = 0
    weighted: bool = False
    expected: int = 0
    history: int = 0

    def eligible(self, requested: bool) -> bool:
        return self.valid and self.weighted and requested


def _key(params: ArbiterParams, slot: SlotState, index: int) -> tuple:
    target = slot.expected - (slot.history >> params.frac_bits)
    history = -slot.history if params.tie_break == "history" else 0
    return target, slot.expected, history, -slot.job_class, -index


def select_winner(params: ArbiterParams, slots: Sequence[SlotState], request: int) -> int | None:
    """The slot the arbiter picks among the eligible ones, or ``None`` when none is.

    The largest ``T = W - floor(H)``; then the larger ``W``; then with ``tie_break =
    "history"`` the smaller ``H`` (all its bits); then the lower class; then the lower slot.
    Picking the best per class and then the best class by the same rules gives the same slot.
    """
    best, best_key = None, None
    for index, slot in enumerate(slots):
        if slot.eligible(bool(request >> index & 1)):
            key = _key(params, slot, index)
            if best_key is None or key > best_key:
                best, best_key = index, key
    return best


def grant_round(params: ArbiterParams, slots: Sequence[SlotState], request: int,
                winner: int) -> None:
    """Update every history weight after a round in which ``winner`` was granted.

    With decay (the seed): every valid, weighted slot of every class has
    ``H <- H - floor(H / D) + (256 / D if granted else 0)``. Without decay: every eligible
    slot has ``H <- H - W``, and the granted one gets the total ``W`` of the eligible slots
    back (saturating at :attr:`ArbiterParams.history_range`).
    """
    frac = params.frac_bits
    if params.decay:
        for index, slot in enumerate(slots):
            if slot.valid and slot.weighted:
                shift = params.shifts[slot.expected]
                credit = (WEIGHT_SCALE << frac) >> shift if index == winner else 0
                slot.history += credit - (slot.history >> shift)
        return
    eligible = [index for index, slot in enumerate(slots)
                if slot.eligible(bool(request >> index & 1))]
    total = sum(slots[index].expected for index in eligible)
    low, high = params.history_range
    for index in eligible:
        slot = slots[index]
        change = ((total if index == winner else 0) - slot.expected) << frac
        slot.history = min(max(slot.history + change, low), high)


def _class_totals(params: ArbiterParams, slots: Sequence[SlotState]) -> list[int]:
    totals = [0] * params.classes
    for slot in slots:
        if slot.valid:
            totals[slot.job_class] += slot.weight
    return totals


def _commit_weights(params: ArbiterParams, slots: Sequence[SlotState]) -> None:
    totals = _class_totals(params, slots)
    for slot in slots:
        slot.weighted = slot.valid
        slot.expected = (expected_weight(slot.weight, totals[slot.job_class],
                                         weight_bits=params.weight_bits) if slot.valid else 0)


# -- the cycle-exact model ------------------------------------------------------------------------

@dataclass(frozen=True)
class ArbiterInputs:
    """The input ports of ``hw.arbiter.DelayFactorArbiter`` during one clock.

    ``request`` bit ``i``: slot ``i`` has at least one job waiting; ``backlogged`` bit ``i``:
    it has at least two (a job counts as waiting until its grant is taken, so a job whose
    grant is taken in this clock still counts). ``write_*`` are the write stream's ``valid``
    and payload fields; ``grant_ready`` is the grant stream's ``ready``.
    """

    request: int = 0
    backlogged: int = 0
    write_valid: int = 0
    write_slot: int = 0
    write_op: int = WriteOp.CLEAR
    write_job_class: int = 0
    write_weight: int = 0
    grant_ready: int = 1


@dataclass(frozen=True)
class ArbiterOutputs:
    """The output ports of ``hw.arbiter.DelayFactorArbiter`` during one clock.

    ``write_ready`` is always 1 (a write is taken in every clock); it stays an output because
    the write port is a stream.
    """

    write_ready: int = 1
    grant_valid: int = 0
    grant_slot: int = 0
    grant_job_class: int = 0


class DelayFactorArbiterModel:
    """Cycle-exact model of ``hw.arbiter.DelayFactorArbiter``.

    ``step(inputs)`` is one clock: it returns the outputs seen during that clock (they
    depend on the registers only) and then advances the registers as the clock edge does.
    The contract -- ports, latency, and the decisions the seed leaves open -- is written out
    in the docstring of ``hw.arbiter.DelayFactorArbiter``; in short:

    * a **grant round** is a clock in which the grant register takes a new decision (it is
      empty or its grant is being taken) and some slot is eligible (weighted and requesting,
      and not the slot whose last waiting job's grant is being taken); the decision appears
      on ``grant`` in the next clock, and the history weights of that round are updated at
      the same edge;
    * a write is taken in every clock and sets up or clears its slot at once; then the one
      divider recomputes the expected weight of every valid slot, one *turn* of
      :attr:`ArbiterParams.divider_clocks` clocks per slot, newly loaded slots first, then
      the others, each group from the lowest; a turn divides the slot's weight by its
      class's total as they are in its first clock, and its ``W`` takes effect at its end.
      A write to the slot in its turn aborts the turn; any other write lets it finish and
      leaves the slot pending for another turn. In the clock after its ``W`` takes
      effect a slot sits out (it is not eligible and its ``H`` stands still): the RTL
      refreshes its registered target then.

    Parameters
    ----------
    params : ArbiterParams
        The arbiter's parameters; keywords build one when it is omitted.

    Attributes
    ----------
    slots : list of SlotState
        The registers of every slot (for tests and reports).
    """

    def __init__(self, params: ArbiterParams | None = None, **kwargs):
        if params is None:
            params = ArbiterParams(**kwargs)
        elif kwargs:
            raise TypeError("Give either an ArbiterParams or keywords, not both")
        if not isinstance(params, ArbiterParams):
            raise TypeError(f"Parameters must be an ArbiterParams, not {params!r}")
        self.params = params
        self.reset()

    def reset(self) -> None:
        """Return every register to its reset value: all slots empty, no grant, divider idle."""
        self.slots = [SlotState() for _ in range(self.params.tasks)]
        self._grant = (0, 0, 0)
        self._pending = 0                   # the slots whose W is still to be recomputed
        self._dirty = False                 # a write came during the turn under way
        self._turn: tuple[int, int] | None = None   # (slot, clock of its turn), or idle
        self._division = 0                  # the W of the turn (from its first clock)
        self._refreshing: int | None = None  # the slot whose W took effect at the last edge

    @property
    def busy(self) -> bool:
        """The divider has expected weights to recompute (or is recomputing one)."""
        return self._turn is not None or bool(self._pending)

    def outputs(self) -> ArbiterOutputs:
        """The outputs during the current clock (before its edge)."""
        valid, slot, job_class = self._grant
        return ArbiterOutputs(1, valid, slot, job_class)

    def step(self, inputs: ArbiterInputs = ArbiterInputs(), *, reset: bool = False
             ) -> ArbiterOutputs:
        """Advance one clock with ``inputs`` presented; return this clock's outputs.

        ``reset`` is the synchronous reset during this clock: the outputs of this clock are
        unaffected, and after the edge every register holds its reset value.
        """
        params = self.params
        outputs = self.outputs()
        if reset:
            self.reset()
            return outputs
        mask = (1 << params.tasks) - 1
        request = inputs.request & mask
        grant_valid, grant_slot, _ = self._grant
        written = (inputs.write_slot if inputs.write_valid and inputs.write_slot < params.tasks
                   else None)
        refreshing, self._refreshing = self._refreshing, None

        # The decision and the history update of this clock, with the weights in force. The
        # grant taken in this clock is one of its slot's waiting jobs: unless the slot says
        # it has another, it is out of this decision. (A slot sitting out is not weighted.)
        if not grant_valid or inputs.grant_ready:
            if grant_valid and not inputs.backlogged >> grant_slot & 1:
                request &= ~(1 << grant_slot)
            winner = select_winner(params, self.slots, request)
            if winner is None:
                self._grant = (0, 0, 0)
            else:
                self._grant = (1, winner, self.slots[winner].job_class)
                grant_round(params, self.slots, request, winner)

        # The divider, reading the registers before this clock's write. A write to the slot
        # in its turn aborts the turn; any other write lets it finish but leaves its slot
        # pending ("dirty": the class total it read may have changed).
        if self._turn is not None:
            slot, clock = self._turn
            if written == slot:
                self._turn = None
            elif clock == params.divider_clocks - 1:
                self._commit(slot)
            else:
                self._turn = (slot, clock + 1)
                self._dirty |= bool(inputs.write_valid)
        elif self._pending and not inputs.write_valid:
            # Newly loaded slots (no W in force yet, not merely sitting out while their
            # target is refreshed) first, then the lowest pending.
            fresh = self._pending & ~sum(1 << index for index, state in enumerate(self.slots)
                                         if state.weighted or index == refreshing)
            chosen = fresh or self._pending
            slot = (chosen & -chosen).bit_length() - 1
            state = self.slots[slot]
            total = _class_totals(params, self.slots)[state.job_class]
            self._division = expected_weight(state.weight, total,
                                             weight_bits=params.weight_bits)
            self._dirty = False
            if params.divider_clocks <= 1:
                self._commit(slot)                  # an ideal one-clock turn (a model knob)
            else:
                self._turn = (slot, 1)
        if refreshing is not None:
            self.slots[refreshing].weighted = self.slots[refreshing].valid

        if inputs.write_valid:
            self._write(inputs, written)
            # Every valid slot's W is to be recomputed, the written one first.
            self._pending = sum(1 << index for index, state in enumerate(self.slots)
                                if state.valid)
        return outputs

    def _commit(self, slot: int) -> None:
        """The end of ``slot``'s turn: its new ``W`` in force, its target refreshed next."""
        state = self.slots[slot]
        state.expected, state.weighted = self._division, False
        self._refreshing = slot
        if not self._dirty:
            self._pending &= ~(1 << slot)
        self._turn = None

    def _write(self, inputs: ArbiterInputs, written: int | None) -> None:
        if written is None:
            return
        params = self.params
        slot = self.slots[written]
        if (inputs.write_op == WriteOp.LOAD and inputs.write_weight
                and inputs.write_job_class < params.classes):
            slot.valid, slot.job_class, slot.weight = True, inputs.write_job_class, \
                inputs.write_weight
            slot.history = inputs.write_weight << params.frac_bits
        else:
            slot.valid, slot.job_class, slot.weight, slot.history = False, 0, 0, 0
        slot.weighted, slot.expected = False, 0


# -- fairness in one class ------------------------------------------------------------------------

def simulate_shares(weights: Sequence[int], picks: int, *, table=DEFAULT_TABLE,
                    frac_bits: int = 8, tie_break: str = "history", decay: bool = True,
                    weight_bits: int = WEIGHT_BITS) -> list[int]:
    """Grants per task after ``picks`` rounds with every task always requesting, in one class.

    The tasks sit in slots ``0 .. len(weights) - 1`` of one class with their expected weights
    in force and their history weights at the configured weights, as after loading them
    through the write port with requests low; then every round grants one task. The
    arithmetic is that of :class:`DelayFactorArbiterModel` (the tests hold the two together).

    Parameters
    ----------
    weights : sequence of int
        Configured weights, 1..255 each.
    picks : int
        Rounds to run (non-negative).
    table, frac_bits, tie_break, decay, weight_bits :
        As for :class:`ArbiterParams`.
    """
    weights = check_weights(weights)
    if not _is_int(picks) or picks < 0:
        raise TypeError(f"Picks must be a non-negative integer, not {picks!r}")
    params = ArbiterParams(tasks=len(weights), classes=1, frac_bits=frac_bits,
                           table=table, tie_break=tie_break, decay=decay,
                           weight_bits=weight_bits)
    slots = [SlotState(True, 0, weight, False, 0, weight << frac_bits) for weight in weights]
    _commit_weights(params, slots)
    request = (1 << len(slots)) - 1
    grants = [0] * len(slots)
    for _ in range(picks):
        winner = select_winner(params, slots, request)
        grants[winner] += 1
        grant_round(params, slots, request, winner)
    return grants

