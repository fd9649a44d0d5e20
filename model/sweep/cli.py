"""``gpusched sweep SWEEP.toml`` runs a sweep; ``gpusched sweep report STORE`` reports one.

Running: the sweep file is read, every point built, resolved and checked by its command's own
loader (:mod:`model.sweep.plan`) -- a bad file is one line naming the axis, status 2, before
anything runs -- then the points missing from the store run on the local pool (``--workers``)
or on Dask (``--scheduler``), each stored as it finishes; then the report (unless
``--no-report``). Status 1 when points failed (each failure is stored with its traceback; the
next run tries them again), 130 on Ctrl-C (what finished is in the store).

Reporting: tables on stdout, plots in ``--plots`` (default ``build/sweeps``), ``--csv FILE``.
See ``docs/sweep.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tomllib
from pathlib import Path

from model.cli import SUBCOMMANDS, positive_int
from model.config import ConfigError
from model.sweep import report as sweep_report
from model.sweep.engine import engine_for
from model.sweep.plan import build_plan
from model.sweep.runner import run_plan
from model.sweep.spec import load_sweep, value_text
from model.sweep.store import Store
from model.sweep.worker import POINT_MODULES

__all__ = ["DEFAULT_FOLDER", "add_arguments", "run"]

#: Where stores, plots and CSV go by default.
DEFAULT_FOLDER = Path("build/sweeps")

#: The commands a sweep file may name: every system model, and the ``noop`` drill.
COMMANDS = tuple(name for name in (*SUBCOMMANDS, "noop") if name in POINT_MODULES)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = ("gpusched sweep [options] SWEEP.toml\n"
                    "       gpusched sweep report [options] STORE")
    parser.add_argument("target", nargs="+", metavar="SWEEP.toml | report STORE",
                        help="a sweep file to run, or 'report' and a results store")
    running = parser.add_argument_group("running a sweep")
    running.add_argument("--store", type=Path, metavar="FILE",
                         help="the results store (SQLite; default build/sweeps/<sweep file's "
                              "stem>.sqlite)")
    running.add_argument("--workers", type=positive_int, metavar="N",
                         help="processes of the local pool (default: every core)")
    running.add_argument("--scheduler", metavar="ADDRESS",
                         help="run on Dask distributed instead: tcp://HOST:8786, a scheduler "
                              "file FILE.json, or dask-local:N (needs pip install '.[cluster]')")
    running.add_argument("--quick", action="store_true",
                         help="every point as the subcommand's --quick (also: quick = true in "
                              "the file); quick results are stored apart from full ones")
    running.add_argument("--dry-run", action="store_true",
                         help="check the file and count the points (and those already in the "
                              "store); run nothing")
    running.add_argument("--no-report", action="store_true",
                         help="no tables or plots after the run")
    reporting = parser.add_argument_group("the report (after a run, or 'report STORE')")
    reporting.add_argument("--sweep", metavar="NAME",
                           help="report STORE: only this sweep (default: every sweep in it)")
    reporting.add_argument("--metric", action="append", metavar="NAME",
                           help="a metric to tabulate (repeatable; default: the file's "
                                "[report] metrics, else the model's headline metrics)")
    reporting.add_argument("--baseline", action="append", type=_selector, metavar="KEY=VALUE",
                           help="compare every row with the one that differs only here, seed "
                                "by seed: policy=exact, policies.circuit_latency=0 "
                                "(repeatable; VALUE as in TOML; default: the file's)")
    reporting.add_argument("--plots", type=Path, metavar="DIR",
                           help="where the PNG plots go (default build/sweeps)")
    reporting.add_argument("--no-plots", action="store_true", help="no plots")
    reporting.add_argument("--csv", type=Path, metavar="FILE",
                           help="write the summary as CSV, and every seed's numbers to "
                                "FILE-stem_seeds.csv")


def _selector(text: str) -> tuple[str, object]:
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"must be KEY=VALUE, not {text!r}")
    try:
        parsed = tomllib.loads(f"value = {value.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()                 # a bare word: a policy's name
    return key.strip(), parsed


def _report(store: Store, entry: dict, args, record, *, several: bool = False) -> int:
    members = store.members(entry["id"])
    summary = sweep_report.summarise(entry["name"], entry["definition"], members,
                                     metrics=args.metric, baseline=args.baseline)
    if summary.computed == 0:
        print(f"sweep {entry['name']}: no point has a result yet ({summary.total} points)",
              file=sys.stderr)
        return 0
    sweep_report.print_summary(summary)
    if not args.no_plots:
        folder = args.plots or DEFAULT_FOLDER
        for path in sweep_report.plots(summary, entry["definition"], folder):
            print(f"  plot: {path}")
    if args.csv is not None:
        target = args.csv
        if several:       # one file per sweep
            target = target.with_name(f"{target.stem}_{sweep_report.slug(entry['name'])}"
                                      f"{target.suffix}")
        for path in sweep_report.write_csv(summary, target):
            print(f"  csv: {path}")
    if record is not None:
        axes = summary.axes
        points = {}
        for member in members:
            label = ", ".join([*(f"{axis} = {value_text(value)}" for axis, value
                                 in zip(axes, member["axes"], strict=True)),
                               f"policy {member['policy']}", f"seed {member['seed']}"])
            points[label] = {"axes": dict(zip(axes, member["axes"], strict=True)),
                             "policy": member["policy"], "seed": member["seed"],
                             "metrics": member["metrics"]}
        record.scenario(entry["name"], {
            "store": str(store.path), "sweep_file": entry["file"],
            "command": entry["command"], "points": summary.total,
            "computed": summary.computed, "summary": sweep_report.as_json(summary),
            "policies": points}, file=entry["file"])
    return 0


def _run_report(args) -> int:
    if len(args.target) != 2:
        raise ConfigError("sweep report takes one results store: gpusched sweep report STORE")
    store_path = Path(args.target[1])
    args.record.input_file(store_path)
    with Store(store_path, create=False) as store:
        entries = store.sweeps()
        if args.sweep is not None:
            entries = [entry for entry in entries if entry["name"] == args.sweep]
            if not entries:
                names = ", ".join(entry["name"] for entry in store.sweeps()) or "none"
                raise ConfigError(f"{store_path}: has no sweep named {args.sweep!r} "
                                  f"(it has: {names})")
        if not entries:
            raise ConfigError(f"{store_path}: holds no sweep")
        for entry in entries:
            _report(store, entry, args, args.record, several=len(entries) > 1)
    return 0


def run(args) -> int:
    if args.target[0] == "report":
        return _run_report(args)
    if len(args.target) != 1:
        raise ConfigError("sweep takes one sweep file: gpusched sweep SWEEP.toml "
                          "(or: gpusched sweep report STORE)")
    path = Path(args.target[0])
    if args.sweep is not None:
        raise ConfigError("--sweep chooses a sweep of 'report STORE'; a sweep file names its "
                          "own")
    record = args.record
    sweep = load_sweep(path, COMMANDS)
    if args.quick:
        sweep = dataclasses.replace(sweep, quick=True)
    record.input_file(path)
    record.input_file(sweep.base)
    planned = build_plan(sweep)
    store_path = args.store or DEFAULT_FOLDER / f"{path.stem}.sqlite"
    if args.dry_run:                 # nothing is written, not even an empty store
        total = len(planned.keys)
        have = 0
        if store_path.is_file():
            with Store(store_path, create=False) as store:
                have = len(store.done(planned.keys))
        print(f"sweep {sweep.name}: {total} points ({len(sweep.axes)} axes, "
              f"{len({p.policy for p in planned.points})} policies, {len(sweep.seeds)} "
              f"seeds), {have} already in {store_path}, {total - have} to compute; "
              f"nothing run (--dry-run)")
        return 0
    with Store(store_path) as store:
        engine = engine_for(args.scheduler, args.workers)
        names = sweep.axis_names
        record.note(sweep=sweep.name, store=str(store_path), engine=engine.description)

        def stored(point, metrics):
            record.add(sweep.name, point.label(names),
                       {"axes": dict(zip(names, point.axes, strict=True)),
                        "policy": point.policy, "seed": point.seed, "metrics": metrics},
                       file=path)

        try:
            outcome = run_plan(planned, store, engine, quiet=args.quiet, on_point=stored)
        finally:
            engine.close()
        rate = (f", {outcome.rate:.3g} points/s" if outcome.computed else "")
        reruns = (f"; {outcome.reruns} re-run after a worker died" if outcome.reruns else "")
        if outcome.stored == outcome.total:
            print(f"sweep {sweep.name}: all {outcome.total} points are already in {store_path}",
                  file=sys.stderr)
        else:
            print(f"sweep {sweep.name}: {outcome.total} points: {outcome.computed} computed in "
                  f"{outcome.seconds:.1f} s on {engine.description}{rate}, {outcome.stored} "
                  f"already in {store_path}{reruns}"
                  + (f"; {len(outcome.failed)} failed" if outcome.failed else ""),
                  file=sys.stderr)
        record.note(points=outcome.total, computed=outcome.computed, from_store=outcome.stored,
                    failed=len(outcome.failed), seconds=round(outcome.seconds, 3),
                    points_per_second=outcome.rate, reruns=outcome.reruns, run=outcome.run)
        for point, error in outcome.failed[:5]:
            print(f"  failed: {point.label(names)}: {error.splitlines()[0]}", file=sys.stderr)
        if len(outcome.failed) > 5:
            print(f"  ... and {len(outcome.failed) - 5} more (the store's failures table has "
                  f"every one with its traceback)", file=sys.stderr)
        if not args.no_report:
            entry = next(e for e in store.sweeps() if e["id"] == outcome.sweep_id)
            _report(store, entry, args, record)
    return 1 if outcome.failed else 0
