"""The event-driven simulation of one policy on one workload, its invariants and its metrics.

Time is in integer microseconds. A step of :func:`simulate` is a policy decision, an optional
context switch, and one slice of useful work. Every slice is logged; :func:`check_invariants`
re-derives the invariants from the log and :func:`measure` the metrics.
"""

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from model.checks import InvariantError
from model.config import check_hooks, check_int, check_sequence
from model.procsched.config import PRIORITY_LEVELS
from model.procsched.workload import TaskSpec
from model.stats import jain_index, summary

__all__ = ["InvariantError", "Pick", "Result", "SliceRecord", "Task", "check_invariants",
           "measure", "simulate"]


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
    (the seed under the ``reload`` priority rule: when the cache was loaded; otherwise now).

    ``overhead_us`` is time the GPU spends before the slice besides a context switch (the
    seed: moving contexts into and out of its hardware cache at a reload); ``note`` says why,
    for the event log."""

    task: Task
    length_us: int
    decided_us: int
    overhead_us: int = 0
    note: str = ""


@dataclass(frozen=True)
class SliceRecord:
    """One slice of the log: ``task_id`` ran ``[start_us, end_us)`` of the ``granted_us`` it
    was given; the policy decided at ``decided_us``; ``overhead_us`` of cache loading and,
    when ``switched``, a context switch of the run's cost preceded it; ``finished`` when the
    slice completed the task."""

    task_id: int
    decided_us: int
    start_us: int
    end_us: int
    switched: bool
    finished: bool
    granted_us: int = 0
    overhead_us: int = 0


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
    overhead_us: int = 0
    useful_us: int = 0
    idle_us: int = 0
    makespan_us: int = 0
    events: list | None = None


def _check_run_arguments(specs, switch_cost_us) -> None:
    check_sequence("", "specs", specs)
    if not isinstance(switch_cost_us, int) or isinstance(switch_cost_us, bool):
        raise TypeError(f"switch_cost_us must be an integer, not {switch_cost_us!r}")
    if switch_cost_us < 0:
        raise ValueError(f"switch_cost_us must be >= 0, not {switch_cost_us!r}")
    seen = set()
    for index, item in enumerate(specs):
        if not isinstance(item, TaskSpec):
            raise TypeError(f"specs[{index}] must be a TaskSpec, not {item!r}")
        if item.task_id in seen:
            raise ValueError(f"specs[{index}]: task id {item.task_id} is used twice")
        seen.add(item.task_id)


def simulate(specs: Sequence[TaskSpec], policy, switch_cost_us: int, *, name: str = "",
             check: bool = True, events: bool = False, progress=None) -> Result:
    """Run ``specs`` through ``policy`` until every task has completed.

    A step: admit the arrivals due; ask the policy for a pick (none: the GPU idles until the
    next arrival); spend the pick's ``overhead_us`` (the seed's cache loads), then, if the
    pick is another task than the one that ran last (or the first one), ``switch_cost_us`` on
    a context switch, arrivals coming in meanwhile; run the task for ``min(length,
    remaining)``. A task's *entitled* time grows as the GPU serves its priority: every useful
    slice of priority ``p`` entitles each of the ``n`` runnable tasks of ``p`` at its start to
    ``length / n`` (equal share within a priority; see :func:`measure`). ``check`` runs
    :func:`check_invariants` on the result (tests always do); ``events`` keeps a per-event
    log in ``Result.events`` (``(time_us, event, task_id, priority, duration_us, detail)``:
    arrive, cache_load, switch, slice, complete). ``progress``, when given, is called with the
    simulated time (us) at every step.

    Raises ``TypeError``/``ValueError`` for specs that are not :class:`TaskSpec` or repeat an
    id, and for a negative or non-integer switch cost.
    """
    _check_run_arguments(specs, switch_cost_us)
    if not isinstance(name, str):
        raise TypeError(f"name must be a string (the policy's label), not {name!r}")
    check_hooks(None, progress)
    if not (all(callable(getattr(policy, method, None)) for method in ("arrive", "pick", "ran"))
            and hasattr(policy, "strict_priority")):
        raise TypeError(f"policy must be a policy object (make_policy(name, scenario)), "
                        f"not {policy!r}")
    tasks = [Task(spec) for spec in sorted(specs, key=lambda s: (s.arrival_us, s.task_id))]
    result = Result(policy=name or type(policy).__name__,
                    strict_priority=policy.strict_priority, switch_cost_us=switch_cost_us,
                    tasks=tasks, events=[] if events else None)
    log = result.events
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
            if log is not None:
                log.append((task.arrival_us, "arrive", task.task_id, task.priority,
                            task.spec.work_us, ""))

    now = 0
    last = None
    unfinished = len(tasks)
    # Every step but an idle jump runs at least 1 us of work, so this bounds a correct run;
    # reaching it means a policy never finishes (a bug, reported rather than spun on).
    steps_left = sum(spec.work_us for spec in specs) + 2 * len(tasks) + 1
    while unfinished:
        if progress is not None:
            progress(now)
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
        if (task.completion_us is not None or task.arrival_us > now or pick.length_us < 1
                or pick.overhead_us < 0):
            raise RuntimeError(f"{result.policy}: picked task {task.task_id} "
                               f"for {pick.length_us} us, which cannot run at {now} us")
        if pick.overhead_us:
            if log is not None:
                log.append((now, "cache_load", task.task_id, task.priority, pick.overhead_us,
                            pick.note))
            result.overhead_us += pick.overhead_us
            now += pick.overhead_us
            admit(now)
        switched = task is not last
        if switched:
            if log is not None:
                log.append((now, "switch", task.task_id, task.priority, switch_cost_us,
                            "" if last is None else f"from {last.task_id}"))
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
        if log is not None:
            log.append((start, "slice", task.task_id, task.priority, length,
                        f"granted {pick.length_us}"))
        if finished:
            task.completion_us = now
            task.entitled_us = ledger[task.priority] - task.ledger_mark
            runnable[task.priority] -= 1
            unfinished -= 1
            if log is not None:
                log.append((now, "complete", task.task_id, task.priority,
                            now - task.arrival_us, ""))
        result.log.append(SliceRecord(task.task_id, pick.decided_us, start, now, switched,
                                      finished, pick.length_us, pick.overhead_us))
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
    * slices never overlap, a slice starts at least its cache-loading overhead (plus one
      switch when it switched) after the previous one ended, and useful + switching + cache
      loading + idle time = the makespan;
    * with a strict-priority policy, no slice runs a task while a task of a higher priority
      was runnable when the policy decided (for the seed under the ``reload`` priority rule:
      when it loaded the cache, so an arrival during a cache pass waits for the next reload,
      that rule's documented exception; under ``strict``: at the slice boundary);
    * the entitled time of the tasks of a priority adds up to the time they received.
    """
    if not isinstance(result, Result):
        raise TypeError(f"result must be a Result (from simulate), not {result!r}")
    by_id = {task.task_id: task for task in result.tasks}
    received = dict.fromkeys(by_id, 0)
    finishes = dict.fromkeys(by_id, 0)
    previous_end = 0
    useful = switches = overhead = 0
    for index, record in enumerate(result.log):
        task = by_id.get(record.task_id)
        if task is None:
            raise InvariantError(f"slice {index} runs unknown task {record.task_id}")
        gap = (result.switch_cost_us if record.switched else 0) + record.overhead_us
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
        overhead += record.overhead_us
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
            or result.switch_us != switches * result.switch_cost_us
            or overhead != result.overhead_us):
        raise InvariantError("the log does not add up to the useful, switching and cache "
                             "loading time")
    busy = result.useful_us + result.switch_us + result.overhead_us
    if busy + result.idle_us != result.makespan_us or previous_end != result.makespan_us:
        raise InvariantError(f"useful {result.useful_us} + switching {result.switch_us} + "
                             f"cache loading {result.overhead_us} + idle {result.idle_us} us "
                             f"is not the makespan {result.makespan_us} us")
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


def _covered_before(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each of ``times``: how much of ``[0, time)`` the union of the intervals
    ``[starts[i], ends[i])`` covers."""
    if starts.size == 0:
        return np.zeros(times.shape)
    order = np.argsort(starts, kind="stable")
    merged_starts, merged_ends = [], []
    for begin, end in zip(starts[order], ends[order], strict=True):
        if merged_ends and begin <= merged_ends[-1]:
            merged_ends[-1] = max(merged_ends[-1], end)
        else:
            merged_starts.append(begin)
            merged_ends.append(end)
    low = np.array(merged_starts, dtype=np.int64)
    high = np.array(merged_ends, dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(high - low)))
    index = np.searchsorted(low, times, side="right") - 1
    inside = np.where(index >= 0, np.minimum(times, high[np.maximum(index, 0)])
                      - low[np.maximum(index, 0)], 0)
    return np.where(index >= 0, before[np.maximum(index, 0)] + inside, 0)


def _inversion_time(result: Result) -> int:
    """Useful time during which a task of a higher priority than the running one was
    runnable (arrived and not completed): the overlap of every slice with the union of the
    higher priorities' runnable lives."""
    if not result.log:
        return 0
    by_id = {task.task_id: task for task in result.tasks}
    priority = np.array([by_id[record.task_id].priority for record in result.log])
    starts = np.array([record.start_us for record in result.log], dtype=np.int64)
    ends = np.array([record.end_us for record in result.log], dtype=np.int64)
    alive_from = np.array([task.arrival_us for task in result.tasks], dtype=np.int64)
    alive_to = np.array([task.completion_us for task in result.tasks], dtype=np.int64)
    task_priority = np.array([task.priority for task in result.tasks])
    total = 0
    for level in np.unique(priority):
        higher = task_priority < level
        if not higher.any():
            continue
        mine = priority == level
        covered = (_covered_before(alive_from[higher], alive_to[higher], ends[mine])
                   - _covered_before(alive_from[higher], alive_to[higher], starts[mine]))
        total += int(covered.sum())
    return total


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
      runnable (the overlap of each slice with the higher priorities' runnable lives: with
      strict priority at slice boundaries, the rest of the slice in progress when a higher
      priority arrives; under the seed's ``reload`` rule the rest of the cache pass; CFS: by
      design); ``inversion_at_start_us`` counts only slices that *started* with a higher
      priority runnable;
    * ``slice_us``: the granted slice lengths (what the policy asked for, before a task that
      finishes early cuts it short), :func:`model.stats.summary`; ``mean_slice_us`` the mean
      of the slices actually run;
    * ``efficiency``: useful / (useful + switching + cache loading), ``cache_load_us`` the
      time the seed spent moving contexts into and out of its hardware cache.
    """
    if not isinstance(result, Result):
        raise TypeError(f"result must be a Result (from simulate), not {result!r}")
    check_int("", "fairness_window_us", fairness_window_us, 1)
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
    busy = result.useful_us + result.switch_us + result.overhead_us
    return {
        "policy": result.policy,
        "tasks": len(tasks),
        "slices": len(result.log),
        "makespan_us": result.makespan_us,
        "useful_us": result.useful_us,
        "switching_us": result.switch_us,
        "cache_load_us": result.overhead_us,
        "idle_us": result.idle_us,
        "switches": result.switches,
        "switch_cost_us": result.switch_cost_us,
        "switches_per_s": result.switches / (result.makespan_us / 1e6),
        "efficiency": result.useful_us / busy if busy else 1.0,
        "mean_slice_us": result.useful_us / len(result.log) if result.log else 0.0,
        "slice_us": summary([record.granted_us for record in result.log]),
        "inversion_us": _inversion_time(result),
        "inversion_at_start_us": int(lengths[inverted].sum()) if result.log else 0,
        "fairness_window_us": fairness_window_us,
        "jain_life_min": min(entry["jain_life"] for entry in per_priority.values()),
        "jain_window_min": min(entry["jain_window"]["mean"]
                               for entry in per_priority.values()),
        "max_wait_us": max(entry["max_wait_us"] for entry in per_priority.values()),
        "top_priority": min(per_priority),
        "per_priority": per_priority,
    }
