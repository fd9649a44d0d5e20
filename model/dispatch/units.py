"""The resource units a faithful baseline counts and places (``PolicyConfig.units``): what
VGPR, SGPR and LDS look like to MIAOW, GPGPU-Sim and gem5, each as its source has them, on
the same status registers (:class:`model.dispatch.resources.Resources`) as the seed.

Not a stage of seed 002 and no RTL twin (``make cosim`` refuses the faithful baselines).
The status registers stay the scenario's (per PEU a VGPR and an SGPR word, per AP an LDS
word), so held and free counts, utilisation and every invariant are measured the same way
for every policy; what changes is the fit test and which blocks a WG takes:

``blocks`` (the seed's, every policy's default)
    Per PEU one contiguous VGPR and one SGPR block for the WG's wave group, one contiguous
    LDS range per AP, wave slots per PEU; the fit test reads the view (the seed's circuits).
``ap_range`` (MIAOW, rules M8-M10: ``wg_resource_table.v``, ``inflight_wg_buffer.v``,
    ``gpu_interface.v``, ``ST_ALLOC_PASS_WF``)
    One VGPR, one SGPR and one LDS range per WG per CU: the AP's PEU words laid end to end
    (PEU 0's blocks first) are one address space, the WG's whole need (waves x per-wave
    blocks) one range in it, placed at the start of the largest free range (M7; a range may
    cross from one PEU's word to the next). Wave slots are counted per AP (M9, 40 per CU in
    MIAOW: here the scenario's ``peus x wave_slots``); waves are bound to no PEU (M13): the
    model books each wave in turn on the PEU with the most free slots (ties to the lowest),
    and the shared-issue model gives the AP's waves one issue pool
    (:class:`model.dispatch.execution.PooledExecution`).
``counted`` (GPGPU-Sim, rules G7, G9: ``gpu-sim.cc``, ``occupy_shader_resource_1block``,
    ``shader_core_config::max_cta``)
    Registers and shared memory are counters per SM with no addresses: a WG fits when the
    AP's free VGPR blocks (summed over its PEUs), free SGPR blocks and free LDS blocks cover
    its need; it takes the lowest free blocks, PEU 0's word first. GPGPU-Sim's rounding (4
    registers per thread, whole warps) is finer than a block: the presets' blocks already
    round up more (``model.dispatch.gpus``).
``wave_regions`` (gem5, rules A6, A7: ``dyn_pool_manager.cc``, ``canAllocate``,
    ``allocateRegion``; ``lds_state.hh``, ``canReserve``)
    Per SIMD one register region per wave: a SIMD can take ``n`` more waves when its free
    runs hold ``n`` regions (``sum(run // size)``, ``canAllocate``), each placed at the first
    free run that holds it in the order of gem5's free list (``allocateRegion``; a freed
    region that touches no free run goes to the back, ``freeRegion``), kept beside the status
    word. LDS is a byte counter per CU (``canReserve``): counted, lowest free blocks taken.
    gem5's rounding of a region to 4 registers is finer than a block.

A placed need is ``(start, length)`` (contiguous) or an integer bit mask of the blocks (not
contiguous); :meth:`model.dispatch.resources.Resources.change_plan` takes both.
"""

from model.dispatch.config import UNITS
from model.maxblock import first_fit_unchecked, longest_run_unchecked

__all__ = ["UNITS", "Units", "free_runs", "idle_reason", "lowest_free", "regions", "units_for"]


def free_runs(free: int):
    """``(start, length)`` of every run of set bits of ``free``, lowest first."""
    while free:
        start = (free & -free).bit_length() - 1
        shifted = free >> start
        length = (shifted ^ (shifted + 1)).bit_length() - 1
        yield start, length
        free &= ~(((1 << length) - 1) << start)


def regions(free: int, size: int) -> int:
    """How many regions of ``size`` blocks first fit places in ``free`` one after another:
    ``sum(run // size)`` over its free runs (gem5's ``DynPoolManager::canAllocate``).
    Adding the lowest set bit carries through the lowest run: the bits it clears are that
    run."""
    count = 0
    while free:
        carried = free + (free & -free)
        count += (free & ~carried).bit_count() // size
        free &= carried
    return count


def lowest_free(free: int, count: int) -> int:
    """The mask of the ``count`` lowest set bits of ``free`` (``count <= popcount``): the
    bits below the narrowest width that holds ``count`` of them (a binary search)."""
    if count >= free.bit_count():
        return free
    low, high = count, free.bit_length()
    while low < high:
        middle = (low + high) // 2
        if (free & ((1 << middle) - 1)).bit_count() >= count:
            high = middle
        else:
            low = middle + 1
    return free & ((1 << low) - 1)


class Units:
    """One policy's resource units on one GPU's status registers (``resources``). The
    matcher asks :meth:`fits` (the resource part of its fit test: VGPR, SGPR, LDS; wave
    slots stay the matcher's), the selector :meth:`plan` (what the WG takes, on the current
    status). Subclasses per unit; :func:`units_for` picks one."""

    kind = "blocks"
    #: :meth:`capacity` reads the free-block view, so a view change (``View.show``) changes
    #: it; the other units' capacity reads only the status registers (a take or a release).
    capacity_reads_view = True

    def __init__(self, gpu, resources, view):
        self.Q = gpu.peus
        self.resources = resources
        self.bits, self.free, self.size = resources.bits, resources.free, resources.size
        self.view = view.view

    def changed(self, ap: int) -> None:
        """``ap``'s status changed (a take or a release): drop what is cached for it."""
        return None

    def taken(self, allocation) -> None:
        """``allocation``, placed by :meth:`plan`, was taken (after :meth:`changed`)."""
        return None

    def released(self, allocation) -> None:
        """``allocation`` was given back (after :meth:`changed`)."""
        return None

    def check(self, cycle: int, violation) -> None:
        """The units' own invariants at ``cycle`` (:mod:`model.dispatch.checks`)."""
        return None

    def fits(self, wg, ap: int, row) -> bool:
        """The seed's: every PEU's wave group of ``row`` fits its VGPR and SGPR views, the
        LDS the AP's view (wave slots are the matcher's)."""
        if wg.lds > self.view["lds"][ap]:
            return False
        base = ap * self.Q
        vgpr, sgpr = self.view["vgpr"], self.view["sgpr"]
        for q, count in enumerate(row):
            if count and (count * wg.vgpr > vgpr[base + q] or count * wg.sgpr > sgpr[base + q]):
                return False
        return True

    def capacity(self, wg, ap: int, q: int) -> int:
        """How many of ``wg``'s waves PEU ``q`` of ``ap`` holds by its registers (gem5's
        slot rows ask): here by the VGPR and SGPR views, one block for the wave group."""
        index = ap * self.Q + q
        cap = wg.waves
        if wg.vgpr:
            cap = min(cap, self.view["vgpr"][index] // wg.vgpr)
        if wg.sgpr:
            cap = min(cap, self.view["sgpr"][index] // wg.sgpr)
        return cap

    def plan(self, wg, ap: int, waves):
        """What ``wg`` takes on ``ap`` with ``waves`` per PEU, ``None`` when it does not
        fit: on the seed's blocks the selector's own rule places (first fit, MIAOW's largest
        range), so this one is not asked."""
        raise NotImplementedError("the seed's blocks are placed by the selector's rule")


class ApRangeUnits(Units):
    """MIAOW's one range per WG per CU (M8-M10); see the module docstring."""

    kind = "ap_range"
    capacity_reads_view = False

    def __init__(self, gpu, resources, view):
        super().__init__(gpu, resources, view)
        self.largest: dict[int, dict] = {}           # per AP, cached until it changes

    def changed(self, ap: int) -> None:
        self.largest.pop(ap, None)

    def word(self, name: str, ap: int) -> int:
        """The AP's words of ``name`` end to end (PEU 0 lowest); LDS is one word already."""
        if name == "lds":
            return self.bits["lds"][ap]
        size, base, words = self.size[name], ap * self.Q, self.bits[name]
        word = 0
        for q in range(self.Q):
            word |= words[base + q] << (q * size)
        return word

    def largest_ranges(self, ap: int) -> tuple[int, int, int]:
        """The lengths of the AP's largest free VGPR, SGPR and LDS ranges (M7), cached
        until the AP changes."""
        cached = self.largest.get(ap)
        if cached is None:
            cached = self.largest[ap] = tuple(longest_run_unchecked(self.word(name, ap))
                                              for name in ("vgpr", "sgpr", "lds"))
        return cached

    def capacity(self, wg, ap: int, q: int) -> int:
        return wg.waves                              # registers are the AP's, not a PEU's

    def fits(self, wg, ap: int, row) -> bool:
        vgpr, sgpr, lds = self.largest_ranges(ap)
        return wg.waves * wg.vgpr <= vgpr and wg.waves * wg.sgpr <= sgpr and wg.lds <= lds

    def fitting(self, wg, ap_slots: list[int]) -> int:
        """:meth:`fits` on every AP with ``wg.waves`` free wave slots (``ap_slots``), as a
        bit mask, in one loop (a new buffered WG is tested against every AP)."""
        waves, lds = wg.waves, wg.lds
        v, s = waves * wg.vgpr, waves * wg.sgpr
        largest, mask = self.largest_ranges, 0
        for ap, slots in enumerate(ap_slots):
            if waves <= slots:
                vgpr, sgpr, free_lds = largest(ap)
                if v <= vgpr and s <= sgpr and lds <= free_lds:
                    mask |= 1 << ap
        return mask

    def plan(self, wg, ap: int, waves):
        if not self.fits(wg, ap, waves):
            return None
        plans = []
        for name, per_wave in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
            need, size = wg.waves * per_wave, self.size[name]
            plan = [None] * self.Q
            if need:
                # The lowest start of a run as long as the longest (M7), the length cached.
                longest = self.largest_ranges(ap)[0 if name == "vgpr" else 1]
                start = first_fit_unchecked(self.word(name, ap), longest)
                end = start + need
                for q in range(start // size, (end - 1) // size + 1):
                    low, high = max(start, q * size), min(end, (q + 1) * size)
                    plan[q] = (low - q * size, high - low)
            plans.append(plan)
        lds = None
        if wg.lds:
            lds = (first_fit_unchecked(self.bits["lds"][ap], self.largest_ranges(ap)[2]), wg.lds)
        return plans[0], plans[1], lds


class CountedUnits(Units):
    """GPGPU-Sim's counted per-SM pools (G7, G9); see the module docstring."""

    kind = "counted"
    capacity_reads_view = False

    def capacity(self, wg, ap: int, q: int) -> int:
        return wg.waves                              # registers are the AP's, not a PEU's

    def fits(self, wg, ap: int, row) -> bool:
        Q, base = self.Q, ap * self.Q
        free = self.free
        return (wg.waves * wg.vgpr <= sum(free["vgpr"][base:base + Q])
                and wg.waves * wg.sgpr <= sum(free["sgpr"][base:base + Q])
                and wg.lds <= free["lds"][ap])

    def take_lowest(self, name: str, ap: int, need: int) -> list:
        """Masks per PEU of the ``need`` lowest free blocks of the AP's ``name`` words, PEU 0
        first."""
        base, words = ap * self.Q, self.bits[name]
        plan = [None] * self.Q
        for q in range(self.Q):
            if not need:
                break
            word = words[base + q]
            count = min(need, word.bit_count())
            if count:
                plan[q] = lowest_free(word, count)
                need -= count
        return plan

    def plan(self, wg, ap: int, waves):
        if not self.fits(wg, ap, waves):
            return None
        lds = lowest_free(self.bits["lds"][ap], wg.lds) if wg.lds else None
        return (self.take_lowest("vgpr", ap, wg.waves * wg.vgpr),
                self.take_lowest("sgpr", ap, wg.waves * wg.sgpr), lds)


class WaveRegionUnits(Units):
    """gem5's per-wave register regions and counted LDS (A6, A7); see the module
    docstring.

    Each PEU's VGPR and SGPR word has gem5's free list beside it (``DynPoolManager``'s
    ``freeSpaceRecord``): ``[first, end)`` records in list order, one per free run (a
    release merges with the records it touches, so the records stay the word's runs; only
    their order is the list's). :meth:`plan` places each wave's region at the first record in
    list order that holds it, taking it from the record's front (``allocateRegion``); a
    release frees the WG's regions one by one in the order they were placed, each merged with
    the record that ends at its first block and the one that starts after its last, or
    appended at the back when it touches none (``freeRegion``). A list is made from its word's
    runs, lowest first, when first used (a PEU's word is then all free: gem5's
    ``resetRegion``). The fit test counts regions over the word's runs (``canAllocate``):
    the same runs."""

    kind = "wave_regions"
    capacity_reads_view = False

    def __init__(self, gpu, resources, view):
        super().__init__(gpu, resources, view)
        self.counts: dict[int, dict] = {}            # per AP, region counts until it changes
        self.lists: dict[str, dict[int, list]] = {"vgpr": {}, "sgpr": {}}  # per PEU instance
        self.planned = None                          # (wg, ap, the lists and starts it makes)
        self.placed: dict[int, tuple] = {}           # id(allocation) -> its regions, in order

    def changed(self, ap: int) -> None:
        self.counts.pop(ap, None)

    def free_list(self, name: str, index: int) -> list:
        """gem5's free list of ``name`` on PEU instance ``index``: ``[first, end]`` records."""
        records = self.lists[name].get(index)
        if records is None:
            records = self.lists[name][index] = [
                [start, start + length] for start, length in free_runs(self.bits[name][index])]
        return records

    def capacity(self, wg, ap: int, q: int) -> int:
        """How many of ``wg``'s waves PEU ``q`` of ``ap`` holds by its registers."""
        counts = self.counts.get(ap)
        if counts is None:
            counts = self.counts[ap] = {}
        key = (q, wg.vgpr, wg.sgpr)
        cap = counts.get(key)
        if cap is None:
            index = ap * self.Q + q
            cap = 1 << 30
            for name, size in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
                if size:
                    cap = min(cap, regions(self.bits[name][index], size))
            counts[key] = cap
        return min(cap, wg.waves)

    def fits(self, wg, ap: int, row) -> bool:
        if wg.lds > self.free["lds"][ap]:
            return False
        return all(not count or count <= self.capacity(wg, ap, q)
                   for q, count in enumerate(row))

    def plan(self, wg, ap: int, waves):
        if not self.fits(wg, ap, waves):
            return None
        base = ap * self.Q
        plans, made = [], []
        for name, size in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
            plan = [None] * self.Q
            for q, count in enumerate(waves):
                if not count or not size:
                    continue
                index = base + q
                records = [record[:] for record in self.free_list(name, index)]
                mask, starts = 0, []
                for _ in range(count):              # allocateRegion, one wave at a time
                    at = next((at for at, (first, end) in enumerate(records)
                               if end - first >= size), None)
                    if at is None:
                        raise RuntimeError(
                            f"{name}[{index}]: gem5's free list {records} holds no region of "
                            f"{size} blocks where the fit test counted one (status word "
                            f"{self.bits[name][index]:#x})")
                    first, end = records[at]
                    if end - first == size:
                        del records[at]
                    else:
                        records[at][0] = first + size
                    starts.append(first)
                    mask |= ((1 << size) - 1) << first
                plan[q] = mask
                made.append((name, index, size, records, tuple(starts)))
            plans.append(plan)
        self.planned = (wg, ap, tuple(made))
        lds = lowest_free(self.bits["lds"][ap], wg.lds) if wg.lds else None
        return plans[0], plans[1], lds

    def taken(self, allocation) -> None:
        planned, self.planned = self.planned, None
        if planned is None or planned[0] is not allocation.wg or planned[1] != allocation.ap:
            raise RuntimeError(f"WG {allocation.wg.id} taken on AP {allocation.ap} without "
                               f"the plan of gem5's free lists")
        lists = self.lists
        for name, index, _, records, _ in planned[2]:
            lists[name][index] = records
        self.placed[id(allocation)] = tuple((name, index, size, starts)
                                            for name, index, size, _, starts in planned[2])

    def check(self, cycle: int, violation) -> None:
        """Each free list holds its status word's free runs, one record each."""
        for name, lists in self.lists.items():
            for index, records in lists.items():
                runs = sorted([start, start + length]
                              for start, length in free_runs(self.bits[name][index]))
                if sorted(records) != runs:
                    violation(f"cycle {cycle}: {name}[{index}] gem5 free list {records} "
                              f"is not the status word's runs {runs}")

    def released(self, allocation) -> None:
        for name, index, size, starts in self.placed.pop(id(allocation)):
            records = self.free_list(name, index)
            for first in starts:                    # freeRegion, one wave at a time
                end = first + size
                before = after = None
                for record in records:
                    if record[1] == first:
                        before = record
                    elif record[0] == end:
                        after = record
                if before is not None and after is not None:
                    before[1] = after[1]
                    records.remove(after)
                elif before is not None:
                    before[1] = end
                elif after is not None:
                    after[0] = first
                else:
                    records.append([first, end])


def idle_reason(units: str, gpu, wg) -> str | None:
    """Why ``wg`` cannot fit an idle AP in a baseline's ``units`` (``None`` when it can; the
    seed's blocks are :meth:`model.dispatch.queues.Queues.fits_empty`'s): admission."""
    Q, waves = gpu.peus, wg.waves
    if waves > Q * gpu.wave_slots:
        return f"{waves} waves, but an AP has {Q * gpu.wave_slots} wave slots"
    if units == "wave_regions":
        busiest = -(-waves // Q)                     # an idle CU's slot rows deal them evenly
        for name, per_wave in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
            size = gpu.capacity(name)
            if per_wave and busiest > size // per_wave:
                return (f"{busiest} waves of {per_wave} {name.upper()} blocks on one PEU, but "
                        f"an idle PEU holds {size // per_wave} such regions")
    else:                                            # the AP's registers as one pool or range
        for name, per_wave in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
            need, size = waves * per_wave, Q * gpu.capacity(name)
            if need > size:
                return (f"{waves} waves x {per_wave} {name.upper()} blocks = {need}, but an "
                        f"idle AP has {size}")
    if wg.lds > gpu.lds:
        return f"{wg.lds} LDS blocks, but an idle AP has {gpu.lds}"
    return None


_UNITS = {"blocks": Units, "ap_range": ApRangeUnits, "counted": CountedUnits,
          "wave_regions": WaveRegionUnits}


def units_for(gpu, policy, resources, view) -> Units:
    """The :class:`Units` of ``policy.units``."""
    return _UNITS[policy.units](gpu, resources, view)
