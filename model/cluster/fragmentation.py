"""GPU fragmentation as the FGD paper defines it, vectorised over nodes.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent", USENIX ATC 2023, section 3; the definitions below follow its public
simulator (github.com/hkust-adsl/kubernetes-scheduler-simulator, ``pkg/utils/frag.go``).

*Typical pods*: the pod shapes ``(CPU, milli-GPU per card, cards, GPU types)`` of the workload,
commonest first, until they cover ``popularity`` (95 %) of its pods, with their frequencies
renormalised to 1 (CPU-only pods included, as the simulator's experiments configure it).

*Fragmentation of node n for typical pod m* (milli-GPU): if m asks for no GPU, or its GPU type
is not on the node, or the node cannot host it (too few cards with enough free milli-GPU, or
too little free CPU), every free milli-GPU of the node is a fragment; otherwise the fragments
are the free milli-GPU of the cards that have less free than m asks per card.

*Fragmentation of node n*: the frequency-weighted sum over the typical pods; of the cluster:
the sum over nodes. The *fragmentation rate* is that over the cluster's free milli-GPU.

The per-node terms are kept as two ``(nodes, typical)`` arrays, the free milli-GPU on cards
with less than m's share (``below``) and the number of cards with at least it (``fitting``), so
a hypothetical placement changes them in O(typical) per node and card: this is what makes the
FGD policy's score cheap enough for the whole trace (see :mod:`model.cluster.policies`).
"""

from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from model.cluster.state import ClusterState, weighted_sum
from model.cluster.workload import Job

__all__ = ["Fragmentation", "TypicalPods", "typical_pods"]


@dataclass(frozen=True)
class TypicalPods:
    """Typical pod shapes and their frequencies (summing to 1)."""

    cpu_milli: tuple[int, ...]
    gpu_milli: tuple[int, ...]
    cards: tuple[int, ...]
    types: tuple[frozenset[str] | None, ...]
    frequency: tuple[float, ...]
    covered: float

    def __len__(self) -> int:
        return len(self.frequency)

    def as_dict(self) -> dict:
        return {"shapes": len(self), "covered_fraction": self.covered,
                "top": [{"cpu_milli": c, "gpu_milli": g, "cards": k,
                         "types": None if t is None else sorted(t), "frequency": f}
                        for c, g, k, t, f in list(zip(self.cpu_milli, self.gpu_milli,
                                                      self.cards, self.types, self.frequency,
                                                      strict=True))[:10]]}


def _type_text(types: frozenset[str] | None) -> str:
    return "" if types is None else "|".join(sorted(types))


def typical_pods(jobs: Sequence[Job], popularity: float = 0.95) -> TypicalPods:
    """The typical pods of ``jobs``: shapes in decreasing count (equal counts: larger shape
    first, as the simulator's reversed sort orders them), added one at a time until they
    cover ``popularity`` of the pods, frequencies renormalised."""
    if not jobs:
        raise ValueError("Typical pods need at least one pod")
    counts = Counter((job.cpu_milli, job.gpu_milli, job.cards,
                      job.spec if job.types is not None and job.spec else _type_text(job.types))
                     for job in jobs)
    shapes = sorted(counts, key=lambda shape: (counts[shape], shape), reverse=True)
    total = len(jobs)
    chosen, covered = [], 0
    for shape in shapes:
        if covered >= popularity * total:
            break
        chosen.append(shape)
        covered += counts[shape]
    return TypicalPods(
        cpu_milli=tuple(shape[0] for shape in chosen),
        gpu_milli=tuple(shape[1] for shape in chosen),
        cards=tuple(shape[2] for shape in chosen),
        types=tuple(frozenset(shape[3].split("|")) if shape[3] else None for shape in chosen),
        frequency=tuple(counts[shape] / covered for shape in chosen),
        covered=covered / total,
    )


class Fragmentation:
    """The FGD fragmentation of every node of ``state``, kept current by :meth:`update`.

    ``node[n]`` is node n's fragmentation (milli-GPU); :meth:`after` gives it for
    hypothetical placements without changing anything.
    """

    def __init__(self, state: ClusterState, typical: TypicalPods):
        self.state = state
        self.typical = typical
        self.cpu = np.array(typical.cpu_milli, np.int64)
        self.milli = np.array(typical.gpu_milli, np.int64)
        self.cards = np.array(typical.cards, np.int64)
        self.frequency = np.array(typical.frequency)
        self.asks_gpu = self.milli > 0
        node_types = [frozenset(spec.cards) for spec in state.specs]
        #: (nodes, typical): the node has a card of a type the typical pod accepts.
        self.access = np.array([[types is None or bool(types & present)
                                 for types in typical.types] for present in node_types],
                               bool).reshape(state.size, len(typical))
        # ``below`` and ``fitting`` are views of one array, so that a memoised update writes
        # a node's terms in one assignment.
        self._terms_of = np.zeros((2, state.size, len(typical)), np.int64)
        self.below, self.fitting = self._terms_of
        self.node = np.zeros(state.size)
        self._total: float | None = None
        self._memo: dict[tuple, tuple] = {}
        self._counts = state.card_count.tolist()
        # Free CPU matters to a node's fragmentation only through the typical pods it can
        # host: the memo keys on how many of these sorted CPU asks it meets.
        self._cpu_steps = sorted(self.cpu.tolist())
        self.update(np.arange(state.size))

    def _terms(self, left: np.ndarray, exists: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        below_mask = left[:, None, :] < self.milli[None, :, None]
        below = np.where(below_mask, left[:, None, :], 0).sum(axis=2)
        fitting = (~below_mask & exists[:, None, :]).sum(axis=2)
        return below, fitting

    def value(self, rows, below, fitting, free_total, cpu_free) -> np.ndarray:
        """Fragmentation (milli-GPU) of nodes ``rows`` in a state given by its terms."""
        hostable = (self.asks_gpu & self.access[rows] & (fitting >= self.cards)
                    & (cpu_free[:, None] >= self.cpu))
        return weighted_sum(np.where(hostable, below, free_total[:, None]), self.frequency)

    def update(self, rows) -> None:
        """Recompute the terms of nodes ``rows`` (an index or an array) from the state."""
        state = self.state
        self._total = None
        if not isinstance(rows, int | np.integer):
            rows = np.atleast_1d(rows)
        if isinstance(rows, int | np.integer) or rows.size == 1:
            # One node changes per event, and nodes keep passing through the same states: a
            # memo keyed on (kind, the typical pods' CPU asks met, sorted free shares)
            # answers most updates; a miss costs one sort and one search for every typical
            # pod.
            node = int(rows) if isinstance(rows, int | np.integer) else int(rows[0])
            left = sorted(state.left[node, :self._counts[node]].tolist())
            cpu_free = int(state.cpu_free[node])
            key = (state._kinds[node], bisect_right(self._cpu_steps, cpu_free), *left)
            terms = self._memo.get(key)
            if terms is None:
                below_count = np.searchsorted(left, self.milli, side="left")
                below = np.concatenate(([0], np.cumsum(left, dtype=np.int64)))[below_count]
                fitting = len(left) - below_count
                hostable = (self.asks_gpu & self.access[node] & (fitting >= self.cards)
                            & (cpu_free >= self.cpu))
                terms = (np.stack([below, fitting]),
                         float(weighted_sum(np.where(hostable, below, sum(left)),
                                            self.frequency)))
                if len(self._memo) > 500_000:
                    self._memo.clear()
                self._memo[key] = terms
            self._terms_of[:, node], self.node[node] = terms
            return
        self.below[rows], self.fitting[rows] = self._terms(state.left[rows], state.exists[rows])
        self.node[rows] = self.value(rows, self.below[rows], self.fitting[rows],
                                     state.left[rows].sum(axis=1), state.cpu_free[rows])

    def total(self) -> float:
        """Fragmented milli-GPU of the whole cluster: ``node.sum()``, kept until the next
        :meth:`update` (the same sum, in the same order)."""
        if self._total is None:
            self._total = float(self.node.sum())
        return self._total

    def cluster(self) -> tuple[float, float]:
        """``(fragmented, free)`` milli-GPU of the whole cluster."""
        return self.total(), float(self.state.free_milli)

    def after(self, job: Job, rows: np.ndarray) -> np.ndarray:
        """Fragmentation of nodes ``rows`` after placing ``job`` there: shape ``(rows,)`` for
        a CPU-only or whole-card pod, ``(rows, slots)`` for a shared pod (one column per card
        it could take; ``nan`` where the card cannot take it)."""
        state = self.state
        lefts = state.left[rows]
        free_total = lefts.sum(axis=1)
        cpu_after = state.cpu_free[rows] - job.cpu_milli
        below, fitting = self.below[rows], self.fitting[rows]
        if job.cards == 0:
            return self.value(rows, below, fitting, free_total, cpu_after)
        if not job.shared:
            # Whole cards come from fully free ones: each had >= every share, now has 0.
            fitting = fitting - job.cards * self.asks_gpu
            return self.value(rows, below, fitting, free_total - job.gpu_request_milli,
                              cpu_after)
        result = np.full((len(rows), state.width), np.nan)
        fit = state.accepted(job.types)[rows] & (lefts >= job.gpu_milli)
        milli = self.milli[None, :]
        usable_slots = np.flatnonzero(fit.any(axis=0)).tolist()
        for slot in usable_slots:
            usable = fit[:, slot]
            left = lefts[:, slot][:, None]
            taken = left - job.gpu_milli
            new_below = below - np.where(left < milli, left, 0) + np.where(taken < milli,
                                                                          taken, 0)
            new_fitting = fitting - (left >= milli) + (taken >= milli)
            value = self.value(rows, new_below, new_fitting, free_total - job.gpu_milli,
                               cpu_after)
            result[:, slot] = np.where(usable, value, np.nan)
        return result

