"""The resource table: status registers (1 = free) of every contiguous resource instance with
their held and free counts, free wave slots, each AP's instruction power and its history, and
the allocation record of every running WG.

Seed 002: the type-1 (contiguous) and type-2 (counted) resources of embodiment 1, and
embodiment 10's instruction-power history (a window sum over the last ``Nx`` cycles, or the
exponential average a register keeps). RTL twin: :mod:`hw.dispatch.resources`.

A block change (:meth:`Resources.change`, :meth:`Resources.change_plan`) updates the status
word, its held and free counts and true longest run, and hands the circuit's new length to
the view (:class:`model.dispatch.views.View`) for the cycle from which the matcher sees it.
Taking blocks that are in use, or giving back blocks that are free, is an invariant
violation.
"""

from bisect import bisect_right
from dataclasses import dataclass

from model.dispatch.config import GpuConfig, PolicyConfig, WorkGroup
from model.dispatch.views import View

__all__ = ["Allocation", "History", "Resources", "first_block"]


@dataclass(slots=True)
class Allocation:
    """The record of a dispatched WG (or sub-WG): where it runs and what it holds."""
    wg: WorkGroup
    ap: int
    waves: tuple                       # per PEU
    vgpr: list                         # per PEU: (start, length), a bit mask, or None
    sgpr: list
    lds: tuple | int | None
    power: int                         # instruction power per cycle of the whole WG


def _blocks(mask: int) -> str:
    """The blocks of ``mask`` for a message: ``a..b`` when contiguous, else the mask."""
    low = (mask & -mask).bit_length() - 1
    high = mask.bit_length() - 1
    return f"{low}..{high}" if mask >> low == (1 << (high - low + 1)) - 1 else f"{mask:#x}"


def first_block(placed) -> int | None:
    """The lowest block of a placed need (``(start, length)`` or a bit mask), for the event
    log's start columns."""
    if placed is None:
        return None
    if placed.__class__ is int:
        return (placed & -placed).bit_length() - 1
    return placed[0]


class History:
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
        start = cycle - length
        if start >= last:               # the window lies in the last segment: no search
            return self.rates[-1] * length
        if cycle >= last:               # the usual case: the current segment, no search
            end = self.energies[-1] + self.rates[-1] * (cycle - last)
        else:
            end = self.energy(cycle)
        return end - self.energy(start) if start > 0 else end


class Resources:
    """Status registers, counts, slots, records and power of one GPU.

    State (Python lists with running totals, so that no cycle needs a numpy sum):
    ``bits[name][index]`` the status words, ``held``/``free``/``largest`` per instance,
    ``held_total`` per resource; ``slots[ap][q]`` free wave slots per PEU, ``ap_slots`` per
    AP, ``slots_free`` in all; ``running`` the allocation record of every dispatched WG (or
    part) not yet released, by id; ``power`` each AP's instruction power now (integer),
    ``history`` its exact history and ``ema`` its exponential average (advanced lazily).

    ``violation(message)`` is called on a block taken twice or freed twice.
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig, view: View, violation,
                 power_window: int):
        P, Q = gpu.aps, gpu.peus
        self.P, self.Q = P, Q
        self.violation = violation
        self.size = view.size
        counts = view.counts
        self.bits = {name: [(1 << n) - 1] * counts[name] for name, n in self.size.items()}
        self.largest = {name: [n] * counts[name] for name, n in self.size.items()}
        self.free = {name: [n] * counts[name] for name, n in self.size.items()}
        self.held = {name: [0] * counts[name] for name in self.size}
        self.held_total = dict.fromkeys(self.size, 0)
        self.pending = view.pending
        circuit, longest = view.circuit, view.longest
        # Per resource, what a block change updates (``longest`` None: the circuit's length
        # is the true longest run).
        self._state = {name: (self.bits[name], self.held[name], self.largest[name],
                              self.free[name], circuit[name],
                              None if longest[name] is circuit[name] else longest[name])
                       for name in self.size}
        self.slots = [[gpu.wave_slots] * Q for _ in range(P)]
        self.ap_slots = [Q * gpu.wave_slots] * P          # free wave slots per AP
        self.slots_free = P * Q * gpu.wave_slots
        self.running: dict[int, Allocation] = {}
        # APs whose blocks or wave slots changed since the metrics last sampled them.
        self.dirty: set[int] = set()

        # Embodiment 10: per AP, the power now (integer), the exact history (for the window
        # and the metric) and the exponential average (history = "ema"), advanced lazily.
        self.ema_history = policy.history == "ema"
        self.history_cycles = policy.history_cycles
        self.power = [0] * P
        self.history = [History() for _ in range(P)]
        self.keep = 2 * max(policy.history_cycles, power_window)
        self.shift = policy.history_cycles.bit_length() - 1
        self.ema = [0] * P
        self.ema_time = 0
        # The latest cycle from which some AP's power changed (every history's last time).
        self.last_power_change = 0

    # -- status registers ----------------------------------------------------------------------

    def change_plan(self, name: str, base: int, plan: list, cycle: int, visible: int,
                    take: bool) -> None:
        """:meth:`change` for each PEU's ``(start, length)`` (or ``None``) of ``plan``, the
        PEUs of one AP from resource instance ``base`` (the same steps, one call)."""
        all_bits, held, largest, free, circuit, longest = self._state[name]
        cache, pending = circuit.cache, self.pending
        self.dirty.add(base // self.Q)
        total = 0
        for q, placed in enumerate(plan):
            if placed is None:
                continue
            index = base + q
            if placed.__class__ is int:     # a bit mask (a baseline's non-contiguous units)
                mask, length = placed, placed.bit_count()
            else:
                start, length = placed
                mask = ((1 << length) - 1) << start
            bits = all_bits[index]
            if take:
                if bits & mask != mask:
                    self.violation(f"cycle {cycle}: {name}[{index}] blocks "
                                   f"{_blocks(mask)} allocated while some are in use")
                bits &= ~mask
            else:
                if bits & mask:
                    self.violation(f"cycle {cycle}: {name}[{index}] blocks "
                                   f"{_blocks(mask)} released while some are free")
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

    def change(self, name: str, index: int, placed, cycle: int, visible: int,
               take: bool) -> None:
        """Take (``take``) or give back the blocks ``placed`` (``(start, length)``, or a bit
        mask) of one resource instance: its status register, held and free counts, true
        longest run, and the circuit's length for the matcher from cycle ``visible``."""
        all_bits, held, largest, free, circuit, longest = self._state[name]
        self.dirty.add(index if len(all_bits) == self.P else index // self.Q)
        if placed.__class__ is int:
            mask, length = placed, placed.bit_count()
        else:
            start, length = placed
            mask = ((1 << length) - 1) << start
        bits = all_bits[index]
        if take:
            if bits & mask != mask:
                self.violation(f"cycle {cycle}: {name}[{index}] blocks {_blocks(mask)} "
                               f"allocated while some are in use")
            bits &= ~mask
        else:
            if bits & mask:
                self.violation(f"cycle {cycle}: {name}[{index}] blocks {_blocks(mask)} "
                               f"released while some are free")
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

    def take(self, allocation: Allocation, cycle: int, visible: int) -> None:
        """Take the blocks and wave slots of ``allocation`` (the view shows the blocks from
        cycle ``visible``)."""
        ap = allocation.ap
        self.dirty.add(ap)
        base = ap * self.Q
        self.change_plan("vgpr", base, allocation.vgpr, cycle, visible, True)
        self.change_plan("sgpr", base, allocation.sgpr, cycle, visible, True)
        if allocation.lds:
            self.change("lds", ap, allocation.lds, cycle, visible, True)
        slots = self.slots[ap]
        for q, count in enumerate(allocation.waves):
            slots[q] -= count
        waves = allocation.wg.waves
        self.ap_slots[ap] -= waves
        self.slots_free -= waves

    def give_back(self, allocation: Allocation, cycle: int, visible: int) -> None:
        """Free the blocks and wave slots of ``allocation`` (a release in ``cycle``)."""
        ap = allocation.ap
        self.dirty.add(ap)
        base = ap * self.Q
        self.change_plan("vgpr", base, allocation.vgpr, cycle, visible, False)
        self.change_plan("sgpr", base, allocation.sgpr, cycle, visible, False)
        if allocation.lds:
            self.change("lds", ap, allocation.lds, cycle, visible, False)
        slots = self.slots[ap]
        for q, count in enumerate(allocation.waves):
            slots[q] += count
        waves = allocation.wg.waves
        self.ap_slots[ap] += waves
        self.slots_free += waves

    # -- embodiment 10's history ---------------------------------------------------------------

    def advance_ema(self, cycle: int) -> None:
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

    def change_power(self, ap: int, cycle: int, delta: int) -> None:
        """The AP's instruction power changes by ``delta`` from cycle ``cycle`` on."""
        if self.ema_history:
            self.advance_ema(cycle)
        self.power[ap] += delta
        self.history[ap].change(cycle, delta, self.keep)
        if cycle > self.last_power_change:
            self.last_power_change = cycle

    def history_scores(self, cycle: int) -> list[int]:
        """Embodiment 10's ``tb_f`` of every AP as the policy keeps it, at ``cycle``."""
        if self.ema_history:
            self.advance_ema(cycle)
            return list(self.ema)
        return self.history_windows(range(self.P), cycle, self.history_cycles)

    def history_windows(self, aps, cycle: int, length: int) -> list[int]:
        """``history[ap].window(cycle, length)`` of every AP of ``aps``, in order: the same
        integers, in one loop (embodiment 10 scores every candidate AP of every decision)."""
        start = cycle - length
        history = self.history
        windows = []
        append = windows.append
        for ap in aps:
            h = history[ap]
            times = h.times
            last = times[-1]
            if start >= last:
                # The AP's power has not changed since ``start``: ``rate x length``, no search.
                append(h.rates[-1] * length)
                continue
            energies, rates = h.energies, h.rates
            if cycle >= last:
                end = energies[-1] + rates[-1] * (cycle - last)
            else:
                at = bisect_right(times, cycle) - 1
                end = energies[at] + rates[at] * (cycle - times[at])
            if start > 0:
                at = bisect_right(times, start) - 1
                end -= energies[at] + rates[at] * (start - times[at])
            append(end)
        return windows
