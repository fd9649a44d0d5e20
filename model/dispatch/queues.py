"""The channels of the dispatcher: admission, per-channel FIFOs and embodiment 3's all-fail
counter and split.

Seed 002: the task channels (任务通道) whose head WGs embodiment 1 matches, and embodiment 3
(steps c1-c3: ``g`` counts consecutive cycles in which a head waited and none matched; past
the threshold every independent head WG is replaced by one sub-WG per wave at the lowest
priority). RTL twin: :mod:`hw.dispatch.queues`.

Step 2 of the model's cycle (:mod:`model.dispatch.engine`): a WG arriving in cycle ``t`` is
checked against an idle AP as the policy's circuit sees it (:meth:`Queues.admit`); one that
can never fit is rejected (with its reason), unless embodiment 3 will split it and its waves
fit alone. Step 5: :meth:`Queues.count_fail`.
"""

from collections import deque
from dataclasses import dataclass

from model.dispatch.config import GpuConfig, PolicyConfig, WorkGroup
from model.dispatch.units import idle_reason
from model.dispatch.views import View

__all__ = ["Parent", "Queues"]


@dataclass
class Parent:
    """A WG split by embodiment 3: its parts, and how many were dispatched and completed."""
    wg: WorkGroup
    parts: int
    dispatched: int = 0
    completed: int = 0


class Queues:
    """Per channel the FIFO of admitted WGs (``channels[c]``, head first), the WGs split so
    far (``parents``, by the original's id), per channel the running WGs (``inflight``, for
    the in-order barrier) and the last WG dispatched whole (the FIFO-order check), the
    rejections, and embodiment 3's counter ``g``.

    ``event`` is the event log's recorder, ``counters`` the run's counters (splits) and
    ``violation(message)`` reports a broken invariant. ``flight`` is set by a decision
    pipeline to its WGs in flight (a channel with one is not split).
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig, view: View, channel_count: int,
                 next_id: int, event, counters, violation):
        self.gpu, self.policy = gpu, policy
        self.Q = gpu.peus
        self.view = view
        self.event, self.counters, self.violation = event, counters, violation
        self.channel_count = channel_count
        self.channels = [deque() for _ in range(channel_count)]
        self.parents: dict[int, Parent] = {}
        self.next_id = next_id
        self.inflight = [0] * channel_count
        self.last_dispatched = [-1] * channel_count
        # MIAOW's in-flight buffer tries its entries in round robin, not arrival order
        # (model.dispatch.miaow, M3): the FIFO-order check does not apply to it.
        self.in_order = policy.selection not in ("miaow", "miaow_one_clock")
        self.rejected: list[dict] = []
        self.splitting = policy.split_threshold > 0 and policy.selection == "multi"
        self.threshold = policy.split_threshold
        self.g = 0
        self.flight = ()

    # -- admission (step 2) --------------------------------------------------------------------

    def fits_empty(self, waves_per_peu: int, wg: WorkGroup, lds: int) -> str | None:
        """Why ``wg`` with ``waves_per_peu`` on its busiest PEU cannot fit an idle AP as the
        circuit sees it (``None`` when it can)."""
        view = self.view
        for name, per_wave in (("vgpr", wg.vgpr), ("sgpr", wg.sgpr)):
            need = waves_per_peu * per_wave
            seen = view.idle_length(name)
            if need > seen:
                return (f"{waves_per_peu} waves x {per_wave} {name.upper()} blocks = {need} on "
                        f"one PEU, but an idle PEU has {view.size[name]} (the "
                        f"{self.policy.circuit} circuit reports {seen})")
        if waves_per_peu > self.gpu.wave_slots:
            return (f"{waves_per_peu} waves on one PEU, but a PEU has {self.gpu.wave_slots} "
                    f"wave slots")
        seen = view.idle_length("lds")
        if lds > seen:
            return (f"{lds} LDS blocks, but an idle AP has {self.gpu.lds} (the "
                    f"{self.policy.circuit} circuit reports {seen})")
        return None

    def admit(self, wg: WorkGroup, cycle: int) -> bool:
        """Step 2 for one arriving WG: ``True`` when it may enter its channel's FIFO;
        otherwise it is recorded as rejected with its reason."""
        self.event(cycle, "arrive", wg)
        busiest = -(-wg.waves // self.Q)
        if self.policy.units == "blocks":
            reason = self.fits_empty(busiest, wg, wg.lds)
        else:
            reason = idle_reason(self.policy.units, self.gpu, wg)
        if reason is None:
            return True
        if (wg.independent and not wg.barrier and wg.waves > 1 and self.splitting
                and busiest <= self.gpu.wave_slots
                and self.fits_empty(1, wg, -(-wg.lds // wg.waves)) is None):
            return True          # it will be split (embodiment 3) and its waves fit alone
        text = f"WG {wg.id} (channel {wg.channel}) can never be dispatched: {reason}"
        self.rejected.append({"id": wg.id, "channel": wg.channel, "arrival": wg.arrival,
                              "reason": text})
        self.event(cycle, "reject", wg, reason=reason)
        return False

    # -- embodiment 3 (step 5) -----------------------------------------------------------------

    def count_fail(self, matched: bool, waiting: bool, cycle: int, masks: dict) -> bool:
        """Step 5: ``g`` back to 0 when a head matched or none waited, else one more; past
        the threshold split (step c3) and ``g`` back to 0, also when no head could be split.
        Returns whether a head was split (``masks``: the matcher's kept fit masks)."""
        if matched or not waiting:
            self.g = 0
            return False
        self.g += 1
        if self.g > self.threshold:
            split = self.split(cycle, masks)
            self.g = 0
            return split
        return False

    def _splittable_heads(self):
        """The channels and heads a split would replace now: independent, of two waves or
        more, not already a part, without an in-order barrier (its parts would carry none, so
        they could run beside the WGs it waits for), on a channel none of whose WGs is in the
        decision pipeline (it splits a head only when none of its channel's WGs is chosen)."""
        busy = {decision.channel for decision in self.flight}
        for channel, queue in enumerate(self.channels):
            if not queue or channel in busy:
                continue
            head = queue[0]
            if (head.independent and not head.barrier and head.waves >= 2
                    and head.parent is None):
                yield channel, head

    def splittable(self) -> bool:
        """Whether a split attempt now would split a head (the engine skips the attempts
        that would not)."""
        return next(self._splittable_heads(), None) is not None

    def split(self, cycle: int, masks: dict) -> bool:
        """Embodiment 3 (step c3): split every independent head into one sub-WG per wave."""
        lowest = self.gpu.priorities - 1
        did = False
        for channel, head in list(self._splittable_heads()):
            queue = self.channels[channel]
            queue.popleft()
            masks.pop(head.id, None)
            parts = []
            for _ in range(head.waves):
                parts.append(WorkGroup(id=self.next_id, channel=head.channel, priority=lowest,
                                       waves=1, vgpr=head.vgpr, sgpr=head.sgpr,
                                       lds=-(-head.lds // head.waves), duration=head.duration,
                                       independent=True, arrival=head.arrival,
                                       parent=head.id, work=head.work))
                self.next_id += 1
            for part in parts:
                self.event(cycle, "split", part)
            queue.extendleft(reversed(parts))
            self.parents[head.id] = Parent(head, len(parts))
            self.counters.splits += 1
            self.counters.sub_workgroups += len(parts)
            did = True
        return did

    # -- a dispatch and a release --------------------------------------------------------------

    def dispatched(self, wg: WorkGroup, cycle: int, wait) -> None:
        """``wg`` left its FIFO in ``cycle`` and runs: the FIFO-order check, and the wait of a
        WG dispatched whole or of the last part of a split one, given to ``wait(priority,
        channel, wait, arrival)`` (:meth:`~model.dispatch.metrics.Metrics.add_wait`)."""
        if wg.parent is None:
            if self.in_order and self.last_dispatched[wg.channel] > wg.id:
                self.violation(f"cycle {cycle}: channel {wg.channel} dispatched WG {wg.id} "
                               f"after WG {self.last_dispatched[wg.channel]} (FIFO order)")
            self.last_dispatched[wg.channel] = wg.id
            wait(wg.priority, wg.channel, cycle - wg.arrival, wg.arrival)
        else:
            parent = self.parents[wg.parent]
            parent.dispatched += 1
            if parent.dispatched == parent.parts:
                parent_wg = parent.wg
                wait(parent_wg.priority, parent_wg.channel, cycle - parent_wg.arrival,
                     parent_wg.arrival)
        self.inflight[wg.channel] += 1

    def original(self, wg: WorkGroup) -> WorkGroup:
        """The submitted WG ``wg`` is (or is a part of)."""
        return self.parents[wg.parent].wg if wg.parent is not None else wg

    def heads(self, buffer: WorkGroup | None = None) -> list[WorkGroup]:
        """Every channel's head WG (and the MIAOW-like buffer's WG, if any)."""
        heads = [queue[0] for queue in self.channels if queue]
        return heads + [buffer] if buffer is not None else heads

    def queued(self, buffer: WorkGroup | None = None) -> list[WorkGroup]:
        """Every WG waiting in a FIFO, channel by channel (then the MIAOW-like buffer's)."""
        waiting = [wg for queue in self.channels for wg in queue]
        return waiting + [buffer] if buffer is not None else waiting
