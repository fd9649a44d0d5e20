"""Preloaded by every worker of a ``--scheduler dask-local:N`` cluster (``DaskEngine``).

The local cluster's worker processes share the terminal's process group with the sweep, so
Ctrl-C reaches them too; each would end in a ``KeyboardInterrupt`` traceback of its own. As
in the local pool's workers (``model.pool.worker_start``), a worker ignores SIGINT: the sweep
stops them when it stops (and SIGTERM still ends them).
"""

import signal
import threading


def dask_setup(worker) -> None:
    """Dask's preload hook: runs in the worker process as it starts."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
