"""Directed tests of the faithful baselines (model.dispatch.miaow, gpgpusim, gem5): each pins a
rule to what its source does (docs/baselines.md, "Directed tests"), so that a later change
cannot drift from the source silently. The random event-log replays of
tests/test_dispatch_exact.py run every preset, these included, with skipping on and off."""

from collections import deque
from pathlib import Path

import pytest

from model.dispatch.config import PRESETS, GpuConfig, WorkGroup, with_policy
from model.dispatch.engine import DispatchSimulator
from model.dispatch.kernels import replay_scenario
from model.dispatch.miaow import decision_clocks, lock_clocks

MIAOW, GPGPUSIM, GEM5 = PRESETS["miaow"], PRESETS["gpgpusim"], PRESETS["gem5"]
CONCURRENT = with_policy(GPGPUSIM, name="gpgpusim-concurrent",
                         selection="gpgpusim_concurrent")


def wg(id_, channel=0, *, arrival=0, waves=1, vgpr=0, sgpr=0, lds=0, duration=1000,
       barrier=False):
    return WorkGroup(id=id_, channel=channel, priority=0, waves=waves, vgpr=vgpr, sgpr=sgpr,
                     lds=lds, duration=duration, independent=False, arrival=arrival,
                     barrier=barrier)


def run(gpu, policy, work, cycles=3000):
    """``(simulator, [(cycle, WG id, AP, waves per PEU, starts)] of the dispatches)``, every
    invariant checked every cycle."""
    events = []
    sim = DispatchSimulator(gpu, policy, work, cycles=cycles, debug=True, strict=True,
                            events=events)
    result = sim.run()
    assert result["invariant_violations"] == 0
    return sim, [(c, w.id, ap, waves, starts) for c, kind, w, ap, waves, starts, _ in events
                 if kind == "dispatch"]


def run_result(gpu, policy, work, cycles=3000):
    """``(simulator, result)`` with every invariant checked every cycle."""
    sim = DispatchSimulator(gpu, policy, work, cycles=cycles, debug=True, strict=True)
    result = sim.run()
    assert result["invariant_violations"] == 0
    return sim, result


# -- MIAOW (src/verilog/rtl/dispatcher/) ----------------------------------------------------------

def test_miaow_a_wg_that_fits_nowhere_blocks_nothing():
    # M4: two APs each hold a WG leaving 3 LDS blocks; A (LDS 6) fits nowhere, B and C behind
    # it go, A is retried and goes once a holder is released. The blocking one-WG buffer
    # holds B and C behind A.
    gpu = GpuConfig(aps=2, peus=1, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)
    work = [wg(0, lds=5, duration=300), wg(1, lds=5, duration=2000),
            wg(2, arrival=40, lds=6, duration=10), wg(3, arrival=41, duration=10),
            wg(4, arrival=42, duration=10)]
    sim, dispatched = run(gpu, MIAOW, work)
    at = {w: c for c, w, *_ in dispatched}
    assert at[3] < 300 and at[4] < 300 and at[2] > 300, at
    assert sim.selector.rejections >= 2
    # Every decision dispatched its WG or rejected it (the results' "buffer" counts both).
    assert sim.selector.decisions - sim.selector.rejections == len(dispatched) == 5
    _, blocked = run(gpu, PRESETS["blocking-buffer"], work)
    at = {w: c for c, w, *_ in blocked}
    assert at[2] > 300 and at[3] > at[2] and at[4] > at[2], at


def test_miaow_round_robin_over_entries_lowest_ap_outside_locked_groups_and_its_clocks():
    # M1-M3, M5, M6, M11: six one-wave WGs at cycle 0, taken into the buffer one per 5
    # clocks at the lowest free entry, tried in round robin from one past the last entry
    # tried, each decision 16 + 2e clocks; each allocation locks its AP's group 18 + 4n
    # clocks, so the lowest unlocked AP alternates 0, 1, 0, 1 (the RTL: CU 0, CU 4, ...).
    # W1, written into entry 0 freed by W0, waits until the pointer wraps.
    gpu = GpuConfig(aps=2, peus=1, vgpr=16, sgpr=16, lds=8, wave_slots=16, priorities=1)
    _, dispatched = run(gpu, MIAOW, [wg(i) for i in range(6)])
    assert [(c, w, ap) for c, w, ap, *_ in dispatched] == [
        (0, 0, 0), (16, 2, 1), (34, 3, 0), (54, 5, 1), (76, 1, 0), (92, 4, 1)]


def test_miaow_decision_and_lock_clocks_are_the_rtl_measurements():
    # M11, M12 (RTL runs, docs/baselines.md): 16, 18, 20 clocks for entries 0, 1, 2; 16, 19,
    # 26 for 1, 8, 15 waves in entry 0; the group lock 18, 22, ..., 114 for 0 .. 24 WGs.
    assert [decision_clocks(e, 1) for e in (0, 1, 2, 10, 11)] == [16, 18, 20, 36, 38]
    assert [decision_clocks(0, w) for w in (1, 8, 15)] == [16, 19, 26]
    assert [lock_clocks(n) for n in (0, 1, 24)] == [18, 22, 114]


def test_miaow_places_at_the_start_of_the_largest_free_range():
    # M7: VGPR ranges of 100, 50, 20 at 0, 100, 150; with the 50 released the free runs are
    # [100, 150) and [170, 256): a 10 goes at 170 (first fit: 100). With the 100 released
    # instead, [0, 100) is the larger: it goes at 0.
    gpu = GpuConfig(aps=2, peus=1, vgpr=256, sgpr=16, lds=8, wave_slots=16, priorities=1)

    def starts(first_short):
        work = [wg(0, vgpr=100, duration=300 if first_short else 5000),
                wg(1, arrival=100, vgpr=50, duration=5000 if first_short else 300),
                wg(2, arrival=200, vgpr=20, duration=5000),
                wg(3, arrival=700, vgpr=10, duration=5000)]
        # AP 1 is kept full so that everything goes to AP 0.
        work.append(wg(9, vgpr=256, duration=5000))
        _, dispatched = run(gpu, MIAOW, sorted(work, key=lambda w: (w.arrival, w.id)),
                            cycles=1000)
        return {w: (ap, s[0][0]) for _, w, ap, _, s in dispatched if w != 9}

    assert starts(first_short=False) == {0: (0, 0), 1: (0, 100), 2: (0, 150), 3: (0, 170)}
    assert starts(first_short=True)[3] == (0, 0)


# -- GPGPU-Sim (src/gpgpu-sim/gpu-sim.cc, shader.cc) ----------------------------------------------

# Kernel A (channel 0): CTAs of 5 LDS blocks (one per SM of 8); kernel B (channel 1): none.
LDS_GPU = GpuConfig(aps=2, peus=1, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)
KERNELS = [wg(0, lds=5, duration=50), wg(1, lds=5, duration=100), wg(2, lds=5, duration=50),
           wg(3, 1, arrival=1, duration=10), wg(4, 1, arrival=1, duration=10)]


def test_gpgpusim_concurrent_mode_sticky_kernel_blocks_every_other():
    # G2, G4: A2 fits no SM while A0 and A1 run; with -gpgpu_concurrent_kernel_sm 1 the
    # sticky kernel A is the only candidate, so B's CTAs wait until A2 goes (cycle 51).
    # The round-robin first fit issues B at once.
    _, dispatched = run(LDS_GPU, CONCURRENT, KERNELS)
    at = {w: c for c, w, *_ in dispatched}
    assert at[0] == at[1] == 0 and at[2] == 51 and min(at[3], at[4]) >= 51, at
    _, first_fit = run(LDS_GPU, PRESETS["rr-first-fit"], KERNELS)
    assert max(c for c, w, *_ in first_fit if w in (3, 4)) < 10


def test_gpgpusim_default_mode_an_sm_switches_kernel_only_when_drained():
    # G3: each SM keeps kernel A; B's first CTA starts only on an SM that runs nothing once
    # A has no CTA left: SM 1 after A1 (cycles 1-100) is released at 101, SM 0 after A2.
    _, dispatched = run(LDS_GPU, GPGPUSIM, KERNELS)
    placed = {w: (c, ap) for c, w, ap, *_ in dispatched}
    assert placed[0] == (0, 0) and placed[1] == (0, 1) and placed[2] == (51, 0)
    assert placed[3] == (101, 1), placed       # not beside A2 on SM 0, not before 101


def test_gpgpusim_one_cta_per_sm_per_cycle():
    # G5: 4 idle SMs, 8 CTAs of one kernel at cycle 0: 4 issued in cycle 0 and 4 in cycle 1
    # (the seed's dispatcher: one per cycle).
    gpu = GpuConfig(aps=4, peus=4, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)
    _, dispatched = run(gpu, GPGPUSIM, [wg(i) for i in range(8)])
    assert sorted(c for c, *_ in dispatched) == [0] * 4 + [1] * 4
    assert sorted(ap for c, _, ap, *_ in dispatched if c == 0) == [0, 1, 2, 3]


@pytest.mark.parametrize("grid", [None, 4, 2 * 32])
def test_gpgpusim_a_small_grid_is_spread_over_the_sms(grid):
    # G6: kernel A (one CTA, SM 0, cycles 1-500), then kernel B of 4 CTAs at cycle 1. SM 0
    # keeps A until drained (G3), so only SM 1 can take B. A grid of 4 on 2 SMs is capped
    # at ceil(4 / 2) = 2 CTAs per SM: B2 and B3 wait for SM 0 (released at 501). An unknown
    # grid (None) or one of MAX_CTA x SMs is not: SM 1 takes all four, one per cycle.
    gpu = GpuConfig(aps=2, peus=4, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)
    a = WorkGroup(id=0, channel=0, priority=0, waves=1, vgpr=0, sgpr=0, lds=0, duration=500,
                  independent=False, arrival=0, grid=None if grid is None else 1)
    b = [WorkGroup(id=1 + i, channel=1, priority=0, waves=1, vgpr=0, sgpr=0, lds=0,
                   duration=1000, independent=False, arrival=1, grid=grid) for i in range(4)]
    _, dispatched = run(gpu, GPGPUSIM, [a, *b])
    placed = [(c, ap) for c, w, ap, *_ in sorted(dispatched, key=lambda d: d[1]) if w >= 1]
    if grid == 4:
        assert placed == [(1, 1), (2, 1), (501, 0), (502, 0)], placed
    else:
        assert placed == [(1, 1), (2, 1), (3, 1), (4, 1)], placed


def test_gpgpusim_never_holds_more_ctas_on_an_sm_than_max_cta_allows():
    # G6 read back from the event log of a real-shaped trace (MI300X, 304 CUs, grids of 49 to
    # 4,096 WGs): when a WG is dispatched its AP holds fewer than 32 WGs, and fewer than
    # ceil(grid / 304) for a grid under 32 x 304 = 9,728 (every kernel here: caps of 1 and,
    # for 4,096 WGs, 14). Without the cap a CU takes a second WG of a small kernel.
    trace = Path(__file__).parent / "data" / "kernel-traces" / "mi300x_kernel_trace.csv"
    scenario, _ = replay_scenario([trace], "cdna3-cu")
    events = []
    DispatchSimulator(scenario.gpu, GPGPUSIM, scenario.workgroups, cycles=scenario.cycles,
                      events=events, keep=False).run()
    P = scenario.gpu.aps
    running = [set() for _ in range(P)]
    capped = 0
    for _, kind, w, ap, *_ in events:
        if kind == "dispatch":
            limit = 32 if w.grid >= 32 * P else -(-w.grid // P)
            assert len(running[ap]) < limit, (w.id, ap, w.grid)
            running[ap].add(w.id)
            capped += limit < 32
        elif kind == "release":
            running[ap].discard(w.id)
    assert capped == len(scenario.workgroups) == 4593


def test_gpgpusim_lowest_cta_slot_and_warp_i_mod_4():
    # G8: one-warp CTAs C0..C3 take slots 0..3, schedulers 0..3; C1 finishes; C4 takes the
    # freed slot 1, scheduler 1, although schedulers 0, 2, 3 hold as much.
    gpu = GpuConfig(aps=1, peus=4, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)
    work = [wg(0), wg(1, duration=10), wg(2), wg(3), wg(4, arrival=50)]
    _, dispatched = run(gpu, GPGPUSIM, work)
    peu = {w: waves.index(1) for _, w, _, waves, _ in dispatched}
    assert peu == {0: 0, 1: 1, 2: 2, 3: 3, 4: 1}


# -- gem5 (src/gpu-compute/dispatcher.cc, shader.cc, compute_unit.cc) -----------------------------

def test_gem5_a_failed_kernel_goes_to_the_back_and_the_next_is_tried():
    # A1: K1 (channel 0) has X1 that fits and X2 that then fits nowhere; K2 (channel 1) has
    # Y1, Y2. In cycle 0 X1, Y1 and Y2 are dispatched and K1 is at the back of the FIFO.
    gpu = GpuConfig(aps=1, peus=1, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)
    work = [wg(0, lds=5), wg(1, lds=5), wg(2, 1), wg(3, 1)]
    sim, dispatched = run(gpu, GEM5, work, cycles=5)
    assert sorted((c, w) for c, w, *_ in dispatched) == [(0, 0), (0, 2), (0, 3)]
    assert sim.selector.fifo == deque([(0, 0)])


def test_gem5_sweeps_from_cu_0_one_wg_per_cu_every_wg_in_one_cycle():
    # A3: 4 idle CUs, a kernel of 6 WGs: CUs 0, 1, 2, 3, 0, 1, all in cycle 0.
    gpu = GpuConfig(aps=4, peus=4, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)
    _, dispatched = run(gpu, GEM5, [wg(i) for i in range(6)])
    assert [(c, ap) for c, _, ap, *_ in dispatched] == [(0, a) for a in (0, 1, 2, 3, 0, 1)]


def test_gem5_visits_free_slots_row_by_row_not_the_emptiest_simd():
    # A5: one CU, 2 SIMDs of 3 WF slots; six one-wave WGs fill the rows (0,0) (1,0) (0,1)
    # (1,1) (0,2) (1,2); those in (0,0), (1,1), (1,2) finish. SIMD 0 has slot 0 free, SIMD 1
    # slots 1 and 2: a new wave goes to SIMD 0 (row 0 first); least-loaded picks SIMD 1.
    gpu = GpuConfig(aps=1, peus=2, vgpr=16, sgpr=16, lds=8, wave_slots=3, priorities=1)
    short = {0, 3, 5}
    work = [wg(i, duration=10 if i in short else 1000) for i in range(6)]
    work.append(wg(6, arrival=50))
    _, dispatched = run(gpu, GEM5, work)
    assert [waves.index(1) for _, _, _, waves, _ in dispatched] == [0, 1, 0, 1, 0, 1, 0]
    least = with_policy(PRESETS["emb1"], wave_placement="least_loaded", rotate=False)
    _, dispatched = run(gpu, least, work)
    assert dispatched[-1][3].index(1) == 1


def test_gem5_on_an_idle_cu_a_five_wave_wg_takes_2_1_1_1():
    # A5 on an idle CU: the same as least-loaded.
    gpu = GpuConfig(aps=1, peus=4, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)
    _, dispatched = run(gpu, GEM5, [wg(0, waves=5)])
    assert list(dispatched[0][3]) == [2, 1, 1, 1]


# -- each baseline's own resource units (model.dispatch.units) -----------------------------------

def _fragmented(lds=False):
    """Three WGs of 4 blocks (VGPR, or LDS with ``lds``) at cycle 0 on one AP of 16 (LDS 8:
    2 blocks each); the middle one ends at cycle 10, leaving two free runs of 4 (LDS 2)."""
    if lds:
        return [wg(0, lds=2), wg(1, lds=2, duration=10), wg(2, lds=2)]
    return [wg(0, vgpr=4), wg(1, vgpr=4, duration=10), wg(2, vgpr=4)]


ONE_SM = GpuConfig(aps=1, peus=1, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)


def test_gpgpusim_counts_registers_and_shared_memory_per_sm():
    # G7, G9: 8 VGPR blocks free in runs of 4 and 4; a CTA of 6 goes at once (counted, the
    # lowest free blocks 4-7 and 12-13), as does one of 3 LDS blocks with 4 free in runs of
    # 2. The seed's contiguous blocks (units = "blocks") hold both until cycle 1000.
    for work, late in ((_fragmented() + [wg(3, arrival=50, vgpr=6)], 3),
                       (_fragmented(lds=True) + [wg(3, arrival=50, lds=3)], 3)):
        sim, dispatched = run(ONE_SM, GPGPUSIM, work)
        at = {w: (c, s) for c, w, _, _, s in dispatched}
        assert at[late][0] == 50, at
        _, blocks = run(ONE_SM, with_policy(GPGPUSIM, units="blocks"), work)
        assert {w: c for c, w, *_ in blocks}[late] > 1000
    assert at[3][1][2] == 2                      # LDS blocks 2, 3 and 6: the lowest free
    sim, _ = run(ONE_SM, GPGPUSIM, work, cycles=100)
    assert sim.resources.running[3].lds == 0b1001100
    sim, _ = run(ONE_SM, GPGPUSIM, _fragmented() + [wg(3, arrival=50, vgpr=6)], cycles=100)
    assert sim.resources.running[3].vgpr == [0b11 << 12 | 0b1111 << 4]


def test_gem5_registers_are_one_region_per_wave_and_lds_is_counted():
    # A6: runs of 4 and 4 free; a WG of 2 waves x 3 VGPR blocks takes one region of 3 in each
    # run (canAllocate counts 4 // 3 + 4 // 3 = 2); one of 3 waves x 3 (9 blocks, 2 regions)
    # waits. The seed's blocks need 6 contiguous. A7: LDS counted.
    two = _fragmented() + [wg(3, arrival=50, waves=2, vgpr=3)]
    sim, dispatched = run(ONE_SM, GEM5, two, cycles=100)
    assert {w: c for c, w, *_ in dispatched}[3] == 50
    assert sim.resources.running[3].vgpr == [0b111 << 4 | 0b111 << 12]
    three = _fragmented() + [wg(3, arrival=50, waves=3, vgpr=3)]
    _, dispatched = run(ONE_SM, GEM5, three)
    assert {w: c for c, w, *_ in dispatched}[3] > 1000
    _, blocks = run(ONE_SM, with_policy(GEM5, units="blocks"), two)
    assert {w: c for c, w, *_ in blocks}[3] > 1000
    _, dispatched = run(ONE_SM, GEM5, _fragmented(lds=True) + [wg(3, arrival=50, lds=3)])
    assert {w: c for c, w, *_ in dispatched}[3] == 50


def test_miaow_one_range_per_wg_per_cu_across_the_simd_files_and_slots_per_cu():
    # M8-M10, M13: 2 SIMDs of 8 VGPR blocks are one range of 16 per CU: a one-wave WG of 12
    # blocks fits at the start of the largest free range (3), crossing from SIMD 0's file
    # into SIMD 1's; the seed's blocks refuse it (12 on one PEU of 8).
    gpu = GpuConfig(aps=1, peus=2, vgpr=8, sgpr=8, lds=8, wave_slots=4, priorities=1)
    sim, dispatched = run(gpu, MIAOW, [wg(0, vgpr=3), wg(1, arrival=20, vgpr=12)], cycles=100)
    assert [w for _, w, *_ in dispatched] == [0, 1]
    assert sim.resources.running[1].vgpr == [(3, 5), (0, 7)]
    _, result = run_result(gpu, with_policy(MIAOW, units="blocks"), [wg(0, vgpr=12)])
    assert result["workgroups_rejected"] == 1
    # Wave slots counted per CU, each wave to the SIMD with the most free slots: 3 waves go
    # 2 + 1, then 5 waves fit the CU's 5 free slots as 2 + 3. The seed's units (the unrotated
    # split, slots per PEU) want 3 + 2 and wait for the first WG to end.
    work = [wg(0, waves=3), wg(1, arrival=50, waves=5)]
    _, dispatched = run(gpu, MIAOW, work)
    assert [(c, waves) for c, _, _, waves, _ in dispatched] == [(0, [2, 1]), (50, [2, 3])]
    _, dispatched = run(gpu, with_policy(MIAOW, units="blocks"), work)
    assert dispatched[1][0] > 1000 and dispatched[1][3] == [3, 2]


def test_miaow_waves_share_the_cus_issue_slots_as_one_pool():
    # M13 under the shared-issue model: three one-wave WGs of 120 instructions on a CU of 2
    # SIMDs issuing 1 a cycle each. MIAOW binds no wave to a SIMD, so the three share 2 issue
    # slots (2/3 each, about 180 cycles); bound to SIMDs (the seed's units, unrotated split:
    # all three on SIMD 0) each gets 1/3 and runs about 360.
    gpu = GpuConfig(aps=1, peus=2, vgpr=8, sgpr=8, lds=8, wave_slots=4, priorities=1,
                    issue_width=1)
    work = [wg(i, duration=120) for i in range(3)]
    runs = {}
    for units in ("ap_range", "blocks"):
        events = []
        sim = DispatchSimulator(gpu, with_policy(PRESETS["miaow-one-clock"], units=units),
                                work, cycles=2000, debug=True, strict=True, events=events,
                                execution="shared")
        assert sim.run()["invariant_violations"] == 0
        start = {w.id: c for c, kind, w, *_ in events if kind == "dispatch"}
        runs[units] = [c - start[w.id] for c, kind, w, *_ in events if kind == "release"]
    assert all(175 <= r <= 185 for r in runs["ap_range"]), runs
    assert all(355 <= r <= 365 for r in runs["blocks"]), runs


def test_admission_reads_the_policys_units():
    # An idle AP of 2 PEUs x 8 VGPR blocks: 5 waves x 3 blocks is 9 on the busiest PEU in
    # blocks (refused), 15 of 16 counted or as one range (admitted), and 3 waves on one PEU
    # of 8 // 3 = 2 regions for gem5 (refused).
    gpu = GpuConfig(aps=1, peus=2, vgpr=8, sgpr=8, lds=8, wave_slots=4, priorities=1)
    big = [wg(0, waves=5, vgpr=3)]
    for policy, rejected in ((with_policy(GPGPUSIM, units="blocks"), 1), (GPGPUSIM, 0),
                             (MIAOW, 0), (GEM5, 1)):
        _, result = run_result(gpu, policy, big)
        assert result["workgroups_rejected"] == rejected, policy


def test_own_units_are_only_the_faithful_baselines():
    from model.config import ConfigError
    from model.dispatch.config import check_policy
    with pytest.raises(ConfigError, match="units"):
        check_policy(with_policy(PRESETS["emb1"], units="counted"), ONE_SM)
    with pytest.raises(ConfigError, match="circuit is ignored"):
        check_policy(with_policy(GPGPUSIM, circuit="grouped"), ONE_SM)
    check_policy(with_policy(GPGPUSIM, units="blocks", circuit="grouped"), ONE_SM)


def test_free_runs_and_regions_against_placing_one_by_one():
    # regions(): what first fit places one region after another, on every 10-bit word.
    from model.dispatch.units import free_runs, regions
    from model.maxblock import first_fit
    for word in range(1 << 10):
        runs = list(free_runs(word))
        assert sum(((1 << n) - 1) << s for s, n in runs) == word
        assert all(s + n <= 10 and not word >> (s + n) & 1 for s, n in runs)
        for size in (1, 2, 3, 5):
            free, count = word, 0
            while (start := first_fit(free, 10, size)) is not None:
                free &= ~(((1 << size) - 1) << start)
                count += 1
            assert regions(word, size) == count, (word, size)


# -- the RTL builds none of them ----------------------------------------------------------------

def test_the_rtl_refuses_the_faithful_baselines_in_one_line():
    from hw.flow.dispatch_cosim import policy_unsupported
    for name in ("miaow", "gpgpusim", "gem5", "miaow-one-clock"):
        reason = policy_unsupported(PRESETS[name])
        assert reason and "the RTL does not implement it" in reason and "\n" not in reason
    for name in ("prior-art", "blocking-buffer", "rr-first-fit", "emb1", "seed"):
        assert policy_unsupported(PRESETS[name]) is None


def test_miaow_rejections_skipped_in_whole_rounds_leave_the_state_of_stepping_them():
    # Buffered WGs that fit no unlocked AP are retried back to back; with skipping, those
    # decisions are not stepped but replayed at the next event (MiaowSelector.replay), in
    # whole rounds of the buffer. Overloaded random workloads on both MIAOW presets: the
    # result and the controller's state (pointer, busy-until, counts) equal stepping every
    # cycle, and the replay did skip rounds (far fewer cycles evaluated).
    import random

    replayed = []
    for seed in range(12):
        rng = random.Random(seed)
        gpu = GpuConfig(aps=rng.randint(1, 4), peus=rng.choice([1, 2, 4]), vgpr=16, sgpr=8,
                        lds=rng.choice([4, 8]), wave_slots=rng.randint(2, 6), priorities=1)
        work = [wg(i, rng.randrange(3), arrival=rng.randint(0, 400),
                   waves=rng.randint(1, gpu.peus), vgpr=rng.randint(0, 6),
                   sgpr=rng.randint(0, 3), lds=rng.randint(0, gpu.lds),
                   duration=rng.randint(50, 900))
                for i in range(rng.randint(20, 70))]
        work.sort(key=lambda w: w.arrival)
        work = [_renumbered(w, i) for i, w in enumerate(work)]
        for policy in (MIAOW, PRESETS["miaow-one-clock"]):
            states, results = [], []
            for skip in (True, False):
                sim = DispatchSimulator(gpu, policy, work, cycles=6000, skip=skip,
                                        debug=not skip, strict=True)
                result = sim.run()
                selector = sim.selector
                if selector.quiet_from is not None:
                    selector.replay(6000)          # what stepping to the limit would do
                assert result["buffer"] == {"decisions": selector.decisions,
                                            "rejections": selector.rejections}
                states.append((selector.last, selector.busy_until, selector.decisions,
                               selector.rejections))
                results.append(result)
            fast, slow = results
            replayed.append(slow["processed_cycles"] - fast.pop("processed_cycles"))
            slow.pop("processed_cycles")
            assert fast == slow, (seed, policy.name)
            assert states[0] == states[1], (seed, policy.name, states)
            assert states[1][3] > 0, "the workload overloads the GPU: some WGs are rejected"
    assert sum(replayed) > 10_000, replayed


def _renumbered(work, ident):
    return WorkGroup(id=ident, channel=work.channel, priority=0, waves=work.waves,
                     vgpr=work.vgpr, sgpr=work.sgpr, lds=work.lds, duration=work.duration,
                     independent=False, arrival=work.arrival)


def test_miaow_replay_of_rejections_against_one_decision_at_a_time():
    # MiaowSelector.replay against the rule stepped one decision at a time (M3, M11: the
    # next occupied entry after the last one tried, 16 + 2e + max(0, waves - 5) clocks),
    # from random buffers, pointers (also at an empty entry, as after a dispatch from it)
    # and spans that end inside, at the end of, or after whole rounds.
    import random

    gpu = GpuConfig(aps=1, peus=1, vgpr=16, sgpr=16, lds=8, wave_slots=8, priorities=1)
    rng = random.Random(5)
    for case in range(300):
        sim = DispatchSimulator(gpu, MIAOW, [], cycles=10)
        selector = sim.selector
        n = len(selector.entries)
        for entry in rng.sample(range(n), rng.randint(1, 12)):
            selector.entries[entry] = wg(entry, waves=rng.randint(1, 9))
        selector.last = rng.randrange(n)
        selector.busy_until = rng.randint(0, 60)
        selector.quiet_from = rng.randint(0, 60)
        # Expected: one decision at a time.
        last, busy, count = selector.last, selector.busy_until, 0
        occupied = [e for e in range(n) if selector.entries[e] is not None]
        period = sum(decision_clocks(e, selector.entries[e].waves) for e in occupied)
        start = max(selector.quiet_from, busy)
        end = start + rng.choice([0, 1, period - 1, period, 2 * period, 3 * period + 7,
                                  rng.randint(0, 5 * period)])
        t = start
        while t < end:
            last = next((last + 1 + k) % n for k in range(n)
                        if selector.entries[(last + 1 + k) % n] is not None)
            busy = t + decision_clocks(last, selector.entries[last].waves)
            t = busy
            count += 1
        selector.replay(end)
        assert selector.quiet_from is None
        assert (selector.last, selector.busy_until, selector.decisions,
                selector.rejections) == (last, busy, count, count), case
