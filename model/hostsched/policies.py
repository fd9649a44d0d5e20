"""The dispatchers: the seed's batch dispatcher (steps 1 and 2: the thread order table, its
rounds, the batch refill of the shared FIFO and the pull of its head) and the two baselines."""

from collections import deque

from model.hostsched.config import ORDERS, Scenario

__all__ = ["Policy", "SeedBatchDispatch", "StaticBinding", "WorkQueue", "make_policies"]


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
