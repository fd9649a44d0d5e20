"""The tables and texts of ``make fpga-report``: ``fpga.md``, ``fpga.csv`` and the printout.

From the results of :func:`hw.flow.fpga_flow.run_flow` (keyed ``(variant, n, family)``) and
the accuracy columns of :func:`hw.flow.fpga_variants.accuracy_columns`: the table of the
free-block variants (:data:`TABLE_HEADERS`, :func:`format_table`), the ratios the report is
for (:func:`format_ratios`), the arbiter's rows and its targets (:func:`format_arbiter_table`,
:func:`arbiter_lines`), the CSV and the Markdown page with its settings. A missing figure
always says why it is missing. Used by :func:`hw.flow.fpga_report.main`.
"""

import csv
import io
from collections.abc import Iterable, Sequence

from hw.flow.fpga_flow import ABC9_SCRIPT, FAMILIES, SEED, tool_versions
from hw.flow.fpga_variants import (
    ARBITER_TARGETS,
    ARBITERS,
    VARIANT_LABELS,
    design_label,
    variant_latency,
)

__all__ = ["ARBITER_HEADERS", "CSV_FIELDS", "TABLE_HEADERS", "arbiter_lines",
           "format_arbiter_table", "format_ratios", "format_table"]

# -- the report -----------------------------------------------------------------------------------

TABLE_HEADERS = [
    "variant", "lat", "n",
    "iCE40 LUT4", "carry", "FF", "depth", "device", "fmax MHz",
    "ECP5 LUT4", "carry", "FF", "depth", "device", "fmax MHz",
    "under @50%", "P(refuse r=4)",
]

CSV_FIELDS = ["variant", "label", "latency", "n", "family", "status", "device", "luts",
              "carries", "ffs", "depth", "critical_cells", "fmax_mhz", "synth_seconds",
              "pnr_seconds", "mean_under_50", "p_refuse_r4_50", "error", "cache_key"]


def _family_cells(result: dict | None) -> list[str]:
    if result is None:
        return ["", "", "", "", "not run", ""]

    def number(value):
        return "" if value is None else str(value)

    counts = [number(result["luts"]), number(result["carries"]), number(result["ffs"]),
              number(result["depth"])]
    status = result["status"]
    if status == "ok":
        return [*counts, result["device"], f"{result['fmax']:.1f}"]
    if status == "does not fit":
        return [*counts, "does not fit", "-"]
    if status == "timed out":
        return [*counts, result["device"], "timed out"]
    return [*counts, result["device"] or "-", "failed"]


def _rows(results: dict, accuracy: dict, variants: Iterable[str], sizes: Iterable[int]
          ) -> list[list[str]]:
    rows = []
    for variant in variants:
        for n in sizes:
            ice40 = results.get((variant, n, "ice40"))
            ecp5 = results.get((variant, n, "ecp5"))
            under, refuse = accuracy.get(n, {}).get(variant, (None, None))
            rows.append([
                VARIANT_LABELS[variant], str(variant_latency(variant, n)), str(n),
                *_family_cells(ice40), *_family_cells(ecp5),
                "" if under is None else f"{under:.3f}",
                "" if refuse is None else f"{refuse:.4f}",
            ])
    return rows


def format_table(rows: Sequence[Sequence[str]], *, markdown: bool = False,
                 headers: Sequence[str] = TABLE_HEADERS) -> str:
    """The rows under ``headers`` (:data:`TABLE_HEADERS`), as fixed-width text or as a
    Markdown table.

    The first column is left-aligned, the others right-aligned.
    """
    if markdown:
        rule = ["---"] + ["---:"] * (len(headers) - 1)
        return "\n".join("| " + " | ".join(cells) + " |" for cells in [headers, rule, *rows])
    widths = [max(len(cells[i]) for cells in [headers, *rows]) for i in range(len(headers))]

    def line(cells):
        return "  ".join(cell.ljust(width) if not i else cell.rjust(width)
                         for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
                         ).rstrip()

    return "\n".join([line(headers), "  ".join("-" * width for width in widths),
                      *(line(row) for row in rows)])


def _figure(results: dict, variant: str, n: int, family: str, field_name: str):
    """``(value, None)``, or ``(None, why it is missing)``."""
    result = results.get((variant, n, family))
    if result is None:
        return None, f"{VARIANT_LABELS[variant]} not run"
    if field_name == "fmax" and result["status"] != "ok":
        return None, f"{VARIANT_LABELS[variant]} {result['status']}"
    if result[field_name] is None:
        return None, f"{VARIANT_LABELS[variant]} {result['status']}"
    return result[field_name], None


def format_ratios(results: dict, n: int = 128) -> list[str]:
    """The figures the issue asks for, at ``n`` blocks, one line each.

    The exact circuit's iCE40 LUT4s as a share of the full circuit's (from the synthesized
    netlists, so it is given even when one of them does not fit), and the fmax of the exact
    circuit (latency 1) and of the pipelined one relative to the full circuit (latency 1) on
    each family. A missing figure says why it is missing.
    """
    def line(label, numerator, denominator, form):
        (top, top_missing), (bottom, bottom_missing) = numerator, denominator
        if top is None or not bottom:
            missing = ", ".join(why for why in (top_missing, bottom_missing) if why)
            return f"{label}: not available ({missing or 'no value'})"
        return f"{label}: {form(top, bottom)}"

    lines = [line(f"n = {n}: exact / full iCE40 LUT4s",
                  _figure(results, "exact", n, "ice40", "luts"),
                  _figure(results, "full", n, "ice40", "luts"),
                  lambda top, bottom: f"{top / bottom:.1%} ({top} / {bottom})")]
    for family in ("ecp5", "ice40"):
        for variant in ("exact", "exact_pipelined"):
            latency = variant_latency(variant, n)
            lines.append(line(
                f"n = {n}: {FAMILIES[family].title} fmax {VARIANT_LABELS[variant]} (latency "
                f"{latency}) / full (latency 1)",
                _figure(results, variant, n, family, "fmax"),
                _figure(results, "full", n, family, "fmax"),
                lambda top, bottom: f"{top / bottom:.2f}x ({top:.1f} / {bottom:.1f} MHz)"))
    return lines


ARBITER_HEADERS = [
    "arbiter", "slots", "classes",
    "iCE40 LUT4", "carry", "FF", "depth", "device", "fmax MHz",
    "ECP5 LUT4", "carry", "FF", "depth", "device", "fmax MHz",
]


def _arbiter_rows(results: dict, keys: Iterable[str]) -> list[list[str]]:
    rows = []
    for key in keys:
        params = ARBITERS[key][1]
        variant = f"arbiter_{key}"
        rows.append([design_label(variant), str(params.tasks), str(params.classes),
                     *_family_cells(results.get((variant, params.tasks, "ice40"))),
                     *_family_cells(results.get((variant, params.tasks, "ecp5")))])
    return rows


def format_arbiter_table(rows: Sequence[Sequence[str]], *, markdown: bool = False) -> str:
    """The arbiter rows under :data:`ARBITER_HEADERS`, as text or Markdown (as
    :func:`format_table`)."""
    return format_table(rows, markdown=markdown, headers=ARBITER_HEADERS)


def arbiter_lines(results: dict) -> list[str]:
    """The seed's arbiter against :data:`ARBITER_TARGETS`, one line per target (a missing
    figure says why)."""
    params = ARBITERS["seed"][1]
    variant, n = "arbiter_seed", params.tasks
    name = f"arbiter {params.tasks}x{params.classes}, seed's settings"
    lines = []
    for family, field_name, target, form in (
            ("ice40", "luts", ARBITER_TARGETS["ice40_luts"],
             lambda value: (f"{value} iCE40 LUT4", value <= ARBITER_TARGETS["ice40_luts"])),
            ("ecp5", "fmax", ARBITER_TARGETS["ecp5_mhz"],
             lambda value: (f"{value:.1f} MHz on ECP5", value >= ARBITER_TARGETS["ecp5_mhz"]))):
        result = results.get((variant, n, family))
        if result is None or result[field_name] is None or (
                field_name == "fmax" and result["status"] != "ok"):
            why = "not run" if result is None else result["status"]
            lines.append(f"{name}: {FAMILIES[family].title} {field_name} not available ({why})")
            continue
        text, met = form(result[field_name])
        bound = f"<= {target}" if field_name == "luts" else f">= {target:g} MHz"
        lines.append(f"{name}: {text} (target {bound}: {'met' if met else 'NOT met'})")
    return lines


def _csv_text(results: dict, accuracy: dict, variants, sizes) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for variant in variants:
        for n in sizes:
            under, refuse = accuracy.get(n, {}).get(variant, (None, None))
            for family in FAMILIES:
                result = results.get((variant, n, family))
                if result is None:
                    continue
                writer.writerow({
                    "variant": variant, "label": VARIANT_LABELS[variant],
                    "latency": result["latency"], "n": n, "family": family,
                    "status": result["status"], "device": result["device"] or "",
                    "luts": result["luts"], "carries": result["carries"], "ffs": result["ffs"],
                    "depth": result["depth"], "critical_cells": result["critical_cells"],
                    "fmax_mhz": result["fmax"], "synth_seconds": result["synth_seconds"],
                    "pnr_seconds": result["pnr_seconds"], "mean_under_50": under,
                    "p_refuse_r4_50": refuse, "error": result["error"],
                    "cache_key": result["key"][:16]})
    for (variant, n, family), result in sorted(results.items()):
        if variant.startswith("arbiter_"):
            writer.writerow({
                "variant": variant, "label": design_label(variant), "latency": result["latency"],
                "n": n, "family": family, "status": result["status"],
                "device": result["device"] or "", "luts": result["luts"],
                "carries": result["carries"], "ffs": result["ffs"], "depth": result["depth"],
                "critical_cells": result["critical_cells"], "fmax_mhz": result["fmax"],
                "synth_seconds": result["synth_seconds"], "pnr_seconds": result["pnr_seconds"],
                "mean_under_50": None, "p_refuse_r4_50": None, "error": result["error"],
                "cache_key": result["key"][:16]})
    return buffer.getvalue()


def _settings(timeout: float) -> list[str]:
    versions = {**tool_versions(FAMILIES["ice40"]), **tool_versions(FAMILIES["ecp5"])}
    tools = ", ".join(f"{name} {version}" for name, version in versions.items())
    lines = [f"Tools (PyPI): {tools}."]
    for family in FAMILIES.values():
        devices = ", ".join(device.name for device in family.devices)
        options = " ".join(family.nextpnr_args)
        lines.append(f"{family.title}: `{family.synth}`, nextpnr `{options}`, seed {SEED}, "
                     f"constraint {family.target_mhz} MHz, `clk` on pin "
                     f"{'/'.join(dict.fromkeys(d.clock_pin for d in family.devices))}, devices "
                     f"{devices} (smallest that holds the design), time limit {timeout:g} s.")
    lines.append(f"LUT mapping: ABC9 script `{ABC9_SCRIPT}` (that of `abc9 -fast`) for every "
                 "design; the default script takes over ten minutes per large design in "
                 "WebAssembly.")
    return lines


def _markdown(table_rows, ratios, notes, timeout, arbiter_rows=(), arbiter_text=()) -> str:
    explanation = (
        "Each circuit sits in a register wrapper (`hw/flow/fpga_wrapper.py`): a serial-in shift "
        "register loads an input register that drives the circuit, and the XOR of all its "
        "outputs is registered onto one pin. Latency 1 (the circuit's output register) for "
        "all but the pipelined exact circuit, so fmax is that of the circuit between two "
        "registers. LUT4, carry and FF are the cells of the Yosys-mapped netlist (ECP5 carry = "
        "CCU2C, two LUT4 sites each; ECP5 LUT4s include the halves of the LUT5-LUT7s built "
        "with PFUMX/L6MUX21, so they are not comparable with the iCE40 counts); depth is the "
        "longest path through logic cells (`ltp`, PFUMX and L6MUX21 count as levels); device "
        "is the smallest of the family that holds the design (an HX8K is about twice as fast "
        "as an UP5K, so compare iCE40 fmax within one device); fmax is nextpnr's achieved "
        "figure after routing. 'does not fit' is decided from the synthesized cell count "
        "against the largest device, or by nextpnr running out of logic cells on it; 'timed "
        "out' means nextpnr did not finish within the time limit. 'under @50%' is the mean "
        "under-estimate of the longest free run at 50 % occupancy, 'P(refuse r=4)' the "
        "probability that a request of 4 blocks is refused although it would fit "
        "(model/maxblock_report.py, 20000 words, seed 2026).")
    lines = ["# FPGA area and speed of the max-free-block circuits", "", explanation, ""]
    if table_rows:
        lines += [format_table(table_rows, markdown=True), "", "## Ratios", "",
                  *(f"- {line}" for line in ratios), ""]
    if arbiter_rows:
        lines += ["## The delay-factor arbiter (seed 001)", "",
                  "The arbiter (`hw/arbiter.py`) in the same wrapper and flow; its grant is "
                  "registered, so fmax is that of one decision and its history update.", "",
                  format_arbiter_table(arbiter_rows, markdown=True), "",
                  *(f"- {line}" for line in arbiter_text), ""]
    lines += ["## Settings", "", *(f"- {line}" for line in _settings(timeout))]
    if notes:
        lines += ["", "## Notes", "", *(f"- {line}" for line in notes)]
    return "\n".join(lines) + "\n"
