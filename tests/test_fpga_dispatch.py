"""The dispatcher's rows of ``make fpga-report`` (``hw/flow/fpga_dispatch.py``) without the
tools: every configuration and view builds, the tables and the results file say what was
measured and keep what was not."""

import json

import pytest

from hw.flow import fpga_dispatch as fd


@pytest.mark.parametrize("configuration", fd.CONFIGURATIONS)
@pytest.mark.parametrize("view", fd.VIEWS)
def test_every_row_is_a_valid_dispatcher(configuration, view):
    params = fd.shape(configuration, view).params          # every parameter checked
    gpu, channels = fd.CONFIGURATIONS[configuration]
    assert (params.aps, params.peus, params.channels) == (gpu.aps, gpu.peus, channels)
    assert params.policy.circuit == fd.VIEWS[view][1]["circuit"]


def _row(configuration, view, family, kind, **fields):
    parts = {p: {"luts": 10, "ffs": 1, "carries": 0} for p in (*fd.PARTS, "control")}
    return {"configuration": configuration, "view": view, "family": family, "kind": kind,
            "status": "ok", "luts": 70, "ffs": 7, "carries": 0, "parts": parts,
            "device": "25k", "fmax": 55.5, **fields}


def test_tables_and_results_file(tmp_path):
    rows = [_row("small", "exact", "ecp5", "flat"), _row("small", "exact", "ecp5", "hierarchy"),
            _row("default", "exact", "ecp5", "hierarchy"),
            _row("small", "full", "ice40", "flat", status="does not fit", fmax=None),
            _row("small", "shared", "ecp5", "flat", status="failed", error="boom")]
    small, default, by_part = fd.format_tables(rows)
    assert "55.5" in small and "does not fit" in small
    assert "| exact, latency 1 | - | - | 70 | 7 |" in default
    assert "resource table" in by_part and "10 (14%)" in by_part
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"rows": [{"key": "default/full/ice40/hierarchy", "luts": 5}]}))
    fd.write_results(path, rows)
    data = json.loads(path.read_text())
    keys = [r["key"] for r in data["rows"]]
    # The old row is kept, the failed one not written, every measured one is.
    assert "default/full/ice40/hierarchy" in keys and "small/shared/ecp5/flat" not in keys
    assert {"small/exact/ecp5/flat", "small/full/ice40/flat"} <= set(keys)
    assert data["configurations"]["small"]["gpu"]["aps"] == 4
