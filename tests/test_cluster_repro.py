"""The FGD artifact's rules (ties to the smallest node name in the seed's shuffled node
order, best-fit's normalisation, the
workload's shuffle-then-tune order, the artifact's curve discretisation, PWR's current power
constants) and the reproduction of its published curves on the real Alibaba v2023 trace.

Hand-worked expectations in the comments; the reproduction compares with the artifact's own
published numbers (tests/data/alibaba-v2023/, Apache-2.0).
"""

import random

import numpy as np
import pytest

from model.cluster.config import NodeSpec
from model.cluster.fragmentation import Fragmentation, TypicalPods, typical_pods
from model.cluster.inflation import InflationRun, artifact_curve, inflate
from model.cluster.policies import (
    PlacementContext,
    make_policy,
    normalize_scores,
    shuffled_rank,
)
from model.cluster.power import BUILTIN_CARD_TYPES
from model.cluster.repro import (
    ARTIFACT_POLICIES,
    DATA,
    LISTS,
    compare,
    load_expected,
    run_curves,
)
from model.cluster.state import ClusterState
from model.cluster.workload import Job

TYPES = dict(BUILTIN_CARD_TYPES)
ANY = TypicalPods((0,), (0,), (0,), (None,), (1.0,), 1.0)


def job(index, cards=1, milli=1000, cpu=0, name=None):
    return Job(index, name or f"p{index:03d}", None, cards, 10.0, None, cpu, 0,
               milli if cards else 0)


def node(name, cards=2):
    return NodeSpec(name, ("T4",) * cards, 165.0, 20.0, 15.0, 64000, 1 << 20, 24)


def context(nodes, tie_break="name", seed=1):
    state = ClusterState(nodes, TYPES)
    return PlacementContext(state, Fragmentation(state, ANY), random.Random(seed),
                            tie_break=tie_break)


# --- Typical pods ------------------------------------------------------------------------

def test_typical_pods_are_keyed_by_the_written_gpu_spec():
    # The artifact keys a typical pod by its GpuType text: "V100M16|V100M32|V100M32" (2
    # pods) is a shape of its own beside "V100M16|V100M32" (3), not one of 5; both match the
    # same cards. Equal counts order by the text, larger first (its reversed sort).
    def typed(index, spec):
        return Job(index, f"p{index}", None, 1, 10.0, frozenset(spec.split("|")), 1000, 0,
                   1000, spec)
    jobs = ([typed(i, "V100M16|V100M32") for i in range(3)]
            + [typed(3 + i, "V100M16|V100M32|V100M32") for i in range(2)])
    typical = typical_pods(jobs, 1.0)
    assert typical.frequency == (0.6, 0.4)
    assert typical.types == (frozenset({"V100M16", "V100M32"}),) * 2


# --- Ties --------------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ["best-fit", "dot-product", "gpu-packing",
                                    "gpu-clustering", "fgd", "pwr"])
def test_equal_scores_go_to_the_smallest_node_name(policy):
    # Three identical empty nodes listed as c, a, b: every policy scores them alike, so the
    # pod goes to "a", the smallest name, at index 1 (the artifact's selectHost).
    ctx = context([node("c"), node("a"), node("b")])
    for seed in range(5):
        ctx.rng.seed(seed)
        assert make_policy(policy).choose(ctx, job(0))[0] == 1


def test_random_tie_break_is_an_option():
    # The same three nodes with tie_break = "random": over 60 seeds every node is chosen.
    chosen = set()
    for seed in range(60):
        ctx = context([node("c"), node("a"), node("b")], tie_break="random", seed=seed)
        chosen.add(make_policy("best-fit").choose(ctx, job(0))[0])
    assert chosen == {0, 1, 2}
    with pytest.raises(ValueError, match="tie_break"):
        context([node("a")], tie_break="first")


@pytest.mark.parametrize("policy", ["gpu-packing", "gpu-clustering"])
def test_cpu_only_pods_fill_the_lowest_named_node(policy):
    # CPU-only pods score 0 (MinNodeScore) on every node under packing and clustering, so
    # all tie: each goes to the smallest-named node that still has the CPU. Nodes of 64
    # vCPUs, pods of 30: pods 0 and 1 on "a" (index 2), pods 2, 3 on "b", pod 4 on "c".
    ctx = context([node("c"), node("b"), node("a")])
    chosen = []
    for index in range(5):
        pod = job(index, cards=0, cpu=30000)
        target, cards = make_policy(policy).choose(ctx, pod)
        ctx.state.allocate(target, cards, pod)
        ctx.fragmentation.update(target)
        chosen.append(target)
    assert chosen == [2, 2, 1, 1, 0]


def test_shuffled_rank_is_the_artifacts_renaming():
    # The artifact sorts the nodes by name and prefixes the i-th with perm[i]: node "b"
    # (1st by name of a, b, c... here listed c, a, b) gets perm[1]. Independent of the
    # node list's order; a permutation.
    perm = [0, 1, 2]
    random.Random(7).shuffle(perm)
    rank = shuffled_rank(["c", "a", "b"], random.Random(7))
    assert rank.tolist() == [perm[2], perm[0], perm[1]]
    assert shuffled_rank(["a", "b", "c"], random.Random(7)).tolist() == perm
    with pytest.raises(ValueError, match="node_rank"):
        PlacementContext(ClusterState([node("a"), node("b")], TYPES), None,
                         random.Random(1), node_rank=np.array([0, 0]))


@pytest.mark.parametrize("policy", ["gpu-packing", "gpu-clustering", "best-fit", "fgd"])
def test_ties_default_to_the_seeds_shuffled_node_order(policy):
    # The default rule is the artifact's: its simulator renames the nodes in a random order
    # (one per seed), so equal scores go to a random but fixed node, not to "a". Over 30
    # seeds of three identical nodes every node is chosen; within one order every pod of a
    # tie goes to the node of rank 0 (CPU-only pods of 30 vCPUs: two fill it first).
    chosen = set()
    for seed in range(30):
        rank = shuffled_rank(["c", "a", "b"], random.Random(seed))
        run = InflationRun([node("c"), node("a"), node("b")], TYPES,
                           [job(0, cards=0, cpu=30000), job(1, cards=0, cpu=30000),
                            job(2, cards=0, cpu=30000), job(3)], policy,
                           rng=random.Random(99), typical=ANY, node_rank=rank).run()
        first = int(np.argmin(rank))
        assert [run.assignment[index][0] for index in (0, 1)] == [first, first]
        chosen.add(first)
        assert run.context.tie_break == "shuffled"
    assert chosen == {0, 1, 2}


def test_best_fit_scores_are_normalised_as_the_artifact_does():
    # Raw scores 90, 91, 95, 99 on feasible nodes (the last node infeasible, raw 100):
    # (s - 90) * 100 // 9 = 0, 11, 55, 100; infeasible nodes do not set the range.
    raw = np.array([90.0, 91.0, 95.0, 99.0, 100.0])
    feasible = np.array([True, True, True, True, False])
    assert normalize_scores(raw, feasible)[:4].tolist() == [0, 11, 55, 100]
    assert normalize_scores(np.full(3, 7.0), np.ones(3, bool)).tolist() == [0, 0, 0]
    # Truncation merges 98 and 99 of a 0..199 range into one normalised score (49): a tie
    # the smallest name then decides.
    merged = normalize_scores(np.array([0.0, 98.0, 99.0, 199.0]), np.ones(4, bool))
    assert merged.tolist() == [0, 49, 49, 100]


# --- The workload ------------------------------------------------------------------------

def test_inflation_shuffles_first_and_appends_copies_at_the_end():
    # 10 pods of one GPU, a cluster of 10 GPUs, ratio 1.5: shuffled originals first, then
    # 5 copies (the artifact tunes after shuffling, so copies are never mixed in).
    pods = [job(index) for index in range(10)]
    out = inflate(pods, 10_000, 1.5, random.Random(3))
    assert len(out) == 15
    assert sorted(pod.name for pod in out[:10]) == [pod.name for pod in pods]
    assert all("-tuned-" in pod.name for pod in out[10:])
    assert [pod.index for pod in out] == list(range(15))


def test_inflation_stops_on_one_cards_share_as_the_artifact_compares():
    # One pod of 2 whole GPUs (2,000 milli) and a 2-GPU cluster at ratio 2.0 (target 4,000):
    # the artifact compares total + one card's share (1,000) with the target, so after one
    # copy (total 4,000) the next draw is refused (5,000 > 4,000). At ratio 2.5 (target
    # 5,000) a second copy is accepted (4,000 + 1,000 <= 5,000), asking for 6,000 in all,
    # where comparing the whole request (4,000 + 2,000 > 5,000) would refuse it.
    two = [job(0, cards=2)]
    assert len(inflate(two, 2000, 2.0, random.Random(1))) == 2
    assert len(inflate(two, 2000, 2.5, random.Random(1))) == 3


def test_inflation_removes_pods_when_the_list_asks_for_too_much():
    pods = [job(index) for index in range(10)]
    out = inflate(pods, 4000, 1.0, random.Random(2))
    assert sum(pod.gpu_request_milli for pod in out) == 4000
    assert not any("-tuned-" in pod.name for pod in out)


def test_artifact_curve_takes_the_mean_of_events_rounded_to_each_percent():
    # Capacity 1,000; events at arrived 0, 4 (0.4 % -> 0), 6 (0.6 % -> 1), 25 (2.5 % -> 2,
    # half to even), 40 (4 %): point 0 = mean(10, 20) = 15; point 1 = 30; point 2 = 40;
    # point 3 has no event of its own, so it averages those rounded to 2..4: (40 + 50) / 2.
    arrived = np.array([0, 4, 6, 25, 40])
    values = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    curve = artifact_curve(arrived, values, 1000, points=7)
    assert curve[:5] == [15.0, 30.0, 40.0, 45.0, 50.0]
    assert curve[6] is None


# --- Power ---------------------------------------------------------------------------------

def test_undisclosed_models_use_pwr_current_constants():
    # PWR's plugin models G2 as an A10 (150 / 30 W) and G3 as an A100 (400 / 50 W).
    assert (TYPES["G2"].busy_w, TYPES["G2"].idle_w) == (150.0, 30.0)
    assert (TYPES["G3"].busy_w, TYPES["G3"].idle_w) == (400.0, 50.0)
    assert (TYPES["A10"].busy_w, TYPES["A100"].idle_w) == (150.0, 50.0)


# --- The reproduction ---------------------------------------------------------------------

def test_expected_curves_are_the_artifacts():
    allocation = load_expected(DATA / "expected_allocation_fgd_artifact.csv")
    assert {key[0] for key in allocation} == set(LISTS)
    assert {key[1] for key in allocation} == set(ARTIFACT_POLICIES.values())
    assert all(curves.shape == (10, 131) for curves in allocation.values())
    # The artifact's FGD on the default list, mean at 100 % arrived: 95.23 (README table).
    assert allocation[("openb_pod_list_default", "fgd")][:, 100].mean() == pytest.approx(
        95.23, abs=0.01)


#: Where seed 42 is not the artifact's curve for curve: the random policy, whose own draws are
#: Python's. (FGD on gpuspec33 differs on 3 of the 10 seeds, not on 42: docs/cluster.md.)
NOT_IDENTICAL = {("openb_pod_list_default", "random"), ("openb_pod_list_gpushare40", "random"),
                 ("openb_pod_list_gpuspec33", "random")}


@pytest.mark.parametrize("pod_list", LISTS)
def test_seed_42_is_the_artifacts_seed_42(pod_list):
    """Go's stream drawn in the artifact's order (model.cluster.repro, REFLECTOR_DRAWS): the
    artifact's seed 42, every point of every curve equal to its published values (rounded to
    0.01; fragmentation rates to 0.1) but for :data:`NOT_IDENTICAL`. Python's streams
    (``rng = "python"``) miss: another permutation."""
    policies = tuple(ARTIFACT_POLICIES.values())
    curves = run_curves(pod_list, policies, 42)
    allocation = load_expected(DATA / "expected_allocation_fgd_artifact.csv")
    fragmentation = load_expected(DATA / "expected_fragmentation_fgd_artifact.csv")
    for policy in policies:
        key = (pod_list, policy)
        if key in NOT_IDENTICAL:
            continue
        mine = np.array([np.nan if v is None else v for v in curves[policy]["allocation"]])
        worst = float(np.nanmax(np.abs(mine - allocation[key][0])))
        assert worst <= 0.011, (key, worst)
        frag = np.array([np.nan if v is None else v for v in curves[policy]["fragmentation_rate"]])
        assert float(np.nanmax(np.abs(frag - fragmentation[key][0]))) <= 0.1, key
    python = run_curves(pod_list, ("best-fit",), 42, rng="python")["best-fit"]["allocation"]
    assert np.nanmax(np.abs(np.array(python, float) - allocation[(pod_list, "best-fit")][0])) \
        > 0.011


@pytest.mark.parametrize("pod_list", LISTS)
def test_one_seed_reproduces_the_artifact(pod_list):
    """One seed of each list: every policy within max(1, 4 x the artifact's seed-to-seed
    standard deviation) of the artifact's ten-seed mean at 100 % and 130 % arrived, the
    fragmentation rate at 80 % within max(2, 4 sd), and no pair of policies the artifact
    separates by 1 point or more in the other order. Why: one seed of ours is one draw from
    our own spread, which over seeds 42-51 is 1.15 times the artifact's (median; up to 2.4
    times at the steep 100 % point of gpuspec33), so 4 artifact sd is about 3 of ours at the
    worst point. The rules this test guards move values by far more: random ties cost FGD 5
    points, CPU-only pods spread at random cost packing and clustering about 3 (ties by the
    node list's names instead of the artifact's shuffled ones, 0.3-1.1, which the ten-seed
    check at 0.5 point, ``make cluster-repro``, catches)."""
    policies = tuple(ARTIFACT_POLICIES.values())
    curves = run_curves(pod_list, policies, 42)
    ours = {(pod_list, policy): {name: np.array([[np.nan if value is None else value
                                                  for value in curves[policy][name]]])
                                 for name in ("allocation", "fragmentation_rate")}
            for policy in policies}
    allocation = load_expected(DATA / "expected_allocation_fgd_artifact.csv")
    fragmentation = load_expected(DATA / "expected_fragmentation_fgd_artifact.csv")
    result = compare(ours, allocation, fragmentation, tolerance=1.0,
                     fragmentation_tolerance=2.0, per_seed_sds=4.0)
    assert not result["failures"], "\n".join(result["failures"])
