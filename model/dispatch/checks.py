"""The dispatcher model's invariants, checked every processed cycle under ``debug``.

Not a stage of seed 002: independent checks of the state every stage keeps — the status
registers against their held and free counts (the resource table,
:mod:`model.dispatch.resources`), the view's per-AP sums (:mod:`model.dispatch.views`), the
wave slots and instruction power against the running WGs' records, the kept fit masks
against a fresh match (:mod:`model.dispatch.matcher`), the shared-issue model's own
(:meth:`model.dispatch.execution.SharedExecution.check`) and a baseline's own units'
(:meth:`model.dispatch.units.Units.check`). RTL twin: none (the RTL's checks
are the co-simulation's comparisons, tb/dispatch_bench.py).

A violation is counted in the result (``invariant_violations``, the first 20 messages), or
raises :class:`InvariantError` at once with ``strict``.
"""

import numpy as np

from model.checks import InvariantError

__all__ = ["InvariantError", "check_all", "reporter"]


def reporter(violations: list, strict: bool):
    """``violation(message)``: append ``message`` to ``violations``; with ``strict`` raise
    :class:`InvariantError` too."""
    def violation(message: str) -> None:
        violations.append(message)
        if strict:
            raise InvariantError(message)
    return violation


def check_all(sim, cycle: int) -> None:
    """Every invariant of ``sim`` (a :class:`~model.dispatch.engine.DispatchSimulator`) at
    ``cycle``, after its free-block view (step 3)."""
    violation = sim.violation
    resources, queues, matcher = sim.resources, sim.queues, sim.matcher
    P, Q = resources.P, resources.Q
    for name, n in resources.size.items():
        held = resources.held[name]
        for index, bits in enumerate(resources.bits[name]):
            free = bits.bit_count()
            if free + held[index] != n:
                violation(f"cycle {cycle}: {name}[{index}] free {free} + held "
                          f"{held[index]} != capacity {n}")
            if free != resources.free[name][index]:
                violation(f"cycle {cycle}: {name}[{index}] free count "
                          f"{resources.free[name][index]} disagrees with its bitmap "
                          f"({free})")
        if sum(held) != resources.held_total[name]:
            violation(f"cycle {cycle}: {name} held total {resources.held_total[name]} "
                      f"!= {sum(held)}")
    for name in ("vgpr", "sgpr"):
        view = sim.views.view[name]
        sums = [sum(view[ap * Q:(ap + 1) * Q]) for ap in range(P)]
        if sums != sim.views.view_sum[name]:
            violation(f"cycle {cycle}: {name} view sums {sim.views.view_sum[name]} "
                      f"!= {sums}")
    live = np.zeros((P, Q), dtype=np.int64)
    power = [0] * P
    inflight = [0] * queues.channel_count
    for allocation in resources.running.values():
        live[allocation.ap] += allocation.waves
        inflight[allocation.wg.channel] += 1
        if allocation.wg.dispatched < cycle:
            power[allocation.ap] += allocation.power
    if inflight != queues.inflight:
        violation(f"cycle {cycle}: running WGs per channel {queues.inflight} != "
                  f"{inflight}")
    if sim.execution_model.shared:
        sim.execution_model.check(cycle, live, violation)
    slots = np.array(resources.slots, dtype=np.int64)
    wave_slots = sim.gpu.wave_slots
    if np.any(slots + live != wave_slots):
        violation(f"cycle {cycle}: wave slots free + held != {wave_slots}")
    if [sum(row) for row in resources.slots] != resources.ap_slots or \
            sum(resources.ap_slots) != resources.slots_free:
        violation(f"cycle {cycle}: free wave slot totals disagree")
    now = [h.energy(cycle + 1) - h.energy(cycle) for h in resources.history]
    if now != power:
        violation(f"cycle {cycle}: instruction power per AP {now} != the running "
                  f"WGs' {power}")
    # Fit masks are kept for head WGs, a head's inherited one for its successor and MIAOW's
    # for its buffered WGs: every one for a WG still waiting, exact but for its dirty APs.
    heads = {w.id: w for w in queues.heads(sim.selector.buffer)}
    waiting = None
    for wg_id, (mask, dirty) in matcher.masks.items():
        head = heads.get(wg_id)
        if head is None:
            if waiting is None:
                waiting = {w.id: w for w in queues.queued(sim.selector.buffer)}
            head = waiting.get(wg_id)
        if head is None:
            violation(f"cycle {cycle}: a fit mask is kept for WG {wg_id}, which is not "
                      f"waiting")
            continue
        fresh = sum(1 << ap for ap in range(P) if matcher.fits(head, ap))
        if (mask ^ fresh) & ~dirty:
            violation(f"cycle {cycle}: WG {wg_id}'s fit mask {mask:#x} is stale "
                      f"({fresh:#x})")
    units = getattr(matcher, "units", None)
    if units is not None:
        units.check(cycle, violation)
