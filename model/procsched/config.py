"""Scenario files of the process scheduler model: the GPU's context, each policy's knobs, the
task groups (TOML; validated by :mod:`model.config`, errors name the field; the format is in
``docs/procsched.md``)."""

import math
from dataclasses import dataclass
from pathlib import Path

from model.config import Budget, Fields, load_toml

__all__ = ["POLICIES", "PRIORITY_LEVELS", "GpuContext", "Scenario", "TaskGroup"]

#: 4-bit priority: 0 is the highest of 16 levels (the seed's first to sixteenth priority).
PRIORITY_LEVELS = 16

#: The largest workload a scenario may make (refused at load time, naming the field): a run
#: simulates about 200 000 slices a second, so these keep one within a minute or two.
MAX_TASKS = 100_000
MAX_SLICES = 10_000_000
MAX_WINDOW_CELLS = 20_000_000

#: Every policy a scenario can run, in table order.
POLICIES = ("seed", "seed-prop", "timeshare", "timeshare-t0", "cfs")


@dataclass(frozen=True)
class GpuContext:
    """What a context switch costs: the state saved and restored, over a bandwidth.

    A switch saves the outgoing task's state and restores the incoming one's, so it moves
    ``2 * context_bytes`` at ``bandwidth_gb_s`` (10^9 bytes per second). The state is the
    register file and shared memory of every compute unit plus ``extra_state_mib`` of device
    memory (the seed speaks of about 1 MB of registers and tens of MB of memory per process).
    ``switch_us > 0`` replaces the figure by a fixed cost per switch.
    """

    compute_units: int = 64
    register_kib_per_cu: int = 256
    shared_kib_per_cu: int = 64
    extra_state_mib: float = 0.0
    bandwidth_gb_s: float = 300.0
    switch_us: int = 0

    @property
    def context_bytes(self) -> int:
        per_cu = (self.register_kib_per_cu + self.shared_kib_per_cu) * 1024
        return self.compute_units * per_cu + round(self.extra_state_mib * 1024 * 1024)

    @property
    def switch_cost_us(self) -> int:
        """The cost of one switch in whole microseconds (rounded up)."""
        if self.switch_us:
            return self.switch_us
        # bytes / (GB/s * 1e9) seconds = bytes / (GB/s * 1e3) microseconds
        return math.ceil(2 * self.context_bytes / (self.bandwidth_gb_s * 1e3))


@dataclass(frozen=True)
class TaskGroup:
    """``count`` tasks of one priority: the first arrives at ``arrival_us``, the next ones
    ``spacing_us`` apart (``spacing="fixed"``) or with exponential gaps of that mean
    (``"poisson"``); each needs a work drawn uniformly from ``work_us`` (inclusive)."""

    count: int
    priority: int
    arrival_us: int = 0
    spacing_us: int = 0
    spacing: str = "fixed"
    work_us: tuple[int, int] = (100_000, 100_000)


@dataclass(frozen=True)
class Scenario:
    """One scenario file: the GPU, the knobs of every policy, the workload, the policies."""

    name: str
    description: str = ""
    gpu: GpuContext = GpuContext()
    cache_tasks: int = 8
    t0_us: int = 10_000
    timeshare_slice_us: int = 4_000
    cfs_latency_us: int = 40_000
    cfs_min_granularity_us: int = 10_000
    fairness_window_us: int = 1_000_000
    groups: tuple[TaskGroup, ...] = ()
    policies: tuple[str, ...] = POLICIES

    @classmethod
    def from_toml(cls, path) -> "Scenario":
        """Load and validate a scenario file; errors name the file and the field."""
        path = Path(path)
        return cls.from_dict(load_toml(path), name=path.stem, source=path)

    @classmethod
    def from_dict(cls, data: dict, *, name: str = "scenario", source=None) -> "Scenario":
        """Validate a parsed scenario table (see ``docs/procsched.md`` for the format)."""
        root = Fields(data, source=source)
        description = root.str("description", "")
        policies = tuple(root.list("policies", list(POLICIES)))
        for index, policy in enumerate(policies):
            if policy not in POLICIES:
                raise root.error(f"policies[{index}]", f"must be one of "
                                 f"{', '.join(map(repr, POLICIES))}, not {policy!r}")
        if not policies:
            raise root.error("policies", "must name at least one policy")

        table = root.table("gpu", {})
        gpu = GpuContext(
            compute_units=table.int("compute_units", 64, minimum=1),
            register_kib_per_cu=table.int("register_kib_per_cu", 256, minimum=0),
            shared_kib_per_cu=table.int("shared_kib_per_cu", 64, minimum=0),
            extra_state_mib=table.float("extra_state_mib", 0.0, minimum=0),
            bandwidth_gb_s=table.float("bandwidth_gb_s", 300.0, minimum=1e-3),
            switch_us=table.int("switch_us", 0, minimum=0))
        table.done()

        table = root.table("seed", {})
        cache_tasks = table.int("cache_tasks", 8, minimum=1)
        t0_us = table.int("t0_us", 10_000, minimum=1)
        table.done()
        table = root.table("timeshare", {})
        timeshare_slice_us = table.int("slice_us", 4_000, minimum=1)
        table.done()
        table = root.table("cfs", {})
        cfs_latency_us = table.int("sched_latency_us", 40_000, minimum=1)
        cfs_min_granularity_us = table.int("min_granularity_us", 10_000, minimum=1)
        table.done()
        metrics = root.table("metrics", {})
        fairness_window_us = metrics.int("fairness_window_us", 1_000_000, minimum=1)
        metrics.done()

        groups = []
        # Caps that keep a run within minutes: the slices estimate every task's largest work
        # cut into the shortest slice any policy is configured with.
        shortest_slice = min(t0_us, timeshare_slice_us, cfs_min_granularity_us)
        tasks = Budget(MAX_TASKS, "tasks", "a run this size would take hours")
        slices = Budget(MAX_SLICES, "slices of the shortest configured slice "
                        f"({shortest_slice} us)", "a run this size would take hours")
        for group in root.tables("tasks"):
            low, high = group.int_list("work_us", length=2, minimum=1)
            if low > high:
                raise group.error("work_us", f"must be [min, max] with min <= max, "
                                             f"not [{low}, {high}]")
            groups.append(TaskGroup(
                count=group.int("count", minimum=1),
                priority=group.int("priority", minimum=0, maximum=PRIORITY_LEVELS - 1),
                arrival_us=group.int("arrival_us", 0, minimum=0),
                spacing_us=group.int("spacing_us", 0, minimum=0),
                spacing=group.str("spacing", "fixed", choices=("fixed", "poisson")),
                work_us=(low, high)))
            group.done()
            tasks.charge(group, "count", groups[-1].count)
            slices.charge(group, "work_us", groups[-1].count * -(-high // shortest_slice))
        if not groups:
            raise root.error("tasks", "must list at least one task group ([[tasks]])")
        # The fairness metric keeps one number per task and window.
        horizon = (max(g.arrival_us + (g.count - 1) * g.spacing_us for g in groups)
                   + sum(g.count * g.work_us[1] for g in groups))
        cells = tasks.total * (horizon // fairness_window_us + 1)
        if cells > MAX_WINDOW_CELLS:
            raise metrics.error("fairness_window_us", f"of {fairness_window_us} us cuts a run "
                              f"of up to {horizon:,} us into windows that make {cells:,} "
                              f"task-windows; at most {MAX_WINDOW_CELLS:,} are accepted "
                              f"(a longer window, or fewer tasks)")
        root.done()
        return cls(name=name, description=description, gpu=gpu, cache_tasks=cache_tasks,
                   t0_us=t0_us, timeshare_slice_us=timeshare_slice_us,
                   cfs_latency_us=cfs_latency_us,
                   cfs_min_granularity_us=cfs_min_granularity_us,
                   fairness_window_us=fairness_window_us, groups=tuple(groups),
                   policies=policies)
