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
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.checks import InvariantError
from model.dispatch.config import (
    INSTRUCTION_CLASSES,
    MIX_FRACTION_BITS,
    ChannelConfig,
    GpuConfig,
    PolicyConfig,
    WorkGroup,
    check_policy,
    quantised_mix,
)
from model.maxblock import (
    default_samples,
    first_fit,
    grouped_max_free_run,
    max_free_run,
    sampled_max_free_run,
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
    (1 = free): a function of the status word, from :mod:`model.maxblock`, memoised."""
    if policy.circuit in ("exact", "full"):
        def length(bits):
            return max_free_run(bits, n)
    elif policy.circuit == "grouped":
        groups = n // policy.group_size

        def length(bits):
            return grouped_max_free_run(bits, n, groups)
    else:
        samples = default_samples(n)

        def length(bits):
            return sampled_max_free_run(bits, n, samples)
    return _memoised(length)


def _memoised(function):
    cache: dict[int, int] = {}

    def cached(bits: int) -> int:
        value = cache.get(bits)
        if value is None:
            if len(cache) > 1 << 16:
                cache.clear()
            value = cache[bits] = function(bits)
        return value
    return cached


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


@dataclass
class _Allocation:
    wg: WorkGroup
    ap: int
    waves: np.ndarray                  # per PEU
    vgpr: list                         # per PEU: (start, length) or None
    sgpr: list
    lds: tuple | None
    power: int                         # instruction power per cycle of the whole WG


@dataclass
class _Parent:
    wg: WorkGroup
    parts: int
    dispatched: int = 0
    completed: int = 0


@dataclass
class _Counters:
    stale_aborts: int = 0
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
        return self.energy(cycle) - self.energy(max(0, cycle - length))


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
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig, workload, *, channels=(),
                 cycles: int = 20000, debug: bool = False, strict: bool = False,
                 skip: bool = True, sample_interval: int = 64, power_window: int = 1024,
                 events: list | None = None, observer=None):
        check_policy(policy, gpu)
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
        self.wave_power = [sum(b * q for b, q in zip(gpu.instruction_weights,
                                                     quantised_mix(mix), strict=True))
                           for mix in mixes]
        assert len(INSTRUCTION_CLASSES) == len(gpu.instruction_weights)
        self.resource_weights = gpu.resource_weight_values()
        self.widths = score_widths(gpu, policy)

        # Status registers (1 = free), true lengths, the matcher's view, free counts.
        self.size = {"vgpr": gpu.vgpr, "sgpr": gpu.sgpr, "lds": gpu.lds}
        self.bits = {"vgpr": [(1 << gpu.vgpr) - 1] * (P * Q),
                     "sgpr": [(1 << gpu.sgpr) - 1] * (P * Q),
                     "lds": [(1 << gpu.lds) - 1] * P}
        self.circuit = {name: circuit_function(policy, n) for name, n in self.size.items()}
        # The true longest run (for fragmentation); the exact and full circuits report it
        # already, so they share one memo.
        self.longest = (self.circuit if policy.circuit in ("exact", "full") else
                        {name: _memoised(lambda bits, n=n: max_free_run(bits, n))
                         for name, n in self.size.items()})
        self.view = {name: np.full(len(self.bits[name]), self.circuit[name](self.bits[name][0]),
                                   dtype=np.int64) for name in self.size}
        self.largest = {name: np.full(len(self.bits[name]), n, dtype=np.int64)
                        for name, n in self.size.items()}
        self.free = {name: np.full(len(self.bits[name]), n, dtype=np.int64)
                     for name, n in self.size.items()}
        self.held = {name: np.zeros(len(self.bits[name]), dtype=np.int64) for name in self.size}
        self.slots = np.full((P, Q), gpu.wave_slots, dtype=np.int64)
        self.pending = deque()                       # (visible cycle, resource, index, length)

        # Admitted WGs have at most peus x wave_slots waves (larger ones are rejected).
        self.table = split_table(Q, Q * gpu.wave_slots)
        self.pointer = np.zeros(P, dtype=np.int64)   # embodiment 8, per AP
        self._rotation = None
        self.lfsr = Lfsr(policy.lfsr_seed)
        self.selected = np.zeros((self.channel_count, gpu.priorities), dtype=bool)
        self.ap_pointer = 0
        self.channel_pointer = 0
        self.buffer: WorkGroup | None = None         # the MIAOW-like one-WG buffer
        self.g = 0

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
        self.peu_waves = np.zeros((P, Q), dtype=np.int64)
        self.waits: list[tuple[int, int, int]] = []  # (priority, channel, wait)
        self.used_integral = {name: 0 for name in ("vgpr", "sgpr", "lds", "wave_slots")}
        self.samples = {"cycle": [], "utilisation": [], "fragmentation": [],
                        "ap_resource_cv": [], "ap_power_cv": []}
        self.completed = 0

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
        live = np.zeros((self.P, self.Q), dtype=np.int64)
        power = [0] * self.P
        for _, _, allocation in self.completions:
            live[allocation.ap] += allocation.waves
            if allocation.wg.dispatched < cycle:
                power[allocation.ap] += allocation.power
        if np.any(self.slots + live != self.gpu.wave_slots):
            self._violation(f"cycle {cycle}: wave slots free + held != {self.gpu.wave_slots}")
        now = [h.energy(cycle + 1) - h.energy(cycle) for h in self.history]
        if now != power:
            self._violation(f"cycle {cycle}: instruction power per AP {now} != the running "
                            f"WGs' {power}")

    # -- resource state --------------------------------------------------------------------------

    def _set_bits(self, name: str, index: int, bits: int, visible: int) -> None:
        self.bits[name][index] = bits
        self.largest[name][index] = self.longest[name](bits)
        self.free[name][index] = bits.bit_count()
        self.pending.append((visible, name, index, self.circuit[name](bits)))

    def _take(self, name: str, index: int, start: int, length: int, cycle: int) -> None:
        mask = ((1 << length) - 1) << start
        bits = self.bits[name][index]
        if bits & mask != mask:
            self._violation(f"cycle {cycle}: {name}[{index}] blocks {start}..{start + length - 1}"
                            f" allocated while some are in use")
        self.held[name][index] += length
        self._set_bits(name, index, bits & ~mask, cycle + 1 + self.policy.circuit_latency)

    def _give(self, name: str, index: int, start: int, length: int, cycle: int) -> None:
        mask = ((1 << length) - 1) << start
        bits = self.bits[name][index]
        if bits & mask:
            self._violation(f"cycle {cycle}: {name}[{index}] blocks {start}..{start + length - 1}"
                            f" released while some are free")
        self.held[name][index] -= length
        self._set_bits(name, index, bits | mask, cycle + self.policy.circuit_latency)

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
        for queue in self.channels:
            if not queue:
                continue
            head = queue[0]
            if not head.independent or head.waves < 2 or head.parent is not None:
                continue
            queue.popleft()
            parts = []
            for _ in range(head.waves):
                parts.append(WorkGroup(id=self.next_id, channel=head.channel, priority=lowest,
                                       waves=1, vgpr=head.vgpr, sgpr=head.sgpr,
                                       lds=-(-head.lds // head.waves), duration=head.duration,
                                       independent=True, arrival=head.arrival,
                                       parent=head.id))
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

    def _rotation_index(self) -> np.ndarray:
        if self._rotation is None:
            self._rotation = (np.arange(self.Q)[None, :] - self.pointer[:, None]) % self.Q
        return self._rotation

    def _waves(self, wg: WorkGroup) -> np.ndarray:
        """Waves per PEU of every AP for ``wg``: the split table, rotated per AP (emb. 8)."""
        row = self.table[wg.waves]
        if self.policy.rotate:
            return row[self._rotation_index()]
        return np.broadcast_to(row, (self.P, self.Q))

    def _match(self, wg: WorkGroup) -> np.ndarray:
        """Boolean per AP: every wave group fits its PEU and the shared needs fit the AP."""
        waves = self._waves(wg)
        ok = (waves * wg.vgpr <= self.view["vgpr"].reshape(self.P, self.Q))
        ok &= (waves * wg.sgpr <= self.view["sgpr"].reshape(self.P, self.Q))
        ok &= waves <= self.slots
        return ok.all(axis=1) & (wg.lds <= self.view["lds"])

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

    def _select(self, cycle: int):
        """``(picked, matched)``: the target ``(channel, matching APs, selection-state
        updates)`` or ``None``, and whether any head matched, per the selection rule."""
        selection = self.policy.selection
        heads = [c for c in range(self.channel_count) if self.channels[c]]
        if selection == "miaow":
            if self.buffer is None:
                for k in range(self.channel_count):
                    channel = (self.channel_pointer + k) % self.channel_count
                    if self.channels[channel]:
                        self.buffer = self.channels[channel].popleft()
                        self.channel_pointer = (channel + 1) % self.channel_count
                        break
            if self.buffer is None:
                return None, False
            match = self._match(self.buffer)
            return ((self.buffer.channel, match, ()) if match.any() else None), match.any()
        if not heads:
            return None, False
        if selection == "strict":
            best = min(self.channels[c][0].priority for c in heads)
            channel = next(c for c in self._channel_order()
                           if self.channels[c] and self.channels[c][0].priority == best)
            match = self._match(self.channels[channel][0])
            return ((channel, match, ()) if match.any() else None), match.any()
        if selection == "gpgpusim":
            for channel in self._channel_order():
                if self.channels[channel]:
                    match = self._match(self.channels[channel][0])
                    if match.any():
                        return (channel, match, ()), True
            return None, False
        matches = {}
        for channel in heads:
            match = self._match(self.channels[channel][0])
            if match.any():
                matches[channel] = match
        if not matches:
            return None, False
        ranks = {c: self._rank(self.channels[c][0].priority, cycle) for c in matches}
        best = min(ranks.values())
        tied = [c for c in matches if ranks[c] == best]
        priority = self.channels[tied[0]][0].priority
        lfsr_state = self.lfsr.state
        channel, flag_updates = self._tie_break(tied, priority)
        return (channel, matches[channel], ((priority, flag_updates, lfsr_state),)), True

    def _channel_order(self) -> list[int]:
        """Channels in round-robin order from the channel pointer."""
        return [(self.channel_pointer + k) % self.channel_count
                for k in range(self.channel_count)]

    def _resource_scores(self) -> list[int]:
        """Embodiment 9's ``sum a_h r_h`` of every AP: ``r`` is the circuit's view summed over
        the AP's PEUs (VGPR, SGPR), its LDS view and its free wave slots; integers."""
        a = self.resource_weights
        vgpr = self.view["vgpr"].reshape(self.P, self.Q).sum(axis=1).tolist()
        sgpr = self.view["sgpr"].reshape(self.P, self.Q).sum(axis=1).tolist()
        lds = self.view["lds"].tolist()
        slots = self.slots.sum(axis=1).tolist()
        return [a[0] * v + a[1] * s + a[2] * d + a[3] * w
                for v, s, d, w in zip(vgpr, sgpr, lds, slots, strict=True)]

    def _choose_ap(self, match: np.ndarray, cycle: int) -> int:
        """The target AP among the matching ones; every score is an integer, ties go to the
        lowest index."""
        candidates = np.flatnonzero(match).tolist()
        choice = self.policy.ap_choice
        if choice == "lowest":
            return candidates[0]
        if choice == "round_robin":
            return next((c for c in candidates if c >= self.ap_pointer), candidates[0])
        if choice in ("resource", "combined"):
            every = self._resource_scores()
            resource = [every[c] for c in candidates]
        if choice in ("instruction", "combined"):
            every = self._history_scores(cycle)
            instruction = [every[c] for c in candidates]
        if choice == "resource":
            return candidates[resource.index(max(resource))]
        if choice == "instruction":
            return candidates[instruction.index(min(instruction))]
        # combined: w_r R / Rmax - w_i B / Bmax, cross-multiplied by Rmax Bmax (> 0), which
        # orders the candidates the same way without a division.
        top_r, top_i = max(max(resource), 1), max(max(instruction), 1)
        w_r, w_i = self.policy.resource_weight, self.policy.instruction_weight
        score = [w_r * r * top_i - w_i * b * top_r
                 for r, b in zip(resource, instruction, strict=True)]
        return candidates[score.index(max(score))]

    # -- dispatch and release -------------------------------------------------------------------

    def _allocate(self, wg: WorkGroup, ap: int, cycle: int) -> _Allocation | None:
        """Place ``wg`` on ``ap`` at first-fit addresses; ``None`` (nothing changed) when the
        current status cannot hold it."""
        waves = self._waves(wg)[ap].copy()
        plan = {"vgpr": [None] * self.Q, "sgpr": [None] * self.Q}
        for q in range(self.Q):
            if waves[q] > self.slots[ap, q]:
                return None
            for name, per_wave in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
                need = int(waves[q]) * per_wave
                if need:
                    start = first_fit(self.bits[name][ap * self.Q + q], self.size[name], need)
                    if start is None:
                        return None
                    plan[name][q] = (start, need)
        lds = None
        if wg.lds:
            start = first_fit(self.bits["lds"][ap], self.size["lds"], wg.lds)
            if start is None:
                return None
            lds = (start, wg.lds)
        for q in range(self.Q):
            for name in ("vgpr", "sgpr"):
                if plan[name][q]:
                    self._take(name, ap * self.Q + q, *plan[name][q], cycle)
        if lds:
            self._take("lds", ap, *lds, cycle)
        self.slots[ap] -= waves
        power = self.wave_power[wg.channel] * wg.waves
        return _Allocation(wg, ap, waves, plan["vgpr"], plan["sgpr"], lds, power)

    def _dispatch(self, cycle: int) -> tuple[bool, bool, bool]:
        """Steps 4-5 of the cycle: returns (dispatched, stale abort, any head matched)."""
        picked, matched = self._select(cycle)
        if picked is None:
            return False, False, matched
        channel, match, updates = picked
        wg = self.buffer if self.policy.selection == "miaow" else self.channels[channel][0]
        ap = self._choose_ap(match, cycle)
        allocation = self._allocate(wg, ap, cycle)
        if allocation is None:
            self.counters.stale_aborts += 1
            for _, _, lfsr_state in updates:
                self.lfsr.state = lfsr_state     # an aborted dispatch changes no state
            self._event(cycle, "stale-abort", wg, ap, self._waves(wg)[ap])
            return False, True, True
        # Commit the selection state.
        for priority, flag_updates, _ in updates:
            for flagged, value in flag_updates:
                self.selected[flagged, priority] = value
        if self.policy.selection == "miaow":
            self.buffer = None
        else:
            self.channels[channel].popleft()
            if self.policy.selection in ("strict", "gpgpusim"):
                self.channel_pointer = (channel + 1) % self.channel_count
        self.ap_pointer = (ap + 1) % self.P
        if self.policy.rotate:
            self.pointer[ap] = (self.pointer[ap] + wg.waves) % self.Q
            self._rotation = None
        self.peu_waves[ap] += allocation.waves
        self._change_power(ap, cycle + 1, allocation.power)
        wg.dispatched, wg.ap = cycle, ap
        self._event(cycle, "dispatch", wg, ap, allocation.waves, allocation)
        if wg.parent is None:
            if self.last_dispatched[wg.channel] > wg.id:
                self._violation(f"cycle {cycle}: channel {wg.channel} dispatched WG {wg.id} "
                                f"after WG {self.last_dispatched[wg.channel]} (FIFO order)")
            self.last_dispatched[wg.channel] = wg.id
            self.waits.append((wg.priority, wg.channel, cycle - wg.arrival))
        else:
            parent = self.parents[wg.parent]
            parent.dispatched += 1
            if parent.dispatched == parent.parts:
                self.waits.append((parent.wg.priority, parent.wg.channel,
                                   cycle - parent.wg.arrival))
        heapq.heappush(self.completions, (cycle + wg.duration + 1, wg.id, allocation))
        return True, False, True

    def _release(self, allocation: _Allocation, cycle: int) -> None:
        wg, ap = allocation.wg, allocation.ap
        for q in range(self.Q):
            for name, placed in (("vgpr", allocation.vgpr[q]), ("sgpr", allocation.sgpr[q])):
                if placed:
                    self._give(name, ap * self.Q + q, *placed, cycle)
        if allocation.lds:
            self._give("lds", ap, *allocation.lds, cycle)
        self.slots[ap] += allocation.waves
        self._change_power(ap, cycle, -allocation.power)
        self._event(cycle, "release", wg, ap, allocation.waves, allocation)
        if wg.completed is not None:
            self._violation(f"cycle {cycle}: WG {wg.id} completed twice")
        wg.completed = cycle - 1
        if wg.parent is None:
            self.completed += 1
        else:
            parent = self.parents[wg.parent]
            parent.completed += 1
            if parent.completed == parent.parts:
                parent.wg.completed = cycle - 1
                self.completed += 1

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
        for name in self.size:
            self.used_integral[name] += cycles * int(self.held[name].sum())
        self.used_integral["wave_slots"] += cycles * (
            self.P * self.Q * self.gpu.wave_slots - int(self.slots.sum()))

    def _sample(self, start: int, stop: int) -> None:
        """Record one sample for every sample cycle in ``[start, stop)``: the state after
        this cycle's dispatch (which no cycle before ``stop`` changes) and the power history
        as of each sample cycle."""
        interval = self.sample_interval
        first = -(-start // interval) * interval
        if first >= stop:
            return
        capacity = {name: float(n) for name, n in self.size.items()}
        used = [float(self.held[name].sum()) / (capacity[name] * len(self.held[name]))
                for name in self.size]
        total_slots = self.P * self.Q * self.gpu.wave_slots
        used.append(1.0 - float(self.slots.sum()) / total_slots)
        fragments = []
        for name in self.size:
            free, largest = self.free[name], self.largest[name]
            nonzero = free > 0
            if nonzero.any():
                fragments.append(1.0 - largest[nonzero] / free[nonzero])
        fragmentation = float(np.concatenate(fragments).mean()) if fragments else 0.0
        per_ap = (self.held["vgpr"].reshape(self.P, self.Q).sum(axis=1) / (self.Q * self.gpu.vgpr)
                  + self.held["sgpr"].reshape(self.P, self.Q).sum(axis=1)
                  / (self.Q * self.gpu.sgpr)
                  + self.held["lds"] / self.gpu.lds
                  + (self.gpu.wave_slots * self.Q - self.slots.sum(axis=1))
                  / (self.Q * self.gpu.wave_slots)) / 4
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
        while cycle < limit:
            while self.completions and self.completions[0][0] == cycle:
                self._release(heapq.heappop(self.completions)[2], cycle)
            while arrivals and arrivals[0].arrival == cycle:
                wg = arrivals.popleft()
                if self._admit(wg, cycle):
                    self.channels[wg.channel].append(wg)
            while self.pending and self.pending[0][0] <= cycle:
                _, name, index, length = self.pending.popleft()
                self.view[name][index] = length
            if self.observer is not None:
                self.observer(cycle, self)
            if self.debug:
                self._check_all(cycle)
            self._accumulate(1)
            waiting = any(self.channels) or self.buffer is not None   # heads at step 4
            dispatched, aborted, matched = self._dispatch(cycle)
            self.counters.processed_cycles += 1
            self.counters.dispatch_cycles += dispatched
            split_now = False
            if splitting:
                if matched or not waiting:
                    self.g = 0
                else:
                    self.g += 1
                    if self.g > threshold:
                        # Step c3, then g back to its initial value (also when no head
                        # could be split: c3 ran and found none).
                        split_now = self._split(cycle)
                        self.g = 0
            has_heads = any(self.channels) or self.buffer is not None
            idle = not (dispatched or aborted or split_now)
            following = cycle + 1
            if idle and self.skip:
                events = [limit]
                if arrivals:
                    events.append(arrivals[0].arrival)
                if self.completions:
                    events.append(self.completions[0][0])
                if self.pending:
                    events.append(self.pending[0][0])
                counting = splitting and waiting and not matched
                if counting:
                    events.append(cycle + threshold + 1 - self.g)
                following = max(cycle + 1, min(events))
                if counting:
                    self.g += following - cycle - 1
            if not arrivals and not self.completions and not has_heads:
                finished_at = cycle         # cycles 0 .. cycle - 1 held work
                self._sample(cycle, cycle + 1)
                break
            self._sample(cycle, min(following, limit))
            self._accumulate(min(following, limit) - cycle - 1)
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
            "peu_imbalance": coefficient_of_variation(self.peu_waves.ravel()),
            "fragmentation": mean("fragmentation"),
            "splits": self.counters.splits,
            "sub_workgroups": self.counters.sub_workgroups,
            "stale_aborts": self.counters.stale_aborts,
            "invariant_violations": len(self.counters.violations),
            "violations": self.counters.violations[:20],
            "processed_cycles": self.counters.processed_cycles,
            "fixed_point": self.widths,
            "series": {"cycle": self.samples["cycle"],
                       "utilisation": [float(np.mean(u)) for u in self.samples["utilisation"]],
                       "ap_resource_cv": self.samples["ap_resource_cv"],
                       "ap_power_cv": self.samples["ap_power_cv"],
                       "peu_waves": self.peu_waves.ravel().tolist(),
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
            + [f"sgpr_start_{q}" for q in range(peus)] + ["lds_start", "reason"])


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
            writer.writerow(row)
    return path
