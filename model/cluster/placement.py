"""Node choice for one GPU job: the seed-004 ordering and the baselines, as pure functions.

This is the seed as written, for whole-card jobs, in a form a real scheduler can lift; the
simulations use the vectorised policies of :mod:`model.cluster.policies` (the same order for
whole-card pods, checked against this module by the tests, plus shared cards, CPU and memory,
and the FGD and PWR baselines).

Every policy is a *key* function ``key(node, job) -> tuple`` over a read-only view of one node
(:class:`NodeView`) and the job's request (:class:`JobRequest`); the policy takes a feasible
node with the smallest key. The functions read nothing else and change nothing, so they can be
lifted into a real scheduler (see :func:`kube_scores` and ``docs/cluster.md``).

Seed 004 (figure 2, steps 203-206 and paragraphs 68-70):

1. drop nodes with fewer idle cards (of a type the job accepts) than the job needs (par. 24);
2. group nodes by idle-card count, groups in ascending count (step 203: fill the fullest
   nodes first);
3. inside a group, order by the *second power* -- the sum of the idle cards' *first power*
   (the per-type busy power) -- ascending (step 204, par. 57-61);
4. a node whose cards are all idle adds its CPU standby power, giving its *third power*, and is
   re-ordered by it (par. 68-70); we re-order it inside its group (see ``docs/cluster.md``);
5. take the first node (step 206); ties go to the lower node index.

Baselines: Kubernetes ``NodeResourcesFit`` with the ``LeastAllocated`` (spread) and
``MostAllocated`` (bin-packing) scoring strategies over the GPU count alone, with the
scheduler's integer 0..100 scores and random choice among equal scores (kube-scheduler's
``selectHost``); and a uniformly random feasible node.
"""

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "POLICIES",
    "JobRequest",
    "NodeState",
    "NodeView",
    "Policy",
    "binpack_key",
    "choose_node",
    "feasible",
    "kube_scores",
    "power_first_key",
    "rank_nodes",
    "second_power",
    "seed_key",
    "spread_key",
    "third_power",
]

#: kube-scheduler's ``framework.MaxNodeScore``.
MAX_NODE_SCORE = 100


@dataclass(frozen=True)
class JobRequest:
    """What placement needs to know of a job: ``cards`` GPUs on one node, of a type in
    ``types`` (``None``: any type)."""

    cards: int
    types: frozenset[str] | None = None


class NodeView(Protocol):
    """The read-only state of one node that the key functions use.

    ``idle_cards(types)`` returns ``(count, first_power_sum)`` of the node's idle cards whose
    type is in ``types`` (every idle card when ``types`` is ``None``); ``fully_idle`` is true
    when no card of the node is busy.
    """

    name: str
    total_cards: int
    cpu_standby_w: float

    def idle_cards(self, types: frozenset[str] | None) -> tuple[int, float]: ...

    @property
    def fully_idle(self) -> bool: ...


@dataclass(frozen=True)
class NodeState:
    """A snapshot of a node, as a scheduler would read it: its card count, the ``(type,
    first_power)`` of each idle card, and its CPU standby power. Implements :class:`NodeView`.
    """

    name: str
    total_cards: int
    idle: tuple[tuple[str, float], ...]
    cpu_standby_w: float = 0.0

    def __post_init__(self):
        if len(self.idle) > self.total_cards:
            raise ValueError(f"Node {self.name!r} has {len(self.idle)} idle cards but only "
                             f"{self.total_cards} cards")

    def idle_cards(self, types: frozenset[str] | None) -> tuple[int, float]:
        """``(count, sum of first power)`` of the idle cards of an accepted type."""
        powers = [power for card_type, power in self.idle if types is None or card_type in types]
        return len(powers), sum(powers)

    @property
    def fully_idle(self) -> bool:
        return len(self.idle) == self.total_cards


def feasible(node: NodeView, job: JobRequest) -> bool:
    """True when the node has at least ``job.cards`` idle cards of an accepted type (par. 24)."""
    return node.idle_cards(job.types)[0] >= job.cards


def second_power(node: NodeView, job: JobRequest) -> float:
    """The seed's second power: the sum of the first power of the node's idle cards (of the
    types the job accepts), par. 58-60 (idle cards 2, 7, 9, 12 give 30)."""
    return node.idle_cards(job.types)[1]


def third_power(node: NodeView, job: JobRequest) -> float:
    """The power the seed orders a node by: its second power, plus its CPU standby power when
    every card of the node is idle (the third power, par. 68-70: 36 + 25 = 61)."""
    power = second_power(node, job)
    return power + node.cpu_standby_w if node.fully_idle else power


def seed_key(node: NodeView, job: JobRequest) -> tuple[int, float]:
    """Seed 004's order: idle-card count ascending (the groups), then third power ascending
    (second power for a node with busy cards) inside a group."""
    return node.idle_cards(job.types)[0], third_power(node, job)


def power_first_key(node: NodeView, job: JobRequest) -> tuple[float, int]:
    """The first embodiment's order (figure 1, par. 34-35): second power ascending, with the
    idle-card order breaking ties. Not the seed's main policy; kept because its worked example
    (d, a, e, c, b) reads this way."""
    count, power = node.idle_cards(job.types)
    return power, count


def spread_key(node: NodeView, job: JobRequest) -> tuple[int]:
    """Kubernetes ``LeastAllocated`` on GPUs: score ``(free - requested) * 100 // capacity``,
    highest first (so the key is the negated score)."""
    free = node.idle_cards(job.types)[0]
    return (-((free - job.cards) * MAX_NODE_SCORE // node.total_cards),)


def binpack_key(node: NodeView, job: JobRequest) -> tuple[int]:
    """Kubernetes ``MostAllocated`` on GPUs: score ``(used + requested) * 100 // capacity``,
    highest first; no notion of power."""
    used = node.total_cards - node.idle_cards(job.types)[0]
    return (-((used + job.cards) * MAX_NODE_SCORE // node.total_cards),)


def _random_key(node: NodeView, job: JobRequest) -> tuple[()]:
    """Every feasible node ties, so the random tie-break picks uniformly."""
    return ()


@dataclass(frozen=True)
class Policy:
    """A placement policy: a key function (smaller is better) and how ties are broken --
    by node index (``random_ties=False``, the seed's "take the first") or uniformly at random
    (kube-scheduler's ``selectHost``). ``power_aware`` marks the seed's own policies (the
    ones that get low-power standby under ``power.standby = "seed"``)."""

    name: str
    key: Callable[[NodeView, JobRequest], tuple]
    random_ties: bool = False
    power_aware: bool = False


#: Every policy by its name in configs and reports.
POLICIES = {
    "seed-004": Policy("seed-004", seed_key, power_aware=True),
    "power-first": Policy("power-first", power_first_key, power_aware=True),
    "spread": Policy("spread", spread_key, random_ties=True),
    "bin-pack": Policy("bin-pack", binpack_key, random_ties=True),
    "random": Policy("random", _random_key, random_ties=True),
}


def rank_nodes(nodes: Sequence[NodeView], job: JobRequest,
               key: Callable[[NodeView, JobRequest], tuple] = seed_key) -> list[int]:
    """Indices of the feasible nodes in the policy's order (key, then node index): the seed's
    second ordering after the infeasible nodes are dropped."""
    keyed = [(key(node, job), index) for index, node in enumerate(nodes) if feasible(node, job)]
    keyed.sort()
    return [index for _, index in keyed]


def choose_node(nodes: Sequence[NodeView], job: JobRequest, policy: Policy,
                rng: random.Random | None = None) -> int | None:
    """The index of the node ``policy`` places ``job`` on, or ``None`` when no node has
    enough idle cards. ``rng`` is required for a policy with random ties."""
    best_key = None
    best: list[int] = []
    for index, node in enumerate(nodes):
        count, _ = node.idle_cards(job.types)
        if count < job.cards:
            continue
        node_key = policy.key(node, job)
        if best_key is None or node_key < best_key:
            best_key, best = node_key, [index]
        elif node_key == best_key and policy.random_ties:
            best.append(index)
    if not best:
        return None
    if len(best) == 1:
        return best[0]
    if rng is None:
        raise ValueError(f"Policy {policy.name!r} breaks ties at random and needs an rng")
    return best[rng.randrange(len(best))]


def kube_scores(nodes: Iterable[NodeView], job: JobRequest,
                key: Callable[[NodeView, JobRequest], tuple] = seed_key) -> dict[str, int]:
    """A kube-scheduler Score plugin's answer for the feasible nodes after ``NormalizeScore``:
    0..100, higher is better, the best key scoring 100 and the worst 0, linear in the dense
    rank of the key (equal keys score equal). The arg-max is the node ``key`` would choose,
    which a raw power value scaled to 0..100 would not guarantee (the key is lexicographic).
    """
    keyed = [(key(node, job), node.name) for node in nodes if feasible(node, job)]
    distinct = sorted({node_key for node_key, _ in keyed})
    if len(distinct) <= 1:
        return {name: MAX_NODE_SCORE for _, name in keyed}
    rank = {node_key: position for position, node_key in enumerate(distinct)}
    span = len(distinct) - 1
    return {name: round(MAX_NODE_SCORE * (span - rank[node_key]) / span)
            for node_key, name in keyed}
