"""Verilog of a :class:`hw.dispatch.Dispatcher`, with every distinct free-block circuit once.

A dispatcher holds many copies of the same free-block circuit (one per resource instance of
the view, ``2Q + 1`` in the allocator); Amaranth would elaborate and emit each copy as its own
module (64 copies of the 128-block exact tree are 44 MiB of Verilog and minutes of
elaboration). :class:`BlockLibrary` replaces every copy by an instance of one module per
distinct circuit, generated once, with the same ports: the design is the same, the text is
the size of its distinct parts, and every simulator and synthesis tool reads the hierarchy.

:class:`DispatchShape` names a build: the GPU, the structural fields of the policy (the
circuit, its group size, latency and shared-unit width, the history length the registers
hold), the channel count and the build options. Everything else is set at run time through
the configuration port, so many runs share one build.
"""

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from importlib import metadata
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from hw.dispatch import Dispatcher
from hw.dispatch.params import MAX_WEIGHT_BITS
from hw.flow.catalog import BlockConfig, SharedConfig
from hw.flow.verilog_files import netlist, simulation_verilog, verilog_of_netlist
from hw.maxblock import (
    ExactMaxFreeBlock,
    FirstFit,
    GroupedMaxFreeBlock,
    MaxFreeBlock,
    SampledMaxFreeBlock,
)
from hw.shared_maxblock import SharedMaxFreeBlock
from model.dispatch.config import PRESETS, ChannelConfig, GpuConfig, PolicyConfig, with_policy

__all__ = ["BlockLibrary", "Design", "DispatchShape", "block_name", "dispatcher_verilog"]

ROOT = Path(__file__).resolve().parents[2]
#: Sources whose text decides the generated Verilog (part of every cache key).
#: (``hw/maxblock.py`` or, once split, the package ``hw/maxblock/``.)
SOURCES = sorted([*(ROOT / "hw" / "dispatch").glob("*.py"),
                  *(ROOT / "hw").glob("maxblock.py"), *(ROOT / "hw" / "maxblock").glob("*.py"),
                  ROOT / "hw" / "shared_maxblock.py", ROOT / "hw" / "flow" / "dispatch_build.py",
                  ROOT / "hw" / "flow" / "verilog_files.py", ROOT / "hw" / "flow" / "catalog.py"])


def block_name(component) -> str:
    """The Verilog module name of a free-block component (unique per parameter set)."""
    if isinstance(component, SharedMaxFreeBlock):
        return SharedConfig(component.schedule, component.free_level, component.exact,
                            component.pipeline).name
    kinds = {ExactMaxFreeBlock: "exact", MaxFreeBlock: "full", GroupedMaxFreeBlock: "grouped",
             SampledMaxFreeBlock: "sampled", FirstFit: "first_fit"}
    kind = kinds[type(component)]
    return BlockConfig(kind, component.n, component.free_level, component.latency,
                       groups=getattr(component, "groups", None) if kind == "grouped" else None,
                       samples=component.samples if kind == "sampled" else None).name


class _BlockInstance(wiring.Component):
    """An instance of a library module with the ports of the component it stands for."""

    def __init__(self, module: str, component, clocked: bool):
        self._module, self._clocked = module, clocked
        super().__init__(component.signature)

    def elaborate(self, platform):
        m = Module()
        ports = {}
        for path, member, value in self.signature.flatten(self):
            name = "__".join(map(str, path))
            ports[("i_" if member.flow == In else "o_") + name] = Value.cast(value)
        if self._clocked:
            ports.update(i_clk=ClockSignal(), i_rst=ResetSignal())
        m.submodules.block = Instance(self._module, **ports)
        return m


def _source_digest() -> str:
    digest = hashlib.sha256(metadata.version("amaranth").encode())
    for path in SOURCES:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class BlockLibrary:
    """The distinct free-block circuits of a design, each emitted once.

    ``wrap`` is the ``wrap`` argument of :class:`hw.dispatch.Dispatcher`: it records the
    component's module and returns an instance of it. ``cache`` (a directory) keeps each
    module's Verilog between runs, keyed by the sources that generate it.
    """

    def __init__(self, cache: Path | None = None):
        self.modules: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        self.roles: dict[tuple[str, str], int] = {}      # (module, role) -> instances
        self._text: dict[str, str] = {}
        self._cache = cache

    def _verilog(self, name: str) -> str:
        if name not in self._text:
            path = (self._cache / f"{name}.{_source_digest()}.v") if self._cache else None
            if path is not None and path.exists():
                text = path.read_text()
            else:
                text = verilog.convert(self.modules[name], name=name, emit_src=False,
                                       strip_internal_attrs=True)
                if path is not None:
                    _write_atomically(path, text)
            self._text[name] = text
        return self._text[name]

    def wrap(self, component, role: str = ""):
        # The component itself is only elaborated once, for its module; the others are
        # replaced by instances (so Amaranth must not warn that they were never used).
        component._MustUse__silence = True
        name = block_name(component)
        self.modules.setdefault(name, component)
        self.counts[name] = self.counts.get(name, 0) + 1
        self.roles[(name, role)] = self.roles.get((name, role), 0) + 1
        clocked = re.search(r"\binput\s+clk\b", self._verilog(name)) is not None
        return _BlockInstance(name, component, clocked)

    def verilog(self) -> str:
        """Every module of the library."""
        return "\n".join(self._verilog(name) for name in self.modules)

    def netlists(self) -> list[str]:
        """The RTLIL of every module of the library (for :func:`simulation_verilog`)."""
        return [netlist(self.modules[name], name) for name in self.modules]


@dataclass(frozen=True)
class DispatchShape:
    """What one dispatcher build fixes; JSON-serialisable (:meth:`to_json`)."""

    gpu: GpuConfig
    policy: PolicyConfig
    channels: tuple
    queue_depth: int = 0
    id_bits: int = 16
    weight_bits: int = 0
    #: In-order barriers built (:class:`hw.dispatch.params.DispatcherParams`); left out of
    #: the JSON (and so of the name) when off, so that a build without them is unchanged.
    barriers: bool = False
    #: How the view is computed (:attr:`hw.dispatch.DispatcherParams.view_refresh`); left out
    #: of the JSON (and the name) when ``"every"``, so that such a build is unchanged.
    view_refresh: str = "every"

    @classmethod
    def of(cls, gpu: GpuConfig, policy: PolicyConfig, channels, **options) -> "DispatchShape":
        """The build that can run ``policy`` on ``gpu`` with ``channels`` (a count or the
        channels): only what the hardware fixes is kept, so that every policy with the same
        circuit shares the build: the GPU (embodiment 9's weights only as a register width),
        the circuit, its group size, latency and shared-unit width, a history of at least
        1024 cycles, the channel count. The rest is written through the configuration port."""
        structural = {name: getattr(policy, name)
                      for name in ("circuit", "group_size", "circuit_latency", "shared_width",
                                   "combined_scale", "decision_pipeline", "score_latency",
                                   "score_refresh")}
        if policy.decision_pipeline:
            # A pipelined build scales the combined score by every AP (whatever the AP
            # choice this policy makes: the register can select the combined score).
            structural["combined_scale"] = "all"
        history = max(1024, policy.history_cycles)
        policy = with_policy(PRESETS["seed"], history="ema", history_cycles=history,
                             windows=PRESETS["seed"].windows[:gpu.priorities], **structural)
        if not isinstance(channels, int):
            channels = len(tuple(channels))
        weights = gpu.resource_weight_values()
        defaults = GpuConfig(**{**vars(gpu), "resource_weights": None}).resource_weight_values()
        needed = max(defaults + weights).bit_length()
        if needed > MAX_WEIGHT_BITS and "weight_bits" not in options:
            # The registers reset to the default weights, whatever weights the file gives.
            raise ValueError(
                f"gpu.resource_weights: embodiment 9's default weights L / C_h of this GPU, "
                f"{list(defaults)}, need {needed} bits, and the RTL's AP weight registers, "
                f"which reset to them whatever weights are given, hold at most "
                f"{MAX_WEIGHT_BITS}: choose vgpr, sgpr, lds and wave_slots whose AP "
                f"capacities have a smaller least common multiple")
        options.setdefault("weight_bits", needed)
        gpu = replace(gpu, resource_weights=None)
        return cls(gpu, policy, tuple(ChannelConfig() for _ in range(channels)), **options)

    def dispatcher(self, wrap=None) -> Dispatcher:
        options = {"queue_depth": self.queue_depth, "id_bits": self.id_bits,
                   "weight_bits": self.weight_bits, "barriers": self.barriers,
                   "view_refresh": self.view_refresh}
        if wrap is not None:
            options["wrap"] = wrap
        return Dispatcher(self.gpu, self.policy, self.channels, **options)

    @cached_property
    def params(self):
        """The :class:`hw.dispatch.DispatcherParams` of the build (nothing is elaborated)."""
        from hw.dispatch import DispatcherParams
        return DispatcherParams.build(self.gpu, self.policy, self.channels,
                                      queue_depth=self.queue_depth, id_bits=self.id_bits,
                                      weight_bits=self.weight_bits, barriers=self.barriers,
                                      view_refresh=self.view_refresh)

    def to_json(self) -> str:
        fields = asdict(self)
        fields["channels"] = [asdict(c) for c in self.channels]
        if not self.barriers:
            del fields["barriers"]
        if self.view_refresh == "every":
            del fields["view_refresh"]
        if self.policy.score_refresh == "every":
            del fields["policy"]["score_refresh"]
        return json.dumps(fields, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "DispatchShape":
        fields = json.loads(text)
        gpu = fields.pop("gpu")
        for key in ("resource_weights", "instruction_weights"):
            if gpu[key] is not None:
                gpu[key] = tuple(gpu[key])
        policy = fields.pop("policy")
        policy["windows"] = tuple(policy["windows"])
        channels = tuple(ChannelConfig(**{k: tuple(v) if isinstance(v, list) else v
                                          for k, v in c.items()})
                         for c in fields.pop("channels"))
        return cls(GpuConfig(**gpu), PolicyConfig(**policy), channels, **fields)

    @property
    def name(self) -> str:
        """The Verilog module name of this build."""
        digest = hashlib.sha256(self.to_json().encode()).hexdigest()[:10]
        g = self.gpu
        return (f"dispatcher_{g.aps}x{g.peus}x{len(self.channels)}_{self.policy.circuit}"
                f"_l{self.policy.circuit_latency}_{digest}")


def dispatcher_verilog(shape: DispatchShape, cache: Path | None = None, *,
                       simulation: bool = False) -> str:
    """The Verilog of ``shape``'s dispatcher (module :attr:`DispatchShape.name`) and of every
    distinct free-block circuit in it; ``cache`` keeps the text between runs.

    ``simulation`` gives the same design as Icarus co-simulates it
    (:func:`hw.flow.verilog_files.simulation_verilog`) instead of the text users get. One
    elaboration yields both, and the cache keeps both.
    """
    key = hashlib.sha256((shape.to_json() + _source_digest()).encode()).hexdigest()[:16]
    paths = ((cache / f"{shape.name}.{key}.v", cache / f"{shape.name}.{key}.sim.v")
             if cache else None)
    if paths is not None and paths[simulation].exists():
        return paths[simulation].read_text()
    design = Design(shape.dispatcher, shape.name, cache)
    texts = (design.verilog(), design.simulation_verilog())
    if paths is not None:
        for path, text in zip(paths, texts, strict=True):
            _write_atomically(path, text)
    return texts[simulation]


class Design:
    """The design ``build(wrap)`` returns, as module ``name``, elaborated once, its free-block
    circuits in a :class:`BlockLibrary` (``cache`` keeps their Verilog)."""

    def __init__(self, build, name: str, cache: Path | None = None):
        self.name = name
        self.library = BlockLibrary(cache)
        self.netlist = netlist(build(self.library.wrap), name)

    def verilog(self) -> str:
        """The text users get."""
        # No internal attributes, above all no ``top``: read with a user's design, Yosys must
        # keep the user's top (it took the dispatcher or a free-block module for it).
        return verilog_of_netlist(self.netlist) + "\n" + self.library.verilog()

    def simulation_verilog(self) -> str:
        """The same design as Icarus co-simulates it
        (:func:`hw.flow.verilog_files.simulation_verilog`)."""
        return simulation_verilog([self.netlist, *self.library.netlists()], self.name)


def _write_atomically(path: Path, text: str) -> None:
    # Parallel test workers may generate the same file: each writes its own temporary file
    # and renames it, so a reader never sees a partial one.
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    temporary.replace(path)



