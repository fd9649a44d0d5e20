"""Runs of the compiled engine (``model/dispatch/core/src/engine.hpp``), with the result and
event log the Python model gives (:class:`model.dispatch.engine.DispatchSimulator`).

What compiles today (issue 32's first part): the fixed and the shared-issue execution models,
the one-clock decision and the decision pipeline, the seed's selection (embodiments 1, 2, 3,
8, 9, 10 on any free-block circuit and latency), the three comparison rules (``strict``,
``rr_first_fit``, ``blocking_buffer``) on the seed's block units with the split table or the
least-loaded placement, and the faithful baselines (MIAOW, GPGPU-Sim, gem5:
``src/faithful.hpp``) with their own units (``ap_range``, ``counted``, ``wave_regions``) and on
blocks; back-pressure (``dispatch_ready``, a pure function of the cycle: it is asked about
every cycle below the limit before the run), event lists, launch tallies
(:class:`~model.dispatch.launches.LaunchTally`, kept in C++) and other ``events`` objects
with ``record`` (told the events after the run; not a faithful baseline's, whose bit-mask
placements the rows do not carry). MIAOW's pooled shared-issue model (``units =
"ap_range"``) compiles with 128-bit service counters. Observers and per-cycle invariant
checks run on the Python engine: :func:`unsupported` says which runs do, in one line.
"""

from array import array
from itertools import islice

import numpy as np

from model.dispatch.config import LaunchWorkload, WorkGroup
from model.dispatch.core import config, core, reason
from model.dispatch.metrics import EVENT_KINDS
from model.dispatch.resources import Allocation

__all__ = ["run", "unsupported"]

SELECTIONS = ("multi", "strict", "rr_first_fit", "blocking_buffer", "miaow", "gpgpusim",
              "gpgpusim_concurrent", "gem5", "miaow_one_clock")
#: The faithful baselines (their own clock and units: src/faithful.hpp).
FAITHFUL = SELECTIONS[4:]
UNITS = ("blocks", "ap_range", "counted", "wave_regions")
AP_CHOICES = ("lowest", "round_robin", "resource", "instruction", "combined")
PLACEMENTS = ("split", "least_loaded")
#: Back-pressure asks ``dispatch_ready`` about every cycle below the limit before the run.
READY_CYCLES = 1 << 26


def unsupported(policy, *, execution: str = "fixed", events=None, debug: bool = False,
                strict: bool = False, observer=None, dispatch_ready=None,
                keep: bool = False, cycles: int | None = None) -> str | None:
    """Why this run cannot use the compiled engine (``None`` when it can): one line. Give
    ``cycles`` to check back-pressure's length. The shared-issue model's counters are 64-bit
    integers there (128-bit in MIAOW's pooled model): the compiled run itself refuses a run
    whose bound does not fit, with an OverflowError in the same words (``src/module.cpp``,
    ``shared_fits``), on which :class:`~model.dispatch.engine.DispatchSimulator` runs it on
    the Python engine."""
    if core is None:
        return reason
    checks = [
        (execution not in ("fixed", "shared"), f"the {execution} execution model"),
        (policy.selection not in SELECTIONS, f"selection {policy.selection!r}"),
        (policy.units not in UNITS, f"units {policy.units!r}"),
        # A faithful baseline places waves by its own rule (model.dispatch.baselines.matcher_for).
        (policy.wave_placement not in PLACEMENTS and policy.selection not in FAITHFUL,
         f"wave placement {policy.wave_placement!r}"),
        (policy.selection in FAITHFUL and events is not None
         and not isinstance(events, list) and not _is_tally(events),
         "a faithful baseline's events told to a record method"),
        (dispatch_ready is not None and cycles is not None and cycles > READY_CYCLES,
         f"back-pressure over more than {READY_CYCLES} cycles"),
        (observer is not None, "an observer"),
        (debug or strict, "per-cycle invariant checks (debug/strict)"),
        (keep, "kept WG copies (keep=True)"),
        (events is not None and not isinstance(events, list)
         and getattr(events, "record", None) is None, "an events object without record"),
    ]
    for condition, what in checks:
        if condition:
            return f"not compiled yet: {what}"
    return None


def _no_progress(cycle: int) -> None:
    """The progress call of a run without a bar: it is where Ctrl-C stops a compiled run."""


def _is_tally(events) -> bool:
    """Whether ``events`` is a :class:`~model.dispatch.launches.LaunchTally` (what the
    compiled engine tallies itself; read by its attributes: the launches module imports the
    engine)."""
    return callable(getattr(events, "record", None)) and all(
        hasattr(events, name) for name in ("_firsts", "_ends", "starts", "finishes",
                                           "released"))


def _rules(sim):
    policy, gpu = sim.policy, sim.gpu
    rules = core.Rules()
    rules.selection = SELECTIONS.index(policy.selection)
    rules.units = UNITS.index(policy.units)
    rules.ap_choice = AP_CHOICES.index(policy.ap_choice)
    rules.resource_weight, rules.instruction_weight = (policy.resource_weight,
                                                       policy.instruction_weight)
    # A faithful baseline's matcher moves no pointer (RecordingMatcher.chosen).
    rules.rotate = policy.rotate and policy.selection not in FAITHFUL
    rules.combined_all = policy.combined_scale == "all"
    rules.windows = list(policy.windows)
    rules.split_threshold, rules.lfsr_seed = policy.split_threshold, policy.lfsr_seed
    rules.release_limit = policy.release_limit
    rules.decision_pipeline, rules.score_latency = (policy.decision_pipeline,
                                                    policy.score_latency)
    rules.rotating_scores = policy.score_refresh == "rotating"
    rules.wave_power = list(sim.wave_power)
    rules.circuit_name = policy.circuit
    rules.least_loaded = (policy.wave_placement == "least_loaded"
                          and policy.selection not in FAITHFUL)   # their own placement
    rules.set_resource_weights(list(gpu.resource_weight_values()))
    return rules


def run(sim, events=None) -> dict:
    """The result of ``sim`` (a :class:`~model.dispatch.engine.DispatchSimulator` built with
    ``keep=False``, not run) computed by the compiled engine: the same dictionary its
    ``run()`` returns, and its ``held_cycles`` (OverflowError, with :func:`unsupported`'s
    words and ``sim`` unchanged, when a shared-issue run's counters could pass 63 bits, 127
    in MIAOW's pooled model);
    ``events`` (a list) receives the same event log rows, a
    :class:`~model.dispatch.launches.LaunchTally` the same tallies, or (another object with
    ``record``) is told the same events, after the run."""
    why = unsupported(sim.policy, execution=sim.execution, events=events,
                      dispatch_ready=sim.dispatch_ready, cycles=sim.cycles_limit)
    if why is not None:
        raise ValueError(why)
    # The shared-issue bound is checked by the compiled run itself (OverflowError, before it
    # changes anything): it reads the launches anyway.
    columns = _launches(sim)
    options = core.RunOptions()
    options.cycles, options.warmup = sim.cycles_limit, sim.warmup
    options.sample_interval = sim.metrics.sample_interval
    options.power_window = sim.metrics.power_window
    options.channel_count, options.skip = sim.channel_count, sim.skip
    tally = events if _is_tally(events) else None
    options.events = events is not None and tally is None
    options.shared = sim.execution == "shared"
    options.issue_width, options.drain = sim.gpu.issue_width, sim.gpu.drain
    if sim.dispatch_ready is not None:
        ready = sim.dispatch_ready
        options.set_ready(bytes(bool(ready(c)) for c in range(sim.cycles_limit)))
    record = core.run(config(sim.gpu, sim.policy, sim.metrics.power_window), _rules(sim),
                      options, columns, sim.submitted, len(sim.source),
                      sim.progress or _no_progress, tally)
    cycles = record.pop("cycles")
    _fill(sim, record)
    sim.held_cycles = record["held_cycles"]
    if tally is not None:
        starts, tally.finishes, tally.released, error = record["tally"]
        if error:
            raise ValueError(error)
        tally.starts = [None if start < 0 else start for start in starts]
    elif isinstance(events, list):
        _events(events, record)
    elif events is not None:
        rows = []
        _events(rows, record)
        _tell(events.record, rows, sim.wave_power)
    return sim.metrics.results(sim, cycles)


def _launches(sim) -> dict:
    """The submitted WGs as launches: each launch's first WG (``templates``, whose fields the
    compiled engine reads) and its WG count (``count``, 64-bit integers): a
    :class:`~model.dispatch.config.LaunchWorkload`'s own launches, a list's WGs one each (the
    compiled engine makes the WGs as they arrive, and stops at ``sim.submitted``)."""
    source = sim.source
    if isinstance(source, LaunchWorkload):
        launches = list(source.launches())
        return {"templates": [wg for wg, _, _ in launches],
                "count": array("q", [count for _, count, _ in launches])}
    templates = list(islice(source, sim.submitted))
    return {"templates": templates, "count": array("q", [1]) * len(templates)}


def _column(raw: bytes) -> array:
    """A column of 64-bit integers from the bytes the compiled engine gives."""
    column = array("q")
    column.frombytes(raw)
    return column


def _fill(sim, record: dict) -> None:
    """Give ``sim``'s metrics, counters and queues what the compiled run measured, so that
    :meth:`~model.dispatch.metrics.Metrics.results` reads it as after a Python run."""
    counters, metrics, queues = sim.counters, sim.metrics, sim.queues
    for name, value in record["counters"].items():
        setattr(counters, name, value)
    counters.violations.extend(record["violations"])
    metrics.completed = record["completed"]
    for name, values in zip(("wait_priorities", "wait_channels", "wait_cycles",
                             "wait_arrivals"), record["wait"], strict=True):
        setattr(metrics, name, _column(values))
    metrics.finished_arrivals = _column(record["finished"][0])
    metrics.finished_releases = _column(record["finished"][1])
    metrics.runs = _column(record["runs"])
    Q = sim.Q
    waves = record["peu_waves"]
    metrics.peu_waves = [waves[ap * Q:ap * Q + Q] for ap in range(sim.P)]
    metrics.used_integral = dict(zip(("vgpr", "sgpr", "lds", "wave_slots"),
                                     record["used_integral"], strict=True))
    samples = record["samples"]
    series = samples.pop("utilisation")
    metrics.samples = {**samples, "utilisation": series}
    metrics.measured_series = series                   # each sample's mean, computed there
    queues.rejected = record["rejections"]
    # The WGs left waiting and running, as columns (no object per WG): what a Python run's
    # Metrics reads from the queues and sim.live.
    metrics.measured_waiting = tuple(record["queued"])
    metrics.measured_open = np.frombuffer(record["live"], dtype=np.int64)
    sim.selector.buffer = None
    if record["buffer"] is not None:        # MIAOW's decisions (Metrics._buffer), replayed
        sim.selector.decisions = record["buffer"]["decisions"]
        sim.selector.rejections = record["buffer"]["rejections"]
        sim.selector.quiet_from = None


def _events(events: list, record: dict) -> None:
    """The event log rows of the run, with WG objects as the Python engine's (filled in as
    they are at its end)."""
    wgs = []
    for (identity, channel, priority, waves, vgpr, sgpr, lds, duration, independent, arrival,
         parent, work, barrier, grid, dispatched, completed, ap) in record["table"]:
        wg = WorkGroup(identity, channel, priority, waves, vgpr, sgpr, lds, duration,
                       bool(independent), arrival, None if parent < 0 else parent,
                       None if work < 0 else work, bool(barrier), None if grid < 0 else grid)
        wg.dispatched = None if dispatched < 0 else dispatched
        wg.completed = None if completed < 0 else completed
        wg.ap = None if ap < 0 else ap
        wgs.append(wg)
    events.extend((cycle, EVENT_KINDS[kind], wgs[index], ap, waves, starts, reason)
                  for cycle, kind, index, ap, waves, starts, reason in record["events"])


def _tell(record, rows: list, wave_power: list) -> None:
    """Call ``record`` with each event as the Python engine calls it
    (:func:`~model.dispatch.metrics.event_recorder`'s arguments: a dispatch or release with
    its :class:`~model.dispatch.resources.Allocation`, rebuilt from the row)."""
    for cycle, kind, wg, ap, waves, starts, why in rows:
        if kind in ("arrive", "split"):
            record(cycle, kind, wg)
        elif kind == "reject":
            record(cycle, kind, wg, reason=why)
        elif kind == "stale-abort":
            record(cycle, kind, wg, ap, tuple(waves))
        else:
            vgpr, sgpr, lds = starts
            waves = tuple(waves)
            allocation = Allocation(
                wg, ap, waves,
                [None if s is None else (s, n * wg.vgpr) for s, n in zip(vgpr, waves, strict=True)],
                [None if s is None else (s, n * wg.sgpr) for s, n in zip(sgpr, waves, strict=True)],
                None if lds is None else (lds, wg.lds), wave_power[wg.channel] * wg.waves)
            record(cycle, kind, wg, ap, waves, allocation)
