"""Seed 000: the GPU process scheduler (priority + weight + time slice) against its baselines.

The seed schedules GPU processes ("tasks") in two stages (``docs/procsched.md`` has every
decision in full):

* **stage 1** (:func:`select_for_cache`, steps S11-S14): the candidates are all tasks of the
  highest priority present in the pool (4-bit priority, 0 highest); at most ``L`` of them
  (the hardware cache capacity) are loaded, the ``L`` with the largest **weight** when there
  are more. The weight is alive time / run time (:func:`task_weight`);
* **stage 2** (:func:`slice_lengths`, steps S21-S23): the cached tasks run once each in FIFO
  order, each for ``tc = t0 * (sum of cached weights / own weight)`` (``slice_rule="seed"``,
  the formula as written) or ``tc = t0 * n * own / sum`` (``"proportional"``, the seed's
  prose: a larger weight gets more time). When the cache has been run through, stage 1
  reloads it. A task that arrives meanwhile, of any priority, takes effect at that reload.

Baselines, on the same workload with the same context-switch cost: CPU-style round-robin time
sharing (fixed slice, strict priority) and a CFS-like weighted fair scheduler (vruntime, the
priority mapped to Linux's nice weights, slice proportional to weight with a minimum
granularity and a target latency).

Time is in integer microseconds. The simulation is event-driven (:func:`simulate`): a step
is a policy decision, an optional context switch, and one slice of useful work. Every slice is
logged; :func:`check_invariants` re-derives the invariants from the log and
:func:`measure` the metrics (context switches per second, efficiency, per-priority response
and turnaround, fairness within a priority, starvation, priority inversion).

``gpusched procsched`` (:func:`run`) runs every scenario of ``configs/procsched/`` with every
policy and prints one table per scenario.
"""

import argparse
import heapq
import math
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.checks import InvariantError
from model.config import ConfigError, Fields, load_toml
from model.report import figure, print_table, progress, save_figure, write_json
from model.stats import jain_index, summary

__all__ = [
    "CFS_WEIGHTS",
    "POLICIES",
    "PRIORITY_LEVELS",
    "SLICE_RULES",
    "CfsPolicy",
    "GpuContext",
    "InvariantError",
    "Pick",
    "Result",
    "Scenario",
    "SeedPolicy",
    "SliceRecord",
    "Task",
    "TaskGroup",
    "TaskSpec",
    "TimeSharingPolicy",
    "add_arguments",
    "check_invariants",
    "generate_tasks",
    "make_policy",
    "measure",
    "run",
    "select_for_cache",
    "simulate",
    "slice_lengths",
    "task_weight",
]

#: 4-bit priority: 0 is the highest of 16 levels (the seed's first to sixteenth priority).
PRIORITY_LEVELS = 16

SLICE_RULES = ("seed", "proportional")

#: Every policy a scenario can run, in table order.
POLICIES = ("seed", "seed-prop", "timeshare", "timeshare-t0", "cfs")

#: Linux's ``sched_prio_to_weight`` for nice 0..15: priority p of the CFS-like baseline is
#: nice p (each level about 1.25 times the next), so a lower priority still runs, only less.
CFS_WEIGHTS = (1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36)
_CFS_NICE0 = CFS_WEIGHTS[0]

#: ``--quick`` multiplies every work, arrival and spacing by this.
QUICK_SCALE = 0.25


# -- the seed's two formulas --------------------------------------------------------------------


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


# -- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuContext:
    """What a context switch costs: the state saved and restored, over a bandwidth.

    A switch saves the outgoing task's state and restores the incoming one's, so it moves
    ``2 * context_bytes`` at ``bandwidth_gb_s`` (10^9 bytes per second). The state is the
    register file and shared memory of every compute unit plus ``extra_state_mib`` of device
    memory (the seed speaks of about 1 MB of registers and tens of MB of memory per process).
    ``switch_us > 0`` replaces the figure by a fixed cost per switch.
    """

    compute_units: int = 64
    register_kib_per_cu: int = 256
    shared_kib_per_cu: int = 64
    extra_state_mib: float = 0.0
    bandwidth_gb_s: float = 300.0
    switch_us: int = 0

    @property
    def context_bytes(self) -> int:
        per_cu = (self.register_kib_per_cu + self.shared_kib_per_cu) * 1024
        return self.compute_units * per_cu + round(self.extra_state_mib * 1024 * 1024)

    @property
    def switch_cost_us(self) -> int:
        """The cost of one switch in whole microseconds (rounded up)."""
        if self.switch_us:
            return self.switch_us
        # bytes / (GB/s * 1e9) seconds = bytes / (GB/s * 1e3) microseconds
        return math.ceil(2 * self.context_bytes / (self.bandwidth_gb_s * 1e3))


@dataclass(frozen=True)
class TaskGroup:
    """``count`` tasks of one priority: the first arrives at ``arrival_us``, the next ones
    ``spacing_us`` apart (``spacing="fixed"``) or with exponential gaps of that mean
    (``"poisson"``); each needs a work drawn uniformly from ``work_us`` (inclusive)."""

    count: int
    priority: int
    arrival_us: int = 0
    spacing_us: int = 0
    spacing: str = "fixed"
    work_us: tuple[int, int] = (100_000, 100_000)


@dataclass(frozen=True)
class Scenario:
    """One scenario file: the GPU, the knobs of every policy, the workload, the policies."""

    name: str
    description: str = ""
    gpu: GpuContext = GpuContext()
    cache_tasks: int = 8
    t0_us: int = 10_000
    timeshare_slice_us: int = 4_000
    cfs_latency_us: int = 40_000
    cfs_min_granularity_us: int = 10_000
    fairness_window_us: int = 1_000_000
    groups: tuple[TaskGroup, ...] = ()
    policies: tuple[str, ...] = POLICIES

    @classmethod
    def from_toml(cls, path) -> "Scenario":
        """Load and validate a scenario file; errors name the file and the field."""
        path = Path(path)
        return cls.from_dict(load_toml(path), name=path.stem, source=path)

    @classmethod
    def from_dict(cls, data: dict, *, name: str = "scenario", source=None) -> "Scenario":
        """Validate a parsed scenario table (see ``docs/procsched.md`` for the format)."""
        root = Fields(data, source=source)
        description = root.str("description", "")
        policies = tuple(root.list("policies", list(POLICIES)))
        for index, policy in enumerate(policies):
            if policy not in POLICIES:
                raise root.error(f"policies[{index}]", f"must be one of "
                                 f"{', '.join(map(repr, POLICIES))}, not {policy!r}")
        if not policies:
            raise root.error("policies", "must name at least one policy")

        table = root.table("gpu", {})
        gpu = GpuContext(
            compute_units=table.int("compute_units", 64, minimum=1),
            register_kib_per_cu=table.int("register_kib_per_cu", 256, minimum=0),
            shared_kib_per_cu=table.int("shared_kib_per_cu", 64, minimum=0),
            extra_state_mib=table.float("extra_state_mib", 0.0, minimum=0),
            bandwidth_gb_s=table.float("bandwidth_gb_s", 300.0, minimum=1e-3),
            switch_us=table.int("switch_us", 0, minimum=0))
        table.done()

        table = root.table("seed", {})
        cache_tasks = table.int("cache_tasks", 8, minimum=1)
        t0_us = table.int("t0_us", 10_000, minimum=1)
        table.done()
        table = root.table("timeshare", {})
        timeshare_slice_us = table.int("slice_us", 4_000, minimum=1)
        table.done()
        table = root.table("cfs", {})
        cfs_latency_us = table.int("sched_latency_us", 40_000, minimum=1)
        cfs_min_granularity_us = table.int("min_granularity_us", 10_000, minimum=1)
        table.done()
        table = root.table("metrics", {})
        fairness_window_us = table.int("fairness_window_us", 1_000_000, minimum=1)
        table.done()

        groups = []
        for group in root.tables("tasks"):
            low, high = group.int_list("work_us", length=2, minimum=1)
            if low > high:
                raise group.error("work_us", f"must be [min, max] with min <= max, "
                                             f"not [{low}, {high}]")
            groups.append(TaskGroup(
                count=group.int("count", minimum=1),
                priority=group.int("priority", minimum=0, maximum=PRIORITY_LEVELS - 1),
                arrival_us=group.int("arrival_us", 0, minimum=0),
                spacing_us=group.int("spacing_us", 0, minimum=0),
                spacing=group.str("spacing", "fixed", choices=("fixed", "poisson")),
                work_us=(low, high)))
            group.done()
        if not groups:
            raise root.error("tasks", "must list at least one task group ([[tasks]])")
        root.done()
        return cls(name=name, description=description, gpu=gpu, cache_tasks=cache_tasks,
                   t0_us=t0_us, timeshare_slice_us=timeshare_slice_us,
                   cfs_latency_us=cfs_latency_us,
                   cfs_min_granularity_us=cfs_min_granularity_us,
                   fairness_window_us=fairness_window_us, groups=tuple(groups),
                   policies=policies)


@dataclass(frozen=True)
class TaskSpec:
    """One GPU process of the workload: when it arrives, its priority, the run time it needs."""

    task_id: int
    arrival_us: int
    priority: int
    work_us: int


def generate_tasks(scenario: Scenario, rng: random.Random, *, scale: float = 1.0
                   ) -> list[TaskSpec]:
    """The scenario's workload drawn with ``rng``, ids in group order, sorted by arrival.

    ``scale`` multiplies every work, arrival and spacing (``--quick`` uses 0.25).
    """
    specs = []
    for group in scenario.groups:
        arrival = float(group.arrival_us)
        for index in range(group.count):
            if index:
                gap = group.spacing_us
                if group.spacing == "poisson" and gap:
                    gap = rng.expovariate(1.0 / gap)
                arrival += gap
            work = rng.randint(*group.work_us)
            specs.append(TaskSpec(task_id=len(specs), arrival_us=round(arrival * scale),
                                  priority=group.priority,
                                  work_us=max(1, round(work * scale))))
    return sorted(specs, key=lambda spec: (spec.arrival_us, spec.task_id))


# -- the simulation -----------------------------------------------------------------------------


@dataclass(eq=False)
class Task:
    """A task's state during a simulation (mutated by the engine, read by the policies)."""

    spec: TaskSpec
    run_us: int = 0
    first_start_us: int | None = None
    completion_us: int | None = None
    entitled_us: float = 0.0
    ledger_mark: float = 0.0

    @property
    def task_id(self) -> int:
        return self.spec.task_id

    @property
    def arrival_us(self) -> int:
        return self.spec.arrival_us

    @property
    def priority(self) -> int:
        return self.spec.priority

    @property
    def remaining_us(self) -> int:
        return self.spec.work_us - self.run_us


@dataclass(frozen=True)
class Pick:
    """A policy's decision: run ``task`` for up to ``length_us``, decided at ``decided_us``
    (the seed: when the cache was loaded; the baselines: now)."""

    task: Task
    length_us: int
    decided_us: int


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


@dataclass(frozen=True)
class SliceRecord:
    """One slice of the log: ``task_id`` ran ``[start_us, end_us)``; the policy decided at
    ``decided_us``; ``switched`` when a context switch of the scenario's cost preceded it;
    ``finished`` when the slice completed the task."""

    task_id: int
    decided_us: int
    start_us: int
    end_us: int
    switched: bool
    finished: bool


@dataclass
class Result:
    """Everything a simulation produced; :func:`measure` and :func:`check_invariants` read it.

    ``tasks`` in arrival order with their final state; ``log`` every slice in time order.
    """

    policy: str
    strict_priority: bool
    switch_cost_us: int
    tasks: list[Task]
    log: list[SliceRecord] = field(default_factory=list)
    switches: int = 0
    switch_us: int = 0
    useful_us: int = 0
    idle_us: int = 0
    makespan_us: int = 0


def simulate(specs: Sequence[TaskSpec], policy, switch_cost_us: int, *, name: str = "",
             check: bool = True) -> Result:
    """Run ``specs`` through ``policy`` until every task has completed.

    A step: admit the arrivals due; ask the policy for a pick (none: the GPU idles until the
    next arrival); if the pick is another task than the one that ran last (or the first one),
    spend ``switch_cost_us`` on a context switch, during which arrivals keep coming; run the
    task for ``min(length, remaining)``. A task's *entitled* time grows as the GPU serves its
    priority: every useful slice of priority ``p`` entitles each of the ``n`` runnable tasks
    of ``p`` at its start to ``length / n`` (equal share within a priority; see
    :func:`measure`). ``check`` runs :func:`check_invariants` on the result (tests always do).
    """
    tasks = [Task(spec) for spec in sorted(specs, key=lambda s: (s.arrival_us, s.task_id))]
    result = Result(policy=name or type(policy).__name__,
                    strict_priority=policy.strict_priority, switch_cost_us=switch_cost_us,
                    tasks=tasks)
    pending = deque(tasks)
    runnable = [0] * PRIORITY_LEVELS
    # Entitlement ledger per priority: the equal share one runnable task has accrued since
    # time 0; a task's entitlement is the ledger's growth over its runnable life.
    ledger = [0.0] * PRIORITY_LEVELS

    def admit(now_us: int) -> None:
        while pending and pending[0].arrival_us <= now_us:
            task = pending.popleft()
            runnable[task.priority] += 1
            task.ledger_mark = ledger[task.priority]
            policy.arrive(task, now_us)

    now = 0
    last = None
    unfinished = len(tasks)
    # Every step but an idle jump runs at least 1 us of work, so this bounds a correct run;
    # reaching it means a policy never finishes (a bug, reported rather than spun on).
    steps_left = sum(spec.work_us for spec in specs) + 2 * len(tasks) + 1
    while unfinished:
        steps_left -= 1
        if steps_left < 0:
            raise RuntimeError(f"{result.policy}: no progress after every step a correct "
                               f"schedule needs ({unfinished} tasks unfinished)")
        admit(now)
        pick = policy.pick(now)
        if pick is None:
            if not pending:
                raise RuntimeError(f"{result.policy}: {unfinished} tasks are runnable but the "
                                   f"policy picks none")
            result.idle_us += pending[0].arrival_us - now
            now = pending[0].arrival_us
            continue
        task = pick.task
        if task.completion_us is not None or task.arrival_us > now or pick.length_us < 1:
            raise RuntimeError(f"{result.policy}: picked task {task.task_id} "
                               f"for {pick.length_us} us, which cannot run at {now} us")
        switched = task is not last
        if switched:
            result.switches += 1
            result.switch_us += switch_cost_us
            now += switch_cost_us
            admit(now)
        length = min(pick.length_us, task.remaining_us)
        ledger[task.priority] += length / runnable[task.priority]
        start = now
        now += length
        task.run_us += length
        result.useful_us += length
        if task.first_start_us is None:
            task.first_start_us = start
        finished = task.remaining_us == 0
        if finished:
            task.completion_us = now
            task.entitled_us = ledger[task.priority] - task.ledger_mark
            runnable[task.priority] -= 1
            unfinished -= 1
        result.log.append(SliceRecord(task.task_id, pick.decided_us, start, now, switched,
                                      finished))
        last = task
        policy.ran(task, length, now, finished)
    result.makespan_us = now
    if check:
        check_invariants(result)
    return result


# -- invariants and metrics ---------------------------------------------------------------------


def _runnable_higher(tasks: Sequence[Task], times: np.ndarray, priorities: np.ndarray
                     ) -> np.ndarray:
    """For each ``times[i]``: is a task of a priority above ``priorities[i]`` runnable then
    (arrived, not completed)?"""
    arrival = np.array([task.arrival_us for task in tasks], dtype=np.int64)
    completion = np.array([task.completion_us if task.completion_us is not None
                           else np.iinfo(np.int64).max for task in tasks], dtype=np.int64)
    priority = np.array([task.priority for task in tasks], dtype=np.int64)
    flags = np.zeros(len(times), dtype=bool)
    # Chunks keep the (slices x tasks) masks small on long runs.
    for begin in range(0, len(times), 4096):
        at = times[begin:begin + 4096, None]
        alive = (arrival[None, :] <= at) & (completion[None, :] > at)
        top = np.where(alive, priority[None, :], PRIORITY_LEVELS).min(axis=1)
        flags[begin:begin + 4096] = top < priorities[begin:begin + 4096]
    return flags


def check_invariants(result: Result) -> None:
    """Raise :class:`InvariantError` unless the log of ``result`` is a correct schedule.

    * every task completes exactly once, at the end of its last slice, after its arrival;
    * each task's slices add up to its work, and no slice runs before its task arrived;
    * slices never overlap, a switched slice starts at least one switch after the previous
      one ended, and useful + switching + idle time = the makespan;
    * with a strict-priority policy, no slice runs a task while a task of a higher priority
      was runnable when the policy decided (for the seed: when it loaded the cache, so an
      arrival during a cache pass waits for the next reload, the documented exception);
    * the entitled time of the tasks of a priority adds up to the time they received.
    """
    by_id = {task.task_id: task for task in result.tasks}
    received = dict.fromkeys(by_id, 0)
    finishes = dict.fromkeys(by_id, 0)
    previous_end = 0
    useful = switches = 0
    for index, record in enumerate(result.log):
        task = by_id.get(record.task_id)
        if task is None:
            raise InvariantError(f"slice {index} runs unknown task {record.task_id}")
        gap = result.switch_cost_us if record.switched else 0
        if record.end_us <= record.start_us or record.start_us < previous_end + gap:
            raise InvariantError(f"slice {index} [{record.start_us}, {record.end_us}) overlaps "
                                 f"the previous slice (ended {previous_end}, switch {gap})")
        if record.decided_us < task.arrival_us or record.start_us < task.arrival_us:
            raise InvariantError(f"slice {index} runs task {task.task_id} before its arrival")
        if finishes[task.task_id]:
            raise InvariantError(f"slice {index} runs task {task.task_id} after it completed")
        previous_end = record.end_us
        received[task.task_id] += record.end_us - record.start_us
        useful += record.end_us - record.start_us
        switches += record.switched
        if record.finished:
            finishes[task.task_id] += 1
            if record.end_us != task.completion_us:
                raise InvariantError(f"task {task.task_id} completes at {task.completion_us} "
                                     f"but its last slice ends at {record.end_us}")
    for task in result.tasks:
        if finishes[task.task_id] != 1 or task.completion_us is None:
            raise InvariantError(f"task {task.task_id} completed {finishes[task.task_id]} "
                                 f"times, not once")
        if received[task.task_id] != task.spec.work_us or task.run_us != task.spec.work_us:
            raise InvariantError(f"task {task.task_id} received {received[task.task_id]} us "
                                 f"of its {task.spec.work_us} us of work")
    if (useful != result.useful_us or switches != result.switches
            or result.switch_us != switches * result.switch_cost_us):
        raise InvariantError("the log does not add up to the useful and switching time")
    if (result.useful_us + result.switch_us + result.idle_us != result.makespan_us
            or previous_end != result.makespan_us):
        raise InvariantError(f"useful {result.useful_us} + switching {result.switch_us} + "
                             f"idle {result.idle_us} us is not the makespan "
                             f"{result.makespan_us} us")
    if result.strict_priority and result.log:
        decided = np.array([record.decided_us for record in result.log], dtype=np.int64)
        priority = np.array([by_id[record.task_id].priority for record in result.log])
        broken = np.flatnonzero(_runnable_higher(result.tasks, decided, priority))
        if broken.size:
            record = result.log[int(broken[0])]
            raise InvariantError(f"slice {int(broken[0])} runs task {record.task_id} (priority "
                                 f"{by_id[record.task_id].priority}) although a higher "
                                 f"priority was runnable at {record.decided_us} us")
    for level in range(PRIORITY_LEVELS):
        members = [task for task in result.tasks if task.priority == level]
        entitled = sum(task.entitled_us for task in members)
        work = sum(task.spec.work_us for task in members)
        if not math.isclose(entitled, work, rel_tol=1e-9, abs_tol=1e-6):
            raise InvariantError(f"priority {level}: entitled {entitled:.3f} us but received "
                                 f"{work} us")


def _window_jains(result: Result, members: Sequence[Task], window_us: int
                  ) -> list[tuple[int, float]]:
    """``(window index, Jain's index of the service each competitor received)`` per window.

    The run is cut into windows of ``window_us`` from time 0 (a last partial window is
    dropped); a window's competitors are the ``members`` runnable throughout it (arrived by
    its start, completed at or after its end). A window counts when it has two competitors or
    more and the GPU served them in it: their entitlement is then an equal share of what they
    received together, so Jain's index of received / entitled is that of the received times.
    """
    windows = result.makespan_us // window_us
    if windows == 0 or len(members) < 2:
        return []
    bounds = np.arange(windows + 1, dtype=np.int64) * window_us
    slices: dict[int, list[tuple[int, int]]] = {task.task_id: [] for task in members}
    for record in result.log:
        if record.task_id in slices:
            slices[record.task_id].append((record.start_us, record.end_us))
    # served[i, k]: the time member i had received by bounds[k] (a slice counts pro rata).
    served = np.empty((len(members), windows + 1))
    for row, task in enumerate(members):
        spans = np.array(slices[task.task_id], dtype=np.int64).reshape(-1, 2)
        served[row] = np.clip(bounds[:, None] - spans[None, :, 0], 0,
                              (spans[:, 1] - spans[:, 0])[None, :]).sum(axis=1)
    received = np.diff(served, axis=1)
    arrival = np.array([task.arrival_us for task in members])[:, None]
    completion = np.array([task.completion_us for task in members])[:, None]
    competing = (arrival <= bounds[None, :-1]) & (completion >= bounds[None, 1:])
    values = []
    for window in range(windows):
        share = received[competing[:, window], window]
        if share.size >= 2 and share.sum() > 0:
            values.append((window, jain_index(share)))
    return values


def measure(result: Result, fairness_window_us: int = 1_000_000) -> dict:
    """The metrics of one run (times in us unless the key says otherwise).

    * ``switches_per_s``: context switches per second of makespan;
    * ``efficiency``: useful / (useful + switching), the busy GPU time that did work;
    * per priority: ``response_us`` (arrival -> first slice start) and ``turnaround_us``
      (arrival -> completion) as :func:`model.stats.summary`; ``max_wait_us`` (starvation:
      the longest time a runnable task waited, from its arrival or the end of its previous
      slice to the start of its next one, switch time included); two fairness readings, both
      Jain's index of received / entitled time over tasks of the priority that compete, with
      "entitled" an *equal share* of the useful time the GPU gave those tasks (processor
      sharing within a priority: 1 is perfectly fair, 1/n one task got it all):

      - ``jain_life``: over each task's runnable life (arrival to completion), entitled to
        ``length / n`` of every slice of its priority that starts while it and ``n - 1``
        others are runnable (the ledger of :func:`simulate`); ``received_over_entitled`` per
        task is the ratio itself;
      - ``jain_window``: per window of ``fairness_window_us`` among the tasks runnable
        throughout it (:func:`_window_jains`): ``mean`` and ``min`` over windows;

    * ``inversion_us``: useful time given to a task while a task of a higher priority was
      runnable at the slice's start (strict policies: only the seed's reload latency and
      arrivals during a switch; CFS: by design).
    """
    tasks = result.tasks
    by_id = {task.task_id: task for task in tasks}
    waits = dict.fromkeys(by_id, 0)
    last_end = {task.task_id: task.arrival_us for task in tasks}
    for record in result.log:
        waits[record.task_id] = max(waits[record.task_id],
                                    record.start_us - last_end[record.task_id])
        last_end[record.task_id] = record.end_us
    starts = np.array([record.start_us for record in result.log], dtype=np.int64)
    lengths = np.array([record.end_us - record.start_us for record in result.log])
    priorities = np.array([by_id[record.task_id].priority for record in result.log])
    inverted = _runnable_higher(tasks, starts, priorities) if result.log else np.zeros(0, bool)
    per_priority = {}
    for level in sorted({task.priority for task in tasks}):
        members = [task for task in tasks if task.priority == level]
        ratios = [task.spec.work_us / task.entitled_us for task in members]
        windows = _window_jains(result, members, fairness_window_us)
        per_priority[level] = {
            "tasks": len(members),
            "response_us": summary([task.first_start_us - task.arrival_us for task in members]),
            "turnaround_us": summary([task.completion_us - task.arrival_us
                                      for task in members]),
            "max_wait_us": max(waits[task.task_id] for task in members),
            "jain_life": jain_index(ratios),
            "jain_window": {"windows": len(windows),
                            "mean": float(np.mean([v for _, v in windows])) if windows else 1.0,
                            "min": min((v for _, v in windows), default=1.0),
                            "values": [[index, value] for index, value in windows]},
            "received_over_entitled": ratios,
        }
    busy = result.useful_us + result.switch_us
    return {
        "policy": result.policy,
        "tasks": len(tasks),
        "slices": len(result.log),
        "makespan_us": result.makespan_us,
        "useful_us": result.useful_us,
        "switching_us": result.switch_us,
        "idle_us": result.idle_us,
        "switches": result.switches,
        "switch_cost_us": result.switch_cost_us,
        "switches_per_s": result.switches / (result.makespan_us / 1e6),
        "efficiency": result.useful_us / busy if busy else 1.0,
        "mean_slice_us": result.useful_us / len(result.log) if result.log else 0.0,
        "inversion_us": int(lengths[inverted].sum()) if result.log else 0,
        "fairness_window_us": fairness_window_us,
        "jain_life_min": min(entry["jain_life"] for entry in per_priority.values()),
        "jain_window_min": min(entry["jain_window"]["mean"]
                               for entry in per_priority.values()),
        "max_wait_us": max(entry["max_wait_us"] for entry in per_priority.values()),
        "top_priority": min(per_priority),
        "per_priority": per_priority,
    }


# -- the command line ---------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``gpusched procsched`` has no options beyond the common ones."""


# Short stacked headers keep the table inside 80 columns (docs/procsched.md spells them out).
_HEADERS = ("policy", "switch\n/s", "effic.\n%", "Jain\nlife", "Jain\nwindow",
            "top\nresp\np99 ms", "top\nmax\nwait s", "inver-\nsion\nms")


def _row(metrics: dict) -> list:
    """One table row: switches per second, efficiency, the worst priority's two Jain indexes
    (the window one: its mean over windows), the highest priority's p99 response and longest
    wait, and the inversion time."""
    top = metrics["per_priority"][metrics["top_priority"]]
    return [metrics["policy"], round(metrics["switches_per_s"], 1),
            round(100 * metrics["efficiency"], 2), round(metrics["jain_life_min"], 3),
            round(metrics["jain_window_min"], 3), round(top["response_us"]["p99"] / 1e3, 1),
            round(top["max_wait_us"] / 1e6, 2), round(metrics["inversion_us"] / 1e3)]


def _plot(scenario: Scenario, runs: dict, path: Path) -> Path:
    """Four panels: switches per second, efficiency, received / entitled per task (one colour
    per priority), and the window Jain index over time of the most populous priority."""
    fig, axes = figure(2, 2, figsize=(12, 8))
    (ax_switch, ax_eff), (ax_fair, ax_time) = axes
    names = list(runs)
    positions = np.arange(len(names))
    ax_switch.bar(positions, [runs[name]["switches_per_s"] for name in names], color="tab:blue")
    ax_switch.set_ylabel("context switches per second")
    efficiency = [100 * runs[name]["efficiency"] for name in names]
    ax_eff.bar(positions, efficiency, color="tab:green")
    ax_eff.set_ylabel("efficiency: useful / busy GPU time (%)")
    ax_eff.set_ylim(max(0.0, min(efficiency) - 2 * (100 - min(efficiency)) - 1), 100)
    levels = sorted({level for name in names for level in runs[name]["per_priority"]})
    colours = {level: f"C{index % 10}" for index, level in enumerate(levels)}
    for position, name in enumerate(names):
        for level, entry in runs[name]["per_priority"].items():
            ratios = entry["received_over_entitled"]
            jitter = np.linspace(-0.3, 0.3, len(ratios)) if len(ratios) > 1 else np.zeros(1)
            ax_fair.scatter(position + jitter, ratios, s=10, color=colours[level],
                            label=f"priority {level}" if position == 0 else None)
    ax_fair.axhline(1.0, color="grey", linewidth=0.8)
    ax_fair.set_ylabel("received / entitled time per task (life)")
    ax_fair.legend(fontsize=7)
    for axis in (ax_switch, ax_eff, ax_fair):
        axis.set_xticks(positions, names, rotation=20, ha="right", fontsize=8)
    first = runs[names[0]]
    level = max(first["per_priority"], key=lambda key: first["per_priority"][key]["tasks"])
    window_s = first["fairness_window_us"] / 1e6
    for name in names:
        values = runs[name]["per_priority"][level]["jain_window"]["values"]
        ax_time.plot([index * window_s for index, _ in values], [value for _, value in values],
                     marker=".", label=name)
    ax_time.set_xlabel("window start (s)")
    ax_time.set_ylabel(f"Jain index per {window_s:g} s window, priority {level}")
    ax_time.set_ylim(0, 1.02)
    ax_time.legend(fontsize=7)
    fig.suptitle(f"procsched: {scenario.name} - {scenario.description}")
    return save_figure(fig, path)


def run(args) -> int:
    """Run every scenario of ``args.config`` with each of its policies; tables, plots, JSON."""
    scenarios = [Scenario.from_toml(path) for path in args.config]
    if not scenarios:
        raise ConfigError("no scenario files (configs/procsched/*.toml)")
    scale = QUICK_SCALE if args.quick else 1.0
    workloads = {scenario.name: generate_tasks(scenario, random.Random(args.seed), scale=scale)
                 for scenario in scenarios}
    jobs = [(scenario, policy) for scenario in scenarios for policy in scenario.policies]
    results: dict[str, dict] = {scenario.name: {} for scenario in scenarios}
    for scenario, policy in progress(jobs, "procsched", quiet=args.quiet):
        outcome = simulate(workloads[scenario.name], make_policy(policy, scenario),
                           scenario.gpu.switch_cost_us, name=policy, check=True)
        results[scenario.name][policy] = measure(
            outcome, max(1, round(scenario.fairness_window_us * scale)))
    report = {"subcommand": "procsched", "seed": args.seed, "quick": bool(args.quick),
              "scenarios": []}
    for scenario in scenarios:
        runs = results[scenario.name]
        specs = workloads[scenario.name]
        caption = (f"{len(specs)} tasks, {sum(s.work_us for s in specs) / 1e6:.3g} s of work; "
                   f"switch {scenario.gpu.switch_cost_us} us; L={scenario.cache_tasks}, "
                   f"t0={scenario.t0_us / 1e3:g} ms, time-sharing slice "
                   f"{scenario.timeshare_slice_us / 1e3:g} ms")
        print_table(f"procsched: {scenario.name} - {scenario.description}", _HEADERS,
                    [_row(metrics) for metrics in runs.values()], caption=caption)
        _plot(scenario, runs, Path(args.plots) / f"procsched_{scenario.name}.png")
        report["scenarios"].append({
            "name": scenario.name, "description": scenario.description,
            "tasks": len(specs), "switch_cost_us": scenario.gpu.switch_cost_us,
            "cache_tasks": scenario.cache_tasks, "t0_us": scenario.t0_us,
            "timeshare_slice_us": scenario.timeshare_slice_us,
            "policies": {name: {**metrics, "per_priority": {
                str(level): entry for level, entry in metrics["per_priority"].items()}}
                for name, metrics in runs.items()}})
    if args.json is not None:
        write_json(args.json, report)
    return 0
