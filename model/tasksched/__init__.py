"""The hardware task scheduler of seed 001 around the delay-factor arbiter, beat by beat.

One beat is one clock of the scheduler. The model follows the seed's [0050]-[0140]; the units
are methods of :class:`~model.tasksched.sim.TaskSchedulerSim` unless said otherwise:

* **task cache** (``_cache``) -- the first processor puts tasks into per-class queues in
  global memory (the tail pointer moves at a task's arrival beat, see
  :func:`~model.tasksched.workload.build_workload`); while a queue's head and tail differ and
  the cache has a free entry, the cache reads one task per beat (oldest first), which lands
  ``fetch_beats`` later ([0140]);
* **state monitor** (``_register``) -- the head of each class's cache queue asks whether its
  predecessors have completed ([0086]-[0089]); if they have, it is registered and gets a task
  ID, and after ``register_beats`` it is decomposed and becomes "to be scheduled"
  ([0052]-[0055]); if not, registration of that class waits (the head blocks its queue, as the
  seed's in-order queue does);
* **decomposer** (:func:`~model.tasksched.workload.decompose`) -- ``2**n`` jobs, each of the
  configured job size rounded up to a whole number of the target processor type's words
  ([0056], [0091]);
* **matcher** (``_schedule``) -- a to-be-scheduled task takes a free arbiter slot and matches
  its jobs to the second processors by type, capability (words a processor takes in one job)
  and idle state, ``match_jobs_per_beat`` jobs a beat. By default (``matching="reserve"``)
  each job is matched to a specific idle processor, which is reserved for it until the job is
  sent there ([0057], [0059]); ``"count"`` (the first reading) only checks that a compatible
  processor is idle. With ``gate="all"`` the task's jobs join its class's pending set (the
  slot is loaded into the arbiter) when every job has matched; with ``"per-job"`` ([0096])
  each job as soon as it has matched. If the jobs are not all matched within ``timeout``
  beats (the seed's 128 or 256) the task gets a schedule-failure signal, releases its
  reservations and unsent jobs, gives up its slot and is "to be scheduled" again ([0059],
  [0099]);
* **arbiter** (``_arbitrate``, built by :func:`~model.tasksched.policies.make_arbiter`) -- one
  job per beat is picked by the policy under test: the seed's delay-factor arbiter
  (:class:`model.arbiter.DelayFactorArbiterModel`, cycle-exact, with its write port and
  divider; :class:`~model.tasksched.config.SchedulerArbiterParams` can shorten the weight
  update to study a faster divider), FIFO per class with round-robin across classes, or
  smooth weighted round-robin
  (:class:`model.fairness.SmoothWeightedRoundRobin`); the two baselines are in
  :mod:`~model.tasksched.policies`;
* **send** (``_dispatch``) -- the chosen job goes to an idle compatible processor, which is
  locked for ``send_beats`` while the job is sent ([0136]) and then runs it for the job's
  duration;
* **completion** (``_processors``, ``_complete``) -- when the last job of a task has finished,
  the state monitor records it, the task is destroyed and its cache entry freed ([0138]).

A task that can never match (no processor of its type, jobs larger than every processor of
the type can take, more jobs than the matcher can match within the timeout, or a rejected
predecessor) is rejected at admission (:func:`~model.tasksched.workload.admit`) with its
reason in the results, never retried. A task that can match on its own is retried after every
schedule failure; under the seed's rules (reservation with the all-jobs gate) tasks that
each hold part of the processors they need can time out together round after round without
end (a livelock). The model detects it, per processor type -- no job of the type sent or
running and its tasks failing for ``livelock_rounds`` timeouts -- stops the run and reports
it (``stopped = "livelock"`` and ``livelock`` in the results); ``reserve_order =
"oldest-first"`` resolves it.

Modules: :mod:`~model.tasksched.config` (the scenario dataclasses, the TOML loader and the
shared constants), :mod:`~model.tasksched.workload` (tasks, decomposition, arrivals,
admission), :mod:`~model.tasksched.policies` (the baseline arbiters), :mod:`~model.tasksched.sim`
(the system model and :func:`~model.tasksched.sim.simulate`) and :mod:`~model.tasksched.cli`
(``gpusched tasksched``, which runs every scenario in ``configs/tasksched/`` with all three
policies on the same workload and prints one table per scenario, then the claims over seeds
of :mod:`~model.tasksched.claims`); :mod:`~model.tasksched.api` has :func:`run`, the command
from Python. ``docs/tasksched.md`` has the decisions, the metrics and
the config format.
"""

from model.tasksched.api import Results, run
from model.tasksched.claims import CLAIMS, evaluate_claims
from model.tasksched.cli import add_arguments
from model.tasksched.config import (
    ARRIVALS,
    GATES,
    MATCHING,
    POLICIES,
    RESERVE_ORDERS,
    TASK_CLASSES,
    ProcessorGroup,
    Scenario,
    SchedulerArbiterParams,
    SchedulerConfig,
    Stream,
    load_scenario,
    parse_scenario,
)
from model.tasksched.policies import FifoRoundRobinArbiter, SmoothWrrArbiter, make_arbiter
from model.tasksched.sim import InvariantError, TaskSchedulerSim, simulate
from model.tasksched.workload import TaskSpec, admit, build_workload, decompose

__all__ = [
    "ARRIVALS",
    "CLAIMS",
    "GATES",
    "MATCHING",
    "POLICIES",
    "RESERVE_ORDERS",
    "TASK_CLASSES",
    "FifoRoundRobinArbiter",
    "InvariantError",
    "ProcessorGroup",
    "Results",
    "Scenario",
    "SchedulerArbiterParams",
    "SchedulerConfig",
    "SmoothWrrArbiter",
    "Stream",
    "TaskSchedulerSim",
    "TaskSpec",
    "add_arguments",
    "admit",
    "build_workload",
    "decompose",
    "evaluate_claims",
    "load_scenario",
    "make_arbiter",
    "parse_scenario",
    "run",
    "simulate",
]
