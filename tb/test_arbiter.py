"""cocotb bench: the delay-factor arbiter against its cycle-exact model, clock by clock.

The parameters arrive as JSON in ``MAXBLOCK_CONFIG`` (see :class:`hw.arbiter.ArbiterConfig`);
``tests/test_cocotb_arbiter.py`` builds one bench per parameter set and simulator.

Structure: a *driver* (:class:`ArbiterDriver`) plays the source of the write stream (it holds
``valid`` and the payload until the arbiter takes them, and leaves random gaps), the
requesters of every slot -- independent ones, or reactive ones that count their jobs and
take one off when their grant is taken -- and the sink of the grant stream (random
``ready``); the *monitor* reads ``write.ready`` and the grant stream in every clock; an
independent *protocol checker* (:class:`GrantChecker`) checks the stream rules, that every
grant goes to a slot that requested, and that no job is granted twice; the *model*
(:class:`model.arbiter.DelayFactorArbiterModel`) steps with the same inputs; the in-order
*scoreboard* compares every output in every clock. The stimulus comes in :class:`Phase` s:
first the directed cases of :func:`directed_cases`, then seeded random phases in which tasks,
weights, classes, requests, back-pressure and resets change at random times.

The driver and the phases are plain Python, so ``tests/test_arbiter_sim.py`` runs the same
stimulus through Amaranth's simulator.

Environment:

``TB_SEED``
    Seed of the random stimulus (default 2026; ``random`` draws a fresh one). It is printed,
    and a failure message says how to replay it.
``TB_RANDOM_VECTORS``
    Clocks of seeded random stimulus (default 5000).
"""

import os
import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import cocotb
from amaranth.hdl import Module
from amaranth.lib import wiring
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from model.arbiter import (
    ArbiterInputs,
    ArbiterOutputs,
    ArbiterParams,
    WriteOp,
)
from tb.stimulus import bench_seed, packed_fields
from tb.values import resolved

__all__ = ["ArbiterDriver", "GrantChecker", "LevelRequestArbiter", "Phase", "Write",
           "directed_cases", "field_bits", "random_phases"]

@dataclass(frozen=True)
class Write:
    """One write to the arbiter's write stream."""

    slot: int
    op: int = WriteOp.LOAD
    job_class: int = 0
    weight: int = 0


@dataclass(frozen=True)
class Phase:
    """``clocks`` clocks of one stimulus pattern.

    ``writes`` are queued at the start of the phase (a write still waiting at its end is sent
    in the next phase). ``grant_ready`` is the probability that ``grant.ready`` is high in a
    clock, ``write_gap`` the probability that the source leaves ``write.valid`` low in a
    clock although it has a write to send. ``reset`` pulses reset in the phase's first clock.

    The requests come from one of two kinds of requester:

    * *independent* (``reactive`` false): ``request`` is a fixed mask, or ``None`` for random
      requests (each clock every slot's bit is redrawn with probability ``churn``, set with
      probability ``density``); each requesting slot's ``backlogged`` bit is high with
      probability ``backlog`` in each clock (1.0: the slot always has more jobs);
    * *reactive* (``reactive`` true): every slot keeps a count of waiting jobs, presents
      ``request = count >= 1`` and ``backlogged = count >= 2`` from it, and takes one off at
      the edge of every clock in which a grant for it is taken -- a requester built from
      registers, with no path from ``grant`` to ``request``. ``add_jobs[i]`` jobs join slot
      ``i`` at the start of the phase, and in every clock each slot receives ``1..burst``
      more with probability ``arrival``.
    """

    clocks: int
    writes: tuple[Write, ...] = ()
    request: int | None = 0
    density: float = 0.5
    churn: float = 0.2
    backlog: float = 1.0
    reactive: bool = False
    add_jobs: tuple[int, ...] = ()
    arrival: float = 0.0
    burst: int = 1
    grant_ready: float = 1.0
    write_gap: float = 0.0
    reset: bool = False


def field_bits(params: ArbiterParams) -> tuple[int, int]:
    """Bits of the ``slot`` and ``job_class`` fields of the streams (at least 1 each)."""
    return (max(params.tasks, 2) - 1).bit_length(), (max(params.classes, 2) - 1).bit_length()


class ArbiterDriver:
    """The source of the write stream, the requesters and the sink of the grant stream.

    Call :meth:`inputs` at the start of every clock and :meth:`clock_done` after it with the
    outputs the arbiter showed in that clock. The reactive requesters count their jobs in
    :attr:`jobs`; a grant taken for a slot that has no job left is a second grant for a job
    and is recorded in :attr:`extra_grants` as ``(clock, slot)``.
    """

    def __init__(self, params: ArbiterParams, rng: random.Random):
        self.params = params
        self.rng = rng
        self.queue: deque[Write] = deque()
        self.presenting: Write | None = None
        self.request = 0
        self.phase = Phase(0)
        self.accepted = 0
        self.jobs = [0] * params.tasks
        self.granted_jobs = 0
        self.extra_grants: list[tuple[int, int]] = []
        self.clock = 0
        self._offered = False
        self._inputs = ArbiterInputs()
        self._reset = False
        self._held = False                  # the grant shown was not taken
        self._reactive_before = False       # the previous clock's requests were reactive
        self._decided_reactive = False      # the grant shown answers reactive requests

    def start(self, phase: Phase) -> None:
        """Begin ``phase``: queue its writes and take over its patterns."""
        self.phase = phase
        self.queue.extend(phase.writes)
        if phase.request is not None:
            self.request = phase.request & ((1 << self.params.tasks) - 1)
        for slot, count in enumerate(phase.add_jobs[:self.params.tasks]):
            self.jobs[slot] += count

    def inputs(self, reset: bool = False) -> ArbiterInputs:
        """The inputs of this clock; in a ``reset`` clock the write waits (``valid`` low)."""
        phase, rng, tasks = self.phase, self.rng, self.params.tasks
        if self.presenting is None and self.queue and rng.random() >= phase.write_gap:
            self.presenting = self.queue.popleft()
        if phase.reactive:
            for slot in range(tasks):
                if phase.arrival and rng.random() < phase.arrival:
                    self.jobs[slot] += rng.randint(1, phase.burst)
            request = sum(1 << slot for slot in range(tasks) if self.jobs[slot] >= 1)
            backlogged = sum(1 << slot for slot in range(tasks) if self.jobs[slot] >= 2)
        else:
            if phase.request is None:
                for slot in range(tasks):
                    if rng.random() < phase.churn:
                        bit = int(rng.random() < phase.density)
                        self.request = self.request & ~(1 << slot) | bit << slot
            request = self.request
            backlogged = (request if phase.backlog >= 1.0 else
                          sum(1 << slot for slot in range(tasks)
                              if request >> slot & 1 and rng.random() < phase.backlog))
        self._offered = self.presenting is not None and not reset
        self._reset = reset
        write = self.presenting or Write(0, WriteOp.CLEAR)
        self._inputs = ArbiterInputs(
            request=request,
            backlogged=backlogged,
            write_valid=int(self._offered),
            write_slot=write.slot,
            write_op=int(write.op),
            write_job_class=write.job_class,
            write_weight=write.weight,
            grant_ready=int(rng.random() < phase.grant_ready),
        )
        return self._inputs

    def clock_done(self, outputs: ArbiterOutputs) -> None:
        """End the clock that showed ``outputs``: a presented write was taken when
        ``write_ready`` was high; a reactive requester whose grant was taken has one job
        fewer from the next clock."""
        if self._offered and outputs.write_ready:
            self.presenting = None
            self.accepted += 1
        # A grant shown now was decided in the previous clock, unless it is held from before:
        # it is for a reactive requester's job if the requests of that clock were theirs.
        if not self._held:
            self._decided_reactive = self._reactive_before
        taken = outputs.grant_valid and self._inputs.grant_ready and not self._reset
        if self._decided_reactive and taken and outputs.grant_slot < self.params.tasks:
            slot = outputs.grant_slot
            if self.jobs[slot]:
                self.jobs[slot] -= 1
                self.granted_jobs += 1
            else:
                self.extra_grants.append((self.clock, slot))
        self._held = bool(outputs.grant_valid and not self._inputs.grant_ready
                          and not self._reset)
        self._reactive_before = self.phase.reactive and not self._reset
        self.clock += 1

    def phase_clocks(self, phase: Phase) -> Iterator[tuple[ArbiterInputs, bool]]:
        """Start ``phase`` and yield each clock's inputs and reset; the caller must call
        :meth:`clock_done` before asking for the next clock."""
        self.start(phase)
        for clock in range(phase.clocks):
            reset = phase.reset and clock == 0
            yield self.inputs(reset), reset


class GrantChecker:
    """An independent checker of the arbiter's port protocol, clock by clock.

    It knows the contract of the ports, not the arithmetic: it follows which slots hold a
    task (and of which class) from the writes it sees, and checks in every clock that

    * ``write.ready`` is high (a write is taken in every clock);
    * the grant payload is 0 while ``grant.valid`` is low;
    * a grant not taken (``valid`` high, ``ready`` low) is there again in the next clock
      with the same payload (the stream rule);
    * a new grant goes to a slot that held a task, requested in the clock of the decision
      and had that class then;
    * never two grants for one job: the slot whose grant was taken in the clock of the
      decision is granted again only if it said it had another job (``backlogged``).

    :meth:`check` returns the problems of one clock as sentences (empty when all is well).
    """

    def __init__(self, params: ArbiterParams):
        self.params = params
        self.reset()

    def reset(self) -> None:
        """Forget the previous clock and empty every slot (the arbiter's reset)."""
        self.holds = [None] * self.params.tasks        # class of each slot's task, or None
        self._previous: tuple[ArbiterInputs, ArbiterOutputs, list] | None = None

    def check(self, inputs: ArbiterInputs, outputs: ArbiterOutputs,
              reset: bool = False) -> list[str]:
        """The problems of a clock with ``inputs`` presented and ``outputs`` seen."""
        problems = []
        tasks = self.params.tasks
        if outputs.write_ready != 1:
            problems.append("write.ready is low")
        if not outputs.grant_valid and (outputs.grant_slot or outputs.grant_job_class):
            problems.append(f"grant payload slot {outputs.grant_slot}, class "
                            f"{outputs.grant_job_class} while grant.valid is low")
        if self._previous is not None:
            before, shown, holds = self._previous
            slot = outputs.grant_slot
            if shown.grant_valid and not before.grant_ready:
                if (outputs.grant_valid, slot, outputs.grant_job_class) != (
                        1, shown.grant_slot, shown.grant_job_class):
                    problems.append(f"the grant of slot {shown.grant_slot} changed before it "
                                    f"was taken (now valid {outputs.grant_valid}, slot {slot})")
            elif outputs.grant_valid:
                if slot >= tasks or not before.request >> slot & 1:
                    problems.append(f"grant for slot {slot}, which did not request")
                elif holds[slot] is None:
                    problems.append(f"grant for slot {slot}, which holds no task")
                elif outputs.grant_job_class != holds[slot]:
                    problems.append(f"grant for slot {slot} with class "
                                    f"{outputs.grant_job_class}; its task is of class "
                                    f"{holds[slot]}")
                elif (shown.grant_valid and shown.grant_slot == slot
                        and not before.backlogged >> slot & 1):
                    problems.append(f"second grant for the one job of slot {slot}: its grant "
                                    f"was taken in the clock of the decision and it had no "
                                    f"other job (backlogged low)")
        self._previous = (inputs, outputs, list(self.holds))
        if reset:
            self.reset()
        elif inputs.write_valid and inputs.write_slot < tasks:
            load = (inputs.write_op == WriteOp.LOAD and inputs.write_weight
                    and inputs.write_job_class < self.params.classes)
            self.holds[inputs.write_slot] = inputs.write_job_class if load else None
        return problems


class LevelRequestArbiter(wiring.Component):
    """A mutant for the benches: the arbiter of ``params`` with ``backlogged`` tied high inside.

    Its ports are the arbiter's, but every requesting slot counts as having more jobs, so
    the slot whose grant is taken is never left out of the decision: the old contract, in
    which a requester with one job that drops its request one clock after its grant gets a
    second grant. The reactive benches must fail on it.
    """

    def __init__(self, params: ArbiterParams):
        from hw.arbiter import DelayFactorArbiter

        self._inner = DelayFactorArbiter.from_params(params)
        super().__init__(self._inner.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self._inner
        m.d.comb += [
            inner.write.valid.eq(self.write.valid),
            inner.write.payload.eq(self.write.payload),
            self.write.ready.eq(inner.write.ready),
            inner.request.eq(self.request),
            inner.backlogged.eq(self.request),
            self.grant.valid.eq(inner.grant.valid),
            self.grant.payload.eq(inner.grant.payload),
            inner.grant.ready.eq(self.grant.ready),
        ]
        return m


def _load(slot: int, job_class: int, weight: int) -> Write:
    return Write(slot, WriteOp.LOAD, job_class, weight)


def _clear(slot: int) -> Write:
    return Write(slot, WriteOp.CLEAR)


def _settler(params: ArbiterParams):
    """Clocks for ``writes`` writes (sent back to back) to be taken and the weights of every
    slot to take effect: after the last write the divider gives every slot a turn, and the
    last one sits out a clock."""
    return lambda writes: writes + params.pass_clocks + 2


def directed_cases(params: ArbiterParams) -> list[tuple[str, list[Phase]]]:
    """The directed corner cases, each a name and its phases, for any parameter set.

    Slots and classes are folded into ``tasks`` and ``classes``, so every case runs on every
    parameter set (with one slot, "ties" is a single task). Each case starts from reset.
    """
    tasks, classes = params.tasks, params.classes
    last_class = classes - 1
    everyone = (1 << tasks) - 1
    slot_bits, class_bits = field_bits(params)
    _settle = _settler(params)
    cases = []

    def slots(count):
        return list(range(min(count, tasks)))

    cases.append(("one task", [
        Phase(_settle(1), (_load(0, 0, 100),), request=0, reset=True),
        Phase(40, request=1),
        Phase(30, request=1, grant_ready=0.5),
        Phase(20, request=None, density=0.5, churn=0.5),
        Phase(5, request=0),
    ]))

    equal = slots(4)
    cases.append(("equal weights", [
        Phase(_settle(len(equal)), tuple(_load(s, 0, 60) for s in equal), request=0,
              reset=True),
        Phase(120, request=everyone),
    ]))

    pair = slots(2)
    cases.append(("weight 1 against weight 255", [
        Phase(_settle(2), tuple(_load(s, last_class, w) for s, w in zip(pair, (1, 255),
                                                                         strict=False)),
              request=0, reset=True),
        Phase(700, request=everyone),
    ]))

    # Equal tasks in every class (a tie of T and W across classes, broken by class order);
    # within a class equal (W, H) too (broken by H, then by slot).
    tied = slots(2 * classes)
    cases.append(("ties", [
        Phase(_settle(len(tied)), tuple(_load(s, s % classes, 77) for s in tied), request=0,
              reset=True),
        Phase(60, request=everyone),
        Phase(60, request=everyone, grant_ready=0.5),
    ]))

    # Equal W but H that differ below the integer part, so that T ties and the tie rule
    # decides (found by search: the first decisions that differ come within a few rounds).
    for weights in ((93, 93, 154, 153), (113, 149, 6, 8, 161, 250)):
        if len(weights) <= tasks:
            cases.append((f"ties broken by history, weights {weights}", [
                Phase(_settle(len(weights)), tuple(_load(s, 0, w) for s, w in
                                                   enumerate(weights)), request=0, reset=True),
                Phase(100, request=everyone),
            ]))

    many = slots(tasks)
    cases.append(("tasks joining and leaving", [
        Phase(_settle(len(many) // 2 + 1),
              tuple(_load(s, s % classes, 20 + 30 * s % 230) for s in many[::2]), request=0,
              reset=True),
        Phase(40, request=everyone),
        Phase(_settle(3) + 20, (_load(many[-1], last_class, 5), _clear(0),
                                _load(0, 0, 250)), request=everyone),
        Phase(_settle(len(many)) + 20,
              tuple(_load(s, (s + 1) % classes, 1 + 37 * s % 255) for s in many[1::2]),
              request=None, density=0.8),
        Phase(_settle(2) + 30, (_clear(many[len(many) // 2]), _clear(many[-1])),
              request=everyone),
    ]))

    cases.append(("class emptied and refilled", [
        Phase(_settle(len(many)), tuple(_load(s, s % classes, 90 + s) for s in many),
              request=0, reset=True),
        Phase(30, request=everyone),
        Phase(_settle(len(many)) + 10,
              tuple(_clear(s) for s in many if s % classes == 0), request=everyone),
        Phase(40, request=everyone),
        Phase(_settle(len(many)) + 10,
              tuple(_load(s, 0, 3 + s) for s in many if s % classes == 0), request=everyone),
        Phase(60, request=everyone),
    ]))

    cases.append(("all requests dropped", [
        Phase(_settle(len(many)), tuple(_load(s, s % classes, 10 + 7 * s) for s in many),
              request=0, reset=True),
        Phase(50, request=everyone),
        Phase(40, request=0),
        Phase(50, request=everyone),
        Phase(30, request=0, grant_ready=0.0),
        Phase(30, request=everyone, grant_ready=0.0),
        Phase(30, request=everyone),
    ]))

    # Writes the arbiter must treat as clears or ignore; weights whose W clamps to 1.
    odd = [_load(0, 0, 0)]                                      # weight 0 is a clear
    if classes < 1 << class_bits:
        odd.append(_load(min(1, tasks - 1), classes, 50))       # a class beyond the last
    if tasks < 1 << slot_bits:
        odd.append(_load(tasks, 0, 50))                         # a slot beyond the last
    cases.append(("odd writes and clamped weights", [
        Phase(_settle(len(many)), tuple(_load(s, 0, 255 if s == 0 else 1) for s in many),
              request=0, reset=True),
        Phase(80, request=everyone),
        Phase(_settle(len(odd)) + 20, tuple(odd), request=everyone),
        Phase(40, request=everyone),
    ]))

    # Requesters that react to their grants, from registers: a slot with one job must get
    # exactly one grant, also when its grant is taken in the clock of the next decision.
    mixed = tuple(_load(s, s % classes, 30 + 41 * s % 200) for s in many)
    cases.append(("one job per slot, reactive requesters", [
        Phase(_settle(len(many)), mixed, request=0, reset=True),
        Phase(4 * tasks + 10, reactive=True, add_jobs=(1,) * tasks),
        Phase(4 * tasks + 10, reactive=True, add_jobs=(1,) * tasks, grant_ready=0.5),
        Phase(6 * tasks + 10, reactive=True, add_jobs=(2,) * tasks),
        Phase(8 * tasks + 10, reactive=True, add_jobs=(1, 3) * tasks, grant_ready=0.7),
        Phase(200, reactive=True, arrival=0.1),
        Phase(200, reactive=True, arrival=0.05, burst=3, grant_ready=0.6),
    ]))
    cases.append(("a lone one-job requester", [
        Phase(_settle(1), (_load(0, 0, 100),), request=0, reset=True),
        *(Phase(4, reactive=True, add_jobs=(1,)) for _ in range(6)),
        Phase(12, reactive=True, add_jobs=(1,), grant_ready=0.3),
        Phase(12, reactive=True, add_jobs=(5,)),
    ]))
    # Independent requesters that say "one job" now and then: the slot just granted sits out.
    cases.append(("backlogged low", [
        Phase(_settle(len(many)), mixed, request=0, reset=True),
        Phase(60, request=everyone, backlog=0.0),
        Phase(60, request=None, density=0.8, churn=0.5, backlog=0.5, grant_ready=0.7),
    ]))

    cases.append(("back-pressure and reset", [
        Phase(_settle(len(many)), tuple(_load(s, s % classes, 200 - 11 * s) for s in many),
              request=0, reset=True, write_gap=0.5),
        Phase(60, request=everyone, grant_ready=0.3),
        Phase(20, request=None, grant_ready=0.7),
        Phase(30, request=everyone, reset=True),
        Phase(_settle(2) + 20, (_load(0, 0, 40), _load(tasks - 1, last_class, 40)),
              request=everyone),
    ]))
    return cases


def _random_weight(rng: random.Random) -> int:
    return rng.choice((0, 1, 1, 2, 3, 4, 5, 8, 9, 254, 255, 255,
                       *(rng.randint(1, 255) for _ in range(8))))


def random_phases(params: ArbiterParams, rng: random.Random, clocks: int) -> Iterator[Phase]:
    """Seeded random phases, ``clocks`` clocks in all.

    The first phase loads a task into about half the slots; after that each phase lasts
    5-300 clocks and brings 0-6 writes (loads with edge weights 0, 1, 255 often, clears,
    writes beyond the last slot or class now and then), a grant back-pressure level, rarely a
    reset, and requesters: reactive ones in every other phase (jobs arriving at some rate,
    one or a few at a time, counted down by the grants), independent ones in the others (a
    fixed, random or empty request pattern, backlogged always, sometimes or never).
    """
    slot_bits, class_bits = field_bits(params)
    _settle = _settler(params)
    first = Phase(_settle(params.tasks // 2 + 1),
                  tuple(_load(rng.randrange(params.tasks), rng.randrange(params.classes),
                              rng.randint(1, 255)) for _ in range(params.tasks // 2 + 1)))
    yield first
    remaining = clocks - first.clocks
    reactive = False
    while remaining > 0:
        length = min(rng.randint(5, 300), remaining)
        remaining -= length
        writes = []
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3, 4, 6))):
            slot = (rng.randrange(1 << slot_bits) if rng.random() < 0.05
                    else rng.randrange(params.tasks))
            if rng.random() < 0.25:
                writes.append(_clear(slot))
                continue
            job_class = (rng.randrange(1 << class_bits) if rng.random() < 0.05
                         else rng.randrange(params.classes))
            writes.append(_load(slot, job_class, _random_weight(rng)))
        common = dict(grant_ready=rng.choice((1.0, 1.0, 0.8, 0.4, 0.0)),
                      write_gap=rng.choice((0.0, 0.5)), reset=rng.random() < 0.02)
        reactive = not reactive
        if reactive:
            yield Phase(length, tuple(writes), reactive=True,
                        arrival=rng.choice((0.01, 0.05, 0.2, 0.6)),
                        burst=rng.choice((1, 1, 2, 4)), **common)
            continue
        kind = rng.random()
        request = (None if kind < 0.6 else (1 << params.tasks) - 1 if kind < 0.85
                   else rng.randrange(1 << params.tasks) if kind < 0.95 else 0)
        yield Phase(length, tuple(writes), request=request,
                    density=rng.choice((0.1, 0.5, 0.9)), churn=rng.choice((0.02, 0.2, 1.0)),
                    backlog=rng.choice((1.0, 1.0, 0.5, 0.0)), **common)


# -- the cocotb bench -----------------------------------------------------------------------------

class ArbiterBench:
    """Driver, monitor, model, protocol checker and in-order scoreboard around one arbiter."""

    def __init__(self, dut):
        from hw.arbiter import ArbiterConfig, grant_layout, write_layout

        self.dut = dut
        self.config = ArbiterConfig.from_json(os.environ["MAXBLOCK_CONFIG"])
        self.model = self.config.model()
        self.checker = GrantChecker(self.config)
        self.seed = bench_seed()
        self.rng = random.Random(self.seed)
        self.driver = ArbiterDriver(self.config, self.rng)
        self.clock = 0
        self.grants = 0
        # Where each field of the packed stream payloads sits.
        self.write_fields = packed_fields(write_layout(self.config.tasks, self.config.classes))
        self.grant_fields = packed_fields(grant_layout(self.config.tasks, self.config.classes))
        dut._log.info("%s (%s), seed %d", self.config.name, self.config.label, self.seed)

    async def start(self):
        """Start the clock and hold reset for two clocks."""
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns").start())
        self.dut.write__valid.value = 0
        self.dut.write__payload.value = 0
        self.dut.request.value = 0
        self.dut.backlogged.value = 0
        self.dut.grant__ready.value = 1
        self.dut.rst.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        self.model.reset()
        self.checker.reset()

    def _pack(self, inputs: ArbiterInputs) -> int:
        values = {"slot": inputs.write_slot, "op": inputs.write_op,
                  "job_class": inputs.write_job_class, "weight": inputs.write_weight}
        return sum((values[name] & ((1 << width) - 1)) << offset
                   for name, (offset, width) in self.write_fields.items())

    def _read(self) -> ArbiterOutputs:
        dut = self.dut
        raw = {"write__ready": dut.write__ready.value, "grant__valid": dut.grant__valid.value,
               "grant__payload": dut.grant__payload.value}
        numbers = {name: resolved(value) for name, value in raw.items()}
        assert None not in numbers.values(), (
            f"{self.config.name}: in clock {self.clock}, unresolved outputs {raw}")
        payload = numbers["grant__payload"]
        fields = {name: payload >> offset & ((1 << width) - 1)
                  for name, (offset, width) in self.grant_fields.items()}
        return ArbiterOutputs(numbers["write__ready"], numbers["grant__valid"],
                              fields["slot"], fields["job_class"])

    async def run(self, phases, case: str):
        """Drive ``phases`` and check every output in every clock: first the protocol, then
        the model's outputs; the reactive requesters react to what the arbiter shows."""
        dut, driver = self.dut, self.driver
        for phase in phases:
            for inputs, reset in driver.phase_clocks(phase):
                dut.write__valid.value = inputs.write_valid
                dut.write__payload.value = self._pack(inputs)
                dut.request.value = inputs.request
                dut.backlogged.value = inputs.backlogged
                dut.grant__ready.value = inputs.grant_ready
                dut.rst.value = int(reset)
                await ReadOnly()
                actual = self._read()
                replay = (f"Replay with: TB_SEED={self.seed} make regress "
                          f"SIM={os.environ.get('TB_SIMULATOR', '')} K={self.config.name}")
                problems = self.checker.check(inputs, actual, reset)
                assert not problems, (
                    f"{self.config.name}, {case}: in clock {self.clock} with {inputs} the "
                    f"arbiter shows {actual}: {'; '.join(problems)}. {replay}")
                expected = self.model.step(inputs, reset=reset)
                assert actual == expected, (
                    f"{self.config.name}, {case}: in clock {self.clock} with {inputs} the "
                    f"arbiter shows {actual}; the model says {expected}. {replay}")
                driver.clock_done(actual)
                assert not driver.extra_grants, (
                    f"{self.config.name}, {case}: in clock {self.clock} a grant for slot "
                    f"{driver.extra_grants[0][1]} was taken when its requester had no job "
                    f"left. {replay}")
                self.grants += expected.grant_valid
                self.clock += 1
                await RisingEdge(dut.clk)
        dut.rst.value = 0


@cocotb.test()
async def directed(dut):
    """One task; equal weights; weight 1 against 255; ties; tasks joining and leaving; a class
    emptied and refilled; all requests dropped; odd writes; one job per slot and a lone
    one-job requester (reactive); backlogged low; back-pressure and resets."""
    bench = ArbiterBench(dut)
    await bench.start()
    for case, phases in directed_cases(bench.config):
        await bench.run(phases, case)
    assert bench.driver.granted_jobs > 0
    dut._log.info("%d clocks, %d grants (%d to reactive requesters), %d writes", bench.clock,
                  bench.grants, bench.driver.granted_jobs, bench.driver.accepted)


@cocotb.test()
async def seeded_random(dut):
    """Tasks, weights, classes, requesters (reactive and independent), back-pressure and
    resets changing at random."""
    bench = ArbiterBench(dut)
    await bench.start()
    clocks = int(os.environ.get("TB_RANDOM_VECTORS", "5000"))
    await bench.run(random_phases(bench.config, bench.rng, clocks), "seeded random")
    dut._log.info("%d clocks, %d grants (%d to reactive requesters), %d writes", bench.clock,
                  bench.grants, bench.driver.granted_jobs, bench.driver.accepted)
