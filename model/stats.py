"""Summary statistics shared by the system models' reports.

Plain functions over sequences of numbers; every one returns ``0.0`` (or zeros) for an empty
input rather than raising, because a scenario in which a priority never ran is a result to
report, not an error.
"""

from collections.abc import Sequence

import numpy as np

__all__ = ["coefficient_of_variation", "jain_index", "summary"]


def summary(values: Sequence[float]) -> dict:
    """``{"count", "mean", "p50", "p99", "max"}`` of ``values`` (percentiles by numpy's linear
    interpolation)."""
    if len(values) == 0:
        return {"count": 0, "mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    array = np.asarray(values, dtype=float)
    return {
        "count": int(array.size),
        "mean": float(array.mean()),
        "p50": float(np.percentile(array, 50)),
        "p99": float(np.percentile(array, 99)),
        "max": float(array.max()),
    }


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
