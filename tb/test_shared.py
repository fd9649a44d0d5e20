"""cocotb bench: the time-multiplexed unit (embodiment 7) against its model, clock by clock.

The parameters arrive as JSON in ``MAXBLOCK_CONFIG`` (see :class:`hw.flow.catalog.SharedConfig`).
Every clock the driver presents new status words for every resource type (each type's word
is only read in its own period); the scoreboard compares every ``length``, ``valid`` and
``start`` field in every clock with :class:`model.maxblock.SharedMaxFreeBlockModel`.
``TB_SEED`` and ``TB_RANDOM_VECTORS`` work as in ``tb/test_maxblock.py``.
"""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from hw.flow.catalog import SharedConfig
from tb.stimulus import bench_seed, packed_fields, random_free_masks


class SharedBench:
    """Driver, monitor and in-order scoreboard around one shared unit."""

    def __init__(self, dut):
        self.dut = dut
        self.config = SharedConfig.from_json(os.environ["MAXBLOCK_CONFIG"])
        self.model = self.config.model()
        self.seed = bench_seed()
        self.rng = random.Random(self.seed)
        self.clock = 0
        self.outputs = ["length", "valid"] + (["start"] if self.config.exact else [])
        # Where each type's field sits in the flattened ports.
        self.fields = {port: packed_fields(layout)
                       for port, layout in self.config.layouts().items()}
        dut._log.info("%s, seed %d", self.config.name, self.seed)

    async def reset(self):
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns").start())
        self.dut.status.value = 0
        self.dut.rst.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        self.model.reset()

    def _pack(self, statuses):
        fields = self.fields["status"]
        return sum(statuses[name] << offset for name, (offset, _) in fields.items())

    def _unpack(self, port, value):
        return {name: (value >> offset) & ((1 << width) - 1)
                for name, (offset, width) in self.fields[port].items()}

    async def run(self, clocks, make_statuses, *, resets=False):
        """``clocks`` clocks; ``make_statuses()`` gives each clock's ``{type: word}``."""
        dut, config = self.dut, self.config
        for _ in range(clocks):
            statuses = make_statuses()
            reset = resets and self.rng.random() < 0.02
            dut.status.value = self._pack(statuses)
            dut.rst.value = int(reset)
            await ReadOnly()
            expected = self.model.step(statuses, reset=reset)
            raw = {port: getattr(dut, port).value for port in self.outputs}
            assert all(value.is_resolvable for value in raw.values()), (
                f"{config.name}: in clock {self.clock}, unresolved outputs {raw}")
            actual = {port: self._unpack(port, value.to_unsigned()) for port, value in raw.items()}
            assert actual == expected, (
                f"{config.name}: in clock {self.clock} with status "
                f"{ {name: hex(word) for name, word in statuses.items()} }: outputs {actual}, "
                f"the model says {expected}. Replay with: TB_SEED={self.seed} make regress "
                f"SIM={os.environ.get('TB_SIMULATOR', '')} K={config.name}")
            self.clock += 1
            await RisingEdge(dut.clk)
        dut.rst.value = 0

    def random_statuses(self):
        types = self.config.schedule.types
        masks = {name: random_free_masks(size, 1, self.rng)[0] for name, size in types.items()}
        full = {name: (1 << size) - 1 for name, size in types.items()}
        if self.config.free_level:
            return masks
        return {name: ~mask & full[name] for name, mask in masks.items()}


@cocotb.test()
async def boundaries(dut):
    """Every type all free and all occupied, in every combination of neighbours: a run that
    leaked across a field boundary would show as a length longer than its field."""
    bench = SharedBench(dut)
    await bench.reset()
    types = list(bench.config.schedule.types.items())
    periods = len(bench.config.schedule.periods)
    patterns = []
    for bits in range(1 << min(len(types), 10)):
        patterns.append({name: ((1 << size) - 1) * ((bits >> index) & 1)
                         for index, (name, size) in enumerate(types)})
    for pattern in patterns:
        for _ in range(periods):              # hold each pattern for a whole schedule
            await bench.run(1, lambda pattern=pattern: pattern)


@cocotb.test()
async def seeded_random(dut):
    """Random words at several densities and run structures, new every clock."""
    bench = SharedBench(dut)
    await bench.reset()
    await bench.run(int(os.environ.get("TB_RANDOM_VECTORS", "10000")), bench.random_statuses)


@cocotb.test()
async def resets_mid_schedule(dut):
    """Reset pulsed at random clocks: the period counter and every register restart."""
    bench = SharedBench(dut)
    await bench.reset()
    await bench.run(1000, bench.random_statuses, resets=True)
