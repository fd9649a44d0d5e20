"""Seed 003: host-side dispatch of sub-tasks from many CPU threads to a few FPGA kernel instances.

A discrete-event model at **integer microsecond** resolution (every time, duration and cost is
an ``int`` in µs; nothing is rounded inside the model). ``T`` CPU threads each hold a queue of
sub-tasks; a task (e.g. one video) is split into ordered sub-tasks (its segments) that all
live in one thread, each needing its predecessor's state. ``I < T`` kernel instances run one
sub-task at a time.

The seed's dispatcher (:class:`SeedBatchDispatch`):

1. when the shared FIFO is empty, take the next batch of ``batch`` threads (more than the
   instances, [0007]) from the thread order table (ordered by the arrival time of each
   thread's first waiting sub-task, or by its priority), and move one sub-task from each into
   the FIFO, earliest arrival first. A table is one *round*: its threads are drawn batch by
   batch; when it is used up, a new table is built from the threads that have a sub-task
   waiting at that moment. The host packs the batch's inputs and states ([0128]) and sends
   them in one DMA; the batch can be pulled when it has landed;
2. idle instances pull the FIFO's head asynchronously, at the moment they become idle;
3. a sub-task whose task was seen before carries its task's state from the thread's backup
   buffer (packed with it by default; ``ship_state="on-miss"``, the first reading, fetches it
   only when the pulling instance does not hold it); the result updates the buffer. A
   task's first state goes into its thread's area (``per_thread`` states), else
   into the shared spare buffer (a *spare spill*), else back to host memory (a *host spill*:
   every later sub-task of that task pays ``host_refetch_us`` on top of the state transfer);
4. a task is complete when a sub-task of *another* task is taken from its thread after the
   task's final sub-task has run; its result is then read from the buffer and the entry freed
   (a thread's last task completes when its final sub-task finishes: end of stream).

Baselines on the same workload: :class:`StaticBinding` (the seed's prior art: each thread
bound to one instance by round robin -- over a random permutation drawn per seed by default,
:func:`binding_for`, or ``t mod I`` -- each instance serving its own threads
first-ready-first) and :class:`WorkQueue` (one queue of ready sub-tasks, FIFO by readiness,
no batching, no order table). Both move each sub-task's input, and a state its instance does
not hold, in a DMA of their own, which the instance waits for (transfer time, counted apart
from useful time). Sizes and the link default to the seed's video example: a 1080p decoder
state of 12.4 MB, 1 MB segments, PCIe 3.0 x16.

In every policy a thread has at most one sub-task outstanding (from the moment it is handed
to the dispatcher until it finishes): a CPU thread issues its sub-tasks one at a time, which
is what makes the seed's completion rule sound, and which implies the dependency rule.

:class:`InvariantChecker` (on in debug mode, which the tests always use) checks that the
sub-tasks of one task start strictly in order, each after its predecessor finished, never two
at once; that every sub-task runs exactly once; that an instance runs one sub-task at a time;
that the buffers never exceed their capacity; and that the seed's completion rule (the next
sub-task taken from the thread belongs to another task) fires only after the task's final
sub-task has finished.

Modules:

- :mod:`~model.hostsched.config`: the scenario files (:class:`SystemParams`,
  :class:`ThreadGroup`, :class:`Scenario`, :func:`load_scenario`), the table orders
  ``ORDERS`` and ``QUICK_SCALE``;
- :mod:`~model.hostsched.workload`: :class:`SubTask`, :class:`Workload`,
  :func:`workload_from_lists` and the seeded generator :func:`generate_workload`;
- :mod:`~model.hostsched.policies`: step 1 (the thread order table, its rounds and the batch
  refill of the shared FIFO when it is empty, ``SeedBatchDispatch.refill``) and the FIFO side
  of step 2 (the head pull, ``SeedBatchDispatch.pick``); the baselines; :func:`make_policies`;
- :mod:`~model.hostsched.sim`: the engine (``_Engine``) and :func:`simulate`: the
  asynchronous instances of step 2 (each idle instance picks at the event where it becomes
  idle), step 3 (backup and spare state buffers, spills to host memory, state transfers and
  the instances' state caches: ``_Engine.store``, ``_Engine.start``), step 4 (the completion
  rule and end of stream: ``_Engine.take``, ``_Engine.finish``), :class:`RunResult` and its
  metrics, and the :class:`InvariantChecker`;
- :mod:`~model.hostsched.claims`: the claims over seeds (:data:`CLAIMS`,
  :func:`evaluate_claims`), the crossover of state moves against sub-task length
  (:func:`crossover`) and the batch-size sweep (:func:`batch_sweep`);
- :mod:`~model.hostsched.cli`: ``gpusched hostsched``, which runs every scenario in
  ``configs/hostsched/`` with every policy (tables, utilisation gains, plots, JSON), then the
  claims and the sweeps;
- :mod:`~model.hostsched.api`: :func:`run`, the command from Python (a scenario or its file,
  a policy, a seed, settings overridden by keyword), returning :class:`Results`.

See ``docs/hostsched.md``.
"""

from model.hostsched.api import Results, run
from model.hostsched.claims import CLAIMS, batch_sweep, crossover, evaluate_claims
from model.hostsched.cli import add_arguments
from model.hostsched.config import (
    BINDINGS,
    ORDERS,
    SHIP_STATE,
    Scenario,
    SystemParams,
    ThreadGroup,
    load_scenario,
)
from model.hostsched.policies import (
    Policy,
    SeedBatchDispatch,
    StaticBinding,
    WorkQueue,
    binding_for,
    make_policies,
)
from model.hostsched.sim import InvariantChecker, InvariantError, RunResult, simulate
from model.hostsched.workload import SubTask, Workload, generate_workload, workload_from_lists

__all__ = [
    "BINDINGS",
    "CLAIMS",
    "ORDERS",
    "SHIP_STATE",
    "InvariantChecker",
    "InvariantError",
    "Policy",
    "Results",
    "RunResult",
    "Scenario",
    "SeedBatchDispatch",
    "StaticBinding",
    "SubTask",
    "SystemParams",
    "ThreadGroup",
    "WorkQueue",
    "Workload",
    "add_arguments",
    "batch_sweep",
    "binding_for",
    "crossover",
    "evaluate_claims",
    "generate_workload",
    "load_scenario",
    "make_policies",
    "run",
    "simulate",
    "workload_from_lists",
]
