"""Embodiment 1's match of every channel's head against every AP, with embodiment 8's split.

Seed 002, embodiment 1 (steps a3, a31-a32: a head fits an AP when every PEU can take its wave
group — free wave slots, a VGPR and an SGPR block no longer than the view's lengths — and
the WG's LDS fits the AP's view) and embodiment 8 (steps h101-h103: the split table and the
per-AP rotating pointer, moved only when the AP is really chosen). The least-loaded wave
placement of real dispatchers (``wave_placement = "least_loaded"``) is a baseline's matcher
of its own (:class:`model.dispatch.baselines.LeastLoadedMatcher`). RTL twin:
:mod:`hw.dispatch.matcher`.

Step 4 of the model's cycle (:mod:`model.dispatch.engine`) reads the view of cycle
``t - L`` (:class:`model.dispatch.views.View`) and the current free wave slots
(:class:`model.dispatch.resources.Resources`).

Speed, without changing a result: each head WG keeps a mask of the APs it fits and re-tests
only the APs whose view, slots or rotation pointer changed since (:meth:`Matcher.mask`).
"""

import numpy as np

from model.dispatch.config import GpuConfig, PolicyConfig, WorkGroup
from model.dispatch.queues import Queues
from model.dispatch.resources import Resources
from model.dispatch.views import View

__all__ = ["Matcher", "split_table"]


def split_table(peus: int, max_waves: int) -> np.ndarray:
    """Embodiment 8's split table (steps h101-h103): row ``wx`` gives PEU ``t`` the wave count
    ``wx // Q + (1 if t < wx % Q else 0)``. Shape ``(max_waves + 1, peus)``."""
    table = np.zeros((max_waves + 1, peus), dtype=np.int64)
    for waves in range(max_waves + 1):
        quotient, remainder = divmod(waves, peus)
        table[waves] = [quotient + (1 if t < remainder else 0) for t in range(peus)]
    return table


class Matcher:
    """Which APs a WG fits, and its waves per PEU there.

    ``table`` is the split table (admitted WGs have at most ``peus x wave_slots`` waves),
    ``pointer[ap]`` embodiment 8's rotating pointer, ``masks`` per head WG (by id) ``[APs it
    fits, APs changed since]`` as bit masks.
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig, view: View,
                 resources: Resources, queues: Queues):
        P, Q = gpu.aps, gpu.peus
        self.P, self.Q = P, Q
        self.view = view.view
        self.slots, self.ap_slots = resources.slots, resources.ap_slots
        self.inflight = queues.inflight
        self.table = split_table(Q, Q * gpu.wave_slots)
        self.rows: dict[tuple[int, int], tuple[int, ...]] = {}
        self.pointer = [0] * P                       # embodiment 8, per AP
        self.rotate = policy.rotate
        self.masks: dict[int, list[int]] = {}

    # -- embodiment 8 --------------------------------------------------------------------------

    def row(self, waves: int, ap: int) -> tuple[int, ...]:
        """Waves per PEU of ``ap`` for a WG of ``waves``: the split table's row, rotated by
        the AP's pointer (embodiment 8), PEU ``q`` taking entry ``(q - p) mod Q``."""
        return self.row_for(waves, self.pointer[ap] if self.rotate else 0)

    def row_for(self, waves: int, pointer: int) -> tuple[int, ...]:
        """:meth:`row` with the pointer given (the decision pipeline's snapshot of it)."""
        row = self.rows.get((waves, pointer))
        if row is None:
            entries = self.table[waves].tolist()
            Q = self.Q
            row = self.rows[(waves, pointer)] = tuple(entries[(q - pointer) % Q]
                                                      for q in range(Q))
        return row

    def chosen(self, ap: int, waves: int) -> None:
        """A WG of ``waves`` was dispatched to ``ap``: its pointer moves on (step h103)."""
        if self.rotate:
            self.pointer[ap] = (self.pointer[ap] + waves) % self.Q

    def placement(self, wg: WorkGroup, ap: int) -> tuple[int, ...] | None:
        """Waves per PEU of ``ap`` for ``wg`` under the policy's wave placement (``None``
        when it finds no PEU for some wave; never for the split table's)."""
        return self.row(wg.waves, ap)

    def waves(self, wg: WorkGroup) -> np.ndarray:
        """Waves per PEU of every AP for ``wg``, ``(P, Q)`` (zeros where it cannot be
        placed)."""
        return np.array([self.placement(wg, ap) or (0,) * self.Q for ap in range(self.P)],
                        dtype=np.int64)

    # -- embodiment 1 --------------------------------------------------------------------------

    def fits(self, wg: WorkGroup, ap: int) -> bool:
        """Every wave group of ``wg`` fits its PEU of ``ap`` (VGPR and SGPR views, free wave
        slots) and the WG's LDS fits the AP's view."""
        if wg.lds > self.view["lds"][ap]:
            return False
        row = self.rows.get((wg.waves, self.pointer[ap] if self.rotate else 0))
        if row is None:
            row = self.row(wg.waves, ap)
        base = ap * self.Q
        vgpr, sgpr = self.view["vgpr"], self.view["sgpr"]
        slots = self.slots[ap]
        v, s = wg.vgpr, wg.sgpr
        for q, waves in enumerate(row):
            if waves and (waves > slots[q] or waves * v > vgpr[base + q]
                          or waves * s > sgpr[base + q]):
                return False
        return True

    def match(self, wg: WorkGroup) -> np.ndarray:
        """Boolean per AP: every wave group fits its PEU and the shared needs fit the AP."""
        return np.array([self.fits(wg, ap) for ap in range(self.P)])

    def masks_of(self, wg: WorkGroup) -> int:
        """:meth:`fits` on every AP at once, as a bit mask (the loop of ``fits`` inlined:
        a new head is tested against every AP)."""
        lds_view, vgpr, sgpr = self.view["lds"], self.view["vgpr"], self.view["sgpr"]
        rows, pointer, rotate = self.rows, self.pointer, self.rotate
        all_slots, ap_slots, Q = self.slots, self.ap_slots, self.Q
        waves, v, s, lds = wg.waves, wg.vgpr, wg.sgpr, wg.lds
        mask = 0
        for ap in range(self.P):
            if lds > lds_view[ap] or waves > ap_slots[ap]:
                continue
            row = rows.get((waves, pointer[ap] if rotate else 0))
            if row is None:
                row = self.row(waves, ap)
            base, slots = ap * Q, all_slots[ap]
            for q in range(Q):
                count = row[q]
                if count and (count > slots[q] or count * v > vgpr[base + q]
                              or count * s > sgpr[base + q]):
                    break
            else:
                mask |= 1 << ap
        return mask

    def mask(self, wg: WorkGroup) -> int:
        """The APs ``wg`` fits (bit ``a`` for AP ``a``): kept per head WG, re-testing only the
        APs that changed since."""
        entry = self.masks.get(wg.id)
        if entry is None:
            mask = self.masks_of(wg)
            self.masks[wg.id] = [mask, 0]
            return mask
        mask, dirty = entry
        if dirty:
            while dirty:
                low = dirty & -dirty
                ap = low.bit_length() - 1
                if self.fits(wg, ap):
                    mask |= low
                else:
                    mask &= ~low
                dirty ^= low
            entry[0], entry[1] = mask, 0
        return mask

    def head_mask(self, wg: WorkGroup) -> int:
        """:meth:`mask` of a head WG, 0 while an in-order barrier holds it (its channel's
        earlier WGs still run)."""
        if wg.barrier and self.inflight[wg.channel]:
            return 0
        return self.mask(wg)

    # -- what the kept masks must re-test ------------------------------------------------------

    def changed(self, ap: int) -> None:
        """The AP's view, slots or pointer changed: every kept fit mask re-tests it."""
        bit = 1 << ap
        for entry in self.masks.values():
            entry[1] |= bit

    def taken(self, allocation) -> None:
        """``allocation`` was just taken (its blocks and slots held): its AP changed."""
        self.changed(allocation.ap)

    def released(self, allocation) -> None:
        """``allocation`` was just given back: its AP changed."""
        self.changed(allocation.ap)

    def mark(self, changed: int) -> None:
        """The APs of ``changed`` (a bit mask) changed: every kept fit mask re-tests them."""
        for entry in self.masks.values():
            entry[1] |= changed

    def inherit(self, entry: list | None, wg: WorkGroup, queue) -> None:
        """``wg`` (whose kept mask was ``entry``) left ``queue``: the next head of the same
        shape fits exactly where it did, except on the APs marked changed (this dispatch
        marked its AP), so it inherits the mask (a kernel's WGs follow each other) instead of
        testing every AP afresh."""
        if queue:
            self.hand_on(entry, wg, queue[0])

    def hand_on(self, entry: list | None, wg: WorkGroup, following: WorkGroup) -> bool:
        """``following`` takes the kept mask ``entry`` of ``wg`` when it has the same shape
        (its fit depends only on that and the APs' state) and keeps no mask of its own;
        whether it took it."""
        if (entry is None or following.id in self.masks or following.waves != wg.waves
                or following.vgpr != wg.vgpr or following.sgpr != wg.sgpr
                or following.lds != wg.lds):
            return False
        self.masks[following.id] = entry
        return True
