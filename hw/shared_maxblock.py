"""One largest-free-block unit time-multiplexed over several resource types (seed 002, emb. 7).

The golden model is :class:`model.maxblock.SharedMaxFreeBlockModel`; the schedule and its
checks are :class:`model.maxblock.SharedSchedule`.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.maxblock import lengthen, lowest_end, named, run_doubling, scan_down
from model.maxblock import SharedSchedule, check_free_level

__all__ = ["SharedMaxFreeBlock", "port_layouts"]


def port_layouts(schedule: SharedSchedule, *, exact: bool) -> dict[str, data.StructLayout]:
    """The layouts of the ports of :class:`SharedMaxFreeBlock`: one field per resource type."""
    types = schedule.types
    layouts = {
        "status": data.StructLayout(types),
        "length": data.StructLayout({name: range(size + 1) for name, size in types.items()}),
        "valid": data.StructLayout(dict.fromkeys(types, 1)),
    }
    if exact:
        layouts["start"] = data.StructLayout({name: range(max(size, 2))
                                              for name, size in types.items()})
    return layouts


class SharedMaxFreeBlock(wiring.Component):
    """One ``width``-bit unit serving every resource type of a static schedule in turn.

    In each clock the unit serves one period of the schedule (period ``t mod C`` in clock
    ``t``): the status words of that period's types are packed side by side from bit 0, the
    bits left over read as occupied, and each type's longest free run is found at once. A
    run never crosses from one type's field into the next: the seed's masks ``m(i)`` force
    the vacated top bits of every field to "occupied" in each shifted copy; here the same
    effect comes from one boundary word per period that breaks the running AND at the first
    bit of every field but the first. At the edge the served types' results are registered
    and their ``valid`` strobes rise for one clock. The schedule then repeats.

    Two circuits can fill the unit: the seed's (``exact=False``): the running AND of
    embodiment 4 over the packed word, OR-reduced per field segment, and a downward scan
    per type -- about ``width²`` gates shared by all types; or the exact O(n log n) circuit of
    :class:`hw.maxblock.ExactMaxFreeBlock` (``exact=True``): run-length doubling over the
    packed word (shared), and binary lifting per type, which also gives each type's
    ``start``.

    Parameters
    ----------
    schedule : SharedSchedule
        The periods and the types each packs; defaults to the seed's example (width 128;
        period 1: a 128-block type; period 2: a 64-block and a 48-block type).
    free_level : int
        1 when a free block reads 1, 0 when it reads 0.
    exact : bool
        Use the exact circuit (and provide ``start``).

    Attributes
    ----------
    status : In(StructLayout({type: size}))
        One status word per resource type (bit ``i`` = block ``i``), read in its period.
    length : Out(StructLayout({type: range(size + 1)}))
        Each type's longest free run, registered at the end of its period and held until its
        next period.
    valid : Out(StructLayout({type: 1}))
        High for the one clock after a type's period, when its ``length`` is fresh.
    start : Out(StructLayout({type: range(max(size, 2))}))
        With ``exact``: the lowest start of a longest run (0 when nothing is free).

    After reset the period counter is 0 and every ``length``, ``start`` and ``valid`` reads 0.
    Latency: a type's result appears in the clock after its period, so it is at most ``C``
    clocks old.
    """

    def __init__(self, schedule=None, *, free_level=1, exact=False):
        if schedule is None:
            schedule = SharedSchedule()
        if not isinstance(schedule, SharedSchedule):
            raise TypeError(f"Schedule must be a SharedSchedule, not {schedule!r}")
        self._schedule = schedule
        self._free_level = check_free_level(free_level)
        self._exact = bool(exact)
        super().__init__({port: (In if port == "status" else Out)(layout)
                          for port, layout in port_layouts(schedule, exact=self._exact).items()})

    @property
    def schedule(self) -> SharedSchedule:
        return self._schedule

    @property
    def free_level(self) -> int:
        return self._free_level

    @property
    def exact(self) -> bool:
        return self._exact

    def elaborate(self, platform):
        m = Module()
        schedule, width = self._schedule, self._schedule.width
        periods = schedule.periods

        # The period counter and, per period, the packed word and its field boundaries.
        period = Signal(range(len(periods)), name="period")
        m.d.sync += period.eq(Mux(period == len(periods) - 1, 0, period + 1))
        # Continuous multiplexers, not a `Switch`: Icarus never runs a Verilog `always @*` block
        # whose inputs keep their initial values, so a case statement on a counter that sits
        # at 0 through reset would leave its outputs X in the first period.
        word, breaks = Const(0, width), Const(0, width)
        for index, types in enumerate(periods):
            unused = width - sum(size for _, size in types)
            fill = Const(0 if self._free_level else (1 << unused) - 1, unused)
            boundary, offset = 0, 0
            for _, size in types:
                if offset:
                    boundary |= 1 << offset
                offset += size
            selected = period == index
            word = Mux(selected, Cat(*(self.status[name] for name, _ in types), fill), word)
            breaks = Mux(selected, boundary, breaks)
        word = named(m, "packed", word)
        breaks = named(m, "breaks", breaks)
        free = word if self._free_level else ~word

        if self._exact:
            results = self._exact_results(m, free, breaks)
        else:
            results = self._seed_results(m, free, breaks)

        # Register the served types' results at the end of their period.
        for index, types in enumerate(periods):
            for name, _ in types:
                m.d.sync += self.valid[name].eq(period == index)
                with m.If(period == index):
                    for port, value in results[name].items():
                        m.d.sync += getattr(self, port)[name].eq(value)
        return m

    def _seed_results(self, m, free, breaks):
        # The seed's chain SA_i = SA_(i-1) AND S_i over the packed word, where a field's first
        # bit never continues a run from the field below it. The OR of each SA_i is taken per
        # segment (the pieces between all boundaries of all periods), and a type's SAR_i is
        # the OR of the segments of its field.
        schedule, width = self._schedule, self._schedule.width
        edges = {0}
        for types in schedule.periods:
            offset = 0
            for _, size in types:
                edges |= {offset, offset + size}
                offset += size
        edges = sorted(edges)
        continues = free & ~breaks
        windows = [free]
        for i in range(1, max(schedule.types.values())):
            windows.append(named(m, f"sa{i}", windows[-1][:width - i] & continues[i:]))
        results = {}
        for name, size in schedule.types.items():
            _, offset = schedule.placement(name)
            flags = []
            for i in range(size):
                pieces = [windows[i][low:min(high, width - i)]
                          for low, high in zip(edges, edges[1:], strict=False)
                          if offset <= low < offset + size - i]
                flags.append((Cat(*(piece.any() for piece in pieces)).any(), i + 1))
            results[name] = {"length": scan_down(flags)}
        return results

    def _exact_results(self, m, free, breaks):
        # Run-length doubling over the packed word, broken at the field boundaries, then the
        # binary lifting of ExactMaxFreeBlock over each type's slice of it.
        schedule = self._schedule
        runs = run_doubling(m, free, breaks=breaks)
        results = {}
        for name, size in schedule.types.items():
            _, offset = schedule.placement(name)
            ends = Const((1 << (size + 1)) - 1, size + 1)
            found = []
            for b in reversed(range(size.bit_length())):
                step = 1 << b
                here, longer = lengthen(m, ends, runs[b][offset:offset + size - step + 1],
                                        step, f"{name}{step}")
                found.append(here)
                ends = named(m, f"{name}_ends{step}", longer)
            length = named(m, f"{name}_length", Cat(*reversed(found)))
            results[name] = {"length": length, "start": lowest_end(ends) - length}
        return results

