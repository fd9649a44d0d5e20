"""Seed 004: power-aware GPU cluster placement, against spread, bin-packing and random.

A discrete-event model (time in seconds) of a cluster of GPU nodes with cards of several
types. Jobs needing ``k`` cards on one node arrive, queue (FIFO, optional backfill) and run;
a policy chooses the node. The seed's policy groups feasible nodes by idle-card count
(fullest first), orders each group by the sum of the idle cards' per-type power, charges a
fully idle node its CPU standby power, and takes the first; idle cards and nodes go to
low-power standby. The report compares cluster energy, queueing, fragmentation and idle nodes.

Modules: :mod:`~model.cluster.placement` (the pure key functions, usable in a real scheduler),
:mod:`~model.cluster.config` (scenario files), :mod:`~model.cluster.workload` (jobs and the
synthetic generator), :mod:`~model.cluster.trace` (Alibaba GPU trace v2023 readers),
:mod:`~model.cluster.sim` (the simulation) and :mod:`~model.cluster.cli` (``gpusched
cluster``). See ``docs/cluster.md``.
"""

from model.cluster.cli import add_arguments, prepare, run, run_scenario, savings
from model.cluster.config import Scenario, load_scenario
from model.cluster.placement import (
    POLICIES,
    JobRequest,
    NodeState,
    choose_node,
    kube_scores,
    rank_nodes,
    seed_key,
)
from model.cluster.sim import ClusterSimulation, InvariantError
from model.cluster.workload import Job

__all__ = [
    "POLICIES",
    "ClusterSimulation",
    "InvariantError",
    "Job",
    "JobRequest",
    "NodeState",
    "Scenario",
    "add_arguments",
    "choose_node",
    "kube_scores",
    "load_scenario",
    "prepare",
    "rank_nodes",
    "run",
    "run_scenario",
    "savings",
    "seed_key",
]
