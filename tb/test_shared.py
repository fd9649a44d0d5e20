"""cocotb bench: the time-multiplexed unit (embodiment 7) against its model, clock by clock.

The parameters arrive as JSON in ``MAXBLOCK_CONFIG`` (see :class:`hw.flow.catalog.SharedConfig`).
Every clock the driver presents new status words (and, for the exact tree, requests) for every
resource type (each type's word is only read in its own period) and the stall inputs
``valid`` and ``enable``. Two checkers watch every clock:

* the cycle model, :class:`model.maxblock.SharedMaxFreeBlockModel`: every field of every output
  must match it (the answers from the clock the model knows them: they have no reset);
* a protocol checker of its own: it counts the enabled clocks since reset to know which period
  is served, and requires that a type's ``result_valid`` strobe is high exactly in the clock
  after its period was served with ``valid`` (held while ``enable`` is low), and that the
  answer then shown is the reference function's for the words presented in that period.

``TB_SEED`` and ``TB_RANDOM_VECTORS`` work as in ``tb/test_maxblock.py``.
"""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from hw.flow.catalog import SharedConfig
from model.maxblock import exact_free_block, max_free_run
from tb.stimulus import bench_seed, packed_fields, random_free_masks
from tb.values import resolved


class SharedBench:
    """Driver, monitor, cycle model and protocol checker around one shared unit."""

    def __init__(self, dut):
        self.dut = dut
        self.config = SharedConfig.from_json(os.environ["MAXBLOCK_CONFIG"])
        self.model = self.config.model()
        self.seed = bench_seed()
        self.rng = random.Random(self.seed)
        self.clock = 0
        self.types = self.config.schedule.types
        self.outputs = [port for port in self.config.layouts() if port not in ("status",
                                                                              "request")]
        # Where each type's field sits in the flattened ports.
        self.fields = {port: packed_fields(layout)
                       for port, layout in self.config.layouts().items()}
        # The protocol checker's own state: the period served next, and what the strobes
        # and answers must show in the next clock.
        self.period = 0
        self.expected_strobes = dict.fromkeys(self.types, 0)
        self.expected_answers = {}
        # With a pipeline, the periods read and not yet answered, oldest first.
        self.inflight = [None] * self.config.pipeline
        dut._log.info("%s, seed %d", self.config.name, self.seed)

    async def start(self):
        """Start the clock and hold reset for two clocks, unchecked (a bench may follow another
        in the same simulation); after it the unit is where a fresh model starts."""
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns").start())
        self.dut.status.value = 0
        if self.config.exact:
            self.dut.request.value = 0
        self.dut.valid.value = 0
        self.dut.enable.value = 1
        self.dut.rst.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        self.model = self.config.model()

    def _pack(self, port, values):
        return sum(values[name] << offset for name, (offset, _) in self.fields[port].items())

    def _answer(self, name, status, request):
        size = self.types[name]
        if not self.config.exact:
            return {"length": max_free_run(status, size, free_level=self.config.free_level)}
        result = exact_free_block(status, request, size, free_level=self.config.free_level)
        return {port: getattr(result, port) for port in ("length", "start", "fit", "fit_start")}

    async def step(self, statuses, requests, *, valid=1, enable=1, reset=False):
        """One clock: present the inputs, check every output, let the edge come."""
        dut, config = self.dut, self.config
        dut.status.value = self._pack("status", statuses)
        if config.exact:
            dut.request.value = self._pack("request", requests)
        dut.valid.value = valid
        dut.enable.value = enable
        dut.rst.value = int(reset)
        await ReadOnly()
        expected = self.model.step(statuses, requests if config.exact else None, valid=valid,
                                   enable=enable, reset=reset)
        raw = {port: getattr(dut, port).value for port in self.outputs}
        # The strobes are control state (reset) and must always be 0 or 1; a data field is
        # unspecified until its type's result_valid has risen (the registers have no reset:
        # a four-state simulator shows X there after power-on), so it must be resolved only
        # where the model gives a value.
        actual = {}
        for port, value in raw.items():
            fields = self.fields[port]
            word = resolved(value)
            if word is not None:
                # Every bit 0 or 1: the fields are slices of one integer (slicing the
                # LogicArray field by field was most of the bench's Python).
                actual[port] = {name: (word >> offset) & ((1 << width) - 1)
                                for name, (offset, width) in fields.items()}
                continue
            actual[port] = {}
            for name, (offset, width) in fields.items():
                field = value[offset + width - 1:offset]
                required = port == "result_valid" or expected[port][name] is not None
                assert field.is_resolvable or not required, (
                    f"{config.name}: in clock {self.clock}, {name}'s {port} is unresolved "
                    f"({field}) where the model says {expected[port][name]}; outputs {raw}")
                actual[port][name] = field.to_unsigned() if field.is_resolvable else None

        def context(finding: str) -> str:     # formatted only for a failure's message
            return (f"{config.name}: in clock {self.clock} with status "
                    f"{ {name: hex(word) for name, word in statuses.items()} }, requests "
                    f"{requests}, valid {valid}, enable {enable}, reset {int(reset)}: outputs "
                    f"{actual}; {finding}. Replay with: TB_SEED={self.seed} make regress "
                    f"SIM={os.environ.get('TB_SIMULATOR', '')} K={config.name}")

        for port in self.outputs:
            for name in self.types:
                if expected[port][name] is not None:
                    assert actual[port][name] == expected[port][name], (
                        context(f"the model says {expected}"))
        self._protocol(statuses, requests, valid, enable, reset, actual, context)
        self.clock += 1
        await RisingEdge(dut.clk)

    def _protocol(self, statuses, requests, valid, enable, reset, actual, context):
        assert actual["result_valid"] == self.expected_strobes, (
            context(f"the strobes should be {self.expected_strobes}"))
        for name, answer in self.expected_answers.items():
            for port, value in answer.items():
                assert actual[port][name] == value, (
                    context(f"{name}'s {port} should be {value}"))
        if enable:
            served = dict(self.config.schedule.periods[self.period])
            strobes = {name: int(bool(valid) and name in served) for name in self.types}
            answers = ({name: self._answer(name, statuses[name], requests[name])
                        for name in served} if valid else {})
            self.inflight.append((strobes, answers))
            leaving = self.inflight.pop(0)
            self.expected_strobes, self.expected_answers = leaving or (
                dict.fromkeys(self.types, 0), {})
            self.period = (self.period + 1) % len(self.config.schedule.periods)
        if reset:
            self.period = 0
            self.expected_strobes = dict.fromkeys(self.types, 0)
            self.expected_answers = {}
            self.inflight = [None] * self.config.pipeline

    def random_statuses(self):
        masks = {name: random_free_masks(size, 1, self.rng)[0] for name, size in self.types.items()}
        if self.config.free_level:
            return masks
        return {name: ~mask & ((1 << self.types[name]) - 1) for name, mask in masks.items()}

    def random_requests(self, statuses):
        requests = {}
        for name, size in self.types.items():
            longest = max_free_run(statuses[name], size, free_level=self.config.free_level)
            choice = self.rng.randrange(3)
            requests[name] = (self.rng.randint(0, size) if choice == 0
                              else min(longest + choice - 1, size))
        return requests

    async def run(self, clocks, make_statuses, *, resets=False, stalls=False):
        """``clocks`` clocks; ``make_statuses()`` gives each clock's ``{type: word}``."""
        for _ in range(clocks):
            statuses = make_statuses()
            enable = int(not stalls or self.rng.random() >= 0.2)
            valid = int(not stalls or self.rng.random() >= 0.2)
            await self.step(statuses, self.random_requests(statuses), valid=valid,
                            enable=enable, reset=resets and self.rng.random() < 0.02)
        self.dut.rst.value = 0


@cocotb.test()
async def boundaries(dut):
    """Every type all free and all occupied, in every combination of neighbours: a run that
    leaked across a field boundary would show as a length longer than its field."""
    bench = SharedBench(dut)
    await bench.start()
    types = list(bench.types.items())
    periods = len(bench.config.schedule.periods)
    patterns = []
    for bits in range(1 << min(len(types), 10)):
        patterns.append({name: ((1 << size) - 1) * ((bits >> index) & 1)
                         for index, (name, size) in enumerate(types)})
    for pattern in patterns:
        for _ in range(periods):              # hold each pattern for a whole schedule
            await bench.run(1, lambda pattern=pattern: pattern)
    # Each type free only above (or only below) a power-of-two block p, asking for exactly
    # that run: the first fit then sits at p (or 0) on a tree node boundary, where a node's
    # "nothing fits here" answer decides it (a node another type reads whole must keep it).
    level = bench.config.free_level
    for name, size in types:
        for p in (1 << k for k in range(size.bit_length()) if 1 << k < size):
            for free in (((1 << size) - 1) & ~((1 << p) - 1), (1 << p) - 1):
                statuses = {other: (1 << width) - 1 if level else 0 for other, width in types}
                statuses[name] = free if level else ~free & ((1 << size) - 1)
                requests = {other: max_free_run(statuses[other], width, free_level=level)
                            for other, width in types}
                for _ in range(periods):
                    await bench.step(statuses, requests)


@cocotb.test()
async def seeded_random(dut):
    """Random words at several densities and run structures, new every clock."""
    bench = SharedBench(dut)
    await bench.start()
    await bench.run(int(os.environ.get("TB_RANDOM_VECTORS", "10000")), bench.random_statuses)


@cocotb.test()
async def stalls_and_resets(dut):
    """``enable`` and ``valid`` low at random (the unit holds; a period served without
    ``valid`` keeps the old answers) and reset pulsed at random clocks."""
    bench = SharedBench(dut)
    await bench.start()
    await bench.run(1000, bench.random_statuses, resets=True, stalls=True)
