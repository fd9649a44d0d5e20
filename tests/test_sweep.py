"""``gpusched sweep`` on the local pool (model/sweep/): field paths and the filter, bad sweep
files refused before anything runs (one line naming the axis, status 2), every point equal to
a single run of its subcommand, a sweep interrupted and killed then restarted ending with every
point exactly once and nothing recomputed, a worker killed mid-point retried, a failing point
recorded, two sweeps writing one store at once, and the report's numbers.

The Dask path is in tests/test_sweep_dask.py. Points are the ``noop`` drill (milliseconds)
or models with ``quick = true`` and a short cycle limit.
"""

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from model import cli
from model.dispatch.cli import run_scenario
from model.dispatch.config import load_scenario
from model.stats import compare, interval
from model.sweep import engine as sweep_engine
from model.sweep import plan as sweep_plan
from model.sweep.cli import COMMANDS
from model.sweep.runner import run_plan
from model.sweep.spec import MAX_POINTS, Filter, apply_path, load_sweep
from model.sweep.store import Store

ROOT = Path(__file__).resolve().parent.parent


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _results(store: Path) -> dict[str, dict]:
    with sqlite3.connect(store) as db:
        return {key: json.loads(metrics)
                for key, metrics in db.execute("SELECT key, metrics FROM results")}


# -- field paths and the filter -----------------------------------------------------------------

def test_a_path_sets_every_element_of_an_array_of_tables_or_the_one_indexed():
    document = {"policies": [{"name": "a"}, {"name": "b", "circuit": "grouped"}],
                "channels": [{"mix": [0.1, 0.2]}, {"mix": [0.3, 0.4]}]}
    apply_path(document, "policies.circuit_latency", 2)
    assert [p["circuit_latency"] for p in document["policies"]] == [2, 2]
    apply_path(document, "channels[1].arrival", 0.05)
    assert "arrival" not in document["channels"][0]
    assert document["channels"][1]["arrival"] == 0.05
    apply_path(document, "channels.mix[0]", 0.0)
    assert [c["mix"] for c in document["channels"]] == [[0.0, 0.2], [0.0, 0.4]]
    apply_path(document, "gpu.aps", 8)                  # a missing table is created
    assert document["gpu"] == {"aps": 8}
    for path, message in [("channels[2].arrival", "has 2 elements in the base scenario; [2] is "
                                                   "past the end"),
                          ("gpu.aps.x", "gpu.aps is 8 in the base scenario, not a table"),
                          ("policies[0].name.first", "policies[0].name is 'a'"),
                          ("channel s", "is not a key or key[index]")]:
        with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
            apply_path(document, path, 1)


def test_the_filter_reads_axes_policy_and_seed_and_refuses_anything_else():
    names = ["policies.circuit_latency", "channels[1].arrival", "policy", "seed"]
    keep = Filter("policy != 'exact' or policies.circuit_latency == 0 and seed in [1, 2]",
                  names)
    assert keep.keep({"policies.circuit_latency": 0, "channels[1].arrival": 0.1,
                      "policy": "exact", "seed": 2})
    assert not keep.keep({"policies.circuit_latency": 1, "channels[1].arrival": 0.1,
                          "policy": "exact", "seed": 2})
    assert Filter("channels[1].arrival * 2 < 0.3", names).keep(
        {"channels[1].arrival": 0.1, "policies.circuit_latency": 0, "policy": "x", "seed": 1})
    for text, message in [("gpu.aps > 8", "names 'gpu.aps', which is not an axis"),
                          ("__import__('os').system('true')", "does not allow"),
                          ("seed.bit_length() > 1", "does not allow"),
                          ("seed >", "is not a valid expression")]:
        with pytest.raises(ValueError, match=message):
            Filter(text, names)


# -- bad sweep files: one line naming the axis, status 2, before anything runs ------------------

#: A small dispatcher scenario (two channels, two circuits) that the tests sweep.
BASE = """name = "sweep test"
cycles = 1000

[[channels]]
priority = 0
arrival = 0.05
count = 100000
waves = [2, 8]
vgpr = [4, 24]
duration = [100, 400]

[[channels]]
priority = 3
arrival = 0.05
count = 100000
waves = [1, 4]
vgpr = [2, 8]
duration = [50, 400]

[[policies]]
name = "exact"

[[policies]]
name = "grouped /4"
circuit = "grouped"
group_size = 4
"""


@pytest.fixture
def base(tmp_path) -> Path:
    return _write(tmp_path / "base.toml", BASE)


#: case -> (the sweep file after 'scenario = ...', the line's start after the file, detail)
BAD = {
    "unknown field": ("[axes]\npolicies.circuit_latncy = [0, 1]\n",
                      "axes.policies.circuit_latncy = 0: ",
                      "policies[0].circuit_latncy is not a known field (did you mean "
                      "'circuit_latency'?)"),
    "value refused": ("[axes]\npolicies.circuit_latency = [0, 65]\n",
                      "axes.policies.circuit_latency = 65: ",
                      "policies[0].circuit_latency must be an integer in 0..64, not 65"),
    "table for a number": ("[axes]\n\"cycles.x\" = [1]\n",
                           "axes.cycles.x = 1: ", "cycles is 1000 in the base scenario"),
    "index past the end": ("[axes]\n\"channels[9].arrival\" = [0.1]\n",
                           "axes.channels[9].arrival = 0.1: ", "has 2 elements"),
    "combination": ("[axes]\n\"policies[1].group_size\" = [4, 16]\ngpu.lds = [48, 40]\n",
                    "axes: the combination policies[1].group_size = 16, gpu.lds = 40: ",
                    "group_size 16 must divide every contiguous resource size (lds has 40"),
    "empty axis": ("[axes]\ngpu.aps = []\n", "axes.gpu.aps is empty: the sweep has no points",
                   ""),
    "no seeds": ("seeds = []\n", "seeds is empty", ""),
    "filter removes all": ('filter = "seed > 10"\n',
                           "filter: removes every one of the 4 points", ""),
    "unknown policy": ('policies = ["exact", "nonesuch"]\n',
                       "policies: 'nonesuch' is not a policy of the scenario (known: exact, "
                       "grouped /4)", ""),
    "not a list": ("[axes]\ngpu.aps = 8\n",
                   "axes.gpu.aps must be a list of the values the field takes, not 8", ""),
    "set refused": ("[set]\ngpu.aps = 0\n", "set.gpu.aps = 0: ",
                    "gpu.aps must be an integer in 1..1024, not 0"),
    "unknown key": ("axis = 1\n", "axis is not a known field (did you mean 'axes'?)", ""),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_sweep_file_is_one_line_naming_the_axis_before_anything_runs(
        case, base, tmp_path, capsys, monkeypatch):
    text, where, detail = BAD[case]
    seeds = "" if "seeds" in text else "seeds = 2\n"
    sweep = _write(tmp_path / "bad.toml", f'scenario = "{base}"\ncommand = "dispatch"\n'
                                          f"quick = true\n{seeds}{text}")
    ran = []
    monkeypatch.setattr(sweep_engine.LocalPool, "run", lambda *a: ran.append(a))
    store = tmp_path / "bad.sqlite"
    assert cli.main(["sweep", str(sweep), "--store", str(store), "--quiet"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"gpusched sweep: {sweep}: {where}"), line
    assert detail in line
    assert not ran and not store.exists()


def test_without_dask_the_scheduler_option_says_how_to_install_it(tmp_path, capsys,
                                                                  monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)      # import distributed fails
    sweep = _write(tmp_path / "s.toml", 'command = "noop"\n')
    assert cli.main(["sweep", str(sweep), "--store", str(tmp_path / "s.sqlite"),
                     "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "needs Dask distributed, which is not installed: pip install '.[cluster]'" in \
        _one_line(capsys.readouterr().err)


# -- every point equals a single run ------------------------------------------------------------

def test_local_pool_points_equal_single_runs_of_the_subcommand(base, tmp_path, capsys):
    sweep = _write(tmp_path / "latency.toml", f'scenario = "{base}"\ncommand = "dispatch"\n'
                   'quick = true\nseeds = [2]\n[axes]\npolicies.circuit_latency = [0, 2]\n')
    store = tmp_path / "latency.sqlite"
    assert cli.main(["sweep", str(sweep), "--store", str(store), "--workers", "2", "--quiet",
                     "--no-report"]) == 0
    planned = sweep_plan.build_plan(load_sweep(sweep, COMMANDS))
    stored = _results(store)
    assert len(planned.points) == len(stored) == 4
    scenario = load_scenario(base)
    for point in planned.points:
        policies = tuple(dataclasses.replace(policy, circuit_latency=point.axes[0])
                         for policy in scenario.policies)
        direct = run_scenario(dataclasses.replace(scenario, policies=policies),
                              seed=point.seed, policies=[point.policy])[point.policy]
        assert stored[point.key]["throughput"] == direct["throughput"]
        assert stored[point.key]["wait.mean"] == direct["wait"]["mean"]
        assert stored[point.key]["wait.per_priority.3.max"] == \
            direct["wait"]["per_priority"]["3"]["max"]
    # And one point through the subcommand itself, from a file written by hand.
    single = _write(tmp_path / "single.toml", BASE.replace(
        "group_size = 4", "group_size = 4\ncircuit_latency = 2"))
    out = tmp_path / "single.json"
    capsys.readouterr()
    assert cli.main(["dispatch", "--config", str(single), "--policy", "grouped /4", "--seed",
                     "2", "--quick", "--quiet", "--json", str(out), "--plots",
                     str(tmp_path)]) == 0
    (entry,) = json.loads(out.read_text())["scenarios"].values()
    result = entry["policies"]["grouped /4"]
    (point,) = [p for p in planned.points
                if p.axes == (2,) and p.policy == "grouped /4" and p.seed == 2]
    assert stored[point.key]["throughput"] == result["throughput"]
    assert stored[point.key]["wait.mean"] == result["wait"]["mean"]
    # --dry-run counts what the store has and writes nothing.
    capsys.readouterr()
    assert cli.main(["sweep", str(sweep), "--store", str(store), "--dry-run"]) == 0
    assert "4 points (1 axes, 2 policies, 1 seeds), 4 already in" in capsys.readouterr().out
    assert cli.main(["sweep", str(sweep), "--store", str(tmp_path / "new.sqlite"),
                     "--dry-run"]) == 0
    assert "0 already in" in capsys.readouterr().out
    assert not (tmp_path / "new.sqlite").exists()


def test_a_coupled_model_runs_its_policies_together_as_the_subcommand_does(tmp_path):
    # The cluster's timed experiment integrates energy over the latest makespan of the
    # policies run together: a sweep point's energy is that of the same policies' run.
    config = ROOT / "configs" / "cluster" / "mixed_steady.toml"
    sweep = _write(tmp_path / "cluster.toml", f'scenario = "{config}"\nquick = true\n'
                   'policies = ["seed-004", "spread"]\nseeds = [3]\n')
    store = tmp_path / "cluster.sqlite"
    assert cli.main(["sweep", str(sweep), "--store", str(store), "--quiet",
                     "--no-report"]) == 0
    from model.cluster.cli import prepare
    from model.cluster.cli import run_scenario as cluster_run
    from model.cluster.config import load_scenario as cluster_load
    scenario = cluster_load(config)
    direct = cluster_run(prepare(scenario, 3, quick=True), 3, policies=["seed-004", "spread"])
    planned = sweep_plan.build_plan(load_sweep(sweep, COMMANDS))
    assert {p.group for p in planned.points} == {("seed-004", "spread")}
    stored = _results(store)
    for point in planned.points:
        assert stored[point.key]["energy_kwh"] == direct[point.policy]["energy_kwh"]
        assert stored[point.key]["horizon_s"] == direct[point.policy]["horizon_s"]


# -- interrupted, killed and restarted; a worker killed mid-point; a failing point ---------------

def _noop_sweep(tmp_path: Path, name: str, text: str) -> Path:
    return _write(tmp_path / f"{name}.toml", f'command = "noop"\n{text}')


@pytest.mark.parametrize(("text", "count", "parts"), [
    # 10^8 points ran the dry run for many minutes and tens of GB.
    ("seeds = 100000\n[axes]\nvalue = [" + ", ".join(map(str, range(1000))) + "]\n",
     "100,000,000", "1,000 combinations of the axes x 1 policy x 100,000 seeds"),
    # Every policy of the base scenario: counted once the base is loaded.
    ('seeds = 50000\n[set]\npolicies = ["a", "b", "c"]\n',
     "150,000", "1 combination of the axes x 3 policies x 50,000 seeds"),
])
def test_a_sweep_of_too_many_points_is_refused_before_any_is_built(tmp_path, capsys, text,
                                                                   count, parts):
    sweep = _noop_sweep(tmp_path, "huge", text)
    started = time.monotonic()
    assert cli.main(["sweep", str(sweep), "--store", str(tmp_path / "s.sqlite"),
                     "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"gpusched sweep: {sweep}: the sweep has {count} points ({parts}); at most "
        f"{MAX_POINTS:,} are accepted: split it into smaller sweeps\n")
    assert time.monotonic() - started < 30


def _count(store: Path) -> int:
    try:
        with sqlite3.connect(store, timeout=30) as db:
            return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _start(arguments, tmp_path):
    # SIGINT back to its default in the child (a pytest-xdist worker ignores it); a session of
    # its own so that killing it kills its pool too, as a batch system or a terminal would.
    return subprocess.Popen(
        [sys.executable, "-m", "model.cli", "sweep", *arguments], cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(store: Path, count: int, process, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while _count(store) < count:
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the sweep made no progress"
        time.sleep(0.05)


def test_a_sweep_interrupted_then_killed_then_restarted_ends_with_every_point_once(tmp_path):
    sweep = _noop_sweep(tmp_path, "long", "seeds = 15\n[set]\nsleep_ms = 120\n"
                                          "[axes]\nvalue = [1.0, 2.0]\n")
    store = tmp_path / "long.sqlite"
    arguments = [str(sweep), "--store", str(store), "--workers", "2", "--no-report"]
    try:
        # Ctrl-C: status 130, one line saying what the store holds.
        first = _start([*arguments, "--quiet"], tmp_path)
        _wait_for(store, 4, first)
        first.send_signal(signal.SIGINT)
        assert first.wait(timeout=30) == 130
        line = _one_line(first.stderr.read())
        have = _count(store)
        assert line.startswith(f"gpusched sweep: interrupted; {have} of 30 points are in "
                               f"{store}; the same command computes the other {30 - have}")
        # SIGKILL of the whole sweep (driver and pool), as a lost node or a cancelled job.
        second = _start([*arguments, "--quiet", "--json", str(tmp_path / "second.json")],
                        tmp_path)
        _wait_for(store, have + 4, second)
        os.killpg(second.pid, signal.SIGKILL)
        second.wait(timeout=30)
        before = _count(store)
        assert have + 4 <= before < 30
    finally:
        for process in ("first", "second"):
            running = locals().get(process)
            if running is not None:
                if running.poll() is None:
                    os.killpg(running.pid, signal.SIGKILL)
                    running.wait()
                running.stderr.close()
    out = tmp_path / "third.json"
    assert cli.main(["sweep", *arguments, "--quiet", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert (data["points"], data["from_store"], data["computed"]) == (30, before, 30 - before)
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        keys = [key for (key,) in db.execute("SELECT key FROM results")]
        runs = dict(db.execute("SELECT run, COUNT(*) FROM results GROUP BY run").fetchall())
        members = [key for (key,) in db.execute("SELECT key FROM members")]
    assert sorted(keys) == sorted(members) and len(set(keys)) == 30
    assert len(runs) == 3 and sum(runs.values()) == 30      # each run stored only new points
    assert data["run"] in runs and runs[data["run"]] == 30 - before


def test_a_worker_killed_mid_point_has_the_point_retried(tmp_path):
    markers = tmp_path / "markers"
    sweep = load_sweep(_noop_sweep(tmp_path, "crash", f"seeds = 3\n[set]\nsleep_ms = 100\n"
                                   f'crash = {{ value = 2.0, markers = "{markers}" }}\n'
                                   f"[axes]\nvalue = [1.0, 2.0, 3.0]\n"), COMMANDS)
    planned = sweep_plan.build_plan(sweep)
    pool = sweep_engine.LocalPool(2)
    with Store(tmp_path / "crash.sqlite") as store:
        outcome = run_plan(planned, store, pool, quiet=True)
        assert outcome.computed == 9 and not outcome.failed
        assert pool.reruns >= 3                    # each crash re-ran at least its own point
        members = store.members(outcome.sweep_id)
    assert len(list(markers.iterdir())) == 3       # the three value-2 points did kill a worker
    assert sorted(m["metrics"]["product"] for m in members if m["axes"] == [2.0]) == [2, 4, 6]


def test_a_point_that_raises_is_recorded_and_the_others_are_stored(tmp_path, capsys):
    sweep = _noop_sweep(tmp_path, "fails", "seeds = 2\n[axes]\nfail = [false, true]\n")
    store = tmp_path / "fails.sqlite"
    arguments = ["sweep", str(sweep), "--store", str(store), "--quiet", "--no-report"]
    assert cli.main(arguments) == 1
    err = capsys.readouterr().err
    assert "2 computed" in err and "2 failed" in err
    assert "failed: fail = true, policy a, seed 1: RuntimeError: noop point failed on purpose" \
        in err
    with sqlite3.connect(store) as db:
        (error,) = db.execute("SELECT error FROM failures LIMIT 1").fetchone()
    assert "Traceback" in error and "run_point" in error      # the worker's traceback is kept
    assert cli.main(arguments) == 1                           # tried again, failing again
    assert "0 computed" in capsys.readouterr().err


def test_two_sweeps_write_one_store_at_once(tmp_path):
    # Overlapping points (values 2 and 3 in both): each stored once, by whichever came first.
    store = tmp_path / "shared.sqlite"
    first = _noop_sweep(tmp_path, "first", "seeds = 10\n[set]\nsleep_ms = 10\n"
                                           "[axes]\nvalue = [1.0, 2.0, 3.0]\n")
    second = _noop_sweep(tmp_path, "second", "seeds = 10\n[set]\nsleep_ms = 10\n"
                                             "[axes]\nvalue = [2.0, 3.0, 4.0]\n")
    processes = [_start([str(path), "--store", str(store), "--workers", "1", "--quiet",
                         "--no-report"], tmp_path) for path in (first, second)]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM results").fetchone() == \
            (40, 40)
        assert [name for (name,) in db.execute("SELECT name FROM sweeps ORDER BY name")] == \
            ["first", "second"]


def test_every_model_package_can_be_swept():
    assert set(COMMANDS) == {*cli.SUBCOMMANDS, "noop"}


def test_keys_follow_the_config_the_inputs_and_quick_and_are_shared_across_sweeps(tmp_path):
    trace = _write(tmp_path / "trace.csv", "arrival,channel,priority,waves,vgpr,sgpr,lds,"
                   "duration,independent\n0,0,0,2,4,2,0,50,0\n")
    base = _write(tmp_path / "base.toml", 'trace = "trace.csv"\ncycles = 500\n[[channels]]\n'
                  'priority = 0\n[[policies]]\nname = "one"\n')
    one = _write(tmp_path / "one.toml", f'scenario = "{base}"\ncommand = "dispatch"\n'
                 "[axes]\ncycles = [500, 600]\n")
    other = _write(tmp_path / "other.toml", f'scenario = "{base}"\ncommand = "dispatch"\n'
                   "[axes]\ncycles = [600, 700]\n")
    keys = {point.axes[0]: point.key for point in
            sweep_plan.build_plan(load_sweep(one, COMMANDS)).points}
    shared = {point.axes[0]: point.key for point in
              sweep_plan.build_plan(load_sweep(other, COMMANDS)).points}
    assert keys[600] == shared[600] and keys[500] != keys[600]
    trace.write_text(trace.read_text() + "10,0,0,2,4,2,0,50,0\n")
    changed = {point.axes[0]: point.key for point in
               sweep_plan.build_plan(load_sweep(one, COMMANDS)).points}
    assert changed[600] != keys[600]                    # the trace changed: a new point
    one.write_text(one.read_text().replace("[axes]", "quick = true\n[axes]"))
    assert sweep_plan.build_plan(load_sweep(one, COMMANDS)).points[1].key != changed[600]


# -- the report ---------------------------------------------------------------------------------

def test_the_report_shows_intervals_and_ratios_and_writes_plots_and_csv(tmp_path, capsys,
                                                                      monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)          # 100 columns: stdout is a pipe
    sweep = _noop_sweep(tmp_path, "grid", 'seeds = [1, 2, 4]\n[set]\npolicies = ["a", "b"]\n'
                        "[axes]\nvalue = [1.0, 2.0, 3.0]\nsleep_ms = [0, 1]\n"
                        "[report]\nbaseline = { value = 1.0 }\n")
    store = tmp_path / "grid.sqlite"
    assert cli.main(["sweep", str(sweep), "--store", str(store), "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    csv_path = tmp_path / "grid.csv"
    assert cli.main(["sweep", "report", str(store), "--plots", str(tmp_path / "plots"),
                     "--csv", str(csv_path), "--metric", "product"]) == 0
    printed = capsys.readouterr().out
    # value 3, policy b: product = 3 x seed + 1 over seeds 1, 2, 4; against value 1 (seed + 1)
    mine, theirs = [3 * s + 1 for s in (1, 2, 4)], [s + 1 for s in (1, 2, 4)]
    expected = interval(mine)
    ratio = compare(mine, theirs, higher_is_better=True)
    half, ratio_half = ((entry.high - entry.low) / 2 for entry in (expected, ratio.ratio))
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in printed.splitlines()
            if line.startswith("│")]
    assert ["3", "0", "b", "3", f"{expected.mean:.4g} ± {half:.4g}",
            f"{ratio.ratio.mean:.3f} ± {ratio_half:.3f}", "holds"] in rows, printed
    assert ratio.verdict == "holds"
    assert ["1", "1", "a", "3", "2.333 ± 3.795", "(the baseline)", ""] in rows
    # Tables fit 100 columns; the paths of what was written are printed whole.
    assert max(len(line) for line in printed.splitlines()
               if not line.startswith(("  plot: ", "  csv: "))) <= 100
    plots = sorted(path.name for path in (tmp_path / "plots").iterdir())
    assert plots == ["sweep_grid_product_heat_value_sleep_ms.png",
                     "sweep_grid_product_ratio_heat_value_sleep_ms.png",
                     "sweep_grid_product_ratio_value.png", "sweep_grid_product_value.png"]
    rows = csv_path.read_text().splitlines()
    assert rows[0] == ("sweep,value,sleep_ms,policy,metric,seeds,mean,low,high,baseline,"
                       "ratio_mean,ratio_low,ratio_high,verdict")
    assert len(rows) == 1 + 12
    seeds = (tmp_path / "grid_seeds.csv").read_text().splitlines()
    assert len(seeds) == 1 + 36 and "metric.value" in seeds[0]
    # A missing store, a metric the results do not have: one line, status 2.
    assert cli.main(["sweep", "report", str(tmp_path / "none.sqlite")]) == 2
    assert "no such results store" in _one_line(capsys.readouterr().err)
    assert cli.main(["sweep", "report", str(store), "--metric", "nonesuch", "--no-plots"]) == 2
    assert "'nonesuch' is not a metric of its results (they have: value, seed, " in \
        _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("content", [b"", b"x", b"a,b\n1,2\n", bytes(range(256))],
                         ids=["empty", "one byte", "csv", "binary"])
def test_report_of_a_file_that_is_not_a_store_leaves_it_alone(content, tmp_path, capsys):
    # Issue 31 audit: SQLite took an empty or short file for an empty database, so
    # 'sweep report FILE' wrote its schema over the file and said "holds no sweep".
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    assert cli.main(["sweep", "report", str(path)]) == 2
    assert "not a results store" in _one_line(capsys.readouterr().err)
    assert path.read_bytes() == content


def test_sigterm_of_a_local_pool_sweep_saves_like_ctrl_c(tmp_path):
    # Issue 31: SIGTERM (a batch system's stop, sent to the job's processes) as Ctrl-C: 143,
    # one line, the finished points in the store and the JSON.
    sweep = _noop_sweep(tmp_path, "term", "seeds = 20\n[set]\nsleep_ms = 200\n"
                                          "[axes]\nvalue = [1.0, 2.0]\n")
    store, out = tmp_path / "term.sqlite", tmp_path / "term.json"
    process = _start([str(sweep), "--store", str(store), "--workers", "2", "--no-report",
                      "--quiet", "--json", str(out)], tmp_path)
    try:
        _wait_for(store, 2, process)
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(timeout=30) == 143
        line = _one_line(process.stderr.read())
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stderr.close()
    have = _count(store)
    assert line.startswith(f"gpusched sweep: terminated (SIGTERM); {have} of 40 points"), line
    assert json.loads(out.read_text())["interrupted"] is True


@pytest.mark.parametrize("spec", sorted((ROOT / "configs" / "sweeps").glob("*.toml")),
                         ids=lambda path: path.stem)
def test_every_shipped_sweep_plans_on_the_policies_it_names(spec, tmp_path):
    # decision_pipeline.toml swept policies[4], the seed policy's index until issue 30's
    # baselines were added to the default scenario: then GPGPU-Sim's, which refused the
    # axis, and `make sweep` stopped there. Every shipped sweep must plan (--dry-run), and
    # every policies[i] it sweeps must be one of the policies it runs.
    assert cli.main(["sweep", str(spec), "--store", str(tmp_path / "s.sqlite"),
                     "--dry-run", "--quiet"]) == 0
    document = tomllib.loads(spec.read_text())
    base = tomllib.loads((spec.parent / document["scenario"]).read_text())
    names = [policy.get("name", policy.get("preset")) for policy in base.get("policies", [])]
    for path in document.get("axes", {}):
        if path.startswith("policies["):
            index = int(path[len("policies["):path.index("]")])
            assert names[index] in document.get("policies", names), (path, names[index])
