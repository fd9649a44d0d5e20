"""Pods (jobs) of the cluster model, the admission check and the whole-card synthetic generator.

A job asks for ``cards`` GPUs of a type in ``types`` on one node, ``gpu_milli`` thousandths of
each (1000: whole cards; below 1000 only with ``cards == 1``: it shares a card with other pods;
0 with ``cards == 0``: a CPU-only pod), plus ``cpu_milli`` milli-vCPU and ``memory_mib`` MiB of
the node's host. The pods shaped like the Alibaba trace's come from
:mod:`model.cluster.synthetic`.
"""

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from model.cluster.config import NodeSpec, SyntheticWorkload
from model.cluster.placement import JobRequest

__all__ = ["MILLI", "Job", "admission_problem", "generate_jobs"]

#: Milli-GPU in one card.
MILLI = 1000


@dataclass(frozen=True)
class Job:
    """One pod: arrives at ``arrival_s`` (``None`` in the inflation experiment, which has no
    times), runs ``duration_s`` once started, asks for ``cards`` x ``gpu_milli`` milli-GPU of a
    type in ``types`` (``None``: any, written ``spec``), ``cpu_milli`` and ``memory_mib``."""

    index: int
    name: str
    arrival_s: float | None
    cards: int
    duration_s: float
    types: frozenset[str] | None = None
    cpu_milli: int = 0
    memory_mib: int = 0
    gpu_milli: int = MILLI
    #: The ``gpu_spec`` text as the pod list writes it ("" when any type will do). The FGD
    #: artifact keys its typical pods by that text (``PodResource.GpuType``), so
    #: "V100M16|V100M32|V100M32" is a shape of its own beside "V100M16|V100M32".
    spec: str = field(default="", compare=False)

    def __post_init__(self):
        if self.cards < 0 or self.cpu_milli < 0 or self.memory_mib < 0:
            raise ValueError(f"Job {self.name!r}: cards, cpu_milli and memory_mib must be >= 0")
        if self.cards == 0 and self.gpu_milli not in (0, MILLI):
            raise ValueError(f"Job {self.name!r} asks for no card but gpu_milli "
                             f"{self.gpu_milli}")
        if self.cards == 0:
            object.__setattr__(self, "gpu_milli", 0)
        elif not 0 < self.gpu_milli <= MILLI:
            raise ValueError(f"Job {self.name!r}: gpu_milli must be in 1..1000, not "
                             f"{self.gpu_milli}")
        elif self.gpu_milli < MILLI and self.cards != 1:
            raise ValueError(f"Job {self.name!r} shares a card ({self.gpu_milli} milli) but "
                             f"asks for {self.cards} cards; a shared pod takes one card")

    @property
    def request(self) -> JobRequest:
        """The part of the job the pure key functions look at."""
        return JobRequest(self.cards, self.types)

    @property
    def shared(self) -> bool:
        """True for a pod that takes part of one card."""
        return self.cards == 1 and self.gpu_milli < MILLI

    @property
    def gpu_request_milli(self) -> int:
        """Milli-GPU asked for in all: ``cards x gpu_milli``."""
        return self.cards * self.gpu_milli

    @property
    def shape(self) -> tuple:
        """What placement depends on: ``(cpu, memory, cards, milli, types)``."""
        return self.cpu_milli, self.memory_mib, self.cards, self.gpu_milli, self.types


def admission_problem(job: Job, nodes: Sequence[NodeSpec]) -> str | None:
    """Why ``job`` can never run on ``nodes`` (no node could hold it even empty), or
    ``None``."""
    if job.types is not None and job.cards > 0:
        present = {card_type for node in nodes for card_type in node.cards}
        if not job.types & present:
            return f"needs card type {' or '.join(sorted(job.types))}, which no node has"
    kind = "" if job.types is None else f" of type {' or '.join(sorted(job.types))}"
    eligible = [node for node in nodes
                if sum(1 for card in node.cards
                       if job.types is None or card in job.types) >= job.cards]
    if not eligible:
        largest = max((sum(1 for card in node.cards if job.types is None or card in job.types)
                       for node in nodes), default=0)
        return f"needs {job.cards} cards{kind} on one node; the largest node has {largest}"
    if not any(node.cpu_milli >= job.cpu_milli for node in eligible):
        return (f"needs {job.cpu_milli} milli-CPU on one node with {job.cards} cards{kind}; "
                f"the most such a node has is {max(node.cpu_milli for node in eligible)}")
    if not any(node.cpu_milli >= job.cpu_milli and node.memory_mib >= job.memory_mib
               for node in eligible):
        return (f"needs {job.memory_mib} MiB of memory on one node with {job.cards} "
                f"cards{kind} and {job.cpu_milli} milli-CPU; no such node has that much")
    return None


def _durations(workload: SyntheticWorkload, rng: random.Random) -> float:
    # A log-normal with mean m and log-sigma s has mu = ln m - s^2 / 2.
    sigma = workload.duration_sigma
    mu = math.log(workload.mean_duration_s) - sigma * sigma / 2
    return rng.lognormvariate(mu, sigma) if sigma > 0 else workload.mean_duration_s


def generate_jobs(workload: SyntheticWorkload, nodes: Sequence[NodeSpec], rng: random.Random,
                  *, quick: bool = False) -> list[Job]:
    """The whole-card synthetic job stream of ``workload`` for the cluster ``nodes``, from
    ``rng`` alone. Jobs ask for no CPU or memory.

    A pinned job's type is drawn in proportion to the cluster's cards of each type, among the
    types that have a node with at least ``k`` cards of it; when none has, the job accepts any
    type (so the generator itself never makes a job that admission must reject).
    """
    count = workload.quick_jobs if quick else workload.jobs
    type_cards: dict[str, int] = {}
    largest: dict[str, int] = {}
    for node in nodes:
        for card_type in set(node.cards):
            on_node = node.cards.count(card_type)
            type_cards[card_type] = type_cards.get(card_type, 0) + on_node
            largest[card_type] = max(largest.get(card_type, 0), on_node)
    type_names = sorted(type_cards)
    jobs: list[Job] = []
    now = 0.0
    for index in range(count):
        if workload.arrival == "poisson":
            if index > 0 and workload.mean_interarrival_s > 0:
                now += rng.expovariate(1.0 / workload.mean_interarrival_s)
        elif index > 0 and index % workload.burst_size == 0 and workload.burst_gap_s > 0:
            now += rng.expovariate(1.0 / workload.burst_gap_s)
        cards = rng.choices(workload.cards, weights=workload.card_weights)[0]
        duration = _durations(workload, rng)
        types = None
        if workload.pinned_fraction > 0 and rng.random() < workload.pinned_fraction:
            candidates = [name for name in type_names if largest[name] >= cards]
            if candidates:
                weights = [type_cards[name] for name in candidates]
                types = frozenset([rng.choices(candidates, weights=weights)[0]])
        jobs.append(Job(index, f"job-{index}", now, cards, duration, types))
    return jobs
