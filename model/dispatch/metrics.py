"""What a run measures, and its event log.

Not a stage of seed 002: the waits, latencies, throughput, utilisation, fragmentation and
the AP/PEU imbalance by which the seed's effects (embodiments 1-3: no head-of-line blocking,
no starvation; 8-10: balance) are judged, computed from the model's integer state. RTL twin:
none in :mod:`hw.dispatch` (the co-simulation compares the RTL's decisions with the event
log of :func:`write_events`, which is its record).

Every sample behind the time series, fragmentation and imbalance is taken every
``sample_interval`` cycles, also across skipped cycles (:meth:`Metrics.sample` records the
state that no skipped cycle changes), so skipping changes no output.
"""

import csv
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.dispatch.config import GpuConfig, WorkGroup, arrival_of
from model.dispatch.resources import Allocation, Resources, first_block
from model.stats import coefficient_of_variation, percentiles, summary

__all__ = ["BOX_PERCENTILES", "EVENT_KINDS", "Counters", "Metrics", "box", "event_columns",
           "event_recorder", "write_events"]

#: The kinds of event in the event log, in the order they can happen within one cycle.
EVENT_KINDS = ("release", "arrive", "reject", "dispatch", "stale-abort", "split")


@dataclass
class Counters:
    stale_aborts: int = 0
    flushed: int = 0                   # WGs chosen behind a stale abort, chosen again later
    splits: int = 0
    sub_workgroups: int = 0
    dispatch_cycles: int = 0
    processed_cycles: int = 0
    violations: list = field(default_factory=list)


def _ignore(*args, **kwargs) -> None:
    return None


def event_recorder(events: list | None):
    """``event(cycle, kind, wg, ap=None, waves=None, allocation=None, reason=None)``, which
    appends one row to ``events`` (nothing when ``events`` is ``None``). ``events`` may
    instead be an object with a ``record`` method of that signature (a
    :class:`~model.dispatch.launches.LaunchTally`): that method is the recorder, and no row
    is made."""
    if events is None:
        return _ignore
    record = getattr(events, "record", None)
    if record is not None:
        return record

    def event(cycle: int, kind: str, wg: WorkGroup, ap=None, waves=None,
              allocation: Allocation | None = None, reason: str | None = None) -> None:
        starts = None
        if allocation is not None:
            starts = ([first_block(v) for v in allocation.vgpr],
                      [first_block(s) for s in allocation.sgpr], first_block(allocation.lds))
        events.append((cycle, kind, wg, ap,
                       None if waves is None else [int(w) for w in waves], starts, reason))
    return event


def event_columns(peus: int) -> list[str]:
    """The event log's header for a GPU of ``peus`` PEUs per AP (docs/dispatch.md)."""
    return (["cycle", "event", "wg", "parent", "channel", "priority", "waves", "vgpr", "sgpr",
             "lds", "independent", "duration", "arrival", "ap"]
            + [f"waves_{q}" for q in range(peus)] + [f"vgpr_start_{q}" for q in range(peus)]
            + [f"sgpr_start_{q}" for q in range(peus)] + ["lds_start", "reason", "work",
                                                            "barrier"])


def write_events(path, events, peus: int) -> Path:
    """Write the rows a simulator collected in ``events`` as CSV (:func:`event_columns`);
    empty cells where a value does not apply (no AP before dispatch, no start address for a
    resource a wave group does not use)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blank = [""] * peus
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(event_columns(peus))
        for cycle, kind, wg, ap, waves, starts, reason in events:
            row = [cycle, kind, wg.id, "" if wg.parent is None else wg.parent, wg.channel,
                   wg.priority, wg.waves, wg.vgpr, wg.sgpr, wg.lds, int(wg.independent),
                   wg.duration, wg.arrival, "" if ap is None else ap]
            row += blank if waves is None else waves
            if starts is None:
                row += blank + blank + [""]
            else:
                vgpr, sgpr, lds = starts
                row += ["" if v is None else v for v in vgpr]
                row += ["" if v is None else v for v in sgpr]
                row.append("" if lds is None else lds)
            row.append(reason or "")
            # Appended for the shared-issue model and in-order kernels (after the columns
            # an RTL co-simulation of the fixed model reads).
            row += [wg.duration if wg.work is None else wg.work, int(wg.barrier)]
            writer.writerow(row)
    return path


#: The percentiles of a wait box (:func:`box`): whiskers, quartiles, median.
BOX_PERCENTILES = (1, 25, 50, 75, 99)


def box(values: np.ndarray) -> list[float]:
    """The wait box of ``values``: their :data:`BOX_PERCENTILES` (numpy's linear
    interpolation), empty when there are none. What the wait plot draws, a few numbers
    whatever the run's size, where every WG's wait would be millions on a whole trace."""
    if values.size == 0:
        return []
    return percentiles(np.asarray(values, dtype=float), BOX_PERCENTILES)


class Metrics:
    """The run's measurements as it goes: the wait of every submitted WG dispatched (a split
    one when its last part is; :meth:`add_wait`) with its priority, channel and arrival;
    the arrival and release of every completed WG (:meth:`add_finished`); ``runs`` the run
    time of every WG or part; ``peu_waves[ap][q]`` the waves each PEU received; the time
    integrals of held resources (``used_integral``); the samples; ``counters``.

    The per-WG values are kept as columns of 64-bit integers (``array("q")``, 8 bytes a
    value), not as tuples of Python integers: a whole real trace has millions of WGs."""

    def __init__(self, gpu: GpuConfig, resources: Resources, counters: Counters,
                 sample_interval: int, power_window: int):
        self.gpu = gpu
        self.P, self.Q = gpu.aps, gpu.peus
        self.resources = resources
        self.counters = counters
        self.sample_interval = sample_interval
        self.power_window = power_window
        self.peu_waves = [[0] * self.Q for _ in range(self.P)]
        self.wait_priorities, self.wait_channels = array("q"), array("q")
        self.wait_cycles, self.wait_arrivals = array("q"), array("q")
        self.used_integral = {name: 0 for name in ("vgpr", "sgpr", "lds", "wave_slots")}
        self.samples = {"cycle": [], "utilisation": [], "fragmentation": [],
                        "ap_resource_cv": [], "ap_power_cv": []}
        self.completed = 0
        self.finished_arrivals, self.finished_releases = array("q"), array("q")
        self.runs = array("q")
        # The sampled state kept between samples (see :meth:`sample`).
        self._per_ap: list[float] | None = None
        self._fragments: dict = {}
        self._fragmented: dict = {}
        self._fragmentation = 0.0
        self._resource_cv = 0.0
        # What a compiled run gives measured (model.dispatch.core.engine._fill; None after a
        # Python run): the WGs left waiting as four columns of 64-bit integers' bytes
        # (priority, channel, wait, arrival), the arrivals of the admitted WGs not completed,
        # each sample's mean utilisation.
        self.measured_waiting: tuple[bytes, bytes, bytes, bytes] | None = None
        self.measured_open: np.ndarray | None = None
        self.measured_series: list[float] | None = None

    def add_wait(self, priority: int, channel: int, wait: int, arrival: int) -> None:
        """A submitted WG of ``priority`` and ``channel`` that arrived in cycle ``arrival``
        waited ``wait`` cycles (it was dispatched, or the run ended first)."""
        self.wait_priorities.append(priority)
        self.wait_channels.append(channel)
        self.wait_cycles.append(wait)
        self.wait_arrivals.append(arrival)

    def add_finished(self, arrival: int, release: int) -> None:
        """A submitted WG that arrived in cycle ``arrival`` completed: its resources were
        released in cycle ``release``."""
        self.finished_arrivals.append(arrival)
        self.finished_releases.append(release)

    @property
    def waits(self) -> list[tuple[int, int, int]]:
        """``(priority, channel, wait)`` of every wait recorded, in order (a copy)."""
        return list(zip(self.wait_priorities, self.wait_channels, self.wait_cycles,
                        strict=True))

    def accumulate(self, cycles: int) -> None:
        """The time integrals of ``cycles`` more cycles of the present state."""
        if cycles <= 0:
            return
        resources = self.resources
        held = resources.held_total
        integral = self.used_integral
        integral["vgpr"] += cycles * held["vgpr"]
        integral["sgpr"] += cycles * held["sgpr"]
        integral["lds"] += cycles * held["lds"]
        integral["wave_slots"] += cycles * (self.P * self.Q * self.gpu.wave_slots
                                            - resources.slots_free)

    def sample(self, start: int, stop: int) -> None:
        """Record one sample for every sample cycle in ``[start, stop)``: the state after
        this cycle's dispatch (which no cycle before ``stop`` changes) and the power history
        as of each sample cycle."""
        interval = self.sample_interval
        first = -(-start // interval) * interval
        if first >= stop:
            return
        P, Q, gpu, resources = self.P, self.Q, self.gpu, self.resources
        held, size = resources.held, resources.size
        used = [float(resources.held_total[name]) / (float(n) * len(held[name]))
                for name, n in size.items()]
        total_slots = P * Q * gpu.wave_slots
        used.append(1.0 - float(resources.slots_free) / total_slots)
        # Plain-Python floats in the order and with the operations of the numpy expressions
        # they replace (each an IEEE operation on the same values), so the means are the same.
        # Kept per resource instance and per AP, recomputed only for the APs whose blocks or
        # slots changed since the last sample (``resources.dirty``): a sample costs what
        # changed, not the GPU's size.
        dirty = resources.dirty
        if self._per_ap is None:
            dirty = range(P)
            self._per_ap = [0.0] * P
            self._fragments = {name: np.zeros(len(held[name])) for name in size}
            self._fragmented = {name: np.zeros(len(held[name]), dtype=bool) for name in size}
        if dirty:
            per_ap = self._per_ap
            held_v, held_s, held_l = held["vgpr"], held["sgpr"], held["lds"]
            per_slots = gpu.wave_slots * Q
            ap_slots = resources.ap_slots
            vgpr_q, sgpr_q, lds_n = Q * gpu.vgpr, Q * gpu.sgpr, gpu.lds
            for ap in dirty:
                per_ap[ap] = (sum(held_v[ap * Q:ap * Q + Q]) / vgpr_q
                              + sum(held_s[ap * Q:ap * Q + Q]) / sgpr_q
                              + held_l[ap] / lds_n + (per_slots - ap_slots[ap]) / per_slots) / 4
            for name in size:
                values, fragmented = self._fragments[name], self._fragmented[name]
                free, largest = resources.free[name], resources.largest[name]
                width = Q if len(free) == P * Q else 1
                for ap in dirty:
                    for index in range(ap * width, ap * width + width):
                        count = free[index]
                        if count > 0:
                            values[index] = 1.0 - largest[index] / count
                            fragmented[index] = True
                        else:
                            fragmented[index] = False
            if resources.dirty:
                resources.dirty.clear()
            fragments = np.concatenate([self._fragments[name][self._fragmented[name]]
                                        for name in size])
            self._fragmentation = float(fragments.mean()) if fragments.size else 0.0
            self._resource_cv = coefficient_of_variation(per_ap)
        fragmentation, resource_cv = self._fragmentation, self._resource_cv
        history = resources.history
        samples = self.samples
        window = self.power_window
        # From cycle ``steady`` on every AP's window lies in the last segment of its history
        # (no power change after ``steady - window``): each window is ``rate x window``, the
        # same at every later sample, so one value serves them all (the closed form of a
        # skipped span; the earlier samples, at most ``window / interval + 1``, are computed
        # one by one).
        steady = resources.last_power_change + window
        count = len(range(first, stop, interval))
        varying = (min(count, max(0, -(-(steady - first) // interval)))
                   if count else 0)
        power_cv = samples["ap_power_cv"]
        for sample in range(first, first + varying * interval, interval):
            power = resources.history_windows(range(P), sample, window)
            power_cv.append(coefficient_of_variation(power))
        if count > varying:
            power = [h.rates[-1] * window for h in history]
            power_cv.extend([coefficient_of_variation(power)] * (count - varying))
        samples["cycle"].extend(range(first, stop, interval))
        samples["utilisation"].extend([used] * count)
        samples["fragmentation"].extend([fragmentation] * count)
        samples["ap_resource_cv"].extend([resource_cv] * count)

    @staticmethod
    def _buffer(sim, cycles: int) -> dict | None:
        """MIAOW's in-flight buffer (``miaow``, ``miaow-one-clock``): the decisions its
        controller started before ``cycles`` and how many of them rejected their WG (M4: a
        rejected WG stays buffered and is retried); ``None`` for the other policies. Decisions
        left to replay (every one a rejection, :meth:`model.dispatch.miaow.MiaowSelector.wake`)
        are counted first."""
        selector = sim.selector
        if not hasattr(selector, "rejections"):
            return None
        if selector.quiet_from is not None:
            selector.replay(cycles)
        return {"decisions": selector.decisions, "rejections": selector.rejections}

    def _utilisation_series(self) -> list[float]:
        """The mean utilisation of every sample: one mean per distinct sampled state (a
        skipped span's samples share one list), the same IEEE operations as per sample."""
        if self.measured_series is not None:
            return self.measured_series
        means: dict[int, float] = {}
        series = []
        for used in self.samples["utilisation"]:
            key = id(used)
            value = means.get(key)
            if value is None:
                value = means[key] = float(np.mean(used))
            series.append(value)
        return series

    def _add_waiting(self, sim, cycles: int) -> int:
        """Add the wait so far of every submitted WG still waiting at the end (whole or as
        parts, once, in queue order: a lower bound, so a starved priority shows up as a long
        wait rather than as no data); how many there are (a compiled run gives them as
        columns, ``measured_waiting``)."""
        if self.measured_waiting is not None:
            for column, values in zip((self.wait_priorities, self.wait_channels,
                                       self.wait_cycles, self.wait_arrivals),
                                      self.measured_waiting, strict=True):
                column.frombytes(values)
            return len(self.measured_waiting[0]) // 8
        queues = sim.queues
        waiting_ids = set()
        for wg in queues.queued(sim.selector.buffer):
            original = queues.original(wg)
            if original.id not in waiting_ids:
                waiting_ids.add(original.id)
                self.add_wait(original.priority, original.channel, cycles - original.arrival,
                              original.arrival)
        return len(waiting_ids)

    def _open_arrivals(self, sim) -> np.ndarray:
        """The arrival cycles of the admitted WGs not completed (``sim.live``, or a compiled
        run's ``measured_open``), in arrival (submission) order."""
        if self.measured_open is not None:
            return self.measured_open
        return np.array([wg.arrival for wg in sim.live.values()], dtype=np.int64)

    def results(self, sim, cycles: int) -> dict:
        """The result of the run of ``sim`` (a :class:`~model.dispatch.engine.
        DispatchSimulator`) that ended after ``cycles`` cycles."""
        gpu = self.gpu
        queues = sim.queues
        counters = self.counters
        submitted = sim.submitted
        waiting = self._add_waiting(sim, cycles)
        waits_all = np.frombuffer(self.wait_cycles, dtype=np.int64)
        wait_priorities = np.frombuffer(self.wait_priorities, dtype=np.int64)
        wait_channels = np.frombuffer(self.wait_channels, dtype=np.int64)
        per_priority = {str(p): summary(waits_all[wait_priorities == p])
                        for p in range(gpu.priorities)}
        per_channel = {str(c): summary(waits_all[wait_channels == c])
                       for c in range(queues.channel_count)}
        capacity = {"vgpr": gpu.vgpr * self.P * self.Q, "sgpr": gpu.sgpr * self.P * self.Q,
                    "lds": gpu.lds * self.P, "wave_slots": gpu.wave_slots * self.P * self.Q}
        utilisation = {name: (self.used_integral[name] / (capacity[name] * cycles)
                              if cycles else 0.0) for name in capacity}

        def mean(key):
            values = self.samples[key]
            return float(np.mean(np.array(values, dtype=float), axis=0).mean()) if values \
                else 0.0
        rejected_rows = queues.rejected
        incomplete = submitted - len(rejected_rows) - self.completed
        if incomplete and sim.debug and not counters.violations and \
                cycles < sim.cycles_limit:
            sim.violation(f"{incomplete} WGs neither completed nor rejected")
        # Kept copies: a split WG dispatched whole too, also while its parts still run (a
        # completion without a dispatch is checked at each release, DispatchSimulator.release).
        for wg in sim.workload or ():
            if wg.dispatched is not None and wg.id in queues.parents:
                sim.violation(f"WG {wg.id} was dispatched whole and split")
        peu_waves = np.array(self.peu_waves, dtype=np.int64)
        # Latency (arrival to release) of every submitted WG not rejected; one not finished by
        # the end counts with its time so far, a lower bound, as a wait does.
        rejected = {r["id"] for r in rejected_rows}
        # The completed WGs first (in completion order), then the others (in submission order).
        releases = np.frombuffer(self.finished_releases, dtype=np.int64)
        # ``sim.live``: the admitted WGs not completed, in arrival (submission) order.
        open_arrivals = self._open_arrivals(sim)
        arrivals = np.concatenate([np.frombuffer(self.finished_arrivals, dtype=np.int64),
                                   open_arrivals])
        latencies = np.concatenate([releases, np.full(open_arrivals.size, cycles,
                                                      dtype=np.int64)]) - arrivals
        warmup = sim.warmup
        window = cycles - warmup
        steady_done = int(np.count_nonzero(releases > warmup))
        # The submitted WGs are a prefix of the workload, which is in arrival order.
        steady_offered = max(0, min(bisect_left(sim.source, cycles, key=arrival_of),
                                    submitted)
                             - bisect_left(sim.source, warmup, key=arrival_of))
        if sim.workload is not None:
            # The kept copies say the same as what a run that keeps none derives.
            unfinished = [wg.arrival for wg in sim.workload
                          if wg.completed is None and wg.id not in rejected]
            if unfinished != open_arrivals.tolist():
                sim.violation(f"{len(unfinished)} WGs unfinished, {open_arrivals.size} live")
            offered = sum(1 for wg in sim.workload if warmup <= wg.arrival < cycles)
            if offered != steady_offered:
                sim.violation(f"{offered} WGs offered after the warm-up, {steady_offered} "
                              f"counted")
        wait_arrivals = np.frombuffer(self.wait_arrivals, dtype=np.int64)
        steady = {
            "throughput": 1000.0 * steady_done / window if window > 0 else 0.0,
            "offered": 1000.0 * steady_offered / window if window > 0 else 0.0,
            "wait": summary(waits_all[wait_arrivals >= warmup]),
            "latency": summary(latencies[arrivals >= warmup]),
        }
        return {
            "policy": sim.policy.name,
            "cycles": cycles,
            "workgroups_submitted": submitted,
            "workgroups_completed": self.completed,
            "workgroups_rejected": len(rejected_rows),
            "workgroups_unfinished": incomplete,
            "workgroups_waiting_at_end": waiting,
            "workgroups_after_end": sim.after_end,
            "rejections": rejected_rows,
            "throughput": 1000.0 * self.completed / cycles if cycles else 0.0,
            "wait": {**summary(waits_all), "per_priority": per_priority,
                     "per_channel": per_channel},
            "utilisation": utilisation,
            "ap_imbalance": {"resource": mean("ap_resource_cv"),
                             "power": mean("ap_power_cv")},
            "peu_imbalance": coefficient_of_variation(peu_waves.ravel()),
            "fragmentation": mean("fragmentation"),
            "splits": counters.splits,
            "sub_workgroups": counters.sub_workgroups,
            "stale_aborts": counters.stale_aborts,
            "flushed": counters.flushed,
            "buffer": self._buffer(sim, cycles),
            "invariant_violations": len(counters.violations),
            "violations": counters.violations[:20],
            "processed_cycles": counters.processed_cycles,
            "execution": sim.execution,
            "latency": summary(latencies),
            "run": summary(self.runs),
            "makespan": int(releases.max()) if releases.size else 0,
            "steady": steady,
            "fixed_point": sim.widths,
            "series": {"cycle": self.samples["cycle"],
                       "utilisation": self._utilisation_series(),
                       "ap_resource_cv": self.samples["ap_resource_cv"],
                       "ap_power_cv": self.samples["ap_power_cv"],
                       "peu_waves": peu_waves.ravel().tolist(),
                       "wait_boxes": {str(p): box(waits_all[wait_priorities == p])
                                      for p in range(gpu.priorities)}},
        }
