"""The cycle-level workgroup dispatcher of seed 002 (embodiments 1, 2, 3, 8, 9, 10 around the
free-block circuits of embodiments 4-6 and the exact one) and its baselines.

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

``events`` (a list) receives one row per event for the event log (:func:`write_events`).
"""

import csv
import heapq
import math
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.checks import InvariantError
from model.config import ConfigError
from model.dispatch.config import (
    EXECUTIONS,
    INSTRUCTION_CLASSES,
    MIX_FRACTION_BITS,
    ChannelConfig,
    GpuConfig,
    PolicyConfig,
    WorkGroup,
    check_policy,
    quantised_mix,
    shared_schedule,
)
from model.maxblock import (
    default_samples,
    first_fit_unchecked,
    grouped_run_unchecked,
    longest_run_unchecked,
)
from model.stats import coefficient_of_variation, summary

__all__ = ["EVENT_KINDS", "InvariantError", "Lfsr", "DispatchSimulator", "circuit_function",
           "event_columns", "score_widths", "simulate", "split_table", "write_events"]

#: The kinds of event in the event log, in the order they can happen within one cycle.
EVENT_KINDS = ("release", "arrive", "reject", "dispatch", "stale-abort", "split")


class Lfsr:
    """16-bit Galois LFSR, polynomial x^16 + x^14 + x^13 + x^11 + 1 (taps 0xB400).

    :meth:`pick` advances one step and returns ``state % count``: the tie-break's random
    choice among ``count`` channels (channel order). It advances only when a choice among
    two or more is made, so an RTL tie-break steps it on the same clocks.
    """

    TAPS = 0xB400

    def __init__(self, seed: int):
        if not 1 <= seed <= 0xFFFF:
            raise ValueError(f"LFSR seed must be in 1..65535, not {seed!r}")
        self.state = seed

    def step(self) -> int:
        lsb = self.state & 1
        self.state >>= 1
        if lsb:
            self.state ^= self.TAPS
        return self.state

    def pick(self, count: int) -> int:
        return self.step() % count


def split_table(peus: int, max_waves: int) -> np.ndarray:
    """Embodiment 8's split table (steps h101-h103): row ``wx`` gives PEU ``t`` the wave count
    ``wx // Q + (1 if t < wx % Q else 0)``. Shape ``(max_waves + 1, peus)``."""
    table = np.zeros((max_waves + 1, peus), dtype=np.int64)
    for waves in range(max_waves + 1):
        quotient, remainder = divmod(waves, peus)
        table[waves] = [quotient + (1 if t < remainder else 0) for t in range(peus)]
    return table


def circuit_function(policy: PolicyConfig, n: int):
    """The free-block length the policy's circuit reports for an ``n``-block status word
    (1 = free): a function of the status word, memoised. It computes what
    :mod:`model.maxblock`'s ``max_free_run``, ``grouped_max_free_run`` and
    ``sampled_max_free_run`` do, through their unchecked fast paths (the words come from the
    simulator's own registers; a test holds the two equal)."""
    if policy.circuit in ("exact", "full", "shared"):
        length = longest_run_unchecked
    elif policy.circuit == "grouped":
        groups = n // policy.group_size

        def length(bits):
            return grouped_run_unchecked(bits, n, groups)
    else:
        lengths = sorted(k + 1 for k in default_samples(n))

        def length(bits):
            # The largest sampled length k + 1 that the exact length reaches (0 if none).
            index = bisect_right(lengths, longest_run_unchecked(bits))
            return lengths[index - 1] if index else 0
    return _memoised(length)


class _Memo:
    """A function of a status word with a memo of its results (cleared past 65,536 words):
    callable, and its ``cache`` read directly by the simulator's inner loop."""

    __slots__ = ("cache", "function")

    def __init__(self, function):
        self.function = function
        self.cache: dict[int, int] = {}

    def __call__(self, bits: int) -> int:
        value = self.cache.get(bits)
        if value is None:
            value = self.compute(bits)
        return value

    def compute(self, bits: int) -> int:
        if len(self.cache) > 1 << 16:
            self.cache.clear()
        value = self.cache[bits] = self.function(bits)
        return value


def _memoised(function) -> _Memo:
    return _Memo(function)


def score_widths(gpu: GpuConfig, policy: PolicyConfig) -> dict:
    """The unsigned bit widths of the integers that decide an AP, for ``gpu`` and ``policy``
    (what an RTL dispatcher's registers need; a test checks that no value exceeds them):

    ``resource_weight`` (each ``a_h``) and ``resource_score`` (embodiment 9's
    ``sum a_h r_h``, at most ``sum a_h C_h``); ``wave_power`` (one wave's weighted
    instructions per cycle, ``sum b_s q_s`` with the mix ``q_s`` in 1/256 and at most 256 in
    all), ``ap_power`` (an AP's per cycle, at most ``peus x wave_slots`` waves),
    ``history`` (embodiment 10's window sum or exponential average, at most ``Nx`` times
    the AP power); ``combined`` (``w_r R max(Bmax, 1) - w_i B max(Rmax, 1)``, plus a sign
    bit).
    """
    weights = gpu.resource_weight_values()
    resource_score = sum(a * c for a, c in zip(weights, gpu.ap_capacities(), strict=True))
    wave_power = max(gpu.instruction_weights) << MIX_FRACTION_BITS
    ap_power = wave_power * gpu.peus * gpu.wave_slots
    history = ap_power * policy.history_cycles + (policy.history_cycles - 1)
    combined = max(policy.resource_weight * resource_score * max(history, 1),
                   policy.instruction_weight * history * max(resource_score, 1))
    return {"resource_weight": max(max(weights).bit_length(), 1),
            "resource_score": max(resource_score.bit_length(), 1),
            "wave_power": max(wave_power.bit_length(), 1),
            "ap_power": max(ap_power.bit_length(), 1),
            "history": max(history.bit_length(), 1),
            "combined": max(combined.bit_length(), 1) + 1}


class _SharedPending:
    """The view updates of embodiment 7's shared units, in the order they become visible.

    A status change that the view would show in cycle ``v`` (the status ``circuit_latency``
    cycles late) is read by the AP's unit at the first clock ``s >= v`` of its resource's
    period (``s mod C``) and shown from ``s + 1``. Periods differ between resources, so the
    updates are kept in a heap by visible cycle (then push order, so the last change of a
    status word read at a clock wins), with the deque interface the simulator uses."""

    __slots__ = ("count", "heap", "period", "periods")

    def __init__(self, schedule, peus: int):
        self.heap: list = []
        self.count = 0
        self.periods = len(schedule.periods)
        at = {name: index for index, types in enumerate(schedule.periods)
              for name, _ in types}
        self.period = {"vgpr": [at[f"vgpr{q}"] for q in range(peus)],
                       "sgpr": [at[f"sgpr{q}"] for q in range(peus)], "lds": [at["lds"]]}

    def append(self, item) -> None:
        visible, name, index, length = item
        periods = self.period[name]
        period = periods[index % len(periods)]
        shown = visible + (period - visible) % self.periods + 1
        heapq.heappush(self.heap, (shown, self.count, (shown, name, index, length)))
        self.count += 1

    def popleft(self):
        return heapq.heappop(self.heap)[2]

    def __getitem__(self, index):
        if index != 0:
            raise IndexError("only the first pending update can be read")
        return self.heap[0][2]

    def __bool__(self) -> bool:
        return bool(self.heap)

    def __len__(self) -> int:
        return len(self.heap)


@dataclass(slots=True)
class _Allocation:
    wg: WorkGroup
    ap: int
    waves: tuple                       # per PEU
    vgpr: list                         # per PEU: (start, length) or None
    sgpr: list
    lds: tuple | None
    power: int                         # instruction power per cycle of the whole WG


@dataclass
class _Decision:
    """A WG chosen by the decision pipeline and not yet dispatched."""
    wg: WorkGroup
    channel: int
    ap: int
    waves: tuple                       # per PEU, from the pointer the match saw
    chosen: int                        # the cycle of the choice
    plan: tuple | None = None          # the first fit, in the cycle after the choice


@dataclass
class _Match:
    """The pipeline's match stage of one cycle: per channel, its first two WGs not already
    chosen with the APs each fits (``None`` where the queue had no such WG), and every AP's
    embodiment 9 and 10 scores and pointer as they were."""
    rows: list
    scores: tuple
    pointers: list


@dataclass
class _Parent:
    wg: WorkGroup
    parts: int
    dispatched: int = 0
    completed: int = 0


@dataclass
class _Counters:
    stale_aborts: int = 0
    flushed: int = 0                   # WGs chosen behind a stale abort, chosen again later
    splits: int = 0
    sub_workgroups: int = 0
    dispatch_cycles: int = 0
    processed_cycles: int = 0
    violations: list = field(default_factory=list)


class _History:
    """One AP's executed instruction energy as a piecewise-linear function of the cycle:
    exact integer sums of the per-cycle power over any window."""

    __slots__ = ("energies", "rates", "times")

    def __init__(self):
        self.times, self.energies, self.rates = [0], [0], [0]

    def energy(self, cycle: int) -> int:
        """Instruction energy executed in cycles before ``cycle``."""
        times = self.times
        position = bisect_right(times, cycle) - 1
        return self.energies[position] + self.rates[position] * (cycle - times[position])

    def change(self, cycle: int, delta: int, keep: int) -> None:
        """The power changes by ``delta`` from cycle ``cycle`` on; entries older than
        ``cycle - keep`` may be forgotten."""
        times, energies, rates = self.times, self.energies, self.rates
        if times[-1] == cycle:
            rates[-1] += delta
        else:
            energies.append(self.energy(cycle))
            times.append(cycle)
            rates.append(rates[-1] + delta)
        if len(times) > 64 and times[32] < cycle - keep:
            del times[:32], energies[:32], rates[:32]

    def window(self, cycle: int, length: int) -> int:
        """Energy executed in cycles ``max(0, cycle - length) .. cycle - 1``."""
        times = self.times
        last = times[-1]
        if cycle >= last:               # the usual case: the current segment, no search
            end = self.energies[-1] + self.rates[-1] * (cycle - last)
        else:
            end = self.energy(cycle)
        start = cycle - length
        return end - self.energy(start) if start > 0 else end


class DispatchSimulator:
    """One policy on one workload, cycle by cycle (see the module docstring for the timing).

    Parameters
    ----------
    gpu : GpuConfig
    policy : PolicyConfig
    workload : list of WorkGroup
        Submitted WGs in arrival order (copied; the caller's objects are not changed). WGs
        arriving at or after ``cycles`` are not submitted; the results count them
        (``workgroups_after_end``).
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
    events : list, optional
        Receives the event log's rows (see :func:`write_events`).
    observer : callable, optional
        Called as ``observer(cycle, simulator)`` in every evaluated cycle after step 3 (the
        free-block view), before the dispatch: for tests that watch or disturb the state.

    Speed, without changing a result: the state is kept in Python lists with running totals
    (held blocks, free slots, each AP's summed view) instead of per-cycle numpy sums; each
    head WG keeps a mask of the APs it fits and re-tests only the APs whose view, slots or
    rotation pointer changed since (``_mask``); the free-block lengths come from
    :mod:`model.maxblock`'s unchecked fast paths, memoised per status word.
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig, workload, *, channels=(),
                 cycles: int = 20000, debug: bool = False, strict: bool = False,
                 skip: bool = True, sample_interval: int = 64, power_window: int = 1024,
                 events: list | None = None, observer=None, execution: str = "fixed",
                 warmup: int = 0):
        check_policy(policy, gpu)
        if execution not in EXECUTIONS:
            raise ValueError(f"execution must be one of {', '.join(EXECUTIONS)}, not "
                             f"{execution!r}")
        if not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"warmup must be a non-negative integer, not {warmup!r}")
        self.execution, self.warmup = execution, warmup
        self.shared = execution == "shared"
        self.gpu, self.policy = gpu, policy
        self.cycles_limit = cycles
        self.debug, self.strict, self.skip = debug, strict, skip
        self.sample_interval = sample_interval
        self.power_window = power_window
        self.events = events
        self.observer = observer
        copies = [WorkGroup(**{k: v for k, v in vars(wg).items()
                               if k not in ("dispatched", "completed", "ap")})
                  for wg in workload]
        self.workload = [wg for wg in copies if wg.arrival < cycles]
        self.after_end = len(copies) - len(self.workload)
        P, Q = gpu.aps, gpu.peus
        self.P, self.Q = P, Q
        self.channel_count = max([len(channels)] + [wg.channel + 1 for wg in copies])
        mixes = [channels[i].mix if i < len(channels) else ChannelConfig().mix
                 for i in range(self.channel_count)]
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
        self.resource_weights = gpu.resource_weight_values()
        self.widths = score_widths(gpu, policy)

        # Status registers (1 = free), true lengths, the matcher's view, free and held counts.
        self.size = {"vgpr": gpu.vgpr, "sgpr": gpu.sgpr, "lds": gpu.lds}
        counts = {"vgpr": P * Q, "sgpr": P * Q, "lds": P}
        self.bits = {name: [(1 << n) - 1] * counts[name] for name, n in self.size.items()}
        self.circuit = {name: circuit_function(policy, n) for name, n in self.size.items()}
        # The true longest run (for fragmentation); the exact and full circuits report it
        # already, so they share one memo.
        self.longest = (self.circuit if policy.circuit in ("exact", "full", "shared") else
                        {name: _memoised(longest_run_unchecked) for name in self.size})
        self.view = {name: [self.circuit[name]((1 << n) - 1)] * counts[name]
                     for name, n in self.size.items()}
        self.largest = {name: [n] * counts[name] for name, n in self.size.items()}
        self.free = {name: [n] * counts[name] for name, n in self.size.items()}
        self.held = {name: [0] * counts[name] for name in self.size}
        self.held_total = dict.fromkeys(self.size, 0)
        # Each AP's view summed over its PEUs (embodiment 9's r for VGPR and SGPR).
        self.view_sum = {name: [Q * self.view[name][0]] * P for name in ("vgpr", "sgpr")}
        # Per resource, what a block change updates (``longest`` None: the circuit's length
        # is the true longest run).
        self._state = {name: (self.bits[name], self.held[name], self.largest[name],
                              self.free[name], self.circuit[name],
                              None if self.longest[name] is self.circuit[name]
                              else self.longest[name]) for name in self.size}
        self._slots = [[gpu.wave_slots] * Q for _ in range(P)]
        self.ap_slots = [Q * gpu.wave_slots] * P          # free wave slots per AP
        self.slots_free = P * Q * gpu.wave_slots
        # (visible cycle, resource, index, length), in visible order.
        self.pending = (deque() if policy.circuit != "shared"
                        else _SharedPending(shared_schedule(gpu, policy.shared_width), Q))

        # Admitted WGs have at most peus x wave_slots waves (larger ones are rejected).
        self.table = split_table(Q, Q * gpu.wave_slots)
        self._rows: dict[tuple[int, int], tuple[int, ...]] = {}
        self._pointer = [0] * P                       # embodiment 8, per AP
        self.lfsr = Lfsr(policy.lfsr_seed)
        self.selected = np.zeros((self.channel_count, gpu.priorities), dtype=bool)
        self.ap_pointer = 0
        self.channel_pointer = 0
        self.buffer: WorkGroup | None = None         # the MIAOW-like one-WG buffer
        self.g = 0
        # Per head WG (by id): [APs it fits (bit mask), APs changed since (bit mask)].
        self._masks: dict[int, list[int]] = {}

        # Embodiment 10: per AP, the power now (integer), the exact history (for the window
        # and the metric) and the exponential average (history = "ema"), advanced lazily.
        self.power = [0] * P
        self.history = [_History() for _ in range(P)]
        self.keep = 2 * max(policy.history_cycles, power_window)
        self.shift = policy.history_cycles.bit_length() - 1
        self.ema = [0] * P
        self.ema_time = 0

        self.channels = [deque() for _ in range(self.channel_count)]
        self.completions: list = []
        self.parents: dict[int, _Parent] = {}
        self.next_id = len(copies)
        self.last_dispatched = [-1] * self.channel_count
        self.rejected: list[dict] = []
        self.counters = _Counters()
        self._peu_waves = [[0] * Q for _ in range(P)]
        self.waits: list[tuple[int, int, int]] = []  # (priority, channel, wait)
        self.used_integral = {name: 0 for name in ("vgpr", "sgpr", "lds", "wave_slots")}
        self.samples = {"cycle": [], "utilisation": [], "fragmentation": [],
                        "ap_resource_cv": [], "ap_power_cv": []}
        self.completed = 0
        # Every dispatched WG (or part) not yet released, by id; per channel how many run
        # (for the in-order barrier); per submitted WG its arrival and release cycle.
        self.running: dict[int, _Allocation] = {}
        self._inflight = [0] * self.channel_count
        self._finished: list[tuple[int, int]] = []
        self._runs: list[int] = []
        self._wait_arrivals: list[int] = []
        self.least_loaded = policy.wave_placement == "least_loaded"
        # The decision pipeline (policy.decision_pipeline = k >= 2): WGs chosen and not yet
        # dispatched, oldest first; the match of the previous cycle; the channel chosen in the
        # previous cycle; cycles whose choice is cancelled after a stale abort.
        self.pipeline = policy.decision_pipeline
        self._flight: deque[_Decision] = deque()
        self._match: _Match | None = None
        self._chosen_last: int | None = None
        self._squash = 0
        self._scores: deque = deque()
        if self.pipeline:
            self.skip = False               # every cycle is a step of the pipeline
        if self.shared:
            self._init_shared()

    # -- the shared-issue execution model ------------------------------------------------------

    def _init_shared(self) -> None:
        """Per PEU: the issuing waves ``n``, the service ``V`` one continuously issuing wave
        has received (in 1/``unit`` wave-instructions) up to the start of cycle ``time``, and
        a heap of its issuing wave groups by finish tag ``F = V(start) + work x unit``;
        a heap of every PEU's next finishing cycle (stale entries skipped by a version)."""
        gpu = self.gpu
        # 1/unit wave-instructions: the least common multiple of 1..wave_slots, so that the
        # share issue_width / n of every possible n is a whole number of units.
        self.unit = math.lcm(*range(1, gpu.wave_slots + 1))
        width = gpu.issue_width
        self.rate = [0] + [self.unit if n <= width else width * self.unit // n
                           for n in range(1, gpu.wave_slots + 1)]
        count = self.P * self.Q
        self.issuing = [0] * count
        self.service = [0] * count
        self.service_time = [0] * count
        self.groups: list[list] = [[] for _ in range(count)]
        self._finish_heap: list[tuple[int, int, int]] = []
        self._finish_version = [0] * count
        self._groups_left: dict[int, int] = {}

    def _pop_finished(self, peu: int, cycle: int) -> None:
        """The PEU's wave groups whose work is issued by the end of ``cycle`` finished in it
        (every earlier finish was processed): they stop issuing from ``cycle + 1``; a WG whose
        last group it was is released ``drain + 1`` cycles later."""
        start = self.service_time[peu]
        if cycle + 1 > start:
            self.service[peu] += self.rate[self.issuing[peu]] * (cycle + 1 - start)
            self.service_time[peu] = cycle + 1
        groups, service = self.groups[peu], self.service[peu]
        while groups and groups[0][0] <= service:
            _, wg_id, count = heapq.heappop(groups)
            self.issuing[peu] -= count
            left = self._groups_left[wg_id] - 1
            if left:
                self._groups_left[wg_id] = left
            else:
                del self._groups_left[wg_id]
                heapq.heappush(self.completions, (cycle + self.gpu.drain + 1, wg_id,
                                                  self.running[wg_id]))

    def _schedule(self, peu: int) -> None:
        """Push the PEU's next finishing cycle: with ``n`` issuing waves each gets
        ``rate[n]`` units per cycle, so the smallest tag ``F`` is reached in cycle
        ``time - 1 + ceil((F - V) / rate[n])`` unless the PEU changes before."""
        self._finish_version[peu] += 1
        groups = self.groups[peu]
        if groups:
            rate = self.rate[self.issuing[peu]]
            finish = self.service_time[peu] - 1 - (self.service[peu] - groups[0][0]) // rate
            heapq.heappush(self._finish_heap, (finish, peu, self._finish_version[peu]))

    def _start(self, allocation: "_Allocation", cycle: int) -> None:
        """A WG dispatched in ``cycle``: its wave groups issue from ``cycle + 1``."""
        wg = allocation.wg
        work = (wg.work if wg.work is not None else wg.duration) * self.unit
        base = allocation.ap * self.Q
        started = 0
        for q, count in enumerate(allocation.waves):
            if not count:
                continue
            peu = base + q
            self._pop_finished(peu, cycle)
            heapq.heappush(self.groups[peu], (self.service[peu] + work, wg.id, count))
            self.issuing[peu] += count
            self._schedule(peu)
            started += 1
        self._groups_left[wg.id] = started

    def _finish_until(self, cycle: int) -> None:
        """Process every wave-group finish in cycles up to ``cycle``, in cycle order."""
        heap, versions = self._finish_heap, self._finish_version
        while heap and heap[0][0] <= cycle:
            finish, peu, version = heapq.heappop(heap)
            if version == versions[peu]:
                self._pop_finished(peu, finish)
                self._schedule(peu)

    def _next_finish(self) -> int | None:
        """The earliest cycle in which some wave group finishes (as the PEUs stand)."""
        heap, versions = self._finish_heap, self._finish_version
        while heap and heap[0][2] != versions[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    # -- views of the state as arrays (tests, results) ------------------------------------------

    @property
    def slots(self) -> np.ndarray:
        """Free wave slots, ``(P, Q)``."""
        return np.array(self._slots, dtype=np.int64)

    @property
    def pointer(self) -> np.ndarray:
        """Embodiment 8's rotating pointer of every AP."""
        return np.array(self._pointer, dtype=np.int64)

    @property
    def peu_waves(self) -> np.ndarray:
        """Waves each PEU has received, ``(P, Q)``."""
        return np.array(self._peu_waves, dtype=np.int64)

    # -- invariants ----------------------------------------------------------------------------

    def _violation(self, message: str) -> None:
        self.counters.violations.append(message)
        if self.strict:
            raise InvariantError(message)

    def _check_all(self, cycle: int) -> None:
        for name, n in self.size.items():
            for index, bits in enumerate(self.bits[name]):
                free = bits.bit_count()
                if free + self.held[name][index] != n:
                    self._violation(f"cycle {cycle}: {name}[{index}] free {free} + held "
                                    f"{self.held[name][index]} != capacity {n}")
                if free != self.free[name][index]:
                    self._violation(f"cycle {cycle}: {name}[{index}] free count "
                                    f"{self.free[name][index]} disagrees with its bitmap "
                                    f"({free})")
            if sum(self.held[name]) != self.held_total[name]:
                self._violation(f"cycle {cycle}: {name} held total {self.held_total[name]} "
                                f"!= {sum(self.held[name])}")
        for name in ("vgpr", "sgpr"):
            view = self.view[name]
            sums = [sum(view[ap * self.Q:(ap + 1) * self.Q]) for ap in range(self.P)]
            if sums != self.view_sum[name]:
                self._violation(f"cycle {cycle}: {name} view sums {self.view_sum[name]} "
                                f"!= {sums}")
        live = np.zeros((self.P, self.Q), dtype=np.int64)
        power = [0] * self.P
        inflight = [0] * self.channel_count
        for allocation in self.running.values():
            live[allocation.ap] += allocation.waves
            inflight[allocation.wg.channel] += 1
            if allocation.wg.dispatched < cycle:
                power[allocation.ap] += allocation.power
        if inflight != self._inflight:
            self._violation(f"cycle {cycle}: running WGs per channel {self._inflight} != "
                            f"{inflight}")
        if self.shared:
            self._check_shared(cycle, live)
        if np.any(self.slots + live != self.gpu.wave_slots):
            self._violation(f"cycle {cycle}: wave slots free + held != {self.gpu.wave_slots}")
        if [sum(row) for row in self._slots] != self.ap_slots or \
                sum(self.ap_slots) != self.slots_free:
            self._violation(f"cycle {cycle}: free wave slot totals disagree")
        now = [h.energy(cycle + 1) - h.energy(cycle) for h in self.history]
        if now != power:
            self._violation(f"cycle {cycle}: instruction power per AP {now} != the running "
                            f"WGs' {power}")
        for wg_id, (mask, dirty) in self._masks.items():
            head = next((w for w in [*(q[0] for q in self.channels if q), self.buffer]
                         if w is not None and w.id == wg_id), None)
            if head is None:
                self._violation(f"cycle {cycle}: a fit mask is kept for WG {wg_id}, no head")
                continue
            fresh = sum(1 << ap for ap in range(self.P) if self._fits(head, ap))
            if (mask ^ fresh) & ~dirty:
                self._violation(f"cycle {cycle}: WG {wg_id}'s fit mask {mask:#x} is stale "
                                f"({fresh:#x})")

    def _check_shared(self, cycle: int, live) -> None:
        """Shared-issue invariants: each PEU's issuing waves are those of its wave groups and
        at most the waves resident on it; every running WG is issuing, or done and waiting
        for its release; a finish tag is ahead of the service (unfinished)."""
        waiting = {wg_id for _, wg_id, _ in self.completions}
        issuing = {}
        for peu, groups in enumerate(self.groups):
            waves = sum(count for _, _, count in groups)
            if waves != self.issuing[peu] or waves > live[peu // self.Q][peu % self.Q]:
                self._violation(f"cycle {cycle}: PEU {peu} has {self.issuing[peu]} issuing "
                                f"waves, its groups {waves}, resident "
                                f"{live[peu // self.Q][peu % self.Q]}")
            # The service before this cycle: no group may have reached its tag by then (it
            # would have finished in an earlier cycle, and every earlier finish is processed).
            before = self.service[peu] + self.rate[self.issuing[peu]] * max(
                0, cycle - self.service_time[peu])
            for tag, wg_id, _ in groups:
                issuing[wg_id] = issuing.get(wg_id, 0) + 1
                if tag <= before:
                    self._violation(f"cycle {cycle}: WG {wg_id} on PEU {peu} issued its "
                                    f"work before this cycle but was not finished")
        if issuing != self._groups_left:
            self._violation(f"cycle {cycle}: wave groups left {self._groups_left} != "
                            f"{issuing}")
        for wg_id in self.running:
            if (wg_id in issuing) == (wg_id in waiting):
                self._violation(f"cycle {cycle}: running WG {wg_id} must be issuing or "
                                f"waiting for its release, not both or neither")

    # -- resource state --------------------------------------------------------------------------

    def _changed(self, ap: int) -> None:
        """The AP's view, slots or pointer changed: every kept fit mask re-tests it."""
        bit = 1 << ap
        for entry in self._masks.values():
            entry[1] |= bit

    def _change_plan(self, name: str, base: int, plan: list, cycle: int, visible: int,
                     take: bool) -> None:
        """:meth:`_change` for each PEU's ``(start, length)`` (or ``None``) of ``plan``, the
        PEUs of one AP from resource instance ``base`` (the same steps, one call)."""
        all_bits, held, largest, free, circuit, longest = self._state[name]
        cache, pending = circuit.cache, self.pending
        total = 0
        for q, placed in enumerate(plan):
            if placed is None:
                continue
            start, length = placed
            index = base + q
            mask = ((1 << length) - 1) << start
            bits = all_bits[index]
            if take:
                if bits & mask != mask:
                    self._violation(f"cycle {cycle}: {name}[{index}] blocks {start}.."
                                    f"{start + length - 1} allocated while some are in use")
                bits &= ~mask
            else:
                if bits & mask:
                    self._violation(f"cycle {cycle}: {name}[{index}] blocks {start}.."
                                    f"{start + length - 1} released while some are free")
                bits |= mask
                length = -length
            held[index] += length
            total += length
            all_bits[index] = bits
            seen = cache.get(bits)
            if seen is None:
                seen = circuit.compute(bits)
            largest[index] = seen if longest is None else longest(bits)
            free[index] = bits.bit_count()
            pending.append((visible, name, index, seen))
        self.held_total[name] += total

    def _change(self, name: str, index: int, start: int, length: int, cycle: int,
                visible: int, take: bool) -> None:
        """Take (``take``) or give back blocks ``start .. start + length - 1`` of one resource
        instance: its status register, held and free counts, true longest run, and the
        circuit's length for the matcher from cycle ``visible``."""
        all_bits, held, largest, free, circuit, longest = self._state[name]
        mask = ((1 << length) - 1) << start
        bits = all_bits[index]
        if take:
            if bits & mask != mask:
                self._violation(f"cycle {cycle}: {name}[{index}] blocks {start}.."
                                f"{start + length - 1} allocated while some are in use")
            bits &= ~mask
        else:
            if bits & mask:
                self._violation(f"cycle {cycle}: {name}[{index}] blocks {start}.."
                                f"{start + length - 1} released while some are free")
            bits |= mask
            length = -length
        held[index] += length
        self.held_total[name] += length
        all_bits[index] = bits
        seen = circuit.cache.get(bits)
        if seen is None:
            seen = circuit.compute(bits)
        largest[index] = seen if longest is None else longest(bits)
        free[index] = bits.bit_count()
        self.pending.append((visible, name, index, seen))

    def _show(self, cycle: int) -> None:
        """Step 3: every circuit output due by ``cycle`` becomes the matcher's view."""
        pending, Q, views, sums = self.pending, self.Q, self.view, self.view_sum
        changed = 0
        while pending and pending[0][0] <= cycle:
            _, name, index, length = pending.popleft()
            view = views[name]
            old = view[index]
            if old == length:
                continue
            view[index] = length
            if name == "lds":
                changed |= 1 << index
            else:
                ap = index // Q
                sums[name][ap] += length - old
                changed |= 1 << ap
        if changed:
            for entry in self._masks.values():
                entry[1] |= changed

    # -- embodiment 10's history ---------------------------------------------------------------

    def _advance_ema(self, cycle: int) -> None:
        """Run the exponential average ``x <- x - (x >> k) + p`` up to the start of ``cycle``
        (one step per cycle, exactly as a register would; a value at its fixed point stays)."""
        steps = cycle - self.ema_time
        if steps <= 0:
            return
        shift = self.shift
        for ap in range(self.P):
            x, p = self.ema[ap], self.power[ap]
            for _ in range(steps):
                following = x - (x >> shift) + p
                if following == x:
                    break
                x = following
            self.ema[ap] = x
        self.ema_time = cycle

    def _change_power(self, ap: int, cycle: int, delta: int) -> None:
        """The AP's instruction power changes by ``delta`` from cycle ``cycle`` on."""
        if self.policy.history == "ema":
            self._advance_ema(cycle)
        self.power[ap] += delta
        self.history[ap].change(cycle, delta, self.keep)

    def _history_scores(self, cycle: int) -> list[int]:
        """Embodiment 10's ``tb_f`` of every AP as the policy keeps it, at ``cycle``."""
        if self.policy.history == "ema":
            self._advance_ema(cycle)
            return list(self.ema)
        length = self.policy.history_cycles
        return [h.window(cycle, length) for h in self.history]

    # -- admission, splitting --------------------------------------------------------------------

    def _fits_empty(self, waves_per_peu: int, wg: WorkGroup, lds: int) -> str | None:
        """Why ``wg`` with ``waves_per_peu`` on its busiest PEU cannot fit an idle AP as the
        circuit sees it (``None`` when it can)."""
        for name, per_wave in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
            need = waves_per_peu * per_wave
            seen = self.circuit[name]((1 << self.size[name]) - 1)
            if need > seen:
                return (f"{waves_per_peu} waves x {per_wave} {name.upper()} blocks = {need} on "
                        f"one PEU, but an idle PEU has {self.size[name]} (the "
                        f"{self.policy.circuit} circuit reports {seen})")
        if waves_per_peu > self.gpu.wave_slots:
            return (f"{waves_per_peu} waves on one PEU, but a PEU has {self.gpu.wave_slots} "
                    f"wave slots")
        seen = self.circuit["lds"]((1 << self.gpu.lds) - 1)
        if lds > seen:
            return (f"{lds} LDS blocks, but an idle AP has {self.gpu.lds} (the "
                    f"{self.policy.circuit} circuit reports {seen})")
        return None

    def _admit(self, wg: WorkGroup, cycle: int) -> bool:
        self._event(cycle, "arrive", wg)
        busiest = -(-wg.waves // self.Q)
        reason = self._fits_empty(busiest, wg, wg.lds)
        if reason is None:
            return True
        if (wg.independent and wg.waves > 1 and self._splitting
                and busiest <= self.gpu.wave_slots
                and self._fits_empty(1, wg, -(-wg.lds // wg.waves)) is None):
            return True          # it will be split (embodiment 3) and its waves fit alone
        text = f"WG {wg.id} (channel {wg.channel}) can never be dispatched: {reason}"
        self.rejected.append({"id": wg.id, "channel": wg.channel, "arrival": wg.arrival,
                              "reason": text})
        self._event(cycle, "reject", wg, reason=reason)
        return False

    @property
    def _splitting(self) -> bool:
        return self.policy.split_threshold > 0 and self.policy.selection == "multi"

    def _split(self, cycle: int) -> bool:
        """Embodiment 3 (step c3): split every independent head into one sub-WG per wave."""
        lowest = self.gpu.priorities - 1
        did = False
        # The decision pipeline splits a head only when none of its channel's WGs is chosen.
        busy = {decision.channel for decision in self._flight}
        for channel, queue in enumerate(self.channels):
            if not queue or channel in busy:
                continue
            head = queue[0]
            if not head.independent or head.waves < 2 or head.parent is not None:
                continue
            queue.popleft()
            self._masks.pop(head.id, None)
            parts = []
            for _ in range(head.waves):
                parts.append(WorkGroup(id=self.next_id, channel=head.channel, priority=lowest,
                                       waves=1, vgpr=head.vgpr, sgpr=head.sgpr,
                                       lds=-(-head.lds // head.waves), duration=head.duration,
                                       independent=True, arrival=head.arrival,
                                       parent=head.id, work=head.work))
                self.next_id += 1
            for part in parts:
                self._event(cycle, "split", part)
            queue.extendleft(reversed(parts))
            self.parents[head.id] = _Parent(head, len(parts))
            self.counters.splits += 1
            self.counters.sub_workgroups += len(parts)
            did = True
        return did

    # -- matching and selection -----------------------------------------------------------------

    def _row(self, waves: int, ap: int) -> tuple[int, ...]:
        """Waves per PEU of ``ap`` for a WG of ``waves``: the split table's row, rotated by
        the AP's pointer (embodiment 8), PEU ``q`` taking entry ``(q - p) mod Q``."""
        return self._row_for(waves, self._pointer[ap] if self.policy.rotate else 0)

    def _row_for(self, waves: int, pointer: int) -> tuple[int, ...]:
        """:meth:`_row` with the pointer given (the decision pipeline's snapshot of it)."""
        row = self._rows.get((waves, pointer))
        if row is None:
            entries = self.table[waves].tolist()
            Q = self.Q
            row = self._rows[(waves, pointer)] = tuple(entries[(q - pointer) % Q]
                                                       for q in range(Q))
        return row

    def _least_loaded(self, wg: WorkGroup, ap: int) -> tuple[int, ...] | None:
        """``wave_placement = "least_loaded"``: each wave in turn goes to the PEU of ``ap``
        with the most free wave slots (less the waves already given to it) on which the
        grown wave group still fits the VGPR and SGPR views; ties to the lowest index.
        ``None`` when some wave fits no PEU."""
        Q = self.Q
        base = ap * Q
        slots = self._slots[ap]
        vgpr, sgpr = self.view["vgpr"], self.view["sgpr"]
        v, s = wg.vgpr, wg.sgpr
        counts = [0] * Q
        for _ in range(wg.waves):
            best, most = -1, 0
            for q in range(Q):
                room = slots[q] - counts[q]
                grown = counts[q] + 1
                if room > most and grown * v <= vgpr[base + q] and grown * s <= sgpr[base + q]:
                    best, most = q, room
            if best < 0:
                return None
            counts[best] += 1
        return tuple(counts)

    def _placement(self, wg: WorkGroup, ap: int) -> tuple[int, ...] | None:
        """Waves per PEU of ``ap`` for ``wg`` under the policy's wave placement (``None``:
        the least-loaded placement finds no PEU for some wave)."""
        if self.least_loaded:
            return self._least_loaded(wg, ap)
        return self._row(wg.waves, ap)

    def _waves(self, wg: WorkGroup) -> np.ndarray:
        """Waves per PEU of every AP for ``wg``, ``(P, Q)`` (zeros where it cannot be
        placed)."""
        return np.array([self._placement(wg, ap) or (0,) * self.Q for ap in range(self.P)],
                        dtype=np.int64)

    def _fits(self, wg: WorkGroup, ap: int) -> bool:
        """Every wave group of ``wg`` fits its PEU of ``ap`` (VGPR and SGPR views, free wave
        slots) and the WG's LDS fits the AP's view."""
        if wg.lds > self.view["lds"][ap]:
            return False
        if self.least_loaded:
            return wg.waves <= self.ap_slots[ap] and self._least_loaded(wg, ap) is not None
        row = self._rows.get((wg.waves, self._pointer[ap] if self.policy.rotate else 0))
        if row is None:
            row = self._row(wg.waves, ap)
        base = ap * self.Q
        vgpr, sgpr = self.view["vgpr"], self.view["sgpr"]
        slots = self._slots[ap]
        v, s = wg.vgpr, wg.sgpr
        for q, waves in enumerate(row):
            if waves and (waves > slots[q] or waves * v > vgpr[base + q]
                          or waves * s > sgpr[base + q]):
                return False
        return True

    def _mask(self, wg: WorkGroup) -> int:
        """The APs ``wg`` fits (bit ``a`` for AP ``a``): kept per head WG, re-testing only the
        APs that changed since."""
        entry = self._masks.get(wg.id)
        if entry is None:
            mask = self._masks_of(wg)
            self._masks[wg.id] = [mask, 0]
            return mask
        mask, dirty = entry
        if dirty:
            while dirty:
                low = dirty & -dirty
                ap = low.bit_length() - 1
                if self._fits(wg, ap):
                    mask |= low
                else:
                    mask &= ~low
                dirty ^= low
            entry[0], entry[1] = mask, 0
        return mask

    def _head_mask(self, wg: WorkGroup) -> int:
        """:meth:`_mask` of a head WG, 0 while an in-order barrier holds it (its channel's
        earlier WGs still run)."""
        if wg.barrier and self._inflight[wg.channel]:
            return 0
        return self._mask(wg)

    def _masks_of(self, wg: WorkGroup) -> int:
        """:meth:`_fits` on every AP at once, as a bit mask (the loop of ``_fits`` inlined:
        a new head is tested against every AP)."""
        if self.least_loaded:
            return sum(1 << ap for ap in range(self.P) if self._fits(wg, ap))
        lds_view, vgpr, sgpr = self.view["lds"], self.view["vgpr"], self.view["sgpr"]
        rows, pointer, rotate = self._rows, self._pointer, self.policy.rotate
        all_slots, ap_slots, Q = self._slots, self.ap_slots, self.Q
        waves, v, s, lds = wg.waves, wg.vgpr, wg.sgpr, wg.lds
        mask = 0
        for ap in range(self.P):
            if lds > lds_view[ap] or waves > ap_slots[ap]:
                continue
            row = rows.get((waves, pointer[ap] if rotate else 0))
            if row is None:
                row = self._row(waves, ap)
            base, slots = ap * Q, all_slots[ap]
            for q in range(Q):
                count = row[q]
                if count and (count > slots[q] or count * v > vgpr[base + q]
                              or count * s > sgpr[base + q]):
                    break
            else:
                mask |= 1 << ap
        return mask

    def _match(self, wg: WorkGroup) -> np.ndarray:
        """Boolean per AP: every wave group fits its PEU and the shared needs fit the AP."""
        return np.array([self._fits(wg, ap) for ap in range(self.P)])

    def _rank(self, priority: int, cycle: int) -> int:
        """Embodiment 2: the window's priority is promoted above all; the rest keep order."""
        windows = self.policy.windows
        if windows:
            position = cycle % sum(windows)
            for promoted, length in enumerate(windows):
                if position < length:
                    return -1 if priority == promoted else priority
                position -= length
        return priority

    def _tie_break(self, channels: list[int], priority: int) -> tuple[int, list]:
        """Step a42: the chosen channel and the flag updates to commit with the dispatch."""
        if len(channels) == 1:
            return channels[0], []
        clear = [c for c in channels if not self.selected[c, priority]]
        if clear:
            chosen = clear[self.lfsr.pick(len(clear))]
            return chosen, [(chosen, True)]
        chosen = channels[self.lfsr.pick(len(channels))]
        return chosen, [(c, False) for c in channels if c != chosen]

    def _highest(self, matches: list[int], priorities: dict, cycle: int):
        """Embodiment 1 with embodiment 2's ranks among the channels ``matches`` (two or
        more) whose heads have ``priorities``: ``(channel, priority, a42 flag updates)``."""
        ranks = {c: self._rank(priorities[c], cycle) for c in matches}
        best = min(ranks.values())
        tied = [c for c in matches if ranks[c] == best]
        priority = priorities[tied[0]]
        channel, flag_updates = self._tie_break(tied, priority)
        return channel, priority, flag_updates

    def _select(self, cycle: int):
        """``(picked, matched)``: the target ``(channel, matching APs as a bit mask,
        selection-state updates)`` or ``None``, and whether any head matched, per the
        selection rule."""
        selection = self.policy.selection
        channels = self.channels
        mask_of = self._head_mask
        if selection == "miaow":
            if self.buffer is None:
                for k in range(self.channel_count):
                    channel = (self.channel_pointer + k) % self.channel_count
                    if channels[channel]:
                        self.buffer = channels[channel].popleft()
                        self.channel_pointer = (channel + 1) % self.channel_count
                        break
            if self.buffer is None:
                return None, False
            mask = mask_of(self.buffer)
            return ((self.buffer.channel, mask, ()) if mask else None), bool(mask)
        if selection == "strict":
            heads = [c for c in range(self.channel_count) if channels[c]]
            if not heads:
                return None, False
            best = min(channels[c][0].priority for c in heads)
            channel = next(c for c in self._channel_order()
                           if channels[c] and channels[c][0].priority == best)
            mask = mask_of(channels[channel][0])
            return ((channel, mask, ()) if mask else None), bool(mask)
        if selection == "gpgpusim":
            for channel in self._channel_order():
                if channels[channel]:
                    mask = mask_of(channels[channel][0])
                    if mask:
                        return (channel, mask, ()), True
            return None, False
        matches = {}
        for channel, queue in enumerate(channels):
            if queue:
                mask = mask_of(queue[0])
                if mask:
                    matches[channel] = mask
        if not matches:
            return None, False
        if len(matches) == 1:
            channel, mask = next(iter(matches.items()))
            return (channel, mask, ()), True
        lfsr_state = self.lfsr.state
        channel, priority, flag_updates = self._highest(
            list(matches), {c: channels[c][0].priority for c in matches}, cycle)
        return (channel, matches[channel], ((priority, flag_updates, lfsr_state),)), True

    def _channel_order(self) -> list[int]:
        """Channels in round-robin order from the channel pointer."""
        return [(self.channel_pointer + k) % self.channel_count
                for k in range(self.channel_count)]

    def _resource_score(self, ap: int) -> int:
        a = self.resource_weights
        return (a[0] * self.view_sum["vgpr"][ap] + a[1] * self.view_sum["sgpr"][ap]
                + a[2] * self.view["lds"][ap] + a[3] * self.ap_slots[ap])

    def _resource_scores(self) -> list[int]:
        """Embodiment 9's ``sum a_h r_h`` of every AP: ``r`` is the circuit's view summed over
        the AP's PEUs (VGPR, SGPR), its LDS view and its free wave slots; integers."""
        return [self._resource_score(ap) for ap in range(self.P)]

    def _choose_ap(self, mask: int, cycle: int, scores=None) -> int:
        """The target AP among the matching ones (bit mask); every score is an integer, ties
        go to the lowest index. ``scores``: every AP's embodiment 9 and 10 scores as the
        decision pipeline's match saw them (default: now)."""
        choice = self.policy.ap_choice
        if choice == "lowest":
            return (mask & -mask).bit_length() - 1
        if choice == "round_robin":
            after = mask >> self.ap_pointer << self.ap_pointer
            chosen = after or mask
            return (chosen & -chosen).bit_length() - 1
        candidates = [ap for ap in range(self.P) if mask >> ap & 1]
        if scores is not None:
            resource = [scores[0][ap] for ap in candidates]
            instruction = [scores[1][ap] for ap in candidates]
        if scores is None and choice in ("resource", "combined"):
            resource = [self._resource_score(ap) for ap in candidates]
        if scores is None and choice in ("instruction", "combined"):
            if self.policy.history == "ema":
                self._advance_ema(cycle)
                instruction = [self.ema[ap] for ap in candidates]
            else:
                length = self.policy.history_cycles
                instruction = [self.history[ap].window(cycle, length) for ap in candidates]
        if choice == "resource":
            return candidates[resource.index(max(resource))]
        if choice == "instruction":
            return candidates[instruction.index(min(instruction))]
        # combined: w_r R / Rmax - w_i B / Bmax, cross-multiplied by Rmax Bmax (> 0), which
        # orders the candidates the same way without a division.
        if self.policy.combined_scale == "all":
            resource_all = scores[0] if scores is not None else self._resource_scores()
            instruction_all = (scores[1] if scores is not None
                               else self._history_scores(cycle))
            top_r, top_i = max(max(resource_all), 1), max(max(instruction_all), 1)
        else:
            top_r, top_i = max(max(resource), 1), max(max(instruction), 1)
        w_r, w_i = self.policy.resource_weight, self.policy.instruction_weight
        score = [w_r * r * top_i - w_i * b * top_r
                 for r, b in zip(resource, instruction, strict=True)]
        return candidates[score.index(max(score))]

    # -- dispatch and release -------------------------------------------------------------------

    def _allocate(self, wg: WorkGroup, ap: int, cycle: int) -> _Allocation | None:
        """Place ``wg`` on ``ap`` at first-fit addresses; ``None`` (nothing changed) when the
        current status cannot hold it."""
        waves = self._placement(wg, ap)
        if waves is None:
            return None
        slots = self._slots[ap]
        if any(count > slots[q] for q, count in enumerate(waves)):
            return None
        plan = self._plan(wg, ap, waves)
        if plan is None:
            return None
        return self._take(wg, ap, waves, plan, cycle)

    def _plan(self, wg: WorkGroup, ap: int, waves) -> tuple | None:
        """First-fit starts of every need of ``wg`` on ``ap`` with ``waves`` per PEU in the
        current status: ``(vgpr plan, sgpr plan, lds)``, ``None`` when one does not fit."""
        Q = self.Q
        base = ap * Q
        vgpr_bits, sgpr_bits = self.bits["vgpr"], self.bits["sgpr"]
        vgpr_plan, sgpr_plan = [None] * Q, [None] * Q
        for q, count in enumerate(waves):
            need = count * wg.vgpr
            if need:
                start = first_fit_unchecked(vgpr_bits[base + q], need)
                if start is None:
                    return None
                vgpr_plan[q] = (start, need)
            need = count * wg.sgpr
            if need:
                start = first_fit_unchecked(sgpr_bits[base + q], need)
                if start is None:
                    return None
                sgpr_plan[q] = (start, need)
        lds = None
        if wg.lds:
            start = first_fit_unchecked(self.bits["lds"][ap], wg.lds)
            if start is None:
                return None
            lds = (start, wg.lds)
        return vgpr_plan, sgpr_plan, lds

    def _still_free(self, ap: int, waves, plan) -> bool:
        """Every block of ``plan`` and every wave slot ``waves`` needs is free now."""
        base = ap * self.Q
        slots = self._slots[ap]
        vgpr_plan, sgpr_plan, lds = plan
        for q, count in enumerate(waves):
            if count > slots[q]:
                return False
        for name, instances in (("vgpr", vgpr_plan), ("sgpr", sgpr_plan)):
            for q, placed in enumerate(instances):
                if placed is not None:
                    mask = ((1 << placed[1]) - 1) << placed[0]
                    if self.bits[name][base + q] & mask != mask:
                        return False
        if lds is not None:
            mask = ((1 << lds[1]) - 1) << lds[0]
            if self.bits["lds"][ap] & mask != mask:
                return False
        return True

    def _take(self, wg: WorkGroup, ap: int, waves, plan, cycle: int) -> "_Allocation":
        """Take the blocks of ``plan`` and the wave slots: the allocation of ``wg``."""
        Q = self.Q
        base = ap * Q
        slots = self._slots[ap]
        vgpr_plan, sgpr_plan, lds = plan
        visible = cycle + 1 + self.policy.circuit_latency
        self._change_plan("vgpr", base, vgpr_plan, cycle, visible, True)
        self._change_plan("sgpr", base, sgpr_plan, cycle, visible, True)
        if lds:
            self._change("lds", ap, lds[0], lds[1], cycle, visible, True)
        for q, count in enumerate(waves):
            slots[q] -= count
        self.ap_slots[ap] -= wg.waves
        self.slots_free -= wg.waves
        self._changed(ap)
        power = self.wave_power[wg.channel] * wg.waves
        return _Allocation(wg, ap, waves, vgpr_plan, sgpr_plan, lds, power)

    def _dispatch(self, cycle: int) -> tuple[bool, bool, bool]:
        """Steps 4-5 of the cycle: returns (dispatched, stale abort, any head matched)."""
        picked, matched = self._select(cycle)
        if picked is None:
            return False, False, matched
        channel, mask, updates = picked
        wg = self.buffer if self.policy.selection == "miaow" else self.channels[channel][0]
        ap = self._choose_ap(mask, cycle)
        allocation = self._allocate(wg, ap, cycle)
        if allocation is None:
            self.counters.stale_aborts += 1
            for _, _, lfsr_state in updates:
                self.lfsr.state = lfsr_state     # an aborted dispatch changes no state
            self._event(cycle, "stale-abort", wg, ap, self._placement(wg, ap))
            return False, True, True
        # Commit the selection state.
        for priority, flag_updates, _ in updates:
            for flagged, value in flag_updates:
                self.selected[flagged, priority] = value
        self._commit(wg, channel, ap, allocation, cycle)
        return True, False, True

    def _commit(self, wg: WorkGroup, channel: int, ap: int, allocation: "_Allocation",
                cycle: int) -> None:
        """Step 5 after the allocation: the WG leaves its queue (or the buffer), the pointers
        move, the WG runs."""
        entry = self._masks.pop(wg.id, None)
        if self.policy.selection == "miaow":
            self.buffer = None
        else:
            queue = self.channels[channel]
            queue.popleft()
            # (The pipeline moves the channel pointer when the WG is chosen.)
            if self.policy.selection in ("strict", "gpgpusim") and not self.pipeline:
                self.channel_pointer = (channel + 1) % self.channel_count
            # The next head of the same shape fits exactly where this one did, except on the
            # APs marked changed (this dispatch marked its AP): it inherits the mask (a
            # kernel's WGs follow each other), instead of testing every AP afresh.
            if entry is not None and queue:
                following = queue[0]
                if (following.waves == wg.waves and following.vgpr == wg.vgpr
                        and following.sgpr == wg.sgpr and following.lds == wg.lds
                        and following.id not in self._masks):
                    self._masks[following.id] = entry
        if not self.pipeline:               # the pipeline moves it when the AP is chosen
            self.ap_pointer = (ap + 1) % self.P
        if self.policy.rotate and not self.least_loaded:
            self._pointer[ap] = (self._pointer[ap] + wg.waves) % self.Q
        received = self._peu_waves[ap]
        for q, count in enumerate(allocation.waves):
            received[q] += count
        self._change_power(ap, cycle + 1, allocation.power)
        wg.dispatched, wg.ap = cycle, ap
        self._event(cycle, "dispatch", wg, ap, allocation.waves, allocation)
        if wg.parent is None:
            if self.last_dispatched[wg.channel] > wg.id:
                self._violation(f"cycle {cycle}: channel {wg.channel} dispatched WG {wg.id} "
                                f"after WG {self.last_dispatched[wg.channel]} (FIFO order)")
            self.last_dispatched[wg.channel] = wg.id
            self.waits.append((wg.priority, wg.channel, cycle - wg.arrival))
            self._wait_arrivals.append(wg.arrival)
        else:
            parent = self.parents[wg.parent]
            parent.dispatched += 1
            if parent.dispatched == parent.parts:
                self.waits.append((parent.wg.priority, parent.wg.channel,
                                   cycle - parent.wg.arrival))
                self._wait_arrivals.append(parent.wg.arrival)
        self.running[wg.id] = allocation
        self._inflight[wg.channel] += 1
        if self.shared:
            self._start(allocation, cycle)
        else:
            heapq.heappush(self.completions, (cycle + wg.duration + 1, wg.id, allocation))

    # -- the decision pipeline (policy.decision_pipeline) --------------------------------------

    def _match_stage(self, cycle: int) -> _Match:
        """What the match stage registers in ``cycle``: each channel's first two WGs behind
        those in flight, against the view, slots and pointers of this cycle."""
        in_flight = [0] * self.channel_count
        busy = 0                            # APs with a WG in flight: one at a time
        for decision in self._flight:
            in_flight[decision.channel] += 1
            busy |= 1 << decision.ap
        rows = []
        for channel, queue in enumerate(self.channels):
            row = []
            for position in (in_flight[channel], in_flight[channel] + 1):
                if position >= len(queue):
                    row.append(None)
                    continue
                wg = queue[position]
                held = wg.barrier and (self._inflight[channel] or position)
                row.append((wg, 0 if held else self._masks_of(wg) & ~busy))
            rows.append(row)
        choice = self.policy.ap_choice
        resource = (self._resource_scores() if choice in ("resource", "combined")
                    else [0] * self.P)
        instruction = (self._history_scores(cycle) if choice in ("instruction", "combined")
                       else [0] * self.P)
        # The scores the match keeps are those of score_latency cycles before (an idle GPU's
        # before cycle 0): an RTL computes them in a pipeline of their own.
        ring = self._scores
        if not ring:
            ring.extend([(resource, instruction)] * self.policy.score_latency)
        ring.append((resource, instruction))
        return _Match(rows, ring.popleft(), list(self._pointer))

    def _choose(self, cycle: int):
        """The choice stage: ``(decision or None, any candidate matched, any candidate)``
        from the previous cycle's match, per the selection rule."""
        match, last = self._match, self._chosen_last
        # The AP chosen in the previous cycle was not busy yet when the match ran.
        free = ~(1 << self._flight[-1].ap) if last is not None else -1
        in_flight = [0] * self.channel_count
        for decision in self._flight:
            in_flight[decision.channel] += 1
        candidates = {}
        for channel, row in enumerate(match.rows):
            entry = row[1 if last == channel else 0]
            queue = self.channels[channel]
            # Still the channel's first WG not chosen (a split since changes it).
            if (entry is not None and in_flight[channel] < len(queue)
                    and queue[in_flight[channel]] is entry[0]):
                candidates[channel] = (entry[0], entry[1] & free)
        if not candidates:
            return None, False, False
        selection = self.policy.selection
        chosen = None
        if selection == "strict":
            best = min(wg.priority for wg, _ in candidates.values())
            channel = next(c for c in self._channel_order()
                           if c in candidates and candidates[c][0].priority == best)
            if candidates[channel][1]:
                chosen = channel
        elif selection == "gpgpusim":
            chosen = next((c for c in self._channel_order()
                           if c in candidates and candidates[c][1]), None)
        else:
            matches = [c for c, (_, mask) in candidates.items() if mask]
            if len(matches) == 1:
                chosen = matches[0]
            elif matches:
                chosen, priority, flag_updates = self._highest(
                    matches, {c: candidates[c][0].priority for c in matches}, cycle)
                for flagged, value in flag_updates:
                    self.selected[flagged, priority] = value
        if chosen is None:
            return None, False, True
        wg, mask = candidates[chosen]
        ap = self._choose_ap(mask, cycle, match.scores)
        self.ap_pointer = (ap + 1) % self.P
        if selection in ("strict", "gpgpusim"):
            self.channel_pointer = (chosen + 1) % self.channel_count
        pointer = match.pointers[ap] if self.policy.rotate else 0
        return _Decision(wg, chosen, ap, self._row_for(wg.waves, pointer), cycle), True, True

    def _pipelined(self, cycle: int) -> tuple[bool, bool, bool | None, bool]:
        """One cycle of the decision pipeline: match; first fit of the WG chosen in the
        previous cycle; dispatch (or stale abort) of the WG chosen ``k`` cycles ago; choice.
        Returns
        (dispatched, stale abort, any candidate matched or None when the choice was
        cancelled, any candidate)."""
        k = self.pipeline
        match = self._match_stage(cycle)
        flight = self._flight
        if flight and flight[-1].chosen + 1 == cycle:       # the one chosen last cycle
            decision = flight[-1]
            decision.plan = self._plan(decision.wg, decision.ap, decision.waves)
        dispatched = aborted = False
        if flight and flight[0].chosen + k == cycle:
            decision = flight.popleft()
            wg, ap = decision.wg, decision.ap
            if decision.plan is not None:
                # Nothing else was placed on the AP since the plan (one WG in flight per AP)
                # and releases only free blocks and slots: the plan cannot go stale.
                if not self._still_free(ap, decision.waves, decision.plan):
                    self._violation(f"cycle {cycle}: WG {wg.id}'s first fit on AP {ap} went "
                                    f"stale in flight")
                if self.channels[decision.channel][0] is not wg:
                    self._violation(f"cycle {cycle}: WG {wg.id} dispatched before the WGs "
                                    f"ahead of it in channel {decision.channel}")
                allocation = self._take(wg, ap, decision.waves, decision.plan, cycle)
                self._commit(wg, decision.channel, ap, allocation, cycle)
                dispatched = True
            else:
                self.counters.stale_aborts += 1
                self.counters.flushed += len(flight)
                self._event(cycle, "stale-abort", wg, ap, decision.waves)
                flight.clear()
                self._squash = 2            # this cycle's choice and the next one's
                aborted = True
        matched, waiting = None, False
        chosen = None
        if self._squash:
            self._squash -= 1
        elif self._match is not None:
            decision, matched, waiting = self._choose(cycle)
            if decision is not None:
                flight.append(decision)
                chosen = decision.channel
        self._chosen_last = chosen
        self._match = match
        return dispatched, aborted, matched, waiting

    def _release(self, allocation: _Allocation, cycle: int) -> None:
        wg, ap = allocation.wg, allocation.ap
        base = ap * self.Q
        visible = cycle + self.policy.circuit_latency
        self._change_plan("vgpr", base, allocation.vgpr, cycle, visible, False)
        self._change_plan("sgpr", base, allocation.sgpr, cycle, visible, False)
        if allocation.lds:
            self._change("lds", ap, *allocation.lds, cycle, visible, False)
        slots = self._slots[ap]
        for q, count in enumerate(allocation.waves):
            slots[q] += count
        self.ap_slots[ap] += wg.waves
        self.slots_free += wg.waves
        self._changed(ap)
        self._change_power(ap, cycle, -allocation.power)
        self._event(cycle, "release", wg, ap, allocation.waves, allocation)
        if wg.completed is not None:
            self._violation(f"cycle {cycle}: WG {wg.id} completed twice")
        if self.running.pop(wg.id, None) is None:
            self._violation(f"cycle {cycle}: WG {wg.id} released but not running")
        self._inflight[wg.channel] -= 1
        wg.completed = cycle - 1
        self._runs.append(cycle - 1 - wg.dispatched)
        if wg.parent is None:
            self.completed += 1
            self._finished.append((wg.arrival, cycle))
        else:
            parent = self.parents[wg.parent]
            parent.completed += 1
            if parent.completed == parent.parts:
                parent.wg.completed = cycle - 1
                self.completed += 1
                self._finished.append((parent.wg.arrival, cycle))

    def _event(self, cycle: int, kind: str, wg: WorkGroup, ap=None, waves=None,
               allocation: _Allocation | None = None, reason: str | None = None) -> None:
        if self.events is None:
            return
        starts = None
        if allocation is not None:
            starts = ([None if v is None else v[0] for v in allocation.vgpr],
                      [None if s is None else s[0] for s in allocation.sgpr],
                      None if allocation.lds is None else allocation.lds[0])
        self.events.append((cycle, kind, wg, ap,
                            None if waves is None else [int(w) for w in waves], starts, reason))

    # -- metrics -------------------------------------------------------------------------------

    def _accumulate(self, cycles: int) -> None:
        if cycles <= 0:
            return
        held = self.held_total
        integral = self.used_integral
        integral["vgpr"] += cycles * held["vgpr"]
        integral["sgpr"] += cycles * held["sgpr"]
        integral["lds"] += cycles * held["lds"]
        integral["wave_slots"] += cycles * (self.P * self.Q * self.gpu.wave_slots
                                            - self.slots_free)

    def _sample(self, start: int, stop: int) -> None:
        """Record one sample for every sample cycle in ``[start, stop)``: the state after
        this cycle's dispatch (which no cycle before ``stop`` changes) and the power history
        as of each sample cycle."""
        interval = self.sample_interval
        first = -(-start // interval) * interval
        if first >= stop:
            return
        P, Q, gpu = self.P, self.Q, self.gpu
        used = [float(self.held_total[name]) / (float(n) * len(self.held[name]))
                for name, n in self.size.items()]
        total_slots = P * Q * gpu.wave_slots
        used.append(1.0 - float(self.slots_free) / total_slots)
        # Plain-Python floats in the order and with the operations of the numpy expressions
        # they replace (each an IEEE operation on the same values), so the means are the same.
        fragments = [1.0 - largest / free for name in self.size
                     for free, largest in zip(self.free[name], self.largest[name], strict=True)
                     if free > 0]
        fragmentation = float(np.array(fragments).mean()) if fragments else 0.0
        held_v, held_s, held_l = self.held["vgpr"], self.held["sgpr"], self.held["lds"]
        per_slots = gpu.wave_slots * Q
        per_ap = [(sum(held_v[ap * Q:ap * Q + Q]) / (Q * gpu.vgpr)
                   + sum(held_s[ap * Q:ap * Q + Q]) / (Q * gpu.sgpr)
                   + held_l[ap] / gpu.lds + (per_slots - self.ap_slots[ap]) / per_slots) / 4
                  for ap in range(P)]
        resource_cv = coefficient_of_variation(per_ap)
        for sample in range(first, stop, interval):
            power = [h.window(sample, self.power_window) for h in self.history]
            self.samples["cycle"].append(sample)
            self.samples["utilisation"].append(used)
            self.samples["fragmentation"].append(fragmentation)
            self.samples["ap_resource_cv"].append(resource_cv)
            self.samples["ap_power_cv"].append(coefficient_of_variation(power))

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> dict:
        """Simulate until every WG has completed or the cycle limit; return the metrics."""
        arrivals = deque(self.workload)
        cycle = 0
        finished_at = None
        limit = self.cycles_limit
        splitting = self._splitting
        threshold = self.policy.split_threshold
        # 0: no limit (the count never reaches -1); k: at most k releases a cycle, the rest
        # wait in (due cycle, id) order and are overdue, so the next cycle is evaluated.
        release_limit = self.policy.release_limit or -1
        completions, pending, channels = self.completions, self.pending, self.channels
        counters = self.counters
        integral, held = self.used_integral, self.held_total
        total_slots = self.P * self.Q * self.gpu.wave_slots
        interval = self.sample_interval
        next_sample = 0                 # the first sample cycle not yet recorded
        shared, drain = self.shared, self.gpu.drain
        running = self.running
        while cycle < limit:
            if shared:
                # Finishes before this cycle are final: no dispatch from now on changes them.
                self._finish_until(cycle - 1)
            released = 0
            while completions and completions[0][0] <= cycle and released != release_limit:
                self._release(heapq.heappop(completions)[2], cycle)
                released += 1
            while arrivals and arrivals[0].arrival == cycle:
                wg = arrivals.popleft()
                if self._admit(wg, cycle):
                    channels[wg.channel].append(wg)
            if pending and pending[0][0] <= cycle:
                self._show(cycle)
            if self.observer is not None:
                self.observer(cycle, self)
            if self.debug:
                self._check_all(cycle)
            integral["vgpr"] += held["vgpr"]
            integral["sgpr"] += held["sgpr"]
            integral["lds"] += held["lds"]
            integral["wave_slots"] += total_slots - self.slots_free
            if self.pipeline:
                dispatched, aborted, matched, waiting = self._pipelined(cycle)
            else:
                waiting = self.buffer is not None or any(channels)     # heads at step 4
                dispatched, aborted, matched = self._dispatch(cycle)
            counters.processed_cycles += 1
            counters.dispatch_cycles += dispatched
            split_now = False
            if splitting and matched is not None:
                if matched or not waiting:
                    self.g = 0
                else:
                    self.g += 1
                    if self.g > threshold:
                        # Step c3, then g back to its initial value (also when no head
                        # could be split: c3 ran and found none).
                        split_now = self._split(cycle)
                        self.g = 0
            has_heads = self.buffer is not None or any(channels)
            idle = not (dispatched or aborted or split_now)
            following = cycle + 1
            if idle and self.skip:
                following = limit
                if arrivals and arrivals[0].arrival < following:
                    following = arrivals[0].arrival
                if completions and completions[0][0] < following:
                    following = completions[0][0]
                if pending and pending[0][0] < following:
                    following = pending[0][0]
                counting = splitting and waiting and not matched
                if counting and cycle + threshold + 1 - self.g < following:
                    following = cycle + threshold + 1 - self.g
                if shared:
                    # Nothing is dispatched before `following`, so every wave-group finish
                    # before it is final: process those whose release would come first.
                    finish = self._next_finish()
                    while finish is not None and finish + drain + 1 < following:
                        self._finish_until(finish)
                        if completions and completions[0][0] < following:
                            following = completions[0][0]
                        finish = self._next_finish()
                following = max(cycle + 1, following)
                if counting:
                    self.g += following - cycle - 1
            if not arrivals and not running and not has_heads:
                finished_at = cycle         # cycles 0 .. cycle - 1 held work
                self._sample(cycle, cycle + 1)
                break
            end = following if following < limit else limit
            if next_sample < end:
                self._sample(cycle, end)
                next_sample = -(-end // interval) * interval
            self._accumulate(end - cycle - 1)
            cycle = following
        return self._results(finished_at if finished_at is not None else min(cycle, limit))

    def _results(self, cycles: int) -> dict:
        gpu = self.gpu
        submitted = len(self.workload)
        # WGs still waiting at the end count with their wait so far (a lower bound), so a
        # starved priority shows up as a long wait rather than as no data.
        waiting = [wg for queue in self.channels for wg in queue]
        waiting += [self.buffer] if self.buffer is not None else []
        waiting_ids = set()
        for wg in waiting:
            original = self.parents[wg.parent].wg if wg.parent is not None else wg
            if original.id not in waiting_ids:
                waiting_ids.add(original.id)
                self.waits.append((original.priority, original.channel,
                                   cycles - original.arrival))
                self._wait_arrivals.append(original.arrival)
        waits_all = [w for _, _, w in self.waits]
        per_priority = {str(p): summary([w for pr, _, w in self.waits if pr == p])
                        for p in range(gpu.priorities)}
        per_channel = {str(c): summary([w for _, ch, w in self.waits if ch == c])
                       for c in range(self.channel_count)}
        capacity = {"vgpr": gpu.vgpr * self.P * self.Q, "sgpr": gpu.sgpr * self.P * self.Q,
                    "lds": gpu.lds * self.P, "wave_slots": gpu.wave_slots * self.P * self.Q}
        utilisation = {name: (self.used_integral[name] / (capacity[name] * cycles)
                              if cycles else 0.0) for name in capacity}

        def mean(key):
            values = self.samples[key]
            return float(np.mean(np.array(values, dtype=float), axis=0).mean()) if values \
                else 0.0
        incomplete = submitted - len(self.rejected) - self.completed
        if incomplete and self.debug and not self.counters.violations and \
                cycles < self.cycles_limit:
            self._violation(f"{incomplete} WGs neither completed nor rejected")
        for wg in self.workload:
            if wg.completed is not None and wg.dispatched is None and wg.id not in self.parents:
                self._violation(f"WG {wg.id} completed without being dispatched")
            if wg.dispatched is not None and wg.id in self.parents:
                self._violation(f"WG {wg.id} was dispatched whole and split")
        peu_waves = self.peu_waves
        # Latency (arrival to release) of every submitted WG not rejected; one not finished by
        # the end counts with its time so far, a lower bound, as a wait does.
        rejected = {r["id"] for r in self.rejected}
        finished_arrivals = {wg.id for wg in self.workload if wg.completed is not None}
        latencies = [(arrival, release - arrival) for arrival, release in self._finished]
        latencies += [(wg.arrival, cycles - wg.arrival) for wg in self.workload
                      if wg.id not in finished_arrivals and wg.id not in rejected]
        warmup = self.warmup
        window = cycles - warmup
        steady_done = sum(1 for _, release in self._finished if release > warmup)
        steady_offered = sum(1 for wg in self.workload if warmup <= wg.arrival < cycles)
        steady = {
            "throughput": 1000.0 * steady_done / window if window > 0 else 0.0,
            "offered": 1000.0 * steady_offered / window if window > 0 else 0.0,
            "wait": summary([w for (_, _, w), arrival in zip(self.waits, self._wait_arrivals,
                                                             strict=True)
                             if arrival >= warmup]),
            "latency": summary([value for arrival, value in latencies if arrival >= warmup]),
        }
        return {
            "policy": self.policy.name,
            "cycles": cycles,
            "workgroups_submitted": submitted,
            "workgroups_completed": self.completed,
            "workgroups_rejected": len(self.rejected),
            "workgroups_unfinished": incomplete,
            "workgroups_waiting_at_end": len(waiting_ids),
            "workgroups_after_end": self.after_end,
            "rejections": self.rejected,
            "throughput": 1000.0 * self.completed / cycles if cycles else 0.0,
            "wait": {**summary(waits_all), "per_priority": per_priority,
                     "per_channel": per_channel},
            "utilisation": utilisation,
            "ap_imbalance": {"resource": mean("ap_resource_cv"),
                             "power": mean("ap_power_cv")},
            "peu_imbalance": coefficient_of_variation(peu_waves.ravel()),
            "fragmentation": mean("fragmentation"),
            "splits": self.counters.splits,
            "sub_workgroups": self.counters.sub_workgroups,
            "stale_aborts": self.counters.stale_aborts,
            "flushed": self.counters.flushed,
            "invariant_violations": len(self.counters.violations),
            "violations": self.counters.violations[:20],
            "processed_cycles": self.counters.processed_cycles,
            "execution": self.execution,
            "latency": summary([value for _, value in latencies]),
            "run": summary(self._runs),
            "makespan": max((release for _, release in self._finished), default=0),
            "steady": steady,
            "fixed_point": self.widths,
            "series": {"cycle": self.samples["cycle"],
                       "utilisation": [float(np.mean(u)) for u in self.samples["utilisation"]],
                       "ap_resource_cv": self.samples["ap_resource_cv"],
                       "ap_power_cv": self.samples["ap_power_cv"],
                       "peu_waves": peu_waves.ravel().tolist(),
                       "waits": [[p, w] for p, _, w in self.waits]},
        }


def simulate(gpu: GpuConfig, policy: PolicyConfig, workload, **options) -> dict:
    """Run one policy on one workload (keyword options as :class:`DispatchSimulator`)."""
    return DispatchSimulator(gpu, policy, workload, **options).run()


# -- the event log ---------------------------------------------------------------------------

def event_columns(peus: int) -> list[str]:
    """The event log's header for a GPU of ``peus`` PEUs per AP (docs/dispatch.md)."""
    return (["cycle", "event", "wg", "parent", "channel", "priority", "waves", "vgpr", "sgpr",
             "lds", "independent", "duration", "arrival", "ap"]
            + [f"waves_{q}" for q in range(peus)] + [f"vgpr_start_{q}" for q in range(peus)]
            + [f"sgpr_start_{q}" for q in range(peus)] + ["lds_start", "reason", "work",
                                                            "barrier"])


def write_events(path, events, peus: int) -> Path:
    """Write the rows a simulator collected in ``events`` as CSV (:func:`event_columns`);
    empty cells where a value does not apply (no AP before dispatch, no start address for a
    resource a wave group does not use)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blank = [""] * peus
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(event_columns(peus))
        for cycle, kind, wg, ap, waves, starts, reason in events:
            row = [cycle, kind, wg.id, "" if wg.parent is None else wg.parent, wg.channel,
                   wg.priority, wg.waves, wg.vgpr, wg.sgpr, wg.lds, int(wg.independent),
                   wg.duration, wg.arrival, "" if ap is None else ap]
            row += blank if waves is None else waves
            if starts is None:
                row += blank + blank + [""]
            else:
                vgpr, sgpr, lds = starts
                row += ["" if v is None else v for v in vgpr]
                row += ["" if v is None else v for v in sgpr]
                row.append("" if lds is None else lds)
            row.append(reason or "")
            # Appended for the shared-issue model and in-order kernels (after the columns
            # an RTL co-simulation of the fixed model reads).
            row += [wg.duration if wg.work is None else wg.work, int(wg.barrier)]
            writer.writerow(row)
    return path
