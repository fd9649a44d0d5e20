"""Configuration of the task-scheduler model: the scenario dataclasses, the TOML loader with
its validation, and the constants every part of the model shares (task classes, policies,
arrival kinds). ``docs/tasksched.md`` has the config format.
"""

from dataclasses import dataclass

from model.arbiter import (
    MAX_CLASSES,
    MAX_FRAC_BITS,
    MAX_TASKS,
    MAX_WEIGHT,
    MAX_WEIGHT_BITS,
    TIE_BREAKS,
    WEIGHT_BITS,
    ArbiterParams,
)
from model.config import (
    Budget,
    ConfigError,
    Fields,
    check_choice,
    check_flag,
    check_int,
    check_items,
    check_pair,
    load_toml,
    toml_path,
)

__all__ = [
    "ARRIVALS",
    "GATES",
    "MATCHING",
    "MAX_BEATS",
    "MAX_JOBS",
    "MAX_STREAM_TASKS",
    "MAX_TOTAL_JOBS",
    "MIN_SHARE_ROUNDS",
    "POLICIES",
    "POLICY_LABELS",
    "POLICY_SHORT",
    "RESERVE_ORDERS",
    "TASK_CLASSES",
    "ProcessorGroup",
    "Scenario",
    "SchedulerArbiterParams",
    "SchedulerConfig",
    "Stream",
    "load_scenario",
    "parse_scenario",
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

#: How the matcher matches a job to a second processor ([0058]-[0059], [0093]-[0096]):
#: ``reserve`` -- each job to a specific idle processor of its type and capability, which is
#: reserved for it (no other job can take it) until the job is sent there or a schedule
#: failure releases it (the default: the seed records "the processor identifier matched to
#: the job", [0059], and the schedule information carries it, [0057]); ``count`` -- a job
#: matches in any beat in which an idle compatible processor exists, without naming it
#: (the model's first reading: 64 jobs "match" one idle processor).
MATCHING = ("reserve", "count")

#: When matched jobs join the pending set: ``all`` -- once every job of the task has matched
#: ([0059], [0094]: the main embodiment; the default); ``per-job`` -- each job as soon as it
#: has matched, a schedule failure removing the task's unsent jobs ([0096], "in other
#: embodiments").
GATES = ("all", "per-job")

#: In which order matching tasks may reserve processors (``matching = "reserve"`` only):
#: ``concurrent`` -- every matching task reserves in every beat, side by side (the seed's
#: rules, the default); ``oldest-first`` -- reservations are granted in task-ID order: a
#: task reserves only while no older task that needs the same processor type is still short
#: of processors, and the oldest short task may take the processors a younger task holds
#: but has not yet been loaded with (the project's resolution of the gate's livelock, see
#: ``docs/tasksched.md``).
RESERVE_ORDERS = ("concurrent", "oldest-first")

MAX_JOBS = 1 << 16

#: The largest run a scenario may ask for (refused at load time, naming the field): the model
#: simulates some 40 000 busy beats a second, so these keep a run within minutes.
MAX_BEATS = 10_000_000
MAX_STREAM_TASKS = 100_000
MAX_TOTAL_JOBS = 2_000_000

#: Tasks (and streams) that competed in fewer grant rounds than this are left out of the share
#: errors: with a handful of rounds one grant more or less is a large fraction.
MIN_SHARE_ROUNDS = 64


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

    def __post_init__(self):
        if not isinstance(self.type, str) or not self.type:
            raise TypeError(f"ProcessorGroup.type must be a non-empty string, not {self.type!r}")
        check_int("ProcessorGroup", "count", self.count, 1, 1024)
        check_int("ProcessorGroup", "word_bytes", self.word_bytes, 1)
        check_int("ProcessorGroup", "max_job_words", self.max_job_words, 1)


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

    def __post_init__(self):
        """The checks of the TOML reader, for a stream built in Python."""
        for name in ("name", "processor"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise TypeError(f"Stream.{name} must be a non-empty string, "
                                f"not {getattr(self, name)!r}")
        check_choice("Stream", "task_class", self.task_class, TASK_CLASSES)
        check_int("Stream", "weight", self.weight, 1, MAX_WEIGHT)
        check_int("Stream", "count", self.count, 1, MAX_STREAM_TASKS)
        check_int("Stream", "jobs", self.jobs, 2, MAX_JOBS)
        if self.jobs & (self.jobs - 1):
            raise ValueError(f"Stream.jobs must be a power of two 2**n with n >= 1 (the seed's "
                             f"job count), not {self.jobs}")
        check_int("Stream", "job_bytes", self.job_bytes, 1)
        check_pair("Stream", "job_beats", self.job_beats, 1)
        check_choice("Stream", "arrival", self.arrival, ARRIVALS)
        check_int("Stream", "start", self.start, 0)
        check_int("Stream", "gap", self.gap, 0 if self.arrival == "burst" else 1)
        if not isinstance(self.chain, bool):
            raise TypeError(f"Stream.chain must be True or False, not {self.chain!r}")
        if self.after is not None and (not isinstance(self.after, str) or not self.after):
            raise TypeError(f"Stream.after must be None or a stream's name, "
                            f"not {self.after!r}")


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
    matching: str = "reserve"
    gate: str = "all"
    reserve_order: str = "concurrent"
    livelock_rounds: int = 16

    def __post_init__(self):
        if self.matching not in MATCHING:
            raise ValueError(f"matching must be one of {', '.join(map(repr, MATCHING))}, "
                             f"not {self.matching!r}")
        if self.gate not in GATES:
            raise ValueError(f"gate must be one of {', '.join(map(repr, GATES))}, "
                             f"not {self.gate!r}")
        if self.reserve_order not in RESERVE_ORDERS:
            raise ValueError(f"reserve_order must be one of "
                             f"{', '.join(map(repr, RESERVE_ORDERS))}, "
                             f"not {self.reserve_order!r}")
        for name in ("timeout", "send_beats", "fetch_beats", "register_beats",
                     "cache_entries", "match_jobs_per_beat", "max_beats", "livelock_rounds"):
            value = getattr(self, name)
            least = 0 if name == "livelock_rounds" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, not {value!r}")
        if self.max_beats > MAX_BEATS:
            raise ValueError(f"max_beats must be at most {MAX_BEATS}, not {self.max_beats}")


@dataclass(frozen=True)
class SchedulerArbiterParams(ArbiterParams):
    """:class:`model.arbiter.ArbiterParams` with the weight-update delay as a knob.

    ``weight_update_clocks`` is how many clocks the arbiter's divider spends on one slot
    after a write (its turn; the new expected weight takes effect at its end). 0 keeps the
    RTL's background divider, :attr:`ArbiterParams.divider_clocks` per slot (6 for the
    seed's 8 bits: two quotient bits per clock); 1 is an ideal one-clock divider. The knob
    lives here, on the system model's side, so that the arbiter's own model stays the RTL's
    exact image.
    """

    weight_update_clocks: int = 0

    def __post_init__(self):
        # The reader's checks, each naming its field; the arbiter's own checks follow.
        owner = "SchedulerArbiterParams"
        check_int(owner, "tasks", self.tasks, 1, MAX_TASKS)
        check_int(owner, "classes", self.classes, 1, MAX_CLASSES)
        check_int(owner, "frac_bits", self.frac_bits, 0, MAX_FRAC_BITS)
        check_choice(owner, "tie_break", self.tie_break, TIE_BREAKS)
        check_flag(owner, "decay", self.decay)
        check_int(owner, "weight_bits", self.weight_bits, WEIGHT_BITS, MAX_WEIGHT_BITS)
        super().__post_init__()
        # 0: the RTL's divider; at most one clock per quotient bit and one to write.
        check_int(owner, "weight_update_clocks", self.weight_update_clocks, 0,
                  self.weight_bits + 1)

    @property
    def divider_clocks(self) -> int:
        return self.weight_update_clocks or super().divider_clocks


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

    def __post_init__(self):
        """The checks of :func:`parse_scenario`, for a scenario built in Python."""
        for name in ("name", "description"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Scenario.{name} must be a string, not {getattr(self, name)!r}")
        if not isinstance(self.scheduler, SchedulerConfig):
            raise TypeError(f"Scenario.scheduler must be a SchedulerConfig, "
                            f"not {self.scheduler!r}")
        if not isinstance(self.arbiter, ArbiterParams):
            raise TypeError(f"Scenario.arbiter must be an ArbiterParams "
                            f"(SchedulerArbiterParams), not {self.arbiter!r}")
        if self.arbiter.classes != len(TASK_CLASSES):
            raise ValueError(f"Scenario.arbiter must have {len(TASK_CLASSES)} classes (one per "
                             f"task class), not {self.arbiter.classes}")
        check_items("Scenario", "processors", self.processors, ProcessorGroup)
        check_items("Scenario", "streams", self.streams, Stream)
        if not self.processors:
            raise ValueError("Scenario.processors must list at least one ProcessorGroup")
        if not self.streams:
            raise ValueError("Scenario.streams must list at least one Stream")
        words: dict[str, int] = {}
        for index, group in enumerate(self.processors):
            if words.setdefault(group.type, group.word_bytes) != group.word_bytes:
                raise ValueError(f"Scenario.processors[{index}].word_bytes must be "
                                 f"{words[group.type]}, the word length of type "
                                 f"{group.type!r}, not {group.word_bytes}")
        tasks = sum(stream.count for stream in self.streams)
        jobs = sum(stream.count * stream.jobs for stream in self.streams)
        if tasks > MAX_STREAM_TASKS or jobs > MAX_TOTAL_JOBS:
            raise ValueError(f"Scenario.streams must hold at most {MAX_STREAM_TASKS:,} tasks and "
                             f"{MAX_TOTAL_JOBS:,} jobs in all (a run this size would take "
                             f"hours), not {tasks:,} tasks of {jobs:,} jobs")
        names: set[str] = set()
        for index, stream in enumerate(self.streams):
            if stream.name in names:
                raise ValueError(f"Scenario.streams[{index}].name must be unique, but "
                                 f"{stream.name!r} is used twice")
            if stream.after is not None and stream.after not in names:
                raise ValueError(f"Scenario.streams[{index}].after must name a stream listed "
                                 f"before it, not {stream.after!r}")
            names.add(stream.name)
        check_int("Scenario", "quick_divisor", self.quick_divisor, 1)

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


def _name(fields: Fields, key: str) -> str:
    """A required name (a processor type, a stream's name): a non-empty string."""
    value = fields.str(key)
    if not value:
        raise fields.error(key, f"must be a non-empty string, not {value!r}")
    return value


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
        max_beats=table.int("max_beats", 200_000, minimum=1, maximum=MAX_BEATS),
        matching=table.str("matching", "reserve", choices=MATCHING),
        gate=table.str("gate", "all", choices=GATES),
        reserve_order=table.str("reserve_order", "concurrent", choices=RESERVE_ORDERS),
        livelock_rounds=table.int("livelock_rounds", 16, minimum=0),
    )
    table.done()

    table = root.table("arbiter", {})
    slots = table.int("slots", 8, minimum=1, maximum=MAX_TASKS)
    frac_bits = table.int("frac_bits", 8, minimum=0, maximum=16)
    tie_break = table.str("tie_break", "history", choices=("history", "index"))
    decay = table.bool("decay", True)
    weight_bits = table.int("weight_bits", 8, minimum=8, maximum=16)
    weight_update_clocks = table.int("weight_update_clocks", 0, minimum=0,
                                     maximum=weight_bits + 1)
    table.done()
    try:
        arbiter = SchedulerArbiterParams(slots, len(TASK_CLASSES), frac_bits,
                                         tie_break=tie_break, decay=decay,
                                         weight_bits=weight_bits,
                                         weight_update_clocks=weight_update_clocks)
    except (TypeError, ValueError) as error:
        raise table.error("weight_bits", f"is not accepted: {error}") from None

    groups = []
    word_of_type: dict[str, tuple[int, str]] = {}
    for group in root.tables("processors"):
        processor_type = _name(group, "type")
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
    task_budget = Budget(MAX_STREAM_TASKS, "tasks", "a run this size would take hours")
    job_budget = Budget(MAX_TOTAL_JOBS, "jobs (count x jobs)",
                        "a run this size would take hours")
    for entry in root.tables("streams"):
        stream_name = _name(entry, "name")
        if stream_name in names:
            raise entry.error("name", f"must be unique, but {stream_name!r} is used twice")
        task_class = entry.str("class", choices=TASK_CLASSES)
        weight = entry.int("weight", 1, minimum=1, maximum=MAX_WEIGHT)
        processor_type = _name(entry, "processor")
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
        task_budget.charge(entry, "count", count)
        job_budget.charge(entry, "jobs", count * jobs)
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
    path = toml_path(path)
    return parse_scenario(load_toml(path), source=path, name=path.stem)
