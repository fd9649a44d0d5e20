"""Discrete-event simulation of a GPU cluster under one placement policy.

Time is continuous, in seconds (float); power in watts; energy is reported in kWh. Events are
job arrivals and job completions; at one instant completions are handled before arrivals, and
placement runs once after every event of that instant, so a burst is queued in arrival order
before any of it is placed.

Queue: jobs wait in one FIFO. Without backfill only the head is tried, and a head that does not
fit blocks the jobs behind it; with backfill every queued job is tried in FIFO order and may
pass a blocked head (no reservation for the head: a finite workload always drains, because a
job admitted at all fits an empty cluster).

Admission: a job no node could ever hold (too many cards, or a card type no node has) is
rejected on arrival with its reason, never queued.

Power (:class:`Node`): a busy card draws its type's ``busy_w`` (the seed's first power); an
idle card ``idle_w``, or ``standby_w`` once it has been idle longer than ``standby_after_s``
(when standby is enabled for the run). The host draws ``cpu_busy_w`` while any card is busy,
``cpu_standby_w`` while every card is idle, and ``sleep_w`` once fully idle longer than
``standby_after_s``. A job placed on a node in standby or on a card in standby starts
``wake_s`` later; its cards are held (and draw busy power) meanwhile. Energy is integrated
exactly and lazily: a node's energy is brought up to date whenever its state changes.

Inside the chosen node a job takes the eligible idle cards of lowest first power (then lowest
index) under every policy: the policies differ only in the node they choose.
"""

import heapq
import random
from collections import deque
from collections.abc import Mapping, Sequence

from model.checks import InvariantError
from model.cluster.config import CardType, NodeSpec
from model.cluster.placement import Policy, choose_node
from model.cluster.workload import Job, admission_problem
from model.stats import summary

__all__ = ["ClusterSimulation", "InvariantError", "Node"]

_COMPLETE, _ARRIVE = 0, 1
_JOULES_PER_KWH = 3.6e6


def _split(start: float, end: float, threshold: float) -> tuple[float, float]:
    """Lengths of ``[start, end]`` before and after ``threshold``."""
    before = max(0.0, min(end, threshold) - start)
    return before, (end - start) - before


class _Card:
    __slots__ = ("index", "type", "busy_w", "idle_w", "standby_w", "job", "idle_since")

    def __init__(self, index: int, card_type: CardType):
        self.index = index
        self.type = card_type.name
        self.busy_w = card_type.busy_w
        self.idle_w = card_type.idle_w
        self.standby_w = card_type.standby_w
        self.job: int | None = None
        self.idle_since = 0.0


class Node:
    """One node during a run: its cards, idle counters by type, and its energy so far.

    Implements :class:`~model.cluster.placement.NodeView` from counters kept up to date on
    every allocation and release, so a placement decision costs O(types) per node.
    """

    def __init__(self, index: int, spec: NodeSpec, card_types: Mapping[str, CardType], *,
                 standby: bool, standby_after_s: float):
        self.index = index
        self.name = spec.name
        self.spec = spec
        self.cards = [_Card(position, card_types[name]) for position, name in
                      enumerate(spec.cards)]
        self.total_cards = len(self.cards)
        self.cpu_standby_w = spec.cpu_standby_w
        self.first_power = {name: card_types[name].busy_w for name in set(spec.cards)}
        self.idle_count = {name: spec.cards.count(name) for name in set(spec.cards)}
        self.idle_total = self.total_cards
        self.idle_power = sum(card.busy_w for card in self.cards)
        self.standby = standby
        self.standby_after_s = standby_after_s
        self.fully_idle_since = 0.0
        self.last_time = 0.0
        self.energy = {"busy": 0.0, "idle": 0.0, "standby": 0.0}
        self.busy_card_seconds = 0.0

    # NodeView ---------------------------------------------------------------------------
    def idle_cards(self, types: frozenset[str] | None) -> tuple[int, float]:
        """``(count, first-power sum)`` of the idle cards of an accepted type."""
        if types is None:
            return self.idle_total, self.idle_power
        count = 0
        for name in types:
            count += self.idle_count.get(name, 0)
        power = 0.0
        for name in types:
            power += self.idle_count.get(name, 0) * self.first_power.get(name, 0.0)
        return count, power

    @property
    def fully_idle(self) -> bool:
        return self.idle_total == self.total_cards

    # Power ------------------------------------------------------------------------------
    def in_standby(self, now: float) -> bool:
        """True when the whole node is in low-power standby at ``now``."""
        return (self.standby and self.fully_idle
                and now - self.fully_idle_since > self.standby_after_s)

    def card_in_standby(self, card: _Card, now: float) -> bool:
        return self.standby and card.job is None and now - card.idle_since > self.standby_after_s

    def flush(self, now: float) -> None:
        """Add the energy drawn from the last update to ``now`` (the state being constant)."""
        start = self.last_time
        if now < start:
            raise InvariantError(f"time went back on node {self.name}: {now} < {start}")
        if now == start:
            return
        length = now - start
        energy = self.energy
        after = self.standby_after_s
        for card in self.cards:
            if card.job is not None:
                energy["busy"] += card.busy_w * length
                self.busy_card_seconds += length
            elif self.standby:
                awake, asleep = _split(start, now, card.idle_since + after)
                energy["idle"] += card.idle_w * awake
                energy["standby"] += card.standby_w * asleep
            else:
                energy["idle"] += card.idle_w * length
        spec = self.spec
        if not self.fully_idle:
            energy["busy"] += spec.cpu_busy_w * length
        elif self.standby:
            awake, asleep = _split(start, now, self.fully_idle_since + after)
            energy["idle"] += spec.cpu_standby_w * awake
            energy["standby"] += spec.sleep_w * asleep
        else:
            energy["idle"] += spec.cpu_standby_w * length
        self.last_time = now


class ClusterSimulation:
    """One policy on one cluster and job list; :meth:`run`, then :meth:`results`.

    Parameters
    ----------
    nodes, card_types
        The cluster.
    jobs
        The workload, in any order (sorted by arrival, then index).
    policy
        Node choice (:data:`~model.cluster.placement.POLICIES`).
    rng
        Randomness for the policy's tie-breaks (the only randomness in a run).
    backfill
        Whether queued jobs may pass a blocked head.
    standby, standby_after_s, wake_s
        Low-power standby for this run (see the module docstring).
    debug
        Check every invariant after every event instant (:meth:`check_invariants`).
    """

    def __init__(self, nodes: Sequence[NodeSpec], card_types: Mapping[str, CardType],
                 jobs: Sequence[Job], policy: Policy, *, rng: random.Random,
                 backfill: bool = False, standby: bool = True, standby_after_s: float = 0.0,
                 wake_s: float = 0.0, debug: bool = False):
        self.nodes = [Node(index, spec, card_types, standby=standby,
                           standby_after_s=standby_after_s)
                      for index, spec in enumerate(nodes)]
        self.specs = tuple(nodes)
        self.jobs = sorted(jobs, key=lambda job: (job.arrival_s, job.index))
        self.policy = policy
        self.rng = rng
        self.backfill = backfill
        self.wake_s = wake_s
        self.debug = debug
        self.now = 0.0
        self.queue: deque[Job] = deque()
        self.rejected: list[tuple[Job, str]] = []
        self.placed_at: dict[int, float] = {}
        self.started_at: dict[int, float] = {}
        self.completed_at: dict[int, float] = {}
        #: job index -> (node index, card indices) while the job holds cards.
        self.running: dict[int, tuple[int, tuple[int, ...]]] = {}
        #: job index -> (node index, card indices) of every placement, kept after completion.
        self.assignment: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.fragmented: set[int] = set()
        self.wakeups = 0
        self.fully_idle_nodes = len(self.nodes)
        self.idle_series: list[tuple[float, int]] = [(0.0, len(self.nodes))]
        self._events: list[tuple[float, int, int, int]] = []
        self._by_index = {job.index: job for job in self.jobs}
        if len(self._by_index) != len(self.jobs):
            raise ValueError("Job indices must be unique")
        self._admission: dict[tuple[int, frozenset[str] | None], str | None] = {}

    # Event loop ---------------------------------------------------------------------------
    def run(self, progress=None) -> "ClusterSimulation":
        """Simulate until every admitted job has completed; returns ``self``. ``progress``,
        when given, is called with the simulated time (s) at every event."""
        for job in self.jobs:
            heapq.heappush(self._events, (job.arrival_s, _ARRIVE, job.index, job.index))
        events = self._events
        while events:
            time, kind, _, index = heapq.heappop(events)
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

    def _arrive(self, job: Job) -> None:
        # Cached per request: with thousands of nodes the check is the costliest step.
        request = (job.cards, job.types)
        if request not in self._admission:
            self._admission[request] = admission_problem(job, self.specs)
        problem = self._admission[request]
        if problem is not None:
            self.rejected.append((job, problem))
        else:
            self.queue.append(job)

    def _schedule(self) -> None:
        """Place queued jobs in FIFO order (only the head unless backfilling)."""
        if not self.queue:
            return
        cluster_idle: dict[frozenset[str] | None, int] = {}
        failed: dict[frozenset[str] | None, int] = {}
        kept: deque[Job] = deque()
        while self.queue:
            job = self.queue.popleft()
            # A request that failed in this pass fails again for as many or more cards:
            # placements only take cards away.
            if job.cards < failed.get(job.types, job.cards + 1):
                node = choose_node(self.nodes, job.request, self.policy, self.rng)
            else:
                node = None
            if node is not None:
                self._place(job, self.nodes[node])
                cluster_idle.clear()
                continue
            failed[job.types] = min(failed.get(job.types, job.cards), job.cards)
            if job.types not in cluster_idle:
                cluster_idle[job.types] = sum(node.idle_cards(job.types)[0]
                                              for node in self.nodes)
            if cluster_idle[job.types] >= job.cards:
                self.fragmented.add(job.index)
            kept.append(job)
            if not self.backfill:
                break
        kept.extend(self.queue)
        self.queue = kept

    def _place(self, job: Job, node: Node) -> None:
        now = self.now
        eligible = [card for card in node.cards
                    if card.job is None and (job.types is None or card.type in job.types)]
        eligible.sort(key=lambda card: (card.busy_w, card.index))
        chosen = eligible[:job.cards]
        if len(chosen) < job.cards:
            raise InvariantError(f"{job.name} placed on {node.name} with only {len(chosen)} "
                                 f"eligible idle cards of {job.cards}")
        waking = node.in_standby(now) or any(node.card_in_standby(card, now)
                                             for card in chosen)
        node.flush(now)
        was_idle = node.fully_idle
        for card in chosen:
            self._allocate(node, card, job)
        if was_idle:
            self.fully_idle_nodes -= 1
        delay = self.wake_s if waking else 0.0
        self.wakeups += waking
        self.placed_at[job.index] = now
        self.started_at[job.index] = now + delay
        self.running[job.index] = (node.index, tuple(card.index for card in chosen))
        self.assignment[job.index] = self.running[job.index]
        heapq.heappush(self._events, (now + delay + job.duration_s, _COMPLETE, job.index,
                                      job.index))

    def _allocate(self, node: Node, card: _Card, job: Job) -> None:
        """Give ``card`` to ``job``; a card that already has a job is an invariant breach."""
        if card.job is not None:
            raise InvariantError(f"card {card.index} of {node.name} given to {job.name} while "
                                 f"job {card.job} holds it")
        card.job = job.index
        node.idle_count[card.type] -= 1
        node.idle_total -= 1
        node.idle_power -= card.busy_w

    def _complete(self, index: int) -> None:
        if index in self.completed_at:
            raise InvariantError(f"job {index} completed twice")
        if index not in self.running:
            raise InvariantError(f"job {index} completed without running")
        node_index, card_indices = self.running.pop(index)
        node = self.nodes[node_index]
        node.flush(self.now)
        for card_index in card_indices:
            card = node.cards[card_index]
            if card.job != index:
                raise InvariantError(f"card {card_index} of {node.name} released by job "
                                     f"{index} but held by {card.job}")
            card.job = None
            card.idle_since = self.now
            node.idle_count[card.type] += 1
            node.idle_total += 1
            node.idle_power += card.busy_w
        if node.fully_idle:
            node.fully_idle_since = self.now
            self.fully_idle_nodes += 1
        self.completed_at[index] = self.now

    # Invariants ---------------------------------------------------------------------------
    def check_invariants(self) -> None:
        """Raise :class:`InvariantError` unless: no card is held by two jobs; every running
        job holds exactly its cards; each node's idle counters match its cards and idle + busy
        = total; no job both runs and has completed; the fully-idle count is right."""
        holders: dict[tuple[int, int], int] = {}
        for job_index, (node_index, card_indices) in self.running.items():
            if job_index in self.completed_at:
                raise InvariantError(f"job {job_index} is running and completed")
            if len(card_indices) != self._by_index[job_index].cards:
                raise InvariantError(f"job {job_index} holds {len(card_indices)} cards, needs "
                                     f"{self._by_index[job_index].cards}")
            for card_index in card_indices:
                slot = (node_index, card_index)
                if slot in holders:
                    raise InvariantError(f"card {card_index} of node {node_index} held by jobs "
                                         f"{holders[slot]} and {job_index}")
                holders[slot] = job_index
        fully_idle = 0
        for node in self.nodes:
            busy = 0
            idle: dict[str, int] = dict.fromkeys(node.idle_count, 0)
            for card in node.cards:
                if card.job is None:
                    idle[card.type] += 1
                else:
                    busy += 1
                    if holders.get((node.index, card.index)) != card.job:
                        raise InvariantError(f"card {card.index} of {node.name} marks job "
                                             f"{card.job}, which does not hold it")
            if idle != node.idle_count or sum(idle.values()) != node.idle_total:
                raise InvariantError(f"idle counters of {node.name} are {node.idle_count} "
                                     f"(total {node.idle_total}); its cards say {idle}")
            if node.idle_total + busy != node.total_cards:
                raise InvariantError(f"{node.name}: idle {node.idle_total} + busy {busy} != "
                                     f"{node.total_cards} cards")
            fully_idle += node.fully_idle
        if fully_idle != self.fully_idle_nodes:
            raise InvariantError(f"{self.fully_idle_nodes} nodes counted fully idle, "
                                 f"{fully_idle} are")

    def _check_end(self) -> None:
        """Every admitted job was placed and completed exactly once; nothing is left."""
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
        """When the last job completed (0 for an empty run)."""
        return max(self.completed_at.values(), default=0.0)

    def results(self, horizon_s: float | None = None) -> dict:
        """Every metric of the run, energy integrated over ``[0, horizon_s]`` (at least the
        makespan; pass the same horizon to every policy of a scenario so that their energy
        covers the same time)."""
        horizon = max(self.now, self.makespan_s, horizon_s or 0.0)
        for node in self.nodes:
            node.flush(horizon)
        energy = {part: sum(node.energy[part] for node in self.nodes) / _JOULES_PER_KWH
                  for part in ("busy", "idle", "standby")}
        total_kwh = sum(energy.values())
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
        total_cards = sum(node.total_cards for node in self.nodes)
        reasons: dict[str, int] = {}
        for _, reason in self.rejected:
            reasons[reason] = reasons.get(reason, 0) + 1
        return {
            "policy": self.policy.name,
            "jobs": len(self.jobs),
            "admitted": admitted,
            "completed": len(self.completed_at),
            "rejected": len(self.rejected),
            "rejections": [{"job": job.name, "reason": reason} for job, reason in self.rejected],
            "rejection_reasons": reasons,
            "energy_kwh": total_kwh,
            "busy_kwh": energy["busy"],
            "idle_kwh": energy["idle"],
            "standby_kwh": energy["standby"],
            "mean_power_kw": total_kwh * 3600.0 / horizon if horizon else 0.0,
            "queued": len(queued),
            "wait_s": summary(waits),
            "queued_wait_s": summary(queued_waits),
            "fragmented": len(self.fragmented),
            "fragmented_fraction": len(self.fragmented) / admitted if admitted else 0.0,
            "fully_idle_nodes_mean": idle_area / horizon if horizon else float(len(self.nodes)),
            "fully_idle_series": [[time, count] for time, count in self.idle_series],
            "wakeups": self.wakeups,
            "card_utilisation": (sum(node.busy_card_seconds for node in self.nodes)
                                 / (total_cards * horizon) if horizon else 0.0),
            "makespan_s": self.makespan_s,
            "horizon_s": horizon,
            "nodes": len(self.nodes),
            "cards": total_cards,
        }
