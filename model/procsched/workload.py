"""The workload of a scenario: its task groups drawn into GPU processes with a seeded RNG."""

import math
import random
from dataclasses import dataclass

from model.procsched.config import PRIORITY_LEVELS, Scenario

__all__ = ["TaskSpec", "generate_tasks"]


@dataclass(frozen=True)
class TaskSpec:
    """One GPU process of the workload: when it arrives, its priority, the run time it needs.

    Checked on construction: integers, ``arrival_us >= 0``, ``priority`` in 0..15 and
    ``work_us >= 1`` (``TypeError``/``ValueError`` naming the field)."""

    task_id: int
    arrival_us: int
    priority: int
    work_us: int

    def __post_init__(self):
        for name, minimum in (("task_id", 0), ("arrival_us", 0), ("priority", 0),
                              ("work_us", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"TaskSpec.{name} must be an integer, not {value!r}")
            if value < minimum:
                raise ValueError(f"TaskSpec.{name} must be >= {minimum}, not {value!r}")
        if self.priority >= PRIORITY_LEVELS:
            raise ValueError(f"TaskSpec.priority must be in 0..{PRIORITY_LEVELS - 1}, "
                             f"not {self.priority!r}")


def generate_tasks(scenario: Scenario, rng: random.Random, *, scale: float = 1.0
                   ) -> list[TaskSpec]:
    """The scenario's workload drawn with ``rng``, ids in group order, sorted by arrival.

    ``scale`` multiplies every work, arrival and spacing (``--quick`` uses 0.25).
    """
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a procsched Scenario, not {scenario!r}")
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, not {rng!r}")
    if (not isinstance(scale, int | float) or isinstance(scale, bool)
            or not 0 < scale < math.inf):
        raise ValueError(f"scale must be a positive number, not {scale!r}")
    specs = []
    for group in scenario.groups:
        arrival = float(group.arrival_us)
        for index in range(group.count):
            if index:
                gap = group.spacing_us
                if group.spacing == "poisson" and gap:
                    gap = rng.expovariate(1.0 / gap)
                arrival += gap
            work = rng.randint(*group.work_us)
            specs.append(TaskSpec(task_id=len(specs), arrival_us=round(arrival * scale),
                                  priority=group.priority,
                                  work_us=max(1, round(work * scale))))
    return sorted(specs, key=lambda spec: (spec.arrival_us, spec.task_id))
