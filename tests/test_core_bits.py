"""The compiled core's free-block functions (model/dispatch/core/src/bits.hpp) against their
Python twins in model.maxblock, bit for bit: exhaustively for every word of up to 12
blocks, then seeded random words up to 4,096 blocks across every word-count boundary."""

import random

import pytest

from model.dispatch.core import core, reason
from model.maxblock import first_fit_unchecked, grouped_run_unchecked, longest_run_unchecked

needs_core = pytest.mark.skipif(core is None, reason=reason or "compiled core not built")


def _words(n: int, count: int, rng: random.Random):
    """Random n-block words with runs of every scale: sparse, dense and blocky."""
    for _ in range(count):
        kind = rng.randrange(3)
        if kind == 0:
            yield rng.getrandbits(n)
        elif kind == 1:
            yield rng.getrandbits(n) | rng.getrandbits(n) | rng.getrandbits(n)
        else:
            word, position = 0, 0
            while position < n:
                length = rng.randint(1, max(1, n // rng.choice((2, 8, 32))))
                if rng.random() < 0.5:
                    word |= ((1 << min(length, n - position)) - 1) << position
                position += length
            yield word


@needs_core
def test_exhaustive_to_twelve_blocks():
    for n in range(1, 13):
        for word in range(1 << n):
            assert core.longest_run(word, n) == longest_run_unchecked(word), (n, word)
            for request in range(1, n + 1):
                assert core.first_fit(word, n, request) == first_fit_unchecked(word, request), \
                    (n, word, request)
            for groups in (g for g in range(1, n + 1) if n % g == 0):
                assert core.grouped_run(word, n, groups) == \
                    grouped_run_unchecked(word, n, groups), (n, word, groups)


@needs_core
@pytest.mark.parametrize("n", [63, 64, 65, 127, 128, 129, 200, 256, 511, 1000, 2048, 4096])
def test_random_words_across_word_boundaries(n):
    seed = 32_000 + n
    rng = random.Random(seed)
    for word in _words(n, 300, rng):
        assert core.longest_run(word, n) == longest_run_unchecked(word), (seed, n, hex(word))
        for request in {1, 2, rng.randint(1, n), n, longest_run_unchecked(word) or 1}:
            assert core.first_fit(word, n, request) == first_fit_unchecked(word, request), \
                (seed, n, hex(word), request)
        groups = rng.choice([g for g in (1, 2, 4, 8, 16, 3, 5) if n % g == 0])
        assert core.grouped_run(word, n, groups) == grouped_run_unchecked(word, n, groups), \
            (seed, n, hex(word), groups)


@needs_core
def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="1 .. 4096 blocks"):
        core.longest_run(1, 4097)
    with pytest.raises(ValueError, match="request must be >= 1"):
        core.first_fit(1, 8, 0)


def test_the_core_is_built_where_a_compiler_is():
    """Where g++ is, `make venv` (and `make test`) built the core, so the tests above ran."""
    import shutil

    from model.dispatch.core.build import build

    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("no C++ compiler here")
    built, message = build()
    assert built, message
