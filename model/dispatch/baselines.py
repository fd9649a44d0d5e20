"""The baselines' selection rules and wave placement, each a selector or matcher of its own
(the seed's are :class:`model.dispatch.selector.Selector` and
:class:`model.dispatch.matcher.Matcher`), and the factories that pick a policy's.

Rules kept for comparison, named by what they do (no source has them as written; RTL twin
:mod:`hw.dispatch.selector`, whose ``selection`` register chooses among the first four
``SELECTIONS``): ``"strict"`` (the seed's prior art: the highest-priority head in round-robin
channel order, which blocks every channel while it does not fit), ``"rr_first_fit"``
(preset ``rr-first-fit``: the first channel in round-robin order whose head fits anywhere;
formerly called GPGPU-Sim-like) and ``"blocking_buffer"`` (preset ``blocking-buffer``: a
one-WG buffer filled from the channels in round-robin order that waits until its WG fits;
formerly called MIAOW-like). ``wave_placement = "least_loaded"`` deals each wave to the PEU
with the most free slots (:class:`LeastLoadedMatcher`; no RTL twin).

The three real dispatchers as their sources define them are modules of their own:
:mod:`model.dispatch.miaow` (``"miaow"``), :mod:`model.dispatch.gpgpusim` (``"gpgpusim"``,
``"gpgpusim_concurrent"``) and :mod:`model.dispatch.gem5` (``"gem5"``); docs/baselines.md
reads each rule from its source, docs/dispatch.md says what the model does with it.

:func:`selector_for` and :func:`matcher_for` build a policy's.
"""

from model.dispatch.config import WorkGroup
from model.dispatch.gem5 import Gem5Matcher, Gem5Selector
from model.dispatch.gpgpusim import GpgpuSimConcurrentSelector, GpgpuSimMatcher, GpgpuSimSelector
from model.dispatch.matcher import Matcher
from model.dispatch.miaow import MiaowMatcher, MiaowOneClockSelector, MiaowSelector
from model.dispatch.selector import Selector

__all__ = ["BlockingBufferSelector", "LeastLoadedMatcher", "RoundRobinFirstFitSelector",
           "StrictSelector", "matcher_for", "selector_for"]


class _RoundRobin(Selector):
    """A rule that walks the channels in round-robin order: the channel pointer moves past
    the channel of each WG dispatched (chosen, in the decision pipeline)."""

    def advance(self, channel: int, ap: int) -> None:
        self.ap_pointer = (ap + 1) % self.P
        self.channel_pointer = (channel + 1) % self.channel_count


class StrictSelector(_RoundRobin):
    """The prior art (``selection = "strict"``): the highest-priority head (the first such
    in round-robin channel order) or nothing, even when another head would fit."""

    def select(self, cycle: int):
        channels = self.channels
        heads = [c for c in range(self.channel_count) if channels[c]]
        if not heads:
            return None, False
        best = min(channels[c][0].priority for c in heads)
        channel = next(c for c in self.channel_order()
                       if channels[c] and channels[c][0].priority == best)
        mask = self.matcher.head_mask(channels[channel][0])
        return ((channel, mask, ()) if mask else None), bool(mask)

    def choose(self, candidates: dict, cycle: int) -> int | None:
        best = min(wg.priority for wg, _ in candidates.values())
        channel = next(c for c in self.channel_order()
                       if c in candidates and candidates[c][0].priority == best)
        return channel if candidates[channel][1] else None


class RoundRobinFirstFitSelector(_RoundRobin):
    """Round-robin first fit (``selection = "rr_first_fit"``, formerly "GPGPU-Sim-like";
    GPGPU-Sim's own rule is :mod:`model.dispatch.gpgpusim`): the first channel in
    round-robin order whose head fits some AP, whatever its priority."""

    def select(self, cycle: int):
        channels = self.channels
        mask_of = self.matcher.head_mask
        for channel in self.channel_order():
            if channels[channel]:
                mask = mask_of(channels[channel][0])
                if mask:
                    return (channel, mask, ()), True
        return None, False

    def choose(self, candidates: dict, cycle: int) -> int | None:
        return next((c for c in self.channel_order()
                     if c in candidates and candidates[c][1]), None)


class BlockingBufferSelector(Selector):
    """A blocking one-WG buffer (``selection = "blocking_buffer"``, formerly "MIAOW-like";
    MIAOW's own 64-entry buffer is :mod:`model.dispatch.miaow`): an empty buffer takes the
    head of the next non-empty channel in round-robin order; the buffered WG is the only
    candidate until it is dispatched. (Not defined with the decision pipeline: the policy
    check refuses it.)"""

    def select(self, cycle: int):
        channels = self.channels
        if self.buffer is None:
            count = self.channel_count
            for k in range(count):
                channel = (self.channel_pointer + k) % count
                if channels[channel]:
                    self.buffer = channels[channel].popleft()
                    self.channel_pointer = (channel + 1) % count
                    break
        if self.buffer is None:
            return None, False
        mask = self.matcher.head_mask(self.buffer)
        return ((self.buffer.channel, mask, ()) if mask else None), bool(mask)

    def head(self, channel: int) -> WorkGroup:
        return self.buffer

    def take(self, channel: int):
        """The buffered WG leaves the buffer (it left its FIFO when buffered); returns its
        channel's FIFO, whose next head of the same shape then inherits the WG's kept mask
        (:meth:`~model.dispatch.matcher.Matcher.inherit`) whenever it is buffered."""
        self.buffer = None
        return self.channels[channel]


#: The selector of each ``PolicyConfig.selection``.
SELECTORS = {"multi": Selector, "strict": StrictSelector,
             "blocking_buffer": BlockingBufferSelector, "rr_first_fit": RoundRobinFirstFitSelector,
             "miaow": MiaowSelector, "miaow_one_clock": MiaowOneClockSelector,
             "gpgpusim": GpgpuSimSelector,
             "gpgpusim_concurrent": GpgpuSimConcurrentSelector, "gem5": Gem5Selector}

#: The faithful baselines' own matchers (their placement rules), by ``selection``.
MATCHERS = {"miaow": MiaowMatcher, "miaow_one_clock": MiaowMatcher,
            "gpgpusim": GpgpuSimMatcher,
            "gpgpusim_concurrent": GpgpuSimMatcher, "gem5": Gem5Matcher}


def selector_for(gpu, policy, queues, matcher, resources, view) -> Selector:
    """The selector of ``policy.selection``, on the given stages."""
    return SELECTORS[policy.selection](gpu, policy, queues, matcher, resources, view)


class LeastLoadedMatcher(Matcher):
    """``wave_placement = "least_loaded"``: each wave in turn goes to the PEU of the AP with
    the most free wave slots (less the waves already given to it) on which the grown wave
    group still fits the VGPR and SGPR views; ties to the lowest index. No rotating pointer.
    (Not defined with the decision pipeline: the policy check refuses it.)"""

    def least_loaded_row(self, wg: WorkGroup, ap: int) -> tuple[int, ...] | None:
        """Waves per PEU of ``ap`` for ``wg``; ``None`` when some wave fits no PEU."""
        Q = self.Q
        base = ap * Q
        slots = self.slots[ap]
        vgpr, sgpr = self.view["vgpr"], self.view["sgpr"]
        v, s = wg.vgpr, wg.sgpr
        counts = [0] * Q
        for _ in range(wg.waves):
            best, most = -1, 0
            for q in range(Q):
                room = slots[q] - counts[q]
                grown = counts[q] + 1
                if room > most and grown * v <= vgpr[base + q] and grown * s <= sgpr[base + q]:
                    best, most = q, room
            if best < 0:
                return None
            counts[best] += 1
        return tuple(counts)

    def placement(self, wg: WorkGroup, ap: int) -> tuple[int, ...] | None:
        return self.least_loaded_row(wg, ap)

    def fits(self, wg: WorkGroup, ap: int) -> bool:
        if wg.lds > self.view["lds"][ap]:
            return False
        return wg.waves <= self.ap_slots[ap] and self.least_loaded_row(wg, ap) is not None

    def masks_of(self, wg: WorkGroup) -> int:
        return sum(1 << ap for ap in range(self.P) if self.fits(wg, ap))

    def chosen(self, ap: int, waves: int) -> None:
        return None                          # no pointer to move


def matcher_for(gpu, policy, view, resources, queues) -> Matcher:
    """The matcher of a faithful baseline's ``policy.selection``, else of
    ``policy.wave_placement``, on the given stages."""
    kind = MATCHERS.get(policy.selection) or (
        LeastLoadedMatcher if policy.wave_placement == "least_loaded" else Matcher)
    return kind(gpu, policy, view, resources, queues)
