"""The ``[gpu]`` table: the GPU's shape and resources (:class:`GpuConfig`), its reader,
embodiment 7's schedule of a shared free-block unit over the AP's status words
(:func:`shared_schedule`), and the execution models (:data:`EXECUTIONS`; the shared-issue one
reads the GPU's ``issue_width`` and ``drain``)."""

import math
from dataclasses import dataclass

from model.config import Fields
from model.maxblock import SharedSchedule

__all__ = ["EXECUTIONS", "INSTRUCTION_CLASSES", "MAX_DRAIN", "MAX_RESOURCE_WEIGHT", "MAX_WEIGHT",
           "RESOURCES", "GpuConfig", "read_gpu", "shared_schedule"]

#: The resource types, their level (per PEU or per AP) and whether they are contiguous
#: (type 1: one block at a start address) or counted (type 2).
RESOURCES = {
    "vgpr": ("peu", True),
    "sgpr": ("peu", True),
    "lds": ("ap", True),
    "wave_slots": ("peu", False),
}

#: Instruction classes of embodiment 10 (matrix split by size, as the seed suggests).
INSTRUCTION_CLASSES = ("move", "load", "store", "matrix_small", "matrix_large", "compare",
                       "jump")
#: How a WG's run time is decided: ``fixed`` (its ``duration``, wherever it runs) or ``shared``
#: (each PEU issues at most ``issue_width`` wave-instructions per cycle, shared equally among
#: its issuing waves; a WG is done when its waves have issued their ``work``, + ``drain``).
EXECUTIONS = ("fixed", "shared")
#: Largest drain latency (a 16-bit register).
MAX_DRAIN = 0xFFFF
#: Largest instruction weight ``b_s`` and policy weight (8-bit registers).
MAX_WEIGHT = 255
#: Largest resource weight ``a_h`` given in a file (16-bit registers).
MAX_RESOURCE_WEIGHT = 0xFFFF


@dataclass(frozen=True)
class GpuConfig:
    """The GPU: ``aps`` APs of ``peus`` PEUs each, and its resources (in blocks / slots).

    ``resource_weights`` are embodiment 9's ``a_h`` (integers, per remaining block or slot, in
    the order vgpr, sgpr, lds, wave_slots); ``None``, the default, gives every resource the
    weight ``L / C_h``, where ``C_h`` is the AP's capacity of resource ``h`` (VGPR and SGPR
    summed over the PEUs, LDS, wave slots summed over the PEUs) and ``L`` the least common
    multiple of the four: the documented "a_h = 1 / capacity", scaled to integers exactly, so
    a whole empty AP scores ``L`` per resource on every GPU shape. ``instruction_weights``
    are embodiment 10's ``b_s`` (integers 0..255, per executed instruction).

    ``issue_width`` and ``drain`` are read only by the shared-issue execution model: each PEU
    issues at most ``issue_width`` wave-instructions per cycle, and a WG whose waves have
    issued all their work holds its resources ``drain`` cycles longer.
    """

    aps: int = 16
    peus: int = 4
    vgpr: int = 128
    sgpr: int = 64
    lds: int = 48
    wave_slots: int = 16
    priorities: int = 4
    resource_weights: tuple[int, ...] | None = None
    instruction_weights: tuple[int, ...] = (1, 2, 2, 4, 8, 1, 1)
    issue_width: int = 1
    drain: int = 0

    def capacity(self, resource: str) -> int:
        return getattr(self, resource)

    def ap_capacities(self) -> tuple[int, ...]:
        """Embodiment 9's ``C_h``: what an empty AP has of each resource, in the order of
        :data:`RESOURCES` (per-PEU resources summed over the AP's PEUs)."""
        return tuple(self.capacity(name) * (self.peus if level == "peu" else 1)
                     for name, (level, _) in RESOURCES.items())

    def resource_weight_values(self) -> tuple[int, ...]:
        """The ``a_h`` in use: the configured integers, or ``L / C_h`` (see above)."""
        if self.resource_weights is not None:
            return tuple(self.resource_weights)
        capacities = self.ap_capacities()
        common = math.lcm(*capacities)
        return tuple(common // c for c in capacities)


def read_gpu(fields_: Fields, base: GpuConfig | None = None) -> GpuConfig:
    """The ``[gpu]`` table, each field optional (defaults: ``base``, else
    :class:`GpuConfig`'s)."""
    base = base or GpuConfig()
    resource_weights = None
    if "resource_weights" in fields_:
        resource_weights = fields_.int_list("resource_weights", length=len(RESOURCES),
                                            minimum=0, maximum=MAX_RESOURCE_WEIGHT)
    gpu = GpuConfig(
        aps=fields_.int("aps", base.aps, minimum=1, maximum=1024),
        peus=fields_.int("peus", base.peus, minimum=1, maximum=64),
        vgpr=fields_.int("vgpr", base.vgpr, minimum=1, maximum=4096),
        sgpr=fields_.int("sgpr", base.sgpr, minimum=1, maximum=4096),
        lds=fields_.int("lds", base.lds, minimum=1, maximum=4096),
        wave_slots=fields_.int("wave_slots", base.wave_slots, minimum=1, maximum=1024),
        priorities=fields_.int("priorities", base.priorities, minimum=1, maximum=16),
        resource_weights=resource_weights,
        instruction_weights=fields_.int_list("instruction_weights", base.instruction_weights,
                                             length=len(INSTRUCTION_CLASSES), minimum=0,
                                             maximum=MAX_WEIGHT),
        issue_width=fields_.int("issue_width", base.issue_width, minimum=1, maximum=64),
        drain=fields_.int("drain", base.drain, minimum=0, maximum=MAX_DRAIN),
    )
    fields_.done()
    return gpu


def shared_schedule(gpu: GpuConfig, width: int = 0):
    """Embodiment 7's schedule of one AP's unit: the AP's status words ``vgpr0`` ..
    ``vgpr{Q-1}``, ``sgpr0`` .., ``lds`` in that order, each put in the first period with room
    for it (``width`` blocks, 0: the largest resource's block count), a new period when none
    has. A :class:`model.maxblock.SharedSchedule`; its period count is the refresh interval.
    For the defaults (width 128): four periods of one VGPR file, two of two SGPR files, one
    of the LDS: every view is refreshed once in 7 clocks."""
    width = width or max(gpu.vgpr, gpu.sgpr, gpu.lds)
    types = ([(f"vgpr{q}", gpu.vgpr) for q in range(gpu.peus)]
             + [(f"sgpr{q}", gpu.sgpr) for q in range(gpu.peus)] + [("lds", gpu.lds)])
    periods: list[list[tuple[str, int]]] = []
    for name, size in types:
        for period in periods:
            if sum(s for _, s in period) + size <= width:
                period.append((name, size))
                break
        else:
            periods.append([(name, size)])
    return SharedSchedule(tuple(tuple(p) for p in periods), width)

