"""Workloads: per CPU thread, its queue of sub-tasks (the segments of its tasks), built from
lists or drawn from a scenario's thread groups with a seeded ``random.Random``."""

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from model.config import check_int, check_sequence
from model.hostsched.config import Scenario

__all__ = ["SubTask", "Workload", "generate_workload", "workload_from_lists"]


@dataclass(frozen=True)
class SubTask:
    """One sub-task: ``index`` is its position in task ``task`` (0-based), ``last`` marks the
    task's final sub-task; ``arrival`` is when it enters its thread's queue and ``duration``
    the instance time it needs (µs); ``priority`` is its thread's (0 is the highest)."""

    uid: int
    thread: int
    task: int
    index: int
    last: bool
    arrival: int
    duration: int
    priority: int = 0


@dataclass(frozen=True)
class Workload:
    """Per thread, its sub-tasks in queue order (arrival times non-decreasing); every task
    lives in exactly one thread. Build one with :func:`generate_workload` or
    :func:`workload_from_lists`."""

    threads: tuple[tuple[SubTask, ...], ...]

    def __post_init__(self):
        """Per thread a tuple of :class:`SubTask` of that thread, each with a duration >= 1,
        an arrival >= 0 and a priority in 0..15 (a sub-task is checked here, once, rather
        than on its own: a workload holds up to millions)."""
        if not isinstance(self.threads, tuple) or not all(isinstance(thread, tuple)
                                                          for thread in self.threads):
            raise TypeError(f"Workload.threads must be a tuple of tuples of SubTask (one per "
                            f"thread; workload_from_lists builds them), not {self.threads!r}")
        for number, thread in enumerate(self.threads):
            for sub in thread:
                if (not isinstance(sub, SubTask) or sub.thread != number
                        or type(sub.duration) is not int or sub.duration < 1
                        or type(sub.arrival) is not int or sub.arrival < 0
                        or type(sub.priority) is not int or not 0 <= sub.priority <= 15):
                    raise ValueError(f"Workload.threads[{number}] must hold SubTask of thread "
                                     f"{number} with duration >= 1, arrival >= 0 and "
                                     f"priority in 0..15, not {sub!r}")

    @property
    def subtasks(self) -> list[SubTask]:
        """Every sub-task, thread by thread."""
        return [sub for thread in self.threads for sub in thread]

    @property
    def task_count(self) -> int:
        return len({sub.task for sub in self.subtasks})


def workload_from_lists(threads: Sequence[Sequence[tuple[int, int, int]]],
                        priorities: Sequence[int] | None = None) -> Workload:
    """A workload from per-thread lists of ``(task, arrival_us, duration_us)``, in queue order.

    Sub-task indexes count the task's earlier entries in its thread; the task's final entry is
    its ``last`` sub-task. ``priorities``: one per thread, 0..15 (``None``: all 0). Raises
    ``TypeError``/``ValueError`` naming the entry when an entry is not three integers (a
    task id >= 0, an arrival >= 0, a duration >= 1), when a task appears in two threads, or
    when arrivals decrease within a thread.
    """
    check_sequence("", "threads", threads)
    if priorities is not None:
        check_sequence("", "priorities", priorities)
        if len(priorities) != len(threads):
            raise ValueError(f"priorities must give one priority per thread ({len(threads)}), "
                             f"not {len(priorities)}")
        for index, priority in enumerate(priorities):
            check_int("", f"priorities[{index}]", priority, 0, 15)
    for thread_id, entries in enumerate(threads):
        check_sequence("", f"threads[{thread_id}]", entries)
        for position, entry in enumerate(entries):
            if (not isinstance(entry, tuple | list) or len(entry) != 3
                    or not all(type(item) is int for item in entry)
                    or entry[0] < 0 or entry[1] < 0):
                raise ValueError(f"threads[{thread_id}][{position}] must be (task >= 0, "
                                 f"arrival_us >= 0, duration_us >= 1), integers, "
                                 f"not {entry!r}")
    owner: dict[int, int] = {}
    result = []
    uid = 0
    for thread_id, entries in enumerate(threads):
        priority = priorities[thread_id] if priorities is not None else 0
        final = {task: position for position, (task, _, _) in enumerate(entries)}
        seen: dict[int, int] = {}
        subtasks = []
        previous_arrival = 0
        for position, (task, arrival, duration) in enumerate(entries):
            if owner.setdefault(task, thread_id) != thread_id:
                raise ValueError(f"task {task} appears in threads {owner[task]} and {thread_id}")
            if arrival < previous_arrival:
                raise ValueError(f"thread {thread_id}: arrival {arrival} is before the "
                                 f"previous sub-task's {previous_arrival}")
            if duration < 1:
                raise ValueError(f"thread {thread_id}: duration must be positive, "
                                 f"not {duration}")
            previous_arrival = arrival
            index = seen.get(task, 0)
            seen[task] = index + 1
            subtasks.append(SubTask(uid, thread_id, task, index, final[task] == position,
                                    arrival, duration, priority))
            uid += 1
        result.append(tuple(subtasks))
    return Workload(tuple(result))


def generate_workload(scenario: Scenario, rng: random.Random, *, scale: float = 1.0) -> Workload:
    """Draw the scenario's workload with ``rng`` (threads numbered group by group, in file
    order). ``scale`` multiplies each thread's task count (at least one task), for
    ``--quick``."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a hostsched Scenario, not {scenario!r}")
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, not {rng!r}")
    if (not isinstance(scale, int | float) or isinstance(scale, bool)
            or not 0 < scale < math.inf):
        raise ValueError(f"scale must be a positive number, not {scale!r}")
    threads = []
    task_id = 0
    for group in scenario.groups:
        for _ in range(group.count):
            tasks = max(1, round(rng.randint(*group.tasks) * scale))
            start = rng.randint(*group.start_us)
            # (arrival, position in lane, lane, task, duration): sorting interleaves the lanes.
            entries = []
            lane_position = [0] * group.streams
            for number in range(tasks):
                lane = number % group.streams
                for _ in range(rng.randint(*group.subtasks)):
                    position = lane_position[lane]
                    lane_position[lane] += 1
                    entries.append((start + position * group.interval_us, position, lane,
                                    task_id, rng.randint(*group.duration_us)))
                task_id += 1
            entries.sort(key=lambda entry: entry[:3])
            threads.append([(task, arrival, duration)
                            for arrival, _, _, task, duration in entries])
    priorities = [group.priority for group in scenario.groups for _ in range(group.count)]
    return workload_from_lists(threads, priorities)
