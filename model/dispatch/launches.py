"""Per-kernel results of a kernel-trace run: one row per launch and policy.

A kernel trace becomes WGs in :mod:`model.dispatch.kernels`, which records one
:class:`~model.dispatch.kernels.LaunchSpan` per launch (its WG ids, channel, arrival cycle and
measured duration). :func:`launch_rows` reads a run's event log (:mod:`model.dispatch.
metrics`) against those spans:

* ``start``: the cycle the launch's first WG was dispatched; ``finish``: the cycle its last WG
  was released (empty when some WG never finished before the cycle limit: ``unfinished``
  counts them);
* ``duration = finish - start``, the launch's simulated run time, against ``measured_cycles``,
  the profiler's duration in cycles of the preset's clock: ``slowdown = duration /
  measured_cycles`` (1.0: the run took as long as on the GPU it was measured on; the
  conversion sizes each WG so that a GPU kept full reproduces the measured time, so a
  slowdown above 1 is time the dispatcher's placement, a barrier or another stream's WGs
  added, below 1 time they saved);
* ``delay = start - arrival``: cycles from the launch's arrival (its measured start, as
  replayed) to its first dispatch: waiting for the stream's earlier launches (in-order
  barrier) or for room on the GPU.

:func:`write_launches` writes the rows as CSV (:data:`COLUMNS`); :func:`differing_kernels` is
the table of the kernels whose simulated time differs most between policies, with a one-line
reason when every policy ties. Times are integer cycles; the slowdown is a ratio (a float:
it is a report, not hardware state).
"""

import csv
from bisect import bisect_right
from pathlib import Path

from model.dispatch.kernels import _short

__all__ = ["COLUMNS", "LaunchCollector", "LaunchTally", "differing_kernels",
           "launch_rows", "write_launches"]

#: The CSV's columns, in order.
COLUMNS = ["policy", "launch", "kernel", "stream", "channel", "workgroups",
           "measured_start_ns", "measured_duration_ns", "measured_cycles", "arrival", "start",
           "finish", "duration", "slowdown", "delay", "unfinished"]


def launch_rows(spans, events, policy: str) -> list[dict]:
    """One dict per launch of ``spans`` (:attr:`KernelWorkload.launches`, in WG order), keyed
    by :data:`COLUMNS`, from the event rows ``events`` of the run of ``policy`` (the list a
    :class:`~model.dispatch.engine.DispatchSimulator` filled). A split part counts for its
    parent WG. Raises ``ValueError`` when an event names a WG outside every span (the events
    are of another workload). The same rows as a :class:`LaunchTally` that saw the run."""
    tally = LaunchTally(spans)
    for cycle, kind, wg, *_ in events:
        tally.record(cycle, kind, wg)
    return tally.rows(policy)


class LaunchTally:
    """What :func:`launch_rows` reads from a run's event log, taken as the events happen,
    keeping no event row: per launch its first dispatch, its last release and how many of
    its WGs were released.

    Give it to a :class:`~model.dispatch.engine.DispatchSimulator` as ``events`` (its
    :meth:`record` is then the simulator's event recorder): a whole trace's per-launch
    results then cost a few integers per launch, not two event rows per WG."""

    def __init__(self, spans):
        self.spans = list(spans)
        self._firsts = [span.first_wg for span in self.spans]
        self._ends = [span.first_wg + span.workgroups for span in self.spans]
        count = len(self.spans)
        self.starts: list[int | None] = [None] * count
        self.finishes = [0] * count
        self.released = [0] * count
        self._index = 0                     # the span of the last event (the next is likely)

    def record(self, cycle: int, kind: str, wg, *_, **__) -> None:
        """One event (:func:`model.dispatch.metrics.event_recorder`'s arguments); only
        dispatches and releases count."""
        if kind != "dispatch" and kind != "release":
            return
        ident = wg.id if wg.parent is None else wg.parent
        index = self._index
        if not (index < len(self._firsts) and self._firsts[index] <= ident < self._ends[index]):
            index = bisect_right(self._firsts, ident) - 1
            if index < 0 or ident >= self._ends[index]:
                raise ValueError(f"event at cycle {cycle} names WG {ident}, which no launch "
                                 f"made")
            self._index = index
        if kind == "dispatch":
            start = self.starts[index]
            if start is None or cycle < start:
                self.starts[index] = cycle
        else:
            if cycle > self.finishes[index]:
                self.finishes[index] = cycle
            if wg.parent is None:
                self.released[index] += 1

    def rows(self, policy: str) -> list[dict]:
        """The :func:`launch_rows` of the events recorded so far, for ``policy``."""
        t0 = min((span.kernel.start_ns for span in self.spans), default=0)
        rows = []
        for index, span in enumerate(self.spans):
            kernel = span.kernel
            unfinished = span.workgroups - self.released[index]
            start = self.starts[index]
            finish = self.finishes[index] if not unfinished else None
            duration = finish - start if finish is not None and start is not None else None
            rows.append({
                "policy": policy, "launch": span.index, "kernel": _short(kernel.name, 200),
                "stream": "/".join(kernel.stream), "channel": span.channel,
                "workgroups": span.workgroups, "measured_start_ns": kernel.start_ns - t0,
                "measured_duration_ns": kernel.duration_ns, "measured_cycles": span.measured,
                "arrival": span.arrival, "start": start, "finish": finish,
                "duration": duration,
                "slowdown": None if duration is None else duration / span.measured,
                "delay": None if start is None else start - span.arrival,
                "unfinished": unfinished})
        return rows


def write_launches(path, rows) -> Path:
    """Write ``rows`` (:func:`launch_rows`, any number of policies) as CSV; empty cells for
    what a launch did not reach (no dispatch, not finished)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in rows:
            writer.writerow(["" if row[name] is None else
                             f"{row[name]:.4f}" if name == "slowdown" else row[name]
                             for name in COLUMNS])
    return path


def differing_kernels(by_policy: dict, limit: int = 8) -> tuple[list[str], list[list], str]:
    """``(headers, rows, note)``: the kernels (by name) whose simulated time differs most
    between policies. ``by_policy``: ``{policy: launch rows}``. Per kernel: its launches,
    WGs, the lowest and the highest over the policies of its simulated time over its
    measured time (both summed over its launches), with the policy, the seed's, the spread
    (highest - lowest) and how many policies did not finish all its launches (left out of
    the lowest and highest); the CSV has every policy's rows;
    sorted by the spread between the highest and lowest policy, at most ``limit`` rows.
    ``note`` says in one line when every policy gives every launch the same time, and why
    that is expected."""
    policies = list(by_policy)
    kernels: dict[str, dict] = {}
    for policy, rows in by_policy.items():
        for row in rows:
            entry = kernels.setdefault(row["kernel"], {"launches": set(), "wgs": 0,
                                                       "measured": 0, "time": {}})
            if row["launch"] not in entry["launches"]:
                entry["launches"].add(row["launch"])
                entry["wgs"] += row["workgroups"]
                entry["measured"] += row["measured_cycles"]
            time = entry["time"].get(policy, 0)
            entry["time"][policy] = None if time is None or row["duration"] is None \
                else time + row["duration"]
    table = []
    for name, entry in kernels.items():
        ratios = [None if entry["time"].get(p) is None else entry["time"][p] / entry["measured"]
                  for p in policies]
        known = [(r, p) for r, p in zip(ratios, policies, strict=True) if r is not None]
        spread = max(known)[0] - min(known)[0] if len(known) > 1 else 0.0
        low = min(known, default=None)
        high = max(known, default=None)
        seed = ratios[policies.index("seed")] if "seed" in policies else None
        table.append((spread, [
            _short(name, 28), len(entry["launches"]), entry["wgs"],
            "-" if low is None else f"{low[0]:.3f} {low[1]}",
            "-" if high is None else f"{high[0]:.3f} {high[1]}",
            "-" if seed is None else f"{seed:.3f}", f"{spread:.3f}",
            sum(1 for r in ratios if r is None)]))
    table.sort(key=lambda item: -item[0])
    headers = ["kernel", "launches", "WGs", "lowest", "highest", "seed", "spread",
               "unfinished"]
    note = ""
    if len(policies) > 1 and all(spread == 0 for spread, _ in table):
        streams = {row["channel"] for rows in by_policy.values() for row in rows}
        why = ("one stream: each launch waits for the one before it and has the GPU to itself, "
               "and every policy fills an empty GPU with one kernel's identical WGs alike"
               if len(streams) <= 1 else
               "the streams' launches never overlapped, so no policy had a choice to make")
        note = f"every policy gives every launch the same time: {why}"
    return headers, [row for _, row in table[:limit]], note


def launches_target(option, json_path, plots, scenario, single: bool) -> Path:
    """Where ``gpusched dispatch`` writes a trace scenario's launches: ``option``
    (``--launches CSV``) itself for a single scenario, else ``<stem>.<scenario file stem>.csv``
    beside it; without ``--launches``, beside ``--json`` as ``<json stem>.launches.csv``
    (``<json stem>.<scenario file stem>.launches.csv`` for several), else
    ``<plots>/launches_<scenario file stem>.csv``."""
    stem = Path(scenario.path).stem if scenario.path else scenario.name
    stem = "".join(c if c.isalnum() or c in "-_+." else "_" for c in stem)
    if option is not None:
        option = Path(option)
        return option if single else option.with_name(
            f"{option.stem}.{stem}{option.suffix or '.csv'}")
    if json_path is not None:
        json_path = Path(json_path)
        middle = "" if single else f".{stem}"
        return json_path.with_name(f"{json_path.stem}{middle}.launches.csv")
    return Path(plots) / f"launches_{stem}.csv"


class LaunchCollector:
    """Per-launch rows of each run of one trace scenario, taken as each run ends.

    With ``keep_events`` (the event log is written too) each run puts its event rows in
    ``events[policy]`` and the rows are read from them; without, :meth:`sink` gives each
    run a :class:`LaunchTally` (in ``events[policy]``), so no event row is kept at all. Call
    the collector with a policy name once that run has ended: it keeps the launch rows in
    :attr:`by_policy` and drops ``events[policy]`` unless ``keep_events``."""

    def __init__(self, spans, events: dict, keep_events: bool = False):
        self.spans, self.events, self.keep_events = list(spans), events, keep_events
        self.by_policy: dict[str, list[dict]] = {}

    def sink(self, policy: str):
        """What the run of ``policy`` records its events in (``run_scenario``'s
        ``event_sink``): a list of event rows with ``keep_events``, else a tally."""
        return [] if self.keep_events else LaunchTally(self.spans)

    def __call__(self, policy: str) -> None:
        rows = self.events.get(policy)
        if rows is None:
            return
        self.by_policy[policy] = (rows.rows(policy) if isinstance(rows, LaunchTally)
                                  else launch_rows(self.spans, rows, policy))
        if not self.keep_events:
            del self.events[policy]

    def report(self, path, title: str) -> Path:
        """Print the kernels that differ most between policies (or why none does) and write
        every policy's rows to ``path`` as CSV."""
        from model.report import print_table

        headers, rows, note = differing_kernels(self.by_policy)
        print_table(f"{title}: the kernels whose simulated time differs most between policies "
                    f"(simulated / measured, summed over their launches)", headers, rows)
        if note:
            print(f"  note: {note}")
        written = write_launches(path, [row for rows in self.by_policy.values()
                                        for row in rows])
        print(f"  per-launch results of every policy: {written}")
        return written
