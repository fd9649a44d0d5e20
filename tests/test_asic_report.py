"""The OSU 0.18 µm report (``make asic-report``): the parsing of Yosys's and OpenSTA's text, the
messages of a missing tool and of Ctrl-C, and one real run of the flow.

The fixtures in ``tests/data/asic/`` were captured from real runs of Debian's Yosys 0.23 and
OpenSTA 2.0.17 (the exact circuit at n = 32 in the register wrapper; the same netlist timed
at a 2 ns clock; a netlist with a register but no register-to-register path; one without a
register). The real run (an 8-block exact circuit, a few seconds) is skipped when the tools
are not installed.
"""

import functools
from pathlib import Path

import pytest

from hw.flow import asic_report
from hw.flow.asic_report import (
    Build,
    MissingTool,
    builds,
    find_liberty,
    main,
    parse_sta,
    parse_stat,
    run_build,
    table_rows,
)

DATA = Path(__file__).resolve().parent / "data" / "asic"


def test_parse_stat_reads_cells_flip_flops_and_area():
    stat = parse_stat((DATA / "stat_exact_n32.txt").read_text())
    assert stat["cells"] == 1081
    assert stat["ffs"] == 95
    assert stat["area"] == 37175.0
    assert stat["cell_types"]["DFFPOSX1"] == 95
    assert sum(stat["cell_types"].values()) == stat["cells"]


def test_parse_stat_refuses_text_without_an_area():
    with pytest.raises(ValueError, match="chip area"):
        parse_stat("=== top ===\n   Number of cells:   12\n")


def test_parse_sta_gives_the_path_whatever_the_clock():
    met = parse_sta((DATA / "sta_exact_n32.log").read_text(), period=10)
    assert met["slack"] == 4.782
    assert met["path_ns"] == 5.218
    assert (met["startpoint"], met["endpoint"]) == ("_2004_", "_2044_")
    # The same netlist against a 2 ns clock: a violated check, the same path.
    violated = parse_sta((DATA / "sta_exact_n32_period2.log").read_text(), period=2)
    assert violated["slack"] == -3.218
    assert violated["path_ns"] == met["path_ns"]


def test_parse_sta_without_a_path_or_registers():
    assert parse_sta((DATA / "sta_no_paths.log").read_text())["path_ns"] is None
    # OpenSTA exits 0 after an error: the report must not pass for an empty one.
    with pytest.raises(ValueError, match="no valid objects"):
        parse_sta((DATA / "sta_no_registers.log").read_text())
    with pytest.raises(ValueError, match="no slack"):
        parse_sta("")


def test_table_rows_mark_a_missing_path():
    row = {"label": "exact", "n": 32, "cells": 10, "ffs": 2, "area": 99.6, "path_ns": None,
           "fmax": None}
    assert table_rows([row]) == [["exact", 32, 10, 2, 100, "-", "-"]]


def test_builds_cover_the_fpga_report_and_the_dispatcher():
    keys = [build.key for build in builds(sizes=(32, 64))]
    assert "exact_n32" in keys and "full_n64" in keys and "sampled_n32" in keys
    assert {"shared_seed", "shared_exact", "arbiter_seed", "dispatcher_small"} <= set(keys)
    assert len(keys) == len(set(keys))


def test_a_missing_tool_is_one_line_and_status_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))                  # no yosys, no sta
    assert main(["--out", str(tmp_path), "--json", str(tmp_path / "a.json")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "`yosys` is not on PATH" in lines[0]
    assert "make asic-tools" in lines[0] and "Traceback" not in captured.err
    assert not (tmp_path / "a.json").exists()


def test_a_missing_liberty_file_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(asic_report, "LIBERTY_PACKAGE", "no-such-package-of-cells")
    monkeypatch.setattr(asic_report, "LIBERTY_DEFAULT", tmp_path / "none.lib")
    with pytest.raises(MissingTool, match="Liberty file is missing"):
        find_liberty()


def test_ctrl_c_is_one_line_and_status_130(monkeypatch, tmp_path, capsys):
    def interrupted(args, rows):
        raise KeyboardInterrupt
    monkeypatch.setattr(asic_report, "_report", interrupted)
    assert main(["--out", str(tmp_path)]) == 130
    captured = capsys.readouterr()
    assert captured.err.strip() == ("asic-report: interrupted; the builds finished so far are "
                                    "in the cache")


@functools.cache
def _missing() -> str | None:
    try:
        asic_report.check_tools()
        find_liberty()
    except MissingTool as error:
        return str(error)
    return None


@pytest.mark.skipif(_missing() is not None, reason=f"OSU 0.18 µm flow: {_missing()}")
def test_real_flow_on_an_8_block_circuit_and_its_cache(tmp_path, capsys):
    from hw.flow.fpga_variants import generate_verilog
    result = run_build(generate_verilog("exact", 8), tmp_path / "direct", find_liberty())
    assert result["ffs"] >= 2 * 8 + 1                  # shift and input registers, output
    assert result["cells"] > result["ffs"] and result["area"] > 0
    assert 0.3 < result["path_ns"] < 10 and result["fmax"] == round(1000 / result["path_ns"], 1)
    arguments = ["--out", str(tmp_path), "--json", str(tmp_path / "asic.json"), "--sizes", "8",
                 "--variants", "exact", "--no-shared", "--no-arbiter", "--no-dispatcher"]
    assert main(arguments) == 0
    assert "1 builds run, 0 from the cache" in capsys.readouterr().out
    assert main(arguments) == 0
    assert "0 builds run, 1 from the cache" in capsys.readouterr().out
    import json
    record = json.loads((tmp_path / "asic.json").read_text())
    assert record["tools"]["yosys"].startswith("Yosys") and record["liberty"].endswith(".lib")
    [row] = record["rows"]
    assert row["key"] == "exact_n8" and row["cells"] == result["cells"]
    assert Build("exact_n8", "free block", "exact", 8) in builds((8,), ("exact",))


def test_cached_only_runs_no_tool_and_lists_what_it_did_not_measure(monkeypatch, tmp_path,
                                                                    capsys):
    import json
    liberty = tmp_path / "cells.lib"
    liberty.write_text("library (cells) { }\n")
    monkeypatch.setattr(asic_report, "check_tools", dict)
    monkeypatch.setattr(asic_report, "find_liberty", lambda: liberty)
    monkeypatch.setattr(asic_report, "tool_versions", lambda: {"yosys": "Y", "opensta": "S"})

    def no_tool(*args, **kwargs):
        raise AssertionError("--cached-only ran a tool")
    monkeypatch.setattr(asic_report, "run_build", no_tool)
    out = tmp_path / "asic.json"
    assert main(["--out", str(tmp_path), "--json", str(out), "--sizes", "8", "--variants",
                 "grouped", "--no-shared", "--no-arbiter", "--no-dispatcher",
                 "--cached-only"]) == 0
    record = json.loads(out.read_text())
    assert record["rows"] == [] and record["not_measured"] == ["grouped_n8"]
    assert "not measured (--cached-only): grouped_n8" in capsys.readouterr().out
