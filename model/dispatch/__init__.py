"""The seed-002 workgroup dispatcher as a cycle-level system model (see :mod:`.engine`)."""

from model.dispatch.config import (
    PRESETS,
    ChannelConfig,
    GpuConfig,
    PolicyConfig,
    Scenario,
    WorkGroup,
    generate_workload,
    load_scenario,
    read_trace,
    write_trace,
)
from model.dispatch.engine import DispatchSimulator, InvariantError, Lfsr, simulate, split_table

__all__ = ["PRESETS", "ChannelConfig", "DispatchSimulator", "GpuConfig", "InvariantError",
           "Lfsr", "PolicyConfig", "Scenario", "WorkGroup", "generate_workload",
           "load_scenario", "read_trace", "simulate", "split_table", "write_trace"]
