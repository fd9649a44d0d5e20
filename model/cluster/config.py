"""Scenario files of the cluster model: card types, nodes, power management, workload or trace.

A scenario (TOML; every field is validated by :mod:`model.config`, errors name the field)::

    name = "mixed cards, steady stream"     # optional, defaults to the file's stem
    description = "..."                     # optional
    policies = ["seed-004", "spread", "bin-pack", "random"]   # the default; table order
    backfill = false                        # true: later jobs may pass a blocked queue head

    [power]
    standby = "all"          # which policies put idle cards/nodes in low-power standby:
                             # "all" (default), "seed" (power-aware ones only) or "none"
    standby_after_s = 0.0    # idle time before standby (the seed: at once)
    wake_s = 0.0             # start delay of a job placed on a card or node in standby

    [card_types.A100]        # one table per GPU type: the seed's first power and its states
    busy_w = 400.0           # the "first power": draw while running a job
    idle_w = 50.0            # awake and idle
    standby_w = 15.0         # low-power standby

    [[nodes]]                # a group of identical nodes
    count = 8
    name = "a100"            # node names a100-0 .. a100-7 (default: "node<group>")
    cards = { A100 = 8 }     # cards by type; several types on one node are allowed
    cpu_busy_w = 350.0       # host (CPU, fans, ...) power while any card is busy
    cpu_standby_w = 150.0    # host power while every card is idle: the seed's CPU standby
                             # power, added to the second power (the third power)
    sleep_w = 20.0           # host power in low-power standby

    [workload]               # the synthetic generator (SyntheticWorkload), or ...
    jobs = 3000
    ...

    [trace]                  # ... the Alibaba GPU trace v2023 CSV files (TraceSource)
    pods = "../../tests/data/alibaba_pods_sample.csv"    # relative to this file
    nodes = "../../tests/data/alibaba_nodes_sample.csv"  # optional: else [[nodes]]

Times are in seconds and powers in watts throughout.
"""

from dataclasses import dataclass
from pathlib import Path

from model.cluster.placement import POLICIES
from model.config import Budget, ConfigError, Fields, load_toml

__all__ = [
    "DEFAULT_POLICIES",
    "MAX_JOBS",
    "MAX_NODES",
    "MAX_NODE_CHECKS",
    "CardType",
    "NodeSpec",
    "PowerManagement",
    "Scenario",
    "SyntheticWorkload",
    "TraceSource",
    "load_scenario",
]

#: The largest synthetic run a scenario may ask for (refused at load time, naming the field):
#: placement looks at every node for every job, about a microsecond each, so a run of
#: MAX_NODE_CHECKS job-node pairs takes a minute or two per policy.
MAX_NODES = 100_000
MAX_JOBS = 1_000_000
MAX_NODE_CHECKS = 100_000_000

#: The policies a scenario compares unless it names its own.
DEFAULT_POLICIES = ("seed-004", "spread", "bin-pack", "random")


@dataclass(frozen=True)
class CardType:
    """One GPU type: ``busy_w`` (the seed's first power), ``idle_w`` and ``standby_w``."""

    name: str
    busy_w: float
    idle_w: float
    standby_w: float


@dataclass(frozen=True)
class NodeSpec:
    """One node: the type of each card, and the host power while active, while fully idle
    (the seed's CPU standby power) and in low-power standby."""

    name: str
    cards: tuple[str, ...]
    cpu_busy_w: float
    cpu_standby_w: float
    sleep_w: float


@dataclass(frozen=True)
class PowerManagement:
    """Low-power standby: for which policies (``"all"``, ``"seed"``, ``"none"``), after how
    long an idle card or fully idle node enters it, and the start delay it costs a job."""

    standby: str = "all"
    standby_after_s: float = 0.0
    wake_s: float = 0.0


@dataclass(frozen=True)
class SyntheticWorkload:
    """The synthetic job stream.

    ``arrival = "poisson"``: exponential gaps of mean ``mean_interarrival_s``. ``"bursty"``:
    bursts of ``burst_size`` jobs arriving together, exponential gaps of mean
    ``burst_gap_s`` between bursts. A job needs ``k`` cards, ``k`` drawn from ``cards`` with
    ``card_weights``; it runs a log-normal time of mean ``mean_duration_s`` and log-sigma
    ``duration_sigma``; with probability ``pinned_fraction`` it names one card type (drawn in
    proportion to the cluster's cards of each type that has a node with ``k`` such cards),
    otherwise it accepts any type. ``quick_jobs`` replaces ``jobs`` under ``--quick``.
    """

    jobs: int = 2000
    quick_jobs: int = 200
    arrival: str = "poisson"
    mean_interarrival_s: float = 60.0
    burst_size: int = 10
    burst_gap_s: float = 600.0
    cards: tuple[int, ...] = (1, 2, 4, 8)
    card_weights: tuple[float, ...] = (0.5, 0.25, 0.15, 0.1)
    mean_duration_s: float = 1800.0
    duration_sigma: float = 1.0
    pinned_fraction: float = 0.0


@dataclass(frozen=True)
class TraceSource:
    """The Alibaba GPU cluster trace v2023 files (:mod:`model.cluster.trace`).

    ``pods`` is a pod list, ``nodes`` a node list (``None``: the scenario's ``[[nodes]]``).
    ``limit`` keeps the first pods with GPUs (0: all), ``quick_limit`` under ``--quick``.
    ``shared_gpu``: a pod asking for part of one GPU (``gpu_milli < 1000``) is given a ``"whole"``
    card (the default) or ``"skip"``-ped; either way it is counted. Trace nodes get the host
    powers ``cpu_busy_w``, ``cpu_standby_w`` and ``sleep_w``.
    """

    pods: Path
    nodes: Path | None = None
    limit: int = 0
    quick_limit: int = 0
    shared_gpu: str = "whole"
    cpu_busy_w: float = 300.0
    cpu_standby_w: float = 120.0
    sleep_w: float = 15.0


@dataclass(frozen=True)
class Scenario:
    """One scenario file, validated. ``nodes`` is empty when the nodes come from a trace."""

    name: str
    description: str
    source: Path
    policies: tuple[str, ...]
    backfill: bool
    power: PowerManagement
    card_types: dict[str, CardType]
    nodes: tuple[NodeSpec, ...]
    workload: SyntheticWorkload | None
    trace: TraceSource | None


def _power_management(fields: Fields) -> PowerManagement:
    table = fields.table("power", {})
    power = PowerManagement(
        standby=table.str("standby", "all", choices=("all", "seed", "none")),
        standby_after_s=table.float("standby_after_s", 0.0, minimum=0.0),
        wake_s=table.float("wake_s", 0.0, minimum=0.0),
    )
    table.done()
    return power


def _card_types(fields: Fields) -> dict[str, CardType]:
    table = fields.table("card_types")
    types = {}
    for name in table.keys():
        entry = table.table(name)
        types[name] = CardType(
            name=name,
            busy_w=entry.float("busy_w", minimum=0.0),
            idle_w=entry.float("idle_w", minimum=0.0),
            standby_w=entry.float("standby_w", minimum=0.0),
        )
        entry.done()
    if not types:
        raise fields.error("card_types", "must name at least one card type")
    table.done()
    return types


def _nodes(fields: Fields, card_types: dict[str, CardType]) -> tuple[NodeSpec, ...]:
    nodes: list[NodeSpec] = []
    names: set[str] = set()
    budget = Budget(MAX_NODES, "nodes", "a run this size would take hours")
    for group_index, group in enumerate(fields.tables("nodes", [])):
        count = group.int("count", 1, minimum=1)
        budget.charge(group, "count", count)
        prefix = group.str("name", f"node{group_index}")
        cards_table = group.table("cards")
        cards: list[str] = []
        for card_type in cards_table.keys():
            if card_type not in card_types:
                raise cards_table.error(card_type, f"is not a card type (known: "
                                        f"{', '.join(sorted(card_types))})")
            cards += [card_type] * cards_table.int(card_type, minimum=0)
        cards_table.done()
        if not cards:
            raise group.error("cards", "must give the node at least one card")
        cpu_busy_w = group.float("cpu_busy_w", minimum=0.0)
        cpu_standby_w = group.float("cpu_standby_w", minimum=0.0)
        sleep_w = group.float("sleep_w", minimum=0.0)
        group.done()
        for index in range(count):
            name = f"{prefix}-{index}" if count > 1 else prefix
            if name in names:
                raise group.error("name", f"gives node name {name!r} twice")
            names.add(name)
            nodes.append(NodeSpec(name, tuple(cards), cpu_busy_w, cpu_standby_w, sleep_w))
    return tuple(nodes)


def _workload(table: Fields) -> SyntheticWorkload:
    defaults = SyntheticWorkload()
    cards = table.int_list("cards", list(defaults.cards), minimum=1)
    if not cards:
        raise table.error("cards", "must list at least one card count")
    weights = table.float_list("card_weights", [1.0] * len(cards) if "cards" in table
                               else list(defaults.card_weights), length=len(cards), minimum=0.0)
    if sum(weights) <= 0:
        raise table.error("card_weights", "must not all be zero")
    workload = SyntheticWorkload(
        jobs=table.int("jobs", defaults.jobs, minimum=1, maximum=MAX_JOBS),
        quick_jobs=table.int("quick_jobs", defaults.quick_jobs, minimum=1, maximum=MAX_JOBS),
        arrival=table.str("arrival", defaults.arrival, choices=("poisson", "bursty")),
        mean_interarrival_s=table.float("mean_interarrival_s", defaults.mean_interarrival_s,
                                        minimum=0.0),
        burst_size=table.int("burst_size", defaults.burst_size, minimum=1),
        burst_gap_s=table.float("burst_gap_s", defaults.burst_gap_s, minimum=0.0),
        cards=cards,
        card_weights=weights,
        mean_duration_s=table.float("mean_duration_s", defaults.mean_duration_s,
                                    minimum=1e-9),
        duration_sigma=table.float("duration_sigma", defaults.duration_sigma, minimum=0.0),
        pinned_fraction=table.float("pinned_fraction", defaults.pinned_fraction, minimum=0.0,
                                    maximum=1.0),
    )
    table.done()
    return workload


def _trace(table: Fields, base: Path) -> TraceSource:
    defaults = TraceSource(pods=Path())
    nodes = table.str("nodes", "") or None
    trace = TraceSource(
        pods=base / table.str("pods"),
        nodes=base / nodes if nodes is not None else None,
        limit=table.int("limit", 0, minimum=0),
        quick_limit=table.int("quick_limit", 0, minimum=0),
        shared_gpu=table.str("shared_gpu", "whole", choices=("whole", "skip")),
        cpu_busy_w=table.float("cpu_busy_w", defaults.cpu_busy_w, minimum=0.0),
        cpu_standby_w=table.float("cpu_standby_w", defaults.cpu_standby_w, minimum=0.0),
        sleep_w=table.float("sleep_w", defaults.sleep_w, minimum=0.0),
    )
    table.done()
    return trace


def load_scenario(path) -> Scenario:
    """Read and validate one scenario file; a :class:`~model.config.ConfigError` names the
    file and the field."""
    path = Path(path)
    fields = Fields(load_toml(path), source=path)
    name = fields.str("name", path.stem)
    description = fields.str("description", "")
    policies = fields.list("policies", list(DEFAULT_POLICIES))
    for index, policy in enumerate(policies):
        if policy not in POLICIES:
            raise fields.error(f"policies[{index}]", f"must be one of "
                               f"{', '.join(map(repr, POLICIES))}, not {policy!r}")
    if not policies:
        raise fields.error("policies", "must name at least one policy")
    if len(set(policies)) != len(policies):
        raise fields.error("policies", f"names a policy twice: {policies!r}")
    backfill = fields.bool("backfill", False)
    power = _power_management(fields)
    card_types = _card_types(fields)
    nodes = _nodes(fields, card_types)
    has_workload, has_trace = "workload" in fields, "trace" in fields
    if has_workload == has_trace:
        raise ConfigError(f"{path}: give exactly one of [workload] (synthetic jobs) and "
                          f"[trace] (Alibaba CSV files)")
    workload = _workload(fields.table("workload")) if has_workload else None
    trace = _trace(fields.table("trace"), path.parent) if has_trace else None
    if trace is not None and trace.nodes is not None and nodes:
        raise fields.error("nodes", "cannot be given together with trace.nodes (the nodes "
                           "come from the node list)")
    if not nodes and (trace is None or trace.nodes is None):
        raise fields.error("nodes", "is required (at least one [[nodes]] table) unless "
                           "trace.nodes names a node list")
    if workload is not None and workload.jobs * len(nodes) > MAX_NODE_CHECKS:
        raise ConfigError(f"{path}: workload.jobs: {workload.jobs:,} jobs on {len(nodes):,} "
                          f"nodes make {workload.jobs * len(nodes):,} node checks; at most "
                          f"{MAX_NODE_CHECKS:,} are accepted: a run this size would take "
                          f"hours")
    if trace is not None:
        for key, file in (("pods", trace.pods), ("nodes", trace.nodes)):
            if file is not None and not file.is_file():
                raise ConfigError(f"{path}: trace.{key} names {str(file)!r}, which is not "
                                  f"a file")
    fields.done()
    return Scenario(name, description, path, tuple(policies), backfill, power, card_types,
                    nodes, workload, trace)
