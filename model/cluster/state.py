"""The cluster's resources as numpy arrays, so that every policy scores all nodes at once.

Rows are nodes, columns are card slots (a node with fewer cards than the widest node has
padding slots that never exist). A card has ``left`` milli-GPU free: 1000 when fully free (an
*idle card* in the seed's words), less while pods share it, 0 when a whole-card pod holds it.
Nodes also have free CPU (milli-vCPU) and memory (MiB) and a pod count.

Power (watts), the same for every policy:

* a card with any pod draws its type's ``busy_w`` (``shared_card = "busy"``, the PWR paper's
  model), or ``idle_w + (busy_w - idle_w) x used / 1000`` (``"proportional"``); a free card
  ``idle_w``, or ``standby_w`` in low-power standby;
* a host draws ``socket_busy_w`` for each *active* socket and ``socket_idle_w`` for the others,
  where a socket is active while one of its physical cores is allocated (two vCPUs a core;
  sockets fill in order, as the PWR simulator counts them) and a node with any pod has at least
  one active socket; a host with no pod in low-power standby draws ``sleep_w``.

The seed's *CPU standby power* of a fully idle node is ``sockets x socket_idle_w``.
"""

from collections.abc import Mapping, Sequence

import numpy as np

from model.checks import InvariantError
from model.cluster.config import NodeSpec
from model.cluster.power import CardType, sockets_of
from model.cluster.workload import MILLI, Job

__all__ = ["TAGS", "ClusterState", "gpu_tag", "weighted_sum"]

#: The attribute holding each :meth:`ClusterState.accepted_summary` over every type.
_TOTALS = {"idle": "idle_count", "free": "free_total", "power": "idle_power",
           "max_left": "max_left", "max_partial": "max_partial", "cards": "card_count"}

#: Tags of the GPU-clustering policy: 0 a shared pod, k a k-card pod (k = 1..8), 9 more cards.
TAGS = 10


def gpu_tag(job: Job) -> int | None:
    """The GPU-clustering tag of ``job`` (``None`` for a CPU-only pod): pods of one tag are
    packed together (the FGD simulator's ``share-gpu`` / ``<k>-gpu`` affinity)."""
    if job.cards == 0:
        return None
    return 0 if job.shared else min(job.cards, TAGS - 1)


def weighted_sum(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``values @ weights`` over the last axis, the same bits on every machine: numpy's
    elementwise product and its pairwise sum along each row, whose order is fixed, where
    ``@`` calls the BLAS, whose kernel (chosen per CPU at run time: OpenBLAS's Haswell and
    SkylakeX kernels differ) sets the order of the additions and so the last bits."""
    return (values * weights).sum(axis=-1)


class ClusterState:
    """Free resources of every node and card, kept up to date by :meth:`allocate` and
    :meth:`release`; ``version[n]`` counts the changes of node ``n`` (caches key on it).

    Parameters
    ----------
    nodes
        The cluster, in node-index order.
    card_types
        Power entries by card type name (every type the nodes use).
    shared_card
        ``"busy"`` or ``"proportional"``: the power of a partly used card.
    """

    def __init__(self, nodes: Sequence[NodeSpec], card_types: Mapping[str, CardType], *,
                 shared_card: str = "busy"):
        specs = tuple(nodes)
        if not specs:
            raise ValueError("A cluster needs at least one node")
        self.specs = specs
        self.size = len(specs)
        self.width = max(1, max(len(spec.cards) for spec in specs))
        self.type_names = tuple(sorted({card for spec in specs for card in spec.cards}))
        self.type_index = {name: index for index, name in enumerate(self.type_names)}
        self.shared_card = shared_card
        shape = (self.size, self.width)
        self.exists = np.zeros(shape, bool)
        self.card_type = np.full(shape, -1, np.int32)
        self.busy_w = np.zeros(shape)
        self.idle_w = np.zeros(shape)
        self.standby_w = np.zeros(shape)
        for row, spec in enumerate(specs):
            for slot, name in enumerate(spec.cards):
                entry = card_types[name]
                self.exists[row, slot] = True
                self.card_type[row, slot] = self.type_index[name]
                self.busy_w[row, slot] = entry.busy_w
                self.idle_w[row, slot] = entry.idle_w
                self.standby_w[row, slot] = entry.standby_w
        #: Free milli-GPU of each card (0 for padding slots).
        self.left = np.where(self.exists, MILLI, 0).astype(np.int64)
        self.card_count = self.exists.sum(axis=1)
        self.cpu_cap = np.array([spec.cpu_milli for spec in specs], np.int64)
        self.mem_cap = np.array([spec.memory_mib for spec in specs], np.int64)
        self.cpu_free = self.cpu_cap.copy()
        self.mem_free = self.mem_cap.copy()
        self.pods = np.zeros(self.size, np.int64)
        cores, sockets = zip(*(sockets_of(spec.cpu_milli, spec.cores_per_socket)
                               for spec in specs), strict=True)
        self.cores = np.array(cores, np.int64)
        self.sockets = np.array(sockets, np.int64)
        self.cores_per_socket = np.array([spec.cores_per_socket or core for spec, core
                                          in zip(specs, cores, strict=True)], np.int64)
        self.socket_busy_w = np.array([spec.cpu_busy_w for spec in specs])
        self.socket_idle_w = np.array([spec.cpu_standby_w for spec in specs])
        self.sleep_w = np.array([spec.sleep_w for spec in specs])
        #: The seed's CPU standby power of each node (all sockets idle).
        self.cpu_standby_power = self.sockets * self.socket_idle_w
        self.version = np.zeros(self.size, np.int64)
        #: Per node and card: ``{job index: milli}`` of the pods holding it.
        self.holders: list[list[dict[int, int]]] = [[{} for _ in spec.cards] for spec in specs]
        self.total_milli = int(self.card_count.sum()) * MILLI
        #: Resident GPU pods of each node by GPU-clustering tag (:func:`gpu_tag`).
        self.tags = np.zeros((self.size, TAGS), np.int64)
        self._accepted: dict[frozenset[str] | None, np.ndarray] = {}
        self._columns: dict[frozenset[str] | None, np.ndarray] = {}
        # Per-node summaries by card type (columns: type_names), kept current by _summarise so
        # that a policy scores every node from (nodes, types) arrays instead of every card.
        kinds = len(self.type_names)
        self.type_busy_w = np.array([card_types[name].busy_w for name in self.type_names])
        self.type_idle_w = np.array([card_types[name].idle_w for name in self.type_names])
        self.cards_by_type = np.zeros((self.size, kinds), np.int64)
        for row, spec in enumerate(specs):
            for name in spec.cards:
                self.cards_by_type[row, self.type_index[name]] += 1
        #: Fully free cards, free milli-GPU, the most free on one card, and the most free on
        #: one partly used card (-1: none), by node and type. The four tables are views of
        #: one array (and the four node totals below of another) so that :meth:`_summarise`
        #: writes a node's summaries in two assignments.
        self._by_type = np.stack([self.cards_by_type, self.cards_by_type * MILLI,
                                  np.where(self.cards_by_type > 0, MILLI, 0),
                                  np.full((self.size, kinds), -1)]).astype(np.int64)
        (self.idle_by_type, self.free_by_type, self.max_left_by_type,
         self.max_partial_by_type) = self._by_type
        #: The same over every type of the node, and the seed's second power over all idle
        #: cards (sum of their first power).
        self._totals = np.stack([self.card_count, self.card_count * MILLI,
                                 np.where(self.card_count > 0, MILLI, 0),
                                 np.full(self.size, -1)]).astype(np.int64)
        self.idle_count, self.free_total, self.max_left, self.max_partial = self._totals
        self.idle_power = self.busy_w.sum(axis=1)
        #: Free milli-GPU of the whole cluster (``left.sum()``, kept by allocate/release).
        self.free_milli = self.total_milli
        self._slot_types = [[self.type_index[name] for name in spec.cards] for spec in specs]
        self._single_type = [len(set(spec.cards)) <= 1 for spec in specs]
        self._slot_idle = [[card_types[name].idle_w for name in spec.cards] for spec in specs]
        self._slot_standby = [[card_types[name].standby_w for name in spec.cards]
                              for spec in specs]
        #: Nodes of one kind (same single card type and count) in the same state behave the
        #: same; a mixed-type node is a kind of its own. Caches score each kind-state once.
        kinds_seen: dict[tuple, int] = {}
        self.node_kind = np.array([
            kinds_seen.setdefault((spec.cards,) if len(set(spec.cards)) <= 1 else (row,),
                                  len(kinds_seen))
            for row, spec in enumerate(specs)], np.int64)
        self._kinds = self.node_kind.tolist()
        self._slot_busy = [[card_types[name].busy_w for name in spec.cards] for spec in specs]
        self._summaries: dict[tuple, tuple] = {}
        self._host_w = self.host_power()
        #: PWR's power increase by pod shape: ``(versions, watts)`` per node (see
        #: :func:`model.cluster.policies.pwr_scores`).
        self.increase_cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._host_version = self.version.copy()

    # Masks ------------------------------------------------------------------------------
    def accepted(self, types: frozenset[str] | None) -> np.ndarray:
        """``(nodes, slots)``: the cards of a type in ``types`` (every card for ``None``)."""
        mask = self._accepted.get(types)
        if mask is None:
            if types is None:
                mask = self.exists.copy()
            else:
                mask = self.exists & np.isin(self.card_type, self.columns(types))
            self._accepted[types] = mask
        return mask

    def columns(self, types: frozenset[str] | None) -> np.ndarray:
        """The type columns of ``types`` (every type for ``None``), cheapest type first."""
        columns = self._columns.get(types)
        if columns is None:
            names = self.type_names if types is None else [name for name in types
                                                            if name in self.type_index]
            columns = np.array(sorted((self.type_index[name] for name in names),
                                      key=lambda column: (self.type_busy_w[column], column)),
                               np.int64)
            self._columns[types] = columns
        return columns

    def accepted_summary(self, types: frozenset[str] | None, name: str) -> np.ndarray:
        """``(nodes,)``: one summary over the accepted types: ``"idle"`` cards, ``"free"``
        milli-GPU, ``"power"`` (first power of the idle cards), ``"max_left"``,
        ``"max_partial"``, ``"cards"``."""
        if types is None:
            return getattr(self, _TOTALS[name])
        columns = self.columns(types)
        if name == "power":
            return weighted_sum(self.idle_by_type[:, columns], self.type_busy_w[columns])
        table = {"idle": self.idle_by_type, "free": self.free_by_type,
                 "max_left": self.max_left_by_type, "max_partial": self.max_partial_by_type,
                 "cards": self.cards_by_type}[name][:, columns]
        if name in ("max_left", "max_partial"):
            return table.max(axis=1) if columns.size else np.full(self.size, -1, np.int64)
        return table.sum(axis=1)

    def fit_cards(self, job: Job) -> np.ndarray:
        """``(nodes, slots)``: accepted cards with at least ``job.gpu_milli`` free."""
        return self.accepted(job.types) & (self.left >= job.gpu_milli)

    def feasible(self, job: Job) -> np.ndarray:
        """``(nodes,)``: the nodes that can hold ``job`` now (cards, CPU and memory)."""
        ok = (self.cpu_free >= job.cpu_milli) & (self.mem_free >= job.memory_mib)
        if job.cards == 0:
            return ok
        if job.shared:
            return ok & (self.accepted_summary(job.types, "max_left") >= job.gpu_milli)
        return ok & (self.accepted_summary(job.types, "idle") >= job.cards)

    def idle_cards(self, types: frozenset[str] | None) -> np.ndarray:
        """``(nodes, slots)``: accepted cards that are fully free (the seed's idle cards)."""
        return self.accepted(types) & (self.left == MILLI)

    # Card choice inside a node -----------------------------------------------------------
    def whole_cards(self, node: int, job: Job) -> tuple[int, ...]:
        """The ``job.cards`` accepted free cards of ``node`` a whole-card pod takes: lowest
        first power, then lowest slot."""
        if job.types is None:
            lefts = self.left[node].tolist()
            free = [slot for slot in range(len(self._slot_types[node])) if lefts[slot] == MILLI]
        else:
            free = np.flatnonzero(self.accepted(job.types)[node]
                                  & (self.left[node] == MILLI)).tolist()
        if self._single_type[node]:
            return tuple(free[:job.cards])
        order = sorted(free, key=lambda slot: (self.busy_w[node, slot], slot))
        return tuple(order[:job.cards])

    def could_hold(self, job: Job) -> bool:
        """True when some node, empty, could hold ``job`` (the admission check's fast
        path; :func:`~model.cluster.workload.admission_problem` says why not)."""
        ok = (self.cpu_cap >= job.cpu_milli) & (self.mem_cap >= job.memory_mib)
        if job.cards:
            ok &= self.accepted_summary(job.types, "cards") >= job.cards
        return bool(ok.any())

    def fitting_slots(self, node: int, job: Job) -> np.ndarray:
        """The accepted card slots of ``node`` with at least ``job.gpu_milli`` free."""
        return np.flatnonzero(self.accepted(job.types)[node] & (self.left[node] >= job.gpu_milli))

    def best_fit_card(self, node: int, job: Job) -> int:
        """The accepted card of ``node`` with the least free milli-GPU that still fits
        ``job`` (lowest slot among equals): the simulator's ``best`` GPU selection."""
        slots = self.fitting_slots(node, job)
        return int(slots[np.argmin(self.left[node, slots])])

    # Changes ----------------------------------------------------------------------------
    def allocate(self, node: int, cards: Sequence[int], job: Job) -> None:
        """Give ``job`` its ``gpu_milli`` of each card in ``cards`` and its CPU and memory;
        over-allocating anything is an :class:`InvariantError`."""
        if len(cards) != job.cards:
            raise InvariantError(f"{job.name} needs {job.cards} cards, given {len(cards)}")
        name = self.specs[node].name
        count, milli, holders = len(self._slot_types[node]), job.gpu_milli, self.holders[node]
        lefts = self.left[node].tolist()
        for slot in cards:
            if not 0 <= slot < count:
                raise InvariantError(f"{job.name} given card slot {slot} of {name}, which "
                                     f"has no such card")
            if lefts[slot] < milli:
                held = holders[slot]
                raise InvariantError(f"card {slot} of {name} given to {job.name} "
                                     f"({milli} milli) with only "
                                     f"{lefts[slot]} free while job "
                                     f"{min(held) if held else '-'} holds it")
            if job.index in holders[slot]:
                raise InvariantError(f"{job.name} given card {slot} of {name} twice")
        if self.cpu_free[node] < job.cpu_milli or self.mem_free[node] < job.memory_mib:
            raise InvariantError(f"{job.name} placed on {name} without enough CPU or memory")
        for slot in cards:
            self.left[node, slot] -= milli
            holders[slot][job.index] = milli
        self.free_milli -= milli * len(cards)
        self.cpu_free[node] -= job.cpu_milli
        self.mem_free[node] -= job.memory_mib
        self.pods[node] += 1
        self._summarise(node)
        tag = gpu_tag(job)
        if tag is not None:
            self.tags[node, tag] += 1
        self.version[node] += 1

    def release(self, node: int, cards: Sequence[int], job: Job) -> None:
        """Return what :meth:`allocate` gave ``job``."""
        name = self.specs[node].name
        for slot in cards:
            if self.holders[node][slot].get(job.index) != job.gpu_milli:
                raise InvariantError(f"card {slot} of {name} released by {job.name}, which "
                                     f"does not hold it")
        for slot in cards:
            del self.holders[node][slot][job.index]
            self.left[node, slot] += job.gpu_milli
        self.free_milli += job.gpu_milli * len(cards)
        self.cpu_free[node] += job.cpu_milli
        self.mem_free[node] += job.memory_mib
        self.pods[node] -= 1
        self._summarise(node)
        tag = gpu_tag(job)
        if tag is not None:
            self.tags[node, tag] -= 1
        self.version[node] += 1

    def _summarise(self, node: int) -> None:
        """Recompute node ``node``'s summaries from its cards (memoised on the node's kind
        and its cards' free shares, in slot order: nodes keep passing through the same
        states)."""
        lefts = tuple(self.left[node, :len(self._slot_types[node])].tolist())
        key = (self._kinds[node], lefts)
        summary = self._summaries.get(key)
        if summary is None:
            kinds = len(self.type_names)
            idle, free = [0] * kinds, [0] * kinds
            max_left, max_partial = [0] * kinds, [-1] * kinds
            power = 0.0
            for slot, left in enumerate(lefts):
                kind = self._slot_types[node][slot]
                free[kind] += left
                max_left[kind] = max(max_left[kind], left)
                if left == MILLI:
                    idle[kind] += 1
                    power += self._slot_busy[node][slot]
                else:
                    max_partial[kind] = max(max_partial[kind], left)
            summary = (np.array([idle, free, max_left, max_partial], np.int64),
                       np.array([sum(idle), sum(free), max(max_left, default=0),
                                 max(max_partial, default=-1)], np.int64), power)
            if len(self._summaries) > 200_000:
                self._summaries.clear()
            self._summaries[key] = summary
        self._by_type[:, node], self._totals[:, node], self.idle_power[node] = summary

    # Power -------------------------------------------------------------------------------
    def active_sockets(self, rows=slice(None), cpu_free: np.ndarray | None = None,
                       pods: np.ndarray | None = None) -> np.ndarray:
        """Active sockets of nodes ``rows`` (all by default), now or with hypothetical
        ``cpu_free`` and ``pods`` for those rows."""
        cpu_free = self.cpu_free[rows] if cpu_free is None else cpu_free
        pods = self.pods[rows] if pods is None else pods
        working = -((cpu_free - self.cpu_cap[rows]) // 2000)          # ceil(used / 2000)
        active = np.minimum(self.sockets[rows], -(-working // self.cores_per_socket[rows]))
        return np.where(pods > 0, np.maximum(active, 1), active)

    def active_sockets_of(self, node: int) -> int:
        """:meth:`active_sockets` of one node (scalar arithmetic, for the energy flush)."""
        used = int(self.cpu_cap[node] - self.cpu_free[node])
        working = -(-used // 2000)
        active = min(int(self.sockets[node]), -(-working // int(self.cores_per_socket[node])))
        return max(active, 1) if self.pods[node] > 0 else active

    def host_power(self, rows=slice(None), cpu_free=None, pods=None) -> np.ndarray:
        """Awake host power of nodes ``rows`` (watts), now or hypothetically."""
        active = self.active_sockets(rows, cpu_free, pods)
        return (active * self.socket_busy_w[rows]
                + (self.sockets[rows] - active) * self.socket_idle_w[rows])

    def current_host_power(self) -> np.ndarray:
        """:meth:`host_power` of every node now (watts), recomputed only for the nodes that
        changed since the last call (a cache keyed on :attr:`version`; read-only)."""
        stale = np.flatnonzero(self.version != self._host_version)
        if stale.size:
            self._host_w[stale] = self.host_power(stale)
            self._host_version[stale] = self.version[stale]
        return self._host_w

    def card_power(self, left: np.ndarray | None = None) -> np.ndarray:
        """Awake power of every card (watts; 0 for padding)."""
        left = self.left if left is None else left
        if self.shared_card == "busy":
            power = np.where(left < MILLI, self.busy_w, self.idle_w)
        else:
            power = self.idle_w + (self.busy_w - self.idle_w) * (MILLI - left) / MILLI
        return np.where(self.exists, power, 0.0)

    def awake_power(self) -> float:
        """The cluster's power with every card and host awake (watts): the inflation
        experiment's power figure, which has no time and so no standby."""
        return float(self.card_power().sum() + self.host_power().sum())

    # Checks -----------------------------------------------------------------------------
    def check(self) -> None:
        """Raise :class:`InvariantError` unless every card's free milli-GPU plus its holders'
        shares is 1000, nothing is negative, and no node's CPU or memory is over-allocated."""
        for node, spec in enumerate(self.specs):
            for slot in range(len(spec.cards)):
                held = sum(self.holders[node][slot].values())
                if held + self.left[node, slot] != MILLI or self.left[node, slot] < 0:
                    raise InvariantError(f"card {slot} of {spec.name}: {self.left[node, slot]} "
                                         f"free + {held} held != 1000")
        if np.any(self.cpu_free < 0) or np.any(self.cpu_free > self.cpu_cap):
            raise InvariantError("a node's free CPU is outside 0..capacity")
        if np.any(self.mem_free < 0) or np.any(self.mem_free > self.mem_cap):
            raise InvariantError("a node's free memory is outside 0..capacity")
        if np.any(self.left[~self.exists] != 0):
            raise InvariantError("a padding card slot has free milli-GPU")
        for node in range(self.size):
            summaries = (self.idle_count[node], self.free_total[node], self.max_left[node],
                         self.max_partial[node], self.idle_power[node])
            self._summarise(node)
            if summaries != (self.idle_count[node], self.free_total[node], self.max_left[node],
                             self.max_partial[node], self.idle_power[node]):
                raise InvariantError(f"the summaries of {self.specs[node].name} were stale: "
                                     f"{summaries}")
