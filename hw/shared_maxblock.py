"""One largest-free-block unit time-multiplexed over several resource types (seed 002, emb. 7).

The golden model is :class:`model.maxblock.SharedMaxFreeBlockModel`; the schedule and its
checks are :class:`model.maxblock.SharedSchedule`.
"""

from typing import NamedTuple

from amaranth.hdl import Cat, Const, Module, Mux, Shape, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.maxblock import (
    _LEAF,
    _at_least,
    _build_pipeline,
    _equals,
    _join_demands,
    _join_piece,
    _reset_less_outputs,
    _tree_pieces,
    named,
    scan_down,
)
from hw.maxblock.contract import _data_register
from model.maxblock import SharedSchedule, aligned_blocks, check_free_level

__all__ = ["SharedMaxFreeBlock", "exact_deepest_pipeline", "port_layouts"]


def port_layouts(schedule: SharedSchedule, *, exact: bool) -> dict[str, data.StructLayout]:
    """The layouts of the structured ports of :class:`SharedMaxFreeBlock`, one field per
    resource type, in port order (inputs first)."""
    types = schedule.types
    sizes = {name: range(size + 1) for name, size in types.items()}
    addresses = {name: range(max(size, 2)) for name, size in types.items()}
    layouts = {"status": data.StructLayout(types)}
    if exact:
        layouts["request"] = data.StructLayout(sizes)
    layouts["length"] = data.StructLayout(sizes)
    if exact:
        layouts["start"] = data.StructLayout(addresses)
        layouts["fit"] = data.StructLayout(dict.fromkeys(types, 1))
        layouts["fit_start"] = data.StructLayout(addresses)
    layouts["result_valid"] = data.StructLayout(dict.fromkeys(types, 1))
    return layouts


#: The ports of :func:`port_layouts` that are inputs.
_INPUTS = ("status", "request")


class _ExactPlan(NamedTuple):
    """The exact tree of a schedule, from the schedule alone (nothing is built)."""

    fields: dict            #: type -> (period, low, high): its field in the packed word
    demands: dict           #: (k, node) -> the fields the answers and joins read of it
    single: dict            #: type -> (k, node): a type whose field is one tree node
    joins: list             #: the join pieces of the types that are not one node
    pieces: list            #: the pieces of logic in order (tree, then joins)
    holders: dict           #: request key -> ((period, type), ...) whose field holds it
    request_key: dict       #: type -> the key of its own request (its first block's)


def _exact_plan(schedule: SharedSchedule) -> _ExactPlan:
    """The pieces of the exact tree over ``schedule``'s packed word. A type's field is cut
    into aligned power-of-two parts; parts of four blocks or more are tree nodes, smaller ones
    single blocks, and a join piece merges them when there are several. Each node answers the
    request of the type whose field holds it in the current period (its key names those
    types: "a_c" is a's request in a's period, c's in c's)."""
    layouts = port_layouts(schedule, exact=True)
    widths = {port: {name: Shape.cast(shape).width for name, shape in layouts[port].members.items()}
              for port in ("request", "length", "start", "fit_start")}
    fields = {}
    for index, types in enumerate(schedule.periods):
        offset = 0
        for name, size in types:
            fields[name] = (index, offset, offset + size)
            offset += size
    holders, request_widths = {}, {}

    def request_of(k, node):
        low, high = node << k, (node + 1) << k
        held = tuple(sorted((index, name) for name, (index, first, last) in fields.items()
                            if first <= low and high <= last))
        key = "_".join(name for _, name in held)
        if key not in holders:
            holders[key] = held
            request_widths[key] = max(widths["request"][name] for _, name in held)
        return key

    demands, joins, single = {}, [], {}
    for name, (_, low, high) in fields.items():
        blocks = aligned_blocks(low, high)
        if len(blocks) == 1 and blocks[0][1] >= _LEAF:
            k = blocks[0][1].bit_length() - 1
            node = (k, low >> k)
            demands.setdefault(node, set()).update({"best", "bst", "ffs"})
            single[name] = node
            request_of(*node)
            continue
        for node, wanted in _join_demands(blocks).items():
            demands.setdefault(node, set()).update(wanted)
            request_of(*node)
        key = request_of(0, low)                # a one-block node: the type alone
        joins.append(_join_piece(f"join_{name}", blocks, ("request", key), request_widths[key],
                                 {"best": widths["length"][name], "bst": widths["start"][name],
                                  "ffs": widths["fit_start"][name], "fit": 1}))
    # A node read whole by one type only needs the ffs bits of that type's port, unless
    # a join or a larger node of another type reads it too: that one needs its top bit,
    # "nothing fits here" (a first fit in the half to its right).
    def read_by_others(node):
        k, index = node
        return any(kk > k and index >> (kk - k) == other for kk, other in demands) or any(
            node in _join_demands(aligned_blocks(*fields[other][1:]))
            for other in fields if other not in single)

    ffs_widths = {node: widths["fit_start"][name] for name, node in single.items()
                  if not read_by_others(node)}
    pieces = []
    if demands:
        pieces = _tree_pieces(demands, side_by_side=lambda level: False,
                              request_of=request_of, request_widths=request_widths,
                              ffs_widths=ffs_widths)
    # The answers of a type that is one node read its request by its first block; that key
    # may be no node's or join's, so it is made with the others (the pipeline carries only
    # the requests made before it is built).
    request_key = {name: request_of(0, low) for name, (_, low, _) in fields.items()}
    return _ExactPlan(fields, demands, single, joins, pieces + joins, holders, request_key)


def exact_deepest_pipeline(schedule: SharedSchedule) -> int:
    """The deepest pipeline of the exact unit for ``schedule``: the packed word registered
    (1), and a cut between two of its tree's pieces for each register more, so at most as
    many registers as pieces (a tiny schedule's tree is one piece or two), and at most
    :meth:`SharedMaxFreeBlock.max_pipeline`."""
    return min(SharedMaxFreeBlock.max_pipeline(True), max(1, len(_exact_plan(schedule).pieces)))


class SharedMaxFreeBlock(wiring.Component):
    """One ``width``-bit unit serving every resource type of a static schedule in turn.

    In each enabled clock the unit serves one period of the schedule (period ``c`` after ``c``
    enabled clocks, modulo the schedule's length ``C``): the status words of that period's
    types are packed side by side from bit 0, the bits left over read as occupied, and each
    type's answer is found at once and registered at the edge; its ``result_valid`` strobe
    rises for the next clock. A run never crosses from one type's field into the next. The
    schedule then repeats, so a type's answer is refreshed every ``C`` clocks and held in
    between.

    Two circuits can fill the unit:

    * the seed's (``exact=False``): the running AND of embodiment 4 over the packed word, in
      which the first bit of every field but the first never continues a run from below (one
      boundary word per period, the seed's masks ``m(i)``), OR-reduced per field segment, and
      a downward scan per type; about ``width²`` gates shared by all types; ports ``status``
      in, ``length`` out;
    * the exact tree of :class:`hw.maxblock.ExactMaxFreeBlock` (``exact=True``), one tree
      over the packed word: each type's answer comes from the tree nodes that lie inside its
      field (the aligned power-of-two parts of it), joined where the field is not one node,
      each node answering the request of the type that holds it in the current period. So
      the shared unit allocates as the exact block does: ``request`` in, ``length``,
      ``start``, ``fit`` and ``fit_start`` out, for every type; O(width) gates.

    Parameters
    ----------
    schedule : SharedSchedule
        The periods and the types each packs; defaults to the seed's example (width 128;
        period 1: a 128-block type; period 2: a 64-block and a 48-block type).
    free_level : int
        1 when a free block reads 1, 0 when it reads 0.
    exact : bool
        Use the exact tree (and provide ``request``, ``start``, ``fit``, ``fit_start``).
    pipeline : int
        Registers inside the unit (0 to :meth:`max_pipeline`): 1 registers the packed word
        (with the period served and ``valid``, and the requests) after the period's
        multiplexer, so the circuit starts from a register; 2 and 3 also cut the exact tree
        in two or three. Each adds one clock between the period's read and its answer; the
        schedule, the strobes and what is read in which clock stay the same.

    Attributes
    ----------
    status : In(StructLayout({type: size}))
        One status word per resource type (bit ``i`` = block ``i``), read in its period.
    request : In(StructLayout({type: range(size + 1)}))
        With ``exact``: each type's request, read in its period.
    valid : In(1)
        The inputs of this clock are meaningful (default 1): a period served without it
        leaves its types' answers as they were and raises no strobe.
    enable : In(1)
        Clock enable (default 1): while it is 0 the unit holds (the period counter, every
        answer and every strobe), and ignores its inputs.
    length : Out(StructLayout({type: range(size + 1)}))
        Each type's longest free run, from its last served period.
    start, fit, fit_start : Out(StructLayout(...))
        With ``exact``: the lowest start of a longest run (0 when nothing is free), whether a
        run of ``request`` blocks exists, and its lowest start (0 when none, or for a request
        of 0), as :class:`hw.maxblock.ExactMaxFreeBlock` gives them.
    result_valid : Out(StructLayout({type: 1}))
        High in the clock after a type's answers were registered, ``pipeline + 1`` enabled
        clocks after its period was read with ``valid`` (held while ``enable`` is low):
        that type's answers are fresh.

    Reset clears the control state only: the period counter (to period 0), the strobes and
    the periods in flight in the pipeline (their answers are not loaded). The answers are
    data registers without reset; each is defined once its type has been served after
    power-on (zero in simulation before that). Latency: a type's answer appears ``pipeline +
    1`` enabled clocks after its period was read, so it describes a status at most ``C +
    pipeline`` enabled clocks old
    (and a block taken since still reads as free: the read-after-write hazard of
    :data:`hw.maxblock.PIPELINE_CONTRACT`).
    """

    def __init__(self, schedule=None, *, free_level=1, exact=False, pipeline=0):
        if schedule is None:
            schedule = SharedSchedule()
        if not isinstance(schedule, SharedSchedule):
            self._MustUse__silence = True
            raise TypeError(f"Schedule must be a SharedSchedule, not {schedule!r}")
        limit = self.max_pipeline(exact)
        if not isinstance(pipeline, int) or isinstance(pipeline, bool) \
                or not 0 <= pipeline <= limit:
            self._MustUse__silence = True
            raise ValueError(f"Pipeline must be an integer from 0 to {limit} for the "
                             f"{'exact' if exact else 'seed'} circuit, not {pipeline!r}")
        if exact and pipeline > exact_deepest_pipeline(schedule):
            self._MustUse__silence = True
            raise ValueError(f"Pipeline {pipeline} cuts this schedule's exact tree "
                             f"{pipeline - 1} times between its "
                             f"{len(_exact_plan(schedule).pieces)} pieces of logic: it must be "
                             f"0 to {exact_deepest_pipeline(schedule)} for this schedule")
        self._schedule = schedule
        self._free_level = check_free_level(free_level)
        self._exact = bool(exact)
        self._pipeline = pipeline
        layouts = port_layouts(schedule, exact=self._exact)
        members = {port: In(layouts[port]) for port in _INPUTS if port in layouts}
        members.update({"valid": In(1, init=1), "enable": In(1, init=1)})
        members.update({port: Out(layout) for port, layout in layouts.items()
                        if port not in _INPUTS})
        super().__init__(members)
        _reset_less_outputs(self, [port for port in layouts
                                   if port not in (*_INPUTS, "result_valid")])

    @property
    def schedule(self) -> SharedSchedule:
        return self._schedule

    @property
    def free_level(self) -> int:
        return self._free_level

    @property
    def exact(self) -> bool:
        return self._exact

    @property
    def pipeline(self) -> int:
        return self._pipeline

    @staticmethod
    def max_pipeline(exact: bool) -> int:
        """The deepest pipeline: the packed word registered, and for the exact tree also up
        to two cuts in the tree (the seed's chain is not cut)."""
        return 3 if exact else 1

    def elaborate(self, platform):
        m = Module()
        periods = self._schedule.periods

        # The period counter (control state: it has a reset) and, per period, the packed
        # word. Continuous multiplexers, not a `Switch`: Icarus never runs a Verilog
        # `always @*` block whose inputs keep their initial values, so a case statement on a
        # counter that sits at 0 through reset would leave its outputs X in the first period.
        # Bits above every period's fields read as occupied in every period: left out.
        width = max(sum(size for _, size in types) for types in periods)

        def packed(types):
            unused = width - sum(size for _, size in types)
            fill = [Const(0 if self._free_level else (1 << unused) - 1, unused)] if unused else []
            return Cat(*(self.status[name] for name, _ in types), *fill)

        if len(periods) == 1:                       # no counter: the one period, always
            serving = [Const(1, 1)]
            word = packed(periods[0])
        else:
            period = Signal(range(len(periods)), name="period")
            with m.If(self.enable):
                m.d.sync += period.eq(Mux(_equals(period, len(periods) - 1), 0, period + 1))
            serving = [named(m, f"serving_period{index}", _equals(period, index))
                       for index in range(len(periods))]
            word = Const(0 if self._free_level else (1 << width) - 1, width)
            for index, types in enumerate(periods):
                word = Mux(serving[index], packed(types), word)
            word = named(m, "packed", word)
        free = word if self._free_level else named(m, "packed_free", ~word)

        # The pipeline: the packed word (and the requests) in data registers, the period
        # served and `valid` beside them in control registers, which reset: a period in
        # flight at a reset loads nothing.
        valid, requests = self.valid, self.request if self._exact else None
        if self._pipeline:
            free = _data_register(m, free, "packed_q", self.enable)
            if self._exact:
                requests = _data_register(m, self.request.as_value(), "request_q",
                                          self.enable)
                requests = data.View(self.request.shape(), requests)
            serving, valid = self._delayed_control(m, serving, valid, "q")

        results = (self._exact_results(m, free, serving, requests) if self._exact
                   else self._seed_results(m, free, serving))
        for cut in range(self._pipeline - 1):
            serving, valid = self._delayed_control(m, serving, valid, f"cut{cut}")

        # Register the served types' answers at the end of their period (or as the period
        # leaves the pipeline): data registers load only then (and only with `valid`); the
        # strobes are control state.
        for index, types in enumerate(periods):
            load = named(m, f"load_period{index}", self.enable & valid & serving[index])
            for name, _ in types:
                with m.If(load):
                    m.d.sync += [getattr(self, port)[name].eq(value)
                                 for port, value in results[name].items()]
                with m.If(self.enable):
                    m.d.sync += self.result_valid[name].eq(valid & serving[index])
        return m

    def _delayed_control(self, m, serving, valid, suffix: str):
        """The period served and ``valid`` one enabled clock later (control registers, with
        reset)."""
        delayed = []
        for index, value in enumerate(serving):
            register = Signal(name=f"serving_period{index}_{suffix}")
            with m.If(self.enable):
                m.d.sync += register.eq(value)
            delayed.append(register)
        valid_q = Signal(name=f"valid_{suffix}")
        with m.If(self.enable):
            m.d.sync += valid_q.eq(valid)
        return delayed, valid_q

    def _seed_results(self, m, free, serving):
        # The seed's chain SA_i = SA_(i-1) AND S_i over the packed word, where a field's first
        # bit never continues a run from the field below it. The OR of each SA_i is taken per
        # segment (the pieces between all boundaries of all periods), and a type's SAR_i is
        # the OR of the segments of its field. Each SA_i is built only as wide as the
        # reductions and the next SA read it.
        schedule = self._schedule
        used = len(free)
        edges = {0}
        breaks = Const(0, used)
        for index, types in enumerate(schedule.periods):
            boundary, offset = 0, 0
            for _, size in types:
                if offset:
                    boundary |= 1 << offset
                edges |= {offset, offset + size}
                offset += size
            breaks = Mux(serving[index], boundary, breaks)
        edges = sorted(edges)
        longest = max(schedule.types.values())
        reads = {}                                  # (type, i) -> the pieces of SA_i it ORs
        need = [0] * longest                        # bits of SA_i that are read
        for name, size in schedule.types.items():
            _, offset = schedule.placement(name)
            for i in range(size):
                reads[(name, i)] = [(low, min(high, used - i))
                                    for low, high in zip(edges, edges[1:], strict=False)
                                    if offset <= low < offset + size - i]
                need[i] = max([need[i], *(high for _, high in reads[(name, i)])])
        for i in reversed(range(longest - 1)):
            need[i] = max(need[i], need[i + 1])
        windows = [free]
        if longest > 1:
            top = max(i + need[i] for i in range(1, longest))
            # continues[j - 1]: block j may continue a run from block j - 1.
            continues = named(m, "continues", free[1:top] & ~breaks[1:top])
            for i in range(1, longest):
                windows.append(named(m, f"sa{i}", windows[-1][:need[i]]
                                     & continues[i - 1:i - 1 + need[i]]))
        results = {}
        for name, size in schedule.types.items():
            flags = [(Cat(*(windows[i][low:high].any() for low, high in reads[(name, i)])).any(),
                      i + 1) for i in range(size)]
            results[name] = {"length": scan_down(flags)}
        return results

    def _exact_results(self, m, free, serving, request_port):
        # One exact tree over the packed word (see _exact_plan); each node answers the
        # request of the type whose field holds it in the current period.
        plan = _exact_plan(self._schedule)
        fields, single, joins, pieces = plan.fields, plan.single, plan.joins, plan.pieces
        demands = plan.demands
        requests = {}
        for key, held in plan.holders.items():
            value = request_port[held[0][1]]
            for index, name in held[1:]:
                value = Mux(serving[index], request_port[name], value)
            requests[key] = value if len(held) == 1 else named(m, f"request_{key}", value)
        stage = {("request", key): value for key, value in requests.items()}
        used_leaves = {index for (k, node) in demands
                       for index in range(node << (k - 2), (node + 1) << (k - 2))}
        for index in used_leaves:
            stage[("free", index)] = free[index * _LEAF:(index + 1) * _LEAF]
        for piece in joins:
            for key in piece.consumes:
                if key[0] == "bit":
                    stage[key] = free[key[1]]
        # With a pipeline of 2 or more, its registers after the first are spread evenly
        # between the pieces (as the exact block places its registers); each carries what
        # later pieces and the answers read, the requests included.
        cuts = [0] * len(pieces)
        for index in range(self._pipeline - 1):
            cuts[(index + 1) * len(pieces) // self._pipeline] = 1
        assert sum(cuts) == max(self._pipeline - 1, 0) and not (cuts and cuts[0]), \
            "the constructor checks the pipeline against the pieces"
        final = {("request", key) for key in requests}
        for name in fields:
            if name in single:
                final |= {("node", *single[name], field) for field in ("best", "bst", "ffs")}
            else:
                final |= {(f"join_{name}", field) for field in ("best", "bst", "ffs", "fit")}
        stage = _build_pipeline(m, pieces, stage, final, cuts,
                                self.enable if self._pipeline > 1 else None)

        results = {}
        for name in fields:
            request = stage[("request", plan.request_key[name])]
            if name in single:
                k, node = single[name]
                best, start, ffs = (stage[("node", k, node, field)]
                                    for field in ("best", "bst", "ffs"))
                fit = named(m, f"{name}_fit", _at_least(best, request))
            else:
                best, start, ffs, fit = (stage[(f"join_{name}", field)]
                                         for field in ("best", "bst", "ffs", "fit"))
            results[name] = {"length": best, "start": start, "fit": fit,
                             "fit_start": Mux(fit & request.any(), ffs, 0)}
        return results
