"""What a worker runs: one task (one or more points of the same configuration and seed), and
the code version every result is keyed by.

:func:`run_task` is the only function a local pool or a Dask cluster calls; it takes a plain
dict (picklable, no project object in it) so that any worker with the project installed can
run it, loads the point's scenario through the command's own loader and runs it through the
command's point module (``model/<command>/point.py``). It refuses to run when the worker's
model code is not the code the sweep was planned with (:class:`CodeMismatch`): results from a
cluster whose nodes run an older checkout would be stored under the wrong key.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import socket
import time
from importlib import metadata
from pathlib import Path

from model.config import in_memory

__all__ = ["POINT_MODULES", "CodeMismatch", "code_version", "point_module", "run_task"]

_MODEL_ROOT = Path(__file__).resolve().parent.parent

#: command -> the module with its point surface (``load_scenario``, ``policy_names``,
#: ``run_point``, ``HEADLINE``; optionally ``coupled`` and ``run_group``): every model package
#: with a ``point.py``, and the ``noop`` drill. (Found on disk rather than imported from
#: model.cli: a pool worker must not import the module ``python -m model.cli`` runs as its
#: main, or multiprocessing warns when it sets that module up again in the worker.)
POINT_MODULES = {path.parent.name: f"model.{path.parent.name}.point"
                 for path in sorted(_MODEL_ROOT.glob("*/point.py"))} | {
    "noop": "model.sweep.noop"}


class CodeMismatch(RuntimeError):
    """A worker's model code is not the code the sweep was planned with."""


def point_module(command: str):
    """The point module of ``command`` (imported on first use)."""
    return importlib.import_module(POINT_MODULES[command])


def _sources(command: str) -> list[Path]:
    """The files a command's results depend on: the shared ``model/*.py`` and the command's
    package (for the ``noop`` drill, its own file)."""
    shared = sorted(_MODEL_ROOT.glob("*.py"))
    if command == "noop":
        return shared + [_MODEL_ROOT / "sweep" / "noop.py"]
    return shared + sorted((_MODEL_ROOT / command).rglob("*.py"))


@functools.cache
def code_version(command: str) -> str:
    """``<package version>+<16 hex digits>``: the SHA-256 of the sources ``command``'s results
    depend on (:func:`_sources`, by relative path and content), so an edit to the model, even
    uncommitted, gives new keys and old results are not reused; an edit elsewhere (the sweep
    machinery, another model, the tests) keeps them."""
    digest = hashlib.sha256()
    for path in _sources(command):
        digest.update(str(path.relative_to(_MODEL_ROOT)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    try:
        version = metadata.version("gpusched-hw")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"{version}+{digest.hexdigest()[:16]}"


#: Scenarios a worker has loaded, by config hash (a worker runs many seeds of one config).
_LOADED: dict[str, object] = {}
_LOADED_LIMIT = 16


def _scenario(task: dict):
    scenario = _LOADED.get(task["config"])
    if scenario is None:
        module = point_module(task["command"])
        with in_memory(task["base"], task["document"]):
            scenario = module.load_scenario(task["base"])
        if len(_LOADED) >= _LOADED_LIMIT:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[task["config"]] = scenario
    return scenario


def run_task(task: dict) -> dict:
    """Run one task and return ``{"results": {policy: {metric: number}}, "seconds",
    "worker", "code"}``.

    ``task``: ``command``; ``base`` (the base scenario's path: relative paths in the document
    resolve against it, so a cluster's workers need the same files at the same paths);
    ``document`` (the point's resolved config) and its hash ``config``; ``policies`` (one, or
    several that run together: a coupled model's group); ``seed``; ``quick``; ``code`` (the
    planner's :func:`code_version`). Raises :class:`CodeMismatch` when this worker's code
    differs; any error of the model itself propagates (the point is recorded as failed).
    """
    code = code_version(task["command"])
    if code != task["code"]:
        raise CodeMismatch(f"the worker {socket.gethostname()} runs model code {code}, the "
                           f"sweep was planned with {task['code']}: install the same checkout "
                           f"on every worker")
    module = point_module(task["command"])
    scenario = _scenario(task)
    started = time.perf_counter()
    if task["group"]:
        results = module.run_group(scenario, task["policies"], task["seed"],
                                   quick=task["quick"])
    else:
        (policy,) = task["policies"]
        results = {policy: module.run_point(scenario, policy, task["seed"],
                                            quick=task["quick"])}
    return {"results": results, "seconds": time.perf_counter() - started,
            "worker": f"{socket.gethostname()}:{os.getpid()}", "code": code}
