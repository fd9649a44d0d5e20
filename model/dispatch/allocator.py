"""Step a43: where the target WG goes on the target AP, in the *current* status registers.

Seed 002, embodiment 1's allocation (contiguous resources at a start address and a count):
each contiguous need is placed at the lowest address where it fits in the status of this
cycle (the exact circuit's ``fit_start``, :func:`model.maxblock.first_fit`), the counted wave
slots are taken per PEU. When the current status cannot hold it (only possible with
``circuit_latency > 0``: the view was stale) nothing is placed: the dispatcher aborts the
dispatch (a *stale abort*). RTL twin: :mod:`hw.dispatch.allocator`.
"""

from model.dispatch.config import GpuConfig, PolicyConfig, WorkGroup
from model.dispatch.matcher import Matcher
from model.dispatch.resources import Allocation, Resources
from model.maxblock import first_fit_unchecked

__all__ = ["Allocator"]


class Allocator:
    """First fit of a WG on an AP, and the taking of what it needs.

    ``wave_power[channel]`` is one wave's instruction power of the channel's mix
    (embodiment 10, in 1/256 weighted instructions per cycle): an allocation records the
    WG's.
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig, resources: Resources,
                 matcher: Matcher, wave_power: list[int]):
        self.Q = gpu.peus
        self.latency = policy.circuit_latency
        self.resources, self.matcher = resources, matcher
        self.bits, self.slots = resources.bits, resources.slots
        self.wave_power = wave_power

    def allocate(self, wg: WorkGroup, ap: int, cycle: int) -> Allocation | None:
        """Place ``wg`` on ``ap`` at first-fit addresses; ``None`` (nothing changed) when the
        current status cannot hold it."""
        waves = self.matcher.placement(wg, ap)
        if waves is None:
            return None
        slots = self.slots[ap]
        if any(count > slots[q] for q, count in enumerate(waves)):
            return None
        plan = self.plan(wg, ap, waves)
        if plan is None:
            return None
        return self.take(wg, ap, waves, plan, cycle)

    def plan(self, wg: WorkGroup, ap: int, waves) -> tuple | None:
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

    def still_free(self, ap: int, waves, plan) -> bool:
        """Every block of ``plan`` and every wave slot ``waves`` needs is free now."""
        base = ap * self.Q
        slots = self.slots[ap]
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

    def take(self, wg: WorkGroup, ap: int, waves, plan, cycle: int) -> Allocation:
        """Take the blocks of ``plan`` and the wave slots: the allocation of ``wg`` (the view
        shows the blocks taken from cycle ``cycle + 1 + circuit_latency``)."""
        vgpr_plan, sgpr_plan, lds = plan
        allocation = Allocation(wg, ap, waves, vgpr_plan, sgpr_plan, lds,
                                self.wave_power[wg.channel] * wg.waves)
        self.resources.take(allocation, cycle, cycle + 1 + self.latency)
        self.matcher.taken(allocation)
        return allocation
