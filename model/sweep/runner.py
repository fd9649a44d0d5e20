"""Running a planned sweep: the missing points only, each written to the store as it finishes,
with a progress bar (points done / total, points per second, time left).

Points already in the store -- from an earlier, interrupted run of this sweep, or from another
sweep that asked for the same config, policy, seed and code -- count as done from the start
and are not computed again.
"""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from model.sweep.plan import Plan
from model.sweep.store import Store

__all__ = ["Outcome", "SweepProgress", "definition", "run_plan"]

_console = Console(stderr=True)


def _duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class SweepProgress:
    """Points done out of ``total`` (``stored`` of them done before the start), the points
    per second computed since the start and the time left at that rate: a bar on a terminal;
    when stderr is not a terminal (a batch job's log), one line every ``every`` seconds;
    nothing when ``quiet``."""

    def __init__(self, name: str, total: int, stored: int, *, quiet: bool = False,
                 every: float = 30.0):
        self.name = name
        self.total = total
        self.stored = stored
        self.done = stored
        self.quiet = quiet
        self.every = every
        self.started = time.monotonic()
        self._last_line = self.started
        self._bar = None

    def __enter__(self) -> SweepProgress:
        if not self.quiet and _console.is_terminal:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                                 TextColumn("{task.fields[left]}"), TimeElapsedColumn(),
                                 console=_console, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(f"sweep {self.name}", total=self.total,
                                            completed=self.done, rate="", left="")
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return (self.done - self.stored) / elapsed if elapsed > 0 else 0.0

    def text(self) -> tuple[str, str]:
        rate = self.rate
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        return f"{rate:.3g} points/s", f"{_duration(left)} left"

    def advance(self, points: int) -> None:
        self.done += points
        rate, left = self.text()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, rate=rate, left=left)
        elif not self.quiet and time.monotonic() - self._last_line >= self.every:
            self._last_line = time.monotonic()
            print(f"sweep {self.name}: {self.done}/{self.total} points, {rate}, {left}",
                  file=sys.stderr, flush=True)


@dataclass
class Outcome:
    """What a run did: ``total`` distinct points, ``stored`` already in the store at the start,
    ``computed`` by this run, ``failed`` (with the errors), in ``seconds``."""

    sweep_id: int
    run: str
    total: int
    stored: int
    computed: int
    failed: list
    seconds: float
    reruns: int

    @property
    def rate(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else 0.0

    @property
    def missing(self) -> int:
        return self.total - self.stored - self.computed


def definition(plan: Plan) -> dict:
    """What the store keeps of a sweep, for its report (no need to re-read the file)."""
    sweep = plan.sweep
    return {"command": sweep.command, "base": str(sweep.base), "file": str(sweep.file),
            "axes": [{"path": axis.path, "values": list(axis.values)} for axis in sweep.axes],
            "policies": list(dict.fromkeys(point.policy for point in plan.points)),
            "seeds": list(sweep.seeds), "quick": sweep.quick, "code": plan.code,
            "overrides": [[path, value] for path, value in sweep.overrides],
            "filter": None if sweep.filter is None else sweep.filter.text,
            "directions": plan.headline,
            "report": {"metrics": list(sweep.report.metrics),
                       "baseline": [[key, value] for key, value in sweep.report.baseline],
                       "plots": [{"metric": p.metric, "x": p.x, "y": p.y, "ratio": p.ratio}
                                 for p in sweep.report.plots]},
            "points": len(plan.points)}


def run_plan(plan: Plan, store: Store, engine, *, quiet: bool = False, on_point=None
             ) -> Outcome:
    """Compute the points of ``plan`` that ``store`` lacks on ``engine``; ``on_point(point,
    metrics)`` after each one is stored. A ``KeyboardInterrupt`` leaves every finished point
    in the store and propagates, its message saying how many points the store has."""
    sweep_id = store.register(plan, definition(plan))
    keys = plan.keys
    stored = len(store.done(keys))
    tasks = plan.tasks(store.done(keys))
    run = uuid.uuid4().hex[:12]
    failed: list = []
    computed = 0
    started = time.monotonic()
    with SweepProgress(plan.sweep.name, len(keys), stored, quiet=quiet) as bar:
        def done(task, outcome):
            nonlocal computed
            store.add(list(task.points), plan, outcome, run)
            computed += len(task.points)
            bar.advance(len(task.points))
            if on_point is not None:
                for point in task.points:
                    on_point(point, outcome["results"][point.policy])

        def fail(task, error, attempts):
            store.fail(list(task.points), sweep_id, run, error, attempts)
            failed.extend((point, error) for point in task.points)

        try:
            if tasks:
                engine.run(tasks, done, fail)
        except KeyboardInterrupt:
            have = stored + computed
            raise KeyboardInterrupt(
                f"{have} of {len(keys)} points are in {store.path}; the same command "
                f"computes the other {len(keys) - have}") from None
    return Outcome(sweep_id, run, len(keys), stored, computed, failed,
                   time.monotonic() - started, getattr(engine, "reruns", 0))
