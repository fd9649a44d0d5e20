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

The readers, one module per table:

* :mod:`.gpu`: ``[gpu]`` (:class:`GpuConfig`, embodiment 7's :func:`shared_schedule`);
* :mod:`.channels`: ``[[channels]]`` (:class:`ChannelConfig`, :class:`WorkGroup`,
  :class:`LaunchWorkload`, :func:`generate_workload`, :func:`quantised_mix`);
* :mod:`.policy`: ``[[policies]]`` (:class:`PolicyConfig`, :data:`PRESETS`,
  :func:`check_policy`, :func:`ignored_fields`, :func:`with_policy`);
* :mod:`.traces`: ``trace`` and ``kernel_trace`` (:func:`read_trace`, :func:`write_trace`,
  :class:`KernelTraceSource`);
* :mod:`.claims`: ``[[claims]]`` (:class:`Claim`, :func:`metric_paths`);
* :mod:`.scenario`: the top level (:class:`Scenario`, :func:`load_scenario`).

Every name is importable from this package, as it was from the single module it replaces.
"""

from model.dispatch.config.channels import (
    DURATION_DISTRIBUTIONS,
    MAX_BACK_TO_BACK,
    MAX_WORK,
    MIX_FRACTION_BITS,
    ChannelConfig,
    LaunchWorkload,
    WorkGroup,
    arrival_of,
    generate_workload,
    quantised_mix,
)
from model.dispatch.config.claims import (
    LOAD_AS_WRITTEN,
    LOAD_BATCH,
    Claim,
    metric_paths,
    rate_channels_only,
)
from model.dispatch.config.gpu import (
    INSTRUCTION_CLASSES,
    MAX_DRAIN,
    MAX_RESOURCE_WEIGHT,
    MAX_WEIGHT,
    RESOURCES,
    GpuConfig,
    shared_schedule,
)
from model.dispatch.config.policy import (
    AP_CHOICES,
    CIRCUITS,
    COMBINED_SCALES,
    FAITHFUL_SELECTIONS,
    HISTORIES,
    MAX_PIPELINE,
    PRESETS,
    SELECTIONS,
    UNITS,
    WAVE_PLACEMENTS,
    PolicyConfig,
    check_policy,
    ignored_fields,
    with_policy,
)
from model.dispatch.config.scenario import EXECUTIONS, Scenario, load_scenario
from model.dispatch.config.traces import (
    TRACE_COLUMNS,
    TRACE_EXTRA_COLUMNS,
    KernelTraceSource,
    read_trace,
    write_trace,
)

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
    "FAITHFUL_SELECTIONS",
    "UNITS",
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
    "LaunchWorkload",
    "PolicyConfig",
    "Scenario",
    "WorkGroup",
    "arrival_of",
    "generate_workload",
    "ignored_fields",
    "load_scenario",
    "metric_paths",
    "quantised_mix",
    "rate_channels_only",
    "read_trace",
    "shared_schedule",
    "write_trace",
    # Limits and helpers the RTL, the benches and the tests read:
    "DURATION_DISTRIBUTIONS",
    "MAX_DRAIN",
    "MAX_PIPELINE",
    "MAX_RESOURCE_WEIGHT",
    "MAX_WEIGHT",
    "MAX_WORK",
    "check_policy",
    "with_policy",
]
