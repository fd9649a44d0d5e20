# amaranth: UnusedElaboratable=no
# (test_rtl_keeps_its_parameters builds arbiters only to read their parameters back)
"""The arbiter's golden model: the seed's table and quantisation, the parameter checks (pinned
for the model and the RTL alike), the history arithmetic, the clock-level behaviour, and
:func:`simulate_shares` against the cycle-exact model."""

import hashlib
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.arbiter import ArbiterConfig, DelayFactorArbiter
from model import fairness
from model.arbiter import (
    DEFAULT_TABLE,
    DIVIDER_CLOCKS,
    ArbiterInputs,
    ArbiterOutputs,
    ArbiterParams,
    DelayFactorArbiterModel,
    SlotState,
    WriteOp,
    delay_factor,
    delay_shift,
    expected_weight,
    grant_round,
    select_winner,
    simulate_shares,
)
from tb.test_arbiter import ArbiterDriver, directed_cases, random_phases

# -- the table and the quantisation ---------------------------------------------------------------


@pytest.mark.parametrize(("w", "d"), [(1, 256), (2, 128), (3, 64), (4, 64), (5, 32), (8, 32),
                                      (9, 16), (16, 16), (17, 16), (128, 16), (255, 16),
                                      (256, 16)])
def test_seed_table(w, d):
    assert delay_factor(w) == d
    assert delay_shift(w) == d.bit_length() - 1


def test_other_table():
    table = ((4, 1024), (200, 32), (256, 2))
    assert [delay_factor(w, table) for w in (1, 4, 5, 200, 201, 256)] == [1024, 1024, 32, 32, 2,
                                                                          2]


@pytest.mark.parametrize(("cfg", "total", "w"), [
    (1, 1000, 1),       # floor(0.256) = 0, clamped up to 1
    (1, 256, 1),
    (1, 129, 1),        # floor(1.98)
    (2, 256, 2),
    (3, 256, 3),
    (1, 64, 4),
    (5, 256, 5),
    (1, 32, 8),
    (9, 256, 9),
    (255, 255, 256),    # alone in its class
    (128, 256, 128),
    (254, 255, 254),    # floor(254.996)
    (100, 300, 85),
])
def test_expected_weight_edges(cfg, total, w):
    assert expected_weight(cfg, total) == w


def test_expected_weight_errors():
    with pytest.raises(ValueError, match=r"^Weight 0 is out of range: configured weights lie in "
                                         r"1\.\.255$"):
        expected_weight(0, 10)
    with pytest.raises(ValueError, match=r"^Total 4 must include the weight 5 itself$"):
        expected_weight(5, 4)
    with pytest.raises(TypeError, match=r"^Weight and total must be integers"):
        expected_weight(1.0, 4)
    with pytest.raises(ValueError, match=r"^Expected weight 0 is out of range: it lies in "
                                         r"1\.\.256$"):
        delay_factor(0)
    with pytest.raises(ValueError, match=r"^Expected weight 257 is out of range"):
        delay_factor(257)


# -- the parameter checks, for the model and the RTL ----------------------------------------------

BUILDERS = {
    "params": lambda *args, **kwargs: ArbiterParams(*args, **kwargs),
    "model": lambda *args, **kwargs: DelayFactorArbiterModel(ArbiterParams(*args, **kwargs)),
    "model keywords": lambda tasks=8, classes=3, **kwargs: DelayFactorArbiterModel(
        tasks=tasks, classes=classes, **kwargs),
    "rtl": lambda *args, **kwargs: DelayFactorArbiter(*args, **kwargs),
}

BAD_PARAMETERS = [
    ((0,), {}, TypeError, "Task count must be a positive integer, not 0"),
    ((True,), {}, TypeError, "Task count must be a positive integer, not True"),
    ((8.0,), {}, TypeError, "Task count must be a positive integer, not 8.0"),
    ((65,), {}, ValueError, "Task count must be at most 64, not 65"),
    ((8, 0), {}, TypeError, "Class count must be a positive integer, not 0"),
    ((8, 17), {}, ValueError, "Class count must be at most 16, not 17"),
    ((8, 3), {"frac_bits": -1}, TypeError,
     "Fraction bits must be a non-negative integer, not -1"),
    ((8, 3), {"frac_bits": 17}, ValueError, "Fraction bits must be at most 16, not 17"),
    ((8, 3), {"table": "seed"}, TypeError,
     "Delay table must be a sequence of (largest weight, delay factor) pairs, not 'seed'"),
    ((8, 3), {"table": ((1, 2, 3),)}, TypeError,
     "Delay table rows must be (largest weight, delay factor) pairs of integers, not (1, 2, 3)"),
    ((8, 3), {"table": ()}, ValueError, "Delay table must not be empty"),
    ((8, 3), {"table": ((4, 64), (2, 32), (256, 16))}, ValueError,
     "Delay table bounds must rise strictly within 1..256, but 2 follows 4"),
    ((8, 3), {"table": ((300, 16),)}, ValueError,
     "Delay table bounds must rise strictly within 1..256, but 300 follows 0"),
    ((8, 3), {"table": ((8, 32), (255, 16))}, ValueError,
     "Delay table must end with the bound 256, not 255"),
    ((8, 3), {"table": ((8, 48), (256, 16))}, ValueError,
     "Delay factor 48 must be a power of two"),
    ((8, 3), {"table": ((8, 0), (256, 16))}, ValueError, "Delay factor 0 must be a power of two"),
    ((8, 3), {"table": ((1, 1024), (256, 16)), "frac_bits": 1}, ValueError,
     "Delay factor 1024 needs at least 2 fraction bits (256/1024 must be representable), "
     "not 1"),
    ((8, 3), {"tie_break": 0}, TypeError, "Tie break must be a string, not 0"),
    ((8, 3), {"tie_break": "weight"}, ValueError,
     "Tie break must be 'history' (smaller H first) or 'index' (lower class, then lower slot "
     "first), not 'weight'"),
    ((8, 3), {"decay": 1}, TypeError, "Decay must be True or False, not 1"),
    ((8, 3), {"decay": False, "weight_bits": 8.0}, TypeError,
     "Weight bits must be an integer, not 8.0"),
    ((8, 3), {"decay": False, "weight_bits": 17}, ValueError,
     "Weight bits must lie in 8..16, not 17"),
    ((8, 3), {"weight_bits": 12}, ValueError,
     "The decaying history works on the seed's 8-bit expected weight; 12 weight bits need "
     "decay=False"),
]


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize(("args", "kwargs", "error", "message"), BAD_PARAMETERS,
                         ids=[message[:40] for *_, message in BAD_PARAMETERS])
def test_bad_parameters(builder, args, kwargs, error, message):
    if builder == "model keywords" and not args:
        args = ()
    with pytest.raises(error) as raised:
        BUILDERS[builder](*args, **kwargs)
    assert str(raised.value) == message


def test_model_takes_params_or_keywords():
    with pytest.raises(TypeError, match="^Give either an ArbiterParams or keywords, not both$"):
        DelayFactorArbiterModel(ArbiterParams(), tasks=4)
    with pytest.raises(TypeError, match="^Parameters must be an ArbiterParams, not 4$"):
        DelayFactorArbiterModel(4)


def test_simulate_shares_checks_its_arguments():
    with pytest.raises(ValueError, match=r"^Weight 0 is out of range"):
        simulate_shares([3, 0], 10)
    with pytest.raises(ValueError, match="^Weights must not be empty$"):
        simulate_shares([], 10)
    with pytest.raises(TypeError, match=r"^Picks must be a non-negative integer, not -1$"):
        simulate_shares([3], -1)


def test_rtl_keeps_its_parameters():
    arbiter = DelayFactorArbiter(5, 2, frac_bits=3, tie_break="index", decay=False)
    assert (arbiter.tasks, arbiter.classes, arbiter.frac_bits, arbiter.table,
            arbiter.tie_break, arbiter.decay) == (5, 2, 3, DEFAULT_TABLE, "index", False)
    assert DelayFactorArbiter.from_params(arbiter.params).params == arbiter.params


def test_config_round_trip_and_names():
    configs = [ArbiterConfig(), ArbiterConfig(4, 2, 0, tie_break="index"),
               ArbiterConfig(5, 3, 16, ((1, 4096), (256, 64))), ArbiterConfig(decay=False)]
    for config in configs:
        assert ArbiterConfig.from_json(config.to_json()) == config
    assert len({config.name for config in configs}) == len(configs)
    assert ArbiterConfig().name == "arbiter_t8_c3_f8_hist"
    assert ArbiterConfig().label == "seed table, 8 fraction bits, decay, ties by history"


# -- the history arithmetic -----------------------------------------------------------------------

def _slots(params, weights, classes=None):
    """Slots holding ``weights`` (configured), weighted, at H = cfg."""
    classes = classes or [0] * len(weights)
    slots = [SlotState(True, c, w, False, 0, w << params.frac_bits)
             for w, c in zip(weights, classes, strict=True)]
    totals = {}
    for slot in slots:
        totals[slot.job_class] = totals.get(slot.job_class, 0) + slot.weight
    for slot in slots:
        slot.weighted, slot.expected = True, expected_weight(slot.weight, totals[slot.job_class])
    return slots


def test_history_update_of_the_seed():
    params = ArbiterParams(tasks=3, classes=2)
    # W = 32 (D = 16) and 224 (D = 16) in class 0; W = 256 (D = 16) alone in class 1.
    slots = _slots(params, [32, 224, 7], [0, 0, 1])
    assert [s.expected for s in slots] == [32, 224, 256]
    before = [s.history for s in slots]
    grant_round(params, slots, 0b001, winner=0)
    # Every valid slot of every class decays, requesting or not; the winner gets 256/16.
    assert [s.history for s in slots] == [
        before[0] - (before[0] >> 4) + (16 << 8),
        before[1] - (before[1] >> 4),
        before[2] - (before[2] >> 4)]


def test_history_stays_in_range_with_decay():
    # The update is a convex mix of H and 256, so H never leaves 0..256.
    params = ArbiterParams(tasks=2, classes=1, frac_bits=0)
    slots = _slots(params, [255, 1])
    for _ in range(2000):
        winner = select_winner(params, slots, 0b11)
        grant_round(params, slots, 0b11, winner)
        assert all(0 <= s.history <= 256 for s in slots)


def test_no_decay_is_smooth_weighted_round_robin():
    # Without decay T = W - H is nginx's "current weight" plus W: the grant sequence is that
    # of smooth weighted round-robin over the expected weights, started at current = -cfg.
    weights = [5, 1, 1, 40, 13]
    params = ArbiterParams(tasks=5, classes=1, frac_bits=0, decay=False)
    slots = _slots(params, weights)
    expected = [s.expected for s in slots]
    current = [-w for w in weights]
    for _ in range(500):
        winner = select_winner(params, slots, 0b11111)
        grant_round(params, slots, 0b11111, winner)
        current = [c + w for c, w in zip(current, expected, strict=True)]
        best = max(range(5), key=lambda i: (current[i], expected[i], -i))
        current[best] -= sum(expected)
        assert winner == best


def test_no_decay_without_fractions_needs_no_history_tie_break():
    # Equal T and W mean equal H when H is an integer: both tie rules decide alike.
    for weights in ([93, 93, 154, 153], [5, 5, 5, 200], [17, 1, 250, 64, 2, 9, 33, 128]):
        for weight_bits in (8, 12):
            shares = [simulate_shares(weights, 500, frac_bits=0, decay=False, tie_break=rule,
                                      weight_bits=weight_bits) for rule in ("history", "index")]
            assert shares[0] == shares[1]


def test_wider_expected_weight():
    assert expected_weight(1, 1000, weight_bits=12) == 4
    assert expected_weight(7, 7, weight_bits=12) == 4096
    params = ArbiterParams(decay=False, weight_bits=12)
    assert (params.weight_scale, params.divider_clocks) == (4096, 8)
    assert params.name == "arbiter_t8_c3_f8_hist_nodecay_w12"


def test_no_decay_freezes_idle_slots():
    params = ArbiterParams(tasks=3, classes=1, frac_bits=2, decay=False)
    slots = _slots(params, [10, 20, 30])
    idle = slots[2].history
    winner = select_winner(params, slots, 0b011)
    grant_round(params, slots, 0b011, winner)
    assert slots[2].history == idle
    assert sum(s.history for s in slots) == (10 + 20 + 30) << 2     # the round conserves H


def test_ties():
    params = ArbiterParams(tasks=4, classes=2)
    slots = _slots(params, [50, 50, 50, 50], [1, 1, 0, 0])
    # Same T, W and H everywhere: class 0 first, then the lower slot.
    assert select_winner(params, slots, 0b1111) == 2
    assert select_winner(params, slots, 0b0011) == 0
    for slot, fraction in zip(slots, (20, 20, 10, 5), strict=True):
        slot.history += fraction                # a smaller H (same integer part) wins
    assert select_winner(params, slots, 0b1111) == 3
    index = ArbiterParams(tasks=4, classes=2, tie_break="index")
    assert select_winner(index, slots, 0b1111) == 2
    slots[1].expected += 1                      # a larger W wins over the class order
    slots[1].history += 1 << 8
    assert select_winner(params, slots, 0b1111) == 1
    assert select_winner(params, slots, 0) is None


# -- the clock-level model ------------------------------------------------------------------------

def _write(slot, weight, job_class=0, op=WriteOp.LOAD, **extra):
    return ArbiterInputs(write_valid=1, write_slot=slot, write_op=op, write_job_class=job_class,
                         write_weight=weight, **extra)


def _settle(model, request=0):
    """Clock ``model`` with ``request`` until the divider is done, then through the clock in
    which the last slot sits out; return the clocks."""
    clocks = 0
    while model.busy:
        model.step(ArbiterInputs(request=request, backlogged=request))
        clocks += 1
    model.step(ArbiterInputs(request=request, backlogged=request))
    return clocks + 1


def test_reset_values_and_write_timeline():
    # A write in clock 0; slot 0's turn takes clocks 1-6 (the operands, then five clocks of
    # two quotient bits); its W is in force from clock 7, in which it sits out; decided in
    # clock 8, granted (seen) in clock 9.
    model = DelayFactorArbiterModel(tasks=2, classes=1)
    assert DIVIDER_CLOCKS == 6
    assert model.step(_write(0, 100, request=1)) == ArbiterOutputs(1, 0, 0, 0)
    assert model.slots[0] == SlotState(True, 0, 100, False, 0, 100 << 8)
    for _ in range(DIVIDER_CLOCKS):
        assert not model.slots[0].weighted and model.busy
        assert model.step(ArbiterInputs(request=1)).write_ready == 1
    assert not model.busy
    assert model.slots[0].expected == 256 and not model.slots[0].weighted
    assert model.step(ArbiterInputs(request=1)) == ArbiterOutputs(1, 0, 0, 0)
    assert model.slots[0].weighted
    assert model.step(ArbiterInputs(request=1)) == ArbiterOutputs(1, 0, 0, 0)
    assert model.step(ArbiterInputs(request=1, backlogged=1)) == ArbiterOutputs(1, 1, 0, 0)
    model.step(ArbiterInputs(request=1), reset=True)
    assert model.outputs() == ArbiterOutputs(1, 0, 0, 0)
    assert model.slots == [SlotState(), SlotState()]
    assert not model.busy


def test_odd_writes():
    model = DelayFactorArbiterModel(tasks=3, classes=3)
    model.step(_write(1, 80, job_class=2))
    _settle(model)
    model.step(_write(1, 0, job_class=2))           # weight 0 clears
    assert not model.slots[1].valid
    _settle(model)
    model.step(_write(1, 80, job_class=3))          # beyond the last class: a clear
    assert not model.slots[1].valid
    _settle(model)
    model.step(_write(3, 80))                       # beyond the last slot: nothing
    assert not any(slot.valid for slot in model.slots)
    assert not model.busy                           # and no valid slot to recompute


def test_requests_of_empty_or_waiting_slots_are_ignored():
    model = DelayFactorArbiterModel(tasks=2, classes=1)
    model.step(_write(0, 9, request=3, backlogged=3))
    _settle(model, 3)
    for _ in range(3):
        outputs = model.step(ArbiterInputs(request=3, backlogged=3))
    assert outputs == ArbiterOutputs(1, 1, 0, 0)
    model.step(_write(1, 9, request=3, backlogged=3))   # slot 1 waits for its W
    waited = 0
    while not model.slots[1].weighted:
        assert model.step(ArbiterInputs(request=3, backlogged=3)).grant_slot == 0
        waited += 1
    assert waited == DIVIDER_CLOCKS + 1                 # its turn, then the clock it sits out
    assert 1 in {model.step(ArbiterInputs(request=3, backlogged=3)).grant_slot
                 for _ in range(4)}


def test_a_write_restarts_the_walk_with_the_written_slot():
    # Four slots. Slot 0 is loaded in clock 0 and its turn starts in clock 1; slot 3 is loaded
    # in clock 3, which aborts that turn: slot 3's turn comes first (clocks 4-9, with the
    # total of both), then slot 0's (10-15); idle from clock 16. No write is ever refused.
    model = DelayFactorArbiterModel(tasks=4, classes=1)
    expected = []
    for clock in range(20):
        write = {0: _write(0, 50), 3: _write(3, 150)}.get(clock, ArbiterInputs())
        assert model.step(write).write_ready == 1
        expected.append([slot.expected for slot in model.slots])
    assert expected[8] == [0, 0, 0, 0] and expected[9] == [0, 0, 0, 192]
    assert expected[14] == [0, 0, 0, 192] and expected[15] == [64, 0, 0, 192]
    assert not model.busy


def test_every_valid_slot_is_recomputed_after_a_write():
    # A new task in a class changes the W of the others there: every valid slot has a turn
    # after the write, the written one first; a cleared slot has none.
    model = DelayFactorArbiterModel(tasks=3, classes=2)
    model.step(_write(0, 100))
    model.step(_write(2, 60, job_class=1))
    _settle(model)
    assert [slot.expected for slot in model.slots] == [256, 0, 256]
    model.step(_write(1, 100))
    clocks = _settle(model)
    assert [slot.expected for slot in model.slots] == [128, 128, 256]
    assert clocks == 3 * DIVIDER_CLOCKS + 1
    model.step(_write(2, 0, job_class=1))                # a clear
    assert _settle(model) == 2 * DIVIDER_CLOCKS + 1


def test_the_slot_whose_grant_is_taken_sits_out_unless_backlogged():
    model = DelayFactorArbiterModel(tasks=2, classes=1)
    model.step(_write(0, 200))
    model.step(_write(1, 10))
    _settle(model)
    one_job = ArbiterInputs(request=1)
    held = ArbiterInputs(request=1, grant_ready=0)
    backlogged = ArbiterInputs(request=1, backlogged=1)
    # (inputs, grant.valid seen): a one-job slot is granted, its grant taken, and it sits
    # out that clock's decision; a held grant makes no decision; a backlogged slot is
    # granted in every clock.
    clocks = [(one_job, 0), (one_job, 1), (one_job, 0), (held, 1), (held, 1), (one_job, 1),
              (backlogged, 0), (backlogged, 1), (backlogged, 1), (backlogged, 1),
              (one_job, 1), (one_job, 0)]
    assert [model.step(inputs).grant_valid for inputs, _ in clocks] == [
        valid for _, valid in clocks]
    # Two one-job slots alternate, with no clock lost.
    assert [model.step(ArbiterInputs(request=3)).grant_valid for _ in range(6)] == [1] * 6


def test_history_bound_without_decay_is_far_away():
    # Random tasks, weights, requests and back-pressure: H without decay stays within a
    # eighth of the saturation bound (so the saturation never acts).
    for tasks, classes in ((8, 3), (3, 1)):
        params = ArbiterParams(tasks, classes, 0, decay=False)
        low, high = params.history_range
        rng = random.Random(tasks)
        model = DelayFactorArbiterModel(params)
        driver = ArbiterDriver(params, rng)
        worst = 0
        for phase in random_phases(params, rng, 6000):
            for inputs, reset in driver.phase_clocks(phase):
                driver.clock_done(model.step(inputs, reset=reset))
                worst = max(worst, *(abs(slot.history) for slot in model.slots))
        assert 0 < worst < high // 8


# -- simulate_shares ------------------------------------------------------------------------------

def _shares_through_ports(weights, picks, **knobs):
    """The grants per task of the cycle-exact model: load the tasks with requests low, then
    request everything for ``picks`` clocks (plus one to see the last grant)."""
    model = DelayFactorArbiterModel(tasks=len(weights), classes=1, **knobs)
    for slot, weight in enumerate(weights):
        model.step(_write(slot, weight))
    _settle(model)
    everyone = (1 << len(weights)) - 1
    grants = [0] * len(weights)
    backlogged = ArbiterInputs(request=everyone, backlogged=everyone)
    model.step(backlogged)
    for _ in range(picks):
        outputs = model.step(backlogged)
        grants[outputs.grant_slot] += outputs.grant_valid
    return grants


@pytest.mark.parametrize("knobs", [
    {}, {"frac_bits": 0}, {"frac_bits": 16, "table": ((1, 4096), (8, 512), (256, 64))},
    {"tie_break": "index"}, {"decay": False, "frac_bits": 0},
    {"decay": False, "frac_bits": 0, "weight_bits": 12, "tie_break": "index"}])
@pytest.mark.parametrize("weights", [[1, 255], [3, 5, 7], [100, 100, 100, 100],
                                     [17, 1, 250, 64, 2, 9, 33, 128]])
def test_simulate_shares_matches_the_cycle_model(weights, knobs):
    assert simulate_shares(weights, 600, **knobs) == _shares_through_ports(weights, 600, **knobs)


def test_simulate_shares_is_pinned():
    # The backlogged ideal must not move with the RTL's micro-architecture: these are the
    # grants of the arbiter before the one-divider, one-grant-per-job rework (SHA-256 of the
    # JSON of every result, and a few in full).
    rng = random.Random(2026)
    sets = [[1, 255], [3, 5, 7], [100, 100, 100, 100], [17, 1, 250, 64, 2, 9, 33, 128]] + [
        [rng.randint(1, 255) for _ in range(rng.randint(2, 16))] for _ in range(20)]
    knobs = [{}, {"frac_bits": 0}, {"frac_bits": 16, "table": ((1, 4096), (8, 512), (256, 64))},
             {"tie_break": "index"}, {"decay": False, "frac_bits": 0},
             {"decay": False, "frac_bits": 0, "weight_bits": 12, "tie_break": "index"}]
    results = [simulate_shares(weights, 1000, **knob) for knob in knobs for weights in sets]
    assert results[:4] == [[9, 991], [207, 333, 460], [250, 250, 250, 250],
                           [36, 6, 478, 132, 5, 17, 73, 253]]
    assert results[24 * 4 + 3] == [32, 4, 497, 127, 4, 16, 63, 257]
    digest = hashlib.sha256(json.dumps(results).encode()).hexdigest()
    assert digest == "0d10402891ba12c10233c3b10a0b881e9c33303894375faa7da400b90245ca10"


def test_simulate_shares_basics():
    assert simulate_shares([7], 10) == [10]
    assert simulate_shares([9, 9], 0) == [0, 0]
    assert simulate_shares([100, 100, 100, 100], 400) == [100, 100, 100, 100]
    grants = simulate_shares([1, 255], 2560)
    assert sum(grants) == 2560
    assert 10 <= grants[0] <= 40       # the seed's arbiter gives weight 1 about 2/256


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 255), min_size=2, max_size=8))
def test_no_decay_shares_follow_the_expected_weights(weights):
    # Without decay the long-run share is W / sum(W) to within a couple of grants.
    picks = 2048
    grants = simulate_shares(weights, picks, decay=False, frac_bits=0)
    total = sum(weights)
    expected = [expected_weight(w, total) for w in weights]
    for got, w in zip(grants, expected, strict=True):
        assert abs(got - picks * w / sum(expected)) <= 2


# -- the bench's stimulus does what its names say -------------------------------------------------

def _grants_of(params, phases, seed=1):
    model = DelayFactorArbiterModel(params)
    driver = ArbiterDriver(params, random.Random(seed))
    grants = []
    for inputs, reset in (clock for phase in phases for clock in driver.phase_clocks(phase)):
        outputs = model.step(inputs, reset=reset)
        driver.clock_done(outputs)
        if outputs.grant_valid:
            grants.append(outputs.grant_slot)
    return grants, driver


def test_directed_cases_do_what_they_say():
    params = ArbiterParams()
    cases = dict(directed_cases(params))
    for name, phases in cases.items():
        grants, driver = _grants_of(params, phases)
        assert grants, name
        assert driver.accepted == sum(len(phase.writes) for phase in phases), name
    grants, _ = _grants_of(params, cases["weight 1 against weight 255"])
    assert 0 < grants.count(0) < grants.count(1) / 50
    tied = cases["ties broken by history, weights (93, 93, 154, 153)"]
    by_index = ArbiterParams(tie_break="index")
    assert _grants_of(params, tied)[0] != _grants_of(by_index, tied)[0]


# -- the fairness benchmark's policies ------------------------------------------------------------

def _batch(weight_sets):
    tasks = max(len(weights) for weights in weight_sets)
    array = np.zeros((len(weight_sets), tasks), dtype=np.int64)
    for row, weights in enumerate(weight_sets):
        array[row, :len(weights)] = weights
    return array, array > 0


def _batch_grants(policy, weights, present, rounds):
    policy.reset(weights, present)
    grants = np.zeros(weights.shape, dtype=int)
    for _ in range(rounds):
        winners = policy.pick(present)
        grants[np.arange(len(winners)), winners] += 1
    return grants


@pytest.mark.parametrize("policy", [p for p in fairness.standard_policies()
                                    if isinstance(p, fairness.DelayFactorPolicy)],
                         ids=lambda policy: policy.name)
def test_batched_arbiter_matches_simulate_shares(policy):
    weight_sets = [[1, 255], [3, 5, 7], [17, 1, 250, 64, 2, 9, 33, 128],
                   [200, 3, 3, 90, 41, 41, 41, 7, 255, 1, 12, 60, 60, 2, 150, 99]]
    weights, present = _batch(weight_sets)
    grants = _batch_grants(policy, weights, present, 700)
    params = policy.params
    for row, weight_set in enumerate(weight_sets):
        assert list(grants[row, :len(weight_set)]) == simulate_shares(
            weight_set, 700, table=params.table, frac_bits=params.frac_bits,
            tie_break=params.tie_break, decay=params.decay, weight_bits=params.weight_bits)


@pytest.mark.parametrize("policy", [fairness.SmoothWeightedRoundRobin(),
                                    fairness.DeficitRoundRobin(), fairness.StrideScheduling(),
                                    fairness.WF2QPlus()], ids=lambda policy: policy.name)
def test_classic_policies_are_proportional(policy):
    weights, present = _batch([[1, 255], [3, 5, 7], [10, 10, 10, 10, 20]])
    rounds = 2560
    grants = _batch_grants(policy, weights, present, rounds)
    ideal = rounds * weights / weights.sum(axis=1, keepdims=True)
    assert np.abs(grants - ideal).max() <= 2
    assert (grants[~present] == 0).all()


def test_smooth_wrr_sequence_is_nginx():
    # nginx's example: weights 5, 1, 1 give a a b a c a a.
    policy = fairness.SmoothWeightedRoundRobin()
    weights, present = _batch([[5, 1, 1]])
    policy.reset(weights, present)
    assert [int(policy.pick(present)[0]) for _ in range(7)] == [0, 0, 1, 0, 2, 0, 0]


def test_policies_grant_only_requesting_tasks():
    rng = np.random.default_rng(5)
    weights, present = fairness.random_weight_sets(6, rng)
    for policy in fairness.standard_policies():
        policy.reset(weights, present)
        for _ in range(200):
            request = present & (rng.random(present.shape) < 0.4)
            winners = policy.pick(request)
            rows = np.arange(len(winners))
            assert ((winners == -1) == ~request.any(axis=1)).all(), policy.name
            assert request[rows[winners >= 0], winners[winners >= 0]].all(), policy.name


def test_measurements_of_a_perfect_policy():
    weights, present = _batch([[1, 1], [1, 2]])
    result = fairness.run_pattern(fairness.SmoothWeightedRoundRobin(), weights, present,
                                  "backlogged", 600)
    assert result.share_error_max < 0.2
    assert result.lag_max <= 1
    assert result.jain_min > 0.9999
    assert result.worst_gap <= 1.5
    with pytest.raises(ValueError, match="^Pattern must be one of backlogged, on/off"):
        fairness.run_pattern(fairness.WF2QPlus(), weights, present, "bursty", 10)


def test_benchmark_writes_its_reports(tmp_path, capsys):
    assert fairness.main(["--sets", "4", "--rounds", "200", "--no-synth", "--out",
                          str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "backlogged:" in printed and "on/off:" in printed and "WF2Q+" in printed
    assert "model only" in printed
    rows = (tmp_path / "arbiter_fairness.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * len(fairness.standard_policies())
    assert (tmp_path / "arbiter_fairness.md").exists()


def test_cost_is_cached_by_the_verilog(tmp_path):
    # A cached result is returned without running Yosys; another circuit has another key.
    from hw.flow.arbiter_cost import arbiter_cost, arbiter_verilog, cache_key

    params = ArbiterParams(2, 1)
    text = arbiter_verilog(params)
    assert "module top" in text
    cached = {"luts": 1, "carries": 2, "ffs": 3, "name": params.name}
    (tmp_path / f"arbiter_{cache_key(text)}.json").write_text(json.dumps(cached))
    assert arbiter_cost(params, tmp_path) == cached
    assert cache_key(arbiter_verilog(ArbiterParams(2, 1, decay=False))) != cache_key(text)
