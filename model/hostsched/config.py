"""Scenario files of ``gpusched hostsched``: the system and what moving data costs, the seed
dispatcher's knobs, the baselines' binding and the workload's thread groups, as frozen
dataclasses loaded from TOML."""

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

__all__ = ["BINDINGS", "FRAME_BYTES_1080P", "LINK_GB_S", "MAX_SUBTASKS", "ORDERS",
           "QUICK_SCALE", "SEGMENT_BYTES", "SHIP_STATE", "STATE_BYTES", "Scenario",
           "SystemParams", "ThreadGroup", "load_scenario"]

#: The thread orders of the seed's order table.
ORDERS = ("arrival", "priority")

#: How the seed's batch carries a sub-task's state ([0110], [0128]): ``always`` -- the host
#: packs the cached state with the input (it cannot know which instance will pull the
#: sub-task from the shared FIFO; the default); ``on-miss`` -- only the input is packed, and
#: the instance that pulls the sub-task fetches the state when it does not hold it (the
#: model's first reading).
SHIP_STATE = ("always", "on-miss")

#: The prior art's binding of threads to instances ([0003]: round robin): ``random`` -- round
#: robin over a random permutation of the threads, drawn per seed, so that a claim holds over
#: the binding and not for one lucky assignment (the default); ``round-robin`` -- thread
#: ``t`` on instance ``t mod I``.
BINDINGS = ("random", "round-robin")

#: One 1080p frame in 8-bit 4:2:0: 1920 x 1080 luma + two 960 x 540 chroma planes.
FRAME_BYTES_1080P = 1920 * 1080 * 3 // 2

#: The state a segment of the seed's video-decoding example ([0111]) hands to the next: the
#: decoder's reference frames. H.264 level 4.1 allows MaxDpbMbs = 32768 macroblocks, four
#: 1080p frames of 8160 (ITU-T H.264, Annex A, Table A-1): 12,441,600 bytes.
STATE_BYTES = 4 * FRAME_BYTES_1080P

#: A segment's input: 1 s of 1080p video at 8 Mbit/s (a common 1080p30 H.264 rate).
SEGMENT_BYTES = 1_000_000

#: PCI Express 3.0 x16 (the link of common FPGA accelerator cards), one direction: 8 GT/s
#: per lane, 128b/130b, 0.985 GB/s per lane, 15.75 GB/s for 16 lanes (PCI-SIG).
LINK_GB_S = 15.75
#: The most sub-tasks a scenario may make (refused at load time, naming the field): a run
#: simulates 100 000 to 300 000 sub-tasks a second, so this keeps one within a minute or so.
MAX_SUBTASKS = 2_000_000

#: Workload scale of ``--quick`` (tasks per thread are multiplied by it, at least 1).
QUICK_SCALE = 0.25


def _move_us(size_bytes: int, gb_s: float) -> int:
    """``size_bytes`` at ``gb_s`` (10^9 bytes/s) in whole microseconds, rounded up; 0 for 0."""
    return math.ceil(size_bytes / (gb_s * 1e3)) if size_bytes else 0


@dataclass(frozen=True)
class SystemParams:
    """The hardware, the host buffers and what moving data costs.

    ``instances`` kernel instances; every instance keeps the latest state of up to
    ``instance_cache`` tasks (LRU), so a sub-task whose task last ran on the same instance and
    is still cached there needs no state move. A state is ``state_bytes``, a sub-task's input
    ``input_bytes``; both cross the host link (PCIe/DMA) at ``link_gb_s``, and every DMA costs
    ``dma_setup_us`` besides (descriptor, doorbell, completion). ``state_transfer_us``, when
    given, replaces the state's ``state_bytes / link_gb_s`` by a fixed time. A state spilled
    to host memory costs ``host_refetch_us`` more. Backup buffers: ``per_thread`` task states
    per thread and ``spare`` shared ones.
    """

    instances: int = 4
    instance_cache: int = 1
    state_bytes: int = STATE_BYTES
    input_bytes: int = SEGMENT_BYTES
    link_gb_s: float = LINK_GB_S
    dma_setup_us: int = 10
    state_transfer_us: int | None = None
    per_thread: int = 2
    spare: int = 8
    host_refetch_us: int = 0

    def __post_init__(self):
        for name, minimum in (("instances", 1), ("instance_cache", 0), ("state_bytes", 0),
                              ("input_bytes", 0), ("dma_setup_us", 0), ("per_thread", 0),
                              ("spare", 0), ("host_refetch_us", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise ValueError(f"SystemParams.{name} must be an integer >= {minimum}, "
                                 f"not {value!r}")
        link = self.link_gb_s
        # The reader's least bandwidth, 1 MB/s; a bool or an infinite link is no bandwidth.
        if (not isinstance(link, int | float) or isinstance(link, bool)
                or not 1e-3 <= link < math.inf):
            raise ValueError(f"SystemParams.link_gb_s must be a positive number (at least "
                             f"0.001 GB/s, finite), not {link!r}")
        fixed = self.state_transfer_us
        if fixed is not None and (not isinstance(fixed, int) or isinstance(fixed, bool)
                                  or fixed < 0):
            raise ValueError(f"SystemParams.state_transfer_us must be None or an integer >= 0, "
                             f"not {fixed!r}")

    @property
    def state_move_us(self) -> int:
        """Moving one state over the link (without the DMA setup)."""
        if self.state_transfer_us is not None:
            return self.state_transfer_us
        return _move_us(self.state_bytes, self.link_gb_s)

    @property
    def input_move_us(self) -> int:
        """Moving one sub-task's input over the link (without the DMA setup)."""
        return _move_us(self.input_bytes, self.link_gb_s)


@dataclass(frozen=True)
class ThreadGroup:
    """``count`` identical threads. Each has a number of tasks drawn from ``tasks`` (inclusive
    ``[min, max]``), each task a number of sub-tasks from ``subtasks``, each sub-task a
    duration from ``duration_us``. The thread's tasks are dealt round-robin over ``streams``
    lanes (tasks open at the same time, their sub-tasks interleaved in the thread); a lane's
    sub-tasks arrive every ``interval_us`` from a start drawn from ``start_us`` (interval 0:
    all present at the start, as in offline transcoding)."""

    count: int = 1
    tasks: tuple[int, int] = (1, 1)
    subtasks: tuple[int, int] = (4, 4)
    duration_us: tuple[int, int] = (1000, 1000)
    start_us: tuple[int, int] = (0, 0)
    interval_us: int = 0
    streams: int = 1
    priority: int = 0

    def __post_init__(self):
        check_int("ThreadGroup", "count", self.count, 1)
        for name, minimum in (("tasks", 1), ("subtasks", 1), ("duration_us", 1),
                              ("start_us", 0)):
            check_pair("ThreadGroup", name, getattr(self, name), minimum)
        check_int("ThreadGroup", "interval_us", self.interval_us, 0)
        check_int("ThreadGroup", "streams", self.streams, 1)
        check_int("ThreadGroup", "priority", self.priority, 0, 15)


@dataclass(frozen=True)
class Scenario:
    """One scenario file: the system, the seed dispatcher's knobs (``batch`` threads per batch,
    the table ``orders`` to run, how the batch carries states, the host's packing bandwidth
    ``pack_gb_s``, 0 for a scatter-gather DMA that copies nothing, and ``refill_us``, the
    host's fixed cost of a refill: waking on the empty FIFO, drawing the batch, ringing the
    DMA's doorbell), the baselines' binding and the workload's thread groups."""

    name: str
    description: str = ""
    system: SystemParams = SystemParams()
    batch: int = 8
    orders: tuple[str, ...] = ORDERS
    ship_state: str = "always"
    pack_gb_s: float = 10.0
    refill_us: int = 20
    binding: str = "random"
    groups: tuple[ThreadGroup, ...] = (ThreadGroup(),)

    def __post_init__(self):
        """The checks of :func:`load_scenario`, for a scenario built in Python."""
        for name in ("name", "description"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Scenario.{name} must be a string, not {getattr(self, name)!r}")
        if not isinstance(self.system, SystemParams):
            raise TypeError(f"Scenario.system must be a SystemParams, not {self.system!r}")
        check_int("Scenario", "batch", self.batch, self.system.instances + 1)
        check_names("Scenario", "orders", self.orders, ORDERS)
        check_choice("Scenario", "ship_state", self.ship_state, SHIP_STATE)
        check_number("Scenario", "pack_gb_s", self.pack_gb_s, 0)
        check_int("Scenario", "refill_us", self.refill_us, 0)
        check_choice("Scenario", "binding", self.binding, BINDINGS)
        check_items("Scenario", "groups", self.groups, ThreadGroup)
        if not self.groups:
            raise ValueError("Scenario.groups must list at least one ThreadGroup")
        subtasks = sum(group.count * group.tasks[1] * group.subtasks[1] for group in self.groups)
        if subtasks > MAX_SUBTASKS:
            raise ValueError(f"Scenario.groups must make at most {MAX_SUBTASKS:,} sub-tasks "
                             f"(count x most tasks x most subtasks; a run this size would take "
                             f"hours), not {subtasks:,}")


def load_scenario(path) -> Scenario:
    """Read a scenario TOML file; a :class:`~model.config.ConfigError` names file and field.

    Layout (every key optional except ``[[threads]]``, defaults as in the dataclasses)::

        description = "..."
        [system]   instances, instance_cache, state_bytes, input_bytes, link_gb_s,
                   dma_setup_us, state_transfer_us
        [buffers]  per_thread, spare, host_refetch_us
        [dispatch] batch, order = "arrival" | "priority" | "both",
                   ship_state = "always" | "on-miss", pack_gb_s, refill_us
        [static]   binding = "random" | "round-robin"
        [[threads]] count, tasks, subtasks, duration_us, start_us, interval_us, streams,
                    priority
    """
    path = toml_path(path)
    root = Fields(load_toml(path), source=path)
    description = root.str("description", "")
    system = root.table("system", {})
    buffers = root.table("buffers", {})
    fixed = system.int("state_transfer_us", -1, minimum=0) if "state_transfer_us" in system \
        else None
    params = SystemParams(
        instances=system.int("instances", 4, minimum=1),
        instance_cache=system.int("instance_cache", 1, minimum=0),
        state_bytes=system.int("state_bytes", STATE_BYTES, minimum=0),
        input_bytes=system.int("input_bytes", SEGMENT_BYTES, minimum=0),
        link_gb_s=system.float("link_gb_s", LINK_GB_S, minimum=1e-3),
        dma_setup_us=system.int("dma_setup_us", 10, minimum=0),
        state_transfer_us=fixed,
        per_thread=buffers.int("per_thread", 2, minimum=0),
        spare=buffers.int("spare", 8, minimum=0),
        host_refetch_us=buffers.int("host_refetch_us", 0, minimum=0),
    )
    system.done()
    buffers.done()
    dispatch = root.table("dispatch", {})
    batch = dispatch.int("batch", 2 * params.instances, minimum=1)
    if batch <= params.instances:
        raise dispatch.error("batch", f"must be greater than system.instances "
                                      f"({params.instances}): the seed's target threads "
                                      f"outnumber the instances ([0007]), not {batch}")
    order = dispatch.str("order", "both", choices=(*ORDERS, "both"))
    ship_state = dispatch.str("ship_state", "always", choices=SHIP_STATE)
    pack_gb_s = dispatch.float("pack_gb_s", 10.0, minimum=0)
    refill_us = dispatch.int("refill_us", 20, minimum=0)
    dispatch.done()
    static = root.table("static", {})
    binding = static.str("binding", "random", choices=BINDINGS)
    static.done()
    groups = []
    subtasks = Budget(MAX_SUBTASKS, "sub-tasks (count x most tasks x most subtasks)",
                      "a run this size would take hours")
    for table in root.tables("threads"):
        groups.append(ThreadGroup(
            count=table.int("count", 1, minimum=1),
            tasks=table.int_range("tasks", (1, 1), minimum=1),
            subtasks=table.int_range("subtasks", (4, 4), minimum=1),
            duration_us=table.int_range("duration_us", (1000, 1000), minimum=1),
            start_us=table.int_range("start_us", (0, 0), minimum=0),
            interval_us=table.int("interval_us", 0, minimum=0),
            streams=table.int("streams", 1, minimum=1),
            priority=table.int("priority", 0, minimum=0, maximum=15),
        ))
        table.done()
        group = groups[-1]
        subtasks.charge(table, "count", group.count * group.tasks[1] * group.subtasks[1])
    if not groups:
        raise root.error("threads", "must list at least one thread group")
    root.done()
    return Scenario(name=path.stem, description=description, system=params, batch=batch,
                    orders=ORDERS if order == "both" else (order,), ship_state=ship_state,
                    pack_gb_s=pack_gb_s, refill_us=refill_us, binding=binding,
                    groups=tuple(groups))
