"""The ``gpusched`` machinery every subcommand shares (model/cli.py, model/config.py,
model/report.py): ``--help``, one-line errors with status 2, ``--policy``, size caps at load
time, Ctrl-C, the JSON envelope, tables that fit 100 columns and a progress bar that moves with
simulated time.

Each subcommand runs on one shipped scenario with ``--quick`` (and a short cycle limit for the
dispatcher), so the whole file takes a few seconds.
"""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from model import cli, report
from model.config import Budget, ConfigError, Fields
from model.dispatch.core import core, reason

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"

#: Per subcommand: a cheap shipped scenario with several policies, and extra options.
CHEAP = {
    "dispatch": (CONFIGS / "dispatch" / "hol_blocking.toml", ["--cycles", "400"]),
    "procsched": (CONFIGS / "procsched" / "heavy_switch.toml", []),
    "tasksched": (CONFIGS / "tasksched" / "weighted_shares.toml", []),
    "hostsched": (CONFIGS / "hostsched" / "transcode.toml", []),
    "cluster": (CONFIGS / "cluster" / "mixed_steady.toml", []),
}

#: Per subcommand: the module attribute each simulation goes through (patched to interrupt).
RUNS = {
    "dispatch": ("model.dispatch.engine", "DispatchSimulator", "run"),
    "procsched": ("model.procsched.cli", None, "simulate"),
    "tasksched": ("model.tasksched.cli", None, "simulate"),
    "hostsched": ("model.hostsched.claims", None, "simulate"),
    "cluster": ("model.cluster.sim", "ClusterSimulation", "run"),
}


def _cheap_args(command, tmp_path, *extra):
    config, options = CHEAP[command]
    return [command, "--config", str(config), "--quick", "--plots", str(tmp_path), *options,
            *extra]


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


# -- --help --------------------------------------------------------------------------------------

COMMON = ["--config", "--policy", "--seed", "--json", "--plots", "--quick", "--quiet"]
OWN = {"dispatch": ["--cycles", "--write-trace", "--debug", "--bench"],
       "procsched": [], "tasksched": [], "hostsched": ["--no-checks"], "cluster": ["--debug"]}


@pytest.mark.parametrize("command", [*cli.SUBCOMMANDS, "sim"])
def test_help_lists_every_option(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for option in COMMON + OWN[cli._CANONICAL[command]]:
        assert re.search(rf"(^|\s){re.escape(option)}\b", text), (option, text)


def test_top_level_help_names_every_subcommand(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    for command in cli.SUBCOMMANDS:
        assert command in text


# -- bad options and bad input: one line, status 2 -------------------------------------------------

@pytest.mark.parametrize("command", list(cli.SUBCOMMANDS))
def test_unknown_policy_names_the_known_ones(command, tmp_path, capsys):
    assert cli.main(_cheap_args(command, tmp_path, "--quiet", "--policy", "nonesuch")) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"gpusched {command}: --policy 'nonesuch' is not a policy")
    assert "(known: " in line


def test_bench_checks_the_policy_too(capsys):
    assert cli.main(["dispatch", "--bench", "--policy", "nonesuch", "--cycles", "10"]) == 2
    assert "(known: prior-art, " in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_cycles_must_be_a_positive_integer(value, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["dispatch", "--cycles", value])
    assert exit_.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert "--cycles" in line and "must be an integer >= 1" in line


def test_an_unknown_option_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["procsched", "--polcy", "seed"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --polcy" in _one_line(capsys.readouterr().err)


def test_an_unknown_key_lists_the_known_keys_of_its_table(tmp_path, capsys):
    path = tmp_path / "typo.toml"
    path.write_text("[seed]\ncache_task = 4\n[[tasks]]\ncount = 1\npriority = 1\n"
                    "work_us = [1, 1]\n")
    assert cli.main(["procsched", "--quiet", "--config", str(path)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"gpusched procsched: {path}: seed.cache_task is not a known field (did you mean "
        f"'cache_tasks'?); seed accepts: cache_tasks, priority, reload, t0_us")


def test_fields_names_the_top_level_and_every_unknown_key():
    fields = Fields({"alpha": 1, "zeta": 2, "omega": 3}, source="f.toml")
    fields.int("alpha")
    with pytest.raises(ConfigError) as error:
        fields.done()
    assert str(error.value) == ("f.toml: omega is not a known field; the top level accepts: "
                                "alpha (also unknown: zeta)")


def test_budget_names_the_field_that_crosses_the_cap():
    fields = Fields({"a": 1}, "groups[3]", source="f.toml")
    budget = Budget(10, "tasks", "too long")
    budget.charge(fields, "count", 6)
    with pytest.raises(ConfigError) as error:
        budget.charge(fields, "count", 5)
    assert str(error.value) == ("f.toml: groups[3].count brings the scenario to 11 tasks; at "
                                "most 10 are accepted: too long")


def _shipped(path: Path, old: str, new: str) -> str:
    """A shipped scenario with ``old`` replaced by ``new`` (which must be in it)."""
    text = path.read_text()
    assert old in text, (path, old)
    return text.replace(old, new, 1)


HUGE = {
    "procsched": ("[[tasks]]\ncount = 1_000_000_000\npriority = 1\nwork_us = [1000, 1000]\n",
                  "tasks[0].count brings the scenario to 1,000,000,000 tasks"),
    "procsched-work": ("[[tasks]]\ncount = 2\npriority = 1\n"
                       "work_us = [1_000_000_000_000, 1_000_000_000_000]\n",
                       "tasks[0].work_us brings the scenario to 500,000,000 slices"),
    "procsched-window": ("[metrics]\nfairness_window_us = 1\n[[tasks]]\ncount = 24\n"
                         "priority = 1\nwork_us = [3_000_000, 3_000_000]\n",
                         "metrics.fairness_window_us of 1 us cuts a run"),
    "hostsched": ("[[threads]]\ncount = 1_000_000_000\n",
                  "threads[0].count brings the scenario to 4,000,000,000 sub-tasks"),
    "tasksched": (_shipped(CONFIGS / "tasksched" / "scarce_type.toml",
                           "count = 240\n", "count = 1_000_000_000\n"),
        "streams[0].count brings the scenario to 1,000,000,000 tasks"),
    "tasksched-beats": (_shipped(CONFIGS / "tasksched" / "scarce_type.toml",
                                 "[scheduler]\n", "[scheduler]\nmax_beats = 1_000_000_000_000\n"),
        "scheduler.max_beats must be an integer in 1..10000000"),
    "cluster": (_shipped(CONFIGS / "cluster" / "mixed_steady.toml",
                         "\njobs = 600\n", "\njobs = 1_000_000_000\n"),
        "workload.jobs must be an integer in 1..1000000, not 1000000000"),
    "cluster-nodes": (_shipped(CONFIGS / "cluster" / "mixed_steady.toml",
                               "count = ", "count = 1_000_000_000 #"),
        "nodes[0].count brings the scenario to 1,000,000,000 nodes"),
}


@pytest.mark.parametrize("case", list(HUGE))
def test_inputs_that_would_hang_are_refused_at_load(case, tmp_path, capsys):
    text, message = HUGE[case]
    command = case.split("-")[0]
    path = tmp_path / "huge.toml"
    path.write_text(text)
    assert cli.main([command, "--quiet", "--config", str(path), "--plots", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"gpusched {command}: {path}: {message}"), line


def test_a_missing_trace_file_is_refused_at_load(tmp_path, capsys):
    text = (CONFIGS / "cluster" / "alibaba_sample.toml").read_text()
    path = tmp_path / "trace.toml"
    path.write_text(text)            # the trace paths are relative to the file: now missing
    assert cli.main(["cluster", "--quiet", "--config", str(path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert re.search(r"trace\.(pods|nodes) names '.*', which is not a file", line), line


def test_an_unwritable_output_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cli.main(_cheap_args("tasksched", tmp_path, "--quiet", "--policy", "fifo-rr",
                                "--plots", str(blocker / "plots"))) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("gpusched tasksched: ") and str(blocker) in line


def test_a_scenario_without_the_chosen_policy_is_skipped_and_counted(tmp_path):
    base = (CONFIGS / "cluster" / "mixed_steady.toml").read_text()
    base = base.split("[[claims]]")[0]         # its claims name policies it would not list
    only_spread = tmp_path / "spread_only.toml"
    only_spread.write_text('policies = ["spread"]\n' + base)
    out = tmp_path / "out.json"
    assert cli.main(["cluster", "--quiet", "--quick", "--config", str(only_spread),
                     "--config", str(CHEAP["cluster"][0]), "--policy", "seed-004",
                     "--json", str(out), "--plots", str(tmp_path)]) == 0
    data = json.loads(out.read_text())
    assert list(data["skipped"]) == [str(only_spread)]
    assert "seed-004" in data["skipped"][str(only_spread)]
    assert [list(entry["policies"]) for entry in data["scenarios"].values()] == [["seed-004"]]


# -- the JSON envelope, the tables, the progress bar ---------------------------------------------

@pytest.mark.parametrize("command", list(cli.SUBCOMMANDS))
def test_envelope_tables_and_progress(command, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    # The trackers themselves are kept (not their id()): a freed tracker's id can be the next
    # one's, which merged two runs into one in a CI run (5 runs counted for 6 policies).
    reported: list[tuple[object, float]] = []
    monkeypatch.setattr(report._Tracker, "__call__",
                        lambda tracker, now: reported.append((tracker, now)))
    out = tmp_path / "out.json"
    config = CHEAP[command][0]
    assert cli.main(_cheap_args(command, tmp_path, "--json", str(out), "--seed", "7")) == 0
    printed = capsys.readouterr().out

    # Tables: inside 100 columns (stdout is not a terminal here), no cell cut short.
    assert printed.strip()
    assert max(len(line) for line in printed.splitlines()) <= report.PIPE_WIDTH
    assert "…" not in printed

    data = json.loads(out.read_text())
    assert list(data)[:11] == ["tool", "version", "git", "command", "command_line", "seed",
                               "options", "inputs", "started", "finished", "interrupted"]
    assert list(data)[-1] == "scenarios"
    assert data["tool"] == "gpusched-hw" and data["version"]
    if (ROOT / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{40}", data["git"]["commit"])
    assert data["command"] == command
    assert data["command_line"][:2] == ["gpusched", command]
    assert data["seed"] == 7 and data["options"]["quick"] is True
    assert data["inputs"][0] == {"path": str(config),
                                 "sha256": hashlib.sha256(config.read_bytes()).hexdigest()}
    assert data["started"] <= data["finished"] and data["interrupted"] is False
    (entry,) = data["scenarios"].values()
    assert entry["file"] == str(config) and entry["complete"] is True
    assert len(entry["policies"]) >= 2

    # The bar moved with simulated time inside the runs, not only once per run.
    runs: dict[int, list[float]] = {}
    for tracker, now in reported:
        runs.setdefault(id(tracker), []).append(now)
    assert len(runs) == len(entry["policies"])
    for times in runs.values():
        assert len(set(times)) > 3 and times == sorted(times)


def test_print_table_splits_a_wide_table_to_fit(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    headers = ["policy", *(f"metric {index}" for index in range(12))]
    report.print_table("wide", headers, [["a long policy name", *range(12)],
                                        ["b", *(1.5 * index for index in range(12))]],
                       caption="the caption")
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "…" not in text
    for header in headers:
        assert header in text
    assert text.count("a long policy name") >= 2 and text.count("the caption") == 1
    assert "wide (1/" in text


def test_print_table_wraps_long_text_rather_than_splitting(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    claim = "a long claim that says in many words what the scenario exists to show"
    report.print_table("claims", ["claim", "ratio", "better"], [[claim, 0.5, "yes"]])
    text = capsys.readouterr().out
    assert "(1/" not in text and "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 60
    assert text.split() and all(word in text for word in claim.split())


# -- Ctrl-C ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", list(cli.SUBCOMMANDS))
def test_ctrl_c_writes_what_finished(command, tmp_path, capsys, monkeypatch):
    module_name, class_name, attribute = RUNS[command]
    owner = __import__(module_name, fromlist=["_"])
    if class_name is not None:
        owner = getattr(owner, class_name)
    original = getattr(owner, attribute)
    calls = []

    def second_run_is_interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, attribute, second_run_is_interrupted)
    out = tmp_path / "out.json"
    assert cli.main(_cheap_args(command, tmp_path, "--quiet", "--json", str(out))) == 130
    line = _one_line(capsys.readouterr().err)
    assert line == (f"gpusched {command}: interrupted; wrote the 1 finished runs to {out}")
    data = json.loads(out.read_text())
    assert data["interrupted"] is True
    (entry,) = data["scenarios"].values()
    assert entry["complete"] is False
    (result,) = entry["policies"].values()
    assert isinstance(result, dict) and len(result) > 5


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_sigint_and_sigterm_stop_a_real_run_at_once(tmp_path, stop, status):
    # SIGTERM (what a batch system sends) saves what finished exactly as Ctrl-C does.
    # A tiny scenario that finishes at once, then one that runs for many seconds.
    tiny = tmp_path / "tiny.toml"
    tiny.write_text("policies = [\"seed\", \"cfs\"]\n[[tasks]]\ncount = 3\npriority = 1\n"
                    "work_us = [1000, 2000]\n")
    long = tmp_path / "long.toml"
    long.write_text("[timeshare]\nslice_us = 100\n[[tasks]]\ncount = 3000\npriority = 1\n"
                    "spacing_us = 10\nwork_us = [100_000, 200_000]\n")
    out = tmp_path / "out.json"
    # SIGINT back to its default in the child: a pytest-xdist worker ignores it, and a
    # Python started with SIGINT ignored keeps ignoring it (as under `command &` in a script).
    process = subprocess.Popen(
        [sys.executable, "-m", "model.cli", "procsched", "--quiet", "--config", str(tiny),
         "--config", str(long), "--json", str(out), "--plots", str(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(8)                # imports, the tiny scenario, well into the long one
        assert process.poll() is None, process.communicate()
        sent = time.monotonic()
        process.send_signal(stop)
        _, err = process.communicate(timeout=30)
        stopped = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == status, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert ("terminated (SIGTERM)" in err) == (stop == signal.SIGTERM), err
    print(f"stopped {stopped:.3f} s after {stop.name}")
    # The long scenario runs for minutes: stopping within seconds means at once (a bound with
    # room for a loaded machine; the printed figure is the measurement).
    assert stopped < 5.0, f"took {stopped:.2f} s to stop"
    data = json.loads(out.read_text())
    assert data["interrupted"] is True
    assert list(data["scenarios"]["tiny"]["policies"]) == ["seed", "cfs"]


@pytest.mark.parametrize("command", ["dispatch", "procsched", "tasksched", "hostsched",
                                     "cluster"])
def test_an_unwritable_output_is_refused_before_the_run(command, tmp_path, capsys):
    # Issue 31: "--json /etc/passwd/x.json" failed only after the whole run. Every output
    # path is checked first: a file where a folder must be, a folder where a file must be.
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for option, path, why in (("--json", blocker / "out.json", "is not a folder"),
                              ("--json", tmp_path, "is a folder, not a file"),
                              ("--plots", blocker, "is not a folder")):
        assert cli.main(_cheap_args(command, tmp_path, "--quiet", option, str(path))) == 2
        line = _one_line(capsys.readouterr().err)
        assert option in line and why in line, line
        # Refused before any run: nothing was simulated, so no plot was written.
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


# -- the cluster energy plot ---------------------------------------------------------------------

def test_cluster_energy_bars_show_every_part_in_colours_no_policy_uses(tmp_path, monkeypatch):
    import matplotlib.colors

    from model.cluster import cli as cluster_cli
    from model.cluster.config import load_scenario

    captured = []
    monkeypatch.setattr(cluster_cli, "save_figure", lambda fig, path: captured.append(fig))
    prepared = cluster_cli.prepare(load_scenario(CHEAP["cluster"][0]), 1, quick=True)
    results = cluster_cli.run_scenario(prepared, 1)
    assert min(result["idle_kwh"] for result in results.values()) == 0   # the invisible part
    cluster_cli._plot_timed(prepared, results, tmp_path / "plot.png")
    (fig,) = captured
    series_axis, energy_axis = fig.axes
    lines = {matplotlib.colors.to_hex(line.get_color()) for line in series_axis.get_lines()}
    bars = {matplotlib.colors.to_hex(patch.get_facecolor()) for patch in energy_axis.patches}
    assert len(lines) == len(results) and not lines & bars
    labels = [text.get_text() for text in energy_axis.texts]
    assert len(labels) == len(results)
    for label, result in zip(labels, results.values(), strict=True):
        for part in ("busy", "idle", "standby"):
            assert f"{part} {result[f'{part}_kwh']:.3g}" in label


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()             # the IHDR chunk: width, height, big-endian
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_a_quick_run_writes_quick_pngs_and_only_it(tmp_path, monkeypatch):
    # A 2 x 1 inch figure: 220 x 110 pixels at 110 dpi; 80 x 40 at QUICK_DPI (40) in a
    # --quick run, whose setting ends with the command.
    import importlib

    def run(args):
        fig, _ = report.figure(figsize=(2, 1))
        report.save_figure(fig, tmp_path / f"quick_{args.quick}.png")
        return 0

    monkeypatch.setattr(importlib.import_module("model.procsched.cli"), "run", run)
    for quick in (["--quick"], []):
        assert cli.main(["procsched", "--quiet", "--plots", str(tmp_path), *quick]) == 0
    assert _png_size(tmp_path / "quick_True.png") == (80, 40)
    assert _png_size(tmp_path / "quick_False.png") == (220, 110)
    fig, _ = report.figure(figsize=(2, 1))
    assert _png_size(report.save_figure(fig, tmp_path / "after.png")) == (220, 110)


@pytest.mark.parametrize("columns", [100, 80])
def test_print_table_never_breaks_a_word(columns, capsys, monkeypatch):
    # The claims table as the dispatcher prints it: several wrapping text columns, one with a
    # long metric path. Before, rich shrank the widest columns below their longest word at
    # 100 columns and folded "steady.throughput" into "steady.throu" + "ghput".
    from model.dispatch.claims import CLAIM_HEADERS

    monkeypatch.setenv("COLUMNS", str(columns))
    claim = ("wave imbalance: embodiment 8's rotating split vs the unrotated split table "
             "(steady.throughput, higher)")
    rows = [[str(number), claim, "shared, 0.9 x capacity (134/kcyc)",
             "seed\n5.931 [-2.841, 14.7]", "prior-art\n4.125 [-2.72, 10.97]",
             "x 1.879 [-0.5377, 4.297]", "cannot tell"] for number in (1, 2)]
    report.print_table("The seed's claims over seeds 1..5", CLAIM_HEADERS, rows)
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= columns
    assert "…" not in text
    words = {word for row in rows for cell in row for word in cell.split()}
    words |= {word for header in CLAIM_HEADERS for word in header.split()}
    printed = set(re.findall(r"[^\s│┃┏┓┗┛┡┩━─┳╇┻┴┬┼╋]+", text))
    assert words <= printed, sorted(words - printed)


def test_version_is_the_one_the_json_records(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    printed = capsys.readouterr().out.strip()
    out = tmp_path / "out.json"
    assert cli.main(_cheap_args("tasksched", tmp_path, "--quiet", "--json", str(out))) == 0
    version = json.loads(out.read_text())["version"]
    assert version and printed == f"gpusched {version}"


# -- gpusched dispatch --policy / --claims, and the Python API it shares -------------------------

def _dispatch_json(tmp_path, *extra) -> dict:
    out = tmp_path / "out.json"
    args = ["dispatch", "--config", str(CHEAP["dispatch"][0]), "--cycles", "400", "--quiet",
            "--plots", str(tmp_path), "--json", str(out), "--seeds", "2", *extra]
    assert cli.main(args) == 0
    return json.loads(out.read_text())


def test_one_policy_runs_without_the_claims_unless_asked(tmp_path, capsys):
    alone = _dispatch_json(tmp_path, "--policy", "emb1")
    printed = capsys.readouterr().out
    assert "claims" not in alone and "Capacity" not in printed and "claims over" not in printed
    assert "claims were not measured (--policy alone); --claims measures them" in printed
    (entry,) = alone["scenarios"].values()
    assert list(entry["policies"]) == ["emb1"]
    asked = _dispatch_json(tmp_path, "--policy", "emb1", "--claims")
    printed = capsys.readouterr().out
    assert asked["claims"]["rows"] and "Capacity" in printed and "claims over" in printed
    assert asked["options"]["claims"] is True and "claims" not in alone["options"]
    every = _dispatch_json(tmp_path)              # no --policy: the claims, as make sim runs
    assert every["claims"]["rows"] == asked["claims"]["rows"]
    assert "claims" not in _dispatch_json(tmp_path, "--no-claims")


@pytest.mark.parametrize("command", ["procsched", "tasksched", "hostsched", "cluster"])
def test_one_policy_of_every_command_runs_without_the_claims_unless_asked(command, tmp_path,
                                                                          capsys):
    # Issue 26: --policy NAME alone runs that policy's table only, in every command; the
    # claims (and hostsched's sweeps over seeds) run with --claims, and without --policy.
    config, _ = CHEAP[command]
    policy = {"procsched": "seed", "tasksched": "delay-factor",
              "hostsched": "seed003-arrival", "cluster": "seed-004"}[command]
    out = tmp_path / "out.json"
    base = [command, "--config", str(config), "--quick", "--quiet", "--plots", str(tmp_path),
            "--json", str(out), "--seeds", "2"]
    assert cli.main([*base, "--policy", policy]) == 0
    alone, printed = json.loads(out.read_text()), capsys.readouterr().out
    assert not alone["claims"] and "claims over" not in printed
    assert "claims were not measured (--policy alone); --claims measures them" in printed
    (entry,) = alone["scenarios"].values()
    assert list(entry["policies"]) == [policy]
    assert cli.main([*base, "--policy", policy, "--claims"]) == 0
    asked = json.loads(out.read_text())
    assert asked["options"]["claims"] is True and "claims" not in alone["options"]
    assert cli.main([*base, "--no-claims"]) == 0
    assert not json.loads(out.read_text())["claims"]


def test_claims_and_no_claims_together_are_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(_cheap_args("dispatch", tmp_path, "--claims", "--no-claims"))
    assert exit_.value.code == 2
    assert "--claims" in _one_line(capsys.readouterr().err)


def test_the_api_gives_the_command_lines_numbers(tmp_path):
    import model.dispatch as dispatch

    data = _dispatch_json(tmp_path, "--policy", "emb1", "--policy", "prior-art", "--seed", "3")
    (entry,) = data["scenarios"].values()
    result = dispatch.run(CHEAP["dispatch"][0], ["prior-art", "emb1"], seed=3, cycles=400)
    assert result.claims is None and list(result.policies) == ["prior-art", "emb1"]
    strip = lambda runs: {p: {k: v for k, v in r.items() if k != "seconds"}  # noqa: E731
                          for p, r in runs.items()}
    assert strip(json.loads(json.dumps(result.policies))) == strip(entry["policies"])
    assert result.notes == entry["notes"]
    summary = result.summary
    assert list(summary) == ["prior-art", "emb1"]
    assert summary["prior-art"]["done"] == entry["policies"]["prior-art"]["workgroups_completed"]
    assert summary["emb1"]["wait p99"] == entry["policies"]["emb1"]["wait"]["p99"]
    text = str(summary)
    assert "emb1" in text and report.format_cell(summary["emb1"]["WG/kcyc"]) in text
    # The scenario's own settings unless overridden: its warm-up, scaled to the 400 cycles.
    assert result.settings == {"seed": 3, "cycles": 400, "warmup": 2000 * 400 // 20000,
                               "execution": "fixed"}


SCENARIO = CHEAP["dispatch"][0]


@pytest.mark.parametrize(("arguments", "keywords", "error", "message"), [
    ((42,), {}, TypeError, "scenario_or_path must be a Scenario or the path"),
    ((SCENARIO, "nonesuch"), {}, ValueError, "policy 'nonesuch' is not a policy"),
    ((SCENARIO, 7), {}, TypeError, "policy must be a policy name"),
    ((SCENARIO, "seed"), {"seed": "1"}, TypeError, "seed must be an integer"),
    ((SCENARIO, "seed"), {"cycles": 0}, ValueError, "cycles must be an integer >= 1"),
    ((SCENARIO, "seed"), {"execution": "slow"}, ValueError,
     "execution must be one of fixed, shared"),
    ((SCENARIO, "seed"), {"cycles": 400, "warmup": 400}, ValueError,
     "warmup must be an integer in 0..399"),
    ((SCENARIO, "seed"), {"claims": "yes"}, TypeError, "claims must be True, False or None"),
    ((SCENARIO, "seed"), {"channels": []}, TypeError, "channels must be a non-empty list"),
    ((SCENARIO, "seed"), {"claim_seeds": 1}, ValueError, "claim_seeds must be an integer >= 2"),
])
def test_the_api_names_a_bad_argument(arguments, keywords, error, message):
    import model.dispatch as dispatch

    with pytest.raises(error) as raised:
        dispatch.run(*arguments, **keywords)
    assert message in str(raised.value)


# -- make help -----------------------------------------------------------------------------------

def phony_targets(makefile: str) -> list[str]:
    """The targets of every ``.PHONY:`` line of ``makefile`` (continuation lines joined)."""
    joined = makefile.replace("\\\n", " ")
    return [target for line in joined.splitlines() if line.startswith(".PHONY:")
            for target in line.partition(":")[2].split()]


def test_make_help_lists_every_phony_target():
    make = subprocess.run(["make", "--no-print-directory", "help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert make.returncode == 0, make.stderr
    listed = set(re.findall(r"^make ([\w-]+)", make.stdout, flags=re.MULTILINE))
    targets = phony_targets((ROOT / "Makefile").read_text())
    assert {"sim", "test", "help", "clean"} <= set(targets)     # the reader found them
    missing = [target for target in targets if target not in listed]
    assert not missing, f"make help does not list {', '.join(missing)}"


@pytest.mark.parametrize(("text", "field"), [
    ("cycles = 1_000_000_000_000_000\n[[channels]]\narrival = 0.5\n", "cycles"),
    ("cycles = 1_000_000_000\nsample_interval = 1000\n[[channels]]\narrival = 0.5\n"
     "count = 1_000_000_000\n", "channels[0].arrival"),
])
def test_a_dispatch_run_of_hours_is_refused_at_load(text, field, tmp_path, capsys):
    # Issue 31: `cycles = 10**15` was accepted and ran for 502 s; the series' samples and the
    # generator's per-cycle draws are now capped when the file is read.
    config = tmp_path / "big.toml"
    config.write_text(text)
    assert cli.main(["dispatch", "--config", str(config), "--no-claims", "--quiet",
                     "--plots", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{config}: {field}" in line and "at most" in line, line


def test_config_with_kernel_trace_is_refused_in_one_line(tmp_path, capsys):
    # Issue 31: --config was silently ignored beside --kernel-trace.
    trace = ROOT / "tests" / "data" / "kernel-traces" / "gtx1080ti_nvprof_ms.csv"
    assert cli.main(["dispatch", "--config", str(CHEAP["dispatch"][0]), "--kernel-trace",
                     str(trace), "--preset", "pascal-sm", "--no-claims", "--quiet",
                     "--plots", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "--config and --kernel-trace cannot be combined" in line, line


@pytest.mark.parametrize("command", list(CHEAP))
@pytest.mark.parametrize(("content", "message"), [
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "a binary file (byte"),
    ('name = "caf\u00e9"\n'.encode("latin-1"), "not UTF-8 text (byte 11"),
    ('name = "x"\n'.encode("utf-16"), "UTF-16 text, not UTF-8 (byte 0"),
], ids=["binary", "latin-1", "utf-16"])
def test_a_binary_or_wrongly_encoded_config_is_one_line(command, content, message, tmp_path,
                                                        capsys):
    # Issue 31: a binary config file gave a 26-line UnicodeDecodeError traceback.
    config = tmp_path / "bad.toml"
    config.write_bytes(content)
    assert cli.main([command, "--config", str(config), "--quiet", "--no-claims",
                     "--plots", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{config}: {message}" in line, line


def test_dispatch_bench_times_both_engines_on_every_execution_model(capsys):
    # make bench: both engines per policy and execution model, their results checked equal
    # (a difference is an error), MIAOW's pooled shared-issue model compiled too.
    if core is None:
        pytest.skip(reason or "compiled core not built")
    assert cli.main(["dispatch", "--bench", "--policy", "miaow", "--policy", "emb1",
                     "--cycles", "400"]) == 0
    out = capsys.readouterr().out
    assert "the fastest of 5" in out and "Python engine only" not in out
    assert len(re.findall(r"\d+x\b", out)) == 4           # 2 policies x 2 execution models
