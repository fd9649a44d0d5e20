"""Go's math/rand restated (model.cluster.gorand) against values Go is known to give, and the
closed-form jump of the cooked table against stepping the generator."""

import pytest

from model.cluster import gorand
from model.cluster.gorand import GoRand, cooked


def _stepped(state, steps):
    """The generator stepped one by one, as gen_cooked's vrand does (tap 0, feed 334)."""
    state, tap, feed = list(state), 0, gorand.LENGTH - gorand.TAP
    for _ in range(steps):
        tap, feed = (tap - 1) % gorand.LENGTH, (feed - 1) % gorand.LENGTH
        state[feed] = (state[feed] + state[tap]) % (1 << 64)
    return state


@pytest.mark.parametrize("steps", [1, 272, 273, 606, 607, 608, 5000])
def test_jump_equals_stepping(steps):
    start = gorand._seed_state(1, (20, 10))
    assert gorand._step(start, steps) == _stepped(start, steps)


def test_go_is_known_to_give_these():
    # Go's rngCooked[0] as int64, and the default (seed 1) source's first values: Int63, and
    # Intn(100), which many a "Go's rand is not random" post prints.
    assert cooked()[0] - (1 << 64) == -4181792142133755926
    source = GoRand(1)
    assert [source.int63() for _ in range(3)] == [5577006791947779410, 8674665223082153551,
                                                  6129484611666145821]
    source = GoRand(1)
    assert [source.intn(100) for _ in range(10)] == [81, 87, 47, 59, 81, 18, 25, 40, 56, 0]


def test_perm_and_shuffle_are_permutations_and_seeds_repeat():
    for seed in (0, 1, 42, -7, 1 << 40):
        assert sorted(GoRand(seed).perm(50)) == list(range(50))
        items = list(range(50))
        GoRand(seed).shuffle(items)
        assert sorted(items) == list(range(50))
        again = list(range(50))
        GoRand(seed).shuffle(again)
        assert again == items
    assert GoRand(0).int63() == GoRand(89482311).int63()      # Go's stand-in for seed 0
    with pytest.raises(ValueError):
        GoRand(1).intn(0)


def test_power_of_two_and_rejection_paths():
    # Int31n: a power of two masks the top 31 bits; otherwise values stay below n and the
    # two paths draw one word each here.
    source, reference = GoRand(5), GoRand(5)
    assert source.int31n(8) == reference.int31() & 7
    assert all(0 <= source.int31n(1000) < 1000 for _ in range(200))
    assert all(0 <= source._int31n(3) < 3 for _ in range(200))
