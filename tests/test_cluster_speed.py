"""The speed-ups of the cluster model (memos, caches keyed on node versions, summaries kept
incrementally) change no result: every policy, timed and inflation, on a slice of the real
Alibaba v2023 trace gives the placements and figures it gave before them (digests recorded
with the code of commit 14b9f70, before the speed-ups), and the caches equal fresh
computations after random placements and releases. The figures are the same bits on every
CPU: numpy's BLAS picks its kernel per CPU at run time, and no result goes through it.
"""

import hashlib
import json
import os
import platform
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from model.cluster.config import TraceSource
from model.cluster.fragmentation import Fragmentation, typical_pods
from model.cluster.inflation import InflationRun, inflate
from model.cluster.policies import POLICY_CLASSES, PlacementContext, power_increase, pwr_scores
from model.cluster.power import BUILTIN_CARD_TYPES, BUILTIN_HOSTS
from model.cluster.repro import DATA, NODES
from model.cluster.sim import ClusterSimulation
from model.cluster.state import ClusterState
from model.cluster.trace import read_nodes, read_pods

#: sha256 (first 16 hex digits) of each policy's results and placements on the slice below,
#: timed then inflation. The timed digests are those of the code before the speed-ups (commit
#: 14b9f70). The inflation digests were re-recorded when the fragmentation's weighted sums
#: stopped going through the BLAS (model.cluster.state.weighted_sum): against the
#: digests of 14b9f70 (taken where OpenBLAS ran its Haswell kernel) every placement and every
#: integer is the same, and the fragmentation figures differ in the last bit only (relative
#: difference at most 4.8e-16); on a CPU where OpenBLAS picks its SkylakeX kernel the old sums
#: gave other digests, and pwr-fgd other placements (test_results_do_not_depend_on_the_blas).
PINNED = {
    'best-fit': ['1c67c2292ca56e11', 'dfd537547b47fe4d'],
    'bin-pack': ['27d2f12e1c20ebd3', 'bd618a752a2ce85f'],
    'dot-product': ['1eaecafc4dc12d3b', '0f5a91948a23478f'],
    'fgd': ['225580059f4e9aac', 'cdc897d75ef2d6ee'],
    'fgd-seed': ['949f3c4c68008b69', 'c3fc6147d3e82b5e'],
    'gpu-clustering': ['fe0f76e895854b9d', 'edd22175572aac77'],
    'gpu-packing': ['1bf0beaba067f73b', 'ac92462934091362'],
    'power-first': ['84aebebadb7c49e8', '7329969d8c1662e3'],
    'pwr': ['306f96c9c1cba721', 'be21d976e17ca86b'],
    'pwr-fgd': ['31479712cf0164eb', 'ae3b3737518b621c'],
    'random': ['6ce7c35dfd46fcd6', 'a3562bfe5a32acc3'],
    'seed-004': ['7b5aac5967a505a9', '3b9893b01b55f88e'],
    'spread': ['2081561a83b2748e', '1bf8a0d53ef2b632'],
}


def _slice():
    """Every 16th node of the real node list (76 nodes, 386 GPUs), the first 800 pods of the
    default list (timed) and its first 1,000 pods inflated to 130 % of the slice (seed 1);
    the typical pods of the whole list."""
    source = TraceSource(pods=DATA / "openb_pod_list_default.csv", nodes=DATA / NODES)
    card_types = dict(BUILTIN_CARD_TYPES)
    nodes, _ = read_nodes(source.nodes, card_types, BUILTIN_HOSTS, source)
    nodes = nodes[::16]
    jobs, _ = read_pods(source.pods, source, timed=True)
    untimed, _ = read_pods(source.pods, source, timed=False)
    typical = typical_pods(untimed)
    capacity = sum(len(node.cards) for node in nodes) * 1000
    pods = inflate(untimed[:1000], capacity, 1.3, random.Random(1))
    return nodes, card_types, jobs[:800], pods, typical


def _digest(results: dict, assignment: dict) -> str:
    results = {key: value for key, value in results.items()}
    results["assignment"] = sorted((index, node, list(cards))
                                   for index, (node, cards) in assignment.items())
    text = json.dumps(results, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def digests(policy: str) -> list[str]:
    """``[timed, inflation]`` digests of ``policy`` on :func:`_slice`."""
    nodes, card_types, jobs, pods, typical = _slice()
    found = []
    for experiment, workload in ((ClusterSimulation, jobs), (InflationRun, pods)):
        run = experiment(nodes, card_types, workload, policy, rng=random.Random(1),
                         typical=typical).run()
        found.append(_digest(run.results(), run.assignment))
    return found


@pytest.mark.parametrize("policy", sorted(POLICY_CLASSES))
def test_results_are_those_from_before_the_speed_ups(policy):
    assert digests(policy) == PINNED[policy]


#: OpenBLAS kernels every x86-64 CPU runs (generic and SSE4.2), whose dot products add in different
#: orders: with the fragmentation's sums as ``@`` (before weighted_sum), pwr-fgd's inflation
#: digest differed between them, as it did between Haswell and SkylakeX.
BLAS_KERNELS = ("Katmai", "Nehalem")


def _openblas_x86() -> bool:
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return ("openblas" in str(blas.get("name", "")).lower()
            and platform.machine().lower() in ("x86_64", "amd64"))


@pytest.mark.skipif(not _openblas_x86(), reason="numpy is not built on OpenBLAS here, or not "
                    "for x86-64: OPENBLAS_CORETYPE cannot choose these kernels")
def test_results_do_not_depend_on_the_blas():
    # The same run in fresh interpreters, each with OpenBLAS forced to another kernel.
    tests = Path(__file__).parent
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import test_cluster_speed as t; "
              "print(t.digests('pwr-fgd')[1])")
    found = {}
    for kernel in BLAS_KERNELS:
        env = dict(os.environ, OPENBLAS_CORETYPE=kernel, OPENBLAS_VERBOSE="2")
        run = subprocess.run([sys.executable, "-c", script, str(tests)], env=env,
                             cwd=tests.parent, capture_output=True, text=True, check=True)
        # OPENBLAS_VERBOSE=2 makes OpenBLAS name the kernel it runs: the one asked for.
        assert f"Core: {kernel}" in run.stdout + run.stderr, (kernel, run.stderr)
        found[kernel] = run.stdout.split()[-1]
    assert set(found.values()) == {PINNED["pwr-fgd"][1]}, found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_caches_equal_fresh_computations(seed):
    # Random placements and releases on a slice of the real cluster; after each, the cached
    # quantities equal what a fresh computation from the cards gives.
    nodes, card_types, _, pods, typical = _slice()
    rng = random.Random(seed)
    state = ClusterState(nodes, card_types)
    fragmentation = Fragmentation(state, typical)
    ctx = PlacementContext(state, fragmentation, rng)
    policy = POLICY_CLASSES["pwr"]()
    placed = []
    for job in pods[:300]:
        if placed and rng.random() < 0.3:
            node, cards, old = placed.pop(rng.randrange(len(placed)))
            state.release(node, cards, old)
            fragmentation.update(node)
        feasible = state.feasible(job)
        if feasible.any():
            scores = pwr_scores(state, job, feasible)
            rows = np.flatnonzero(feasible)
            fresh = np.trunc(-power_increase(state, job, rows))
            if fresh.max() > fresh.min():
                expected = (fresh - fresh.min()) * 100 // (fresh.max() - fresh.min())
                assert scores[rows].tolist() == expected.tolist()
            node, cards = policy.choose(ctx, job)
            state.allocate(node, cards, job)
            fragmentation.update(node)
            placed.append((node, cards, job))
        assert state.free_milli == int(state.left.sum())
        assert fragmentation.total() == float(fragmentation.node.sum())
        fresh_frag = Fragmentation(state, typical)
        assert fresh_frag.below.tolist() == fragmentation.below.tolist()
        assert fresh_frag.fitting.tolist() == fragmentation.fitting.tolist()
        assert fresh_frag.node == pytest.approx(fragmentation.node)
    state.check()
