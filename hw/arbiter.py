"""The delay-factor weight arbiter of seed 001, synthesizable.

:class:`DelayFactorArbiter` picks, once per clock, the task slot with the largest target
weight ``T = W - H`` among the slots that have a ready job, over up to ``tasks`` slots in up
to ``classes`` job classes. Its cycle-exact golden model is
:class:`model.arbiter.DelayFactorArbiterModel`, which also holds the parameter checks (so the
model and the hardware reject a bad argument with the same message) and the seed's
functions :func:`~model.arbiter.expected_weight` and :func:`~model.arbiter.delay_factor`.
:class:`ArbiterConfig` pairs a parameter set with both, for the benches and the reports.

Kept in one module although it is over 600 lines: it is one component, its class docstring
(the contract, about 125 lines) and one ``elaborate`` (about 350) that builds a clock's
decision in the seed's order; the lint-clean helpers above it serve only that method.
"""

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Shape, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib import enum as hdl_enum
from amaranth.lib.wiring import In, Out

from model.arbiter import (
    DEFAULT_TABLE,
    WEIGHT_BITS,
    WEIGHT_SCALE,
    ArbiterParams,
    DelayFactorArbiterModel,
)

__all__ = ["ArbiterConfig", "DelayFactorArbiter", "WriteOp", "grant_layout", "write_layout"]


class WriteOp(hdl_enum.Enum, shape=1):
    """What a write does to its slot (the values of :class:`model.arbiter.WriteOp`)."""

    CLEAR = 0
    LOAD = 1


def write_layout(tasks: int, classes: int) -> data.StructLayout:
    """The payload of the write stream: ``slot``, ``op``, ``job_class``, ``weight`` (8 bits).

    ``slot`` and ``job_class`` are at least one bit wide, so the layout never has an empty
    field; values beyond ``tasks`` and ``classes`` are handled as the arbiter's docstring says.
    """
    return data.StructLayout({
        "slot": range(max(tasks, 2)),
        "op": WriteOp,
        "job_class": range(max(classes, 2)),
        "weight": 8,
    })


def grant_layout(tasks: int, classes: int) -> data.StructLayout:
    """The payload of the grant stream: the granted ``slot`` and its ``job_class``."""
    return data.StructLayout({"slot": range(max(tasks, 2)), "job_class": range(max(classes, 2))})


# -- building blocks that stay clean under ``verilator --lint-only -Wall`` -------------------------
#
# Amaranth's RTLIL back end writes an arithmetic operand without its constant-zero (or repeated
# sign) top bits and a constant at its least width, so ``a - Cat(b, 0)`` reaches the Verilog as
# ``a - b`` and Verilator flags the narrower operand (WIDTHEXPAND); ``x == 0`` becomes ``!x``
# (WIDTHTRUNC). Hence: comparisons with constants are built from the bits, and an operand is
# padded with zeros (or sign bits) that a multiplexer makes, which the back end keeps and
# synthesis folds away. Named signals are only given to registers and to values used whole,
# because a named alias of part of a value is left unread in the Verilog (UNUSEDSIGNAL).

def _shared(m: Module, value, name: str) -> Signal:
    """``value`` through a wire of its own, named ``$<name>``.

    Amaranth writes an expression into every statement that reads it, so a value that
    several registers read (a comparison, a candidate H) would be written -- and elaborated
    -- once per reader, which grows with every level of the decision tree. Its own wire makes
    it one. The leading ``$`` marks the wire as an internal temporary, like the back end's
    own: where it only renames part of another value (a slice, a concatenation), the Verilog
    reads that value instead and leaves the name unread, which the waivers of
    ``hw/flow/lint.vlt`` accept for such temporaries alone.
    """
    value = Value.cast(value)
    wire = Signal(value.shape(), name=f"${name}")
    m.d.comb += wire.eq(value)
    return wire


def _extend(value, width: int) -> Value:
    """``value`` at ``width`` bits, zero- or sign-extended by its shape, kept that wide in the
    Verilog (see above)."""
    value = Value.cast(value)
    extra = width - len(value)
    if extra <= 0:
        return value
    signed_value = value.shape().signed
    high = value[-1] if signed_value else value[0]
    ones = Const((1 << extra) - 1 if signed_value else 0, extra)
    padding = Mux(high, ones, Const(0, extra))
    extended = Cat(value, padding)
    return extended.as_signed() if signed_value else extended


def _equals(value, constant: int) -> Value:
    """``value == constant`` (unsigned) as the AND of the bits of ``value``."""
    value = Value.cast(value)
    if constant >> len(value):
        return Const(0)
    return Cat(*(value[bit] if constant >> bit & 1 else ~value[bit]
                 for bit in range(len(value)))).all()


def _at_most(value, constant: int) -> Value:
    """``value <= constant`` (unsigned) as a chain of AND and OR gates over the bits."""
    value = Value.cast(value)
    if constant >= (1 << len(value)) - 1:
        return Const(1)
    result = Const(1)                   # the bits so far are equal: at most
    for bit in range(len(value)):
        result = (~value[bit] | result) if constant >> bit & 1 else (~value[bit] & result)
    return result


def _below(value, constant: int) -> Value:
    """``value < constant`` (unsigned)."""
    return _at_most(value, constant - 1) if constant > 0 else Const(0)


def _select(selects, values) -> Value:
    """The OR of the ``values`` whose one-hot ``selects`` bit is high (exactly one is, or none
    for 0): a multiplexer without a binary index, so without an incomplete case."""
    width = max(len(Value.cast(value)) for value in values)
    terms = [Mux(select, _extend(value, width), 0) for select, value in zip(selects, values,
                                                                           strict=True)]
    result = terms[0]
    for term in terms[1:]:
        result = result | term
    return result


def _key_forms(tasks: int) -> list[set[str]]:
    """The forms of its key that each slot keeps in registers for the comparators.

    A comparator takes one key as it is ("plus") and the other complemented ("minus"). With
    more than four slots, the first level compares slot ``2k`` (minus) with ``2k + 1`` (plus),
    and an odd last slot meets only multiplexed keys, as the later operand (plus); with four
    or fewer, all slots meet all against all: the first only as the earlier operand (minus),
    the last only as the later one (plus), the others as both.
    """
    if tasks > 4:
        forms = [{"minus"} if slot % 2 == 0 else {"plus"} for slot in range(tasks)]
        if tasks % 2:
            forms[-1] = {"plus"}
        return forms
    return [({"minus"} if slot < tasks - 1 else set()) | ({"plus"} if slot > 0 else set())
            or {"plus"} for slot in range(tasks)]


def _saturated(value, shape: Shape, low: int, high: int) -> Value:
    """Signed ``value`` clamped to ``low..high``, the whole range of the signed ``shape``: it
    fits when its bits above the shape's sign bit all equal the sign bit."""
    width = shape.width
    top = value[width - 1:]
    fits = top.all() | ~top.any()
    return Mux(fits, value[:width].as_signed(),
               Mux(value[-1], Const(low, shape), Const(high, shape)))


def _sum_tree(terms: Sequence) -> Value:
    """The sum of the unsigned ``terms`` as a balanced tree of adders, each pair of operands
    extended to the same width."""
    terms = [Value.cast(term) for term in terms]
    while len(terms) > 1:
        paired = []
        for index in range(0, len(terms) - 1, 2):
            width = max(len(terms[index]), len(terms[index + 1]))
            paired.append(_extend(terms[index], width) + _extend(terms[index + 1], width))
        if len(terms) % 2:
            paired.append(terms[-1])
        terms = paired
    return terms[0]


def _minus_target(history, expected, frac: int, shape: Shape) -> Value:
    """``floor(H) - W`` at the width of ``shape`` (the operands extended to one width, the
    result cut to the shape; it fits by construction)."""
    floor = Value.cast(history).shift_right(frac)
    if floor.shape().signed:
        # Both operands signed and equally wide (W, non-negative, gets a zero sign bit).
        width = max(len(floor), len(expected) + 1)
        difference = _extend(floor, width) - _extend(expected, width).as_signed()
    else:
        width = max(len(floor), len(expected))
        difference = _extend(floor, width) - _extend(expected, width)
    return difference[:shape.width].as_signed()


class DelayFactorArbiter(wiring.Component):
    """The delay-factor weight arbiter of seed 001: one grant per clock, by largest ``T = W - H``.

    Each of ``tasks`` slots holds a task: its job class, its configured weight ``cfg``
    (1..255), its expected weight ``W`` and its history weight ``H``. Every clock the arbiter
    grants the *eligible* slot (valid, ``W`` computed, a job waiting that is not already
    granted) with the largest target weight ``T = W - floor(H)``; ties go to the larger
    ``W``, then with ``tie_break = "history"`` to the smaller ``H`` (all its bits), then to
    the lower class, then to the lower slot (``tie_break = "index"`` skips ``H``). This is
    the seed's two-stage choice -- the best job per class, then the best class -- with a
    fixed class order for the last tie: class 0 (block) before 1 (cluster) before 2 (union).

    *Expected weight*: ``W = clamp(floor(256 * cfg / total), 1, 256)``, ``total`` being the
    sum of ``cfg`` over the valid slots of the same class (``2**weight_bits`` in place of
    256 when ``weight_bits`` is not 8). *Delay factor*: ``D`` from ``W``
    through ``table`` (by default the seed's 1 -> 256, 2 -> 128, 3-4 -> 64, 5-8 -> 32,
    9-256 -> 16). *History*: ``H`` in fixed point with ``frac_bits`` fraction bits; a newly
    loaded task starts at ``H = cfg``. In every grant round, with ``decay=True`` (the seed),
    every valid, weighted slot of *every* class takes ``H <- H - floor(H / D)``, and the
    granted one also ``+ 256 / D``: the seed updates every task that had no job chosen in the
    round, and the classes compete for the same grant, so their ``T`` stay comparable. With
    ``decay=False`` (this project's variant) ``H`` does not decay: every *eligible* slot
    takes ``H <- H - W`` and the granted one gets back the sum of ``W`` over the eligible
    slots, so ``T`` is a deficit counter that the round conserves and the delay table has no
    part: smooth weighted round-robin (nginx's) over the expected weights, started at
    ``-cfg``. ``H`` saturates at :attr:`model.arbiter.ArbiterParams.history_range`, far
    beyond what it reaches.

    **One grant per job.** ``request`` and ``backlogged`` together count the jobs each slot
    has waiting, saturated at two: bit ``i`` of ``request`` says slot ``i`` has one or more,
    bit ``i`` of ``backlogged`` that it has two or more (it is ignored while ``request`` is
    low). A job waits until its grant is *taken* (``grant.valid`` and ``grant.ready`` in the
    same clock), so in the clock a grant is taken its job still counts. The arbiter accounts
    for that itself: in that clock the granted slot takes part in the decision only if its
    ``backlogged`` bit is high. A requester therefore drives both bits from registers (its
    job count, decremented at the edge that takes its grant) and needs no path from
    ``grant`` to ``request``: a slot with one job gets exactly one grant, and a slot with
    many jobs can still be granted in every clock. Tying ``backlogged`` high gives the
    plain level-request contract in which the requester must drop ``request`` in the very
    clock its last grant is taken; tying it low grants a slot at most every other clock.

    Decisions the seed leaves open, taken here:

    * A **grant round** is a clock in which the grant register takes a new decision (it is
      empty, or ``grant.ready`` is high) and some slot is eligible. No round, no ``H`` update:
      with every request low, or the grant held by back-pressure, ``H`` stands still.
    * A valid task with no request is not chosen, so with decay its ``H`` decays in every
      round: it returns with ``T`` near its ``W``, and catches up for a bounded time.
      Without decay it is frozen until it requests again.
    * A write with ``op = LOAD`` and ``weight = 0``, or with ``job_class >= classes``, is a
      clear (a task with no weight is absent). A write to ``slot >= tasks`` changes nothing.
      Loading a valid slot replaces its task (``H = cfg`` again).
    * The expected weights come from **one** restoring divider that walks the slots in the
      background. A write makes every valid slot *pending*; the divider gives each a
      *turn*, newly loaded slots (no ``W`` in force yet) first, then the others, each
      group from the lowest: a turn takes
      the slot's ``cfg`` and its class's total (kept up to date by every write) in its first
      clock, then makes two quotient bits per clock, ``1 + (weight_bits + 2) // 2`` clocks
      in all (6 for the seed's 8-bit ``W``), and the slot's new ``W`` takes effect at its
      end; until then arbitration goes on with its old ``W`` and ``D``. A write to the slot
      in its turn aborts the turn; a write to any other slot lets it finish (its ``W`` may
      then be one write stale, and the slot stays pending for another turn), so writes to
      other slots no longer starve a new slot: it waits for the turn under way and for the
      newly loaded slots of lower index, if any.
      A turn starts only in a clock without a write: under writes in every clock no ``W``
      changes. In the clock after its ``W``
      takes effect a slot *sits out*: it is not eligible and its ``H`` stands still, while
      its registered target ``T`` is refreshed from the new ``W``. A cleared slot is out at
      once; a newly loaded slot waits (ineligible, ``H`` held at ``cfg``) for its turn.
    * ``T`` is ``W`` minus the integer part of ``H`` (signed, the width of
      :attr:`~model.arbiter.ArbiterParams.target_range`); with decay ``H`` stays in
      0..256 and ``T`` in -255..256.
    * ``256 / D`` is taken literally for every table (the seed's "largest delay factor" is
      256 for its own table), so that ``H`` stays on the scale of ``W``.

    Parameters
    ----------
    tasks : int
        Task slots, 1..64.
    classes : int
        Job classes, 1..16.
    frac_bits : int
        Fraction bits of ``H``, 0..16.
    table : sequence of (int, int)
        ``(largest W, D)`` rows with rising bounds ending at 256 and power-of-two ``D`` of at
        most ``2**(8 + frac_bits)``.
    tie_break : str
        ``"history"`` or ``"index"``.
    decay : bool
        The seed's decaying history (``True``) or the deficit variant (``False``).
    weight_bits : int
        Resolution of ``W``, ``2**weight_bits`` for a task alone in its class: the seed's 8,
        or up to 16 with ``decay=False`` (the divider then takes ``1 + (weight_bits + 2) //
        2`` clocks per slot).

    Attributes
    ----------
    write : In(stream.Signature(write_layout(tasks, classes)))
        Loads (``op = LOAD``: ``slot``, ``job_class``, ``weight``) or clears a slot. ``ready``
        is always high: a write is taken in every clock in which ``valid`` is high.
    request : In(tasks)
        Bit ``i``: slot ``i`` has at least one job waiting.
    backlogged : In(tasks)
        Bit ``i``: slot ``i`` has at least two jobs waiting.
    grant : Out(stream.Signature(grant_layout(tasks, classes)))
        The decision of the previous clock: ``valid``, ``payload.slot`` and
        ``payload.job_class`` (both 0 when ``valid`` is 0). A grant is held, payload and
        all, until ``ready``; while it is held no new decision is made.

    Latency: the requests of clock ``t`` decide the grant seen in clock ``t + 1``, and the
    ``H`` of that round are updated at the same edge, so with ``grant.ready`` high and jobs
    waiting there is one decision per clock. A write taken in clock ``t`` changes its slot
    from clock ``t + 1``; with the divider idle and no other write after it, a newly loaded
    slot's turn takes clocks ``t + 1`` to ``t + C`` (``C = 1 + (weight_bits + 2) // 2``),
    its ``W`` is in force from ``t + C + 1``, when it sits out, and it can be granted from
    the decision of ``t + C + 2`` (seen in ``t + 9`` for the seed's ``W``); the other valid
    slots follow, one every ``C`` clocks. A turn under way delays that by at most ``C``
    clocks, and each newly loaded slot of lower index waiting with it by ``C`` more. After
    reset every slot is empty, nothing is pending and ``grant.valid`` is 0.

    Cost (8 slots, 3 classes, the seed's settings, the arbiter's rows of ``make
    fpga-report``): 1787 iCE40 LUT4, 661 carries and 609 flip-flops of its own, 61.8 MHz on
    an ECP5-25k (speed 6); the README keeps the figures with the command that made them.
    """

    def __init__(self, tasks=8, classes=3, *, frac_bits=8, table=DEFAULT_TABLE,
                 tie_break="history", decay=True, weight_bits=WEIGHT_BITS):
        self._params = ArbiterParams(tasks, classes, frac_bits, table, tie_break, decay,
                                     weight_bits)
        super().__init__({
            "write": In(stream.Signature(write_layout(tasks, classes))),
            "request": In(tasks),
            "backlogged": In(tasks),
            "grant": Out(stream.Signature(grant_layout(tasks, classes))),
        })

    @classmethod
    def from_params(cls, params: ArbiterParams) -> "DelayFactorArbiter":
        """The arbiter of a validated parameter set."""
        return cls(params.tasks, params.classes, frac_bits=params.frac_bits,
                   table=params.table, tie_break=params.tie_break, decay=params.decay,
                   weight_bits=params.weight_bits)

    @property
    def params(self) -> ArbiterParams:
        return self._params

    @property
    def tasks(self) -> int:
        return self._params.tasks

    @property
    def classes(self) -> int:
        return self._params.classes

    @property
    def frac_bits(self) -> int:
        return self._params.frac_bits

    @property
    def table(self) -> tuple[tuple[int, int], ...]:
        return self._params.table

    @property
    def tie_break(self) -> str:
        return self._params.tie_break

    @property
    def decay(self) -> bool:
        return self._params.decay

    @property
    def weight_bits(self) -> int:
        return self._params.weight_bits

    def elaborate(self, platform):
        # Three parts. (1) The write port and one background divider: class totals kept by
        # every write, two restoring-divider steps (two subtractors the width of a class
        # total) shared by all slots in turn, and the delay-table row of each new W found
        # once, in the clock after its slot's turn. (2) The decision: a pairwise tree of
        # comparators halves the slots down to four, which are then compared all against all,
        # over a key that packs, from the top, "eligible", T, W, the inverted fraction of H
        # and the inverted class, so that a plain unsigned comparison applies the seed's tie
        # rules (equal T and W mean equal integer parts of H, so only its fraction can still
        # differ); an equal key keeps the lower slot. Choosing per class and then across
        # classes gives the same slot as this single choice. Each comparator is the carry of
        # a + ~b, and each slot keeps its key in registers in the polarity its comparator
        # takes, so nothing stands between the registers and the carry chains. (3) The H
        # update: both candidates, "granted" and "not granted", and the T of each, are
        # computed from the registers beside the decision, so after it only a 2:1 multiplexer
        # per bit remains. Critical path: the eligibility of a slot -> a comparator -> a key
        # multiplexer -> a comparator -> the AND of the winner's comparisons -> the
        # multiplexers -> H and T (about 15.7 ns on an ECP5-25k, speed 6).
        m = Module()
        params = self._params
        tasks, classes, frac = params.tasks, params.classes, params.frac_bits
        class_bits = len(self.write.payload.job_class)
        history_low, history_high = params.history_range
        history_shape = Shape.cast(range(history_low, history_high + 1))
        target_low, target_high = params.target_range
        minus_target_shape = Shape.cast(range(-target_high, -target_low + 1))
        expected_shape = Shape.cast(range(params.weight_scale + 1))
        total_bits = params.total_bits
        # The delay-table row of a W, one-hot: the decrement H >> log2(D) is then an AND-OR of
        # the rows' shifts, and the credit 256 / D the row bits themselves.
        rows = len(params.table)

        # -- slot registers
        valid = [Signal(name=f"valid_{i}") for i in range(tasks)]
        job_class = [Signal(class_bits, name=f"job_class_{i}") for i in range(tasks)]
        weight = [Signal(8, name=f"weight_{i}") for i in range(tasks)]
        weighted = [Signal(name=f"weighted_{i}") for i in range(tasks)]
        expected = [Signal(expected_shape, name=f"expected_{i}") for i in range(tasks)]
        history = [Signal(history_shape, name=f"history_{i}") for i in range(tasks)]
        row = [Signal(rows, name=f"row_{i}") for i in range(tasks)] if params.decay else []
        # The comparators read each slot's key straight from registers, in the polarity their
        # carry chain wants (see ``_key_forms``): "plus", the key itself, or "minus", its
        # complement. T is one of these registers, updated with H from candidates computed
        # beside the decision, so that no subtractor precedes the comparators.
        forms = _key_forms(tasks)
        target_width = minus_target_shape.width
        history_tie = params.tie_break == "history" and frac > 0
        target_key = {}             # plus: T - 1 in offset binary (~(-T), the top bit flipped)
        minus_target_key = {}       # minus: -T in offset binary
        fraction_complement = {}    # plus: ~(the fraction of H)
        class_complement = {}       # plus: ~(the class)
        not_expected = {}           # minus: ~W
        for i in range(tasks):
            if "plus" in forms[i]:
                target_key[i] = Signal(target_width, name=f"target_key_{i}",
                                       init=(1 << (target_width - 1)) - 1)
                class_complement[i] = Signal(class_bits, name=f"class_complement_{i}",
                                             init=(1 << class_bits) - 1)
                if history_tie:
                    fraction_complement[i] = Signal(frac, name=f"fraction_complement_{i}",
                                                    init=(1 << frac) - 1)
            if "minus" in forms[i]:
                minus_target_key[i] = Signal(target_width, name=f"minus_target_key_{i}",
                                             init=1 << (target_width - 1))
                not_expected[i] = Signal(expected_shape, name=f"not_expected_{i}",
                                         init=(1 << expected_shape.width) - 1)

        # -- the write port and the class totals
        payload = self.write.payload
        m.d.comb += self.write.ready.eq(1)
        write_to = [Signal(name=f"write_to_{i}") for i in range(tasks)]
        m.d.comb += [write_to[i].eq(self.write.valid & _equals(payload.slot, i))
                     for i in range(tasks)]
        load = Signal()
        m.d.comb += load.eq((payload.op == WriteOp.LOAD) & payload.weight.any()
                            & _below(payload.job_class, classes))
        # What the written slot held leaves its class's total (an empty slot holds weight 0).
        old_class = _shared(m, _select(write_to, job_class), "old_class")
        old_weight = _shared(m, _select(write_to, weight), "old_weight")
        class_total = [Signal(total_bits, name=f"class_total_{c}") for c in range(classes)]
        for c in range(classes):
            added = _extend(_shared(m, Mux(load & _equals(payload.job_class, c), payload.weight,
                                           0), f"added_{c}"), total_bits)
            removed = _extend(_shared(m, Mux(_equals(old_class, c), old_weight, 0),
                                      f"removed_{c}"), total_bits)
            with m.If(Cat(*write_to).any()):
                m.d.sync += class_total[c].eq((class_total[c] + added)[:total_bits] - removed)

        # -- the divider: one slot's turn after the other. A write makes every valid slot
        # pending; newly loaded slots (no W in force) take their turns first, then the others,
        # from the lowest. A write to the slot in its turn aborts the turn; any other write
        # lets it finish but leaves its slot pending ("dirty": the class total it read may
        # have changed since), so writes to other slots cannot starve a new slot. A turn
        # takes its slot's weight and its class's total into the divider's registers in its
        # first clock, then makes two quotient bits per clock (two restoring steps in a row),
        # and its W takes effect at its end.
        steps = params.divider_clocks - 1           # clocks of two quotient bits each
        quotient_bits = 2 * steps                   # weight_bits + 1, or one more (dropped)
        running = Signal()
        pending = Signal(tasks)
        dirty = Signal()                            # a write came during the turn under way
        turn = Signal(tasks)                        # one-hot: whose turn it is
        step = Signal(steps, init=1)                # one-hot: which clock of the turn
        divisor = Signal(total_bits + 1)            # as wide as a doubled remainder
        remainder = Signal(total_bits)
        quotient = Signal(quotient_bits)
        refreshing = Signal(tasks)                  # the slot sitting out after its turn
        fresh = _shared(m, pending & ~Cat(*weighted) & ~refreshing, "fresh")
        candidates = _shared(m, Mux(fresh.any(), fresh, pending), "candidates")
        pick = _shared(m, Cat(candidates[index] & ~candidates[:index].any() if index
                              else candidates[0] for index in range(tasks)), "pick")
        starting = ~running & pending.any() & ~self.write.valid
        hit = _shared(m, (Cat(*write_to) & turn).any(), "hit")
        pick_class = _shared(m, _select(pick, job_class), "pick_class")
        pick_total = _select([_equals(pick_class, c) for c in range(classes)], class_total)
        # The first step of a turn divides cfg itself (256 * cfg / total < 512 needs 9
        # quotient bits, and the dividend's top seven bits give none since cfg <= total);
        # every other step 2 * remainder. The remainder stays below the divisor, so bit 11
        # of a difference is its sign.
        shifted_a = _shared(m, Mux(step[0], remainder, Cat(Const(0, 1), remainder)),
                            "shifted_a")
        difference_a = _shared(m, shifted_a - divisor, "difference_a")
        fits_a = ~difference_a[total_bits]
        shifted_b = _shared(m, Cat(Const(0, 1), Mux(fits_a, difference_a[:total_bits],
                                                    shifted_a[:total_bits])), "shifted_b")
        difference_b = _shared(m, shifted_b - divisor, "difference_b")
        fits_b = ~difference_b[total_bits]
        next_quotient = _shared(m, Cat(fits_b, fits_a, quotient[:-2]), "next_quotient")
        commit = _shared(m, running & step[-1] & ~hit, "commit")
        quotient_w = next_quotient[quotient_bits - expected_shape.width:]
        result = Signal(expected_shape)
        m.d.comb += result.eq(Mux(quotient_w.any(), quotient_w, 1))
        with m.If(self.write.valid):
            m.d.sync += pending.eq(Cat(Mux(write_to[i], load, valid[i]) for i in range(tasks)))
        with m.If(starting):
            m.d.sync += [running.eq(1), turn.eq(pick), step.eq(1), divisor.eq(pick_total),
                         remainder.eq(_select(pick, weight)), dirty.eq(0)]
        with m.Elif(hit):
            m.d.sync += running.eq(0)
        with m.Elif(running):
            m.d.sync += [
                step.eq(Cat(step[-1], step[:-1])),
                remainder.eq(Mux(fits_b, difference_b[:total_bits], shifted_b[:total_bits])),
                quotient.eq(next_quotient),
            ]
            with m.If(step[-1]):
                m.d.sync += running.eq(0)
                with m.If(~self.write.valid & ~dirty):
                    m.d.sync += pending.eq(pending & ~turn)
            with m.Elif(self.write.valid):
                m.d.sync += dirty.eq(1)

        # The W of a turn takes effect at its end. In the next clock the slot sits out ("not
        # weighted": not eligible, its H unchanged) while its registered T is refreshed from
        # the new W; its row is empty then, so that "H if not granted" is H itself, and the
        # new row, found from the W kept in ``last_result``, goes into force at its end.
        last_result = Signal(expected_shape)
        m.d.sync += refreshing.eq(Mux(commit, turn, 0))
        with m.If(commit):
            m.d.sync += last_result.eq(result)
        if params.decay:
            at_most = [_at_most(last_result, bound) for bound, _ in params.table[:-1]]
            at_most.append(Const(1))
            new_row = _shared(m, Cat(at_most[index] & ~at_most[index - 1] if index
                                     else at_most[0] for index in range(rows)), "new_row")
        for i in range(tasks):
            with m.If(commit & turn[i]):
                m.d.sync += [expected[i].eq(result), weighted[i].eq(0)]
                if i in not_expected:
                    m.d.sync += not_expected[i].eq(~result)
                if params.decay:
                    m.d.sync += row[i].eq(0)
            with m.If(refreshing[i]):
                m.d.sync += weighted[i].eq(valid[i])
                if params.decay:
                    m.d.sync += row[i].eq(new_row)

        # -- the decision
        # The slot whose grant is taken in this clock is out of the decision unless it has
        # another job waiting. (A weighted slot is valid: a clear takes both away.)
        # (``last_granted`` is set only beside ``grant.valid``, so ``grant.ready`` alone says
        # that its grant is taken.)
        last_granted = Signal(tasks)
        eligible = Signal(tasks)
        m.d.comb += eligible.eq(Cat(weighted) & self.request
                                & ~(Mux(self.grant.ready, last_granted, 0) & ~self.backlogged))
        # A candidate: its key in the forms it has ({"plus": key, "minus": ~key}), its slot
        # number and the slots it stands for.
        keys = []
        for i in range(tasks):
            key = {}
            if "plus" in forms[i]:
                key["plus"] = Cat(class_complement[i],
                                  fraction_complement[i] if history_tie else Cat(),
                                  expected[i], target_key[i], eligible[i])
            if "minus" in forms[i]:
                key["minus"] = Cat(job_class[i],
                                   history[i].as_unsigned()[:frac] if history_tie else Cat(),
                                   not_expected[i], minus_target_key[i], ~eligible[i])
            keys.append((key, Const(i, len(self.grant.payload.slot)), [i]))

        def form(key, polarity):
            # A multiplexer complements for free, so a merged key has either form.
            other = "minus" if polarity == "plus" else "plus"
            return key[polarity] if polarity in key else ~key[other]

        def greater(plus_key, minus_key):
            # "a > b" is the carry out of a + ~b: a carry chain whose operands come straight
            # from registers or multiplexers, with nothing to complement on either family.
            width = len(plus_key)
            return (plus_key + minus_key)[width]

        # ``path[i]``: the comparisons slot i must win (or keep) to be the winner. A pairwise
        # tree halves the candidates down to four, which are then compared all against all
        # (six comparators side by side; the winner beats the other three): two levels of
        # comparators and key multiplexers fewer than a full tree, for three comparators more.
        path = [[] for _ in range(tasks)]
        while len(keys) > 4:
            merged = []
            for index in range(0, len(keys) - 1, 2):
                (left_key, left_slot, left), (right_key, right_slot, right) = \
                    keys[index], keys[index + 1]
                right_wins = _shared(m, greater(form(right_key, "plus"), form(left_key, "minus")),
                                     f"right_wins_{len(keys)}_{index // 2}")
                for i in left:
                    path[i].append(~right_wins)
                for i in right:
                    path[i].append(right_wins)
                merged.append(({polarity: _shared(m, Mux(right_wins, form(right_key, polarity),
                                                         form(left_key, polarity)),
                                                     f"key_{polarity}_{len(keys)}_{index // 2}")
                                for polarity in ("plus", "minus")},
                               Mux(right_wins, right_slot, left_slot), left + right))
            if len(keys) % 2:
                merged.append(keys[-1])
            keys = merged
        # All against all: an earlier candidate holds lower slots, so it wins a tie.
        later_wins = {(j, k): _shared(m, greater(form(keys[k][0], "plus"),
                                                 form(keys[j][0], "minus")), f"later_wins_{j}_{k}")
                      for j in range(len(keys)) for k in range(j + 1, len(keys))}
        wins = [_shared(m, Cat(Const(1), *(~later_wins[j, k] for k in range(j + 1, len(keys))),
                               *(later_wins[k, j] for k in range(j))).all(), f"wins_{j}")
                for j in range(len(keys))]
        for (_, _, members), won in zip(keys, wins, strict=True):
            for i in members:
                path[i].append(won)
        best_slot = _select(wins, [slot for _, slot, _ in keys])
        best_class = _select(wins, [form(key, "minus")[:class_bits] for key, _, _ in keys])
        any_eligible = _shared(m, eligible.any(), "any_eligible")

        advance = ~self.grant.valid | self.grant.ready
        grant_round = _shared(m, advance & any_eligible, "grant_round")
        # ``granted[i]``: slot i wins the decision. It matters only in a grant round, which the
        # registers' enables see to, so it is left out here: one input fewer on the critical
        # path.
        granted = [_shared(m, Cat(*path[i]).all(), f"granted_{i}") for i in range(tasks)]
        with m.If(advance):
            m.d.sync += [
                self.grant.valid.eq(any_eligible),
                self.grant.payload.slot.eq(Mux(any_eligible, best_slot, 0)),
                self.grant.payload.job_class.eq(Mux(any_eligible, best_class, 0)),
                last_granted.eq(Mux(any_eligible, Cat(*granted), 0)),
            ]

        # -- the history update of a grant round: both candidates, and their -T, before the
        # decision; ``updates`` holds (enable, H if not granted, H if granted) per slot.
        updates = []
        if params.decay:
            width = history_shape.width
            for i in range(tasks):
                decrement_terms = [[] for _ in range(width)]
                credit_terms = [[] for _ in range(width)]
                for index, (_, delay) in enumerate(params.table):
                    shift = delay.bit_length() - 1
                    for bit in range(width - shift):
                        decrement_terms[bit].append(row[i][index] & history[i][bit + shift])
                    credit_terms[((WEIGHT_SCALE << frac) >> shift).bit_length() - 1].append(
                        row[i][index])
                decrement = _extend(_shared(m, Cat(Cat(*terms).any() for terms in decrement_terms
                                                   if terms), f"decrement_{i}"), width)
                top = max(bit for bit, terms in enumerate(credit_terms) if terms)
                credit = _extend(_shared(m, Cat(Cat(*terms).any() if terms else Const(0)
                                                for terms in credit_terms[:top + 1]),
                                         f"credit_{i}"), width)
                kept = _shared(m, (history[i] - decrement)[:width], f"history_kept_{i}")
                won = _shared(m, (kept + credit)[:width], f"history_won_{i}")
                updates.append((grant_round & weighted[i], kept, won))
        else:
            round_total = _shared(m, _sum_tree([Mux(eligible[i], expected[i], 0)
                                                for i in range(tasks)]), "round_total")
            # Wide enough for H - W and for that plus the round's total, with a bit to tell
            # an overflow of the history register.
            wide = max(history_shape.width, len(round_total) + frac + 1,
                       expected_shape.width + frac + 1) + 2
            for i in range(tasks):
                charge = _shared(m, Mux(refreshing[i], 0, expected[i] << frac), f"charge_{i}")
                charged = _shared(m, (_extend(history[i], wide)
                                      - _extend(charge, wide).as_signed())[:wide].as_signed(),
                                  f"history_charged_{i}")
                paid = _shared(m, (charged + _extend(round_total << frac, wide).as_signed())
                               [:wide].as_signed(), f"history_paid_{i}")
                kept = _shared(m, _saturated(charged, history_shape, history_low, history_high),
                               f"history_kept_{i}")
                won = _shared(m, _saturated(paid, history_shape, history_low,
                                            history_high), f"history_won_{i}")
                updates.append((grant_round & eligible[i], kept, won))
        top_bit = 1 << (target_width - 1)
        for i, (update, kept, won) in enumerate(updates):
            # -T of each candidate in offset binary; the plus form is its complement.
            minus_kept = _shared(m, _minus_target(kept, expected[i], frac, minus_target_shape)
                                 .as_unsigned(), f"minus_target_kept_{i}")
            minus_won = _shared(m, _minus_target(won, expected[i], frac, minus_target_shape)
                                .as_unsigned(), f"minus_target_won_{i}")
            minus_next = _shared(m, Mux(granted[i], minus_won, minus_kept) ^ top_bit,
                                 f"minus_target_next_{i}")
            with m.If(update):
                m.d.sync += history[i].eq(Mux(granted[i], won, kept))
                if i in target_key:
                    m.d.sync += target_key[i].eq(~minus_next)
                if i in minus_target_key:
                    m.d.sync += minus_target_key[i].eq(minus_next)
                if i in fraction_complement:
                    m.d.sync += fraction_complement[i].eq(
                        ~Mux(granted[i], won, kept).as_unsigned()[:frac])
            with m.If(refreshing[i]):
                if i in target_key:
                    m.d.sync += target_key[i].eq(~(minus_kept ^ top_bit))
                if i in minus_target_key:
                    m.d.sync += minus_target_key[i].eq(minus_kept ^ top_bit)

        # -- the writes (last: a write wins over the history update and the divider's results)
        for i in range(tasks):
            with m.If(write_to[i]):
                m.d.sync += [
                    valid[i].eq(load),
                    job_class[i].eq(Mux(load, payload.job_class, 0)),
                    weight[i].eq(Mux(load, payload.weight, 0)),
                    weighted[i].eq(0),
                    history[i].eq(Mux(load, payload.weight << frac, 0)),
                ]
                if i in class_complement:
                    m.d.sync += class_complement[i].eq(Mux(load, ~payload.job_class,
                                                           (1 << class_bits) - 1))
                if i in fraction_complement:
                    m.d.sync += fraction_complement[i].eq((1 << frac) - 1)
        # The registers, for the proofs' harnesses (hw/flow/formal_props.py), which read them.
        self.registers = {
            "valid": valid, "job_class": job_class, "weight": weight, "weighted": weighted,
            "expected": expected, "history": history, "class_total": class_total,
            "target_key": target_key, "minus_target_key": minus_target_key,
            "not_expected": not_expected, "class_complement": class_complement,
            "running": running, "pending": pending, "turn": turn, "step": step,
            "dirty": dirty, "refreshing": refreshing, "divisor": divisor,
            "remainder": remainder, "quotient": quotient, "last_granted": last_granted,
        }
        return m


class ArbiterConfig(ArbiterParams):
    """One arbiter parameter set for the benches and reports: the component and the model.

    ``name`` is the Verilog module name; ``to_json``/``from_json`` carry it to a cocotb
    bench (in ``MAXBLOCK_CONFIG``, the variable ``hw.flow.runner.run_bench`` sets).
    """

    def component(self) -> DelayFactorArbiter:
        """A new Amaranth component for these parameters."""
        return DelayFactorArbiter.from_params(self)

    def model(self) -> DelayFactorArbiterModel:
        """A fresh cycle-exact model of :meth:`component`."""
        return DelayFactorArbiterModel(self)
