"""Area and speed of every max-free-block variant on iCE40 and ECP5: ``make fpga-report``.

Each variant (:data:`VARIANT_LABELS`) at each block count is wrapped in
:class:`hw.flow.fpga_wrapper.RegisterWrapper`, converted to Verilog, synthesized with Yosys
(``synth_ice40`` and ``synth_ecp5``, LUT mapping with ABC9's fast script, see
:data:`ABC9_SCRIPT`) and placed and routed with nextpnr (fixed seed) on the smallest device of
the family that holds it, all with the YoWASP (WebAssembly) builds of the tools from PyPI. A
design whose synthesized cells exceed the largest device is reported as "does not fit" without
a place-and-route; one whose nextpnr run exceeds the time limit as "timed out". The report
gives the cells of the mapped netlist, its logic depth, the device and the fmax that nextpnr's
timing analysis reports, next to the accuracy of the approximate variants from
:mod:`model.maxblock_report`; it is printed and written to ``<out>/fpga.md`` and
``<out>/fpga.csv``.

The delay-factor arbiter of seed 001 (:mod:`hw.arbiter`) is measured the same way, in rows of
its own after the free-block circuits (:data:`ARBITERS`: the seed's settings at 8 slots and 3
classes, the setting the fairness benchmark proposes), against the targets
:data:`ARBITER_TARGETS`; ``--arbiters`` picks them and ``--variants none`` leaves the
free-block circuits out, so ``python -m hw.flow.fpga_report --variants none`` reports only
the arbiter.

Every (variant, n, family) result is cached in ``<out>/cache/`` under a key that hashes the
generated Verilog, the tool versions, the devices and every flag of the flow, so a second run
only regenerates the Verilog and prints the same table. Jobs run in a process pool (two by
default), largest first.

This module is the driver: the command line, the process pool and the cache directory. The
designs and their Verilog are in :mod:`hw.flow.fpga_variants`, one synthesis and
place-and-route run with its cache key in :mod:`hw.flow.fpga_flow`, the tables and the
Markdown and CSV files in :mod:`hw.flow.fpga_tables`; every name of those modules that this
one had is still importable from here.

Run ``python -m hw.flow.fpga_report --help`` for the options.
"""

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict
from pathlib import Path

from hw.flow.fpga_flow import ABC9_SCRIPT as ABC9_SCRIPT
from hw.flow.fpga_flow import (
    DEFAULT_TIMEOUT,
    FAMILIES,
    Device,
    Family,
    FlowResult,
    _job_name,
    cache_key,
    run_flow,
)
from hw.flow.fpga_flow import FLOW_VERSION as FLOW_VERSION
from hw.flow.fpga_flow import SEED as SEED
from hw.flow.fpga_flow import _constraint_file as _constraint_file
from hw.flow.fpga_flow import _critical_cells as _critical_cells
from hw.flow.fpga_flow import _last_error as _last_error
from hw.flow.fpga_flow import _no_room as _no_room
from hw.flow.fpga_flow import nextpnr_command as nextpnr_command
from hw.flow.fpga_flow import synth_script as synth_script
from hw.flow.fpga_flow import tool_versions as tool_versions
from hw.flow.fpga_tables import ARBITER_HEADERS as ARBITER_HEADERS
from hw.flow.fpga_tables import CSV_FIELDS as CSV_FIELDS
from hw.flow.fpga_tables import TABLE_HEADERS as TABLE_HEADERS
from hw.flow.fpga_tables import (
    _arbiter_rows,
    _csv_text,
    _markdown,
    _rows,
    arbiter_lines,
    format_arbiter_table,
    format_ratios,
    format_table,
)
from hw.flow.fpga_variants import ACCURACY_OCCUPANCY as ACCURACY_OCCUPANCY
from hw.flow.fpga_variants import ACCURACY_REQUEST as ACCURACY_REQUEST
from hw.flow.fpga_variants import (
    ARBITER_TARGETS,
    ARBITERS,
    SIZES,
    VARIANT_LABELS,
    accuracy_columns,
    available_variants,
    build_dut,
    design_label,
    generate_arbiter_verilog,
    generate_verilog,
    variant_latency,
)

# The ``name as name`` imports above are the names that hw.flow.fpga_dispatch,
# hw.flow.dispatch_stages and the tests import from here, as before the split.
__all__ = [
    "ARBITERS",
    "ARBITER_TARGETS",
    "FAMILIES",
    "SIZES",
    "VARIANT_LABELS",
    "Device",
    "Family",
    "FlowResult",
    "accuracy_columns",
    "available_variants",
    "build_dut",
    "cache_key",
    "arbiter_lines",
    "design_label",
    "format_arbiter_table",
    "format_ratios",
    "format_table",
    "generate_arbiter_verilog",
    "generate_verilog",
    "main",
    "run_flow",
    "variant_latency",
]


# -- the driver -----------------------------------------------------------------------------------

def _expected_cost(variant: str, n: int) -> int:
    # A rough cost for ordering the jobs: the full circuit grows as n², the others as n log n;
    # the arbiter places and routes in about the time of the exact circuit at n = 128.
    if variant.startswith("arbiter_"):
        return 4 * 128 * 8
    return n * n if variant == "full" else 4 * n * n.bit_length()


def _generate_job(variant: str, n: int) -> tuple[str, int, str]:
    if variant.startswith("arbiter_"):
        return variant, n, generate_arbiter_verilog(variant.removeprefix("arbiter_"))
    return variant, n, generate_verilog(variant, n)


def _describe(result: dict) -> str:
    cells = f"{result['luts']} LUT4" if result["luts"] is not None else "no netlist"
    if result["status"] == "ok":
        outcome = f"{result['device']}, {result['fmax']:.1f} MHz"
    else:
        outcome = result["status"] + (f" ({result['error']})" if result["error"] else "")
    times = f"synth {result['synth_seconds'] or 0:.0f} s, P&R {result['pnr_seconds'] or 0:.0f} s"
    return f"{cells}, {outcome}; {times}"


def _parse_list(text: str, allowed: Sequence, convert=str) -> list:
    values = [convert(item) for item in text.split(",") if item]
    for value in values:
        if value not in allowed:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not one of {', '.join(map(str, allowed))}")
    return values


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: run (or read from the cache) every job, print and write the report."""
    parser = argparse.ArgumentParser(prog="python -m hw.flow.fpga_report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/reports"),
                        help="directory of fpga.md, fpga.csv, cache/ and work/ "
                             "(default: %(default)s)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="comma-separated block counts (default: %(default)s)")
    parser.add_argument("--variants", default=",".join(available_variants()),
                        help="comma-separated variants, or none (default: %(default)s)")
    parser.add_argument("--arbiters", default=",".join(ARBITERS),
                        help="comma-separated arbiter rows, or none (default: %(default)s)")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="comma-separated families (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="parallel jobs (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds allowed to one nextpnr run (default: %(default)s)")
    parser.add_argument("--no-cache", action="store_true",
                        help="run every job again (the cache is still written)")
    args = parser.parse_args(argv)
    try:
        sizes = _parse_list(args.sizes, range(1, 1 << 16), int)
        variants = ([] if args.variants == "none"
                    else _parse_list(args.variants, available_variants()))
        arbiters = [] if args.arbiters == "none" else _parse_list(args.arbiters, list(ARBITERS))
        families = _parse_list(args.families, list(FAMILIES))
    except (argparse.ArgumentTypeError, ValueError) as error:
        parser.error(str(error))

    began = time.monotonic()
    out = args.out
    cache = out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    results: dict[tuple[str, int, str], dict] = {}
    designs = [(variant, n) for variant in variants for n in sizes] + [
        (f"arbiter_{key}", ARBITERS[key][1].tasks) for key in arbiters]
    total = len(designs) * len(families)
    done = 0
    fresh = 0
    print(f"fpga-report: {total} jobs ({len(variants)} variants x {len(sizes)} sizes and "
          f"{len(arbiters)} arbiters, x {len(families)} families), {args.jobs} at a time",
          flush=True)

    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        generated = [pool.submit(_generate_job, variant, n) for variant, n in designs]
        # Flow jobs, the largest circuits first, so that the longest runs start early.
        pending_jobs = []
        for future in generated:
            variant, n, verilog = future.result()
            for family in families:
                key = cache_key(verilog, FAMILIES[family], timeout=args.timeout)
                entry = cache / f"{key}.json"
                if entry.exists() and not args.no_cache:
                    results[(variant, n, family)] = json.loads(entry.read_text())
                    done += 1
                    print(f"[{done:2}/{total}] {_job_name(variant, n, FAMILIES[family])}: "
                          f"{_describe(results[(variant, n, family)])} (cached)", flush=True)
                    continue
                weight = _expected_cost(variant, n) * (2 if family == "ecp5" else 1)
                pending_jobs.append((weight, variant, n, family, verilog, key))
        pending_jobs.sort(key=lambda job: -job[0])
        running: dict[Future, tuple] = {}
        for _, variant, n, family, verilog, key in pending_jobs:
            work = out / "work" / f"{variant}_n{n}_{family}"
            future = pool.submit(run_flow, variant, n, family, verilog, str(work),
                                 args.timeout, key)
            running[future] = (variant, n, family, key)
        accuracy = {n: accuracy_columns(n) for n in sizes} if variants else {}
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                variant, n, family, key = running.pop(future)
                try:
                    result = future.result()
                except Exception as error:          # a crash of the worker itself
                    result = asdict(FlowResult(variant, n, family,
                                               variant_latency(variant, n),
                                               error=f"{type(error).__name__}: {error}",
                                               key=key))
                results[(variant, n, family)] = result
                if result["status"] != "failed":    # a failure is retried on the next run
                    temporary = cache / f"{key}.json.tmp"
                    temporary.write_text(json.dumps(result, indent=1))
                    temporary.replace(cache / f"{key}.json")
                done += 1
                fresh += 1
                print(f"[{done:2}/{total}] {_job_name(variant, n, FAMILIES[family])}: "
                      f"{_describe(result)}", flush=True)

    rows = _rows(results, accuracy, variants, sizes)
    ratios = format_ratios(results) if variants else []
    arbiter_rows = _arbiter_rows(results, arbiters)
    arbiter_text = arbiter_lines(results) if "seed" in arbiters else []
    notes = [f"{_job_name(r['variant'], r['n'], FAMILIES[r['family']])}: "
             f"{r['status']}: {r['error']}"
             for key, r in sorted(results.items()) if r["status"] != "ok"]
    if rows:
        print()
        print(format_table(rows))
        print()
        for line in ratios:
            print(line)
    if arbiter_rows:
        print()
        print(format_arbiter_table(arbiter_rows))
        print()
        for line in arbiter_text:
            print(line)
    for line in notes:
        print("note: " + line)
    (out / "fpga.md").write_text(_markdown(rows, ratios, notes, args.timeout, arbiter_rows,
                                           arbiter_text))
    (out / "fpga.csv").write_text(_csv_text(results, accuracy, variants, sizes))
    elapsed = time.monotonic() - began
    print(f"\nWrote {out / 'fpga.md'} and {out / 'fpga.csv'}: {fresh} jobs run, "
          f"{total - fresh} from the cache, {elapsed:.0f} s ({elapsed / 60:.1f} min).")
    return 1 if any(r["status"] == "failed" for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
