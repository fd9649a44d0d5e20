"""The workload of the task-scheduler model: the tasks as the first processor writes them to
global memory, the decomposition of a job into processor words ([0056]), the arrival
generators and admission (the tasks that can never be scheduled)."""

import random
from collections.abc import Sequence
from dataclasses import dataclass

from model.arbiter import MAX_WEIGHT
from model.config import check_int, check_items
from model.tasksched.config import MAX_JOBS, TASK_CLASSES, Scenario, Stream

__all__ = ["TaskSpec", "admit", "build_workload", "decompose"]


@dataclass(frozen=True)
class TaskSpec:
    """One task of the workload, as the first processor writes it to global memory.

    ``index`` is its place in arrival order (global memory is read oldest first);
    ``job_words`` is ``None`` when no processor has its type; ``durations`` holds the run
    time of each job in beats; ``predecessors`` are indices of earlier tasks.
    """

    index: int
    name: str
    stream: str
    task_class: int
    weight: int
    processor: str
    jobs: int
    job_words: int | None
    durations: tuple[int, ...]
    arrival: int
    predecessors: tuple[int, ...]

    def __post_init__(self):
        """The fields :func:`build_workload` gives, for a task built in Python
        (``simulate(..., tasks=...)``); ``TypeError``/``ValueError`` naming the field."""
        check_int("TaskSpec", "index", self.index, 0)
        for name in ("name", "stream", "processor"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"TaskSpec.{name} must be a string, not {getattr(self, name)!r}")
        check_int("TaskSpec", "task_class", self.task_class, 0, len(TASK_CLASSES) - 1)
        check_int("TaskSpec", "weight", self.weight, 1, MAX_WEIGHT)
        check_int("TaskSpec", "jobs", self.jobs, 2, MAX_JOBS)
        if self.jobs & (self.jobs - 1):
            raise ValueError(f"TaskSpec.jobs must be a power of two 2**n with n >= 1 (the "
                             f"seed's job count), not {self.jobs}")
        if self.job_words is not None:
            check_int("TaskSpec", "job_words", self.job_words, 1)
        durations = self.durations
        if (not isinstance(durations, tuple) or len(durations) != self.jobs
                or not all(type(beats) is int and beats >= 1 for beats in durations)):
            raise ValueError(f"TaskSpec.durations must be a tuple of {self.jobs} integers >= 1 "
                             f"(one per job), not {durations!r}")
        check_int("TaskSpec", "arrival", self.arrival, 0)
        if (not isinstance(self.predecessors, tuple)
                or not all(type(p) is int and 0 <= p < self.index for p in self.predecessors)):
            raise ValueError(f"TaskSpec.predecessors must be a tuple of indices of earlier tasks "
                             f"(0..{self.index - 1}), not {self.predecessors!r}")


def decompose(job_bytes: int, word_bytes: int) -> int:
    """Words per job: the job size rounded up to whole processor words (seed [0056])."""
    check_int("", "job_bytes", job_bytes, 1)
    check_int("", "word_bytes", word_bytes, 1)
    return -(-job_bytes // word_bytes)


def _arrivals(stream: Stream, count: int, rng: random.Random) -> list[int]:
    if stream.arrival == "burst":
        return [stream.start] * count
    if stream.arrival == "periodic":
        return [stream.start + index * stream.gap for index in range(count)]
    beats, now = [], float(stream.start)
    for _ in range(count):
        beats.append(int(now))
        now += rng.expovariate(1.0 / stream.gap)
    return beats


def build_workload(scenario: Scenario, seed: int, *, quick: bool = False) -> list[TaskSpec]:
    """The tasks of ``scenario`` in arrival order, drawn with ``random.Random(seed)``.

    ``quick`` divides every stream's task count by the scenario's ``quick_divisor``. A task
    never enters global memory before its predecessors: its arrival is moved to theirs when
    it would be earlier (the first processor enqueues in dependency order), so the cache,
    which reads oldest first, can always make progress.
    """
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a Scenario, not {scenario!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an integer, not {seed!r}")
    if not isinstance(quick, bool):
        raise TypeError(f"quick must be True or False, not {quick!r}")
    rng = random.Random(seed)
    drafts = []        # (arrival, position in stream, stream order, fields)
    by_stream: dict[str, list[int]] = {}
    for order, stream in enumerate(scenario.streams):
        count = max(1, -(-stream.count // scenario.quick_divisor)) if quick else stream.count
        word_bytes = scenario.word_bytes(stream.processor)
        words = decompose(stream.job_bytes, word_bytes) if word_bytes else None
        least, most = stream.job_beats
        members = []
        for position, arrival in enumerate(_arrivals(stream, count, rng)):
            predecessors = []
            if stream.chain and position:
                predecessors.append(members[position - 1])
            if stream.after is not None and position < len(by_stream[stream.after]):
                predecessors.append(by_stream[stream.after][position])
            arrival = max([arrival] + [drafts[p][0] for p in predecessors])
            durations = tuple(rng.randint(least, most) for _ in range(stream.jobs))
            members.append(len(drafts))
            drafts.append((arrival, position, order,
                           dict(name=f"{stream.name}#{position}", stream=stream.name,
                                task_class=TASK_CLASSES.index(stream.task_class),
                                weight=stream.weight, processor=stream.processor,
                                jobs=stream.jobs, job_words=words, durations=durations,
                                arrival=arrival),
                           predecessors))
        by_stream[stream.name] = members
    ranked = sorted(range(len(drafts)), key=lambda draft: drafts[draft][:3])
    place = {draft: index for index, draft in enumerate(ranked)}
    return [TaskSpec(index=index, predecessors=tuple(sorted(place[p] for p in drafts[d][4])),
                     **drafts[d][3]) for index, d in enumerate(ranked)]


def admit(scenario: Scenario, tasks: Sequence[TaskSpec]) -> dict[int, str]:
    """The tasks that can never be scheduled, ``{index: reason}``; every other task is admitted.

    A task is rejected when no processor has its type, when its jobs are larger than every
    processor of its type takes, when the matcher cannot match all its jobs within the
    timeout even with processors idle, when the all-jobs-matched gate with reservation needs
    more idle processors at once than can take its jobs, or when a predecessor was rejected.
    """
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a tasksched Scenario, not {scenario!r}")
    check_items("", "tasks", tasks, TaskSpec)
    config = scenario.scheduler
    rejected: dict[int, str] = {}
    for task in tasks:
        largest = max((group.max_job_words for group in scenario.processors
                       if group.type == task.processor), default=None)
        match_beats = -(-task.jobs // config.match_jobs_per_beat)
        reason = None
        if largest is None:
            reason = f"no processor of type {task.processor!r} exists"
        elif task.job_words is None:
            raise ValueError(f"tasks[{task.index}].job_words must be the words of a job on a "
                             f"{task.processor!r} processor (decompose), not None")
        elif task.job_words > largest:
            reason = (f"its jobs of {task.job_words} words exceed the largest "
                      f"{task.processor!r} processor ({largest} words)")
        elif (config.matching == "reserve" and config.gate == "all"
              and task.jobs > (able := sum(group.count for group in scenario.processors
                                           if group.type == task.processor
                                           and group.max_job_words >= task.job_words))):
            reason = (f"its {task.jobs} jobs need {task.jobs} idle {task.processor!r} "
                      f"processors at once (each job reserves one until all have matched), "
                      f"and only {able} can take them")
        elif match_beats > config.timeout:
            reason = (f"matching its {task.jobs} jobs at {config.match_jobs_per_beat} per beat "
                      f"takes {match_beats} beats, more than the {config.timeout}-beat "
                      f"schedule timeout")
        else:
            bad = next((p for p in task.predecessors if p in rejected), None)
            if bad is not None:
                reason = f"its predecessor {tasks[bad].name} was rejected"
        if reason is not None:
            rejected[task.index] = reason
    return rejected
