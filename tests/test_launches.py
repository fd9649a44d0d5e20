"""Per-kernel results of a kernel-trace run (issue 31, item 4): model.dispatch.launches, the
``--launches`` CSV, the timeline panel and a claims panel whose labels do not overlap."""

import csv
from dataclasses import replace
from pathlib import Path

import pytest

from model.cli import main
from model.dispatch import plots
from model.dispatch.api import run_scenario
from model.dispatch.config import Claim, load_scenario
from model.dispatch.kernels import prepare, trace_scenario
from model.dispatch.launches import (
    COLUMNS,
    LaunchCollector,
    LaunchTally,
    differing_kernels,
    launch_rows,
)

DATA = Path(__file__).parent / "data" / "nvprof-magus"
LUD = DATA / "traces_rodinia_lud.csv"          # 46 launches, 1,376 WGs, in order on a stream
CONFIGS = Path(__file__).parent.parent / "configs" / "dispatch"


def _run(trace, policies, cycles):
    scenario = trace_scenario(trace, "pascal-sm", cycles=cycles)
    scenario, converted = prepare(scenario, cycles)
    events = {}
    results = run_scenario(scenario, policies=policies, events=events)
    return scenario, converted, results, events


@pytest.fixture(scope="module")
def lud():
    return _run(LUD, ["seed", "miaow"], 5_000_000)


def test_every_launch_has_a_row_with_consistent_times(lud):
    scenario, converted, results, events = lud
    spans = converted.launches
    assert len(spans) == 46 and sum(s.workgroups for s in spans) == 1376
    for policy in ("seed", "miaow"):
        rows = launch_rows(spans, events[policy], policy)
        assert [row["launch"] for row in rows] == [s.index for s in spans]
        by_channel = {}
        for row in rows:
            assert row["unfinished"] == 0
            assert row["start"] >= row["arrival"] and row["finish"] > row["start"]
            assert row["duration"] == row["finish"] - row["start"]
            assert row["slowdown"] == pytest.approx(row["duration"] / row["measured_cycles"])
            assert row["delay"] == row["start"] - row["arrival"]
            # In order on a stream: a launch starts after the one before it finished.
            before = by_channel.get(row["channel"])
            if before is not None:
                assert row["start"] >= before["finish"]
            by_channel[row["channel"]] = row
        # The release of the last WG is the run's makespan.
        assert max(row["finish"] for row in rows) == results[policy]["makespan"]


def test_a_launch_alone_on_the_gpu_takes_its_measured_time(lud):
    # The conversion sizes WGs so that a GPU kept full reproduces the measured duration:
    # lud_diagonal (one WG) and lud_perimeter (few WGs, one round) run in their measured time
    # to within the dispatch of its WGs (one per cycle) and the circuit's latency.
    _, converted, _, events = lud
    rows = launch_rows(converted.launches, events["seed"], "seed")
    small = [row for row in rows if row["workgroups"] <= 28]
    assert small
    for row in small:
        assert abs(row["duration"] - row["measured_cycles"]) <= row["workgroups"] + 10, row


def test_unfinished_launches_are_counted_not_timed():
    scenario, converted, _, events = _run(LUD, ["seed"], 150_000)
    rows = launch_rows(converted.launches, events["seed"], "seed")
    cut = [row for row in rows if row["unfinished"]]
    assert cut, "150,000 cycles end inside the third launch"
    for row in cut:
        assert row["finish"] is None and row["duration"] is None and row["slowdown"] is None


def test_a_tally_kept_during_the_run_gives_the_rows_of_the_event_log(lud):
    # Without --events the command line keeps no event row: a LaunchTally is told each
    # event as it happens. Its rows and the run's results are those of the event log.
    scenario, converted, results, events = lud
    collect = LaunchCollector(converted.launches, {})
    tallied = run_scenario(scenario, policies=["seed", "miaow"], events=collect.events,
                           event_sink=collect.sink,
                           done=lambda policy, result: collect(policy))
    assert collect.events == {}, "the tallies are dropped once read"
    for policy in ("seed", "miaow"):
        assert collect.by_policy[policy] == launch_rows(converted.launches, events[policy],
                                                        policy)
        assert {**tallied[policy], "seconds": 0} == {**results[policy], "seconds": 0}
    # Split parts count for their parent; a part's release does not release the parent.
    spans = converted.launches
    tally = LaunchTally(spans)
    first = spans[1].first_wg

    class Part:
        def __init__(self, ident, parent=None):
            self.id, self.parent = ident, parent

    tally.record(7, "dispatch", Part(10**9, parent=first), 0, None, None)
    tally.record(9, "release", Part(10**9, parent=first), 0, None, None)
    tally.record(3, "arrive", Part(first))
    row = tally.rows("seed")[1]
    assert (row["start"], row["unfinished"]) == (7, spans[1].workgroups)
    with pytest.raises(ValueError, match="no launch made"):
        tally.record(1, "dispatch", Part(spans[-1].first_wg + spans[-1].workgroups))


def test_events_of_another_workload_are_refused(lud):
    _, converted, _, events = lud
    with pytest.raises(ValueError, match="no launch made"):
        launch_rows(converted.launches[:2], events["seed"], "seed")


def test_table_of_differing_kernels_and_the_tie_note(lud):
    _, converted, _, events = lud
    by_policy = {p: launch_rows(converted.launches, events[p], p) for p in ("seed", "miaow")}
    headers, rows, note = differing_kernels(by_policy)
    assert headers[3:] == ["lowest", "highest", "seed", "spread", "unfinished"]
    spreads = [float(row[6]) for row in rows]
    assert spreads == sorted(spreads, reverse=True)
    tied = {"a": by_policy["seed"], "b": [dict(row, policy="b") for row in by_policy["seed"]]}
    assert "same time" in differing_kernels(tied)[2]
    assert differing_kernels(by_policy)[2] == "" or spreads[0] == 0.0


def test_cli_writes_the_launches_csv_and_checks_its_path(tmp_path, capsys):
    out = tmp_path / "lud.launches.csv"
    status = main(["dispatch", "--kernel-trace", str(LUD), "--preset", "pascal-sm",
                   "--policy", "seed", "--policy", "prior-art", "--cycles", "5000000",
                   "--quiet", "--plots", str(tmp_path), "--launches", str(out)])
    assert status == 0
    with out.open() as file:
        rows = list(csv.DictReader(file))
    assert list(rows[0]) == COLUMNS
    assert len(rows) == 2 * 46
    assert {row["policy"] for row in rows} == {"seed", "prior-art"}
    # The table's title wraps at the terminal's width (80 columns in CI).
    assert "differs most between policies" in " ".join(capsys.readouterr().out.split())
    assert (tmp_path / "dispatch_traces_rodinia_lud.png").is_file()
    # Default: beside --json.
    status = main(["dispatch", "--kernel-trace", str(LUD), "--preset", "pascal-sm",
                   "--policy", "seed", "--cycles", "5000000", "--quiet", "--plots",
                   str(tmp_path), "--json", str(tmp_path / "run.json")])
    assert status == 0 and (tmp_path / "run.launches.csv").is_file()
    # A path that cannot be written is refused before anything runs.
    status = main(["dispatch", "--kernel-trace", str(LUD), "--preset", "pascal-sm",
                   "--policy", "seed", "--quiet", "--plots", str(tmp_path), "--launches",
                   str(tmp_path)])
    assert status == 2
    assert "--launches" in capsys.readouterr().err


def _capture(monkeypatch):
    figures = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or path)
    return figures


def test_trace_plot_shows_the_timeline_instead_of_the_imbalance_panels(lud, monkeypatch,
                                                                       tmp_path):
    scenario, converted, results, events = lud
    by_policy = {p: launch_rows(converted.launches, events[p], p) for p in results}
    figures = _capture(monkeypatch)
    plots.plot_scenario(scenario, results, tmp_path / "x.png", launches=by_policy)
    titles = [axis.get_title() for axis in figures[0].axes]
    assert any(title.startswith("kernel launches over time") for title in titles)
    assert not any("imbalance" in title for title in titles)
    timeline = next(a for a in figures[0].axes if a.get_title().startswith("kernel launches"))
    labels = [tick.get_text() for tick in timeline.get_yticklabels()]
    assert labels[0].startswith("measured") and any(x.startswith("seed") for x in labels)
    figures.clear()
    plots.plot_scenario(scenario, results, tmp_path / "y.png")
    assert any("imbalance" in axis.get_title() for axis in figures[0].axes)


def _overlaps(boxes):
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a[1].overlaps(b[1])]


def test_claims_panel_labels_do_not_overlap(monkeypatch, tmp_path):
    # Six claims on six metrics against two baselines, five policies: every label of the
    # claims panel (claim names, policy names, the value at each bar) has its own place.
    scenario = load_scenario(CONFIGS / "default.toml")
    metrics = ["steady.wait.mean", "wait.p99", "wait.max", "throughput", "peu_imbalance",
               "fragmentation"]
    claims = tuple(Claim(text=m, metric=m, policy="seed", baseline=base,
                         higher_is_better=m == "throughput")
                   for m in metrics for base in ("prior-art",))
    scenario = replace(scenario, claims=claims)
    known = [p.name for p in scenario.policies]
    names = ["prior-art", "seed"] + [n for n in known if n not in ("prior-art", "seed")][:3]
    assert set(names) <= set(known)
    results = run_scenario(scenario, policies=names, cycles=1500)
    figures = _capture(monkeypatch)
    plots.plot_scenario(scenario, results, tmp_path / "c.png")
    fig = figures[0]
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()
    axis = next(a for a in fig.axes if a.get_title().startswith("the claims"))
    texts = [t for t in axis.texts + axis.get_yticklabels() + axis.get_xticklabels()
             if t.get_text() and t.get_visible()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    assert len(boxes) >= len(metrics) * (len(names) - 1)
    assert not _overlaps(boxes), _overlaps(boxes)[:3]


def test_bench_times_a_whole_trace_replay(capsys):
    # make bench's trace form: the replay of the trace, whole, timed per policy in CPU
    # seconds with WGs per second and the process's peak memory.
    status = main(["dispatch", "--bench", "--kernel-trace", str(LUD), "--preset", "pascal-sm",
                   "--policy", "seed", "--policy", "miaow"])
    assert status == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "traces_rodinia_lud.csv on pascal-sm" in out and "WGs/s" in out
    assert out.count(" 1376 ") == 2, "both policies ran all 1,376 WGs of the 46 launches"
    assert "peak memory of the process:" in out


@pytest.mark.parametrize("blocked, options", [
    ("run.launches.csv", ["--json", "run.json"]),                 # beside --json
    ("launches_traces_rodinia_lud.csv", []),                       # in --plots
    ("dispatch_traces_rodinia_lud.png", []),                       # the plot
    ("ev.traces_rodinia_lud.seed.csv", ["--events", "ev.csv"]),    # one run's event log
])
def test_files_named_after_the_options_are_checked_before_the_run(blocked, options, tmp_path,
                                                                  capsys):
    # Issue 31 audit: the options' own paths were checked first, the files named after them
    # only when written, after the whole run (a folder or read-only file of that name).
    (tmp_path / blocked).mkdir()
    options = [str(tmp_path / option) if "." in option else option for option in options]
    status = main(["dispatch", "--kernel-trace", str(LUD), "--preset", "pascal-sm",
                   "--policy", "seed", "--policy", "prior-art", "--quiet", "--plots",
                   str(tmp_path), *options])
    captured = capsys.readouterr()
    assert status == 2
    assert f"{tmp_path / blocked}: is a folder, not a file (checked before the run)" in \
        captured.err, captured.err
    assert "WG/kcyc" not in captured.out and not (tmp_path / "run.json").exists()


def test_one_policy_alone_has_no_tie_note(lud):
    # Issue 31 audit: `--policy seed` alone printed "every policy gives every launch the same
    # time": with one policy there is nothing to tie.
    _, converted, _, events = lud
    alone = {"seed": launch_rows(converted.launches, events["seed"], "seed")}
    assert differing_kernels(alone)[2] == ""
