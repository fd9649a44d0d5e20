"""The dispatcher model held against measured kernel time (issue 31, item 5).

For every application's kernel trace (nvprof, nsys, rocprof, ...: :mod:`model.dispatch.
profilers`), on a GPU preset:

* **Kernels.** A kernel is its name (nvprof's ``[correlation id]`` left out) and its launch
  shape (threads, registers, LDS bytes). Its launches, in file order, alternate between
  *calibration* (1st, 3rd, 5th, ...) and *test* (2nd, 4th, ...); a kernel launched once is
  calibration only (it still runs, on its own measured time, when it overlaps a test launch).
* **Calibration.** What the fixed execution model needs per kernel is the run time of one
  WG: each calibration launch of ``N`` WGs measured ``D`` cycles gives
  ``T = workgroup_duration(D, N, APs, O)`` (:func:`model.dispatch.kernels.workgroup_duration`,
  ``O`` the occupancy the model's allocator gives the shape), and the kernel's ``T`` is the
  median of its calibration launches (lower median, an integer).
* **Prediction.** Each test launch runs on the model (the ``seed`` policy unless told, fixed
  execution model) with ``N`` WGs of the kernel's ``T`` cycles; its predicted duration is its
  last release minus its first dispatch, in ns at the preset's clock. Launches whose measured
  intervals overlap (the concurrent launches of a multi-stream application) run together:
  each at its measured start relative to the group's first, one channel per stream, in order
  on a stream, every launch of the group with its kernel's ``T`` (its own measured time for a
  kernel launched once). A launch alone on the GPU runs alone (runs of the same kernel, WG
  count and ``T`` are simulated once).
* **Errors**, as Accel-Sim's correlator computes them (``util/plotting/plot-correlation.py``
  of accel-sim/accel-sim-framework: error ``|sim - hw| / hw``, correlation
  ``numpy.corrcoef``): per application the mean absolute percentage error (MAPE) over its test
  launches, the Pearson correlation of predicted and measured durations (with at least three
  test launches and a measured spread), and the MAPE over the test launches whose WG count no
  calibration launch of their kernel had (*new grid*), beside the MAPE of a predictor with no
  model (each kernel's median calibration duration, whatever the grid), which shows what the
  rounds and occupancy of the dispatcher model add.

``python -m model.dispatch.validation [--data DIR] [--preset NAME] [--out DIR]`` runs every
``traces_*.csv`` (else every ``*.csv``) of ``DIR`` and writes ``validation.md``, ``.csv`` (per
application), ``validation_launches.csv`` (per test launch) and ``validation.png``
(predicted against measured); ``make validate`` runs it on the 37 nvprof-magus applications
(docs/kernels.md, "Validation against measured time").
"""

import argparse
import csv
import math
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.config import ConfigError
from model.dispatch.config import PRESETS, WorkGroup
from model.dispatch.engine import DispatchSimulator
from model.dispatch.gpus import LaunchError, gpu_preset
from model.dispatch.kernels import (
    _duration_cycles,
    adapt,
    ns_to_cycles,
    preset_gpu,
    resident_workgroups,
    workgroup_duration,
)
from model.dispatch.profilers import read_kernel_trace

__all__ = ["AppResult", "Prediction", "main", "summary_rows", "validate_trace",
           "write_outputs"]

#: The WGs one concurrent group may hold (a larger group is predicted launch by launch).
MAX_GROUP_WORKGROUPS = 400_000


@dataclass(frozen=True)
class Prediction:
    """One test launch: measured and predicted duration (ns), and how it was predicted."""

    app: str
    launch: int
    kernel: str
    workgroups: int
    measured_ns: int
    predicted_ns: float
    naive_ns: float
    new_grid: bool
    concurrent: bool


@dataclass
class AppResult:
    """One application: its test launches' predictions and what was left out."""

    app: str
    launches: int
    kernels: int
    predictions: list[Prediction] = field(default_factory=list)
    skipped: int = 0                      # launches the preset cannot run

    def mape(self, subset=None, naive: bool = False) -> float:
        rows = self.predictions if subset is None else [p for p in self.predictions
                                                        if subset(p)]
        if not rows:
            return math.nan
        return 100.0 * float(np.mean([abs((p.naive_ns if naive else p.predicted_ns)
                                          - p.measured_ns) / p.measured_ns for p in rows]))

    def correlation(self, log: bool = False) -> float:
        return correlation(self.predictions, log)


def correlation(predictions, log: bool = False) -> float:
    """Pearson correlation of predicted and measured durations (``log``: of their logarithms,
    so that the longest kernels do not decide it alone); NaN with fewer than three launches
    or no spread on either side."""
    if len(predictions) < 3:
        return math.nan
    measured = np.array([p.measured_ns for p in predictions], dtype=float)
    predicted = np.array([p.predicted_ns for p in predictions], dtype=float)
    if log:
        measured, predicted = np.log(measured), np.log(predicted)
    if np.ptp(measured) == 0 or np.ptp(predicted) == 0:
        return math.nan
    return float(np.corrcoef(predicted, measured)[0, 1])


def _name(kernel) -> str:
    return re.sub(r"\s*\[\d+\]$", "", kernel.name)


def _simulate(gpu, policy, launches, clock: int) -> list[int]:
    """Run ``launches`` — ``(start_ns, stream, shape, workgroups, T)`` — together on the model;
    each launch's first-dispatch-to-last-release time in cycles."""
    t0 = min(start for start, *_ in launches)
    channels: dict = {}
    workgroups, spans, started = [], [], set()
    order = sorted(range(len(launches)), key=lambda i: (launches[i][0], i))
    for index in order:
        start, stream, shape, count, duration = launches[index]
        channel = channels.setdefault(stream, len(channels))
        barrier = channel in started
        started.add(channel)
        spans.append((index, len(workgroups), count))
        arrival = ns_to_cycles(start - t0, clock)
        for number in range(count):
            workgroups.append(WorkGroup(
                id=len(workgroups), channel=channel, priority=0, waves=shape.waves,
                vgpr=shape.vgpr, sgpr=shape.sgpr, lds=shape.lds, duration=duration,
                independent=False, arrival=arrival, barrier=barrier and number == 0))
    horizon = max(wg.arrival for wg in workgroups) + \
        sum(count * (duration + 4) for _, _, _, count, duration in launches) + 1000
    events: list = []
    result = DispatchSimulator(gpu, policy, workgroups, cycles=horizon, events=events).run()
    if result["workgroups_completed"] != len(workgroups) or result["invariant_violations"]:
        raise AssertionError(f"validation run incomplete: {result['workgroups_completed']} of "
                             f"{len(workgroups)} WGs, {result['invariant_violations']} "
                             f"violations")
    first = [None] * len(launches)
    last = [0] * len(launches)
    owner = np.empty(len(workgroups), dtype=np.int64)
    for index, begin, count in spans:
        owner[begin:begin + count] = index
    for cycle, kind, wg, *_ in events:
        index = owner[wg.id if wg.parent is None else wg.parent]
        if kind == "dispatch" and (first[index] is None or cycle < first[index]):
            first[index] = cycle
        elif kind == "release":
            last[index] = max(last[index], cycle)
    return [last[i] - first[i] for i in range(len(launches))]


def validate_trace(path, preset="pascal-sm", policy: str = "seed") -> AppResult:
    """Calibrate on part of the launches of the trace at ``path`` and predict the rest (module
    docstring)."""
    path = Path(path)
    trace = read_kernel_trace(path)
    preset = gpu_preset(preset)
    clock = preset.clock_mhz
    gpu = preset_gpu(preset)
    chosen = PRESETS[policy]
    app = path.stem.removeprefix("traces_")
    runnable = []                                   # (file index, kernel, shape)
    skipped = 0
    for index, kernel in enumerate(trace.kernels):
        try:
            runnable.append((index, kernel, adapt(kernel, preset).shape))
        except LaunchError:
            skipped += 1
    by_key: dict[tuple, list] = {}
    for item in runnable:
        _, kernel, shape = item
        by_key.setdefault((_name(kernel), kernel.threads, kernel.registers,
                           kernel.lds_bytes), []).append(item)
    result = AppResult(app=app, launches=len(trace.kernels), kernels=len(by_key),
                       skipped=skipped)
    wg_time: dict[int, int] = {}                    # file index -> T to simulate with
    tests: dict[int, tuple] = {}                    # file index -> (key, naive ns, new grid)
    for key, items in by_key.items():
        calibration = items[::2]
        shape = items[0][2]
        resident = resident_workgroups(preset, shape, chosen)
        per_launch = [workgroup_duration(_duration_cycles(k.duration_ns, clock), k.workgroups,
                                         preset.aps, resident) for _, k, _ in calibration]
        calibrated = statistics.median_low(per_launch)
        naive = statistics.median([k.duration_ns for _, k, _ in calibration])
        seen = {k.workgroups for _, k, _ in calibration}
        for number, (index, kernel, _) in enumerate(items):
            if len(items) == 1:
                wg_time[index] = per_launch[0]
            else:
                wg_time[index] = calibrated
            if number % 2:
                tests[index] = (key, naive, kernel.workgroups not in seen)
    # Busy periods: launches whose measured intervals overlap run together.
    ordered = sorted(runnable, key=lambda item: (item[1].start_ns, item[0]))
    groups, end = [], None
    for item in ordered:
        kernel = item[1]
        if groups and kernel.start_ns < end:
            groups[-1].append(item)
            end = max(end, kernel.start_ns + kernel.duration_ns)
        else:
            groups.append([item])
            end = kernel.start_ns + kernel.duration_ns
    cache: dict[tuple, int] = {}
    for group in groups:
        wanted = [item for item in group if item[0] in tests]
        if not wanted:
            continue
        together = len(group) > 1 and \
            sum(k.workgroups for _, k, _ in group) <= MAX_GROUP_WORKGROUPS
        if together:
            cycles = _simulate(gpu, chosen, [(k.start_ns, k.stream, shape, k.workgroups,
                                              wg_time[index])
                                             for index, k, shape in group], clock)
            measured = dict(zip((index for index, _, _ in group), cycles, strict=True))
        else:
            measured = {}
            for index, kernel, shape in wanted:
                key = (shape, kernel.workgroups, wg_time[index])
                if key not in cache:
                    cache[key] = _simulate(gpu, chosen, [(0, ("0",), shape, kernel.workgroups,
                                                          wg_time[index])], clock)[0]
                measured[index] = cache[key]
        for index, kernel, _ in wanted:
            key, naive, new_grid = tests[index]
            result.predictions.append(Prediction(
                app=app, launch=index, kernel=key[0], workgroups=kernel.workgroups,
                measured_ns=kernel.duration_ns,
                predicted_ns=measured[index] * 1000.0 / clock, naive_ns=float(naive),
                new_grid=new_grid, concurrent=together))
    result.predictions.sort(key=lambda p: p.launch)
    return result


SUMMARY_HEADERS = ["application", "launches", "kernels", "tested", "new grid", "concurrent",
                   "MAPE %", "correlation", "log correlation", "MAPE new grid %",
                   "no-model MAPE new grid %"]


def _fmt(value: float, digits: int = 1) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def summary_rows(results) -> list[list[str]]:
    """One row per application (:data:`SUMMARY_HEADERS`), then the pooled row over all."""
    rows = []
    for r in results:
        rows.append([r.app, str(r.launches), str(r.kernels), str(len(r.predictions)),
                     str(sum(p.new_grid for p in r.predictions)),
                     str(sum(p.concurrent for p in r.predictions)),
                     _fmt(r.mape()), _fmt(r.correlation(), 3), _fmt(r.correlation(True), 3),
                     _fmt(r.mape(lambda p: p.new_grid)),
                     _fmt(r.mape(lambda p: p.new_grid, naive=True))])
    pooled = AppResult(app="all (pooled)", launches=sum(r.launches for r in results),
                       kernels=sum(r.kernels for r in results),
                       predictions=[p for r in results for p in r.predictions])
    rows.append([pooled.app, str(pooled.launches), str(pooled.kernels),
                 str(len(pooled.predictions)), str(sum(p.new_grid for p in pooled.predictions)),
                 str(sum(p.concurrent for p in pooled.predictions)), _fmt(pooled.mape()),
                 _fmt(pooled.correlation(), 3), _fmt(pooled.correlation(True), 3),
                 _fmt(pooled.mape(lambda p: p.new_grid)),
                 _fmt(pooled.mape(lambda p: p.new_grid, naive=True))])
    return rows


def _plot(results, path: Path, title: str) -> Path:
    from model.report import figure, save_figure

    fig, axis = figure(1, 1, figsize=(8, 7))
    tested = [r for r in results if r.predictions]
    ranked = sorted(tested, key=lambda r: -len(r.predictions))
    named = {r.app: f"C{index}" for index, r in enumerate(ranked[:9])}
    for r in tested:
        for new, marker in ((False, "o"), (True, "^")):
            points = [p for p in r.predictions if p.new_grid == new]
            if not points:
                continue
            axis.scatter([p.measured_ns / 1000 for p in points],
                         [p.predicted_ns / 1000 for p in points], s=10 if not new else 22,
                         marker=marker, color=named.get(r.app, "grey"), alpha=0.6,
                         linewidths=0,
                         label=(r.app if r.app in named and not new else None))
    every = [p for r in tested for p in r.predictions]
    if every:
        low = min(min(p.measured_ns, p.predicted_ns) for p in every) / 1000 / 1.5
        high = max(max(p.measured_ns, p.predicted_ns) for p in every) / 1000 * 1.5
        line = np.array([low, high])
        axis.plot(line, line, color="black", linewidth=0.8, label="predicted = measured")
        axis.fill_between(line, line / 1.2, line * 1.2, color="grey", alpha=0.15,
                          label="within 20 %")
    axis.scatter([], [], marker="^", color="grey", label="new grid (triangles)")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("measured kernel duration, us")
    axis.set_ylabel("predicted by the dispatcher model, us")
    axis.set_title(title, fontsize=9)
    axis.legend(fontsize=7, loc="upper left")
    return save_figure(fig, path)


def write_outputs(results, out: Path, source: str, preset: str, policy: str) -> dict:
    """Write validation.md, validation.csv, validation_launches.csv and validation.png to
    ``out``; their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = summary_rows(results)
    pooled = rows[-1]
    title = (f"{len(results)} applications ({source}) on {preset}, policy {policy}:\n"
             f"{pooled[3]} test launches, MAPE {pooled[6]} %, correlation {pooled[7]} "
             f"(log {pooled[8]})")
    paths = {"md": out / "validation.md", "csv": out / "validation.csv",
             "launches": out / "validation_launches.csv", "png": out / "validation.png"}
    with paths["csv"].open("w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(SUMMARY_HEADERS)
        writer.writerows(rows)
    with paths["launches"].open("w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(["application", "launch", "kernel", "workgroups", "measured_ns",
                         "predicted_ns", "no_model_ns", "new_grid", "concurrent"])
        for r in results:
            for p in r.predictions:
                writer.writerow([p.app, p.launch, p.kernel, p.workgroups, p.measured_ns,
                                 f"{p.predicted_ns:.1f}", f"{p.naive_ns:.1f}", int(p.new_grid),
                                 int(p.concurrent)])
    lines = [f"# {title.replace(chr(10), ' ')}", "", "| " + " | ".join(SUMMARY_HEADERS) + " |",
             "|" + "|".join([" --- "] + [" ---: "] * (len(SUMMARY_HEADERS) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    skipped = sum(r.skipped for r in results)
    untested = [r.app for r in results if not r.predictions]
    lines += ["", f"Launches the preset cannot run: {skipped}. Applications with no kernel "
              f"launched twice (nothing to predict): {len(untested)}"
              + (f" ({', '.join(untested)})" if untested else "") + "."]
    paths["md"].write_text("\n".join(lines) + "\n")
    _plot(results, paths["png"], title)
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m model.dispatch.validation",
        description="calibrate the dispatcher model on part of each application's kernel "
                    "launches and predict the measured duration of the rest")
    parser.add_argument("--data", type=Path, action="append", metavar="DIR",
                        help="a folder of kernel traces (traces_*.csv, else *.csv), or a "
                             "trace file; repeatable (default: tests/data/nvprof-magus)")
    parser.add_argument("--preset", default="pascal-sm", help="GPU preset (default "
                                                              "pascal-sm: the GTX 1080 Ti)")
    parser.add_argument("--policy", default="seed", choices=tuple(PRESETS),
                        help="dispatch policy of the model (default seed)")
    parser.add_argument("--out", type=Path, default=Path("build/validation"), metavar="DIR")
    args = parser.parse_args(argv)
    sources = args.data or [Path(__file__).resolve().parents[2] / "tests" / "data"
                            / "nvprof-magus"]
    try:
        files = []
        for source in sources:
            if source.is_dir():
                found = sorted(source.glob("traces_*.csv")) or sorted(source.glob("*.csv"))
                if not found:
                    raise ConfigError(f"{source}: no kernel trace (*.csv) in this folder")
                files += found
            elif source.is_file():
                files.append(source)
            else:
                raise ConfigError(f"--data {source}: no such file or folder")
        gpu_preset(args.preset)
        results = []
        for number, path in enumerate(files, 1):
            print(f"[{number}/{len(files)}] {path.name}", file=sys.stderr, flush=True)
            results.append(validate_trace(path, args.preset, args.policy))
    except (ConfigError, KeyError, ValueError) as error:
        print(f"validation: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("validation: interrupted; nothing written", file=sys.stderr)
        return 130
    source = ", ".join(str(s) for s in sources)
    paths = write_outputs(results, args.out, source, args.preset, args.policy)
    print(paths["md"].read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
