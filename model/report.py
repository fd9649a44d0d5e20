"""Console tables, progress bars, JSON and PNG output shared by the system models' CLIs.

Tables and progress go through ``rich`` (to stderr for progress, stdout for tables, so that
``gpusched ... > table.txt`` keeps only the results); plots through matplotlib's non-interactive
Agg backend, so ``make sim`` works on a machine without a display.
"""

import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

__all__ = ["console", "figure", "format_cell", "print_table", "progress", "save_figure",
           "write_json"]

# Results tables are wide; below 160 columns (a pipe, CI's log, a narrow terminal) rich would
# abbreviate cells, so it renders at 160 and lets the terminal wrap instead.
console = Console(width=max(160, shutil.get_terminal_size().columns))
_progress_console = Console(stderr=True)


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


def print_table(title: str, headers: Sequence[str], rows: Iterable[Sequence],
                *, caption: str | None = None) -> None:
    """Print a rich table: columns of numbers right-aligned, the others left-aligned."""
    rows = [list(row) for row in rows]
    table = Table(title=title, caption=caption, title_justify="left")
    for index, header in enumerate(headers):
        numeric = index > 0 and all(isinstance(row[index], int | float) for row in rows)
        table.add_column(header, justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*(format_cell(value) for value in row))
    console.print(table)


def progress(items: Sequence, description: str, *, quiet: bool = False):
    """Iterate ``items`` behind a progress bar on stderr (no bar when ``quiet``)."""
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


def write_json(path, data) -> Path:
    """Write ``data`` as indented JSON, creating the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    return path


def figure(*args, **kwargs):
    """``matplotlib.pyplot.subplots`` on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot.subplots(*args, **kwargs)


def save_figure(fig, path) -> Path:
    """Save ``fig`` as a PNG (folder created) and close it."""
    from matplotlib import pyplot

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot.close(fig)
    return path
