"""``gpusched sweep --scheduler tcp://...`` on a Dask ``LocalCluster`` started in this process
(two single-threaded worker processes, shared by both checks): the same points give the
same results as the local pool and as single runs, and a worker killed mid-point has its point
retried on another; Ctrl-C or SIGTERM of a ``dask-local`` sweep is one line.

One cluster for the module (its start-up is a few seconds), and so one test: pytest-xdist's
``--dist loadgroup`` does not keep a module's tests on one worker under pytest 9 (its group
suffix no longer reaches the node ids), so two tests could start two clusters.
"""

import dataclasses
import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from model import cli  # noqa: E402
from model.dispatch.cli import run_scenario  # noqa: E402
from model.dispatch.config import load_scenario  # noqa: E402
from model.sweep.cli import COMMANDS  # noqa: E402
from model.sweep.plan import build_plan  # noqa: E402
from model.sweep.spec import load_sweep  # noqa: E402
from tests.test_sweep import _count, _start, _wait_for  # noqa: E402

BASE = """cycles = 1000

[[channels]]
priority = 0
arrival = 0.05
count = 100000
waves = [2, 8]
vgpr = [4, 24]
duration = [100, 400]

[[channels]]
priority = 2
arrival = 0.04
count = 100000
waves = [1, 4]
vgpr = [2, 8]
duration = [50, 400]

[[policies]]
name = "exact"

[[policies]]
name = "sampled"
circuit = "sampled"
"""


def _results(store: Path) -> dict[str, dict]:
    with sqlite3.connect(store) as db:
        return {key: json.loads(metrics)
                for key, metrics in db.execute("SELECT key, metrics FROM results")}


def test_dask_gives_the_results_of_the_pool_and_single_runs_and_retries_killed_workers(
        tmp_path, capsys):
    import logging

    # Two worker processes, each with a nanny (so a killed worker is restarted).
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=logging.ERROR)
    try:
        _same_results(cluster.scheduler_address, tmp_path, capsys)
        _killed_worker_retried(cluster.scheduler_address, tmp_path)
    finally:
        cluster.close()


def _same_results(scheduler, tmp_path, capsys):
    base = tmp_path / "base.toml"
    base.write_text(BASE)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'scenario = "{base}"\ncommand = "dispatch"\nquick = true\n'
                     "seeds = [3]\n[axes]\npolicies.circuit_latency = [0, 3]\n")
    on_dask, on_pool = tmp_path / "dask.sqlite", tmp_path / "pool.sqlite"
    assert cli.main(["sweep", str(sweep), "--store", str(on_dask), "--scheduler", scheduler,
                     "--quiet", "--no-report"]) == 0
    assert f"on Dask at {scheduler} (2 workers)" in capsys.readouterr().err
    assert cli.main(["sweep", str(sweep), "--store", str(on_pool), "--workers", "2",
                     "--quiet", "--no-report"]) == 0
    dask, pool = _results(on_dask), _results(on_pool)
    assert len(dask) == 4 and dask == pool
    scenario = load_scenario(base)
    for point in build_plan(load_sweep(sweep, COMMANDS)).points:
        policies = tuple(dataclasses.replace(policy, circuit_latency=point.axes[0])
                         for policy in scenario.policies)
        single = run_scenario(dataclasses.replace(scenario, policies=policies),
                              seed=point.seed, policies=[point.policy])[point.policy]
        assert dask[point.key]["throughput"] == single["throughput"]
        assert dask[point.key]["wait.max"] == single["wait"]["max"]
        assert dask[point.key]["stale_aborts"] == single["stale_aborts"]


def _killed_worker_retried(scheduler, tmp_path):
    markers = tmp_path / "markers"
    sweep = tmp_path / "crash.toml"
    sweep.write_text(f'command = "noop"\nseeds = [3]\n[set]\nsleep_ms = 200\n'
                     f'crash = {{ value = 2.0, markers = "{markers}" }}\n'
                     f"[axes]\nvalue = [1.0, 2.0]\n")
    store = tmp_path / "crash.sqlite"
    out = tmp_path / "crash.json"
    assert cli.main(["sweep", str(sweep), "--store", str(store), "--scheduler", scheduler,
                     "--quiet", "--no-report", "--json", str(out)]) == 0
    assert len(list(markers.iterdir())) == 1          # the value-2 point did kill a worker
    data = json.loads(out.read_text())
    assert (data["points"], data["computed"], data["failed"]) == (2, 2, 0)
    results = _results(store)
    assert sorted(metrics["product"] for metrics in results.values()) == [3, 6]


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_of_a_dask_local_sweep_is_one_line(stop, status, tmp_path):
    # Issue 31: Ctrl-C of `--scheduler dask-local:2` (the terminal signals the whole process
    # group, the cluster's worker processes too) printed each worker's KeyboardInterrupt
    # traceback after the sweep's line. Its own session, as a terminal's foreground job.
    sweep = tmp_path / "long.toml"
    sweep.write_text('command = "noop"\nseeds = 20\n[set]\nsleep_ms = 300\n'
                     "[axes]\nvalue = [1.0, 2.0]\n")
    store = tmp_path / "long.sqlite"
    process = _start([str(sweep), "--store", str(store), "--scheduler", "dask-local:2",
                      "--quiet", "--no-report"], tmp_path)
    try:
        _wait_for(store, 2, process, limit=90)
        os.killpg(process.pid, stop)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == status, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("gpusched sweep: interrupted;" if stop == signal.SIGINT else
                          "gpusched sweep: terminated (SIGTERM);"), err
    assert 2 <= _count(store) < 40
