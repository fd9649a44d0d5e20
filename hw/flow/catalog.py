"""Named parameter sets of the RTL blocks, each paired with its golden model.

One :class:`BlockConfig` names a free-block circuit and its parameters, :class:`SharedConfig`
a shared unit (:class:`hw.arbiter.ArbiterConfig` does the same for the arbiter); each can
build the Amaranth component, give the bit-exact model, name the generated Verilog module and
travel to a cocotb bench as JSON. :data:`VERILOG_DEFAULTS` is what ``make verilog`` emits
without parameters (every block) and :data:`REGRESSION` is the covering set of parameters
the cocotb regression runs.
"""

import json
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial

from hw.arbiter import ArbiterConfig
from hw.maxblock import (
    ExactMaxFreeBlock,
    FirstFit,
    GroupedMaxFreeBlock,
    MaxFreeBlock,
    SampledMaxFreeBlock,
)
from hw.shared_maxblock import SharedMaxFreeBlock, port_layouts
from model.maxblock import (
    SharedMaxFreeBlockModel,
    SharedSchedule,
    check_block_count,
    check_exact_latency,
    check_first_fit_latency,
    check_free_level,
    check_groups,
    check_latency,
    check_samples,
    default_samples,
    exact_free_block,
    first_fit,
    grouped_max_free_run,
    max_free_run,
    sampled_max_free_run,
)

__all__ = ["KINDS", "REGRESSION", "SHARED_REGRESSION", "VERILOG_DEFAULTS", "ArbiterConfig",
           "BlockConfig", "SharedConfig"]

#: Block kinds and the component class of each.
KINDS = {
    "full": MaxFreeBlock,
    "grouped": GroupedMaxFreeBlock,
    "sampled": SampledMaxFreeBlock,
    "exact": ExactMaxFreeBlock,
    "first_fit": FirstFit,
}


@dataclass(frozen=True)
class BlockConfig:
    """One max-free-block circuit and its parameters.

    ``groups`` is given for (and only for) the grouped kind, ``samples`` for the sampled kind.
    """

    kind: str
    n: int
    free_level: int = 1
    latency: int = 0
    groups: int | None = None
    samples: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Block kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        check_block_count(self.n)
        check_free_level(self.free_level)
        if self.kind == "exact":
            check_exact_latency(self.n, self.latency)
        elif self.kind == "first_fit":
            check_first_fit_latency(self.latency)
        else:
            check_latency(self.latency)
        if (self.groups is not None) != (self.kind == "grouped"):
            raise ValueError("Groups are given for the grouped kind, and only for it")
        if (self.samples is not None) != (self.kind == "sampled"):
            raise ValueError("Samples are given for the sampled kind, and only for it")
        if self.groups is not None:
            check_groups(self.n, self.groups)
        if self.samples is not None:
            object.__setattr__(self, "samples", check_samples(self.n, self.samples))

    @property
    def sample_label(self) -> str:
        """A short name for the sample set: ``default``, ``noprimes``, ``pow2`` or a checksum."""
        if list(self.samples) == default_samples(self.n):
            return "default"
        if list(self.samples) == default_samples(self.n, exclude_primes=True):
            return "noprimes"
        if all((k + 1) & k == 0 for k in self.samples):
            return "pow2"
        return f"w{len(self.samples)}x{zlib.crc32(repr(self.samples).encode()):08x}"

    @property
    def name(self) -> str:
        """The Verilog module name, unique per parameter set."""
        prefix = {"full": "maxfreeblock", "first_fit": "firstfit"}.get(
            self.kind, f"{self.kind}maxfreeblock")
        parts = [prefix, f"n{self.n}"]
        if self.groups is not None:
            parts.append(f"g{self.groups}")
        if self.samples is not None:
            parts.append(f"s{self.sample_label}")
        parts += [f"free{self.free_level}", f"lat{self.latency}"]
        return "_".join(parts)

    @property
    def inputs(self) -> tuple[str, ...]:
        """The input ports, in the order :meth:`reference` takes them."""
        return ("status", "request") if self.kind in ("exact", "first_fit") else ("status",)

    @property
    def outputs(self) -> tuple[str, ...]:
        """The output ports, in the order :meth:`reference` returns them."""
        if self.kind == "first_fit":
            return ("fit", "fit_start")
        return ("length", "start", "fit", "fit_start") if self.kind == "exact" else ("length",)

    def component(self):
        """A new Amaranth component for these parameters."""
        extra = {"full": (), "grouped": (self.groups,), "sampled": (self.samples,),
                 "exact": (), "first_fit": ()}[self.kind]
        return KINDS[self.kind](self.n, *extra, free_level=self.free_level,
                                latency=self.latency)

    def reference(self) -> Callable[..., tuple[int, ...]]:
        """The golden model, bit-exact to :meth:`component`: the values of :attr:`inputs` in,
        the values of :attr:`outputs` out (as a tuple)."""
        n, free_level = self.n, self.free_level
        if self.kind == "exact":
            def exact(status, request):
                result = exact_free_block(status, request, n, free_level=free_level)
                return result.length, result.start, result.fit, result.fit_start
            return exact
        if self.kind == "first_fit":
            def fit_only(status, request):
                start = first_fit(status, n, request, free_level=free_level)
                return int(start is not None), start or 0
            return fit_only
        if self.kind == "full":
            length = partial(max_free_run, n=n, free_level=free_level)
        elif self.kind == "grouped":
            length = partial(grouped_max_free_run, n=n, groups=self.groups,
                             free_level=free_level)
        else:
            length = partial(sampled_max_free_run, n=n, samples=self.samples,
                             free_level=free_level)
        return lambda status: (length(status),)

    @property
    def stalls(self) -> bool:
        """Whether the block has the stall interface (``valid``, ``enable``,
        ``result_valid``): every block with a latency of one clock or more."""
        return self.latency > 0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "BlockConfig":
        fields = json.loads(text)
        if fields.get("samples") is not None:
            fields["samples"] = tuple(fields["samples"])
        return cls(**fields)


@dataclass(frozen=True)
class SharedConfig:
    """One time-multiplexed unit (embodiment 7): its schedule, encoding and circuit."""

    schedule: SharedSchedule = SharedSchedule()
    free_level: int = 1
    exact: bool = False
    pipeline: int = 0

    def __post_init__(self):
        if not isinstance(self.schedule, SharedSchedule):
            raise TypeError(f"Schedule must be a SharedSchedule, not {self.schedule!r}")
        check_free_level(self.free_level)

    @property
    def name(self) -> str:
        """The Verilog module name, unique per parameter set."""
        digest = zlib.crc32(repr((self.schedule.periods, self.schedule.width)).encode())
        return (f"sharedmaxfreeblock_w{self.schedule.width}_p{len(self.schedule.periods)}"
                f"_x{digest:08x}_free{self.free_level}_{'exact' if self.exact else 'seed'}"
                + (f"_pipe{self.pipeline}" if self.pipeline else ""))

    def component(self) -> SharedMaxFreeBlock:
        return SharedMaxFreeBlock(self.schedule, free_level=self.free_level, exact=self.exact,
                                  pipeline=self.pipeline)

    def model(self) -> SharedMaxFreeBlockModel:
        """A fresh cycle-exact model, bit-exact to :meth:`component`."""
        return SharedMaxFreeBlockModel(self.schedule, free_level=self.free_level,
                                       exact=self.exact, pipeline=self.pipeline)

    def layouts(self) -> dict:
        """The layouts of the component's structured ports (see
        :func:`hw.shared_maxblock.port_layouts`)."""
        return port_layouts(self.schedule, exact=self.exact)

    def to_json(self) -> str:
        return json.dumps({"periods": self.schedule.periods, "width": self.schedule.width,
                           "free_level": self.free_level, "exact": self.exact,
                           "pipeline": self.pipeline})

    @classmethod
    def from_json(cls, text: str) -> "SharedConfig":
        fields = json.loads(text)
        periods = tuple(tuple((name, size) for name, size in period)
                        for period in fields["periods"])
        return cls(SharedSchedule(periods, fields["width"]), fields["free_level"],
                   fields["exact"], fields.get("pipeline", 0))


def _full(n, free_level, latency):
    return BlockConfig("full", n, free_level, latency)


def _grouped(n, groups, free_level, latency):
    return BlockConfig("grouped", n, free_level, latency, groups=groups)


def _sampled(n, samples, free_level, latency):
    return BlockConfig("sampled", n, free_level, latency, samples=tuple(samples))


def _exact(n, free_level, latency):
    return BlockConfig("exact", n, free_level, latency)


#: What ``make verilog`` writes without parameters: every block, at the sizes the seed
#: discusses -- each free-block variant, the shared unit with either circuit, the arbiter.
VERILOG_DEFAULTS = (
    _full(16, 1, 1),
    _full(128, 1, 3),
    _grouped(128, 32, 1, 1),
    _sampled(128, default_samples(128), 1, 1),
    _exact(128, 1, 1),
    _exact(128, 1, ExactMaxFreeBlock.max_latency(128)),
    SharedConfig(SharedSchedule(), 1, False),
    SharedConfig(SharedSchedule(), 1, True),
    ArbiterConfig(),
)

#: The cocotb regression, a covering subset of the parameter space: every value of every
#: parameter appears, and n = 128 (the widest) appears with every variant and, across them,
#: with both free levels and every latency.
REGRESSION = (
    _full(8, 1, 0),                                     # exhaustive
    _full(16, 0, 1),
    _full(32, 1, 3),
    _full(64, 0, 0),
    _full(128, 1, 1),
    _full(128, 0, 3),
    _grouped(8, 2, 0, 3),                               # exhaustive
    _grouped(12, 3, 1, 1),                              # exhaustive, groups of 4
    _grouped(32, 8, 0, 0),
    _grouped(128, 32, 1, 3),                            # the seed's groups of 4
    _grouped(128, 16, 0, 1),
    _grouped(128, 64, 1, 0),
    _sampled(8, (0, 1, 3, 7), 1, 0),                    # exhaustive, power-of-two steps
    _sampled(16, default_samples(16), 0, 3),
    _sampled(64, default_samples(64, exclude_primes=True), 1, 1),
    _sampled(128, default_samples(128), 0, 1),
    _sampled(128, default_samples(128, exclude_primes=True), 1, 3),
    _sampled(128, (0, 1, 3, 7, 15, 31, 63, 127), 1, 0),
    _exact(8, 0, 0),                                    # exhaustive, every request
    _exact(12, 1, 4),                                   # exhaustive, every request
    _exact(16, 1, 1),
    _exact(40, 0, 2),                                   # 32 + 8 blocks: a join, pipelined
    _exact(64, 1, 9),                                   # the deepest pipeline for 64
    _exact(128, 0, 0),
    _exact(128, 1, 5),
    _exact(128, 0, 11),                                 # the deepest pipeline for 128
)

#: The cocotb regression of the shared unit: the seed's schedule with both circuits and both
#: free levels, a narrow three-period schedule with a partly unused period, and each
#: circuit's deepest pipeline (embodiment 7 as the dispatcher builds it at latency 2).
_NARROW = SharedSchedule(((("a", 5), ("b", 3)), (("c", 8),), (("d", 1), ("e", 2), ("f", 4))),
                         width=8)
SHARED_REGRESSION = (
    SharedConfig(SharedSchedule(), 1, False),
    SharedConfig(SharedSchedule(), 0, True),
    SharedConfig(SharedSchedule(), 1, True),
    SharedConfig(_NARROW, 0, False),
    SharedConfig(_NARROW, 1, True),
    SharedConfig(_NARROW, 0, False, 1),
    SharedConfig(SharedSchedule(), 1, True, 2),
)
