"""Seed 000: the GPU process scheduler (priority + weight + time slice) against its baselines.

The seed schedules GPU processes ("tasks") in two stages (``docs/procsched.md`` has every
decision in full):

* **stage 1** (:func:`select_for_cache`, steps S11-S14): the candidates are all tasks of the
  highest priority present in the pool (4-bit priority, 0 highest); at most ``L`` of them
  (the hardware cache capacity) are loaded, the ``L`` with the largest **weight** when there
  are more. The weight is alive time / run time (:func:`task_weight`);
* **stage 2** (:func:`slice_lengths`, steps S21-S23): the cached tasks run in FIFO order,
  each for ``tc = t0 * (sum of cached weights / own weight)`` (``slice_rule="seed"``, the
  formula as written) or ``tc = t0 * n * own / sum`` (``"proportional"``, the seed's prose: a
  larger weight gets more time).
* **reload** ([0094], :func:`reload_candidates`): by default when every loaded task has run
  to completion ("运行完毕", as [0040] and [0090] use the word), pass after pass meanwhile;
  ``reload="slice"`` after one slice each, the next load taken from the tasks not just
  loaded; ``"rerank"`` (the first reading) after one slice each with every task competing.
* **priority** ([0090]): by default a higher-priority arrival flushes the cache at the next
  slice boundary (``priority="strict"``); ``"reload"`` waits for the next reload.

Costs ([0042], [0051]): a context leaving the compute units goes to main memory over PCIe
(``GpuContext.save_to="host"``, PCIe 4.0 x16 by default) or stays in device memory; the
seed's cache is in device memory, so its switches are on the device path, and loading a task
into it or evicting an unfinished one moves a context over the ``save_to`` path.

Baselines, on the same workload: CPU-style round-robin time sharing (fixed slice: 4 ms, the
seed's ``t0``, and the seed's own mean slice -- the baseline an expert would pick) and a
CFS-like weighted fair scheduler (vruntime, the priority mapped to Linux's nice weights,
slice proportional to weight with a minimum granularity and a target latency).

Time is in integer microseconds. The simulation is event-driven (:func:`simulate`): a step
is a policy decision, an optional context switch, and one slice of useful work. Every slice is
logged; :func:`check_invariants` re-derives the invariants from the log and
:func:`measure` the metrics (context switches per second, efficiency, per-priority response
and turnaround, fairness within a priority, starvation, priority inversion).

``gpusched procsched`` (:func:`run`) runs every scenario of ``configs/procsched/`` with every
policy and prints one table per scenario, then the seed's claims over several seeds with 95 %
intervals and a sensitivity line each (:mod:`~model.procsched.claims`).

Modules:

* :mod:`~model.procsched.seed`: the seed's formulas, stage 1 (S11-S14: :func:`task_weight`,
  :func:`select_for_cache`, :func:`reload_candidates`) and stage 2 (S21-S23:
  :func:`slice_lengths`), with :data:`SLICE_RULES`;
* :mod:`~model.procsched.policies`: :class:`SeedPolicy` (the two stages as a scheduler: the
  cache, its reload), the baselines :class:`TimeSharingPolicy` and :class:`CfsPolicy` (with
  :data:`CFS_WEIGHTS`), :func:`make_policy` and :func:`switch_cost_for`;
* :mod:`~model.procsched.config`: scenario files (:class:`Scenario`, :class:`GpuContext` and
  the switch and cache-load costs, :class:`TaskGroup`), :data:`PRIORITY_LEVELS`,
  :data:`POLICIES`, :data:`RELOAD_RULES`, :data:`PRIORITY_RULES`, :data:`SAVE_PATHS`;
* :mod:`~model.procsched.workload`: :class:`TaskSpec` and :func:`generate_tasks`;
* :mod:`~model.procsched.sim`: :func:`simulate` (:class:`Task`, :class:`Pick`,
  :class:`SliceRecord`, :class:`Result`, the entitlement ledger), :func:`check_invariants`
  and :func:`measure`;
* :mod:`~model.procsched.claims`: :data:`CLAIMS` and :func:`evaluate_claims` (every claim
  over seeds, :func:`model.stats.compare`), :func:`run_policies`;
* :mod:`~model.procsched.cli`: ``gpusched procsched`` (:func:`add_arguments`,
  ``cli.run(args)``, the tables and plots);
* :mod:`~model.procsched.api`: :func:`run`, the command from Python (a scenario or its file,
  a policy, a seed, settings overridden by keyword), returning :class:`Results`.
"""

from model.procsched.api import Results, run
from model.procsched.claims import CLAIMS, evaluate_claims, run_policies
from model.procsched.cli import add_arguments
from model.procsched.config import (
    HOST_GB_S,
    POLICIES,
    PRIORITY_LEVELS,
    PRIORITY_RULES,
    RELOAD_RULES,
    SAVE_PATHS,
    GpuContext,
    Scenario,
    TaskGroup,
)
from model.procsched.policies import (
    CFS_WEIGHTS,
    CfsPolicy,
    SeedPolicy,
    TimeSharingPolicy,
    make_policy,
    switch_cost_for,
)
from model.procsched.seed import (
    SLICE_RULES,
    reload_candidates,
    select_for_cache,
    slice_lengths,
    task_weight,
)
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
    "CLAIMS",
    "HOST_GB_S",
    "POLICIES",
    "PRIORITY_LEVELS",
    "PRIORITY_RULES",
    "RELOAD_RULES",
    "SAVE_PATHS",
    "SLICE_RULES",
    "CfsPolicy",
    "GpuContext",
    "InvariantError",
    "Pick",
    "Result",
    "Results",
    "Scenario",
    "SeedPolicy",
    "SliceRecord",
    "Task",
    "TaskGroup",
    "TaskSpec",
    "TimeSharingPolicy",
    "add_arguments",
    "check_invariants",
    "evaluate_claims",
    "generate_tasks",
    "make_policy",
    "measure",
    "reload_candidates",
    "run",
    "run_policies",
    "select_for_cache",
    "simulate",
    "slice_lengths",
    "switch_cost_for",
    "task_weight",
]
