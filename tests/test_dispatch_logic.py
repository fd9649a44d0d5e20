"""Small parts of the RTL dispatcher checked alone under Amaranth's simulator: the admission's
divider-free ceiling division (exhaustive) and the pipelined decision's score pipeline (its
order of the APs against a re-derivation from the model's definition, and its latency)."""

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.dispatch.logic import ceil_div_limited
from hw.dispatch.params import DispatcherParams
from hw.dispatch.pipeline import ScorePipeline
from hw.dispatch.selector import COMBINED, INSTRUCTION, LOWEST, RESOURCE
from model.dispatch.config import PRESETS, GpuConfig, with_policy


def test_ceil_div_limited_is_the_saturated_ceiling_everywhere():
    dividend, divisor = Signal(9), Signal(5)
    quotient = Signal(6)
    m = Module()
    m.d.comb += quotient.eq(ceil_div_limited(dividend, divisor, 17))
    wrong = []

    async def bench(ctx):
        for a in range(1 << 9):
            for b in range(1, 1 << 5):
                ctx.set(dividend, a)
                ctx.set(divisor, b)
                if ctx.get(quotient) != min(-(-a // b), 17):
                    wrong.append((a, b, ctx.get(quotient)))
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, wrong[:5]


GPU = GpuConfig(aps=4, peus=2, vgpr=16, sgpr=8, lds=8, wave_slots=4, priorities=2)


def _reference(gpu, choice, view, slots, history, weights, w_r, w_i):
    """``beats[a][b]`` from the model's AP choice: the best key wins, the lower index among
    equals; the combined score's maxima over every AP."""
    P, Q = gpu.aps, gpu.peus
    resource = [weights[0] * sum(view["vgpr"][a * Q:(a + 1) * Q])
                + weights[1] * sum(view["sgpr"][a * Q:(a + 1) * Q])
                + weights[2] * view["lds"][a] + weights[3] * sum(slots[a]) for a in range(P)]
    top_r, top_b = max(max(resource), 1), max(max(history), 1)
    combined = [w_r * r * top_b - w_i * b * top_r
                for r, b in zip(resource, history, strict=True)]
    key = {RESOURCE: resource, INSTRUCTION: [-b for b in history], COMBINED: combined,
           LOWEST: [0] * P}[choice]
    return [[a == b or (key[a] > key[b] or (key[a] == key[b] and a < b)) for b in range(P)]
            for a in range(P)]


@pytest.mark.parametrize("score_latency", [0, 2, 4, 7])
def test_the_score_pipeline_orders_the_aps_as_the_model_latency_clocks_late(score_latency):
    policy = with_policy(PRESETS["seed"], history="ema", decision_pipeline=3, windows=(),
                         score_latency=score_latency, combined_scale="all")
    params = DispatcherParams.build(GPU, policy, 2)
    dut = ScorePipeline(params)
    P, Q = GPU.aps, GPU.peus
    latency = params.score_layers
    rng = random.Random(score_latency)
    history_limit = 1 << params.widths["history"]
    weight_limit = 1 << params.ap_weight_bits
    inputs = []
    for _ in range(60):
        # Few distinct values, so that ties are common.
        inputs.append({
            "view": {"vgpr": [rng.choice([0, 3, 16]) for _ in range(P * Q)],
                     "sgpr": [rng.choice([0, 8]) for _ in range(P * Q)],
                     "lds": [rng.choice([0, 4, 8]) for _ in range(P)]},
            "slots": [[rng.choice([0, 4]) for _ in range(Q)] for _ in range(P)],
            "history": [rng.choice([0, 5, history_limit - 1]) for _ in range(P)],
            "weights": [rng.randrange(weight_limit) for _ in range(4)],
            "w_r": rng.choice([0, 1, 255]), "w_i": rng.choice([0, 3, 255]),
            "choice": rng.choice([RESOURCE, INSTRUCTION, COMBINED, LOWEST])})
    seen = []

    async def bench(ctx):
        for clock in range(len(inputs) + latency):
            if clock < len(inputs):
                given = inputs[clock]
                for name in ("vgpr", "sgpr", "lds"):
                    for index, value in enumerate(given["view"][name]):
                        ctx.set(dut.view[name][index], value)
                for ap in range(P):
                    ctx.set(dut.history[ap], given["history"][ap])
                    for q in range(Q):
                        ctx.set(dut.slots[ap][q], given["slots"][ap][q])
                for h in range(4):
                    ctx.set(dut.ap_weights[h], given["weights"][h])
                ctx.set(dut.resource_weight, given["w_r"])
                ctx.set(dut.instruction_weight, given["w_i"])
                ctx.set(dut.ap_choice, given["choice"])
            await ctx.tick()
            seen.append([[ctx.get(dut.beats[a][b]) for b in range(P)] for a in range(P)])
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    for clock, given in enumerate(inputs):
        expected = _reference(GPU, given["choice"], given["view"], given["slots"],
                              given["history"], given["weights"], given["w_r"], given["w_i"])
        # The inputs of clock t are ordered in the outputs after the edge ending clock
        # t + latency - 1.
        assert [[bool(x) for x in row] for row in seen[clock + latency - 1]] == expected, clock
