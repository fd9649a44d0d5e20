"""Seed 003: host-side dispatch of sub-tasks from many CPU threads to a few FPGA kernel instances.

A discrete-event model at **integer microsecond** resolution (every time, duration and cost is
an ``int`` in µs; nothing is rounded inside the model). ``T`` CPU threads each hold a queue of
sub-tasks; a task (e.g. one video) is split into ordered sub-tasks (its segments) that all
live in one thread, each needing its predecessor's state. ``I < T`` kernel instances run one
sub-task at a time.

The seed's dispatcher (:class:`SeedBatchDispatch`):

1. when the shared FIFO is empty, take the next batch of ``batch`` threads from the thread
   order table (ordered by the arrival time of each thread's first waiting sub-task, or by its
   priority), and move one sub-task from each into the FIFO, earliest arrival first. A table
   is one *round*: its threads are drawn batch by batch; when it is used up, a new table is
   built from the threads that have a sub-task waiting at that moment;
2. idle instances pull the FIFO's head asynchronously, at the moment they become idle;
3. a sub-task whose task was seen before carries its task's state from the thread's backup
   buffer (shipped to the instance unless the instance still holds it); the result updates
   the buffer. A task's first state goes into its thread's area (``per_thread`` states), else
   into the shared spare buffer (a *spare spill*), else back to host memory (a *host spill*:
   every later sub-task of that task pays ``host_refetch_us`` on top of the state transfer);
4. a task is complete when a sub-task of *another* task is taken from its thread after the
   task's final sub-task has run; its result is then read from the buffer and the entry freed
   (a thread's last task completes when its final sub-task finishes: end of stream).

Baselines on the same workload: :class:`StaticBinding` (the seed's prior art: thread ``t`` is
bound to instance ``t mod I``, each instance serves its own threads first-ready-first) and
:class:`WorkQueue` (one queue of ready sub-tasks, FIFO by readiness, no batching, no order
table). In every policy a thread has at most one sub-task outstanding (from the moment it is
handed to the dispatcher until it finishes): a CPU thread issues its sub-tasks one at a time,
which is what makes the seed's completion rule sound, and which implies the dependency rule.

:class:`InvariantChecker` (on in debug mode, which the tests always use) checks that the
sub-tasks of one task start strictly in order, each after its predecessor finished, never two
at once; that every sub-task runs exactly once; that an instance runs one sub-task at a time;
that the buffers never exceed their capacity; and that the seed's completion rule (the next
sub-task taken from the thread belongs to another task) fires only after the task's final
sub-task has finished.

``gpusched hostsched`` runs every scenario in ``configs/hostsched/`` with every policy; see
``docs/hostsched.md``.
"""

import heapq
import random
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from model.checks import InvariantError
from model.config import ConfigError, Fields, load_toml
from model.stats import jain_index, summary

__all__ = [
    "ORDERS",
    "InvariantChecker",
    "InvariantError",
    "Policy",
    "RunResult",
    "Scenario",
    "SeedBatchDispatch",
    "StaticBinding",
    "SubTask",
    "SystemParams",
    "ThreadGroup",
    "WorkQueue",
    "Workload",
    "add_arguments",
    "generate_workload",
    "load_scenario",
    "make_policies",
    "run",
    "simulate",
    "workload_from_lists",
]

#: The thread orders of the seed's order table.
ORDERS = ("arrival", "priority")

#: Workload scale of ``--quick`` (tasks per thread are multiplied by it, at least 1).
QUICK_SCALE = 0.25


# -- workload -------------------------------------------------------------------------------------


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
    its ``last`` sub-task. Raises ``ValueError`` when a task appears in two threads, when
    arrivals decrease within a thread, or when a duration is not positive.
    """
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


# -- configuration --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemParams:
    """The hardware and the host buffers.

    ``instances`` kernel instances; every instance keeps the latest state of up to
    ``instance_cache`` tasks (LRU), so a sub-task whose task last ran on the same instance and
    is still cached there needs no state transfer; otherwise shipping the state costs
    ``state_transfer_us`` of instance time, plus ``host_refetch_us`` when the state was
    spilled to host memory. Backup buffers: ``per_thread`` task states per thread and
    ``spare`` shared ones.
    """

    instances: int = 4
    instance_cache: int = 1
    state_transfer_us: int = 0
    per_thread: int = 2
    spare: int = 8
    host_refetch_us: int = 0


@dataclass(frozen=True)
class ThreadGroup:
    """``count`` identical threads. Each has a number of tasks drawn from ``tasks`` (inclusive
    ``[min, max]``), each task a number of sub-tasks from ``subtasks``, each sub-task a
    duration from ``duration_us``. The thread's tasks are dealt round-robin over ``streams``
    lanes (tasks open at the same time, their sub-tasks interleaved in the thread); a lane's
    sub-tasks arrive every ``interval_us`` from a start drawn from ``start_us`` (interval 0:
    all present at the start, as in offline transcoding)."""

    count: int = 1
    tasks: tuple[int, int] = (1, 1)
    subtasks: tuple[int, int] = (4, 4)
    duration_us: tuple[int, int] = (1000, 1000)
    start_us: tuple[int, int] = (0, 0)
    interval_us: int = 0
    streams: int = 1
    priority: int = 0


@dataclass(frozen=True)
class Scenario:
    """One scenario file: the system, the seed dispatcher's knobs (``batch`` threads per batch,
    the table ``orders`` to run) and the workload's thread groups."""

    name: str
    description: str = ""
    system: SystemParams = SystemParams()
    batch: int = 8
    orders: tuple[str, ...] = ORDERS
    groups: tuple[ThreadGroup, ...] = (ThreadGroup(),)


def load_scenario(path) -> Scenario:
    """Read a scenario TOML file; a :class:`~model.config.ConfigError` names file and field.

    Layout (every key optional except ``[[threads]]``, defaults as in the dataclasses)::

        description = "..."
        [system]   instances, instance_cache, state_transfer_us
        [buffers]  per_thread, spare, host_refetch_us
        [dispatch] batch, order = "arrival" | "priority" | "both"
        [[threads]] count, tasks, subtasks, duration_us, start_us, interval_us, streams,
                    priority
    """
    path = Path(path)
    root = Fields(load_toml(path), source=path)
    description = root.str("description", "")
    system = root.table("system", {})
    buffers = root.table("buffers", {})
    params = SystemParams(
        instances=system.int("instances", 4, minimum=1),
        instance_cache=system.int("instance_cache", 1, minimum=0),
        state_transfer_us=system.int("state_transfer_us", 0, minimum=0),
        per_thread=buffers.int("per_thread", 2, minimum=0),
        spare=buffers.int("spare", 8, minimum=0),
        host_refetch_us=buffers.int("host_refetch_us", 0, minimum=0),
    )
    system.done()
    buffers.done()
    dispatch = root.table("dispatch", {})
    batch = dispatch.int("batch", 2 * params.instances, minimum=1)
    order = dispatch.str("order", "both", choices=(*ORDERS, "both"))
    dispatch.done()
    groups = []
    for table in root.tables("threads"):
        groups.append(ThreadGroup(
            count=table.int("count", 1, minimum=1),
            tasks=table.int_range("tasks", (1, 1), minimum=1),
            subtasks=table.int_range("subtasks", (4, 4), minimum=1),
            duration_us=table.int_range("duration_us", (1000, 1000), minimum=1),
            start_us=table.int_range("start_us", (0, 0), minimum=0),
            interval_us=table.int("interval_us", 0, minimum=0),
            streams=table.int("streams", 1, minimum=1),
            priority=table.int("priority", 0, minimum=0, maximum=15),
        ))
        table.done()
    if not groups:
        raise root.error("threads", "must list at least one thread group")
    root.done()
    return Scenario(name=path.stem, description=description, system=params, batch=batch,
                    orders=ORDERS if order == "both" else (order,), groups=tuple(groups))


def generate_workload(scenario: Scenario, rng: random.Random, *, scale: float = 1.0) -> Workload:
    """Draw the scenario's workload with ``rng`` (threads numbered group by group, in file
    order). ``scale`` multiplies each thread's task count (at least one task), for
    ``--quick``."""
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


# -- policies -------------------------------------------------------------------------------------


class Policy:
    """A dispatcher. The engine calls :meth:`on_ready` once per sub-task, when the sub-task is
    its thread's head, has arrived and its thread has nothing outstanding; then, for every idle
    instance in id order, :meth:`pick`, which returns the thread whose head the instance runs
    next (or ``None``). A policy calls ``self.take(thread, now)`` when a sub-task enters its
    dispatch queue (the moment the seed's completion rule looks at)."""

    name = "policy"

    def bind(self, instances: int, take, head) -> None:
        """Attach to an engine: ``take(thread, now)`` and ``head(thread) -> SubTask``."""
        self.instances = instances
        self.take = take
        self.head = head

    def on_ready(self, thread: int, now: int) -> None:
        raise NotImplementedError

    def prepare(self, now: int) -> None:
        """Called once per event time before the instances pick (nothing by default)."""

    def pick(self, instance: int, now: int) -> int | None:
        raise NotImplementedError


class WorkQueue(Policy):
    """Baseline: one shared queue of ready sub-tasks, first ready first served."""

    name = "work-queue"

    def bind(self, instances, take, head):
        super().bind(instances, take, head)
        self.queue: deque[int] = deque()

    def on_ready(self, thread, now):
        self.take(thread, now)
        self.queue.append(thread)

    def pick(self, instance, now):
        return self.queue.popleft() if self.queue else None


class StaticBinding(Policy):
    """Baseline (the seed's prior art): thread ``t`` is bound round-robin to instance
    ``t mod I``; each instance serves its own threads' ready sub-tasks, first ready first."""

    name = "static-rr"

    def bind(self, instances, take, head):
        super().bind(instances, take, head)
        self.queues: list[deque[int]] = [deque() for _ in range(instances)]

    def on_ready(self, thread, now):
        self.take(thread, now)
        self.queues[thread % self.instances].append(thread)

    def pick(self, instance, now):
        queue = self.queues[instance]
        return queue.popleft() if queue else None


class SeedBatchDispatch(Policy):
    """The seed's dispatcher: batches of ``batch`` threads from a thread order table, one
    sub-task each, refilled into the shared FIFO only when it is empty.

    ``order`` is ``"arrival"`` (by the arrival time of the thread's first waiting sub-task) or
    ``"priority"`` (by that sub-task's priority, 0 first; ties by arrival). Ties end with the
    thread id. Within a batch the sub-tasks enter the FIFO by arrival time (then thread id).
    """

    def __init__(self, order: str = "arrival", batch: int = 8):
        if order not in ORDERS:
            raise ValueError(f"Order must be one of {', '.join(ORDERS)}, not {order!r}")
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ValueError(f"Batch must be a positive integer, not {batch!r}")
        self.order = order
        self.batch = batch
        self.name = f"seed003-{order}"

    def bind(self, instances, take, head):
        super().bind(instances, take, head)
        self.waiting: set[int] = set()        # threads with a head ready, not yet in the FIFO
        self.table: deque[int] = deque()      # the current round's threads not yet drawn
        self.fifo: deque[int] = deque()
        self.batches = 0
        self.rounds = 0

    def _key(self, thread):
        head = self.head(thread)
        if self.order == "priority":
            return head.priority, head.arrival, thread
        return head.arrival, thread

    def on_ready(self, thread, now):
        self.waiting.add(thread)

    def refill(self, now) -> None:
        """Move the next batch into the FIFO if it is empty (a new round when the table is
        used up)."""
        if self.fifo:
            return
        if not self.table:
            if not self.waiting:
                return
            self.table = deque(sorted(self.waiting, key=self._key))
            self.rounds += 1
        chosen = [self.table.popleft() for _ in range(min(self.batch, len(self.table)))]
        chosen.sort(key=lambda thread: (self.head(thread).arrival, thread))
        for thread in chosen:
            self.waiting.discard(thread)
            self.take(thread, now)
            self.fifo.append(thread)
        self.batches += 1

    def prepare(self, now):
        self.refill(now)

    def pick(self, instance, now):
        if not self.fifo:
            return None
        thread = self.fifo.popleft()
        self.refill(now)
        return thread


def make_policies(scenario: Scenario) -> list[Policy]:
    """Fresh policies for one run each: the seed's (one per order) and the two baselines."""
    return [*(SeedBatchDispatch(order, scenario.batch) for order in scenario.orders),
            StaticBinding(), WorkQueue()]


# -- invariants -----------------------------------------------------------------------------------


class InvariantChecker:
    """Watches a run and raises :class:`InvariantError` at the first broken invariant.

    The engine reports every start, finish, take and task completion; :meth:`final` checks
    at the end that every sub-task ran exactly once.
    """

    def __init__(self, workload: Workload, system: SystemParams):
        self.system = system
        self.next_index: dict[int, int] = {}   # task -> index of the sub-task allowed next
        self.running_task: set[int] = set()
        self.instance_busy: dict[int, int] = {}
        self.started: set[int] = set()
        self.finished: set[int] = set()
        self.sizes: dict[int, int] = {}
        for sub in workload.subtasks:
            self.next_index.setdefault(sub.task, 0)
            self.sizes[sub.task] = self.sizes.get(sub.task, 0) + 1
        # The seed's rule presumes a thread's tasks are contiguous in its queue; with
        # interleaved streams a new task may start while another is open.
        self.contiguous = [len({sub.task for sub in thread})
                           == sum(a.task != b.task for a, b in pairwise(thread)) + 1
                           for thread in workload.threads]

    def on_start(self, sub: SubTask, instance: int, now: int) -> None:
        if sub.uid in self.started:
            raise InvariantError(f"t={now}: sub-task {sub.uid} (task {sub.task} part "
                                 f"{sub.index}) started twice")
        if sub.task in self.running_task:
            raise InvariantError(f"t={now}: task {sub.task} part {sub.index} started while "
                                 f"another part of the task is running")
        if self.next_index[sub.task] != sub.index:
            raise InvariantError(f"t={now}: task {sub.task} part {sub.index} started out of "
                                 f"order (part {self.next_index[sub.task]} is next)")
        if instance in self.instance_busy:
            raise InvariantError(f"t={now}: instance {instance} started sub-task {sub.uid} "
                                 f"while running {self.instance_busy[instance]}")
        self.started.add(sub.uid)
        self.running_task.add(sub.task)
        self.instance_busy[instance] = sub.uid

    def on_finish(self, sub: SubTask, instance: int, now: int) -> None:
        if self.instance_busy.get(instance) != sub.uid or sub.uid in self.finished:
            raise InvariantError(f"t={now}: sub-task {sub.uid} finished on instance "
                                 f"{instance} without running there")
        del self.instance_busy[instance]
        self.running_task.discard(sub.task)
        self.finished.add(sub.uid)
        self.next_index[sub.task] = sub.index + 1

    def on_complete(self, task: int, now: int) -> None:
        if self.next_index[task] != self.sizes[task] or task in self.running_task:
            raise InvariantError(f"t={now}: task {task} declared complete after "
                                 f"{self.next_index[task]} of {self.sizes[task]} sub-tasks")

    def on_take(self, previous: SubTask | None, sub: SubTask, now: int) -> None:
        """The seed's rule, in a thread whose tasks are contiguous: when the thread's next
        sub-task starts a new task, the thread's previous sub-task must have been its task's
        final one, and must have finished."""
        if (previous is None or sub.index != 0 or previous.task == sub.task
                or not self.contiguous[sub.thread]):
            return
        if not previous.last or previous.uid not in self.finished:
            raise InvariantError(f"t={now}: thread {sub.thread} moved on to task {sub.task} "
                                 f"before task {previous.task} finished")

    def on_buffers(self, thread_used: int, spare_used: int, now: int) -> None:
        if thread_used > self.system.per_thread or spare_used > self.system.spare:
            raise InvariantError(f"t={now}: backup buffer over capacity (thread area "
                                 f"{thread_used}/{self.system.per_thread}, spare "
                                 f"{spare_used}/{self.system.spare})")

    def final(self, workload: Workload) -> None:
        for sub in workload.subtasks:
            if sub.uid not in self.finished:
                raise InvariantError(f"sub-task {sub.uid} (task {sub.task} part {sub.index}) "
                                     f"never ran")


# -- the engine -----------------------------------------------------------------------------------

_FINISH, _WAKE = 0, 1


@dataclass
class _ThreadState:
    subtasks: tuple[SubTask, ...]
    next: int = 0                 # position of the head sub-task
    outstanding: bool = False     # head handed to the dispatcher and not finished yet
    ready_at: int = 0
    taken_at: int = 0
    used: int = 0                 # task states in the thread's own buffer area
    finished_unread: list[int] = field(default_factory=list)
    done_at: int | None = None


@dataclass
class RunResult:
    """What one policy did on one workload (times in µs)."""

    policy: str
    instances: int
    makespan: int
    busy: list[int]
    compute: list[int]
    thread_done: list[int]
    thread_priority: list[int]
    task_latency: list[int]
    result_delay: list[int]
    fifo_wait: list[int]
    ready_wait: list[int]
    subtasks_run: int
    spills_spare: int
    spills_host: int
    refetches: int
    peak_spare: int
    transfers: int
    transfer_time: int
    unfinished: int
    rounds: int = 0
    batches: int = 0

    def metrics(self) -> dict:
        """JSON-ready metrics: utilisation (busy time, state transfers included, over
        ``instances x makespan``), useful utilisation (sub-task durations only), throughput,
        balance (Jain's index of the per-instance busy time) and the summaries."""
        span = self.instances * self.makespan
        by_priority: dict[int, list[int]] = {}
        for done, priority in zip(self.thread_done, self.thread_priority, strict=True):
            by_priority.setdefault(priority, []).append(done)
        return {
            "policy": self.policy,
            "utilisation": sum(self.busy) / span if span else 0.0,
            "useful_utilisation": sum(self.compute) / span if span else 0.0,
            "instance_utilisation": [busy / self.makespan if self.makespan else 0.0
                                     for busy in self.busy],
            "balance": jain_index(self.busy),
            "makespan_us": self.makespan,
            "subtasks_per_second": (self.subtasks_run * 1e6 / self.makespan
                                    if self.makespan else 0.0),
            "subtasks_run": self.subtasks_run,
            "unfinished": self.unfinished,
            "thread_completion_us": summary(self.thread_done),
            "thread_completion_by_priority_us": {str(priority): summary(values) for
                                                 priority, values in sorted(by_priority.items())},
            "task_latency_us": summary(self.task_latency),
            "result_delay_us": summary(self.result_delay),
            "fifo_wait_us": summary(self.fifo_wait),
            "ready_wait_us": summary(self.ready_wait),
            "spills_spare": self.spills_spare,
            "spills_host": self.spills_host,
            "host_refetches": self.refetches,
            "peak_spare": self.peak_spare,
            "state_transfers": self.transfers,
            "state_transfer_us": self.transfer_time,
            "rounds": self.rounds,
            "batches": self.batches,
        }


class _Engine:
    def __init__(self, workload, system, policy, debug, max_time_us):
        self.workload = workload
        self.system = system
        self.policy = policy
        self.max_time = max_time_us
        self.checker = InvariantChecker(workload, system) if debug else None
        self.threads = [_ThreadState(subtasks) for subtasks in workload.threads]
        self.events: list[tuple[int, int, int, int]] = []
        self.sequence = 0
        count = system.instances
        self.running: list[SubTask | None] = [None] * count
        self.run_started = [0] * count
        self.busy = [0] * count
        self.compute = [0] * count
        self.cache: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(count)]
        self.last_instance: dict[int, int] = {}
        self.location: dict[int, str] = {}     # task -> "thread" | "spare" | "host"
        self.first_arrival: dict[int, int] = {}
        self.last_finish: dict[int, int] = {}
        self.spare_used = 0
        self.stats = dict(spills_spare=0, spills_host=0, refetches=0, peak_spare=0,
                          transfers=0, transfer_time=0)
        self.task_latency: list[int] = []
        self.result_delay: list[int] = []
        self.fifo_wait: list[int] = []
        self.ready_wait: list[int] = []
        self.previous: list[SubTask | None] = [None] * len(self.threads)
        self.finished_count = 0
        self.now = 0
        policy.bind(count, self.take, self.head)

    def head(self, thread: int) -> SubTask:
        state = self.threads[thread]
        return state.subtasks[state.next]

    def push(self, time, kind, payload):
        heapq.heappush(self.events, (time, kind, self.sequence, payload))
        self.sequence += 1

    def run(self) -> None:
        for thread, state in enumerate(self.threads):
            if state.subtasks:
                self.push(state.subtasks[0].arrival, _WAKE, thread)
            else:
                state.done_at = 0
        while self.events:
            now = self.events[0][0]
            if self.max_time is not None and now > self.max_time:
                break
            self.now = now
            ready: list[int] = []
            while self.events and self.events[0][0] == now:
                _, kind, _, payload = heapq.heappop(self.events)
                if kind == _FINISH:
                    self.finish(payload, now, ready)
                else:
                    self.wake(payload, now, ready)
            ready.sort(key=lambda thread: (self.head(thread).arrival, thread))
            for thread in ready:
                self.policy.on_ready(thread, now)
            self.policy.prepare(now)
            for instance in range(self.system.instances):
                if self.running[instance] is None:
                    thread = self.policy.pick(instance, now)
                    if thread is not None:
                        self.start(thread, instance, now)

    def wake(self, thread, now, ready):
        state = self.threads[thread]
        if state.outstanding or state.next >= len(state.subtasks):
            return
        if state.subtasks[state.next].arrival > now:
            return
        state.outstanding = True
        state.ready_at = now
        ready.append(thread)

    def take(self, thread, now):
        """A thread's head enters the dispatcher's queue: the seed's completion rule reads
        every finished task of the thread other than the head's own."""
        state = self.threads[thread]
        sub = state.subtasks[state.next]
        state.taken_at = now
        if self.checker:
            self.checker.on_take(self.previous[thread], sub, now)
        for task in [task for task in state.finished_unread if task != sub.task]:
            state.finished_unread.remove(task)
            self.complete(state, task, now)

    def complete(self, state, task, now):
        if self.checker:
            self.checker.on_complete(task, now)
        where = self.location.pop(task)
        if where == "thread":
            state.used -= 1
        elif where == "spare":
            self.spare_used -= 1
        self.task_latency.append(now - self.first_arrival[task])
        self.result_delay.append(now - self.last_finish[task])
        for cache in self.cache:
            cache.pop(task, None)

    def start(self, thread, instance, now):
        state = self.threads[thread]
        sub = state.subtasks[state.next]
        if self.checker:
            self.checker.on_start(sub, instance, now)
        transfer = 0
        if sub.index > 0:
            cached = self.last_instance.get(sub.task) == instance and sub.task in \
                self.cache[instance]
            if not cached:
                transfer = self.system.state_transfer_us
                self.stats["transfers"] += 1
                if self.location.get(sub.task) == "host":
                    transfer += self.system.host_refetch_us
                    self.stats["refetches"] += 1
                self.stats["transfer_time"] += transfer
        self.first_arrival.setdefault(sub.task, sub.arrival)
        self.fifo_wait.append(now - state.taken_at)
        self.ready_wait.append(now - state.ready_at)
        self.running[instance] = sub
        self.busy[instance] += sub.duration + transfer
        self.compute[instance] += sub.duration
        self.push(now + sub.duration + transfer, _FINISH, instance)

    def finish(self, instance, now, ready):
        sub = self.running[instance]
        self.running[instance] = None
        if self.checker:
            self.checker.on_finish(sub, instance, now)
        self.finished_count += 1
        state = self.threads[sub.thread]
        state.next += 1
        state.outstanding = False
        self.previous[sub.thread] = sub
        if sub.index == 0:
            self.store(state, sub.task, now)
        if self.system.instance_cache:
            cache = self.cache[instance]
            cache[sub.task] = None
            cache.move_to_end(sub.task)
            while len(cache) > self.system.instance_cache:
                cache.popitem(last=False)
        self.last_instance[sub.task] = instance
        self.last_finish[sub.task] = now
        if sub.last:
            state.finished_unread.append(sub.task)
        if state.next == len(state.subtasks):
            # End of stream: nothing will follow, so the thread reads its results now.
            for task in state.finished_unread:
                self.complete(state, task, now)
            state.finished_unread.clear()
            state.done_at = now
        elif state.subtasks[state.next].arrival <= now:
            self.wake(sub.thread, now, ready)
        else:
            self.push(state.subtasks[state.next].arrival, _WAKE, sub.thread)

    def store(self, state, task, now):
        """A task's first result: the thread's area, else the spare buffer, else host
        memory. The place is kept for the task's life (no migration when space frees up)."""
        if state.used < self.system.per_thread:
            state.used += 1
            self.location[task] = "thread"
        elif self.spare_used < self.system.spare:
            self.spare_used += 1
            self.location[task] = "spare"
            self.stats["spills_spare"] += 1
            self.stats["peak_spare"] = max(self.stats["peak_spare"], self.spare_used)
        else:
            self.location[task] = "host"
            self.stats["spills_host"] += 1
        if self.checker:
            self.checker.on_buffers(state.used, self.spare_used, now)

    def result(self) -> RunResult:
        total = len(self.workload.subtasks)
        unfinished = total - self.finished_count
        in_flight = any(sub is not None for sub in self.running)
        if unfinished and not in_flight and not self.events and self.checker:
            raise InvariantError(f"{self.policy.name}: {unfinished} sub-tasks stranded with "
                                 f"no event left (a dispatcher deadlock)")
        if self.checker and not unfinished:
            self.checker.final(self.workload)
        ends = [state.done_at for state in self.threads if state.done_at is not None]
        makespan = max(ends, default=0) if not unfinished else self.now
        return RunResult(
            policy=self.policy.name, instances=self.system.instances, makespan=makespan,
            busy=self.busy, compute=self.compute,
            thread_done=[state.done_at if state.done_at is not None else self.now
                         for state in self.threads],
            thread_priority=[state.subtasks[0].priority if state.subtasks else 0
                             for state in self.threads],
            task_latency=self.task_latency, result_delay=self.result_delay,
            fifo_wait=self.fifo_wait, ready_wait=self.ready_wait,
            subtasks_run=self.finished_count, unfinished=unfinished,
            rounds=getattr(self.policy, "rounds", 0), batches=getattr(self.policy, "batches", 0),
            **self.stats)


def simulate(workload: Workload, system: SystemParams, policy: Policy, *, debug: bool = True,
             max_time_us: int | None = None) -> RunResult:
    """Run ``policy`` (a fresh instance) on ``workload`` until every sub-task has finished,
    or until ``max_time_us`` (then ``unfinished`` counts what was left). With ``debug`` the
    :class:`InvariantChecker` watches the run and a run that strands sub-tasks raises."""
    engine = _Engine(workload, system, policy, debug, max_time_us)
    engine.run()
    return engine.result()


# -- command line ---------------------------------------------------------------------------------


def add_arguments(parser) -> None:
    """``--no-checks``: run without the invariant checker (it is on by default)."""
    parser.add_argument("--no-checks", action="store_true",
                        help="skip the invariant checks (faster; they are on by default)")


_HEADERS = ("policy", "util %", "useful %", "makespan ms", "sub-tasks/s", "thread done p50 ms",
            "p99 ms", "top prio p50 ms", "FIFO wait p50 µs", "ready wait p50 µs", "p99 µs",
            "spills spare/host")


def _row(metrics: dict) -> list:
    thread_done = metrics["thread_completion_us"]
    # Priorities are sorted, so the first is the highest (0 is the highest).
    top = next(iter(metrics["thread_completion_by_priority_us"].values()))
    return [metrics["policy"], 100 * metrics["utilisation"],
            100 * metrics["useful_utilisation"], metrics["makespan_us"] / 1000,
            metrics["subtasks_per_second"], thread_done["p50"] / 1000, thread_done["p99"] / 1000,
            top["p50"] / 1000, metrics["fifo_wait_us"]["p50"], metrics["ready_wait_us"]["p50"],
            metrics["ready_wait_us"]["p99"],
            f"{metrics['spills_spare']}/{metrics['spills_host']}"]


def _gains(policies: dict) -> dict:
    """Utilisation of each seed variant over static binding, in percentage points and %."""
    static = policies["static-rr"]["utilisation"]
    gains = {}
    for name, metrics in policies.items():
        if name.startswith("seed003"):
            util = metrics["utilisation"]
            gains[name] = {"points": 100 * (util - static),
                           "relative_percent": 100 * (util / static - 1) if static else 0.0}
    return gains


def _plot(scenario: Scenario, results: dict, path: Path) -> None:
    from model.report import figure, save_figure

    fig, (bars, curves) = figure(1, 2, figsize=(11, 4))
    names = list(results)
    width = 0.8 / len(names)
    for number, name in enumerate(names):
        values = results[name]["instance_utilisation"]
        bars.bar([instance + number * width for instance in range(len(values))],
                 [100 * value for value in values], width, label=name)
        done = sorted(results[name]["_thread_done"])
        curves.step([value / 1000 for value in done],
                    [(index + 1) / len(done) for index in range(len(done))],
                    where="post", label=name)
    instances = len(results[names[0]]["instance_utilisation"])
    bars.set_xticks([instance + 0.4 - width / 2 for instance in range(instances)],
                    [str(instance) for instance in range(instances)])
    bars.set_xlabel("instance")
    bars.set_ylabel("busy %")
    bars.set_title(f"{scenario.name}: instance utilisation")
    bars.set_ylim(0, 125)   # room for the legend above the bars
    bars.legend(fontsize=7, loc="upper center", ncol=2)
    curves.set_xlabel("thread completion time (ms)")
    curves.set_ylabel("fraction of threads done")
    curves.set_title("per-thread completion")
    curves.legend(fontsize=7)
    save_figure(fig, path)


def run(args) -> int:
    """``gpusched hostsched``: every scenario with every policy; a table and a plot each, and
    JSON of every metric when ``--json`` is given."""
    from model.report import print_table, progress, write_json

    scenarios = [load_scenario(path) for path in args.config]
    if not scenarios:
        raise ConfigError("no scenario files given and none in configs/hostsched/")
    scale = QUICK_SCALE if args.quick else 1.0
    workloads = [generate_workload(scenario, random.Random(args.seed), scale=scale)
                 for scenario in scenarios]
    jobs = [(index, policy) for index, scenario in enumerate(scenarios)
            for policy in make_policies(scenario)]
    results: list[dict] = [{} for _ in scenarios]
    for index, policy in progress(jobs, "hostsched", quiet=args.quiet):
        outcome = simulate(workloads[index], scenarios[index].system, policy,
                           debug=not getattr(args, "no_checks", False))
        metrics = outcome.metrics()
        metrics["_thread_done"] = outcome.thread_done
        results[index][policy.name] = metrics
    report = {"time_unit": "us", "seed": args.seed, "quick": bool(args.quick), "scenarios": {}}
    for scenario, workload, policies in zip(scenarios, workloads, results, strict=True):
        gains = _gains(policies)
        caption = "; ".join(f"{name} vs static-rr: {gain['points']:+.1f} points "
                            f"({gain['relative_percent']:+.1f} %) utilisation"
                            for name, gain in gains.items())
        title = (f"hostsched {scenario.name}: {len(workload.threads)} threads, "
                 f"{workload.task_count} tasks, {len(workload.subtasks)} sub-tasks, "
                 f"{scenario.system.instances} instances, batch {scenario.batch}")
        print_table(title, _HEADERS, [_row(metrics) for metrics in policies.values()],
                    caption=caption)
        _plot(scenario, policies, Path(args.plots) / f"hostsched_{scenario.name}.png")
        for metrics in policies.values():
            del metrics["_thread_done"]
        report["scenarios"][scenario.name] = {
            "description": scenario.description, "threads": len(workload.threads),
            "tasks": workload.task_count, "subtasks": len(workload.subtasks),
            "instances": scenario.system.instances, "batch": scenario.batch,
            "utilisation_gain_over_static": gains, "policies": policies}
    if args.json is not None:
        write_json(args.json, report)
    return 0
