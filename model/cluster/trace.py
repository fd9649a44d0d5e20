"""Readers for the Alibaba GPU cluster trace v2023 (``cluster-trace-gpu-v2023/csv``).

Pod list (``openb_pod_list_*.csv``), columns :data:`POD_COLUMNS`::

    name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
    deletion_time,scheduled_time

Node list (``openb_node_list_*.csv``), columns :data:`NODE_COLUMNS`: ``sn,cpu_milli,
memory_mib,gpu,model``.

A pod becomes a :class:`~model.cluster.workload.Job` arriving at its ``creation_time`` (shifted
so that the first kept pod arrives at 0 s), needing ``num_gpu`` cards of a type in ``gpu_spec``
(``|``-separated; empty: any type), running ``deletion_time - scheduled_time`` seconds -- the
time it held its GPUs in the real cluster. The trace's own queueing (``scheduled_time -
creation_time``) is not replayed: the model queues the pod itself.

A malformed row raises :class:`TraceError` naming the file, line, pod or node and column.
Rows that are well formed but have nothing for this model are skipped *and counted* by reason
(:data:`SKIP_CPU_ONLY` and friends): CPU-only pods and nodes, pods that never ran, pods past
the limit; a GPU-sharing pod (``gpu_milli < 1000``) is either rounded up to a whole card
(counted as :data:`ROUNDED_SHARED`) or skipped.
"""

import csv
import math
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from model.cluster.config import CardType, NodeSpec, TraceSource
from model.cluster.workload import Job
from model.config import ConfigError

__all__ = [
    "NODE_COLUMNS",
    "POD_COLUMNS",
    "POD_PHASES",
    "ROUNDED_SHARED",
    "SKIP_BEYOND_LIMIT",
    "SKIP_CPU_ONLY",
    "SKIP_CPU_ONLY_NODE",
    "SKIP_NEVER_RAN",
    "SKIP_SHARED",
    "TraceError",
    "read_nodes",
    "read_pods",
]

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
               "pod_phase", "creation_time", "deletion_time", "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_PHASES = ("Running", "Succeeded", "Failed", "Pending")

SKIP_CPU_ONLY = "CPU-only pod (num_gpu = 0)"
SKIP_NEVER_RAN = "never ran (no scheduled_time; pod_phase Pending)"
SKIP_SHARED = "GPU-sharing pod (gpu_milli < 1000) with trace.shared_gpu = 'skip'"
SKIP_BEYOND_LIMIT = "beyond trace.limit"
SKIP_CPU_ONLY_NODE = "CPU-only node (gpu = 0)"
ROUNDED_SHARED = "GPU-sharing pod (gpu_milli < 1000) given a whole card"


class TraceError(ConfigError):
    """A malformed trace file or row; the message names the file, line and column."""


class _Row:
    """One CSV row with its location, for typed reads whose errors say where."""

    def __init__(self, path: Path, line: int, what: str, values: dict):
        self._where = f"{path} line {line}{what}"
        self._values = values

    def error(self, column: str, message: str) -> TraceError:
        return TraceError(f"{self._where}, column {column!r}: {message}")

    def text(self, column: str) -> str:
        return (self._values.get(column) or "").strip()

    def integer(self, column: str, *, minimum: int = 0, maximum: int | None = None,
                optional: bool = False) -> int | None:
        text = self.text(column)
        if text == "" and optional:
            return None
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


def _reader(path: Path, columns: tuple[str, ...]):
    try:
        file = path.open(newline="")
    except OSError as error:
        raise TraceError(f"{path}: cannot read: {error.strerror}") from None
    reader = csv.DictReader(file)
    header = reader.fieldnames or []
    missing = [column for column in columns if column not in header]
    if missing:
        file.close()
        raise TraceError(f"{path} line 1: missing column {missing[0]!r} (the header must "
                         f"name {', '.join(columns)})")
    return file, reader


def read_nodes(path, card_types: Mapping[str, CardType], source: TraceSource
               ) -> tuple[tuple[NodeSpec, ...], Counter]:
    """The GPU nodes of a node list and the count of skipped rows by reason.

    Every ``model`` must be a key of ``card_types`` (its powers come from the scenario);
    ``sn`` must be unique. Host powers come from ``source``.
    """
    path = Path(path)
    file, reader = _reader(path, NODE_COLUMNS)
    nodes: list[NodeSpec] = []
    seen: set[str] = set()
    skipped: Counter = Counter()
    with file:
        for values in reader:
            row = _Row(path, reader.line_num, "", values)
            name = row.text("sn")
            if not name:
                raise row.error("sn", "must name the node")
            row = _Row(path, reader.line_num, f" (node {name!r})", values)
            if name in seen:
                raise row.error("sn", "names a node twice")
            seen.add(name)
            row.integer("cpu_milli")
            row.integer("memory_mib")
            gpus = row.integer("gpu")
            model = row.text("model")
            if gpus == 0:
                skipped[SKIP_CPU_ONLY_NODE] += 1
                continue
            if not model or model.lower() == "nan":
                raise row.error("model", f"must name the GPU type of a node with {gpus} GPUs")
            if model not in card_types:
                raise row.error("model", f"GPU type {model!r} has no [card_types.{model}] "
                                f"table in the scenario (known: {', '.join(sorted(card_types))})")
            nodes.append(NodeSpec(name, (model,) * gpus, source.cpu_busy_w,
                                  source.cpu_standby_w, source.sleep_w))
    if not nodes:
        raise TraceError(f"{path}: no GPU node in the node list")
    return tuple(nodes), skipped


def read_pods(path, source: TraceSource, *, quick: bool = False) -> tuple[list[Job], Counter]:
    """The GPU pods of a pod list as jobs (arrival order), and the count of skipped or
    converted rows by reason. ``source.limit`` (``quick_limit`` when ``quick``) keeps the
    first pods that would become jobs (0: all)."""
    path = Path(path)
    limit = source.quick_limit if quick and source.quick_limit else source.limit
    file, reader = _reader(path, POD_COLUMNS)
    pods: list[tuple[float, str, int, float, frozenset[str] | None]] = []
    counts: Counter = Counter()
    with file:
        for values in reader:
            row = _Row(path, reader.line_num, "", values)
            name = row.text("name")
            if not name:
                raise row.error("name", "must name the pod")
            row = _Row(path, reader.line_num, f" (pod {name!r})", values)
            row.integer("cpu_milli")
            row.integer("memory_mib")
            gpus = row.integer("num_gpu")
            gpu_milli = row.integer("gpu_milli", maximum=1000)
            spec = row.text("gpu_spec")
            row.text("qos")
            phase = row.text("pod_phase")
            if phase not in POD_PHASES:
                raise row.error("pod_phase", f"must be one of {', '.join(POD_PHASES)}, "
                                f"not {phase!r}")
            created = row.time("creation_time")
            scheduled = row.time("scheduled_time", optional=True)
            deleted = row.time("deletion_time", optional=True)
            if gpus == 0:
                counts[SKIP_CPU_ONLY] += 1
                continue
            if gpu_milli == 0:
                raise row.error("gpu_milli", f"is 0 for a pod with num_gpu = {gpus}")
            if scheduled is None or phase == "Pending":
                counts[SKIP_NEVER_RAN] += 1
                continue
            if deleted is None:
                raise row.error("deletion_time", "is required for a pod that was scheduled")
            if scheduled < created:
                raise row.error("scheduled_time", f"{scheduled:g} is before creation_time "
                                f"{created:g}")
            if deleted < scheduled:
                raise row.error("deletion_time", f"{deleted:g} is before scheduled_time "
                                f"{scheduled:g}")
            if gpu_milli < 1000:
                if source.shared_gpu == "skip":
                    counts[SKIP_SHARED] += 1
                    continue
                counts[ROUNDED_SHARED] += 1
            if limit and len(pods) >= limit:
                counts[SKIP_BEYOND_LIMIT] += 1
                continue
            types = None
            if spec and spec.lower() != "nan":
                names = [part.strip() for part in spec.split("|")]
                if any(not part for part in names):
                    raise row.error("gpu_spec", f"has an empty type in {spec!r}")
                types = frozenset(names)
            pods.append((created, name, gpus, deleted - scheduled, types))
    # Stable sort: pods created in the same second keep their file order.
    order = sorted(range(len(pods)), key=lambda index: pods[index][0])
    start = pods[order[0]][0] if pods else 0.0
    jobs = [Job(position, pods[index][1], pods[index][0] - start, pods[index][2],
                pods[index][3], pods[index][4])
            for position, index in enumerate(order)]
    return jobs, counts
