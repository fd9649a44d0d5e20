"""Quick checks of the max-free-block RTL in Amaranth's own simulator (no HDL simulator needed).

Exhaustive for small ``n`` over every variant, free level and latency; directed corner cases
and random words with reset pulses for wider words; the shared unit over a few schedules; and
the elaboration of the widest full circuit.
"""

import itertools
import random

import pytest
from amaranth.back import verilog
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from hw.flow.catalog import BlockConfig, SharedConfig
from hw.maxblock import MaxFreeBlock
from model.maxblock import (
    PipelineModel,
    SharedSchedule,
    default_samples,
    exact_max_latency,
    first_fit_max_latency,
)
from tb.stimulus import directed_inputs, exhaustive_inputs, random_free_masks, random_inputs


def simulate(config: BlockConfig, inputs, *, resets=frozenset(), stalls=None):
    """Run ``inputs`` (tuples in the order of ``config.inputs``) through the RTL, one per
    clock; return the (index, got, expected) misses.

    ``resets`` holds the indices of the clocks in which the synchronous reset is asserted;
    ``stalls`` maps a clock index to its ``(valid, enable)`` (default ``(1, 1)``). The data
    outputs are compared from the first clock the model knows them (they have no reset), and
    ``result_valid`` in every clock.
    """
    top = Module()
    top.submodules.dut = dut = config.component()
    if config.latency:
        top.domains.sync = domain = ClockDomain()
    model = PipelineModel(config.reference(), config.latency, reset_output=None)
    stalls = stalls or {}
    misses = []

    async def bench(ctx):
        for index, values in enumerate(inputs):
            reset = index in resets and bool(config.latency)
            valid, enable = stalls.get(index, (1, 1))
            for port, value in zip(config.inputs, values, strict=True):
                ctx.set(getattr(dut, port), value)
            if config.latency:
                ctx.set(domain.rst, reset)
                ctx.set(dut.valid, valid)
                ctx.set(dut.enable, enable)
            expected, expected_valid = model.cycle(*values, valid=valid, enable=enable,
                                                   reset=reset)
            actual = tuple(ctx.get(getattr(dut, port)) for port in config.outputs)
            if expected is not None and actual != expected:
                misses.append((index, actual, expected))
            if config.latency and ctx.get(dut.result_valid) != expected_valid:
                misses.append((index, "result_valid", ctx.get(dut.result_valid),
                               expected_valid))
            if config.latency:
                await ctx.tick()
            else:
                await ctx.delay(1e-9)

    sim = Simulator(top)
    if config.latency:
        sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return misses


def small_configs():
    for free_level, latency in itertools.product((0, 1), (0, 1, 3)):
        yield BlockConfig("full", 10, free_level, latency)
        yield BlockConfig("grouped", 10, free_level, latency, groups=5)
        yield BlockConfig("grouped", 9, free_level, latency, groups=3)
        yield BlockConfig("sampled", 10, free_level, latency, samples=tuple(default_samples(10)))
        yield BlockConfig("sampled", 10, free_level, latency, samples=(0, 3, 9))
        yield BlockConfig("sampled", 10, free_level, latency, samples=(2,))
    for n in (1, 2, 3, 7, 8):
        for free_level, latency in itertools.product((0, 1), range(exact_max_latency(n) + 1)):
            yield BlockConfig("exact", n, free_level, latency)
    # Nine blocks: the smallest tree with nodes below the root, which latencies 0 and 1 build
    # for area (serial comparisons) and a pipeline builds for speed (side by side).
    for free_level, latency in ((1, 0), (0, 1), (1, exact_max_latency(9))):
        yield BlockConfig("exact", 9, free_level, latency)
    # Parts joined: 4 + 1 blocks at every latency, 8 + 2 + 1 fully pipelined.
    for latency in range(exact_max_latency(5) + 1):
        yield BlockConfig("exact", 5, latency % 2, latency)
    yield BlockConfig("exact", 11, 0, exact_max_latency(11))
    # The first fit alone (the allocator's circuit): every latency, both free levels.
    for n in (1, 2, 3, 5, 8):
        for free_level, latency in itertools.product((0, 1), range(first_fit_max_latency() + 1)):
            yield BlockConfig("first_fit", n, free_level, latency)


@pytest.mark.parametrize("config", list(small_configs()), ids=lambda config: config.name)
def test_exhaustive_small(config):
    assert simulate(config, exhaustive_inputs(config)) == []


WIDE = [
    BlockConfig("full", 64, 1, 3),
    BlockConfig("full", 33, 0, 1),
    BlockConfig("grouped", 96, 0, 3, groups=24),
    BlockConfig("sampled", 128, 1, 1, samples=tuple(default_samples(128))),
    BlockConfig("sampled", 100, 0, 0, samples=tuple(default_samples(100, exclude_primes=True))),
    BlockConfig("exact", 100, 0, 0),
    BlockConfig("exact", 128, 1, 6),
    BlockConfig("exact", 256, 1, exact_max_latency(256)),
    BlockConfig("first_fit", 128, 1, 2),
    BlockConfig("first_fit", 100, 0, 3),
    BlockConfig("first_fit", 48, 1, 0),
    BlockConfig("first_fit", 64, 0, 1),
]


@pytest.mark.parametrize("config", WIDE, ids=lambda config: config.name)
def test_directed_and_random_wide(config):
    rng = random.Random(config.name)
    inputs = directed_inputs(config) + random_inputs(config, 500, rng)
    resets = frozenset(rng.sample(range(len(inputs)), 10))
    # Stalls and gaps in a tenth of the clocks each.
    stalls = {index: (int(rng.random() >= 0.1), int(rng.random() >= 0.1))
              for index in range(len(inputs))}
    assert simulate(config, inputs, resets=resets, stalls=stalls) == []


def test_stalls_hold_everything_and_reset_clears_only_valid():
    # Latency 3: a word enters, the pipeline is stalled for two clocks (the word must wait,
    # result_valid must stay low), then runs; a reset in flight drops the word's valid but
    # the data keep moving (no reset on the data registers).
    config = BlockConfig("full", 8, 1, 3)
    words = [(0b0000_1111,), (0b0011_1111,), (0,), (0,), (0,), (0,), (0,), (0,)]
    stalls = {0: (1, 1), 1: (0, 0), 2: (0, 0), 3: (0, 1), 4: (0, 1), 5: (0, 1)}
    assert simulate(config, words, stalls=stalls) == []
    model = PipelineModel(config.reference(), 3, reset_output=None)
    seen = [model.cycle(*word, valid=stalls.get(i, (1, 1))[0], enable=stalls.get(i, (1, 1))[1])
            for i, word in enumerate(words)]
    assert [valid for _, valid in seen] == [0, 0, 0, 0, 0, 1, 0, 0]
    assert seen[5][0] == (4,)                       # the word of clock 0, after 3 + 2 clocks
    resets = frozenset({1})
    assert simulate(config, words, resets=resets) == []
    model = PipelineModel(config.reference(), 3, reset_output=None)
    seen = [model.cycle(*word, reset=i in resets) for i, word in enumerate(words)]
    assert [valid for _, valid in seen] == [0, 0, 0, 0, 0, 1, 1, 1]
    assert seen[3] == ((4,), 0)                     # the data came through without valid


def test_a_wrong_model_is_caught():
    # The harness bites: the same RTL against a model that is off by one somewhere.
    config = BlockConfig("full", 8, 1, 1)

    class OffByOne(BlockConfig):
        def reference(self):
            exact = super().reference()
            return lambda status: (exact(status)[0] - (status == 0xFF),)

    wrong = OffByOne("full", 8, 1, 1)
    inputs = exhaustive_inputs(config) + [(0,)]   # one more clock to see the last result
    assert simulate(config, inputs) == []
    misses = simulate(wrong, inputs)
    assert misses == [(0xFF + 1, (8,), (7,))]     # seen one clock later, as the latency says


def test_widest_full_circuit_elaborates():
    text = verilog.convert(MaxFreeBlock(256, latency=3), name="maxfreeblock_n256")
    assert "module maxfreeblock_n256" in text


@pytest.mark.parametrize("config", [
    SharedConfig(SharedSchedule(), 1, False),
    SharedConfig(SharedSchedule(), 0, True),
    SharedConfig(SharedSchedule(((("a", 5), ("b", 3)), (("c", 8),), (("d", 1), ("e", 2))),
                                width=8), 0, False),
    SharedConfig(SharedSchedule(((("x", 7),),), width=9), 1, True),
    # Embodiment 7's unit pipelined: the packed word registered; the exact tree also cut.
    SharedConfig(SharedSchedule(), 1, False, 1),
    SharedConfig(SharedSchedule(), 1, True, 1),
    SharedConfig(SharedSchedule(), 0, True, 2),
    SharedConfig(SharedSchedule(), 1, True, 3),
    SharedConfig(SharedSchedule(((("a", 5), ("b", 3)), (("c", 8),), (("d", 1), ("e", 2))),
                                width=8), 1, True, 2),
    # A type whose field is one tree node (sgpr2, blocks 4..7) whose first block starts no
    # other type's join: its request was first asked for after the tree was built, and the
    # exact unit failed to elaborate (KeyError; the dispatcher's shared view of a 3-PEU GPU
    # with 3 VGPR, 4 SGPR and 8 LDS blocks, and of a 4-PEU one with 6, 4 and 12).
    SharedConfig(SharedSchedule(((("vgpr0", 3), ("vgpr1", 3)), (("vgpr2", 3), ("sgpr0", 4)),
                                 (("sgpr1", 4), ("sgpr2", 4)), (("lds", 8),)), width=8),
                 1, True),
    SharedConfig(SharedSchedule(((("vgpr0", 3), ("vgpr1", 3)), (("vgpr2", 3), ("sgpr0", 4)),
                                 (("sgpr1", 4), ("sgpr2", 4)), (("lds", 8),)), width=8),
                 0, True, 2),
], ids=lambda config: config.name)
def test_shared_unit(config):
    rng = random.Random(config.name)
    top = Module()
    top.submodules.dut = dut = config.component()
    top.domains.sync = domain = ClockDomain()
    model = config.model()
    types = config.schedule.types
    ports = ["length", "result_valid"] + (["start", "fit", "fit_start"] if config.exact else [])
    misses = []

    async def bench(ctx):
        for clock in range(400):
            # Every fourth clock all types are wholly free: a run leaking over a boundary
            # would then read longer than its field.
            masks = ({name: (1 << size) - 1 for name, size in types.items()} if clock % 4 == 0
                     else {name: random_free_masks(size, 1, rng)[0]
                           for name, size in types.items()})
            statuses = {name: mask if config.free_level else ~mask & ((1 << types[name]) - 1)
                        for name, mask in masks.items()}
            requests = {name: rng.randint(0, size) for name, size in types.items()}
            for name, word in statuses.items():
                ctx.set(dut.status[name], word)
                if config.exact:
                    ctx.set(dut.request[name], requests[name])
            reset = rng.random() < 0.02
            valid, enable = int(rng.random() >= 0.1), int(rng.random() >= 0.1)
            ctx.set(domain.rst, reset)
            ctx.set(dut.valid, valid)
            ctx.set(dut.enable, enable)
            expected = model.step(statuses, requests if config.exact else None, valid=valid,
                                  enable=enable, reset=reset)
            for port in ports:
                for name in types:
                    actual = ctx.get(getattr(dut, port)[name])
                    if expected[port][name] is not None and actual != expected[port][name]:
                        misses.append((clock, port, name, actual, expected[port][name]))
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert misses == []


def test_shared_exact_fit_in_a_half_that_another_type_reads_whole():
    # The seed's schedule packs vgpr (128 blocks) in period 0 and sgpr (64) in period 1, so
    # the tree node of blocks 0..63 is both sgpr's whole field and vgpr's left half. With the
    # left half occupied and the right half free, vgpr's first fit of 64 blocks is at 64,
    # which needs that node's "nothing fits" answer (64) in seven bits, not sgpr's six.
    config = SharedConfig(SharedSchedule(), 1, True)
    top = Module()
    top.submodules.dut = dut = config.component()
    top.domains.sync = ClockDomain()
    model = config.model()
    statuses = {"vgpr": ((1 << 64) - 1) << 64, "sgpr": 0, "lds": 0}
    requests = {"vgpr": 64, "sgpr": 1, "lds": 1}
    seen = []

    async def bench(ctx):
        for _ in range(3):
            for name, word in statuses.items():
                ctx.set(dut.status[name], word)
                ctx.set(dut.request[name], requests[name])
            expected = model.step(statuses, requests)
            seen.append((ctx.get(dut.fit.vgpr), ctx.get(dut.fit_start.vgpr),
                         expected["fit"]["vgpr"], expected["fit_start"]["vgpr"]))
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen[1] == (1, 64, 1, 64)
