"""Runs of the compiled engine (``model/dispatch/core/src/engine.hpp``), with the result and
event log the Python model gives (:class:`model.dispatch.engine.DispatchSimulator`).

What compiles today (issue 32's first part): the fixed execution model, the one-clock
decision and the decision pipeline, the seed's selection (embodiments 1, 2, 3, 8, 9, 10 on
any free-block circuit and latency) and the three comparison rules (``strict``,
``rr_first_fit``, ``blocking_buffer``) on the seed's block units with the split table. The
faithful baselines (MIAOW, GPGPU-Sim, gem5: ``src/faithful.hpp``) compile with their own units
(``ap_range``, ``counted``, ``wave_regions``) and on blocks. Least-loaded placement, the
shared-issue model,
back-pressure, observers, per-cycle invariant checks and launch tallies run on the Python
engine: :func:`unsupported` says which, in one line.
"""

from array import array
from collections import deque
from types import SimpleNamespace

from model.dispatch.config import WorkGroup
from model.dispatch.core import config, core, reason
from model.dispatch.metrics import EVENT_KINDS

__all__ = ["run", "unsupported"]

SELECTIONS = ("multi", "strict", "rr_first_fit", "blocking_buffer", "miaow", "gpgpusim",
              "gpgpusim_concurrent", "gem5", "miaow_one_clock")
#: The faithful baselines (their own clock and units: src/faithful.hpp).
FAITHFUL = SELECTIONS[4:]
UNITS = ("blocks", "ap_range", "counted", "wave_regions")
AP_CHOICES = ("lowest", "round_robin", "resource", "instruction", "combined")
_FIELDS = ("id", "channel", "priority", "waves", "vgpr", "sgpr", "lds", "duration",
           "independent", "arrival", "parent", "work", "barrier", "grid")


def unsupported(policy, *, execution: str = "fixed", events=None, debug: bool = False,
                strict: bool = False, observer=None, dispatch_ready=None,
                keep: bool = False) -> str | None:
    """Why this run cannot use the compiled engine (``None`` when it can): one line."""
    if core is None:
        return reason
    checks = [
        (execution != "fixed", f"the {execution} execution model"),
        (policy.selection not in SELECTIONS, f"selection {policy.selection!r}"),
        (policy.units not in UNITS, f"units {policy.units!r}"),
        # A faithful baseline places waves by its own rule (model.dispatch.baselines.matcher_for).
        (policy.wave_placement != "split" and policy.selection not in FAITHFUL,
         f"wave placement {policy.wave_placement!r}"),
        (dispatch_ready is not None, "back-pressure (dispatch_ready)"),
        (observer is not None, "an observer"),
        (debug or strict, "per-cycle invariant checks (debug/strict)"),
        (keep, "kept WG copies (keep=True)"),
        (events is not None and not isinstance(events, list), "a launch tally"),
    ]
    for condition, what in checks:
        if condition:
            return f"the compiled engine does not run {what} yet"
    return None


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
    rules.wave_power = list(sim.wave_power)
    rules.circuit_name = policy.circuit
    rules.set_resource_weights(list(gpu.resource_weight_values()))
    return rules


def run(sim, events: list | None = None) -> dict:
    """The result of ``sim`` (a :class:`~model.dispatch.engine.DispatchSimulator` built with
    ``keep=False``, not run) computed by the compiled engine: the same dictionary its
    ``run()`` returns; ``events`` (a list) receives the same event log rows."""
    arrivals = list(sim._arrivals())
    columns = {name: [] for name in _FIELDS}
    for wg in arrivals:
        for name in _FIELDS:
            value = getattr(wg, name)
            columns[name].append(-1 if value is None else int(value))
    options = core.RunOptions()
    options.cycles, options.warmup = sim.cycles_limit, sim.warmup
    options.sample_interval = sim.metrics.sample_interval
    options.power_window = sim.metrics.power_window
    options.channel_count, options.skip = sim.channel_count, sim.skip
    options.events = events is not None
    record = core.run(config(sim.gpu, sim.policy, sim.metrics.power_window), _rules(sim),
                      options, columns, sim.submitted, len(sim.source))
    cycles = record.pop("cycles")
    _fill(sim, record, columns)
    if events is not None:
        _events(events, arrivals, record)
    return sim.metrics.results(sim, cycles)


def _fill(sim, record: dict, columns: dict) -> None:
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
    arrival, identity, priority, channel = (columns[name] for name in
                                            ("arrival", "id", "priority", "channel"))
    sim.live = {index: SimpleNamespace(arrival=arrival[index]) for index in record["live"]}
    queues.channels = [deque(SimpleNamespace(id=identity[i], priority=priority[i],
                                             channel=channel[i], arrival=arrival[i],
                                             parent=None)
                             for i in record["queued"])]
    sim.selector.buffer = None
    if record["buffer"] is not None:        # MIAOW's decisions (Metrics._buffer), replayed
        sim.selector.decisions = record["buffer"]["decisions"]
        sim.selector.rejections = record["buffer"]["rejections"]
        sim.selector.quiet_from = None


def _events(events: list, arrivals: list, record: dict) -> None:
    """The event log rows of the run, with WG objects as the Python engine's (filled in as
    they are at its end)."""
    wgs = list(arrivals)
    for (identity, channel, priority, waves, vgpr, sgpr, lds, duration, independent, arrival,
         parent, work) in record["parts"]:
        wgs.append(WorkGroup(identity, channel, priority, waves, vgpr, sgpr, lds, duration,
                             bool(independent), arrival, parent, None if work < 0 else work))
    for wg, dispatched, completed, ap in zip(wgs, record["dispatched"], record["completed_at"],
                                             record["ap"], strict=True):
        wg.dispatched = None if dispatched < 0 else dispatched
        wg.completed = None if completed < 0 else completed
        wg.ap = None if ap < 0 else ap
    events.extend((cycle, EVENT_KINDS[kind], wgs[index], ap, waves, starts, reason)
                  for cycle, kind, index, ap, waves, starts, reason in record["events"])

