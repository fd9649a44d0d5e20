"""cocotb bench: the delay-factor arbiter against its cycle-exact model, clock by clock.

The parameters arrive as JSON in ``MAXBLOCK_CONFIG`` (see :class:`hw.arbiter.ArbiterConfig`);
``tests/test_cocotb_arbiter.py`` builds one bench per parameter set and simulator.

Structure: a *driver* (:class:`ArbiterDriver`) plays the source of the write stream (it holds
``valid`` and the payload until the arbiter takes them, and leaves random gaps), the
requests of every slot and the sink of the grant stream (random ``ready``); the *monitor*
reads ``write.ready`` and the grant stream in every clock; the *model*
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
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from model.arbiter import (
    ArbiterInputs,
    ArbiterOutputs,
    ArbiterParams,
    WriteOp,
)
from tb.stimulus import bench_seed, packed_fields

__all__ = ["ArbiterDriver", "Phase", "Write", "directed_cases", "field_bits", "random_phases"]

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
    in the next phase). ``request`` is a fixed request mask, or ``None`` for random requests:
    each clock every slot's bit is redrawn with probability ``churn``, set with probability
    ``density``. ``grant_ready`` is the probability that ``grant.ready`` is high in a clock,
    ``write_gap`` the probability that the source leaves ``write.valid`` low in a clock
    although it has a write to send. ``reset`` pulses reset in the phase's first clock.
    """

    clocks: int
    writes: tuple[Write, ...] = ()
    request: int | None = 0
    density: float = 0.5
    churn: float = 0.2
    grant_ready: float = 1.0
    write_gap: float = 0.0
    reset: bool = False


def field_bits(params: ArbiterParams) -> tuple[int, int]:
    """Bits of the ``slot`` and ``job_class`` fields of the streams (at least 1 each)."""
    return (max(params.tasks, 2) - 1).bit_length(), (max(params.classes, 2) - 1).bit_length()


class ArbiterDriver:
    """The source of the write stream, the requesters and the sink of the grant stream.

    Call :meth:`inputs` at the start of every clock and :meth:`clock_done` after it with the
    ``write.ready`` the arbiter showed in that clock.
    """

    def __init__(self, params: ArbiterParams, rng: random.Random):
        self.params = params
        self.rng = rng
        self.queue: deque[Write] = deque()
        self.presenting: Write | None = None
        self.request = 0
        self.phase = Phase(0)
        self.accepted = 0
        self._offered = False

    def start(self, phase: Phase) -> None:
        """Begin ``phase``: queue its writes and take over its patterns."""
        self.phase = phase
        self.queue.extend(phase.writes)
        if phase.request is not None:
            self.request = phase.request & ((1 << self.params.tasks) - 1)

    def inputs(self, reset: bool = False) -> ArbiterInputs:
        """The inputs of this clock; in a ``reset`` clock the write waits (``valid`` low)."""
        phase, rng = self.phase, self.rng
        if self.presenting is None and self.queue and rng.random() >= phase.write_gap:
            self.presenting = self.queue.popleft()
        if phase.request is None:
            for slot in range(self.params.tasks):
                if rng.random() < phase.churn:
                    bit = int(rng.random() < phase.density)
                    self.request = self.request & ~(1 << slot) | bit << slot
        self._offered = self.presenting is not None and not reset
        write = self.presenting or Write(0, WriteOp.CLEAR)
        return ArbiterInputs(
            request=self.request,
            write_valid=int(self._offered),
            write_slot=write.slot,
            write_op=int(write.op),
            write_job_class=write.job_class,
            write_weight=write.weight,
            grant_ready=int(rng.random() < phase.grant_ready),
        )

    def clock_done(self, write_ready: int) -> None:
        """End the clock: a presented write was taken when ``write_ready`` was high."""
        if self._offered and write_ready:
            self.presenting = None
            self.accepted += 1

    def phase_clocks(self, phase: Phase) -> Iterator[tuple[ArbiterInputs, bool]]:
        """Start ``phase`` and yield each clock's inputs and reset; the caller must call
        :meth:`clock_done` before asking for the next clock."""
        self.start(phase)
        for clock in range(phase.clocks):
            reset = phase.reset and clock == 0
            yield self.inputs(reset), reset


def _load(slot: int, job_class: int, weight: int) -> Write:
    return Write(slot, WriteOp.LOAD, job_class, weight)


def _clear(slot: int) -> Write:
    return Write(slot, WriteOp.CLEAR)


def _settler(params: ArbiterParams):
    """Clocks for ``writes`` writes to be taken and their weights to take effect."""
    return lambda writes: writes * (params.divider_clocks + 1) + 2


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
    writes beyond the last slot or class now and then), a request pattern (fixed, random
    with some density and churn, or none), a grant back-pressure level and, rarely, a reset.
    """
    slot_bits, class_bits = field_bits(params)
    _settle = _settler(params)
    first = Phase(_settle(params.tasks // 2 + 1),
                  tuple(_load(rng.randrange(params.tasks), rng.randrange(params.classes),
                              rng.randint(1, 255)) for _ in range(params.tasks // 2 + 1)))
    yield first
    remaining = clocks - first.clocks
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
        kind = rng.random()
        request = (None if kind < 0.6 else (1 << params.tasks) - 1 if kind < 0.85
                   else rng.randrange(1 << params.tasks) if kind < 0.95 else 0)
        yield Phase(length, tuple(writes), request=request,
                    density=rng.choice((0.1, 0.5, 0.9)), churn=rng.choice((0.02, 0.2, 1.0)),
                    grant_ready=rng.choice((1.0, 1.0, 0.8, 0.4, 0.0)),
                    write_gap=rng.choice((0.0, 0.5)), reset=rng.random() < 0.02)


# -- the cocotb bench -----------------------------------------------------------------------------

class ArbiterBench:
    """Driver, monitor, model and in-order scoreboard around one arbiter."""

    def __init__(self, dut):
        from hw.arbiter import ArbiterConfig, grant_layout, write_layout

        self.dut = dut
        self.config = ArbiterConfig.from_json(os.environ["MAXBLOCK_CONFIG"])
        self.model = self.config.model()
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
        self.dut.grant__ready.value = 1
        self.dut.rst.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        self.model.reset()

    def _pack(self, inputs: ArbiterInputs) -> int:
        values = {"slot": inputs.write_slot, "op": inputs.write_op,
                  "job_class": inputs.write_job_class, "weight": inputs.write_weight}
        return sum((values[name] & ((1 << width) - 1)) << offset
                   for name, (offset, width) in self.write_fields.items())

    def _read(self) -> ArbiterOutputs:
        dut = self.dut
        raw = {"write__ready": dut.write__ready.value, "grant__valid": dut.grant__valid.value,
               "grant__payload": dut.grant__payload.value}
        assert all(value.is_resolvable for value in raw.values()), (
            f"{self.config.name}: in clock {self.clock}, unresolved outputs {raw}")
        payload = raw["grant__payload"].to_unsigned()
        fields = {name: payload >> offset & ((1 << width) - 1)
                  for name, (offset, width) in self.grant_fields.items()}
        return ArbiterOutputs(int(raw["write__ready"]), int(raw["grant__valid"]),
                              fields["slot"], fields["job_class"])

    async def run(self, phases, case: str):
        """Drive ``phases`` and check every output in every clock."""
        dut, driver = self.dut, self.driver
        for phase in phases:
            for inputs, reset in driver.phase_clocks(phase):
                dut.write__valid.value = inputs.write_valid
                dut.write__payload.value = self._pack(inputs)
                dut.request.value = inputs.request
                dut.grant__ready.value = inputs.grant_ready
                dut.rst.value = int(reset)
                await ReadOnly()
                actual = self._read()
                expected = self.model.step(inputs, reset=reset)
                assert actual == expected, (
                    f"{self.config.name}, {case}: in clock {self.clock} with {inputs} the "
                    f"arbiter shows {actual}; the model says {expected}. Replay with: "
                    f"TB_SEED={self.seed} make regress SIM={os.environ.get('TB_SIMULATOR', '')} "
                    f"K={self.config.name}")
                driver.clock_done(expected.write_ready)
                self.grants += expected.grant_valid
                self.clock += 1
                await RisingEdge(dut.clk)
        dut.rst.value = 0


@cocotb.test()
async def directed(dut):
    """One task; equal weights; weight 1 against 255; ties; tasks joining and leaving; a class
    emptied and refilled; all requests dropped; odd writes; back-pressure and resets."""
    bench = ArbiterBench(dut)
    await bench.start()
    for case, phases in directed_cases(bench.config):
        await bench.run(phases, case)
    dut._log.info("%d clocks, %d grants, %d writes", bench.clock, bench.grants,
                  bench.driver.accepted)


@cocotb.test()
async def seeded_random(dut):
    """Tasks, weights, classes, requests, back-pressure and resets changing at random."""
    bench = ArbiterBench(dut)
    await bench.start()
    clocks = int(os.environ.get("TB_RANDOM_VECTORS", "5000"))
    await bench.run(random_phases(bench.config, bench.rng, clocks), "seeded random")
    dut._log.info("%d clocks, %d grants, %d writes", bench.clock, bench.grants,
                  bench.driver.accepted)
