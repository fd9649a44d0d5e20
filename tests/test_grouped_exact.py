"""Embodiment 5's view with the exact tree inside (:class:`hw.dispatch.views.GroupedExact`,
what the dispatcher builds for ``circuit = "grouped"``) against the seed's grouped circuit
(:class:`hw.maxblock.GroupedMaxFreeBlock`) and the model: the same length in the same clock,
every word of up to 12 blocks at latency 0, random words at every latency the view builds
(the tree's own pipeline, and registers in front where the groups are too few for it)."""

import random

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from hw.dispatch.views import GroupedExact
from hw.maxblock import GroupedMaxFreeBlock
from model.maxblock import grouped_max_free_run

# (n, groups): power-of-two and other group sizes, one group, every block a group.
CASES = [(8, 4), (12, 4), (12, 3), (12, 6), (10, 5), (9, 1), (6, 6), (16, 8), (64, 16),
         (128, 32), (128, 16), (48, 12), (48, 6)]


def _run(n, groups, latency, words):
    m = Module()
    m.domains.sync = ClockDomain()           # (latency 0 has no register of its own)
    m.submodules.mine = mine = GroupedExact(n, groups, latency)
    m.submodules.seed = seed = GroupedMaxFreeBlock(n, groups, latency=latency)
    seen = []

    async def bench(ctx):
        for clock, word in enumerate([*words, *[0] * latency]):
            ctx.set(mine.status, word)
            ctx.set(seed.status, word)
            if clock >= latency:
                expected = grouped_max_free_run(words[clock - latency], n, groups)
                got = (ctx.get(mine.length), ctx.get(seed.length))
                assert got == (expected, expected), (n, groups, latency, clock, got, expected)
                seen.append(expected)
            await ctx.tick()

    simulator = Simulator(m)
    simulator.add_clock(1e-6)
    simulator.add_testbench(bench)
    simulator.run()
    return seen


@pytest.mark.parametrize(("n", "groups"), [c for c in CASES if c[0] <= 12])
def test_every_word_at_latency_0(n, groups):
    seen = _run(n, groups, 0, list(range(1 << n)))
    assert len(seen) == 1 << n and max(seen) == n


@pytest.mark.parametrize(("n", "groups"), CASES)
@pytest.mark.parametrize("latency", [0, 1, 3])
def test_random_words_at_every_latency(n, groups, latency):
    rng = random.Random(f"grouped-exact/{n}/{groups}/{latency}")
    words = []
    for _ in range(150):
        # Mostly long free runs at random places, sometimes a random word.
        word = (rng.getrandbits(n) if rng.random() < 0.3 else
                ((1 << rng.randint(0, n)) - 1) << rng.randint(0, n // 2))
        words.append(word & ((1 << n) - 1))
    seen = _run(n, groups, latency, words)
    assert len(set(seen)) >= min(groups, 4), seen            # the lengths moved
