"""GPU sharing, CPU and memory constraints, every policy's score, FGD's fragmentation, PWR's
power increase, the inflation experiment, and the vectorised seed against its pure reading.

Expected values are worked out by hand in the comments (scores as the FGD and PWR simulators
define them, see model/cluster/policies.py), never taken from the model's output.
"""

import math
import random

import numpy as np
import pytest

from model.checks import InvariantError
from model.cluster.config import NodeSpec
from model.cluster.fragmentation import Fragmentation, TypicalPods, typical_pods
from model.cluster.inflation import InflationRun, inflate
from model.cluster.placement import JobRequest, NodeState, rank_nodes, seed_key
from model.cluster.policies import (
    POLICY_CLASSES,
    PlacementContext,
    _fgd_rows,
    make_policy,
    power_increase,
    pwr_scores,
)
from model.cluster.power import BUILTIN_CARD_TYPES, CardType
from model.cluster.sim import ClusterSimulation
from model.cluster.state import ClusterState
from model.cluster.workload import Job

TYPES = dict(BUILTIN_CARD_TYPES)
ANY = TypicalPods((0,), (0,), (0,), (None,), (1.0,), 1.0)


def job(index, cards=1, milli=1000, cpu=0, memory=0, types=None):
    return Job(index, f"p{index}", None, cards, 10.0, types, cpu, memory,
               milli if cards else 0)


def context(nodes, typical=ANY, seed=1, weights=(200, 800), card_types=TYPES,
            tie_break="name"):
    state = ClusterState(nodes, card_types)
    return PlacementContext(state, Fragmentation(state, typical), random.Random(seed), weights,
                            tie_break)


def place(ctx, node, cards, pod):
    ctx.state.allocate(node, cards, pod)
    ctx.fragmentation.update(node)


# Hosts as the PWR table gives them (per socket busy / idle W, cores a socket).
G2 = NodeSpec("n0", ("G2",) * 8, 270.0, 20.0, 15.0, 96000, 393216, 32)
T4 = NodeSpec("n1", ("T4",) * 2, 165.0, 20.0, 15.0, 104000, 524288, 24)
V100 = NodeSpec("n2", ("V100M16",) * 4, 185.0, 20.0, 15.0, 32000, 131072, 16)


# --- GPU sharing, CPU and memory --------------------------------------------------------------

def test_pods_share_a_card_and_get_no_more_than_they_asked():
    # One node of 2 T4. a (500) and b (500) share card 0 (best fit: least room that fits);
    # c (600) does not fit card 0's 0 left, takes card 1 (400 left); a whole-card pod d then
    # fits nowhere.
    ctx = context([T4])
    policy = make_policy("best-fit")
    for pod in (job(0, milli=500), job(1, milli=500), job(2, milli=600)):
        node, cards = policy.choose(ctx, pod)
        place(ctx, node, cards, pod)
    state = ctx.state
    assert state.holders[0] == [{0: 500, 1: 500}, {2: 600}]
    assert state.left[0].tolist() == [0, 400]
    assert policy.choose(ctx, job(3)) is None
    state.release(0, (0,), job(0, milli=500))
    assert state.left[0].tolist() == [500, 400]
    state.check()


def test_cpu_and_memory_are_node_constraints():
    # Node x has the cards but not the CPU (4 vCPUs for a pod of 8), y has it all; z has CPU
    # but too little memory. Every policy must choose y.
    x = NodeSpec("x", ("T4",) * 8, 1.0, 1.0, 1.0, 4000, 1 << 20)
    y = NodeSpec("y", ("T4",) * 8, 1.0, 1.0, 1.0, 96000, 1 << 20)
    z = NodeSpec("z", ("T4",) * 8, 1.0, 1.0, 1.0, 96000, 1024)
    pod = job(0, cpu=8000, memory=4096)
    for name in POLICY_CLASSES:
        assert make_policy(name).choose(context([x, y, z]), pod)[0] == 1, name


def test_over_allocation_is_refused():
    ctx = context([T4])
    place(ctx, 0, (0,), job(0, milli=700))
    with pytest.raises(InvariantError, match="with only 300 free while job 0 holds it"):
        ctx.state.allocate(0, (0,), job(1, milli=400))
    with pytest.raises(InvariantError, match="without enough CPU"):
        ctx.state.allocate(0, (1,), job(2, cpu=200000))


def test_shared_energy_and_utilisation():
    # One T4 card (70 W busy), host 50 W busy: two 500-milli pods share it for 3600 s.
    node = NodeSpec("n", ("T4",), 50.0, 20.0, 5.0)
    pods = [Job(0, "a", 0.0, 1, 3600.0, None, 0, 0, 500),
            Job(1, "b", 0.0, 1, 3600.0, None, 0, 0, 500)]
    sim = ClusterSimulation([node], TYPES, pods, "seed-004", rng=random.Random(1),
                            standby=False, debug=True).run()
    result = sim.results()
    assert sim.assignment == {0: (0, (0,)), 1: (0, (0,))}
    assert result["busy_kwh"] == pytest.approx(120 * 3600 / 3.6e6)
    assert result["idle_kwh"] == 0 and result["card_utilisation"] == pytest.approx(1.0)


def test_power_model_by_hand():
    # T4 node: 2 cards, 104 vCPUs = 52 cores of 24 a socket = 3 sockets. A whole-card pod with
    # 4 vCPUs (2 cores): cards 70 + 10, host 1 busy socket 165 + 2 idle 20 = 285 W.
    ctx = context([T4])
    place(ctx, 0, (0,), job(0, cpu=4000))
    assert ctx.state.awake_power() == pytest.approx(285.0)
    # 60 vCPUs = 30 cores: two sockets busy.
    place(ctx, 0, (1,), job(1, cpu=56000))
    assert ctx.state.awake_power() == pytest.approx(70 + 70 + 165 * 2 + 20)
    # Proportional sharing: 300 milli of a T4 draws 10 + 0.3 x 60 = 28 W.
    state = ClusterState([T4], TYPES, shared_card="proportional")
    state.allocate(0, (0,), job(0, milli=300))
    assert state.card_power()[0].tolist() == pytest.approx([28.0, 10.0])


# --- Every policy on one small cluster --------------------------------------------------------

def loaded(typical=ANY, seed=1, weights=(200, 800), tie_break="name"):
    """n0: 8 G2 with a 3-card pod (10 vCPUs); n1: 2 free T4; n2: 4 V100M16 with a 300-milli
    pod on card 0 (2 vCPUs)."""
    ctx = context([G2, T4, V100], typical, seed, weights, tie_break=tie_break)
    place(ctx, 0, (0, 1, 2), job(100, cards=3, cpu=10000))
    place(ctx, 2, (0,), job(101, milli=300, cpu=2000))
    return ctx


POD = job(0, cpu=4000, memory=1000)
TWO_CARD_TYPICAL = TypicalPods((4000,), (1000,), (2,), (None,), (1.0,), 1.0)


@pytest.mark.parametrize("policy, expected", [
    # The seed: idle cards n0 5, n1 2, n2 3: the fullest group is n1.
    ("seed-004", 1),
    # Best-fit: 100 x (1 - 0.5 (cpu_free - 4000) / 128000 - 0.5 (gpu_free - 1000) / 8000):
    # n0 100 (1 - 0.3203 - 0.25) = 42; n1 100 (1 - 0.3906 - 0.0625) = 54;
    # n2 100 (1 - 0.1016 - 0.1688) = 72.
    ("best-fit", 2),
    # Dot-product: 100 (1 - (cpu_free / 128000 x 4000 / 128000 + gpu_free / 8000 x 1000 /
    # 8000) / 2): n0 95, n1 97, n2 96.
    ("dot-product", 1),
    # GPU clustering (tag 1-gpu): n0 holds a 3-gpu pod: 25 x 3000 // 8000 = 9; n1 empty:
    # 25 x 6000 // 8000 + 25 = 43; n2 holds a shared pod: 25 x 4300 // 8000 = 13.
    ("gpu-clustering", 1),
    # Spread (LeastAllocated on milli-GPU): n0 4000 x 100 // 8000 = 50, n1 50, n2 67.
    ("spread", 2),
    # PWR: increase n0 120 (one G2 card, an A10 in PWR's current model: 150 - 30; the busy
    # socket has room), n1 60 + 145 (a T4 card and a socket wakes), n2 270: raw -120, -205,
    # -270, min-max 100, 43, 0.
    ("pwr", 0),
])
def test_each_policy_scores_as_published(policy, expected):
    ctx = loaded(TWO_CARD_TYPICAL)
    assert make_policy(policy).choose(ctx, POD)[0] == expected


def test_pwr_increase_and_normalisation_by_hand():
    ctx = loaded()
    assert power_increase(ctx.state, POD).tolist() == pytest.approx([120.0, 205.0, 270.0])
    feasible = ctx.state.feasible(POD)
    assert pwr_scores(ctx.state, POD, feasible).tolist() == [100.0, 43.0, 0.0]


def test_cached_summaries_follow_every_change():
    # The host-power cache, the memoised card summaries and PWR's scoring of the feasible
    # rows only (speed-ups) give what a fresh computation gives, after placements and a
    # release: n0's 3-card pod (10 vCPUs: one socket active) and n2's shared pod.
    ctx = loaded()
    state = ctx.state
    assert state.current_host_power().tolist() == state.host_power().tolist()
    fresh = ClusterState(state.specs, TYPES)
    for node in range(state.size):
        fresh.left[node] = state.left[node]
        fresh._summarise(node)
        assert (fresh.idle_count[node], fresh.max_partial[node], fresh.idle_power[node]) == (
            state.idle_count[node], state.max_partial[node], state.idle_power[node])
    state.release(0, (0, 1, 2), job(100, cards=3, cpu=10000))
    assert state.current_host_power().tolist() == state.host_power().tolist()
    assert state.idle_count[0] == 8
    feasible = np.array([True, False, True])
    rows = power_increase(state, POD, np.flatnonzero(feasible))
    assert rows.tolist() == power_increase(state, POD)[feasible].tolist()


def test_random_ties_are_drawn_among_the_best():
    # GPU packing: n1 is all free (33 - 2 = 31); n0 and n2 open one free card (50 - 1 = 49):
    # a tie, broken at random under tie_break = "random", to the smallest name (n0) under
    # the artifact's rule. Bin-pack: (used + asked) x 100 // capacity: n0 4000 -> 50, n1 50,
    # n2 1300 -> 32: n0 and n1 tie.
    for policy, tied in (("gpu-packing", {0, 2}), ("bin-pack", {0, 1})):
        picks = {make_policy(policy).choose(loaded(seed=seed, tie_break="random"), POD)[0]
                 for seed in range(30)}
        assert picks == tied, policy
        picks = {make_policy(policy).choose(loaded(seed=seed), POD)[0] for seed in range(5)}
        assert picks == {0}, policy


def test_fgd_score_by_hand_and_its_tie_breaks():
    # One typical pod of 2 whole cards (4 vCPUs). Fragmentation before: n0 0 (5 free cards
    # host it, no card below 1000 has room), n1 0, n2 700 (card 0's 700 free is below a
    # card). After one more card: n0 0, n2 700 (unchanged): score int(100 sigmoid(0)) = 50;
    # n1 keeps 1 card and cannot host the typical pod: 1000 fragmented, score
    # int(100 / (1 + e)) = 26.
    ctx = loaded(TWO_CARD_TYPICAL)
    assert ctx.fragmentation.node.tolist() == [0.0, 0.0, 700.0]
    scores, _ = _fgd_rows(ctx, POD, np.arange(3))
    assert scores.tolist() == [50.0, 26.0, 50.0]
    picks = {make_policy("fgd").choose(loaded(TWO_CARD_TYPICAL, seed, tie_break="random"),
                                       POD)[0] for seed in range(30)}
    assert picks == {0, 2}
    # The artifact's rule: the smaller name, n0.
    assert make_policy("fgd").choose(loaded(TWO_CARD_TYPICAL), POD)[0] == 0
    # fgd-seed breaks the tie by the seed's order: n2 has fewer idle cards (3 < 5).
    assert make_policy("fgd-seed").choose(loaded(TWO_CARD_TYPICAL), POD)[0] == 2
    # pwr-fgd: 200 x (100, 43, 0) + 800 x (50, 26, 50) = 60000, 29400, 40000.
    assert make_policy("pwr-fgd").choose(loaded(TWO_CARD_TYPICAL), POD)[0] == 0


def test_fragmentation_of_a_node_by_hand():
    # Two cards with 1000 and 300 free, 7000 milli-CPU free. Typical pods: half ask 500 of
    # one card (1000 milli-CPU), half are CPU-only. The first: the node hosts it, fragments
    # are the 300 on the card below 500: 0.5 x 300. The CPU-only one: every free milli-GPU is
    # a fragment: 0.5 x 1300. Total 800.
    typical = TypicalPods((1000, 2000), (500, 0), (1, 0), (None, None), (0.5, 0.5), 1.0)
    node = NodeSpec("n", ("T4", "T4"), 1.0, 1.0, 1.0, 8000, 65536)
    ctx = context([node], typical)
    place(ctx, 0, (1,), job(0, milli=700, cpu=1000))
    assert ctx.fragmentation.node[0] == pytest.approx(800.0)
    # A shared pod of 400 (1000 milli-CPU) on card 0: 600 and 300 left, 6000 CPU: 0.5 x 300 +
    # 0.5 x 900 = 600; score int(100 sigmoid(0.2)) = 54; card 1 (300) cannot take it.
    shared = job(1, milli=400, cpu=1000)
    assert ctx.fragmentation.after(shared, np.array([0]))[0, 0] == pytest.approx(600.0)
    assert np.isnan(ctx.fragmentation.after(shared, np.array([0]))[0, 1])
    scores, cards = _fgd_rows(ctx, shared, np.array([0]))
    assert (scores[0], cards[0]) == (54.0, 0)
    # A whole card: 0 and 300 left; the first typical pod no longer fits: all 300 is
    # fragmented for both: 300. Score int(100 sigmoid(0.5)) = 62.
    whole = job(2, cpu=1000)
    assert ctx.fragmentation.after(whole, np.array([0]))[0] == pytest.approx(300.0)
    assert _fgd_rows(ctx, whole, np.array([0]))[0][0] == 62.0
    assert math.trunc(100 / (1 + math.exp(-0.5))) == 62


def test_hypothetical_fragmentation_equals_a_fresh_computation():
    # Random states and pods: the O(typical) update of a hypothetical placement equals
    # placing the pod and recomputing from scratch.
    rng = random.Random(5)
    nodes = [NodeSpec(f"n{i}", (rng.choice(["T4", "G2"]),) * rng.choice([1, 2, 4, 8]), 1.0,
                      1.0, 1.0, 32000, 1 << 20) for i in range(6)]
    pods = []
    for i in range(60):
        cards = rng.choice([0, 1, 1, 2])
        milli = rng.choice([1000, 300, 550]) if cards == 1 else 1000
        pods.append(job(i, cards=cards, milli=milli, cpu=rng.choice([0, 2000, 9000])))
    typical = typical_pods(pods, 0.9)
    ctx = context(nodes, typical)
    policy = make_policy("random")
    for pod in pods:
        rows = np.flatnonzero(ctx.state.feasible(pod))
        if rows.size == 0:
            continue
        after = ctx.fragmentation.after(pod, rows)
        node, cards = policy.choose(ctx, pod)
        column = cards[0] if pod.shared else None
        expected = after[list(rows).index(node)] if column is None else \
            after[list(rows).index(node), column]
        place(ctx, node, cards, pod)
        fresh = Fragmentation(ctx.state, typical)
        assert fresh.node[node] == pytest.approx(expected)
        assert fresh.node == pytest.approx(ctx.fragmentation.node)


def test_typical_pods_cover_the_popularity():
    # 6 of shape A, 3 of B, 1 of C: 90 % needs A and B; 95 % all three.
    pods = ([job(i, milli=500) for i in range(6)] + [job(i, cards=2) for i in range(6, 9)]
            + [job(9, cards=0, cpu=1000)])
    assert typical_pods(pods, 0.9).frequency == pytest.approx((6 / 9, 3 / 9))
    assert len(typical_pods(pods, 0.95)) == 3 and typical_pods(pods, 0.95).covered == 1.0


# --- The seed on shared cards, and against its pure reading ------------------------------------

def test_seed_keeps_idle_cards_idle_for_a_shared_pod():
    # m: 4 T4, one shared pod of 600 on card 2 (400 left); n: 4 free T4 (no pod: its CPU
    # standby 20 W counts). A pod of 300: on m it fits card 2, all 3 idle cards stay idle
    # (group 3, power 210); on n it must open a card (group 3, power 210 + 20). The seed takes
    # m and card 2 (the shared card with least room).
    m = NodeSpec("m", ("T4",) * 4, 100.0, 20.0, 5.0)
    n = NodeSpec("n", ("T4",) * 4, 100.0, 20.0, 5.0)
    ctx = context([n, m])
    place(ctx, 1, (2,), job(0, milli=600))
    assert make_policy("seed-004").choose(ctx, job(1, milli=300)) == (1, (2,))
    # PWR also keeps it on the busy card (it adds no power there).
    assert make_policy("pwr").choose(ctx, job(1, milli=300)) == (1, (2,))


def test_seed_counts_the_idle_cards_that_would_stay_idle():
    # m: 4 T4 with a shared card that fits (3 stay idle, group 3); k: 4 T4, one taken whole,
    # no shared card: the pod opens an idle card and 2 stay idle (group 2). Fullest first: k,
    # on its cheapest idle card (slot 1). Reading idle cards before the placement would tie
    # the two at 3 and take m, the first node.
    m = NodeSpec("m", ("T4",) * 4, 100.0, 20.0, 5.0)
    k = NodeSpec("k", ("T4",) * 4, 100.0, 20.0, 5.0)
    ctx = context([m, k])
    place(ctx, 0, (0,), job(0, milli=600))
    place(ctx, 1, (0,), job(1))
    assert make_policy("seed-004").choose(ctx, job(2, milli=300)) == (1, (1,))


def test_vectorised_seed_matches_the_pure_key_on_random_clusters():
    # An independent check: the seed's pure key functions (the kube-scheduler reading) and
    # the vectorised policy choose the same node for whole-card pods on random states.
    rng = random.Random(11)
    card_types = {"A100": CardType("A100", 400.0, 50.0, 10.0),
                  "T4": CardType("T4", 70.0, 10.0, 2.0), "V100": CardType("V100", 300.0, 30.0,
                                                                          5.0)}
    for trial in range(40):
        nodes = [NodeSpec(f"n{i}", tuple(rng.choice(list(card_types)) for _ in
                                         range(rng.choice([2, 4, 8]))),
                          100.0, rng.choice([10.0, 25.0, 60.0]), 5.0) for i in range(7)]
        ctx = context(nodes, card_types=card_types, seed=trial)
        for index in range(rng.randrange(0, 12)):
            pod = job(index, cards=1)
            choice = make_policy("random").choose(ctx, pod)
            if choice:
                place(ctx, *choice, pod)
        types = rng.choice([None, frozenset({"T4"}), frozenset({"A100", "V100"})])
        pod = job(99, cards=rng.choice([1, 2, 3]), types=types)
        state = ctx.state
        views = [NodeState(spec.name, len(spec.cards),
                           tuple((spec.cards[slot], card_types[spec.cards[slot]].busy_w)
                                 for slot in range(len(spec.cards))
                                 if state.left[row, slot] == 1000),
                           spec.cpu_standby_w) for row, spec in enumerate(nodes)]
        ranked = rank_nodes(views, JobRequest(pod.cards, types), seed_key)
        choice = make_policy("seed-004").choose(ctx, pod)
        assert (choice[0] if choice else None) == (ranked[0] if ranked else None), trial


# --- The inflation experiment ------------------------------------------------------------------

def test_inflation_resamples_to_the_target_and_shuffles():
    # Requests 1000, 500 and 0 milli-GPU (1500 in all); target 1.0 x 4000: pods are appended
    # until the next draw would pass 4000, so the total ends within one pod of it.
    workload = [job(0), job(1, milli=500), job(2, cards=0, cpu=1000)]
    pods = inflate(workload, 4000, 1.0, random.Random(3))
    total = sum(pod.gpu_request_milli for pod in pods)
    assert 3000 < total <= 4000 and len(pods) > 3
    assert [pod.index for pod in pods] == list(range(len(pods)))
    assert all(pod.arrival_s is None for pod in pods)
    assert sum("-tuned-" in pod.name for pod in pods) == len(pods) - 3
    assert pods == inflate(workload, 4000, 1.0, random.Random(3))
    # More than the target: random pods are removed until it fits.
    assert sum(pod.gpu_request_milli for pod in inflate(workload * 4, 1000, 1.0,
                                                        random.Random(1))) <= 1000
    with pytest.raises(ValueError, match="every pod of this workload is CPU-only"):
        inflate([job(0, cards=0, cpu=1000)], 4000, 1.3, random.Random(1))


def test_inflation_run_by_hand():
    # One node of 2 T4; pods: 600 and 600 shared, then a whole card. Best fit puts the second
    # 600 on card 1 (card 0 has 400 left), so the whole-card pod fails with 1200 of 2000
    # milli-GPU allocated: the GPU allocation ratio at the first failure is 0.6. The pods
    # asked for 2200: the 100 % point came with the third pod.
    pods = [job(0, milli=600), job(1, milli=600), job(2)]
    run = InflationRun([T4], TYPES, pods, "best-fit", rng=random.Random(1), debug=True).run()
    result = run.results()
    assert result["allocation_at_first_failure"] == pytest.approx(0.6)
    assert result["arrived_at_first_failure"] == pytest.approx(110.0)
    assert result["unplaced"] == 1 and result["unplaced_gpus"] == 1.0
    assert result["allocation_at_end"] == pytest.approx(0.6)
    # Power at the end: two busy T4 (140 W) and one socket woken by the pods (no CPU asked,
    # but a node with pods has one active socket): 165 + 2 x 20.
    assert result["power_kw_end"] == pytest.approx((140 + 165 + 40) / 1000)
    arrived = [point[0] for point in result["curve"]]
    assert arrived == sorted(arrived) and arrived[-1] == pytest.approx(110.0)


@pytest.mark.parametrize("policy", sorted(POLICY_CLASSES))
def test_inflation_keeps_every_invariant(policy):
    # A v2023-like mix on a small mixed cluster; debug checks after every pod.
    from model.cluster.config import AlibabaWorkload
    from model.cluster.synthetic import alibaba_jobs, alibaba_nodes

    nodes = alibaba_nodes(0.01)
    workload = alibaba_jobs(AlibabaWorkload(jobs=40, pinned_fraction=0.3), random.Random(2),
                            timed=False)
    capacity = sum(len(node.cards) for node in nodes) * 1000
    pods = inflate(workload, capacity, 1.3, random.Random(2))
    result = InflationRun(nodes, TYPES, pods, policy, rng=random.Random(2),
                          debug=True).run().results()
    assert result["placed"] + result["unplaced"] == len(pods)
    assert 0 < result["allocation_at_end"] <= 1
