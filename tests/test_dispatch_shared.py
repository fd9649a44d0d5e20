"""Placement that changes run time and claims a reviewer accepts (issue 15 §3-4): the
shared-issue execution model on hand-worked cases, the least-loaded wave placement, in-order
barriers, the warm-up-free metrics, the work derived from a trace, and the claims over seeds,
loads and execution models.

Expected values are worked by hand in the comments (the model's own output is never the
reference); the random comparisons against a cycle-by-cycle reference of the shared model are
in ``test_dispatch_exact.py``.
"""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from model.cli import main as gpusched
from model.config import ConfigError
from model.dispatch import PRESETS, DispatchSimulator, GpuConfig, WorkGroup, load_scenario
from model.dispatch.claims import Settings, evaluate, workload_for
from model.dispatch.config import read_trace, with_policy, write_trace
from model.dispatch.kernels import prepare, workgroup_duration, workgroup_work

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "dispatch"
DATA_TRACE = Path(__file__).resolve().parent / "data" / "rocprof-llamacpp" / "results.csv"
ONE_PEU = GpuConfig(aps=1, peus=1, vgpr=16, sgpr=8, lds=8, wave_slots=4, priorities=2)
ONE_AP = GpuConfig(aps=1, peus=4, vgpr=16, sgpr=8, lds=8, wave_slots=4, priorities=2)
EMB1 = PRESETS["emb1"]


def wg(id, channel=0, *, waves=1, vgpr=1, duration=10, work=None, arrival=0, barrier=False,
       priority=0):
    return WorkGroup(id=id, channel=channel, priority=priority, waves=waves, vgpr=vgpr, sgpr=0,
                     lds=0, duration=duration, independent=False, arrival=arrival, work=work,
                     barrier=barrier)


def run(gpu, policy, workload, **options):
    options.setdefault("debug", True)
    options.setdefault("strict", True)
    simulator = DispatchSimulator(gpu, policy, workload, cycles=options.pop("cycles", 2000),
                                  **options)
    return simulator, simulator.run()


def releases(simulator):
    """Release cycle of every WG (its last running cycle + 1)."""
    return [w.completed + 1 for w in simulator.workload]


# -- the shared-issue execution model ---------------------------------------------------------

@pytest.mark.parametrize("skip", [True, False])
def test_two_waves_share_one_peu(skip):
    # A (work 10) is dispatched in cycle 0 and issues alone in cycles 1-2; B (work 4, another
    # channel) arrives and is dispatched in cycle 2 and issues from cycle 3. From then on the
    # PEU's one issue slot is shared: 1/2 each. B needs 8 cycles (3..10) and is released in
    # cycle 11; A has 2 + 8/2 = 6 by then and issues its last 4 alone in 11..14: release 15.
    workload = [wg(0, work=10), wg(1, 1, work=4, arrival=2)]
    sim, result = run(ONE_PEU, EMB1, workload, execution="shared", skip=skip)
    assert releases(sim) == [15, 11]
    assert result["run"]["max"] == 14 and result["makespan"] == 15


def test_the_drain_holds_resources_without_issuing():
    # Drain 2: B's last wave-instruction issues in cycle 10 as before, but B holds its slot
    # until it is released in 13; it no longer issues, so A is alone from 11 and still
    # finishes in 14, released 2 cycles later in 17.
    workload = [wg(0, work=10), wg(1, 1, work=4, arrival=2)]
    sim, _ = run(replace(ONE_PEU, drain=2), EMB1, workload, execution="shared")
    assert releases(sim) == [17, 13]


def test_an_issue_width_of_two_serves_two_waves_at_full_rate():
    workload = [wg(0, work=10), wg(1, 1, work=4, arrival=2)]
    sim, _ = run(replace(ONE_PEU, issue_width=2), EMB1, workload, execution="shared")
    assert releases(sim) == [11, 7]                 # 1..10 and 3..6, as if alone


def test_the_fixed_model_ignores_work():
    workload = [wg(0, work=10), wg(1, 1, work=4, arrival=2)]
    sim, _ = run(ONE_PEU, EMB1, workload)
    assert releases(sim) == [11, 13]                # dispatch + duration + 1


@pytest.mark.parametrize("skip", [True, False])
def test_placement_changes_run_time(skip):
    # Four one-wave WGs (work 8) on one AP of 4 PEUs, dispatched in cycles 0..3. Spread one
    # per PEU (embodiment 8's pointer) each issues alone: released in 9, 10, 11, 12. The
    # unrotated split table puts all four on PEU 0, which shares its slot: at the end of
    # cycle 3 they have issued 1 + 1/2 + 1/3, 1/2 + 1/3 and 1/3 of their 8; from cycle 4 all
    # four get 1/4: the first is done after 25 more cycles (cycle 28), the others then have
    # 8 - 5/6 - 6.25, 8 - 1/3 - 6.25 and 8 - 6.25 = 0.92, 1.42 and 1.75 left; at 1/3 each
    # the first of them is done in 31, then at 1/2 the next in 32, the last alone in 33.
    workload = [wg(i, work=8) for i in range(4)]
    spread, _ = run(ONE_AP, with_policy(EMB1, rotate=True), workload, execution="shared",
                    skip=skip)
    assert releases(spread) == [9, 10, 11, 12]
    piled, result = run(ONE_AP, EMB1, workload, execution="shared", skip=skip)
    assert releases(piled) == [29, 32, 33, 34]
    assert result["latency"]["max"] == 34 and result["makespan"] == 34
    fixed, _ = run(ONE_AP, EMB1, workload)            # the fixed model cannot tell them apart
    assert releases(fixed) == [11, 12, 13, 14]


# -- the least-loaded wave placement ----------------------------------------------------------

def test_least_loaded_deals_each_wave_to_the_peu_with_the_most_free_slots():
    # X (3 waves): every PEU has 4 free slots, ties to the lowest index: PEUs 0, 1, 2.
    # Y (2 waves): PEU 3 has 4 free, the others 3: the first wave to PEU 3, then all have 3
    # left (less Y's own wave on PEU 3): the second to PEU 0.
    policy = with_policy(EMB1, wave_placement="least_loaded", rotate=False)
    sim, _ = run(ONE_AP, policy, [wg(0, waves=3, duration=50), wg(1, waves=2, duration=50)])
    assert sim.peu_waves.tolist() == [[2, 1, 1, 1]]
    events = []
    run(ONE_AP, policy, [wg(0, waves=3, duration=50), wg(1, waves=2, duration=50)],
        events=events)
    assert [waves for _, kind, _, _, waves, _, _ in events if kind == "dispatch"] == [
        [1, 1, 1, 0], [1, 0, 0, 1]]


def test_least_loaded_places_a_wave_where_the_split_table_cannot():
    # 9 of 16 VGPR blocks per wave: one wave per PEU. After a 3-wave WG on PEUs 0-2 the
    # unrotated table wants PEU 0 for a 1-wave WG (full); least-loaded takes PEU 3.
    workload = [wg(0, waves=3, vgpr=9, duration=100), wg(1, waves=1, vgpr=9, duration=5)]
    table, _ = run(ONE_AP, EMB1, workload)
    least, _ = run(ONE_AP, with_policy(EMB1, wave_placement="least_loaded", rotate=False),
                   workload)
    assert table.workload[1].dispatched == 101 and least.workload[1].dispatched == 1


def test_a_least_loaded_policy_that_sets_rotate_is_an_error(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[[channels]]\n[[policies]]\npreset = "emb1"\nwave_placement = '
                    '"least_loaded"\nrotate = true\n')
    with pytest.raises(ConfigError, match=r"policies\[0\].rotate is ignored by this policy: "
                                          r"wave_placement = \"least_loaded\""):
        load_scenario(path)


# -- in-order barriers ------------------------------------------------------------------------

@pytest.mark.parametrize("execution", ["fixed", "shared"])
def test_a_barrier_waits_for_the_channels_earlier_wgs(execution):
    # A runs cycles 1..10 and is released in 11; B, behind a barrier, is dispatched in that
    # cycle (release comes before dispatch); C, no barrier, follows in 12. Without the
    # barrier B would go in cycle 1.
    workload = [wg(0), wg(1, duration=3, work=3, barrier=True), wg(2, duration=3, work=3)]
    sim, _ = run(ONE_AP, EMB1, workload, execution=execution)
    assert [w.dispatched for w in sim.workload] == [0, 11, 12]
    sim, _ = run(ONE_AP, EMB1, [replace(w, barrier=False) for w in workload],
                 execution=execution)
    assert [w.dispatched for w in sim.workload] == [0, 1, 2]


# -- the metrics without warm-up --------------------------------------------------------------

def test_steady_metrics_leave_out_the_warm_up():
    # A arrives in 0 (released 11), B in 20 (dispatched 20, released 26): the run ends in 26.
    # With a warm-up of 15 only B counts: 1 completion and 1 arrival over 26 - 15 = 11
    # cycles, latency 26 - 20 = 6, wait 0.
    workload = [wg(0), wg(1, duration=5, arrival=20)]
    _, result = run(ONE_AP, EMB1, workload, warmup=15)
    steady = result["steady"]
    assert steady["throughput"] == steady["offered"] == pytest.approx(1000 / 11)
    assert steady["latency"]["count"] == 1 and steady["latency"]["mean"] == 6
    assert steady["wait"]["count"] == 1 and steady["wait"]["mean"] == 0
    assert result["latency"]["mean"] == (11 + 6) / 2 and result["run"]["mean"] == 7.5
    assert result["makespan"] == 26
    _, whole = run(ONE_AP, EMB1, workload)
    assert whole["steady"]["throughput"] == whole["throughput"] == 1000 * 2 / 26


# -- work from a trace ------------------------------------------------------------------------

def test_work_is_the_measured_round_at_the_busiest_peus_share():
    # 1000 WGs on 10 APs x 4 resident: 25 rounds of 400 cycles of a 10,000-cycle kernel.
    # 2-wave WGs, 4 per AP, 4 PEUs: 2 waves on each PEU, so each issues 1/2 per cycle and
    # issues 200 in a round. Issue width 2: 400. Drain 100: (400 - 100) / 2 = 150.
    assert workgroup_duration(10_000, 1000, 10, 4) == 400
    assert workgroup_work(10_000, 1000, 10, 4, 2, 4) == 200
    assert workgroup_work(10_000, 1000, 10, 4, 2, 4, issue_width=2) == 400
    assert workgroup_work(10_000, 1000, 10, 4, 2, 4, drain=100) == 150
    # 10 WGs on 10 APs: one per AP in the only round, one wave per PEU: the whole kernel.
    assert workgroup_work(10_000, 10, 10, 4, 2, 4) == 10_000
    # 5 waves x 3 resident: 34 rounds of round(10,000 / 34) = 294 cycles; the busiest of 4
    # PEUs has ceil(15 / 4) = 4 waves: 294 / 4 = 73.5, halves up: 74.
    assert workgroup_work(10_000, 1000, 10, 3, 5, 4) == 74
    with pytest.raises(ValueError, match="issue width must be at least 1"):
        workgroup_work(10, 1, 1, 1, 1, 1, issue_width=0)


def test_the_real_trace_replays_its_measured_time_on_the_shared_model_too():
    scenario, _ = prepare(load_scenario(CONFIGS / "llamacpp_rdna4.toml"))
    result = DispatchSimulator(scenario.gpu, PRESETS["seed"], scenario.workload(),
                               cycles=scenario.cycles, execution="shared",
                               sample_interval=8192).run()
    assert result["workgroups_completed"] == 4739
    # The window spans 3,628,523 cycles; the shared model ends within 0.1 % of it.
    assert abs(result["makespan"] - 3_628_523) < 3_629


def test_a_trace_keeps_work_and_barriers(tmp_path):
    workload = [wg(0, work=7), wg(1, barrier=True, arrival=3)]
    again = read_trace(write_trace(tmp_path / "t.csv", workload), ONE_AP)
    assert [(w.work, w.barrier) for w in again] == [(7, False), (None, True)]
    plain = read_trace(write_trace(tmp_path / "p.csv", [wg(0)]), ONE_AP)
    assert plain[0].work is None
    assert (tmp_path / "p.csv").read_text().splitlines()[0].endswith("duration,independent")


# -- claims over seeds, loads and execution models --------------------------------------------

SERIAL = """
name = "one slot"
cycles = 3000
warmup = 300
[gpu]
aps = 1
peus = 1
wave_slots = 1
[[channels]]
arrival = 0.5
count = 100000
waves = 1
vgpr = 1
duration = 9
[[policies]]
name = "a"
preset = "emb1"
[[policies]]
name = "b"
preset = "prior-art"
[[claims]]
text = "a vs b: throughput"
metric = "steady.throughput"
policy = "a"
baseline = "b"
higher_is_better = true
loads = [0.5, "as written", "batch"]
"""


def test_capacity_is_measured_and_loads_are_fractions_of_it(tmp_path):
    # One wave slot, WGs of 9 cycles: a backlog of N is cleared one WG every 10 cycles, the
    # last released in cycle 10 N: exactly 100 per 1000 cycles, whatever the policy; 500 are
    # offered. Half the capacity is a rate of 0.05 (factor 0.1): both serve all of it.
    path = tmp_path / "serial.toml"
    path.write_text(SERIAL)
    measured = evaluate([load_scenario(path)], Settings(seeds=3))
    capacity = measured["capacities"][0]
    assert capacity["capacity"]["mean"] == capacity["capacity"]["low"] == 100
    assert capacity["unfinished"] == 0 and capacity["offered"] == 500
    half, written, batch = measured["rows"]
    assert half["load"]["factor"] == pytest.approx(0.1, rel=0.01)
    assert half["load"]["offered"] == pytest.approx(50, rel=0.15)
    assert half["load"]["served"] == pytest.approx(half["load"]["offered"], rel=0.05)
    assert written["comparison"]["verdict"] == "does not hold"       # an exact tie
    assert batch["load"]["label"] == "batch" and not batch["load"]["unfinished"]
    assert half["seeds"] == [1, 2, 3] and not half["deterministic"]


def test_the_batch_load_queues_the_same_wgs_at_cycle_zero(tmp_path):
    path = tmp_path / "serial.toml"
    path.write_text(SERIAL)
    scenario = load_scenario(path)
    written = workload_for(scenario, "as written", 4, 1000)
    batch = workload_for(scenario, "batch", 4, 1000)
    assert [w.id for w in batch] == [w.id for w in written if w.arrival < 1000]
    assert {w.arrival for w in batch} == {0}


def test_a_deterministic_trace_claim_is_one_exact_run():
    scenario, _ = prepare(load_scenario(CONFIGS / "llamacpp_rdna4.toml"))
    claims = [c for c in scenario.claims]
    assert claims, "the real-trace scenario states what the embodiments buy on it"
    scenario = replace(scenario, claims=claims[:1], sample_interval=8192)
    row = evaluate([scenario], Settings(seeds=5))["rows"][0]
    assert row["deterministic"] and row["seeds"] == [1]
    assert row["comparison"].get("exact")


@pytest.mark.parametrize("text, message", [
    ('[[channels]]\n[[policies]]\npreset = "emb1"\n[[policies]]\npreset = "seed"\n'
     '[[claims]]\ntext = "x"\nmetric = "throughput"\npolicy = "seed"\nbaseline = "emb1"\n'
     'higher_is_better = true\nloads = [0.7]\n',
     "claims[0].loads gives 0.7, a fraction of the measured capacity, but the load of this "
     "scenario cannot be scaled: channel 0 is back to back, not a rate"),
    ('[[channels]]\narrival = 0.1\n[[policies]]\npreset = "emb1"\n[[policies]]\n'
     'preset = "seed"\n[[claims]]\ntext = "x"\nmetric = "throughput"\npolicy = "seed"\n'
     'baseline = "emb1"\nhigher_is_better = true\nloads = ["overload"]\n',
     "claims[0].loads must list \"as written\", \"batch\" or fractions of the measured "
     "capacity in (0, 4], not 'overload'"),
    ('cycles = 100\nwarmup = 100\n[[channels]]\n',
     "warmup must be less than the cycle limit 100, not 100"),
    ('execution = "issue"\n[[channels]]\n',
     "execution must be a string (one of 'fixed', 'shared'), not 'issue'"),
    ('[[channels]]\n[gpu]\nissue_width = 0\n', "gpu.issue_width must be an integer in 1..64"),
    ('[[channels]]\nwork = [0, 4]\n', "channels[0].work[0] must be an integer in 1.."),
])
def test_claim_and_execution_fields_are_checked(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_scenario(path)
    assert message in str(error.value)


def test_cli_prints_the_claims_over_seeds_and_writes_them(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert gpusched(["dispatch", "--config", str(CONFIGS / "hol_blocking.toml"), "--quick",
                     "--quiet", "--plots", str(tmp_path), "--json", str(out),
                     "--seeds", "2"]) == 0
    text = capsys.readouterr().out
    assert "The seed's claims over seeds 1..2" in text and "verdict" in text
    claims = json.loads(out.read_text())["claims"]
    assert claims["settings"] == {"seeds": 2, "first_seed": 1, "cycles": 3000}
    assert all(row["comparison"]["verdict"] in ("holds", "does not hold", "cannot tell")
               for row in claims["rows"])


def test_quick_claims_run_two_seeds_and_the_json_records_the_seeds_used(tmp_path, capsys):
    # --quick judges the claims over 2 seeds unless --seeds says; without --quick the default
    # stays 5 and the JSON's options say 5, as before --seeds had a quick default.
    out = tmp_path / "d.json"
    assert gpusched(["dispatch", "--config", str(CONFIGS / "hol_blocking.toml"), "--quick",
                     "--quiet", "--plots", str(tmp_path), "--json", str(out)]) == 0
    assert "The seed's claims over seeds 1..2" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["options"]["seeds"] == 2 and data["claims"]["settings"]["seeds"] == 2
    assert gpusched(["dispatch", "--config", str(CONFIGS / "hol_blocking.toml"), "--no-claims",
                     "--cycles", "200", "--quiet", "--plots", str(tmp_path), "--json",
                     str(out)]) == 0
    assert json.loads(out.read_text())["options"]["seeds"] == 5


def test_cli_refuses_a_single_seed(capsys):
    assert gpusched(["dispatch", "--config", str(CONFIGS / "hol_blocking.toml"), "--quick",
                     "--quiet", "--seeds", "1"]) == 2
    assert "--seeds must be at least 2" in capsys.readouterr().err


# -- concurrent requests from a real trace ----------------------------------------------------

def test_windows_are_concurrent_requests_staggered_per_seed(tmp_path):
    # Two windows of the real trace, each from cycle 0 on a channel of its own; with a
    # stagger the second starts 0..S cycles late, the draw depending on the seed only.
    path = tmp_path / "requests.toml"
    path.write_text(f'kernel_trace = "{DATA_TRACE}"\npreset = "rdna4-wgp"\ncycles = 400000\n'
                    'windows = [[1020, 1023], [1952, 1955]]\nstagger = 100000\n')
    scenario, converted = prepare(load_scenario(path))
    assert len(converted.channels) == 2 and scenario.channel_windows == (0, 1)
    firsts = {}
    for seed in (1, 2):
        workload = scenario.workload(seed)
        assert [w.id for w in workload] == list(range(len(workload)))
        assert all(a.arrival <= b.arrival for a, b in zip(workload, workload[1:], strict=False))
        firsts[seed] = [min(w.arrival for w in workload if w.channel == c) for c in (0, 1)]
    assert firsts[1][0] == firsts[2][0] == 0
    assert firsts[1][1] != firsts[2][1] and 0 <= min(firsts[1][1], firsts[2][1])
    assert scenario.workload(1) == scenario.workload(1)
    # The first WG of each launch after the first of its stream is an in-order barrier.
    barriers = [w for w in scenario.workload(1) if w.barrier]
    assert len(barriers) == 2 * 2


@pytest.mark.parametrize("text, message", [
    ("windows = [[1, 2]]\nkernels = [1, 2]\n", "windows and kernels cannot both be given"),
    ("kernels = [1, 2]\nstagger = 5\n", "stagger needs windows = [[first, last], ...] with at "
                                        "least two windows"),
    ("windows = [[3, 2]]\n", "windows must list [first, last] pairs with 0 <= first < last, "
                             "not [3, 2]"),
])
def test_window_fields_are_checked(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(f'kernel_trace = "{DATA_TRACE}"\npreset = "rdna4-wgp"\n' + text)
    with pytest.raises(ConfigError) as error:
        load_scenario(path)
    assert message in str(error.value)


def test_cli_runs_a_scenario_under_the_shared_model(tmp_path):
    out = tmp_path / "d.json"
    assert gpusched(["dispatch", "--config", str(CONFIGS / "wave_imbalance.toml"), "--quiet",
                     "--cycles", "400", "--no-claims", "--execution", "shared",
                     "--plots", str(tmp_path), "--json", str(out)]) == 0
    runs = json.loads(out.read_text())["scenarios"]["wave imbalance across PEUs"]["policies"]
    assert {r["execution"] for r in runs.values()} == {"shared"}
