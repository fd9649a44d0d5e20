"""gem5's kept slot rows (``Gem5Matcher.slot_rows``, A5) against their inputs: the rows are
kept per AP and WG shape until what they read changes. With ``units = "blocks"`` a PEU's
capacity reads the free-block view, so a view change (``View.show``, then ``matcher.mark``)
must drop the AP's rows; with the other units they read only the AP's slots and status
registers, which change only on a take or a release, so they are kept across view changes.
Checked on hand-built scenarios (expected cycles and PEUs derived by hand), and on random
configurations against the same runs with the rows computed afresh at every use, on the
Python model and on the compiled engine."""

import pytest

from model.dispatch.config import PRESETS, UNITS, GpuConfig, WorkGroup, with_policy
from model.dispatch.core import core
from model.dispatch.engine import DispatchSimulator
from model.dispatch.gem5 import Gem5Matcher
from tests.test_dispatch_exact import random_case

GEM5 = PRESETS["gem5"]
ENGINES = ["python"] + (["compiled"] if core is not None else [])


def wg(id_, *, arrival=0, vgpr=0, lds=0, duration=1000):
    return WorkGroup(id=id_, channel=0, priority=0, waves=1, vgpr=vgpr, sgpr=0, lds=lds,
                     duration=duration, independent=False, arrival=arrival, barrier=False)


def dispatches(gpu, policy, work, engine, cycles=3000):
    """``{WG id: (cycle, waves per PEU)}`` of the run's dispatches."""
    events = []
    options = {"debug": True, "strict": True} if engine == "python" else {"keep": False}
    sim = DispatchSimulator(gpu, policy, work, cycles=cycles, events=events, engine=engine,
                            **options)
    sim.run()
    assert sim.engine_used == engine
    return {w.id: (c, tuple(waves)) for c, kind, w, _, waves, *_ in events
            if kind == "dispatch"}


GPU = GpuConfig(aps=1, peus=2, vgpr=8, sgpr=8, lds=8, wave_slots=4, priorities=1)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("latency", [0, 1, 3])
def test_blocks_rows_follow_a_view_change_that_frees_a_peu(engine, latency):
    # WG 0 (6 of PEU 0's 8 VGPR blocks, long) and WG 1 (6 of PEU 1's, ends at cycle 11)
    # start at cycle 0. WG 2 (6 blocks) arrives at 5: no PEU's view holds it. WG 1's release
    # at 11 is shown at 11 + latency (the view shows the status of latency cycles before):
    # WG 2 goes then, to PEU 1 -- not at WG 0's release (1001), as rows kept from before the
    # view change had it.
    policy = with_policy(GEM5, units="blocks", circuit_latency=latency)
    work = [wg(0, vgpr=6), wg(1, vgpr=6, duration=10), wg(2, arrival=5, vgpr=6, duration=10)]
    assert dispatches(GPU, policy, work, engine)[2] == (11 + latency, (0, 1))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("latency", [0, 1, 3])
def test_blocks_rows_follow_a_view_change_that_changes_the_row(engine, latency):
    # PEU 0: WGs 0 and 2 (1 block each, long) in WF slots 0 and 1; PEU 1: WG 1 (all 8 VGPR
    # and all 8 LDS blocks, ends at cycle 11) in slot 0. WG 3 (4 VGPR, 1 LDS) arrives at 5:
    # its rows give PEU 0's slot 2 (PEU 1's view is full) and the LDS view refuses it. WG 1's
    # release is shown at 11 + latency (PEU 1's VGPR and the LDS at once): the rows then
    # visit PEU 1's free slot 0 before PEU 0's slot 2, so WG 3 goes to PEU 1, not PEU 0.
    policy = with_policy(GEM5, units="blocks", circuit_latency=latency)
    work = [wg(0, vgpr=1), wg(1, vgpr=8, lds=8, duration=10), wg(2, vgpr=1),
            wg(3, arrival=5, vgpr=4, lds=1)]
    got = dispatches(GPU, policy, work, engine)
    assert [got[i][1] for i in range(3)] == [(1, 0), (0, 1), (1, 0)]
    assert got[3] == (11 + latency, (0, 1))


def test_rows_are_kept_across_a_view_change_only_where_they_do_not_read_the_view():
    # The cache stays (speed) for the units whose rows read only slots and status registers.
    gpu = GpuConfig(aps=2, peus=2, vgpr=8, sgpr=8, lds=8, wave_slots=4, priorities=1)
    for units in UNITS:
        sim = DispatchSimulator(gpu, with_policy(GEM5, units=units), [], cycles=1,
                                engine="python")
        matcher = sim.matcher
        for ap in (0, 1):
            matcher.slot_rows(wg(0, vgpr=2), ap)
        matcher.mark(0b10)
        assert sorted(matcher.rows) == ([0] if units == "blocks" else [0, 1]), units


def _uncached(self, wg, ap):
    return self._slot_rows(wg, ap)


@pytest.mark.parametrize("chunk", range(2))
def test_kept_rows_decide_as_rows_computed_afresh(chunk, monkeypatch):
    # Random configurations, gem5 with every units value: the event log with the kept rows
    # is the one with the rows computed afresh at every use (an independent recomputation).
    runs = 0
    for seed in range(chunk * 40, chunk * 40 + 40):
        gpu, _, workload, cycles, policies, _ = random_case(seed)
        base = next(p for p in policies if p.selection == "gem5")
        for units in UNITS:
            if units == "blocks":                # latency 0 too: a take shows next cycle
                policy = with_policy(base, units=units, circuit_latency=seed % 4)
            else:
                policy = with_policy(base, units=units, circuit="exact", circuit_latency=0,
                                     group_size=4, shared_width=0)
            logs = []
            for fresh in (False, True):
                if fresh:
                    monkeypatch.setattr(Gem5Matcher, "slot_rows", _uncached)
                events = []
                DispatchSimulator(gpu, policy, workload, cycles=cycles, events=events,
                                  keep=False, engine="python").run()
                monkeypatch.undo()
                logs.append([(c, k, w.id, ap, tuple(waves) if waves else None)
                             for c, k, w, ap, waves, *_ in events])
            assert logs[0] == logs[1], (seed, units)
            runs += 1
    assert runs == 40 * len(UNITS)
