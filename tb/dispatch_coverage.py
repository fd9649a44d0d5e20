"""Functional coverage of the dispatcher's co-simulation: which behaviours each job exercised.

A job covers a behaviour when, in its run, that behaviour decided something:

* ``multi``, ``strict``, ``rr_first_fit``, ``blocking_buffer``: the selection rule chose a WG
  that was dispatched while two or more channels had a head (``multi``: two or more heads
  matched);
* ``windows``: embodiment 2's windows changed the winner (the promoted priority's heads won
  over a higher plain priority); ``a41``: a tie among heads of the best rank, broken by
  a41's flags with some flag clear; ``a42``: such a tie with every flag set (the others'
  flags cleared);
* ``ap <rule>``: the AP choice rule chose among two or more APs for a dispatched WG;
* ``split``, ``stale abort``: clocks with a split or a stale abort, compared with the RTL
  (the driver's counts); ``flush``: WGs in the decision pipeline's flight thrown away by a
  stale abort (the model's count; the RTL's stale abort is compared in the same clock);
  ``back-pressure``: clocks held by ``dispatch.ready`` low (compared).

The rules that decided are recorded from the model's selector as it runs
(:func:`instrument`); the RTL's decisions are compared with the model's clock for clock, so in
a job that passes they are the RTL's too. A choice counts when a dispatch follows it: in the
same cycle (the one-clock decision) or ``decision_pipeline`` cycles later (the pipelined
one). :func:`applicable` says which behaviours a shape can exercise, and why not the rest.
"""

from collections import Counter

__all__ = ["BEHAVIOURS", "MINIMUM_JOBS", "applicable", "behaviours", "coverage_table",
           "instrument", "job_coverage", "jobs_per_behaviour", "shortfall"]

BEHAVIOURS = ("multi", "windows", "a41", "a42", "strict", "rr_first_fit", "blocking_buffer",
              "ap round_robin", "ap lowest", "ap resource", "ap instruction", "ap combined",
              "split", "stale abort", "flush", "back-pressure")
#: Every behaviour a shape can exercise must be exercised by at least this many jobs.
MINIMUM_JOBS = 3


def instrument(simulator) -> list:
    """Wrap the selector of a :class:`model.dispatch.DispatchSimulator` (before its run) so
    that every choice appends ``(cycle, behaviour)`` to the list returned."""
    selector, hits = simulator.selector, []
    policy = simulator.policy

    def record(cycle, *names):
        hits.extend((cycle, name) for name in names)

    if policy.selection == "multi":
        highest = selector.highest

        def traced_highest(matches, priorities, cycle):
            ranks = {c: selector.rank(priorities[c], cycle) for c in matches}
            best = min(ranks.values())
            tied = [c for c in matches if ranks[c] == best]
            plain = min(priorities.values())
            names = ["multi"]
            if set(tied) != {c for c in matches if priorities[c] == plain}:
                names.append("windows")
            if len(tied) > 1:
                flags = [bool(selector.selected[c, priorities[tied[0]]]) for c in tied]
                names.append("a42" if all(flags) else "a41")
            record(cycle, *names)
            return highest(matches, priorities, cycle)
        selector.highest = traced_highest
    else:
        for method in ("select", "choose"):
            original = getattr(selector, method)

            def traced(*args, original=original):
                cycle = args[-1]
                channels = selector.channels
                if sum(1 for queue in channels if queue) + (selector.buffer is not None) > 1:
                    record(cycle, policy.selection)
                return original(*args)
            setattr(selector, method, traced)
    choose_ap = selector.choose_ap

    def traced_choose_ap(mask, cycle, scores=None):
        if mask & (mask - 1):
            record(cycle, f"ap {policy.ap_choice}")
        return choose_ap(mask, cycle, scores)
    selector.choose_ap = traced_choose_ap
    return hits


def behaviours(hits: list, events: list, policy, flushed: int) -> Counter:
    """The decisions of ``hits`` that a dispatch of ``events`` followed, and the model's
    splits, stale aborts and flushed WGs: behaviour to count."""
    delay = policy.decision_pipeline
    dispatched = {cycle for cycle, kind, *_ in events if kind == "dispatch"}
    counts = Counter(name for cycle, name in hits
                     if cycle in dispatched or cycle + delay in dispatched)
    for _, kind, *_ in events:
        if kind == "split":
            counts["split"] += 1
        elif kind == "stale-abort":
            counts["stale abort"] += 1
    if flushed:
        counts["flush"] = flushed
    return counts


def job_coverage(run=None, summary: dict | None = None) -> Counter:
    """One job's coverage. From a co-simulation ``summary`` (a :class:`tb.dispatch_bench.
    CosimDriver`'s, also as read back from JSON): the rules of its model run, and the splits,
    stale aborts and held clocks the driver compared with the RTL. From a model ``run``
    alone (the fast tier's coverage test): the rules, splits, stale aborts and held cycles
    of the model."""
    if summary is not None:
        counts = Counter(summary["coverage"])
        counts["split"] = summary["splits"]
        counts["stale abort"] = summary["stale_aborts"]
        counts["back-pressure"] = summary["held"]
    else:
        counts = Counter(run.coverage)
        counts["back-pressure"] = len(run.held)
    return +counts


def jobs_per_behaviour(shape, jobs: list) -> dict:
    """Behaviour to the number of ``jobs`` (each a :class:`collections.Counter` of
    :func:`job_coverage`) that exercised it; ``None`` for one ``shape`` cannot exercise."""
    skipped = applicable(shape)
    return {name: None if name in skipped else sum(1 for job in jobs if job[name])
            for name in BEHAVIOURS}


def shortfall(shape, jobs: list) -> list[str]:
    """The behaviours ``shape`` can exercise that fewer than :data:`MINIMUM_JOBS` of
    ``jobs`` did."""
    return [f"{name}: {count} jobs" for name, count in jobs_per_behaviour(shape, jobs).items()
            if count is not None and count < MINIMUM_JOBS]


def coverage_table(shapes: dict, title: str, *, console=None):
    """A rich table of ``shapes`` (name to ``(shape, jobs)``): a column per shape, a row per
    behaviour, the jobs that exercised it (``-``: the shape cannot; red: under
    :data:`MINIMUM_JOBS`). Printed on ``console`` when given; returned."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("behaviour")
    counts = {}
    for name, (shape, jobs) in shapes.items():
        table.add_column(name, justify="right")
        counts[name] = jobs_per_behaviour(shape, jobs)
    for behaviour in BEHAVIOURS:
        cells = []
        for name in shapes:
            count = counts[name][behaviour]
            cells.append("-" if count is None else str(count) if count >= MINIMUM_JOBS
                         else f"[red]{count}[/red]")
        table.add_row(behaviour, *cells)
    if console is not None:
        console.print(table)
    return table


def applicable(shape) -> dict[str, str]:
    """The behaviours ``shape`` (a :class:`tb.dispatch_cases.Shape`) cannot exercise, each
    with the reason; every other behaviour of :data:`BEHAVIOURS` it must."""
    policy, gpu = shape.policy, shape.gpu
    out = {}
    if policy.decision_pipeline:
        out["blocking_buffer"] = "the pipelined decision does not define the buffer"
    else:
        out["flush"] = "the one-clock decision has no WGs in flight to flush"
    if gpu.priorities < 2:
        out["windows"] = "one priority: a window promotes the only one"
    if policy.circuit == "exact" and policy.circuit_latency == 0:
        out["stale abort"] = "an exact view of latency 0 is never stale"
        out.setdefault("flush", "no stale abort (exact view of latency 0)")
    return out
