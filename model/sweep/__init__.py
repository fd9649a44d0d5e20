"""Design-space sweeps of any system model: ``gpusched sweep SWEEP.toml``.

A sweep file names a base scenario (any subcommand's config file), axes by config field path,
policies, seeds and optionally a filter; the cross product is the set of points, each a full
config checked by its command's own loader before anything runs. The points run on a local
process pool or a Dask distributed cluster, every result written at once to a SQLite store
keyed by the point's resolved config, the model code and the seed, so an interrupted sweep
started again computes only what is missing. ``gpusched sweep report STORE`` gives tables with
95 % intervals over seeds, plots and CSV. ``docs/sweep.md`` has it all.

Modules, in the order a sweep goes through them:

* :mod:`~model.sweep.spec`: the sweep file, field paths, the filter;
* :mod:`~model.sweep.plan`: points built, resolved, checked and keyed;
* :mod:`~model.sweep.worker`: what a worker runs (:func:`run_task`), the code version;
* :mod:`~model.sweep.engine`: the local pool and Dask;
* :mod:`~model.sweep.store`: the SQLite results store;
* :mod:`~model.sweep.runner`: running the missing points with progress;
* :mod:`~model.sweep.report`: tables, plots, CSV;
* :mod:`~model.sweep.cli`: the command; :mod:`~model.sweep.noop`: a point that does nothing
  (overhead measurements, failure drills).

Each model package gives a sweep the same small surface, in ``model/<command>/point.py``:
``load_scenario(path)``, ``policy_names(scenario)``, ``run_point(scenario, policy, seed, *,
quick) -> {metric: number}`` and ``HEADLINE`` (``coupled`` and ``run_group`` for a model whose
policies must run together: the cluster's timed experiment).
"""

from model.sweep.engine import DaskEngine, LocalPool, engine_for
from model.sweep.plan import Plan, Point, Task, build_plan
from model.sweep.runner import Outcome, run_plan
from model.sweep.spec import Sweep, SweepError, load_sweep
from model.sweep.store import Store
from model.sweep.worker import code_version, run_task

__all__ = ["DaskEngine", "LocalPool", "Outcome", "Plan", "Point", "Store", "Sweep", "SweepError",
           "Task", "build_plan", "code_version", "engine_for", "load_sweep", "run_plan",
           "run_task"]
