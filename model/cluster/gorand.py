"""Go's ``math/rand`` (Go 1.15, the FGD artifact's toolchain), stream for stream: the seeded
additive lagged Fibonacci source and the ``Rand`` methods the artifact's simulator calls
(``Int``, ``Intn``, ``Perm``, ``Shuffle``), so that its seed 42 here draws what seed 42
draws there.

The algorithms are Go's, restated from its documentation and source (``src/math/rand``:
``rng.go``, ``rand.go``, ``gen_cooked.go``; BSD licence); nothing is copied, not even the
table of "cooked" values: the source XORs its seeded state with the state of a generator
that ``gen_cooked.go`` seeds with 1 and steps 7.8e12 times, and that table is recomputed
here in closed form (:func:`cooked`). The generator ``x[n] = x[n-607] + x[n-273] mod 2^64``
is linear, so its state after ``N`` steps is ``t^N mod (t^607 - t^334 - 1)`` applied to the
initial state: 43 squarings of a 607-term polynomial instead of 7.8e12 steps.
``tests/test_gorand.py`` checks the result against values Go is known to give (seed 1:
``Int63`` 5577006791947779410, 8674665223082153551, ...; ``Intn(100)`` 81, 87, 47, ...).
"""

from functools import lru_cache

import numpy as np

__all__ = ["GoRand", "cooked"]

LENGTH, TAP = 607, 273                 # the lags of the generator
_M31 = (1 << 31) - 1                   # the seeding LCG's modulus (Park-Miller, a = 48271)
_MASK64 = (1 << 64) - 1
_MASK63 = (1 << 63) - 1
#: ``gen_cooked.go``: steps of the seed-1 generator whose state is the cooked table.
COOKED_STEPS = 7_800_000_000_000


def _seedrand(x: int) -> int:
    """One step of the seeding LCG (Go computes it with Schrage's method: the same value)."""
    return x * 48271 % _M31


def _seed_state(seed: int, shifts: tuple[int, int]) -> list[int]:
    """The 607 seeded words: the LCG stepped 20 times, then three steps per word combined
    at bit offsets ``shifts`` (``(40, 20)`` for a source, ``(20, 10)`` in gen_cooked)."""
    seed %= _M31
    if seed == 0:
        seed = 89482311
    x, state = seed, []
    for i in range(-20, LENGTH):
        x = _seedrand(x)
        if i >= 0:
            word = x << shifts[0]
            x = _seedrand(x)
            word ^= x << shifts[1]
            x = _seedrand(x)
            state.append((word ^ x) & _MASK64)
    return state


def _reduce(coefficients: list[int]) -> np.ndarray:
    """A polynomial modulo ``t^607 - t^334 - 1`` over the integers mod 2^64."""
    c = coefficients
    for degree in range(len(c) - 1, LENGTH - 1, -1):
        value = c[degree]
        if value:                       # t^d = t^(d-273) + t^(d-607)
            c[degree - TAP] = (c[degree - TAP] + value) & _MASK64
            c[degree - LENGTH] = (c[degree - LENGTH] + value) & _MASK64
    return np.array(c[:LENGTH], dtype=np.uint64)


def _power_of_t(n: int) -> np.ndarray:
    """``t^n mod (t^607 - t^334 - 1)``, coefficients mod 2^64 (numpy's uint64 arithmetic
    wraps, which is the modulus)."""
    result = np.zeros(LENGTH, dtype=np.uint64)
    result[0] = 1
    base = np.zeros(LENGTH, dtype=np.uint64)
    base[1] = 1
    while n:
        if n & 1:
            result = _reduce([int(v) for v in np.convolve(result, base)])
        n >>= 1
        if n:
            base = _reduce([int(v) for v in np.convolve(base, base)])
    return result


def _times_t(c: np.ndarray) -> np.ndarray:
    top = int(c[-1])
    shifted = [0] + [int(v) for v in c[:-1]]
    if top:
        shifted[LENGTH - TAP] = (shifted[LENGTH - TAP] + top) & _MASK64
        shifted[0] = (shifted[0] + top) & _MASK64
    return np.array(shifted, dtype=np.uint64)


def _step(state: list[int], steps: int) -> list[int]:
    """``state`` (a seeded word array, tap 0 and feed 334) after ``steps`` generator steps.
    The word written at step ``k`` goes to index ``(334 - k) mod 607`` and is ``x[k] =
    x[k-607] + x[k-273]``, the words before step 1 being ``x[-606] .. x[0]``."""
    initial = np.array([state[(LENGTH - TAP - k) % LENGTH] for k in range(-606, 1)],
                       dtype=np.uint64)
    after = [0] * LENGTH
    row = _power_of_t(steps)            # x[steps - 606] in terms of x[-606 .. 0]
    for k in range(steps - 606, steps + 1):
        after[(LENGTH - TAP - k) % LENGTH] = int(np.dot(row, initial)) & _MASK64
        row = _times_t(row)
    return after


@lru_cache(maxsize=1)
def cooked() -> tuple[int, ...]:
    """Go's ``rngCooked`` (as unsigned 64-bit words): gen_cooked's seed-1 state after
    :data:`COOKED_STEPS` steps."""
    return tuple(_step(_seed_state(1, (20, 10)), COOKED_STEPS))


class GoRand:
    """``rand.New(rand.NewSource(seed))`` of Go 1.15 (and the global functions after
    ``rand.Seed(seed)``). :meth:`randrange` and :meth:`shuffle` make it a drop-in for the
    ``random.Random`` calls of :func:`model.cluster.inflation.inflate` with Go's draws."""

    def __init__(self, seed: int):
        table = cooked()
        self.vec = [word ^ table[i] for i, word in enumerate(_seed_state(seed, (40, 20)))]
        self.tap, self.feed = 0, LENGTH - TAP

    def uint64(self) -> int:
        self.tap = self.tap - 1 if self.tap else LENGTH - 1
        self.feed = self.feed - 1 if self.feed else LENGTH - 1
        value = (self.vec[self.feed] + self.vec[self.tap]) & _MASK64
        self.vec[self.feed] = value
        return value

    def int63(self) -> int:
        """``Int63`` (and ``Int`` on 64-bit platforms)."""
        return self.uint64() & _MASK63

    def int31(self) -> int:
        return self.int63() >> 32

    def uint32(self) -> int:
        return self.int63() >> 31

    def int31n(self, n: int) -> int:
        """``Int31n``: a power of two masks; otherwise rejection above the largest multiple
        of ``n``, then the remainder."""
        if n <= 0:
            raise ValueError("invalid argument to Int31n")
        if n & (n - 1) == 0:
            return self.int31() & (n - 1)
        limit = _M31 - (1 << 31) % n
        value = self.int31()
        while value > limit:
            value = self.int31()
        return value % n

    def _int31n(self, n: int) -> int:
        """The unexported ``int31n`` of ``Shuffle``: Lemire's multiply-and-shift with
        rejection of the low word below ``2^32 mod n``."""
        product = self.uint32() * n
        low = product & 0xFFFFFFFF
        if low < n:
            threshold = (1 << 32) % n
            while low < threshold:
                product = self.uint32() * n
                low = product & 0xFFFFFFFF
        return product >> 32

    def intn(self, n: int) -> int:
        """``Intn`` for ``0 < n < 2^31`` (``Int31n``)."""
        if not 0 < n <= _M31:
            raise ValueError(f"Intn({n}) is outside 1 .. 2^31 - 1")
        return self.int31n(n)

    def perm(self, n: int) -> list[int]:
        """``Perm``: the inside-out shuffle, ``m[i] = m[j]; m[j] = i`` for ``j = Intn(i+1)``."""
        m = [0] * n
        for i in range(n):
            j = self.intn(i + 1)
            m[i] = m[j]
            m[j] = i
        return m

    def shuffle(self, items: list) -> None:
        """``Shuffle(len(items), swap)`` in place: from the last index down, swap with
        ``int31n(i + 1)`` (lists shorter than 2^31)."""
        if len(items) > _M31:
            raise ValueError("shuffle of more than 2^31 - 1 items")
        for i in range(len(items) - 1, 0, -1):
            j = self._int31n(i + 1)
            items[i], items[j] = items[j], items[i]

    def randrange(self, n: int) -> int:
        """``Intn(n)``, under the name :func:`model.cluster.inflation.inflate` calls."""
        return self.intn(n)
