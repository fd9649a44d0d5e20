"""Seed 003: host-side dispatch of sub-tasks from many CPU threads to a few FPGA kernel instances.

A discrete-event model at **integer microsecond** resolution (every time, duration and cost is
an ``int`` in µs; nothing is rounded inside the model). ``T`` CPU threads each hold a queue of
sub-tasks; a task (e.g. one video) is split into ordered sub-tasks (its segments) that all
live in one thread, each needing its predecessor's state. ``I < T`` kernel instances run one
sub-task at a time.

The seed's dispatcher (:class:`SeedBatchDispatch`):

1. when the shared FIFO is empty, take the next batch of ``batch`` threads from the thread
   order table (ordered by the arrival time of each thread's first waiting sub-task, or by its
   priority), and move one sub-task from each into the FIFO, earliest arrival first. A table
   is one *round*: its threads are drawn batch by batch; when it is used up, a new table is
   built from the threads that have a sub-task waiting at that moment;
2. idle instances pull the FIFO's head asynchronously, at the moment they become idle;
3. a sub-task whose task was seen before carries its task's state from the thread's backup
   buffer (shipped to the instance unless the instance still holds it); the result updates
   the buffer. A task's first state goes into its thread's area (``per_thread`` states), else
   into the shared spare buffer (a *spare spill*), else back to host memory (a *host spill*:
   every later sub-task of that task pays ``host_refetch_us`` on top of the state transfer);
4. a task is complete when a sub-task of *another* task is taken from its thread after the
   task's final sub-task has run; its result is then read from the buffer and the entry freed
   (a thread's last task completes when its final sub-task finishes: end of stream).

Baselines on the same workload: :class:`StaticBinding` (the seed's prior art: thread ``t`` is
bound to instance ``t mod I``, each instance serves its own threads first-ready-first) and
:class:`WorkQueue` (one queue of ready sub-tasks, FIFO by readiness, no batching, no order
table). In every policy a thread has at most one sub-task outstanding (from the moment it is
handed to the dispatcher until it finishes): a CPU thread issues its sub-tasks one at a time,
which is what makes the seed's completion rule sound, and which implies the dependency rule.

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
- :mod:`~model.hostsched.cli`: ``gpusched hostsched``, which runs every scenario in
  ``configs/hostsched/`` with every policy (tables, utilisation gains, plots, JSON).

See ``docs/hostsched.md``.
"""

from model.hostsched.cli import add_arguments, run
from model.hostsched.config import ORDERS, Scenario, SystemParams, ThreadGroup, load_scenario
from model.hostsched.policies import (
    Policy,
    SeedBatchDispatch,
    StaticBinding,
    WorkQueue,
    make_policies,
)
from model.hostsched.sim import InvariantChecker, InvariantError, RunResult, simulate
from model.hostsched.workload import SubTask, Workload, generate_workload, workload_from_lists

__all__ = [
    "ORDERS",
    "InvariantChecker",
    "InvariantError",
    "Policy",
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
    "generate_workload",
    "load_scenario",
    "make_policies",
    "run",
    "simulate",
    "workload_from_lists",
]
