"""Scenario files of the process scheduler model: the GPU's context and where it is saved, each
policy's knobs, the task groups (TOML; validated by :mod:`model.config`, errors name the field;
the format is in ``docs/procsched.md``)."""

import math
from dataclasses import dataclass

from model.config import (
    Budget,
    Fields,
    check_choice,
    check_int,
    check_items,
    check_names,
    check_number,
    check_pair,
    load_toml,
    toml_path,
)

__all__ = ["HOST_GB_S", "POLICIES", "PRIORITY_LEVELS", "PRIORITY_RULES", "RELOAD_RULES",
           "SAVE_PATHS", "GpuContext", "Scenario", "TaskGroup"]

#: 4-bit priority: 0 is the highest of 16 levels (the seed's first to sixteenth priority).
PRIORITY_LEVELS = 16

#: The largest workload a scenario may make (refused at load time, naming the field): a run
#: simulates about 200 000 slices a second, so these keep one within a minute or two.
MAX_TASKS = 100_000
MAX_SLICES = 10_000_000
MAX_WINDOW_CELLS = 20_000_000

#: The largest GPU a scenario may describe, far above any real one (the largest have about 300
#: compute units of at most 512 KiB of registers and 228 KiB of shared memory, and up to about
#: 200 GB of device memory), and the longest switch (about 17 minutes): with the caps above
#: every simulated time stays well within 64-bit integers.
MAX_COMPUTE_UNITS = 10_000
MAX_KIB_PER_CU = 16_384
MAX_EXTRA_STATE_MIB = 1_048_576
MAX_SWITCH_US = 1_000_000_000

#: Every policy a scenario can run, in table order. ``timeshare-mean`` is round-robin at the
#: mean slice the seed's scheduler ran on the same workload, so it needs ``seed`` before it.
POLICIES = ("seed", "seed-prop", "timeshare", "timeshare-t0", "timeshare-mean", "cfs")

#: When the seed's stage 1 reloads the cache ([0094], "运行完毕"): ``completed`` -- after
#: every loaded task has run to completion (the word's meaning in [0040] and [0090]; the
#: default); ``slice`` -- after every loaded task has run its slice once, the next load taken
#: from the tasks *not* just loaded ([0094]'s "the remaining a - L"); ``rerank`` -- after one
#: slice each, every task of the top priority competing again (this model's first reading).
RELOAD_RULES = ("completed", "slice", "rerank")

#: When a higher-priority arrival takes effect ([0090]: a lower priority never runs while a
#: higher one has work): ``strict`` -- at the next slice boundary (the cache is flushed and
#: reloaded; the default); ``reload`` -- only at the seed's next reload (the first reading).
PRIORITY_RULES = ("strict", "reload")

#: Where a context that leaves the compute units is kept: ``host`` -- main memory over PCIe
#: ([0042]: the prior art "saves all data to main memory"); ``device`` -- device memory.
SAVE_PATHS = ("host", "device")

#: PCI Express 4.0 x16, one direction: 16 GT/s per lane with 128b/130b encoding is 1.969 GB/s
#: per lane, 31.5 GB/s for 16 lanes (PCI-SIG, PCI Express Base Specification 4.0, 2017).
#: Measured DMA reaches about 80 % of it; the raw figure is the conservative choice here
#: (it makes a switch cheaper, which favours short slices, i.e. the baselines).
HOST_GB_S = 31.5


def _microseconds(size_bytes: float, gb_s: float) -> int:
    """``size_bytes`` at ``gb_s`` (10^9 bytes/s) in whole microseconds, rounded up."""
    return math.ceil(size_bytes / (gb_s * 1e3))


@dataclass(frozen=True)
class GpuContext:
    """What moving a context costs: the state saved and restored, over which path.

    The state is the register file and shared memory of every compute unit plus
    ``extra_state_mib`` of device memory (the seed: "close to 1 MB of registers and tens of MB
    of memory" per process switch). It moves at ``bandwidth_gb_s`` inside the device and at
    ``host_gb_s`` to and from main memory (PCIe; default :data:`HOST_GB_S`). ``save_to`` says
    where a context leaving the compute units goes for the policies without the seed's cache.
    A **switch** saves the outgoing context and restores the incoming one (two transfers,
    one after the other). ``switch_us > 0`` replaces every figure by a fixed cost per switch
    (and half of it per one-way transfer).
    """

    compute_units: int = 64
    register_kib_per_cu: int = 256
    shared_kib_per_cu: int = 64
    extra_state_mib: float = 0.0
    bandwidth_gb_s: float = 300.0
    host_gb_s: float = HOST_GB_S
    save_to: str = "host"
    switch_us: int = 0

    def __post_init__(self):
        if self.save_to not in SAVE_PATHS:
            raise ValueError(f"save_to must be one of {', '.join(map(repr, SAVE_PATHS))}, "
                             f"not {self.save_to!r}")
        # compute_units = 0 is allowed from Python (a context with nothing to move, in tests);
        # the TOML reader asks for a size or a fixed switch_us.
        for name, most in (("compute_units", MAX_COMPUTE_UNITS),
                           ("register_kib_per_cu", MAX_KIB_PER_CU),
                           ("shared_kib_per_cu", MAX_KIB_PER_CU), ("switch_us", MAX_SWITCH_US)):
            check_int("GpuContext", name, getattr(self, name), 0, most)
        check_number("GpuContext", "extra_state_mib", self.extra_state_mib, 0,
                     maximum=MAX_EXTRA_STATE_MIB)
        # The reader's least bandwidth: 1 MB/s (a smaller one makes a switch last hours).
        check_number("GpuContext", "bandwidth_gb_s", self.bandwidth_gb_s, 1e-3)
        check_number("GpuContext", "host_gb_s", self.host_gb_s, 1e-3)

    @property
    def context_bytes(self) -> int:
        per_cu = (self.register_kib_per_cu + self.shared_kib_per_cu) * 1024
        return self.compute_units * per_cu + round(self.extra_state_mib * 1024 * 1024)

    @property
    def device_switch_us(self) -> int:
        """A switch whose contexts stay in device memory (the seed's cache), in whole us."""
        if self.switch_us:
            return self.switch_us
        return _microseconds(2 * self.context_bytes, self.bandwidth_gb_s)

    @property
    def host_switch_us(self) -> int:
        """A switch that saves to and restores from main memory over PCIe, in whole us."""
        if self.switch_us:
            return self.switch_us
        return _microseconds(2 * self.context_bytes, self.host_gb_s)

    @property
    def switch_cost_us(self) -> int:
        """One switch of a policy without the seed's cache: over the ``save_to`` path."""
        return self.host_switch_us if self.save_to == "host" else self.device_switch_us

    @property
    def transfer_us(self) -> int:
        """One context moved one way over the ``save_to`` path: what loading a task into the
        seed's hardware cache, or evicting an unfinished one from it, costs."""
        if self.switch_us:
            return math.ceil(self.switch_us / 2)
        bandwidth = self.host_gb_s if self.save_to == "host" else self.bandwidth_gb_s
        return _microseconds(self.context_bytes, bandwidth)


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

    def __post_init__(self):
        check_int("TaskGroup", "count", self.count, 1)
        check_int("TaskGroup", "priority", self.priority, 0, PRIORITY_LEVELS - 1)
        check_int("TaskGroup", "arrival_us", self.arrival_us, 0)
        check_int("TaskGroup", "spacing_us", self.spacing_us, 0)
        check_choice("TaskGroup", "spacing", self.spacing, ("fixed", "poisson"))
        check_pair("TaskGroup", "work_us", self.work_us, 1)


@dataclass(frozen=True)
class Scenario:
    """One scenario file: the GPU, the knobs of every policy, the workload, the policies."""

    name: str
    description: str = ""
    gpu: GpuContext = GpuContext()
    cache_tasks: int = 8
    t0_us: int = 10_000
    reload: str = "completed"
    priority_rule: str = "strict"
    timeshare_slice_us: int = 4_000
    cfs_latency_us: int = 40_000
    cfs_min_granularity_us: int = 10_000
    fairness_window_us: int = 1_000_000
    groups: tuple[TaskGroup, ...] = ()
    policies: tuple[str, ...] = POLICIES

    def __post_init__(self):
        if self.reload not in RELOAD_RULES:
            raise ValueError(f"reload must be one of {', '.join(map(repr, RELOAD_RULES))}, "
                             f"not {self.reload!r}")
        if self.priority_rule not in PRIORITY_RULES:
            raise ValueError(f"priority_rule must be one of "
                             f"{', '.join(map(repr, PRIORITY_RULES))}, not "
                             f"{self.priority_rule!r}")
        # The checks of the TOML reader, for a scenario built in Python.
        for name in ("name", "description"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Scenario.{name} must be a string, not {getattr(self, name)!r}")
        if not isinstance(self.gpu, GpuContext):
            raise TypeError(f"Scenario.gpu must be a GpuContext, not {self.gpu!r}")
        for name in ("cache_tasks", "t0_us", "timeshare_slice_us", "cfs_latency_us",
                     "cfs_min_granularity_us", "fairness_window_us"):
            check_int("Scenario", name, getattr(self, name), 1)
        check_items("Scenario", "groups", self.groups, TaskGroup)
        # The reader's caps (tasks, slices, fairness windows), for a scenario built in Python.
        tasks = sum(group.count for group in self.groups)
        shortest = min(self.t0_us, self.timeshare_slice_us, self.cfs_min_granularity_us)
        slices = sum(group.count * -(-group.work_us[1] // shortest) for group in self.groups)
        if tasks > MAX_TASKS or slices > MAX_SLICES:
            raise ValueError(f"Scenario.groups must hold at most {MAX_TASKS:,} tasks and "
                             f"{MAX_SLICES:,} slices of the shortest configured slice "
                             f"({shortest} us) in all (a run this size would take hours), not "
                             f"{tasks:,} tasks and {slices:,} slices")
        if self.groups:
            horizon = (max(g.arrival_us + (g.count - 1) * g.spacing_us for g in self.groups)
                       + sum(g.count * g.work_us[1] for g in self.groups))
            cells = tasks * (horizon // self.fairness_window_us + 1)
            if cells > MAX_WINDOW_CELLS:
                raise ValueError(f"Scenario.fairness_window_us of {self.fairness_window_us} us "
                                 f"makes {cells:,} task-windows; at most "
                                 f"{MAX_WINDOW_CELLS:,} are accepted (a longer window, or fewer "
                                 f"tasks)")
        policies = self.policies
        check_names("Scenario", "policies", policies, POLICIES)
        if "timeshare-mean" in policies and (
                "seed" not in policies
                or list(policies).index("seed") > list(policies).index("timeshare-mean")):
            raise ValueError("Scenario.policies must list 'seed' before 'timeshare-mean' (its "
                             "slice is the seed's mean slice on the same workload)")

    @classmethod
    def from_toml(cls, path) -> "Scenario":
        """Load and validate a scenario file; errors name the file and the field."""
        path = toml_path(path)
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
        if "timeshare-mean" in policies and (
                "seed" not in policies
                or policies.index("seed") > policies.index("timeshare-mean")):
            raise root.error("policies", "must list 'seed' before 'timeshare-mean' (its slice "
                                         "is the seed's mean slice on the same workload)")
        if len(set(policies)) != len(policies):
            raise root.error("policies", f"must not repeat a policy, not {list(policies)}")

        table = root.table("gpu", {})
        gpu = GpuContext(
            compute_units=table.int("compute_units", 64, minimum=1, maximum=MAX_COMPUTE_UNITS),
            register_kib_per_cu=table.int("register_kib_per_cu", 256, minimum=0,
                                          maximum=MAX_KIB_PER_CU),
            shared_kib_per_cu=table.int("shared_kib_per_cu", 64, minimum=0,
                                        maximum=MAX_KIB_PER_CU),
            extra_state_mib=table.float("extra_state_mib", 0.0, minimum=0,
                                        maximum=MAX_EXTRA_STATE_MIB),
            bandwidth_gb_s=table.float("bandwidth_gb_s", 300.0, minimum=1e-3),
            host_gb_s=table.float("host_gb_s", HOST_GB_S, minimum=1e-3),
            save_to=table.str("save_to", "host", choices=SAVE_PATHS),
            switch_us=table.int("switch_us", 0, minimum=0, maximum=MAX_SWITCH_US))
        if gpu.context_bytes == 0 and not gpu.switch_us:
            raise table.error("compute_units", "and the other sizes give an empty context; "
                                               "give a size or a fixed switch_us")
        for key, switch in (("bandwidth_gb_s", gpu.device_switch_us),
                            ("host_gb_s", gpu.host_switch_us)):
            if switch > MAX_SWITCH_US:
                raise table.error(key, f"of {getattr(gpu, key):g} moves a context of "
                                       f"{gpu.context_bytes:,} bytes in a switch of "
                                       f"{switch:,} us; at most {MAX_SWITCH_US:,} us are "
                                       f"accepted (a faster path or a smaller context)")
        table.done()

        table = root.table("seed", {})
        cache_tasks = table.int("cache_tasks", 8, minimum=1)
        t0_us = table.int("t0_us", 10_000, minimum=1)
        reload = table.str("reload", "completed", choices=RELOAD_RULES)
        priority_rule = table.str("priority", "strict", choices=PRIORITY_RULES)
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
                   t0_us=t0_us, reload=reload, priority_rule=priority_rule,
                   timeshare_slice_us=timeshare_slice_us,
                   cfs_latency_us=cfs_latency_us,
                   cfs_min_granularity_us=cfs_min_granularity_us,
                   fairness_window_us=fairness_window_us, groups=tuple(groups),
                   policies=policies)
