"""The decision of a cycle: match, select, allocate and commit, in one clock
(:class:`OneCycleDecision`) or over ``k + 1`` clocks (:class:`DecisionPipeline`,
``decision_pipeline = k``, docs/dispatch.md, "The pipelined decision").

Seed 002, embodiment 1's steps a3-a43 as one decision per cycle: the match
(:mod:`model.dispatch.matcher`), the target WG and AP (:mod:`model.dispatch.selector`, or a
baseline's rule in :mod:`model.dispatch.baselines`), the first fit
(:mod:`model.dispatch.allocator`). The seed decides in one clock; the pipeline is this
project's way to the clock rate of an FPGA, not an embodiment. RTL twin:
:mod:`hw.dispatch.pipeline` (the score pipeline and the selector of registered matches) with
the dispatcher's flight stages (:mod:`hw.dispatch.dispatcher`).

Each ``step(cycle)`` returns ``(dispatched, stale abort, any head matched, any head
waiting)``; ``matched`` is ``None`` in a cycle whose choice the pipeline cancelled (then
embodiment 3's counter does not count it). ``commit(wg, channel, ap, allocation, cycle)``
is the dispatcher's commit of a WG (:meth:`model.dispatch.engine.DispatchSimulator.commit`).
"""

from collections import deque
from dataclasses import dataclass

from model.dispatch.allocator import Allocator
from model.dispatch.config import PolicyConfig, WorkGroup
from model.dispatch.matcher import Matcher
from model.dispatch.queues import Queues
from model.dispatch.resources import Resources
from model.dispatch.scores import RotatingScores
from model.dispatch.selector import Selector

__all__ = ["Decision", "DecisionPipeline", "Match", "OneCycleDecision"]


@dataclass
class Decision:
    """A WG chosen by the decision pipeline and not yet dispatched."""
    wg: WorkGroup
    channel: int
    ap: int
    waves: tuple                       # per PEU, from the pointer the match saw
    chosen: int                        # the cycle of the choice
    plan: tuple | None = None          # the first fit, in the cycle after the choice


@dataclass
class Match:
    """The pipeline's match stage of one cycle: per channel, its first two WGs not already
    chosen with the APs each fits (``None`` where the queue had no such WG), and every AP's
    embodiment 9 and 10 scores and pointer as they were."""
    rows: list
    scores: tuple
    pointers: list


class OneCycleDecision:
    """Steps 4-5 of the seed's cycle in one clock: select the target WG and AP on this
    cycle's view, allocate in the current status, commit or abort (a stale abort changes no
    selection state)."""

    def __init__(self, queues: Queues, matcher: Matcher, selector: Selector,
                 allocator: Allocator, counters, event, commit):
        self.channels = queues.channels
        self.matcher, self.selector, self.allocator = matcher, selector, allocator
        self.counters, self.event, self.commit = counters, event, commit

    def step(self, cycle: int) -> tuple[bool, bool, bool, bool]:
        selector = self.selector
        waiting = selector.buffer is not None or any(self.channels)     # heads at step 4
        picked, matched = selector.select(cycle)
        if picked is None:
            return False, False, matched, waiting
        channel, mask, updates = picked
        wg = selector.head(channel)
        ap = selector.choose_ap(mask, cycle)
        allocation = self.allocator.allocate(wg, ap, cycle)
        if allocation is None:
            self.counters.stale_aborts += 1
            selector.abort(updates)              # an aborted dispatch changes no state
            self.event(cycle, "stale-abort", wg, ap, self.matcher.placement(wg, ap))
            return False, True, True, waiting
        selector.keep(updates)
        self.commit(wg, channel, ap, allocation, cycle)
        return True, False, True, waiting


class DecisionPipeline:
    """The decision over ``k + 1`` cycles: the match (cycle ``t``: each channel's first two
    WGs not yet chosen against every AP), the choice (``t + 1``), the first fit (``t + 2``)
    and the dispatch (``k`` cycles after the choice). State: ``flight``, the WGs chosen and
    not yet dispatched, oldest first; ``last``, the previous cycle's match; the channel
    chosen in the previous cycle; the cycles whose choice is cancelled after a stale abort;
    the ring of scores ``score_latency`` cycles old (with ``score_refresh = "rotating"``, of
    the kept keys: :mod:`model.dispatch.scores`)."""

    def __init__(self, policy: PolicyConfig, queues: Queues, matcher: Matcher,
                 selector: Selector, allocator: Allocator, resources: Resources, counters,
                 event, violation, commit):
        self.k = policy.decision_pipeline
        self.policy = policy
        self.P = matcher.P
        self.queues, self.channels = queues, queues.channels
        self.channel_count = queues.channel_count
        self.matcher, self.selector, self.allocator = matcher, selector, allocator
        self.resources = resources
        self.counters, self.event, self.violation, self.commit = (counters, event, violation,
                                                                  commit)
        self.flight: deque[Decision] = deque()
        self.last: Match | None = None
        self.chosen_last: int | None = None
        self.squash = 0
        self.scores: deque = deque()
        self.rotating: RotatingScores | None = None
        self.rotates = (policy.score_refresh == "rotating"
                        and policy.ap_choice in ("resource", "instruction", "combined"))
        self.dispatched: deque = deque()        # rotating scores: (cycle, AP dispatched to)

    def match_stage(self, cycle: int) -> Match:
        """What the match stage registers in ``cycle``: each channel's first two WGs behind
        those in flight, against the view, slots and pointers of this cycle."""
        in_flight = [0] * self.channel_count
        busy = 0                            # APs with a WG in flight: one at a time
        for decision in self.flight:
            in_flight[decision.channel] += 1
            busy |= 1 << decision.ap
        running = self.queues.inflight
        masks_of = self.matcher.masks_of
        rows = []
        for channel, queue in enumerate(self.channels):
            row = []
            for position in (in_flight[channel], in_flight[channel] + 1):
                if position >= len(queue):
                    row.append(None)
                    continue
                wg = queue[position]
                held = wg.barrier and (running[channel] or position)
                row.append((wg, 0 if held else masks_of(wg) & ~busy))
            rows.append(row)
        scores = self._scores(cycle)
        # The scores the match keeps are those of score_latency cycles before (an idle GPU's
        # before cycle 0): an RTL computes them in a pipeline of their own.
        ring = self.scores
        if not ring:
            ring.extend([scores] * self.policy.score_latency)
        ring.append(scores)
        return Match(rows, ring.popleft(), list(self.matcher.pointer))

    def _scores(self, cycle: int):
        """What the ring keeps of ``cycle``: every AP's scores (:meth:`_every`), or with
        rotating scores the keys after this cycle's refresh."""
        if not self.rotates:
            return self._every(cycle)
        rotating = self.rotating
        if rotating is None:                # the idle GPU's, kept before cycle 0
            rotating = self.rotating = RotatingScores(self.policy, *self._every(cycle))
        # The AP dispatched to in the cycle whose allocation this cycle's view first shows.
        shown = cycle - 1 - self.policy.circuit_latency
        recent = self.dispatched
        while recent and recent[0][0] < shown:
            recent.popleft()
        aps = RotatingScores.refreshed(cycle, self.P,
                                       recent[0][1] if recent and recent[0][0] == shown else None)
        choice = self.policy.ap_choice
        resource = (self.selector.resource_scores(aps)
                    if choice in ("resource", "combined") else [0] * len(aps))
        history = (self.resources.history_scores(cycle)
                   if choice in ("instruction", "combined") else None)
        return rotating.refresh([(ap, r, history[ap] if history else 0)
                                 for ap, r in zip(aps, resource, strict=True)])

    def _every(self, cycle: int) -> tuple[list, list]:
        """This cycle's resource and instruction scores of every AP (zeros for a score the
        AP choice does not read)."""
        choice = self.policy.ap_choice
        resource = (self.selector.resource_scores() if choice in ("resource", "combined")
                    else [0] * self.P)
        instruction = (self.resources.history_scores(cycle)
                       if choice in ("instruction", "combined") else [0] * self.P)
        return resource, instruction

    def _candidates(self) -> dict:
        """``{channel: (WG, APs it fits)}`` the choice reads from the registered match: each
        channel's row after the WG chosen in the previous cycle when that was the channel's,
        if still its first WG not chosen (a split since changes it)."""
        last = self.chosen_last
        # The AP chosen in the previous cycle was not busy yet when the match ran.
        free = ~(1 << self.flight[-1].ap) if last is not None else -1
        in_flight = [0] * self.channel_count
        for decision in self.flight:
            in_flight[decision.channel] += 1
        candidates = {}
        for channel, row in enumerate(self.last.rows):
            entry = row[1 if last == channel else 0]
            queue = self.channels[channel]
            if (entry is not None and in_flight[channel] < len(queue)
                    and queue[in_flight[channel]] is entry[0]):
                candidates[channel] = (entry[0], entry[1] & free)
        return candidates

    def choose(self, cycle: int):
        """The choice stage: ``(decision or None, any candidate matched, any candidate)``
        from the previous cycle's match, per the selection rule."""
        match = self.last
        candidates = self._candidates()
        if not candidates:
            return None, False, False
        selector = self.selector
        chosen = selector.choose(candidates, cycle)
        if chosen is None:
            return None, False, True
        wg, mask = candidates[chosen]
        ap = (RotatingScores.best(mask, match.scores) if self.rotates
              else selector.choose_ap(mask, cycle, match.scores))
        selector.advance(chosen, ap)
        pointer = match.pointers[ap] if self.policy.rotate else 0
        return (Decision(wg, chosen, ap, self.matcher.row_for(wg.waves, pointer), cycle),
                True, True)

    def idle_until(self, waiting: bool) -> bool:
        """Whether the cycles after this one repeat it until the next event (the engine may
        skip them): nothing in flight, no choice made or cancelled, and the match just
        registered gives the next choice no candidate that fits and the same ``waiting``."""
        if self.flight or self.squash or self.chosen_last is not None or self.last is None:
            return False
        candidates = self._candidates()
        return (not any(mask for _, mask in candidates.values())
                and bool(candidates) == waiting)

    def skip(self, cycle: int, following: int) -> None:
        """The engine skips the cycles after ``cycle`` up to ``following``: their matches
        are this cycle's rows, each with the scores of ``score_latency`` cycles before, so
        the score ring and the registered match become what the last of them left. Only the
        last ``score_latency + 1`` skipped cycles' scores count (the ring keeps
        ``score_latency``); they are worked out now, with the state of this cycle, which no
        skipped cycle changes (the events of ``following`` come after). Rotating scores are
        refreshed in the ``2 P - 1`` skipped cycles before those too: what a cycle before
        them kept is overwritten by then (every AP's scores in ``P`` cycles, their keys,
        scaled by those, in the ``P - 1`` after)."""
        latency = self.policy.score_latency
        skipped = range(cycle + 1, following)
        refreshed = latency + 1 + (2 * self.P - 1 if self.rotates else 0)
        worked = [self._scores(c) for c in skipped[-refreshed:]]
        combined = list(self.scores) + worked[len(worked) - min(len(worked), latency + 1):]
        self.scores = deque(combined[len(combined) - latency:] if latency else ())
        last = self.last
        self.last = Match(last.rows, combined[-(latency + 1)], last.pointers)

    def hold(self, cycle: int) -> None:
        """A cycle held by back-pressure: every stage keeps its WG (the match, the choice,
        the flight stages), while the scores go on: the ring takes this cycle's scores and
        the held match carries the scores that leave it."""
        for decision in self.flight:
            decision.chosen += 1            # its stage holds: still as far from dispatch
        if self.last is None:
            return
        ring = self.scores
        ring.append(self._scores(cycle))
        last = self.last
        self.last = Match(last.rows, ring.popleft(), last.pointers)

    def step(self, cycle: int) -> tuple[bool, bool, bool | None, bool]:
        """One cycle of the decision pipeline: match; first fit of the WG chosen in the
        previous cycle; dispatch (or stale abort) of the WG chosen ``k`` cycles ago; choice."""
        k = self.k
        match = self.match_stage(cycle)
        flight = self.flight
        if flight and flight[-1].chosen + 1 == cycle:       # the one chosen last cycle
            decision = flight[-1]
            decision.plan = self.allocator.plan(decision.wg, decision.ap, decision.waves)
        dispatched = aborted = False
        if flight and flight[0].chosen + k == cycle:
            decision = flight.popleft()
            wg, ap = decision.wg, decision.ap
            if decision.plan is not None:
                # Nothing else was placed on the AP since the plan (one WG in flight per AP)
                # and releases only free blocks and slots: the plan cannot go stale.
                if not self.allocator.still_free(ap, decision.waves, decision.plan):
                    self.violation(f"cycle {cycle}: WG {wg.id}'s first fit on AP {ap} went "
                                   f"stale in flight")
                if self.channels[decision.channel][0] is not wg:
                    self.violation(f"cycle {cycle}: WG {wg.id} dispatched before the WGs "
                                   f"ahead of it in channel {decision.channel}")
                allocation = self.allocator.take(wg, ap, decision.waves, decision.plan, cycle)
                self.commit(wg, decision.channel, ap, allocation, cycle)
                if self.rotates:
                    self.dispatched.append((cycle, ap))
                dispatched = True
            else:
                self.counters.stale_aborts += 1
                self.counters.flushed += len(flight)
                self.event(cycle, "stale-abort", wg, ap, decision.waves)
                flight.clear()
                self.squash = 2             # this cycle's choice and the next one's
                aborted = True
        matched, waiting = None, False
        chosen = None
        if self.squash:
            self.squash -= 1
        elif self.last is not None:
            decision, matched, waiting = self.choose(cycle)
            if decision is not None:
                flight.append(decision)
                chosen = decision.channel
        self.chosen_last = chosen
        self.last = match
        return dispatched, aborted, matched, waiting
