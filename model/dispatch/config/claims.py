"""The ``[[claims]]`` tables: what a scenario exists to show (:class:`Claim`), the metrics a
claim may name (:func:`metric_paths`) and the loads it is judged at; the measurement over seeds
is :mod:`model.dispatch.claims`."""

from dataclasses import dataclass

from model.config import Fields
from model.dispatch.config.gpu import EXECUTIONS, RESOURCES

__all__ = ["LOAD_AS_WRITTEN", "LOAD_BATCH", "Claim", "metric_paths", "rate_channels_only",
           "read_claim"]

#: A claim's load: the scenario's rates as written, or every WG of the run queued at cycle 0.
LOAD_AS_WRITTEN = "as written"
LOAD_BATCH = "batch"


@dataclass(frozen=True)
class Claim:
    """A comparison the scenario exists to show: ``metric`` (a dotted path into a run's
    results, e.g. ``wait.per_priority.3.max``) of ``policy`` against ``baseline``.

    ``execution``: the execution model it is measured under (``None``: the scenario's).
    ``loads``: where it is judged (:mod:`model.dispatch.claims`): ``"as written"`` (the
    scenario's rates), ``"batch"`` (the same WGs all queued at cycle 0: makespan), or a
    fraction of the baseline's measured capacity (e.g. ``0.7``).
    """

    text: str
    metric: str
    policy: str
    baseline: str
    higher_is_better: bool
    execution: str | None = None
    loads: tuple = (LOAD_AS_WRITTEN,)

    def value(self, results: dict) -> float:
        node = results
        for part in self.metric.split("."):
            node = node[part]
        return float(node)


#: The summary every wait statistic has (:func:`model.stats.summary`).
_SUMMARY = ("count", "mean", "p50", "p99", "max")
#: The results' numbers at the top level, by name.
_SCALARS = ("cycles", "workgroups_submitted", "workgroups_completed", "workgroups_rejected",
            "workgroups_unfinished", "workgroups_waiting_at_end", "workgroups_after_end",
            "throughput", "peu_imbalance", "fragmentation", "splits", "sub_workgroups",
            "stale_aborts", "flushed", "invariant_violations", "processed_cycles", "makespan")


def metric_paths(priorities: int, channels: int) -> list[str]:
    """Every number a run's results hold, as the dotted paths a claim's ``metric`` names
    (a test holds this list equal to the simulator's results)."""
    paths = list(_SCALARS)
    paths += [f"wait.{s}" for s in _SUMMARY]
    paths += [f"wait.per_priority.{p}.{s}" for p in range(priorities) for s in _SUMMARY]
    paths += [f"wait.per_channel.{c}.{s}" for c in range(channels) for s in _SUMMARY]
    paths += [f"utilisation.{name}" for name in RESOURCES]
    paths += ["ap_imbalance.resource", "ap_imbalance.power"]
    paths += [f"{group}.{s}" for group in ("latency", "run") for s in _SUMMARY]
    paths += ["steady.throughput", "steady.offered"]
    paths += [f"steady.{group}.{s}" for group in ("wait", "latency") for s in _SUMMARY]
    return paths


def _metric_help(priorities: int, channels: int) -> str:
    summary = "|".join(_SUMMARY)
    return (f"{', '.join(_SCALARS)}, wait.<{summary}>, wait.per_priority.<0..{priorities - 1}>"
            f".<{summary}>, wait.per_channel.<0..{channels - 1}>.<{summary}>, "
            f"utilisation.<{'|'.join(RESOURCES)}>, ap_imbalance.<resource|power>, "
            f"latency.<{summary}>, run.<{summary}>, steady.<throughput|offered>, "
            f"steady.<wait|latency>.<{summary}>")


def rate_channels_only(scenario) -> str | None:
    """Why the offered load of ``scenario`` (a :class:`~model.dispatch.config.Scenario`) cannot
    be scaled (``None`` when it can: every WG comes from a rate channel)."""
    if scenario.trace is not None or scenario.kernel_trace is not None:
        return "its WGs come from a trace"
    fixed = [index for index, c in enumerate(scenario.channels) if c.arrival == "back_to_back"]
    if fixed:
        return f"channel {fixed[0]} is back to back, not a rate"
    return None


def _loads(fields_: Fields, scenario) -> tuple:
    """A claim's ``loads``: "as written", "batch", or fractions of the measured capacity."""
    values = fields_.list("loads", [LOAD_AS_WRITTEN])
    loads = []
    for value in values:
        if isinstance(value, str) and value in (LOAD_AS_WRITTEN, LOAD_BATCH):
            loads.append(value)
        elif (isinstance(value, int | float) and not isinstance(value, bool)
              and 0 < value <= 4):
            why = rate_channels_only(scenario)
            if why is not None:
                raise fields_.error("loads", f"gives {value!r}, a fraction of the measured "
                                             f"capacity, but the load of this scenario cannot "
                                             f"be scaled: {why}")
            loads.append(float(value))
        else:
            raise fields_.error("loads", f"must list \"{LOAD_AS_WRITTEN}\", \"{LOAD_BATCH}\" "
                                         f"or fractions of the measured capacity in (0, 4], "
                                         f"not {value!r}")
    if not loads or len(set(loads)) != len(loads):
        raise fields_.error("loads", f"must list each load once, at least one, not {values!r}")
    return tuple(loads)


def read_claim(fields_: Fields, policies: list[str], metrics: list[str], scenario) -> Claim:
    """One ``[[claims]]`` table of ``scenario`` (a :class:`~model.dispatch.config.Scenario`
    without its claims), naming two of ``policies`` and one of ``metrics``."""
    channels = scenario.channel_count
    metric = fields_.str("metric")
    if metric not in metrics:
        priorities = sum(1 for m in metrics if m.startswith("wait.per_priority.")) // len(
            _SUMMARY)
        raise fields_.error("metric", f"names {metric!r}, which is not a metric of the "
                                      f"results; accepted: {_metric_help(priorities, channels)}")
    claim = Claim(text=fields_.str("text"), metric=metric,
                  policy=fields_.str("policy", choices=policies),
                  baseline=fields_.str("baseline", choices=policies),
                  higher_is_better=fields_.bool("higher_is_better"),
                  execution=(fields_.str("execution", choices=EXECUTIONS)
                             if "execution" in fields_ else None),
                  loads=_loads(fields_, scenario))
    if claim.policy == claim.baseline:
        raise fields_.error("baseline", f"is the claim's policy {claim.policy!r}; a claim "
                                        f"compares two different policies")
    fields_.done()
    return claim
