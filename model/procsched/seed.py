"""The seed's two formulas, as pure functions a real scheduler could call.

* stage 1, steps S11-S14: :func:`select_for_cache` (S12 the highest priority present, S13 all
  of them when they fit, S141-S142 else the largest weights), with :func:`task_weight` (S141,
  [0068]: alive time / run time);
* stage 2, steps S21-S23: :func:`slice_lengths` (the slice of each cached task, [0084]).

:class:`~model.procsched.policies.SeedPolicy` runs them as a scheduler.
"""

import math
from collections.abc import Sequence

__all__ = ["SLICE_RULES", "select_for_cache", "slice_lengths", "task_weight"]

SLICE_RULES = ("seed", "proportional")


def task_weight(alive_us: float, run_us: float) -> float:
    """The seed's weight: alive time / run time (steps S141, [0068]).

    A task that has never run has weight ``math.inf``: it has received no service at all, so
    stage 1 must rank it above every task that has, or a newcomer could wait behind tasks
    that already ran, the very unfairness the weight exists to prevent. Stage 2 cannot divide
    by an infinite weight; :func:`slice_lengths` substitutes a finite value.
    """
    if run_us < 0 or alive_us < run_us:
        raise ValueError(f"A task cannot have run {run_us} of its {alive_us} alive")
    if run_us == 0:
        return math.inf
    return alive_us / run_us


def select_for_cache(pool: Sequence, now_us: int, capacity: int) -> list:
    """Stage 1: the tasks to load into the hardware cache, in FIFO (pool) order.

    ``pool`` is the runnable tasks in arrival order, each with ``priority``, ``arrival_us``,
    ``task_id`` and ``run_us``. The candidates are the tasks of the highest priority present
    (S12); at most ``capacity`` of them load all (S13); more load the ``capacity`` largest
    weights at ``now_us`` (S141-S142), ties to the earlier arrival, then the lower id. The
    ranking decides only who loads: the cache is written in pool order, so the FIFO of stage
    2 runs the loaded tasks in arrival order.
    """
    if not pool:
        return []
    top = min(task.priority for task in pool)
    candidates = [task for task in pool if task.priority == top]
    if len(candidates) <= capacity:
        return candidates
    ranked = sorted(candidates, key=lambda task: (
        -task_weight(now_us - task.arrival_us, task.run_us), task.arrival_us, task.task_id))
    chosen = {id(task) for task in ranked[:capacity]}
    return [task for task in candidates if id(task) in chosen]


def slice_lengths(weights: Sequence[float], t0_us: int, rule: str = "seed") -> list[int]:
    """Stage 2: one slice (integer us, at least 1) per cached task, from the cached weights.

    ``rule="seed"``: ``tc = t0 * sum / own`` ([0084], the formula as written: a *smaller*
    weight gets a *longer* slice). ``rule="proportional"``: ``tc = t0 * n * own / sum`` with
    ``n`` the number of cached tasks (the prose's reading; equal weights give ``t0`` each).
    An infinite weight (a task that never ran) counts as the largest finite weight in the
    cache, or 1 when no cached task has run, so that it is treated as the most deserving
    without swamping the sum.
    """
    if rule not in SLICE_RULES:
        raise ValueError(f"Slice rule must be one of {', '.join(SLICE_RULES)}, not {rule!r}")
    if not weights:
        return []
    finite = [weight for weight in weights if math.isfinite(weight)]
    substitute = max(finite, default=1.0)
    values = [weight if math.isfinite(weight) else substitute for weight in weights]
    total = sum(values)
    if rule == "seed":
        raw = [t0_us * total / own for own in values]
    else:
        raw = [t0_us * len(values) * own / total for own in values]
    return [max(1, round(length)) for length in raw]
