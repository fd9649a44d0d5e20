"""The seed's two formulas and its reload rule, as pure functions a real scheduler could call.

* stage 1, steps S11-S14: :func:`select_for_cache` (S12 the highest priority present, S13 all
  of them when they fit, S141-S142 else the largest weights), with :func:`task_weight` (S141,
  [0068]: alive time / run time) and :func:`reload_candidates` ([0094]: which tasks compete
  when the cache is loaded again);
* stage 2, steps S21-S23: :func:`slice_lengths` (the slice of each cached task, [0084]).

:class:`~model.procsched.policies.SeedPolicy` runs them as a scheduler. Every function checks
its arguments and raises ``TypeError``/``ValueError`` naming the argument, as the scenario
reader does for a file.
"""

import math
from collections.abc import Sequence

from model.procsched.config import RELOAD_RULES

__all__ = ["SLICE_RULES", "reload_candidates", "select_for_cache", "slice_lengths",
           "task_weight"]

SLICE_RULES = ("seed", "proportional")


def _check_positive_int(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be a positive integer, not {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


_TASK_FIELDS = ("priority", "arrival_us", "task_id", "run_us")


def _check_tasks(name: str, tasks) -> None:
    """``tasks`` is a list or tuple of task objects (each with ``priority``, ``arrival_us``,
    ``task_id`` and ``run_us``: a :class:`~model.procsched.sim.Task`)."""
    if not isinstance(tasks, list | tuple):
        raise TypeError(f"{name} must be a list of tasks (model.procsched.Task), not {tasks!r}")
    for index, task in enumerate(tasks):
        if not all(hasattr(task, field) for field in _TASK_FIELDS):
            raise TypeError(f"{name}[{index}] must be a task with {', '.join(_TASK_FIELDS)} "
                            f"(model.procsched.Task), not {task!r}")


def task_weight(alive_us: float, run_us: float) -> float:
    """The seed's weight: alive time / run time (steps S141, [0068]).

    A task that has never run has weight ``math.inf``: it has received no service at all, so
    stage 1 must rank it above every task that has, or a newcomer could wait behind tasks
    that already ran, the very unfairness the weight exists to prevent. Stage 2 cannot divide
    by an infinite weight; :func:`slice_lengths` substitutes a finite value.
    """
    for name, value in (("alive_us", alive_us), ("run_us", run_us)):
        if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
            raise TypeError(f"{name} must be a number, not {value!r}")
    if run_us < 0 or alive_us < run_us:
        raise ValueError(f"A task cannot have run {run_us} of its {alive_us} alive")
    if run_us == 0:
        return math.inf
    return alive_us / run_us


def select_for_cache(pool: Sequence, now_us: int, capacity: int) -> list:
    """Stage 1: the tasks to load into the hardware cache, in FIFO (pool) order.

    ``pool`` is the candidate tasks in arrival order, each with ``priority``, ``arrival_us``,
    ``task_id`` and ``run_us``. The candidates are the tasks of the highest priority present
    (S12); at most ``capacity`` of them load all (S13); more load the ``capacity`` largest
    weights at ``now_us`` (S141-S142), ties to the earlier arrival, then the lower id. The
    ranking decides only who loads: the cache is written in pool order, so the FIFO of stage
    2 runs the loaded tasks in arrival order.
    """
    _check_positive_int("capacity", capacity)
    _check_tasks("pool", pool)
    if not isinstance(now_us, int | float) or isinstance(now_us, bool) or now_us != now_us:
        raise TypeError(f"now_us must be a number, not {now_us!r}")
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


def reload_candidates(pool: Sequence, previous: Sequence, rule: str) -> list:
    """The tasks that compete in stage 1 when the cache is loaded again ([0094]).

    ``pool`` is every runnable task in arrival order, ``previous`` the tasks of the load that
    has just been run through. ``rule="slice"``: the tasks of the highest priority present
    that were *not* in the previous load ([0094]: with ``L`` of ``a`` tasks loaded, the next
    load chooses from "the remaining a - L"); when every such task was in it, all of them
    compete again (a lower priority never runs while a higher one has work, [0090]).
    ``"completed"`` and ``"rerank"``: the whole pool (under ``"completed"`` the previous
    load has run to completion, so none of it is left).
    """
    if rule not in RELOAD_RULES:
        raise ValueError(f"Reload rule must be one of {', '.join(RELOAD_RULES)}, not {rule!r}")
    _check_tasks("pool", pool)
    _check_tasks("previous", previous)
    if rule != "slice" or not pool:
        return list(pool)
    top = min(task.priority for task in pool)
    just_run = {id(task) for task in previous}
    remaining = [task for task in pool if task.priority == top and id(task) not in just_run]
    return remaining or [task for task in pool if task.priority == top]


def slice_lengths(weights: Sequence[float], t0_us: int, rule: str = "seed") -> list[int]:
    """Stage 2: one slice (integer us, at least 1) per cached task, from the cached weights.

    ``rule="seed"``: ``tc = t0 * sum / own`` ([0084], the formula as written: a *smaller*
    weight gets a *longer* slice). ``rule="proportional"``: ``tc = t0 * n * own / sum`` with
    ``n`` the number of cached tasks (the prose's reading; equal weights give ``t0`` each).
    An infinite weight (a task that never ran) counts as the largest finite weight in the
    cache, or 1 when no cached task has run, so that it is treated as the most deserving
    without swamping the sum. ``t0_us`` must be a positive integer and every weight positive
    (alive / run is at least 1).
    """
    if rule not in SLICE_RULES:
        raise ValueError(f"Slice rule must be one of {', '.join(SLICE_RULES)}, not {rule!r}")
    _check_positive_int("t0_us", t0_us)
    if not isinstance(weights, list | tuple):
        raise TypeError(f"weights must be a list of numbers, not {weights!r}")
    for index, weight in enumerate(weights):
        if not isinstance(weight, int | float) or isinstance(weight, bool) or weight != weight:
            raise TypeError(f"weights[{index}] must be a number, not {weight!r}")
        if weight <= 0:
            raise ValueError(f"weights[{index}] must be positive (alive / run), not {weight!r}")
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
