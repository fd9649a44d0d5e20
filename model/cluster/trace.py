"""Readers for the Alibaba GPU cluster trace v2023 (``cluster-trace-gpu-v2023/csv``), every
file format as published.

* Node lists (``openb_node_list_gpu_node.csv``, ``openb_node_list_all_node.csv``), columns
  :data:`NODE_COLUMNS` = ``sn, cpu_milli, memory_mib, gpu, model``. A node with ``gpu = 0``
  (``model`` empty or ``nan``) is a CPU-only node: it can run CPU-only pods.
* Pod lists with times (``openb_pod_list_default.csv``, ``..._cpu*``, ``..._gpushare*``,
  ``..._gpuspec*``), 11 columns :data:`POD_COLUMNS`.
* Pod lists without times (``openb_pod_list_multigpu{20,30,40,50}.csv``), 5 columns
  :data:`POD_COLUMNS_UNTIMED` = ``name, cpu_milli, memory_mib, num_gpu, gpu_milli``: these
  can only run the inflation experiment (:mod:`model.cluster.inflation`).

A pod asks for ``num_gpu`` cards and ``gpu_milli`` thousandths of each: ``gpu_milli < 1000``
only with ``num_gpu = 1`` (a pod sharing a card), ``num_gpu = 0`` only with ``gpu_milli = 0`` (a
CPU-only pod). ``gpu_spec`` is a ``|``-separated list of accepted GPU models (empty or ``nan``:
any). In the timed experiment a pod arrives at its ``creation_time`` (the first kept pod at
0 s; gaps divided by ``arrival_speedup``) and runs ``deletion_time - scheduled_time``, the
time it held its resources in the real cluster; the trace's own queueing is not replayed.

Bad input: every malformed row is reported, each with the file, line, pod or node and column
(one :class:`TraceError` listing them all); a duplicate pod or node name is an error naming
both lines; a file with a header and no rows is an error, not a silent table of zeros.
Well-formed rows this model does not use are skipped *and counted* by reason.
"""

import csv
import math
from collections import Counter
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

from model.cluster.config import (
    MAX_CARDS_PER_NODE,
    MAX_CPU_MILLI,
    MAX_MEMORY_MIB,
    CardType,
    HostType,
    NodeSpec,
    TraceSource,
)
from model.cluster.power import BUILTIN_CARD_TYPES, card_type, host_for
from model.cluster.workload import MILLI, Job
from model.config import ConfigError

__all__ = [
    "CPU_ONLY_NODE",
    "NODE_COLUMNS",
    "POD_COLUMNS",
    "POD_COLUMNS_UNTIMED",
    "POD_PHASES",
    "ROUNDED_SHARED",
    "SKIP_BEYOND_LIMIT",
    "SKIP_CPU_ONLY",
    "SKIP_NEVER_RAN",
    "SKIP_QUICK_NODES",
    "SKIP_SHARED",
    "TraceError",
    "pod_list_format",
    "read_nodes",
    "read_pods",
]

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
               "pod_phase", "creation_time", "deletion_time", "scheduled_time")
POD_COLUMNS_UNTIMED = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_PHASES = ("Running", "Succeeded", "Failed", "Pending")

SKIP_CPU_ONLY = "CPU-only pod (num_gpu = 0) with trace.cpu_only = 'skip'"
SKIP_NEVER_RAN = "never ran (no scheduled_time; pod_phase Pending)"
SKIP_SHARED = "GPU-sharing pod (gpu_milli < 1000) with trace.shared_gpu = 'skip'"
SKIP_BEYOND_LIMIT = "beyond trace.limit"
SKIP_QUICK_NODES = "left out under --quick (trace.quick_nodes)"
ROUNDED_SHARED = "GPU-sharing pod (gpu_milli < 1000) given a whole card (shared_gpu = 'whole')"
CPU_ONLY_NODE = "CPU-only node (gpu = 0): runs CPU-only pods"

#: Row errors listed in one message before the rest are only counted.
MAX_LISTED = 20


class TraceError(ConfigError):
    """A malformed trace file or rows; the message names the file, line and column."""


class _Errors:
    """Row errors of one file, collected so that every one is reported."""

    def __init__(self, path: Path):
        self.path = path
        self.messages: list[str] = []

    def raise_if_any(self) -> None:
        if not self.messages:
            return
        shown = self.messages[:MAX_LISTED]
        more = len(self.messages) - len(shown)
        text = "\n".join(shown) + (f"\n... and {more} more malformed rows" if more else "")
        count = len(self.messages)
        raise TraceError(f"{self.path}: {count} malformed row{'s' * (count != 1)}:\n{text}"
                         if count > 1 else text)


class _RowError(Exception):
    pass


class _Row:
    """One CSV row with its location, for typed reads whose errors say where."""

    def __init__(self, path: Path, line: int, what: str, values: dict):
        self._where = f"{path} line {line}{what}"
        self._values = values

    def error(self, column: str, message: str) -> _RowError:
        return _RowError(f"{self._where}, column {column!r}: {message}")

    def text(self, column: str) -> str:
        return (self._values.get(column) or "").strip()

    def integer(self, column: str, *, minimum: int = 0, maximum: int | None = None) -> int:
        text = self.text(column)
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum or (maximum is not None and value > maximum):
            bound = f" in {minimum}..{maximum}" if maximum is not None else f" >= {minimum}"
            raise self.error(column, f"must be an integer{bound}, not {text!r}")
        return value

    def time(self, column: str, *, optional: bool = False) -> float | None:
        text = self.text(column)
        if text == "" and optional:
            return None
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise self.error(column, f"must be a time in seconds >= 0, not {text!r}")
        return value


@contextmanager
def _open(path: Path):
    """The file as UTF-8 text (a leading byte order mark, as spreadsheet exports write, is
    skipped); a binary or non-UTF-8 file, or one the csv module cannot read, is a
    :class:`TraceError` naming it (not a traceback)."""
    try:
        file = path.open(newline="", encoding="utf-8-sig")
    except OSError as error:
        raise TraceError(f"{path}: cannot read: {error.strerror}") from None
    with file:
        try:
            yield file
        except UnicodeDecodeError as error:
            raise TraceError(f"{path}: not a UTF-8 text file ({error.reason}); a trace is CSV "
                             f"text") from None
        except csv.Error as error:
            raise TraceError(f"{path}: not valid CSV ({error})") from None


def _header(path: Path, reader, formats: dict[str, tuple[str, ...]]) -> str:
    """The format whose columns the header has (extra columns are an error)."""
    header = [name.strip() for name in (reader.fieldnames or [])]
    for name, columns in formats.items():
        if header == list(columns):
            return name
    for name, columns in formats.items():
        missing = [column for column in columns if column not in header]
        extra = [column for column in header if column not in columns]
        if not missing and extra:
            raise TraceError(f"{path} line 1: unknown column {extra[0]!r} (the {name} format "
                             f"has {', '.join(columns)})")
    wanted = " or ".join(f"{', '.join(columns)} ({name})" for name, columns in formats.items())
    first = next(iter(formats.values()))
    missing = [column for column in first if column not in header]
    what = f"missing column {missing[0]!r}" if missing else "unexpected columns"
    raise TraceError(f"{path} line 1: {what} (the header must name {wanted})")


def pod_list_format(path) -> str:
    """``"timed"`` (11 columns) or ``"untimed"`` (the 5-column multigpu lists)."""
    path = Path(path)
    with _open(path) as file:
        return _header(path, csv.DictReader(file), {"timed": POD_COLUMNS,
                                                    "untimed": POD_COLUMNS_UNTIMED})


def _fields_count(row: _Row, values: dict, columns: tuple[str, ...]) -> None:
    if None in values:
        raise row.error(columns[-1], f"the row has {len(columns) + len(values[None])} fields, "
                                     f"the header {len(columns)}")
    missing = [column for column in columns if values.get(column) is None]
    if missing:
        raise row.error(missing[0], "is missing (the row is shorter than the header)")


def read_nodes(path, card_types: Mapping[str, CardType], hosts: Mapping[str, HostType],
               source: TraceSource, *, quick: bool = False
               ) -> tuple[tuple[NodeSpec, ...], Counter]:
    """The nodes of a node list and notes by reason (CPU-only nodes are kept and counted).

    Every GPU ``model`` needs a power entry: the scenario's ``[card_types.<model>]`` or the
    built-in table (:mod:`model.cluster.power`). Host power comes from the model's host CPU.
    ``quick`` with ``source.quick_nodes``: that many nodes spread evenly over the list (node
    ``i * len // quick_nodes``), so that the quick cluster keeps roughly the list's mix of GPU
    types; the others are counted as left out.
    """
    path = Path(path)
    errors = _Errors(path)
    nodes: list[NodeSpec] = []
    seen: dict[str, int] = {}
    notes: Counter = Counter()
    with _open(path) as file:
        reader = csv.DictReader(file)
        _header(path, reader, {"node list": NODE_COLUMNS})
        for values in reader:
            row = _Row(path, reader.line_num, "", values)
            try:
                _fields_count(row, values, NODE_COLUMNS)
                name = row.text("sn")
                if not name:
                    raise row.error("sn", "must name the node")
                row = _Row(path, reader.line_num, f" (node {name!r})", values)
                if name in seen:
                    raise row.error("sn", f"names a node twice (first on line {seen[name]})")
                seen[name] = reader.line_num
                cpu_milli = row.integer("cpu_milli", minimum=1, maximum=MAX_CPU_MILLI)
                memory_mib = row.integer("memory_mib", minimum=1, maximum=MAX_MEMORY_MIB)
                gpus = row.integer("gpu", maximum=MAX_CARDS_PER_NODE)
                model = row.text("model")
                if model.lower() == "nan":
                    model = ""
                if gpus == 0:
                    if model:
                        raise row.error("model", f"names GPU model {model!r} for a node with "
                                                 f"gpu = 0")
                    notes[CPU_ONLY_NODE] += 1
                elif not model:
                    raise row.error("model", f"must name the GPU type of a node with {gpus} "
                                             f"GPUs")
                elif card_type(model, card_types) is None:
                    known = ", ".join(sorted(set(card_types) | set(BUILTIN_CARD_TYPES)))
                    raise row.error("model", f"GPU type {model!r} has no [card_types.{model}] "
                                             f"table in the scenario and no built-in power "
                                             f"entry (known: {known}); add [card_types."
                                             f"{model}] with busy_w, idle_w and standby_w")
                host = host_for(model or None, card_types, hosts)
                nodes.append(NodeSpec(name, (model,) * gpus, host.socket_busy_w,
                                      host.socket_idle_w, source.sleep_w, cpu_milli,
                                      memory_mib, host.cores_per_socket))
            except _RowError as error:
                errors.messages.append(str(error))
    errors.raise_if_any()
    if not seen:
        raise TraceError(f"{path}: has a header but no node rows")
    if not any(node.cards for node in nodes):
        raise TraceError(f"{path}: no GPU node in the node list")
    count = source.quick_nodes
    if quick and 0 < count < len(nodes):
        nodes = [nodes[index * len(nodes) // count] for index in range(count)]
        notes[SKIP_QUICK_NODES] = len(seen) - count
        if not any(node.cards for node in nodes):
            raise TraceError(f"{path}: trace.quick_nodes = {count} keeps no GPU node of the "
                             f"node list")
    return tuple(nodes), notes


def _types(row: _Row, spec: str) -> frozenset[str] | None:
    if not spec or spec.lower() == "nan":
        return None
    names = [part.strip() for part in spec.split("|")]
    if any(not part for part in names):
        raise row.error("gpu_spec", f"has an empty type in {spec!r}")
    return frozenset(names)


def read_pods(path, source: TraceSource, *, timed: bool = True, quick: bool = False
              ) -> tuple[list[Job], Counter]:
    """The pods of a pod list as jobs, and the count of skipped or converted rows by reason.

    ``timed``: the timed experiment (arrival order, durations; pods that never ran are
    skipped and counted); otherwise the inflation experiment (every pod, file order, no
    times; the 5-column lists only allow this). ``source.limit`` (``quick_limit`` when
    ``quick``) keeps the first pods that would become jobs (0: all).
    """
    path = Path(path)
    limit = source.quick_limit if quick and source.quick_limit else source.limit
    errors = _Errors(path)
    pods: list[tuple[float, str, Job]] = []
    counts: Counter = Counter()
    seen: dict[str, int] = {}
    rows = 0
    with _open(path) as file:
        reader = csv.DictReader(file)
        kind = _header(path, reader, {"timed": POD_COLUMNS, "untimed": POD_COLUMNS_UNTIMED})
        if kind == "untimed" and timed:
            raise TraceError(f"{path}: has no times (the 5-column multigpu format): it can "
                             f'only run experiment = "inflation"')
        columns = POD_COLUMNS if kind == "timed" else POD_COLUMNS_UNTIMED
        for values in reader:
            rows += 1
            row = _Row(path, reader.line_num, "", values)
            try:
                _fields_count(row, values, columns)
                name = row.text("name")
                if not name:
                    raise row.error("name", "must name the pod")
                row = _Row(path, reader.line_num, f" (pod {name!r})", values)
                if name in seen:
                    raise row.error("name", f"names a pod twice (first on line {seen[name]})")
                seen[name] = reader.line_num
                entry = _pod(row, kind, timed, source, counts)
                if entry is None:
                    continue
                if limit and len(pods) >= limit:
                    counts[SKIP_BEYOND_LIMIT] += 1
                    continue
                pods.append(entry)
            except _RowError as error:
                errors.messages.append(str(error))
    errors.raise_if_any()
    if rows == 0:
        raise TraceError(f"{path}: has a header but no pod rows")
    if not timed:
        return [Job(position, job.name, None, job.cards, job.duration_s, job.types,
                    job.cpu_milli, job.memory_mib, job.gpu_milli, job.spec)
                for position, (_, _, job) in enumerate(pods)], counts
    # Stable sort: pods created in the same second keep their file order.
    order = sorted(range(len(pods)), key=lambda index: pods[index][0])
    start = pods[order[0]][0] if pods else 0.0
    jobs = []
    for position, index in enumerate(order):
        created, _, job = pods[index]
        jobs.append(Job(position, job.name, (created - start) / source.arrival_speedup,
                        job.cards, job.duration_s, job.types, job.cpu_milli, job.memory_mib,
                        job.gpu_milli, job.spec))
    return jobs, counts


def _pod(row: _Row, kind: str, timed: bool, source: TraceSource,
         counts: Counter) -> tuple[float, str, Job] | None:
    """One validated row as ``(creation time, name, job)``, or ``None`` when skipped."""
    name = row.text("name")
    cpu = row.integer("cpu_milli", maximum=MAX_CPU_MILLI)
    memory = row.integer("memory_mib", maximum=MAX_MEMORY_MIB)
    gpus = row.integer("num_gpu", maximum=MAX_CARDS_PER_NODE)
    gpu_milli = row.integer("gpu_milli", maximum=MILLI)
    if gpus == 0 and gpu_milli != 0:
        raise row.error("gpu_milli", f"must be 0 for a pod with num_gpu = 0, not {gpu_milli}")
    if gpus > 0 and gpu_milli == 0:
        raise row.error("gpu_milli", f"is 0 for a pod with num_gpu = {gpus}")
    if 0 < gpu_milli < MILLI and gpus != 1:
        raise row.error("gpu_milli", f"{gpu_milli} (part of a card) needs num_gpu = 1, not "
                                     f"{gpus}")
    types, created, duration = None, 0.0, 0.0
    if kind == "timed":
        types = _types(row, row.text("gpu_spec"))
        phase = row.text("pod_phase")
        if phase not in POD_PHASES:
            raise row.error("pod_phase", f"must be one of {', '.join(POD_PHASES)}, not "
                                         f"{phase!r}")
        created = row.time("creation_time")
        scheduled = row.time("scheduled_time", optional=True)
        deleted = row.time("deletion_time", optional=True)
        if scheduled is not None:
            if deleted is None:
                raise row.error("deletion_time", "is required for a pod that was scheduled")
            if scheduled < created:
                raise row.error("scheduled_time", f"{scheduled:g} is before creation_time "
                                                  f"{created:g}")
            if deleted < scheduled:
                raise row.error("deletion_time", f"{deleted:g} is before scheduled_time "
                                                 f"{scheduled:g}")
            duration = deleted - scheduled
        if timed and (scheduled is None or phase == "Pending"):
            counts[SKIP_NEVER_RAN] += 1
            return None
    if gpus == 0 and source.cpu_only == "skip":
        counts[SKIP_CPU_ONLY] += 1
        return None
    if 0 < gpu_milli < MILLI:
        if source.shared_gpu == "skip":
            counts[SKIP_SHARED] += 1
            return None
        if source.shared_gpu == "whole":
            counts[ROUNDED_SHARED] += 1
            gpu_milli = MILLI
    spec = row.text("gpu_spec").strip() if types is not None else ""
    return created, name, Job(0, name, 0.0, gpus, duration, types, cpu, memory,
                              gpu_milli if gpus else 0, spec)
