"""The faithful baselines' resource units (model.dispatch.units) against brute force on random
status words: each unit's fit test says yes exactly when its rule can place the WG, and its
plan takes free blocks only, as many as the WG needs, where the rule says."""

import random
from types import SimpleNamespace

import pytest

from model.dispatch.config import GpuConfig
from model.dispatch.units import idle_reason, units_for
from tests.test_maxblock_model import runs_by_scan

SIZES = {"vgpr": 12, "sgpr": 8, "lds": 10}
Q = 3


def _setup(kind, rng):
    gpu = GpuConfig(aps=2, peus=Q, vgpr=SIZES["vgpr"], sgpr=SIZES["sgpr"], lds=SIZES["lds"],
                    wave_slots=4, priorities=1)
    bits = {name: [rng.getrandbits(SIZES[name]) & rng.getrandbits(SIZES[name])
                   | rng.getrandbits(SIZES[name]) for _ in range(2 * Q if name != "lds" else 2)]
            for name in SIZES}
    resources = SimpleNamespace(bits=bits, size=dict(SIZES),
                                free={n: [b.bit_count() for b in w] for n, w in bits.items()})
    view = SimpleNamespace(view={})
    policy = SimpleNamespace(units=kind)
    return gpu, units_for(gpu, policy, resources, view), bits


def _longest(word, n):
    """The longest run of free (set) blocks of ``word``, scanning bit by bit."""
    return max([length for _, length in runs_by_scan(word, n, 1)] + [0])


def _wg(rng):
    return SimpleNamespace(waves=rng.randint(1, 5), vgpr=rng.randint(0, 4),
                           sgpr=rng.randint(0, 3), lds=rng.randint(0, 6))


def _row(waves):
    return tuple(waves // Q + (1 if q < waves % Q else 0) for q in range(Q))


def _masks(plan, name):
    size = SIZES[name]
    out = []
    for placed in plan:
        if placed is None:
            out.append(0)
        elif isinstance(placed, int):
            out.append(placed)
        else:
            start, length = placed
            assert 0 <= start and start + length <= size
            out.append(((1 << length) - 1) << start)
    return out


@pytest.mark.parametrize("kind", ["ap_range", "counted", "wave_regions"])
def test_units_fit_exactly_when_their_rule_places_the_wg(kind):
    rng = random.Random(kind)
    placed = 0
    for _ in range(3000):
        gpu, units, bits = _setup(kind, rng)
        wg, ap = _wg(rng), rng.randrange(2)
        row = _row(wg.waves)
        words = {n: bits[n][ap * Q:(ap + 1) * Q] for n in ("vgpr", "sgpr")}
        if kind == "ap_range":
            expect = all(wg.waves * per <= _longest(sum(w << (q * SIZES[name]) for q, w in
                                                        enumerate(words[name])), Q * SIZES[name])
                         for name, per in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)))
            expect &= wg.lds <= _longest(bits["lds"][ap], SIZES["lds"])
        elif kind == "counted":
            expect = (wg.waves * wg.vgpr <= sum(w.bit_count() for w in words["vgpr"])
                      and wg.waves * wg.sgpr <= sum(w.bit_count() for w in words["sgpr"])
                      and wg.lds <= bits["lds"][ap].bit_count())
        else:
            expect = wg.lds <= bits["lds"][ap].bit_count()
            for name, per in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
                for q, count in enumerate(row):
                    if per and count:
                        # first fit, one region at a time, scanning bit by bit
                        word = words[name][q]
                        for _ in range(count):
                            start = next((s for s, n in runs_by_scan(word, SIZES[name], 1)
                                          if n >= per), None)
                            if start is None:
                                expect = False
                                break
                            word &= ~(((1 << per) - 1) << start)
        assert units.fits(wg, ap, row) == expect, (kind, wg, ap, bits)
        plan = units.plan(wg, ap, row)
        assert (plan is not None) == expect
        if plan is None:
            continue
        placed += 1
        for index, name, per in ((0, "vgpr", wg.vgpr), (1, "sgpr", wg.sgpr)):
            masks = _masks(plan[index], name)
            for q, mask in enumerate(masks):
                assert mask & ~words[name][q] == 0                  # free blocks only
            assert sum(m.bit_count() for m in masks) == wg.waves * per
            if kind == "counted":                                   # the lowest ones
                whole = sum(m << (q * SIZES[name]) for q, m in enumerate(masks))
                free = sum(w << (q * SIZES[name]) for q, w in enumerate(words[name]))
                top = (1 << whole.bit_length()) - 1
                assert free & top & ~whole == 0     # no free block left below the highest
            if kind == "wave_regions":                              # on the row's PEUs
                assert [m.bit_count() for m in masks] == [count * per for count in row]
        lds = plan[2]
        if wg.lds:
            mask = lds if isinstance(lds, int) else ((1 << lds[1]) - 1) << lds[0]
            assert mask.bit_count() == wg.lds and mask & ~bits["lds"][ap] == 0
        else:
            assert lds is None
    assert placed > 300


def test_idle_reason_agrees_with_an_idle_ap():
    # Admission: a WG is refused exactly when the units cannot place it on an idle AP.
    rng = random.Random(7)
    for kind in ("ap_range", "counted", "wave_regions"):
        for _ in range(500):
            gpu, units, bits = _setup(kind, rng)
            for name in bits:
                bits[name][:] = [(1 << SIZES[name]) - 1] * len(bits[name])
            units.free.update({n: [SIZES[n]] * len(w) for n, w in bits.items()})
            wg = SimpleNamespace(waves=rng.randint(1, 12), vgpr=rng.randint(0, 12),
                                 sgpr=rng.randint(0, 8), lds=rng.randint(0, 12))
            fits = wg.waves <= Q * gpu.wave_slots and units.fits(wg, 0, _row(wg.waves))
            assert (idle_reason(kind, gpu, wg) is None) == fits, (kind, wg)


class Gem5FreeList:
    """gem5's ``DynPoolManager`` (``dyn_pool_manager.cc``) as its source reads, for one pool:
    ``[first, end)`` records in list order; ``allocateRegion`` takes the front of the first
    record that holds the region, ``freeRegion`` merges with the record ending at the
    region's start and the one starting at its end, or appends a record at the back."""

    def __init__(self, size):
        self.records = [[0, size]]

    def allocate(self, size):
        for record in self.records:
            if record[1] - record[0] >= size:
                start = record[0]
                record[0] += size
                if record[0] == record[1]:
                    self.records.remove(record)
                return start
        raise AssertionError("no region")

    def free(self, first, last):
        below = next((r for r in self.records if r[1] == first), None)
        above = next((r for r in self.records if r[0] == last), None)
        if below and above:
            below[1] = above[1]
            self.records.remove(above)
        elif below:
            below[1] = last
        elif above:
            above[0] = first
        else:
            self.records.append([first, last])


def test_wave_regions_follow_gem5s_free_list_order():
    # Random takes and releases of multi-wave WGs on one CU of 2 SIMDs: every placement and
    # every free list equal gem5's pool, wave by wave (allocation order, freed in that
    # order); the address-order first fit the model used before places differently.
    size = 40
    differs = 0
    for seed in range(40):
        rng = random.Random(seed)
        gpu = GpuConfig(aps=1, peus=2, vgpr=size, sgpr=size, lds=8, wave_slots=16,
                        priorities=1)
        bits = {"vgpr": [(1 << size) - 1] * 2, "sgpr": [(1 << size) - 1] * 2, "lds": [255]}
        resources = SimpleNamespace(bits=bits, size={"vgpr": size, "sgpr": size, "lds": 8},
                                    free={"vgpr": [size] * 2, "sgpr": [size] * 2, "lds": [8]})
        units = units_for(gpu, SimpleNamespace(units="wave_regions"), resources,
                          SimpleNamespace(view={}))
        pools = {(name, q): Gem5FreeList(size) for name in ("vgpr", "sgpr") for q in range(2)}
        live = []
        for step in range(300):
            if live and (rng.random() < 0.45 or step % 50 == 49):
                allocation, starts = live.pop(rng.randrange(len(live)))
                for name, plan in (("vgpr", allocation.vgpr), ("sgpr", allocation.sgpr)):
                    for q, mask in enumerate(plan):
                        if mask:
                            bits[name][q] |= mask
                for (name, q), per, first in starts:
                    pools[name, q].free(first, first + per)
                units.changed(0)
                units.released(allocation)
            else:
                wg = SimpleNamespace(id=step, waves=rng.randint(1, 6), vgpr=rng.randint(1, 7),
                                     sgpr=rng.randint(0, 3), lds=0)
                row = (wg.waves - wg.waves // 2, wg.waves // 2)
                plan = units.plan(wg, 0, row)
                if plan is None:
                    continue
                starts = []
                for index, name, per in ((0, "vgpr", wg.vgpr), (1, "sgpr", wg.sgpr)):
                    for q, count in enumerate(row):
                        if not per or not count:
                            assert not plan[index][q]
                            continue
                        word, expect = bits[name][q], 0
                        for _ in range(count):
                            first = pools[name, q].allocate(per)
                            starts.append(((name, q), per, first))
                            expect |= ((1 << per) - 1) << first
                            # what first fit by address would have placed
                            low = next(s for s, n in runs_by_scan(word, size, 1) if n >= per)
                            differs += low != first
                            word &= ~(((1 << per) - 1) << low)
                        assert plan[index][q] == expect, (seed, step, name, q)
                        bits[name][q] &= ~expect
                allocation = SimpleNamespace(wg=wg, ap=0, vgpr=plan[0], sgpr=plan[1])
                units.changed(0)
                units.taken(allocation)
                live.append((allocation, starts))
            for (name, q), pool in pools.items():
                assert units.free_list(name, q) == pool.records, (seed, step, name, q)
    assert differs > 50, differs


def test_gem5_places_in_a_freed_region_by_list_order_not_address():
    # Directed (A6, freeRegion appends): five one-wave WGs fill a SIMD's 10 blocks; the one
    # at blocks 6-7 ends, then the one at 2-3. gem5's list is [6, 8), [2, 4): the next WG
    # goes to 6, where first fit by address would take 2.
    gpu = GpuConfig(aps=1, peus=1, vgpr=10, sgpr=8, lds=8, wave_slots=8, priorities=1)
    bits = {"vgpr": [(1 << 10) - 1], "sgpr": [255], "lds": [255]}
    resources = SimpleNamespace(bits=bits, size={"vgpr": 10, "sgpr": 8, "lds": 8},
                                free={"vgpr": [10], "sgpr": [8], "lds": [8]})
    units = units_for(gpu, SimpleNamespace(units="wave_regions"), resources,
                      SimpleNamespace(view={}))

    def take(number):
        wg = SimpleNamespace(id=number, waves=1, vgpr=2, sgpr=0, lds=0)
        plan = units.plan(wg, 0, (1,))
        bits["vgpr"][0] &= ~plan[0][0]
        allocation = SimpleNamespace(wg=wg, ap=0, vgpr=plan[0], sgpr=plan[1])
        units.changed(0)
        units.taken(allocation)
        return allocation

    def release(allocation):
        bits["vgpr"][0] |= allocation.vgpr[0]
        units.changed(0)
        units.released(allocation)

    placed = [take(number) for number in range(5)]
    assert [a.vgpr[0] for a in placed] == [0b11 << start for start in (0, 2, 4, 6, 8)]
    release(placed[3])
    release(placed[1])
    assert units.free_list("vgpr", 0) == [[6, 8], [2, 4]]
    assert take(5).vgpr[0] == 0b11 << 6
    release(placed[2])                       # 4-5 joins 2-3 (no record touches 6 now)
    assert units.free_list("vgpr", 0) == [[2, 6]]
