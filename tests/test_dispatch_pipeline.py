"""The decision pipeline of the dispatcher model (``decision_pipeline = k``, docs/dispatch.md):
what it promises and what it costs, on directed cases and random small configurations."""

import random
from dataclasses import replace
from pathlib import Path

import pytest

from model.config import ConfigError
from model.dispatch.config import PRESETS, GpuConfig, with_policy
from model.dispatch.engine import DispatchSimulator
from tests.test_dispatch_exact import random_case, shared_case, wg

GPU = GpuConfig(aps=8, peus=2, vgpr=16, sgpr=8, lds=8, wave_slots=4, priorities=2)
EMB1 = PRESETS["emb1"]


def run(gpu, policy, workload, cycles=400, **options):
    events = []
    simulator = DispatchSimulator(gpu, policy, workload, cycles=cycles, debug=True,
                                  strict=True, events=events, **options)
    return simulator, simulator.run(), events


def dispatches(events):
    return [(cycle, wg.id, ap) for cycle, kind, wg, ap, *_ in events if kind == "dispatch"]


@pytest.mark.parametrize("k", [2, 3, 5])
def test_a_lone_wg_is_dispatched_k_plus_one_cycles_after_it_arrives(k):
    work = [wg(0, waves=2, arrival=7)]
    _, _, events = run(GPU, with_policy(EMB1, decision_pipeline=k), work)
    assert dispatches(events) == [(7 + k + 1, 0, 0)]
    _, _, events = run(GPU, EMB1, work)
    assert dispatches(events) == [(7, 0, 0)]


@pytest.mark.parametrize("k", [2, 4])
def test_one_channel_sustains_one_wg_a_cycle_and_an_ap_takes_one_at_a_time(k):
    # Eight APs, one channel of small long-running WGs: one dispatch every cycle once the
    # pipeline is full, each AP busy from its choice to its dispatch.
    # The lowest-index AP choice would take AP 0 every time but for that rule.
    work = [wg(i, waves=1, duration=500) for i in range(24)]
    policy = with_policy(EMB1, ap_choice="lowest", decision_pipeline=k)
    _, result, events = run(GPU, policy, work)
    cycles = [cycle for cycle, _, _ in dispatches(events)]
    assert cycles == list(range(k + 1, k + 1 + 24))
    assert [w for _, w, _ in dispatches(events)] == list(range(24))      # FIFO order
    last = {}
    for cycle, _, ap in dispatches(events):
        assert cycle - last.get(ap, -99) >= k + 2
        last[ap] = cycle
    assert result["stale_aborts"] == 0


def test_a_channel_split_is_matched_from_the_cycle_after_next():
    # One AP whose slots a long WG holds: the independent head cannot fit whole, the all-fail
    # counter splits it; its one-wave parts go once the match has seen them.
    gpu = GpuConfig(aps=1, peus=2, vgpr=16, sgpr=8, lds=8, wave_slots=4, priorities=2)
    work = [wg(0, waves=6, duration=40), wg(1, waves=4, independent=True, arrival=1)]
    policy = with_policy(EMB1, split_threshold=2, decision_pipeline=2)
    _, result, events = run(gpu, policy, work)
    kinds = [(cycle, kind) for cycle, kind, *_ in events if kind in ("split", "dispatch")]
    split = min(cycle for cycle, kind in kinds if kind == "split")
    parts = [cycle for cycle, kind in kinds if kind == "dispatch" and cycle > split]
    assert parts and min(parts) >= split + 2 + 2
    assert result["workgroups_completed"] == 2 and result["invariant_violations"] == 0


def test_a_stale_abort_discards_what_was_chosen_behind_it():
    # A view four cycles late on a full AP: the pipeline chooses WGs the status no longer
    # holds; after an abort in cycle t nothing is dispatched before the choice of t + 2 is,
    # in t + 2 + k (the WGs chosen behind it are discarded, two choices cancelled).
    gpu = GpuConfig(aps=2, peus=1, vgpr=8, sgpr=8, lds=8, wave_slots=8, priorities=1)
    work = [wg(i, i % 2, waves=1, vgpr=3, duration=rnd, arrival=i // 3)
            for i, rnd in enumerate(random.Random(5).choices(range(3, 30), k=60))]
    k = 3
    policy = with_policy(EMB1, ap_choice="lowest", circuit="grouped", group_size=4,
                         circuit_latency=4, decision_pipeline=k)
    simulator, result, events = run(gpu, policy, work, cycles=2000)
    aborts = [cycle for cycle, kind, *_ in events if kind == "stale-abort"]
    assert aborts and result["stale_aborts"] == len(aborts)
    done = [cycle for cycle, _, _ in dispatches(events)]
    for cycle in aborts:
        assert not [d for d in done if cycle < d < cycle + k + 2], cycle
    assert result["flushed"] == simulator.counters.flushed > 0
    assert result["workgroups_completed"] == 60 and result["invariant_violations"] == 0


@pytest.mark.parametrize("seed", range(40))
def test_random_configurations_keep_every_invariant(seed):
    # Odd seeds: the shared-issue execution, barriers, work per wave (issue 15 §3).
    case = shared_case(seed) if seed % 2 else (*random_case(seed), "fixed")
    gpu, channels, workload, cycles, policies, interval, execution = case
    rng = random.Random(f"{seed}/pipeline")
    for policy in policies:
        if policy.selection in ("blocking_buffer", "miaow", "miaow_one_clock", "gpgpusim",
                                "gpgpusim_concurrent", "gem5") \
                or policy.wave_placement == "least_loaded":
            continue
        policy = replace(policy, decision_pipeline=rng.choice([2, 3, 6]))
        simulator = DispatchSimulator(gpu, policy, [replace(w) for w in workload],
                                      channels=channels, cycles=cycles, debug=True,
                                      strict=True, sample_interval=interval,
                                      execution=execution)
        result = simulator.run()
        assert result["invariant_violations"] == 0
        # Nothing is lost: every WG submitted completed, was refused or is still counted.
        accounted = (result["workgroups_completed"] + result["workgroups_rejected"]
                     + result["workgroups_unfinished"])
        assert accounted == result["workgroups_submitted"]


@pytest.mark.parametrize(("changes", "message"), [
    ({"decision_pipeline": 1}, "not 1"),
    ({"decision_pipeline": 2, "selection": "blocking_buffer", "ap_choice": "lowest",
      "rotate": False, "windows": (), "split_threshold": 0}, "blocking_buffer"),
    ({"decision_pipeline": 2, "selection": "miaow", "ap_choice": "lowest", "rotate": False,
      "windows": (), "split_threshold": 0}, "its own clock"),
    ({"decision_pipeline": 2, "wave_placement": "least_loaded"}, "least_loaded"),
])
def test_undefined_pipelines_are_refused(changes, message):
    with pytest.raises(ConfigError, match=message):
        DispatchSimulator(GPU, replace(EMB1, **changes), [], cycles=10)


def test_the_scenario_field_is_checked(tmp_path):
    from model.dispatch.config import load_scenario
    path = tmp_path / "s.toml"
    path.write_text('cycles = 100\n[[channels]]\ncount = 2\n'
                    '[[policies]]\npreset = "emb1"\ndecision_pipeline = 40\n')
    with pytest.raises(ConfigError, match="decision_pipeline"):
        load_scenario(path)
    path.write_text('cycles = 100\n[[channels]]\ncount = 2\n'
                    '[[policies]]\npreset = "emb1"\ndecision_pipeline = 3\n')
    assert load_scenario(path).policies[0].decision_pipeline == 3


def test_the_rtl_builds_a_pipeline_with_every_ap_scale_only():
    from hw.dispatch.params import DispatcherParams
    from hw.flow.dispatch_cosim import unsupported
    from model.dispatch.config import load_scenario
    policy = with_policy(EMB1, decision_pipeline=2)
    assert DispatcherParams.build(GPU, policy, 2).queue_depth == 5
    with pytest.raises(ValueError, match="queue_depth must be at least 6"):
        DispatcherParams.build(GPU, replace(policy, decision_pipeline=3), 2, queue_depth=5)
    combined = with_policy(EMB1, ap_choice="combined", history="ema", decision_pipeline=2)
    with pytest.raises(ValueError, match='combined_scale = "all"'):
        DispatcherParams.build(GPU, combined, 2)
    DispatcherParams.build(GPU, replace(combined, combined_scale="all"), 2)
    # The configuration port of a pipelined build refuses the MIAOW-like selection, which the
    # pipeline does not define (its selection register would take the value).
    from hw.dispatch.params import config_writes
    built = DispatcherParams.build(GPU, policy, 2)
    assert config_writes(built)
    with pytest.raises(ValueError, match='"blocking_buffer" is not defined for the pipelined'):
        config_writes(built, replace(policy, selection="blocking_buffer"))
    with pytest.raises(ValueError, match='"miaow": the RTL does not implement it'):
        config_writes(built, replace(policy, selection="miaow"))
    scenario = load_scenario(Path(__file__).parents[1] / "configs/dispatch/hol_blocking.toml")
    assert unsupported(scenario, policy) is None
    assert 'combined_scale = "all"' in unsupported(scenario, combined)


@pytest.mark.parametrize("selection", ["strict", "rr_first_fit"])
def test_the_channel_pointer_moves_once_a_wg_when_it_is_chosen(selection):
    # WGs 0 and 1 are chosen in cycles 1 and 2 (the pointer back at channel 0), 2 and 3
    # arrive in cycle 3 and are chosen from cycle 4, when WG 0 is dispatched: the pointer
    # must not move again then. (It did, which the RTL co-simulation caught: 0, 1, 3, 2.)
    work = [wg(0, 0), wg(1, 1), wg(2, 0, arrival=3), wg(3, 1, arrival=3)]
    policy = with_policy(EMB1, selection=selection, windows=(), split_threshold=0,
                         decision_pipeline=3)
    _, _, events = run(GPU, policy, work)
    assert [w for _, w, _ in dispatches(events)] == [0, 1, 2, 3]


def test_the_other_combined_scale_is_a_build_choice_of_the_rtl():
    from hw.flow.dispatch_build import DispatchShape
    from hw.flow.dispatch_cosim import unsupported
    from model.dispatch.config import load_scenario
    policy = with_policy(EMB1, ap_choice="combined", history="ema", combined_scale="all")
    every = DispatchShape.of(GPU, policy, 2)
    assert every.policy.combined_scale == "all"
    assert every.name != DispatchShape.of(GPU, replace(policy, combined_scale="candidates"),
                                          2).name
    scenario = load_scenario(Path(__file__).parents[1] / "configs/dispatch/hol_blocking.toml")
    assert unsupported(scenario, policy) is None


def test_the_match_keeps_the_scores_of_score_latency_cycles_before():
    work = [wg(i, i % 2, waves=1 + i % 3, duration=5 + i % 7, arrival=i // 2)
            for i in range(40)]
    policy = with_policy(EMB1, ap_choice="combined", history="ema", decision_pipeline=2,
                         score_latency=3)
    # Every cycle stepped (no skip), so that each cycle's scores are seen; the skipped
    # cycles' ring is held to this by the skip-equality tests (tests/test_dispatch.py).
    simulator = DispatchSimulator(GPU, policy, work, cycles=200, debug=True, strict=True,
                                  skip=False)
    kept, current = {}, {}
    original = simulator.pipeline.match_stage

    def match_stage(cycle):
        now = (simulator.selector.resource_scores(), simulator.resources.history_scores(cycle))
        match = original(cycle)
        kept[cycle], current[cycle] = match.scores, now
        return match
    simulator.pipeline.match_stage = match_stage
    assert simulator.run()["invariant_violations"] == 0
    assert all(kept[c] == current[max(c - 3, 0)] for c in kept)
    assert any(current[c] != current[c - 3] for c in current if c >= 3)  # it does change
    with pytest.raises(ConfigError, match="score_latency"):
        DispatchSimulator(GPU, replace(policy, decision_pipeline=0), [], cycles=10)
    with pytest.raises(ConfigError, match="score_latency is ignored"):
        DispatchSimulator(GPU, replace(EMB1, decision_pipeline=2, score_latency=1), [],
                          cycles=10)


@pytest.mark.parametrize("k", [0, 3])
def test_a_decision_still_presented_when_the_work_is_done_holds_to_the_limit(k):
    # The run ends early once every WG has completed, but the last WG's decision can still
    # be presented, not taken: the cycles to the limit in which it is not taken are held
    # (the co-simulation reads them; they stopped at the early end, and the RTL's beat still
    # presented read as a dispatch the model did not make).
    work = [wg(0, waves=1, duration=2)]
    _, _, free = run(GPU, with_policy(EMB1, decision_pipeline=k), work, cycles=30)
    first = dispatches(free)[0][0]
    low = set(range(first + 1, 25))
    simulator, _, events = run(GPU, with_policy(EMB1, decision_pipeline=k), work, cycles=30,
                               dispatch_ready=lambda cycle: cycle not in low)
    assert dispatches(events) == dispatches(free)
    assert simulator.held_cycles == sorted(low)
    # Never taken: held to the last cycle before the limit.
    simulator, _, _ = run(GPU, with_policy(EMB1, decision_pipeline=k), work, cycles=30,
                          dispatch_ready=lambda cycle: cycle <= first)
    assert simulator.held_cycles == list(range(first + 1, 30))


@pytest.mark.parametrize("k", [0, 3])
def test_back_pressure_holds_the_decision_and_the_split_counter(k):
    # dispatch_ready (the RTL's dispatch.ready): a decision presented and not taken holds
    # the next cycles' decisions; nothing is decided, no split, the all-fail counter holds.
    work = [wg(i, waves=1, duration=3) for i in range(6)]
    policy = with_policy(EMB1, decision_pipeline=k)
    _, _, free = run(GPU, policy, work)
    simulator, _, same = run(GPU, policy, work, dispatch_ready=lambda cycle: True)
    assert dispatches(same) == dispatches(free) and simulator.held_cycles == []
    first = dispatches(free)[0][0]
    low = set(range(first + 1, first + 6))
    simulator, _, events = run(GPU, policy, work, dispatch_ready=lambda cycle: cycle not in low)
    assert simulator.held_cycles == sorted(low)
    assert not any(cycle in low for cycle, _, _ in dispatches(events))
    assert len(dispatches(events)) == 6
    # Embodiment 3: a head that fits nowhere (the first WG fills the only AP) counts only
    # the cycles that are not held, so it splits as many cycles later as were held.
    big = [wg(0, waves=8, vgpr=4, duration=40),
           wg(1, waves=8, vgpr=1, independent=True, duration=5)]
    gpu = replace(GPU, aps=1)
    policy = with_policy(EMB1, selection="multi", split_threshold=6, decision_pipeline=k)
    _, _, free = run(gpu, policy, big)
    splits = [cycle for cycle, kind, *_ in free if kind == "split"]
    assert splits
    first = dispatches(free)[0][0]
    low = {first + 1, first + 2, first + 3}
    simulator, _, held = run(gpu, policy, big, dispatch_ready=lambda cycle: cycle not in low)
    assert simulator.held_cycles == sorted(low)
    assert splits[0] < 20
    assert [cycle for cycle, kind, *_ in held if kind == "split"][0] == splits[0] + 3


def test_a_barrier_wg_is_dispatched_whole_after_its_channels_earlier_wgs():
    # Embodiment 3 splits independent heads, but a WG with an in-order barrier is dispatched
    # whole: its one-wave parts would carry no barrier and could run beside the WGs it waits
    # for (the RTL's queues do the same; tests/test_dispatch_rtl_sim.py co-simulates these
    # runs). Independent launches of the barrier shapes' split runs: other WGs are split, so
    # the check bites.
    from collections import defaultdict

    from tb.dispatch_cases import BARRIER_SHAPES, barrier_run
    split_parents = 0
    for shape in BARRIER_SHAPES.values():
        for seed in (1, 2, 3):
            run = barrier_run(shape, 300, seed, split=True)
            barriers = {item.id for item in run.workload if item.barrier}
            running = defaultdict(set)
            for cycle, kind, group, *_ in run.events:
                if kind == "split":
                    assert group.parent not in barriers, (run.label, cycle, group.parent)
                    split_parents += 1
                elif kind == "dispatch":
                    if group.id in barriers:
                        assert not running[group.channel], (run.label, cycle, group.id,
                                                            sorted(running[group.channel]))
                    running[group.channel].add(group.id)
                elif kind == "release":
                    running[group.channel].discard(group.id)
    assert split_parents > 20


def test_rotating_scores_refresh_the_turn_and_the_ap_just_given_a_wg():
    # score_refresh = "rotating" (model/dispatch/scores.py): in cycle t the kept scores of AP
    # t mod P and of the AP the WG dispatched in cycle t - 1 - circuit_latency went to are
    # those of cycle t, every other AP's are as they were; the keys follow.
    work = [wg(i, i % 2, waves=1 + i % 3, duration=5 + i % 7, arrival=i // 2)
            for i in range(40)]
    policy = with_policy(EMB1, ap_choice="combined", history="ema", decision_pipeline=2,
                         score_latency=1, combined_scale="all", score_refresh="rotating",
                         circuit_latency=1)
    simulator = DispatchSimulator(GPU, policy, work, cycles=200, debug=True, strict=True,
                                  skip=False, events=(events := []))
    pipeline = simulator.pipeline
    seen = {}
    original = pipeline._scores

    def scores(cycle):
        before = None if pipeline.rotating is None else list(pipeline.rotating.resource)
        now = (simulator.selector.resource_scores(), simulator.resources.history_scores(cycle))
        keys = original(cycle)
        seen[cycle] = (before, list(pipeline.rotating.resource),
                       list(pipeline.rotating.instruction), now)
        return keys
    pipeline._scores = scores
    assert simulator.run()["invariant_violations"] == 0
    dispatched = {cycle: ap for cycle, kind, _, ap, *_ in events if kind == "dispatch"}
    assert len(dispatched) > 20
    both = 0
    for cycle, (before, resource, history, now) in seen.items():
        if before is None:
            continue
        refreshed = {cycle % GPU.aps} | ({dispatched[cycle - 2]} if cycle - 2 in dispatched
                                         else set())
        both += len(refreshed) == 2
        for ap in range(GPU.aps):
            if ap in refreshed:
                assert (resource[ap], history[ap]) == (now[0][ap], now[1][ap]), (cycle, ap)
            else:
                assert resource[ap] == before[ap], (cycle, ap)
    assert both > 10


def test_score_refresh_is_checked():
    with pytest.raises(ConfigError, match="score_refresh is read only by the decision"):
        DispatchSimulator(GPU, with_policy(EMB1, ap_choice="combined",
                                           score_refresh="rotating"), [], cycles=10)
    with pytest.raises(ConfigError, match='combined_scale = "all"'):
        DispatchSimulator(GPU, with_policy(EMB1, ap_choice="combined", decision_pipeline=2,
                                           score_refresh="rotating"), [], cycles=10)
    with pytest.raises(ConfigError, match="score_refresh is ignored"):
        DispatchSimulator(GPU, with_policy(EMB1, decision_pipeline=2,
                                           score_refresh="rotating"), [], cycles=10)
