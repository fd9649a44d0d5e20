"""The seed-000 process scheduler model: the seed's worked examples, each stage on small
directed cases (expected values derived by hand in the comments), the baselines, the metrics,
the invariant checker (including deliberately broken runs), config errors and a CLI run."""

import dataclasses
import json
import math
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from model import cli
from model.config import ConfigError
from model.procsched import (
    CFS_WEIGHTS,
    POLICIES,
    CfsPolicy,
    GpuContext,
    InvariantError,
    Pick,
    Scenario,
    SeedPolicy,
    TaskSpec,
    TimeSharingPolicy,
    check_invariants,
    generate_tasks,
    make_policy,
    measure,
    reload_candidates,
    select_for_cache,
    simulate,
    slice_lengths,
    switch_cost_for,
    task_weight,
)
from model.procsched.claims import Claim, Variant, evaluate_claims
from model.procsched.sim import _window_jains
from model.stats import VERDICTS, jain_index


def spec(task_id, arrival, priority, work):
    return TaskSpec(task_id=task_id, arrival_us=arrival, priority=priority, work_us=work)


#: The model's first readings, kept as named options: reload after one slice each with every
#: task competing again, and a higher priority taking effect only at that reload.
FIRST_READING = {"reload": "rerank", "priority": "reload"}


def spans(result, count=None):
    """``(task_id, start, end)`` of the first ``count`` slices."""
    return [(r.task_id, r.start_us, r.end_us) for r in result.log[:count]]


# -- the seed's worked examples ----------------------------------------------------------------


def test_weight_worked_examples():
    # [0069]-[0070]: 60 min alive, 3 min run -> 20; 60 min alive, 10 min run -> 6.
    assert task_weight(60, 3) == 20
    assert task_weight(60, 10) == 6


def test_slice_worked_example():
    # [0085]: ten cached tasks whose weights sum to 30, one of weight 5 -> 6 time slices.
    weights = [5, 5, 2, 2, 2, 2, 3, 3, 3, 3]
    assert sum(weights) == 30
    assert slice_lengths(weights, 1000)[0] == 6 * 1000
    # The other tasks: 30/2 = 15 slices, 30/3 = 10 slices.
    assert slice_lengths(weights, 1000) == [6000, 6000] + [15000] * 4 + [10000] * 4


def test_slice_proportional_reading():
    # tc = t0 * n * own / sum = 3000 * 10 * 5 / 30 = 5000; weight 2 -> 2000; weight 3 -> 3000.
    weights = [5, 5, 2, 2, 2, 2, 3, 3, 3, 3]
    assert slice_lengths(weights, 3000, "proportional") == [5000, 5000] + [2000] * 4 + [3000] * 4
    # Equal weights give t0 each under the proportional reading, n * t0 under the seed's.
    assert slice_lengths([4, 4, 4], 10, "proportional") == [10, 10, 10]
    assert slice_lengths([4, 4, 4], 10, "seed") == [30, 30, 30]


def test_never_run_weight():
    assert task_weight(0, 0) == math.inf
    assert task_weight(500, 0) == math.inf
    with pytest.raises(ValueError, match="cannot have run 5 of its 4 alive"):
        task_weight(4, 5)
    # In a slice, a never-run task counts as the largest finite weight of the cache: [4, 2, 4],
    # sum 10 -> seed 100 * 10/4 = 250, 100 * 10/2 = 500; or 1 when none has run.
    assert slice_lengths([math.inf, 2, 4], 100) == [250, 500, 250]
    assert slice_lengths([math.inf, math.inf], 100) == [200, 200]
    assert slice_lengths([math.inf, math.inf], 100, "proportional") == [100, 100]
    with pytest.raises(ValueError, match="Slice rule must be one of seed, proportional"):
        slice_lengths([1], 10, "inverse")


def test_slice_is_at_least_one_microsecond():
    # 10 * 2 * 1 / 1001 = 0.02 us rounds to 0: the model runs it for 1 us instead.
    assert slice_lengths([1, 1000], 10, "proportional")[0] == 1


# -- stage 1 ------------------------------------------------------------------------------------


def pool_task(task_id, priority, arrival, run):
    return SimpleNamespace(task_id=task_id, priority=priority, arrival_us=arrival, run_us=run)


def test_stage1_takes_only_the_highest_priority_present():
    pool = [pool_task(0, 3, 0, 10), pool_task(1, 1, 0, 10), pool_task(2, 1, 0, 10),
            pool_task(3, 2, 0, 10)]
    assert [t.task_id for t in select_for_cache(pool, 100, 4)] == [1, 2]
    assert select_for_cache([], 100, 4) == []


def test_stage1_loads_the_largest_weights_when_over_capacity():
    # At t = 100: task 0 weight 100/50 = 2, task 1 100/20 = 5, task 2 100/25 = 4.
    pool = [pool_task(0, 1, 0, 50), pool_task(1, 1, 0, 20), pool_task(2, 1, 0, 25)]
    assert [t.task_id for t in select_for_cache(pool, 100, 1)] == [1]
    # Two of three: 5 and 4 win; the cache is written in pool order, not rank order.
    pool = [pool_task(0, 1, 0, 25), pool_task(1, 1, 0, 50), pool_task(2, 1, 0, 20)]
    assert [t.task_id for t in select_for_cache(pool, 100, 2)] == [0, 2]


def test_stage1_never_run_first_and_stable_ties():
    # A never-run task (weight inf) beats any task that ran; equal weights go to the earlier
    # arrival, then to the lower id.
    pool = [pool_task(0, 1, 0, 1), pool_task(1, 1, 90, 0)]
    assert [t.task_id for t in select_for_cache(pool, 100, 1)] == [1]
    pool = [pool_task(5, 1, 10, 45), pool_task(4, 1, 10, 45), pool_task(3, 1, 0, 50)]
    # weights 90/45 = 2, 2, 100/50 = 2: arrival 0 first, then id 4 before id 5.
    assert [t.task_id for t in select_for_cache(pool, 100, 2)] == [4, 3]


def test_stage1_only_the_loaded_ones_run_until_reload():
    # Three equal tasks at 0, cache of 2, seed reading: both fresh -> slices 10 * 2/1 = 20.
    # Pass 1: 0 [0,20), 1 [20,40). Reload at 40: task 2 never ran (inf) and wins a place; of
    # 0 and 1 (both weight 40/20 = 2) the tie goes to id 0. Cache [0, 2], weights [2, inf->2]
    # -> slices 20 each: 0 [40,60), 2 [60,80).
    specs = [spec(0, 0, 3, 1000), spec(1, 0, 3, 1000), spec(2, 0, 3, 1000)]
    result = simulate(specs, SeedPolicy(2, 10, **FIRST_READING), 0)
    assert spans(result, 4) == [(0, 0, 20), (1, 20, 40), (0, 40, 60), (2, 60, 80)]


# -- stage 2 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("rule", "expected"), [
    # t0 = 10, cache of 4, no switch cost. A (id 0) alone from 0: weight 1 -> slices of 10
    # until B (id 1) arrives at 30. Reload at 30: A 30/30 = 1, B never ran -> 1; sum 2.
    # seed: 10 * 2/1 = 20 each: A [30,50), B [50,70). Reload at 70: A 70/50 = 1.4,
    # B 40/20 = 2, sum 3.4: A 10 * 3.4/1.4 = 24.29 -> 24, B 10 * 3.4/2 = 17.
    ("seed", [(0, 0, 10), (0, 10, 20), (0, 20, 30), (0, 30, 50), (1, 50, 70), (0, 70, 94),
              (1, 94, 111)]),
    # proportional: at 30, 10 * 2 * 1/2 = 10 each: A [30,40), B [40,50). Reload at 50:
    # A 50/40 = 1.25, B 20/10 = 2, sum 3.25: A 10*2*1.25/3.25 = 7.69 -> 8, B 12.31 -> 12.
    ("proportional", [(0, 0, 10), (0, 10, 20), (0, 20, 30), (0, 30, 40), (1, 40, 50),
                      (0, 50, 58), (1, 58, 70)]),
])
def test_stage2_fifo_slices_from_weights(rule, expected):
    specs = [spec(0, 0, 2, 1000), spec(1, 30, 2, 1000)]
    result = simulate(specs, SeedPolicy(4, 10, rule, **FIRST_READING), 0)
    assert spans(result, len(expected)) == expected


def test_seed_policy_rejects_unknown_rule():
    with pytest.raises(ValueError, match="Slice rule must be one of"):
        SeedPolicy(4, 10, "backwards")


def test_higher_priority_arrival_waits_for_the_next_reload():
    # X, Y (priority 5) at 0 fill the cache, slices 10 * 2/1 = 20: X [0,20), Y [20,40).
    # H (priority 1) arrives at 5 but joins at the reload at 40: H [40,50), response 35.
    specs = [spec(0, 0, 5, 1000), spec(1, 0, 5, 1000), spec(2, 5, 1, 10)]
    result = simulate(specs, SeedPolicy(4, 10, **FIRST_READING), 0)
    assert spans(result, 3) == [(0, 0, 20), (1, 20, 40), (2, 40, 50)]
    metrics = measure(result)
    assert metrics["per_priority"][1]["response_us"]["max"] == 35
    # Y's slice started at 20 with H runnable: the reload latency, 20 us of inversion at a
    # slice start; counting the rest of X's slice too (H waits from 5): 15 + 20 = 35.
    assert metrics["inversion_at_start_us"] == 20
    assert metrics["inversion_us"] == 35
    # Time sharing (slice 10) takes H at the next slice boundary: X [0,10), H [10,20); only
    # the rest of X's slice, [5, 10), ran while H waited.
    result = simulate(specs, TimeSharingPolicy(10), 0)
    assert spans(result, 2) == [(0, 0, 10), (2, 10, 20)]
    assert measure(result)["inversion_at_start_us"] == 0
    assert measure(result)["inversion_us"] == 5


@pytest.mark.parametrize("policy", ["seed", "seed-prop", "timeshare", "timeshare-t0"])
def test_lower_priority_never_runs_while_a_higher_one_has_work(policy):
    # Priority 0: two tasks of 50 us; priority 1: one task. No switch cost, so C starts
    # exactly when the last priority-0 task completes, at 100.
    specs = [spec(0, 0, 1, 30), spec(1, 0, 0, 50), spec(2, 0, 0, 50)]
    scenario = Scenario(name="t", t0_us=10, timeshare_slice_us=10, cache_tasks=8,
                        groups=(), gpu=GpuContext(compute_units=0))      # nothing to move
    result = simulate(specs, make_policy(policy, scenario), 0)
    by_id = {task.task_id: task for task in result.tasks}
    assert by_id[0].first_start_us == 100
    assert max(by_id[1].completion_us, by_id[2].completion_us) == 100


# -- the patent's reload rule ([0094]) and strict priority ([0090]) -----------------------------


@pytest.mark.parametrize(("reload", "expected"), [
    # a = 3 equal tasks of the top priority, L = 2, t0 = 10, nothing to move. Every rule loads
    # [0, 1] first (never-run weights, 10 * 2/1 = 20 each).
    # completed: [0, 1] run pass after pass (weights 40/20 = 2 each -> 20 again) until both
    # complete; task 2 is loaded only then.
    ("completed", [(0, 0, 20), (1, 20, 40), (0, 40, 60), (1, 60, 80)]),
    # slice: after one pass the next load is "the remaining a - L": [2] alone (slice 10 *
    # 1/1 = 10); then [0, 1] again (50/20 = 2.5 each -> 20), then [2] (90/10 = 9 -> 10).
    ("slice", [(0, 0, 20), (1, 20, 40), (2, 40, 50), (0, 50, 70), (1, 70, 90),
               (2, 90, 100)]),
    # rerank (the first reading): everyone competes; 2 (never ran) and 0 (tie with 1 at
    # weight 2, lower id) load.
    ("rerank", [(0, 0, 20), (1, 20, 40), (0, 40, 60), (2, 60, 80)]),
])
def test_reload_rules_of_0094(reload, expected):
    specs = [spec(0, 0, 3, 1000), spec(1, 0, 3, 1000), spec(2, 0, 3, 1000)]
    result = simulate(specs, SeedPolicy(2, 10, reload=reload, priority="reload"), 0)
    assert spans(result, len(expected)) == expected
    if reload == "completed":
        by_id = {task.task_id: task for task in result.tasks}
        # 0 and 1 alternate 20 us slices: 1 completes at 2000, and only then 2 starts.
        assert by_id[1].completion_us == 2000 and by_id[2].first_start_us == 2000


def test_reload_candidates_leave_out_the_previous_load():
    pool = [pool_task(i, 2, 0, 0) for i in range(3)] + [pool_task(3, 5, 0, 0)]
    assert [t.task_id for t in reload_candidates(pool, pool[:2], "slice")] == [2]
    # Every top-priority task was in the previous load: they all compete again; a lower
    # priority never gets in while the top one has work ([0090]).
    assert [t.task_id for t in reload_candidates(pool, pool[:3], "slice")] == [0, 1, 2]
    assert reload_candidates(pool, pool[:2], "rerank") == pool
    with pytest.raises(ValueError, match="Reload rule must be one of"):
        reload_candidates(pool, [], "lifo")


def test_strict_priority_flushes_the_cache_at_the_slice_boundary():
    # X, Y (priority 5) at 0; H (priority 1) at 5. L = 4, t0 = 10, a context moves into or out
    # of the cache in 3 us, no switch cost. 0: load X, Y (6 us), X [6,26) (slices 20 each).
    # 26: H waits -> flush: evict X, Y (unfinished), load H: 9 us, H [35,45). 45: reload X, Y
    # (6 us; X 45/20 = 2.25, Y never ran -> 2.25: 20 each): X [51,71), Y [71,91).
    specs = [spec(0, 0, 5, 1000), spec(1, 0, 5, 1000), spec(2, 5, 1, 10)]
    policy = SeedPolicy(4, 10, transfer_us=3)
    result = simulate(specs, policy, 0, events=True)
    assert spans(result, 4) == [(0, 6, 26), (2, 35, 45), (0, 51, 71), (1, 71, 91)]
    assert [record.overhead_us for record in result.log[:4]] == [6, 9, 6, 0]
    assert (policy.flushes, policy.loads, policy.evictions) == (1, 5, 2)
    metrics = measure(result)
    assert metrics["per_priority"][1]["response_us"]["max"] == 30
    assert metrics["inversion_us"] == 20                 # X's slice [6, 26) while H waited
    assert metrics["cache_load_us"] == result.overhead_us == sum(
        record.overhead_us for record in result.log)
    assert ("cache_load" in {event[1] for event in result.events}
            and any("flush" in event[5] for event in result.events))
    # The first reading: H waits until X and Y have completed (the cache runs to completion).
    late = simulate(specs, SeedPolicy(4, 10, priority="reload", transfer_us=3), 0)
    assert {t.task_id: t.first_start_us for t in late.tasks}[2] > 2000


def test_inversion_counts_the_rest_of_the_slice_under_any_higher_priority():
    # L (priority 2) [0,50) while H1 (0, from 10) and H2 (1, from 12) wait; then H1 [50,55),
    # H2 [55,60), L [60,110). Inversion: [10,50) of L's first slice = 40; H2's slice starts as
    # H1 completes (55): none.
    specs = [spec(0, 0, 2, 100), spec(1, 10, 0, 5), spec(2, 12, 1, 5)]
    result = simulate(specs, TimeSharingPolicy(50), 0)
    assert spans(result) == [(0, 0, 50), (1, 50, 55), (2, 55, 60), (0, 60, 110)]
    metrics = measure(result)
    assert (metrics["inversion_us"], metrics["inversion_at_start_us"]) == (40, 0)
    assert metrics["slice_us"]["p50"] == metrics["slice_us"]["max"] == 50


def test_the_seed_formula_reaches_many_t0_as_written():
    # Eight cached tasks, seven with weight 1 (run all their alive time) and one with weight
    # 8; the sum is 15, so the weight-1 tasks get 10 * 15/1 = 150 = 15 t0 each (the formula
    # gives the longest slice to the most served), the weight-8 one 10 * 15/8 = 18.75 -> 19.
    assert slice_lengths([8.0] + [1.0] * 7, 10) == [19] + [150] * 7


def test_api_arguments_are_checked_like_the_config():
    with pytest.raises(ValueError, match="t0_us must be a positive integer, not 0"):
        slice_lengths([1.0, 1.0], 0)
    with pytest.raises(TypeError, match="t0_us must be a positive integer"):
        slice_lengths([1.0], 2.5)
    with pytest.raises(ValueError, match=r"weights\[1\] must be positive"):
        slice_lengths([1.0, 0.0], 10)
    with pytest.raises(ValueError, match="capacity must be a positive integer, not 0"):
        select_for_cache([], 0, 0)
    with pytest.raises(ValueError, match="arrival_us must be >= 0, not -1"):
        spec(0, -1, 0, 10)
    with pytest.raises(ValueError, match="priority must be in 0..15, not 16"):
        spec(0, 0, 16, 10)
    with pytest.raises(ValueError, match="work_us must be >= 1, not 0"):
        spec(0, 0, 1, 0)
    with pytest.raises(TypeError, match="TaskSpec.work_us must be an integer"):
        spec(0, 0, 1, 1.5)
    with pytest.raises(ValueError, match="task id 0 is used twice"):
        simulate([spec(0, 0, 0, 5), spec(0, 1, 0, 5)], TimeSharingPolicy(10), 0)
    with pytest.raises(ValueError, match="switch_cost_us must be >= 0"):
        simulate([spec(0, 0, 0, 5)], TimeSharingPolicy(10), -1)
    with pytest.raises(TypeError, match=r"specs\[0\] must be a TaskSpec"):
        simulate([(0, 0, 0, 5)], TimeSharingPolicy(10), 0)
    with pytest.raises(ValueError, match="cache_tasks must be an integer >= 1, not 0"):
        SeedPolicy(0, 10)
    with pytest.raises(ValueError, match="Priority rule must be one of"):
        SeedPolicy(2, 10, priority="never")
    with pytest.raises(ValueError, match="slice_us must be an integer >= 1, not 0"):
        TimeSharingPolicy(0)
    with pytest.raises(ValueError, match="scale must be a positive number"):
        generate_tasks(Scenario(name="t"), random.Random(1), scale=0)


def test_claims_over_seeds_with_a_sensitivity_line():
    scenario = Scenario.from_dict({"seed": {"cache_tasks": 4, "t0_us": 2000},
                                   "timeshare": {"slice_us": 500},
                                   "tasks": [{"count": 6, "priority": 1, "spacing_us": 3000,
                                              "spacing": "poisson", "work_us": [5000, 20000]}]},
                                  name="tiny")
    claim = Claim("tiny", "fewer switches", "switches/s", "seed", "timeshare",
                  lambda m: m["switches_per_s"], False, Variant("t0 = 500 us",
                                                                lambda s: dataclasses.replace(
                                                                    s, t0_us=500)))
    (row,) = evaluate_claims([scenario], seeds=3, claims=[claim])
    assert row["seeds"] == [1, 2, 3] and row["comparison"]["verdict"] == "holds"
    assert row["comparison"]["policy"]["count"] == 3
    assert row["comparison"]["ratio"]["high"] < 1
    assert row["sensitivity"]["label"] == "t0 = 500 us"
    assert row["sensitivity"]["comparison"]["verdict"] in VERDICTS
    assert evaluate_claims([scenario], seeds=3) == []          # no shipped claim is about it
    with pytest.raises(ValueError, match="at least 2 seeds"):
        evaluate_claims([scenario], seeds=1, claims=[claim])


# -- context switches and time accounting -------------------------------------------------------


def test_switch_cost_from_context_size():
    gpu = GpuContext(save_to="device")
    # 64 CUs x (256 + 64) KiB = 20,971,520 bytes, saved and restored at 300 GB/s:
    # 2 * 20971520 / 300e3 us = 139.8 -> 140 us.
    assert gpu.context_bytes == 20_971_520
    assert gpu.switch_cost_us == 140
    # Plus 48 MiB of device memory: 71,303,168 bytes -> 475.4 -> 476 us.
    assert GpuContext(extra_state_mib=48, save_to="device").switch_cost_us == 476
    assert GpuContext(switch_us=500).switch_cost_us == 500


def test_switch_and_cache_load_over_the_host_path():
    # [0042]: saved to main memory over PCIe 4.0 x16 (31.5 GB/s): 2 * 20971520 / 31.5e3 =
    # 1331.5 -> 1332 us a switch; one context one way (a cache load) 665.8 -> 666 us. The
    # seed's in-cache switch stays on the device path (140 us).
    gpu = GpuContext()
    assert (gpu.save_to, gpu.host_gb_s) == ("host", 31.5)
    assert (gpu.switch_cost_us, gpu.transfer_us, gpu.device_switch_us) == (1332, 666, 140)
    assert GpuContext(save_to="device").transfer_us == 70       # 69.9 -> 70
    assert GpuContext(switch_us=501).transfer_us == 251
    scenario = Scenario(name="t", gpu=gpu)
    assert switch_cost_for("seed", scenario) == 140
    assert switch_cost_for("timeshare-mean", scenario) == 1332
    assert make_policy("seed", scenario).transfer_us == 666
    with pytest.raises(ValueError, match="save_to must be one of"):
        GpuContext(save_to="disk")


def test_switch_only_when_the_task_changes():
    # One task alone: loaded once (one switch), then it keeps the GPU slice after slice.
    result = simulate([spec(0, 0, 0, 100)], SeedPolicy(4, 10, **FIRST_READING), 7)
    assert result.switches == 1 and result.makespan_us == 107
    assert measure(result)["efficiency"] == pytest.approx(100 / 107)
    # Two tasks of 20 us, round-robin slices of 10, switch 5:
    # A [5,15), B [20,30), A [35,45), B [50,60): 4 switches, makespan 60.
    result = simulate([spec(0, 0, 0, 20), spec(1, 0, 0, 20)], TimeSharingPolicy(10), 5)
    assert spans(result) == [(0, 5, 15), (1, 20, 30), (0, 35, 45), (1, 50, 60)]
    metrics = measure(result)
    assert (metrics["switches"], metrics["switching_us"], metrics["makespan_us"]) == (4, 20, 60)
    assert metrics["efficiency"] == pytest.approx(40 / 60)
    assert metrics["switches_per_s"] == pytest.approx(4 / 60e-6)


def test_idle_gap_is_accounted():
    # A [0,10) then nothing until B arrives at 50: 40 us idle, makespan 60.
    result = simulate([spec(0, 0, 0, 10), spec(1, 50, 0, 10)], TimeSharingPolicy(10), 0)
    assert (result.idle_us, result.makespan_us, result.useful_us) == (40, 60, 20)


# -- the baselines ------------------------------------------------------------------------------


def test_time_sharing_round_robin():
    # Slice 10, no switch cost: A(10) [0,10) done; B(25) [10,20); C(5) [20,25) done;
    # B [25,35); B [35,40) done.
    specs = [spec(0, 0, 0, 10), spec(1, 0, 0, 25), spec(2, 0, 0, 5)]
    result = simulate(specs, TimeSharingPolicy(10), 0)
    assert spans(result) == [(0, 0, 10), (1, 10, 20), (2, 20, 25), (1, 25, 35), (1, 35, 40)]
    assert result.switches == 4  # B's last two slices run back to back


def test_cfs_weights_and_vruntime():
    # A priority 0 (1024), B priority 1 (820), latency 100, granularity 10, no switch cost.
    # A: 100 * 1024/1844 = 55.5 -> 56, vruntime 56. B: 100 * 820/1844 = 44.5 -> 44, vruntime
    # 44 * 1024/820 = 54.9 < 56, so B again [100,144), vruntime 109.9; then A [144,200).
    assert CFS_WEIGHTS[:2] == (1024, 820)
    specs = [spec(0, 0, 0, 10_000), spec(1, 0, 1, 10_000)]
    result = simulate(specs, CfsPolicy(100, 10), 0)
    assert spans(result, 4) == [(0, 0, 56), (1, 56, 100), (1, 100, 144), (0, 144, 200)]


def test_cfs_minimum_granularity_and_new_task_placement():
    # Twelve equal tasks, latency 40: 40/12 = 3.3 < granularity 10, so 10 each.
    result = simulate([spec(i, 0, 0, 100) for i in range(12)], CfsPolicy(40, 10), 0)
    assert {r.end_us - r.start_us for r in result.log} == {10}
    # A alone from 0 with slices of 20 reaches vruntime 100 at t = 100; B arriving then
    # starts at min_vruntime = 100, not 0, so it does not run 100 us in one go: the tie goes
    # to A (earlier arrival), then they alternate with slices of 20 * 1024/2048 = 10.
    specs = [spec(0, 0, 0, 1000), spec(1, 100, 0, 1000)]
    result = simulate(specs, CfsPolicy(20, 10), 0)
    assert spans(result, 8)[5:] == [(0, 100, 110), (1, 110, 120), (0, 120, 130)]


def test_every_policy_is_built_from_the_scenario():
    scenario = Scenario(name="t", cache_tasks=3, t0_us=7, timeshare_slice_us=5)
    assert make_policy("seed", scenario).slice_rule == "seed"
    assert make_policy("seed-prop", scenario).slice_rule == "proportional"
    assert make_policy("timeshare", scenario).slice_us == 5
    assert make_policy("timeshare-t0", scenario).slice_us == 7
    assert make_policy("timeshare-mean", scenario, mean_slice_us=41.6).slice_us == 42
    with pytest.raises(ValueError, match="timeshare-mean needs the seed's mean slice"):
        make_policy("timeshare-mean", scenario)
    assert isinstance(make_policy("cfs", scenario), CfsPolicy)
    assert (make_policy("seed", scenario).reload_rule,
            make_policy("seed", scenario).priority_rule) == ("completed", "strict")
    with pytest.raises(ValueError, match="Policy must be one of"):
        make_policy("lottery", scenario)


# -- metrics ------------------------------------------------------------------------------------


def test_fairness_over_the_runnable_life_and_starvation():
    # The round-robin case above. Ledger of priority 0: A's slice, 3 runnable -> +10/3;
    # B [10,20) 2 runnable -> +5; C [20,25) 2 runnable -> +2.5; B alone +10, +5.
    # Entitled: A 10/3; C 10/3 + 7.5 = 65/6; B 10/3 + 7.5 + 15 = 155/6 (sum 40 = the work).
    specs = [spec(0, 0, 0, 10), spec(1, 0, 0, 25), spec(2, 0, 0, 5)]
    metrics = measure(simulate(specs, TimeSharingPolicy(10), 0))
    entry = metrics["per_priority"][0]
    expected = [10 / (10 / 3), 25 / (155 / 6), 5 / (65 / 6)]
    assert entry["received_over_entitled"] == pytest.approx(expected)
    assert entry["jain_life"] == pytest.approx(jain_index(expected))
    assert entry["jain_life"] == pytest.approx(0.6443, abs=1e-4)
    # Waits: A 0; B 10 (arrival -> 10) then 5 (20 -> 25); C 20 (arrival -> 20).
    assert entry["max_wait_us"] == 20
    assert entry["response_us"]["max"] == 20 and entry["response_us"]["mean"] == 10
    assert entry["turnaround_us"]["mean"] == pytest.approx((10 + 40 + 25) / 3)


def test_fairness_per_window():
    # Slices of 1500 over two 3000-us tasks: A [0,1500), B [1500,3000), A [3000,4500),
    # B [4500,6000). Windows of 1000: [0,1000) A 1000 B 0 -> 0.5; [1000,2000) 500/500 -> 1;
    # [2000,3000) B only -> 0.5; [3000,4000) A only -> 0.5; from 4000 A has gone (completes
    # at 4500 < 5000), one competitor: not counted.
    result = simulate([spec(0, 0, 0, 3000), spec(1, 0, 0, 3000)], TimeSharingPolicy(1500), 0)
    values = _window_jains(result, result.tasks, 1000)
    assert values == [(0, 0.5), (1, 1.0), (2, 0.5), (3, 0.5)]
    window = measure(result, 1000)["per_priority"][0]["jain_window"]
    assert (window["windows"], window["mean"], window["min"]) == (4, 0.625, 0.5)


def test_slice_readings_differ_in_fairness():
    # All tasks cached, staggered arrivals: the formula as written favours the older tasks
    # (smaller weight, longer slice), the proportional reading evens them out.
    specs = [spec(i, 200_000 * i, 4, 1_000_000) for i in range(4)]
    seed = measure(simulate(specs, SeedPolicy(8, 10_000, "seed", **FIRST_READING), 140),
                   500_000)
    proportional = measure(simulate(specs, SeedPolicy(8, 10_000, "proportional",
                                                      **FIRST_READING), 140), 500_000)
    assert seed["jain_life_min"] < proportional["jain_life_min"]
    assert seed["jain_window_min"] < proportional["jain_window_min"]
    assert seed["switches_per_s"] < proportional["switches_per_s"]


# -- invariants ---------------------------------------------------------------------------------


def small_result():
    return simulate([spec(0, 0, 1, 30), spec(1, 0, 0, 20), spec(2, 5, 0, 15)],
                    TimeSharingPolicy(10), 3)


def test_invariants_hold_on_random_workloads():
    scenario = Scenario.from_dict({"seed": {"cache_tasks": 3, "t0_us": 1000},
                                   "timeshare": {"slice_us": 700},
                                   "cfs": {"sched_latency_us": 4000, "min_granularity_us": 500},
                                   "tasks": [{"count": 9, "priority": 2, "spacing_us": 800,
                                              "spacing": "poisson",
                                              "work_us": [100, 9000]},
                                             {"count": 4, "priority": 0, "arrival_us": 3000,
                                              "spacing_us": 2500, "work_us": [50, 3000]}]})
    for seed in range(5):
        specs = generate_tasks(scenario, random.Random(seed))
        for name in POLICIES:
            policy = make_policy(name, scenario, mean_slice_us=1500)
            result = simulate(specs, policy, 37, name=name, check=True)
            assert sorted(t.task_id for t in result.tasks if t.completion_us) == list(range(13))


def test_broken_run_time_is_detected():
    result = small_result()
    record = result.log[0]
    result.log[0] = dataclasses.replace(record, end_us=record.end_us - 1)
    with pytest.raises(InvariantError, match="received"):
        check_invariants(result)


def test_double_completion_is_detected():
    result = small_result()
    last = result.log[-1]
    result.log.append(dataclasses.replace(last, start_us=last.end_us, end_us=last.end_us + 1))
    with pytest.raises(InvariantError, match="after it completed"):
        check_invariants(result)


def test_broken_time_accounting_is_detected():
    result = small_result()
    result.idle_us += 1
    with pytest.raises(InvariantError, match="is not the makespan"):
        check_invariants(result)


def test_overlapping_slices_are_detected():
    result = small_result()
    second = result.log[1]
    result.log[1] = dataclasses.replace(second, start_us=second.start_us - 1)
    with pytest.raises(InvariantError, match="overlaps"):
        check_invariants(result)


class LowestPriorityFirst(TimeSharingPolicy):
    """A deliberately broken strict-priority policy: it serves the lowest priority first."""

    def pick(self, now_us):
        for queue in reversed(self.queues):
            if queue:
                return Pick(queue.popleft(), self.slice_us, now_us)
        return None


def test_priority_inversion_is_detected():
    specs = [spec(0, 0, 0, 20), spec(1, 0, 3, 20)]
    with pytest.raises(InvariantError, match="although a higher priority was runnable"):
        simulate(specs, LowestPriorityFirst(10), 0)
    # CFS shares across priorities by design: no error, the inversion is a metric instead.
    result = simulate(specs, CfsPolicy(20, 5), 0)
    assert measure(result)["inversion_us"] > 0


def test_a_policy_that_stalls_is_reported():
    class Stalls(TimeSharingPolicy):
        def pick(self, now_us):
            return None

    with pytest.raises(RuntimeError, match="runnable but the policy picks none"):
        simulate([spec(0, 0, 0, 10)], Stalls(10), 0)


# -- configuration ------------------------------------------------------------------------------


def minimal(**changes):
    data = {"tasks": [{"count": 2, "priority": 3, "work_us": [10, 20]}]}
    data.update(changes)
    return data


def test_config_defaults():
    scenario = Scenario.from_dict(minimal(), name="x")
    assert (scenario.cache_tasks, scenario.t0_us, scenario.timeshare_slice_us) == (8, 10_000,
                                                                                   4_000)
    assert scenario.policies == POLICIES
    # The default path is main memory over PCIe 4.0 x16 ([0042]); on the device it is 140 us.
    assert scenario.gpu.switch_cost_us == 1332
    assert (scenario.reload, scenario.priority_rule) == ("completed", "strict")


@pytest.mark.parametrize(("data", "message"), [
    ({"tasks": [{"count": 1, "priority": 16, "work_us": [1, 1]}]},
     "tasks[0].priority must be an integer in 0..15, not 16"),
    ({"tasks": [{"count": 1, "priority": 1, "work_us": [9, 2]}]},
     "tasks[0].work_us must be [min, max] with min <= max, not [9, 2]"),
    ({"tasks": [{"count": 1, "priority": 1, "work_us": 5}]},
     "tasks[0].work_us must be a list of 2 items, not 5"),
    ({"tasks": [{"count": 0, "priority": 1, "work_us": [1, 1]}]},
     "tasks[0].count must be an integer >= 1, not 0"),
    ({"tasks": [{"count": 1, "priority": 1, "work_us": [1, 1], "spacing": "burst"}]},
     "tasks[0].spacing must be a string (one of 'fixed', 'poisson'), not 'burst'"),
    (minimal(seed={"cache_size": 4}), "seed.cache_size is not a known field"),
    (minimal(seed={"t0_us": 0}), "seed.t0_us must be an integer >= 1, not 0"),
    (minimal(gpu={"bandwidth_gb_s": 0}), "gpu.bandwidth_gb_s must be a number >= 0.001"),
    (minimal(gpu={"register_kib_per_cu": 10**30}),
     f"gpu.register_kib_per_cu must be an integer in 0..16384, not {10**30}"),
    (minimal(gpu={"shared_kib_per_cu": 16_385}),
     "gpu.shared_kib_per_cu must be an integer in 0..16384, not 16385"),
    (minimal(gpu={"extra_state_mib": 1e300}),
     "gpu.extra_state_mib must be a number in 0..1048576, not 1e+300"),
    (minimal(gpu={"switch_us": 10**30}),
     f"gpu.switch_us must be an integer in 0..1000000000, not {10**30}"),
    (minimal(gpu={"compute_units": 10_000, "extra_state_mib": 1_000_000, "host_gb_s": 0.001}),
     "gpu.host_gb_s of 0.001 moves a context of 1,051,852,800,000 bytes in a switch of "
     "2,103,705,600,000 us; at most 1,000,000,000 us are accepted"),
    (minimal(policies=["seed", "fifo"]), "policies[1] must be one of"),
    (minimal(policies=[]), "policies must name at least one policy"),
    (minimal(slice_rule="seed"), "slice_rule is not a known field"),
    ({}, "tasks is required"),
    ({"tasks": []}, "tasks must list at least one task group"),
])
def test_config_errors_name_the_field(data, message):
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict(data)
    assert message in str(error.value)


def test_config_file_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[[tasks]]\ncount = 1\npriority = 20\nwork_us = [1, 1]\n')
    with pytest.raises(ConfigError, match=r"bad.toml: tasks\[0\].priority must be"):
        Scenario.from_toml(path)


def test_shipped_scenarios_load():
    paths = cli.default_configs("procsched")
    assert 2 <= len(paths) <= 4
    for path in paths:
        scenario = Scenario.from_toml(path)
        assert scenario.description and scenario.groups


def test_workload_is_seeded_and_scaled():
    scenario = Scenario.from_dict({"tasks": [
        {"count": 5, "priority": 2, "arrival_us": 100, "spacing_us": 1000,
         "spacing": "poisson", "work_us": [1000, 5000]},
        {"count": 2, "priority": 0, "arrival_us": 40, "spacing_us": 30,
         "work_us": [700, 700]}]})
    first = generate_tasks(scenario, random.Random(3))
    assert first == generate_tasks(scenario, random.Random(3))
    assert first != generate_tasks(scenario, random.Random(4))
    fixed = [s for s in first if s.priority == 0]
    assert [(s.arrival_us, s.work_us) for s in fixed] == [(40, 700), (70, 700)]
    assert [s.arrival_us for s in first] == sorted(s.arrival_us for s in first)
    quarter = [s for s in generate_tasks(scenario, random.Random(3), scale=0.25)
               if s.priority == 0]
    assert [(s.arrival_us, s.work_us) for s in quarter] == [(10, 175), (18, 175)]


# -- the command line ---------------------------------------------------------------------------


def test_cli_quick_run(tmp_path, capsys):
    out = tmp_path / "procsched.json"
    events = tmp_path / "events.csv"
    status = cli.main(["procsched", "--quick", "--quiet", "--json", str(out),
                       "--plots", str(tmp_path), "--seeds", "2", "--events", str(events)])
    assert status == 0
    report = json.loads(out.read_text())
    assert len(report["claims"]) >= 5
    assert all(claim["comparison"]["verdict"] in VERDICTS for claim in report["claims"])
    lines = events.read_text().splitlines()
    assert lines[0] == "scenario,policy,time_us,event,task,priority,duration_us,detail"
    assert {line.split(",")[3] for line in lines[1:]} >= {"arrive", "cache_load", "switch",
                                                           "slice", "complete"}
    names = [scenario["name"] for scenario in report["scenarios"].values()]
    assert names == [path.stem for path in cli.default_configs("procsched")]
    for scenario in report["scenarios"].values():
        assert list(scenario["policies"]) == list(POLICIES)
        assert (tmp_path / f"procsched_{scenario['name']}.png").stat().st_size > 0
    assert "procsched: heavy_switch" in capsys.readouterr().out


def test_cli_reports_a_bad_config(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('[seed]\ncache_tasks = 0\n[[tasks]]\ncount = 1\npriority = 1\n'
                    'work_us = [1, 1]\n')
    assert cli.main(["procsched", "--quiet", "--config", str(path),
                     "--plots", str(tmp_path)]) == 2
    assert "seed.cache_tasks must be an integer >= 1, not 0" in capsys.readouterr().err


def test_cli_refuses_a_gpu_beyond_any_real_one(tmp_path, capsys):
    # A 30-digit compute_units overflowed the invariant check's int64 times (a traceback).
    root = Path(__file__).resolve().parent.parent
    shipped = (root / "configs/procsched/crowded_pool.toml").read_text()
    path = tmp_path / "huge.toml"
    path.write_text(shipped.replace("compute_units = 64", f"compute_units = {10**30}"))
    assert cli.main(["procsched", "--quiet", "--quick", "--config", str(path),
                     "--plots", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"gpusched procsched: {path}: gpu.compute_units must be "
                                       f"an integer in 1..10000, not {10**30}\n")
    with pytest.raises(ValueError, match="GpuContext.compute_units must be an integer in "
                                         "0..10000"):
        GpuContext(compute_units=10_001)
