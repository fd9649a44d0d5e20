"""The scenario file's top level: :class:`Scenario` and :func:`load_scenario`, which reads
every table with its reader (:mod:`.gpu`, :mod:`.channels`, :mod:`.policy`, :mod:`.traces`,
:mod:`.claims`) and checks every cross-reference before anything runs."""

import math
import random
from dataclasses import dataclass, replace
from pathlib import Path

from model.config import Budget, ConfigError, Fields, load_toml
from model.dispatch.config.channels import (
    ChannelConfig,
    LaunchWorkload,
    WorkGroup,
    generate_workload,
    read_channel,
)
from model.dispatch.config.claims import Claim, metric_paths, read_claim
from model.dispatch.config.gpu import EXECUTIONS, GpuConfig, read_gpu
from model.dispatch.config.policy import PRESETS, PolicyConfig, read_policy
from model.dispatch.config.traces import KernelTraceSource, read_kernel_trace_keys, read_trace
from model.dispatch.gpus import GPU_PRESETS

__all__ = ["EXECUTIONS", "MAX_GENERATED_CYCLES", "MAX_SAMPLES", "Scenario", "load_scenario"]

#: The series keep one sample per ``sample_interval`` cycles, skipped spans included: at most
#: this many per run (10 M samples are about 1 GB of Python lists), so ``cycles = 10**15`` is
#: refused at load time instead of running for hours.
MAX_SAMPLES = 10_000_000

#: The workload generator draws one Bernoulli arrival per cycle of each rate channel until the
#: channel has sent ``count`` WGs or the run ends: at most this many such draws per scenario
#: (about 10 s of CPU).
MAX_GENERATED_CYCLES = 200_000_000


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
    kernel_trace: KernelTraceSource | None = None
    workgroups: LaunchWorkload | tuple[WorkGroup, ...] | None = None
    execution: str = "fixed"
    warmup: int = 0
    # A kernel trace's windows (issue 15 §4): the window of each channel, and the largest
    # random delay of every window but the first (drawn per seed).
    channel_windows: tuple[int, ...] = ()
    stagger: int = 0

    def workload(self, seed: int = 1, *, copy: bool = True) -> list[WorkGroup]:
        """The WGs of this scenario (fresh objects): the converted kernel trace (each window
        after the first delayed by a random ``0..stagger`` cycles drawn with ``seed``), the
        CSV trace, or the generators run with ``seed``. ``copy=False``: a converted trace
        that is not staggered gives its :class:`LaunchWorkload` itself, which makes its WGs
        when read (a :class:`~model.dispatch.engine.DispatchSimulator` then holds only the
        WGs in flight, not a list of millions)."""
        if self.workgroups is not None:
            staggered = self.stagger and len(set(self.channel_windows)) > 1
            made = isinstance(self.workgroups, LaunchWorkload)     # fresh at each read
            if not copy and not staggered:
                return self.workgroups if made else list(self.workgroups)
            workload = (list(self.workgroups) if made
                        else [replace(wg) for wg in self.workgroups])
            if staggered:
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
        if isinstance(self.workgroups, LaunchWorkload):
            return max(len(self.channels), self.workgroups.channel_count, 1)
        rows = self.trace_workload or self.workgroups
        if rows:
            return max(len(self.channels), 1 + max(wg.channel for wg in rows))
        return max(len(self.channels), 1)


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
    kernel_trace = read_kernel_trace_keys(root, path)
    base = (GpuConfig(**GPU_PRESETS[kernel_trace.preset].gpu_fields())
            if kernel_trace is not None else None)
    gpu = read_gpu(root.table("gpu", {}), base)
    trace = trace_workload = None
    if "trace" in root and kernel_trace is not None:
        raise root.error("kernel_trace", "and trace cannot both be given")
    if "trace" in root:
        trace = (path.parent / root.str("trace")).resolve()
        if not trace.is_file():
            raise root.error("trace", f"names {str(trace)!r}, which is not a file")
    channel_tables = root.tables("channels", [])
    channels = tuple(read_channel(table, gpu) for table in channel_tables)
    if cycles // sample_interval > MAX_SAMPLES:
        raise root.error("cycles", f"{cycles:,} with sample_interval = {sample_interval:,} "
                                   f"would keep {cycles // sample_interval:,} samples per run; "
                                   f"at most {MAX_SAMPLES:,} are accepted (raise "
                                   f"sample_interval or lower cycles)")
    draws = Budget(MAX_GENERATED_CYCLES, "generator draws (cycles of rate channels)",
                   "the generator draws one arrival per cycle of each rate channel")
    for table, channel in zip(channel_tables, channels, strict=True):
        if channel.arrival != "back_to_back" and trace is None:
            span = max(0, cycles - channel.start)
            draws.charge(table, "arrival", min(span, math.ceil(channel.count / channel.arrival)))
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
    policies = tuple(read_policy(table, gpu) for table in policy_tables) or tuple(
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
    claims = tuple(read_claim(table, names, metrics, scenario)
                   for table in root.tables("claims", []))
    root.done()
    return replace(scenario, claims=claims)
