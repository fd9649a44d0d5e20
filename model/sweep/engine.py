"""Where a sweep's tasks run: a local process pool (the default) or a Dask distributed cluster.

Both take the same tasks (:class:`model.sweep.plan.Task`), call the same worker function
(:func:`model.sweep.worker.run_task`) and report back through the same two callbacks, in the
driver process, as each task ends: ``done(task, outcome)`` and ``failed(task, error,
attempts)``. The driver alone writes the store.

**Local pool** (:class:`LocalPool`): ``concurrent.futures.ProcessPoolExecutor`` over N
processes (default: every core), started by a fork server so that the driver's threads are
never forked. It keeps exactly N tasks in flight. A worker that dies (killed, out of memory, a
crash in native code) breaks the pool: every task in flight is then re-run **one at a time**
in a fresh pool, so a task that kills its worker again is known for certain; one that does so
:data:`MAX_KILLS` times is recorded as failed and the sweep goes on. Workers ignore Ctrl-C
(the driver stops them) and exit by themselves when the driver is gone.

**Dask** (:class:`DaskEngine`): ``--scheduler tcp://HOST:8786`` (any running scheduler: one
started by hand, by dask-jobqueue on Slurm/PBS or by dask-kubernetes), ``--scheduler
FILE.json`` (a scheduler file, as ``dask-scheduler --scheduler-file`` and dask-mpi write), or
``--scheduler dask-local:N`` (a ``LocalCluster`` of N single-threaded worker processes, for
trying it out). Tasks go through the futures API (``Client.map``, ``as_completed``); a task
whose worker dies is re-run on another by the scheduler, up to Dask's
``distributed.scheduler.allowed-failures`` (3 by default), then recorded as failed. Dask is an
optional extra: ``pip install '.[cluster]'``.
"""

from __future__ import annotations

import collections
import logging
import os
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from model import pool
from model.sweep.spec import SweepError
from model.sweep.worker import CodeMismatch, run_task

__all__ = ["MAX_KILLS", "DaskEngine", "LocalPool", "engine_for"]

#: Times a task may kill its worker (run alone, so it is certainly the one) before it is
#: recorded as failed.
MAX_KILLS = 3

_CLUSTER_HINT = ("pip install '.[cluster]' in the repository (or pip install "
                 "'dask[distributed]')")


def describe(error: BaseException) -> str:
    """One line for the terminal, then the worker's traceback (kept in the store)."""
    line = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    cause = error.__cause__
    detail = str(cause) if cause is not None and "Traceback" in str(cause) else \
        "".join(traceback.format_exception(error))
    return f"{line}\n{detail}"


class LocalPool:
    """A pool of ``workers`` processes on this machine (see the module docstring)."""

    def __init__(self, workers: int | None = None):
        self.workers = workers or os.cpu_count() or 1
        self.description = f"a local pool of {self.workers} processes"
        self.reruns = 0

    def _executor(self) -> ProcessPoolExecutor:
        main = sys.modules.get("__main__")
        script = getattr(main, "__file__", None)
        if (script is not None and getattr(main, "__spec__", None) is None
                and not os.path.isfile(script)):
            # multiprocessing makes every worker run the driver's main script again; one read
            # from standard input cannot be, and each worker would die at its start.
            raise SweepError(f"the local pool cannot start workers from a script that is not "
                             f"a file ({script}): save it to a file, or use --scheduler")
        return pool.executor(self.workers, ["model.sweep.worker"])

    def close(self) -> None:
        """Nothing to release: :meth:`run` shuts its pool down."""

    def run(self, tasks, done, failed) -> None:
        pending = collections.deque(tasks)
        suspects: collections.deque = collections.deque()
        kills: collections.Counter = collections.Counter()
        executor = self._executor()
        inflight: dict = {}
        try:
            while pending or suspects or inflight:
                while True:
                    if suspects:
                        if inflight:
                            break
                        task = suspects.popleft()
                    elif pending and len(inflight) < self.workers:
                        task = pending.popleft()
                    else:
                        break
                    with pool.deferred_signals():         # submit may start a worker
                        inflight[executor.submit(run_task, task.payload)] = task
                finished, _ = pool.wait_first(inflight)
                lost = []
                for future in finished:
                    task = inflight.pop(future)
                    self._settle(future, task, done, failed, lost)
                if lost:
                    # Every other task in flight fails the same way once the pool is broken.
                    for future in list(inflight):
                        task = inflight.pop(future)
                        pool.wait_first([future])
                        self._settle(future, task, done, failed, lost)
                    executor.shutdown(wait=True)
                    executor = self._executor()
                    self.reruns += len(lost)
                    if len(lost) == 1:
                        (task,) = lost
                        kills[id(task)] += 1
                        if kills[id(task)] >= MAX_KILLS:
                            failed(task, f"killed its worker process {MAX_KILLS} times (out of "
                                         f"memory? a crash in native code?)", MAX_KILLS)
                            self.reruns -= 1
                            continue
                    suspects.extend(lost)
            executor.shutdown(wait=True)       # inside the try, as in model.pool.run_all
        except BaseException:
            pool.stop(executor)
            raise

    @staticmethod
    def _settle(future, task, done, failed, lost) -> None:
        error = future.exception()
        if error is None:
            done(task, future.result())
        elif isinstance(error, BrokenProcessPool):
            lost.append(task)
        elif isinstance(error, CodeMismatch):
            raise SweepError(str(error))
        else:
            failed(task, describe(error), 1)


def _dask():
    try:
        import distributed
    except ImportError:
        raise SweepError(f"--scheduler needs Dask distributed, which is not installed: "
                         f"{_CLUSTER_HINT}") from None
    return distributed


class DaskEngine:
    """The tasks on a Dask distributed cluster (see the module docstring): ``scheduler`` is
    ``tcp://HOST:PORT`` (or ``tls://``, ``ws://``...), a scheduler file ``*.json``, or
    ``dask-local:N``."""

    def __init__(self, scheduler: str):
        distributed = _dask()
        self._cluster = None
        arguments: dict = {}
        if scheduler.startswith("dask-local:"):
            count = scheduler.partition(":")[2]
            if not count.isdigit() or int(count) < 1:
                raise SweepError(f"--scheduler dask-local:N needs N >= 1 workers, not "
                                 f"{scheduler!r}")
            # Its workers' logs stay quiet: a point's error or a dead worker reaches the
            # sweep through the future (and the store), and stopping the cluster under load
            # can make a worker log a lost heartbeat as an error. So does its scheduler, in
            # this process, until the cluster is closed: LocalCluster's silence_logs lasts
            # only until its close begins, and a SIGTERM to the process group kills the
            # workers first, so the scheduler logged each lost comm with a traceback.
            self._logger = logging.getLogger("distributed")
            self._level = self._logger.level
            self._logger.setLevel(logging.CRITICAL)
            self._cluster = distributed.LocalCluster(
                n_workers=int(count), threads_per_worker=1, processes=True,
                dashboard_address=":0", silence_logs=logging.CRITICAL,
                preload=["model.sweep.dask_preload"])   # its workers ignore Ctrl-C
            arguments["address"] = self._cluster.scheduler_address
        elif scheduler.endswith(".json"):
            if not Path(scheduler).is_file():
                raise SweepError(f"--scheduler {scheduler}: no such scheduler file")
            arguments["scheduler_file"] = scheduler
        elif "://" in scheduler:
            arguments["address"] = scheduler
        else:
            raise SweepError(f"--scheduler must be tcp://HOST:PORT (a running Dask "
                             f"scheduler), a scheduler file FILE.json, or dask-local:N, not "
                             f"{scheduler!r}")
        try:
            self.client = distributed.Client(**arguments, timeout="20s")
        except (OSError, TimeoutError) as error:
            self.close()
            raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: {error}") from None
        self.workers = len(self.client.scheduler_info().get("workers", {}))
        self.description = (f"Dask at {self.client.scheduler.address} "
                            f"({self.workers} workers)")
        self.reruns = 0
        self._distributed = distributed

    def run(self, tasks, done, failed) -> None:
        distributed = self._distributed
        futures = self.client.map(run_task, [task.payload for task in tasks], pure=False)
        by_key = {future.key: task for future, task in zip(futures, tasks, strict=True)}
        try:
            for future in distributed.as_completed(futures):
                task = by_key[future.key]
                if future.status == "finished":
                    done(task, future.result())
                    continue
                error = future.exception()
                if isinstance(error, CodeMismatch):
                    raise SweepError(str(error))
                if isinstance(error, distributed.KilledWorker):
                    allowed = distributed.config.get("distributed.scheduler.allowed-failures")
                    failed(task, f"killed {allowed + 1} Dask workers (out of memory? a crash "
                                 f"in native code?); distributed.scheduler.allowed-failures "
                                 f"is {allowed}", allowed + 1)
                else:
                    failed(task, describe(error), 1)
        finally:
            self.client.cancel([future for future in futures if not future.done()])

    def close(self) -> None:
        """Disconnect; a ``dask-local`` cluster is stopped."""
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
            self._logger.setLevel(self._level)


def engine_for(scheduler: str | None, workers: int | None):
    """The local pool (``scheduler`` None) or Dask."""
    if scheduler is None:
        return LocalPool(workers)
    if workers is not None:
        raise SweepError("--workers is for the local pool; a Dask cluster has the workers it "
                         "was started with")
    return DaskEngine(scheduler)
