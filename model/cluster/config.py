"""Scenario files of the cluster model: power, cluster, workload or trace, experiment, claims.

A scenario (TOML; every field is validated by :mod:`model.config`, errors name the file and the
field, unknown keys are errors)::

    name = "mixed cards, steady stream"     # optional, defaults to the file's stem
    description = "..."
    policies = ["seed-004", "fgd", "pwr", ...]   # default: DEFAULT_POLICIES; table order
    experiment = "timed"     # "timed": discrete-event replay with arrival times and durations;
                             # "inflation": submit pods until the cluster is full (no times)
    seeds = 1                # runs per policy on seeds s, s+1, ... (claims need >= 2)
    tie_break = "shuffled"   # equal highest scores: the smallest name after the FGD
                             # artifact's simulator renamed the nodes in a random order (one
                             # per seed, the same for every policy: its rule); "name": the
                             # smallest name of the node list; "random": upstream's
    backfill = false         # timed: later pods may pass a blocked queue head

    [power]
    standby = "all"          # "all" | "seed" (power-aware policies only) | "none"
    standby_after_s = 0.0
    wake_s = 0.0
    shared_card = "busy"     # a partly used card draws busy power ("busy", PWR's model) or
                             # idle + (busy - idle) x used fraction ("proportional")

    [card_types.A100]        # optional: overrides or adds to the built-in table (power.py)
    busy_w = 400.0           # the seed's first power
    idle_w = 50.0
    standby_w = 25.0
    host = "Intel-Xeon-8369B"   # optional: the CPU of trace nodes carrying this GPU

    [hosts.Intel-Xeon-8369B]    # optional: overrides or adds a host CPU
    socket_busy_w = 270.0
    socket_idle_w = 20.0
    cores_per_socket = 32

    # The cluster: exactly one of [[nodes]], trace.nodes and [cluster].
    [[nodes]]
    count = 8
    name = "a100"
    cards = { A100 = 8 }
    cpu_milli = 96000        # default 96000 (the trace's commonest node)
    memory_mib = 393216      # default 393216
    cpu_busy_w = 350.0       # host power while any pod runs on the node
    cpu_standby_w = 150.0    # host power while no pod runs: the seed's CPU standby power
    sleep_w = 20.0           # host power in low-power standby

    [cluster]                # a synthetic copy of the v2023 cluster's composition
    composition = "alibaba-v2023"
    scale = 0.05             # fraction of its 1,213 nodes (each configuration rounded, >= 1)

    # The pods: exactly one of [workload] and [trace].
    [workload]
    generator = "synthetic"  # or "alibaba-v2023" (pod shapes drawn like the real trace's)
    ...

    [trace]
    pods = "path/to/openb_pod_list_default.csv"
    nodes = "path/to/openb_node_list_gpu_node.csv"

    [inflation]              # experiment = "inflation" (the FGD paper's workload inflation)
    ratio = 1.3              # submit pods until they ask for 130 % of the cluster's GPUs

    [fgd]
    popularity = 0.95        # typical pods: the commonest shapes covering 95 % of the pods

    [pwr_fgd]
    pwr_weight = 200         # plugin weights of the combined policy (PWR's paper: 200/800)
    fgd_weight = 800

    [[claims]]               # judged over the seeds with model.stats.compare
    text = "..."
    metric = "energy_kwh"
    policy = "seed-004"
    baseline = "fgd"
    higher_is_better = false

Times are in seconds, powers in watts, CPU in milli-vCPU, memory in MiB, GPU in milli-GPU.
"""

from dataclasses import dataclass
from pathlib import Path

from model.cluster.power import (
    BUILTIN_CARD_TYPES,
    BUILTIN_HOSTS,
    HOST_SLEEP_W,
    CardType,
    HostType,
)
from model.config import Budget, ConfigError, Fields, load_toml

__all__ = [
    "DEFAULT_POLICIES",
    "EXPERIMENTS",
    "MAX_CARDS_PER_NODE",
    "MAX_CPU_MILLI",
    "MAX_JOBS",
    "MAX_MEMORY_MIB",
    "MAX_NODES",
    "MAX_NODE_CHECKS",
    "POLICY_NAMES",
    "AlibabaCluster",
    "AlibabaWorkload",
    "CardType",
    "Claim",
    "HostType",
    "NodeSpec",
    "PowerManagement",
    "Scenario",
    "SyntheticWorkload",
    "TraceSource",
    "load_scenario",
]

#: Every policy by its name (the implementations are in :mod:`model.cluster.policies`).
POLICY_NAMES = ("seed-004", "power-first", "fgd", "pwr", "pwr-fgd", "fgd-seed", "best-fit",
                "dot-product", "gpu-packing", "gpu-clustering", "spread", "bin-pack", "random")

#: The largest synthetic run a scenario may ask for (refused at load time, naming the field):
#: placement looks at every node for every job, about a microsecond each, so a run of
#: MAX_NODE_CHECKS job-node pairs takes a minute or two per policy.
MAX_NODES = 100_000
MAX_JOBS = 1_000_000
MAX_NODE_CHECKS = 100_000_000

#: The largest node or pod a scenario or trace may describe, far above any real one (8 to 16
#: GPUs, a few hundred vCPUs and a few TiB per node): a node's cards are a tuple, and the
#: fragmentation sums CPU and memory over pods in 64-bit integers.
MAX_CARDS_PER_NODE = 1024
MAX_CPU_MILLI = 10**9            # a million vCPUs
MAX_MEMORY_MIB = 10**9           # about 954 TiB

#: The policies a scenario compares unless it names its own.
DEFAULT_POLICIES = ("seed-004", "fgd-seed", "fgd", "pwr", "pwr-fgd", "best-fit", "dot-product",
                    "gpu-packing", "gpu-clustering", "spread", "bin-pack", "random")

EXPERIMENTS = ("timed", "inflation")

#: Tie-break rules (the same tuple as :data:`model.cluster.policies.TIE_BREAKS`, which
#: imports nothing from here).
TIE_BREAKS = ("shuffled", "name", "random")


@dataclass(frozen=True)
class NodeSpec:
    """One node: the type of each card (empty for a CPU-only node); host power per CPU socket
    while a pod runs on the node (``cpu_busy_w``) and while none does (``cpu_standby_w``, the
    seed's CPU standby power), the whole host's ``sleep_w`` in low-power standby; CPU and
    memory capacity; ``cores_per_socket`` (0: the host is one socket)."""

    name: str
    cards: tuple[str, ...]
    cpu_busy_w: float
    cpu_standby_w: float
    sleep_w: float
    cpu_milli: int = 96000
    memory_mib: int = 393216
    cores_per_socket: int = 0


@dataclass(frozen=True)
class PowerManagement:
    """Low-power standby (for ``"all"``, ``"seed"`` or ``"none"`` of the policies), after how
    long, its wake-up cost, and how a partly used card draws power."""

    standby: str = "all"
    standby_after_s: float = 0.0
    wake_s: float = 0.0
    shared_card: str = "busy"


@dataclass(frozen=True)
class SyntheticWorkload:
    """The whole-card synthetic job stream (see :func:`model.cluster.workload.generate_jobs`).

    ``arrival = "poisson"``: exponential gaps of mean ``mean_interarrival_s``; ``"bursty"``:
    bursts of ``burst_size`` jobs, exponential gaps of mean ``burst_gap_s``. A job needs
    ``k`` cards drawn from ``cards`` with ``card_weights``, runs a log-normal time of mean
    ``mean_duration_s`` and log-sigma ``duration_sigma``, and with probability
    ``pinned_fraction`` names one card type.
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
class AlibabaWorkload:
    """Pods shaped like the v2023 trace's (:mod:`model.cluster.synthetic`): CPU, memory, GPU
    count and milli-GPU drawn from the trace's shape frequencies; ``pinned_fraction`` of the
    GPU pods name GPU types drawn from the ``gpuspec`` lists' frequencies; Poisson arrivals;
    log-normal durations (median ``exp(duration_mu)``), cut at ``max_duration_s`` when it is
    not 0 (the long tail otherwise sets the length of a short run)."""

    jobs: int = 8152
    quick_jobs: int = 800
    mean_interarrival_s: float = 390.0
    pinned_fraction: float = 0.0
    duration_mu: float = 6.81
    duration_sigma: float = 1.92
    max_duration_s: float = 0.0


@dataclass(frozen=True)
class AlibabaCluster:
    """A synthetic cluster with the v2023 node list's composition, ``scale`` of its size
    (``quick_scale`` under ``--quick``)."""

    scale: float = 1.0
    quick_scale: float = 1.0


@dataclass(frozen=True)
class TraceSource:
    """The Alibaba GPU cluster trace v2023 files (:mod:`model.cluster.trace`).

    ``pods`` is a pod list (11 columns, or the 5-column ``multigpu`` lists), ``nodes`` a node
    list (``None``: the scenario's cluster). ``limit`` keeps the first pods (0: all),
    ``quick_limit`` under ``--quick``. ``quick_nodes``: under ``--quick``, that many nodes of
    the node list, spread evenly over it (0: all). ``shared_gpu``: a pod asking for part of
    one GPU shares a card (``"share"``), takes a whole card (``"whole"``) or is skipped
    (``"skip"``).
    ``cpu_only``: CPU-only pods are placed (``"place"``) or skipped. ``arrival_speedup``
    divides the gaps between creation times (timed experiment). ``sleep_w``: host power of
    trace nodes in low-power standby.
    """

    pods: Path
    nodes: Path | None = None
    limit: int = 0
    quick_limit: int = 0
    quick_nodes: int = 0
    shared_gpu: str = "share"
    cpu_only: str = "place"
    arrival_speedup: float = 1.0
    sleep_w: float = HOST_SLEEP_W


@dataclass(frozen=True)
class Claim:
    """One claim: ``policy`` beats ``baseline`` on ``metric`` (a results key, dotted for
    nested ones), judged over the seeds by :func:`model.stats.compare`."""

    text: str
    metric: str
    policy: str
    baseline: str
    higher_is_better: bool


@dataclass(frozen=True)
class Scenario:
    """One scenario file, validated. ``card_types`` holds the scenario's own tables over the
    built-in ones; ``nodes`` is empty when the nodes come from a node list or ``[cluster]``."""

    name: str
    description: str
    source: Path
    policies: tuple[str, ...]
    experiment: str
    seeds: int
    backfill: bool
    power: PowerManagement
    card_types: dict[str, CardType]
    hosts: dict[str, HostType]
    nodes: tuple[NodeSpec, ...]
    cluster: AlibabaCluster | None
    workload: SyntheticWorkload | AlibabaWorkload | None
    trace: TraceSource | None
    inflation_ratio: float = 1.3
    fgd_popularity: float = 0.95
    pwr_fgd_weights: tuple[int, int] = (200, 800)
    claims: tuple[Claim, ...] = ()
    tie_break: str = "shuffled"


def _power_management(fields: Fields) -> PowerManagement:
    table = fields.table("power", {})
    power = PowerManagement(
        standby=table.str("standby", "all", choices=("all", "seed", "none")),
        standby_after_s=table.float("standby_after_s", 0.0, minimum=0.0),
        wake_s=table.float("wake_s", 0.0, minimum=0.0),
        shared_card=table.str("shared_card", "busy", choices=("busy", "proportional")),
    )
    table.done()
    return power


def _hosts(fields: Fields) -> dict[str, HostType]:
    table = fields.table("hosts", {})
    hosts = dict(BUILTIN_HOSTS)
    for name in table.keys():
        entry = table.table(name)
        hosts[name] = HostType(name, entry.float("socket_busy_w", minimum=0.0),
                               entry.float("socket_idle_w", minimum=0.0),
                               entry.int("cores_per_socket", minimum=1), "scenario")
        entry.done()
    table.done()
    return hosts


def _card_types(fields: Fields, hosts: dict[str, HostType]) -> dict[str, CardType]:
    table = fields.table("card_types", {})
    types = dict(BUILTIN_CARD_TYPES)
    for name in table.keys():
        entry = table.table(name)
        builtin = BUILTIN_CARD_TYPES.get(name)
        host = entry.str("host", builtin.host if builtin else "")
        if host and host not in hosts:
            raise entry.error("host", f"is not a host CPU (known: {', '.join(sorted(hosts))})")
        types[name] = CardType(name, busy_w=entry.float("busy_w", minimum=0.0),
                               idle_w=entry.float("idle_w", minimum=0.0),
                               standby_w=entry.float("standby_w", minimum=0.0),
                               host=host or None, source="scenario")
        entry.done()
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
            cards += [card_type] * cards_table.int(card_type, minimum=0,
                                                   maximum=MAX_CARDS_PER_NODE)
            if len(cards) > MAX_CARDS_PER_NODE:
                raise cards_table.error(card_type, f"brings the node to {len(cards)} cards; "
                                                   f"at most {MAX_CARDS_PER_NODE} are accepted")
        cards_table.done()
        if not cards:
            raise group.error("cards", "must give the node at least one card")
        cpu_milli = group.int("cpu_milli", 96000, minimum=1, maximum=MAX_CPU_MILLI)
        memory_mib = group.int("memory_mib", 393216, minimum=1, maximum=MAX_MEMORY_MIB)
        cpu_busy_w = group.float("cpu_busy_w", minimum=0.0)
        cpu_standby_w = group.float("cpu_standby_w", minimum=0.0)
        sleep_w = group.float("sleep_w", minimum=0.0)
        group.done()
        for index in range(count):
            name = f"{prefix}-{index}" if count > 1 else prefix
            if name in names:
                raise group.error("name", f"gives node name {name!r} twice")
            names.add(name)
            nodes.append(NodeSpec(name, tuple(cards), cpu_busy_w, cpu_standby_w, sleep_w,
                                  cpu_milli, memory_mib))
    return tuple(nodes)


def _synthetic(table: Fields) -> SyntheticWorkload:
    defaults = SyntheticWorkload()
    cards = table.int_list("cards", list(defaults.cards), minimum=1,
                           maximum=MAX_CARDS_PER_NODE)
    if not cards:
        raise table.error("cards", "must list at least one card count")
    weights = table.float_list("card_weights", [1.0] * len(cards) if "cards" in table
                               else list(defaults.card_weights), length=len(cards), minimum=0.0)
    if sum(weights) <= 0:
        raise table.error("card_weights", "must not all be zero")
    return SyntheticWorkload(
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


def _alibaba_workload(table: Fields) -> AlibabaWorkload:
    defaults = AlibabaWorkload()
    return AlibabaWorkload(
        jobs=table.int("jobs", defaults.jobs, minimum=1, maximum=10_000_000),
        quick_jobs=table.int("quick_jobs", defaults.quick_jobs, minimum=1,
                             maximum=10_000_000),
        mean_interarrival_s=table.float("mean_interarrival_s", defaults.mean_interarrival_s,
                                        minimum=0.0),
        pinned_fraction=table.float("pinned_fraction", defaults.pinned_fraction, minimum=0.0,
                                    maximum=1.0),
        duration_mu=table.float("duration_mu", defaults.duration_mu),
        duration_sigma=table.float("duration_sigma", defaults.duration_sigma, minimum=0.0),
        max_duration_s=table.float("max_duration_s", 0.0, minimum=0.0),
    )


def _workload(table: Fields) -> SyntheticWorkload | AlibabaWorkload:
    generator = table.str("generator", "synthetic", choices=("synthetic", "alibaba-v2023"))
    workload = _alibaba_workload(table) if generator == "alibaba-v2023" else _synthetic(table)
    table.done()
    return workload


def _trace(table: Fields, base: Path) -> TraceSource:
    nodes = table.str("nodes", "") or None
    trace = TraceSource(
        pods=base / table.str("pods"),
        nodes=base / nodes if nodes is not None else None,
        limit=table.int("limit", 0, minimum=0),
        quick_limit=table.int("quick_limit", 0, minimum=0),
        quick_nodes=table.int("quick_nodes", 0, minimum=0),
        shared_gpu=table.str("shared_gpu", "share", choices=("share", "whole", "skip")),
        cpu_only=table.str("cpu_only", "place", choices=("place", "skip")),
        arrival_speedup=table.float("arrival_speedup", 1.0, minimum=1e-6),
        sleep_w=table.float("sleep_w", HOST_SLEEP_W, minimum=0.0),
    )
    table.done()
    return trace


def _cluster(table: Fields) -> AlibabaCluster:
    table.str("composition", "alibaba-v2023", choices=("alibaba-v2023",))
    scale = table.float("scale", 1.0, minimum=1e-6, maximum=100.0)
    cluster = AlibabaCluster(scale, table.float("quick_scale", scale, minimum=1e-6,
                                                maximum=100.0))
    table.done()
    return cluster


def _claim(fields: Fields, policies: tuple[str, ...]) -> Claim:
    claim = Claim(text=fields.str("text"), metric=fields.str("metric"),
                  policy=fields.str("policy"), baseline=fields.str("baseline"),
                  higher_is_better=fields.bool("higher_is_better"))
    for key in ("policy", "baseline"):
        if getattr(claim, key) not in policies:
            raise fields.error(key, f"must be one of the scenario's policies "
                               f"({', '.join(policies)}), not {getattr(claim, key)!r}")
    fields.done()
    return claim


def load_scenario(path) -> Scenario:
    """Read and validate one scenario file; a :class:`~model.config.ConfigError` names the
    file and the field. Claims' metrics are checked against the result keys by
    :func:`model.cluster.cli.check_claims` before anything runs."""
    path = Path(path)
    fields = Fields(load_toml(path), source=path)
    name = fields.str("name", path.stem)
    description = fields.str("description", "")
    policies = fields.list("policies", list(DEFAULT_POLICIES))
    for index, policy in enumerate(policies):
        if policy not in POLICY_NAMES:
            raise fields.error(f"policies[{index}]", f"must be one of "
                               f"{', '.join(map(repr, POLICY_NAMES))}, not {policy!r}")
    if not policies:
        raise fields.error("policies", "must name at least one policy")
    if len(set(policies)) != len(policies):
        raise fields.error("policies", f"names a policy twice: {policies!r}")
    experiment = fields.str("experiment", "timed", choices=EXPERIMENTS)
    seeds = fields.int("seeds", 1, minimum=1, maximum=1000)
    backfill = fields.bool("backfill", False)
    tie_break = fields.str("tie_break", "shuffled", choices=TIE_BREAKS)
    power = _power_management(fields)
    hosts = _hosts(fields)
    card_types = _card_types(fields, hosts)
    nodes = _nodes(fields, card_types)
    has_workload, has_trace = "workload" in fields, "trace" in fields
    if has_workload == has_trace:
        raise ConfigError(f"{path}: give exactly one of [workload] (synthetic jobs) and "
                          f"[trace] (Alibaba CSV files)")
    workload = _workload(fields.table("workload")) if has_workload else None
    trace = _trace(fields.table("trace"), path.parent) if has_trace else None
    cluster = _cluster(fields.table("cluster")) if "cluster" in fields else None
    sources = [bool(nodes), trace is not None and trace.nodes is not None, cluster is not None]
    if sum(sources) > 1:
        raise fields.error("nodes", "comes from more than one of [[nodes]], trace.nodes and "
                           "[cluster]; give exactly one")
    if not any(sources):
        raise fields.error("nodes", "is required (at least one [[nodes]] table) unless "
                           "trace.nodes names a node list or [cluster] builds one")
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
    inflation = fields.table("inflation", {})
    ratio = inflation.float("ratio", 1.3, minimum=0.01, maximum=10.0)
    inflation.done()
    if "inflation" in fields and experiment != "inflation":
        raise fields.error("inflation", 'is only read with experiment = "inflation"')
    fgd = fields.table("fgd", {})
    popularity = fgd.float("popularity", 0.95, minimum=0.01, maximum=1.0)
    fgd.done()
    pwr_fgd = fields.table("pwr_fgd", {})
    weights = (pwr_fgd.int("pwr_weight", 200, minimum=0, maximum=1000),
               pwr_fgd.int("fgd_weight", 800, minimum=0, maximum=1000))
    pwr_fgd.done()
    if sum(weights) == 0:
        raise fields.error("pwr_fgd", "must not give both policies weight 0")
    if "backfill" in fields and experiment == "inflation":
        raise fields.error("backfill", "has no meaning in the inflation experiment (pods "
                           "never wait there)")
    claims = tuple(_claim(table, tuple(policies)) for table in fields.tables("claims", []))
    if claims and seeds < 2:
        raise fields.error("claims", "need seeds >= 2 (a claim is judged over seeds)")
    fields.done()
    return Scenario(name, description, path, tuple(policies), experiment, seeds, backfill,
                    power, card_types, hosts, nodes, cluster, workload, trace, ratio,
                    popularity, weights, claims, tie_break)
