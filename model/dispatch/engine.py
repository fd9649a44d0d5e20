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
   and the target AP (round-robin, embodiment 9, 10 or both), **allocate** each contiguous
   need at the lowest address where it fits in the *current* status (the exact circuit's
   ``fit_start``, :func:`model.maxblock.first_fit`) plus the counted slots. When the current
   status cannot hold it (only possible with ``L > 0``: the view was stale), nothing is
   dispatched this cycle (a *stale abort*) and no selection state changes.
5. **Embodiment 3.** When every head failed to match, ``g += 1``; when ``g`` exceeds the
   threshold, every independent head WG is replaced by one sub-WG per wave at the lowest
   priority (the sub-WGs are the channel's next heads from cycle ``t + 1``) and ``g = 0``.
   A cycle with a match sets ``g = 0``.

A WG dispatched in cycle ``t`` with duration ``d`` runs in cycles ``t + 1 .. t + d`` and its
resources are free again in cycle ``t + d + 1``. At most one WG is dispatched per cycle.

Cycles in which nothing can change (no dispatch, and no release, arrival, free-block view
update or split before the next event) are skipped in one step; the counters that would have
advanced in them (``g``, the time integrals, the samples) are advanced by the same amount, so
skipping changes no result (a test runs with skipping off and compares).
"""

import heapq
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from model.checks import InvariantError
from model.dispatch.config import (
    INSTRUCTION_CLASSES,
    ChannelConfig,
    GpuConfig,
    PolicyConfig,
    WorkGroup,
    check_policy,
)
from model.maxblock import (
    default_samples,
    first_fit,
    grouped_max_free_run,
    max_free_run,
    sampled_max_free_run,
)
from model.stats import coefficient_of_variation, summary

__all__ = ["InvariantError", "Lfsr", "DispatchSimulator", "circuit_function", "split_table",
           "simulate"]


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


@dataclass
class _Allocation:
    wg: WorkGroup
    ap: int
    waves: np.ndarray                  # per PEU
    vgpr: list                         # per PEU: (start, length) or None
    sgpr: list
    lds: tuple | None
    power: float                       # instruction power per cycle of the whole WG


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


class DispatchSimulator:
    """One policy on one workload, cycle by cycle (see the module docstring for the timing).

    Parameters
    ----------
    gpu : GpuConfig
    policy : PolicyConfig
    workload : list of WorkGroup
        Submitted WGs in arrival order (copied; the caller's objects are not changed).
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
    observer : callable, optional
        Called as ``observer(cycle, simulator)`` in every evaluated cycle after step 3 (the
        free-block view), before the dispatch: for tests that watch or disturb the state.
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig, workload, *, channels=(),
                 cycles: int = 20000, debug: bool = False, strict: bool = False,
                 skip: bool = True, sample_interval: int = 64, observer=None):
        check_policy(policy, gpu)
        self.gpu, self.policy = gpu, policy
        self.cycles_limit = cycles
        self.debug, self.strict, self.skip = debug, strict, skip
        self.sample_interval = sample_interval
        self.observer = observer
        self.workload = [WorkGroup(**{k: v for k, v in vars(wg).items()
                                      if k not in ("dispatched", "completed", "ap")})
                         for wg in workload]
        P, Q = gpu.aps, gpu.peus
        self.P, self.Q = P, Q
        weights = np.array(gpu.instruction_weights)
        self.channel_count = max([len(channels)] + [wg.channel + 1 for wg in self.workload])
        mixes = [channels[i].mix if i < len(channels) else ChannelConfig().mix
                 for i in range(self.channel_count)]
        self.wave_power = [float(np.dot(weights, mix)) for mix in mixes]
        assert len(INSTRUCTION_CLASSES) == len(weights)

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

        max_waves = max([Q * gpu.wave_slots] + [wg.waves for wg in self.workload])
        self.table = split_table(Q, max_waves)
        self.pointer = np.zeros(P, dtype=np.int64)   # embodiment 8, per AP
        self._rotation = None
        self.lfsr = Lfsr(policy.lfsr_seed)
        self.selected = np.zeros((self.channel_count, gpu.priorities), dtype=bool)
        self.ap_pointer = 0
        self.channel_pointer = 0
        self.buffer: WorkGroup | None = None         # the MIAOW-like one-WG buffer
        self.g = 0

        # Embodiment 10: instruction power history per AP, as a piecewise-linear energy.
        self.rate = np.zeros(P)
        self.history = [([0], [0.0], [0.0]) for _ in range(P)]   # times, energies, rates

        self.channels = [deque() for _ in range(self.channel_count)]
        self.completions: list = []
        self.parents: dict[int, _Parent] = {}
        self.next_id = len(self.workload)
        self.last_dispatched = [-1] * self.channel_count
        self.rejected: list[dict] = []
        self.counters = _Counters()
        self.peu_waves = np.zeros((P, Q), dtype=np.int64)
        self.waits: list[tuple[int, int, int]] = []  # (priority, channel, wait)
        self.used_integral = {name: 0.0 for name in ("vgpr", "sgpr", "lds", "wave_slots")}
        self.samples = {"cycle": [], "utilisation": [], "fragmentation": [],
                        "ap_resource_cv": [], "ap_power_cv": []}
        self.sample_weights: list[int] = []
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
        for _, _, allocation in self.completions:
            live[allocation.ap] += allocation.waves
        if np.any(self.slots + live != self.gpu.wave_slots):
            self._violation(f"cycle {cycle}: wave slots free + held != {self.gpu.wave_slots}")

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

    def _energy(self, ap: int, cycle: int) -> float:
        """Instruction energy the AP executed in cycles before ``cycle``."""
        times, energies, rates = self.history[ap]
        position = bisect_right(times, cycle) - 1
        return energies[position] + rates[position] * (cycle - times[position])

    def _change_rate(self, ap: int, cycle: int, delta: float) -> None:
        """The AP's instruction power changes by ``delta`` from cycle ``cycle`` on."""
        times, energies, rates = self.history[ap]
        energy = self._energy(ap, cycle)
        if times[-1] == cycle:
            rates[-1] += delta
        else:
            times.append(cycle)
            energies.append(energy)
            rates.append(rates[-1] + delta)
        horizon = cycle - 2 * self.policy.history_cycles
        if len(times) > 64 and times[32] < horizon:
            del times[:32], energies[:32], rates[:32]

    def _window_power(self, cycle: int) -> np.ndarray:
        """Embodiment 10's ``tb_f``: weighted instructions over the last ``Nx`` cycles."""
        start = max(0, cycle - self.policy.history_cycles)
        return np.array([self._energy(ap, cycle) - self._energy(ap, start)
                         for ap in range(self.P)])

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

    def _admit(self, wg: WorkGroup) -> bool:
        busiest = -(-wg.waves // self.Q)
        reason = self._fits_empty(busiest, wg, wg.lds)
        if reason is None:
            return True
        if (wg.independent and wg.waves > 1 and self._splitting
                and self._fits_empty(1, wg, -(-wg.lds // wg.waves)) is None):
            return True          # it will be split (embodiment 3) and its waves fit alone
        self.rejected.append({"id": wg.id, "channel": wg.channel, "arrival": wg.arrival,
                              "reason": f"WG {wg.id} (channel {wg.channel}) can never be "
                                        f"dispatched: {reason}"})
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

    def _choose_ap(self, match: np.ndarray, cycle: int) -> int:
        candidates = np.flatnonzero(match)
        choice = self.policy.ap_choice
        if choice == "lowest":
            return int(candidates[0])
        if choice == "round_robin":
            after = candidates[candidates >= self.ap_pointer]
            return int(after[0] if after.size else candidates[0])
        resource = instruction = None
        if choice in ("resource", "combined"):
            a = self.gpu.resource_weights
            score = (a[0] * self.view["vgpr"].reshape(self.P, self.Q).sum(axis=1)
                     + a[1] * self.view["sgpr"].reshape(self.P, self.Q).sum(axis=1)
                     + a[2] * self.view["lds"] + a[3] * self.slots.sum(axis=1))
            resource = score[candidates]
        if choice in ("instruction", "combined"):
            instruction = self._window_power(cycle)[candidates]
        if choice == "resource":
            return int(candidates[np.argmax(resource)])
        if choice == "instruction":
            return int(candidates[np.argmin(instruction)])
        # combined: each term normalised by its largest value among the candidates
        top_r, top_i = resource.max(), instruction.max()
        score = (self.policy.resource_weight * (resource / top_r if top_r else 0 * resource)
                 - self.policy.instruction_weight
                 * (instruction / top_i if top_i else 0 * instruction))
        return int(candidates[np.argmax(score)])

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
        self._change_rate(ap, cycle + 1, allocation.power)
        wg.dispatched, wg.ap = cycle, ap
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
        self._change_rate(ap, cycle, -allocation.power)
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

    # -- metrics -------------------------------------------------------------------------------

    def _accumulate(self, cycles: int) -> None:
        if cycles <= 0:
            return
        for name in self.size:
            self.used_integral[name] += cycles * float(self.held[name].sum())
        self.used_integral["wave_slots"] += cycles * float(
            self.P * self.Q * self.gpu.wave_slots - self.slots.sum())

    def _sample(self, start: int, stop: int) -> None:
        """Record the state (after this cycle's dispatch) for every sample cycle in
        ``[start, stop)``."""
        interval = self.sample_interval
        first = -(-start // interval) * interval
        if first >= stop:
            return
        count = (stop - 1 - first) // interval + 1
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
        power = self._window_power(first)
        self.samples["cycle"].append(first)
        self.samples["utilisation"].append(used)
        self.samples["fragmentation"].append(fragmentation)
        self.samples["ap_resource_cv"].append(coefficient_of_variation(per_ap))
        self.samples["ap_power_cv"].append(coefficient_of_variation(power))
        self.sample_weights.append(count)

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> dict:
        """Simulate until every WG has completed or the cycle limit; return the metrics."""
        arrivals = deque(self.workload)
        cycle = 0
        finished_at = None
        limit = self.cycles_limit
        while cycle < limit:
            while self.completions and self.completions[0][0] == cycle:
                self._release(heapq.heappop(self.completions)[2], cycle)
            while arrivals and arrivals[0].arrival == cycle:
                wg = arrivals.popleft()
                if self._admit(wg):
                    self.channels[wg.channel].append(wg)
            while self.pending and self.pending[0][0] <= cycle:
                _, name, index, length = self.pending.popleft()
                self.view[name][index] = length
            if self.observer is not None:
                self.observer(cycle, self)
            if self.debug:
                self._check_all(cycle)
            self._accumulate(1)
            dispatched, aborted, matched = self._dispatch(cycle)
            self.counters.processed_cycles += 1
            self.counters.dispatch_cycles += dispatched
            has_heads = any(self.channels) or self.buffer is not None
            split_now = False
            if self._splitting and has_heads:
                if matched:
                    self.g = 0
                else:
                    self.g += 1
                    if self.g > self.policy.split_threshold:
                        split_now = self._split(cycle)
                        self.g = 0
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
                if self._splitting and has_heads and not matched:
                    events.append(cycle + self.policy.split_threshold + 1 - self.g)
                following = max(cycle + 1, min(events))
                if self._splitting and has_heads and not matched:
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
        weights = np.array(self.sample_weights, dtype=float)

        def weighted(key):
            if not weights.size:
                return 0.0
            return float(np.average(np.array(self.samples[key], dtype=float), weights=weights,
                                    axis=0).mean())
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
            "rejections": self.rejected,
            "throughput": 1000.0 * self.completed / cycles if cycles else 0.0,
            "wait": {**summary(waits_all), "per_priority": per_priority,
                     "per_channel": per_channel},
            "utilisation": utilisation,
            "ap_imbalance": {"resource": weighted("ap_resource_cv"),
                             "power": weighted("ap_power_cv")},
            "peu_imbalance": coefficient_of_variation(self.peu_waves.ravel()),
            "fragmentation": weighted("fragmentation"),
            "splits": self.counters.splits,
            "sub_workgroups": self.counters.sub_workgroups,
            "stale_aborts": self.counters.stale_aborts,
            "invariant_violations": len(self.counters.violations),
            "violations": self.counters.violations[:20],
            "processed_cycles": self.counters.processed_cycles,
            "series": {"cycle": self.samples["cycle"],
                       "utilisation": [float(np.mean(u)) for u in self.samples["utilisation"]],
                       "peu_waves": self.peu_waves.ravel().tolist(),
                       "waits": [[p, w] for p, _, w in self.waits]},
        }


def simulate(gpu: GpuConfig, policy: PolicyConfig, workload, **options) -> dict:
    """Run one policy on one workload (keyword options as :class:`DispatchSimulator`)."""
    return DispatchSimulator(gpu, policy, workload, **options).run()
