"""The two model options the RTL dispatcher needs (issue 16), checked against independent
re-derivations: ``release_limit`` (a dispatcher that takes a bounded number of completions per
clock) and ``circuit = "shared"`` (embodiment 7's time-multiplexed unit per AP). The defaults
are unchanged: ``release_limit = 0`` and every other circuit behave as before (the model's
own tests hold that).
"""

import random
import sys
from collections import Counter
from pathlib import Path

import pytest

from model.config import ConfigError
from model.dispatch import PRESETS, DispatchSimulator, GpuConfig, WorkGroup, load_scenario
from model.dispatch.config import shared_schedule, with_policy
from model.maxblock import max_free_run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_dispatch_exact import random_case, shared_case  # noqa: E402

EMB1 = PRESETS["emb1"]
SMALL = GpuConfig(aps=2, peus=2, vgpr=16, sgpr=8, lds=8, wave_slots=4, priorities=2)


def wg(id, channel=0, *, waves=1, vgpr=1, sgpr=0, lds=0, duration=10, arrival=0, priority=0):
    return WorkGroup(id=id, channel=channel, priority=priority, waves=waves, vgpr=vgpr,
                     sgpr=sgpr, lds=lds, duration=duration, independent=False, arrival=arrival)


def run(gpu, policy, workload, **options):
    events = []
    simulator = DispatchSimulator(gpu, policy, workload, debug=True, strict=True,
                                  events=events, **options)
    return simulator.run(), events


# -- release_limit ----------------------------------------------------------------------------

def test_one_release_per_cycle_defers_in_due_then_id_order():
    # Three WGs dispatched in cycles 0, 1, 2 with durations 4, 3, 2 are all due in cycle 5;
    # with one release a cycle they go in cycles 5, 6, 7, lowest id first.
    workload = [wg(0, duration=4), wg(1, duration=3), wg(2, duration=2)]
    policy = with_policy(EMB1, release_limit=1)
    _, events = run(SMALL, policy, workload)
    releases = [(c, w.id) for c, kind, w, *_ in events if kind == "release"]
    assert releases == [(5, 0), (6, 1), (7, 2)]
    _, unlimited = run(SMALL, EMB1, workload)
    assert [(c, w.id) for c, kind, w, *_ in unlimited if kind == "release"] == \
        [(5, 0), (5, 1), (5, 2)]


def test_a_deferred_release_keeps_its_blocks_busy_until_it_is_applied():
    # WG 2 needs every VGPR block of PEU 0 of AP 0 that WGs 0 and 1 hold; both are due in
    # cycle 5. With one release per cycle the second is applied in cycle 6, so WG 2 (one
    # AP only) goes in cycle 6, not 5.
    gpu = GpuConfig(aps=1, peus=1, vgpr=4, sgpr=1, lds=1, wave_slots=4, priorities=1)
    workload = [wg(0, vgpr=2, duration=4), wg(1, vgpr=2, duration=3), wg(2, vgpr=4, arrival=1)]
    dispatched = {}
    for limit in (0, 1):
        _, events = run(gpu, with_policy(EMB1, release_limit=limit), workload)
        dispatched[limit] = {w.id: c for c, kind, w, *_ in events if kind == "dispatch"}
    assert dispatched[0][2] == 5 and dispatched[1][2] == 6


@pytest.mark.parametrize("seed", range(0, 30, 3))
def test_release_limit_bounds_releases_and_skipping_changes_nothing(seed):
    gpu, channels, workload, cycles, policies, _ = random_case(seed)
    for policy in policies:
        for limit in (1, 2):
            policy_ = with_policy(policy, release_limit=limit)
            logs = []
            for skip in (True, False):
                result, events = run(gpu, policy_, workload, channels=channels, cycles=cycles,
                                     skip=skip)
                per_cycle = Counter(c for c, kind, *_ in events if kind == "release")
                assert max(per_cycle.values(), default=0) <= limit
                logs.append([(c, k, w.id, a) for c, k, w, a, *_ in events])
            assert logs[0] == logs[1], (seed, policy.name, limit)


@pytest.mark.parametrize("seed", range(0, 20, 4))
def test_release_limit_under_the_shared_issue_model(seed):
    # The merge of release_limit with the shared-issue execution model (issue 15): releases
    # still come at most one a cycle, the run's invariants hold (debug, strict) and skipping
    # changes nothing (the finishes are processed before the deferred releases).
    gpu, channels, workload, cycles, policies, _, execution = shared_case(seed)
    for policy in policies[:3]:
        unlimited = {w.id: c for c, k, w, *_ in run(
            gpu, policy, workload, channels=channels, cycles=cycles,
            execution=execution)[1] if k == "release"}
        logs = []
        for skip in (True, False):
            _, events = run(gpu, with_policy(policy, release_limit=1), workload,
                            channels=channels, cycles=cycles, skip=skip, execution=execution)
            releases = [(c, w.id) for c, k, w, *_ in events if k == "release"]
            assert max(Counter(c for c, _ in releases).values(), default=0) <= 1
            logs.append([(c, k, w.id, a) for c, k, w, a, *_ in events])
        assert logs[0] == logs[1], (seed, policy.name)
        assert releases or not unlimited, (seed, policy.name)


def test_release_limit_is_read_from_a_scenario(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[[channels]]\ncount = 1\n[[policies]]\npreset = "emb1"\n'
                    'release_limit = 1\n')
    assert load_scenario(path).policies[0].release_limit == 1
    path.write_text('[[channels]]\ncount = 1\n[[policies]]\npreset = "emb1"\n'
                    'release_limit = -1\n')
    with pytest.raises(ConfigError, match="release_limit"):
        load_scenario(path)


# -- circuit = "shared" (embodiment 7) ---------------------------------------------------------

def test_shared_schedule_of_the_defaults_is_seven_periods():
    schedule = shared_schedule(GpuConfig())
    assert schedule.width == 128
    assert [[name for name, _ in period] for period in schedule.periods] == [
        ["vgpr0"], ["vgpr1"], ["vgpr2"], ["vgpr3"], ["sgpr0", "sgpr1"], ["sgpr2", "sgpr3"],
        ["lds"]]
    wide = shared_schedule(GpuConfig(), 256)
    assert [[name for name, _ in period] for period in wide.periods] == [
        ["vgpr0", "vgpr1"], ["vgpr2", "vgpr3"], ["sgpr0", "sgpr1", "sgpr2", "sgpr3"], ["lds"]]


def test_shared_width_below_the_largest_resource_is_an_error(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[[channels]]\ncount = 1\n[[policies]]\ncircuit = "shared"\n'
                    'shared_width = 100\n')
    with pytest.raises(ConfigError, match="shared_width.*narrower than the largest"):
        load_scenario(path)
    path.write_text('[[channels]]\ncount = 1\n[[policies]]\nshared_width = 200\n')
    with pytest.raises(ConfigError, match='shared_width is ignored.*only "shared"'):
        load_scenario(path)


@pytest.mark.parametrize("latency", [0, 2])
def test_shared_view_is_the_status_read_at_the_units_last_turn(latency):
    # An independent reference: record the status registers of every cycle and compute each
    # view from the schedule: instance x of period p shows the exact longest run of its
    # status of cycle s - latency, s the last cycle before t with s = p (mod C) (all free
    # before cycle 0).
    rng = random.Random(latency)
    gpu = GpuConfig(aps=2, peus=2, vgpr=12, sgpr=8, lds=8, wave_slots=3, priorities=2)
    policy = with_policy(PRESETS["seed"], circuit="shared", circuit_latency=latency,
                         history="ema", windows=(64, 32))
    schedule = shared_schedule(gpu)
    periods = len(schedule.periods)
    at = {name: index for index, types in enumerate(schedule.periods) for name, _ in types}
    workload = [WorkGroup(id=i, channel=i % 2, priority=rng.randrange(2),
                          waves=rng.randint(1, 4), vgpr=rng.randint(0, 4),
                          sgpr=rng.randint(0, 3), lds=rng.randint(0, 4),
                          duration=rng.randint(1, 30), independent=False,
                          arrival=rng.randrange(200)) for i in range(120)]
    workload.sort(key=lambda w: (w.arrival, w.channel))
    for number, w in enumerate(workload):
        w.id = number
    history = []                            # status registers of every cycle, in order
    checked = [0]

    def watch(cycle, sim):
        while len(history) <= cycle:        # skipped cycles hold the same status
            history.append({name: list(words) for name, words in sim.bits.items()})
        for name, n in sim.size.items():
            for index, seen in enumerate(sim.view[name]):
                key = f"{name}{index % gpu.peus}" if name != "lds" else "lds"
                period = at[key]
                sample = cycle - 1 - (cycle - 1 - period) % periods
                source = sample - latency
                word = history[source][name][index] if source >= 0 else (1 << n) - 1
                assert seen == max_free_run(word, n), (cycle, name, index)
                checked[0] += 1

    DispatchSimulator(gpu, policy, workload, cycles=400, debug=True, strict=True, skip=False,
                      observer=watch).run()
    assert checked[0] > 1000
