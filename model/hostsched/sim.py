"""The discrete-event engine (integer µs) and the invariant checker that watches it.

The engine runs the instances asynchronously (an idle instance pulls at the moment it becomes
idle, seed step 2), keeps the backup buffers, the spare buffer and the instances' state caches
(step 3: state transfers, spare and host spills, host refetches) and applies the seed's
completion rule (step 4) when a sub-task is taken from its thread.
"""

import heapq
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import pairwise

from model.checks import InvariantError
from model.config import check_hooks, check_int
from model.hostsched.config import SystemParams
from model.hostsched.policies import Policy
from model.hostsched.workload import SubTask, Workload
from model.stats import jain_index, summary

__all__ = ["InvariantChecker", "InvariantError", "RunResult", "simulate"]


# -- invariants -----------------------------------------------------------------------------------


class InvariantChecker:
    """Watches a run and raises :class:`InvariantError` at the first broken invariant.

    The engine reports every start, finish, take and task completion; :meth:`final` checks
    at the end that every sub-task ran exactly once.
    """

    def __init__(self, workload: Workload, system: SystemParams):
        if not isinstance(workload, Workload):
            raise TypeError(f"workload must be a Workload, not {workload!r}")
        if not isinstance(system, SystemParams):
            raise TypeError(f"system must be a SystemParams, not {system!r}")
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

_FINISH, _WAKE, _TIMER = 0, 1, 2


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
    short_batches: int = 0
    pack_time: int = 0
    batch_dma_time: int = 0
    link_time: int = 0

    def metrics(self) -> dict:
        """JSON-ready metrics: utilisation (busy time over ``instances x makespan``) split into
        useful (sub-task durations) and transfer (instance time spent waiting for its data),
        throughput, balance (Jain's index of the per-instance busy time), the summaries, and
        what the host link carried (the seed's packing and batch DMAs, every DMA's time)."""
        span = self.instances * self.makespan
        by_priority: dict[int, list[int]] = {}
        for done, priority in zip(self.thread_done, self.thread_priority, strict=True):
            by_priority.setdefault(priority, []).append(done)
        return {
            "policy": self.policy,
            "utilisation": sum(self.busy) / span if span else 0.0,
            "useful_utilisation": sum(self.compute) / span if span else 0.0,
            "transfer_utilisation": ((sum(self.busy) - sum(self.compute)) / span
                                     if span else 0.0),
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
            "short_batches": self.short_batches,
            "host_pack_us": self.pack_time,
            "batch_dma_us": self.batch_dma_time,
            "link_busy_us": self.link_time,
        }


class _Engine:
    def __init__(self, workload, system, policy, debug, max_time_us, pack_gb_s=0.0,
                 events=None, refill_us=0):
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
                          transfers=0, transfer_time=0, pack_time=0, batch_dma_time=0,
                          link_time=0)
        self.task_latency: list[int] = []
        self.result_delay: list[int] = []
        self.fifo_wait: list[int] = []
        self.ready_wait: list[int] = []
        self.previous: list[SubTask | None] = [None] * len(self.threads)
        self.finished_count = 0
        self.now = 0
        self.events_log = events
        self.timers: set[int] = set()
        self.batched = bool(getattr(policy, "batched", False))
        self.ship_always = self.batched and getattr(policy, "ship_state", "") == "always"
        self.pack_gb_s = pack_gb_s
        self.refill_us = refill_us
        policy.bind(count, self.take, self.head)
        if self.batched:
            policy.attach_costs(self.batch_cost)

    def batch_cost(self, threads: list[int]) -> int:
        """The seed's refill of ``threads``' head sub-tasks: the host's fixed ``refill_us``,
        then it packs their inputs (and, shipping states always, their states) at
        ``pack_gb_s``, then one DMA carries it all: microseconds until the batch is on the
        device."""
        system = self.system
        data = 0
        fixed = 0
        for thread in threads:
            sub = self.head(thread)
            data += system.input_bytes
            if self.ship_always and sub.index > 0:
                data += system.state_bytes
                self.stats["transfers"] += 1
                if system.state_transfer_us is not None:
                    fixed += system.state_transfer_us
                if self.location.get(sub.task) == "host":
                    fixed += system.host_refetch_us
                    self.stats["refetches"] += 1
        pack = self.refill_us + (math.ceil(data / (self.pack_gb_s * 1e3))
                                 if self.pack_gb_s and data else 0)
        link_bytes = data if system.state_transfer_us is None else \
            len(threads) * system.input_bytes
        dma = (system.dma_setup_us + math.ceil(link_bytes / (system.link_gb_s * 1e3))
               if data or fixed else 0) + fixed
        self.stats["pack_time"] += pack
        self.stats["batch_dma_time"] += dma
        self.stats["link_time"] += dma
        self.log(self.now, "batch", None, detail=f"threads {threads}: pack {pack} us, "
                                                 f"DMA {dma} us of {data} bytes")
        return pack + dma

    def log(self, now: int, event: str, sub: SubTask | None, instance: int = -1,
            detail: str = "") -> None:
        if self.events_log is not None:
            self.events_log.append((now, event, -1 if sub is None else sub.thread,
                                    -1 if sub is None else sub.task,
                                    -1 if sub is None else sub.index, instance, detail))

    def head(self, thread: int) -> SubTask:
        state = self.threads[thread]
        return state.subtasks[state.next]

    def push(self, time, kind, payload):
        heapq.heappush(self.events, (time, kind, self.sequence, payload))
        self.sequence += 1

    def run(self, progress=None) -> None:
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
            if progress is not None:
                progress(now)
            ready: list[int] = []
            while self.events and self.events[0][0] == now:
                _, kind, _, payload = heapq.heappop(self.events)
                if kind == _FINISH:
                    self.finish(payload, now, ready)
                elif kind == _WAKE:
                    self.wake(payload, now, ready)
                else:
                    self.timers.discard(now)        # a batch has landed: instances pull
            ready.sort(key=lambda thread: (self.head(thread).arrival, thread))
            for thread in ready:
                self.policy.on_ready(thread, now)
            self.policy.prepare(now)
            for instance in range(self.system.instances):
                if self.running[instance] is None:
                    thread = self.policy.pick(instance, now)
                    if thread is not None:
                        self.start(thread, instance, now)
            wake = self.policy.wake_at() if self.batched else None
            if wake is not None and wake > now and wake not in self.timers:
                self.timers.add(wake)
                self.push(wake, _TIMER, -1)

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
        self.log(now, "take", sub)
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
        if self.events_log is not None:
            self.events_log.append((now, "result", state.subtasks[0].thread, task, -1, -1,
                                    f"read from {where}"))
        for cache in self.cache:
            cache.pop(task, None)

    def start(self, thread, instance, now):
        state = self.threads[thread]
        sub = state.subtasks[state.next]
        if self.checker:
            self.checker.on_start(sub, instance, now)
        # What the instance waits for before it can run the sub-task: a baseline's sub-task
        # brings its input in a DMA of its own; a state the instance does not hold comes with
        # it (or, for the seed shipping states only on a miss, in a DMA of its own); what the
        # seed's batch carried is on the device already.
        system = self.system
        moved, refetch = 0, 0
        if not self.batched and system.input_bytes:
            moved += system.input_move_us
        if sub.index > 0 and not self.ship_always:
            cached = self.last_instance.get(sub.task) == instance and sub.task in \
                self.cache[instance]
            if not cached:
                moved += system.state_move_us
                self.stats["transfers"] += 1
                if self.location.get(sub.task) == "host":
                    refetch = system.host_refetch_us
                    self.stats["refetches"] += 1
        transfer = (system.dma_setup_us + moved if moved else 0) + refetch
        self.stats["transfer_time"] += transfer
        self.stats["link_time"] += transfer - refetch
        self.log(now, "start", sub, instance, f"transfer {transfer} us" if transfer else "")
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
        self.log(now, "finish", sub, instance)
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
            self.log(now, "spill", None, detail=f"task {task} to the spare buffer")
            self.stats["spills_spare"] += 1
            self.stats["peak_spare"] = max(self.stats["peak_spare"], self.spare_used)
        else:
            self.location[task] = "host"
            self.log(now, "spill", None, detail=f"task {task} to host memory")
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
            short_batches=getattr(self.policy, "short_batches", 0),
            **self.stats)


def simulate(workload: Workload, system: SystemParams, policy: Policy, *, debug: bool = True,
             max_time_us: int | None = None, pack_gb_s: float = 0.0, refill_us: int = 0,
             events: list | None = None, progress=None) -> RunResult:
    """Run ``policy`` (a fresh instance) on ``workload`` until every sub-task has finished,
    or until ``max_time_us`` (then ``unfinished`` counts what was left). With ``debug`` the
    :class:`InvariantChecker` watches the run and a run that strands sub-tasks raises.
    ``pack_gb_s`` is the host's packing bandwidth for the seed's batches (0: nothing is
    copied, as with a scatter-gather DMA) and ``refill_us`` its fixed cost per batch (both
    from the scenario's ``[dispatch]``). ``events``, when given, receives every event as
    ``(time_us, event, thread, task, part, instance, detail)``: take (a sub-task enters the
    dispatcher's queue), batch (the seed's refill and its cost), start, finish, spill,
    result (a task's result read); -1 where a field does not apply. ``progress``, when given,
    is called with the simulated time (us) at every event."""
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload, not {workload!r}")
    if not isinstance(system, SystemParams):
        raise TypeError(f"system must be a SystemParams, not {system!r}")
    if isinstance(policy, type) or not all(callable(getattr(policy, method, None))
                                           for method in ("bind", "on_ready", "pick", "prepare")):
        raise TypeError(f"policy must be a Policy (one of make_policies(scenario), or an "
                        f"object with its bind, on_ready, prepare and pick), not {policy!r}")
    if max_time_us is not None:
        check_int("", "max_time_us", max_time_us, 1)
    if (not isinstance(pack_gb_s, int | float) or isinstance(pack_gb_s, bool)
            or not 0 <= pack_gb_s < math.inf):
        raise ValueError(f"pack_gb_s must be a number >= 0, not {pack_gb_s!r}")
    if not isinstance(refill_us, int) or isinstance(refill_us, bool) or refill_us < 0:
        raise ValueError(f"refill_us must be an integer >= 0, not {refill_us!r}")
    check_hooks(events, progress)
    engine = _Engine(workload, system, policy, debug, max_time_us, pack_gb_s, events,
                     refill_us)
    engine.run(progress)
    return engine.result()
