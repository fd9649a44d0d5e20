"""The arbiter RTL against its cycle-exact model in Amaranth's simulator (no HDL simulator).

The same driver and phases as the cocotb bench (``tb/test_arbiter.py``): the directed cases
on several parameter sets, seeded random phases, the documented latencies, and the quick
check that a wrong model is caught.
"""

import random

import pytest
from amaranth.back import verilog
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from hw.arbiter import ArbiterConfig, DelayFactorArbiter, WriteOp
from model.arbiter import (
    DEFAULT_TABLE,
    ArbiterInputs,
    ArbiterOutputs,
    DelayFactorArbiterModel,
)
from model.arbiter import WriteOp as ModelWriteOp
from tb.test_arbiter import ArbiterDriver, Phase, Write, directed_cases, random_phases


def simulate(config: ArbiterConfig, phases, *, seed: int = 1, model=None):
    """Drive ``phases`` into the RTL of ``config`` and step the model alongside.

    Returns the misses ``(clock, inputs, actual, expected)`` and the outputs of every clock.
    """
    top = Module()
    top.submodules.dut = dut = config.component()
    top.domains.sync = domain = ClockDomain()
    model = config.model() if model is None else model
    driver = ArbiterDriver(config, random.Random(seed))
    misses, trace = [], []

    async def bench(ctx):
        clock = 0
        for phase in phases:
            for inputs, reset in driver.phase_clocks(phase):
                ctx.set(dut.write.valid, inputs.write_valid)
                ctx.set(dut.write.payload.slot, inputs.write_slot)
                ctx.set(dut.write.payload.op, WriteOp(inputs.write_op))
                ctx.set(dut.write.payload.job_class, inputs.write_job_class)
                ctx.set(dut.write.payload.weight, inputs.write_weight)
                ctx.set(dut.request, inputs.request)
                ctx.set(dut.grant.ready, inputs.grant_ready)
                ctx.set(domain.rst, reset)
                actual = ArbiterOutputs(ctx.get(dut.write.ready), ctx.get(dut.grant.valid),
                                        ctx.get(dut.grant.payload.slot),
                                        ctx.get(dut.grant.payload.job_class))
                expected = model.step(inputs, reset=reset)
                if actual != expected:
                    misses.append((clock, inputs, actual, expected))
                trace.append(actual)
                driver.clock_done(actual.write_ready)
                clock += 1
                await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return misses, trace


CONFIGS = [
    ArbiterConfig(),
    ArbiterConfig(4, 2, 0, tie_break="index"),
    ArbiterConfig(5, 3, 16, ((1, 4096), (3, 2048), (8, 256), (256, 64)), "history"),
    ArbiterConfig(6, 3, 0, decay=False),
    ArbiterConfig(7, 2, 2, tie_break="index", decay=False, weight_bits=12),
    ArbiterConfig(1, 1, 8),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda config: config.name)
def test_directed_cases(config):
    for case, phases in directed_cases(config):
        misses, _ = simulate(config, phases)
        assert misses[:3] == [], case


@pytest.mark.parametrize("config", CONFIGS[:5], ids=lambda config: config.name)
def test_seeded_random(config):
    rng = random.Random(config.name)
    misses, trace = simulate(config, list(random_phases(config, rng, 1500)), seed=7)
    assert misses[:3] == []
    assert sum(outputs.grant_valid for outputs in trace) > 100


def _load(slot, job_class, weight):
    return Write(slot, ModelWriteOp.LOAD, job_class, weight)


def test_write_and_grant_latency():
    # A write taken in clock 0 drops ready for 9 clocks; W takes effect in clock 10, so a
    # request held from the start is granted (seen) from clock 11; then one grant per clock.
    config = ArbiterConfig(2, 1)
    _, trace = simulate(config, [Phase(1, (_load(0, 0, 10),), request=1), Phase(14, request=1)])
    assert [outputs.write_ready for outputs in trace[:11]] == [1] + [0] * 9 + [1]
    assert [outputs.grant_valid for outputs in trace] == [0] * 11 + [1] * 4


def test_grant_held_under_back_pressure():
    config = ArbiterConfig(2, 1)
    phases = [Phase(12, (_load(0, 0, 10), _load(1, 0, 10)), request=0),
              Phase(12, request=0), Phase(3, request=3), Phase(5, request=0, grant_ready=0.0)]
    _, trace = simulate(config, phases)
    held = trace[-5:]
    assert all(outputs.grant_valid for outputs in held)
    assert len(set(held)) == 1


def test_a_wrong_model_is_caught():
    # The harness bites: the seed's table in the RTL, another table in the model.
    config = ArbiterConfig(3, 1)
    wrong = DelayFactorArbiterModel(tasks=3, classes=1,
                                    table=((1, 256), (2, 128), (4, 64), (8, 32), (256, 8)))
    assert wrong.params.table != DEFAULT_TABLE
    phases = [Phase(32, (_load(0, 0, 200), _load(1, 0, 40), _load(2, 0, 15))),
              Phase(100, request=7)]
    assert simulate(config, phases)[0] == []
    assert simulate(config, phases, model=wrong)[0] != []


def test_model_inputs_default_to_idle():
    model = DelayFactorArbiterModel()
    assert model.step(ArbiterInputs()) == ArbiterOutputs(1, 0, 0, 0)


def test_largest_arbiter_elaborates():
    text = verilog.convert(DelayFactorArbiter(64, 16, frac_bits=16), name="arbiter_t64",
                           emit_src=False)
    assert "module arbiter_t64" in text
