"""Configuration of the workgroup-dispatcher model: GPU shape, policies, workloads, traces.

A scenario file (TOML) has four parts, every one validated with messages that name the field
(:mod:`model.config`)::

    name = "head-of-line blocking"         # optional, defaults to the file's stem
    cycles = 20000                          # simulated-cycle limit

    [gpu]                                   # GpuConfig; every field optional
    aps = 16
    ...

    [[channels]]                            # one table per channel: ChannelConfig
    priority = 0
    arrival = "back_to_back"                # or a rate in WG per cycle: arrival = 0.01
    count = 200
    waves = [4, 8]                          # an integer or an inclusive [min, max] range
    ...

    [[policies]]                            # the policies compared, in table order
    name = "static priority"
    preset = "emb1"                         # a PRESETS entry; any PolicyConfig field after it
    circuit = "grouped"

A ``trace = "file.csv"`` key replaces the channel generators by a CSV trace (columns
:data:`TRACE_COLUMNS`; relative paths are relative to the scenario file). Channels are then
still declared for their instruction mixes, or default to one per channel index in the trace.

A ``kernel_trace = "results.csv"`` key with ``preset = "<GPU preset>"`` (and optionally
``format``, ``kernels = [first, last]``, ``clock_mhz``) replays a profiler's kernel trace on a
real GPU instead: see :class:`KernelTraceSource` and :mod:`model.dispatch.kernels`.
"""

import csv
import random
from dataclasses import dataclass, fields, replace
from pathlib import Path

from model.config import ConfigError, Fields, load_toml
from model.dispatch.gpus import GPU_PRESETS
from model.dispatch.profilers import FORMATS as KERNEL_TRACE_FORMATS
from model.maxblock import default_samples

__all__ = [
    "AP_CHOICES",
    "CIRCUITS",
    "INSTRUCTION_CLASSES",
    "PRESETS",
    "RESOURCES",
    "SELECTIONS",
    "TRACE_COLUMNS",
    "ChannelConfig",
    "Claim",
    "GpuConfig",
    "KernelTraceSource",
    "PolicyConfig",
    "Scenario",
    "WorkGroup",
    "generate_workload",
    "load_scenario",
    "read_trace",
    "write_trace",
]

#: The resource types, their level (per PEU or per AP) and whether they are contiguous
#: (type 1: one block at a start address) or counted (type 2).
RESOURCES = {
    "vgpr": ("peu", True),
    "sgpr": ("peu", True),
    "lds": ("ap", True),
    "wave_slots": ("peu", False),
}

#: Instruction classes of embodiment 10 (matrix split by size, as the seed suggests).
INSTRUCTION_CLASSES = ("move", "load", "store", "matrix_small", "matrix_large", "compare",
                       "jump")

CIRCUITS = ("exact", "full", "grouped", "sampled")
DURATION_DISTRIBUTIONS = ("uniform", "exponential")
SELECTIONS = ("multi", "strict", "miaow", "gpgpusim")
AP_CHOICES = ("round_robin", "lowest", "resource", "instruction", "combined")


@dataclass(frozen=True)
class GpuConfig:
    """The GPU: ``aps`` APs of ``peus`` PEUs each, and its resources (in blocks / slots).

    ``resource_weights`` are embodiment 9's ``a_h`` (per remaining block or slot);
    ``instruction_weights`` embodiment 10's ``b_s`` (per executed instruction). The defaults
    weigh each resource so that a whole empty AP scores 1 per resource type.
    """

    aps: int = 16
    peus: int = 4
    vgpr: int = 128
    sgpr: int = 64
    lds: int = 48
    wave_slots: int = 16
    priorities: int = 4
    resource_weights: tuple[float, ...] = (1 / 512, 1 / 256, 1 / 48, 1 / 64)
    instruction_weights: tuple[float, ...] = (1.0, 2.0, 2.0, 4.0, 8.0, 1.0, 1.0)

    def capacity(self, resource: str) -> int:
        return getattr(self, resource)


@dataclass(frozen=True)
class PolicyConfig:
    """One dispatcher: how the target WG and the target AP are chosen, and which circuit
    measures the free blocks.

    selection
        ``multi`` (embodiment 1: every head against every AP, highest current priority
        wins), ``strict`` (the seed's prior art: only the highest-priority head is tried;
        when it does not fit, nothing is dispatched), ``miaow`` (a one-WG buffer filled
        from the channels in turn, retried until it fits, no priorities), ``gpgpusim``
        (channels scanned round-robin, the first head that fits anywhere goes; no
        priorities).
    ap_choice
        ``round_robin`` (first matching AP from a pointer one past the last chosen),
        ``lowest`` (lowest-index matching AP), ``resource`` (embodiment 9), ``instruction``
        (embodiment 10), ``combined`` (both, weighted by ``resource_weight`` and
        ``instruction_weight``).
    rotate
        Embodiment 8's per-AP rotating pointer; ``False`` uses the split table unrotated.
    windows
        Embodiment 2's window lengths in cycles, window ``y`` promoting priority ``y``
        (``()`` turns windows off); at most one per priority, non-increasing.
    split_threshold
        Embodiment 3's all-fail count ``g`` that triggers splitting (0 turns it off).
    circuit, group_size, circuit_latency
        The free-block circuit seen by the matcher (embodiments 4, 5, 6 or the exact one),
        and its latency in clocks.
    history_cycles
        Embodiment 10's ``Nx`` (a power of two).
    lfsr_seed
        Initial state of the tie-break LFSR (non-zero, 16 bits).
    """

    name: str = "seed"
    selection: str = "multi"
    ap_choice: str = "combined"
    resource_weight: float = 1.0
    instruction_weight: float = 1.0
    rotate: bool = True
    windows: tuple[int, ...] = (1024, 512, 256, 128)
    split_threshold: int = 256
    circuit: str = "exact"
    group_size: int = 4
    circuit_latency: int = 0
    history_cycles: int = 1024
    lfsr_seed: int = 0xACE1

    def samples(self, n: int) -> tuple[int, ...]:
        return tuple(default_samples(n))


#: Named starting points; a ``[[policies]]`` table picks one with ``preset`` and may override
#: any field.
PRESETS = {
    "prior-art": PolicyConfig(name="prior-art", selection="strict", ap_choice="round_robin",
                              rotate=False, windows=(), split_threshold=0),
    "miaow": PolicyConfig(name="miaow", selection="miaow", ap_choice="lowest", rotate=False,
                          windows=(), split_threshold=0),
    "gpgpusim": PolicyConfig(name="gpgpusim", selection="gpgpusim", ap_choice="round_robin",
                             rotate=False, windows=(), split_threshold=0),
    "emb1": PolicyConfig(name="emb1", selection="multi", ap_choice="round_robin", rotate=False,
                         windows=(), split_threshold=0),
    "seed": PolicyConfig(),
}


@dataclass(frozen=True)
class ChannelConfig:
    """A channel's workload generator. Ranges are inclusive ``(min, max)``, drawn uniformly.

    ``arrival`` is ``"back_to_back"`` (all ``count`` WGs queued at cycle 0) or a rate in WG
    per cycle (Bernoulli arrivals, one draw per cycle). ``vgpr`` and ``sgpr`` are blocks per
    wave, ``lds`` blocks per WG, ``duration`` cycles from dispatch to completion, drawn by
    ``duration_distribution``: ``"uniform"`` over the range, or ``"exponential"`` with the
    range's midpoint as mean, rounded and clipped to the range (heavy-tailed kernels). ``mix`` is
    the instructions each wave executes per cycle, by :data:`INSTRUCTION_CLASSES`.
    """

    priority: int = 0
    arrival: str | float = "back_to_back"
    count: int = 100
    start: int = 0
    waves: tuple[int, int] = (4, 4)
    vgpr: tuple[int, int] = (8, 8)
    sgpr: tuple[int, int] = (4, 4)
    lds: tuple[int, int] = (0, 0)
    duration: tuple[int, int] = (200, 200)
    duration_distribution: str = "uniform"
    independent: float = 0.0
    mix: tuple[float, ...] = (0.3, 0.15, 0.05, 0.0, 0.0, 0.3, 0.2)


@dataclass
class WorkGroup:
    """One workgroup as submitted (or one of its per-wave sub-WGs after a split)."""

    id: int
    channel: int
    priority: int
    waves: int
    vgpr: int
    sgpr: int
    lds: int
    duration: int
    independent: bool
    arrival: int
    parent: int | None = None          # the split WG's id, for a sub-WG
    # Filled in by the simulator:
    dispatched: int | None = None
    completed: int | None = None
    ap: int | None = None


#: Columns of the CSV trace format, in order.
TRACE_COLUMNS = ("arrival", "channel", "priority", "waves", "vgpr", "sgpr", "lds", "duration",
                 "independent")


@dataclass(frozen=True)
class Claim:
    """A comparison the scenario exists to show: ``metric`` (a dotted path into a run's
    results, e.g. ``wait.per_priority.3.max``) of ``policy`` against ``baseline``."""

    text: str
    metric: str
    policy: str
    baseline: str
    higher_is_better: bool

    def value(self, results: dict) -> float:
        node = results
        for part in self.metric.split("."):
            node = node[part]
        return float(node)


@dataclass(frozen=True)
class Scenario:
    """A scenario file, loaded: the GPU, the channels, the workload and the policies."""

    name: str
    cycles: int
    gpu: GpuConfig
    channels: tuple[ChannelConfig, ...]
    policies: tuple[PolicyConfig, ...]
    trace: Path | None = None
    path: Path | None = None
    sample_interval: int = 64
    claims: tuple[Claim, ...] = ()
    # Kernel traces (issue 15): the source, and its WGs once model.dispatch.kernels.prepare
    # has converted it (the conversion drives the dispatcher model, which imports this module).
    kernel_trace: "KernelTraceSource | None" = None
    workgroups: tuple[WorkGroup, ...] | None = None

    def workload(self, seed: int = 1) -> list[WorkGroup]:
        """The WGs of this scenario: the trace, or the generators run with ``seed``."""
        if self.workgroups is not None:
            return list(self.workgroups)
        if self.kernel_trace is not None:
            raise ConfigError(f"{self.path or self.name}: the kernel trace has not been "
                              f"converted yet (model.dispatch.kernels.prepare)")
        if self.trace is not None:
            return read_trace(self.trace, self.gpu, len(self.channels) or None)
        return generate_workload(self.channels, self.cycles, seed)


def _gpu(fields_: Fields, base: GpuConfig | None = None) -> GpuConfig:
    base = base or GpuConfig()
    gpu = GpuConfig(
        aps=fields_.int("aps", base.aps, minimum=1, maximum=1024),
        peus=fields_.int("peus", base.peus, minimum=1, maximum=64),
        vgpr=fields_.int("vgpr", base.vgpr, minimum=1, maximum=4096),
        sgpr=fields_.int("sgpr", base.sgpr, minimum=1, maximum=4096),
        lds=fields_.int("lds", base.lds, minimum=1, maximum=4096),
        wave_slots=fields_.int("wave_slots", base.wave_slots, minimum=1, maximum=1024),
        priorities=fields_.int("priorities", base.priorities, minimum=1, maximum=16),
        resource_weights=fields_.float_list("resource_weights", base.resource_weights,
                                            length=len(RESOURCES), minimum=0),
        instruction_weights=fields_.float_list("instruction_weights",
                                               base.instruction_weights,
                                               length=len(INSTRUCTION_CLASSES), minimum=0),
    )
    fields_.done()
    return gpu


def _channel(fields_: Fields, gpu: GpuConfig) -> ChannelConfig:
    base = ChannelConfig()
    if isinstance(fields_.peek("arrival"), str):
        arrival = fields_.str("arrival", choices=("back_to_back",))
    elif "arrival" in fields_:
        arrival = fields_.float("arrival", minimum=1e-9, maximum=1.0)
    else:
        arrival = fields_.str("arrival", base.arrival)
    channel = ChannelConfig(
        priority=fields_.int("priority", base.priority, minimum=0, maximum=gpu.priorities - 1),
        arrival=arrival,
        count=fields_.int("count", base.count, minimum=0),
        start=fields_.int("start", base.start, minimum=0),
        waves=fields_.int_range("waves", base.waves, minimum=1, maximum=gpu.peus * gpu.wave_slots),
        vgpr=fields_.int_range("vgpr", base.vgpr, minimum=0),
        sgpr=fields_.int_range("sgpr", base.sgpr, minimum=0),
        lds=fields_.int_range("lds", base.lds, minimum=0),
        duration=fields_.int_range("duration", base.duration, minimum=1),
        duration_distribution=fields_.str("duration_distribution",
                                          base.duration_distribution,
                                          choices=DURATION_DISTRIBUTIONS),
        independent=fields_.float("independent", base.independent, minimum=0, maximum=1),
        mix=fields_.float_list("mix", base.mix, length=len(INSTRUCTION_CLASSES), minimum=0),
    )
    fields_.done()
    return channel


def _policy(fields_: Fields, gpu: GpuConfig) -> PolicyConfig:
    preset_name = fields_.str("preset", "seed", choices=tuple(PRESETS))
    base = PRESETS[preset_name]
    policy = PolicyConfig(
        name=fields_.str("name", preset_name),
        selection=fields_.str("selection", base.selection, choices=SELECTIONS),
        ap_choice=fields_.str("ap_choice", base.ap_choice, choices=AP_CHOICES),
        resource_weight=fields_.float("resource_weight", base.resource_weight, minimum=0),
        instruction_weight=fields_.float("instruction_weight", base.instruction_weight,
                                         minimum=0),
        rotate=fields_.bool("rotate", base.rotate),
        windows=fields_.int_list("windows", base.windows, minimum=1),
        split_threshold=fields_.int("split_threshold", base.split_threshold, minimum=0),
        circuit=fields_.str("circuit", base.circuit, choices=CIRCUITS),
        group_size=fields_.int("group_size", base.group_size, minimum=1),
        circuit_latency=fields_.int("circuit_latency", base.circuit_latency, minimum=0,
                                    maximum=64),
        history_cycles=fields_.int("history_cycles", base.history_cycles, minimum=1),
        lfsr_seed=fields_.int("lfsr_seed", base.lfsr_seed, minimum=1, maximum=0xFFFF),
    )
    check_policy(policy, gpu, fields_)
    fields_.done()
    return policy


def check_policy(policy: PolicyConfig, gpu: GpuConfig, fields_: Fields | None = None) -> None:
    """Cross-field checks of a policy against the GPU; errors name the field."""
    def error(key, message):
        return fields_.error(key, message) if fields_ else ConfigError(f"{key} {message}")

    if len(policy.windows) > gpu.priorities:
        raise error("windows", f"has {len(policy.windows)} windows but the GPU has "
                               f"{gpu.priorities} priorities (at most one window each)")
    if any(b > a for a, b in zip(policy.windows, policy.windows[1:], strict=False)):
        raise error("windows", f"must be non-increasing (window 1 the longest), not "
                               f"{list(policy.windows)!r}")
    if policy.history_cycles & (policy.history_cycles - 1):
        raise error("history_cycles", f"must be a power of two, not {policy.history_cycles}")
    if policy.circuit == "grouped":
        for resource, (_, contiguous) in RESOURCES.items():
            size = gpu.capacity(resource)
            if contiguous and size % policy.group_size:
                raise error("group_size", f"{policy.group_size} must divide every contiguous "
                                          f"resource size ({resource} has {size} blocks)")


# -- kernel traces (issue 15): the scenario fields; the conversion is model.dispatch.kernels -----

@dataclass(frozen=True)
class KernelTraceSource:
    """A profiler's kernel trace replayed on a GPU preset (scenario keys ``kernel_trace``,
    ``preset``, ``format``, ``kernels``, ``clock_mhz``; CLI ``--kernel-trace`` ...).

    ``first``/``last``: the launches taken, by position among the file's kernels (0-based,
    ``last`` excluded, ``None`` = to the end). ``clock_mhz``: overrides the preset's clock.
    """

    path: Path
    preset: str
    format: str | None = None
    first: int = 0
    last: int | None = None
    clock_mhz: int | None = None


def _kernel_trace(root: Fields, path: Path) -> KernelTraceSource | None:
    if "kernel_trace" not in root:
        for key in ("preset", "format", "kernels", "clock_mhz"):
            if key in root:
                raise root.error(key, "needs kernel_trace (a profiler's kernel trace)")
        return None
    trace = (path.parent / root.str("kernel_trace")).resolve()
    if not trace.is_file():
        raise root.error("kernel_trace", f"names {str(trace)!r}, which is not a file")
    preset = root.str("preset", choices=tuple(GPU_PRESETS))
    format_ = (root.str("format", choices=tuple(KERNEL_TRACE_FORMATS)) if "format" in root
               else None)
    first, last = 0, None
    if "kernels" in root:
        window = root.int_list("kernels", length=2, minimum=0)
        first, last = window
        if last <= first:
            raise root.error("kernels", f"must be [first, last] with first < last, not "
                                        f"{list(window)!r}")
    clock = (root.int("clock_mhz", minimum=1, maximum=100000) if "clock_mhz" in root
             else None)
    return KernelTraceSource(path=trace, preset=preset, format=format_, first=first,
                             last=last, clock_mhz=clock)


def load_scenario(path) -> Scenario:
    """Load and validate a scenario file; :class:`~model.config.ConfigError` names the field."""
    path = Path(path)
    root = Fields(load_toml(path), source=path)
    name = root.str("name", path.stem)
    cycles = root.int("cycles", 20000, minimum=1)
    sample_interval = root.int("sample_interval", 64, minimum=1)
    kernel_trace = _kernel_trace(root, path)
    base = (GpuConfig(**GPU_PRESETS[kernel_trace.preset].gpu_fields())
            if kernel_trace is not None else None)
    gpu = _gpu(root.table("gpu", {}), base)
    trace = None
    if "trace" in root:
        trace = (path.parent / root.str("trace")).resolve()
        if not trace.is_file():
            raise root.error("trace", f"names {str(trace)!r}, which is not a file")
    channel_tables = root.tables("channels", [])
    channels = tuple(_channel(table, gpu) for table in channel_tables)
    if not channels and trace is None and kernel_trace is None:
        raise root.error("channels", "must list at least one channel (or give a trace)")
    if trace is not None and kernel_trace is not None:
        raise root.error("kernel_trace", "and trace cannot both be given")
    policy_tables = root.tables("policies", [])
    policies = tuple(_policy(table, gpu) for table in policy_tables) or tuple(
        PRESETS[name] for name in ("prior-art", "miaow", "gpgpusim", "emb1", "seed"))
    names = [policy.name for policy in policies]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise root.error("policies", f"names {duplicate!r} twice; names must be unique")
    claims = tuple(_claim(table, names) for table in root.tables("claims", []))
    root.done()
    return Scenario(name=name, cycles=cycles, gpu=gpu, channels=channels, policies=policies,
                    trace=trace, path=path, sample_interval=sample_interval, claims=claims,
                    kernel_trace=kernel_trace)


def _claim(fields_: Fields, policies: list[str]) -> Claim:
    claim = Claim(text=fields_.str("text"), metric=fields_.str("metric"),
                  policy=fields_.str("policy", choices=policies),
                  baseline=fields_.str("baseline", choices=policies),
                  higher_is_better=fields_.bool("higher_is_better"))
    fields_.done()
    return claim


def _duration(channel: ChannelConfig, rng: random.Random) -> int:
    low, high = channel.duration
    if channel.duration_distribution == "uniform":
        return rng.randint(low, high)
    mean = (low + high) / 2
    return min(high, max(low, round(rng.expovariate(1 / mean))))


def generate_workload(channels, cycles: int, seed: int) -> list[WorkGroup]:
    """Draw every channel's WGs, each channel from its own ``random.Random`` seeded with
    ``seed`` and the channel index (so adding a channel leaves the others' draws unchanged).

    Rate channels stop generating at ``cycles``; ids are assigned in arrival order
    (channel order for equal cycles), so they are the global submission order.
    """
    drawn = []
    for index, channel in enumerate(channels):
        rng = random.Random(f"{seed}/{index}")
        cycle = channel.start
        for _ in range(channel.count):
            if channel.arrival != "back_to_back":
                # Bernoulli arrivals: the gap to the next success is geometric.
                while rng.random() >= channel.arrival:
                    cycle += 1
                if cycle >= cycles:
                    break
            drawn.append((cycle, index, WorkGroup(
                id=-1, channel=index, priority=channel.priority,
                waves=rng.randint(*channel.waves), vgpr=rng.randint(*channel.vgpr),
                sgpr=rng.randint(*channel.sgpr), lds=rng.randint(*channel.lds),
                duration=_duration(channel, rng),
                independent=rng.random() < channel.independent, arrival=cycle)))
            if channel.arrival != "back_to_back":
                cycle += 1
    drawn.sort(key=lambda item: (item[0], item[1]))
    workload = [wg for _, _, wg in drawn]
    for number, wg in enumerate(workload):
        wg.id = number
    return workload


def read_trace(path, gpu: GpuConfig, channels: int | None = None) -> list[WorkGroup]:
    """Read a CSV trace (header :data:`TRACE_COLUMNS`); errors name the row and column."""
    path = Path(path)
    workload = []
    with path.open(newline="") as file:
        reader = csv.DictReader(file)
        if tuple(reader.fieldnames or ()) != TRACE_COLUMNS:
            raise ConfigError(f"{path}: header must be {','.join(TRACE_COLUMNS)}, "
                              f"not {','.join(reader.fieldnames or ())}")
        limits = {"channel": (0, (channels or 1 << 16) - 1),
                  "priority": (0, gpu.priorities - 1), "waves": (1, None), "vgpr": (0, None),
                  "sgpr": (0, None), "lds": (0, None), "duration": (1, None),
                  "arrival": (0, None), "independent": (0, 1)}
        for row_number, row in enumerate(reader, start=2):
            values = {}
            for column in TRACE_COLUMNS:
                text = (row.get(column) or "").strip()
                low, high = limits[column]
                try:
                    value = int(text)
                except ValueError:
                    raise ConfigError(f"{path}: row {row_number}, column {column!r}: "
                                      f"{text!r} is not an integer") from None
                if value < low or (high is not None and value > high):
                    bound = f"{low}..{high}" if high is not None else f">= {low}"
                    raise ConfigError(f"{path}: row {row_number}, column {column!r}: {value} "
                                      f"is out of range ({bound})")
                values[column] = value
            workload.append(WorkGroup(id=-1, independent=bool(values.pop("independent")),
                                      **values))
    workload.sort(key=lambda wg: (wg.arrival, wg.channel))
    for number, wg in enumerate(workload):
        wg.id = number
    return workload


def write_trace(path, workload) -> Path:
    """Write ``workload`` (submitted WGs, not sub-WGs) as a CSV trace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(TRACE_COLUMNS)
        for wg in workload:
            writer.writerow([wg.arrival, wg.channel, wg.priority, wg.waves, wg.vgpr, wg.sgpr,
                             wg.lds, wg.duration, int(wg.independent)])
    return path


def with_policy(policy: PolicyConfig, **changes) -> PolicyConfig:
    """``dataclasses.replace`` for policies, for tests and the CLI."""
    known = {f.name for f in fields(PolicyConfig)}
    unknown = set(changes) - known
    if unknown:
        raise ConfigError(f"unknown policy field {sorted(unknown)[0]!r}")
    return replace(policy, **changes)
