"""The matcher's free-block view: per contiguous resource instance, the length the policy's
circuit reports for the status registers of cycle ``t - L`` (``L`` = ``circuit_latency``).

Seed 002, embodiments 4 (the one-clock longest-run circuit, ``circuit = "full"``), 5
(``"grouped"``), 6 (``"sampled"``), 7 (the time-multiplexed shared unit, ``"shared"``) and the
exact tree (``"exact"``), through :mod:`model.maxblock`'s functions. RTL twin:
:mod:`hw.dispatch.views`.

Step 3 of the model's cycle (:mod:`model.dispatch.engine`): every status change the resource
table makes (:meth:`model.dispatch.resources.Resources.change`) is queued here with the cycle
from which the matcher sees it (``pending``); :meth:`View.show` moves the changes due by a
cycle into the view. Registers before cycle 0 hold the all-free reset state of an idle GPU.
With the shared unit, an AP's unit reads a status word at the first clock of its resource's
period and shows it from the next clock (:class:`SharedPending`).
"""

import heapq
from bisect import bisect_right
from collections import deque

from model.dispatch.config import GpuConfig, PolicyConfig, shared_schedule
from model.maxblock import default_samples, grouped_run_unchecked, longest_run_unchecked

__all__ = ["SharedPending", "View", "circuit_function", "memoised"]


def circuit_function(policy: PolicyConfig, n: int):
    """The free-block length the policy's circuit reports for an ``n``-block status word
    (1 = free): a function of the status word, memoised. It computes what
    :mod:`model.maxblock`'s ``max_free_run``, ``grouped_max_free_run`` and
    ``sampled_max_free_run`` do, through their unchecked fast paths (the words come from the
    simulator's own registers; a test holds the two equal)."""
    if policy.circuit in ("exact", "full", "shared"):
        length = longest_run_unchecked
    elif policy.circuit == "grouped":
        groups = n // policy.group_size

        def length(bits):
            return grouped_run_unchecked(bits, n, groups)
    else:
        lengths = sorted(k + 1 for k in default_samples(n))

        def length(bits):
            # The largest sampled length k + 1 that the exact length reaches (0 if none).
            index = bisect_right(lengths, longest_run_unchecked(bits))
            return lengths[index - 1] if index else 0
    return memoised(length)


class _Memo:
    """A function of a status word with a memo of its results (cleared past 65,536 words):
    callable, and its ``cache`` read directly by the simulator's inner loop."""

    __slots__ = ("cache", "function")

    def __init__(self, function):
        self.function = function
        self.cache: dict[int, int] = {}

    def __call__(self, bits: int) -> int:
        value = self.cache.get(bits)
        if value is None:
            value = self.compute(bits)
        return value

    def compute(self, bits: int) -> int:
        if len(self.cache) > 1 << 16:
            self.cache.clear()
        value = self.cache[bits] = self.function(bits)
        return value


def memoised(function) -> _Memo:
    """``function`` of a status word, with a memo of its results."""
    return _Memo(function)


class SharedPending:
    """The view updates of embodiment 7's shared units, in the order they become visible.

    A status change that the view would show in cycle ``v`` (the status ``circuit_latency``
    cycles late) is read by the AP's unit at the first clock ``s >= v`` of its resource's
    period (``s mod C``) and shown from ``s + 1``. Periods differ between resources, so the
    updates are kept in a heap by visible cycle (then push order, so the last change of a
    status word read at a clock wins), with the deque interface the simulator uses."""

    __slots__ = ("count", "heap", "period", "periods")

    def __init__(self, schedule, peus: int):
        self.heap: list = []
        self.count = 0
        self.periods = len(schedule.periods)
        at = {name: index for index, types in enumerate(schedule.periods)
              for name, _ in types}
        self.period = {"vgpr": [at[f"vgpr{q}"] for q in range(peus)],
                       "sgpr": [at[f"sgpr{q}"] for q in range(peus)], "lds": [at["lds"]]}

    def append(self, item) -> None:
        visible, name, index, length = item
        periods = self.period[name]
        period = periods[index % len(periods)]
        shown = visible + (period - visible) % self.periods + 1
        heapq.heappush(self.heap, (shown, self.count, (shown, name, index, length)))
        self.count += 1

    def popleft(self):
        return heapq.heappop(self.heap)[2]

    def __getitem__(self, index):
        if index != 0:
            raise IndexError("only the first pending update can be read")
        return self.heap[0][2]

    def __bool__(self) -> bool:
        return bool(self.heap)

    def __len__(self) -> int:
        return len(self.heap)


class View:
    """The free-block view of every contiguous resource instance (``view[name][index]``;
    VGPR and SGPR per PEU, ``index = ap x Q + q``, LDS per AP) and each AP's view summed over
    its PEUs (``view_sum``, embodiment 9's ``r`` for VGPR and SGPR).

    ``circuit[name]`` is the policy's circuit as a memoised function of a status word;
    ``longest[name]`` the true longest run (the same object where the circuit reports it),
    for the fragmentation metric. ``pending`` holds ``(visible cycle, resource, index,
    length)`` in visible order.
    """

    def __init__(self, gpu: GpuConfig, policy: PolicyConfig):
        P, Q = gpu.aps, gpu.peus
        self.Q = Q
        self.size = {"vgpr": gpu.vgpr, "sgpr": gpu.sgpr, "lds": gpu.lds}
        counts = {"vgpr": P * Q, "sgpr": P * Q, "lds": P}
        self.counts = counts
        self.circuit = {name: circuit_function(policy, n) for name, n in self.size.items()}
        # The exact and full circuits report the true longest run already: one memo.
        self.longest = (self.circuit if policy.circuit in ("exact", "full", "shared") else
                        {name: memoised(longest_run_unchecked) for name in self.size})
        self.view = {name: [self.circuit[name]((1 << n) - 1)] * counts[name]
                     for name, n in self.size.items()}
        self.view_sum = {name: [Q * self.view[name][0]] * P for name in ("vgpr", "sgpr")}
        self.pending = (deque() if policy.circuit != "shared"
                        else SharedPending(shared_schedule(gpu, policy.shared_width), Q))

    def show(self, cycle: int) -> int:
        """Step 3: every circuit output due by ``cycle`` becomes the matcher's view. Returns
        the APs whose view changed (bit ``a`` for AP ``a``)."""
        pending, Q, views, sums = self.pending, self.Q, self.view, self.view_sum
        changed = 0
        while pending and pending[0][0] <= cycle:
            _, name, index, length = pending.popleft()
            view = views[name]
            old = view[index]
            if old == length:
                continue
            view[index] = length
            if name == "lds":
                changed |= 1 << index
            else:
                ap = index // Q
                sums[name][ap] += length - old
                changed |= 1 << ap
        return changed

    def idle_length(self, name: str) -> int:
        """What the circuit reports for an all-free instance of ``name`` (admission)."""
        return self.circuit[name]((1 << self.size[name]) - 1)
