"""The system model of the task scheduler: :class:`TaskSchedulerSim` steps the task cache, the
state monitor, the matcher, the arbiter, the send and the completion of one scenario under one
policy beat by beat; :func:`simulate` runs it and returns the metrics.

The module is longer than the 600 lines of the project's guide because the units of one beat (cache,
state monitor, matcher with its reservations and livelock detector, arbiter ports, send,
completion) read and write the same per-beat state and are stepped in one order; split into
modules they would pass that whole state around. The scenario, workload and baseline
arbiters live in their own modules."""

import heapq
from collections import deque
from collections.abc import Sequence

import numpy as np

from model.arbiter import ArbiterInputs, WriteOp
from model.checks import InvariantError
from model.config import check_flag, check_hooks, check_sequence
from model.stats import summary
from model.tasksched.config import MIN_SHARE_ROUNDS, POLICIES, TASK_CLASSES, Scenario
from model.tasksched.policies import make_arbiter
from model.tasksched.workload import TaskSpec, admit, build_workload

__all__ = ["InvariantError", "TaskSchedulerSim", "simulate"]

# Processor states.
_IDLE, _LOCKED, _RUNNING = 0, 1, 2
# Event kinds in the processor heap.
_SEND_END, _JOB_END = 0, 1


class _Task:
    """The run-time state of one admitted task."""

    __slots__ = ("spec", "state", "task_id", "registered", "completed", "ready_at", "slot",
                 "match_start", "matched", "loaded", "sent", "finished", "done_at",
                 "registered_at", "first_sent", "failures", "rounds", "grants", "ideal",
                 "lag_max", "matched_at", "reserved", "load_queued", "pending_at")

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
        self.reserved: list[int] = []      # processors matched to its unsent jobs, in order
        self.load_queued = False
        self.pending_at = None             # first beat a job of it joined the pending set


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
    events : list, optional
        When given, every event is appended to it as ``(beat, event, task, stream,
        processor, detail)``: arrive, fetch, land, register, slot, reserve, fail, matched,
        load, clear, send, run, job_end, complete (``processor`` is -1 when none).

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
                 check: bool = True, skip_idle: bool = True, events: list | None = None):
        _check_arguments(scenario, tasks, policy)
        check_flag("", "check", check)
        check_flag("", "skip_idle", skip_idle)
        check_hooks(events, None)
        self.events = events
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
        # Reservations (matching = "reserve"): the task a processor is matched to, since when.
        self.proc_owner: list = [None] * count
        self.reserved_since = [0] * count
        self.reserved_beats = 0
        self.reserve = self.config.matching == "reserve"
        self.per_job = self.config.gate == "per-job"
        self.oldest_first = self.reserve and self.config.reserve_order == "oldest-first"
        # Livelock detection, per processor type (tasks of one type can livelock while
        # another type's processors keep busy): the last beat a job of the type was sent or
        # ended, the type's schedule failures since, and the report once a type has made no
        # progress for livelock_rounds timeouts.
        self._progress_at = dict.fromkeys(self.proc_type, 0)
        self._quiet_failures = dict.fromkeys(self.proc_type, 0)
        self.livelock: dict | None = None
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

    def _log(self, event: str, task: "_Task | None", processor: int = -1,
              detail: str = "") -> None:
        if self.events is not None:
            self.events.append((self.beat, event, task.spec.name if task else "",
                                task.spec.stream if task else "", processor, detail))

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
        state, owner = self.proc_state, self.proc_owner
        return any(state[p] == _IDLE and owner[p] is None for p in self.compatible(spec))

    def _reserve(self, task: _Task, count: int, t: int) -> int:
        """Match up to ``count`` more jobs of ``task``, each to its own idle, unreserved,
        compatible processor (tightest fit first); return how many matched."""
        state, owner = self.proc_state, self.proc_owner
        taken = 0
        for processor in self.compatible(task.spec):
            if taken == count:
                break
            if state[processor] == _IDLE and owner[processor] is None:
                owner[processor] = task
                self.reserved_since[processor] = t
                task.reserved.append(processor)
                self._log("reserve", task, processor)
                taken += 1
        return taken

    def _take(self, task: _Task, count: int, order: list[_Task]) -> int:
        """``reserve_order = "oldest-first"``: move up to ``count`` reservations of processors
        that can run ``task``'s jobs from younger tasks still matching (never loaded, so no
        job of theirs is pending) to ``task``, youngest holder first; return how many."""
        fits = set(self.compatible(task.spec))
        taken = 0
        for victim in sorted(order, key=lambda other: other.task_id, reverse=True):
            if taken == count or victim.task_id <= task.task_id:
                break
            if (victim.state != "matching" or victim.loaded or victim.load_queued
                    or victim.slot is None):
                continue
            for processor in [p for p in reversed(victim.reserved) if p in fits]:
                if taken == count:
                    break
                victim.reserved.remove(processor)
                victim.matched -= 1
                self.proc_owner[processor] = task
                task.reserved.append(processor)
                self._log("reserve", task, processor, f"taken from {victim.spec.name}")
                taken += 1
        return taken

    def _unreserve(self, processor: int, t: int) -> None:
        self.proc_owner[processor] = None
        self.reserved_beats += t - self.reserved_since[processor]

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
            self._check_reservations()
            occupied = len(self._cached) + len(self._in_flight)
            if self.cache_free < 0 or self.cache_free + occupied != self.config.cache_entries:
                self._violation(f"cache space not conserved: {self.cache_free} free + "
                                f"{occupied} used != {self.config.cache_entries}")
        return active

    def _check_reservations(self) -> None:
        """Every reservation is held by the task that lists it, on an idle processor, and a
        task never holds more than the jobs it has left to send."""
        held = 0
        for processor, owner in enumerate(self.proc_owner):
            if owner is None:
                continue
            held += 1
            if processor not in owner.reserved or self.proc_state[processor] != _IDLE:
                self._violation(f"processor {processor} is reserved for {owner.spec.name} "
                                f"but is not idle or not in its reservations")
        listed = sum(len(task.reserved) for task in self._slot_owner if task is not None)
        if held != listed:
            self._violation(f"{held} processors reserved but {listed} reservations listed")
        for task in self._slot_owner:
            if task is not None and len(task.reserved) > task.spec.jobs - task.sent:
                self._violation(f"{task.spec.name} holds {len(task.reserved)} processors for "
                                f"{task.spec.jobs - task.sent} jobs left")

    def _processors(self, t: int) -> bool:
        active = False
        while self._events and self._events[0][0] <= t:
            _, _, kind, processor = heapq.heappop(self._events)
            active = True
            task, duration = self.proc_job[processor]
            if kind == _SEND_END:
                self.proc_state[processor] = _RUNNING
                self._push(t + duration, _JOB_END, processor)
                self._log("run", task, processor, f"{duration} beats")
                continue
            self._log("job_end", task, processor)
            self._progress_at[task.spec.processor] = t
            self._quiet_failures[task.spec.processor] = 0
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
        self._log("complete", task, detail=f"latency {t - task.spec.arrival}")
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
        spec = task.spec
        if self.reserve:
            # The job goes to the processor it was matched to ([0057]: the schedule
            # information carries the processor's identifier).
            processor = task.reserved.pop(0) if task.reserved else None
            if processor is not None:
                if self.proc_owner[processor] is not task:
                    self._violation(f"job of {spec.name} sent to processor {processor}, "
                                    f"which is reserved for another task")
                self._unreserve(processor, t)
        else:
            processor = self._choose_processor(task)
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
        self._log("send", task, processor, f"job {task.sent} of {spec.jobs}")
        self.grants += 1
        self._progress_at[spec.processor] = t
        self._quiet_failures[spec.processor] = 0
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
        task.load_queued = False
        if clear:
            self._writes.append((WriteOp.CLEAR, slot, None))

    def _cache(self, t: int) -> bool:
        active = False
        while self._arrivals and self._arrivals[0].spec.arrival <= t:
            task = self._arrivals.popleft()
            self._log("arrive", task)
            task.state = "global"
            self._global[task.spec.task_class].append(task)
            active = True
        while self._in_flight and self._in_flight[0][0] <= t:
            _, task = self._in_flight.popleft()
            self._log("land", task)
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
                self._log("fetch", task)
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
            self._log("register", task, detail=f"task id {task.task_id}")
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
            task.slot, task.match_start, task.matched = slot, t, task.sent
            task.state = "matching"
            self._log("slot", task, detail=f"slot {slot}")
            self._matching.append(task)
            active = True
        still = []
        # reserve_order = "oldest-first": tasks are served in task-ID order, and a type an
        # older task is still short of is reserved for it alone.
        order = (sorted(self._matching, key=lambda task: task.task_id) if self.oldest_first
                 else self._matching)
        short: set[str] = set()
        for task in order:
            if t - task.match_start >= config.timeout:
                self._fail(task, t)
                active = True
                continue
            if self.reserve:
                wanted = min(config.match_jobs_per_beat, task.spec.jobs - task.matched)
                if self.oldest_first and task.spec.processor in short:
                    matched = 0
                else:
                    matched = self._reserve(task, wanted, t)
                    if self.oldest_first and matched < wanted:
                        matched += self._take(task, wanted - matched, order)
                task.matched += matched
                if self.oldest_first and task.matched < task.spec.jobs:
                    short.add(task.spec.processor)
            elif self._idle_compatible(task.spec):
                matched = min(config.match_jobs_per_beat, task.spec.jobs - task.matched)
                task.matched += matched
            else:
                matched = 0
            active |= matched > 0
            if self.per_job and task.matched > task.sent and not task.load_queued:
                # [0096]: a matched job joins the pending set at once.
                self._queue_load(task)
            if task.matched == task.spec.jobs:
                task.state = "pending"
                task.matched_at = t
                self._log("matched", task, detail=f"{task.spec.jobs} jobs")
                if not task.load_queued:
                    self._queue_load(task)
                continue
            still.append(task)
        self._matching = still
        return active

    def _queue_load(self, task: _Task) -> None:
        """Queue the load of the task's slot. Loading replaces whatever the slot held: a clear
        still queued for it would only cost the write port another divider run."""
        self._writes = deque(write for write in self._writes if write[1] != task.slot)
        self._writes.append((WriteOp.LOAD, task.slot, task))
        task.load_queued = True
        if task.pending_at is None:
            task.pending_at = self.beat

    def _fail(self, task: _Task, t: int) -> None:
        """Schedule failure ([0059], [0099]): the task's unsent jobs leave the pending set and
        release their processors; it gives up its slot and is "to be scheduled" again, at the
        end of the line."""
        self.failures += 1
        kind = task.spec.processor
        self.failures_by_type[kind] = self.failures_by_type.get(kind, 0) + 1
        task.failures += 1
        task.state = "to be scheduled"
        self._log("fail", task, detail=f"{task.matched - task.sent} of "
                                       f"{task.spec.jobs - task.sent} jobs matched")
        for processor in task.reserved:
            self._unreserve(processor, t)
        task.reserved = []
        task.matched = task.sent
        was_loaded = task.loaded
        self._writes = deque(write for write in self._writes
                             if not (write[1] == task.slot and write[2] is task))
        task.load_queued = False
        self._release_slot(task, clear=was_loaded)
        self._waiting.append(task)
        self._quiet_failures[kind] += 1
        rounds = self.config.livelock_rounds
        if (rounds and self.livelock is None and self._quiet_failures[kind] >= rounds
                and t - self._progress_at[kind] >= rounds * self.config.timeout
                and all(state == _IDLE for state, of in zip(self.proc_state, self.proc_type,
                                                             strict=True) if of == kind)):
            # No job of the type sent or running and its tasks failing over and over for
            # livelock_rounds timeouts (whatever the other types do): the run stops and
            # reports it.
            stuck = sorted({other.spec.name for other in self.tasks
                            if other.spec.processor == kind
                            and other.state in ("matching", "to be scheduled", "pending")})
            self.livelock = {"beat": t, "since": self._progress_at[kind],
                             "failures": self._quiet_failures[kind], "rounds": rounds,
                             "processor": kind, "tasks": stuck}
            self._log("livelock", task, detail=f"{self._quiet_failures[kind]} failures since "
                                               f"beat {self._progress_at[kind]}, no {kind!r} "
                                               f"job sent or running")

    def _arbitrate(self, t: int) -> bool:
        request = 0
        requesters = []
        for slot, task in enumerate(self._slot_owner):
            if task is None or not task.loaded or task.sent >= task.matched:
                continue
            # A request can always be served: under reservation the next job's processor is
            # held idle for it; otherwise a compatible processor must be idle now.
            if task.reserved if self.reserve else self._idle_compatible(task.spec):
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
        # The requests are made after this beat's grant was sent, so a requesting slot has a
        # job beyond the one whose grant was taken: it is "backlogged" in the arbiter's terms
        # (its request counts jobs not yet granted, that one included).
        self.arbiter.step(ArbiterInputs(request=request, backlogged=request, grant_ready=1,
                                        **write))
        if offered is not None:
            self._log("load" if offered[0] == WriteOp.LOAD else "clear", offered[2],
                      detail=f"slot {offered[1]}")
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

    def run(self, progress=None) -> dict:
        """Run until every admitted task has completed, nothing can happen any more, or
        ``max_beats``; return the metrics (see :func:`simulate`). ``progress``, when given,
        is called with the beat at every step."""
        limit = self.config.max_beats
        while self._remaining and self.beat < limit and self.livelock is None:
            if progress is not None:
                progress(self.beat)
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
            if any(owner is not None for owner in self.proc_owner):
                self._violation("a processor is still reserved after every task completed")

    def metrics(self) -> dict:
        """The results of the run as plain data (JSON-ready)."""
        done = [task for task in self.tasks if task.state == "done"]
        span = max(self.last_completion, 1) if done else max(self.beat, 1)
        processors = len(self.proc_type)
        unfinished = [task for task in self.tasks if task.state != "done"]
        # Shares of processor time are taken over the time simulated: the makespan, or the
        # whole run when tasks are left over (reservations still held at the end included).
        horizon = max(span, self.beat) if unfinished else span
        reserved = self.reserved_beats + sum(self.beat - self.reserved_since[p]
                                             for p, owner in enumerate(self.proc_owner)
                                             if owner is not None)
        reserved_idle = reserved / (processors * horizon)
        utilisation = sum(self.proc_busy) / (processors * horizon)
        if not (0.0 <= reserved_idle <= 1.0 and 0.0 <= utilisation <= 1.0):
            self._violation(f"shares of processor time out of [0, 1]: reserved idle "
                            f"{reserved_idle:.3f}, utilisation {utilisation:.3f}")
        if self.livelock is not None:
            stopped = "livelock"
        elif not unfinished:
            stopped = "completed"
        elif self.beat >= self.config.max_beats:
            stopped = "max_beats"
        else:
            stopped = "stalled"
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
        return {
            "policy": self.policy,
            "admitted": len(self.tasks),
            "rejected": [{"task": self.specs[index].name, "reason": reason}
                         for index, reason in sorted(self.rejected.items())],
            "completed": len(done),
            "unfinished": [{"task": task.spec.name, "state": task.state} for task in unfinished],
            "stopped": stopped,
            "livelock": self.livelock,
            "beats": self.beat,
            "makespan": span,
            "throughput_per_1000_beats": 1000 * len(done) / span,
            "utilisation": utilisation,
            "utilisation_by_type": {kind: sum(self.proc_busy[p] for p in members)
                                    / (len(members) * horizon)
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
            "matched_to_first_send": summary([task.first_sent - task.pending_at
                                              for task in self.tasks
                                              if task.first_sent is not None
                                              and task.pending_at is not None]),
            "reserved_idle": reserved_idle,
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


def _check_arguments(scenario, tasks, policy) -> None:
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a Scenario, not {scenario!r}")
    if policy not in POLICIES:
        raise ValueError(f"Policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    check_sequence("", "tasks", tasks)
    for index, task in enumerate(tasks):
        if not isinstance(task, TaskSpec):
            raise TypeError(f"tasks[{index}] must be a TaskSpec, not {task!r}")
        if task.index != index:
            raise ValueError(f"tasks[{index}] has index {task.index}: the workload must be in "
                             f"index order (build_workload)")


def simulate(scenario: Scenario, policy: str, *, seed: int = 1, quick: bool = False,
             check: bool = True, tasks: Sequence[TaskSpec] | None = None,
             events: list | None = None, progress=None) -> dict:
    """Run ``scenario`` under ``policy`` and return its metrics.

    The workload is ``tasks`` or :func:`build_workload` with ``seed`` (the same for every
    policy). Metrics: ``utilisation`` (job run time over processors x makespan, also per
    type), ``latency`` (arrival in global memory to completion; also per class and per
    weight, :func:`model.stats.summary`), per stream and per task the ``configured_share``
    (the mean GPS share in the grant rounds of its class while it requested) and the
    ``achieved_share``, ``share_error_max_pp`` (the largest stream error, percentage
    points), ``task_share_error_max_pp`` (tasks with at least :data:`MIN_SHARE_ROUNDS`
    rounds), ``lag_max`` (jobs), ``schedule_failures``, ``throughput_per_1000_beats``,
    ``rejected`` (with reasons) and ``unfinished``. ``progress``: called with the beat at
    every step (a progress bar).
    """
    _check_arguments(scenario, (), policy)
    check_hooks(events, progress)
    if tasks is None:
        tasks = build_workload(scenario, seed, quick=quick)
    return TaskSchedulerSim(scenario, tasks, policy, check=check, events=events).run(progress)
