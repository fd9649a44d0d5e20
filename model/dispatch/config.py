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
``format``, ``kernels = [first, last]`` or ``windows = [[first, last], ...]``, ``clock_mhz``,
``in_order``) replays a profiler's kernel trace on a real GPU instead: see
:class:`KernelTraceSource` and :mod:`model.dispatch.kernels`.

``execution = "shared"`` (default ``"fixed"``) runs the WGs on the shared-issue execution
model, in which a WG's run time depends on where it runs (``[gpu] issue_width`` and
``drain``; a channel's ``work`` per wave); ``warmup`` cycles are left out of the ``steady``
metrics. Claims may name their own ``execution`` and the ``loads`` they are judged at
(:class:`Claim`, :mod:`model.dispatch.claims`).
"""

import csv
import math
import random
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from pathlib import Path

from model.config import ConfigError, Fields, load_toml
from model.dispatch.gpus import GPU_PRESETS
from model.dispatch.profilers import FORMATS as KERNEL_TRACE_FORMATS
from model.maxblock import SharedSchedule, default_samples

__all__ = [
    "AP_CHOICES",
    "CIRCUITS",
    "INSTRUCTION_CLASSES",
    "PRESETS",
    "RESOURCES",
    "SELECTIONS",
    "COMBINED_SCALES",
    "HISTORIES",
    "EXECUTIONS",
    "WAVE_PLACEMENTS",
    "LOAD_AS_WRITTEN",
    "LOAD_BATCH",
    "MAX_BACK_TO_BACK",
    "MIX_FRACTION_BITS",
    "TRACE_COLUMNS",
    "TRACE_EXTRA_COLUMNS",
    "ChannelConfig",
    "Claim",
    "GpuConfig",
    "KernelTraceSource",
    "PolicyConfig",
    "Scenario",
    "WorkGroup",
    "generate_workload",
    "ignored_fields",
    "load_scenario",
    "metric_paths",
    "quantised_mix",
    "rate_channels_only",
    "read_trace",
    "shared_schedule",
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

#: ``shared`` is embodiment 7: one exact unit per AP, time-multiplexed over the AP's VGPR, SGPR
#: and LDS status words (:func:`shared_schedule`), so each view is refreshed once per schedule.
CIRCUITS = ("exact", "full", "grouped", "sampled", "shared")
DURATION_DISTRIBUTIONS = ("uniform", "exponential")
SELECTIONS = ("multi", "strict", "miaow", "gpgpusim")
AP_CHOICES = ("round_robin", "lowest", "resource", "instruction", "combined")
#: Embodiment 10's history of instruction power: the seed's sliding window of ``Nx`` cycles, or
#: an exponential average with a shift of ``log2(Nx)`` (one register per AP; docs/dispatch.md).
HISTORIES = ("window", "ema")
#: What the combined AP score (embodiments 9 + 10) divides each term by: its largest value
#: among the candidate APs (the seed's reading) or among every AP (a scale that does not
#: depend on which APs the WG fits, so that a pipelined RTL can compute the scores ahead).
COMBINED_SCALES = ("candidates", "all")
#: How a WG's run time is decided: ``fixed`` (its ``duration``, wherever it runs) or ``shared``
#: (each PEU issues at most ``issue_width`` wave-instructions per cycle, shared equally among
#: its issuing waves; a WG is done when its waves have issued their ``work``, + ``drain``).
EXECUTIONS = ("fixed", "shared")
#: How a WG's waves are spread over an AP's PEUs: ``split`` (embodiment 8's split table, rotated
#: by the per-AP pointer when ``rotate``), ``least_loaded`` (each wave in turn to the PEU with
#: the most free wave slots where it fits, ties to the lowest index: what AMD's own GPU model
#: in gem5 does and real dispatchers approximate; docs/dispatch.md).
WAVE_PLACEMENTS = ("split", "least_loaded")
#: A claim's load: the scenario's rates as written, or every WG of the run queued at cycle 0.
LOAD_AS_WRITTEN = "as written"
LOAD_BATCH = "batch"
#: Largest work per wave and drain latency (32-bit and 16-bit registers).
MAX_WORK = (1 << 32) - 1
MAX_DRAIN = 0xFFFF

#: A channel's mix is quantised to this many fractional bits (1/256 instruction per cycle).
MIX_FRACTION_BITS = 8
#: Most WGs a back-to-back channel may queue at its start cycle (the model holds every WG).
MAX_BACK_TO_BACK = 1_000_000
#: Largest instruction weight ``b_s`` and policy weight (8-bit registers).
MAX_WEIGHT = 255
#: The deepest decision pipeline (cycles from choice to dispatch) a policy may ask for.
MAX_PIPELINE = 16
#: Largest resource weight ``a_h`` given in a file (16-bit registers).
MAX_RESOURCE_WEIGHT = 0xFFFF


@dataclass(frozen=True)
class GpuConfig:
    """The GPU: ``aps`` APs of ``peus`` PEUs each, and its resources (in blocks / slots).

    ``resource_weights`` are embodiment 9's ``a_h`` (integers, per remaining block or slot, in
    the order vgpr, sgpr, lds, wave_slots); ``None``, the default, gives every resource the
    weight ``L / C_h``, where ``C_h`` is the AP's capacity of resource ``h`` (VGPR and SGPR
    summed over the PEUs, LDS, wave slots summed over the PEUs) and ``L`` the least common
    multiple of the four: the documented "a_h = 1 / capacity", scaled to integers exactly, so
    a whole empty AP scores ``L`` per resource on every GPU shape. ``instruction_weights``
    are embodiment 10's ``b_s`` (integers 0..255, per executed instruction).

    ``issue_width`` and ``drain`` are read only by the shared-issue execution model: each PEU
    issues at most ``issue_width`` wave-instructions per cycle, and a WG whose waves have
    issued all their work holds its resources ``drain`` cycles longer.
    """

    aps: int = 16
    peus: int = 4
    vgpr: int = 128
    sgpr: int = 64
    lds: int = 48
    wave_slots: int = 16
    priorities: int = 4
    resource_weights: tuple[int, ...] | None = None
    instruction_weights: tuple[int, ...] = (1, 2, 2, 4, 8, 1, 1)
    issue_width: int = 1
    drain: int = 0

    def capacity(self, resource: str) -> int:
        return getattr(self, resource)

    def ap_capacities(self) -> tuple[int, ...]:
        """Embodiment 9's ``C_h``: what an empty AP has of each resource, in the order of
        :data:`RESOURCES` (per-PEU resources summed over the AP's PEUs)."""
        return tuple(self.capacity(name) * (self.peus if level == "peu" else 1)
                     for name, (level, _) in RESOURCES.items())

    def resource_weight_values(self) -> tuple[int, ...]:
        """The ``a_h`` in use: the configured integers, or ``L / C_h`` (see above)."""
        if self.resource_weights is not None:
            return tuple(self.resource_weights)
        capacities = self.ap_capacities()
        common = math.lcm(*capacities)
        return tuple(common // c for c in capacities)


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
        (embodiment 10), ``combined`` (both, weighted by the integers ``resource_weight``
        and ``instruction_weight``, 0..255).
    rotate
        Embodiment 8's per-AP rotating pointer; ``False`` uses the split table unrotated.
    wave_placement
        ``split`` (embodiment 8's split table, rotated when ``rotate``) or ``least_loaded``
        (each wave in turn to the PEU with the most free wave slots where its wave group
        still fits, ties to the lowest index; ``rotate`` is then not read).
    windows
        Embodiment 2's window lengths in cycles, window ``y`` promoting priority ``y``
        (``()`` turns windows off); at most one per priority, non-increasing.
    split_threshold
        Embodiment 3's all-fail count ``g`` that triggers splitting (0 turns it off).
    circuit, group_size, circuit_latency
        The free-block circuit seen by the matcher (embodiments 4, 5, 6 or the exact one),
        and its latency in clocks. ``shared`` (embodiment 7): one exact unit per AP serving
        the AP's status words in turn (:func:`shared_schedule`); a resource's view is the
        length of its status ``circuit_latency`` cycles before the last clock the unit served
        it, so it is between ``circuit_latency + 1`` and ``circuit_latency + C`` cycles old.
    shared_width
        Width of the shared unit in blocks (0: the largest resource's block count).
    history, history_cycles
        Embodiment 10's power history: ``window`` (the seed's sum over the last ``Nx`` =
        ``history_cycles`` cycles) or ``ema`` (``x <- x - (x >> log2 Nx) + p`` every cycle);
        ``Nx`` a power of two.
    lfsr_seed
        Initial state of the tie-break LFSR (non-zero, 16 bits).
    release_limit
        Releases the dispatcher applies per cycle (0, the default: every WG that completed
        is released in the cycle after its last running cycle). With ``k > 0``, WGs due in the
        same cycle beyond the first ``k`` wait, in (due cycle, WG id) order, and are released
        in the following cycles: a dispatcher that takes one completion per clock, as the RTL
        dispatcher does (``release_limit = 1``, docs/dispatch_rtl.md).
    combined_scale
        ``ap_choice = "combined"``: the candidates' largest ``R`` and ``B`` scale the two
        terms (``candidates``, the default), or every AP's (``all``).
    score_latency
        With ``decision_pipeline``: the match keeps embodiment 9's and 10's scores of this
        many cycles before (0: its own cycle's), so that an RTL can compute their products in
        a pipeline of their own.
    decision_pipeline
        0 (the default): the seed's decision, every step in one cycle on the state of that
        cycle. ``k >= 2``: the decision as a pipeline of stages (the cut a 50 MHz RTL
        dispatcher needs, docs/dispatch_rtl.md): in cycle ``t`` the WG and the AP are chosen
        from the match of cycle ``t - 1`` (the view, free wave slots, pointers, embodiment 9's
        scores and embodiment 10's history of that cycle, against each channel's first two
        WGs not already chosen); the first fit runs on the status of cycle ``t + k - 1`` and
        the WG is dispatched in cycle ``t + k`` if those blocks and its wave slots are still
        free, otherwise it is a stale abort that also discards every WG chosen after it and
        the choices of the next two cycles. A channel's WGs stay in order; the selection
        state (flags, LFSR, pointers) moves when a WG is chosen. Not with the ``miaow``
        selection or the ``least_loaded`` placement.
    """

    name: str = "seed"
    selection: str = "multi"
    ap_choice: str = "combined"
    resource_weight: int = 1
    instruction_weight: int = 1
    rotate: bool = True
    wave_placement: str = "split"
    windows: tuple[int, ...] = (1024, 512, 256, 128)
    split_threshold: int = 256
    circuit: str = "exact"
    group_size: int = 4
    circuit_latency: int = 0
    history: str = "window"
    history_cycles: int = 1024
    lfsr_seed: int = 0xACE1
    release_limit: int = 0
    shared_width: int = 0
    decision_pipeline: int = 0
    combined_scale: str = "candidates"
    score_latency: int = 0

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
    the instructions each wave executes per cycle, by :data:`INSTRUCTION_CLASSES`, at most one
    in all; the model uses it quantised to 1/256 (:func:`quantised_mix`). ``work`` is the
    wave-instructions each wave issues under the shared-issue execution model (an inclusive
    range, drawn uniformly after the other fields); ``None`` takes the WG's ``duration``: a
    wave alone on its PEU then runs ``duration`` cycles.
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
    work: tuple[int, int] | None = None


@dataclass
class WorkGroup:
    """One workgroup as submitted (or one of its per-wave sub-WGs after a split).

    ``duration`` is its run time under the fixed execution model; ``work`` the
    wave-instructions each of its waves issues under the shared-issue model (``None``: the
    duration). ``barrier``: it may not be dispatched while WGs dispatched before it from its
    channel still run (the first WG of a kernel launched on an in-order stream).
    """

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
    work: int | None = None
    barrier: bool = False
    # Filled in by the simulator:
    dispatched: int | None = None
    completed: int | None = None
    ap: int | None = None


#: Columns of the CSV trace format, in order.
TRACE_COLUMNS = ("arrival", "channel", "priority", "waves", "vgpr", "sgpr", "lds", "duration",
                 "independent")
#: Optional columns after them (both or none): work per wave (shared-issue model; empty = the
#: duration) and the in-order barrier flag.
TRACE_EXTRA_COLUMNS = ("work", "barrier")


@dataclass(frozen=True)
class Claim:
    """A comparison the scenario exists to show: ``metric`` (a dotted path into a run's
    results, e.g. ``wait.per_priority.3.max``) of ``policy`` against ``baseline``.

    ``execution``: the execution model it is measured under (``None``: the scenario's).
    ``loads``: where it is judged (:mod:`model.dispatch.claims`): ``"as written"`` (the
    scenario's rates), ``"batch"`` (the same WGs all queued at cycle 0: makespan), or a
    fraction of the baseline's measured capacity (e.g. ``0.7``).
    """

    text: str
    metric: str
    policy: str
    baseline: str
    higher_is_better: bool
    execution: str | None = None
    loads: tuple = (LOAD_AS_WRITTEN,)

    def value(self, results: dict) -> float:
        node = results
        for part in self.metric.split("."):
            node = node[part]
        return float(node)


#: The summary every wait statistic has (:func:`model.stats.summary`).
_SUMMARY = ("count", "mean", "p50", "p99", "max")
#: The results' numbers at the top level, by name.
_SCALARS = ("cycles", "workgroups_submitted", "workgroups_completed", "workgroups_rejected",
            "workgroups_unfinished", "workgroups_waiting_at_end", "workgroups_after_end",
            "throughput", "peu_imbalance", "fragmentation", "splits", "sub_workgroups",
            "stale_aborts", "flushed", "invariant_violations", "processed_cycles", "makespan")


def metric_paths(priorities: int, channels: int) -> list[str]:
    """Every number a run's results hold, as the dotted paths a claim's ``metric`` names
    (a test holds this list equal to the simulator's results)."""
    paths = list(_SCALARS)
    paths += [f"wait.{s}" for s in _SUMMARY]
    paths += [f"wait.per_priority.{p}.{s}" for p in range(priorities) for s in _SUMMARY]
    paths += [f"wait.per_channel.{c}.{s}" for c in range(channels) for s in _SUMMARY]
    paths += [f"utilisation.{name}" for name in RESOURCES]
    paths += ["ap_imbalance.resource", "ap_imbalance.power"]
    paths += [f"{group}.{s}" for group in ("latency", "run") for s in _SUMMARY]
    paths += ["steady.throughput", "steady.offered"]
    paths += [f"steady.{group}.{s}" for group in ("wait", "latency") for s in _SUMMARY]
    return paths


def _metric_help(priorities: int, channels: int) -> str:
    summary = "|".join(_SUMMARY)
    return (f"{', '.join(_SCALARS)}, wait.<{summary}>, wait.per_priority.<0..{priorities - 1}>"
            f".<{summary}>, wait.per_channel.<0..{channels - 1}>.<{summary}>, "
            f"utilisation.<{'|'.join(RESOURCES)}>, ap_imbalance.<resource|power>, "
            f"latency.<{summary}>, run.<{summary}>, steady.<throughput|offered>, "
            f"steady.<wait|latency>.<{summary}>")


@dataclass(frozen=True)
class Scenario:
    """A scenario file, loaded: the GPU, the channels, the workload and the policies.

    A trace is read (and checked) when the file is loaded; ``trace_workload`` holds its WGs.
    ``notes`` says what the file gives that is not used (shown with the results).
    ``power_window`` is the sliding window, in cycles, of the ``ap_imbalance.power`` metric
    (the same for every policy, whatever history its embodiment 10 keeps). ``execution`` is
    the execution model (:data:`EXECUTIONS`); ``warmup`` the cycles the ``steady`` metrics
    leave out (WGs arriving before it, completions before it).
    """

    name: str
    cycles: int
    gpu: GpuConfig
    channels: tuple[ChannelConfig, ...]
    policies: tuple[PolicyConfig, ...]
    trace: Path | None = None
    path: Path | None = None
    sample_interval: int = 64
    claims: tuple[Claim, ...] = ()
    trace_workload: tuple[WorkGroup, ...] | None = None
    power_window: int = 1024
    notes: tuple[str, ...] = ()
    # Kernel traces (issue 15): the source, and its WGs once model.dispatch.kernels.prepare
    # has converted it (the conversion drives the dispatcher model, which imports this module).
    kernel_trace: "KernelTraceSource | None" = None
    workgroups: tuple[WorkGroup, ...] | None = None
    execution: str = "fixed"
    warmup: int = 0
    # A kernel trace's windows (issue 15 §4): the window of each channel, and the largest
    # random delay of every window but the first (drawn per seed).
    channel_windows: tuple[int, ...] = ()
    stagger: int = 0

    def workload(self, seed: int = 1) -> list[WorkGroup]:
        """The WGs of this scenario (fresh objects): the converted kernel trace (each window
        after the first delayed by a random ``0..stagger`` cycles drawn with ``seed``), the
        CSV trace, or the generators run with ``seed``."""
        if self.workgroups is not None:
            workload = [replace(wg) for wg in self.workgroups]
            if self.stagger and len(set(self.channel_windows)) > 1:
                rng = random.Random(f"{seed}/stagger")
                delays = [0] + [rng.randint(0, self.stagger)
                                for _ in range(max(self.channel_windows))]
                for wg in workload:
                    wg.arrival += delays[self.channel_windows[wg.channel]]
                workload.sort(key=lambda wg: (wg.arrival, wg.channel, wg.id))
                for number, wg in enumerate(workload):
                    wg.id = number
            return workload
        if self.kernel_trace is not None:
            raise ConfigError(f"{self.path or self.name}: the kernel trace has not been "
                              f"converted yet (model.dispatch.kernels.prepare)")
        if self.trace is not None:
            rows = self.trace_workload
            if rows is None:
                rows = read_trace(self.trace, self.gpu, len(self.channels) or None)
            return [replace(wg) for wg in rows]
        return generate_workload(self.channels, self.cycles, seed)

    @property
    def channel_count(self) -> int:
        """Channels of the workload: the declared ones, or those the trace uses."""
        rows = self.trace_workload or self.workgroups
        if rows:
            return max(len(self.channels), 1 + max(wg.channel for wg in rows))
        return max(len(self.channels), 1)


def _gpu(fields_: Fields, base: GpuConfig | None = None) -> GpuConfig:
    base = base or GpuConfig()
    resource_weights = None
    if "resource_weights" in fields_:
        resource_weights = fields_.int_list("resource_weights", length=len(RESOURCES),
                                            minimum=0, maximum=MAX_RESOURCE_WEIGHT)
    gpu = GpuConfig(
        aps=fields_.int("aps", base.aps, minimum=1, maximum=1024),
        peus=fields_.int("peus", base.peus, minimum=1, maximum=64),
        vgpr=fields_.int("vgpr", base.vgpr, minimum=1, maximum=4096),
        sgpr=fields_.int("sgpr", base.sgpr, minimum=1, maximum=4096),
        lds=fields_.int("lds", base.lds, minimum=1, maximum=4096),
        wave_slots=fields_.int("wave_slots", base.wave_slots, minimum=1, maximum=1024),
        priorities=fields_.int("priorities", base.priorities, minimum=1, maximum=16),
        resource_weights=resource_weights,
        instruction_weights=fields_.int_list("instruction_weights", base.instruction_weights,
                                             length=len(INSTRUCTION_CLASSES), minimum=0,
                                             maximum=MAX_WEIGHT),
        issue_width=fields_.int("issue_width", base.issue_width, minimum=1, maximum=64),
        drain=fields_.int("drain", base.drain, minimum=0, maximum=MAX_DRAIN),
    )
    fields_.done()
    return gpu


def quantised_mix(mix) -> tuple[int, ...]:
    """A channel's mix in the model's fixed point: instructions per cycle per wave in units of
    ``2**-MIX_FRACTION_BITS`` (1/256), by largest remainder: every class is rounded down, and
    the units left to reach the written total (rounded to nearest, ties up) go to the classes
    with the largest fractions (ties to the lower class). Each class is within 1/256 of what
    was written and the total is the written total rounded, so a mix that adds up to at most
    one instruction per cycle stays at most 256 (floats are read exactly, as fractions)."""
    scaled = [Fraction(value) * (1 << MIX_FRACTION_BITS) for value in mix]
    floors = [math.floor(value) for value in scaled]
    total = math.floor(sum(scaled) + Fraction(1, 2))
    order = sorted(range(len(scaled)), key=lambda i: (-(scaled[i] - floors[i]), i))
    for index in order[:total - sum(floors)]:
        floors[index] += 1
    return tuple(floors)


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
        work=(fields_.int_range("work", minimum=1, maximum=MAX_WORK) if "work" in fields_
              else None),
    )
    if arrival == "back_to_back" and channel.count > MAX_BACK_TO_BACK:
        raise fields_.error("count", f"must be at most {MAX_BACK_TO_BACK:,} for a back-to-back "
                                     f"channel (the model holds every queued WG), not "
                                     f"{channel.count:,}; for an endless backlog give a rate, "
                                     f"e.g. arrival = 1.0, which the run length bounds")
    total = sum(quantised_mix(channel.mix))
    if total > 1 << MIX_FRACTION_BITS:
        raise fields_.error("mix", f"must add up to at most 1 instruction per cycle per wave, "
                                   f"not {sum(channel.mix):g} ({total}/256 in the model's "
                                   f"1/256 steps)")
    fields_.done()
    return channel


def _policy(fields_: Fields, gpu: GpuConfig) -> PolicyConfig:
    preset_name = fields_.str("preset", "seed", choices=tuple(PRESETS))
    base = PRESETS[preset_name]
    policy = PolicyConfig(
        name=fields_.str("name", preset_name),
        selection=fields_.str("selection", base.selection, choices=SELECTIONS),
        ap_choice=fields_.str("ap_choice", base.ap_choice, choices=AP_CHOICES),
        resource_weight=fields_.int("resource_weight", base.resource_weight, minimum=0,
                                    maximum=MAX_WEIGHT),
        instruction_weight=fields_.int("instruction_weight", base.instruction_weight,
                                       minimum=0, maximum=MAX_WEIGHT),
        rotate=fields_.bool("rotate", base.rotate),
        wave_placement=fields_.str("wave_placement", base.wave_placement,
                                   choices=WAVE_PLACEMENTS),
        windows=fields_.int_list("windows", base.windows, minimum=1),
        split_threshold=fields_.int("split_threshold", base.split_threshold, minimum=0),
        circuit=fields_.str("circuit", base.circuit, choices=CIRCUITS),
        group_size=fields_.int("group_size", base.group_size, minimum=1),
        circuit_latency=fields_.int("circuit_latency", base.circuit_latency, minimum=0,
                                    maximum=64),
        history=fields_.str("history", base.history, choices=HISTORIES),
        history_cycles=fields_.int("history_cycles", base.history_cycles, minimum=1,
                                   maximum=1 << 20),
        lfsr_seed=fields_.int("lfsr_seed", base.lfsr_seed, minimum=1, maximum=0xFFFF),
        release_limit=fields_.int("release_limit", base.release_limit, minimum=0,
                                  maximum=1 << 16),
        shared_width=fields_.int("shared_width", base.shared_width, minimum=0,
                                 maximum=1 << 16),
        decision_pipeline=fields_.int("decision_pipeline", base.decision_pipeline,
                                      minimum=0, maximum=MAX_PIPELINE),
        combined_scale=fields_.str("combined_scale", base.combined_scale,
                                   choices=COMBINED_SCALES),
        score_latency=fields_.int("score_latency", base.score_latency, minimum=0,
                                  maximum=MAX_PIPELINE),
    )
    ignored = ignored_fields(policy)
    for key in fields_.keys():
        if key in ignored and not (key in _OFF and getattr(policy, key) == _OFF[key]):
            raise fields_.error(key, f"is ignored by this policy: {ignored[key]}; remove it")
    check_policy(policy, gpu, fields_)
    fields_.done()
    return policy


#: Fields whose value turns their mechanism off: writing it is allowed on any policy.
_OFF = {"windows": (), "split_threshold": 0, "rotate": False}


def ignored_fields(policy: PolicyConfig) -> dict[str, str]:
    """The fields ``policy`` does not read, each with the reason (for error messages)."""
    ignored = {}
    if policy.selection != "multi":
        why = (f'selection = "{policy.selection}" (only "multi", embodiment 1, has '
               f"{{}})")
        ignored["windows"] = why.format("priority windows")
        ignored["split_threshold"] = why.format("embodiment 3's split")
        ignored["lfsr_seed"] = why.format("the a42 tie-break")
    if policy.ap_choice != "combined":
        for key in ("resource_weight", "instruction_weight", "combined_scale"):
            ignored[key] = f'ap_choice = "{policy.ap_choice}" (only "combined" weighs 9 and 10)'
    if policy.ap_choice in ("round_robin", "lowest"):
        ignored["score_latency"] = (f'ap_choice = "{policy.ap_choice}" (it reads no '
                                    f"embodiment 9 or 10 score)")
    if policy.ap_choice not in ("instruction", "combined"):
        for key in ("history", "history_cycles"):
            ignored[key] = (f'ap_choice = "{policy.ap_choice}" (only "instruction" and '
                            f'"combined" read the power history)')
    if policy.circuit != "grouped":
        ignored["group_size"] = f'circuit = "{policy.circuit}" (only "grouped" has groups)'
    if policy.circuit != "shared":
        ignored["shared_width"] = (f'circuit = "{policy.circuit}" (only "shared" has a shared '
                                   f"unit)")
    if policy.wave_placement != "split":
        ignored["rotate"] = (f'wave_placement = "{policy.wave_placement}" (only "split" has '
                             f"embodiment 8's pointer)")
    return ignored


def check_policy(policy: PolicyConfig, gpu: GpuConfig, fields_: Fields | None = None) -> None:
    """Cross-field checks of a policy against the GPU; errors name the field. A field the
    policy ignores must keep its default (or its "off" value)."""
    def error(key, message):
        return fields_.error(key, message) if fields_ else ConfigError(f"{key} {message}")

    if fields_ is None:
        default = PolicyConfig()
        for key, why in ignored_fields(policy).items():
            value = getattr(policy, key)
            # An ignored flag keeps its default or its "off" value (rotate: either).
            if value not in (_OFF.get(key, getattr(default, key)),
                             getattr(default, key) if key == "rotate" else _OFF.get(key)):
                raise error(key, f"is ignored by this policy: {why}; not {value!r}")
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
    if policy.decision_pipeline == 1:
        raise error("decision_pipeline", "must be 0 (one-cycle decision) or 2 .. "
                                         f"{MAX_PIPELINE} (cycles from choice to dispatch), not 1")
    if policy.score_latency and not policy.decision_pipeline:
        raise error("score_latency", "is read only by the decision pipeline "
                                     "(decision_pipeline >= 2); use 0")
    if policy.decision_pipeline and policy.selection == "miaow":
        raise error("decision_pipeline", 'is not defined for selection = "miaow" (its '
                                         "one-WG buffer); use 0")
    if policy.decision_pipeline and policy.wave_placement == "least_loaded":
        raise error("decision_pipeline", 'is not defined for wave_placement = '
                                         '"least_loaded"; use 0')
    largest = max(gpu.vgpr, gpu.sgpr, gpu.lds)
    if policy.circuit == "shared" and 0 < policy.shared_width < largest:
        raise error("shared_width", f"{policy.shared_width} is narrower than the largest "
                                    f"contiguous resource ({largest} blocks)")


def shared_schedule(gpu: GpuConfig, width: int = 0):
    """Embodiment 7's schedule of one AP's unit: the AP's status words ``vgpr0`` ..
    ``vgpr{Q-1}``, ``sgpr0`` .., ``lds`` in that order, each put in the first period with room
    for it (``width`` blocks, 0: the largest resource's block count), a new period when none
    has. A :class:`model.maxblock.SharedSchedule`; its period count is the refresh interval.
    For the defaults (width 128): four periods of one VGPR file, two of two SGPR files, one
    of the LDS: every view is refreshed once in 7 clocks."""
    width = width or max(gpu.vgpr, gpu.sgpr, gpu.lds)
    types = ([(f"vgpr{q}", gpu.vgpr) for q in range(gpu.peus)]
             + [(f"sgpr{q}", gpu.sgpr) for q in range(gpu.peus)] + [("lds", gpu.lds)])
    periods: list[list[tuple[str, int]]] = []
    for name, size in types:
        for period in periods:
            if sum(s for _, s in period) + size <= width:
                period.append((name, size))
                break
        else:
            periods.append([(name, size)])
    return SharedSchedule(tuple(tuple(p) for p in periods), width)


# -- kernel traces (issue 15): the scenario fields; the conversion is model.dispatch.kernels -----

@dataclass(frozen=True)
class KernelTraceSource:
    """A profiler's kernel trace replayed on a GPU preset (scenario keys ``kernel_trace``,
    ``preset``, ``format``, ``kernels``, ``clock_mhz``; CLI ``--kernel-trace`` ...).

    ``first``/``last``: the launches taken, by position among the file's kernels (0-based,
    ``last`` excluded, ``None`` = to the end). ``windows``: instead, several such windows,
    each replayed from cycle 0 on channels of its own (concurrent requests; scenario key
    ``windows = [[first, last], ...]``). ``clock_mhz``: overrides the preset's clock.
    ``in_order``: a launch's WGs wait until the previous launch on their stream has completed
    (HIP stream / AQL barrier-bit semantics). ``stagger``: with ``windows``, each window but
    the first starts a random ``0..stagger`` cycles late, drawn per workload seed (requests
    that do not arrive together), so that claims over seeds see different overlaps.
    """

    path: Path
    preset: str
    format: str | None = None
    first: int = 0
    last: int | None = None
    clock_mhz: int | None = None
    windows: tuple[tuple[int, int | None], ...] = ()
    in_order: bool = True
    stagger: int = 0


def _kernel_trace(root: Fields, path: Path) -> KernelTraceSource | None:
    if "kernel_trace" not in root:
        for key in ("preset", "format", "kernels", "windows", "clock_mhz", "in_order",
                    "stagger"):
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
    windows = []
    if "windows" in root:
        if "kernels" in root:
            raise root.error("windows", "and kernels cannot both be given")
        for value in root.list("windows"):
            if (not isinstance(value, list) or len(value) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                               for v in value) or value[1] <= value[0]):
                raise root.error("windows", f"must list [first, last] pairs with 0 <= first < "
                                            f"last, not {value!r}")
            windows.append((value[0], value[1]))
        if not windows:
            raise root.error("windows", "must list at least one [first, last] pair")
    clock = (root.int("clock_mhz", minimum=1, maximum=100000) if "clock_mhz" in root
             else None)
    stagger = root.int("stagger", 0, minimum=0)
    if stagger and len(windows) < 2:
        raise root.error("stagger", "needs windows = [[first, last], ...] with at least two "
                                    "windows (it delays every window but the first)")
    return KernelTraceSource(path=trace, preset=preset, format=format_, first=first,
                             last=last, clock_mhz=clock, windows=tuple(windows),
                             in_order=root.bool("in_order", True), stagger=stagger)


def load_scenario(path) -> Scenario:
    """Load and validate a scenario file, its trace and its claims: every cross-reference is
    checked here, before anything runs; :class:`~model.config.ConfigError` names the field
    (or the trace's row and column)."""
    path = Path(path)
    root = Fields(load_toml(path), source=path)
    name = root.str("name", path.stem)
    cycles = root.int("cycles", 20000, minimum=1)
    sample_interval = root.int("sample_interval", 64, minimum=1)
    power_window = root.int("power_window", 1024, minimum=1)
    execution = root.str("execution", "fixed", choices=EXECUTIONS)
    warmup = root.int("warmup", 0, minimum=0)
    if warmup >= cycles:
        raise root.error("warmup", f"must be less than the cycle limit {cycles}, not {warmup}")
    kernel_trace = _kernel_trace(root, path)
    base = (GpuConfig(**GPU_PRESETS[kernel_trace.preset].gpu_fields())
            if kernel_trace is not None else None)
    gpu = _gpu(root.table("gpu", {}), base)
    trace = trace_workload = None
    if "trace" in root and kernel_trace is not None:
        raise root.error("kernel_trace", "and trace cannot both be given")
    if "trace" in root:
        trace = (path.parent / root.str("trace")).resolve()
        if not trace.is_file():
            raise root.error("trace", f"names {str(trace)!r}, which is not a file")
    channel_tables = root.tables("channels", [])
    channels = tuple(_channel(table, gpu) for table in channel_tables)
    notes = []
    if trace is not None:
        trace_workload = tuple(read_trace(trace, gpu, len(channels) or None))
        unread = sorted({key for table in channel_tables for key in table.keys()} - {"mix"})
        if unread:
            notes.append(f"the WGs come from the trace {trace.name}: the channel tables' "
                         f"{', '.join(unread)} are not used (only mix is)")
    if not channels and trace is None and kernel_trace is None:
        raise root.error("channels", "must list at least one channel (or give a trace)")
    policy_tables = root.tables("policies", [])
    policies = tuple(_policy(table, gpu) for table in policy_tables) or tuple(
        PRESETS[name] for name in ("prior-art", "miaow", "gpgpusim", "emb1", "seed"))
    names = [policy.name for policy in policies]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise root.error("policies", f"names {duplicate!r} twice; names must be unique")
    scenario = Scenario(name=name, cycles=cycles, gpu=gpu, channels=channels,
                        policies=policies, trace=trace, path=path,
                        sample_interval=sample_interval, trace_workload=trace_workload,
                        power_window=power_window, notes=tuple(notes),
                        kernel_trace=kernel_trace, execution=execution, warmup=warmup)
    metrics = metric_paths(gpu.priorities, scenario.channel_count)
    claims = tuple(_claim(table, names, metrics, scenario)
                   for table in root.tables("claims", []))
    root.done()
    return replace(scenario, claims=claims)


def rate_channels_only(scenario: Scenario) -> str | None:
    """Why the scenario's offered load cannot be scaled (``None`` when it can: every WG comes
    from a rate channel)."""
    if scenario.trace is not None or scenario.kernel_trace is not None:
        return "its WGs come from a trace"
    fixed = [index for index, c in enumerate(scenario.channels) if c.arrival == "back_to_back"]
    if fixed:
        return f"channel {fixed[0]} is back to back, not a rate"
    return None


def _loads(fields_: Fields, scenario: Scenario) -> tuple:
    """A claim's ``loads``: "as written", "batch", or fractions of the measured capacity."""
    values = fields_.list("loads", [LOAD_AS_WRITTEN])
    loads = []
    for value in values:
        if isinstance(value, str) and value in (LOAD_AS_WRITTEN, LOAD_BATCH):
            loads.append(value)
        elif (isinstance(value, int | float) and not isinstance(value, bool)
              and 0 < value <= 4):
            why = rate_channels_only(scenario)
            if why is not None:
                raise fields_.error("loads", f"gives {value!r}, a fraction of the measured "
                                             f"capacity, but the load of this scenario cannot "
                                             f"be scaled: {why}")
            loads.append(float(value))
        else:
            raise fields_.error("loads", f"must list \"{LOAD_AS_WRITTEN}\", \"{LOAD_BATCH}\" "
                                         f"or fractions of the measured capacity in (0, 4], "
                                         f"not {value!r}")
    if not loads or len(set(loads)) != len(loads):
        raise fields_.error("loads", f"must list each load once, at least one, not {values!r}")
    return tuple(loads)


def _claim(fields_: Fields, policies: list[str], metrics: list[str],
           scenario: Scenario) -> Claim:
    channels = scenario.channel_count
    metric = fields_.str("metric")
    if metric not in metrics:
        priorities = sum(1 for m in metrics if m.startswith("wait.per_priority.")) // len(
            _SUMMARY)
        raise fields_.error("metric", f"names {metric!r}, which is not a metric of the "
                                      f"results; accepted: {_metric_help(priorities, channels)}")
    claim = Claim(text=fields_.str("text"), metric=metric,
                  policy=fields_.str("policy", choices=policies),
                  baseline=fields_.str("baseline", choices=policies),
                  higher_is_better=fields_.bool("higher_is_better"),
                  execution=(fields_.str("execution", choices=EXECUTIONS)
                             if "execution" in fields_ else None),
                  loads=_loads(fields_, scenario))
    if claim.policy == claim.baseline:
        raise fields_.error("baseline", f"is the claim's policy {claim.policy!r}; a claim "
                                        f"compares two different policies")
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

    Rate channels stop generating at ``cycles`` (one Bernoulli draw per cycle, so the work is
    bounded by the run length whatever the rate); back-to-back channels queue all ``count``
    WGs at their start cycle. Ids are assigned in arrival order (channel order for equal
    cycles), so they are the global submission order.
    """
    drawn = []
    for index, channel in enumerate(channels):
        rng = random.Random(f"{seed}/{index}")
        cycle = channel.start
        for _ in range(channel.count):
            if channel.arrival != "back_to_back":
                # Bernoulli arrivals: the gap to the next success is geometric.
                while cycle < cycles and rng.random() >= channel.arrival:
                    cycle += 1
                if cycle >= cycles:
                    break
            wg = WorkGroup(
                id=-1, channel=index, priority=channel.priority,
                waves=rng.randint(*channel.waves), vgpr=rng.randint(*channel.vgpr),
                sgpr=rng.randint(*channel.sgpr), lds=rng.randint(*channel.lds),
                duration=_duration(channel, rng),
                independent=rng.random() < channel.independent, arrival=cycle)
            if channel.work is not None:
                # Drawn last, and only when given, so that the other draws are unchanged.
                wg.work = rng.randint(*channel.work)
            drawn.append((cycle, index, wg))
            if channel.arrival != "back_to_back":
                cycle += 1
    drawn.sort(key=lambda item: (item[0], item[1]))
    workload = [wg for _, _, wg in drawn]
    for number, wg in enumerate(workload):
        wg.id = number
    return workload


def read_trace(path, gpu: GpuConfig, channels: int | None = None) -> list[WorkGroup]:
    """Read a CSV trace (header :data:`TRACE_COLUMNS`, one WG per row; blank lines are
    skipped). Every value is checked; an error names the file, the row (its line number) and
    the column, and says what is accepted. A row with more or fewer values than the header
    is an error, not silently cut or padded."""
    path = Path(path)
    try:
        file = path.open(newline="")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from None
    expected = ",".join(TRACE_COLUMNS)
    with file:
        reader = csv.reader(file)
        try:
            workload = _trace_rows(path, reader, gpu, channels, expected)
        except UnicodeDecodeError as error:
            raise ConfigError(f"{path}: not a UTF-8 text file (byte {error.start}: "
                              f"{error.reason}); a trace is CSV text") from None
        except csv.Error as error:
            raise ConfigError(f"{path}: row {reader.line_num}: not valid CSV ({error})") from None
    workload.sort(key=lambda wg: (wg.arrival, wg.channel))
    for number, wg in enumerate(workload):
        wg.id = number
    return workload


def _trace_rows(path, reader, gpu: GpuConfig, channels: int | None, expected: str
                ) -> list[WorkGroup]:
    """The WGs of a trace's rows, each value checked (see :func:`read_trace`)."""
    workload = []
    header = next(reader, None)
    header = [column.strip() for column in header or ()]
    columns = TRACE_COLUMNS + TRACE_EXTRA_COLUMNS
    if tuple(header) not in (TRACE_COLUMNS, columns):
        raise ConfigError(f"{path}: header must be {expected} (optionally followed by "
                          f"{','.join(TRACE_EXTRA_COLUMNS)}), not {','.join(header)}")
    columns = tuple(header)
    limits = {"channel": (0, (channels or 1 << 16) - 1),
              "priority": (0, gpu.priorities - 1),
              "waves": (1, gpu.peus * gpu.wave_slots), "vgpr": (0, None),
              "sgpr": (0, None), "lds": (0, None), "duration": (1, None),
              "arrival": (0, None), "independent": (0, 1), "work": (1, MAX_WORK),
              "barrier": (0, 1)}
    for row in reader:
        row_number = reader.line_num
        if not row:
            continue
        if len(row) != len(columns):
            raise ConfigError(f"{path}: row {row_number} has {len(row)} values, but the "
                              f"header has {len(columns)} columns ({','.join(columns)})")
        values = {}
        for column, text in zip(columns, row, strict=True):
            text = text.strip()
            if column == "work" and not text:
                values[column] = None            # empty: the duration
                continue
            low, high = limits[column]
            try:
                value = int(text)
            except ValueError:
                raise ConfigError(f"{path}: row {row_number}, column {column!r}: "
                                  f"{text!r} is not an integer") from None
            if value < low or (high is not None and value > high):
                bound = f"{low}..{high}" if high is not None else f">= {low}"
                why = (" (a WG's waves must fit one AP's wave slots, peus x wave_slots)"
                       if column == "waves" else "")
                raise ConfigError(f"{path}: row {row_number}, column {column!r}: {value} "
                                  f"is out of range ({bound}){why}")
            values[column] = value
        workload.append(WorkGroup(id=-1, independent=bool(values.pop("independent")),
                                  barrier=bool(values.pop("barrier", 0)), **values))
    return workload


def write_trace(path, workload) -> Path:
    """Write ``workload`` (submitted WGs, not sub-WGs) as a CSV trace; the ``work`` and
    ``barrier`` columns only when some WG has a work of its own or a barrier."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = any(wg.work is not None or wg.barrier for wg in workload)
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(TRACE_COLUMNS + (TRACE_EXTRA_COLUMNS if extra else ()))
        for wg in workload:
            row = [wg.arrival, wg.channel, wg.priority, wg.waves, wg.vgpr, wg.sgpr, wg.lds,
                   wg.duration, int(wg.independent)]
            if extra:
                row += ["" if wg.work is None else wg.work, int(wg.barrier)]
            writer.writerow(row)
    return path


def with_policy(policy: PolicyConfig, **changes) -> PolicyConfig:
    """``dataclasses.replace`` for policies, for tests and the CLI."""
    known = {f.name for f in fields(PolicyConfig)}
    unknown = set(changes) - known
    if unknown:
        raise ConfigError(f"unknown policy field {sorted(unknown)[0]!r}")
    return replace(policy, **changes)
