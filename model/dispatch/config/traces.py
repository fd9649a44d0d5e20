"""The workload read from files: CSV traces (``trace = "file.csv"``, :func:`read_trace`,
:func:`write_trace`) and the scenario keys of a profiler's kernel trace
(:class:`KernelTraceSource`; the conversion is :mod:`model.dispatch.kernels`)."""

import csv
from dataclasses import dataclass
from pathlib import Path

from model.config import ConfigError, Fields
from model.dispatch.config.channels import MAX_WORK, WorkGroup
from model.dispatch.config.gpu import GpuConfig
from model.dispatch.gpus import GPU_PRESETS
from model.dispatch.profilers import FORMATS as KERNEL_TRACE_FORMATS

__all__ = ["TRACE_COLUMNS", "TRACE_EXTRA_COLUMNS", "KernelTraceSource", "read_kernel_trace_keys",
           "read_trace", "write_trace"]

#: Columns of the CSV trace format, in order.
TRACE_COLUMNS = ("arrival", "channel", "priority", "waves", "vgpr", "sgpr", "lds", "duration",
                 "independent")
#: Optional columns after them (both or none): work per wave (shared-issue model; empty = the
#: duration) and the in-order barrier flag.
TRACE_EXTRA_COLUMNS = ("work", "barrier")


def read_trace(path, gpu: GpuConfig, channels: int | None = None) -> list[WorkGroup]:
    """Read a CSV trace (header :data:`TRACE_COLUMNS`, one WG per row; blank lines are
    skipped). Every value is checked; an error names the file, the row (its line number) and
    the column, and says what is accepted. A row with more or fewer values than the header
    is an error, not silently cut or padded."""
    path = Path(path)
    try:
        file = path.open(newline="")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from None
    expected = ",".join(TRACE_COLUMNS)
    with file:
        reader = csv.reader(file)
        try:
            workload = _trace_rows(path, reader, gpu, channels, expected)
        except UnicodeDecodeError as error:
            raise ConfigError(f"{path}: not a UTF-8 text file (byte {error.start}: "
                              f"{error.reason}); a trace is CSV text") from None
        except csv.Error as error:
            raise ConfigError(f"{path}: row {reader.line_num}: not valid CSV ({error})") from None
    workload.sort(key=lambda wg: (wg.arrival, wg.channel))
    for number, wg in enumerate(workload):
        wg.id = number
    return workload


def _trace_rows(path, reader, gpu: GpuConfig, channels: int | None, expected: str
                ) -> list[WorkGroup]:
    """The WGs of a trace's rows, each value checked (see :func:`read_trace`)."""
    workload = []
    header = next(reader, None)
    header = [column.strip() for column in header or ()]
    columns = TRACE_COLUMNS + TRACE_EXTRA_COLUMNS
    if tuple(header) not in (TRACE_COLUMNS, columns):
        raise ConfigError(f"{path}: header must be {expected} (optionally followed by "
                          f"{','.join(TRACE_EXTRA_COLUMNS)}), not {','.join(header)}")
    columns = tuple(header)
    limits = {"channel": (0, (channels or 1 << 16) - 1),
              "priority": (0, gpu.priorities - 1),
              "waves": (1, gpu.peus * gpu.wave_slots), "vgpr": (0, None),
              "sgpr": (0, None), "lds": (0, None), "duration": (1, None),
              "arrival": (0, None), "independent": (0, 1), "work": (1, MAX_WORK),
              "barrier": (0, 1)}
    for row in reader:
        row_number = reader.line_num
        if not row:
            continue
        if len(row) != len(columns):
            raise ConfigError(f"{path}: row {row_number} has {len(row)} values, but the "
                              f"header has {len(columns)} columns ({','.join(columns)})")
        values = {}
        for column, text in zip(columns, row, strict=True):
            text = text.strip()
            if column == "work" and not text:
                values[column] = None            # empty: the duration
                continue
            low, high = limits[column]
            try:
                value = int(text)
            except ValueError:
                raise ConfigError(f"{path}: row {row_number}, column {column!r}: "
                                  f"{text!r} is not an integer") from None
            if value < low or (high is not None and value > high):
                bound = f"{low}..{high}" if high is not None else f">= {low}"
                why = (" (a WG's waves must fit one AP's wave slots, peus x wave_slots)"
                       if column == "waves" else "")
                raise ConfigError(f"{path}: row {row_number}, column {column!r}: {value} "
                                  f"is out of range ({bound}){why}")
            values[column] = value
        workload.append(WorkGroup(id=-1, independent=bool(values.pop("independent")),
                                  barrier=bool(values.pop("barrier", 0)), **values))
    return workload


def write_trace(path, workload) -> Path:
    """Write ``workload`` (submitted WGs, not sub-WGs) as a CSV trace; the ``work`` and
    ``barrier`` columns only when some WG has a work of its own or a barrier."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = any(wg.work is not None or wg.barrier for wg in workload)
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(TRACE_COLUMNS + (TRACE_EXTRA_COLUMNS if extra else ()))
        for wg in workload:
            row = [wg.arrival, wg.channel, wg.priority, wg.waves, wg.vgpr, wg.sgpr, wg.lds,
                   wg.duration, int(wg.independent)]
            if extra:
                row += ["" if wg.work is None else wg.work, int(wg.barrier)]
            writer.writerow(row)
    return path


@dataclass(frozen=True)
class KernelTraceSource:
    """A profiler's kernel trace replayed on a GPU preset (scenario keys ``kernel_trace``,
    ``preset``, ``format``, ``kernels``, ``clock_mhz``; CLI ``--kernel-trace`` ...).

    ``first``/``last``: the launches taken, by position among the file's kernels (0-based,
    ``last`` excluded, ``None`` = to the end). ``windows``: instead, several such windows,
    each replayed from cycle 0 on channels of its own (concurrent requests; scenario key
    ``windows = [[first, last], ...]``). ``clock_mhz``: overrides the preset's clock.
    ``in_order``: a launch's WGs wait until the previous launch on their stream has completed
    (HIP stream / AQL barrier-bit semantics). ``stagger``: with ``windows``, each window but
    the first starts a random ``0..stagger`` cycles late, drawn per workload seed (requests
    that do not arrive together), so that claims over seeds see different overlaps.
    """

    path: Path
    preset: str
    format: str | None = None
    first: int = 0
    last: int | None = None
    clock_mhz: int | None = None
    windows: tuple[tuple[int, int | None], ...] = ()
    in_order: bool = True
    stagger: int = 0


def read_kernel_trace_keys(root: Fields, path: Path) -> KernelTraceSource | None:
    """The kernel-trace keys of a scenario file's top level (``None`` without
    ``kernel_trace``; its other keys are then errors); ``path`` is the scenario file."""
    if "kernel_trace" not in root:
        for key in ("preset", "format", "kernels", "windows", "clock_mhz", "in_order",
                    "stagger"):
            if key in root:
                raise root.error(key, "needs kernel_trace (a profiler's kernel trace)")
        return None
    trace = (path.parent / root.str("kernel_trace")).resolve()
    if not trace.is_file():
        raise root.error("kernel_trace", f"names {str(trace)!r}, which is not a file")
    preset = root.str("preset", choices=tuple(GPU_PRESETS))
    format_ = (root.str("format", choices=tuple(KERNEL_TRACE_FORMATS)) if "format" in root
               else None)
    first, last = 0, None
    if "kernels" in root:
        window = root.int_list("kernels", length=2, minimum=0)
        first, last = window
        if last <= first:
            raise root.error("kernels", f"must be [first, last] with first < last, not "
                                        f"{list(window)!r}")
    windows = []
    if "windows" in root:
        if "kernels" in root:
            raise root.error("windows", "and kernels cannot both be given")
        for value in root.list("windows"):
            if (not isinstance(value, list) or len(value) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                               for v in value) or value[1] <= value[0]):
                raise root.error("windows", f"must list [first, last] pairs with 0 <= first < "
                                            f"last, not {value!r}")
            windows.append((value[0], value[1]))
        if not windows:
            raise root.error("windows", "must list at least one [first, last] pair")
    clock = (root.int("clock_mhz", minimum=1, maximum=100000) if "clock_mhz" in root
             else None)
    stagger = root.int("stagger", 0, minimum=0)
    if stagger and len(windows) < 2:
        raise root.error("stagger", "needs windows = [[first, last], ...] with at least two "
                                    "windows (it delays every window but the first)")
    return KernelTraceSource(path=trace, preset=preset, format=format_, first=first,
                             last=last, clock_mhz=clock, windows=tuple(windows),
                             in_order=root.bool("in_order", True), stagger=stagger)
