"""The policies the simulation runs: the seed's two-stage scheduler and the two baselines.

A policy is told of arrivals (``arrive``), asked for the next slice (``pick``, a
:class:`~model.procsched.sim.Pick` or ``None``) and told what ran (``ran``);
``strict_priority`` says whether the invariant checker holds it to strict priority.
"""

import heapq
from collections import deque

from model.procsched.config import POLICIES, PRIORITY_LEVELS, Scenario
from model.procsched.seed import SLICE_RULES, select_for_cache, slice_lengths, task_weight
from model.procsched.sim import Pick, Task

__all__ = ["CFS_WEIGHTS", "CfsPolicy", "SeedPolicy", "TimeSharingPolicy", "make_policy"]

#: Linux's ``sched_prio_to_weight`` for nice 0..15: priority p of the CFS-like baseline is
#: nice p (each level about 1.25 times the next), so a lower priority still runs, only less.
CFS_WEIGHTS = (1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36)
_CFS_NICE0 = CFS_WEIGHTS[0]


class SeedPolicy:
    """The seed's two-stage scheduler (``slice_rule`` "seed" or "proportional").

    Stage 1 (:func:`select_for_cache`) loads the cache when it is empty; stage 2 hands out the
    cached tasks FIFO, each with the slice :func:`slice_lengths` computed from the weights at
    load time. Arrivals join the pool only; the cache is not touched until it has been run
    through, so a higher-priority arrival waits for the next reload (the documented reload
    latency of the priority invariant).
    """

    strict_priority = True

    def __init__(self, cache_tasks: int, t0_us: int, slice_rule: str = "seed"):
        if slice_rule not in SLICE_RULES:
            raise ValueError(f"Slice rule must be one of {', '.join(SLICE_RULES)}, "
                             f"not {slice_rule!r}")
        self.cache_tasks = cache_tasks
        self.t0_us = t0_us
        self.slice_rule = slice_rule
        self.pool: list[Task] = []
        self.cache: deque[tuple[Task, int]] = deque()
        self.loaded_us = 0
        self.reloads = 0

    def arrive(self, task: Task, now_us: int) -> None:
        self.pool.append(task)

    def reload(self, now_us: int) -> None:
        chosen = select_for_cache(self.pool, now_us, self.cache_tasks)
        weights = [task_weight(now_us - task.arrival_us, task.run_us) for task in chosen]
        self.cache = deque(zip(chosen, slice_lengths(weights, self.t0_us, self.slice_rule),
                               strict=True))
        self.loaded_us = now_us
        self.reloads += 1

    def pick(self, now_us: int) -> Pick | None:
        if not self.cache:
            self.reload(now_us)
            if not self.cache:
                return None
        task, length = self.cache.popleft()
        return Pick(task, length, self.loaded_us)

    def ran(self, task: Task, ran_us: int, now_us: int, finished: bool) -> None:
        if finished:
            self.pool.remove(task)


class TimeSharingPolicy:
    """CPU-style round-robin time sharing: a fixed slice, every runnable task of the highest
    priority present in turn (strict priority, checked at every slice boundary)."""

    strict_priority = True

    def __init__(self, slice_us: int):
        self.slice_us = slice_us
        self.queues = [deque() for _ in range(PRIORITY_LEVELS)]

    def arrive(self, task: Task, now_us: int) -> None:
        self.queues[task.priority].append(task)

    def pick(self, now_us: int) -> Pick | None:
        for queue in self.queues:
            if queue:
                return Pick(queue.popleft(), self.slice_us, now_us)
        return None

    def ran(self, task: Task, ran_us: int, now_us: int, finished: bool) -> None:
        if not finished:
            self.queues[task.priority].append(task)


class CfsPolicy:
    """A CFS-like weighted fair scheduler, as Linux's CFS treats one CPU.

    Priority ``p`` maps to nice ``p`` (:data:`CFS_WEIGHTS`), so every runnable task shares the
    GPU in proportion to its weight: priorities are not strict (the seed's point against CFS,
    [0090]). The task with the smallest vruntime runs for
    ``max(min_granularity, sched_latency * w / sum of runnable w)``; its vruntime advances by
    ``ran * 1024 / w``. An arriving task starts at the queue's ``min_vruntime`` so that it
    neither owns a backlog of credit nor starts behind. Ties go to the earlier arrival.
    """

    strict_priority = False

    def __init__(self, sched_latency_us: int, min_granularity_us: int):
        self.sched_latency_us = sched_latency_us
        self.min_granularity_us = min_granularity_us
        self.heap: list[tuple[float, int, int, Task]] = []
        self.vruntime: dict[int, float] = {}
        self.total_weight = 0
        self.min_vruntime = 0.0

    def arrive(self, task: Task, now_us: int) -> None:
        self.vruntime[task.task_id] = self.min_vruntime
        self.total_weight += CFS_WEIGHTS[task.priority]
        self._push(task)

    def _push(self, task: Task) -> None:
        heapq.heappush(self.heap, (self.vruntime[task.task_id], task.arrival_us, task.task_id,
                                   task))

    def pick(self, now_us: int) -> Pick | None:
        if not self.heap:
            return None
        _, _, _, task = heapq.heappop(self.heap)
        weight = CFS_WEIGHTS[task.priority]
        length = max(self.min_granularity_us,
                     round(self.sched_latency_us * weight / self.total_weight))
        return Pick(task, length, now_us)

    def ran(self, task: Task, ran_us: int, now_us: int, finished: bool) -> None:
        weight = CFS_WEIGHTS[task.priority]
        self.vruntime[task.task_id] += ran_us * _CFS_NICE0 / weight
        if finished:
            self.total_weight -= weight
        else:
            self._push(task)
        if self.heap:
            self.min_vruntime = max(self.min_vruntime, self.heap[0][0])


def make_policy(name: str, scenario: Scenario):
    """A fresh policy object of ``name`` (one of :data:`POLICIES`) with the scenario's knobs.

    ``timeshare-t0`` is time sharing with the seed's ``t0`` as its slice, so that the table
    separates what the seed gains from longer slices and what from its two stages.
    """
    if name == "seed":
        return SeedPolicy(scenario.cache_tasks, scenario.t0_us, "seed")
    if name == "seed-prop":
        return SeedPolicy(scenario.cache_tasks, scenario.t0_us, "proportional")
    if name == "timeshare":
        return TimeSharingPolicy(scenario.timeshare_slice_us)
    if name == "timeshare-t0":
        return TimeSharingPolicy(scenario.t0_us)
    if name == "cfs":
        return CfsPolicy(scenario.cfs_latency_us, scenario.cfs_min_granularity_us)
    raise ValueError(f"Policy must be one of {', '.join(POLICIES)}, not {name!r}")
