"""MIAOW's workgroup dispatcher, rule by rule from its RTL (``selection = "miaow"``, preset
``miaow``). Source: VerticalResearchGroup/miaow at ``143929c``,
``src/verilog/rtl/dispatcher/`` (docs/baselines.md, rows M1-M15, has the line numbers and
the RTL runs behind every number below). Not a stage of seed 002; no RTL twin here (the
project's RTL builds the blocking one-WG buffer, ``selection = "blocking_buffer"``).

Rules, each with its source:

- **M1, in-flight buffer** (``inflight_wg_buffer.v``, host states and ``NEXT_IDX_PRI_ENC``;
  ``dispatcher.v``, ``NUMBER_ENTRIES = 64``): up to 64 waiting WGs, a new one written at the
  lowest free entry; none taken while all 64 are valid.
- **M2, intake** (``inflight_wg_buffer.v``, the host handshake states): one WG every 5
  clocks. MIAOW has one host port; which channel feeds it is ours: round robin over the
  channels with a WG not yet buffered (a channel's buffered WGs are the first of its FIFO; a
  barrier WG enters only when its channel runs nothing, and the WGs after it only once it
  has gone, so that a kernel's first WG still starts it).
- **M3, round robin over entries** (``inflight_wg_buffer.v``, ``CHOSEN_IDX_PRI_ENC`` from
  ``last_chosen_entry_rr + 1``): the next WG tried is the first valid entry after the last
  one tried, in entry order, so arrival order is not kept.
- **M4, reject and retry** (``allocator.v``, ``allocator_cu_rejected``;
  ``dis_controller.v``; ``inflight_wg_buffer.v``, ``ST_ALLOC_FIND_REJECTED``): a WG that fits
  no CU stays in its entry and is tried again when the round robin comes back to it; it
  blocks nothing. ``rejections`` counts the rejected decisions.
- **M5, group locks** (``dis_controller.v``, ``get_res_tbl_addr``, ``cus_allocating``;
  ``allocator.v``, the AND with ``~cu_busy``): the APs are in ``TABLE_GROUPS`` = 2 groups of
  consecutive indices (the high AP-id bits, as the RTL's testbenches build it); after an
  allocation on an AP holding ``n`` WGs its group is locked ``18 + 4 n`` clocks, after a
  release the same (releases served before allocations), and a locked group's APs are
  invisible to the search, so a WG that fits only there is rejected.
- **M6, lowest fitting CU** (``allocator.v``, ``PRI_ENCODER_CAM_OUT``; ``cam_allocator.v``):
  the lowest-index AP that fits (the policy's ``ap_choice`` is not read).
- **M7, largest free range** (``allocator.v``, the start RAM; ``global_resource_table.v``;
  ``resource_table.v``, the ``ST_F_*`` walk): each need is placed at the start of the
  largest free run of its resource, the lowest address among equal runs
  (:func:`model.dispatch.ownclock.largest_range_plan`).
- **M11, M12, clocks per decision** (``dis_controller.v``, ``ST_AL_*``; ``allocator.v``,
  the CAM pipeline; ``inflight_wg_buffer.v``, the walk from entry 0; ``gpu_interface.v``,
  ``ST_ALLOC_PASS_WF``): a decision on the WG in entry ``e`` with ``w`` waves keeps the
  controller busy ``16 + 2 e + max(0, w - 5)`` clocks, accepted or rejected (measured on the
  RTL: 16, 18, 20 for entries 0, 1, 2; 26 for 15 waves). The WG is dispatched in the
  decision's first clock (the RTL's 7 clocks to the allocation are in the interval).

- **M8-M10, resources** (``wg_resource_table.v``, ``inflight_wg_buffer.v``,
  ``gpu_interface.v``, ``ST_ALLOC_PASS_WF``; ``units = "ap_range"``, the preset's,
  :class:`model.dispatch.units.ApRangeUnits`): one VGPR, one SGPR and one LDS range per WG
  per CU (the AP's PEU register words end to end are one address space), placed by M7; wave
  slots counted per CU (MIAOW's 40; here the scenario's ``peus x wave_slots``).
  ``units = "blocks"`` gives the seed's blocks (a block per PEU for the wave group, the
  unrotated split, slots per PEU, placed by M7) instead, for comparison.
- **M13, waves not bound to SIMDs** (``issue/alu_issue_logic.v``): with ``ap_range`` no
  PEU limits where a wave goes (the model books each wave on the PEU with the most free
  slots), and under ``execution = "shared"`` the AP's waves share its PEUs' issue slots as
  one pool (:class:`model.dispatch.execution.PooledExecution`).

Not modelled, and what the policy sees instead (docs/dispatch.md, "The faithful
baselines"):

- **M14**: releases follow the policy's ``release_limit`` (0: all in the cycle after);
  each still locks its group (M5).
- **M15** (a CU never used matches any size) is a defect, not a rule: the admission check
  stays.
"""

from types import MethodType

from model.dispatch.matcher import Matcher
from model.dispatch.ownclock import OwnClockSelector, RecordingMatcher, largest_range_plan

__all__ = ["BUFFER_ENTRIES", "INTAKE_CLOCKS", "TABLE_GROUPS", "MiaowMatcher",
           "MiaowOneClockSelector", "MiaowSelector", "decision_clocks", "lock_clocks"]

BUFFER_ENTRIES = 64
INTAKE_CLOCKS = 5
TABLE_GROUPS = 2


def decision_clocks(entry: int, waves: int) -> int:
    """Clocks the controller is busy with one decision on the WG in buffer ``entry`` (M11,
    M12): ``16 + 2 entry + max(0, waves - 5)``."""
    return 16 + 2 * entry + max(0, waves - 5)


def lock_clocks(resident: int) -> int:
    """Clocks a resource-table group stays locked after an allocation or a release on an AP
    holding ``resident`` other WGs (M5, M11): ``18 + 4 resident``."""
    return 18 + 4 * resident


class MiaowMatcher(RecordingMatcher):
    """MIAOW's resources in the policy's units and the per-AP list of resident WGs (for the
    group lock's length).

    ``units = "ap_range"`` (the preset's, M8-M10, M13): wave slots counted per AP, each wave
    in turn to the PEU with the most free slots (MIAOW binds none; the model's execution
    needs a PEU per wave), registers and LDS one range per WG per AP
    (:class:`model.dispatch.units.ApRangeUnits`). Other units: the unrotated split and the
    units' fit test; ``blocks`` is then the matcher's own (:meth:`Matcher.fits`, every AP at
    once in its inlined loop)."""

    def __init__(self, gpu, policy, view, resources, queues):
        super().__init__(gpu, policy, view, resources, queues)
        self.rotate = False
        self.per_ap = policy.units == "ap_range"
        if policy.units == "blocks":
            self.fits = MethodType(Matcher.fits, self)
            self.masks_of = MethodType(Matcher.masks_of, self)

    def placement(self, wg, ap: int):
        if not self.per_ap:
            return self.row(wg.waves, ap)
        if wg.waves > self.ap_slots[ap]:
            return None
        free = list(self.slots[ap])
        counts = [0] * self.Q
        for _ in range(wg.waves):
            q = free.index(max(free))
            counts[q] += 1
            free[q] -= 1
        return tuple(counts)

    def fits(self, wg, ap: int) -> bool:
        if wg.waves > self.ap_slots[ap]:
            return False
        if self.per_ap:            # the placement respects the free slots: only the ranges
            return self.units.fits(wg, ap, None)
        return self.peu_fits(wg, ap, self.placement(wg, ap))

    def masks_of(self, wg) -> int:
        """:meth:`fits` on every AP at once (a new buffered WG is tested against every AP):
        with ``ap_range`` the units' test on every AP with the slots, in one call."""
        if not self.per_ap:
            return super().masks_of(wg)
        return self.units.fitting(wg, self.ap_slots)


class MiaowSelector(OwnClockSelector):
    """MIAOW's in-flight buffer and controller (see the module docstring for each rule).

    State: ``entries`` (64, a WG or ``None``), ``buffered[channel]`` (how many of the
    channel's first WGs are in the buffer), ``last`` (the entry tried last), ``busy_until``
    (the first cycle the controller is free), ``next_intake``, ``lock_until[group]``;
    ``rejections`` and ``decisions`` count the decisions.
    """

    def __init__(self, gpu, policy, queues, matcher, resources, view):
        super().__init__(gpu, policy, queues, matcher, resources, view)
        self.entries = [None] * BUFFER_ENTRIES
        self.buffered = [0] * self.channel_count
        self.last = BUFFER_ENTRIES - 1
        self.busy_until = 0
        self.next_intake = 0
        self.intake_pointer = 0
        self.groups = min(TABLE_GROUPS, self.P)
        # The APs of each group, as a bit mask.
        self.group_aps = [sum(1 << ap for ap in range(self.P) if self.group(ap) == g)
                          for g in range(self.groups)]
        self.lock_until = [0] * self.groups
        self.rejections = 0
        self.decisions = 0
        # Set by :meth:`wake` when every decision from this cycle on is a rejection until the
        # next event: :meth:`step` replays them (pointer, controller, counts) when it runs.
        self.quiet_from: int | None = None
        self.Q = gpu.peus
        self.intake_clocks = INTAKE_CLOCKS

    def group(self, ap: int) -> int:
        """The resource-table group of ``ap`` (consecutive APs share one)."""
        return ap * self.groups // self.P

    def plan(self, wg, ap, waves):
        return largest_range_plan(self.resources, wg, ap, waves, self.Q)

    def takeable(self, channel: int) -> bool:
        """The channel has a WG not yet buffered that the intake may take: not a kernel's
        first WG while the channel's earlier WGs run or are buffered, nor a WG behind the
        kernel's first one still waiting (it goes before the rest)."""
        queue, index = self.channels[channel], self.buffered[channel]
        if index >= len(queue):
            return False
        if queue[index].barrier and (index or self.inflight[channel]):
            return False
        return not (index and queue[0].barrier)

    def share_mask(self, wg) -> None:
        """A WG entering the buffer takes a copy of the kept fit mask of a buffered WG of the
        same shape (a kernel's WGs fit the same APs), instead of testing every AP afresh."""
        matcher = self.matcher
        if wg.id in matcher.masks:
            return
        for other in self.entries:
            entry = None if other is None else matcher.masks.get(other.id)
            if entry is not None and matcher.hand_on(list(entry), other, wg):
                return

    def intake(self, cycle: int) -> None:
        """M1, M2: one WG from the next channel in turn into the lowest free entry."""
        if cycle < self.next_intake or None not in self.entries:
            return
        count = self.channel_count
        for k in range(count):
            channel = (self.intake_pointer + k) % count
            if not self.takeable(channel):
                continue
            wg = self.channels[channel][self.buffered[channel]]
            self.share_mask(wg)
            self.entries[self.entries.index(None)] = wg
            self.buffered[channel] += 1
            self.intake_pointer = (channel + 1) % count
            self.next_intake = cycle + self.intake_clocks
            return

    def releases(self, cycle: int) -> None:
        """M5, M14: each WG released since the last cycle locks its AP's group."""
        records = self.matcher.records
        for ap in sorted(records.dirty):
            held = records.by_ap[ap]
            before = len(held)
            live = records.live(ap)
            for _ in range(before - len(live)):
                g = self.group(ap)
                self.lock_until[g] = max(self.lock_until[g], cycle) + lock_clocks(len(live))

    def wake(self, cycle: int) -> int | None:
        """The next cycle this dispatcher acts without an outside event (the controller free
        again, an intake due, a group lock ending), for the engine's skip of quiet cycles;
        ``None``: none.

        Rejected WGs are retried back to back. When every buffered WG fits no AP left
        unlocked, each of those decisions is a rejection until something changes: a release,
        an arrival or a view update (the engine's events), an intake, or a group lock ending
        (due here). Those decisions are not stepped cycle by cycle; :meth:`step` replays them
        when it next runs (:meth:`replay`), with the same pointer, controller and counts."""
        if not any(self.channels):
            return None
        due = []
        occupied = any(e is not None for e in self.entries)
        if occupied:
            start = max(cycle + 1, self.busy_until)           # the next decision
            if self.all_rejected(start):
                self.quiet_from = cycle + 1
                ending = [until for until in self.lock_until if until > start]
                if ending:
                    due.append(min(ending))
            else:
                due.append(start)
        # An intake is due only when some channel has a WG it may take (which only a release,
        # a dispatch or an arrival changes: a barrier WG waits for its kernel's predecessor).
        if None in self.entries and any(self.takeable(c) for c in range(self.channel_count)):
            due.append(max(self.next_intake, cycle + 1))
        return min(due) if due else None

    def locked(self, cycle: int) -> int:
        """The APs whose resource-table group is locked in ``cycle`` (bit mask)."""
        locked = 0
        for g, until in enumerate(self.lock_until):
            if until > cycle:
                locked |= self.group_aps[g]
        return locked

    def all_rejected(self, cycle: int) -> bool:
        """Every buffered WG fits no AP unlocked in ``cycle`` (as the matcher sees it now)."""
        unlocked = ~self.locked(cycle)
        mask = self.matcher.mask
        return all(mask(wg) & unlocked == 0 for wg in self.entries if wg is not None)

    def replay(self, cycle: int) -> None:
        """The decisions from ``quiet_from`` to ``cycle - 1``, every one a rejection
        (:meth:`wake`): each takes the next occupied entry after ``last`` for its clocks.
        Whole rounds of the buffer at once, then the rest one by one."""
        start = max(self.quiet_from, self.busy_until)
        self.quiet_from = None
        if start >= cycle:
            return
        n = len(self.entries)
        order = [(self.last + 1 + k) % n for k in range(n)
                 if self.entries[(self.last + 1 + k) % n] is not None]
        clocks = [self.clocks(entry, self.entries[entry].waves) for entry in order]
        period = sum(clocks)
        rounds = (cycle - start) // period
        start += rounds * period
        done = rounds * len(order)
        if rounds:
            self.last = order[-1]
        for entry, length in zip(order, clocks, strict=True):
            if start >= cycle:
                break
            self.last = entry
            start += length
            done += 1
        self.busy_until = start                  # start >= busy_until throughout
        self.decisions += done
        self.rejections += done

    def clocks(self, entry: int, waves: int) -> int:
        return decision_clocks(entry, waves)

    def lock(self, ap: int, cycle: int, resident: int) -> None:
        """M5: the AP's group is locked after an allocation there."""
        g = self.group(ap)
        self.lock_until[g] = max(self.lock_until[g], cycle) + lock_clocks(resident)

    def step(self, cycle: int):
        if self.quiet_from is not None:
            self.replay(cycle)
        self.releases(cycle)
        self.intake(cycle)
        entries = self.entries
        waiting = any(self.channels)
        if cycle < self.busy_until:
            return False, False, False, waiting
        n = len(entries)
        entry = next(((self.last + 1 + k) % n for k in range(n)
                      if entries[(self.last + 1 + k) % n] is not None), None)
        if entry is None:
            return False, False, False, waiting
        self.last = entry
        wg = entries[entry]
        self.decisions += 1
        self.busy_until = cycle + self.clocks(entry, wg.waves)
        # The WG's kept fit mask (re-testing only the APs changed since it was last read).
        mask = self.matcher.mask(wg) & ~self.locked(cycle)
        if mask:
            ap = (mask & -mask).bit_length() - 1
            resident = len(self.matcher.records.live(ap))
            kept = self.matcher.masks.get(wg.id)
            if self.dispatch(wg, ap, cycle, self.plan) is not None:
                entries[entry] = None
                self.buffered[wg.channel] -= 1
                # Its kept mask (the allocation's AP marked to re-test) goes on to its
                # channel's next WG not yet buffered, if that has its shape.
                queue, index = self.channels[wg.channel], self.buffered[wg.channel]
                if index < len(queue):
                    self.matcher.hand_on(kept, wg, queue[index])
                self.matcher.records.by_ap[ap][wg.id] = True
                self.matcher.records.dirty.discard(ap)
                self.lock(ap, cycle, resident)
                return True, False, True, waiting
        self.rejections += 1
        return False, False, False, waiting


class MiaowOneClockSelector(MiaowSelector):
    """MIAOW's buffer rules (M1, M3, M4, M6, M7) at the seed's rate
    (``selection = "miaow_one_clock"``, preset ``miaow-one-clock``; ours, no source has it):
    one decision per clock, a WG taken into the buffer every clock, no group locks. It
    separates what MIAOW's rules do from what its clocks per WG cost."""

    def __init__(self, gpu, policy, queues, matcher, resources, view):
        super().__init__(gpu, policy, queues, matcher, resources, view)
        self.intake_clocks = 1

    def clocks(self, entry: int, waves: int) -> int:
        return 1

    def releases(self, cycle: int) -> None:
        for ap in list(self.matcher.records.dirty):
            self.matcher.records.live(ap)

    def lock(self, ap: int, cycle: int, resident: int) -> None:
        return None
