"""Every placement policy, scoring all nodes at once with numpy.

A policy sees the feasible nodes (enough cards of an accepted type with enough free milli-GPU,
CPU and memory: :meth:`~model.cluster.state.ClusterState.feasible`), picks one, and picks the
card(s) inside it. Whole-card pods take the node's cheapest free accepted cards (lowest first
power, then lowest slot) under every policy; CPU-only pods take no card; a shared pod's card
is the policy's own choice (below). No pod gets more than it asked for.

**The seed's policy** (``seed-004``; the pure reading in :mod:`model.cluster.placement`):
nodes grouped by *idle* (fully free) accepted cards, fewest first; inside a group by the
*second power* (sum of the idle cards' first power), a node with no pod adding its CPU standby
power (the *third power*); first node wins. For a pod sharing a card we read "idle card" as
a fully free card and count the cards that would *stay* idle: a node that can put the pod on
an already shared card keeps its idle count and second power, one that must open an idle card
loses that card from both. Inside the node the pod goes on the shared card with the least
room that fits, else on the cheapest idle card. ``power-first`` is the seed's first
embodiment (second power, then idle count).

**The FGD paper's baselines** (scores as in its simulator, plugin ``Score`` then the
scheduler's highest score, ties by :data:`TIE_BREAKS`: by default the artifact's, the smallest
name in the run's shuffled node order; a shared pod's card is the best fit unless stated):

* ``fgd``: ``int(100 * sigmoid((F_before - F_after) / 1000))`` with F the node's
  fragmentation (:mod:`model.cluster.fragmentation`); a shared pod goes on the card with the
  best score (first such card);
* ``best-fit``: ``int(100 * (1 - 0.5 (cpu_free - cpu) / 128000 - 0.5 (gpu_free - gpu) / 8000))``;
* ``dot-product`` (Tetris; the paper's configuration ``merge``/``max``):
  ``int(100 * (1 - (cpu_free cpu / 128000^2 + gpu_free gpu / 8000^2) / 2))``;
* ``gpu-packing``: 100 minus a tenth of the used card's free percent (>= 50) when the pod
  fits on a shared card, 50 minus the idle cards it opens (>= 33) on a used node, 33 minus
  the node's cards (>= that count) on an idle node;
* ``gpu-clustering``: 25 x used fraction of 8 GPUs, plus 75 on a node whose pods all carry
  the pod's tag (shared, or k cards), 50 when some do, 25 on an empty node;
* ``random``: a uniformly random feasible node (and card).

**PWR** (Lettich et al., "Power- and Fragmentation-aware Online Scheduling for GPU
Datacenters", CCGrid 2025; public simulator ``pwr_score.go``): the score is the negated power
increase of the placement, ``int(P_before - P_after)``, cards and CPU sockets by the power
table (:mod:`model.cluster.state`), normalised to 0..100 over the feasible nodes (min-max,
integer); a shared pod goes on the first card that adds the least power. ``pwr-fgd`` adds the
two plugins' scores with weights (PWR 200, FGD 800 by default) and uses FGD's card choice.

**Our variant** ``fgd-seed``: FGD's score, ties broken by the seed's ordering (idle cards that
stay idle, then their power, then node index) instead of at random; FGD's card choice.

``kube-scheduler`` baselines ``spread`` (``LeastAllocated``) and ``bin-pack``
(``MostAllocated``) score ``(free - asked) x 100 // capacity`` and
``(used + asked) x 100 // capacity`` over the node's accepted milli-GPU (CPU for a CPU-only
pod).

Every score is an integer, as in the scheduler framework: the floats feeding ``int()`` are
ratios of small integers, so the truncation decides nothing that an exact computation would
decide otherwise except at exact ties, which the tie-break rule decides.
"""

import random
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from model.cluster.fragmentation import Fragmentation
from model.cluster.state import ClusterState, gpu_tag
from model.cluster.workload import MILLI, Job

__all__ = ["POLICY_CLASSES", "TIE_BREAKS", "PlacementContext", "Policy", "make_policy",
           "name_rank", "shuffled_rank"]

MAX_SCORE = 100
MAX_SPEC_CPU = 128000      # the FGD simulator's normalisation constants
MAX_SPEC_GPU = 8000


#: How equal highest scores are broken:
#:
#: * ``"shuffled"`` (the FGD artifact's): the node with the smallest name, after the
#:   artifact's simulator has renamed every node on loading (``syncClusterResourceList``:
#:   the nodes sorted by name, the i-th prefixed with ``"%04d-"`` of the i-th entry of a
#:   random permutation, ``rand.Perm``, drawn from the run's seed). The order is random but
#:   fixed for the whole run and the same for every policy of a seed (:func:`shuffled_rank`);
#: * ``"name"``: the smallest name as the node list gives it (the vendored ``selectHost``'s
#:   comparison on the original names);
#: * ``"random"``: upstream kube-scheduler's reservoir sampling, uniformly at random at
#:   every decision.
TIE_BREAKS = ("shuffled", "name", "random")


def name_rank(names) -> np.ndarray:
    """Each node's position in the order of ``names`` (string order, as Go compares them)."""
    names = list(names)
    rank = np.empty(len(names), np.int64)
    rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    return rank


def shuffled_rank(names, rng: random.Random) -> np.ndarray:
    """Each node's position in the order of the names the artifact's simulator gives the
    nodes: the node that is i-th by name gets the prefix ``perm[i]`` of a uniformly random
    permutation ``perm`` (drawn from ``rng``), so its rank is ``perm[i]``. Depends only on
    the names and ``rng``, not on the order of the node list."""
    by_name = name_rank(names)
    perm = list(range(len(by_name)))
    rng.shuffle(perm)
    return np.asarray(perm, np.int64)[by_name]


@dataclass
class PlacementContext:
    """What a policy may read: the cluster, the fragmentation measure, its rng (random tie
    breaks and random cards), the pwr-fgd weights, the tie-break rule (:data:`TIE_BREAKS`;
    ``"shuffled"`` by default, the artifact's) and, for ``"shuffled"``, the run's node order
    ``node_rank`` (:func:`shuffled_rank`; drawn from ``rng`` when not given: the runners pass
    one drawn per seed, so that every policy of a seed sees the same order)."""

    state: ClusterState
    fragmentation: Fragmentation
    rng: random.Random
    pwr_fgd_weights: tuple[int, int] = (200, 800)
    tie_break: str = "shuffled"
    node_rank: np.ndarray | None = field(default=None, repr=False)
    _fgd_cache: dict = field(default_factory=dict)
    #: Each node's rank among equal scores (smallest first): by name (``"name"``) or in the
    #: run's shuffled order (``"shuffled"``); unused under ``"random"``.
    tie_rank: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if self.tie_break not in TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {', '.join(map(repr, TIE_BREAKS))}, "
                             f"not {self.tie_break!r}")
        names = [spec.name for spec in self.state.specs]
        if self.tie_break == "shuffled":
            if self.node_rank is None:
                self.node_rank = shuffled_rank(names, self.rng)
            rank = np.asarray(self.node_rank, np.int64)
            if sorted(rank.tolist()) != list(range(len(names))):
                raise ValueError(f"node_rank must be a permutation of 0..{len(names) - 1}")
            self.tie_rank = rank
        else:
            self.tie_rank = name_rank(names)


Choice = tuple[int, tuple[int, ...]]


def _pick_max(scores: np.ndarray, feasible: np.ndarray, ctx: PlacementContext) -> int:
    """The feasible node with the highest score; among equals the one with the smallest
    name (``tie_break = "shuffled"``, the artifact's ``selectHost`` on its renamed nodes, or
    ``"name"``) or a uniformly random one (``"random"``, upstream kube-scheduler's)."""
    scores = np.where(feasible, scores, -np.inf)
    best = scores == scores.max()
    if ctx.tie_break == "random":
        best = best.nonzero()[0]
        if len(best) == 1:
            return int(best[0])
        return int(best[ctx.rng.randrange(len(best))])
    # The smallest rank among the best (ranks are 0..size-1, so size marks the others).
    return int(np.argmin(np.where(best, ctx.tie_rank, ctx.state.size)))


def _pick_min_first(key: np.ndarray, feasible: np.ndarray) -> int:
    """The first feasible node with the smallest key (the seed's "take the first")."""
    return int(np.argmin(np.where(feasible, key, np.inf)))


class Policy:
    """A placement policy: :meth:`choose` returns ``(node, card slots)`` or ``None``."""

    name = ""
    #: The seed's own policies (standby under ``power.standby = "seed"``).
    power_aware = False

    def choose(self, ctx: PlacementContext, job: Job) -> Choice | None:
        feasible = ctx.state.feasible(job)
        if not feasible.any():
            return None
        node = self.pick(ctx, job, feasible)
        return node, self.cards(ctx, job, node)

    def pick(self, ctx: PlacementContext, job: Job, feasible: np.ndarray) -> int:
        raise NotImplementedError

    def shared_card(self, ctx: PlacementContext, job: Job, node: int) -> int:
        return ctx.state.best_fit_card(node, job)

    def cards(self, ctx: PlacementContext, job: Job, node: int) -> tuple[int, ...]:
        if job.cards == 0:
            return ()
        if job.shared:
            return (self.shared_card(ctx, job, node),)
        return ctx.state.whole_cards(node, job)


# --- The seed -----------------------------------------------------------------------------

#: Weight of the idle-card count in the seed's combined key: more than any node's power.
_GROUP = 1e9


def seed_key(state: ClusterState, job: Job) -> np.ndarray:
    """The seed's order of every node for ``job`` as one number (smaller is better): idle
    accepted cards (the group), then their first power, both counting only the cards that stay
    idle for a shared pod, plus the CPU standby power of a node with no pod (the third
    power). Exact: powers are sums of table entries far below ``_GROUP``."""
    group = state.accepted_summary(job.types, "idle")
    power = state.accepted_summary(job.types, "power")
    if job.shared:
        opens = state.accepted_summary(job.types, "max_partial") < job.gpu_milli
        columns = state.columns(job.types)
        idle = state.idle_by_type[:, columns] > 0
        cheapest = np.where(idle, state.type_busy_w[columns], np.inf).min(axis=1,
                                                                          initial=np.inf)
        group = group - opens
        power = np.where(opens & np.isfinite(cheapest), power - cheapest, power)
    power = power + np.where(state.pods == 0, state.cpu_standby_power, 0.0)
    return group * _GROUP + power


def seed_card(state: ClusterState, job: Job, node: int) -> int:
    """A shared pod's card under the seed: the shared card with the least room that fits
    (then lowest first power, slot), else the cheapest idle card."""
    slots = state.fitting_slots(node, job).tolist()
    left = state.left[node]
    partial = [slot for slot in slots if left[slot] < MILLI]
    if partial:
        return min(partial, key=lambda slot: (left[slot], state.busy_w[node, slot], slot))
    return min(slots, key=lambda slot: (state.busy_w[node, slot], slot))


class SeedPolicy(Policy):
    name = "seed-004"
    power_aware = True

    def pick(self, ctx, job, feasible):
        return _pick_min_first(seed_key(ctx.state, job), feasible)

    def shared_card(self, ctx, job, node):
        return seed_card(ctx.state, job, node)


class PowerFirstPolicy(SeedPolicy):
    name = "power-first"

    def pick(self, ctx, job, feasible):
        key = seed_key(ctx.state, job)
        group = np.floor(key / _GROUP)
        # Power first, then the idle count (at most 1e5 cards, so the sum stays exact).
        return _pick_min_first((key - group * _GROUP) * 1e5 + group, feasible)


# --- kube-scheduler NodeResourcesFit ------------------------------------------------------

def _allocation(state: ClusterState, job: Job):
    """``(free, asked, capacity)`` per node: accepted milli-GPU, or CPU for a CPU-only pod."""
    if job.cards == 0:
        return state.cpu_free, job.cpu_milli, state.cpu_cap
    capacity = state.accepted_summary(job.types, "cards") * MILLI
    return (state.accepted_summary(job.types, "free"), job.gpu_request_milli,
            np.maximum(capacity, 1))


class SpreadPolicy(Policy):
    name = "spread"

    def pick(self, ctx, job, feasible):
        free, asked, capacity = _allocation(ctx.state, job)
        return _pick_max((free - asked) * MAX_SCORE // capacity, feasible, ctx)


class BinPackPolicy(Policy):
    name = "bin-pack"

    def pick(self, ctx, job, feasible):
        free, asked, capacity = _allocation(ctx.state, job)
        return _pick_max((capacity - free + asked) * MAX_SCORE // capacity, feasible, ctx)


class RandomPolicy(Policy):
    name = "random"

    def pick(self, ctx, job, feasible):
        rows = np.flatnonzero(feasible)
        return int(rows[ctx.rng.randrange(len(rows))])

    def shared_card(self, ctx, job, node):
        slots = ctx.state.fitting_slots(node, job)
        return int(slots[ctx.rng.randrange(len(slots))])


# --- The FGD paper's baselines ------------------------------------------------------------

def normalize_scores(scores: np.ndarray, feasible: np.ndarray) -> np.ndarray:
    """The artifact's ``NormalizeScore`` (best-fit's score extension): integer min-max over
    the feasible nodes to 0..100, ``(s - low) * 100 // (high - low)``; all 0 when they are
    equal. Truncation can merge nearby scores into ties (which the tie-break then decides)."""
    chosen = scores[feasible]
    low, high = chosen.min(), chosen.max()
    if high == low:
        return np.zeros(len(scores))
    return (np.where(feasible, scores, low) - low) * MAX_SCORE // (high - low)


class BestFitPolicy(Policy):
    name = "best-fit"

    def pick(self, ctx, job, feasible):
        state = ctx.state
        waste = (0.5 * (state.cpu_free - job.cpu_milli) / MAX_SPEC_CPU
                 + 0.5 * (state.free_total - job.gpu_request_milli) / MAX_SPEC_GPU)
        return _pick_max(normalize_scores(np.trunc((1.0 - waste) * MAX_SCORE), feasible),
                         feasible, ctx)


class DotProductPolicy(Policy):
    name = "dot-product"

    def pick(self, ctx, job, feasible):
        state = ctx.state
        dot = (state.cpu_free / MAX_SPEC_CPU * (job.cpu_milli / MAX_SPEC_CPU)
               + state.free_total / MAX_SPEC_GPU * (job.gpu_request_milli / MAX_SPEC_GPU)) / 2
        return _pick_max(np.trunc(MAX_SCORE * (1.0 - dot)), feasible, ctx)


class GpuPackingPolicy(Policy):
    name = "gpu-packing"

    def pick(self, ctx, job, feasible):
        state = ctx.state
        if job.cards == 0:
            return _pick_max(np.zeros(state.size), feasible, ctx)
        count = state.card_count
        all_free = state.idle_count == count
        idle_node = np.maximum(MAX_SCORE // 3 - count, count)
        if job.shared:
            fit = state.fit_cards(job)
            chosen = np.where(fit, state.left, MILLI + 1).min(axis=1)
            used = np.where(chosen >= MILLI, MAX_SCORE // 2 - 1,
                            np.maximum(MAX_SCORE - (chosen * 100 // MILLI) // 10,
                                       MAX_SCORE // 2))
        else:
            used = np.full(state.size, max(MAX_SCORE // 2 - job.cards, MAX_SCORE // 3))
        return _pick_max(np.where(all_free, idle_node, used), feasible, ctx)


class GpuClusteringPolicy(Policy):
    name = "gpu-clustering"

    def pick(self, ctx, job, feasible):
        state = ctx.state
        tag = gpu_tag(job)
        if tag is None:
            return _pick_max(np.zeros(state.size), feasible, ctx)
        base = (MAX_SCORE // 4) * (MAX_SPEC_GPU - state.free_total) // MAX_SPEC_GPU
        tags = state.tags > 0
        has, kinds = tags[:, tag], tags.sum(axis=1)
        bonus = np.where(has, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
        return _pick_max(base + bonus, feasible, ctx)


def _sigmoid_score(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.trunc(MAX_SCORE / (1.0 + np.exp(-(before - after) / 1000.0)))


def _fgd_rows(ctx: PlacementContext, job: Job, rows: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray]:
    """FGD's score and, for a shared pod, the best card slot of nodes ``rows``."""
    before = ctx.fragmentation.node[rows]
    after = ctx.fragmentation.after(job, rows)
    if after.ndim == 1:
        return _sigmoid_score(before, after), np.full(len(rows), -1)
    slot_scores = np.where(np.isnan(after), -1.0,
                           _sigmoid_score(before[:, None], np.nan_to_num(after)))
    best = np.argmax(slot_scores, axis=1)
    return slot_scores[np.arange(len(rows)), best], best


#: Re-score at most this many nodes one by one; above it, identical nodes are scored once.
_DEDUPE_ABOVE = 48


def fgd_scores(ctx: PlacementContext, job: Job, feasible: np.ndarray) -> np.ndarray:
    """FGD's score of every node for ``job`` (meaningful where ``feasible``).

    Cached per pod shape: a node's entry is recomputed only when the node changed since (its
    ``version``); when many are stale, nodes in the same state (type, free CPU, free share of
    each card) are scored once. A trace of thousands of pods so re-scores few nodes per pod.
    """
    state = ctx.state
    key = (job.cpu_milli, job.cards, job.gpu_milli, job.types)
    entry = ctx._fgd_cache.get(key)
    if entry is None:
        entry = ctx._fgd_cache[key] = (np.full(state.size, -1, np.int64), np.zeros(state.size))
    versions, scores = entry
    stale = np.flatnonzero(feasible & (versions != state.version))
    if stale.size > _DEDUPE_ABOVE:
        signature = np.column_stack([state.node_kind[stale], state.cpu_free[stale],
                                     np.sort(state.left[stale], axis=1)])
        _, first, inverse = np.unique(signature, axis=0, return_index=True,
                                      return_inverse=True)
        scores[stale] = _fgd_rows(ctx, job, stale[first])[0][inverse.ravel()]
    elif stale.size:
        scores[stale] = _fgd_rows(ctx, job, stale)[0]
    versions[stale] = state.version[stale]
    return scores


class FgdPolicy(Policy):
    name = "fgd"

    def pick(self, ctx, job, feasible):
        return _pick_max(fgd_scores(ctx, job, feasible), feasible, ctx)

    def shared_card(self, ctx, job, node):
        return int(_fgd_rows(ctx, job, np.array([node]))[1][0])


class FgdSeedPolicy(FgdPolicy):
    name = "fgd-seed"
    power_aware = True

    def pick(self, ctx, job, feasible):
        scores = np.where(feasible, fgd_scores(ctx, job, feasible), -np.inf)
        best = scores == scores.max()
        return _pick_min_first(seed_key(ctx.state, job), best)


# --- PWR ----------------------------------------------------------------------------------

def power_increase(state: ClusterState, job: Job, rows=None) -> np.ndarray:
    """Power added by placing ``job`` on each node (watts; awake cards and CPU sockets, as
    PWR models it): the cheapest accepted idle cards for a whole-card pod; for a shared pod 0
    on a node with a partly used card that fits (``shared_card = "busy"``), else the cheapest
    idle card's increase. ``rows`` (an index array) computes it for those nodes only."""
    if rows is None:
        rows = slice(None)
    increase = (state.host_power(rows, state.cpu_free[rows] - job.cpu_milli,
                                 state.pods[rows] + 1)
                - state.current_host_power()[rows])
    if job.cards == 0:
        return increase
    columns = state.columns(job.types)
    gain = state.type_busy_w[columns] - state.type_idle_w[columns]
    idle = state.idle_by_type[rows][:, columns]
    if job.shared:
        share = 1.0 if state.shared_card == "busy" else job.gpu_milli / MILLI
        opening = np.where(idle > 0, gain * share, np.inf).min(axis=1, initial=np.inf)
        if state.shared_card == "busy":
            partial = state.accepted_summary(job.types, "max_partial")[rows] >= job.gpu_milli
            opening = np.where(partial, 0.0, opening)
        else:
            shared_gain = np.where(state.max_partial_by_type[rows][:, columns] >= job.gpu_milli,
                                   gain * share, np.inf).min(axis=1, initial=np.inf)
            opening = np.minimum(opening, shared_gain)
        return increase + opening
    # Whole cards come cheapest type first (columns are in that order).
    remaining = np.full(len(increase), job.cards)
    for column in range(len(columns)):
        taken = np.minimum(idle[:, column], remaining)
        increase = increase + taken * gain[column]
        remaining = remaining - taken
    return increase


def pwr_card(state: ClusterState, job: Job, node: int) -> int:
    """PWR's card for a shared pod: the first card that adds the least power."""
    slots = state.fitting_slots(node, job)
    left = state.left[node, slots]
    gain = state.busy_w[node, slots] - state.idle_w[node, slots]
    if state.shared_card == "busy":
        added = np.where(left < MILLI, 0.0, gain)
    else:
        added = gain * job.gpu_milli / MILLI
    return int(slots[np.argmin(added)])


def _cached_increase(state: ClusterState, job: Job, rows: np.ndarray) -> np.ndarray:
    """:func:`power_increase` of nodes ``rows``, cached per pod shape: a node's entry is
    recomputed only when the node changed since (its ``version``). The increase is
    element-wise arithmetic on the node's own state, so a cached entry is the same number a
    fresh computation gives."""
    key = (job.cpu_milli, job.cards, job.gpu_milli, job.types)
    entry = state.increase_cache.get(key)
    if entry is None:
        entry = state.increase_cache[key] = (np.full(state.size, -1, np.int64),
                                             np.zeros(state.size))
    versions, values = entry
    stale = rows[versions[rows] != state.version[rows]]
    if stale.size:
        values[stale] = power_increase(state, job, stale)
        versions[stale] = state.version[stale]
    return values[rows]


def pwr_scores(state: ClusterState, job: Job, feasible: np.ndarray) -> np.ndarray:
    """PWR's normalised score (0..100) of every node, min-max over the feasible ones
    (meaningful where ``feasible``; only those nodes are scored)."""
    rows = np.flatnonzero(feasible)
    chosen = np.trunc(-_cached_increase(state, job, rows))
    low, high = chosen.min(), chosen.max()
    if high == low:
        return np.full(state.size, float(MAX_SCORE))
    raw = np.full(state.size, low)
    raw[rows] = chosen
    return (raw - low) * MAX_SCORE // (high - low)


class PwrPolicy(Policy):
    name = "pwr"

    def pick(self, ctx, job, feasible):
        return _pick_max(pwr_scores(ctx.state, job, feasible), feasible, ctx)

    def shared_card(self, ctx, job, node):
        return pwr_card(ctx.state, job, node)


class PwrFgdPolicy(FgdPolicy):
    name = "pwr-fgd"

    def pick(self, ctx, job, feasible):
        pwr_weight, fgd_weight = ctx.pwr_fgd_weights
        total = (pwr_weight * pwr_scores(ctx.state, job, feasible)
                 + fgd_weight * fgd_scores(ctx, job, feasible))
        return _pick_max(total, feasible, ctx)


POLICY_CLASSES: dict[str, Callable[[], Policy]] = {
    cls.name: cls for cls in (SeedPolicy, PowerFirstPolicy, FgdPolicy, PwrPolicy, PwrFgdPolicy,
                              FgdSeedPolicy, BestFitPolicy, DotProductPolicy, GpuPackingPolicy,
                              GpuClusteringPolicy, SpreadPolicy, BinPackPolicy, RandomPolicy)
}


def make_policy(name: str) -> Policy:
    """A fresh policy object by its name in configs and reports."""
    return POLICY_CLASSES[name]()
