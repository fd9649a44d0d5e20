"""Per-launch kernel traces from the profilers people use, read into :class:`Kernel` records.

:func:`read_kernel_trace` reads a CSV file written by one of five profilers, detects the format
from its header (or takes it by name), finds the columns it needs by name and ignores the
others (column names match in any case). Every malformed row is reported in one line naming
the file, the row (the line number in the file) and the column: a cell that is not a number,
a row shorter than the header (a truncated line) or with more non-empty cells, an empty
kernel name. Such a row is never read as a launch. Rows that are not kernel launches (memory
copies and sets, other bracketed GPU activities, nvprof's ``==PID==`` messages, rocprofv3
rows of another ``Kind``, the further counter rows of a long-form ``pmc_perf.csv``) are
skipped and counted in :attr:`KernelTrace.skipped`. Nothing is dropped without a count.

Files are read as the tools and shells write them: UTF-8 with or without a byte-order mark,
UTF-16 (a byte-order mark, or a NUL in every other byte: PowerShell's ``>``); bytes that are
not UTF-8 become U+FFFD in names. An empty file, a binary one (NUL bytes otherwise) and a CSV
error (a field above the csv module's limit) are refused in one line. Timestamps may carry
fractions of a ns (rocprof-compute averages its passes: ``41551790928449.54``; rounded to the
nearest ns) and integer columns may be written as integral decimals (``256.0``, as pandas
writes a column with a missing cell).

``rocprof`` — rocprof v1 ``results.csv`` (ROCm rocprofiler, ``rocprof --timestamp on``)
    Columns used: ``KernelName``, ``grd`` (work-items of the whole grid, not workgroups),
    ``wgr`` (work-items per workgroup), ``lds`` (bytes, rounded by rocprof to the LDS block),
    ``arch_vgpr`` (or ``vgpr`` before ROCm 5.3), ``accum_vgpr``, ``sgpr``, ``wave_size``,
    ``BeginNs``, ``EndNs`` (nanoseconds), ``gpu-id`` and ``queue-id`` (the stream). Source: the
    rocprofiler v1 tool ``test/tool/tool.cpp`` (it prints ``grd`` as the product of the HSA
    packet's grid sizes, ``lds`` as the group segment size rounded to the LDS block, registers
    from the kernel descriptor: on gfx10+ ``sgpr`` is always 128), and the rocprof command
    reference (``rocprof --list-basic``: "grd - the kernel's grid size, wgr - the kernel's work
    group size, lds - the kernel's LDS memory size ...").
``rocprofv3`` — ROCprofiler-SDK ``rocprofv3 --kernel-trace`` ``*_kernel_trace.csv``
    Columns used: ``Kind`` (only ``KERNEL_DISPATCH`` rows), ``Agent_Id``, ``Queue_Id``,
    ``Stream_Id`` (when present it names the stream, else the queue does), ``Kernel_Name``,
    ``Start_Timestamp``, ``End_Timestamp`` (ns), ``LDS_Block_Size`` (or
    ``Group_Segment_Size``, bytes), ``VGPR_Count`` (or ``Arch_VGPR_Count``),
    ``Accum_VGPR_Count``, ``SGPR_Count``, ``Workgroup_Size_X/Y/Z`` (or ``Workgroup_Size``) and
    ``Grid_Size_X/Y/Z`` (or ``Grid_Size``) in work-items. Source: rocprofv3 documentation
    ("Kernel naming and filtering", its ``kernel_trace.csv`` example) and rocprofiler-sdk's
    tests, which check ``LDS_Block_Size`` against the dispatch's group segment size. Also
    rocpd's CSV export (``Lds_Block_Size``, ``Vgpr_Count``: names in any case) and the first
    rocprofv3 releases, which wrote no register counts (registers read as 0, said in
    :attr:`KernelTrace.notes`).
``rocprof-compute`` — rocprof-compute (formerly Omniperf) ``pmc_perf.csv``; rocprofv2's kernel
    trace (file plugin version 2: the same columns and ``Counters``); the long form of
    rocprof-compute on rocprofiler-sdk (one row per dispatch and ``Counter_Name``: the first
    row of each ``Dispatch_ID`` is the launch)
    Columns used: ``Kernel_Name``, ``Grid_Size`` (work-items), ``Workgroup_Size``,
    ``LDS_Per_Workgroup`` (bytes), ``Arch_VGPR``, ``Accum_VGPR``, ``SGPR``, ``Wave_Size`` (or
    ``wave_size``), ``Start_Timestamp``, ``End_Timestamp`` (ns), ``GPU_ID`` and ``Queue_ID``
    when present. Source: rocprof-compute's profiler utilities, which rename rocprof v1's
    columns to exactly these (``grd`` -> ``Grid_Size``, ``lds`` -> ``LDS_Per_Workgroup``,
    ``BeginNs`` -> ``Start_Timestamp``, ...), and its documentation ("Grid Size: the total
    number of work-items").
``nvprof`` — ``nvprof --print-gpu-trace --csv``
    Preamble lines (``==PID== ...``), a header (``Start``, ``Duration``, ``Grid X/Y/Z``
    (blocks), ``Block X/Y/Z`` (threads), ``Registers Per Thread``, ``Static SMem``,
    ``Dynamic SMem``, ``Device``, ``Context``, ``Stream``, ``Name``), a units row (times in
    ``s``, ``ms``, ``us`` or ``ns``; memory in ``B``, ``KB``, ``MB``, ``GB``, which nvprof
    counts in 1024s: a 1,028-byte copy prints as 1.003906 KB), then kernel rows and memory
    rows (``[CUDA memcpy HtoD]``, ``[CUDA memset]``, no grid), which are skipped and counted.
    Source: NVIDIA Profiler User's Guide (``--print-gpu-trace``, ``--csv``) and the
    CUPTI-based output as seen in published traces.
``nsys`` — ``nsys stats --report cuda_gpu_trace --format csv``
    Columns used: ``Start`` and ``Duration`` with their unit in the header (``Start (ns)``,
    or ``Start:ts_ns`` in raw exports), ``GrdX/Y/Z``, ``BlkX/Y/Z``, ``Reg/Trd``, ``StcSMem``
    and ``DymSMem`` (unit in the header: ``(MB)`` = 10^6 bytes as nsys prints it, ``(B)``,
    ``:mem_B``), ``Device``, ``Ctx``, ``Strm``, ``Name``; memory operations (``[CUDA memcpy
    ...]``, ``[CUDA memset]``, no grid) are skipped and counted. Lines before the header
    (nsys's notices) are skipped. Source: Nsight Systems Post-Collection Analysis Guide
    (``cuda_gpu_trace``: "Start, Duration, CorrId, GrdX/Y/Z, BlkX/Y/Z, Reg/Trd, StcSMem,
    DymSMem, Bytes, Throughput, ..., Device, Ctx, Strm, Name") and the report's SQL
    (``cuda_gpu_trace.py``).

A :class:`Kernel` keeps the launch as recorded: its stream (a tuple naming device and
queue/stream), start and duration in nanoseconds (fractions rounded to the nearest ns), grid
in workgroups, threads per workgroup, registers per thread, LDS bytes, SGPRs and wave size
(``None`` when the file does not say). AMD grids counted in work-items become
``ceil(grid / workgroup)`` workgroups per dimension when the dimensions are given, of the
products otherwise.

Kept as one module (about 710 lines, over the guide's 600 lines) on purpose: about 110 of
them are this docstring, each format's columns with its source beside the reader that
uses them, and the five readers share the row, problem and header helpers above them.
"""

import csv
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

from model.config import ConfigError

__all__ = ["FORMATS", "Kernel", "KernelTrace", "detect_format", "read_kernel_trace"]

#: Format name -> what writes it.
FORMATS = {
    "rocprof": "rocprof v1 results.csv",
    "rocprofv3": "rocprofv3 --kernel-trace kernel_trace.csv",
    "rocprof-compute": "rocprof-compute (Omniperf) pmc_perf.csv",
    "nvprof": "nvprof --print-gpu-trace --csv",
    "nsys": "nsys stats --report cuda_gpu_trace --format csv",
}

#: At most this many malformed rows are listed in an error (the rest are counted).
MAX_LISTED = 20

_TIME_UNITS = {"s": 10**9, "sec": 10**9, "ms": 10**6, "msec": 10**6, "us": 10**3,
               "usec": 10**3, "ns": 1, "nsec": 1}
#: nvprof counts memory in 1024s.
_NVPROF_BYTES = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}
#: nsys prints decimal megabytes; the binary names are accepted too.
_NSYS_BYTES = {"B": 1, "byte": 1, "bytes": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9,
               "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


@dataclass(frozen=True)
class Kernel:
    """One kernel launch as recorded (see the module docstring for the units)."""

    row: int
    name: str
    stream: tuple[str, ...]
    start_ns: int
    duration_ns: int
    workgroups: int
    threads: int
    registers: int
    accum_registers: int = 0
    sgprs: int = 0
    lds_bytes: int = 0
    wave_size: int | None = None


@dataclass(frozen=True)
class KernelTrace:
    """The kernels of a trace file in file order, the rows skipped (reason -> count) and notes
    on what the file does not record (e.g. an early rocprofv3 file without registers)."""

    path: Path
    format: str
    kernels: tuple[Kernel, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


class _Problems:
    """Malformed rows: one line each, raised together after the whole file was read."""

    def __init__(self, path: Path):
        self.path = path
        self.lines: list[str] = []

    def add(self, row: int, column: str | None, message: str) -> None:
        where = f", column {column!r}" if column is not None else ""
        self.lines.append(f"{self.path}: row {row}{where}: {message}")

    def raise_if_any(self) -> None:
        if not self.lines:
            return
        listed = self.lines[:MAX_LISTED]
        more = len(self.lines) - len(listed)
        tail = [f"{self.path}: ... and {more} more malformed rows"] if more else []
        raise ConfigError("\n".join(listed + tail))


class _Bad(Exception):
    """A malformed cell: the column and what was wrong."""

    def __init__(self, column: str | None, message: str):
        super().__init__(message)
        self.column, self.message = column, message


class _Row:
    """One data row, read by column name; a bad cell raises :class:`_Bad`."""

    def __init__(self, cells: list[str], columns: dict[str, int]):
        self.cells, self.columns = cells, columns

    def text(self, column: str) -> str:
        index = self.columns[column]
        return self.cells[index].strip() if index < len(self.cells) else ""

    def check_width(self, header: list[str]) -> None:
        """A row with fewer cells than the header (a truncated line) or with more non-empty
        ones is malformed: never read as a launch."""
        if len(self.cells) < len(header):
            raise _Bad(header[len(self.cells)].strip(),
                       f"missing: the row has {len(self.cells)} of the header's {len(header)} "
                       f"columns (truncated?)")
        extra = [cell for cell in self.cells[len(header):] if cell.strip()]
        if extra:
            raise _Bad(None, f"{len(self.cells)} cells, but the header has {len(header)} "
                             f"columns (first extra cell {extra[0][:40]!r})")

    def integer(self, column: str, *, minimum: int = 0) -> int:
        text = self.text(column)
        try:
            value = int(text)
        except ValueError:
            # pandas writes integer columns as 256.0 when a cell is missing (rocprof-compute)
            try:
                number = Decimal(text)
            except InvalidOperation:
                number = None
            if number is None or not number.is_finite() or number != number.to_integral_value():
                raise _Bad(column, f"{text!r} is not an integer") from None
            value = int(number)
        if value < minimum:
            raise _Bad(column, f"{value} is below {minimum}")
        return value

    def optional_integer(self, column: str | None) -> int:
        """An optional count column: 0 when the column or the cell is absent."""
        return self.integer(column) if column and self.text(column) else 0

    def decimal(self, column: str) -> Decimal:
        text = self.text(column)
        try:
            value = Decimal(text)
        except InvalidOperation:
            raise _Bad(column, f"{text!r} is not a number") from None
        if not value.is_finite() or value < 0:
            raise _Bad(column, f"{text!r} is not a non-negative number")
        return value

    def name(self, column: str) -> str:
        text = self.text(column)
        if not text:
            raise _Bad(column, "empty kernel name")
        return text

    def span(self, begin: str, end: str) -> tuple[int, int]:
        """``(start, duration)`` in whole ns from two timestamp columns in ns, which may carry
        fractions (rocprof-compute averages its passes: '41551790928449.54'); each is
        rounded to the nearest ns."""
        start, stop = self.decimal(begin), self.decimal(end)
        if stop < start:
            raise _Bad(end, f"{self.text(end)} is before {begin} {self.text(begin)}")
        first = int(start.to_integral_value(ROUND_HALF_UP))
        return first, int(stop.to_integral_value(ROUND_HALF_UP)) - first


#: Bytes read to recognise the encoding and binary files.
_SNIFF = 65536


def _open_text(path: Path):
    """The file as text: UTF-8 (a byte-order mark skipped), UTF-16 when it starts with its
    byte-order mark or has a NUL in every other byte (PowerShell's ``>``); undecodable
    bytes become U+FFFD. A :class:`ConfigError` for an empty, binary or unreadable file."""
    try:
        with path.open("rb") as raw:
            head = raw.read(_SNIFF)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the kernel trace ({error.strerror})") from None
    if not head.strip():
        raise ConfigError(f"{path}: the file is empty; a kernel trace is a profiler's CSV "
                          f"file with a header and one row per launch")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    elif head.startswith(b"\xef\xbb\xbf"):
        encoding = "utf-8-sig"
    elif b"\x00" in head:
        even, odd = head[0::2], head[1::2]
        if odd and odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
            encoding = "utf-16-le"
        elif even and even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
            encoding = "utf-16-be"
        else:
            raise ConfigError(f"{path}: a binary file (NUL bytes in its first "
                              f"{min(len(head), _SNIFF):,} bytes), not a profiler's CSV "
                              f"kernel trace")
    else:
        encoding = "utf-8"
    try:
        return path.open(newline="", encoding=encoding, errors="replace")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the kernel trace ({error.strerror})") from None


def _records(path: Path):
    """``(line number, cells)`` of every CSV record of the file."""
    file = _open_text(path)
    with file:
        reader = csv.reader(file)
        try:
            for cells in reader:
                yield reader.line_num, cells
        except (csv.Error, UnicodeError) as error:
            raise ConfigError(f"{path}: row {reader.line_num}: not CSV ({error})") from None
        except OSError as error:
            raise ConfigError(f"{path}: cannot read the kernel trace ({error.strerror})") \
                from None


def _signature(cells: list[str]) -> str | None:
    """The format whose header ``cells`` is, or ``None`` (column names in any case: rocpd's
    CSV export writes ``Vgpr_Count`` where rocprofv3 writes ``VGPR_Count``)."""
    names = {cell.strip().lower() for cell in cells}
    bare = {re.split(r"[ (:]", name, maxsplit=1)[0] for name in names}
    if {"kernelname", "grd", "wgr"} <= names:
        return "rocprof"
    if {"kernel_name", "grid_size", "workgroup_size", "lds_per_workgroup"} <= names:
        return "rocprof-compute"
    if {"kernel_name", "start_timestamp", "end_timestamp"} <= names:
        return "rocprofv3"
    if {"start", "duration", "grid x", "block x", "name"} <= names:
        return "nvprof"
    if {"start", "duration", "grdx", "blkx", "name"} <= bare:
        return "nsys"
    return None


#: Lines read when looking for a header (nvprof and nsys print a preamble).
_HEADER_SEARCH = 50


def detect_format(path) -> str:
    """The format of the trace at ``path``, from its header; a :class:`ConfigError` says what
    was found when no format matches."""
    path = Path(path)
    first = None
    for number, cells in _records(path):
        if first is None and any(cell.strip() for cell in cells):
            first = ",".join(cells)[:120]
        found = _signature(cells)
        if found:
            if found != "rocprof-compute" and \
                    "counter_name" in {cell.strip().lower() for cell in cells}:
                break
            return found
        if number >= _HEADER_SEARCH:
            break
    raise ConfigError(f"{path}: cannot tell which profiler wrote this file from its header "
                      f"(first line {first!r}); name the format (one of "
                      f"{', '.join(FORMATS)}); a rocprofv3 counter-collection file is not a "
                      f"kernel trace: use its kernel_trace.csv")


def read_kernel_trace(path, format: str | None = None) -> KernelTrace:  # noqa: A002
    """Read the kernel launches of ``path`` (a profiler CSV of ``format``, or detected).

    Raises :class:`ConfigError` listing every malformed row (file, row, column, what was
    wrong), a missing column, or an unknown format.
    """
    path = Path(path)
    if format is None:
        format = detect_format(path)  # noqa: A001
    elif format not in FORMATS:
        raise ConfigError(f"{path}: unknown kernel-trace format {format!r}; known: "
                          f"{', '.join(FORMATS)}")
    records = _records(path)
    header_row, header = _find_header(path, records, format)
    columns = _Columns(header)
    problems = _Problems(path)
    kernels, skipped = _READERS[format](path, header_row, columns, records, problems)
    problems.raise_if_any()
    return KernelTrace(path=path, format=format, kernels=tuple(kernels), skipped=skipped,
                       notes=tuple(columns.notes))


class _Columns(dict):
    """Column name -> index (the first of equal names), with the header's cells and notes
    about what the file lacks (the trace's :attr:`KernelTrace.notes`)."""

    def __init__(self, header: list[str]):
        super().__init__()
        for index, name in enumerate(header):
            self.setdefault(name.strip(), index)
        self.header = header
        self.notes: list[str] = []

    def find(self, name: str) -> str | None:
        """The file's column called ``name``, in any case."""
        if name in self:
            return name
        lower = name.lower()
        return next((column for column in self if column.lower() == lower), None)


def _find_header(path: Path, records, format: str):
    for number, cells in records:
        if _signature(cells) == format:
            return number, cells
        if number >= _HEADER_SEARCH:
            break
    raise ConfigError(f"{path}: no {FORMATS[format]} header in the first {_HEADER_SEARCH} "
                      f"lines (is the format {format!r} right?)")


def _pick(path: Path, format: str, columns: dict[str, int], *names: str,
          required: bool = True) -> str | None:
    """The first of ``names`` that is a column; a :class:`ConfigError` when none is and the
    column is required."""
    for name in names:
        found = columns.find(name)
        if found is not None:
            return found
    if required:
        hint = (" (rocprof writes timestamps with --timestamp on)"
                if format == "rocprof" and "BeginNs" in names else "")
        raise ConfigError(f"{path}: a {FORMATS[format]} file needs a column "
                          f"{' or '.join(repr(n) for n in names)}{hint}")
    return None


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _data_rows(records):
    """Non-empty data rows after the header, as ``(line, cells)``."""
    for number, cells in records:
        if any(cell.strip() for cell in cells):
            yield number, cells


# -- AMD ------------------------------------------------------------------------------------

def _read_rocprof(path, header_row, columns, records, problems):
    fmt = "rocprof"
    name = _pick(path, fmt, columns, "KernelName")
    grid, group = _pick(path, fmt, columns, "grd"), _pick(path, fmt, columns, "wgr")
    lds = _pick(path, fmt, columns, "lds")
    vgpr = _pick(path, fmt, columns, "arch_vgpr", "vgpr")
    accum = _pick(path, fmt, columns, "accum_vgpr", required=False)
    sgpr = _pick(path, fmt, columns, "sgpr", required=False)
    wave = _pick(path, fmt, columns, "wave_size", required=False)
    begin, end = _pick(path, fmt, columns, "BeginNs"), _pick(path, fmt, columns, "EndNs")
    stream = [c for c in (columns.find("gpu-id"), columns.find("queue-id")) if c]
    kernels = []
    for number, cells in _data_rows(records):
        row = _Row(cells, columns)
        try:
            row.check_width(columns.header)
            start, duration = row.span(begin, end)
            threads = row.integer(group, minimum=1)
            kernels.append(Kernel(
                row=number, name=row.name(name), stream=tuple(row.text(c) for c in stream),
                start_ns=start, duration_ns=duration,
                workgroups=_ceil_div(row.integer(grid, minimum=1), threads), threads=threads,
                registers=row.integer(vgpr), accum_registers=row.optional_integer(accum),
                sgprs=row.optional_integer(sgpr), lds_bytes=row.integer(lds),
                wave_size=_wave(row, wave)))
        except _Bad as bad:
            problems.add(number, bad.column, bad.message)
    return kernels, {}


def _wave(row: _Row, column: str | None) -> int | None:
    if column is None or not row.text(column):
        return None
    size = row.integer(column, minimum=1)
    if size not in (16, 32, 64):
        raise _Bad(column, f"{size} is not a wave size (16, 32 or 64)")
    return size


def _dimensions(row: _Row, columns, stem: str) -> tuple[int, ...] | None:
    names = [columns.find(f"{stem}_{axis}") for axis in "XYZ"]
    if all(names):
        return tuple(row.integer(name, minimum=1) for name in names)
    return None


def _registers_column(path, fmt, columns, *names):
    """The VGPR column, or ``None`` with a note: rocprofv3 before ROCm 6.2 wrote no register
    counts (``Private_Segment_Size``, ``Group_Segment_Size`` only)."""
    found = _pick(path, fmt, columns, *names, required=False)
    if found is None:
        columns.notes.append(f"no register column ({' or '.join(names)}): registers read "
                             f"as 0, so occupancy is decided by waves and LDS only")
    return found


def _read_rocprofv3(path, header_row, columns, records, problems):
    fmt = "rocprofv3"
    if columns.find("Counter_Name"):
        raise ConfigError(f"{path}: a rocprofv3 counter-collection file (one row per counter) "
                          f"is not a kernel trace: use its kernel_trace.csv")
    name = _pick(path, fmt, columns, "Kernel_Name")
    begin = _pick(path, fmt, columns, "Start_Timestamp")
    end = _pick(path, fmt, columns, "End_Timestamp")
    lds = _pick(path, fmt, columns, "LDS_Block_Size", "Group_Segment_Size")
    vgpr = _registers_column(path, fmt, columns, "VGPR_Count", "Arch_VGPR_Count")
    accum = _pick(path, fmt, columns, "Accum_VGPR_Count", required=False)
    sgpr = _pick(path, fmt, columns, "SGPR_Count", required=False)
    wave = _pick(path, fmt, columns, "Wave_Size", "Wavefront_Size", required=False)
    if _dimensions_missing(columns, "Workgroup_Size"):
        _pick(path, fmt, columns, "Workgroup_Size_X", "Workgroup_Size")
    if _dimensions_missing(columns, "Grid_Size"):
        _pick(path, fmt, columns, "Grid_Size_X", "Grid_Size")
    kind = columns.find("Kind")
    stream = [c for c in (columns.find("Agent_Id"),
                          columns.find("Stream_Id") or columns.find("Queue_Id")) if c]
    kernels, skipped = [], {}
    for number, cells in _data_rows(records):
        row = _Row(cells, columns)
        try:
            row.check_width(columns.header)
            if kind and row.text(kind) != "KERNEL_DISPATCH":
                reason = f"{row.text(kind) or 'empty'} rows (not kernel dispatches)"
                skipped[reason] = skipped.get(reason, 0) + 1
                continue
            start, duration = row.span(begin, end)
            group = _dimensions(row, columns, "Workgroup_Size")
            grid = _dimensions(row, columns, "Grid_Size")
            if group is not None and grid is not None:
                threads = _product(group)
                workgroups = _product(_ceil_div(g, w) for g, w in zip(grid, group,
                                                                      strict=True))
            else:
                threads = (_product(group) if group else
                           row.integer(columns.find("Workgroup_Size"), minimum=1))
                total = (_product(grid) if grid else
                         row.integer(columns.find("Grid_Size"), minimum=1))
                workgroups = _ceil_div(total, threads)
            kernels.append(Kernel(
                row=number, name=row.name(name), stream=tuple(row.text(c) for c in stream),
                start_ns=start, duration_ns=duration, workgroups=workgroups,
                threads=threads, registers=row.integer(vgpr) if vgpr else 0,
                accum_registers=row.optional_integer(accum),
                sgprs=row.optional_integer(sgpr), lds_bytes=row.integer(lds),
                wave_size=_wave(row, wave)))
        except _Bad as bad:
            problems.add(number, bad.column, bad.message)
    return kernels, skipped


def _dimensions_missing(columns, stem: str) -> bool:
    return not all(columns.find(f"{stem}_{axis}") for axis in "XYZ")


def _product(values) -> int:
    result = 1
    for value in values:
        result *= value
    return result


def _read_rocprof_compute(path, header_row, columns, records, problems):
    fmt = "rocprof-compute"
    name = _pick(path, fmt, columns, "Kernel_Name")
    grid = _pick(path, fmt, columns, "Grid_Size")
    group = _pick(path, fmt, columns, "Workgroup_Size")
    lds = _pick(path, fmt, columns, "LDS_Per_Workgroup")
    vgpr = _pick(path, fmt, columns, "Arch_VGPR", "VGPR")
    accum = _pick(path, fmt, columns, "Accum_VGPR", required=False)
    sgpr = _pick(path, fmt, columns, "SGPR", required=False)
    wave = _pick(path, fmt, columns, "Wave_Size", required=False)
    begin = _pick(path, fmt, columns, "Start_Timestamp")
    end = _pick(path, fmt, columns, "End_Timestamp")
    stream = [c for c in (columns.find("GPU_ID"), columns.find("Queue_ID")) if c]
    # The long form (rocprof-compute on rocprofiler-sdk) has one row per dispatch and counter.
    long_form = columns.find("Counter_Name") is not None
    dispatch = _pick(path, fmt, columns, "Dispatch_ID") if long_form else None
    seen: set[tuple[str, ...]] = set()
    kernels, skipped = [], {}
    for number, cells in _data_rows(records):
        row = _Row(cells, columns)
        try:
            row.check_width(columns.header)
            if long_form:
                key = tuple(row.text(c) for c in stream) + (row.text(dispatch),)
                if key in seen:
                    reason = "further counter rows of a dispatch (long-form pmc_perf)"
                    skipped[reason] = skipped.get(reason, 0) + 1
                    continue
                seen.add(key)
            start, duration = row.span(begin, end)
            threads = row.integer(group, minimum=1)
            kernels.append(Kernel(
                row=number, name=row.name(name), stream=tuple(row.text(c) for c in stream),
                start_ns=start, duration_ns=duration,
                workgroups=_ceil_div(row.integer(grid, minimum=1), threads), threads=threads,
                registers=row.integer(vgpr), accum_registers=row.optional_integer(accum),
                sgprs=row.optional_integer(sgpr), lds_bytes=row.integer(lds),
                wave_size=_wave(row, wave)))
        except _Bad as bad:
            problems.add(number, bad.column, bad.message)
    return kernels, skipped


# -- NVIDIA ---------------------------------------------------------------------------------

def _activity(name: str, grid_x: str) -> str | None:
    """Why a row is not a kernel launch (the skip reason), or ``None`` for a kernel: memory
    copies and sets (``[CUDA memcpy HtoD]``, ``[CUDA memset]``) and other bracketed GPU
    activities (``[Unified Memory ...]``) have no grid."""
    if grid_x or not name.startswith("["):
        return None
    return "memory copies and sets" if name.startswith("[CUDA ") else \
        "other GPU activities (no grid)"


def _read_nvprof(path, header_row, columns, records, problems):
    fmt = "nvprof"
    start, duration = _pick(path, fmt, columns, "Start"), _pick(path, fmt, columns, "Duration")
    grid = [_pick(path, fmt, columns, f"Grid {a}") for a in "XYZ"]
    block = [_pick(path, fmt, columns, f"Block {a}") for a in "XYZ"]
    registers = _pick(path, fmt, columns, "Registers Per Thread")
    static = _pick(path, fmt, columns, "Static SMem")
    dynamic = _pick(path, fmt, columns, "Dynamic SMem")
    name = _pick(path, fmt, columns, "Name")
    stream = [c for c in (columns.find("Device"), columns.find("Context"),
                          columns.find("Stream")) if c]
    rows = _data_rows(records)
    units_row = next(rows, None)
    if units_row is None:
        raise ConfigError(f"{path}: row {header_row + 1}: the units row after the header is "
                          f"missing")
    number, cells = units_row
    units = _Row(cells, columns)
    scale = {}
    for column, table in ((start, _TIME_UNITS), (duration, _TIME_UNITS),
                          (static, _NVPROF_BYTES), (dynamic, _NVPROF_BYTES)):
        unit = units.text(column)
        if unit not in table:
            raise ConfigError(f"{path}: row {number}, column {column!r}: unit {unit!r} is not "
                              f"one of {', '.join(table)}")
        scale[column] = table[unit]
    kernels, skipped = [], {}
    for number, cells in rows:
        if cells and cells[0].startswith("=="):
            # nvprof's own messages ("==PID== Warning: ...") after the table
            skipped["nvprof messages (==PID== lines)"] = \
                skipped.get("nvprof messages (==PID== lines)", 0) + 1
            continue
        row = _Row(cells, columns)
        try:
            row.check_width(columns.header)
            reason = _activity(row.text(name), row.text(grid[0]))
            if reason:
                skipped[reason] = skipped.get(reason, 0) + 1
                continue
            kernels.append(_nvidia_kernel(number, row, name, stream, start, duration, grid,
                                          block, registers, static, dynamic, scale))
        except _Bad as bad:
            problems.add(number, bad.column, bad.message)
    return kernels, skipped


def _nvidia_kernel(number, row, name, stream, start, duration, grid, block, registers,
                   static, dynamic, scale) -> Kernel:
    begin = round(row.decimal(start) * scale[start])
    length = round(row.decimal(duration) * scale[duration])
    shared = row.decimal(static) * scale[static]
    if dynamic is not None and row.text(dynamic):
        shared += row.decimal(dynamic) * scale[dynamic]
    shared = round(shared)
    return Kernel(row=number, name=row.name(name), stream=tuple(row.text(c) for c in stream),
                  start_ns=begin, duration_ns=length,
                  workgroups=_product(row.integer(c, minimum=1) for c in grid),
                  threads=_product(row.integer(c, minimum=1) for c in block),
                  registers=row.integer(registers), lds_bytes=shared, wave_size=32)


def _unit(header: str, table: dict, path: Path) -> int:
    """The scale of a column named ``Name (unit)`` or ``Name:kind_unit``."""
    match = re.fullmatch(r"\s*[^ (:]+\s*(?:\((\w+)\)|:\w+?_(\w+))?\s*", header)
    unit = (match.group(1) or match.group(2)) if match else None
    if unit not in table:
        raise ConfigError(f"{path}: column {header!r}: unit {unit!r} is not one of "
                          f"{', '.join(table)}")
    return table[unit]


def _read_nsys(path, header_row, columns, records, problems):
    fmt = "nsys"
    by_stem = {}
    for column in columns:
        by_stem.setdefault(re.split(r"[ (:]", column, maxsplit=1)[0].lower(), column)

    def pick(stem, required=True):
        if stem.lower() in by_stem:
            return by_stem[stem.lower()]
        if required:
            raise ConfigError(f"{path}: a {FORMATS[fmt]} file needs a column {stem!r}")
        return None

    start, duration = pick("Start"), pick("Duration")
    grid = [pick(f"Grd{a}") for a in "XYZ"]
    block = [pick(f"Blk{a}") for a in "XYZ"]
    registers, name = pick("Reg/Trd"), pick("Name")
    static, dynamic = pick("StcSMem"), pick("DymSMem", required=False)
    stream = [c for c in (pick("Device", False), pick("Ctx", False) or pick("Context", False),
                          pick("Strm", False) or pick("Stream", False)) if c]
    scale = {start: _unit(start, _TIME_UNITS, path), duration: _unit(duration, _TIME_UNITS, path),
             static: _unit(static, _NSYS_BYTES, path)}
    if dynamic:
        scale[dynamic] = _unit(dynamic, _NSYS_BYTES, path)
    kernels, skipped = [], {}
    for number, cells in _data_rows(records):
        row = _Row(cells, columns)
        try:
            row.check_width(columns.header)
            reason = _activity(row.text(name), row.text(grid[0]))
            if reason:
                skipped[reason] = skipped.get(reason, 0) + 1
                continue
            kernels.append(_nvidia_kernel(number, row, name, stream, start, duration, grid,
                                          block, registers, static, dynamic, scale))
        except _Bad as bad:
            problems.add(number, bad.column, bad.message)
    return kernels, skipped


_READERS = {"rocprof": _read_rocprof, "rocprofv3": _read_rocprofv3,
            "rocprof-compute": _read_rocprof_compute, "nvprof": _read_nvprof,
            "nsys": _read_nsys}
