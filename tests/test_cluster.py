"""Seed 004: power-aware GPU placement -- the seed's worked examples, every step of the
ordering, the baselines, the simulation (energy, queue, fragmentation, admission), the
invariants, scenario files and the CLI. The trace readers are tested in test_cluster_trace.py,
the other policies, GPU sharing, fragmentation and inflation in test_cluster_policies.py.

Expected values are worked out by hand in the comments, never taken from the model's output.
"""

import json
import random
from pathlib import Path

import pytest

from model.cli import main as gpusched
from model.cluster.cli import binned_average, prepare, run_scenario, savings
from model.cluster.config import (
    DEFAULT_POLICIES,
    POLICY_NAMES,
    CardType,
    NodeSpec,
    SyntheticWorkload,
    load_scenario,
)
from model.cluster.placement import (
    POLICIES,
    JobRequest,
    NodeState,
    binpack_key,
    choose_node,
    feasible,
    kube_scores,
    power_first_key,
    rank_nodes,
    second_power,
    seed_key,
    spread_key,
    third_power,
)
from model.cluster.sim import ClusterSimulation, InvariantError
from model.cluster.trace import SKIP_NEVER_RAN
from model.cluster.workload import Job, admission_problem, generate_jobs
from model.config import ConfigError

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
PODS = DATA / "alibaba_pods_sample.csv"
NODES = DATA / "alibaba_nodes_sample.csv"


def node(name, idle_powers, total=None, cpu_standby_w=0.0, card_type="X"):
    """A NodeState whose idle cards have the given first powers (all of one type)."""
    idle = tuple((card_type, power) for power in idle_powers)
    return NodeState(name, total if total is not None else len(idle) + 1, idle, cpu_standby_w)


def order(nodes, job, key=seed_key):
    return [nodes[index].name for index in rank_nodes(nodes, job, key)]


# --- The seed's worked examples ------------------------------------------------------------

def test_second_power_is_the_sum_of_idle_first_powers():
    # Par. 60: four idle cards of first power 2, 7, 9, 12: 2 + 7 + 9 + 12 = 30.
    a = node("a", [2, 7, 9, 12], total=8)
    assert second_power(a, JobRequest(1)) == 30


def test_in_group_order_by_second_power():
    # Par. 61: one group (equal idle counts), second powers a 18, b 20, c 5, d 7:
    # 5 < 7 < 18 < 20 gives c, d, a, b.
    nodes = [node("a", [9, 9], total=4), node("b", [10, 10], total=4),
             node("c", [2, 3], total=4), node("d", [3, 4], total=4)]
    assert [second_power(n, JobRequest(1)) for n in nodes] == [18, 20, 5, 7]
    assert order(nodes, JobRequest(1)) == ["c", "d", "a", "b"]


def test_third_power_adds_cpu_standby_of_a_fully_idle_node():
    # Par. 70: second power 36 and CPU standby 25 give a third power of 61; a node with a
    # busy card keeps its second power.
    x = node("x", [9, 9, 9, 9], total=4, cpu_standby_w=25)
    assert third_power(x, JobRequest(1)) == 61
    assert third_power(node("y", [9, 9, 9, 9], total=5, cpu_standby_w=25), JobRequest(1)) == 36


def test_standby_example_reorders_the_fully_idle_node():
    # Par. 70: second order 1, 2, 3, 4 with second powers 15, 20, 30, 50; node 3 is fully
    # idle, its third power 61 (CPU standby 31) > 50, so the order becomes 1, 2, 4, 3. All four
    # have 4 idle cards (one group); 1, 2 and 4 have 8 cards, 3 has exactly its 4.
    def nodes(cpu_standby_3):
        return [node("1", [3, 4, 4, 4], total=8, cpu_standby_w=99),
                node("2", [5, 5, 5, 5], total=8, cpu_standby_w=99),
                node("3", [6, 8, 8, 8], total=4, cpu_standby_w=cpu_standby_3),
                node("4", [11, 13, 13, 13], total=8, cpu_standby_w=99)]
    assert [second_power(n, JobRequest(2)) for n in nodes(0)] == [15, 20, 30, 50]
    assert order(nodes(0), JobRequest(2)) == ["1", "2", "3", "4"]
    assert third_power(nodes(31)[2], JobRequest(2)) == 61
    assert order(nodes(31), JobRequest(2)) == ["1", "2", "4", "3"]


def test_nodes_with_too_few_idle_cards_are_dropped():
    # Par. 25: a job needing 3 cards keeps only nodes with 3 or more idle cards.
    nodes = [node("two", [1, 1]), node("three", [1, 1, 1]), node("four", [1, 1, 1, 1])]
    assert [feasible(n, JobRequest(3)) for n in nodes] == [False, True, True]
    assert order(nodes, JobRequest(3)) == ["three", "four"]
    assert choose_node(nodes, JobRequest(5), POLICIES["seed-004"]) is None


def test_groups_in_ascending_idle_count():
    # Par. 51-53: idle counts w1 1, w2..w5 5, w6 w7 8 give groups y1 (w1), y2 (w2..w5),
    # y3 (w6, w7) in that order; equal powers keep node order inside a group (par. 66: the
    # second order is the groups' orders concatenated). Powers are chosen to reverse the
    # order inside y2 and y3.
    counts = {"w1": 1, "w2": 5, "w3": 5, "w4": 5, "w5": 5, "w6": 8, "w7": 8}
    powers = {"w1": 50, "w2": 40, "w3": 30, "w4": 20, "w5": 10, "w6": 9, "w7": 1}
    nodes = [node(name, [powers[name]] * counts[name], total=10) for name in counts]
    assert order(nodes, JobRequest(1)) == ["w1", "w5", "w4", "w3", "w2", "w7", "w6"]


def test_first_embodiment_example_power_first():
    # Par. 35: idle counts a 8, b 6, c 4, d 9, e 3 give the initial order e, c, b, a, d; the
    # power sums 14, 14, 14, 10, 8 are read in that initial order (e, c, b 14; a 10; d 8),
    # and ordering by power with the initial order breaking ties gives d, a, e, c, b.
    counts = {"a": 8, "b": 6, "c": 4, "d": 9, "e": 3}
    sums = {"e": 14, "c": 14, "b": 14, "a": 10, "d": 8}
    nodes = [node(name, [sums[name] / counts[name]] * counts[name], total=10)
             for name in counts]
    assert order(nodes, JobRequest(1), key=lambda n, j: (n.idle_cards(None)[0],)) == \
        ["e", "c", "b", "a", "d"]
    assert order(nodes, JobRequest(1), key=power_first_key) == ["d", "a", "e", "c", "b"]


# --- Placement functions -------------------------------------------------------------------

def test_type_constraint_counts_only_accepted_cards():
    mixed = NodeState("m", 4, (("A100", 400.0), ("T4", 70.0), ("T4", 70.0)), 10.0)
    assert mixed.idle_cards(frozenset({"T4"})) == (2, 140.0)
    assert mixed.idle_cards(None) == (3, 540.0)
    assert not feasible(mixed, JobRequest(3, frozenset({"T4"})))
    assert seed_key(mixed, JobRequest(2, frozenset({"T4"}))) == (2, 140.0)


def test_kubernetes_integer_scores():
    # 8 cards, 3 idle, job of 2: MostAllocated (5 + 2) * 100 // 8 = 87;
    # LeastAllocated (3 - 2) * 100 // 8 = 12. Keys are the negated scores.
    n = node("n", [1, 1, 1], total=8)
    assert binpack_key(n, JobRequest(2)) == (-87,)
    assert spread_key(n, JobRequest(2)) == (-12,)


def test_random_ties_need_an_rng_and_are_seeded():
    nodes = [node(str(i), [1, 1], total=2) for i in range(4)]
    with pytest.raises(ValueError, match="needs an rng"):
        choose_node(nodes, JobRequest(1), POLICIES["random"])
    picks = [choose_node(nodes, JobRequest(1), POLICIES["random"], random.Random(seed))
             for seed in range(40)]
    assert set(picks) == {0, 1, 2, 3}
    assert picks == [choose_node(nodes, JobRequest(1), POLICIES["random"], random.Random(seed))
                     for seed in range(40)]
    # The seed's policy takes the first of equal nodes, without an rng.
    assert choose_node(nodes, JobRequest(1), POLICIES["seed-004"]) == 0


def test_kube_scores_normalise_to_0_100_and_keep_the_choice():
    # Keys (idle count, power): a (2, 10), b (2, 20), c (4, 5), d infeasible.
    nodes = [node("a", [5, 5]), node("b", [10, 10]), node("c", [1, 1, 1, 2]),
             node("d", [1])]
    scores = kube_scores(nodes, JobRequest(2))
    assert scores == {"a": 100, "b": 50, "c": 0}
    best = max(scores, key=scores.get)
    assert nodes[choose_node(nodes, JobRequest(2), POLICIES["seed-004"])].name == best
    assert kube_scores([node("a", [1, 1]), node("b", [1, 1])], JobRequest(1)) == \
        {"a": 100, "b": 100}


def test_node_state_rejects_more_idle_cards_than_cards():
    with pytest.raises(ValueError, match="has 3 idle cards but only 2 cards"):
        NodeState("n", 2, (("X", 1.0),) * 3)


# --- Simulation ----------------------------------------------------------------------------

CARD = {"X": CardType("X", busy_w=100.0, idle_w=10.0, standby_w=1.0)}
TYPES = {"A100": CardType("A100", 400.0, 50.0, 10.0), "T4": CardType("T4", 70.0, 10.0, 2.0)}


def spec(name, cards, cpu_busy_w=50.0, cpu_standby_w=20.0, sleep_w=5.0):
    return NodeSpec(name, tuple(cards), cpu_busy_w, cpu_standby_w, sleep_w)


def simulate(nodes, jobs, policy="seed-004", card_types=CARD, horizon=None, **options):
    sim = ClusterSimulation(nodes, card_types, jobs, policy, rng=random.Random(1),
                            debug=True, **options).run()
    return sim, sim.results(horizon)


def test_energy_without_standby():
    # One node of two X cards; one 1-card job for 3600 s. Busy: card 100 W + host 50 W for
    # 1 h = 0.15 kWh; idle: the other card 10 W for 1 h = 0.01 kWh.
    sim, result = simulate([spec("n", "XX")], [Job(0, "j", 0.0, 1, 3600.0)], standby=False)
    assert result["busy_kwh"] == pytest.approx(0.15)
    assert result["idle_kwh"] == pytest.approx(0.01)
    assert result["standby_kwh"] == 0
    assert result["energy_kwh"] == pytest.approx(0.16)
    assert result["card_utilisation"] == pytest.approx(0.5)


def test_energy_with_standby_timeout_and_wake():
    # Standby after 600 s, wake 60 s. The job arrives at 1200 s on a node asleep since 600 s,
    # starts at 1260 s, ends at 4860 s. Card 0: idle 0..600, standby 600..1200, busy (held
    # while waking) 1200..4860. Card 1: idle 0..600, standby 600..4860. Host: CPU standby
    # 0..600, sleep 600..1200, busy 1200..4860.
    sim, result = simulate([spec("n", "XX")], [Job(0, "j", 1200.0, 1, 3600.0)],
                           standby=True, standby_after_s=600.0, wake_s=60.0)
    joules = 3.6e6
    assert result["idle_kwh"] == pytest.approx((10 * 600 * 2 + 20 * 600) / joules)
    assert result["standby_kwh"] == pytest.approx((1 * 600 + 1 * 4260 + 5 * 600) / joules)
    assert result["busy_kwh"] == pytest.approx((100 + 50) * 3660 / joules)
    assert result["wait_s"]["max"] == 60.0
    assert result["wakeups"] == 1
    assert result["makespan_s"] == 4860.0


def test_no_wake_for_a_card_freed_at_the_same_instant():
    # With immediate standby, a card idle for no time at all is still awake: job 0 arrives at
    # 0 s, before anything slept, and job 1 takes the card job 0 frees at 100 s (completions
    # are handled before arrivals) -- neither wakes anything.
    jobs = [Job(0, "a", 0.0, 1, 100.0), Job(1, "b", 100.0, 1, 50.0)]
    sim, result = simulate([spec("n", "X")], jobs, standby=True, wake_s=7.0)
    assert result["wakeups"] == 0
    assert sim.started_at == {0: 0.0, 1: 100.0}


def test_fifo_head_blocks_and_backfill_passes_it():
    # One node of 4 cards. a: 3 cards at 0 s for 100 s; b: 4 cards at 1 s for 100 s (blocked
    # head); c: 1 card at 2 s for 10 s. FIFO: b runs 100..200, c 200..210.
    # Backfill: c runs 2..12 on the free card, b 100..200.
    jobs = [Job(0, "a", 0.0, 3, 100.0), Job(1, "b", 1.0, 4, 100.0), Job(2, "c", 2.0, 1, 10.0)]
    fifo, result = simulate([spec("n", "XXXX")], jobs, standby=False)
    assert fifo.started_at == {0: 0.0, 1: 100.0, 2: 200.0}
    assert result["queued"] == 2
    assert result["queued_wait_s"]["max"] == 198.0
    backfill, result = simulate([spec("n", "XXXX")], jobs, standby=False, backfill=True)
    assert backfill.started_at == {0: 0.0, 1: 100.0, 2: 2.0}
    assert result["queued"] == 1


def test_fragmentation_spread_versus_seed():
    # Two 4-card nodes. a and b (2 cards each) arrive at 0 s; c (4 cards) at 1 s.
    # Spread puts a and b on different nodes, so c cannot be placed although 4 cards are
    # idle cluster-wide: one fragmented job. The seed packs b next to a (2 idle < 4 idle),
    # so c fits the other node.
    nodes = [spec("n0", "XXXX"), spec("n1", "XXXX")]
    jobs = [Job(0, "a", 0.0, 2, 100.0), Job(1, "b", 0.0, 2, 100.0), Job(2, "c", 1.0, 4, 10.0)]
    spread, result = simulate(nodes, jobs, policy="spread", standby=False)
    assert spread.running == {} and result["fragmented"] == 1
    assert result["fragmented_fraction"] == pytest.approx(1 / 3)
    assert spread.started_at[2] == 100.0
    seed, result = simulate(nodes, jobs, standby=False)
    assert result["fragmented"] == 0
    assert seed.started_at[2] == 1.0


def test_a_job_blocked_with_too_few_idle_cards_is_not_fragmentation():
    jobs = [Job(0, "a", 0.0, 4, 100.0), Job(1, "b", 1.0, 1, 10.0)]
    _, result = simulate([spec("n", "XXXX")], jobs, standby=False)
    assert result["fragmented"] == 0 and result["queued"] == 1


def test_impossible_jobs_are_rejected_at_admission():
    jobs = [Job(0, "big", 0.0, 16, 10.0), Job(1, "h100", 0.0, 1, 10.0, frozenset({"H100"})),
            Job(2, "t4x8", 0.0, 8, 10.0, frozenset({"T4"})), Job(3, "ok", 0.0, 1, 10.0)]
    nodes = [spec("a", ["A100"] * 8), spec("t", ["T4"] * 4)]
    sim, result = simulate(nodes, jobs, card_types=TYPES)
    assert result["rejected"] == 3 and result["completed"] == 1
    reasons = {entry["job"]: entry["reason"] for entry in result["rejections"]}
    assert reasons == {
        "big": "needs 16 cards on one node; the largest node has 8",
        "h100": "needs card type H100, which no node has",
        "t4x8": "needs 8 cards of type T4 on one node; the largest node has 4",
    }
    assert admission_problem(jobs[3], nodes) is None


def test_seed_prefers_low_power_cards_and_respects_pinning():
    # Both nodes fully idle with 4 cards (one group); third powers T4 4*70 + 20 = 300 and
    # A100 4*400 + 20 = 1620: the seed takes T4. A job pinned to A100 goes there anyway.
    nodes = [spec("a", ["A100"] * 4), spec("t", ["T4"] * 4)]
    jobs = [Job(0, "any", 0.0, 1, 10.0), Job(1, "pinned", 0.0, 1, 10.0, frozenset({"A100"}))]
    sim, _ = simulate(nodes, jobs, card_types=TYPES)
    assert {job: node for job, (node, _) in sim.assignment.items()} == {0: 1, 1: 0}


def test_cards_inside_a_node_cheapest_first():
    # A mixed node (A100, T4, A100, T4): a 2-card any-type job takes the two T4 cards (1, 3).
    sim, _ = simulate([spec("m", ["A100", "T4", "A100", "T4"])], [Job(0, "j", 0.0, 2, 10.0)],
                      policy="bin-pack", card_types=TYPES)
    assert sim.assignment == {0: (0, (1, 3))}


def test_fully_idle_nodes_time_average_and_common_horizon():
    # Two nodes; one job on node 0 from 0 to 100 s; horizon 200 s: one idle node for 100 s,
    # two for 100 s, mean 1.5. The horizon also extends the energy: idle X cards 10 W.
    nodes = [spec("n0", "X"), spec("n1", "X")]
    _, result = simulate(nodes, [Job(0, "j", 0.0, 1, 100.0)], horizon=200.0, standby=False)
    assert result["fully_idle_nodes_mean"] == pytest.approx(1.5)
    assert result["fully_idle_series"] == [[0.0, 2], [0.0, 1], [100.0, 2]]
    assert result["horizon_s"] == 200.0
    # Idle: node 1 card + host for 200 s, node 0 card + host for 100 s: (10 + 20) * 300 J.
    assert result["idle_kwh"] == pytest.approx(30 * 300 / 3.6e6)


def test_binned_average_of_a_step_series():
    # 2 until 100 s, then 4 until 200 s; bins of 50 s: 2, 2, 4, 4; and 3 over one bin.
    centres, averages = binned_average([[0.0, 2], [100.0, 4]], 200.0, bins=4)
    assert list(centres) == [25.0, 75.0, 125.0, 175.0]
    assert list(averages) == [2.0, 2.0, 4.0, 4.0]
    assert list(binned_average([[0.0, 2], [100.0, 4]], 200.0, bins=1)[1]) == [3.0]


# --- Invariants ----------------------------------------------------------------------------

def _busy_sim():
    jobs = [Job(0, "a", 0.0, 2, 100.0), Job(1, "b", 0.0, 1, 100.0)]
    sim = ClusterSimulation([spec("n", "XXXX")], CARD, jobs, POLICIES["seed-004"],
                            rng=random.Random(1), debug=True)
    sim.now = 0.0
    for job in jobs:
        sim._arrive(job)
    sim._schedule()
    sim.check_invariants()
    return sim


def test_broken_card_share_is_detected():
    sim = _busy_sim()
    sim.state.left[0, 3] -= 1
    with pytest.raises(InvariantError, match="card 3 of n: 999 free"):
        sim.check_invariants()


def test_stale_summary_is_detected():
    sim = _busy_sim()
    sim.state.idle_count[0] += 1
    with pytest.raises(InvariantError, match="summaries of n were stale"):
        sim.check_invariants()


def test_double_allocation_is_detected():
    sim = _busy_sim()
    held = next(slot for slot in range(4) if sim.state.holders[0][slot])
    with pytest.raises(InvariantError, match="while job 0 holds it"):
        sim.state.allocate(0, (held,), sim.jobs[1])


def test_card_marked_by_a_job_that_does_not_hold_it_is_detected():
    sim = _busy_sim()
    free = next(slot for slot in range(4) if not sim.state.holders[0][slot])
    sim.state.holders[0][free][0] = 0
    with pytest.raises(InvariantError, match="marks job 0, which does not hold it"):
        sim.check_invariants()


def test_completing_twice_is_detected():
    sim = _busy_sim()
    sim.now = 100.0
    sim._complete(0)
    with pytest.raises(InvariantError, match="job 0 completed twice"):
        sim._complete(0)


def test_broken_incremental_fragmentation_is_detected():
    sim = _busy_sim()
    sim.fragmentation.node[0] += 1.0
    with pytest.raises(InvariantError, match="incremental fragmentation differs"):
        sim.check_invariants()


@pytest.mark.parametrize("policy", POLICY_NAMES)
@pytest.mark.parametrize("backfill", [False, True])
def test_random_workloads_keep_every_invariant(policy, backfill):
    # Debug mode checks the invariants after every event instant; at the end every admitted
    # job has completed exactly once.
    nodes = [spec("a", ["A100"] * 8), spec("b", ["A100"] * 4 + ["T4"] * 4),
             spec("t", ["T4"] * 2)]
    workload = SyntheticWorkload(jobs=150, arrival="bursty", burst_size=6, burst_gap_s=300.0,
                                 mean_duration_s=600.0, pinned_fraction=0.3)
    jobs = generate_jobs(workload, nodes, random.Random(7))
    sim, result = simulate(nodes, jobs, policy=policy, card_types=TYPES, backfill=backfill,
                           standby_after_s=60.0, wake_s=5.0)
    assert result["completed"] == result["admitted"] == 150
    assert result["energy_kwh"] == pytest.approx(result["busy_kwh"] + result["idle_kwh"]
                                                 + result["standby_kwh"])


# --- Workload generator --------------------------------------------------------------------

def test_generator_is_seeded_and_follows_its_settings():
    nodes = [spec("a", ["A100"] * 8), spec("t", ["T4"] * 2)]
    workload = SyntheticWorkload(jobs=60, arrival="bursty", burst_size=5, burst_gap_s=100.0,
                                 cards=(1, 8), card_weights=(1.0, 1.0), pinned_fraction=1.0)
    jobs = generate_jobs(workload, nodes, random.Random(3))
    assert jobs == generate_jobs(workload, nodes, random.Random(3))
    assert len(jobs) == 60 and {job.cards for job in jobs} == {1, 8}
    # Bursts: the first five arrive together at 0 s, the sixth later.
    assert [job.arrival_s for job in jobs[:5]] == [0.0] * 5 and jobs[5].arrival_s > 0
    # Pinned 8-card jobs can only name A100 (the T4 node has 2 cards).
    assert all(job.types == frozenset({"A100"}) for job in jobs if job.cards == 8)
    assert all(job.types is not None for job in jobs)
    assert len(generate_jobs(workload, nodes, random.Random(3), quick=True)) == 200


# --- Scenario files ------------------------------------------------------------------------

BASE = """
[card_types.X]
busy_w = 100.0
idle_w = 10.0
standby_w = 1.0

[[nodes]]
count = 2
cards = { X = 4 }
cpu_busy_w = 50.0
cpu_standby_w = 20.0
sleep_w = 5.0

[workload]
jobs = 10
"""


def write(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_scenario_loads_with_defaults(tmp_path):
    scenario = load_scenario(write(tmp_path, BASE))
    assert scenario.name == "s" and scenario.policies == DEFAULT_POLICIES
    assert scenario.experiment == "timed" and scenario.seeds == 1
    assert {"seed-004", "fgd", "pwr", "best-fit", "dot-product", "gpu-packing",
            "gpu-clustering"} <= set(scenario.policies)
    assert [node.name for node in scenario.nodes] == ["node0-0", "node0-1"]
    assert scenario.nodes[0].cards == ("X",) * 4
    assert scenario.power.standby == "all" and scenario.backfill is False


@pytest.mark.parametrize("edit, message", [
    (lambda base: base + "speed = 3\n", "s.toml: workload.speed is not a known field"),
    (lambda base: "speed = 3\n" + base, "s.toml: speed is not a known field"),
    (lambda base: 'policies = ["seed-004", "first-fit"]\n' + base,
     "policies[1] must be one of"),
    (lambda base: 'policies = ["spread", "spread"]\n' + base, "policies names a policy twice"),
    (lambda base: "[power]\nstandby = 'some'\n" + base,
     "power.standby must be a string (one of 'all', 'seed', 'none'), not 'some'"),
    (lambda base: "[power]\nwake_s = -1\n" + base,
     "power.wake_s must be a number >= 0.0, not -1"),
    (lambda base: base.replace("X = 4", "Y = 4"),
     "nodes[0].cards.Y is not a card type (known: A10, A100, G1, G2, G3, P100, T4, "
     "V100M16, V100M32, X)"),
    (lambda base: base + "[trace]\npods = 'p.csv'\n", "give exactly one of [workload]"),
    (lambda base: base.replace("idle_w = 10.0\n", ""), "card_types.X.idle_w is required"),
    (lambda base: base.replace("jobs = 10", "jobs = 10\ncards = [1, 2]\ncard_weights = [1.0]"),
     "workload.card_weights must be a list of 2 items"),
    (lambda base: base.replace("jobs = 10", "jobs = 10\narrival = 'uniform'"),
     "workload.arrival must be a string (one of 'poisson', 'bursty'), not 'uniform'"),
    (lambda base: base.replace("count = 2", "count = 0"),
     "nodes[0].count must be an integer >= 1, not 0"),
    (lambda base: base.replace("X = 4", f"X = {10**30}"),
     f"nodes[0].cards.X must be an integer in 0..1024, not {10**30}"),
    (lambda base: base.replace("X = 4", "X = 1000, A100 = 100"),
     "nodes[0].cards.A100 brings the node to 1100 cards; at most 1024 are accepted"),
    (lambda base: base.replace("count = 2", f"count = 2\ncpu_milli = {10**20}"),
     f"nodes[0].cpu_milli must be an integer in 1..1000000000, not {10**20}"),
    (lambda base: base.replace("jobs = 10", "jobs = 10\ncards = [1, 2048]"),
     "workload.cards[1] must be an integer in 1..1024, not 2048"),
])
def test_scenario_errors_name_the_field(tmp_path, edit, message):
    with pytest.raises(ConfigError) as error:
        load_scenario(write(tmp_path, edit(BASE)))
    assert message in str(error.value)


def test_scenario_without_nodes_or_node_list(tmp_path):
    text = BASE.split("[[nodes]]")[0] + "[workload]\njobs = 3\n"
    with pytest.raises(ConfigError, match="nodes is required"):
        load_scenario(write(tmp_path, text))


def test_shipped_scenarios_load():
    paths = sorted((ROOT / "configs" / "cluster").glob("*.toml"))
    assert 2 <= len(paths) <= 6
    scenarios = [load_scenario(path) for path in paths]
    assert any(scenario.trace is not None for scenario in scenarios)
    assert {scenario.experiment for scenario in scenarios} == {"timed", "inflation"}
    trace = next(scenario.trace for scenario in scenarios if scenario.trace is not None)
    assert trace.pods.resolve() == PODS and trace.nodes.resolve() == NODES
    # Claims are judged over seeds: every scenario with claims runs at least five.
    assert all(scenario.seeds >= 5 for scenario in scenarios if scenario.claims)
    assert any(scenario.claims for scenario in scenarios)


# --- Scenario runs and the CLI -------------------------------------------------------------

def test_trace_scenario_runs_every_policy_over_one_horizon():
    # The sample: 80 pods, 6 never ran; the 74 others include 5 CPU-only pods (placed on
    # CPU) and 28 sharing a card.
    scenario = load_scenario(ROOT / "configs" / "cluster" / "alibaba_sample.toml")
    prepared = prepare(scenario, seed=1)
    assert len(prepared.jobs) == 74 and len(prepared.nodes) == 16
    assert prepared.input_notes["pod list: " + SKIP_NEVER_RAN] == 6
    assert sum(job.cards == 0 for job in prepared.jobs) == 5
    assert sum(job.shared for job in prepared.jobs) == 28
    results = run_scenario(prepared, seed=1, debug=True)
    assert set(results) == set(scenario.policies)
    assert len({result["horizon_s"] for result in results.values()}) == 1
    for result in results.values():
        # The pod asking for an A100 is rejected: the sample cluster has none.
        assert result["rejected"] == 1 and result["completed"] == 73
    saved = savings(results)
    assert {"fgd", "pwr", "spread", "bin-pack", "random"} <= set(saved)
    assert saved["spread"] == pytest.approx(100 * (1 - results["seed-004"]["energy_kwh"]
                                                   / results["spread"]["energy_kwh"]))
    assert run_scenario(prepared, seed=1) == results


def test_cli_quick_run(tmp_path):
    out = tmp_path / "cluster.json"
    status = gpusched(["cluster", "--quick", "--quiet", "--plots", str(tmp_path),
                       "--json", str(out)])
    assert status == 0
    data = json.loads(out.read_text())
    stems = sorted(path.stem for path in (ROOT / "configs" / "cluster").glob("*.toml"))
    assert sorted(Path(entry["file"]).stem for entry in data["scenarios"].values()) == stems
    for stem in stems:
        assert (tmp_path / f"cluster_{stem}.png").stat().st_size > 0
    for entry in data["scenarios"].values():
        assert len(entry["seeds"]) == 1         # --quick runs one seed
        if entry["experiment"] == "timed":
            assert {"fgd", "pwr", "spread", "bin-pack"} <= set(entry["energy_saving_percent"])
        assert set(entry["summary"]) == set(entry["policies"])
    # One seed says nothing about the spread: every claim reads "cannot tell".
    assert data["claims"] and all(claim["verdict"] == "cannot tell"
                                  for claim in data["claims"])


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def test_cli_json_of_one_seed_is_standard_json(tmp_path):
    # One seed's interval is [-inf, inf]: it was written as -Infinity/Infinity, which is not
    # JSON; the unknown bounds are null.
    out = tmp_path / "cluster.json"
    assert gpusched(["cluster", "--config", str(ROOT / "configs/cluster/mixed_steady.toml"),
                     "--policy", "seed-004", "--policy", "fgd", "--quick", "--quiet",
                     "--plots", str(tmp_path), "--json", str(out)]) == 0
    data = json.loads(out.read_text(), parse_constant=_no_constant)
    entry = next(iter(data["scenarios"].values()))
    assert entry["seeds"] == [1]
    energy = entry["summary"]["seed-004"]["energy_kwh"]
    assert energy["low"] is None and energy["high"] is None and energy["mean"] > 0
    with pytest.raises(ValueError, match="Infinity is not JSON"):
        json.loads('{"low": -Infinity}', parse_constant=_no_constant)


def test_cli_config_error_exits_2(tmp_path, capsys):
    path = write(tmp_path, BASE + "bogus = 1\n")
    assert gpusched(["cluster", "--quiet", "--config", str(path),
                     "--plots", str(tmp_path)]) == 2
    assert "bogus is not a known field" in capsys.readouterr().err


def test_cli_refuses_a_node_with_more_cards_than_any_real_one(tmp_path, capsys):
    # A 31-digit card count overflowed building the node's card tuple (a traceback).
    shipped = (ROOT / "configs" / "cluster" / "mixed_steady.toml").read_text()
    path = write(tmp_path, shipped.replace("cards = { A100 = 8 }",
                                           f"cards = {{ A100 = {10**30} }}"))
    assert gpusched(["cluster", "--quiet", "--quick", "--config", str(path),
                     "--plots", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"gpusched cluster: {path}: nodes[0].cards.A100 must be "
                                       f"an integer in 0..1024, not {10**30}\n")


def test_standby_for_the_seed_only(tmp_path):
    # power.standby = "seed": the seed's runs use standby, the baselines never do.
    text = ('policies = ["seed-004", "spread"]\n[power]\nstandby = "seed"\n'
            + BASE.replace("jobs = 10", "jobs = 10\nquick_jobs = 10\nmean_interarrival_s = 600.0"))
    results = run_scenario(prepare(load_scenario(write(tmp_path, text)), seed=1), seed=1,
                           debug=True)
    assert results["seed-004"]["standby_kwh"] > 0
    assert results["spread"]["standby_kwh"] == 0


def test_claims_are_checked_before_anything_runs(tmp_path, capsys):
    claim = ('\n[[claims]]\ntext = "t"\nmetric = "{metric}"\npolicy = "seed-004"\n'
             'baseline = "{baseline}"\nhigher_is_better = false\n')
    base = 'seeds = 2\npolicies = ["seed-004", "spread"]\n' + BASE
    path = write(tmp_path, base + claim.format(metric="energy_kwh", baseline="fgd"))
    with pytest.raises(ConfigError, match=r"claims\[0\].baseline must be one of the "
                                          r"scenario's policies \(seed-004, spread\)"):
        load_scenario(path)
    path = write(tmp_path, base + claim.format(metric="energy", baseline="spread"))
    assert gpusched(["cluster", "--quiet", "--config", str(path), "--plots",
                     str(tmp_path)]) == 2
    assert "claims[0].metric must be one of energy_kwh" in capsys.readouterr().err
    path = write(tmp_path, BASE + claim.format(metric="energy_kwh", baseline="spread")
                 .replace('policy = "seed-004"', 'policy = "spread"'))
    with pytest.raises(ConfigError, match=r"claims need seeds >= 2"):
        load_scenario(path)


def test_bench_times_every_policy_of_a_scenario(tmp_path, capsys):
    path = write(tmp_path, 'policies = ["seed-004", "fgd"]\n' + BASE)
    assert gpusched(["cluster", "--bench", "--quiet", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "s: seed-004" in out and "s: fgd" in out and "Total:" in out
