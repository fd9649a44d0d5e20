"""AMD's GPU model in gem5, its workgroup dispatch rule by rule from the source
(``selection = "gem5"``, preset ``gem5``). Source: gem5/gem5 at ``b1a44b8`` (v24.0.0.1),
``src/gpu-compute/`` (docs/baselines.md, rows A1-A9, has the line numbers). Not a stage of
seed 002; no RTL twin (``make cosim`` refuses it). An AP is a CU, a PEU a SIMD.

Rules, each with its source:

- **A1, kernel FIFO with try-next** (``dispatcher.cc``, ``GPUDispatcher::exec``): kernels
  (see :mod:`model.dispatch.ownclock`) wait in a FIFO in launch order; an attempt tries the
  front kernel, dispatches as many of its WGs as fit and, if one does not fit, moves the
  kernel to the back and tries the next, until every remaining kernel has failed once; a
  kernel with no WG left leaves the FIFO (a synthetic channel's kernel re-enters at the back
  when its next WG arrives).
- **A2, attempts on events** (``dispatcher.cc``, the dispatch scheduled on a launch or a WG
  completion): the model evaluates a cycle when an arrival, a release or a view change
  happens, which gives the same decisions.
- **A3, sweeps** (``shader.cc``, ``Shader::dispatchWorkgroups``; ``nextSchedCu`` returns to
  its start after each sweep): one sweep tries every CU once from CU 0, one WG per CU, and
  sweeps repeat in the same cycle until one places nothing: as many WGs a cycle as fit.
- **A4, fit** (``compute_unit.cc``, ``ComputeUnit::hasDispResources``): the WG's waves all
  map to free WF slots (A5) whose SIMD can hold one more wave's registers, the LDS fits, and
  a barrier slot is free when the WG has more than one wave.
- **A5, slot rows** (``hasDispResources``, ``dispWorkgroup``): free WF slots visited row by
  row (slot 0 of SIMD 0, 1, 2, 3, then slot 1 of each, ...), each taking the next wave if its
  SIMD can hold that many of the WG's waves. The rows are tracked per wave slot here
  (:class:`Gem5Matcher`), so a slot freed out of order is refilled first, where
  ``least_loaded`` would pick the emptiest SIMD.
- **A8, barrier slots** (``compute_unit.hh``, ``getFreeBarrierId``; ``GPU.py``,
  ``num_barrier_slots`` = 16): at most 16 WGs of more than one wave per CU.
- **A6, per-wave register regions** (``dyn_pool_manager.cc``, ``canAllocate``,
  ``allocateRegion``; ``units = "wave_regions"``, the preset's,
  :class:`model.dispatch.units.WaveRegionUnits`): a SIMD takes ``n`` more waves when its
  free runs hold ``n`` regions of one wave's registers, each placed at the first record of
  gem5's free list that holds it, in list order (``freeRegion`` appends a freed region that
  touches no free record; a WG's regions are freed in the order they were placed).
- **A7, LDS counted** (``lds_state.hh``, ``canReserve``): a counter per CU, no addresses.
  ``units = "blocks"`` gives the seed's blocks (one VGPR and SGPR block per SIMD for the
  wave group, one contiguous LDS range) instead, for comparison.

Not modelled, and what the policy sees instead:

- **A6's rounding**: gem5 rounds a region to 4 registers, finer than a block. gem5 frees
  each wave's region when that wave ends; the model's waves of a WG end together.
- **A8, 10 WF slots per SIMD**: the scenario's ``wave_slots``.
- **A9, the kernel-launch cache invalidate**: no caches in the model.
"""

from collections import deque

from model.dispatch.ownclock import OwnClockSelector, RecordingMatcher

__all__ = ["BARRIER_SLOTS", "Gem5Matcher", "Gem5Selector"]

BARRIER_SLOTS = 16


class Gem5Matcher(RecordingMatcher):
    """A4, A5, A8: slot-row placement on per-slot occupancy, barrier slots. A record is
    ``(waves, ((PEU, slot), ...))``."""

    def __init__(self, gpu, policy, view, resources, queues):
        super().__init__(gpu, policy, view, resources, queues)
        self.occupied: dict[int, tuple] = {}         # per AP, cached until it changes
        self.rows: dict[int, dict] = {}              # per AP and WG shape; blocks: and view

    def changed(self, ap: int) -> None:
        super().changed(ap)
        self.occupied.pop(ap, None)
        self.rows.pop(ap, None)

    def mark(self, changed: int) -> None:
        """The views of the APs of ``changed`` (a bit mask) changed: where a PEU's capacity
        reads the view (``units = "blocks"``), their kept rows go too."""
        super().mark(changed)
        if self.units.capacity_reads_view:
            rows = self.rows
            while changed:
                low = changed & -changed
                rows.pop(low.bit_length() - 1, None)
                changed ^= low

    def record(self, wg, ap: int, places) -> None:
        """``wg`` was dispatched to ``ap`` on the WF slots ``places``."""
        self.records.live(ap)[wg.id] = (wg.waves, tuple(places))
        self.occupied.pop(ap, None)
        self.rows.pop(ap, None)

    def free_slots(self, ap: int):
        """``(free WF slots of each PEU in slot order, multi-wave WGs)`` of ``ap``."""
        cached = self.occupied.get(ap)
        if cached is None:
            live = self.records.live(ap)
            taken = {ps for _, places in live.values() for ps in places}
            free = [[s for s in range(self.wave_slots) if (q, s) not in taken]
                    for q in range(self.Q)]
            barriers = sum(1 for waves, _ in live.values() if waves > 1)
            cached = self.occupied[ap] = (free, barriers)
        return cached

    def slot_rows(self, wg, ap: int):
        """``(waves per PEU, [(PEU, slot), ...])`` by A5, or ``None``: the free slots visited
        row by row, each PEU taking waves while its registers hold them in the policy's units
        (:meth:`model.dispatch.units.Units.capacity`; so it takes its first free slots, up to
        that many) -- the ``w`` first such slots in row order. Kept per AP and WG shape
        until what it reads changes: the AP's slots and registers (a take or a release:
        :meth:`changed`, :meth:`record`) and, on blocks, the AP's view (:meth:`mark`)."""
        cached = self.rows.get(ap)
        if cached is None:
            cached = self.rows[ap] = {}
        key = (wg.waves, wg.vgpr, wg.sgpr)
        if key not in cached:
            cached[key] = self._slot_rows(wg, ap)
        return cached[key]

    def _slot_rows(self, wg, ap: int):
        Q, w, capacity = self.Q, wg.waves, self.units.capacity
        free, _ = self.free_slots(ap)
        candidates = []
        for q in range(Q):
            candidates.extend((s, q) for s in free[q][:capacity(wg, ap, q)])
        if len(candidates) < w:
            return None
        candidates.sort()
        counts = [0] * Q
        places = []
        for s, q in candidates[:w]:
            counts[q] += 1
            places.append((q, s))
        return tuple(counts), tuple(places)

    def placement(self, wg, ap: int):
        rows = self.slot_rows(wg, ap)
        return None if rows is None else rows[0]

    def fits(self, wg, ap: int) -> bool:
        if wg.waves > self.ap_slots[ap]:
            return False
        if wg.waves > 1 and self.free_slots(ap)[1] >= BARRIER_SLOTS:
            return False
        rows = self.slot_rows(wg, ap)
        return rows is not None and self.peu_fits(wg, ap, rows[0])


class Gem5Selector(OwnClockSelector):
    """gem5's dispatcher and shader sweeps (see the module docstring). State: ``fifo``, the
    kernels waiting, front first."""

    def __init__(self, gpu, policy, queues, matcher, resources, view):
        super().__init__(gpu, policy, queues, matcher, resources, view)
        self.fifo: deque = deque()

    def sweeps(self, kernel, cycle: int) -> int:
        """A3: sweeps of every AP from AP 0 for ``kernel`` until one places nothing; the
        WGs dispatched."""
        matcher, channel = self.matcher, kernel[0]
        placed_total = 0
        while True:
            placed = 0
            for ap in range(self.P):
                if not self.has_wgs(kernel):
                    return placed_total + placed
                wg = self.channels[channel][0]
                if matcher.fits(wg, ap):
                    rows = matcher.slot_rows(wg, ap)
                    if self.dispatch(wg, ap, cycle) is not None:
                        matcher.record(wg, ap, rows[1])
                        placed += 1
            placed_total += placed
            if not placed:
                return placed_total

    def step(self, cycle: int):
        fifo = self.fifo
        waiting = any(self.channels)
        for channel in range(self.channel_count):       # launches, in channel order
            kernel = self.kernel(channel)
            if self.has_wgs(kernel) and kernel not in fifo:
                fifo.append(kernel)
        for kernel in [k for k in fifo if not self.has_wgs(k)]:
            fifo.remove(kernel)
        fails = dispatched = 0
        while len(fifo) > fails:                        # A1
            kernel = fifo[0]
            dispatched += self.sweeps(kernel, cycle)
            if self.has_wgs(kernel):
                fifo.rotate(-1)                         # failed: to the back
                fails += 1
            else:
                fifo.popleft()
        return dispatched > 0, False, dispatched > 0, waiting
