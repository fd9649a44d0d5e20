"""Summary statistics shared by the system models' reports.

Plain functions over sequences of numbers; every one returns ``0.0`` (or zeros) for an empty
input rather than raising, because a scenario in which a priority never ran is a result to
report, not an error.

Claims over seeds: :func:`interval` is the mean of one metric over independent runs (one per
workload seed) with its two-sided Student-t confidence interval; :func:`compare` sets a
policy against its baseline *on the same seeds* and judges the claim from the interval of
the per-seed ratio: "holds" when the whole interval is on the better side of 1, "does not
hold" when it is all on the worse side, "cannot tell" when it contains 1.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["VERDICTS", "Comparison", "Interval", "coefficient_of_variation", "compare",
           "flat_metrics", "interval", "jain_index", "percentiles", "summary"]

#: The three answers a claim over seeds can get.
VERDICTS = ("holds", "does not hold", "cannot tell")


def percentiles(array: np.ndarray, qs: Sequence[float]) -> list[float]:
    """``np.percentile(array, qs).tolist()`` for a non-empty 1-D float64 ``array`` without
    NaNs, the same floats, in a fraction of its time on small arrays (a run's summaries ask
    for 17): numpy's linear method step by step -- the virtual index ``(n - 1) x q / 100``,
    the order statistics either side of it (one ``np.partition``, as numpy finds them) and
    ``_lerp``'s two-sided interpolation; past the last index both sides are the last value
    and the weight is the index minus -1, as numpy has it."""
    n = array.size
    last = n - 1
    sides = []
    for q in qs:
        virtual = last * (q / 100)
        if virtual >= last:
            sides.append((last, last, virtual + 1))
        else:
            low = math.floor(virtual)
            sides.append((low, low + 1, virtual - low))
    ordered = np.partition(array, sorted({i for low, high, _ in sides for i in (low, high)}))
    out = []
    for low, high, gamma in sides:
        a, b = float(ordered[low]), float(ordered[high])
        difference = b - a
        out.append(b - difference * (1 - gamma) if gamma >= 0.5 else a + difference * gamma)
    return out


def summary(values: Sequence[float]) -> dict:
    """``{"count", "mean", "p50", "p99", "max"}`` of ``values`` (percentiles by numpy's linear
    interpolation, :func:`percentiles`)."""
    if len(values) == 0:
        return {"count": 0, "mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    array = np.asarray(values, dtype=float)
    p50, p99 = percentiles(array, (50, 99))
    return {
        "count": int(array.size),
        "mean": float(array.mean()),
        "p50": p50,
        "p99": p99,
        "max": float(array.max()),
    }


def flat_metrics(results: Mapping, *, skip_private: bool = True) -> dict[str, float]:
    """Every number in a run's nested results, by dotted path (``wait.per_priority.3.max``):
    integers and floats as they are, booleans as 0 and 1; strings, lists and ``None`` are left
    out (a list is a series or per-item data, not one metric). Keys starting with ``_`` (data
    kept for plots) are left out unless ``skip_private`` is false. The order is the results'."""
    flat: dict[str, float] = {}

    def walk(node: Mapping, prefix: str) -> None:
        for key, value in node.items():
            key = str(key)
            if skip_private and key.startswith("_"):
                continue
            name = f"{prefix}{key}"
            if isinstance(value, Mapping):
                walk(value, f"{name}.")
            elif isinstance(value, bool):
                flat[name] = int(value)
            elif isinstance(value, int | float | np.integer | np.floating):
                flat[name] = value.item() if isinstance(value, np.generic) else value

    walk(results, "")
    return flat


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)``: 1 when all equal, 1/n when one
    takes everything; 1.0 for an empty or all-zero input (nobody was treated unequally)."""
    array = np.asarray(values, dtype=float)
    square_sum = float((array * array).sum())
    if array.size == 0 or square_sum == 0.0:
        return 1.0
    return float(array.sum()) ** 2 / (array.size * square_sum)


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Population standard deviation over mean; 0.0 when the mean is 0."""
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return 0.0
    mean = float(array.mean())
    return float(array.std()) / mean if mean else 0.0


@dataclass(frozen=True)
class Interval:
    """The mean of ``count`` values and its confidence interval ``[low, high]``."""

    mean: float
    low: float
    high: float
    count: int
    confidence: float = 0.95

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.mean:.4g} [{self.low:.4g}, {self.high:.4g}]"


def interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Mean of ``values`` with its two-sided Student-t interval (``n - 1`` degrees of freedom).

    A single value says nothing about the spread: its interval is ``[-inf, inf]``.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"Confidence must be between 0 and 1, not {confidence!r}")
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        raise ValueError("An interval needs at least one value")
    mean = float(array.mean())
    if array.size == 1:
        return Interval(mean, -np.inf, np.inf, 1, confidence)
    # The Student-t quantile is scipy.special's stdtrit, the function scipy.stats.t.ppf
    # calls (the same value, bit for bit): scipy.stats costs about 0.6 s more to import, in
    # every process that judges a claim. Imported here: every cocotb simulator process that
    # loads the dispatcher model (which never asks for an interval) would pay for it.
    from scipy.special import stdtrit

    half = float(stdtrit(array.size - 1, 0.5 + confidence / 2)
                 * array.std(ddof=1) / np.sqrt(array.size))
    return Interval(mean, mean - half, mean + half, int(array.size), confidence)


@dataclass(frozen=True)
class Comparison:
    """A policy against its baseline over the same seeds (see :func:`compare`).

    ``ratio`` is the interval of the per-seed ``policy / baseline`` (None when a baseline
    value is 0 and the policy's is not); ``difference`` that of ``policy - baseline``.
    """

    policy: Interval
    baseline: Interval
    ratio: Interval | None
    difference: Interval
    verdict: str

    def as_dict(self) -> dict:
        return {"policy": self.policy.as_dict(), "baseline": self.baseline.as_dict(),
                "ratio": None if self.ratio is None else self.ratio.as_dict(),
                "difference": self.difference.as_dict(), "verdict": self.verdict}


def compare(policy: Sequence[float], baseline: Sequence[float], *, higher_is_better: bool,
            confidence: float = 0.95) -> Comparison:
    """Judge "the policy beats its baseline" from paired runs (element ``i`` of both on seed
    ``i``): by the interval of the per-seed ratio ``policy / baseline`` against 1, or, when a
    baseline value is 0 and the policy's is not, of the difference against 0.

    "holds" when the whole interval is on the better side; "does not hold" when none of it
    is (an exact tie included); "cannot tell" when it straddles the neutral value. A seed on
    which both are 0 is a tie (ratio 1).
    """
    mine, theirs = np.asarray(policy, dtype=float), np.asarray(baseline, dtype=float)
    if mine.shape != theirs.shape or mine.ndim != 1:
        raise ValueError(f"Paired runs need as many policy values as baseline values, not "
                         f"{mine.size} and {theirs.size}")
    both_zero = (mine == 0) & (theirs == 0)
    difference = interval(mine - theirs, confidence)
    ratio = None
    if not np.any((theirs == 0) & ~both_zero):
        ratio = interval(np.where(both_zero, 1.0, mine / np.where(both_zero, 1.0, theirs)),
                         confidence)
    judged, neutral = (difference, 0.0) if ratio is None else (ratio, 1.0)
    low, high = ((judged.low, judged.high) if higher_is_better
                 else (-judged.high, -judged.low))
    neutral = neutral if higher_is_better else -neutral
    verdict = (VERDICTS[0] if low > neutral else VERDICTS[1] if high <= neutral
               else VERDICTS[2])
    return Comparison(interval(mine, confidence), interval(theirs, confidence), ratio,
                      difference, verdict)
