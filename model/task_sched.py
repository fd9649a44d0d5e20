"""The hardware task scheduler of seed 001 around the delay-factor arbiter, beat by beat.

One beat is one clock of the scheduler. The model follows the seed's [0050]-[0140]:

* **task cache** -- the first processor puts tasks into per-class queues in global memory
  (the tail pointer moves at a task's arrival beat); while a queue's head and tail differ and
  the cache has a free entry, the cache reads one task per beat (oldest first), which lands
  ``fetch_beats`` later ([0140]);
* **state monitor** -- the head of each class's cache queue asks whether its predecessors
  have completed ([0086]-[0089]); if they have, it is registered and gets a task ID, and after
  ``register_beats`` it is decomposed and becomes "to be scheduled" ([0052]-[0055]); if not,
  registration of that class waits (the head blocks its queue, as the seed's in-order queue
  does);
* **decomposer** -- ``2**n`` jobs, each of the configured job size rounded up to a whole
  number of the target processor type's words ([0056], [0091]);
* **matcher** -- a to-be-scheduled task takes a free arbiter slot and matches its jobs to the
  second processors by type, capability (words a processor takes in one job) and idle state,
  ``match_jobs_per_beat`` jobs in a beat in which a compatible processor is idle; when every
  job has matched, the task's jobs join its class's pending set (the slot is loaded into the
  arbiter); if that does not happen within ``timeout`` beats (the seed's 128 or 256) the
  task gets a schedule-failure signal, gives up its slot and is "to be scheduled" again
  ([0059], [0099]);
* **arbiter** -- one job per beat is picked by the policy under test: the seed's delay-factor
  arbiter (:class:`model.arbiter.DelayFactorArbiterModel`, cycle-exact, with its write port
  and divider), FIFO per class with round-robin across classes, or smooth weighted
  round-robin (:class:`model.fairness.SmoothWeightedRoundRobin`);
* **send** -- the chosen job goes to an idle compatible processor, which is locked for
  ``send_beats`` while the job is sent ([0136]) and then runs it for the job's duration;
* **completion** -- when the last job of a task has finished, the state monitor records it,
  the task is destroyed and its cache entry freed ([0138]).

A task that can never match (no processor of its type, jobs larger than every processor of
the type can take, more jobs than the matcher can match within the timeout, or a rejected
predecessor) is rejected at admission with its reason in the results, never retried.

``gpusched tasksched`` runs every scenario in ``configs/tasksched/`` with all three policies
on the same workload and prints one table per scenario; ``docs/tasksched.md`` has the
decisions, the metrics and the config format.
"""

import heapq
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from model.arbiter import (
    MAX_TASKS,
    MAX_WEIGHT,
    ArbiterInputs,
    ArbiterOutputs,
    ArbiterParams,
    DelayFactorArbiterModel,
    WriteOp,
)
from model.checks import InvariantError
from model.config import ConfigError, Fields, load_toml
from model.fairness import SmoothWeightedRoundRobin
from model.report import figure, print_table, progress, save_figure, write_json
from model.stats import summary

__all__ = [
    "ARRIVALS",
    "POLICIES",
    "TASK_CLASSES",
    "FifoRoundRobinArbiter",
    "InvariantError",
    "ProcessorGroup",
    "Scenario",
    "SchedulerConfig",
    "SmoothWrrArbiter",
    "Stream",
    "TaskSchedulerSim",
    "TaskSpec",
    "add_arguments",
    "admit",
    "build_workload",
    "decompose",
    "load_scenario",
    "make_arbiter",
    "parse_scenario",
    "run",
    "simulate",
]

#: The task (and job) classes, in the arbiter's class order: the seed's three data-processing
#: classes first (class 0 wins the last tie, as in :data:`model.arbiter.CLASS_NAMES`), then
#: event and communication tasks.
TASK_CLASSES = ("block", "cluster", "union", "event", "communication")

#: The policies every scenario runs, the seed's first.
POLICIES = ("delay-factor", "fifo-rr", "smooth-wrr")

POLICY_SHORT = {"delay-factor": "DF", "fifo-rr": "FIFO", "smooth-wrr": "SWRR"}

POLICY_LABELS = {
    "delay-factor": "delay-factor arbiter (seed)",
    "fifo-rr": "FIFO per class, RR across",
    "smooth-wrr": "smooth WRR",
}

#: How a stream's tasks arrive in global memory.
ARRIVALS = ("burst", "periodic", "poisson")

MAX_JOBS = 1 << 16

#: Tasks (and streams) that competed in fewer grant rounds than this are left out of the share
#: errors: with a handful of rounds one grant more or less is a large fraction.
MIN_SHARE_ROUNDS = 64

_NO_INPUTS = ArbiterInputs()

# Processor states.
_IDLE, _LOCKED, _RUNNING = 0, 1, 2
# Event kinds in the processor heap.
_SEND_END, _JOB_END = 0, 1


# -- configuration --------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProcessorGroup:
    """``count`` identical second processors of one type.

    ``word_bytes`` is the type's word length (jobs are whole words of it); ``max_job_words``
    the processor's capability, the largest job it takes.
    """

    type: str
    count: int
    word_bytes: int
    max_job_words: int


@dataclass(frozen=True)
class Stream:
    """``count`` tasks of one kind (see ``docs/tasksched.md`` for every field)."""

    name: str
    task_class: str
    weight: int
    processor: str
    count: int
    jobs: int
    job_bytes: int
    job_beats: tuple[int, int]
    arrival: str
    start: int
    gap: int
    chain: bool
    after: str | None


@dataclass(frozen=True)
class SchedulerConfig:
    """The timing of the scheduler, in beats, and its sizes."""

    timeout: int = 128
    send_beats: int = 4
    fetch_beats: int = 8
    register_beats: int = 2
    cache_entries: int = 16
    match_jobs_per_beat: int = 64
    max_beats: int = 200_000


@dataclass(frozen=True)
class Scenario:
    """One scenario file: the scheduler, the arbiter, the processors and the workload."""

    name: str
    description: str
    scheduler: SchedulerConfig
    arbiter: ArbiterParams
    processors: tuple[ProcessorGroup, ...]
    streams: tuple[Stream, ...]
    quick_divisor: int = 4

    def word_bytes(self, processor_type: str) -> int | None:
        """The word length of a processor type, ``None`` when no processor has that type."""
        return next((group.word_bytes for group in self.processors
                     if group.type == processor_type), None)


def _job_beats(fields: Fields) -> tuple[int, int]:
    """``job_beats``: one duration for every job, or a ``[least, most]`` uniform range."""
    try:
        beats = fields.int("job_beats", 32, minimum=1)
        return beats, beats
    except ConfigError:
        pass
    try:
        least, most = fields.int_list("job_beats", length=2, minimum=1)
    except ConfigError:
        least, most = 0, -1
    if least > most:
        raise fields.error("job_beats", "must be an integer >= 1 or a [least, most] pair of "
                                        "integers with 1 <= least <= most") from None
    return least, most


def parse_scenario(data: dict, *, source=None, name: str = "scenario") -> Scenario:
    """Build a :class:`Scenario` from a parsed TOML document; errors name the field."""
    root = Fields(data, source=source)
    description = root.str("description", "")
    quick_divisor = root.int("quick_divisor", 4, minimum=1)

    table = root.table("scheduler", {})
    scheduler = SchedulerConfig(
        timeout=table.int("timeout", 128, minimum=1),
        send_beats=table.int("send_beats", 4, minimum=1),
        fetch_beats=table.int("fetch_beats", 8, minimum=1),
        register_beats=table.int("register_beats", 2, minimum=1),
        cache_entries=table.int("cache_entries", 16, minimum=1),
        match_jobs_per_beat=table.int("match_jobs_per_beat", 64, minimum=1),
        max_beats=table.int("max_beats", 200_000, minimum=1),
    )
    table.done()

    table = root.table("arbiter", {})
    slots = table.int("slots", 8, minimum=1, maximum=MAX_TASKS)
    frac_bits = table.int("frac_bits", 8, minimum=0, maximum=16)
    tie_break = table.str("tie_break", "history", choices=("history", "index"))
    decay = table.bool("decay", True)
    weight_bits = table.int("weight_bits", 8, minimum=8, maximum=16)
    table.done()
    try:
        arbiter = ArbiterParams(slots, len(TASK_CLASSES), frac_bits, tie_break=tie_break,
                                decay=decay, weight_bits=weight_bits)
    except (TypeError, ValueError) as error:
        raise table.error("weight_bits", f"is not accepted: {error}") from None

    groups = []
    word_of_type: dict[str, tuple[int, str]] = {}
    for group in root.tables("processors"):
        processor_type = group.str("type")
        count = group.int("count", 1, minimum=1, maximum=1024)
        word_bytes = group.int("word_bytes", 4, minimum=1)
        max_job_words = group.int("max_job_words", 1024, minimum=1)
        group.done()
        if processor_type in word_of_type and word_of_type[processor_type][0] != word_bytes:
            known, where = word_of_type[processor_type]
            raise group.error("word_bytes", f"must be {known}, the word length of type "
                                            f"{processor_type!r} in {where}, not {word_bytes}")
        word_of_type.setdefault(processor_type, (word_bytes, group.path))
        groups.append(ProcessorGroup(processor_type, count, word_bytes, max_job_words))
    if not groups:
        raise root.error("processors", "must list at least one processor group")

    streams = []
    names = set()
    for entry in root.tables("streams"):
        stream_name = entry.str("name")
        if stream_name in names:
            raise entry.error("name", f"must be unique, but {stream_name!r} is used twice")
        task_class = entry.str("class", choices=TASK_CLASSES)
        weight = entry.int("weight", 1, minimum=1, maximum=MAX_WEIGHT)
        processor_type = entry.str("processor")
        count = entry.int("count", 1, minimum=1)
        jobs = entry.int("jobs", 64, minimum=2, maximum=MAX_JOBS)
        if jobs & (jobs - 1):
            raise entry.error("jobs", f"must be a power of two 2**n with n >= 1 (the seed's "
                                      f"job count), not {jobs}")
        job_bytes = entry.int("job_bytes", 256, minimum=1)
        job_beats = _job_beats(entry)
        arrival = entry.str("arrival", "burst", choices=ARRIVALS)
        start = entry.int("start", 0, minimum=0)
        gap = entry.int("gap", 0 if arrival == "burst" else 100, minimum=0)
        if arrival != "burst" and gap < 1:
            raise entry.error("gap", f"must be an integer >= 1 for {arrival} arrivals, "
                                     f"not {gap}")
        chain = entry.bool("chain", False)
        after = entry.str("after", "") or None
        if after is not None and after not in names:
            raise entry.error("after", f"must name a stream listed before this one, "
                                       f"not {after!r}")
        entry.done()
        names.add(stream_name)
        streams.append(Stream(stream_name, task_class, weight, processor_type, count, jobs,
                              job_bytes, job_beats, arrival, start, gap, chain, after))
    if not streams:
        raise root.error("streams", "must list at least one stream")
    root.done()
    return Scenario(name, description, scheduler, arbiter, tuple(groups), tuple(streams),
                    quick_divisor)


def load_scenario(path) -> Scenario:
    """Read a scenario file (its name is the file's stem); errors name the file and field."""
    path = Path(path)
    return parse_scenario(load_toml(path), source=path, name=path.stem)


# -- the workload ---------------------------------------------------------------------------------

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


def decompose(job_bytes: int, word_bytes: int) -> int:
    """Words per job: the job size rounded up to whole processor words (seed [0056])."""
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
    timeout even with processors idle, or when a predecessor was rejected.
    """
    config = scenario.scheduler
    rejected: dict[int, str] = {}
    for task in tasks:
        largest = max((group.max_job_words for group in scenario.processors
                       if group.type == task.processor), default=None)
        match_beats = -(-task.jobs // config.match_jobs_per_beat)
        reason = None
        if largest is None:
            reason = f"no processor of type {task.processor!r} exists"
        elif task.job_words > largest:
            reason = (f"its jobs of {task.job_words} words exceed the largest "
                      f"{task.processor!r} processor ({largest} words)")
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


# -- the baselines, behind the arbiter's ports ----------------------------------------------------

class _SlotArbiter:
    """What the baselines share: the port contract of :class:`DelayFactorArbiterModel`.

    The requests of a clock decide the grant seen in the next clock; a grant is held until
    ``grant_ready``; a write accepted in clock ``t`` changes its slot from clock ``t + 1``.
    The baselines need no divider, so ``write_ready`` is always high.
    """

    busy = False

    def __init__(self, params: ArbiterParams):
        self.params = params
        self.valid = [False] * params.tasks
        self.job_class = [0] * params.tasks
        self.weight = [0] * params.tasks
        self._grant = (0, 0, 0)

    def outputs(self) -> ArbiterOutputs:
        """The outputs during the current clock."""
        return ArbiterOutputs(1, *self._grant)

    def step(self, inputs: ArbiterInputs = _NO_INPUTS) -> ArbiterOutputs:
        """Advance one clock with ``inputs``; return this clock's outputs."""
        outputs = self.outputs()
        if not self._grant[0] or inputs.grant_ready:
            request = [bool(inputs.request >> slot & 1) and self.valid[slot]
                       for slot in range(self.params.tasks)]
            winner = self._select(request) if any(request) else None
            self._grant = (0, 0, 0) if winner is None else (1, winner, self.job_class[winner])
        if inputs.write_valid and inputs.write_slot < self.params.tasks:
            slot = inputs.write_slot
            load = inputs.write_op == WriteOp.LOAD and inputs.write_weight > 0
            self.valid[slot] = load
            self.job_class[slot] = inputs.write_job_class if load else 0
            self.weight[slot] = inputs.write_weight if load else 0
            self._written(slot, load)
        return outputs

    def _select(self, request: list[bool]) -> int:
        raise NotImplementedError

    def _written(self, slot: int, load: bool) -> None:
        pass


class FifoRoundRobinArbiter(_SlotArbiter):
    """Baseline: FIFO per class, round-robin across classes, weights ignored.

    Within a class the requesting slot loaded earliest wins (a job whose processor is busy
    does not block the next task of its class: the FIFO is work-conserving); the classes
    take turns, starting after the class granted last.
    """

    def __init__(self, params: ArbiterParams):
        super().__init__(params)
        self._loaded_at = [0] * params.tasks
        self._loads = 0
        self._last_class = params.classes - 1

    def _written(self, slot, load):
        self._loads += 1
        self._loaded_at[slot] = self._loads

    def _select(self, request):
        classes = self.params.classes
        for offset in range(1, classes + 1):
            job_class = (self._last_class + offset) % classes
            slots = [slot for slot, wanted in enumerate(request)
                     if wanted and self.job_class[slot] == job_class]
            if slots:
                self._last_class = job_class
                return min(slots, key=self._loaded_at.__getitem__)
        raise AssertionError("a request without a class")


class SmoothWrrArbiter(_SlotArbiter):
    """Baseline: smooth weighted round-robin over the configured weights of all slots.

    The arithmetic is :class:`model.fairness.SmoothWeightedRoundRobin` (nginx's), run on a
    batch of one set whose tasks are the slots; loading a slot sets its weight and clears its
    current weight, clearing it sets both to 0. Classes play no part: shares follow the
    configured weights across every class.
    """

    def __init__(self, params: ArbiterParams):
        super().__init__(params)
        self._policy = SmoothWeightedRoundRobin()
        tasks = params.tasks
        self._policy.reset(np.zeros((1, tasks), dtype=np.int64), np.zeros((1, tasks), bool))

    def _written(self, slot, load):
        self._policy.weights[0, slot] = self.weight[slot]
        self._policy.current[0, slot] = 0

    def _select(self, request):
        return int(self._policy.pick(np.array([request]))[0])


def make_arbiter(policy: str, params: ArbiterParams):
    """The arbiter of ``policy`` (one of :data:`POLICIES`) with ``params``' slots and classes."""
    if policy == "delay-factor":
        return DelayFactorArbiterModel(params)
    if policy == "fifo-rr":
        return FifoRoundRobinArbiter(params)
    if policy == "smooth-wrr":
        return SmoothWrrArbiter(params)
    raise ValueError(f"Policy must be one of {', '.join(POLICIES)}, not {policy!r}")


# -- the system model -----------------------------------------------------------------------------

class _Task:
    """The run-time state of one admitted task."""

    __slots__ = ("spec", "state", "task_id", "registered", "completed", "ready_at", "slot",
                 "match_start", "matched", "loaded", "sent", "finished", "done_at",
                 "registered_at", "first_sent", "failures", "rounds", "grants", "ideal",
                 "lag_max", "matched_at")

    def __init__(self, spec: TaskSpec):
        self.spec = spec
        self.state = "queued"
        self.task_id = None
        self.registered = self.completed = 0
        self.ready_at = self.match_start = 0
        self.slot = None
        self.matched = self.sent = self.finished = self.failures = 0
        self.loaded = False
        self.done_at = self.registered_at = self.first_sent = None
        self.rounds = self.grants = 0
        self.ideal = self.lag_max = 0.0
        self.matched_at = None


class TaskSchedulerSim:
    """The scheduler of one scenario under one policy, beat by beat.

    Parameters
    ----------
    scenario : Scenario
        Timing, arbiter parameters and processors.
    tasks : sequence of TaskSpec
        The workload (:func:`build_workload`); tasks :func:`admit` rejects are left out.
    policy : str
        One of :data:`POLICIES`.
    check : bool
        Check the per-beat invariants (cache space conserved) besides the ones checked on
        every event (a job is only sent to an idle, compatible processor; every task is
        registered once, after its predecessors completed, and completed once). Tests
        always check; the final checks run either way.
    skip_idle : bool
        After a beat in which nothing happened, jump to the next beat at which a timer fires
        (an arrival, a fetch, a registration, a send or job end, a timeout): nothing else can
        change in between, so the results are the same as beat by beat, only faster.

    Within a beat, in this order: (1) sends that end start running and jobs that end free
    their processor (a task whose last job ended completes and frees its cache entry);
    (2) the arbiter's grant (decided in the previous beat) is sent: an idle compatible
    processor is locked; (3) arrivals enter global memory, fetched tasks land in the cache,
    one fetch is issued; (4) each class's cache head registers if its predecessors have
    completed; (5) to-be-scheduled tasks take free arbiter slots, timeouts fire, matching
    progresses, fully matched tasks queue a slot load; (6) the head write is offered to the
    arbiter, the requests (slot loaded, jobs left, a compatible processor idle) are
    presented and the arbiter clocks.
    """

    def __init__(self, scenario: Scenario, tasks: Sequence[TaskSpec], policy: str, *,
                 check: bool = True, skip_idle: bool = True):
        self.scenario = scenario
        self.config = scenario.scheduler
        self.policy = policy
        self.check = check
        self.skip_idle = skip_idle
        self.arbiter = make_arbiter(policy, scenario.arbiter)
        self.rejected = admit(scenario, tasks)
        self.specs = list(tasks)
        self.tasks = [_Task(spec) for spec in tasks if spec.index not in self.rejected]
        self._by_index = {task.spec.index: task for task in self.tasks}

        self.proc_type, self.proc_words = [], []
        for group in scenario.processors:
            self.proc_type += [group.type] * group.count
            self.proc_words += [group.max_job_words] * group.count
        count = len(self.proc_type)
        self.proc_state = [_IDLE] * count
        self.proc_job: list = [None] * count
        self.proc_busy = [0] * count
        self._compatible: dict[tuple[str, int], list[int]] = {}

        self.beat = 0
        self._events: list = []
        self._sequence = 0
        self._arrivals = deque(sorted(self.tasks, key=lambda task: task.spec.index))
        self._global = [deque() for _ in TASK_CLASSES]
        self._in_flight: deque = deque()
        self._cache_queues = [deque() for _ in TASK_CLASSES]
        self.cache_free = self.config.cache_entries
        self._cached: set[int] = set()
        self._registering: deque = deque()
        self._waiting: deque = deque()
        self._matching: list[_Task] = []
        self._slot_owner: list[_Task | None] = [None] * scenario.arbiter.tasks
        self._writes: deque = deque()
        self._requesters: list[_Task] = []
        self._completed: set[int] = set()
        self._next_id = 0
        self._remaining = len(self.tasks)
        self.failures = 0
        self.failures_by_type: dict[str, int] = {}
        self.grants = 0
        self.grant_stalls = 0
        self.last_completion = 0

    # -- helpers ----------------------------------------------------------------------------------

    def _violation(self, message: str):
        raise InvariantError(f"{self.policy}, beat {self.beat}: {message}")

    def _push(self, time: int, kind: int, processor: int) -> None:
        self._sequence += 1
        heapq.heappush(self._events, (time, self._sequence, kind, processor))

    def compatible(self, spec: TaskSpec) -> list[int]:
        """Processors that can run ``spec``'s jobs, smallest capability first, then by index."""
        key = (spec.processor, spec.job_words)
        if key not in self._compatible:
            fitting = [index for index, (kind, words) in
                       enumerate(zip(self.proc_type, self.proc_words, strict=True))
                       if kind == spec.processor and words >= spec.job_words]
            self._compatible[key] = sorted(fitting, key=lambda p: (self.proc_words[p], p))
        return self._compatible[key]

    def _idle_compatible(self, spec: TaskSpec) -> bool:
        state = self.proc_state
        return any(state[p] == _IDLE for p in self.compatible(spec))

    def _choose_processor(self, task: _Task) -> int | None:
        """The processor a granted job goes to: the idle compatible one that fits most tightly
        (smallest capability, then lowest index), so large processors stay free for large
        jobs; ``None`` when none is idle."""
        return next((p for p in self.compatible(task.spec) if self.proc_state[p] == _IDLE),
                    None)

    # -- one beat ---------------------------------------------------------------------------------

    def step(self) -> bool:
        """Simulate the current beat; return whether anything happened or may happen next beat
        that would not also happen in a later beat (``False``: the beat was idle)."""
        t = self.beat
        active = self._processors(t)
        active |= self._dispatch(t)
        active |= self._cache(t)
        active |= self._register(t)
        active |= self._schedule(t)
        active |= self._arbitrate(t)
        if self.check:
            occupied = len(self._cached) + len(self._in_flight)
            if self.cache_free < 0 or self.cache_free + occupied != self.config.cache_entries:
                self._violation(f"cache space not conserved: {self.cache_free} free + "
                                f"{occupied} used != {self.config.cache_entries}")
        return active

    def _processors(self, t: int) -> bool:
        active = False
        while self._events and self._events[0][0] <= t:
            _, _, kind, processor = heapq.heappop(self._events)
            active = True
            task, duration = self.proc_job[processor]
            if kind == _SEND_END:
                self.proc_state[processor] = _RUNNING
                self._push(t + duration, _JOB_END, processor)
                continue
            self.proc_state[processor] = _IDLE
            self.proc_job[processor] = None
            self.proc_busy[processor] += duration
            task.finished += 1
            if task.finished == task.spec.jobs:
                self._complete(task, t)
        return active

    def _complete(self, task: _Task, t: int) -> None:
        task.completed += 1
        if task.completed != 1 or task.sent != task.spec.jobs:
            self._violation(f"{task.spec.name} completed {task.completed} times after "
                            f"{task.sent} of {task.spec.jobs} jobs were sent")
        task.state = "done"
        task.done_at = t
        self._completed.add(task.spec.index)
        self._cached.discard(task.spec.index)
        self.cache_free += 1
        self._remaining -= 1
        self.last_completion = t

    def _dispatch(self, t: int) -> bool:
        outputs = self.arbiter.outputs()
        requesters, self._requesters = self._requesters, []
        if not outputs.grant_valid:
            if requesters:
                self.grant_stalls += 1
            return False
        slot = outputs.grant_slot
        task = self._slot_owner[slot]
        if task is None or not task.loaded or task.sent >= task.spec.jobs:
            self._violation(f"grant for slot {slot}, which holds no task with jobs to send")
        if task not in requesters:
            self._violation(f"grant for {task.spec.name}, which did not request")
        processor = self._choose_processor(task)
        spec = task.spec
        if processor is None:
            self._violation(f"no idle processor for the granted job of {spec.name}")
        if self.proc_state[processor] != _IDLE:
            self._violation(f"job of {spec.name} sent to processor {processor}, which is "
                            f"{'locked' if self.proc_state[processor] == _LOCKED else 'busy'}")
        if (self.proc_type[processor] != spec.processor
                or self.proc_words[processor] < spec.job_words):
            self._violation(f"job of {spec.name} ({spec.processor}, {spec.job_words} words) "
                            f"sent to a mismatched processor {processor} "
                            f"({self.proc_type[processor]}, {self.proc_words[processor]} words)")
        # The processor is locked while the job is sent ([0136]), then runs it.
        self.proc_state[processor] = _LOCKED
        self.proc_job[processor] = (task, spec.durations[task.sent])
        self._push(t + self.config.send_beats, _SEND_END, processor)
        self._account(task, requesters)
        self.grants += 1
        if task.first_sent is None:
            task.first_sent = t
        task.sent += 1
        if task.sent == spec.jobs:
            # Every job issued: the task leaves its pending set and its slot ([0070]).
            task.state = "sent"
            self._release_slot(task, clear=True)
        return True

    def _account(self, winner: _Task, requesters: list[_Task]) -> None:
        """Share accounting of one grant round within the winner's class: each requesting task
        of the class was due ``weight / (sum of their weights)`` of the grant (GPS)."""
        job_class = winner.spec.task_class
        rivals = [task for task in requesters if task.spec.task_class == job_class]
        total = sum(task.spec.weight for task in rivals)
        for task in rivals:
            task.rounds += 1
            task.ideal += task.spec.weight / total
            if task is winner:
                task.grants += 1
            task.lag_max = max(task.lag_max, abs(task.ideal - task.grants))

    def _release_slot(self, task: _Task, *, clear: bool) -> None:
        slot = task.slot
        self._slot_owner[slot] = None
        task.slot = None
        task.loaded = False
        if clear:
            self._writes.append((WriteOp.CLEAR, slot, None))

    def _cache(self, t: int) -> bool:
        active = False
        while self._arrivals and self._arrivals[0].spec.arrival <= t:
            task = self._arrivals.popleft()
            task.state = "global"
            self._global[task.spec.task_class].append(task)
            active = True
        while self._in_flight and self._in_flight[0][0] <= t:
            _, task = self._in_flight.popleft()
            task.state = "cached"
            self._cached.add(task.spec.index)
            self._cache_queues[task.spec.task_class].append(task)
            active = True
        if self.cache_free > 0:
            # Head and tail differ and there is room: read one task, the oldest head ([0140]).
            heads = [queue[0] for queue in self._global if queue]
            if heads:
                task = min(heads, key=lambda task: task.spec.index)
                self._global[task.spec.task_class].popleft()
                self.cache_free -= 1
                task.state = "fetching"
                self._in_flight.append((t + self.config.fetch_beats, task))
                active = True
        return active

    def _predecessors_done(self, task: _Task) -> bool:
        """The state monitor's answer to the predecessor query ([0086]-[0088])."""
        return all(index in self._completed for index in task.spec.predecessors)

    def _register(self, t: int) -> bool:
        active = False
        for queue in self._cache_queues:
            if not queue:
                continue
            task = queue[0]
            if not self._predecessors_done(task):
                continue
            queue.popleft()
            task.registered += 1
            if task.registered != 1:
                self._violation(f"{task.spec.name} registered {task.registered} times")
            if self.check:
                late = [self._by_index[p].spec.name for p in task.spec.predecessors
                        if self._by_index[p].done_at is None or self._by_index[p].done_at > t]
                if late:
                    self._violation(f"{task.spec.name} registered before {', '.join(late)} "
                                    f"completed")
            task.task_id = self._next_id
            self._next_id += 1
            task.registered_at = t
            task.ready_at = t + self.config.register_beats
            task.state = "registering"
            self._registering.append(task)
            active = True
        return active

    def _schedule(self, t: int) -> bool:
        active = False
        config = self.config
        while self._registering and self._registering[0].ready_at <= t:
            task = self._registering.popleft()
            task.state = "to be scheduled"
            self._waiting.append(task)
            active = True
        while self._waiting and None in self._slot_owner:
            task = self._waiting.popleft()
            slot = self._slot_owner.index(None)
            self._slot_owner[slot] = task
            task.slot, task.match_start, task.matched = slot, t, 0
            task.state = "matching"
            self._matching.append(task)
            active = True
        still = []
        for task in self._matching:
            if t - task.match_start >= config.timeout:
                # Schedule failure: back to "to be scheduled", at the end of the line ([0099]).
                self.failures += 1
                kind = task.spec.processor
                self.failures_by_type[kind] = self.failures_by_type.get(kind, 0) + 1
                task.failures += 1
                task.state = "to be scheduled"
                self._release_slot(task, clear=False)
                self._waiting.append(task)
                active = True
                continue
            if self._idle_compatible(task.spec):
                task.matched = min(task.spec.jobs, task.matched + config.match_jobs_per_beat)
                active = True
                if task.matched == task.spec.jobs:
                    task.state = "pending"
                    task.matched_at = t
                    # Loading the slot replaces whatever it held: a clear still queued for it
                    # would only cost the write port another divider run.
                    self._writes = deque(write for write in self._writes
                                         if write[1] != task.slot)
                    self._writes.append((WriteOp.LOAD, task.slot, task))
                    continue
            still.append(task)
        self._matching = still
        return active

    def _arbitrate(self, t: int) -> bool:
        request = 0
        requesters = []
        for slot, task in enumerate(self._slot_owner):
            if (task is not None and task.loaded and task.sent < task.spec.jobs
                    and self._idle_compatible(task.spec)):
                request |= 1 << slot
                requesters.append(task)
        self._requesters = requesters
        write = {}
        offered = None
        if self._writes and self.arbiter.outputs().write_ready:
            # Loads first: a load lets a ready task be granted, a clear only takes a task that
            # no longer requests out of its class's total weight.
            offered = next((write for write in self._writes if write[0] == WriteOp.LOAD),
                           self._writes[0])
            self._writes.remove(offered)
            op, slot, task = offered
            write = dict(write_valid=1, write_slot=slot, write_op=op,
                         write_job_class=task.spec.task_class if task else 0,
                         write_weight=task.spec.weight if task else 0)
        busy = self.arbiter.busy
        self.arbiter.step(ArbiterInputs(request=request, grant_ready=1, **write))
        if offered is not None and offered[2] is not None:
            offered[2].loaded = True           # requests from the next beat on
        return bool(request or offered or busy or self._writes)

    # -- the run ----------------------------------------------------------------------------------

    def _next_event(self) -> int | None:
        """The next beat at which a timer fires (after an idle beat nothing else changes)."""
        times = []
        if self._events:
            times.append(self._events[0][0])
        if self._arrivals:
            times.append(self._arrivals[0].spec.arrival)
        if self._in_flight:
            times.append(self._in_flight[0][0])
        if self._registering:
            times.append(self._registering[0].ready_at)
        times += [task.match_start + self.config.timeout for task in self._matching]
        times = [time for time in times if time > self.beat]
        return min(times) if times else None

    def run(self) -> dict:
        """Run until every admitted task has completed, nothing can happen any more, or
        ``max_beats``; return the metrics (see :func:`simulate`)."""
        limit = self.config.max_beats
        while self._remaining and self.beat < limit:
            if self.step() or not self.skip_idle:
                self.beat += 1
                continue
            following = self._next_event()
            if following is None:
                break                           # nothing will ever change: reported below
            self.beat = max(self.beat + 1, min(following, limit))
        self._final_checks()
        return self.metrics()

    def _final_checks(self) -> None:
        for task in self.tasks:
            if task.state == "done" and (task.registered != 1 or task.completed != 1
                                         or task.finished != task.spec.jobs):
                self._violation(f"{task.spec.name} registered {task.registered}, completed "
                                f"{task.completed} times, {task.finished} jobs finished")
            if task.registered > 1 or task.completed > 1:
                self._violation(f"{task.spec.name} registered or completed more than once")
        if not self._remaining:
            if self.cache_free != self.config.cache_entries:
                self._violation(f"cache space leaked: {self.cache_free} of "
                                f"{self.config.cache_entries} entries free at the end")
            if any(state != _IDLE for state in self.proc_state):
                self._violation("a processor is still busy after every task completed")

    def metrics(self) -> dict:
        """The results of the run as plain data (JSON-ready)."""
        done = [task for task in self.tasks if task.state == "done"]
        span = max(self.last_completion, 1) if done else max(self.beat, 1)
        processors = len(self.proc_type)
        by_type: dict[str, list[int]] = {}
        for index, kind in enumerate(self.proc_type):
            by_type.setdefault(kind, []).append(index)

        def latencies(selected):
            return summary([task.done_at - task.spec.arrival for task in selected])

        streams = {}
        for stream in self.scenario.streams:
            members = [task for task in self.tasks if task.spec.stream == stream.name]
            rounds = sum(task.rounds for task in members)
            grants = sum(task.grants for task in members)
            ideal = sum(task.ideal for task in members)
            streams[stream.name] = {
                "class": stream.task_class, "weight": stream.weight,
                "tasks": len(members), "rounds": rounds, "grants": grants,
                "configured_share": ideal / rounds if rounds else 0.0,
                "achieved_share": grants / rounds if rounds else 0.0,
                "share_error_pp": 100 * abs(grants - ideal) / rounds if rounds else 0.0,
                "lag_max": max((task.lag_max for task in members), default=0.0),
                "latency": latencies([task for task in members if task.state == "done"]),
                "failures": sum(task.failures for task in members),
            }
        measured = [task for task in self.tasks if task.rounds >= MIN_SHARE_ROUNDS]
        task_errors = [100 * abs(task.grants - task.ideal) / task.rounds for task in measured]
        stream_errors = [entry["share_error_pp"] for entry in streams.values()
                         if entry["rounds"] >= MIN_SHARE_ROUNDS]
        unfinished = [task for task in self.tasks if task.state != "done"]
        return {
            "policy": self.policy,
            "admitted": len(self.tasks),
            "rejected": [{"task": self.specs[index].name, "reason": reason}
                         for index, reason in sorted(self.rejected.items())],
            "completed": len(done),
            "unfinished": [{"task": task.spec.name, "state": task.state} for task in unfinished],
            "beats": self.beat,
            "makespan": span,
            "throughput_per_1000_beats": 1000 * len(done) / span,
            "utilisation": sum(self.proc_busy) / (processors * span),
            "utilisation_by_type": {kind: sum(self.proc_busy[p] for p in members)
                                    / (len(members) * span)
                                    for kind, members in by_type.items()},
            "latency": latencies(done),
            "latency_by_class": {TASK_CLASSES[c]: latencies([task for task in done
                                                             if task.spec.task_class == c])
                                 for c in sorted({task.spec.task_class for task in done})},
            "latency_by_weight": {str(w): latencies([task for task in done
                                                     if task.spec.weight == w])
                                  for w in sorted({task.spec.weight for task in done})},
            "share_error_max_pp": max(stream_errors, default=0.0),
            "task_share_error_max_pp": max(task_errors, default=0.0),
            "task_share_error_mean_pp": float(np.mean(task_errors)) if task_errors else 0.0,
            "lag_max": max((task.lag_max for task in self.tasks), default=0.0),
            "schedule_failures": self.failures,
            "failures_by_type": dict(sorted(self.failures_by_type.items())),
            "grants": self.grants,
            "grant_stalls": self.grant_stalls,
            "matched_to_first_send": summary([task.first_sent - task.matched_at
                                              for task in self.tasks
                                              if task.first_sent is not None]),
            "streams": streams,
            "tasks": [{"task": task.spec.name, "weight": task.spec.weight,
                       "rounds": task.rounds, "grants": task.grants,
                       "configured_share": task.ideal / task.rounds if task.rounds else 0.0,
                       "achieved_share": task.grants / task.rounds if task.rounds else 0.0,
                       "lag_max": task.lag_max, "failures": task.failures,
                       "latency": (task.done_at - task.spec.arrival
                                   if task.done_at is not None else None)}
                      for task in self.tasks],
        }


def simulate(scenario: Scenario, policy: str, *, seed: int = 1, quick: bool = False,
             check: bool = True, tasks: Sequence[TaskSpec] | None = None) -> dict:
    """Run ``scenario`` under ``policy`` and return its metrics.

    The workload is ``tasks`` or :func:`build_workload` with ``seed`` (the same for every
    policy). Metrics: ``utilisation`` (job run time over processors x makespan, also per
    type), ``latency`` (arrival in global memory to completion; also per class and per
    weight, :func:`model.stats.summary`), per stream and per task the ``configured_share``
    (the mean GPS share in the grant rounds of its class while it requested) and the
    ``achieved_share``, ``share_error_max_pp`` (the largest stream error, percentage
    points), ``task_share_error_max_pp`` (tasks with at least :data:`MIN_SHARE_ROUNDS`
    rounds), ``lag_max`` (jobs), ``schedule_failures``, ``throughput_per_1000_beats``,
    ``rejected`` (with reasons) and ``unfinished``.
    """
    if tasks is None:
        tasks = build_workload(scenario, seed, quick=quick)
    return TaskSchedulerSim(scenario, tasks, policy, check=check).run()


# -- the command line -----------------------------------------------------------------------------

def add_arguments(parser) -> None:
    """``gpusched tasksched`` has only the common options."""


_HEADERS = ("policy", "util %", "tasks /kbeat", "lat mean", "lat p99", "share err",
            "task err", "lag", "fails")


def _row(result: dict) -> list:
    return [POLICY_SHORT[result["policy"]], round(100 * result["utilisation"], 1),
            round(result["throughput_per_1000_beats"], 2), round(result["latency"]["mean"]),
            round(result["latency"]["p99"]), round(result["share_error_max_pp"], 2),
            round(result["task_share_error_max_pp"], 2), round(result["lag_max"], 1),
            result["schedule_failures"]]


def _caption(by_policy: dict) -> str:
    first = by_policy[POLICIES[0]]
    parts = ["DF: the seed's delay-factor arbiter; FIFO: FIFO per class, round-robin across "
             "classes; SWRR: smooth weighted round-robin",
             f"{first['admitted']} tasks admitted; lat: arrival to completion, beats; share "
             f"err: largest |achieved - configured| share of a stream within its class, pp; "
             f"task err: the same per task (>= {MIN_SHARE_ROUNDS} rounds); lag: jobs"]
    for policy in POLICIES:
        unfinished = by_policy[policy]["unfinished"]
        if unfinished:
            parts.append(f"{POLICY_SHORT[policy]}: {len(unfinished)} tasks unfinished at beat "
                         f"{by_policy[policy]['beats']}")
    rejected = first["rejected"]
    if rejected:
        reasons = dict.fromkeys(f"{entry['task'].split('#')[0]}: {entry['reason']}"
                                for entry in rejected)
        parts.append(f"{len(rejected)} rejected at admission ({'; '.join(reasons)})")
    return ". ".join(parts)


def _plot(scenario: Scenario, results: dict, path: Path) -> None:
    fig, (shares, latency) = figure(1, 2, figsize=(12, 4.5))
    names = [stream.name for stream in scenario.streams]
    positions = np.arange(len(names))
    width = 0.8 / len(POLICIES)
    for index, policy in enumerate(POLICIES):
        streams = results[policy]["streams"]
        error = [100 * (streams[n]["achieved_share"] - streams[n]["configured_share"])
                 for n in names]
        mean = [streams[n]["latency"]["mean"] for n in names]
        p99 = [streams[n]["latency"]["p99"] for n in names]
        offset = positions + (index - (len(POLICIES) - 1) / 2) * width
        shares.bar(offset, error, width, label=POLICY_LABELS[policy])
        latency.bar(offset, mean, width, label=POLICY_LABELS[policy])
        latency.scatter(offset, p99, marker="_", color="black", s=60)
    for axis in (shares, latency):
        axis.set_xticks(positions, [f"{n}\n(w {s.weight}, {s.task_class})"
                                    for n, s in zip(names, scenario.streams, strict=True)],
                        fontsize=8)
        axis.grid(axis="y", alpha=0.3)
    shares.axhline(0, color="black", linewidth=0.8)
    shares.set_ylabel("achieved - configured share (pp)")
    shares.set_title("share of grants within the class")
    latency.set_ylabel("task latency (beats): bar mean, tick p99")
    latency.set_title("latency per stream")
    shares.legend(fontsize=8)
    fig.suptitle(f"tasksched: {scenario.name}")
    save_figure(fig, path)


def run(args) -> int:
    """Run every scenario of ``args.config`` with every policy; tables, plots, JSON."""
    scenarios = [load_scenario(path) for path in args.config]
    if not scenarios:
        raise ConfigError("no scenario files given (configs/tasksched/*.toml is empty)")
    workloads = {scenario.name: build_workload(scenario, args.seed, quick=args.quick)
                 for scenario in scenarios}
    runs = [(scenario, policy) for scenario in scenarios for policy in POLICIES]
    results: dict[str, dict] = {scenario.name: {} for scenario in scenarios}
    for scenario, policy in progress(runs, "tasksched", quiet=args.quiet):
        results[scenario.name][policy] = simulate(scenario, policy,
                                                  tasks=workloads[scenario.name])
    for scenario in scenarios:
        by_policy = results[scenario.name]
        print_table(f"tasksched {scenario.name}: {scenario.description}", _HEADERS,
                    [_row(by_policy[policy]) for policy in POLICIES],
                    caption=_caption(by_policy))
        _plot(scenario, by_policy, Path(args.plots) / f"tasksched_{scenario.name}.png")
    if args.json is not None:
        write_json(args.json, {"seed": args.seed, "quick": args.quick,
                               "scenarios": {name: {"policies": by_policy}
                                             for name, by_policy in results.items()}})
    return 0
