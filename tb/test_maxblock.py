"""cocotb bench: a max-free-block circuit against its golden model, clock by clock.

The block and its parameters arrive as JSON in ``MAXBLOCK_CONFIG`` (see
:class:`hw.flow.catalog.BlockConfig`); ``tests/test_cocotb_maxblock.py`` builds one bench per
parameter set and simulator. The driver presents new inputs every clock (or holds them, or
stalls the pipeline); two checkers watch every clock:

* the cycle model, :class:`model.maxblock.PipelineModel`, which carries the reference function
  through the block's latency, its stall interface (``valid``, ``enable``, ``result_valid``)
  and its reset: every output and ``result_valid`` must match it in every clock (the data
  outputs from the first clock the model knows them: the data registers have no reset);
* an in-order scoreboard of transactions, independent of that model: each word accepted
  (``valid`` and ``enable`` high) must come out once, in order, in a clock with
  ``result_valid`` and ``enable`` high, with the reference function's answer; a reset drops
  the words in flight, and nothing may come out that was not put in.

Environment:

``TB_SEED``
    Seed of the random stimulus (default 2026; ``random`` draws a fresh one). It is printed,
    and a failure message says how to replay it.
``TB_RANDOM_VECTORS``
    Number of random inputs (default 10000).
"""

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from hw.flow.catalog import BlockConfig
from model.maxblock import PipelineModel
from tb.stimulus import bench_seed, directed_inputs, exhaustive_inputs, random_inputs

EXHAUSTIVE_MAX_N = 12

#: The block under test, read when cocotb imports the bench (None outside a simulation).
CONFIG = (BlockConfig.from_json(os.environ["MAXBLOCK_CONFIG"])
          if "MAXBLOCK_CONFIG" in os.environ else None)


def _unsigned(value) -> int:
    # A one-bit port reads as a Logic, a wider one as a LogicArray.
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


#: Clocks an input may wait to be accepted before the run fails (the stall draws accept one
#: in a few clocks on average).
STALL_CLOCKS = 1000


class Stalls:
    """Random ``enable`` and ``valid`` for a pipelined block: ``enable`` low in bursts (a
    stalled consumer), ``valid`` low in single clocks and bursts (a producer with gaps)."""

    def __init__(self, rng: random.Random, *, stall: float = 0.15, bubble: float = 0.15):
        self._rng, self._stall, self._bubble = rng, stall, bubble
        self._stalled = 0

    def draw(self) -> tuple[int, int]:
        """``(enable, valid)`` for the next clock."""
        rng = self._rng
        if self._stalled:
            self._stalled -= 1
        elif rng.random() < self._stall:
            self._stalled = rng.choice((0, 0, 1, 2, 5))
        enable = int(not self._stalled and rng.random() >= self._stall / 4)
        return enable, int(rng.random() >= self._bubble)


class MaxBlockBench:
    """Driver, monitor, cycle model and transaction scoreboard around one DUT."""

    def __init__(self, dut):
        self.dut = dut
        self.config = CONFIG
        self.reference = self.config.reference()
        # The data registers have no reset: at power-on the model does not know them.
        self.model = PipelineModel(self.reference, self.config.latency, reset_output=None)
        self.seed = bench_seed()
        self.rng = random.Random(self.seed)
        self.checked = 0
        self.in_flight = deque()
        self.delivered = 0
        dut._log.info("%s, seed %d", self.config.name, self.seed)

    def _junk(self) -> tuple[int, ...]:
        """Legal inputs that the block must ignore (presented with ``valid`` or ``enable``
        low)."""
        n = self.config.n
        status = self.rng.getrandbits(n)
        return (status, self.rng.randint(0, n)) if "request" in self.config.inputs else (status,)

    async def start(self):
        """Start the clock and hold reset for two clocks (nothing to do when combinational).

        A bench may follow another in the same simulation, so nothing is checked before the
        reset; after it the DUT holds no valid word, as a fresh model does, and its data
        registers hold what the model does not know."""
        if not self.config.latency:
            return
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns").start())
        for port in self.config.inputs:
            getattr(self.dut, port).value = 0
        self.dut.valid.value = 0
        self.dut.enable.value = 1
        self.dut.rst.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        self.model = PipelineModel(self.reference, self.config.latency, reset_output=None)
        self.in_flight.clear()

    def _fail(self, what: str, values, actual, expected) -> str:
        config = self.config
        inputs = ", ".join(f"{port} = {value:#x}"
                           for port, value in zip(config.inputs, values, strict=True))
        return (f"{config.name}: in clock {self.checked} with {inputs} at the inputs, {what} "
                f"{actual}; expected {expected}. Replay with: TB_SEED={self.seed} make regress "
                f"SIM={os.environ.get('TB_SIMULATOR', '')} K={config.name}")

    async def clock(self, values, *, valid: int = 1, enable: int = 1, reset: bool = False):
        """One clock: present ``values`` (in the order of ``config.inputs``) and the stall
        inputs, check every output, then let the clock edge come."""
        config, dut = self.config, self.dut
        for port, value in zip(config.inputs, values, strict=True):
            getattr(dut, port).value = value
        if config.latency:
            dut.valid.value = valid
            dut.enable.value = enable
            dut.rst.value = int(reset)
        await ReadOnly()
        expected, expected_valid = self.model.cycle(*values, valid=valid, enable=enable,
                                                    reset=reset)
        actual = None
        if expected is not None or (config.latency and expected_valid):
            actual = tuple(_unsigned(getattr(dut, port).value) for port in config.outputs)
        if expected is not None:
            assert actual == expected, self._fail(f"{', '.join(config.outputs)} =", values,
                                                  actual, expected)
        if config.latency:
            result_valid = _unsigned(dut.result_valid.value)
            assert result_valid == expected_valid, self._fail("result_valid =", values,
                                                              result_valid, expected_valid)
            self._score(values, valid, enable, reset, result_valid, actual)
        self.checked += 1
        if config.latency:
            await RisingEdge(dut.clk)
        else:
            await Timer(1, unit="ns")

    def _score(self, values, valid, enable, reset, result_valid, actual):
        """The transaction scoreboard: in order, once each, nothing extra."""
        if result_valid and enable:
            assert self.in_flight, self._fail("a result came out with nothing in flight:",
                                              values, actual, "none")
            word = self.in_flight.popleft()
            expected = self.reference(*word)
            assert actual == expected, self._fail(
                f"the result of the word {tuple(hex(value) for value in word)} is", values,
                actual, expected)
            self.delivered += 1
        if valid and enable:
            self.in_flight.append(tuple(values))
        if reset:
            self.in_flight.clear()
        assert len(self.in_flight) <= self.config.latency, self._fail(
            "words in flight:", values, len(self.in_flight), f"at most {self.config.latency}")

    async def run(self, inputs, *, hold: bool = False, resets: bool = False,
                  stalls: Stalls | None = None):
        """Drive ``inputs`` (tuples in the order of ``config.inputs``), checking every clock.

        ``hold`` keeps each input for one to three clocks; ``resets`` pulses reset at random
        clocks; ``stalls`` (pipelined blocks) draws ``enable`` and ``valid`` each clock, and
        an input is presented until a clock accepts it, with ignored junk in the clocks that
        do not.
        """
        latency = self.config.latency
        for values in inputs:
            for _ in range(self.rng.randint(1, 3) if hold else 1):
                for waited in range(STALL_CLOCKS + 1):
                    # A bound, so no run can hang: an input not accepted (valid and enable
                    # both high) within STALL_CLOCKS clocks fails the run.
                    assert waited < STALL_CLOCKS, (
                        f"{self.config.name}: clock {self.checked}, phase 'input "
                        f"{tuple(hex(v) for v in values)}': not accepted in {STALL_CLOCKS} "
                        f"clocks, waiting for valid & enable (seed {self.seed})")
                    enable, valid = stalls.draw() if stalls and latency else (1, 1)
                    accepted = enable and valid
                    reset = bool(resets and latency and self.rng.random() < 0.02)
                    await self.clock(values if accepted or self.rng.random() < 0.5
                                     else self._junk(), valid=valid, enable=enable, reset=reset)
                    if accepted:
                        break
        if latency:
            self.dut.rst.value = 0


@cocotb.test()
async def directed(dut):
    """Corner cases: ends, alternation, every run length, group edges, sample points (and,
    for the exact circuit, the requests 0, 1, n and either side of the longest run)."""
    bench = MaxBlockBench(dut)
    await bench.start()
    await bench.run(directed_inputs(bench.config))


@cocotb.skipif(CONFIG is None or CONFIG.n > EXHAUSTIVE_MAX_N,
               reason=f"only blocks of at most {EXHAUSTIVE_MAX_N} blocks are run exhaustively")
@cocotb.test()
async def exhaustive(dut):
    """Every status word (and every request)."""
    bench = MaxBlockBench(dut)
    await bench.start()
    await bench.run(exhaustive_inputs(bench.config))


@cocotb.test()
async def seeded_random(dut):
    """Seeded random words at several densities, a new word every clock."""
    bench = MaxBlockBench(dut)
    await bench.start()
    count = int(os.environ.get("TB_RANDOM_VECTORS", "10000"))
    await bench.run(random_inputs(bench.config, count, bench.rng))


@cocotb.test()
async def stalls_holds_and_resets(dut):
    """Words held for several clocks, the pipeline stalled (``enable`` low) and fed gaps
    (``valid`` low) at random, and reset pulsed mid-stream; junk inputs in the clocks that do
    not take a word."""
    bench = MaxBlockBench(dut)
    await bench.start()
    count = max(int(os.environ.get("TB_RANDOM_VECTORS", "10000")) // 10, 50)
    await bench.run(random_inputs(bench.config, count, bench.rng), hold=True, resets=True,
                    stalls=Stalls(bench.rng))
    if bench.config.latency:
        assert bench.delivered > count // 4, (
            f"{bench.config.name}: only {bench.delivered} results came out for {count} words")
