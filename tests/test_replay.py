"""Whole-trace replay and a cost per event (issue 31 item 3, issue 32 item 1).

* A kernel trace runs to its last launch's completion by default; ``--cycles`` caps it and
  the output says what it left out; ``--compress-gaps`` shortens idle host gaps and says what
  it removed; several traces run as concurrent channels with an offset, priority and channel.
* The series, windows and power histories are advanced in closed form across skipped spans:
  the result equals the per-sample reference (the former implementation, kept here) on random
  configurations, and the work a run does does not grow with its idle cycles.
"""

import gc
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from model.cli import main as gpusched
from model.dispatch import metrics as metrics_module
from model.dispatch.api import run_scenario
from model.dispatch.config import PRESETS, LaunchWorkload, WorkGroup
from model.dispatch.engine import DispatchSimulator
from model.dispatch.kernels import (
    ReplaySpec,
    compress_gaps,
    parse_replay_spec,
    replay_scenario,
)
from model.stats import coefficient_of_variation

sys.path.insert(0, str(Path(__file__).parent))
import synthetic_traces  # noqa: E402
import test_dispatch_exact  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "nvprof-magus"


@pytest.fixture(scope="module")
def sparse(tmp_path_factory) -> Path:
    """9 one-block launches over about 17 M cycles on a GTX 1080 Ti (pascal-sm)."""
    return synthetic_traces.write_sparse(tmp_path_factory.mktemp("traces") / "sparse.csv")


def _dispatch(capsys, *argv) -> tuple[int, str]:
    status = gpusched(["dispatch", "--quiet", "--policy", "seed", *argv])
    return status, capsys.readouterr().out


# -- whole-trace replay ----------------------------------------------------------------------


def test_a_trace_runs_whole_without_any_option(sparse, tmp_path, capsys):
    """The 17 M-cycle trace completes all 9 WGs (the former default cut it at 200,000
    cycles: 1 launch made, 8 left out without a word on the cycles)."""
    out = tmp_path / "r.json"
    status, text = _dispatch(capsys, "--kernel-trace", str(sparse), "--preset", "pascal-sm",
                             "--json", str(out), "--plots", str(tmp_path))
    assert status == 0
    result = next(iter(json.loads(out.read_text())["scenarios"].values()))["policies"]["seed"]
    assert result["workgroups_submitted"] == 9 and result["workgroups_completed"] == 9
    assert result["workgroups_after_end"] == 0 and result["workgroups_unfinished"] == 0
    assert result["cycles"] > 17_000_000 and result["processed_cycles"] < 100
    assert "whole replay: 9 launches" in text


def test_a_cap_says_how_many_launches_and_cycles_it_left_out(sparse, capsys):
    status, text = _dispatch(capsys, "--kernel-trace", str(sparse), "--preset", "pascal-sm",
                             "--cycles", "5000000", "--no-claims", "--plots", "/tmp")
    assert status == 0
    # Launches every 2,126,... cycles: those at 0, 2.1 M and 4.3 M are made.
    assert "--cycles 5,000,000 leaves out 6 launch(es) (6 WGs) and" in text
    assert "without --cycles the trace runs whole" in text


def test_compress_gaps_by_hand():
    # (arrival, measured): busy until 10, gap 90 -> 20 (70 removed); then 120 -> 50 (shifted
    # arrival), busy until old 130; next at 135: gap 5, kept, busy until 140; next at 1,000:
    # gap 860 -> 20 (840 removed).
    shifted, gaps, removed = compress_gaps([(0, 10), (100, 30), (135, 5), (1000, 1)], 20)
    assert shifted == {0: 0, 100: 30, 135: 65, 1000: 90}
    assert (gaps, removed) == (2, 70 + 840)
    # Overlapping launches (another stream) are busy time, not a gap.
    shifted, gaps, removed = compress_gaps([(0, 500), (100, 10), (400, 10)], 50)
    assert shifted == {0: 0, 100: 100, 400: 400} and gaps == removed == 0


def test_compress_gaps_shortens_the_run_and_says_what_it_removed(sparse, capsys):
    scenario, report = replay_scenario([sparse], "pascal-sm", compress=10_000)
    arrivals = sorted({wg.arrival for wg in scenario.workgroups})
    assert arrivals[0] == 0 and all(b - a <= 10_000 + 7_200 for a, b in
                                    zip(arrivals, arrivals[1:], strict=False))
    (note,) = [n for n in report.notes if "--compress-gaps" in n]
    assert "8 idle host gap(s) above 10,000 cycles" in note
    result = run_scenario(scenario, policies=["seed"])["seed"]
    assert result["workgroups_completed"] == 9 and result["cycles"] < 200_000


def test_several_traces_run_as_concurrent_channels(sparse, tmp_path):
    second = synthetic_traces.write_sparse(tmp_path / "other.csv", launches=3, span_ms=0.01)
    specs = [parse_replay_spec(f"{sparse}:priority=1"),
             parse_replay_spec(f"{second}:offset=1000,channel=4,priority=2")]
    assert specs[1] == ReplaySpec(second, offset=1000, priority=2, channel=4)
    scenario, report = replay_scenario(specs, "pascal-sm", cycles=2_000_000)
    by_channel = {}
    for wg in scenario.workgroups:
        by_channel.setdefault(wg.channel, []).append(wg)
    assert sorted(by_channel) == [0, 4]
    assert {wg.priority for wg in by_channel[0]} == {1}
    assert {wg.priority for wg in by_channel[4]} == {2}
    assert min(wg.arrival for wg in by_channel[4]) == 1000
    assert [wg.id for wg in scenario.workgroups] == list(range(len(scenario.workgroups)))
    assert [wg.arrival for wg in scenario.workgroups] == sorted(
        wg.arrival for wg in scenario.workgroups)
    # In order per channel: every launch after the first on its channel is a barrier.
    assert sum(wg.barrier for wg in by_channel[4]) == 2
    assert any("2 traces as 2 concurrent channel(s)" in note for note in report.notes)
    result = run_scenario(scenario, policies=["seed"])["seed"]
    assert result["wait"]["per_channel"]["4"]["count"] == 3


def test_a_launch_workload_reads_as_the_list_of_its_workgroups(tmp_path):
    """The lazy workload a replay makes (one template per launch) is, read in every way, the
    list of WGs the conversion used to hold; each read makes fresh objects."""
    lud, pathfinder = DATA / "traces_rodinia_lud.csv", DATA / "traces_rodinia_pathfinder.csv"
    scenario, report = replay_scenario([lud, pathfinder], "pascal-sm")
    lazy = scenario.workgroups
    assert isinstance(lazy, LaunchWorkload) and report.workgroups is lazy
    listed = list(lazy)
    assert len(lazy) == len(listed) == 1376 + 4630
    assert [wg.id for wg in listed] == list(range(len(listed)))
    assert lazy.channel_count == 1 + max(wg.channel for wg in listed) == 4
    for index in (0, 1, 45, len(listed) - 1, -1, -len(listed)):
        assert lazy[index] == listed[index]
    assert lazy[10:400:7] == listed[10:400:7] and lazy[-5:] == listed[-5:]
    assert lazy == listed and lazy == scenario.workload(copy=True)
    for span in report.launches:      # a launch's WGs: its span, the first a barrier or not
        wgs = listed[span.first_wg:span.first_wg + span.workgroups]
        assert {wg.arrival for wg in wgs} == {span.arrival}
        assert not any(wg.barrier for wg in wgs[1:])
    assert sum(wg.barrier for wg in listed) == len(report.launches) - 4
    lazy[3].dispatched = 7
    assert lazy[3].dispatched is None and lazy[3] is not lazy[3]
    with pytest.raises(IndexError):
        lazy[len(listed)]
    with pytest.raises(ValueError, match="appended in arrival order"):
        lazy.append(replace(listed[0], arrival=0), 3)


def test_a_traces_policies_on_two_processes_give_the_serial_results(tmp_path, capsys):
    """``--jobs 2`` spreads a kernel trace's policies over two processes: the JSON results
    (but the wall-clock seconds) and the per-launch CSV are those of ``--jobs 1``."""
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}.json"
        status = gpusched(["dispatch", "--quiet", "--kernel-trace",
                           str(DATA / "traces_rodinia_lud.csv"), "--preset", "pascal-sm",
                           "--policy", "seed", "--policy", "gpgpusim", "--policy", "miaow",
                           "--jobs", jobs, "--json", str(out), "--plots", str(tmp_path)])
        assert status == 0
        capsys.readouterr()
        (scenario,) = json.loads(out.read_text())["scenarios"].values()
        for result in scenario["policies"].values():
            del result["seconds"]
        outputs.append((scenario["policies"], out.with_suffix(".launches.csv").read_text()))
    (serial, serial_csv), (parallel, parallel_csv) = outputs
    assert list(parallel) == list(serial) == ["miaow", "gpgpusim", "seed"]
    assert parallel == serial and parallel_csv == serial_csv
    assert len(serial_csv.splitlines()) == 1 + 3 * 46


def test_a_workload_out_of_arrival_order_is_refused():
    scenario, _ = replay_scenario([DATA / "traces_rodinia_gaussian.csv"], "pascal-sm")
    listed = list(scenario.workgroups)
    listed[0], listed[-1] = listed[-1], listed[0]
    with pytest.raises(ValueError, match=r"in arrival order: WG \d+ arrives in cycle \d+, "
                                         r"after WG 254 in cycle"):
        DispatchSimulator(scenario.gpu, PRESETS["seed"], listed, cycles=scenario.cycles)


@pytest.mark.parametrize("execution", ["fixed", "shared"])
def test_streamed_runs_equal_kept_runs(execution):
    """``keep=False`` (each WG copied when it arrives and dropped when it completes; what
    every command runs) gives the results and event log of ``keep=True`` on the list of WGs,
    for every policy, whole and capped mid-run with a warm-up (WGs still queued and running
    at the end, WGs arriving after it), on two real multi-stream traces as concurrent
    channels."""
    lud, gaussian = DATA / "traces_rodinia_lud.csv", DATA / "traces_rodinia_gaussian.csv"
    scenario, _ = replay_scenario(
        [lud, parse_replay_spec(f"{gaussian}:offset=20000,priority=1")], "pascal-sm")
    listed = list(scenario.workgroups)
    whole = scenario.cycles
    # Capped and warmed up at launch arrivals: the boundaries, each way, are exercised.
    arrivals = sorted({wg.arrival for wg in listed})
    capped, warm = arrivals[-3], arrivals[len(arrivals) // 2]
    for policy in scenario.policies:
        for cycles, warmup in ((whole, 0), (capped, warm), (capped + 3, warm)):
            runs = []
            for keep, workload in ((True, listed), (False, scenario.workgroups)):
                events = []
                simulator = DispatchSimulator(
                    scenario.gpu, policy, workload, cycles=cycles, warmup=warmup,
                    sample_interval=scenario.sample_interval, execution=execution,
                    events=events, keep=keep)
                result = simulator.run()
                assert (simulator.workload is None) == (not keep)
                runs.append((result, events))
            (kept, kept_events), (streamed, streamed_events) = runs
            label = f"{policy.name} {execution} cycles={cycles}"
            assert streamed == kept, label
            assert streamed_events == kept_events, label
            assert kept["invariant_violations"] == 0, label
            if cycles == capped + 3:       # the launch arriving 3 cycles before is running
                assert kept["workgroups_after_end"] > 0 and kept["workgroups_unfinished"] > 0


def test_a_streamed_run_holds_only_the_workgroups_in_flight():
    """Memory grows with the WGs in flight, not the trace: while a 4,630-WG trace runs, the
    WG objects alive are the queued and running ones (counted by the garbage collector)."""
    scenario, _ = replay_scenario([DATA / "traces_rodinia_pathfinder.csv"], "pascal-sm")
    alive = []

    def workgroups() -> int:
        return sum(isinstance(o, WorkGroup) for o in gc.get_objects())

    gc.collect()
    before = workgroups()          # those other tests left

    def count(cycle, simulator):
        if cycle % 97 == 0:
            objects = workgroups() - before
            queued = sum(len(queue) for queue in simulator.queues.channels)
            alive.append((objects, queued + len(simulator.resources.running)))

    simulator = DispatchSimulator(scenario.gpu, PRESETS["seed"], scenario.workgroups,
                                  cycles=scenario.cycles, observer=count, keep=False)
    result = simulator.run()
    assert result["workgroups_completed"] == len(scenario.workgroups) == 4630
    assert len(alive) > 10 and not simulator.live
    # The in-flight WGs, plus at most the next to arrive and a few in the event being made.
    assert max(objects - flight for objects, flight in alive) <= 4
    assert max(objects for objects, _ in alive) < 4630 // 4


@pytest.mark.parametrize("spec, message", [
    ("x.csv:offset=-3", "offset must be a non-negative integer"),
    ("x.csv:speed=2", "'speed=2' is not offset=N, priority=P or channel=C"),
    ("x.csv:offset=1,offset=2", "offset is given twice"),
    # A channel number makes every channel up to it (1e8 of them: a hang, then memory).
    ("x.csv:channel=100000000", "channel must be 0 to 255, not 100,000,000"),
])
def test_a_bad_trace_option_is_one_line(sparse, capsys, spec, message):
    spec = str(sparse.parent / spec)
    status = gpusched(["dispatch", "--quiet", "--kernel-trace", spec, "--preset", "pascal-sm"])
    err = capsys.readouterr().err
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("option, arguments, message", [
    # pascal-sm has priorities 0-3: priority 4 reached the tie-break's flags as an IndexError.
    (":priority=4", [], "priority must be 0 to 3 (pascal-sm has 4 priorities), not 4"),
    # An arrival past int64 overflowed the metrics' arrays (an OverflowError traceback).
    (":offset=100000000000000000000000", [], "past the 9,007,199,254,740,992 cycles"),
    ("", ["--clock-mhz", "0"], "--clock-mhz: must be an integer >= 1, not 0"),
    ("", ["--clock-mhz", "-5"], "--clock-mhz: must be an integer >= 1, not -5"),
    ("", ["--kernels", "1"], "--kernels: must be FIRST:LAST (either may be left out"),
])
def test_a_trace_run_out_of_range_is_one_line(sparse, capsys, option, arguments, message):
    try:
        status = gpusched(["dispatch", "--quiet", "--kernel-trace", f"{sparse}{option}",
                           "--preset", "pascal-sm", "--policy", "seed", *arguments])
    except SystemExit as leaving:           # argparse's own errors
        status = leaving.code
    err = capsys.readouterr().err
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


# -- cost per event --------------------------------------------------------------------------


def _reference_sample(self, start: int, stop: int) -> None:
    """The former :meth:`Metrics.sample`: every sample computed from scratch."""
    interval = self.sample_interval
    first = -(-start // interval) * interval
    if first >= stop:
        return
    P, Q, gpu, resources = self.P, self.Q, self.gpu, self.resources
    held, size = resources.held, resources.size
    used = [float(resources.held_total[name]) / (float(n) * len(held[name]))
            for name, n in size.items()]
    used.append(1.0 - float(resources.slots_free) / (P * Q * gpu.wave_slots))
    fragments = [1.0 - largest / free for name in size
                 for free, largest in zip(resources.free[name], resources.largest[name],
                                          strict=True) if free > 0]
    fragmentation = float(np.array(fragments).mean()) if fragments else 0.0
    held_v, held_s, held_l = held["vgpr"], held["sgpr"], held["lds"]
    per_slots = gpu.wave_slots * Q
    per_ap = [(sum(held_v[ap * Q:ap * Q + Q]) / (Q * gpu.vgpr)
               + sum(held_s[ap * Q:ap * Q + Q]) / (Q * gpu.sgpr)
               + held_l[ap] / gpu.lds + (per_slots - resources.ap_slots[ap]) / per_slots) / 4
              for ap in range(P)]
    resource_cv = coefficient_of_variation(per_ap)
    for sample in range(first, stop, interval):
        power = [h.window(sample, self.power_window) for h in resources.history]
        self.samples["cycle"].append(sample)
        self.samples["utilisation"].append(used)
        self.samples["fragmentation"].append(fragmentation)
        self.samples["ap_resource_cv"].append(resource_cv)
        self.samples["ap_power_cv"].append(coefficient_of_variation(power))


def _run(case, execution="fixed", warmup=0):
    gpu, channels, workload, cycles, policies, interval = case[:6]
    return [DispatchSimulator(gpu, policy, workload, channels=channels, cycles=cycles,
                              sample_interval=interval, power_window=32,
                              execution=execution, warmup=warmup).run()
            for policy in policies]


@pytest.mark.parametrize("seed", range(0, 200, 8))
def test_closed_form_sampling_equals_the_per_sample_reference(seed, monkeypatch):
    """Series, fragmentation and imbalance identical to computing every sample from scratch
    (25 random configurations x every policy, fixed and shared execution)."""
    fixed = test_dispatch_exact.random_case(seed)
    shared = test_dispatch_exact.shared_case(seed)
    ours = _run(fixed), _run(shared, shared[6], shared[3] // 4)
    monkeypatch.setattr(metrics_module.Metrics, "sample", _reference_sample)
    reference = _run(fixed), _run(shared, shared[6], shared[3] // 4)
    assert ours == reference


def test_a_runs_work_does_not_grow_with_idle_cycles(monkeypatch):
    """Two WGs 1 M or 100 M cycles apart: the same number of power-window evaluations (the
    former sampler evaluated every AP's window at every sample, 64 cycles apart)."""
    from model.dispatch import resources as resources_module
    from model.dispatch.config import PRESETS, GpuConfig, WorkGroup
    calls = []
    original = resources_module.History.window
    original_windows = resources_module.Resources.history_windows

    def counted(self, cycle, length):
        calls.append(cycle)
        return original(self, cycle, length)

    def counted_windows(self, aps, cycle, length):      # the AP choice's, one per candidate
        aps = list(aps)
        calls.extend([cycle] * len(aps))
        return original_windows(self, aps, cycle, length)
    monkeypatch.setattr(resources_module.History, "window", counted)
    monkeypatch.setattr(resources_module.Resources, "history_windows", counted_windows)
    counts = []
    for gap in (1_000_000, 100_000_000):
        workload = [WorkGroup(id=i, channel=0, priority=0, waves=2, vgpr=1, sgpr=1, lds=1,
                              duration=500, independent=False, arrival=i * gap)
                    for i in range(2)]
        calls.clear()
        result = DispatchSimulator(GpuConfig(), PRESETS["seed"], workload,
                                   cycles=gap + 10_000, sample_interval=64 * 1024).run()
        assert result["workgroups_completed"] == 2
        counts.append(len(calls))
    assert counts[0] == counts[1] and 0 < counts[0] < 2_000


@pytest.mark.parametrize("preset", ["miaow", "miaow-one-clock", "blocking-buffer"])
def test_waiting_wgs_that_fit_nowhere_cost_per_event_not_per_cycle(preset):
    """A kept-full GPU with WGs queued behind (a kernel's WGs each holding a whole AP for
    50,000 cycles): MIAOW's buffer retries its rejected WGs back to back, which the engine
    replays in whole rounds at the next release instead of stepping each cycle."""
    from model.dispatch.config import PRESETS, GpuConfig, WorkGroup
    gpu = GpuConfig(aps=2, peus=2, vgpr=16, sgpr=16, lds=8, wave_slots=4, priorities=1)
    workload = [WorkGroup(id=i, channel=i % 2, priority=0, waves=8, vgpr=2, sgpr=2, lds=8,
                          duration=50_000, independent=False, arrival=0)
                for i in range(40)]
    result = DispatchSimulator(gpu, PRESETS[preset], workload, cycles=2_000_000).run()
    assert result["workgroups_completed"] == 40
    assert result["makespan"] > 1_000_000
    assert result["processed_cycles"] < 40 * 20, result["processed_cycles"]
