"""Discrete-event simulation of a GPU cluster under one placement policy (the timed experiment).

Time is continuous, in seconds; power in watts; energy is reported in kWh. Events are pod
arrivals and completions; at one instant completions are handled before arrivals, and placement
runs once after every event of that instant, so a burst is queued in arrival order before any
of it is placed.

Queue: pods wait in one FIFO. Without backfill only the head is tried, and a head that does not
fit blocks the pods behind it; with backfill every queued pod is tried in FIFO order and may
pass a blocked head (no reservation: a finite workload always drains, because a pod admitted at
all fits an empty cluster). Admission: a pod no node could ever hold (cards, type, CPU or
memory) is rejected on arrival with its reason, never queued.

Resources and power are those of :class:`~model.cluster.state.ClusterState`. With standby
enabled a fully free card goes to low-power standby once idle longer than ``standby_after_s``,
and so does the host of a node with no pod; a pod placed on a card or node in standby starts
``wake_s`` later, holding its resources (and drawing busy power) meanwhile. Energy is
integrated exactly and lazily, node by node, whenever the node changes.

The FGD fragmentation (:mod:`model.cluster.fragmentation`) is integrated over time too, so
every policy reports the same fragmentation measure whether or not it uses it.
"""

import heapq
import random
from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

from model.checks import InvariantError
from model.cluster.config import NodeSpec
from model.cluster.fragmentation import Fragmentation, TypicalPods, typical_pods
from model.cluster.policies import PlacementContext, Policy, make_policy
from model.cluster.power import CardType
from model.cluster.state import ClusterState
from model.cluster.workload import MILLI, Job, admission_problem
from model.stats import summary

__all__ = ["ClusterSimulation", "InvariantError", "resolve_policy"]

_COMPLETE, _ARRIVE = 0, 1
_JOULES_PER_KWH = 3.6e6


def resolve_policy(policy) -> Policy:
    """A :class:`~model.cluster.policies.Policy` from one, or from anything with a policy
    ``name`` (a name string, or the pure :data:`model.cluster.placement.POLICIES` entries)."""
    if isinstance(policy, Policy):
        return policy
    return make_policy(policy if isinstance(policy, str) else policy.name)


class ClusterSimulation:
    """One policy on one cluster and pod list; :meth:`run`, then :meth:`results`.

    Parameters
    ----------
    nodes, card_types
        The cluster and the power entry of every card type it uses.
    jobs
        The workload, in any order (sorted by arrival, then index).
    policy
        A policy name, or a :class:`~model.cluster.policies.Policy`.
    rng
        Randomness for the policy's tie-breaks (the only randomness in a run).
    backfill
        Whether queued pods may pass a blocked head.
    standby, standby_after_s, wake_s
        Low-power standby for this run (see the module docstring).
    shared_card
        Power of a partly used card: ``"busy"`` or ``"proportional"``.
    typical
        The typical pods of the fragmentation measure (default: those of ``jobs``).
    pwr_fgd_weights
        Plugin weights of ``pwr-fgd``.
    tie_break, node_rank
        Equal highest scores: ``"shuffled"`` (the FGD artifact's rule: the smallest name
        after its simulator renamed the nodes in a random order, ``node_rank``, one per seed;
        drawn from ``rng`` when not given), ``"name"`` (the smallest name of the node list)
        or ``"random"`` (upstream kube-scheduler's); see
        :data:`~model.cluster.policies.TIE_BREAKS`.
    debug
        Check every invariant after every event instant (:meth:`check_invariants`).
    """

    def __init__(self, nodes: Sequence[NodeSpec], card_types: Mapping[str, CardType],
                 jobs: Sequence[Job], policy, *, rng: random.Random, backfill: bool = False,
                 standby: bool = True, standby_after_s: float = 0.0, wake_s: float = 0.0,
                 shared_card: str = "busy", typical: TypicalPods | None = None,
                 pwr_fgd_weights: tuple[int, int] = (200, 800), tie_break: str = "shuffled",
                 node_rank: np.ndarray | None = None, debug: bool = False):
        self.specs = tuple(nodes)
        self.state = ClusterState(self.specs, card_types, shared_card=shared_card)
        self.jobs = sorted(jobs, key=lambda job: (job.arrival_s, job.index))
        self._by_index = {job.index: job for job in self.jobs}
        if len(self._by_index) != len(self.jobs):
            raise ValueError("Job indices must be unique")
        self.policy = resolve_policy(policy)
        self.rng = rng
        self.fragmentation = Fragmentation(self.state, typical or typical_pods(self.jobs or [
            Job(0, "none", 0.0, 0, 0.0)]))
        self.context = PlacementContext(self.state, self.fragmentation, rng, pwr_fgd_weights,
                                        tie_break, node_rank)
        self.backfill = backfill
        self.standby = standby
        self.standby_after_s = standby_after_s
        self.wake_s = wake_s
        self.debug = debug
        self.now = 0.0
        self.queue: deque[Job] = deque()
        self.rejected: list[tuple[Job, str]] = []
        self.placed_at: dict[int, float] = {}
        self.started_at: dict[int, float] = {}
        self.completed_at: dict[int, float] = {}
        #: job index -> (node index, card slots) while the job holds resources.
        self.running: dict[int, tuple[int, tuple[int, ...]]] = {}
        #: job index -> (node index, card slots) of every placement, kept after completion.
        self.assignment: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.fragmented: set[int] = set()
        self.wakeups = 0
        size, width = self.state.size, self.state.width
        self.fully_idle_nodes = size
        self.idle_series: list[tuple[float, int]] = [(0.0, size)]
        self._card_idle_since = np.zeros((size, width))
        self._node_empty_since = np.zeros(size)
        self._last_flush = np.zeros(size)
        self._energy = np.zeros((size, 3))          # busy, idle, standby (joules)
        #: ``(busy_w, idle_w, standby_w)`` of each card of each node, in slot order.
        self._slot_power = [list(zip(busy, idle, standby, strict=True)) for busy, idle, standby
                            in zip(self.state._slot_busy, self.state._slot_idle,
                                   self.state._slot_standby, strict=True)]
        #: ``(sockets, socket_busy_w, socket_idle_w, sleep_w)`` of each host.
        self._host_table = list(zip(self.state.sockets.tolist(),
                                    self.state.socket_busy_w.tolist(),
                                    self.state.socket_idle_w.tolist(),
                                    self.state.sleep_w.tolist(), strict=True))
        self._used_milli_seconds = 0.0
        self._metric_time = 0.0
        self._frag_area = 0.0
        self._free_area = 0.0
        self._events: list[tuple[float, int, int, int]] = []
        self._admission: dict[tuple, str | None] = {}
        #: Queued pods that failed since the last completion (they fail until one).
        self._tried: set[int] = set()

    # Event loop ---------------------------------------------------------------------------
    def run(self, progress=None) -> "ClusterSimulation":
        """Simulate until every admitted pod has completed; returns ``self``. ``progress``,
        when given, is called with the simulated time (s) at every event."""
        for job in self.jobs:
            heapq.heappush(self._events, (job.arrival_s, _ARRIVE, job.index, job.index))
        events = self._events
        while events:
            time, kind, _, index = heapq.heappop(events)
            self._advance_metrics(time)
            self.now = time
            if progress is not None:
                progress(time)
            if kind == _COMPLETE:
                self._complete(index)
            else:
                self._arrive(self._by_index[index])
            if events and events[0][0] == time:
                continue
            self._schedule()
            if self.idle_series[-1][1] != self.fully_idle_nodes:
                self.idle_series.append((time, self.fully_idle_nodes))
            if self.debug:
                self.check_invariants()
        self._check_end()
        return self

    def _advance_metrics(self, time: float) -> None:
        if time > self._metric_time:
            span = time - self._metric_time
            fragmented, free = self.fragmentation.cluster()
            self._frag_area += fragmented * span
            self._free_area += free * span
            self._metric_time = time

    def _arrive(self, job: Job) -> None:
        # Cached per shape: with thousands of nodes the check is a costly step.
        if job.shape not in self._admission:
            self._admission[job.shape] = (None if self.state.could_hold(job)
                                          else admission_problem(job, self.specs))
        problem = self._admission[job.shape]
        if problem is not None:
            self.rejected.append((job, problem))
        else:
            self.queue.append(job)

    def _schedule(self) -> None:
        """Place queued pods in FIFO order (only the head unless backfilling)."""
        if not self.queue:
            return
        # Placements and arrivals only take resources away: a pod that failed since the last
        # completion fails again, and so does any pod asking at least as much of everything
        # (same types) as one that failed in this pass.
        failed: dict[frozenset[str] | None, list[tuple]] = {}
        kept: deque[Job] = deque()
        while self.queue:
            job = self.queue.popleft()
            demand = job.shape[:4]
            blocked = job.index in self._tried or any(
                all(mine >= theirs for mine, theirs in zip(demand, other, strict=True))
                for other in failed.get(job.types, ()))
            choice = None if blocked else self.policy.choose(self.context, job)
            if choice is not None:
                self._place(job, *choice)
                continue
            if job.index not in self._tried:
                self._tried.add(job.index)
                failed.setdefault(job.types, []).append(demand)
                if job.index not in self.fragmented and self._enough_in_aggregate(job):
                    self.fragmented.add(job.index)
            kept.append(job)
            if not self.backfill:
                break
        kept.extend(self.queue)
        self.queue = kept

    def _enough_in_aggregate(self, job: Job) -> bool:
        """True when the cluster as a whole has what ``job`` asks (fitting cards, CPU and
        memory) although no single node does: the pod is blocked by fragmentation."""
        state = self.state
        if state.cpu_free.sum() < job.cpu_milli or state.mem_free.sum() < job.memory_mib:
            return False
        return job.cards == 0 or int(state.fit_cards(job).sum()) >= job.cards

    def _flush(self, node: int, now: float) -> None:
        """Add node ``node``'s energy from its last update to ``now`` (state constant)."""
        start = float(self._last_flush[node])
        if now < start:
            raise InvariantError(f"time went back on node {self.specs[node].name}: {now} < "
                                 f"{start}")
        if now == start:
            return
        state, length = self.state, now - start
        after = self.standby_after_s
        busy = idle = asleep = 0.0
        used = 0
        proportional = state.shared_card != "busy"
        standby = self.standby
        for free, since, (busy_w, idle_w, standby_w) in zip(
                state.left[node].tolist(), self._card_idle_since[node].tolist(),
                self._slot_power[node], strict=False):
            if free < MILLI:
                busy += (idle_w + (busy_w - idle_w) * (MILLI - free) / MILLI if proportional
                         else busy_w) * length
                used += MILLI - free
            elif standby:
                # Awake until idle_since + after, in standby from then on.
                awake = min(max(0.0, since + after - start), length)
                idle += idle_w * awake
                asleep += standby_w * (length - awake)
            else:
                idle += idle_w * length
        self._used_milli_seconds += used * length
        sockets, socket_busy, socket_idle, sleep_w = self._host_table[node]
        if state.pods[node] > 0:
            active = state.active_sockets_of(node)
            busy += active * socket_busy * length
            idle += (sockets - active) * socket_idle * length
        elif standby:
            awake = min(max(0.0, float(self._node_empty_since[node]) + after - start), length)
            idle += sockets * socket_idle * awake
            asleep += sleep_w * (length - awake)
        else:
            idle += sockets * socket_idle * length
        energy = self._energy[node]
        energy[0] += busy
        energy[1] += idle
        energy[2] += asleep
        self._last_flush[node] = now

    def _in_standby(self, node: int, cards: Sequence[int]) -> bool:
        if not self.standby:
            return False
        after, now, state = self.standby_after_s, self.now, self.state
        if state.pods[node] == 0 and now - self._node_empty_since[node] > after:
            return True
        return any(state.left[node, slot] == MILLI
                   and now - self._card_idle_since[node, slot] > after for slot in cards)

    def _place(self, job: Job, node: int, cards: tuple[int, ...]) -> None:
        now, state = self.now, self.state
        waking = self._in_standby(node, cards)
        self._flush(node, now)
        was_empty = state.pods[node] == 0
        state.allocate(node, cards, job)
        self.fragmentation.update(node)
        if was_empty:
            self.fully_idle_nodes -= 1
        delay = self.wake_s if waking else 0.0
        self.wakeups += waking
        self.placed_at[job.index] = now
        self.started_at[job.index] = now + delay
        self.running[job.index] = (node, tuple(cards))
        self.assignment[job.index] = self.running[job.index]
        heapq.heappush(self._events, (now + delay + job.duration_s, _COMPLETE, job.index,
                                      job.index))

    def _complete(self, index: int) -> None:
        if index in self.completed_at:
            raise InvariantError(f"job {index} completed twice")
        if index not in self.running:
            raise InvariantError(f"job {index} completed without running")
        node, cards = self.running.pop(index)
        self._tried.clear()
        state = self.state
        self._flush(node, self.now)
        state.release(node, cards, self._by_index[index])
        for slot in cards:
            if state.left[node, slot] == MILLI:
                self._card_idle_since[node, slot] = self.now
        if state.pods[node] == 0:
            self._node_empty_since[node] = self.now
            self.fully_idle_nodes += 1
        self.fragmentation.update(node)
        self.completed_at[index] = self.now

    # Invariants ---------------------------------------------------------------------------
    def check_invariants(self) -> None:
        """Raise :class:`InvariantError` unless: every card's free share plus its holders'
        is 1000 and nothing is over-allocated; every running pod holds exactly its cards,
        share, CPU and memory, and every holder is a running pod; each node's pod count and
        the fully idle count are right; no pod both runs and has completed; the incremental
        fragmentation equals a fresh computation."""
        state = self.state
        state.check()
        pods = np.zeros(state.size, np.int64)
        cpu = np.zeros(state.size, np.int64)
        memory = np.zeros(state.size, np.int64)
        for index, (node, cards) in self.running.items():
            job = self._by_index[index]
            if index in self.completed_at:
                raise InvariantError(f"job {index} is running and completed")
            if len(cards) != job.cards:
                raise InvariantError(f"job {index} holds {len(cards)} cards, needs {job.cards}")
            for slot in cards:
                if state.holders[node][slot].get(index) != job.gpu_milli:
                    raise InvariantError(f"card {slot} of {self.specs[node].name} does not "
                                         f"hold job {index}'s {job.gpu_milli} milli")
            pods[node] += 1
            cpu[node] += job.cpu_milli
            memory[node] += job.memory_mib
        for node, spec in enumerate(self.specs):
            for slot, holders in enumerate(state.holders[node]):
                for index in holders:
                    if self.running.get(index, (None, ()))[0] != node or \
                            slot not in self.running[index][1]:
                        raise InvariantError(f"card {slot} of {spec.name} marks job {index}, "
                                             f"which does not hold it")
        if np.any(pods != state.pods):
            raise InvariantError(f"pod counts {state.pods.tolist()} but running pods give "
                                 f"{pods.tolist()}")
        if np.any(state.cpu_cap - state.cpu_free != cpu) or \
                np.any(state.mem_cap - state.mem_free != memory):
            raise InvariantError("allocated CPU or memory differs from the running pods'")
        if int((state.pods == 0).sum()) != self.fully_idle_nodes:
            raise InvariantError(f"{self.fully_idle_nodes} nodes counted fully idle, "
                                 f"{int((state.pods == 0).sum())} are")
        fresh = Fragmentation(state, self.fragmentation.typical)
        if not np.allclose(fresh.node, self.fragmentation.node):
            raise InvariantError("the incremental fragmentation differs from a fresh one")

    def _check_end(self) -> None:
        """Every admitted pod was placed and completed exactly once; nothing is left."""
        if self.queue:
            raise InvariantError(f"{len(self.queue)} jobs left in the queue at the end")
        if self.running:
            raise InvariantError(f"{len(self.running)} jobs still running at the end")
        admitted = {job.index for job in self.jobs} - {job.index for job, _ in self.rejected}
        if set(self.completed_at) != admitted or set(self.placed_at) != admitted:
            raise InvariantError("the placed, completed and admitted jobs differ")

    # Results ------------------------------------------------------------------------------
    @property
    def makespan_s(self) -> float:
        """When the last pod completed (0 for an empty run)."""
        return max(self.completed_at.values(), default=0.0)

    def results(self, horizon_s: float | None = None) -> dict:
        """Every metric of the run, energy integrated over ``[0, horizon_s]`` (at least the
        makespan; pass the same horizon to every policy of a scenario so that their energy
        covers the same time)."""
        horizon = max(self.now, self.makespan_s, horizon_s or 0.0)
        for node in range(self.state.size):
            self._flush(node, horizon)
        self._advance_metrics(horizon)
        energy = self._energy.sum(axis=0) / _JOULES_PER_KWH
        total_kwh = float(energy.sum())
        waits = [self.started_at[index] - self._by_index[index].arrival_s
                 for index in self.completed_at]
        queued = [index for index in self.completed_at
                  if self.placed_at[index] > self._by_index[index].arrival_s]
        queued_waits = [self.started_at[index] - self._by_index[index].arrival_s
                        for index in queued]
        admitted = len(self.jobs) - len(self.rejected)
        idle_area = 0.0
        series = self.idle_series + [(horizon, self.idle_series[-1][1])]
        for (start, count), (end, _) in zip(series, series[1:], strict=False):
            idle_area += count * (end - start)
        reasons: dict[str, int] = {}
        for _, reason in self.rejected:
            reasons[reason] = reasons.get(reason, 0) + 1
        cards = int(self.state.card_count.sum())
        frag_gpus = self._frag_area / MILLI / horizon if horizon else 0.0
        free_gpus = self._free_area / MILLI / horizon if horizon else float(cards)
        return {
            "policy": self.policy.name,
            "jobs": len(self.jobs),
            "admitted": admitted,
            "completed": len(self.completed_at),
            "rejected": len(self.rejected),
            "unplaced": len(self.rejected),
            "rejections": [{"job": job.name, "reason": reason} for job, reason in self.rejected],
            "rejection_reasons": reasons,
            "energy_kwh": total_kwh,
            "busy_kwh": float(energy[0]),
            "idle_kwh": float(energy[1]),
            "standby_kwh": float(energy[2]),
            "mean_power_kw": total_kwh * 3600.0 / horizon if horizon else 0.0,
            "queued": len(queued),
            "wait_s": summary(waits),
            "queued_wait_s": summary(queued_waits),
            "fragmented": len(self.fragmented),
            "fragmented_fraction": len(self.fragmented) / admitted if admitted else 0.0,
            "fragmentation_gpus": frag_gpus,
            "free_gpus": free_gpus,
            "fragmentation_rate": frag_gpus / free_gpus if free_gpus else 0.0,
            "fully_idle_nodes_mean": idle_area / horizon if horizon else float(self.state.size),
            "fully_idle_series": [[time, count] for time, count in self.idle_series],
            "wakeups": self.wakeups,
            "card_utilisation": (self._used_milli_seconds / MILLI / (cards * horizon)
                                 if horizon and cards else 0.0),
            "makespan_s": self.makespan_s,
            "horizon_s": horizon,
            "nodes": self.state.size,
            "cards": cards,
            "typical_pods": len(self.fragmentation.typical),
        }
