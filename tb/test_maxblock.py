"""cocotb bench: a max-free-block circuit against its golden model, clock by clock.

The block and its parameters arrive as JSON in ``MAXBLOCK_CONFIG`` (see
:class:`hw.flow.catalog.BlockConfig`); ``tests/test_cocotb_maxblock.py`` builds one bench per
parameter set and simulator. The driver presents new inputs every clock (or holds them for a
random number of clocks); the scoreboard compares every output in every clock with
:class:`model.maxblock.PipelineModel`, which carries the reference function through the
block's latency and its reset.

Environment:

``TB_SEED``
    Seed of the random stimulus (default 2026; ``random`` draws a fresh one). It is printed,
    and a failure message says how to replay it.
``TB_RANDOM_VECTORS``
    Number of random inputs (default 10000).
"""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from hw.flow.catalog import BlockConfig
from model.maxblock import PipelineModel
from tb.stimulus import bench_seed, directed_inputs, exhaustive_inputs, random_inputs

EXHAUSTIVE_MAX_N = 12


def _unsigned(value) -> int:
    # A one-bit port reads as a Logic, a wider one as a LogicArray.
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


class MaxBlockBench:
    """Driver, monitor and in-order scoreboard around one DUT."""

    def __init__(self, dut):
        self.dut = dut
        self.config = BlockConfig.from_json(os.environ["MAXBLOCK_CONFIG"])
        self.model = PipelineModel(self.config.reference(), self.config.latency,
                                   reset_output=self.config.reset_output)
        self.seed = bench_seed()
        self.rng = random.Random(self.seed)
        self.checked = 0
        dut._log.info("%s, seed %d", self.config.name, self.seed)

    async def reset(self):
        """Start the clock and hold reset for two clocks (nothing to do when combinational)."""
        if not self.config.latency:
            return
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns").start())
        for port in self.config.inputs:
            getattr(self.dut, port).value = 0
        self.dut.rst.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        self.model.reset()

    async def run(self, inputs, *, hold: bool = False, resets: bool = False):
        """Drive ``inputs`` (tuples in the order of ``config.inputs``), one clock each, and
        check every output in every clock.

        ``hold`` keeps some inputs for a few clocks; ``resets`` pulses reset at random clocks.
        """
        config, dut = self.config, self.dut
        for values in inputs:
            for _ in range(self.rng.randint(1, 3) if hold else 1):
                reset = bool(resets and config.latency and self.rng.random() < 0.02)
                for port, value in zip(config.inputs, values, strict=True):
                    getattr(dut, port).value = value
                if config.latency:
                    dut.rst.value = int(reset)
                await ReadOnly()
                expected = self.model.step(*values, reset=reset)
                actual = tuple(_unsigned(getattr(dut, port).value) for port in config.outputs)
                assert actual == expected, (
                    f"{config.name}: in clock {self.checked} with "
                    + ", ".join(f"{port} = {value:#x}"
                                for port, value in zip(config.inputs, values, strict=True))
                    + f" at the inputs, {', '.join(config.outputs)} = {actual}; the model says "
                    f"{expected}. Replay with: TB_SEED={self.seed} make regress "
                    f"SIM={os.environ.get('TB_SIMULATOR', '')} K={config.name}"
                )
                self.checked += 1
                if config.latency:
                    await RisingEdge(dut.clk)
                else:
                    await Timer(1, unit="ns")
        if config.latency:
            dut.rst.value = 0


@cocotb.test()
async def directed(dut):
    """Corner cases: ends, alternation, every run length, group edges, sample points (and,
    for the exact circuit, the requests 0, 1, n and either side of the longest run)."""
    bench = MaxBlockBench(dut)
    await bench.reset()
    await bench.run(directed_inputs(bench.config))


@cocotb.test()
async def exhaustive(dut):
    """Every status word (and every request), when there are few enough of them."""
    bench = MaxBlockBench(dut)
    if bench.config.n > EXHAUSTIVE_MAX_N:
        dut._log.info("n = %d: not exhaustive (only n <= %d is)", bench.config.n,
                      EXHAUSTIVE_MAX_N)
        return
    await bench.reset()
    await bench.run(exhaustive_inputs(bench.config))


@cocotb.test()
async def seeded_random(dut):
    """Seeded random words at several densities, a new word every clock."""
    bench = MaxBlockBench(dut)
    await bench.reset()
    count = int(os.environ.get("TB_RANDOM_VECTORS", "10000"))
    await bench.run(random_inputs(bench.config, count, bench.rng))


@cocotb.test()
async def held_inputs_and_resets(dut):
    """Words held for several clocks, and reset pulsed mid-stream (registered blocks)."""
    bench = MaxBlockBench(dut)
    await bench.reset()
    await bench.run(random_inputs(bench.config, 500, bench.rng), hold=True, resets=True)
