"""Independent runs of one command on a local process pool: ``--jobs N``.

:func:`run_all` calls ``function(*task)`` for every task and returns the results in task
order. With ``jobs == 1`` (or a single task) it runs them here, one after the other, in
order; otherwise on a ``concurrent.futures.ProcessPoolExecutor`` of ``min(jobs, tasks)``
processes started by a fork server (the driver's threads, a progress bar's included, are
never forked), each task's function and arguments pickled to a worker and its result pickled
back. A run is a pure function of its task, so the results are the same either way, bit for
bit; only the order in which they finish differs, and the caller sees them in task order.

Ctrl-C and SIGTERM belong to the driver: the workers ignore SIGINT, and a ``KeyboardInterrupt``
(or any other exception) in the driver while it waits terminates every worker at once and
cancels the tasks not started before it is raised again, so a command stops at once and
saves what finished (:mod:`model.cli`). A worker also exits by itself when the driver is gone
(killed with SIGKILL, it cannot stop them). An exception raised by a task is raised in the
driver, as it would be in a serial run.

The sweep's local pool (:class:`model.sweep.engine.LocalPool`, which also re-runs the tasks
of a worker that died) starts and stops its workers with :func:`executor` and :func:`stop`.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager

__all__ = ["default_jobs", "deferred_signals", "executor", "run_all", "stop", "wait_first",
           "worker_start"]

#: How often (seconds) :func:`wait_first` looks for a held Ctrl-C or SIGTERM: the longest a
#: signal waits before the command starts to stop.
POLL = 0.05


def default_jobs() -> int:
    """``--jobs`` when not given: every core this process may run on (its CPU affinity,
    which a container or ``taskset`` may narrow), else every core of the machine."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _watch_driver(driver: int, parent: int) -> None:
    while True:
        time.sleep(1.0)
        try:
            os.kill(driver, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:
            pass
        if os.getppid() != parent:
            os._exit(0)


def worker_start(driver: int) -> None:
    """In each pool worker: leave Ctrl-C to the driver, and exit when the driver is gone (a
    driver killed with SIGKILL cannot stop its workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_driver, args=(driver, os.getppid()), daemon=True).start()


def executor(workers: int, preload: Sequence[str] = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes forked from a fork server that has imported
    ``preload`` (module names), so that each worker starts with them imported; spawned when
    the platform has no fork server."""
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() \
        else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver" and preload:
        context.set_forkserver_preload(list(preload))
    return ProcessPoolExecutor(workers, mp_context=context, initializer=worker_start,
                               initargs=(os.getpid(),))


@contextmanager
def deferred_signals() -> Iterator[list[int]]:
    """Hold Ctrl-C and SIGTERM while the pool starts workers (``submit`` forks them through the
    fork server): a signal raised in the middle would leave a half-started worker or the fork
    server to print a traceback of its own (``EOFError`` from a cut message, a semaphore gone).
    The held signal's handler runs at the end of the block, where the pool can be stopped
    cleanly. Yields the list of the signals held so far, for a loop to look at. Outside the
    main thread (where Python runs signal handlers) it holds nothing."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = {number: signal.signal(number, lambda number, frame: held.append(number))
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield held
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if held:
            handler = previous[held[0]]
            if callable(handler):
                handler(held[0], None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(held[0])


def wait_first(futures) -> tuple[set, set]:
    """``concurrent.futures.wait(futures, return_when=FIRST_COMPLETED)``, which Ctrl-C and
    SIGTERM stop without breaking the pool.

    Blocked in that ``wait``, the main thread sits in a condition variable that the pool's
    manager thread also takes; an exception raised there by a signal handler (the
    ``KeyboardInterrupt`` of Ctrl-C, or of :mod:`model.cli`'s SIGTERM handler) can leave
    CPython 3.11 releasing the condition's lock while the manager thread holds it, and that
    thread then dies with ``RuntimeError: release unlocked lock`` and its traceback. So the
    signals are held while waiting (:func:`deferred_signals`), the wait wakes every
    :data:`POLL` seconds to look for one, and the held signal's handler runs after the wait,
    outside every lock: the exception it raises reaches the caller as before."""
    with deferred_signals() as held:
        while True:
            finished, pending = wait(futures, timeout=POLL, return_when=FIRST_COMPLETED)
            if finished or held:
                return finished, pending


def _drain(fd: int, feeder: threading.Thread) -> None:
    """Read and discard what arrives on ``fd`` (a copy of a stopped pool's task pipe) until
    ``feeder``, the thread writing it, has ended; then close ``fd``."""
    try:
        while feeder.is_alive():
            if select.select([fd], [], [], POLL)[0] and not os.read(fd, 1 << 16):
                break                                  # every writer gone
    except OSError:
        pass
    finally:
        os.close(fd)


def stop(pool: ProcessPoolExecutor) -> None:
    """Abandon the running tasks: terminate the workers, cancel what has not started."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            process.terminate()
        except (OSError, AttributeError):
            pass
    # The tasks queued for the workers go through a pipe, written by a feeder thread. Tasks
    # larger than its 64 KiB together (three of 24 KiB: six traces' scenario) leave the feeder
    # blocked in a write that no terminated worker will read, and Python 3.11's pool joins
    # that thread as it shuts down: the command hung after its last line. So the rest of the
    # pipe is read here, and thrown away, until the feeder has ended (a copy of the read end,
    # which the feeder closes when it ends).
    queue = getattr(pool, "_call_queue", None)
    feeder = getattr(queue, "_thread", None)
    if feeder is not None and feeder.is_alive():
        try:
            fd = os.dup(queue._reader.fileno())
        except (OSError, AttributeError, ValueError):
            pass
        else:
            threading.Thread(target=_drain, args=(fd, feeder), daemon=True).start()
    # Python 3.11's pool races at exit: its exit hook wakes the pool's manager thread through
    # a pipe that the thread, seeing its workers gone, may be closing at that moment
    # (``OSError: Bad file descriptor``, printed as an ignored exception with its traceback
    # after the command's one line). Once the manager thread has ended, its pipe is marked
    # closed and the hook leaves it alone; it ends within moments of the workers. No time
    # limit: the exit hook would wait for it as long (a second Ctrl-C still interrupts).
    # Taken before ``shutdown``, which drops the pool's reference to it (joining it after
    # the shutdown, as this did before, joined nothing: 3 runs in 60 printed that traceback).
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join()


def run_all(function: Callable, tasks: Sequence[tuple], jobs: int, *,
            preload: Sequence[str] = (), done: Callable[[int, object], None] | None = None
            ) -> list:
    """``[function(*task) for task in tasks]``, on ``jobs`` processes when ``jobs > 1`` (see
    the module docstring). ``function`` must be importable by name (a module's top-level
    function) and the tasks and results picklable. ``done(index, result)`` (optional) is
    called in this process as each task finishes (in task order when serial), e.g. to move a
    progress bar."""
    tasks = list(tasks)
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, not {jobs!r}")
    results: list = [None] * len(tasks)
    if jobs == 1 or len(tasks) <= 1:
        for index, task in enumerate(tasks):
            results[index] = function(*task)
            if done is not None:
                done(index, results[index])
        return results
    pool = executor(min(jobs, len(tasks)), preload)
    try:
        with deferred_signals():
            futures = {pool.submit(function, *task): index for index, task in enumerate(tasks)}
        pending = set(futures)
        while pending:
            finished, pending = wait_first(pending)
            # In task order among those finished together, so that a serial-looking caller
            # sees the same sequence whenever it can.
            for future in sorted(finished, key=futures.__getitem__):
                index = futures[future]
                results[index] = future.result()
                if done is not None:
                    done(index, results[index])
        # Inside the try: a Ctrl-C while the pool shuts down (its last task just finished)
        # must stop it as one in a task does, or the exit hook races its manager thread.
        pool.shutdown(wait=True)
    except BaseException:
        stop(pool)
        raise
    return results
