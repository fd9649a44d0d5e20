"""The dispatchers: the seed's batch dispatcher (steps 1 and 2: the thread order table, its
rounds, the batch refill of the shared FIFO -- packed by the host and sent in one DMA -- and
the pull of its head) and the two baselines."""

import random
import warnings
from collections import deque
from collections.abc import Callable, Sequence

from model.config import check_int, check_sequence
from model.hostsched.config import ORDERS, SHIP_STATE, Scenario

__all__ = ["Policy", "SeedBatchDispatch", "StaticBinding", "WorkQueue", "binding_for",
           "make_policies"]


class Policy:
    """A dispatcher. The engine calls :meth:`on_ready` once per sub-task, when the sub-task is
    its thread's head, has arrived and its thread has nothing outstanding; then, for every idle
    instance in id order, :meth:`pick`, which returns the thread whose head the instance runs
    next (or ``None``). A policy calls ``self.take(thread, now)`` when a sub-task enters its
    dispatch queue (the moment the seed's completion rule looks at)."""

    name = "policy"
    #: Whether the policy sends sub-tasks to the device in batches it packs itself (the
    #: engine then charges no per-sub-task input DMA to the instance).
    batched = False

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
    """Baseline (the seed's prior art): every thread bound to one instance; each instance
    serves its own threads' ready sub-tasks, first ready first.

    ``binding[t]`` is thread ``t``'s instance (:func:`binding_for`); ``None`` binds thread
    ``t`` to ``t mod I`` (the prior art's round robin, [0003])."""

    name = "static-rr"

    def __init__(self, binding: Sequence[int] | None = None):
        if binding is not None:
            check_sequence("", "binding", binding)
            for index, instance in enumerate(binding):
                if not isinstance(instance, int) or isinstance(instance, bool) or instance < 0:
                    raise ValueError(f"binding[{index}] must be an instance number, "
                                     f"not {instance!r}")
        self.binding = None if binding is None else tuple(binding)

    def bind(self, instances, take, head):
        super().bind(instances, take, head)
        if self.binding is not None and any(i >= instances for i in self.binding):
            raise ValueError(f"binding names an instance >= the {instances} instances")
        self.queues: list[deque[int]] = [deque() for _ in range(instances)]

    def instance_of(self, thread: int) -> int:
        if self.binding is None:
            return thread % self.instances
        if thread >= len(self.binding):
            raise ValueError(f"thread {thread} has no instance in the binding of "
                             f"{len(self.binding)} threads")
        return self.binding[thread]

    def on_ready(self, thread, now):
        self.take(thread, now)
        self.queues[self.instance_of(thread)].append(thread)

    def pick(self, instance, now):
        queue = self.queues[instance]
        return queue.popleft() if queue else None


def binding_for(threads: int, instances: int, seed: int) -> tuple[int, ...]:
    """The prior art's round robin over a random permutation of the threads, drawn with
    ``seed``: every instance gets ``threads / instances`` threads (give or take one), which
    ones depends on the seed. A claim over seeds is then a claim over bindings."""
    check_int("", "threads", threads, 0)
    check_int("", "instances", instances, 1)
    check_int("", "seed", seed, None)
    order = list(range(threads))
    random.Random(f"binding:{seed}").shuffle(order)
    binding = [0] * threads
    for place, thread in enumerate(order):
        binding[thread] = place % instances
    return tuple(binding)


class SeedBatchDispatch(Policy):
    """The seed's dispatcher: batches of ``batch`` threads from a thread order table, one
    sub-task each, refilled into the shared FIFO only when it is empty.

    ``order`` is ``"arrival"`` (by the arrival time of the thread's first waiting sub-task) or
    ``"priority"`` (by that sub-task's priority, 0 first; ties by arrival). Ties end with the
    thread id. Within a batch the sub-tasks enter the FIFO by arrival time (then thread id).

    What a batch costs and buys: the host packs the batch's data (inputs, and with
    ``ship_state="always"`` the states from the backup buffers, [0128]) and sends it in one
    DMA; its sub-tasks can be pulled when that DMA has landed, ``cost(threads)`` after the
    refill began (the engine supplies the cost through :meth:`attach_costs`). The instances
    then pay no transfer of their own for what the batch carried. The seed requires more
    target threads than instances ([0007]); a smaller ``batch`` is warned about at
    :meth:`bind`.
    """

    batched = True

    def __init__(self, order: str = "arrival", batch: int = 8, ship_state: str = "always"):
        if order not in ORDERS:
            raise ValueError(f"Order must be one of {', '.join(ORDERS)}, not {order!r}")
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ValueError(f"Batch must be a positive integer, not {batch!r}")
        if ship_state not in SHIP_STATE:
            raise ValueError(f"ship_state must be one of {', '.join(SHIP_STATE)}, "
                             f"not {ship_state!r}")
        self.order = order
        self.batch = batch
        self.ship_state = ship_state
        self.name = f"seed003-{order}"
        self.cost: Callable[[list[int]], int] | None = None

    def attach_costs(self, cost: Callable[[list[int]], int]) -> None:
        """``cost(threads)``: microseconds from the start of a refill until the batch of those
        threads' head sub-tasks is on the device (the host's packing and the batch's DMA)."""
        self.cost = cost

    def bind(self, instances, take, head):
        super().bind(instances, take, head)
        if self.batch <= instances:
            warnings.warn(f"batch {self.batch} is not greater than the {instances} instances: "
                          f"the seed's target threads outnumber the instances ([0007])",
                          stacklevel=2)
        self.waiting: set[int] = set()        # threads with a head ready, not yet in the FIFO
        self.table: deque[int] = deque()      # the current round's threads not yet drawn
        self.fifo: deque[int] = deque()
        self.landing = 0                      # when the batch in the FIFO can be pulled
        self.batches = 0
        # Batches of no more threads than instances: fewer threads had a sub-task ready than
        # the configured size ([0091]: a thread with nothing to take is skipped).
        self.short_batches = 0
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
        self.landing = now + (self.cost(chosen) if self.cost is not None else 0)
        self.batches += 1
        self.short_batches += len(chosen) <= self.instances

    def prepare(self, now):
        self.refill(now)

    def wake_at(self) -> int | None:
        """When the batch in flight lands (the engine wakes the instances then)."""
        return self.landing if self.fifo else None

    def pick(self, instance, now):
        if not self.fifo or now < self.landing:
            return None
        thread = self.fifo.popleft()
        self.refill(now)
        return thread


def policy_names(scenario: Scenario) -> list[str]:
    """The names of :func:`make_policies`' policies, in table order (no workload needed)."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a hostsched Scenario, not {scenario!r}")
    return [*(f"seed003-{order}" for order in scenario.orders), "static-rr", "work-queue"]


def make_policies(scenario: Scenario, threads: int | None = None, *, seed: int = 1
                  ) -> list[Policy]:
    """Fresh policies for one run each: the seed's (one per order) and the two baselines.

    With ``scenario.binding == "random"`` static binding needs the workload's ``threads``;
    its binding is drawn with ``seed`` (:func:`binding_for`)."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a hostsched Scenario, not {scenario!r}")
    if scenario.binding == "random":
        if threads is None:
            raise ValueError("a random static binding needs the workload's thread count: "
                             "threads must be an integer >= 0, not None")
        static = StaticBinding(binding_for(threads, scenario.system.instances, seed))
    else:
        static = StaticBinding()
    return [*(SeedBatchDispatch(order, scenario.batch, scenario.ship_state)
              for order in scenario.orders), static, WorkQueue()]
