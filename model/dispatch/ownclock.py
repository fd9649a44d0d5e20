"""What the faithful baselines (:mod:`model.dispatch.miaow`, :mod:`model.dispatch.gpgpusim`,
:mod:`model.dispatch.gem5`) share: a selector that runs its own decision on its own clock
(one WG per decision of its source's length, or several WGs a cycle), kernels as the
sources see them, and per-AP records of what each running WG took.

Not a stage of seed 002 and no RTL twin (the RTL dispatcher builds none of these rules:
``make cosim`` refuses them, :func:`hw.flow.dispatch_cosim.policy_unsupported`).

**Kernels.** The model's WorkGroup has no kernel id; a kernel's first WG on an in-order
stream carries ``barrier = True``. A *kernel* is therefore a run of one channel's WGs from
one barrier WG to the next (``(channel, epoch)``; a channel without barriers is one kernel),
and a kernel "has WGs left" when its channel's head belongs to it and that head may start
(a barrier head waits until its channel runs nothing: the stream's earlier kernel is done).
On synthetic channels, whose WGs arrive over time, "no WG left" means the channel's FIFO is
empty at that cycle (docs/baselines.md, "Ambiguities").

**The decision.** :meth:`OwnClockSelector.bind` hands the engine (``DispatchSimulator``)
this selector as its decision; ``step(cycle)`` returns ``(dispatched, awake, matched,
waiting)`` as :class:`model.dispatch.pipeline.OneCycleDecision` does, where ``awake`` (the
engine's abort flag) asks the engine to evaluate the next cycle too (a MIAOW controller busy
with a decision, a buffer intake due): no abort is counted. The WGs stay in their channels'
FIFOs until dispatched (a MIAOW buffer entry is a reference to one), so the engine's end test
and the event log are the seed's.
"""

from model.dispatch.matcher import Matcher
from model.dispatch.selector import Selector
from model.dispatch.units import units_for
from model.maxblock import largest_free_block

__all__ = ["ApRecords", "OwnClockSelector", "RecordingMatcher", "largest_range_plan"]


class ApRecords:
    """Per AP, what each running WG holds in a baseline's own bookkeeping (a WG slot, wave
    slots), pruned against the resource table's running WGs when the AP changed."""

    def __init__(self, aps: int, running: dict):
        self.by_ap = [{} for _ in range(aps)]
        self.running = running
        self.dirty: set[int] = set()

    def live(self, ap: int) -> dict:
        """``{wg id: record}`` of the WGs running on ``ap`` (released ones dropped)."""
        records = self.by_ap[ap]
        if ap in self.dirty:
            self.dirty.discard(ap)
            for wg_id in [w for w in records if w not in self.running]:
                del records[wg_id]
        return records


class RecordingMatcher(Matcher):
    """A matcher that keeps :class:`ApRecords`, knows which APs changed (a take or a
    release: :meth:`Matcher.changed`) and sees the resources in the policy's ``units``
    (:mod:`model.dispatch.units`)."""

    def __init__(self, gpu, policy, view, resources, queues):
        super().__init__(gpu, policy, view, resources, queues)
        self.records = ApRecords(gpu.aps, resources.running)
        self.wave_slots = gpu.wave_slots
        self.units = units_for(gpu, policy, resources, view)

    def changed(self, ap: int) -> None:
        super().changed(ap)
        self.records.dirty.add(ap)
        self.units.changed(ap)

    def taken(self, allocation) -> None:
        super().taken(allocation)
        self.units.taken(allocation)

    def released(self, allocation) -> None:
        super().released(allocation)
        self.units.released(allocation)

    def masks_of(self, wg) -> int:
        return sum(1 << ap for ap in range(self.P) if self.fits(wg, ap))

    def chosen(self, ap: int, waves: int) -> None:
        return None                          # no rotating pointer

    def peu_fits(self, wg, ap: int, row) -> bool:
        """Every PEU's wave group of ``row`` fits its free slots, and the WG's registers and
        LDS fit in the policy's units (:meth:`model.dispatch.units.Units.fits`)."""
        slots = self.slots[ap]
        for q, count in enumerate(row):
            if count > slots[q]:
                return False
        return self.units.fits(wg, ap, row)


def largest_range_plan(resources, wg, ap: int, waves, peus: int):
    """MIAOW's placement (``allocator.v``, ``resource_table.v``: the start of the largest
    free range, the lowest address among equal ranges) of each of ``wg``'s needs on ``ap``:
    ``(vgpr plan, sgpr plan, lds)`` as :meth:`model.dispatch.allocator.Allocator.plan`, or
    ``None`` when one does not fit."""
    bits, size = resources.bits, resources.size
    base = ap * peus
    plans = []
    for name, per_wave in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
        plan = [None] * peus
        for q, count in enumerate(waves):
            need = count * per_wave
            if need:
                start, length = largest_free_block(bits[name][base + q], size[name])
                if length < need:
                    return None
                plan[q] = (start, need)
        plans.append(plan)
    lds = None
    if wg.lds:
        start, length = largest_free_block(bits["lds"][ap], size["lds"])
        if length < wg.lds:
            return None
        lds = (start, wg.lds)
    return plans[0], plans[1], lds


class OwnClockSelector(Selector):
    """A baseline that runs its own decision (see the module docstring). Subclasses
    implement :meth:`step`."""

    def __init__(self, gpu, policy, queues, matcher, resources, view):
        super().__init__(gpu, policy, queues, matcher, resources, view)
        self.inflight = queues.inflight
        self.epoch = [0] * self.channel_count
        self.taking = None
        self.sim = None

    def bind(self, sim):
        """The engine's decision for this policy: this selector, with the engine's commit."""
        self.sim = sim
        self.allocator, self.commit = sim.allocator, sim.commit
        return self

    # -- kernels -------------------------------------------------------------------------------

    def launchable(self, channel: int) -> bool:
        """The channel's head may start (an in-order barrier waits for its channel)."""
        queue = self.channels[channel]
        return bool(queue) and not (queue[0].barrier and self.inflight[channel])

    def kernel(self, channel: int):
        """The kernel of the channel's head, ``(channel, epoch)`` (``None``: empty)."""
        queue = self.channels[channel]
        if not queue:
            return None
        return channel, self.epoch[channel] + (1 if queue[0].barrier else 0)

    def has_wgs(self, kernel) -> bool:
        """``kernel`` has a WG that may start now (its channel's head)."""
        return kernel is not None and self.launchable(kernel[0]) and \
            self.kernel(kernel[0]) == kernel

    # -- one dispatch --------------------------------------------------------------------------

    def dispatch(self, wg, ap: int, cycle: int, plan=None):
        """Place and commit ``wg`` on ``ap`` (``plan``: a placement rule on the seed's blocks
        other than first fit; a baseline's own units place by their own rule); ``None`` when
        the current status cannot hold it (a stale view)."""
        waves = self.matcher.placement(wg, ap)
        if waves is None:
            return None
        slots = self.resources.slots[ap]
        if any(count > slots[q] for q, count in enumerate(waves)):
            return None
        units = self.matcher.units
        if units.kind == "blocks":
            plan = (plan or self.allocator.plan)(wg, ap, waves)
        else:
            plan = units.plan(wg, ap, waves)
        if plan is None:
            return None
        allocation = self.allocator.take(wg, ap, waves, plan, cycle)
        self.taking = wg
        self.commit(wg, wg.channel, ap, allocation, cycle)
        self.taking = None
        if wg.barrier:
            self.epoch[wg.channel] += 1
        return allocation

    def take(self, channel: int):
        queue = self.channels[channel]
        wg = self.taking
        if queue and queue[0] is wg:
            queue.popleft()
        else:
            queue.remove(wg)
        return None                          # no kept mask to inherit

    def advance(self, channel: int, ap: int) -> None:
        return None                          # each baseline moves its own pointers

    def step(self, cycle: int):
        raise NotImplementedError

