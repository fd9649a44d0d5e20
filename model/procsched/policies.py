"""The policies the simulation runs: the seed's two-stage scheduler and the two baselines.

A policy is told of arrivals (``arrive``), asked for the next slice (``pick``, a
:class:`~model.procsched.sim.Pick` or ``None``) and told what ran (``ran``);
``strict_priority`` says whether the invariant checker holds it to strict priority.
"""

import heapq
import math
from collections import deque

from model.procsched.config import (
    POLICIES,
    PRIORITY_LEVELS,
    PRIORITY_RULES,
    RELOAD_RULES,
    Scenario,
)
from model.procsched.seed import (
    SLICE_RULES,
    reload_candidates,
    select_for_cache,
    slice_lengths,
    task_weight,
)
from model.procsched.sim import Pick, Task

__all__ = ["CFS_WEIGHTS", "CfsPolicy", "SeedPolicy", "TimeSharingPolicy", "make_policy",
           "switch_cost_for"]

#: Linux's ``sched_prio_to_weight`` for nice 0..15: priority p of the CFS-like baseline is
#: nice p (each level about 1.25 times the next), so a lower priority still runs, only less.
CFS_WEIGHTS = (1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36)
_CFS_NICE0 = CFS_WEIGHTS[0]


class SeedPolicy:
    """The seed's two-stage scheduler.

    Stage 1 (:func:`select_for_cache` over :func:`reload_candidates`) loads the cache; stage
    2 hands out the cached tasks FIFO, each with the slice :func:`slice_lengths` computes
    from the weights at the start of a pass over the cache.

    Parameters
    ----------
    cache_tasks : int
        ``L``, the tasks the hardware cache holds.
    t0_us : int
        ``t0``, the GPU time slice.
    slice_rule : str
        ``"seed"`` (``t0 * sum / own``, as written) or ``"proportional"``.
    reload : str
        When the cache is loaded again (:data:`RELOAD_RULES`): ``"completed"`` (default)
        -- the cached tasks run pass after pass, each pass with slices from the weights at
        its start, until every one of them has completed; ``"slice"`` -- after one pass,
        the next load taken from the tasks not just loaded; ``"rerank"`` -- after one pass,
        every task competing again.
    priority : str
        ``"strict"`` (default): at every slice boundary, a runnable task of a higher
        priority than the cached ones flushes the cache, which is reloaded at once;
        ``"reload"``: arrivals take effect at the next reload only.
    transfer_us : int
        Moving one context into the cache (a task loaded that was not in it) or out of it (an
        unfinished task not reloaded), spent before the first slice after a reload.

    Attributes ``reloads``, ``flushes``, ``loads`` and ``evictions`` count what happened.
    """

    strict_priority = True

    def __init__(self, cache_tasks: int, t0_us: int, slice_rule: str = "seed", *,
                 reload: str = "completed", priority: str = "strict", transfer_us: int = 0):
        if slice_rule not in SLICE_RULES:
            raise ValueError(f"Slice rule must be one of {', '.join(SLICE_RULES)}, "
                             f"not {slice_rule!r}")
        if reload not in RELOAD_RULES:
            raise ValueError(f"Reload rule must be one of {', '.join(RELOAD_RULES)}, "
                             f"not {reload!r}")
        if priority not in PRIORITY_RULES:
            raise ValueError(f"Priority rule must be one of {', '.join(PRIORITY_RULES)}, "
                             f"not {priority!r}")
        for name, value, minimum in (("cache_tasks", cache_tasks, 1), ("t0_us", t0_us, 1),
                                     ("transfer_us", transfer_us, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
        self.cache_tasks = cache_tasks
        self.t0_us = t0_us
        self.slice_rule = slice_rule
        self.reload_rule = reload
        self.priority_rule = priority
        self.transfer_us = transfer_us
        self.pool: list[Task] = []
        self.cached: list[Task] = []
        self.queue: deque[tuple[Task, int]] = deque()
        self.loaded_us = 0
        self.overhead_us = 0
        self.note = ""
        self.reloads = self.flushes = self.loads = self.evictions = 0

    def arrive(self, task: Task, now_us: int) -> None:
        self.pool.append(task)

    def _pass(self, tasks: list[Task], now_us: int) -> None:
        """Start a pass over ``tasks``: slices from their weights now (S21-S23)."""
        weights = [task_weight(now_us - task.arrival_us, task.run_us) for task in tasks]
        self.queue = deque(zip(tasks, slice_lengths(weights, self.t0_us, self.slice_rule),
                               strict=True))

    def reload(self, now_us: int) -> None:
        """Stage 1: load the cache from the pool; charge the contexts moved in and out."""
        candidates = reload_candidates(self.pool, self.cached, self.reload_rule)
        chosen = select_for_cache(candidates, now_us, self.cache_tasks)
        before = {id(task) for task in self.cached}
        after = {id(task) for task in chosen}
        evicted = [task for task in self.cached
                   if task.completion_us is None and id(task) not in after]
        loaded = [task for task in chosen if id(task) not in before]
        self.loads += len(loaded)
        self.evictions += len(evicted)
        self.overhead_us += (len(loaded) + len(evicted)) * self.transfer_us
        self.note = (f"load {[task.task_id for task in loaded]}"
                     + (f" evict {[task.task_id for task in evicted]}" if evicted else ""))
        self.cached = chosen
        self._pass(chosen, now_us)
        self.loaded_us = now_us
        self.reloads += 1

    def _higher_waiting(self) -> bool:
        if not self.cached:
            return False
        return min(task.priority for task in self.pool) < self.cached[0].priority

    def pick(self, now_us: int) -> Pick | None:
        if self.priority_rule == "strict" and self.pool and self._higher_waiting():
            self.flushes += 1
            self.queue.clear()
            self.reload(now_us)
            self.note = "flush: " + self.note
        elif not self.queue:
            unfinished = [task for task in self.cached if task.completion_us is None]
            if self.reload_rule == "completed" and unfinished:
                self._pass(unfinished, now_us)
            else:
                self.reload(now_us)
        if not self.queue:
            return None
        task, length = self.queue.popleft()
        decided = self.loaded_us if self.priority_rule == "reload" else now_us
        overhead, self.overhead_us = self.overhead_us, 0
        note, self.note = self.note, ""
        return Pick(task, length, decided, overhead, note)

    def ran(self, task: Task, ran_us: int, now_us: int, finished: bool) -> None:
        if finished:
            self.pool.remove(task)


class TimeSharingPolicy:
    """CPU-style round-robin time sharing: a fixed slice, every runnable task of the highest
    priority present in turn (strict priority, checked at every slice boundary)."""

    strict_priority = True

    def __init__(self, slice_us: int):
        if not isinstance(slice_us, int) or isinstance(slice_us, bool) or slice_us < 1:
            raise ValueError(f"slice_us must be an integer >= 1, not {slice_us!r}")
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
        for name, value in (("sched_latency_us", sched_latency_us),
                            ("min_granularity_us", min_granularity_us)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, not {value!r}")
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


def make_policy(name: str, scenario: Scenario, *, mean_slice_us: float | None = None):
    """A fresh policy object of ``name`` (one of :data:`POLICIES`) with the scenario's knobs.

    ``timeshare-t0`` is time sharing with the seed's ``t0`` as its slice and
    ``timeshare-mean`` with ``mean_slice_us``, the mean slice the seed's scheduler ran on the
    same workload (the baseline an expert would pick: the seed's mean slice without its two
    stages; it still switches more often than the seed), so that the tables separate what the
    seed gains from long slices and what from its two stages.
    """
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a procsched Scenario, not {scenario!r}")
    if name in ("seed", "seed-prop"):
        return SeedPolicy(scenario.cache_tasks, scenario.t0_us,
                          "seed" if name == "seed" else "proportional",
                          reload=scenario.reload, priority=scenario.priority_rule,
                          transfer_us=scenario.gpu.transfer_us)
    if name == "timeshare":
        return TimeSharingPolicy(scenario.timeshare_slice_us)
    if name == "timeshare-t0":
        return TimeSharingPolicy(scenario.t0_us)
    if name == "timeshare-mean":
        if (not isinstance(mean_slice_us, int | float) or isinstance(mean_slice_us, bool)
                or not 1 <= mean_slice_us < math.inf):
            raise ValueError(f"timeshare-mean needs the seed's mean slice: mean_slice_us must "
                             f"be a number >= 1, not {mean_slice_us!r}")
        return TimeSharingPolicy(round(mean_slice_us))
    if name == "cfs":
        return CfsPolicy(scenario.cfs_latency_us, scenario.cfs_min_granularity_us)
    raise ValueError(f"Policy must be one of {', '.join(POLICIES)}, not {name!r}")


def switch_cost_for(name: str, scenario: Scenario) -> int:
    """The cost of one context switch under policy ``name``: the seed's scheduler switches
    between tasks whose contexts sit in its hardware cache in device memory ([0051]), so on
    the device path; every other policy over the scenario's ``save_to`` path ([0042])."""
    if name not in POLICIES:
        raise ValueError(f"Policy must be one of {', '.join(POLICIES)}, not {name!r}")
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a procsched Scenario, not {scenario!r}")
    if name in ("seed", "seed-prop"):
        return scenario.gpu.device_switch_us
    return scenario.gpu.switch_cost_us
