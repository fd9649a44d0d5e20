"""Seed 002: the multi-channel workgroup dispatcher as a cycle-level system model.

``gpusched dispatch`` (alias ``gpusched sim``) runs it against its baselines; the clock and
every decision taken where the seed is ambiguous are in ``docs/dispatch.md``.

Modules, and where each of the seed's embodiments lives:

* :mod:`~model.dispatch.config`: the GPU shape (:class:`GpuConfig`), the policy knobs and
  their presets (:class:`PolicyConfig`, :data:`PRESETS`: which embodiments are on), the
  channels and workload generators, CSV traces, scenario files;
* :mod:`~model.dispatch.engine`: :class:`DispatchSimulator`, the loop of one dispatcher clock
  per cycle over the stages, each a module named as its RTL twin in :mod:`hw.dispatch`:
  :mod:`~model.dispatch.queues` (admission, FIFOs, embodiment 3's counter and split),
  :mod:`~model.dispatch.views` (the free-block view of embodiments 4-7 and the exact circuit,
  through :mod:`model.maxblock`), :mod:`~model.dispatch.matcher` (embodiment 1's match,
  embodiment 8's :func:`split_table` and pointer), :mod:`~model.dispatch.selector`
  (embodiment 1's target WG with the a41/a42 flags and :class:`Lfsr`, embodiment 2's windows,
  the AP choice of embodiments 9 and 10), :mod:`~model.dispatch.allocator` (first fit, stale
  abort), :mod:`~model.dispatch.resources` (status, slots, records, power history) and
  :mod:`~model.dispatch.pipeline` (the decision in one clock or pipelined); the baselines'
  rules (prior art, MIAOW-like, GPGPU-Sim-like, the least-loaded placement) in
  :mod:`~model.dispatch.baselines`; the execution models (``fixed``, or shared issue in which
  a WG's run time depends on its PEUs) in :mod:`~model.dispatch.execution`; the result and
  the event log in :mod:`~model.dispatch.metrics`; the invariants in
  :mod:`~model.dispatch.checks`;
* :mod:`~model.dispatch.claims`: the claims over workload seeds, loads (as written, batch,
  fractions of the measured capacity) and execution models, judged with
  :func:`model.stats.compare`;
* :mod:`~model.dispatch.kernels`, :mod:`~model.dispatch.gpus`, :mod:`~model.dispatch.profilers`:
  kernel traces on real GPUs (``docs/kernels.md``);
* :mod:`~model.dispatch.api`: the Python API, :func:`run` (``model.dispatch.run(scenario,
  policy)``), the same runs, table and claims as the command line (``docs/api.md``);
* :mod:`~model.dispatch.cli`: the command line, tables and plots.
"""

from model.dispatch.api import DispatchResult, run
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

__all__ = ["PRESETS", "ChannelConfig", "DispatchResult", "DispatchSimulator", "GpuConfig",
           "InvariantError", "Lfsr", "PolicyConfig", "Scenario", "WorkGroup",
           "generate_workload", "load_scenario", "read_trace", "run", "simulate", "split_table",
           "write_trace"]
