"""The cycle-level workgroup dispatcher of seed 002 (embodiments 1, 2, 3, 8, 9, 10 around the
free-block circuits of embodiments 4-7 and the exact one) and its baselines: the loop that
runs the stages of one dispatcher clock per cycle. RTL twin: :mod:`hw.dispatch.dispatcher`
(the top level that wires the same stages).

The stages, each a module named as its RTL twin in :mod:`hw.dispatch`:
:mod:`~model.dispatch.queues` (admission, FIFOs, embodiment 3),
:mod:`~model.dispatch.views` (the free-block view of cycle ``t - L``),
:mod:`~model.dispatch.matcher` (embodiments 1 and 8),
:mod:`~model.dispatch.selector` (embodiments 1, 2, 9, 10; the baselines' rules in
:mod:`~model.dispatch.baselines`), :mod:`~model.dispatch.allocator` (first fit, stale
abort), :mod:`~model.dispatch.resources` (status, slots, records, power history) and
:mod:`~model.dispatch.pipeline` (the decision of a cycle, in one clock or pipelined); with
:mod:`~model.dispatch.execution` (how long a WG runs), :mod:`~model.dispatch.metrics` (the
result and the event log) and :mod:`~model.dispatch.checks` (the invariants).

Timing (one dispatcher clock per cycle; the README has the diagram). In cycle ``t``:

1. **Release.** Every WG whose last running cycle was ``t - 1`` gives back what it took: its
   blocks are free in the status registers of cycle ``t``, its wave slots are counted free.
2. **Arrival.** WGs whose arrival cycle is ``t`` enter their channel's FIFO (admission check
   first: a WG that cannot fit an empty AP, as the policy's circuit sees it, is rejected).
3. **Free-block view.** The matcher sees, per contiguous resource, the circuit's length for the
   status registers of cycle ``t - L`` (``L`` = ``circuit_latency``; registers before cycle 0
   hold the all-free reset state of an idle GPU). Counted resources are read as they are.
4. **Match** every channel's head against every AP (embodiment 1 / 8 split per PEU), **select**
   the target WG (priority with embodiment 2's windows, the a42 tie-break with a 16-bit LFSR)
   and the target AP (round-robin, embodiment 9, 10 or both, on integer scores), **allocate**
   each contiguous need at the lowest address where it fits in the *current* status (the
   exact circuit's ``fit_start``, :func:`model.maxblock.first_fit`) plus the counted slots.
   When the current status cannot hold it (only possible with ``L > 0``: the view was
   stale), nothing is dispatched this cycle (a *stale abort*) and no selection state changes.
5. **Embodiment 3.** ``g`` counts consecutive cycles in which a head waited at step 4 and none
   matched; a cycle in which a head matched, or none waited, sets ``g = 0``. When ``g``
   exceeds the threshold, every independent head WG is replaced by one sub-WG per wave at the
   lowest priority (the sub-WGs are the channel's next heads from cycle ``t + 1``) and
   ``g = 0``, also when no head could be split.

A WG dispatched in cycle ``t`` with duration ``d`` runs in cycles ``t + 1 .. t + d`` and its
resources are free again in cycle ``t + d + 1``. At most one WG is dispatched per cycle.

Every score that decides a placement is an integer with a width stated by
:func:`score_widths` (embodiment 9's ``a_h``, embodiment 10's power in 1/256 weighted
instructions, the combined score by cross-multiplication), so an RTL dispatcher can match
the model bit for bit; the metrics are computed from those integers.

Cycles in which nothing can change (no dispatch, and no release, arrival, free-block view
update or split before the next event) are skipped in one step; everything that would have
advanced in them (``g``, the time integrals, the power history, every sample of the series
and of the imbalance metrics) is advanced exactly, so skipping changes no output (a test
compares the whole result, series included, with skipping on and off on random configs).
A split attempt that can split no head does not end a skip (``g`` wraps), and the decision
pipeline is skipped when nothing is in flight and its registered match offers no candidate
that fits (:meth:`~model.dispatch.pipeline.DecisionPipeline.skip` advances its score ring).

Back-pressure (``dispatch_ready``, the RTL's ``dispatch.ready``): the decision of cycle ``t``
is presented on the dispatch-out port from cycle ``t + 1`` until taken. A cycle in which a
decision is presented and not taken is *held*: steps 4 and 5 do nothing (no dispatch, no
stale abort, no split; the selection state, the pipeline's stages and ``g`` keep their
values), while steps 1-3, embodiment 2's window position and the power history go on (they
count time; a pipelined decision's score ring goes on too). The held cycles are listed in
``held_cycles``. Without ``dispatch_ready`` the port is always ready (nothing is held).

``events`` (a list) receives one row per event for the event log (:func:`write_events`);
an object with a ``record`` method (a :class:`~model.dispatch.launches.LaunchTally`) is told
each event instead, and no row is made.
"""

import heapq
import os
from bisect import bisect_left
from itertools import islice, pairwise
from operator import attrgetter, le

import numpy as np

from model.checks import InvariantError
from model.config import ConfigError
from model.dispatch.allocator import Allocator
from model.dispatch.baselines import matcher_for, selector_for
from model.dispatch.checks import check_all, reporter
from model.dispatch.config import (
    EXECUTIONS,
    INSTRUCTION_CLASSES,
    MIX_FRACTION_BITS,
    ChannelConfig,
    GpuConfig,
    LaunchWorkload,
    PolicyConfig,
    WorkGroup,
    arrival_of,
    check_policy,
    quantised_mix,
)
from model.dispatch.execution import execution_for
from model.dispatch.matcher import split_table
from model.dispatch.metrics import (
    EVENT_KINDS,
    Counters,
    Metrics,
    event_columns,
    event_recorder,
    write_events,
)
from model.dispatch.pipeline import DecisionPipeline, OneCycleDecision
from model.dispatch.queues import Queues
from model.dispatch.resources import Allocation, Resources
from model.dispatch.selector import Lfsr, score_widths
from model.dispatch.views import View, circuit_function

__all__ = ["ENGINES", "EVENT_KINDS", "InvariantError", "Lfsr", "DispatchSimulator",
           "chosen_engine", "circuit_function", "event_columns", "score_widths", "simulate",
           "split_table", "write_events"]


class DispatchSimulator:
    """One policy on one workload, cycle by cycle (see the module docstring for the timing).

    Parameters
    ----------
    gpu : GpuConfig
    policy : PolicyConfig
    workload : sequence of WorkGroup
        Submitted WGs in arrival order: a list, or a
        :class:`~model.dispatch.config.LaunchWorkload` that makes them when read (copied; the
        caller's objects are not changed). WGs arriving at or after ``cycles`` are not
        submitted; the results count them (``workgroups_after_end``).
    channels : sequence of ChannelConfig
        For the channels' instruction mixes; channel ``i`` of the workload uses
        ``channels[i]`` (default mix when absent).
    cycles : int
        Cycle limit; the run stops earlier when every WG has completed.
    debug : bool
        Check every invariant every processed cycle (tests always do).
    strict : bool
        Raise :class:`InvariantError` at the first violation instead of counting it.
    skip : bool
        Skip quiet cycles (``False`` runs every cycle; the results are identical).
    sample_interval : int
        Cycles between the samples behind the time series, fragmentation and imbalance.
    power_window : int
        Sliding window, in cycles, of the ``ap_imbalance.power`` metric (the same for every
        policy).
    events : list or LaunchTally, optional
        Receives the event log's rows (see :func:`write_events`), or is told each event
        (:func:`~model.dispatch.metrics.event_recorder`).
    observer : callable, optional
        Called as ``observer(cycle, simulator)`` in every evaluated cycle after step 3 (the
        free-block view), before the dispatch: for tests that watch or disturb the state.
    progress : callable, optional
        ``progress(cycle)``, now and then during the run (a progress bar): every evaluated
        cycle on the Python engine, about 64 times a run on the compiled one, which stops there
        on Ctrl-C.
    dispatch_ready : callable, optional
        ``dispatch_ready(cycle)``: whether the consumer takes a presented decision in
        ``cycle`` (back-pressure, see the module docstring; turns ``skip`` off). ``None``:
        always.
    engine : str, optional
        ``"compiled"`` (:mod:`model.dispatch.core`, the C++ twin of this loop) or
        ``"python"`` (this class). ``None``: the ``GPUSCHED_ENGINE`` environment variable,
        else ``"compiled"``. A run the compiled engine does not take yet, or where it was not
        built, runs here; ``engine_used`` says which ran and ``engine_note`` why not the
        compiled one. Both give the same result and event log (tests/test_core_engine.py).
    keep : bool
        Keep a copy of every submitted WG as ``workload`` (what tests and the co-simulation
        read back: ``dispatched``, ``completed``, ``ap``). ``False``: each WG is copied when
        it arrives and dropped when it completes, so memory grows with the WGs in flight and
        a few integers per WG, not with whole WG objects; the results are the same.

    The stages are attributes: ``views``, ``resources``, ``queues``, ``matcher``,
    ``selector``, ``allocator``, ``decision`` (a one-clock decision, or the ``pipeline``,
    else ``None``), ``execution_model``, ``metrics``. The state observers read most is also
    named here: ``view`` and ``circuit`` (the view's), ``bits``, ``size``, ``history``,
    ``ema`` (the resource table's), ``channels`` and ``parents`` (the queues'), ``table``
    (the matcher's split table), ``completions``, ``waits``, ``counters``; and as arrays
    ``slots``, ``pointer``, ``peu_waves``.
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig, workload, *, channels=(),
                 cycles: int = 20000, debug: bool = False, strict: bool = False,
                 skip: bool = True, sample_interval: int = 64, power_window: int = 1024,
                 events=None, observer=None, execution: str = "fixed",
                 warmup: int = 0, dispatch_ready=None, keep: bool = True,
                 engine: str | None = None, progress=None):
        check_policy(policy, gpu)
        self.engine = chosen_engine(engine)
        self.engine_used: str | None = None
        self.engine_note: str | None = None
        if execution not in EXECUTIONS:
            raise ValueError(f"execution must be one of {', '.join(EXECUTIONS)}, not "
                             f"{execution!r}")
        if not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"warmup must be a non-negative integer, not {warmup!r}")
        self.execution, self.warmup = execution, warmup
        self.gpu, self.policy = gpu, policy
        self.keep = keep
        self.cycles_limit = cycles
        self.debug, self.skip = debug, skip and dispatch_ready is None
        self.dispatch_ready = dispatch_ready
        self.held_cycles: list[int] = []
        self.events = events
        self.observer = observer
        self.progress = progress
        # The WGs arriving before the limit: a prefix, as the workload is in arrival order
        # (a LaunchWorkload is by construction).
        if not isinstance(workload, LaunchWorkload):
            arrivals = list(map(attrgetter("arrival"), workload))
            if not all(map(le, arrivals, islice(arrivals, 1, None))):
                for before, after in pairwise(workload):
                    if after.arrival < before.arrival:
                        raise ValueError(f"workload must be in arrival order: WG {after.id} "
                                         f"arrives in cycle {after.arrival}, after WG "
                                         f"{before.id} in cycle {before.arrival}")
        self.source = workload
        self.submitted = bisect_left(workload, cycles, key=arrival_of)
        self.after_end = len(workload) - self.submitted
        # With ``keep``, copies of them all (``workload``, for tests and the co-simulation);
        # without, each WG is copied as it arrives and dropped when it has completed.
        self.workload = list(self._arrivals()) if keep else None
        self.live: dict[int, WorkGroup] = {}    # arrived, admitted, not completed, by id
        self.P, self.Q = gpu.aps, gpu.peus
        used = getattr(workload, "channel_count", None)
        if used is None:
            used = max(map(attrgetter("channel"), workload), default=-1) + 1
        channel_count = max(len(channels), used)
        self.channel_count = channel_count
        mixes = [channels[i].mix if i < len(channels) else ChannelConfig().mix
                 for i in range(channel_count)]
        # Embodiment 10: one wave's weighted instructions per cycle, in 1/256 (integer).
        quantised = [quantised_mix(mix) for mix in mixes]
        for index, q in enumerate(quantised):
            if sum(q) > 1 << MIX_FRACTION_BITS or min(q, default=0) < 0:
                raise ConfigError(f"channels[{index}].mix must be non-negative and add up to at "
                                  f"most 1 instruction per cycle per wave, not "
                                  f"{list(mixes[index])}")
        self.wave_power = [sum(b * q for b, q in zip(gpu.instruction_weights, mix, strict=True))
                           for mix in quantised]
        assert len(INSTRUCTION_CLASSES) == len(gpu.instruction_weights)
        self.widths = score_widths(gpu, policy)

        # The stages, in the order their state depends on each other.
        self.counters = Counters()
        self.violation = reporter(self.counters.violations, strict)
        self._strict = strict
        self.event = event = event_recorder(events)
        self.views = View(gpu, policy)
        self.resources = Resources(gpu, policy, self.views, self.violation, power_window)
        self.queues = Queues(gpu, policy, self.views, channel_count, len(workload), event,
                             self.counters, self.violation)
        self.matcher = matcher_for(gpu, policy, self.views, self.resources, self.queues)
        self.selector = selector_for(gpu, policy, self.queues, self.matcher, self.resources,
                                     self.views)
        self.allocator = Allocator(gpu, policy, self.resources, self.matcher, self.wave_power)
        self.execution_model = execution_for(execution, gpu, self.resources.running,
                                             pooled=policy.units == "ap_range")
        self.metrics = Metrics(gpu, self.resources, self.counters, sample_interval,
                               power_window)
        if policy.decision_pipeline:
            # The decision pipeline (k >= 2): every cycle is a step of it.
            self.pipeline = DecisionPipeline(policy, self.queues, self.matcher, self.selector,
                                             self.allocator, self.resources, self.counters,
                                             event, self.violation, self.commit)
            self.queues.flight = self.pipeline.flight
            self.decision = self.pipeline
        elif hasattr(self.selector, "bind"):
            # A faithful baseline decides on its own clock (model.dispatch.miaow, gpgpusim,
            # gem5): one WG per decision of its length, or several WGs a cycle.
            self.pipeline = None
            self.decision = self.selector.bind(self)
        else:
            self.pipeline = None
            self.decision = OneCycleDecision(self.queues, self.matcher, self.selector,
                                             self.allocator, self.counters, event, self.commit)

        # The state observers and tests read, by its old names.
        self.view, self.circuit = self.views.view, self.views.circuit
        self.bits, self.size = self.resources.bits, self.resources.size
        self.history, self.ema = self.resources.history, self.resources.ema
        self.channels, self.parents = self.queues.channels, self.queues.parents
        self.table = self.matcher.table
        self.completions = self.execution_model.completions

    # -- views of the state as arrays (tests, results) ------------------------------------------

    @property
    def slots(self) -> np.ndarray:
        """Free wave slots, ``(P, Q)``."""
        return np.array(self.resources.slots, dtype=np.int64)

    @property
    def waits(self) -> list[tuple[int, int, int]]:
        """``(priority, channel, wait)`` of every WG dispatched so far (:class:`Metrics`)."""
        return self.metrics.waits

    @property
    def pointer(self) -> np.ndarray:
        """Embodiment 8's rotating pointer of every AP."""
        return np.array(self.matcher.pointer, dtype=np.int64)

    @property
    def peu_waves(self) -> np.ndarray:
        """Waves each PEU has received, ``(P, Q)``."""
        return np.array(self.metrics.peu_waves, dtype=np.int64)

    # -- a dispatch and a release ----------------------------------------------------------------

    def commit(self, wg: WorkGroup, channel: int, ap: int, allocation: Allocation,
               cycle: int) -> None:
        """Step 5 after the allocation: the WG leaves its queue (or the buffer), the pointers
        move, the WG runs."""
        matcher, selector = self.matcher, self.selector
        entry = matcher.masks.pop(wg.id, None)
        queue = selector.take(channel)
        matcher.inherit(entry, wg, queue)
        if self.pipeline is None:           # the pipeline moves them when the AP is chosen
            selector.advance(channel, ap)
        matcher.chosen(ap, wg.waves)
        received = self.metrics.peu_waves[ap]
        for q, count in enumerate(allocation.waves):
            received[q] += count
        self.resources.change_power(ap, cycle + 1, allocation.power)
        wg.dispatched, wg.ap = cycle, ap
        self.event(cycle, "dispatch", wg, ap, allocation.waves, allocation)
        self.queues.dispatched(wg, cycle, self.metrics.add_wait)
        self.resources.running[wg.id] = allocation
        self.execution_model.start(allocation, cycle)

    def release(self, allocation: Allocation, cycle: int) -> None:
        """Step 1 for one WG (or part) whose last running cycle was ``cycle - 1``."""
        wg, ap = allocation.wg, allocation.ap
        resources = self.resources
        resources.give_back(allocation, cycle, cycle + self.policy.circuit_latency)
        self.matcher.released(allocation)
        resources.change_power(ap, cycle, -allocation.power)
        self.event(cycle, "release", wg, ap, allocation.waves, allocation)
        if wg.completed is not None:
            self.violation(f"cycle {cycle}: WG {wg.id} completed twice")
        if resources.running.pop(wg.id, None) is None:
            self.violation(f"cycle {cycle}: WG {wg.id} released but not running")
        self.queues.inflight[wg.channel] -= 1
        if wg.dispatched is None:
            self.violation(f"cycle {cycle}: WG {wg.id} completed without being dispatched")
        wg.completed = cycle - 1
        metrics = self.metrics
        metrics.runs.append(cycle - 1 - wg.dispatched)
        if wg.parent is None:
            metrics.completed += 1
            metrics.add_finished(wg.arrival, cycle)
            self.live.pop(wg.id, None)
        else:
            parent = self.queues.parents[wg.parent]
            parent.completed += 1
            if parent.completed == parent.parts:
                if parent.wg.dispatched is not None:
                    self.violation(f"cycle {cycle}: WG {parent.wg.id} was dispatched whole "
                                   f"and split")
                parent.wg.completed = cycle - 1
                metrics.completed += 1
                metrics.add_finished(parent.wg.arrival, cycle)
                self.live.pop(parent.wg.id, None)

    def _arrivals(self):
        """The submitted WGs as this run's own objects, in arrival order: a
        :class:`~model.dispatch.config.LaunchWorkload` makes fresh ones when read, a list's
        are copied."""
        submitted = islice(self.source, self.submitted)
        if isinstance(self.source, LaunchWorkload):
            return submitted
        return (wg.submitted() for wg in submitted)

    # -- the run ---------------------------------------------------------------------------------

    def run(self) -> dict:
        """Simulate until every WG has completed or the cycle limit; return the metrics (on
        the compiled engine when it takes the run, see ``engine``)."""
        if self.engine == "compiled":
            from model.dispatch.core.engine import run as compiled_run
            from model.dispatch.core.engine import unsupported

            # With back-pressure's length; a shared-issue run whose counters could pass 64
            # bits is refused by the compiled run itself, before it changes anything: both
            # fall back here.
            self.engine_note = unsupported(
                self.policy, execution=self.execution, events=self.events, debug=self.debug,
                strict=self._strict, observer=self.observer,
                dispatch_ready=self.dispatch_ready, keep=self.keep,
                cycles=self.cycles_limit)
            if self.engine_note is None:
                try:
                    result = compiled_run(self, self.events)
                except OverflowError as error:
                    self.engine_note = f"not compiled yet: {error}"
                else:
                    self.engine_used = "compiled"
                    return result
        self.engine_used = "python"
        return self._run()

    def _run(self) -> dict:
        arriving = iter(self.workload) if self.workload is not None else self._arrivals()
        upcoming = next(arriving, None)     # the next WG to arrive
        live = self.live
        cycle = 0
        finished_at = None
        limit = self.cycles_limit
        queues, views, selector = self.queues, self.views, self.selector
        resources, metrics, execution = self.resources, self.metrics, self.execution_model
        splitting, threshold = queues.splitting, queues.threshold
        masks = self.matcher.masks
        mark = self.matcher.mark
        # 0: no limit (the count never reaches -1); k: at most k releases a cycle, the rest
        # wait in (due cycle, id) order and are overdue, so the next cycle is evaluated.
        release_limit = self.policy.release_limit or -1
        completions, pending, channels = execution.completions, views.pending, queues.channels
        release, admit, show = self.release, queues.admit, views.show
        step = self.decision.step
        wake = getattr(self.decision, "wake", None)
        counters = self.counters
        integral, held = metrics.used_integral, resources.held_total
        total_slots = self.P * self.Q * self.gpu.wave_slots
        interval = metrics.sample_interval
        sample, accumulate = metrics.sample, metrics.accumulate
        next_sample = 0                 # the first sample cycle not yet recorded
        shared, drain = execution.shared, self.gpu.drain
        running = resources.running
        observer, debug, skip = self.observer, self.debug, self.skip
        if observer is None and self.progress is not None:
            progress = self.progress

            def observer(cycle, _):
                progress(cycle)
        pipeline = self.pipeline
        ready = self.dispatch_ready
        hold = getattr(self.decision, "hold", None)
        presented = dispatched_last = False
        while cycle < limit:
            if shared:
                # Finishes before this cycle are final: no dispatch from now on changes them.
                execution.finish_until(cycle - 1)
            released = 0                                                    # step 1
            while completions and completions[0][0] <= cycle and released != release_limit:
                release(heapq.heappop(completions)[2], cycle)
                released += 1
            while upcoming is not None and upcoming.arrival == cycle:       # step 2
                wg, upcoming = upcoming, next(arriving, None)
                if admit(wg, cycle):
                    channels[wg.channel].append(wg)
                    live[wg.id] = wg
            if pending and pending[0][0] <= cycle:                          # step 3
                changed = show(cycle)
                if changed:
                    mark(changed)
            if observer is not None:
                observer(cycle, self)
            if debug:
                check_all(self, cycle)
            integral["vgpr"] += held["vgpr"]
            integral["sgpr"] += held["sgpr"]
            integral["lds"] += held["lds"]
            integral["wave_slots"] += total_slots - resources.slots_free
            holding = False
            if ready is not None:
                # Back-pressure: the decision presented in this cycle is not taken.
                presented = presented and not ready(cycle - 1) or dispatched_last
                holding = presented and not ready(cycle)
            if holding:
                self.held_cycles.append(cycle)
                if hold is not None:
                    hold(cycle)
                dispatched, aborted, matched, waiting = False, False, None, False
            else:
                dispatched, aborted, matched, waiting = step(cycle)         # step 4
            dispatched_last = dispatched
            counters.processed_cycles += 1
            counters.dispatch_cycles += dispatched
            split_now = False
            if splitting and matched is not None:                           # step 5
                split_now = queues.count_fail(matched, waiting, cycle, masks)
            has_heads = selector.buffer is not None or any(channels)
            idle = not (dispatched or aborted or split_now)
            following = cycle + 1
            if idle and skip and (pipeline is None or matched is not None
                                  and pipeline.idle_until(waiting)):
                following = limit
                if upcoming is not None and upcoming.arrival < following:
                    following = upcoming.arrival
                if completions and completions[0][0] < following:
                    following = completions[0][0]
                if pending and pending[0][0] < following:
                    following = pending[0][0]
                if wake is not None:                # a baseline's own clock (its next step)
                    woken = wake(cycle)
                    if woken is not None and woken < following:
                        following = woken
                counting = splitting and waiting and not matched
                # The next split attempt bounds the skip, unless no head can be split: then
                # every attempt before the next event only sets g back to 0 (below).
                if (counting and cycle + threshold + 1 - queues.g < following
                        and queues.splittable()):
                    following = cycle + threshold + 1 - queues.g
                if shared:
                    # Nothing is dispatched before `following`, so every wave-group finish
                    # before it is final: process those whose release would come first.
                    finish = execution.next_finish()
                    while finish is not None and finish + drain + 1 < following:
                        execution.finish_until(finish)
                        if completions and completions[0][0] < following:
                            following = completions[0][0]
                        finish = execution.next_finish()
                following = max(cycle + 1, following)
                if pipeline is not None and following > cycle + 1:
                    pipeline.skip(cycle, following)
                if counting:
                    # One more a cycle, back to 0 at each attempt (past the threshold).
                    queues.g = (queues.g + following - cycle - 1) % (threshold + 1)
            if upcoming is None and not running and not has_heads:
                finished_at = cycle         # cycles 0 .. cycle - 1 held work
                sample(cycle, cycle + 1)
                # Back-pressure: the last decision may still be presented; the cycles to the
                # limit in which it is not taken are held too (nothing else happens in them).
                later = cycle + 1
                while ready is not None and later < limit:
                    presented = presented and not ready(later - 1) or dispatched_last
                    dispatched_last = False
                    if not (presented and not ready(later)):
                        break
                    self.held_cycles.append(later)
                    later += 1
                break
            end = following if following < limit else limit
            if next_sample < end:
                sample(cycle, end)
                next_sample = -(-end // interval) * interval
            accumulate(end - cycle - 1)
            cycle = following
        return metrics.results(self, finished_at if finished_at is not None
                               else min(cycle, limit))


#: The model's two implementations of this loop (``DispatchSimulator(engine=...)``).
ENGINES = ("compiled", "python")


def chosen_engine(engine: str | None) -> str:
    """``engine``, or ``GPUSCHED_ENGINE``'s value, or ``"compiled"``; checked."""
    if engine is None:
        engine = os.environ.get("GPUSCHED_ENGINE") or "compiled"
    if engine not in ENGINES:
        raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}"
                          + (" (GPUSCHED_ENGINE)" if engine == os.environ.get("GPUSCHED_ENGINE")
                             else ""))
    return engine


def simulate(gpu: GpuConfig, policy: PolicyConfig, workload, *, cycles: int, warmup: int,
             execution: str, channels, **options) -> dict:
    """Run one policy on one workload; the other keyword options as
    :class:`DispatchSimulator`. The cycle limit, warm-up, execution model and channels are
    required (a scenario's own are ``scenario.cycles``, ``scenario.warmup``,
    ``scenario.execution`` and ``scenario.channels``): no default that differs from a
    scenario's."""
    return DispatchSimulator(gpu, policy, workload, cycles=cycles, warmup=warmup,
                             execution=execution, channels=channels, **options).run()
