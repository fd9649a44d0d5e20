"""The FGD paper's workload-inflation experiment: pods, no times, until the cluster is full.

Weng et al. (USENIX ATC 2023, section 6.1) and Lettich et al. (CCGrid 2025) evaluate placement
without time: the trace's pods are resampled to ask for ``ratio`` (130 %) of the cluster's GPUs,
shuffled, and submitted one by one; a pod that fits nowhere is counted as unplaced and the next
one is tried; nothing ever completes. We follow their public simulator
(``TunePodsByNodeTotalResource`` and ``--shuffle-pod``): when the trace asks for less than the
target, pods drawn uniformly with replacement are appended until the next draw would pass the
target (we compare the draw's whole GPU request; the simulator compares its per-card share);
when it asks for more, uniformly drawn pods are removed until it does not.

The 5-column ``multigpu`` pod lists have no times: this is the only experiment they can run, and
the report says so. Reported, per policy (the papers' figures):

* GPU allocation ratio (allocated / total milli-GPU) when the first pod fails, when the
  arrived pods ask for 100 % of the GPUs, and at the end;
* FGD fragmentation (GPUs) and its rate (over free GPUs) at the same points;
* cluster power (kW; every card and host awake, one power table for every policy);
* unplaced pods and the GPUs they asked for;
* the curves against arrived workload (percent of GPU capacity), one point per percent.
"""

import random
from collections.abc import Mapping, Sequence

import numpy as np

from model.checks import InvariantError
from model.cluster.config import NodeSpec
from model.cluster.fragmentation import Fragmentation, TypicalPods, typical_pods
from model.cluster.policies import PlacementContext
from model.cluster.power import CardType
from model.cluster.sim import resolve_policy
from model.cluster.state import ClusterState
from model.cluster.workload import MILLI, Job

__all__ = ["InflationRun", "artifact_curve", "inflate"]

#: A bound on the pods appended by :func:`inflate` (a workload of tiny pods would otherwise
#: take unbounded time and memory).
MAX_PODS = 5_000_000


def inflate(workload: Sequence[Job], capacity_milli: int, ratio: float,
            rng: random.Random) -> list[Job]:
    """``workload`` resampled to ask for about ``ratio x capacity_milli`` milli-GPU in the
    artifact's order (``SortClusterPods`` then ``TunePodsByNodeTotalResource``): the pods
    sorted by name and shuffled; then, when they ask for more than the target, uniformly
    drawn pods removed until they do not; when they ask for less, pods drawn uniformly (with
    replacement, from the name-sorted list) appended at the end until the next draw's
    per-card share would pass the target (the artifact compares ``MilliGpu``, one card's
    share, and adds the whole request). Appended copies are named ``<name>-tuned-<i>``;
    the result is re-indexed in submission order. ``rng`` needs ``shuffle`` and
    ``randrange``: a ``random.Random`` (other streams than the artifact's), or
    :class:`model.cluster.gorand.GoRand`, whose Go draws make a seed the artifact's
    (:func:`model.cluster.repro.artifact_draws`)."""
    if not workload:
        raise ValueError("The inflation experiment needs at least one pod")
    requests = [job.gpu_request_milli for job in workload]
    if not any(requests):
        raise ValueError("The inflation experiment needs pods that ask for GPUs; every pod "
                         "of this workload is CPU-only")
    by_name = sorted(workload, key=lambda job: job.name)
    pods = list(by_name)
    rng.shuffle(pods)
    total, target = sum(requests), ratio * capacity_milli
    if total > target:
        while total > target:
            index = rng.randrange(len(pods))
            total -= pods[index].gpu_request_milli
            del pods[index]
    elif total < target:
        tuned = 0
        while True:
            source = by_name[rng.randrange(len(by_name))]
            if total + source.gpu_milli > target:
                break
            if len(pods) >= MAX_PODS:
                raise ValueError(f"Inflating to {ratio:g} x the cluster would need more than "
                                 f"{MAX_PODS} pods")
            pods.append(Job(0, f"{source.name}-tuned-{tuned}", None, source.cards,
                            source.duration_s, source.types, source.cpu_milli,
                            source.memory_mib, source.gpu_milli))
            total += source.gpu_request_milli
            tuned += 1
    return [Job(index, job.name, None, job.cards, job.duration_s, job.types, job.cpu_milli,
                job.memory_mib, job.gpu_milli) for index, job in enumerate(pods)]


def artifact_curve(arrived: np.ndarray, values: np.ndarray, capacity_milli: int,
                   points: int = 131, decimals: int | None = 2) -> list[float | None]:
    """One value per percent of arrived workload, as the artifact's analysis scripts
    (``merge_alloc_discrete.py``, ``merge_frag_ratio_discrete.py``) make its published
    curves from the per-pod log: every pod event's arrived percent rounded to an integer
    (half to even, as Python's ``round``); the value at ``k`` is the mean over the events
    rounded to ``k`` (each value first rounded to ``decimals``, the mean too), or, when none
    is, over those rounded to ``k - 1 .. k + 1``; ``None`` when no event is that near."""
    rounded = np.round(100.0 * np.asarray(arrived) / capacity_milli)
    values = np.asarray(values, float)
    if decimals is not None:
        values = np.round(values, decimals)
    curve: list[float | None] = []
    for point in range(points):
        chosen = values[rounded == point]
        if chosen.size == 0:
            chosen = values[(rounded >= point - 1) & (rounded <= point + 1)]
        if chosen.size == 0:
            curve.append(None)
            continue
        mean = float(chosen.mean())
        curve.append(round(mean, decimals) if decimals is not None else mean)
    return curve


class InflationRun:
    """One policy submitting ``pods`` in order to an empty cluster; :meth:`run`, then
    :meth:`results`. ``rng`` breaks the policy's ties under ``tie_break = "random"``;
    ``node_rank`` is the run's node order under ``"shuffled"`` (the default, the artifact's:
    :func:`~model.cluster.policies.shuffled_rank`; drawn from ``rng`` when not given);
    ``debug`` checks the invariants after every pod."""

    def __init__(self, nodes: Sequence[NodeSpec], card_types: Mapping[str, CardType],
                 pods: Sequence[Job], policy, *, rng: random.Random,
                 shared_card: str = "busy", typical: TypicalPods | None = None,
                 pwr_fgd_weights: tuple[int, int] = (200, 800), tie_break: str = "shuffled",
                 node_rank: np.ndarray | None = None, debug: bool = False):
        self.specs = tuple(nodes)
        self.state = ClusterState(self.specs, card_types, shared_card=shared_card)
        self.pods = list(pods)
        self.policy = resolve_policy(policy)
        self.fragmentation = Fragmentation(self.state, typical or typical_pods(self.pods))
        self.context = PlacementContext(self.state, self.fragmentation, rng, pwr_fgd_weights,
                                        tie_break, node_rank)
        self.debug = debug
        self.assignment: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.failed: list[Job] = []
        self.curve: list[list[float]] = []
        self.first_failure: dict | None = None
        self.at_full: dict | None = None
        self._allocated = 0
        self._arrived = 0
        # After every pod (placed or not), as the artifact logs it: arrived and allocated
        # milli-GPU, fragmentation rate (%).
        self._events = np.zeros((len(self.pods), 3))

    def snapshot(self) -> dict:
        """Allocation, fragmentation and power of the cluster now."""
        capacity = self.state.total_milli
        fragmented, free = self.fragmentation.cluster()
        return {
            "arrived_percent": 100.0 * self._arrived / capacity,
            "allocation_ratio": self._allocated / capacity,
            "fragmentation_gpus": fragmented / MILLI,
            "free_gpus": free / MILLI,
            "fragmentation_rate": fragmented / free if free else 0.0,
            "power_kw": self.state.awake_power() / 1000.0,
            "placed": len(self.assignment),
            "failed": len(self.failed),
        }

    def run(self, progress=None) -> "InflationRun":
        """Submit every pod in order; returns ``self``. ``progress``, when given, is called
        with the number of pods submitted so far."""
        capacity = self.state.total_milli
        next_point = 0
        for submitted, job in enumerate(self.pods):
            if progress is not None:
                progress(submitted)
            self._arrived += job.gpu_request_milli
            choice = self.policy.choose(self.context, job)
            if choice is None:
                self.failed.append(job)
                if self.first_failure is None and job.cards > 0:
                    self.first_failure = {"pod": job.name, **self.snapshot()}
            else:
                node, cards = choice
                self.state.allocate(node, cards, job)
                self.fragmentation.update(node)
                self.assignment[job.index] = (node, tuple(cards))
                self._allocated += job.gpu_request_milli
            fragmented = self.fragmentation.total()
            free = capacity - self._allocated
            self._events[submitted] = (self._arrived, self._allocated,
                                       100.0 * fragmented / free if free else 0.0)
            if self.at_full is None and self._arrived >= capacity:
                self.at_full = self.snapshot()
            while 100 * self._arrived >= next_point * capacity:
                point = self.snapshot()
                self.curve.append([point["arrived_percent"], 100 * point["allocation_ratio"],
                                   100 * point["fragmentation_rate"], point["power_kw"]])
                next_point += 1
            if self.debug:
                self.check_invariants()
        return self

    def check_invariants(self) -> None:
        """The state's own checks, every placed pod holding its share, and the incremental
        fragmentation equal to a fresh computation."""
        self.state.check()
        for index, (node, cards) in self.assignment.items():
            job = self.pods[index]
            for slot in cards:
                if self.state.holders[node][slot].get(index) != job.gpu_milli:
                    raise InvariantError(f"pod {job.name} lost its share of card {slot} of "
                                         f"{self.specs[node].name}")
        if int(self.state.pods.sum()) != len(self.assignment):
            raise InvariantError("the nodes' pod counts differ from the placed pods")
        fresh = Fragmentation(self.state, self.fragmentation.typical)
        if abs(fresh.node.sum() - self.fragmentation.node.sum()) > 1e-6 * (
                1 + abs(fresh.node.sum())):
            raise InvariantError("the incremental fragmentation differs from a fresh one")

    def artifact_curves(self) -> dict:
        """GPU allocation ratio and fragmentation rate (%) at 0, 1, ..., 130 % arrived,
        discretised as the artifact's published curves are (:func:`artifact_curve`)."""
        capacity = self.state.total_milli
        events = self._events[:len(self.assignment) + len(self.failed)]
        return {"allocation": artifact_curve(events[:, 0], 100.0 * events[:, 1] / capacity,
                                             capacity),
                "fragmentation_rate": artifact_curve(events[:, 0], events[:, 2], capacity,
                                                     decimals=None)}

    def results(self) -> dict:
        """Every metric of the run (see the module docstring)."""
        end = self.snapshot()
        first = self.first_failure
        full = self.at_full or end
        return {
            "policy": self.policy.name,
            "pods": len(self.pods),
            "placed": len(self.assignment),
            "unplaced": len(self.failed),
            "unplaced_gpus": sum(job.gpu_request_milli for job in self.failed) / MILLI,
            "arrived_percent": end["arrived_percent"],
            "allocation_at_first_failure": (first["allocation_ratio"] if first
                                            else end["allocation_ratio"]),
            "arrived_at_first_failure": first["arrived_percent"] if first else None,
            "allocation_at_full": full["allocation_ratio"],
            "unallocated_percent_at_full": 100 * (1 - full["allocation_ratio"]),
            "fragmentation_rate_at_full": full["fragmentation_rate"],
            "allocation_at_end": end["allocation_ratio"],
            "fragmentation_gpus_end": end["fragmentation_gpus"],
            "fragmentation_rate_end": end["fragmentation_rate"],
            "power_kw_end": end["power_kw"],
            "power_kw_at_full": full["power_kw"],
            "watts_per_allocated_gpu": (1000 * end["power_kw"] * MILLI / self._allocated
                                        if self._allocated else 0.0),
            "first_failure": first,
            "at_full": self.at_full,
            "end": end,
            "curve": self.curve,
            "artifact_curve": self.artifact_curves(),
            "nodes": self.state.size,
            "cards": int(self.state.card_count.sum()),
            "typical_pods": len(self.fragmentation.typical),
        }
