"""The target WG and the target AP: embodiment 1's highest-priority candidate with
embodiment 2's windows and the a41/a42 tie-break (16-bit LFSR), and the AP choice (round
robin, lowest index, embodiment 9's resource score, embodiment 10's history, or both
combined), every score an integer.

Seed 002, embodiments 1 (steps a4, a41-a42), 2 (priority windows), 9 and 10. RTL twin:
:mod:`hw.dispatch.selector` (and, for the pipelined decision's choice from registered
matches, :mod:`hw.dispatch.pipeline`).

:class:`Selector` is the seed's rule (``selection = "multi"``); the baselines' rules (prior
art, MIAOW-like, GPGPU-Sim-like) are its subclasses in :mod:`model.dispatch.baselines`. The
selection state (tie-break flags, LFSR, pointers) changes only with a dispatch carried out
(:meth:`Selector.keep`); a stale abort leaves it as it was (:meth:`Selector.abort`).
"""

import numpy as np

from model.dispatch.config import MIX_FRACTION_BITS, GpuConfig, PolicyConfig, WorkGroup
from model.dispatch.matcher import Matcher
from model.dispatch.queues import Queues
from model.dispatch.resources import Resources
from model.dispatch.views import View

__all__ = ["Lfsr", "Selector", "score_widths", "set_bits"]


def set_bits(mask: int) -> list[int]:
    """The indices of the set bits of ``mask`` (>= 0), lowest first."""
    if mask.bit_length() > 64:
        # A big GPU (a CDNA3 has 304 CUs): numpy over the binary digits, not a Python loop.
        digits = np.frombuffer(format(mask, "b")[::-1].encode(), dtype=np.uint8)
        return np.flatnonzero(digits == ord("1")).tolist()
    indices = []
    while mask:
        low = mask & -mask
        indices.append(low.bit_length() - 1)
        mask ^= low
    return indices


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


class Selector:
    """Embodiment 1's selection (``selection = "multi"``): among the channels whose head
    matches some AP, the highest priority (ranked by embodiment 2's windows), ties broken by
    step a42's flags and the LFSR; then the target AP by the policy's ``ap_choice``.

    State: ``selected[channel, priority]`` the a41 flags, ``lfsr``, ``ap_pointer`` (round
    robin), ``channel_pointer`` (the baselines' round-robin channel order) and ``buffer``
    (the MIAOW-like one-WG buffer; always ``None`` here).
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig, queues: Queues,
                 matcher: Matcher, resources: Resources, view: View):
        self.policy = policy
        self.P = gpu.aps
        self.queues, self.matcher, self.resources = queues, matcher, resources
        self.channels = queues.channels
        self.channel_count = queues.channel_count
        self.view, self.view_sum = view.view, view.view_sum
        self.resource_weights = gpu.resource_weight_values()
        self.lfsr = Lfsr(policy.lfsr_seed)
        self.selected = np.zeros((self.channel_count, gpu.priorities), dtype=bool)
        self.ap_pointer = 0
        self.channel_pointer = 0
        self.buffer: WorkGroup | None = None

    # -- the target WG -------------------------------------------------------------------------

    def rank(self, priority: int, cycle: int) -> int:
        """Embodiment 2: the window's priority is promoted above all; the rest keep order."""
        windows = self.policy.windows
        if windows:
            position = cycle % sum(windows)
            for promoted, length in enumerate(windows):
                if position < length:
                    return -1 if priority == promoted else priority
                position -= length
        return priority

    def tie_break(self, channels: list[int], priority: int) -> tuple[int, list]:
        """Step a42: the chosen channel and the flag updates to commit with the dispatch."""
        if len(channels) == 1:
            return channels[0], []
        clear = [c for c in channels if not self.selected[c, priority]]
        if clear:
            chosen = clear[self.lfsr.pick(len(clear))]
            return chosen, [(chosen, True)]
        chosen = channels[self.lfsr.pick(len(channels))]
        return chosen, [(c, False) for c in channels if c != chosen]

    def highest(self, matches: list[int], priorities: dict, cycle: int):
        """Embodiment 1 with embodiment 2's ranks among the channels ``matches`` (two or
        more) whose heads have ``priorities``: ``(channel, priority, a42 flag updates)``."""
        ranks = {c: self.rank(priorities[c], cycle) for c in matches}
        best = min(ranks.values())
        tied = [c for c in matches if ranks[c] == best]
        priority = priorities[tied[0]]
        channel, flag_updates = self.tie_break(tied, priority)
        return channel, priority, flag_updates

    def select(self, cycle: int):
        """``(picked, matched)``: the target ``(channel, matching APs as a bit mask,
        selection-state updates)`` or ``None``, and whether any head matched."""
        channels = self.channels
        mask_of = self.matcher.head_mask
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
        channel, priority, flag_updates = self.highest(
            list(matches), {c: channels[c][0].priority for c in matches}, cycle)
        return (channel, matches[channel], ((priority, flag_updates, lfsr_state),)), True

    def choose(self, candidates: dict, cycle: int) -> int | None:
        """The decision pipeline's choice among ``candidates`` (``{channel: (WG, APs it
        fits)}``, from the previous cycle's match): the chosen channel or ``None``. The flag
        updates take effect at once (a chosen WG is dispatched or flushed)."""
        matches = [c for c, (_, mask) in candidates.items() if mask]
        if len(matches) == 1:
            return matches[0]
        if matches:
            chosen, priority, flag_updates = self.highest(
                matches, {c: candidates[c][0].priority for c in matches}, cycle)
            for flagged, value in flag_updates:
                self.selected[flagged, priority] = value
            return chosen
        return None

    def head(self, channel: int) -> WorkGroup:
        """The WG :meth:`select` picked in ``channel``."""
        return self.channels[channel][0]

    def take(self, channel: int):
        """The picked WG leaves its FIFO; returns the FIFO (``None`` when it left a
        buffer)."""
        queue = self.channels[channel]
        queue.popleft()
        return queue

    def keep(self, updates) -> None:
        """Commit the selection-state updates of :meth:`select` with the dispatch."""
        for priority, flag_updates, _ in updates:
            for flagged, value in flag_updates:
                self.selected[flagged, priority] = value

    def abort(self, updates) -> None:
        """A stale abort: the LFSR as it was before :meth:`select` (nothing else changed)."""
        for _, _, lfsr_state in updates:
            self.lfsr.state = lfsr_state

    def advance(self, channel: int, ap: int) -> None:
        """A WG of ``channel`` goes to ``ap``: the AP pointer moves past it (at the dispatch,
        or at the choice in the decision pipeline)."""
        self.ap_pointer = (ap + 1) % self.P

    def channel_order(self) -> list[int]:
        """Channels in round-robin order from the channel pointer."""
        return [(self.channel_pointer + k) % self.channel_count
                for k in range(self.channel_count)]

    # -- the target AP -------------------------------------------------------------------------

    def resource_scores(self, aps=None) -> list[int]:
        """Embodiment 9's ``sum a_h r_h`` of every AP of ``aps`` (default: all), in order:
        ``r`` is the circuit's view summed over the AP's PEUs (VGPR, SGPR), its LDS view and
        its free wave slots; integers."""
        a0, a1, a2, a3 = self.resource_weights
        vgpr, sgpr = self.view_sum["vgpr"], self.view_sum["sgpr"]
        lds, slots = self.view["lds"], self.resources.ap_slots
        return [a0 * vgpr[ap] + a1 * sgpr[ap] + a2 * lds[ap] + a3 * slots[ap]
                for ap in (range(self.P) if aps is None else aps)]

    def choose_ap(self, mask: int, cycle: int, scores=None) -> int:
        """The target AP among the matching ones (bit mask); every score is an integer, ties
        go to the lowest index. ``scores``: every AP's embodiment 9 and 10 scores as the
        decision pipeline's match saw them (default: now)."""
        policy = self.policy
        choice = policy.ap_choice
        if choice == "lowest":
            return (mask & -mask).bit_length() - 1
        if choice == "round_robin":
            after = mask >> self.ap_pointer << self.ap_pointer
            chosen = after or mask
            return (chosen & -chosen).bit_length() - 1
        candidates = set_bits(mask)
        if scores is not None:
            resource = [scores[0][ap] for ap in candidates]
            instruction = [scores[1][ap] for ap in candidates]
        if scores is None and choice in ("resource", "combined"):
            resource = self.resource_scores(candidates)
        if scores is None and choice in ("instruction", "combined"):
            resources = self.resources
            if resources.ema_history:
                resources.advance_ema(cycle)
                instruction = [resources.ema[ap] for ap in candidates]
            else:
                instruction = resources.history_windows(candidates, cycle,
                                                        policy.history_cycles)
        if choice == "resource":
            return candidates[resource.index(max(resource))]
        if choice == "instruction":
            return candidates[instruction.index(min(instruction))]
        # combined: w_r R / Rmax - w_i B / Bmax, cross-multiplied by Rmax Bmax (> 0), which
        # orders the candidates the same way without a division.
        if policy.combined_scale == "all":
            resource_all = scores[0] if scores is not None else self.resource_scores()
            instruction_all = (scores[1] if scores is not None
                               else self.resources.history_scores(cycle))
            top_r, top_i = max(max(resource_all), 1), max(max(instruction_all), 1)
        else:
            top_r, top_i = max(max(resource), 1), max(max(instruction), 1)
        w_r, w_i = policy.resource_weight, policy.instruction_weight
        score = [w_r * r * top_i - w_i * b * top_r
                 for r, b in zip(resource, instruction, strict=True)]
        return candidates[score.index(max(score))]
