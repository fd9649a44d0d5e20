"""Seed 004: power-aware GPU cluster placement, against the Alibaba v2023 trace's published
policies (FGD and its baselines, PWR) and the Kubernetes defaults.

A model of a GPU cluster with cards of several types that pods share (milli-GPU), CPU and
memory, and a power table for every GPU model of the trace. Two experiments: a discrete-event
replay with arrival times and durations (energy, queueing, fragmentation over time), and the
FGD paper's workload inflation (submit pods until the cluster is full: GPU allocation,
fragmentation, power). The seed's policy groups feasible nodes by idle-card count (fullest
first), orders each group by the idle cards' power, charges a fully idle node its CPU standby
power, and takes the first; idle cards and nodes go to low-power standby.

Modules: :mod:`~model.cluster.placement` (the seed's pure key functions, usable in a real
scheduler), :mod:`~model.cluster.policies` (every policy, vectorised over nodes),
:mod:`~model.cluster.state` (resources and power), :mod:`~model.cluster.fragmentation` (FGD's
measure), :mod:`~model.cluster.power` (the sourced power tables), :mod:`~model.cluster.config`
(scenario files), :mod:`~model.cluster.workload` (pods), :mod:`~model.cluster.trace` (the
v2023 readers), :mod:`~model.cluster.synthetic` (trace-shaped synthetic cluster and pods),
:mod:`~model.cluster.sim` (the timed experiment), :mod:`~model.cluster.inflation` (the
inflation experiment), :mod:`~model.cluster.cli` (``gpusched cluster``),
:mod:`~model.cluster.api` (:func:`run` from Python), :mod:`~model.cluster.repro` (the FGD
artifact's published curves reproduced) and :mod:`~model.cluster.remeasure` (the seed's
claims under the artifact's rules). See ``docs/cluster.md``.
"""

from model.cluster import api as _api
from model.cluster.api import ClusterResult
from model.cluster.cli import add_arguments, prepare, run_scenario, savings
from model.cluster.config import Scenario, load_scenario
from model.cluster.inflation import InflationRun, inflate
from model.cluster.placement import (
    POLICIES,
    JobRequest,
    NodeState,
    choose_node,
    kube_scores,
    rank_nodes,
    seed_key,
)
from model.cluster.policies import POLICY_CLASSES, make_policy
from model.cluster.sim import ClusterSimulation, InvariantError
from model.cluster.workload import Job

__all__ = [
    "ClusterResult",
    "POLICIES",
    "POLICY_CLASSES",
    "ClusterSimulation",
    "InflationRun",
    "InvariantError",
    "Job",
    "JobRequest",
    "NodeState",
    "Scenario",
    "add_arguments",
    "choose_node",
    "inflate",
    "kube_scores",
    "load_scenario",
    "make_policy",
    "prepare",
    "rank_nodes",
    "run",
    "run_scenario",
    "savings",
    "seed_key",
]


def run(scenario_or_path, policy=None, *, seed: int | None = None, quick: bool = False,
        **overrides) -> ClusterResult:
    """Run a scenario from Python (:func:`model.cluster.api.run`): returns a
    :class:`ClusterResult` whose ``summary`` holds the numbers ``gpusched cluster --config
    FILE`` writes. The command itself is :mod:`model.cluster.cli`."""
    return _api.run(scenario_or_path, policy, seed=seed, quick=quick, **overrides)
