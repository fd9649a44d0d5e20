"""Power tables of the cluster model: every GPU model of the Alibaba v2023 node list, and the
host CPUs those nodes carry, each figure with its source.

A card draws ``busy_w`` while any pod holds any part of it (the seed's *first power*), ``idle_w``
while free and awake, ``standby_w`` in low-power standby. A host draws, per CPU socket,
``socket_busy_w`` while a core of that socket is allocated and ``socket_idle_w`` otherwise, and
``sleep_w`` for the whole host in low-power standby (see :mod:`model.cluster.state`).

Sources (the numbers are facts taken from these; the table is ours):

* Busy power is the board's rated power (TDP) from the vendor's datasheet: NVIDIA Tesla T4
  70 W, A10 150 W, Tesla P100 PCIe 250 W, Tesla V100 SXM2 300 W, A100 SXM4 400 W.
* Idle power is the figure used by the PWR policy's public simulator
  (github.com/Fr4nz83/PWR-plugin-kubernetes, ``pkg/type/open-gpu-share/utils/const.go``),
  which cites NVIDIA's T4 page and A10 datasheet, the SC20 poster "rpost131" measurements
  for P100 and V100, and NVIDIA's Ampere whitepaper for A100.
* G1, G2 and G3 are undisclosed Alibaba GPU codes (the trace's README says so): no vendor
  figure exists. We model them as the PWR plugin's current power model does (same file,
  ``MapGpuTypeModelEnergy``, at commit 3bfd53f; unchanged since c389ff1, 2024-06-05): G2 as
  an A10 (150 W busy, 30 W idle; "nodes mounting these GPUs have very large CPU (96) and RAM
  (393GiB)"), G3 as an A100 (400 W, 50 W; 128 CPUs, 786 GiB). G1 is not in the v2023 node
  list and has no entry in PWR's model; it keeps a placeholder (250 W, 25 W). Reports that
  use G1-G3 say their power is borrowed. (An earlier PWR commit used 250/25 W for every
  undisclosed model, values its message calls fake.)
* Low-power standby: no vendor publishes a standby figure for these data-centre boards. We
  assume half the idle power. This is an assumption, not a measurement; override it with a
  ``[card_types.<model>]`` table.
* Host CPUs: the PWR simulator's table (same file), which takes idle/full socket power and
  cores per socket from Alibaba ECS instance-family documentation and Intel's TDP figures, and
  its mapping from GPU model to CPU model (``data/2 - Add CPU models to YAML nodes.ipynb``).
  Two vCPUs share a physical core (Alibaba's documentation, as PWR reads it).
* Host low-power standby (suspend): no source; we assume 15 W per host.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "BUILTIN_CARD_TYPES",
    "BUILTIN_HOSTS",
    "HOST_FOR_MODEL",
    "HOST_SLEEP_W",
    "CardType",
    "HostType",
    "card_type",
    "host_for",
    "sockets_of",
]


@dataclass(frozen=True)
class CardType:
    """One GPU type: ``busy_w`` (the seed's first power), ``idle_w``, ``standby_w``; ``host``
    names the CPU model of the nodes that carry it (for trace node lists); ``source`` says
    where the numbers come from."""

    name: str
    busy_w: float
    idle_w: float
    standby_w: float
    host: str | None = None
    source: str = ""


@dataclass(frozen=True)
class HostType:
    """One host CPU model: per-socket power while a core is allocated and while none is, and
    the physical cores of one socket."""

    name: str
    socket_busy_w: float
    socket_idle_w: float
    cores_per_socket: int
    source: str = ""


_PWR = "idle: PWR simulator table (Lettich et al.)"
_TDP = "busy: vendor TDP"
_STANDBY = "standby: assumed idle / 2 (no published figure)"

#: The built-in GPU power table (watts). Every model of the v2023 node list is here.
BUILTIN_CARD_TYPES: dict[str, CardType] = {
    "T4": CardType("T4", 70.0, 10.0, 5.0, "Intel-Xeon-8163",
                   f"{_TDP} (NVIDIA T4 datasheet); {_PWR}; {_STANDBY}"),
    "A10": CardType("A10", 150.0, 30.0, 15.0, "Intel-Xeon-8369B",
                    f"{_TDP} (NVIDIA A10 datasheet); {_PWR}; {_STANDBY}"),
    "P100": CardType("P100", 250.0, 25.0, 12.5, "Intel-Xeon-E5-2682-v4",
                     f"{_TDP} (Tesla P100 PCIe); {_PWR} (SC20 poster rpost131); {_STANDBY}"),
    "V100M16": CardType("V100M16", 300.0, 30.0, 15.0, "Intel-Xeon-6326",
                        f"{_TDP} (Tesla V100 SXM2); {_PWR} (SC20 poster rpost131); {_STANDBY}"),
    "V100M32": CardType("V100M32", 300.0, 30.0, 15.0, "Intel-Xeon-6326",
                        f"{_TDP} (Tesla V100 SXM2); {_PWR} (SC20 poster rpost131); {_STANDBY}"),
    "A100": CardType("A100", 400.0, 50.0, 25.0, "Intel-Xeon-8369B",
                     f"{_TDP} (A100 SXM4); {_PWR} (Ampere whitepaper); {_STANDBY}"),
    "G1": CardType("G1", 250.0, 25.0, 12.5, "Intel-Xeon-8369B",
                   "undisclosed Alibaba GPU, not in the v2023 node list nor in PWR's model: "
                   "placeholder; " + _STANDBY),
    "G2": CardType("G2", 150.0, 30.0, 15.0, "Intel-Xeon-8369B",
                   "undisclosed Alibaba GPU: modelled as an A10, as PWR's current plugin "
                   "does; " + _STANDBY),
    "G3": CardType("G3", 400.0, 50.0, 25.0, "Intel-Xeon-8369B",
                   "undisclosed Alibaba GPU: modelled as an A100, as PWR's current plugin "
                   "does; " + _STANDBY),
}

_HOST_SOURCE = "PWR simulator table (Alibaba ECS instance families, Intel TDP)"

#: Host CPUs (per-socket watts, physical cores per socket).
BUILTIN_HOSTS: dict[str, HostType] = {
    "Intel-Xeon-8163": HostType("Intel-Xeon-8163", 165.0, 20.0, 24, _HOST_SOURCE),
    "Intel-Xeon-E5-2682-v4": HostType("Intel-Xeon-E5-2682-v4", 120.0, 15.0, 16, _HOST_SOURCE),
    "Intel-Xeon-6326": HostType("Intel-Xeon-6326", 185.0, 20.0, 16, _HOST_SOURCE),
    "Intel-Xeon-8369B": HostType("Intel-Xeon-8369B", 270.0, 20.0, 32, _HOST_SOURCE),
    "Intel-Xeon-8269CY": HostType("Intel-Xeon-8269CY", 205.0, 20.0, 26, _HOST_SOURCE),
}

#: The CPU of a node by its GPU model (``None``: a CPU-only node), as the PWR simulator maps it.
HOST_FOR_MODEL: dict[str | None, str] = {
    None: "Intel-Xeon-E5-2682-v4",
    **{name: card.host for name, card in BUILTIN_CARD_TYPES.items()},
}

#: Host power in low-power standby (suspend), per host: an assumption (no source).
HOST_SLEEP_W = 15.0


def card_type(model: str, table: Mapping[str, CardType]) -> CardType | None:
    """The power entry of GPU ``model``: the scenario's ``table`` first, then the built-in one
    (``None`` when neither has it)."""
    return table.get(model) or BUILTIN_CARD_TYPES.get(model)


def host_for(model: str | None, card_types: Mapping[str, CardType],
             hosts: Mapping[str, HostType]) -> HostType:
    """The host CPU of a node whose cards are ``model`` (``None``: a CPU-only node): the
    card type's ``host``, else the PWR simulator's mapping, else the CPU-only nodes' CPU."""
    entry = card_type(model, card_types) if model is not None else None
    name = (entry.host if entry is not None else None) or HOST_FOR_MODEL.get(model) \
        or HOST_FOR_MODEL[None]
    return hosts.get(name) or BUILTIN_HOSTS[name]


def sockets_of(cpu_milli: int, cores_per_socket: int) -> tuple[int, int]:
    """``(physical cores, sockets)`` of a host with ``cpu_milli`` milli-vCPUs (two vCPUs per
    core); ``cores_per_socket = 0`` makes the whole host one socket."""
    cores = max(1, math.ceil(cpu_milli / 2000))
    if cores_per_socket <= 0:
        return cores, 1
    return cores, max(1, math.ceil(cores / cores_per_socket))
