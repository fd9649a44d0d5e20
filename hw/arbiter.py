"""The delay-factor weight arbiter of seed 001, synthesizable.

:class:`DelayFactorArbiter` picks, once per clock, the task slot with the largest target
weight ``T = W - H`` among the slots that have a ready job, over up to ``tasks`` slots in up
to ``classes`` job classes. Its cycle-exact golden model is
:class:`model.arbiter.DelayFactorArbiterModel`, which also holds the parameter checks (so the
model and the hardware reject a bad argument with the same message) and the seed's
functions :func:`~model.arbiter.expected_weight` and :func:`~model.arbiter.delay_factor`.
:class:`ArbiterConfig` pairs a parameter set with both, for the benches and the reports.
"""

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Shape, Signal, signed
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


def _sum_tree(m: Module, terms: Sequence, name: str) -> Signal:
    """The sum of ``terms`` as a balanced tree of adders, each level a named signal."""
    level = 0
    terms = list(terms)
    while len(terms) > 1:
        paired = []
        for index in range(0, len(terms) - 1, 2):
            total = Signal(max(len(terms[index]), len(terms[index + 1])) + 1,
                           name=f"{name}_l{level}_{index // 2}")
            m.d.comb += total.eq(terms[index] + terms[index + 1])
            paired.append(total)
        if len(terms) % 2:
            paired.append(terms[-1])
        terms, level = paired, level + 1
    return terms[0]


class DelayFactorArbiter(wiring.Component):
    """The delay-factor weight arbiter of seed 001: one grant per clock, by largest ``T = W - H``.

    Each of ``tasks`` slots holds a task: its job class, its configured weight ``cfg``
    (1..255), its expected weight ``W`` and its history weight ``H``. Every clock the arbiter
    grants the *eligible* slot (valid, ``W`` computed, request high) with the largest target
    weight ``T = W - floor(H)``; ties go to the larger ``W``, then with ``tie_break =
    "history"`` to the smaller ``H`` (all its bits), then to the lower class, then to the
    lower slot (``tie_break = "index"`` skips ``H``). This is the seed's two-stage choice
    -- the best job per class, then the best class -- with a fixed class order for the last
    tie: class 0 (block) before 1 (cluster) before 2 (union).

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
    * The expected weights are recomputed, for all slots at once, after every accepted write,
      by a restoring divider per slot that makes one quotient bit per clock:
      ``write.ready`` is low for ``weight_bits + 1`` clocks (9 for the seed), and the
      new ``W`` of every slot take effect together in the clock after the divider's last.
      Meanwhile arbitration goes on with the old ``W`` and ``D``, a cleared slot is out at
      once, and a newly loaded slot waits (ineligible, ``H`` held at ``cfg``).
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
        or up to 16 with ``decay=False`` (the divider then takes ``weight_bits + 1`` clocks).

    Attributes
    ----------
    write : In(stream.Signature(write_layout(tasks, classes)))
        Loads (``op = LOAD``: ``slot``, ``job_class``, ``weight``) or clears a slot. Accepted
        when ``valid`` and ``ready`` are both high; ``ready`` is low while the divider runs.
    request : In(tasks)
        Bit ``i``: slot ``i`` has a job ready.
    grant : Out(stream.Signature(grant_layout(tasks, classes)))
        The decision of the previous clock: ``valid``, ``payload.slot`` and
        ``payload.job_class`` (both 0 when ``valid`` is 0). A grant is held until
        ``ready``; while it is held no new decision is made.

    Latency: the requests of clock ``t`` decide the grant seen in clock ``t + 1``, and the
    ``H`` of that round are updated at the same edge, so with ``grant.ready`` high and
    requests steady there is one decision per clock. A write accepted in clock ``t`` changes
    its slot from clock ``t + 1`` and the expected weights from clock ``t + 10`` (``t +
    weight_bits + 2``). After reset every slot is empty, ``grant.valid`` is 0 and
    ``write.ready`` is 1.

    Cost (``synth_ice40``, 8 slots, 3 classes): about 2600 LUTs and 470 flip-flops with the
    seed's settings, 2950 LUTs and 550 flip-flops without decay and with a 12-bit ``W``
    (``python -m model.fairness`` measures every variant).
    """

    def __init__(self, tasks=8, classes=3, *, frac_bits=8, table=DEFAULT_TABLE,
                 tie_break="history", decay=True, weight_bits=WEIGHT_BITS):
        self._params = ArbiterParams(tasks, classes, frac_bits, table, tie_break, decay,
                                     weight_bits)
        super().__init__({
            "write": In(stream.Signature(write_layout(tasks, classes))),
            "request": In(tasks),
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
        # Per slot: a few registers, a restoring-divider step (one subtractor the width of a
        # class total), the table's comparators on W and the H update (one shift-and-add).
        # The argmax is one balanced tree of tasks - 1 comparators over a key that packs, from
        # the top, "eligible", T, W, the inverted H and the inverted class, so that a plain
        # unsigned comparison applies the seed's tie rules; an equal key keeps the left (lower)
        # slot. Choosing per class and then across classes gives the same slot as this single
        # tree, at a third of the comparators for three classes. Depth: log2(tasks)
        # comparators, then the winner decode and the H adder.
        m = Module()
        params = self._params
        tasks, classes, frac = params.tasks, params.classes, params.frac_bits
        class_bits = len(self.write.payload.job_class)
        history_low, history_high = params.history_range
        history_shape = Shape.cast(range(history_low, history_high + 1))
        target_shape = Shape.cast(range(params.target_range[0], params.target_range[1] + 1))

        # -- slot registers
        valid = [Signal(name=f"valid_{i}") for i in range(tasks)]
        job_class = [Signal(class_bits, name=f"job_class_{i}") for i in range(tasks)]
        weight = [Signal(8, name=f"weight_{i}") for i in range(tasks)]
        weighted = [Signal(name=f"weighted_{i}") for i in range(tasks)]
        expected = [Signal(range(params.weight_scale + 1), name=f"expected_{i}")
                    for i in range(tasks)]
        history = [Signal(history_shape, name=f"history_{i}") for i in range(tasks)]

        # -- the expected-weight divider: one quotient bit per slot and clock
        busy = Signal()
        divider_clocks = params.divider_clocks
        divider_step = Signal(range(divider_clocks))
        remainder = [Signal(params.total_bits, name=f"remainder_{i}") for i in range(tasks)]
        quotient = [Signal(divider_clocks, name=f"quotient_{i}") for i in range(tasks)]
        class_total = [
            _sum_tree(m, [Mux(valid[i] & (job_class[i] == c), weight[i], 0)
                          for i in range(tasks)], f"total{c}")
            for c in range(classes)]
        last_step = busy & (divider_step == divider_clocks - 1)
        with m.If(busy):
            m.d.sync += divider_step.eq(divider_step + 1)
            with m.If(last_step):
                m.d.sync += [busy.eq(0), divider_step.eq(0)]
        for i in range(tasks):
            total = Signal(params.total_bits, name=f"slot_total_{i}")
            selected = class_total[0]
            for c in range(1, classes):
                selected = Mux(job_class[i] == c, class_total[c], selected)
            m.d.comb += total.eq(selected)
            # The first step divides cfg itself (256 * cfg / total < 512 needs 9 quotient bits,
            # and the dividend's top seven bits give none since cfg <= total); then 2 * r.
            shifted = Signal(params.total_bits + 1, name=f"shifted_{i}")
            m.d.comb += shifted.eq(Mux(divider_step == 0, weight[i], remainder[i] << 1))
            fits = Signal(name=f"fits_{i}")
            m.d.comb += fits.eq(shifted >= total)
            next_quotient = Signal(divider_clocks, name=f"next_quotient_{i}")
            m.d.comb += next_quotient.eq(Cat(fits, quotient[i][:-1]))
            with m.If(busy):
                m.d.sync += [remainder[i].eq(Mux(fits, shifted - total, shifted)),
                             quotient[i].eq(next_quotient)]
            with m.If(last_step):
                m.d.sync += [
                    weighted[i].eq(valid[i]),
                    expected[i].eq(Mux(valid[i], Mux(next_quotient == 0, 1, next_quotient), 0)),
                ]

        # -- the decision
        eligible = [Signal(name=f"eligible_{i}") for i in range(tasks)]
        keys = []
        for i in range(tasks):
            m.d.comb += eligible[i].eq(valid[i] & weighted[i] & self.request[i])
            target = Signal(target_shape, name=f"target_{i}")
            m.d.comb += target.eq(expected[i] - (history[i] >> frac))
            # Offset binary makes a signed order an unsigned one.
            target_key = target.as_unsigned() ^ (1 << (len(target) - 1))
            parts = [~job_class[i]]
            if params.tie_break == "history":
                history_key = history[i].as_unsigned()
                if not params.decay:
                    history_key = history_key ^ (1 << (len(history_key) - 1))
                parts.append(~history_key)
            key = Signal(sum(len(part) for part in parts) + len(expected[i]) + len(target) + 1,
                         name=f"key_{i}")
            m.d.comb += key.eq(Cat(*parts, expected[i], target_key, eligible[i]))
            keys.append((key, Const(i, len(self.grant.payload.slot))))
        level = 0
        while len(keys) > 1:
            merged = []
            for index in range(0, len(keys) - 1, 2):
                (left_key, left_slot), (right_key, right_slot) = keys[index], keys[index + 1]
                right_wins = right_key > left_key
                key = Signal(len(left_key), name=f"best_key_l{level}_{index // 2}")
                slot = Signal(len(left_slot), name=f"best_slot_l{level}_{index // 2}")
                m.d.comb += [key.eq(Mux(right_wins, right_key, left_key)),
                             slot.eq(Mux(right_wins, right_slot, left_slot))]
                merged.append((key, slot))
            if len(keys) % 2:
                merged.append(keys[-1])
            keys, level = merged, level + 1
        best_key, best_slot = keys[0]
        any_eligible = best_key[-1]
        best_class = ~best_key[:class_bits]

        advance = ~self.grant.valid | self.grant.ready
        grant_round = Signal()
        m.d.comb += grant_round.eq(advance & any_eligible)
        with m.If(advance):
            m.d.sync += [
                self.grant.valid.eq(any_eligible),
                self.grant.payload.slot.eq(Mux(any_eligible, best_slot, 0)),
                self.grant.payload.job_class.eq(Mux(any_eligible, best_class, 0)),
            ]

        # -- the history update of a grant round
        granted = [Signal(name=f"granted_{i}") for i in range(tasks)]
        m.d.comb += [granted[i].eq(grant_round & (best_slot == i)) for i in range(tasks)]
        if params.decay:
            for i in range(tasks):
                delay = params.table[-1][1]
                shift = delay.bit_length() - 1
                decrement, credit = history[i] >> shift, (WEIGHT_SCALE << frac) >> shift
                for bound, delay in reversed(params.table[:-1]):
                    shift = delay.bit_length() - 1
                    below = expected[i] <= bound
                    decrement = Mux(below, history[i] >> shift, decrement)
                    credit = Mux(below, (WEIGHT_SCALE << frac) >> shift, credit)
                updated = Signal(history_shape, name=f"history_next_{i}")
                m.d.comb += updated.eq(history[i] - decrement + Mux(granted[i], credit, 0))
                with m.If(grant_round & valid[i] & weighted[i]):
                    m.d.sync += history[i].eq(updated)
        else:
            round_total = _sum_tree(m, [Mux(eligible[i], expected[i], 0) for i in range(tasks)],
                                    "round_total")
            for i in range(tasks):
                wide = Signal(signed(len(history[i]) + len(round_total) + frac + 2),
                              name=f"history_sum_{i}")
                m.d.comb += wide.eq(history[i] - (expected[i] << frac)
                                    + Mux(granted[i], round_total << frac, 0))
                updated = Mux(wide < history_low, history_low,
                              Mux(wide > history_high, history_high, wide))
                with m.If(grant_round & eligible[i]):
                    m.d.sync += history[i].eq(updated)

        # -- the write port (after the history update: a write wins over it)
        accepted = self.write.valid & ~busy
        m.d.comb += self.write.ready.eq(~busy)
        payload = self.write.payload
        load = ((payload.op == WriteOp.LOAD) & (payload.weight != 0)
                & (payload.job_class < classes))
        with m.If(accepted):
            m.d.sync += [busy.eq(1), divider_step.eq(0)]
        for i in range(tasks):
            with m.If(accepted & (payload.slot == i)):
                m.d.sync += [
                    valid[i].eq(load),
                    job_class[i].eq(Mux(load, payload.job_class, 0)),
                    weight[i].eq(Mux(load, payload.weight, 0)),
                    weighted[i].eq(0),
                    expected[i].eq(0),
                    history[i].eq(Mux(load, payload.weight << frac, 0)),
                ]
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
