"""Area and timing in a second technology, the OSU 0.18 µm standard cells: ``make asic-report``.

What it measures: for each build of ``make fpga-report`` (the free-block circuits of
:data:`hw.flow.fpga_variants.VARIANT_LABELS` at :data:`~hw.flow.fpga_variants.SIZES` blocks,
the arbiter rows of :data:`~hw.flow.fpga_variants.ARBITERS`), embodiment 7's shared unit on the
seed's schedule (with the seed's circuit and with the exact tree inside) and the RTL dispatcher
on the small co-simulation shape (:data:`DISPATCHER_CONFIG`, its first policy), each inside the
register wrapper of :class:`hw.flow.fpga_wrapper.RegisterWrapper` (a register on every input
and on every output, so the worst path is the circuit's own logic between registers):

* the **cell count** and the **area** (the Liberty file's unit, µm² in OSU's library) that
  Yosys's ``stat -liberty`` gives after mapping onto the library's cells, flip-flops included;
* the **worst register-to-register path** in ns that OpenSTA finds, and the fmax it implies.

How: Debian's ``yosys`` runs ``synth -flatten``, ``dfflibmap -liberty``, ``abc -liberty`` (with
a 10 ns delay target, :data:`ABC_DELAY_PS`: area-oriented mapping under that target, then
buffering of high-fanout nets and gate sizing), ``opt_clean -purge`` and ``stat -liberty``
(:func:`synth_script`) and writes the mapped netlist; Debian's OpenSTA (the command ``sta``)
reads the Liberty file and the netlist, links ``top``, puts a clock of :data:`PERIOD` ns on
``clk`` and reports the worst setup check from every register's clock pin to every register's
data pin (:func:`sta_script`). The path is the clock period minus that check's slack: the data
arrival plus the capturing flip-flop's setup time, with an ideal clock (no clock tree) and no
wire load (the library defines none: the pins' capacitance only); the input and output ports
are not constrained. The library is the one Debian's ``qflow-tech-osu018`` ships
(:func:`find_liberty`, by ``dpkg -L``).
``make asic-tools`` installs the three packages (as root).

Every build is cached in ``<out>/cache/`` under a key over what decides its netlist (the
build and the sources that generate it, :func:`identity`; not the Verilog text, which Amaranth
changes from process to process), the scripts, the tool versions and the Liberty file's
digest, so a second run generates nothing and only reports. The table is printed with
``rich`` and written with the tool versions and the Liberty file to
``results/asic_report.json`` (``--json``).

A missing tool or Liberty file is one line and exit status 2; Ctrl-C is one line and 130.
Run ``python -m hw.flow.asic_report --help`` for the options.
"""

import argparse
import functools
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DISPATCHER_CONFIG", "PERIOD", "Build", "builds", "find_liberty", "main",
           "parse_sta", "parse_stat", "run_build", "sta_script", "synth_script"]

ROOT = Path(__file__).resolve().parents[2]

#: Version of the flow below (part of every cache key).
FLOW_VERSION = 2

#: The clock period given to OpenSTA (ns); the path is found from the slack, whatever it is.
PERIOD = 10.0

#: ABC's delay target (ps): with ``-D`` Yosys's ABC script maps for area under this delay, then
#: buffers high-fanout nets and sizes the gates (``buffer; upsize; dnsize``). Without it a
#: register driving a few hundred gates through one minimum-size inverter took 16 ns of a
#: 27 ns path (the shared unit's period counter). 10 ns: the 100 MHz of the project's targets.
ABC_DELAY_PS = 10000

#: ABC's constraint file: what drives the inputs it sees and the load on its outputs.
ABC_CONSTRAINTS = "set_driving_cell INVX1\nset_load 0.01\n"

#: The Debian package that ships the Liberty file, and where it puts it.
LIBERTY_PACKAGE = "qflow-tech-osu018"
LIBERTY_DEFAULT = Path("/usr/share/qflow/tech/osu018/osu018_stdcells.lib")

#: The commands: Debian's Yosys and OpenSTA (which Debian installs as ``sta``).
TOOLS = {"yosys": "yosys", "sta": "opensta"}

#: The dispatcher's shape: the small co-simulation scenario.
DISPATCHER_CONFIG = ROOT / "configs" / "cosim" / "default_small.toml"

#: Where the measured rows are kept in the repository.
RESULTS = ROOT / "results" / "asic_report.json"

INSTALL_HINT = ("`make asic-tools` installs Debian's yosys, opensta and qflow-tech-osu018 "
                "(as root)")


class MissingTool(RuntimeError):
    """A tool or the Liberty file is not installed; the message is one line."""


# -- the tools ------------------------------------------------------------------------------------

def find_liberty() -> Path:
    """The Liberty file of ``qflow-tech-osu018``: the ``.lib`` that ``dpkg -L`` lists (the
    known path when dpkg is not there). Raises :class:`MissingTool`."""
    if shutil.which("dpkg"):
        listing = subprocess.run(["dpkg", "-L", LIBERTY_PACKAGE], capture_output=True,
                                 text=True, check=False)
        libraries = [Path(line) for line in listing.stdout.splitlines()
                     if line.endswith(".lib") and Path(line).is_file()]
        if libraries:
            return libraries[0]
    if LIBERTY_DEFAULT.is_file():
        return LIBERTY_DEFAULT
    raise MissingTool(f"asic-report: the OSU 0.18 µm Liberty file is missing (package "
                      f"{LIBERTY_PACKAGE}); {INSTALL_HINT}")


def check_tools() -> dict[str, str]:
    """The path of each command of :data:`TOOLS`. Raises :class:`MissingTool`."""
    found = {}
    for command, package in TOOLS.items():
        path = shutil.which(command)
        if path is None:
            raise MissingTool(f"asic-report: `{command}` is not on PATH (Debian package "
                              f"{package}); {INSTALL_HINT}")
        found[command] = path
    return found


def tool_versions() -> dict[str, str]:
    """``yosys -V`` and ``sta -version``, one line each."""
    yosys = subprocess.run(["yosys", "-V"], capture_output=True, text=True, check=False)
    sta = subprocess.run(["sta", "-version"], capture_output=True, text=True, check=False,
                         stdin=subprocess.DEVNULL)
    return {"yosys": yosys.stdout.strip(), "opensta": sta.stdout.strip()}


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the scripts and their output -----------------------------------------------------------------

def synth_script(liberty: Path) -> str:
    """Yosys: flat synthesis of module ``top`` in ``top.v`` onto the cells of ``liberty``
    (ABC with the delay target :data:`ABC_DELAY_PS` and the constraints of ``abc.constr``,
    :data:`ABC_CONSTRAINTS`); ``stat.txt`` with the cells and area, ``netlist.v`` for
    OpenSTA."""
    return "\n".join([
        "read_verilog top.v",
        "synth -flatten -top top",
        f"dfflibmap -liberty {liberty}",
        f"abc -D {ABC_DELAY_PS} -constr abc.constr -liberty {liberty}",
        "opt_clean -purge",
        f"tee -q -o stat.txt stat -liberty {liberty}",
        "write_verilog -noattr -noexpr -nohex -nodec netlist.v",
        "",
    ])


def sta_script(liberty: Path, period: float = PERIOD) -> str:
    """OpenSTA: the worst setup path from a register's clock pin to a register's data pin of
    ``netlist.v`` (module ``top``, clock port ``clk``)."""
    return "\n".join([
        f"read_liberty {liberty}",
        "read_verilog netlist.v",
        "link_design top",
        f"create_clock -name clk -period {period:g} [get_ports clk]",
        "report_checks -path_delay max -from [all_registers -clock_pins] "
        "-to [all_registers -data_pins] -digits 3",
        "exit",
        "",
    ])


def parse_stat(text: str) -> dict:
    """Cells, flip-flops (cells named ``DFF*``) and area from Yosys's ``stat -liberty`` text
    (of a flattened design: one module). Raises ValueError when it has no area."""
    cells = re.search(r"Number of cells:\s+(\d+)", text)
    area = re.search(r"Chip area for (?:module|top module) '[^']*':\s+([\d.]+)", text)
    if cells is None or area is None:
        raise ValueError("no cell count or chip area in Yosys's stat output")
    kinds = {kind: int(count) for kind, count in
             re.findall(r"^\s+([A-Za-z_][\w$]*)\s+(\d+)\s*$", text[cells.end():area.start()],
                        re.MULTILINE)}
    flops = sum(count for kind, count in kinds.items() if kind.startswith("DFF"))
    return {"cells": int(cells.group(1)), "ffs": flops, "area": float(area.group(1)),
            "cell_types": kinds}


def parse_sta(text: str, period: float = PERIOD) -> dict:
    """The worst register-to-register path of an OpenSTA ``report_checks`` text: its slack,
    the path (``period - slack``, ns: arrival plus setup), its start and end points. Path
    ``None`` when the report has no path ("No paths found."). Raises ValueError on an
    ``Error:`` line (OpenSTA exits 0 after one: a design without registers has no
    ``-from``) or on a report without a slack."""
    slack = re.search(r"^\s*(-?[\d.]+)\s+slack \((MET|VIOLATED)\)", text, re.MULTILINE)
    if slack is None:
        if "No paths found" in text:
            return {"slack": None, "path_ns": None, "startpoint": None, "endpoint": None}
        error = re.search(r"^Error: (.*)$", text, re.MULTILINE)
        raise ValueError("OpenSTA: " + (error.group(1) if error else "no slack in its report"))
    start = re.search(r"^Startpoint: (\S+)", text, re.MULTILINE)
    end = re.search(r"^Endpoint: (\S+)", text, re.MULTILINE)
    value = float(slack.group(1))
    return {"slack": value, "path_ns": round(period - value, 3),
            "startpoint": start.group(1) if start else None,
            "endpoint": end.group(1) if end else None}


# -- the builds -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Build:
    """One row: ``key`` (unique, the work directory's name), ``group`` and ``label`` for the
    table, ``n`` (blocks or slots, None for the dispatcher)."""

    key: str
    group: str
    label: str
    n: int | None = None


def builds(sizes: Sequence[int] | None = None, variants: Sequence[str] | None = None,
           *, shared: bool = True, arbiters: bool = True, dispatcher: bool = True) -> list[Build]:
    """The rows, in table order (see the module docstring)."""
    from hw.flow.fpga_variants import ARBITERS, SIZES, VARIANT_LABELS, design_label
    sizes = SIZES if sizes is None else sizes
    variants = tuple(VARIANT_LABELS) if variants is None else variants
    rows = [Build(f"{variant}_n{n}", "free block", design_label(variant), n)
            for variant in variants for n in sizes]
    if shared:
        rows += [Build("shared_seed", "free block", "shared unit (emb. 7), seed's circuit", 128),
                 Build("shared_exact", "free block", "shared unit (emb. 7), exact tree", 128)]
    if arbiters:
        rows += [Build(f"arbiter_{key}", "arbiter", design_label(f"arbiter_{key}"),
                       params.tasks) for key, (_, params) in ARBITERS.items()]
    if dispatcher:
        rows.append(Build("dispatcher_small", "dispatcher", "dispatcher, co-simulation shape "
                          "small (flat)"))
    return rows


def _dispatcher_shape():
    from hw.flow.generate_dispatcher import dispatcher_shape
    shape, _, _ = dispatcher_shape(DISPATCHER_CONFIG)
    return shape


#: The sources that decide the Verilog of every build (with Amaranth's version, in every key).
SOURCES = ("hw/*.py", "hw/maxblock/*.py", "hw/dispatch/*.py", "hw/flow/fpga_variants.py",
           "hw/flow/fpga_wrapper.py", "hw/flow/dispatch_build.py", "model/arbiter.py",
           "model/maxblock.py")


def _sources_digest() -> str:
    from importlib import metadata
    digest = hashlib.sha256(metadata.version("amaranth").encode())
    for path in sorted({path for pattern in SOURCES for path in ROOT.glob(pattern)}):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def identity(build: Build) -> dict:
    """What decides ``build``'s netlist, for the cache key, without generating it: the build,
    the sources of :data:`SOURCES` and the flat-port adapter; the dispatcher's shape. Not the
    Verilog text: Amaranth orders a submodule's ports by string hashes, so the text of the
    exact tree or the dispatcher differs from one Python process to the next."""
    from hw.flow.fpga_dispatch import _FlatPorts
    found = {"build": build.key, "sources": _sources_digest(),
             "ports": inspect.getsource(_FlatPorts)}
    if build.key == "dispatcher_small":
        found["shape"] = _dispatcher_shape().to_json()
    return found


@functools.cache
def verilog_text(build: Build) -> str:
    """The Verilog of ``build`` in the register wrapper, module ``top``, no source locations
    (kept for the process: the cache key and the run read the same text)."""
    from amaranth.back import verilog

    from hw.flow.fpga_dispatch import _FlatPorts
    from hw.flow.fpga_variants import generate_arbiter_verilog, generate_verilog
    from hw.flow.fpga_wrapper import RegisterWrapper
    if build.key.startswith("arbiter_"):
        return generate_arbiter_verilog(build.key.removeprefix("arbiter_"))
    if build.key.startswith("shared_"):
        from hw.shared_maxblock import SharedMaxFreeBlock
        unit = SharedMaxFreeBlock(exact=build.key == "shared_exact")
        return verilog.convert(RegisterWrapper(_FlatPorts(unit)), name="top", emit_src=False)
    if build.key == "dispatcher_small":
        dut = _FlatPorts(_dispatcher_shape().dispatcher())
        return verilog.convert(RegisterWrapper(dut), name="top", emit_src=False)
    variant, n = build.key.rsplit("_n", 1)
    return generate_verilog(variant, int(n))


def _run(command: list[str], directory: Path, log: str, timeout: float | None) -> None:
    with open(directory / log, "w") as out:
        run = subprocess.run(command, cwd=directory, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, timeout=timeout, check=False)
    if run.returncode != 0:
        tail = (directory / log).read_text().strip().splitlines()[-3:]
        raise RuntimeError(f"{command[0]} exited with {run.returncode}: " + " | ".join(tail))


def run_build(verilog: str, directory: Path, liberty: Path, timeout: float | None = None) -> dict:
    """Yosys then OpenSTA on ``verilog`` (module ``top``) in ``directory``: the counts of
    :func:`parse_stat`, the path of :func:`parse_sta`, its fmax (MHz) and the seconds."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "top.v").write_text(verilog)
    (directory / "synth.ys").write_text(synth_script(liberty))
    (directory / "abc.constr").write_text(ABC_CONSTRAINTS)
    (directory / "sta.tcl").write_text(sta_script(liberty))
    started = time.monotonic()
    _run(["yosys", "-q", "-l", "synth.log", "-s", "synth.ys"], directory, "yosys.out", timeout)
    synth_seconds = time.monotonic() - started
    stat = parse_stat((directory / "stat.txt").read_text())
    started = time.monotonic()
    _run(["sta", "-no_splash", "-exit", "sta.tcl"], directory, "sta.log", timeout)
    sta_seconds = time.monotonic() - started
    timing = parse_sta((directory / "sta.log").read_text())
    path = timing["path_ns"]
    return {**stat, **timing, "fmax": round(1000 / path, 1) if path else None,
            "synth_seconds": round(synth_seconds, 1), "sta_seconds": round(sta_seconds, 1)}


def _cache_key(build: Build, liberty: Path, versions: dict) -> str:
    material = {"flow": FLOW_VERSION, "build": build.key, "identity": identity(build),
                "synth": synth_script(Path("LIB")), "constr": ABC_CONSTRAINTS,
                "sta": sta_script(Path("LIB")),
                "liberty": _file_digest(liberty), "tools": versions}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _measure(build: Build, work: Path, cache: Path, liberty: Path, key: str,
             timeout: float | None) -> dict:
    result = run_build(verilog_text(build), work / build.key, liberty, timeout)
    result = {"key": build.key, "group": build.group, "label": build.label, "n": build.n,
              **result}
    temporary = cache / f"{key}.{os.getpid()}.tmp"
    temporary.write_text(json.dumps(result, indent=1))
    temporary.replace(cache / f"{key}.json")
    return result


# -- the report -----------------------------------------------------------------------------------

HEADERS = ("build", "n", "cells", "flip-flops", "area µm²", "worst reg-to-reg ns", "fmax MHz")


def table_rows(results: list[dict]) -> list[list]:
    """The rows of :data:`HEADERS` (``-`` where a value is missing)."""
    rows = []
    for r in results:
        rows.append([r["label"], r["n"] if r["n"] is not None else "-", r["cells"], r["ffs"],
                     round(r["area"]), r["path_ns"] if r["path_ns"] is not None else "-",
                     r["fmax"] if r["fmax"] is not None else "-"])
    return rows


def _describe(result: dict) -> str:
    path = f"{result['path_ns']:.2f} ns" if result["path_ns"] is not None else "no reg-to-reg path"
    return (f"{result['cells']} cells, {result['area']:.0f} µm², {path}; "
            f"yosys {result['synth_seconds']:.0f} s, sta {result['sta_seconds']:.0f} s")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: measure (or read from the cache) every build, print and write the table."""
    from hw.flow.fpga_variants import SIZES, available_variants
    parser = argparse.ArgumentParser(prog="python -m hw.flow.asic_report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/reports"),
                        help="directory of asic/cache and asic/work (default: %(default)s)")
    parser.add_argument("--json", type=Path, default=RESULTS,
                        help="the results file (default: results/asic_report.json)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="comma-separated block counts (default: %(default)s)")
    parser.add_argument("--variants", default=",".join(available_variants()),
                        help="comma-separated free-block variants, or none "
                             "(default: %(default)s)")
    parser.add_argument("--no-shared", action="store_true", help="leave out the shared unit")
    parser.add_argument("--no-arbiter", action="store_true", help="leave out the arbiter")
    parser.add_argument("--no-dispatcher", action="store_true",
                        help="leave out the dispatcher")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="builds at a time (default: %(default)s)")
    parser.add_argument("--cached-only", action="store_true",
                        help="run no tool: report the cached builds, list the others as "
                             "not measured")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds allowed to one tool run (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        sizes = [int(size) for size in args.sizes.split(",") if size]
    except ValueError:
        parser.error(f"--sizes must be comma-separated integers, not {args.sizes!r}")
    variants = [] if args.variants == "none" else [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(available_variants()))
    if unknown:
        parser.error(f"unknown variants {', '.join(unknown)}; choose from "
                     f"{', '.join(available_variants())}")
    try:
        return _report(args, builds(sizes, variants, shared=not args.no_shared,
                                    arbiters=not args.no_arbiter,
                                    dispatcher=not args.no_dispatcher))
    except MissingTool as error:
        print(error, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("asic-report: interrupted; the builds finished so far are in the cache",
              file=sys.stderr)
        return 130


def _report(args, rows: list[Build]) -> int:
    check_tools()
    liberty = find_liberty()
    versions = tool_versions()
    began = time.monotonic()
    cache = args.out / "asic" / "cache"
    work = args.out / "asic" / "work"
    cache.mkdir(parents=True, exist_ok=True)
    print(f"asic-report: {len(rows)} builds on {liberty} ({versions['yosys']}; OpenSTA "
          f"{versions['opensta']}), {args.jobs} at a time", flush=True)
    results: dict[str, dict] = {}
    failures: list[str] = []
    pending = []
    for build in rows:
        key = _cache_key(build, liberty, versions)
        entry = cache / f"{key}.json"
        if entry.exists():
            results[build.key] = json.loads(entry.read_text())
            print(f"[{len(results):2}/{len(rows)}] {build.key}: "
                  f"{_describe(results[build.key])} (cached)", flush=True)
        else:
            pending.append((build, key))
    skipped = []
    if args.cached_only:
        skipped, pending = [build.key for build, _ in pending], []
    fresh = len(pending)
    # The dispatcher (the slowest) first, then the rest in table order.
    pending.sort(key=lambda job: job[0].group != "dispatcher")
    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    try:
        running = {pool.submit(_measure, build, work, cache, liberty, key, args.timeout): build
                   for build, key in pending}
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                build = running.pop(future)
                try:
                    results[build.key] = future.result()
                except (RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
                    failures.append(f"{build.key}: {error}")
                    print(f"[{len(results) + len(failures):2}/{len(rows)}] {build.key}: "
                          f"failed: {error}", flush=True)
                    continue
                print(f"[{len(results) + len(failures):2}/{len(rows)}] {build.key}: "
                      f"{_describe(results[build.key])}", flush=True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    ordered = [results[build.key] for build in rows if build.key in results]
    from model.report import print_table
    print()
    print_table("OSU 0.18 µm standard cells (Yosys + OpenSTA)", HEADERS, table_rows(ordered),
                caption=f"each build in the register wrapper; path = clock period − worst "
                        f"reg-to-reg setup slack (ideal clock); {liberty.name}")
    elapsed = time.monotonic() - began
    record = {"liberty": str(liberty), "liberty_sha256": _file_digest(liberty),
              "liberty_package": LIBERTY_PACKAGE, "tools": versions,
              "flow": {"yosys": synth_script(liberty).strip().splitlines(),
                       "abc.constr": ABC_CONSTRAINTS.strip().splitlines(),
                       "opensta": sta_script(liberty).strip().splitlines()},
              "dispatcher_config": str(DISPATCHER_CONFIG.relative_to(ROOT)),
              "rows": ordered}
    if failures:
        record["failures"] = failures
    if skipped:
        record["not_measured"] = skipped
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(record, indent=1) + "\n")
    for line in failures:
        print("failed: " + line)
    if skipped:
        print(f"not measured (--cached-only): {', '.join(skipped)}")
    print(f"\nWrote {args.json}: {fresh} builds run, {len(rows) - fresh - len(skipped)} from "
          f"the cache, "
          f"{elapsed:.0f} s ({elapsed / 60:.1f} min).")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
