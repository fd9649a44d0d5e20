"""Real kernels on real GPUs: a profiler's kernel trace as the dispatcher model's workload.

:func:`trace_workload` turns the launches of a :class:`~model.dispatch.profilers.KernelTrace`
into workgroups for a :class:`~model.dispatch.gpus.GpuPreset`:

* **Channels.** One channel per stream (HIP/CUDA stream or HSA queue, with its device), in the
  order the streams first appear. A channel's priority is the scenario's ``[[channels]]``
  table of the same index, else 0. Kernel WGs are not *independent* (embodiment 3 does not
  split them): real kernels synchronise their waves.
* **Time.** A launch's WGs all arrive at its start: ``arrival = floor((start - t0) x f)``
  cycles, ``t0`` the first start in the window and ``f`` the preset's clock in cycles per ns
  (``clock_mhz / 1000``), so launch order and gaps are kept. Within a channel, launches are
  taken in order of start time (ties in file order). The end (or duration) gives the
  kernel's measured time ``D = ceil(duration x f)`` cycles.
* **Shape.** Each launch becomes ``workgroups`` WGs of :meth:`GpuPreset.shape` (waves,
  VGPR/SGPR blocks per wave, LDS blocks, with the LDS share of a resident-WG slot where the
  GPU's limit on WGs per AP binds, counted in the notes) as if compiled for the preset: a
  wave size the GPU does not run becomes its native one; registers or SGPRs above what the
  GPU allows are clamped to its maximum (counted: rocprof v1 reports 128 SGPRs for every
  gfx10+ kernel); accumulation registers on a GPU without them count as VGPRs. A launch the
  GPU cannot run (too many threads or LDS bytes per WG, NVIDIA's per-block register check)
  is skipped and counted.
* **Duration** (:func:`workgroup_duration`, the fixed execution model): the kernel's ``N``
  WGs run in ``R = ceil(N / (A x O))`` rounds on ``A`` APs holding ``O`` WGs each (``O`` =
  :func:`occupancy`, as the model's allocator places the shape), and each WG lasts
  ``T = max(1, round(D / R))`` cycles: a GPU that keeps every AP full reproduces the measured
  kernel time.
* **Work** (:func:`workgroup_work`, the shared-issue execution model): in such a round an AP
  holds ``k = min(O, ceil(N / A))`` WGs of ``m`` waves, which the seed's rotated split spreads
  so that the busiest PEU has ``n = ceil(k m / Q)`` issuing waves, each issuing
  ``min(1, W / n)`` wave-instructions per cycle (``W`` = issue width); so each wave's work is
  ``max(1, round((T - drain) x min(n, W) / n))`` wave-instructions, and a round placed that
  way lasts ``T`` again. Placed worse (more waves on a PEU) it lasts longer; placed better,
  shorter.

:func:`occupancy` is measured on the model, not computed: a one-AP GPU of the preset receives
identical WGs that never finish, all at cycle 0, and the WGs it dispatched are counted.

Scenario files name a trace with ``kernel_trace``/``preset`` (:class:`KernelTraceSource`);
:func:`prepare` converts it (it cannot happen at load time: the conversion drives the
dispatcher model, which imports the configuration module). Only WGs arriving before the cycle
limit are made, and a window of more than :data:`MAX_WORKGROUPS` WGs is refused with a message
saying how to narrow it.

Kept as one module (about 620 lines, over the guide's 600 lines) on purpose: about 60 of
them are this docstring, the conversion's rules beside the code that applies them, and
channels, shapes, durations, work and the replay options read the same launch records.
"""

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from model.config import ConfigError
from model.dispatch.config import (
    PRESETS,
    GpuConfig,
    KernelTraceSource,
    LaunchWorkload,
    PolicyConfig,
    Scenario,
    WorkGroup,
)
from model.dispatch.config.scenario import MAX_SAMPLES
from model.dispatch.engine import DispatchSimulator
from model.dispatch.gpus import GPU_PRESETS, GpuPreset, LaunchError, WorkgroupShape, gpu_preset
from model.dispatch.profilers import FORMATS, Kernel, KernelTrace, read_kernel_trace
from model.report import print_table

__all__ = ["GPU_PRESETS", "MAX_REPLAY_CHANNEL", "MAX_REPLAY_CYCLES", "MAX_WORKGROUPS",
           "REPLAY_SAMPLES", "KernelWorkload", "ReplaySpec",
           "compress_gaps", "parse_replay_spec", "replay_scenario", "LaunchSpan", "adapt",
           "ns_to_cycles", "occupancy", "preset_gpu", "prepare", "print_summary",
           "resident_workgroups", "trace_scenario", "trace_workload", "workgroup_duration",
           "workgroup_work"]

#: The most WGs one conversion makes. They are made when read (:class:`LaunchWorkload`), and a
#: run keeps about 60-120 bytes per WG (its waits and completions as 8-byte columns, grown by
#: doubling): 50 M WGs need about 6 GB.
MAX_WORKGROUPS = 50_000_000


def preset_gpu(preset, aps: int | None = None) -> GpuConfig:
    """The model's :class:`GpuConfig` of a GPU preset (``aps`` overrides the AP count)."""
    return GpuConfig(**gpu_preset(preset).gpu_fields(aps))


def _occupancy_policy(policy: PolicyConfig | None) -> PolicyConfig:
    return PRESETS["seed"] if policy is None else policy


@lru_cache(maxsize=4096)
def resident_workgroups(preset: GpuPreset, shape: WorkgroupShape,
                        policy: PolicyConfig | None = None) -> int:
    """WGs of ``shape`` resident on one empty AP of ``preset`` as ``policy`` (default: the
    seed's, with embodiment 8's rotating split) places them, counted on the model.

    A one-AP GPU receives more identical WGs than its wave slots (or LDS) could hold, all at
    cycle 0. Each runs ``D`` cycles, longer than the dispatch of the first round (one WG per
    cycle, with the circuit's latency), and the run stops at ``2D + 1``: the WGs completed by
    then are exactly those the empty AP took at once (a second round cannot finish before
    ``2D + 2``). Only the constructor, ``run`` and its documented metrics are used.
    """
    policy = _occupancy_policy(policy)
    gpu = preset_gpu(preset, aps=1)
    offered = gpu.peus * gpu.wave_slots // shape.waves + 1
    if shape.lds:
        offered = min(offered, gpu.lds // shape.lds + 1)
    duration = (offered + 2) * (policy.circuit_latency + 1)
    workload = [WorkGroup(id=index, channel=0, priority=0, waves=shape.waves, vgpr=shape.vgpr,
                          sgpr=shape.sgpr, lds=shape.lds, duration=duration,
                          independent=False, arrival=0)
                for index in range(offered)]
    results = DispatchSimulator(gpu, policy, workload, cycles=2 * duration + 1).run()
    if results["workgroups_rejected"]:
        return 0
    resident = results["workgroups_completed"]
    if resident >= offered or results["invariant_violations"]:
        raise AssertionError(f"occupancy run of {shape} on {preset.name} is inconsistent: "
                             f"{resident} of {offered} offered WGs resident")
    return resident


def occupancy(preset, threads: int, regs_per_thread: int, lds_bytes: int, *, sgprs: int = 0,
              accum_vgprs: int = 0, wave_size: int | None = None,
              policy: PolicyConfig | None = None) -> int:
    """WGs of this shape resident on one empty AP of ``preset`` (a name or a
    :class:`GpuPreset`) as the model's allocator places them; 0 when the GPU cannot launch
    the shape (as the vendors' occupancy APIs answer).

    ``regs_per_thread`` are architected VGPRs (registers per thread on NVIDIA), ``accum_vgprs``
    CDNA's accumulation registers; ``wave_size`` defaults to the GPU's native one.
    """
    preset = gpu_preset(preset)
    try:
        shape = preset.shape(threads, regs_per_thread, lds_bytes, sgprs=sgprs,
                             accum_registers=accum_vgprs, wave_size=wave_size)
    except LaunchError:
        return 0
    return resident_workgroups(preset, shape, policy)


def workgroup_duration(kernel_cycles: int, workgroups: int, aps: int, resident: int) -> int:
    """Cycles each WG of a kernel runs: the measured kernel time over its rounds.

    ``R = ceil(workgroups / (aps x resident))`` rounds of a GPU kept full; each WG lasts
    ``max(1, round(kernel_cycles / R))`` (halves rounded up). ``resident = 0`` (a shape no AP
    holds) gives one round. This is the derivation an execution model will replace.
    """
    if kernel_cycles < 1 or workgroups < 1 or aps < 1 or resident < 0:
        raise ValueError(f"kernel cycles, workgroups and APs must be positive and resident "
                         f"not negative, not {kernel_cycles}, {workgroups}, {aps}, {resident}")
    rounds = -(-workgroups // (aps * resident)) if resident else 1
    return max(1, (2 * kernel_cycles + rounds) // (2 * rounds))


def workgroup_work(kernel_cycles: int, workgroups: int, aps: int, resident: int, waves: int,
                   peus: int, issue_width: int = 1, drain: int = 0) -> int:
    """Wave-instructions each wave of a kernel issues under the shared-issue model, derived
    from the measured kernel time (module docstring, "Work").

    Each WG of a round lasts ``T`` = :func:`workgroup_duration`; in a round an AP holds
    ``k = min(resident, ceil(workgroups / aps))`` WGs (at least 1), their waves spread over
    the ``peus`` PEUs as evenly as the seed's rotated split does, so the busiest PEU has
    ``n = ceil(k x waves / peus)`` issuing waves, each issuing ``min(1, issue_width / n)``
    per cycle: the work is ``max(1, round((T - drain) x min(n, issue_width) / n))`` (halves
    up), so that such a round lasts ``T`` cycles on the model, as it did on the GPU.
    """
    for label, value, low in (("waves", waves, 1), ("PEUs", peus, 1),
                              ("issue width", issue_width, 1), ("drain", drain, 0)):
        if value < low:
            raise ValueError(f"{label} must be at least {low}, not {value}")
    duration = workgroup_duration(kernel_cycles, workgroups, aps, resident)
    together = max(1, min(resident, -(-workgroups // aps)))
    issuing = -(-together * waves // peus)
    issue = max(1, duration - drain)
    share = min(issuing, issue_width)
    return max(1, (2 * issue * share + issuing) // (2 * issuing))


def ns_to_cycles(nanoseconds: int, clock_mhz: int) -> int:
    """``floor(nanoseconds x clock_mhz / 1000)``: a time since ``t0`` as a cycle number."""
    return nanoseconds * clock_mhz // 1000


def _duration_cycles(nanoseconds: int, clock_mhz: int) -> int:
    return max(1, -(-nanoseconds * clock_mhz // 1000))


@dataclass(frozen=True)
class Adapted:
    """A launch as compiled for a preset: its shape and what had to change."""

    shape: WorkgroupShape
    changes: tuple[str, ...]


def adapt(kernel: Kernel, preset: GpuPreset) -> Adapted:
    """The :class:`WorkgroupShape` of ``kernel`` on ``preset`` (see the module docstring:
    wave size, registers and SGPRs adapted, each change named); :class:`LaunchError` when
    the GPU cannot run it at all."""
    changes = []
    wave = kernel.wave_size
    if wave is not None and wave not in preset.wave_sizes:
        changes.append(f"wave{wave} ran as wave{preset.wave_sizes[0]}")
        wave = None
    registers, accum = kernel.registers, kernel.accum_registers
    if preset.unified_accumulation:
        if accum:
            registers, accum = -(-registers // 4) * 4 + accum, 0
    elif accum:
        changes.append("accumulation registers counted as VGPRs")
        registers, accum = registers + accum, 0
    if registers > preset.max_registers:
        changes.append(f"registers clamped to {preset.max_registers}")
        registers = preset.max_registers
    sgprs = kernel.sgprs
    if preset.sgprs_per_peu and sgprs > preset.max_sgprs:
        changes.append(f"SGPRs clamped to {preset.max_sgprs}")
        sgprs = preset.max_sgprs
    shape = preset.shape(kernel.threads, registers, kernel.lds_bytes, sgprs=sgprs,
                         accum_registers=accum, wave_size=wave)
    if shape.reserved:
        changes.append(f"LDS raised to {preset.slot_lds} blocks per WG, the share of one of "
                       f"the {preset.workgroups_per_ap} resident-WG slots per AP (the "
                       f"model has no WG-count limit)")
    return Adapted(shape, tuple(changes))


@dataclass
class KernelWorkload:
    """The WGs made from a trace window (made when read), and what the conversion did (for
    the report)."""

    workgroups: LaunchWorkload
    notes: list[str] = field(default_factory=list)
    #: One row per kernel name and shape: name, launches, WGs, threads, waves, VGPR blocks,
    #: SGPR blocks, LDS blocks, resident WGs per AP, mean WG duration in cycles (fixed model),
    #: mean work per wave in wave-instructions (shared-issue model).
    shapes: list[list] = field(default_factory=list)
    channels: dict[tuple, int] = field(default_factory=dict)
    #: One :class:`LaunchSpan` per launch made, in WG order (:mod:`model.dispatch.launches`).
    launches: list = field(default_factory=list)


@dataclass(frozen=True)
class LaunchSpan:
    """One launch as converted: ``index`` its position in the trace (0-based, file order),
    ``kernel`` its record, ``channel``, ``arrival`` (cycle), WGs ``first_wg`` ..
    ``first_wg + workgroups - 1`` (their ids), ``measured`` its measured duration in cycles."""

    index: int
    kernel: Kernel
    channel: int
    arrival: int
    first_wg: int
    workgroups: int
    measured: int


def _short(name: str, width: int = 48) -> str:
    name = re.sub(r"\s*\[\d+\]$", "", name.removeprefix("void "))   # nvprof's correlation id
    return name if len(name) <= width else name[:width - 3] + "..."


def trace_workload(trace: KernelTrace, preset, *, first: int = 0, last: int | None = None,
                   horizon: int | None = None, clock_mhz: int | None = None,
                   priorities=(), policy: PolicyConfig | None = None, windows=(),
                   in_order: bool = True, issue_width: int = 1,
                   drain: int = 0) -> KernelWorkload:
    """The WGs of launches ``first..last-1`` of ``trace`` on ``preset`` (module docstring).

    ``horizon``: WGs arriving at or after this cycle are not made (counted in the notes).
    ``priorities[c]``: channel ``c``'s priority (default 0). ``policy``: the allocator whose
    occupancy sets the rounds (default the seed's). ``windows``: several ``(first, last)``
    windows instead, each replayed from cycle 0 on channels of its own (concurrent requests).
    ``in_order``: the first WG of every launch after the first on its channel is a barrier
    (it waits until the channel's earlier launches completed, as on an in-order HIP stream).
    ``issue_width``, ``drain``: the GPU's, for each WG's work (:func:`workgroup_work`).
    """
    preset = gpu_preset(preset)
    clock = clock_mhz or preset.clock_mhz
    spans = list(windows) or [(first, last)]
    notes = [f"{trace.path.name}: {FORMATS[trace.format]}, {len(trace.kernels)} kernel "
             f"launches"
             + "".join(f"; {count} {reason} skipped" for reason, count in trace.skipped.items())]
    notes += [f"{trace.path.name}: {note}" for note in trace.notes]
    channels: dict[tuple, int] = {}
    changed: dict[str, int] = {}
    unlaunchable: list[str] = []
    late_kernels = late_workgroups = launches = 0
    planned = []                            # (arrival, channel, position, kernel, adapted)
    for number, (start, stop) in enumerate(spans):
        window = trace.kernels[start:stop]
        if not window:
            raise ConfigError(f"{trace.path}: no kernel launches in the window [{start}, "
                              f"{'end' if stop is None else stop}) of {len(trace.kernels)}")
        launches += len(window)
        ordered = sorted(window, key=lambda kernel: kernel.start_ns)
        t0 = ordered[0].start_ns
        for kernel in ordered:
            position = len(planned) + late_kernels + len(unlaunchable)
            arrival = ns_to_cycles(kernel.start_ns - t0, clock)
            if horizon is not None and arrival >= horizon:
                late_kernels += 1
                late_workgroups += kernel.workgroups
                continue
            try:
                adapted = adapt(kernel, preset)
            except LaunchError as error:
                unlaunchable.append(f"row {kernel.row} ({_short(kernel.name, 40)}): {error}")
                continue
            for change in adapted.changes:
                changed[change] = changed.get(change, 0) + 1
            key = (number, kernel.stream) if len(spans) > 1 else kernel.stream
            channel = channels.setdefault(key, len(channels))
            planned.append((arrival, channel, position, kernel, adapted))
        span = ordered[-1].start_ns + ordered[-1].duration_ns - t0
        streams = len({kernel.stream for kernel in window})
        notes.append(f"window{f' {number}' if len(spans) > 1 else ''}: launches {start}.."
                     f"{start + len(window) - 1}, {span / 1000:,.1f} us from its first start; "
                     f"{clock} MHz -> {ns_to_cycles(span, clock):,} cycles; {streams} "
                     f"stream(s), one channel each")
    total = sum(kernel.workgroups for _, _, _, kernel, _ in planned)
    if total > MAX_WORKGROUPS:
        raise ConfigError(f"{trace.path}: the window holds {total:,} WGs arriving before the "
                          f"cycle limit (at most {MAX_WORKGROUPS:,}); narrow it with kernels = "
                          f"[first, last] or fewer cycles")
    planned.sort(key=lambda item: (item[0], item[1], item[2]))
    workgroups = LaunchWorkload()
    shapes: dict[tuple, list] = {}
    started: set[int] = set()
    spans_made: list[LaunchSpan] = []
    file_index = {id(kernel): index for index, kernel in enumerate(trace.kernels)}
    for arrival, channel, _, kernel, adapted in planned:
        shape = adapted.shape
        resident = resident_workgroups(preset, shape, policy)
        kernel_cycles = _duration_cycles(kernel.duration_ns, clock)
        duration = workgroup_duration(kernel_cycles, kernel.workgroups, preset.aps, resident)
        work = workgroup_work(kernel_cycles, kernel.workgroups, preset.aps, resident,
                              shape.waves, preset.peus, issue_width, drain)
        priority = priorities[channel] if channel < len(priorities) else 0
        barrier = in_order and channel in started
        started.add(channel)
        spans_made.append(LaunchSpan(index=file_index[id(kernel)], kernel=kernel,
                                     channel=channel, arrival=arrival,
                                     first_wg=len(workgroups), workgroups=kernel.workgroups,
                                     measured=kernel_cycles))
        workgroups.append(WorkGroup(
            id=len(workgroups), channel=channel, priority=priority, waves=shape.waves,
            vgpr=shape.vgpr, sgpr=shape.sgpr, lds=shape.lds, duration=duration,
            independent=False, arrival=arrival, work=work, grid=kernel.workgroups),
            kernel.workgroups, barrier)
        key = (_short(kernel.name), shape)
        row = shapes.setdefault(key, [key[0], 0, 0, kernel.threads, shape.waves, shape.vgpr,
                                      shape.sgpr, shape.lds, resident, 0, 0])
        row[1] += 1
        row[2] += kernel.workgroups
        row[9] += duration * kernel.workgroups
        row[10] += work * kernel.workgroups
    for row in shapes.values():
        row[9] = row[9] / row[2]
        row[10] = row[10] / row[2]
    notes.append(f"{len(planned)} launches -> {len(workgroups):,} WGs on {preset.name} "
                 f"({preset.aps} APs x {preset.peus} PEUs), {len(channels)} channel(s)"
                 + ("; each launch waits for the previous one on its stream (in order)"
                    if in_order else "; launches of a stream may overlap (in_order = false)"))
    if late_kernels:
        notes.append(f"{late_kernels} launches ({late_workgroups:,} WGs) start at or after the "
                     f"cycle limit {horizon:,}: not made")
    if unlaunchable:
        notes.append(f"{len(unlaunchable)} launches cannot run on {preset.name}, skipped; "
                     f"first: {unlaunchable[0]}")
    for change, count in changed.items():
        notes.append(f"{count} launches adapted to {preset.name}: {change}")
    return KernelWorkload(workgroups=workgroups, notes=notes, shapes=list(shapes.values()),
                          channels=channels, launches=spans_made)


def prepare(scenario: Scenario, cycles: int | None = None
            ) -> tuple[Scenario, KernelWorkload | None]:
    """``scenario`` with its kernel trace converted (WGs arriving before ``cycles``, default
    the scenario's limit), and the conversion's report; unchanged without a kernel trace."""
    source = scenario.kernel_trace
    if source is None or scenario.workgroups is not None:
        return scenario, None
    trace = read_kernel_trace(source.path, source.format)
    limit = cycles or scenario.cycles
    converted = trace_workload(trace, source.preset, first=source.first, last=source.last,
                               horizon=limit, clock_mhz=source.clock_mhz,
                               priorities=tuple(c.priority for c in scenario.channels),
                               windows=source.windows, in_order=source.in_order,
                               issue_width=scenario.gpu.issue_width, drain=scenario.gpu.drain)
    windows = [0] * len(converted.channels)
    for key, channel in converted.channels.items():
        windows[channel] = key[0] if source.windows else 0
    return (replace(scenario, workgroups=converted.workgroups, cycles=limit,
                    channel_windows=tuple(windows), stagger=source.stagger), converted)


def trace_scenario(path, preset: str, *, format: str | None = None,  # noqa: A002
                   kernels: tuple[int, int | None] = (0, None), clock_mhz: int | None = None,
                   cycles: int = 200_000) -> Scenario:
    """A scenario replaying the kernel trace at ``path`` on ``preset`` with every policy
    preset (what ``gpusched dispatch --kernel-trace`` runs)."""
    path = Path(path)
    if preset not in GPU_PRESETS:
        raise ConfigError(f"--preset must be one of {', '.join(GPU_PRESETS)}, not {preset!r}")
    if not path.is_file():
        raise ConfigError(f"--kernel-trace names {str(path)!r}, which is not a file")
    first, last = kernels
    source = KernelTraceSource(path=path.resolve(), preset=preset, format=format, first=first,
                               last=last, clock_mhz=clock_mhz)
    return Scenario(name=f"{path.name} on {preset}", cycles=cycles, gpu=preset_gpu(preset),
                    channels=(), policies=tuple(PRESETS.values()), path=path,
                    kernel_trace=source)


#: The last cycle a replay may reach (every launch's arrival, offset included, plus its measured
#: duration): 2^53, about 66 days at 1,582 MHz, so that every cycle count, sum and product of
#: the run stays a 64-bit integer (a later start overflowed the metrics' arrays).
MAX_REPLAY_CYCLES = 1 << 53

#: ``channel=C`` of a ``--kernel-trace`` option: at most this (each channel number up to it
#: is a channel of the run, with its own queue and state).
MAX_REPLAY_CHANNEL = 255

#: Samples a whole replay keeps at most: its ``sample_interval`` is 64 cycles doubled until the
#: trace's measured span needs no more (a 230 M-cycle trace: 2,048 cycles, 112 k samples).
REPLAY_SAMPLES = 1 << 17


@dataclass(frozen=True)
class ReplaySpec:
    """One trace of a replay (``--kernel-trace FILE[:offset=N,priority=P,channel=C]``):
    its launches arrive ``offset`` cycles late, its channels have priority ``priority``, and
    with ``channel`` set every launch of it goes to that one channel (shared with any other
    trace naming it) instead of one channel per stream."""

    path: Path
    offset: int = 0
    priority: int = 0
    channel: int | None = None


def parse_replay_spec(text: str) -> ReplaySpec:
    """``FILE`` or ``FILE:offset=N,priority=P,channel=C`` (any subset, any order; all
    non-negative integers). A ``:`` followed by something without ``=`` is part of the path."""
    path, colon, options = text.rpartition(":")
    if not colon or "=" not in options:
        return ReplaySpec(Path(text))
    values = {}
    for item in options.split(","):
        key, equals, value = item.partition("=")
        key = key.strip()
        if key not in ("offset", "priority", "channel") or not equals:
            raise ConfigError(f"--kernel-trace {text!r}: {item!r} is not offset=N, priority=P "
                              f"or channel=C")
        if key in values:
            raise ConfigError(f"--kernel-trace {text!r}: {key} is given twice")
        try:
            values[key] = int(value.replace("_", ""))
        except ValueError:
            values[key] = -1
        if values[key] < 0:
            raise ConfigError(f"--kernel-trace {text!r}: {key} must be a non-negative integer, "
                              f"not {value!r}")
    if values.get("channel", 0) > MAX_REPLAY_CHANNEL:
        raise ConfigError(f"--kernel-trace {text!r}: channel must be 0 to "
                          f"{MAX_REPLAY_CHANNEL}, not {values['channel']:,}")
    return ReplaySpec(Path(path), **values)


def compress_gaps(launches: list, threshold: int) -> tuple[dict[int, int], int, int]:
    """Shorten every idle host gap longer than ``threshold`` cycles to ``threshold``.

    ``launches``: ``(arrival, measured cycles)`` in arrival order. A gap is the time from the
    measured end of every earlier launch (the latest end so far) to the next arrival; the
    cycles above the threshold are removed from that arrival and every later one. Returns
    the new arrival of each old one, the gaps shortened and the cycles removed."""
    shifted: dict[int, int] = {}
    busy_until, removed, gaps = None, 0, 0
    for arrival, measured in launches:
        if busy_until is not None and arrival - busy_until > threshold:
            removed += arrival - busy_until - threshold
            gaps += 1
        shifted.setdefault(arrival, arrival - removed)
        end = arrival + measured
        busy_until = end if busy_until is None else max(busy_until, end)
    return shifted, gaps, removed


def replay_scenario(specs, preset: str, *, format: str | None = None,  # noqa: A002
                    kernels: tuple[int, int | None] = (0, None), clock_mhz: int | None = None,
                    cycles: int | None = None, compress: int | None = None,
                    policy: PolicyConfig | None = None) -> tuple[Scenario, KernelWorkload]:
    """The scenario ``gpusched dispatch --kernel-trace ...`` runs: every trace of ``specs``
    (:class:`ReplaySpec` or paths) converted on ``preset`` as concurrent channels, and the
    conversion's report.

    Without ``cycles`` the replay is whole: every launch is made and the cycle limit is
    an upper bound on the last completion that the run never reaches (it stops when every WG
    has completed; docs/kernels.md "Replay"). With ``cycles``, WGs arriving at or after it
    are not made and the notes say how many launches and measured cycles were left out.
    ``compress``: host gaps above this many cycles are shortened to it (:func:`compress_gaps`,
    per trace, before its offset). Channels: each trace's streams in turn, one channel each
    (or the trace's ``channel``); every launch after the first on a channel waits for the
    channel's earlier launches (in order).
    """
    if preset not in GPU_PRESETS:
        raise ConfigError(f"--preset must be one of {', '.join(GPU_PRESETS)}, not {preset!r}")
    specs = [spec if isinstance(spec, ReplaySpec) else ReplaySpec(Path(spec)) for spec in specs]
    if not specs:
        raise ConfigError("--kernel-trace: no trace given")
    for spec in specs:
        if not spec.path.is_file():
            raise ConfigError(f"--kernel-trace names {str(spec.path)!r}, which is not a file")
    gpu = preset_gpu(preset)
    for spec in specs:
        if spec.priority >= gpu.priorities:
            raise ConfigError(f"--kernel-trace {str(spec.path)!r}: priority must be 0 to "
                              f"{gpu.priorities - 1} ({preset} has {gpu.priorities} "
                              f"priorities), not {spec.priority}")
    clock = clock_mhz or gpu_preset(preset).clock_mhz
    notes: list[str] = []
    shapes: dict[tuple, list] = {}
    merged = []              # (arrival, channel, trace, launch, span, wgs)
    channel_of: dict[tuple, int] = {}
    fixed = sorted({spec.channel for spec in specs if spec.channel is not None})
    priorities: dict[int, int] = {}
    measured_end = 0
    for number, spec in enumerate(specs):
        trace = read_kernel_trace(spec.path, format)
        first, last = kernels
        converted = trace_workload(trace, preset, first=first, last=last, clock_mhz=clock,
                                   policy=policy, issue_width=gpu.issue_width,
                                   drain=gpu.drain)
        label = f"trace {number} " if len(specs) > 1 else ""
        notes += [f"{label}{note}" if label else note for note in converted.notes]
        launches = converted.launches
        shifted = {launch.arrival: launch.arrival for launch in launches}
        if compress is not None:
            shifted, gaps, removed = compress_gaps(
                [(launch.arrival, launch.measured) for launch in launches], compress)
            notes.append(f"{label}--compress-gaps {compress:,}: {gaps} idle host gap(s) above "
                         f"{compress:,} cycles shortened to it, {removed:,} cycles removed")
        for key, row in converted.shapes and {tuple(r[:1] + r[3:9]): r
                                              for r in converted.shapes}.items():
            known = shapes.setdefault(key, [row[0], 0, 0, *row[3:9], 0.0, 0.0])
            weight = known[2] + row[2]
            known[9] = (known[9] * known[2] + row[9] * row[2]) / weight
            known[10] = (known[10] * known[2] + row[10] * row[2]) / weight
            known[1] += row[1]
            known[2] = weight
        wgs = converted.workgroups
        for position, launch in enumerate(launches):
            stream_channel = launch.channel
            key = (number, stream_channel) if spec.channel is None else ("fixed", spec.channel)
            if key not in channel_of:
                channel_of[key] = None       # numbered below, in order of first appearance
            arrival = shifted[launch.arrival] + spec.offset
            end = arrival + launch.measured
            if end > MAX_REPLAY_CYCLES:
                raise ConfigError(
                    f"{spec.path}: row {launch.kernel.row}: the launch ends at cycle {end:,} "
                    f"(its start and duration at {clock} MHz, offset {spec.offset:,}), past "
                    f"the {MAX_REPLAY_CYCLES:,} cycles a replay may span (about 66 days at "
                    f"1,582 MHz)")
            measured_end = max(measured_end, end)
            merged.append((arrival, key, number, position, launch, wgs[launch.first_wg]))
            priorities[key] = spec.priority
    # Channels: the fixed ones keep their numbers; the others follow, in order of appearance.
    taken = set(fixed)
    following = 0
    for key in channel_of:
        if key[0] == "fixed":
            channel_of[key] = key[1]
        else:
            while following in taken:
                following += 1
            channel_of[key] = following
            taken.add(following)
    merged.sort(key=lambda item: (item[0], channel_of[item[1]], item[2], item[3]))
    late_launches = late_workgroups = 0
    workgroups = LaunchWorkload()
    spans: list[LaunchSpan] = []
    started: set[int] = set()
    for arrival, key, _, _, launch, template in merged:
        if cycles is not None and arrival >= cycles:
            late_launches += 1
            late_workgroups += launch.workgroups
            continue
        channel = channel_of[key]
        spans.append(replace(launch, channel=channel, arrival=arrival,
                             first_wg=len(workgroups)))
        barrier = channel in started
        started.add(channel)
        workgroups.append(replace(template, channel=channel, priority=priorities[key],
                                  arrival=arrival), launch.workgroups, barrier)
    count = 1 + max(channel_of.values(), default=0)
    if len(specs) > 1 or fixed:
        notes.append(f"{len(specs)} traces as {len(set(channel_of.values()))} concurrent "
                     f"channel(s) of {count}: "
                     + "; ".join(f"{spec.path.name} offset {spec.offset:,}, priority "
                                 f"{spec.priority}" + (f", channel {spec.channel}"
                                                       if spec.channel is not None else "")
                                 for spec in specs))
    interval = 64
    while measured_end // interval > REPLAY_SAMPLES:
        interval *= 2
    if cycles is None:
        # An upper bound on the last completion: after the last arrival, every WG could run
        # alone in turn, each at worst its duration (fixed) or its work on a full PEU
        # (shared), plus the drain, the view's latency and the decision's steps.
        last = max((wg.arrival for wg, _, _ in workgroups.launches()), default=0)
        per_wg = gpu.drain + 16
        limit = last + 1 + sum((max(wg.duration, (wg.work or 0) * gpu.wave_slots) + per_wg)
                               * count for wg, count, _ in workgroups.launches())
        limit = min(limit, MAX_SAMPLES * interval)
        notes.append(f"whole replay: {len(spans)} launches, the last arriving at cycle "
                     f"{last:,}; measured end {measured_end:,} cycles; the run stops when the "
                     f"last WG completes (series sampled every {interval:,} cycles)")
    else:
        limit = cycles
        if late_launches or measured_end > cycles:
            notes.append(f"--cycles {cycles:,} leaves out {late_launches} launch(es) "
                         f"({late_workgroups:,} WGs) and {max(0, measured_end - cycles):,} of "
                         f"the trace's {measured_end:,} measured cycles; without --cycles the "
                         f"trace runs whole")
    first_spec = specs[0]
    source = KernelTraceSource(path=first_spec.path.resolve(), preset=preset, format=format,
                               first=kernels[0], last=kernels[1], clock_mhz=clock_mhz)
    name = " + ".join(spec.path.name for spec in specs)
    scenario = Scenario(name=f"{name} on {preset}", cycles=max(1, limit), gpu=gpu,
                        channels=(), policies=tuple(PRESETS.values()), path=first_spec.path,
                        kernel_trace=source, workgroups=workgroups,
                        sample_interval=interval if cycles is None else 64,
                        channel_windows=(0,) * count)
    report = KernelWorkload(workgroups=workgroups, notes=notes, shapes=list(shapes.values()),
                            channels={key: value for key, value in channel_of.items()},
                            launches=spans)
    return scenario, report


def print_summary(converted: KernelWorkload, title: str) -> None:
    """The conversion's notes and its table of kernel shapes."""
    for note in converted.notes:
        print(f"  {note}")
    print_table(f"{title}: kernel shapes as the model's blocks",
                ["kernel", "launches", "WGs", "threads", "waves", "VGPR blk", "SGPR blk",
                 "LDS blk", "WGs/AP", "WG cycles", "work/wave"],
                sorted(converted.shapes, key=lambda row: -row[2]))
