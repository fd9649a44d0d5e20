"""Runs of the compiled engine (``model/dispatch/core/src/engine.hpp``), with the result and
event log the Python model gives (:class:`model.dispatch.engine.DispatchSimulator`).

What compiles today (issue 32's first part): the fixed execution model, the one-clock
decision and the decision pipeline, the seed's selection (embodiments 1, 2, 3, 8, 9, 10 on
any free-block circuit and latency) and the three comparison rules (``strict``,
``rr_first_fit``, ``blocking_buffer``) on the seed's block units with the split table,
with an event list or a launch tally (:class:`~model.dispatch.launches.LaunchTally`). The
faithful baselines (MIAOW, GPGPU-Sim, gem5), least-loaded placement, the shared-issue model,
back-pressure, observers and per-cycle invariant checks run on the Python
engine: :func:`unsupported` says which, in one line.
"""

from array import array
from collections import deque
from itertools import islice
from operator import attrgetter
from types import SimpleNamespace

from model.dispatch.config import LaunchWorkload, WorkGroup
from model.dispatch.core import config, core, reason
from model.dispatch.launches import LaunchTally
from model.dispatch.metrics import EVENT_KINDS

__all__ = ["run", "unsupported"]

SELECTIONS = ("multi", "strict", "rr_first_fit", "blocking_buffer")
AP_CHOICES = ("lowest", "round_robin", "resource", "instruction", "combined")
_FIELDS = ("id", "channel", "priority", "waves", "vgpr", "sgpr", "lds", "duration",
           "independent", "arrival", "parent", "work", "barrier")


def unsupported(policy, *, execution: str = "fixed", events=None, debug: bool = False,
                strict: bool = False, observer=None, dispatch_ready=None,
                keep: bool = False) -> str | None:
    """Why this run cannot use the compiled engine (``None`` when it can): one line."""
    if core is None:
        return reason
    checks = [
        (execution != "fixed", f"the {execution} execution model"),
        (policy.selection not in SELECTIONS, f"selection {policy.selection!r}"),
        (policy.units != "blocks", f"units {policy.units!r}"),
        (policy.wave_placement != "split", f"wave placement {policy.wave_placement!r}"),
        (dispatch_ready is not None, "back-pressure (dispatch_ready)"),
        (observer is not None, "an observer"),
        (debug or strict, "per-cycle invariant checks (debug/strict)"),
        (keep, "kept WG copies (keep=True)"),
        (events is not None and not isinstance(events, list | LaunchTally),
         f"events recorded by {type(events).__name__}"),
    ]
    for condition, what in checks:
        if condition:
            return f"not compiled yet: {what}"
    return None


def _rules(sim):
    policy, gpu = sim.policy, sim.gpu
    rules = core.Rules()
    rules.selection = SELECTIONS.index(policy.selection)
    rules.ap_choice = AP_CHOICES.index(policy.ap_choice)
    rules.resource_weight, rules.instruction_weight = (policy.resource_weight,
                                                       policy.instruction_weight)
    rules.rotate, rules.combined_all = policy.rotate, policy.combined_scale == "all"
    rules.windows = list(policy.windows)
    rules.split_threshold, rules.lfsr_seed = policy.split_threshold, policy.lfsr_seed
    rules.release_limit = policy.release_limit
    rules.decision_pipeline, rules.score_latency = (policy.decision_pipeline,
                                                    policy.score_latency)
    rules.wave_power = list(sim.wave_power)
    rules.circuit_name = policy.circuit
    rules.set_resource_weights(list(gpu.resource_weight_values()))
    return rules


def run(sim, events: list | None = None) -> dict:
    """The result of ``sim`` (a :class:`~model.dispatch.engine.DispatchSimulator` built with
    ``keep=False``, not run) computed by the compiled engine: the same dictionary its
    ``run()`` returns; ``events`` (a list) receives the same event log rows."""
    columns = _launches(sim)
    options = core.RunOptions()
    options.cycles, options.warmup = sim.cycles_limit, sim.warmup
    options.sample_interval = sim.metrics.sample_interval
    options.power_window = sim.metrics.power_window
    options.channel_count, options.skip = sim.channel_count, sim.skip
    tally = events if isinstance(events, LaunchTally) else None
    options.events = events is not None and tally is None
    record = core.run(config(sim.gpu, sim.policy, sim.metrics.power_window), _rules(sim),
                      options, columns, sim.submitted, len(sim.source), sim.progress, tally)
    cycles = record.pop("cycles")
    _fill(sim, record)
    if tally is not None:
        starts, tally.finishes, tally.released, error = record["tally"]
        if error:
            raise ValueError(error)
        tally.starts = [None if start < 0 else start for start in starts]
    elif events is not None:
        _events(events, record)
    return sim.metrics.results(sim, cycles)


def _launches(sim) -> dict:
    """The submitted WGs as launch columns (a template's fields and a count per launch):
    a :class:`~model.dispatch.config.LaunchWorkload`'s own launches, a list's WGs one each
    (the compiled engine makes the WGs as they arrive, and stops at ``sim.submitted``)."""
    source = sim.source
    if isinstance(source, LaunchWorkload):
        launches = [(wg, count) for wg, count, _ in source.launches()]
    else:
        launches = [(wg, 1) for wg in islice(source, sim.submitted)]
    fields = attrgetter(*_FIELDS)
    rows = [(*fields(wg), count) for wg, count in launches]
    names = (*_FIELDS, "count")
    columns = {name: list(values) for name, values in zip(names, zip(*rows, strict=True),
                                                          strict=True)} if rows \
        else {name: [] for name in names}
    for name in ("parent", "work"):
        columns[name] = [-1 if value is None else value for value in columns[name]]
    return columns


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
        setattr(metrics, name, array("q", values))
    metrics.finished_arrivals = array("q", record["finished"][0])
    metrics.finished_releases = array("q", record["finished"][1])
    metrics.runs = array("q", record["runs"])
    Q = sim.Q
    waves = record["peu_waves"]
    metrics.peu_waves = [waves[ap * Q:ap * Q + Q] for ap in range(sim.P)]
    metrics.used_integral = dict(zip(("vgpr", "sgpr", "lds", "wave_slots"),
                                     record["used_integral"], strict=True))
    samples = record["samples"]
    series = samples.pop("utilisation")
    metrics.samples = {**samples, "utilisation": series}
    metrics._utilisation_series = lambda: series       # each sample's mean, computed there
    queues.rejected = record["rejections"]
    sim.live = {identity: SimpleNamespace(arrival=arrival)
                for identity, _, _, arrival in record["live"]}
    queues.channels = [deque(SimpleNamespace(id=identity, priority=priority, channel=channel,
                                             arrival=arrival, parent=None)
                             for identity, priority, channel, arrival in record["queued"])]
    sim.selector.buffer = None


def _events(events: list, record: dict) -> None:
    """The event log rows of the run, with WG objects as the Python engine's (filled in as
    they are at its end)."""
    wgs = []
    for (identity, channel, priority, waves, vgpr, sgpr, lds, duration, independent, arrival,
         parent, work, barrier, dispatched, completed, ap) in record["table"]:
        wg = WorkGroup(identity, channel, priority, waves, vgpr, sgpr, lds, duration,
                       bool(independent), arrival, None if parent < 0 else parent,
                       None if work < 0 else work, bool(barrier))
        wg.dispatched = None if dispatched < 0 else dispatched
        wg.completed = None if completed < 0 else completed
        wg.ap = None if ap < 0 else ap
        wgs.append(wg)
    events.extend((cycle, EVENT_KINDS[kind], wgs[index], ap, waves, starts, reason)
                  for cycle, kind, index, ap, waves, starts, reason in record["events"])
