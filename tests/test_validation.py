"""The dispatcher model held against measured kernel time (issue 31, item 5):
model.dispatch.validation on the shipped nvprof subset and on a trace that follows the model."""

import csv
import math
import statistics
from pathlib import Path

import pytest

from model.dispatch.kernels import occupancy
from model.dispatch.validation import (
    SUMMARY_HEADERS,
    AppResult,
    Prediction,
    correlation,
    main,
    summary_rows,
    validate_trace,
)

DATA = Path(__file__).parent / "data" / "nvprof-magus"
HEADER = ('"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z",'
          '"Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput","Device",'
          '"Context","Stream","Name"\nms,us,,,,,,,,B,B,KB,MB/s,,,,\n')


def _nvprof(path: Path, launches) -> Path:
    """An nvprof --print-gpu-trace --csv file: ``(start_ms, duration_us, grid, stream,
    name)`` per launch, 256-thread blocks with 32 registers."""
    lines = ["==1== NVPROF is profiling process 1, command: ./x\n", "==1== Profiling result:\n",
             HEADER]
    for number, (start, duration, grid, stream, name) in enumerate(launches):
        lines.append(f'{start:.6f},{duration:.3f},{grid},1,1,256,1,1,32,0,0,,,'
                     f'"GeForce GTX 1080 Ti (0)","1","{stream}","{name} [{100 + number}]"\n')
    path.write_text("".join(lines))
    return path


def test_a_trace_that_follows_the_model_is_predicted_within_a_percent(tmp_path):
    # Kernel time = rounds x 40 us, rounds = ceil(WGs / (28 SMs x occupancy)): the world as
    # the model sees it. Calibrated on the 1st, 3rd, ... launches, the model predicts the
    # others, new grid sizes included, within 1 %; the no-model predictor (the calibration
    # launches' median) is far off on the new grids.
    resident = occupancy("pascal-sm", 256, 32, 0)
    wave = 28 * resident
    grids = [wave, 3 * wave, 2 * wave, 5 * wave, wave // 2, 4 * wave, 6 * wave, 7 * wave]
    launches = [(10.0 * number, 40.0 * -(-grid // wave), grid, 7, "k(int)")
                for number, grid in enumerate(grids)]
    result = validate_trace(_nvprof(tmp_path / "traces_model.csv", launches), "pascal-sm")
    assert len(result.predictions) == 4
    assert sum(p.new_grid for p in result.predictions) == 4
    for p in result.predictions:
        assert p.predicted_ns == pytest.approx(p.measured_ns, rel=0.01), p
        assert not p.concurrent
    assert result.mape() < 1.0
    assert result.mape(lambda p: p.new_grid, naive=True) > 30.0
    assert result.correlation() > 0.99


def test_concurrent_launches_of_two_streams_run_together(tmp_path):
    # Kernel a fills half the GPU for 80 us; kernel b, on another stream, 10 us later, needs
    # the whole GPU for 80 us. Apart (1 ms between launches) each is predicted at its
    # measured time. Overlapping, they run together on the model: b gets half the GPU at
    # once and the rest when a finishes, so it lasts about 150 us from its first dispatch,
    # while a, which was there first, is not slowed.
    resident = occupancy("pascal-sm", 256, 32, 0)
    wave = 28 * resident
    apart = [(0.0, 80.0, wave // 2, 7, "a(int)"), (0.5, 80.0, wave, 8, "b(int)"),
             (1.0, 80.0, wave // 2, 7, "a(int)"), (1.5, 80.0, wave, 8, "b(int)")]
    result = validate_trace(_nvprof(tmp_path / "traces_apart.csv", apart), "pascal-sm")
    assert len(result.predictions) == 2 and not any(p.concurrent for p in result.predictions)
    for p in result.predictions:
        assert p.predicted_ns == pytest.approx(p.measured_ns, rel=0.01)
    together = [(0.0, 80.0, wave // 2, 7, "a(int)"), (0.010, 80.0, wave, 8, "b(int)"),
                (1.0, 80.0, wave // 2, 7, "a(int)"), (1.010, 80.0, wave, 8, "b(int)")]
    result = validate_trace(_nvprof(tmp_path / "traces_together.csv", together), "pascal-sm")
    assert len(result.predictions) == 2 and all(p.concurrent for p in result.predictions)
    a, b = result.predictions
    assert a.predicted_ns == pytest.approx(80_000, rel=0.01)
    assert b.predicted_ns == pytest.approx(150_000, rel=0.02)


def test_shipped_traces_predict_every_repeated_kernel():
    lud = validate_trace(DATA / "traces_rodinia_lud.csv")
    # 3 kernels launched 16, 15, 15 times: every second launch is a test launch.
    assert len(lud.predictions) == 8 + 7 + 7
    assert all(p.predicted_ns > 0 and p.measured_ns > 0 for p in lud.predictions)
    assert any(p.new_grid for p in lud.predictions)
    pathfinder = validate_trace(DATA / "traces_rodinia_pathfinder.csv")
    # Two streams whose launches overlap: predicted together.
    assert pathfinder.predictions and any(p.concurrent for p in pathfinder.predictions)
    once = validate_trace(DATA / "traces_cudasdk_vectorAdd.csv")
    assert once.predictions == [] and math.isnan(once.mape())


def _p(measured, predicted, new=False):
    return Prediction(app="x", launch=0, kernel="k", workgroups=1, measured_ns=measured,
                      predicted_ns=predicted, naive_ns=measured * 2.0, new_grid=new,
                      concurrent=False)


def test_errors_are_computed_as_accel_sim_computes_them():
    rows = [_p(100, 110), _p(200, 180), _p(400, 400, new=True)]
    result = AppResult(app="x", launches=3, kernels=1, predictions=rows)
    assert result.mape() == pytest.approx(100 * (0.1 + 0.1 + 0.0) / 3)
    assert result.mape(lambda p: p.new_grid) == 0.0
    assert result.mape(lambda p: p.new_grid, naive=True) == pytest.approx(100.0)
    # Pearson's r by the standard library (an independent computation).
    assert correlation(rows) == pytest.approx(statistics.correlation([100, 200, 400],
                                                                     [110, 180, 400]))
    assert correlation(rows, log=True) == pytest.approx(statistics.correlation(
        [math.log(x) for x in (100, 200, 400)], [math.log(x) for x in (110, 180, 400)]))
    assert math.isnan(correlation(rows[:2]))
    table = summary_rows([result])
    assert len(table) == 2 and len(table[0]) == len(SUMMARY_HEADERS)
    assert table[-1][0] == "all (pooled)"


def test_command_writes_table_plot_and_launches(tmp_path, capsys):
    source = tmp_path / "data"
    source.mkdir()
    for name in ("traces_rodinia_gaussian.csv", "traces_cudasdk_FDTD3d.csv"):
        (source / name).write_bytes((DATA / name).read_bytes())
    out = tmp_path / "out"
    assert main(["--data", str(source), "--out", str(out)]) == 0
    with (out / "validation.csv").open() as file:
        rows = list(csv.reader(file))
    assert rows[0] == SUMMARY_HEADERS and len(rows) == 4
    assert (out / "validation.png").stat().st_size > 10_000
    assert "| rodinia_gaussian |" in (out / "validation.md").read_text()
    assert main(["--data", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "no such file or folder" in capsys.readouterr().err
