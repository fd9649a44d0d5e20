"""Stimulus for the max-free-block benches: directed corner cases and seeded random words.

Pure Python, shared by the cocotb benches (``tb/``) and the Amaranth-simulator tests
(``tests/``). Every generator builds "free masks" (1 = free) and encodes them for the
block's ``free_level`` at the end, so a corner case means the same thing in both encodings.
"""

import os
import random
from collections.abc import Iterable

from hw.flow.catalog import BlockConfig
from model.maxblock import max_free_run

__all__ = ["DENSITIES", "bench_seed", "directed_inputs", "directed_vectors", "exhaustive_inputs",
           "exhaustive_vectors", "packed_fields", "random_free_masks", "random_inputs",
           "random_vectors"]

#: Occupancy densities of the random stimulus (the fraction of blocks in use).
DENSITIES = (0.1, 0.25, 0.5, 0.75, 0.9)


def bench_seed() -> int:
    """The seed of a bench's random stimulus: ``TB_SEED`` (default 2026; ``random`` draws a
    fresh one). Every bench prints it and puts it in its replay command."""
    text = os.environ.get("TB_SEED", "2026")
    return random.SystemRandom().randrange(1 << 32) if text == "random" else int(text)


def packed_fields(layout) -> dict[str, tuple[int, int]]:
    """``{name: (offset, width)}`` of an ``amaranth.lib.data.StructLayout``: where each field
    sits in the flattened port that cocotb sees."""
    return {name: (field.offset, field.width) for name, field in layout}


def _encode(free_masks: Iterable[int], n: int, free_level: int) -> list[int]:
    full = (1 << n) - 1
    seen, words = set(), []
    for free in free_masks:
        word = free if free_level else ~free & full
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def _run(start: int, length: int, n: int) -> int:
    """A free run of ``length`` blocks from ``start``, clipped to the word."""
    start, end = max(start, 0), min(start + length, n)
    return ((1 << (end - start)) - 1) << start if end > start else 0


def directed_vectors(config: BlockConfig) -> list[int]:
    """Corner cases for ``config``, each status word once, in a fixed order.

    All free; all occupied; one free (and one occupied) block at each end; both alternating
    patterns; a single run of every length at each end of the word (at every position when
    ``n <= 32``); two runs of neighbouring lengths in both orders; for the grouped kind, a run
    exactly covering every span of whole groups and the same run one block shorter or longer
    at either end; for the sampled kind, runs of length ``k``, ``k + 1`` and ``k + 2`` around
    every sample ``k`` (length ``k + 1``), at both ends and in the middle.
    """
    n = config.n
    full = (1 << n) - 1
    masks = [full, 0, 1, 1 << (n - 1), full ^ 1, full ^ (1 << (n - 1)),
             full // 3, (full // 3) << 1 & full]
    for length in range(1, n + 1):
        starts = range(n - length + 1) if n <= 32 else (0, n - length, (n - length) // 2)
        masks += [_run(start, length, n) for start in starts]
        # Two runs separated by one occupied block: the longer first, then the shorter first.
        if 2 * length + 2 <= n:
            masks.append(_run(0, length + 1, n) | _run(length + 2, length, n))
            masks.append(_run(0, length, n) | _run(length + 1, length + 1, n))
    if config.kind == "grouped":
        size = n // config.groups
        for first in range(config.groups):
            for last in range(first, config.groups):
                start, length = first * size, (last - first + 1) * size
                masks += [_run(start, length, n),
                          _run(start + 1, length - 1, n), _run(start, length - 1, n),
                          _run(start - 1, length + 1, n), _run(start, length + 1, n)]
    if config.kind == "sampled":
        for k in config.samples:
            for length in (k, k + 1, k + 2):
                if 1 <= length <= n:
                    masks += [_run(0, length, n), _run(n - length, length, n),
                              _run((n - length) // 2, length, n)]
    return _encode(masks, n, config.free_level)


def exhaustive_vectors(config: BlockConfig) -> list[int]:
    """Every status word of ``config.n`` bits (only sensible for small ``n``)."""
    return list(range(1 << config.n))


def random_free_masks(n: int, count: int, rng: random.Random) -> list[int]:
    """``count`` seeded random free masks of ``n`` blocks (1 = free).

    Half are independent blocks, each occupied with a density drawn from :data:`DENSITIES`;
    the other half are alternating free and occupied runs with geometric lengths of a random
    mean, so that long free runs -- which independent blocks almost never produce -- are
    exercised too.
    """
    masks = []
    for index in range(count):
        if index % 2 == 0:
            density = rng.choice(DENSITIES)
            masks.append(sum(1 << i for i in range(n) if rng.random() >= density))
        else:
            mean = rng.uniform(1, max(1.0, n / 2))
            free, position, is_free = 0, 0, rng.random() < 0.5
            while position < n:
                length = 1
                while rng.random() > 1 / mean:
                    length += 1
                if is_free:
                    free |= _run(position, length, n)
                position += length
                is_free = not is_free
            masks.append(free)
    return masks


def random_vectors(config: BlockConfig, count: int, rng: random.Random) -> list[int]:
    """``count`` seeded random status words (see :func:`random_free_masks`)."""
    full = (1 << config.n) - 1
    return [mask if config.free_level else ~mask & full
            for mask in random_free_masks(config.n, count, rng)]


# -- input tuples (status word, and the request where the block has one) -------------------------

def _requests_around(config: BlockConfig, word: int) -> list[int]:
    # The requests that matter for one word: none, one block, exactly the longest run, one
    # more than that, and everything.
    longest = max_free_run(word, config.n, free_level=config.free_level)
    return sorted({0, 1, longest, min(longest + 1, config.n), config.n})


def directed_inputs(config: BlockConfig) -> list[tuple[int, ...]]:
    """:func:`directed_vectors` as input tuples; each word with the requests that matter."""
    words = directed_vectors(config)
    if "request" not in config.inputs:
        return [(word,) for word in words]
    return [(word, request) for word in words for request in _requests_around(config, word)]


def exhaustive_inputs(config: BlockConfig) -> list[tuple[int, ...]]:
    """Every status word (with every request, where the block has one)."""
    words = exhaustive_vectors(config)
    if "request" not in config.inputs:
        return [(word,) for word in words]
    return [(word, request) for word in words for request in range(config.n + 1)]


def random_inputs(config: BlockConfig, count: int, rng: random.Random) -> list[tuple[int, ...]]:
    """:func:`random_vectors` as input tuples; the request, where there is one, is uniform in
    ``0 .. n`` a quarter of the time, small (``0 .. 8``) a quarter, and otherwise the longest
    free run of the word or one more -- the edge between fitting and not."""
    words = random_vectors(config, count, rng)
    if "request" not in config.inputs:
        return [(word,) for word in words]
    inputs = []
    for word in words:
        longest = max_free_run(word, config.n, free_level=config.free_level)
        choice = rng.randrange(4)
        request = (rng.randint(0, config.n) if choice == 0 else
                   rng.randint(0, min(8, config.n)) if choice == 1 else
                   min(longest + choice - 2, config.n))
        inputs.append((word, request))
    return inputs
