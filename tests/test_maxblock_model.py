# amaranth: UnusedElaboratable=no
# (the bad-parameter tests construct components that are rejected, never elaborated)
"""The golden models of the max-free-block family, held against each other and the seed."""

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.maxblock import ExactMaxFreeBlock, GroupedMaxFreeBlock, MaxFreeBlock, SampledMaxFreeBlock
from model.maxblock import (
    PipelineModel,
    SharedMaxFreeBlockModel,
    SharedSchedule,
    aligned_blocks,
    check_samples,
    default_samples,
    exact_free_block,
    exact_max_latency,
    first_fit,
    free_mask,
    grouped_max_free_run,
    grouped_seed_procedure,
    largest_free_block,
    max_free_run,
    sampled_max_free_run,
    sampled_seed_procedure,
    seed_procedure,
)


def longest_run_by_scan(status, n, free_level):
    """The plainest possible reading: walk the blocks, count the current free run."""
    best = run = 0
    for i in range(n):
        run = run + 1 if (status >> i) & 1 == free_level else 0
        best = max(best, run)
    return best


# -- the seed's procedure agrees with the run-length functions ------------------------------------

@pytest.mark.parametrize("free_level", [0, 1])
@pytest.mark.parametrize("n", range(1, 11))
def test_seed_procedure_exhaustive(n, free_level):
    for status in range(1 << n):
        expected = longest_run_by_scan(status, n, free_level)
        assert max_free_run(status, n, free_level=free_level) == expected
        assert seed_procedure(status, n, free_level=free_level).length == expected


@pytest.mark.parametrize("free_level", [0, 1])
def test_seed_procedure_random_wide(free_level):
    rng = random.Random(7)
    for n in (64, 128, 256):
        for _ in range(50):
            density = rng.choice([0.05, 0.5, 0.95])
            status = sum(1 << i for i in range(n) if (rng.random() < density) != free_level)
            expected = longest_run_by_scan(status, n, free_level)
            assert seed_procedure(status, n, free_level=free_level).length == expected
            assert max_free_run(status, n, free_level=free_level) == expected


def test_seed_intermediates_mean_what_the_seed_says():
    # Bit j of SA_i is "blocks j .. j + i are all free"; SAR_i is "a free run of i + 1 exists".
    n = 12
    rng = random.Random(3)
    for free_level in (0, 1):
        for _ in range(200):
            status = rng.randrange(1 << n)
            free = free_mask(status, n, free_level)
            trace = seed_procedure(status, n, free_level=free_level)
            for i in range(n):
                window = (1 << (i + 1)) - 1
                starts = [j for j in range(n) if (free >> j) & window == window]
                accumulated_free = free_mask(trace.accumulated[i], n, free_level)
                assert [j for j in range(n) if accumulated_free >> j & 1] == starts
                assert trace.reduced[i] == int(bool(starts))
                # S_i: the word moved i places towards address 0, vacated bits occupied.
                shifted_free = free_mask(trace.shifted[i], n, free_level)
                assert shifted_free == free >> i


def test_seed_procedure_worked_example():
    # free_level=1, blocks 1..3 and 6..7 free: 0b1100_1110 -> SAR = 1, 1, 1, 0, ... -> 3.
    trace = seed_procedure(0b1100_1110, 8)
    assert [trace.reduced[i] for i in range(8)] == [1, 1, 1, 0, 0, 0, 0, 0]
    assert trace.length == 3
    assert trace.accumulated[1] == 0b0100_0110   # pairs start at 1, 2 and 6


@pytest.mark.parametrize("free_level", [0, 1])
@pytest.mark.parametrize(("n", "groups"), [(8, 1), (8, 2), (8, 4), (8, 8), (12, 3), (12, 6)])
def test_grouped_matches_seed_procedure(n, groups, free_level):
    size = n // groups
    for status in range(1 << n):
        expected = grouped_seed_procedure(status, n, groups, free_level=free_level).length
        approximate = grouped_max_free_run(status, n, groups, free_level=free_level)
        exact = max_free_run(status, n, free_level=free_level)
        assert approximate == expected
        assert approximate % size == 0
        assert approximate <= exact
        assert exact - approximate < 2 * size   # a run of 2·size - 1 holds a whole group


@pytest.mark.parametrize("free_level", [0, 1])
@pytest.mark.parametrize("samples", [(0,), (0, 1, 3, 7), (0, 1, 2, 3, 5, 9), (9,), (2, 5)])
def test_sampled_matches_seed_procedure(samples, free_level):
    n = 10
    for status in range(1 << n):
        expected = sampled_seed_procedure(status, n, samples, free_level=free_level).length
        approximate = sampled_max_free_run(status, n, samples, free_level=free_level)
        exact = max_free_run(status, n, free_level=free_level)
        assert approximate == expected
        assert approximate <= exact
        assert approximate == max([k + 1 for k in samples if k < exact], default=0)


def test_sampled_with_every_k_is_exact():
    n = 9
    for status in range(1 << n):
        assert sampled_max_free_run(status, n, range(n)) == max_free_run(status, n)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.just(n),
                                                        st.integers(0, (1 << n) - 1))),
       st.sampled_from([0, 1]))
def test_variants_bound_the_exact_length(n_status, free_level):
    n, status = n_status
    exact = max_free_run(status, n, free_level=free_level)
    assert exact == longest_run_by_scan(status, n, free_level)
    for groups in (g for g in (1, 2, 4, n) if n % g == 0):
        assert grouped_max_free_run(status, n, groups, free_level=free_level) <= exact
    assert sampled_max_free_run(status, n, default_samples(n), free_level=free_level) <= exact


# -- default samples ------------------------------------------------------------------------------

def test_default_samples_128():
    lengths = [k + 1 for k in default_samples(128)]
    assert lengths == [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32,
                       40, 48, 56, 64, 80, 96, 112, 128]
    no_primes = [k + 1 for k in default_samples(128, exclude_primes=True)]
    assert no_primes == [1, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128]


@pytest.mark.parametrize("exclude_primes", [False, True])
def test_default_samples_are_valid_for_every_n(exclude_primes):
    for n in range(1, 300):
        samples = default_samples(n, exclude_primes=exclude_primes)
        assert check_samples(n, samples) == tuple(samples)
        assert samples[0] == 0                                   # length 1 always sampled
        steps = [b - a for a, b in zip(samples, samples[1:], strict=False)]
        if exclude_primes:
            assert all(step & (step - 1) == 0 for step in steps[1:])  # 1 -> 4 is a step of 3
            assert not any(all((k + 1) % d for d in range(2, k + 1)) and k >= 1
                           for k in samples)
        else:
            assert all(step & (step - 1) == 0 for step in steps)     # powers of two


# -- the cycle model ------------------------------------------------------------------------------

def test_pipeline_model_latency_and_reset():
    function = lambda status: status + 100   # noqa: E731 - a visible stand-in
    assert [PipelineModel(function, 0).step(s) for s in (1, 2)] == [101, 102]
    with pytest.raises(TypeError, match=r"^Latency must be a non-negative integer, not -1$"):
        PipelineModel(function, -1)
    model = PipelineModel(function, 3)
    assert [model.cycle(s) for s in (1, 2, 3, 4, 5)] == [
        (0, 0), (0, 0), (0, 0), (101, 1), (102, 1)]
    # The reset takes effect at the edge and clears only the valid stages: the data go on.
    assert model.cycle(6, reset=True) == (103, 1)
    assert [model.cycle(s) for s in (7, 8, 9, 10)] == [
        (104, 0), (105, 0), (106, 0), (107, 1)]


def test_pipeline_model_stalls():
    function = lambda status: status + 100   # noqa: E731
    model = PipelineModel(function, 2, reset_output=None)
    seen = [model.cycle(1), model.cycle(2, enable=0), model.cycle(3, valid=0),
            model.cycle(4, enable=0), model.cycle(5), model.cycle(6), model.cycle(7)]
    # Power-on data are unknown; a stalled clock moves nothing and takes nothing in; a word
    # without valid moves through as data but with result_valid low.
    assert seen == [(None, 0), (None, 0), (None, 0), (101, 1), (101, 1), (103, 0), (105, 1)]
    assert model.step(8) == 106                    # step: the outputs alone


# -- parameter errors: the model and the RTL raise the same, pinned messages ----------------------

BAD_PARAMETERS = [
    # (constructor arguments, exception, message)
    (("full", 0, {}), TypeError, "Block count must be a positive integer, not 0"),
    (("full", 8.0, {}), TypeError, "Block count must be a positive integer, not 8.0"),
    (("full", True, {}), TypeError, "Block count must be a positive integer, not True"),
    (("full", 8, {"free_level": 2}), ValueError,
     "Free level must be 1 (free blocks read 1) or 0 (free blocks read 0), not 2"),
    (("full", 8, {"free_level": "1"}), TypeError,
     "Free level must be the integer 0 or 1, not '1'"),
    (("full", 8, {"latency": 2}), ValueError,
     "Latency must be 0 (combinational), 1 (registered output) or 3 (the seed's three "
     "registered steps), not 2"),
    (("full", 8, {"latency": None}), TypeError, "Latency must be an integer, not None"),
    (("grouped", 128, {"groups": 5}), ValueError, "Group count 5 must divide the block count 128"),
    (("grouped", 8, {"groups": 16}), ValueError, "Group count 16 must divide the block count 8"),
    (("grouped", 8, {"groups": 0}), TypeError, "Group count must be a positive integer, not 0"),
    (("sampled", 16, {"samples": []}), ValueError, "Samples must not be empty"),
    (("sampled", 16, {"samples": 3}), TypeError, "Samples must be a sequence of integers, not 3"),
    (("sampled", 16, {"samples": [0, 1.5]}), TypeError, "Samples must be integers, not 1.5"),
    (("sampled", 16, {"samples": [0, 3, 3]}), ValueError,
     "Samples must be strictly increasing, but 3 follows 3"),
    (("sampled", 16, {"samples": [0, 4, 2]}), ValueError,
     "Samples must be strictly increasing, but 2 follows 4"),
    (("sampled", 16, {"samples": [0, 16]}), ValueError,
     "Sample 16 is out of range: samples must lie in 0..15"),
    (("sampled", 16, {"samples": [-1, 3]}), ValueError,
     "Sample -1 is out of range: samples must lie in 0..15"),
    (("sampled", 16, {"samples": [0, 4, 6]}), ValueError,
     "Sample steps must not decrease, but the step 2 after sample 4 is smaller than the "
     "step 4 before it"),
]


def _model_call(kind, n, kwargs):
    kwargs = dict(kwargs)
    kwargs.pop("latency", None)
    if kind == "full":
        return max_free_run(0, n, **kwargs)
    if kind == "grouped":
        return grouped_max_free_run(0, n, kwargs.pop("groups"), **kwargs)
    return sampled_max_free_run(0, n, kwargs.pop("samples"), **kwargs)


def _rtl_call(kind, n, kwargs):
    kwargs = dict(kwargs)
    if kind == "full":
        return MaxFreeBlock(n, **kwargs)
    if kind == "grouped":
        return GroupedMaxFreeBlock(n, kwargs.pop("groups"), **kwargs)
    return SampledMaxFreeBlock(n, kwargs.pop("samples"), **kwargs)


@pytest.mark.parametrize(("arguments", "exception", "message"), BAD_PARAMETERS,
                         ids=[m[:40] for _, _, m in BAD_PARAMETERS])
def test_bad_parameters(arguments, exception, message):
    with pytest.raises(exception, match=f"^{re.escape(message)}$"):
        _rtl_call(*arguments)
    if "latency" not in arguments[2]:       # the models have no latency
        with pytest.raises(exception, match=f"^{re.escape(message)}$"):
            _model_call(*arguments)


def test_bad_status_word():
    with pytest.raises(ValueError, match=r"^Status 0x100 does not fit in 8 bits$"):
        max_free_run(0x100, 8)
    with pytest.raises(TypeError, match=r"^Status must be an integer, not '3'$"):
        max_free_run("3", 8)


# -- the exact allocator primitive ----------------------------------------------------------------

def runs_by_scan(status, n, free_level):
    """Every maximal free run as (start, length), by walking the blocks."""
    runs, start = [], None
    for i in range(n + 1):
        free = i < n and (status >> i) & 1 == free_level
        if free and start is None:
            start = i
        elif not free and start is not None:
            runs.append((start, i - start))
            start = None
    return runs


@pytest.mark.parametrize("free_level", [0, 1])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 10])
def test_largest_free_block_and_first_fit_exhaustive(n, free_level):
    for status in range(1 << n):
        runs = runs_by_scan(status, n, free_level)
        longest = max((length for _, length in runs), default=0)
        start = min((s for s, length in runs if length == longest), default=0)
        assert largest_free_block(status, n, free_level=free_level) == (start, longest)
        for request in range(n + 1):
            fits = [s for s, length in runs if length >= request]
            expected = 0 if request == 0 else min(fits, default=None)
            assert first_fit(status, n, request, free_level=free_level) == expected
            outputs = exact_free_block(status, request, n, free_level=free_level)
            assert (outputs.length, outputs.start) == (longest, start)
            assert outputs.fit == int(expected is not None)
            assert outputs.fit_start == (expected or 0)


def test_first_fit_worked_example():
    # free_level=1: runs at 1..3 (3 blocks) and 8..11 (4 blocks).
    status = 0b1111_0000_1110
    assert largest_free_block(status, 12) == (8, 4)
    assert [first_fit(status, 12, r) for r in range(6)] == [0, 1, 1, 1, 8, None]


def test_exact_parameter_errors():
    with pytest.raises(ValueError, match=r"^Request 9 is out of range: requests must lie in "
                                         r"0\.\.8$"):
        first_fit(0, 8, 9)
    with pytest.raises(TypeError, match=r"^Request must be an integer, not None$"):
        first_fit(0, 8, None)
    message = ("Latency of the exact circuit for 128 blocks must be 0 (combinational), 1 "
               "(registered outputs) or up to 11 (a register after each of its 11 pieces of "
               "logic), not 12")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        ExactMaxFreeBlock(128, latency=12)
    message = ("Latency of the exact circuit for 4 blocks must be 0 (combinational) or 1 "
               "(registered outputs): it is one piece of logic, with nothing to pipeline, "
               "not 2")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        ExactMaxFreeBlock(4, latency=2)


@pytest.mark.parametrize(("n", "deepest"), [
    # One leaf (or single blocks) below five blocks; 2 log2(n) - 3 for a power of two, one
    # more (the join) for the rest.
    (1, 1), (3, 1), (4, 1), (5, 2), (8, 3), (12, 4), (16, 5), (32, 7), (100, 10), (128, 11),
    (256, 13),
])
def test_exact_latencies_are_the_cuts_of_the_circuit(n, deepest):
    # Every latency the constructor accepts puts a register where there is logic to cut: the
    # deepest pipeline has one register per piece of the circuit, and no more are accepted.
    assert exact_max_latency(n) == deepest == ExactMaxFreeBlock.max_latency(n)
    component = ExactMaxFreeBlock(n, latency=deepest)
    assert len(component._pieces()[0]) == deepest
    with pytest.raises(ValueError):
        ExactMaxFreeBlock(n, latency=deepest + 1)


def test_aligned_blocks():
    assert aligned_blocks(0, 100) == [(0, 64), (64, 32), (96, 4)]
    assert aligned_blocks(64, 112) == [(64, 32), (96, 16)]
    assert aligned_blocks(5, 8) == [(5, 1), (6, 2)]
    for low in range(20):
        for high in range(low, 40):
            blocks = aligned_blocks(low, high)
            assert sum(size for _, size in blocks) == high - low
            assert all(start % size == 0 and size & (size - 1) == 0 for start, size in blocks)


# -- the shared unit's schedule -------------------------------------------------------------------

BAD_SCHEDULES = [
    ({"width": 0}, TypeError, "Unit width must be a positive integer, not 0"),
    ({"periods": ()}, ValueError, "Schedule must be a non-empty sequence of periods, not ()"),
    ({"periods": ((),)}, ValueError,
     "Period 1 must be a non-empty sequence of (name, size) pairs, not ()"),
    ({"periods": ((("a", 8),), (("b", 4), ("a", 4)))}, ValueError,
     "Resource type 'a' appears in periods 1 and 2; every type must appear exactly once"),
    ({"periods": ((("a", 64), ("b", 48), ("c", 32)),)}, ValueError,
     "Period 1 packs 64 + 48 + 32 = 144 blocks, more than the unit's width 128"),
    ({"periods": ((("a", 0),),)}, TypeError,
     "Resource type 'a' must have a positive integer size, not 0"),
    ({"periods": ((("2a", 4),),)}, ValueError,
     "Period 1: resource type name must be an identifier, not '2a'"),
    ({"periods": ((("a", 4, 1),),)}, ValueError,
     "Period 1: a resource type is a (name, size) pair, not ('a', 4, 1)"),
]


@pytest.mark.parametrize(("arguments", "exception", "message"), BAD_SCHEDULES,
                         ids=[m[:40] for _, _, m in BAD_SCHEDULES])
def test_bad_schedules(arguments, exception, message):
    with pytest.raises(exception, match=f"^{re.escape(message)}$"):
        SharedSchedule(**arguments)


def test_seed_schedule_and_model():
    schedule = SharedSchedule()
    assert schedule.types == {"vgpr": 128, "sgpr": 64, "lds": 48}
    assert [schedule.placement(name) for name in schedule.types] == [(0, 0), (1, 0), (1, 64)]
    model = SharedMaxFreeBlockModel(schedule, exact=True)
    words = {"vgpr": 0b1111 << 100, "sgpr": 0b0110, "lds": (1 << 48) - 1}
    requests = {"vgpr": 3, "sgpr": 3, "lds": 49}
    outputs = [model.step(words, requests) for _ in range(3)]
    assert outputs[0]["result_valid"] == {"vgpr": 0, "sgpr": 0, "lds": 0}   # reset values
    assert outputs[0]["length"] == {"vgpr": None, "sgpr": None, "lds": None}   # no reset
    assert outputs[1]["result_valid"] == {"vgpr": 1, "sgpr": 0, "lds": 0}
    assert outputs[1]["length"]["vgpr"] == 4 and outputs[1]["start"]["vgpr"] == 100
    assert outputs[1]["fit"]["vgpr"] == 1 and outputs[1]["fit_start"]["vgpr"] == 100
    assert outputs[2]["result_valid"] == {"vgpr": 0, "sgpr": 1, "lds": 1}
    assert outputs[2]["length"] == {"vgpr": 4, "sgpr": 2, "lds": 48}    # vgpr held
    assert outputs[2]["fit"] == {"vgpr": 1, "sgpr": 0, "lds": 0}        # 49 never fits 48
    # A stalled clock holds everything (clock 3 shows vgpr served in clock 2, and so does
    # clock 4); period 1 served without valid in clock 4 keeps sgpr's and lds's answers.
    stalled = model.step(words, requests, enable=0)
    assert stalled["result_valid"] == {"vgpr": 1, "sgpr": 0, "lds": 0}
    assert model.step({"vgpr": 0, "sgpr": 0, "lds": 0}, requests, valid=0) == stalled
    after = model.step(words, requests)
    assert after["result_valid"] == {"vgpr": 0, "sgpr": 0, "lds": 0}
    assert after["length"] == outputs[2]["length"]
