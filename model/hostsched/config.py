"""Scenario files of ``gpusched hostsched``: the system, the seed dispatcher's knobs and the
workload's thread groups, as frozen dataclasses loaded from TOML."""

from dataclasses import dataclass
from pathlib import Path

from model.config import Budget, Fields, load_toml

__all__ = ["MAX_SUBTASKS", "ORDERS", "QUICK_SCALE", "Scenario", "SystemParams", "ThreadGroup",
           "load_scenario"]

#: The thread orders of the seed's order table.
ORDERS = ("arrival", "priority")

#: The most sub-tasks a scenario may make (refused at load time, naming the field): a run
#: simulates 100 000 to 300 000 sub-tasks a second, so this keeps one within a minute or so.
MAX_SUBTASKS = 2_000_000

#: Workload scale of ``--quick`` (tasks per thread are multiplied by it, at least 1).
QUICK_SCALE = 0.25


@dataclass(frozen=True)
class SystemParams:
    """The hardware and the host buffers.

    ``instances`` kernel instances; every instance keeps the latest state of up to
    ``instance_cache`` tasks (LRU), so a sub-task whose task last ran on the same instance and
    is still cached there needs no state transfer; otherwise shipping the state costs
    ``state_transfer_us`` of instance time, plus ``host_refetch_us`` when the state was
    spilled to host memory. Backup buffers: ``per_thread`` task states per thread and
    ``spare`` shared ones.
    """

    instances: int = 4
    instance_cache: int = 1
    state_transfer_us: int = 0
    per_thread: int = 2
    spare: int = 8
    host_refetch_us: int = 0


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


@dataclass(frozen=True)
class Scenario:
    """One scenario file: the system, the seed dispatcher's knobs (``batch`` threads per batch,
    the table ``orders`` to run) and the workload's thread groups."""

    name: str
    description: str = ""
    system: SystemParams = SystemParams()
    batch: int = 8
    orders: tuple[str, ...] = ORDERS
    groups: tuple[ThreadGroup, ...] = (ThreadGroup(),)


def load_scenario(path) -> Scenario:
    """Read a scenario TOML file; a :class:`~model.config.ConfigError` names file and field.

    Layout (every key optional except ``[[threads]]``, defaults as in the dataclasses)::

        description = "..."
        [system]   instances, instance_cache, state_transfer_us
        [buffers]  per_thread, spare, host_refetch_us
        [dispatch] batch, order = "arrival" | "priority" | "both"
        [[threads]] count, tasks, subtasks, duration_us, start_us, interval_us, streams,
                    priority
    """
    path = Path(path)
    root = Fields(load_toml(path), source=path)
    description = root.str("description", "")
    system = root.table("system", {})
    buffers = root.table("buffers", {})
    params = SystemParams(
        instances=system.int("instances", 4, minimum=1),
        instance_cache=system.int("instance_cache", 1, minimum=0),
        state_transfer_us=system.int("state_transfer_us", 0, minimum=0),
        per_thread=buffers.int("per_thread", 2, minimum=0),
        spare=buffers.int("spare", 8, minimum=0),
        host_refetch_us=buffers.int("host_refetch_us", 0, minimum=0),
    )
    system.done()
    buffers.done()
    dispatch = root.table("dispatch", {})
    batch = dispatch.int("batch", 2 * params.instances, minimum=1)
    order = dispatch.str("order", "both", choices=(*ORDERS, "both"))
    dispatch.done()
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
                    orders=ORDERS if order == "both" else (order,), groups=tuple(groups))
