"""Console tables, progress bars, the JSON envelope and PNG output shared by the system
models' CLIs.

Tables and progress go through ``rich`` (progress to stderr, tables to stdout, so that
``gpusched ... > table.txt`` keeps only the results); plots through matplotlib's
non-interactive Agg backend, so ``make sim`` works on a machine without a display.

* :func:`print_table` renders at the terminal's width (100 columns when stdout is not a
  terminal, ``COLUMNS`` when set) and splits a table too wide for it into parts that repeat
  the first column, so no cell is cut or wrapped.
* :class:`RunProgress` is the progress bar of a command that runs several simulations: it
  advances with each run's *simulated* time (``tracker(now)`` from the model's event loop),
  not only once per run.
* :func:`save_figure` writes a PNG; within :func:`quick_figures` (a ``--quick`` command,
  :mod:`model.cli`) it writes a smoke test's PNG instead: no tight layout, 40 dpi.
* :class:`RunRecord` is the JSON every subcommand writes: who and what produced it (tool
  version, git commit, command line, seed, every input file with its SHA-256, start and end
  time, whether it was interrupted), then the results, scenario by scenario and policy by
  policy, filled in as each run finishes so that an interrupted command still writes what
  it finished.
"""

import contextvars
import datetime
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

__all__ = ["QUICK_DPI", "RunProgress", "RunRecord", "console", "figure", "format_cell",
           "print_table", "progress", "progress_bar", "quick_figures", "save_figure",
           "table_width", "tool_version", "write_json"]

#: The width tables are rendered at when stdout is not a terminal (a pipe, a CI log).
PIPE_WIDTH = 100

console = Console()
_progress_console = Console(stderr=True)


def table_width() -> int:
    """The columns a table may use: ``COLUMNS`` when set, the terminal's width when stdout is
    a terminal, else :data:`PIPE_WIDTH`."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return PIPE_WIDTH


def format_cell(value) -> str:
    """Numbers to short text: integers as is, floats to 4 significant digits."""
    if isinstance(value, bool) or value is None:
        return "-" if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 10000 and value != float("inf"):
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


def _table(title, headers, rows, columns, caption, numeric, *, wrap_first=True,
           widths=None) -> Table:
    # Numbers never wrap; text (a name, a claim) may wrap at spaces, but the first column
    # only when the table is not split (each part repeats it as the rows' names).
    # A table at least as wide as its title (within the terminal): a title is not wrapped.
    # ``widths`` (from :func:`_fitted_widths`): each column's width, none under its longest
    # word, so that wrapping never breaks a word.
    table = Table(title=title, caption=caption, title_justify="left", caption_justify="left",
                  min_width=min(len(title), table_width()) if title else None)
    for position, index in enumerate(columns):
        # A word wider than the terminal itself (nothing else can be done) folds onto the
        # next line rather than being cut with an ellipsis.
        table.add_column(headers[index], justify="right" if numeric[index] else "left",
                         no_wrap=numeric[index] or (index == 0 and not wrap_first),
                         overflow="fold", width=None if widths is None else widths[position])
    for row in rows:
        table.add_row(*(row[index] for index in columns))
    return table


def _widths(table: Table) -> tuple[int, int]:
    # (narrowest with text wrapped at spaces, natural with nothing wrapped); titles and
    # captions wrap freely. A measurement is capped at the width offered, so offer plenty.
    measured = console.measure(table, options=console.options.update_width(10_000))
    return measured.minimum, measured.maximum


def _fitted_widths(headers, cells, columns, numeric, width: int) -> list[int] | None:
    """Each column's text width for a table of ``columns`` in ``width`` terminal columns, or
    ``None`` when it does not fit. A column that cannot wrap (numbers) keeps its natural
    width; the others are narrowed, the widest first, to no less than their longest word:
    the largest common cap that fits (rich's own narrowing can cut below a column's longest
    word, which it then folds mid-word)."""
    options = console.options.update_width(10_000)
    ranges = []
    for index in columns:
        measured = [Measurement.get(console, options, text)
                    for text in [headers[index], *(row[index] for row in cells)]]
        low = max(m.minimum for m in measured)
        high = max(m.maximum for m in measured)
        ranges.append((high, high) if numeric[index] else (low, high))
    # Borders and padding: what the natural table takes beyond its columns' text.
    natural = _widths(_table(None, headers, cells, columns, None, numeric))[1]
    room = width - (natural - sum(high for _, high in ranges))

    def total(cap):
        return sum(max(low, min(high, cap)) for low, high in ranges)

    if total(0) > room:
        return None
    low_cap, high_cap = 0, max(high for _, high in ranges)
    while low_cap < high_cap:                     # the largest cap that fits
        middle = (low_cap + high_cap + 1) // 2
        if total(middle) <= room:
            low_cap = middle
        else:
            high_cap = middle - 1
    return [max(low, min(high, low_cap)) for low, high in ranges]


def print_table(title: str, headers: Sequence[str], rows: Iterable[Sequence],
                *, caption: str | None = None) -> None:
    """Print a rich table: columns of numbers right-aligned, the others left-aligned.

    A table wider than :func:`table_width` wraps its text columns at spaces, never inside a
    word (no column narrower than its longest word), when that makes it fit; otherwise it is
    printed as several tables, each with the first column and as many of the next as fit,
    the caption under the last. A narrow terminal then shows every number whole instead of
    wrapped rows.
    """
    rows = [list(row) for row in rows]
    numeric = [index > 0 and bool(rows) and all(isinstance(row[index], int | float)
                                                for row in rows)
               for index in range(len(headers))]
    cells = [[format_cell(value) for value in row] for row in rows]
    width = table_width()

    def fits(columns):
        return _widths(_table(None, headers, cells, columns, None, numeric,
                              wrap_first=False))[1] <= width

    # One table when wrapping text fits it; else as few parts as fit (greedy), then the
    # columns spread evenly over that many parts when they fit so, rather than a last part
    # with one column.
    every = list(range(len(headers)))
    widths = _fitted_widths(headers, cells, every, numeric, width)
    if widths is not None:
        console.width = width
        console.print(_table(title, headers, cells, every, caption, numeric, widths=widths))
        return
    parts: list[list[int]] = [[0]]
    for index in range(1, len(headers)):
        if len(parts[-1]) > 1 and not fits(parts[-1] + [index]):
            parts.append([0, index])
        else:
            parts[-1].append(index)
    if len(parts) > 1:
        rest = list(range(1, len(headers)))
        size = -(-len(rest) // len(parts))
        even = [[0, *rest[start:start + size]] for start in range(0, len(rest), size)]
        if len(even) == len(parts) and all(fits(part) for part in even):
            parts = even
    console.width = width
    for number, columns in enumerate(parts):
        label = title if len(parts) == 1 else f"{title} ({number + 1}/{len(parts)})"
        last = number == len(parts) - 1
        console.print(_table(label, headers, cells, columns, caption if last else None,
                             numeric, wrap_first=False))


def progress(items: Sequence, description: str, *, quiet: bool = False):
    """Iterate ``items`` behind a progress bar on stderr (no bar when ``quiet``) that
    advances once per item; :class:`RunProgress` advances with simulated time."""
    if quiet:
        yield from items
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=_progress_console, transient=True) as bar:
        task = bar.add_task(description, total=len(items))
        for item in items:
            yield item
            bar.advance(task)


@contextmanager
def progress_bar(total: int, description: str, quiet: bool = False):
    """A bar on stderr of ``total`` steps (none when ``quiet``); yields the callable that
    advances it one step (it takes and ignores any arguments, so that it can be a pool's
    ``done`` callback, :func:`model.pool.run_all`)."""
    if quiet:
        yield lambda *_: None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=_progress_console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda *_: bar.advance(task)


class _Tracker:
    """The callable a model's event loop reports its simulated time to (see RunProgress)."""

    __slots__ = ("_bar", "_next", "expected", "now")

    def __init__(self, bar: "RunProgress", expected: float):
        self._bar = bar
        self.expected = expected
        self.now = 0
        self._next = 0.0

    def __call__(self, now) -> None:
        """The run has simulated up to ``now``; redraws at most ten times a second."""
        self.now = now
        clock = time.monotonic()
        if clock >= self._next:
            self._next = clock + 0.1
            self._bar._draw(self)

    def advance(self, amount) -> None:
        """The run has simulated ``amount`` more."""
        self(self.now + amount)


class RunProgress:
    """A progress bar on stderr for a command that runs ``runs`` simulations in turn, moved by
    each run's simulated time.

    ::

        with RunProgress("procsched", runs=len(jobs), quiet=args.quiet) as bar:
            for scenario, policy in jobs:
                with bar.run(f"{scenario.name} {policy}", expected=horizon, unit="us") as tick:
                    simulate(..., progress=tick)     # the loop calls tick(now)

    The bar has one unit per run; run ``i`` fills ``i .. i + 1`` as its simulated time
    approaches ``expected`` (an estimate of its length; the bar waits just short of the end
    until the run returns), and the line shows the simulated time itself. With ``quiet``
    there is no bar and :meth:`run` yields ``None``, so a model's loop pays nothing.
    """

    def __init__(self, description: str, *, runs: int, quiet: bool = False):
        self.description = description
        self.runs = runs
        self.quiet = quiet
        self.done = 0
        self._label = ""
        self._unit = ""
        self._progress = None
        self._task = None

    def __enter__(self) -> "RunProgress":
        if not self.quiet:
            columns = (TextColumn("{task.description}"), BarColumn(),
                       TextColumn("{task.fields[run]}"), TimeElapsedColumn())
            self._progress = Progress(*columns, console=_progress_console, transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task(self.description, total=max(1, self.runs),
                                                 run="")
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    @contextmanager
    def run(self, label: str, *, expected: float, unit: str):
        """One simulation: yields the tracker its loop calls with the simulated time (in
        ``unit``; ``expected`` is the run's estimated length), or ``None`` when quiet."""
        self._label, self._unit = label, unit
        tracker = None if self._progress is None else _Tracker(self, max(expected, 1))
        if tracker is not None:
            self._draw(tracker)
        try:
            yield tracker
        finally:
            self.done += 1
            if self._progress is not None:
                self._progress.update(self._task, completed=self.done, run="")

    @contextmanager
    def paused(self):
        """Take the bar off the terminal while tables are printed between runs."""
        if self._progress is None:
            yield
            return
        self._progress.stop()
        try:
            yield
        finally:
            self._progress.start()

    def _draw(self, tracker: _Tracker) -> None:
        fraction = min(tracker.now / tracker.expected, 0.99)
        self._progress.update(
            self._task, completed=self.done + fraction,
            run=f"run {self.done + 1}/{self.runs} {self._label}: "
                f"{format_cell(tracker.now)} of ~{format_cell(tracker.expected)} "
                f"{self._unit} simulated")


def _finite(data):
    """``data`` with every non-finite float (the ``[-inf, inf]`` interval of one seed, a NaN)
    as ``None``: JSON has no Infinity or NaN, and strict readers refuse Python's."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(value) for value in data]
    return data


def write_json(path, data) -> Path:
    """Write ``data`` as indented, standard JSON (a non-finite number is ``null``), creating
    the folder; the file appears whole or not at all (written beside it, then renamed), so an
    interrupted write leaves no torn file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(_finite(data), indent=2, sort_keys=False, allow_nan=False)
                       + "\n")
    os.replace(partial, path)
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _git_state() -> dict | None:
    """``{"commit", "dirty"}`` of the checkout this code runs from, ``None`` outside git."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10)
        if commit.returncode:
            return None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                 "--untracked-files=no"], capture_output=True, text=True,
                                timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit.stdout.strip(),
            "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}


def tool_version() -> str | None:
    """The installed package's version (``gpusched --version``, the JSON's ``version``);
    ``None`` when the project is not installed."""
    try:
        return metadata.version("gpusched-hw")
    except metadata.PackageNotFoundError:
        return None


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _jsonable(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class RunRecord:
    """The JSON every ``gpusched`` subcommand writes (the *envelope*), filled in as runs finish.

    Layout (``tool`` to ``interrupted`` first, the results last)::

        {"tool": "gpusched-hw", "version": "0.1.0",
         "git": {"commit": "...", "dirty": false} | null,
         "command": "procsched", "command_line": ["gpusched", "procsched", ...],
         "seed": 1, "options": {"quick": true, "policy": null, ...},
         "inputs": [{"path": "configs/procsched/x.toml", "sha256": "..."}, ...],
         "started": "2025-01-01T12:00:00+00:00", "finished": "...", "interrupted": false,
         ...subcommand-specific fields (``note``)...,
         "skipped": {...} (only when something was left out, with why),
         "scenarios": {"<name>": {"file": "...", ..., "policies": {"<policy>": {...}}}}}

    A run loop calls :meth:`add` after every simulation and :meth:`scenario` once a scenario's
    summary is built; when a command is interrupted, the scenarios whose summary was not built
    yet hold the runs that finished, marked ``"complete": false``.
    """

    def __init__(self, command: str, *, argv: Sequence[str] | None = None,
                 seed: int | None = None, options: dict | None = None):
        self.command = command
        self.argv = ["gpusched", *(sys.argv[1:] if argv is None else argv)]
        self.seed = seed
        self.options = {key: _jsonable(value) for key, value in (options or {}).items()}
        self.started = _now()
        self.inputs: dict[str, str] = {}
        self.notes: dict = {}
        self.skipped: dict[str, str] = {}
        self.scenarios: dict[str, dict] = {}
        self._keys: dict[tuple[str, str | None], str] = {}
        self.runs_finished = 0

    def input_file(self, path) -> None:
        """Record an input file (a scenario, a trace) with its SHA-256."""
        path = Path(path)
        if str(path) not in self.inputs and path.is_file():
            self.inputs[str(path)] = _sha256(path)

    def note(self, **fields) -> None:
        """Subcommand-specific top-level fields (``time_unit="us"``)."""
        self.notes.update(fields)

    def skip(self, what: str, why: str) -> None:
        """Something left out of the results (a scenario with none of the chosen policies)."""
        self.skipped[what] = why

    def _key(self, name: str, file) -> str:
        file = None if file is None else str(file)
        if (name, file) not in self._keys:
            taken = set(self._keys.values())
            key = name if name not in taken else f"{name} [{file}]"
            self._keys[(name, file)] = key
        return self._keys[(name, file)]

    def add(self, scenario: str, policy: str, result, *, file=None) -> None:
        """One finished simulation: ``result`` of ``policy`` in ``scenario``, a dict or a
        function returning one (called only if the JSON is written before the scenario's
        summary replaces it: for results that depend on the runs still to come)."""
        entry = self.scenarios.setdefault(self._key(scenario, file),
                                          {"file": None if file is None else str(file),
                                           "complete": False, "policies": {}})
        entry["policies"][policy] = result
        self.runs_finished += 1

    def scenario(self, name: str, entry: dict, *, file=None) -> None:
        """The finished summary of a scenario (with its ``"policies"``), replacing the runs
        :meth:`add` collected."""
        key = self._key(name, file)
        self.scenarios[key] = {"file": None if file is None else str(file), **entry,
                               "complete": True}

    def document(self, *, interrupted: bool = False) -> dict:
        """The envelope as a dict."""
        data = {"tool": "gpusched-hw", "version": tool_version(), "git": _git_state(),
                "command": self.command, "command_line": self.argv, "seed": self.seed,
                "options": self.options,
                "inputs": [{"path": path, "sha256": digest}
                           for path, digest in self.inputs.items()],
                "started": self.started, "finished": _now(), "interrupted": interrupted,
                **self.notes}
        if self.skipped:
            data["skipped"] = self.skipped
        data["scenarios"] = {
            key: {**entry, "policies": {policy: result() if callable(result) else result
                                        for policy, result in entry["policies"].items()}}
            for key, entry in self.scenarios.items()}
        return data

    def write(self, path, *, interrupted: bool = False) -> Path:
        """Write the envelope to ``path`` (whole or not at all)."""
        return write_json(path, self.document(interrupted=interrupted))


def figure(*args, **kwargs):
    """``matplotlib.pyplot.subplots`` on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot.subplots(*args, **kwargs)


#: The resolution of a PNG written within :func:`quick_figures` (else 110 dpi).
QUICK_DPI = 40

# Whether save_figure writes quick PNGs: a context variable, so that commands run in threads
# of one process (a sweep's) each keep their own.
_quick_figures = contextvars.ContextVar("quick_figures", default=False)


@contextmanager
def quick_figures(enabled: bool = True):
    """Within it (when ``enabled``), :func:`save_figure` writes a smoke test's PNG: the same
    figure without the tight layout, at :data:`QUICK_DPI`. Matplotlib's text layout is most
    of a figure's cost, and the tight layout lays every text out once more: a quick PNG takes
    about half the time (``--quick`` runs, :mod:`model.cli`)."""
    token = _quick_figures.set(bool(enabled))
    try:
        yield
    finally:
        _quick_figures.reset(token)


def save_figure(fig, path) -> Path:
    """Save ``fig`` as a PNG (folder created) and close it: laid out tight, at 110 dpi, or
    as a quick PNG within :func:`quick_figures`."""
    from matplotlib import pyplot

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if _quick_figures.get():
        fig.savefig(path, dpi=QUICK_DPI)
    else:
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    pyplot.close(fig)
    return path
