"""How long a dispatched WG runs: the execution models behind the dispatcher.

Not a stage of seed 002 (the seed dispatches; the GPU executes): the model needs a WG's run
to know when its resources come back. ``execution = "fixed"``: a WG dispatched in cycle
``t`` with duration ``d`` runs in cycles ``t + 1 .. t + d`` and is released in ``t + d + 1``.
``execution = "shared"``: the waves resident on a PEU share its issue width, so a WG's run
depends on what else runs there (:class:`SharedExecution`). RTL twin: none in
:mod:`hw.dispatch` — the RTL dispatcher takes the release cycles from the model
(:mod:`hw.dispatch.resources` accepts them on its release port).

Both keep ``completions``, a heap of ``(release cycle, WG id, allocation)``.
"""

import heapq
import math

from model.dispatch.config import GpuConfig
from model.dispatch.resources import Allocation

__all__ = ["FixedExecution", "PooledExecution", "SharedExecution", "execution_for"]


class FixedExecution:
    """Every WG runs its own ``duration`` cycles."""

    shared = False

    def __init__(self, gpu: GpuConfig, running: dict):
        self.completions: list = []

    def start(self, allocation: Allocation, cycle: int) -> None:
        """A WG dispatched in ``cycle``: released ``duration + 1`` cycles later."""
        wg = allocation.wg
        heapq.heappush(self.completions, (cycle + wg.duration + 1, wg.id, allocation))


class SharedExecution:
    """The shared-issue model: per PEU, the issuing waves ``n``, the service ``V`` one
    continuously issuing wave has received (in 1/``unit`` wave-instructions) up to the start
    of cycle ``time``, and a heap of its issuing wave groups by finish tag
    ``F = V(start) + work x unit``; a heap of every PEU's next finishing cycle (stale entries
    skipped by a version). A WG is released ``drain + 1`` cycles after its last wave group
    finished.
    """

    shared = True

    def __init__(self, gpu: GpuConfig, running: dict):
        self.completions: list = []
        self.running = running
        self.Q = gpu.peus
        self.drain = gpu.drain
        self.setup(gpu.wave_slots, gpu.issue_width, gpu.aps * gpu.peus)

    def setup(self, slots: int, width: int, count: int) -> None:
        """``count`` issue pools of ``width`` issue slots holding up to ``slots`` waves."""
        # 1/unit wave-instructions: the least common multiple of 1..slots, so that the share
        # width / n of every possible n is a whole number of units.
        self.unit = math.lcm(*range(1, slots + 1))
        self.rate = [0] + [self.unit if n <= width else width * self.unit // n
                           for n in range(1, slots + 1)]
        self.issuing = [0] * count
        self.service = [0] * count
        self.service_time = [0] * count
        self.groups: list[list] = [[] for _ in range(count)]
        self.finish_heap: list[tuple[int, int, int]] = []
        self.finish_version = [0] * count
        self.groups_left: dict[int, int] = {}

    def pop_finished(self, peu: int, cycle: int) -> None:
        """The PEU's wave groups whose work is issued by the end of ``cycle`` finished in it
        (every earlier finish was processed): they stop issuing from ``cycle + 1``; a WG whose
        last group it was is released ``drain + 1`` cycles later."""
        start = self.service_time[peu]
        if cycle + 1 > start:
            self.service[peu] += self.rate[self.issuing[peu]] * (cycle + 1 - start)
            self.service_time[peu] = cycle + 1
        groups, service = self.groups[peu], self.service[peu]
        while groups and groups[0][0] <= service:
            _, wg_id, count = heapq.heappop(groups)
            self.issuing[peu] -= count
            left = self.groups_left[wg_id] - 1
            if left:
                self.groups_left[wg_id] = left
            else:
                del self.groups_left[wg_id]
                heapq.heappush(self.completions, (cycle + self.drain + 1, wg_id,
                                                  self.running[wg_id]))

    def schedule(self, peu: int) -> None:
        """Push the PEU's next finishing cycle: with ``n`` issuing waves each gets
        ``rate[n]`` units per cycle, so the smallest tag ``F`` is reached in cycle
        ``time - 1 + ceil((F - V) / rate[n])`` unless the PEU changes before."""
        self.finish_version[peu] += 1
        groups = self.groups[peu]
        if groups:
            rate = self.rate[self.issuing[peu]]
            finish = self.service_time[peu] - 1 - (self.service[peu] - groups[0][0]) // rate
            heapq.heappush(self.finish_heap, (finish, peu, self.finish_version[peu]))

    def start(self, allocation: Allocation, cycle: int) -> None:
        """A WG dispatched in ``cycle``: its wave groups issue from ``cycle + 1``."""
        wg = allocation.wg
        work = (wg.work if wg.work is not None else wg.duration) * self.unit
        base = allocation.ap * self.Q
        started = 0
        for q, count in enumerate(allocation.waves):
            if not count:
                continue
            peu = base + q
            self.pop_finished(peu, cycle)
            heapq.heappush(self.groups[peu], (self.service[peu] + work, wg.id, count))
            self.issuing[peu] += count
            self.schedule(peu)
            started += 1
        self.groups_left[wg.id] = started

    def finish_until(self, cycle: int) -> None:
        """Process every wave-group finish in cycles up to ``cycle``, in cycle order."""
        heap, versions = self.finish_heap, self.finish_version
        while heap and heap[0][0] <= cycle:
            finish, peu, version = heapq.heappop(heap)
            if version == versions[peu]:
                self.pop_finished(peu, finish)
                self.schedule(peu)

    def next_finish(self) -> int | None:
        """The earliest cycle in which some wave group finishes (as the PEUs stand)."""
        heap, versions = self.finish_heap, self.finish_version
        while heap and heap[0][2] != versions[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def check(self, cycle: int, live, violation) -> None:
        """Shared-issue invariants: each PEU's issuing waves are those of its wave groups and
        at most the waves resident on it (``live[ap][q]``); every running WG is issuing, or
        done and waiting for its release; a finish tag is ahead of the service
        (unfinished)."""
        Q = self.Q
        waiting = {wg_id for _, wg_id, _ in self.completions}
        issuing = {}
        for peu, groups in enumerate(self.groups):
            waves = sum(count for _, _, count in groups)
            if waves != self.issuing[peu] or waves > live[peu // Q][peu % Q]:
                violation(f"cycle {cycle}: PEU {peu} has {self.issuing[peu]} issuing "
                          f"waves, its groups {waves}, resident "
                          f"{live[peu // Q][peu % Q]}")
            # The service before this cycle: no group may have reached its tag by then (it
            # would have finished in an earlier cycle, and every earlier finish is processed).
            before = self.service[peu] + self.rate[self.issuing[peu]] * max(
                0, cycle - self.service_time[peu])
            for tag, wg_id, _ in groups:
                issuing[wg_id] = issuing.get(wg_id, 0) + 1
                if tag <= before:
                    violation(f"cycle {cycle}: WG {wg_id} on PEU {peu} issued its "
                              f"work before this cycle but was not finished")
        if issuing != self.groups_left:
            violation(f"cycle {cycle}: wave groups left {self.groups_left} != {issuing}")
        for wg_id in self.running:
            if (wg_id in issuing) == (wg_id in waiting):
                violation(f"cycle {cycle}: running WG {wg_id} must be issuing or "
                          f"waiting for its release, not both or neither")


class PooledExecution(SharedExecution):
    """The shared-issue model with waves bound to no PEU (MIAOW, rule M13,
    ``issue/alu_issue_logic.v``: a ready SIMD takes whichever ready wave its class's arbiter
    chose): per AP one pool of ``peus x issue_width`` issue slots shared by every wave resident
    on the AP, a WG one wave group of all its waves. Used for ``units = "ap_range"`` under
    ``execution = "shared"``."""

    def __init__(self, gpu: GpuConfig, running: dict):
        super().__init__(gpu, running)
        self.Q = 1                     # one pool per AP: "PEU" below means the AP's pool
        self.setup(gpu.peus * gpu.wave_slots, gpu.peus * gpu.issue_width, gpu.aps)

    def start(self, allocation: Allocation, cycle: int) -> None:
        """A WG dispatched in ``cycle``: all its waves issue from the AP's pool from
        ``cycle + 1``."""
        wg = allocation.wg
        work = (wg.work if wg.work is not None else wg.duration) * self.unit
        pool = allocation.ap
        self.pop_finished(pool, cycle)
        heapq.heappush(self.groups[pool], (self.service[pool] + work, wg.id, wg.waves))
        self.issuing[pool] += wg.waves
        self.schedule(pool)
        self.groups_left[wg.id] = 1

    def check(self, cycle: int, live, violation) -> None:
        super().check(cycle, [[sum(row)] for row in live], violation)


def execution_for(execution: str, gpu: GpuConfig, running: dict, pooled: bool = False):
    """The execution model named ``execution`` (``"fixed"`` or ``"shared"``; ``pooled``: the
    shared model with one issue pool per AP, :class:`PooledExecution`)."""
    if execution != "shared":
        return FixedExecution(gpu, running)
    return (PooledExecution if pooled else SharedExecution)(gpu, running)
