"""Seed 002: the multi-channel workgroup dispatcher as a cycle-level system model.

``gpusched dispatch`` (alias ``gpusched sim``) runs it against its baselines; the clock and
every decision taken where the seed is ambiguous are in ``docs/dispatch.md``.

Modules, and where each of the seed's embodiments lives:

* :mod:`~model.dispatch.config`: the GPU shape (:class:`GpuConfig`), the policy knobs and
  their presets (:class:`PolicyConfig`, :data:`PRESETS`: which embodiments are on), the
  channels and workload generators, CSV traces, scenario files;
* :mod:`~model.dispatch.engine`: :class:`DispatchSimulator`, one dispatcher clock per cycle —
  embodiment 1 (all heads x all APs, ``_match``; the a41/a42 tie-break flags with
  :class:`Lfsr`, ``_tie_break``; target WG, ``_select``), 2 (priority windows, ``_rank``),
  3 (all-fail counter and split, ``_split``), 4-6 and the exact circuit (the matcher's view
  through :mod:`model.maxblock`, ``circuit_function``; first-fit allocation, ``_allocate``),
  8 (:func:`split_table` and the rotating pointer, ``_waves``), 9 and 10 (``_choose_ap``),
  and the baselines (prior art, MIAOW-like, GPGPU-Sim-like: ``_channel_order`` and the same
  steps with their presets); the execution models (``fixed`` durations, or the shared-issue
  model in which a WG's run time depends on its PEUs: ``_start``, ``_pop_finished``) and the
  least-loaded wave placement of real dispatchers (``_least_loaded``);
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
