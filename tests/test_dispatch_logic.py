"""Small parts of the RTL dispatcher checked alone under Amaranth's simulator: the admission's
divider-free ceiling division (exhaustive) and the pipelined decision's score pipeline (its
order of the APs against a re-derivation from the model's definition, and its latency), and
the rotating score unit against the model's."""

import random
import sys
from pathlib import Path

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.dispatch.logic import (
    add,
    at_most,
    at_or_after,
    ceil_div_by_reciprocal,
    ceil_div_limited,
    equals,
    first_set,
    index_of,
    is_zero,
    less,
    lowest_set,
    nth_set,
    nth_set_mask,
    reciprocal_shift,
    remainder,
    rotating_lowest_set,
    subtract,
)
from hw.dispatch.params import DispatcherParams
from hw.dispatch.pipeline import ScorePipeline
from hw.dispatch.scores import RotatingScores
from hw.dispatch.selector import COMBINED, INSTRUCTION, LOWEST, RESOURCE
from model.dispatch.config import PRESETS, GpuConfig, with_policy
from model.dispatch.scores import RotatingScores as ModelRotatingScores

sys.path.insert(0, str(Path(__file__).parent))
from dispatch_mutants import ROTATING_MUTANTS  # noqa: E402


@pytest.mark.parametrize("divide, widths, limit", [
    (ceil_div_limited, (9, 5), 17),
    (ceil_div_by_reciprocal, (9, 5), 17),
    (ceil_div_by_reciprocal, (10, 3), 600),      # a limit no quotient reaches
    (ceil_div_by_reciprocal, (5, 6), 3),         # divisors above the dividend
])
def test_ceil_div_is_the_saturated_ceiling_everywhere(divide, widths, limit):
    """Every dividend and divisor (the reciprocal's divisor 0 as 1: the queues' waves)."""
    dividend, divisor = Signal(widths[0]), Signal(widths[1])
    quotient = Signal(limit.bit_length())
    m = Module()
    m.d.comb += quotient.eq(divide(dividend, divisor, limit, m))
    wrong = []
    first = 0 if divide is ceil_div_by_reciprocal else 1

    async def bench(ctx):
        for a in range(1 << widths[0]):
            for b in range(first, 1 << widths[1]):
                ctx.set(dividend, a)
                ctx.set(divisor, b)
                if ctx.get(quotient) != min(-(-a // max(b, 1)), limit):
                    wrong.append((a, b, ctx.get(quotient)))
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("width, k", [(16, 3), (10, 5), (10, 6), (10, 7), (9, 12), (4, 3),
                                      (3, 1), (6, 4)])
def test_remainder_by_residues_is_the_remainder_everywhere(width, k):
    """Every value (16 bits by 3: the default build's tie-break draw among three heads)."""
    value = Signal(width)
    result = Signal(max(k - 1, 1).bit_length())
    m = Module()
    m.d.comb += result.eq(remainder(value, k, m))
    wrong = []

    async def bench(ctx):
        for a in range(1 << width):
            ctx.set(value, a)
            if ctx.get(result) != a % k:
                wrong.append((a, ctx.get(result)))
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("width", [1, 3, 4, 5])
def test_one_hot_picks_are_the_index_picks_everywhere(width):
    """Every mask and every pointer or count: each one-hot pick (the selector's channel and
    AP) has at most one bit set, is a bit of the mask, is empty only when there is nothing
    to pick, and its index is the index form's."""
    mask, pointer = Signal(width), Signal(max(width - 1, 1).bit_length())
    n = Signal(max(width, 1).bit_length())
    m = Module()
    pairs = {"lowest": (lowest_set(mask), first_set(mask)),
             "rotating": (rotating_lowest_set(mask, pointer), at_or_after(mask, pointer)),
             "nth": (nth_set_mask(mask, n), (None, nth_set(mask, n)))}
    picks = {}
    for name, (onehot, (_, index)) in pairs.items():
        picks[name] = [Signal(width, name=f"{name}_mask"), Signal(len(index), name=f"{name}"),
                       Signal(len(index), name=f"{name}_index")]
        m.d.comb += [picks[name][0].eq(onehot), picks[name][1].eq(index),
                     picks[name][2].eq(index_of(onehot))]
    wrong = []

    async def bench(ctx):
        for value in range(1 << width):
            for start in range(width):
                for count in range(width + 1):
                    ctx.set(mask, value)
                    ctx.set(pointer, start)
                    ctx.set(n, count)
                    for name, (onehot, index, encoded) in picks.items():
                        got = ctx.get(onehot)
                        ok = (got & (got - 1)) == 0 and got & ~value == 0
                        # (first_set's index when none is not defined.)
                        ok &= ctx.get(encoded) == ctx.get(index) or got == 0
                        # Empty exactly when the index form has nothing to pick.
                        has = bin(value).count("1") > (count if name == "nth" else 0)
                        ok &= (got != 0) == has
                        if not ok:
                            wrong.append((name, value, start, count, got))
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("widths", [(12, 7), (9, 5), (13, 8)])
def test_the_reciprocal_is_exact_at_the_default_widths_and_one_bit_less_is_not(widths):
    """The construction in integers at the default GPU's widths (LDS 12 bits, waves 7: what
    the simulation above would take minutes for), and the shift is not loose: one bit less
    and some quotient is wrong (at these widths the bound is the least shift that works)."""
    dividend, divisor = (np.arange(1 << bits, dtype=np.int64) for bits in widths)
    divisor = np.maximum(divisor, 1)[:, None]
    exact = -(-dividend[None, :] // divisor)
    shift = reciprocal_shift(*widths)
    for s, right in ((shift, True), (shift - 1, False)):
        scaled = dividend[None, :] * ((1 << s) // divisor)
        quotient = (scaled >> s) + (scaled & ((1 << s) - 1) != 0)
        assert bool((quotient == exact).all()) is right, (widths, s)


#: Operand widths of the width-safe helpers: equal, either wider, a 1-bit operand.
WIDTHS = [(3, 3), (2, 4), (4, 2), (1, 3), (3, 1), (4, 5)]


def _helpers(a: Signal, b: Signal) -> dict:
    """Every helper on two values and on a value and each constant from -1 to 2**5."""
    exprs = {("is_zero", None): is_zero(a), ("eq", None): equals(a, b),
             ("lt", None): less(a, b), ("le", None): at_most(a, b), ("add", None): add(a, b)}
    if len(b) <= len(a):
        exprs[("sub", None)] = subtract(a, b)
    for k in range(-1, 33):
        exprs |= {("eq", k): equals(a, k), ("lt", k): less(a, k), ("le", k): at_most(a, k),
                  ("k_lt", k): less(k, a), ("k_le", k): at_most(k, a)}
    return exprs


def _expected(op, k, x, y, widths):
    return {"is_zero": lambda: x == 0, "eq": lambda: x == (y if k is None else k),
            "lt": lambda: x < (y if k is None else k), "le": lambda: x <= (y if k is None else k),
            "k_lt": lambda: k < x, "k_le": lambda: k <= x, "add": lambda: x + y,
            "sub": lambda: (x - y) % (1 << (max(widths) + 1))}[op]()


@pytest.mark.parametrize("widths", WIDTHS, ids=lambda w: f"{w[0]}x{w[1]}")
def test_width_safe_helpers_are_the_operators_everywhere(widths):
    a, b = Signal(widths[0]), Signal(widths[1])
    m = Module()
    outputs = {}
    for key, expr in _helpers(a, b).items():
        outputs[key] = Signal(len(expr), name=f"{key[0]}_{key[1]}".replace("-", "m"))
        m.d.comb += outputs[key].eq(expr)
        if key[0] in ("add", "sub"):
            assert len(expr) == max(widths) + 1                 # the width of a + b
    wrong = []

    async def bench(ctx):
        for x in range(1 << widths[0]):
            for y in range(1 << widths[1]):
                ctx.set(a, x)
                ctx.set(b, y)
                for (op, k), signal in outputs.items():
                    if ctx.get(signal) != int(_expected(op, k, x, y, widths)):
                        wrong.append((op, k, x, y, ctx.get(signal)))
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


def _set_scores_inputs(ctx, dut, given: dict) -> None:
    """A score unit's view, history and free wave slots of one clock (``given``)."""
    for name in ("vgpr", "sgpr", "lds"):
        for index, value in enumerate(given["view"][name]):
            ctx.set(dut.view[name][index], value)
    for ap, history in enumerate(given["history"]):
        ctx.set(dut.history[ap], history)
        for q, slots in enumerate(given["slots"][ap]):
            ctx.set(dut.slots[ap][q], slots)


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
                _set_scores_inputs(ctx, dut, given)
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


@pytest.mark.parametrize("widths", WIDTHS, ids=lambda w: f"{w[0]}x{w[1]}")
def test_width_safe_helpers_lint_clean(widths, tmp_path):
    """Their Verilog has no operator with operands of two widths: ``verilator -Wall`` with
    only Amaranth's style waivers (hw/flow/lint.vlt) is clean."""
    from amaranth.back import verilog
    from amaranth.hdl import Elaboratable

    from hw.flow.verilog_files import lint

    class Helpers(Elaboratable):
        def __init__(self):
            self.a, self.b = Signal(widths[0]), Signal(widths[1])
            self.outputs = [Signal(len(expr), name=f"{op}_{k}".replace("-", "m"))
                            for (op, k), expr in _helpers(self.a, self.b).items()]

        def elaborate(self, platform):
            m = Module()
            exprs = _helpers(self.a, self.b).values()
            m.d.comb += [out.eq(expr) for out, expr in zip(self.outputs, exprs, strict=True)]
            return m

    top = Helpers()
    path = tmp_path / "helpers.v"
    path.write_text(verilog.convert(top, name="helpers", ports=[top.a, top.b, *top.outputs]))
    result = lint(path, Path(__file__).resolve().parent.parent / "hw" / "flow" / "lint.vlt")
    assert result.returncode == 0 and "%Warning" not in result.stderr, result.stderr[-3000:]



def test_a_table_is_continuous_logic_not_an_always_block():
    """lookup() must be written as continuous assignments. An ``Array`` of constants was
    written as a case in an ``always @*`` block, which Icarus (event driven, four-state) runs
    only when the index changes: embodiment 8's pointer keeps its reset value while the
    rotation is off, so the matcher's tables stayed X from time 0, and so did the
    dispatcher's ``stale_abort`` at clock 40 of the reduced default scenario (2 x 4 x 4,
    exact view; tests/test_cocotb_dispatch.py's Icarus run). The values are checked too."""
    from amaranth.back import verilog

    from hw.dispatch.logic import lookup

    pointer, out, signed_out = Signal(3), Signal(2), Signal(4)
    m = Module()
    m.d.comb += [out.eq(lookup(pointer, lambda v: (3 - v) % 4)),
                 signed_out.eq(lookup(pointer, lambda v: v - 5))]
    text = verilog.convert(m, ports=[pointer, out, signed_out], emit_src=False)
    assert "always" not in text and "case" not in text, text

    async def bench(ctx):
        for v in range(8):
            ctx.set(pointer, v)
            assert (ctx.get(out), ctx.get(signed_out)) == ((3 - v) % 4, (v - 5) % 16), v
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


CHOICES = {"resource": RESOURCE, "instruction": INSTRUCTION, "combined": COMBINED}


def _rotating_mismatch(unit, name: str, score_latency: int):
    """Drive a rotating score unit (``unit``, the class) as the dispatcher does: the idle
    inputs held until it settles, START, then random inputs and allocations every clock; its
    order in every clock against the model's keys of ``L`` clocks before, AP ``t mod P``
    refreshed in clock ``t`` after START and the AP of the allocation of clock ``t - 1 -
    circuit_latency`` with it. The first mismatch ``(clock, keys)``, or ``None``."""
    choice = CHOICES[name]
    rng = random.Random(10 * score_latency + choice)
    w_r, w_i = rng.choice([1, 3, 255]), rng.choice([1, 5, 255])
    built = with_policy(PRESETS["seed"], history="ema", decision_pipeline=3, windows=(),
                        score_latency=score_latency, combined_scale="all",
                        score_refresh="rotating", resource_weight=w_r, instruction_weight=w_i,
                        circuit_latency=score_latency // 2)
    params = DispatcherParams.build(GPU, built, 2)
    assert params.rotating_scores
    policy = built if choice == COMBINED else with_policy(
        built, ap_choice=name, combined_scale="candidates", resource_weight=1,
        instruction_weight=1)
    dut = unit(params)
    P, Q = GPU.aps, GPU.peus
    latency = params.score_layers
    history_limit = 1 << params.widths["history"]
    weights = [rng.randrange(1 << params.ap_weight_bits) for _ in range(4)]

    def given():
        return {"view": {"vgpr": [rng.choice([0, 3, 16]) for _ in range(P * Q)],
                         "sgpr": [rng.choice([0, 8]) for _ in range(P * Q)],
                         "lds": [rng.choice([0, 4, 8]) for _ in range(P)]},
                "slots": [[rng.choice([0, 4]) for _ in range(Q)] for _ in range(P)],
                "history": [rng.choice([0, 5, 9, history_limit - 1]) for _ in range(P)]}

    idle = given()
    settle = params.score_settle + 1
    inputs = [idle] * settle + [given() for _ in range(80)]
    # After START, an allocation in most clocks, on a random AP (the turn's too).
    taken = [None] * settle + [rng.randrange(P) if rng.random() < 0.7 else None
                               for _ in range(80)]
    seen = []

    async def bench(ctx):
        for h in range(4):
            ctx.set(dut.ap_weights[h], weights[h])
        ctx.set(dut.resource_weight, w_r)
        ctx.set(dut.instruction_weight, w_i)
        ctx.set(dut.ap_choice, choice)
        for clock in range(len(inputs) + latency):
            _set_scores_inputs(ctx, dut, inputs[min(clock, len(inputs) - 1)])
            ctx.set(dut.start, clock == settle - 1)
            allocation = taken[clock] if clock < len(taken) else None
            ctx.set(dut.allocate, allocation is not None)
            ctx.set(dut.allocate_ap, allocation or 0)
            await ctx.tick()
            seen.append([[bool(ctx.get(dut.beats[a][b])) for b in range(P)] for a in range(P)])
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()

    def scores(now):
        resource = [weights[0] * sum(now["view"]["vgpr"][a * Q:(a + 1) * Q])
                    + weights[1] * sum(now["view"]["sgpr"][a * Q:(a + 1) * Q])
                    + weights[2] * now["view"]["lds"][a] + weights[3] * sum(now["slots"][a])
                    for a in range(P)]
        return resource, now["history"]

    model = ModelRotatingScores(policy, *scores(idle))
    orders = set()
    for clock in range(settle, len(inputs)):
        resource, history = scores(inputs[clock])
        aps = ModelRotatingScores.refreshed(clock - settle, P,
                                            taken[clock - 1 - built.circuit_latency])
        keys = model.refresh([(ap, resource[ap], history[ap]) for ap in aps])
        expected = [[a == b or keys[a] > keys[b] or (keys[a] == keys[b] and a < b)
                     for b in range(P)] for a in range(P)]
        if seen[clock + latency - 1] != expected:
            return clock, keys
        orders.add(str(expected))
    assert len(orders) > 3                  # the order does change
    return None


@pytest.mark.parametrize("name", CHOICES)
@pytest.mark.parametrize("score_latency", [0, 3, 6])
def test_rotating_scores_order_the_aps_as_the_model_refreshes_them(name, score_latency):
    assert _rotating_mismatch(RotatingScores, name, score_latency) is None


@pytest.mark.parametrize("mutant", ROTATING_MUTANTS)
def test_the_rotating_scores_bench_rejects_a_broken_unit(mutant):
    unit, score_latency, name = ROTATING_MUTANTS[mutant]
    assert _rotating_mismatch(unit, name, score_latency) is not None, mutant
