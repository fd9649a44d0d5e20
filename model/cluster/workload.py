"""Jobs of the cluster model and the synthetic job generator."""

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from model.cluster.config import NodeSpec, SyntheticWorkload
from model.cluster.placement import JobRequest

__all__ = ["Job", "admission_problem", "generate_jobs"]


@dataclass(frozen=True)
class Job:
    """One job: arrives at ``arrival_s``, needs ``cards`` GPUs on one node of a type in
    ``types`` (``None``: any), and runs ``duration_s`` once started. Times in seconds."""

    index: int
    name: str
    arrival_s: float
    cards: int
    duration_s: float
    types: frozenset[str] | None = None

    @property
    def request(self) -> JobRequest:
        """The part of the job placement looks at."""
        return JobRequest(self.cards, self.types)


def admission_problem(job: Job, nodes: Sequence[NodeSpec]) -> str | None:
    """Why ``job`` can never run on ``nodes`` (no node has ``job.cards`` cards of an accepted
    type, even all idle), or ``None`` when some node could hold it."""
    if job.types is not None:
        present = {card_type for node in nodes for card_type in node.cards}
        if not job.types & present:
            return (f"needs card type {' or '.join(sorted(job.types))}, which no node has")
    largest = max((sum(1 for card in node.cards if job.types is None or card in job.types)
                   for node in nodes), default=0)
    if job.cards > largest:
        kind = "" if job.types is None else f" of type {' or '.join(sorted(job.types))}"
        return f"needs {job.cards} cards{kind} on one node; the largest node has {largest}"
    return None


def _durations(workload: SyntheticWorkload, rng: random.Random) -> float:
    # A log-normal with mean m and log-sigma s has mu = ln m - s^2 / 2.
    sigma = workload.duration_sigma
    mu = math.log(workload.mean_duration_s) - sigma * sigma / 2
    return rng.lognormvariate(mu, sigma) if sigma > 0 else workload.mean_duration_s


def generate_jobs(workload: SyntheticWorkload, nodes: Sequence[NodeSpec], rng: random.Random,
                  *, quick: bool = False) -> list[Job]:
    """The synthetic job stream of ``workload`` for the cluster ``nodes``, from ``rng`` alone.

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
