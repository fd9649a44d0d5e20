"""The ``[[channels]]`` tables: a channel's workload generator (:class:`ChannelConfig`), its
reader, the WGs it draws (:class:`WorkGroup`, :func:`generate_workload`) and the fixed point
of its instruction mix (:func:`quantised_mix`)."""

import functools
import math
import random
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from model.config import Fields
from model.dispatch.config.gpu import INSTRUCTION_CLASSES, GpuConfig

__all__ = ["DURATION_DISTRIBUTIONS", "MAX_BACK_TO_BACK", "MAX_WORK", "MIX_FRACTION_BITS",
           "ChannelConfig", "LaunchWorkload", "WorkGroup", "arrival_of", "generate_workload",
           "quantised_mix", "read_channel"]

DURATION_DISTRIBUTIONS = ("uniform", "exponential")
#: Largest work per wave (a 32-bit register).
MAX_WORK = (1 << 32) - 1
#: A channel's mix is quantised to this many fractional bits (1/256 instruction per cycle).
MIX_FRACTION_BITS = 8
#: Most WGs a back-to-back channel may queue at its start cycle (the model holds every WG).
MAX_BACK_TO_BACK = 1_000_000


@dataclass(frozen=True)
class ChannelConfig:
    """A channel's workload generator. Ranges are inclusive ``(min, max)``, drawn uniformly.

    ``arrival`` is ``"back_to_back"`` (all ``count`` WGs queued at cycle 0) or a rate in WG
    per cycle (Bernoulli arrivals, one draw per cycle). ``vgpr`` and ``sgpr`` are blocks per
    wave, ``lds`` blocks per WG, ``duration`` cycles from dispatch to completion, drawn by
    ``duration_distribution``: ``"uniform"`` over the range, or ``"exponential"`` with the
    range's midpoint as mean, rounded and clipped to the range (heavy-tailed kernels). ``mix`` is
    the instructions each wave executes per cycle, by :data:`INSTRUCTION_CLASSES`, at most one
    in all; the model uses it quantised to 1/256 (:func:`quantised_mix`). ``work`` is the
    wave-instructions each wave issues under the shared-issue execution model (an inclusive
    range, drawn uniformly after the other fields); ``None`` takes the WG's ``duration``: a
    wave alone on its PEU then runs ``duration`` cycles.
    """

    priority: int = 0
    arrival: str | float = "back_to_back"
    count: int = 100
    start: int = 0
    waves: tuple[int, int] = (4, 4)
    vgpr: tuple[int, int] = (8, 8)
    sgpr: tuple[int, int] = (4, 4)
    lds: tuple[int, int] = (0, 0)
    duration: tuple[int, int] = (200, 200)
    duration_distribution: str = "uniform"
    independent: float = 0.0
    mix: tuple[float, ...] = (0.3, 0.15, 0.05, 0.0, 0.0, 0.3, 0.2)
    work: tuple[int, int] | None = None


@dataclass(slots=True)
class WorkGroup:
    """One workgroup as submitted (or one of its per-wave sub-WGs after a split). Slotted
    (a run holds the WGs in flight; a converted trace makes them when read,
    :class:`LaunchWorkload`).

    ``duration`` is its run time under the fixed execution model; ``work`` the
    wave-instructions each of its waves issues under the shared-issue model (``None``: the
    duration). ``barrier``: it may not be dispatched while WGs dispatched before it from its
    channel still run (the first WG of a kernel launched on an in-order stream). ``grid``:
    the WGs of its kernel launch, where a trace says (``None``: not known; GPGPU-Sim's
    small-grid cap reads it, :mod:`model.dispatch.gpgpusim`).
    """

    id: int
    channel: int
    priority: int
    waves: int
    vgpr: int
    sgpr: int
    lds: int
    duration: int
    independent: bool
    arrival: int
    parent: int | None = None          # the split WG's id, for a sub-WG
    work: int | None = None
    barrier: bool = False
    grid: int | None = None
    # Filled in by the simulator:
    dispatched: int | None = None
    completed: int | None = None
    ap: int | None = None

    def submitted(self) -> "WorkGroup":
        """A copy as submitted: what the simulator fills in (``dispatched``, ``completed``,
        ``ap``) cleared. ``dataclasses.replace`` with those fields, at a third of its cost."""
        return WorkGroup(self.id, self.channel, self.priority, self.waves, self.vgpr, self.sgpr,
                         self.lds, self.duration, self.independent, self.arrival, self.parent,
                         self.work, self.barrier, self.grid)


def arrival_of(wg: WorkGroup) -> int:
    """A WG's arrival cycle (the key of a workload in arrival order)."""
    return wg.arrival


class LaunchWorkload(Sequence):
    """A workload of kernel launches whose WGs are made when read: per launch one template
    WG and a count, so a whole real trace of millions of WGs holds a few numbers per launch,
    not one object per WG. A launch's WGs are its template with consecutive ids, the first
    one a barrier when the launch waits for its stream (in order); every read makes fresh
    objects (changing one changes nothing here).

    Launches are appended in arrival order (:meth:`append`); ``len``, indexing, slicing and
    iteration behave as on the list of those WGs. ``channel_count`` is one more than the
    highest channel of any launch.
    """

    __slots__ = ("_firsts", "_launches", "channel_count")

    def __init__(self):
        self._firsts: list[int] = []        # the first WG id of every launch
        self._launches: list[tuple[WorkGroup, int, bool]] = []   # template, count, barrier
        self.channel_count = 0

    def append(self, template: WorkGroup, count: int, barrier: bool = False) -> None:
        """``count`` WGs like ``template`` (its id, barrier and simulator fields are set
        here; the ids continue from the last launch's), the first one a barrier when
        ``barrier``. Raises ``ValueError`` for a launch arriving before the last one."""
        if self._launches and template.arrival < self._launches[-1][0].arrival:
            raise ValueError(f"a launch arriving in cycle {template.arrival} follows one "
                             f"arriving in cycle {self._launches[-1][0].arrival}: launches "
                             f"are appended in arrival order")
        if count <= 0:
            return
        first = len(self)
        template = template.submitted()
        template.id, template.barrier = first, False
        self._firsts.append(first)
        self._launches.append((template, count, barrier))
        self.channel_count = max(self.channel_count, template.channel + 1)

    def launches(self):
        """``(first WG, count, barrier)`` per launch, in order: its first WG as made."""
        for template, count, barrier in self._launches:
            yield self._make(template, 0, barrier), count, barrier

    @staticmethod
    def _make(template: WorkGroup, offset: int, barrier: bool) -> WorkGroup:
        wg = template.submitted()
        wg.id += offset
        wg.barrier = barrier and offset == 0
        return wg

    def __len__(self) -> int:
        if not self._launches:
            return 0
        return self._firsts[-1] + self._launches[-1][1]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        length = len(self)
        if index < 0:
            index += length
        if not 0 <= index < length:
            raise IndexError(f"WG {index} of a workload of {length}")
        launch = bisect_right(self._firsts, index) - 1
        template, _, barrier = self._launches[launch]
        return self._make(template, index - self._firsts[launch], barrier)

    def __iter__(self):
        make = self._make
        for template, count, barrier in self._launches:
            for offset in range(count):
                yield make(template, offset, barrier)

    def __eq__(self, other) -> bool:
        if isinstance(other, LaunchWorkload):
            return self._launches == other._launches
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None


def quantised_mix(mix) -> tuple[int, ...]:
    """A channel's mix in the model's fixed point: instructions per cycle per wave in units of
    ``2**-MIX_FRACTION_BITS`` (1/256), by largest remainder: every class is rounded down, and
    the units left to reach the written total (rounded to nearest, ties up) go to the classes
    with the largest fractions (ties to the lower class). Each class is within 1/256 of what
    was written and the total is the written total rounded, so a mix that adds up to at most
    one instruction per cycle stays at most 256 (floats are read exactly, as fractions)."""
    return _quantised(tuple(mix))


@functools.lru_cache(maxsize=1024)
def _quantised(mix: tuple) -> tuple[int, ...]:
    """:func:`quantised_mix`, kept per mix (every simulator quantises its channels' mixes)."""
    scaled = [Fraction(value) * (1 << MIX_FRACTION_BITS) for value in mix]
    floors = [math.floor(value) for value in scaled]
    total = math.floor(sum(scaled) + Fraction(1, 2))
    order = sorted(range(len(scaled)), key=lambda i: (-(scaled[i] - floors[i]), i))
    for index in order[:total - sum(floors)]:
        floors[index] += 1
    return tuple(floors)


def read_channel(fields_: Fields, gpu: GpuConfig) -> ChannelConfig:
    """One ``[[channels]]`` table, each field optional, checked against ``gpu``."""
    base = ChannelConfig()
    if isinstance(fields_.peek("arrival"), str):
        arrival = fields_.str("arrival", choices=("back_to_back",))
    elif "arrival" in fields_:
        arrival = fields_.float("arrival", minimum=1e-9, maximum=1.0)
    else:
        arrival = fields_.str("arrival", base.arrival)
    channel = ChannelConfig(
        priority=fields_.int("priority", base.priority, minimum=0, maximum=gpu.priorities - 1),
        arrival=arrival,
        count=fields_.int("count", base.count, minimum=0),
        start=fields_.int("start", base.start, minimum=0),
        waves=fields_.int_range("waves", base.waves, minimum=1, maximum=gpu.peus * gpu.wave_slots),
        vgpr=fields_.int_range("vgpr", base.vgpr, minimum=0),
        sgpr=fields_.int_range("sgpr", base.sgpr, minimum=0),
        lds=fields_.int_range("lds", base.lds, minimum=0),
        duration=fields_.int_range("duration", base.duration, minimum=1),
        duration_distribution=fields_.str("duration_distribution",
                                          base.duration_distribution,
                                          choices=DURATION_DISTRIBUTIONS),
        independent=fields_.float("independent", base.independent, minimum=0, maximum=1),
        mix=fields_.float_list("mix", base.mix, length=len(INSTRUCTION_CLASSES), minimum=0),
        work=(fields_.int_range("work", minimum=1, maximum=MAX_WORK) if "work" in fields_
              else None),
    )
    if arrival == "back_to_back" and channel.count > MAX_BACK_TO_BACK:
        raise fields_.error("count", f"must be at most {MAX_BACK_TO_BACK:,} for a back-to-back "
                                     f"channel (the model holds every queued WG), not "
                                     f"{channel.count:,}; for an endless backlog give a rate, "
                                     f"e.g. arrival = 1.0, which the run length bounds")
    total = sum(quantised_mix(channel.mix))
    if total > 1 << MIX_FRACTION_BITS:
        raise fields_.error("mix", f"must add up to at most 1 instruction per cycle per wave, "
                                   f"not {sum(channel.mix):g} ({total}/256 in the model's "
                                   f"1/256 steps)")
    fields_.done()
    return channel


def _duration(channel: ChannelConfig, rng: random.Random) -> int:
    low, high = channel.duration
    if channel.duration_distribution == "uniform":
        return rng.randint(low, high)
    mean = (low + high) / 2
    return min(high, max(low, round(rng.expovariate(1 / mean))))


def generate_workload(channels, cycles: int, seed: int) -> list[WorkGroup]:
    """Draw every channel's WGs, each channel from its own ``random.Random`` seeded with
    ``seed`` and the channel index (so adding a channel leaves the others' draws unchanged).

    Rate channels stop generating at ``cycles`` (one Bernoulli draw per cycle, so the work is
    bounded by the run length whatever the rate); back-to-back channels queue all ``count``
    WGs at their start cycle. Ids are assigned in arrival order (channel order for equal
    cycles), so they are the global submission order.
    """
    drawn = []
    for index, channel in enumerate(channels):
        rng = random.Random(f"{seed}/{index}")
        cycle = channel.start
        for _ in range(channel.count):
            if channel.arrival != "back_to_back":
                # Bernoulli arrivals: the gap to the next success is geometric.
                while cycle < cycles and rng.random() >= channel.arrival:
                    cycle += 1
                if cycle >= cycles:
                    break
            wg = WorkGroup(
                id=-1, channel=index, priority=channel.priority,
                waves=rng.randint(*channel.waves), vgpr=rng.randint(*channel.vgpr),
                sgpr=rng.randint(*channel.sgpr), lds=rng.randint(*channel.lds),
                duration=_duration(channel, rng),
                independent=rng.random() < channel.independent, arrival=cycle)
            if channel.work is not None:
                # Drawn last, and only when given, so that the other draws are unchanged.
                wg.work = rng.randint(*channel.work)
            drawn.append((cycle, index, wg))
            if channel.arrival != "back_to_back":
                cycle += 1
    drawn.sort(key=lambda item: (item[0], item[1]))
    workload = [wg for _, _, wg in drawn]
    for number, wg in enumerate(workload):
        wg.id = number
    return workload
