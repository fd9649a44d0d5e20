"""Seed 000: the GPU process scheduler (priority + weight + time slice) against its baselines.

The seed schedules GPU processes ("tasks") in two stages (``docs/procsched.md`` has every
decision in full):

* **stage 1** (:func:`select_for_cache`, steps S11-S14): the candidates are all tasks of the
  highest priority present in the pool (4-bit priority, 0 highest); at most ``L`` of them
  (the hardware cache capacity) are loaded, the ``L`` with the largest **weight** when there
  are more. The weight is alive time / run time (:func:`task_weight`);
* **stage 2** (:func:`slice_lengths`, steps S21-S23): the cached tasks run once each in FIFO
  order, each for ``tc = t0 * (sum of cached weights / own weight)`` (``slice_rule="seed"``,
  the formula as written) or ``tc = t0 * n * own / sum`` (``"proportional"``, the seed's
  prose: a larger weight gets more time). When the cache has been run through, stage 1
  reloads it. A task that arrives meanwhile, of any priority, takes effect at that reload.

Baselines, on the same workload with the same context-switch cost: CPU-style round-robin time
sharing (fixed slice, strict priority) and a CFS-like weighted fair scheduler (vruntime, the
priority mapped to Linux's nice weights, slice proportional to weight with a minimum
granularity and a target latency).

Time is in integer microseconds. The simulation is event-driven (:func:`simulate`): a step
is a policy decision, an optional context switch, and one slice of useful work. Every slice is
logged; :func:`check_invariants` re-derives the invariants from the log and
:func:`measure` the metrics (context switches per second, efficiency, per-priority response
and turnaround, fairness within a priority, starvation, priority inversion).

``gpusched procsched`` (:func:`run`) runs every scenario of ``configs/procsched/`` with every
policy and prints one table per scenario.

Modules:

* :mod:`~model.procsched.seed`: the seed's formulas, stage 1 (S11-S14: :func:`task_weight`,
  :func:`select_for_cache`) and stage 2 (S21-S23: :func:`slice_lengths`), with
  :data:`SLICE_RULES`;
* :mod:`~model.procsched.policies`: :class:`SeedPolicy` (the two stages as a scheduler: the
  cache, its reload), the baselines :class:`TimeSharingPolicy` and :class:`CfsPolicy` (with
  :data:`CFS_WEIGHTS`), and :func:`make_policy`;
* :mod:`~model.procsched.config`: scenario files (:class:`Scenario`, :class:`GpuContext` and
  the switch cost, :class:`TaskGroup`), :data:`PRIORITY_LEVELS` and :data:`POLICIES`;
* :mod:`~model.procsched.workload`: :class:`TaskSpec` and :func:`generate_tasks`;
* :mod:`~model.procsched.sim`: :func:`simulate` (:class:`Task`, :class:`Pick`,
  :class:`SliceRecord`, :class:`Result`, the entitlement ledger), :func:`check_invariants`
  and :func:`measure`;
* :mod:`~model.procsched.cli`: ``gpusched procsched`` (:func:`add_arguments`, :func:`run`,
  the tables and plots).
"""

from model.procsched.cli import add_arguments, run
from model.procsched.config import POLICIES, PRIORITY_LEVELS, GpuContext, Scenario, TaskGroup
from model.procsched.policies import (
    CFS_WEIGHTS,
    CfsPolicy,
    SeedPolicy,
    TimeSharingPolicy,
    make_policy,
)
from model.procsched.seed import SLICE_RULES, select_for_cache, slice_lengths, task_weight
from model.procsched.sim import (
    InvariantError,
    Pick,
    Result,
    SliceRecord,
    Task,
    check_invariants,
    measure,
    simulate,
)
from model.procsched.workload import TaskSpec, generate_tasks

__all__ = [
    "CFS_WEIGHTS",
    "POLICIES",
    "PRIORITY_LEVELS",
    "SLICE_RULES",
    "CfsPolicy",
    "GpuContext",
    "InvariantError",
    "Pick",
    "Result",
    "Scenario",
    "SeedPolicy",
    "SliceRecord",
    "Task",
    "TaskGroup",
    "TaskSpec",
    "TimeSharingPolicy",
    "add_arguments",
    "check_invariants",
    "generate_tasks",
    "make_policy",
    "measure",
    "run",
    "select_for_cache",
    "simulate",
    "slice_lengths",
    "task_weight",
]
