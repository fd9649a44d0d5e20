"""The matcher's free-block view: the longest free run of every contiguous resource instance,
as the policy's circuit reports it for the status registers of ``circuit_latency`` clocks ago.

One circuit per instance (embodiments 4-6 or the exact tree of :mod:`hw.maxblock`), its own
pipeline making up as much of the latency as it can be built with and registers on the status
word the rest; or, with ``circuit = "shared"``, embodiment 7: one time-multiplexed exact unit
per AP (:class:`hw.shared_maxblock.SharedMaxFreeBlock`) serving that AP's VGPR, SGPR and LDS
words on the schedule of :func:`model.dispatch.config.shared_schedule`.

With ``view_refresh = "changed"`` (:class:`hw.dispatch.params.DispatcherParams`) the same view
(the circuit's output for the status of ``circuit_latency`` clocks ago, for every instance) is
kept in a register per instance and computed only for the APs whose status changed: in a clock
at most two (the allocation taken at the last edge, the release whose blocks come back; the
resource table names them and hands over their status words, which it keeps in LUT-RAM), so
two AP-wide sets of circuits (``2 * peus + 1`` each) replace one circuit per instance. The
register holding an instance's length is one clock of the latency; the circuit's pipeline
and registers on the word make up the rest.

Model twin: :mod:`model.dispatch.views`.
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.dispatch.logic import equals
from hw.dispatch.params import DispatcherParams
from hw.maxblock import ExactMaxFreeBlock, GroupedMaxFreeBlock, MaxFreeBlock, SampledMaxFreeBlock
from hw.shared_maxblock import SharedMaxFreeBlock, exact_deepest_pipeline
from model.maxblock import check_groups, default_samples, exact_max_latency

__all__ = ["FreeBlockViews", "GroupedExact", "ap_status_layout", "changed_layout",
           "status_layout", "view_layout"]


def status_layout(params: DispatcherParams) -> data.StructLayout:
    """Every status register (bit ``i`` = block ``i``, 1 = free), by resource and instance."""
    sizes, counts = params.sizes, params.instances
    return data.StructLayout({name: data.ArrayLayout(sizes[name], counts[name])
                              for name in sizes})


def view_layout(params: DispatcherParams) -> data.StructLayout:
    """The matcher's length of every instance."""
    sizes, counts = params.sizes, params.instances
    return data.StructLayout({name: data.ArrayLayout(range(sizes[name] + 1), counts[name])
                              for name in sizes})


def ap_status_layout(params: DispatcherParams) -> data.StructLayout:
    """One AP's status words by instance, ``vgpr0``, ..., ``sgpr0``, ..., ``lds0`` (also
    the layout of a record's block masks on its AP)."""
    return data.StructLayout({f"{name}{q}": n for name, n in params.sizes.items()
                              for q in range(params.peus if name != "lds" else 1)})


def changed_layout(params: DispatcherParams) -> data.StructLayout:
    """An AP whose status may have changed in a clock
    (:attr:`hw.dispatch.resources.ResourceTable.changed`)."""
    return data.StructLayout({"valid": 1, "ap": range(max(params.aps, 2))})


def identity(component, role: str = ""):
    """The default ``wrap``: the component itself (``role`` is ``"view"`` or
    ``"allocator"``, for a flow that builds the two uses differently)."""
    return component


class GroupedExact(wiring.Component):
    """Embodiment 5's view with the exact tree inside: ``length`` is
    :class:`hw.maxblock.GroupedMaxFreeBlock`'s for ``n`` blocks in ``groups`` groups (the
    longest run of wholly free groups, in blocks; 1 = free), the groups' "wholly free" bits
    searched by :class:`hw.maxblock.ExactMaxFreeBlock` (``wrap(tree, "view")``, its
    ``request`` tied to 0) instead of embodiment 4's circuit.

    Latency: ``latency`` clocks, the tree's own pipeline as deep as it goes
    (:func:`model.maxblock.exact_max_latency`) and registers on the groups' bits in front of
    it the rest; a new word every clock, no stall."""

    def __init__(self, n: int, groups: int, latency: int, wrap=identity):
        self._n, self._groups = n, check_groups(n, groups)
        self._latency, self._wrap = latency, wrap
        super().__init__({"status": In(n), "length": Out(range(n + 1))})

    def elaborate(self, platform):
        m = Module()
        n, groups = self._n, self._groups
        size = n // groups
        reduced = Signal(groups, name="wholly_free")
        m.d.comb += reduced.eq(Cat(*(self.status[g * size:(g + 1) * size].all()
                                     for g in range(groups))))
        inside = min(self._latency, exact_max_latency(groups))
        word = reduced
        for k in range(self._latency - inside):
            register = Signal(groups, name=f"wholly_free_d{k}")
            m.d.sync += register.eq(word)
            word = register
        m.submodules.tree = tree = self._wrap(ExactMaxFreeBlock(groups, latency=inside), "view")
        m.d.comb += [tree.status.eq(word), tree.request.eq(0),
                     self.length.eq(tree.length * size)]
        return m


class FreeBlockViews(wiring.Component):
    """The view of every contiguous resource instance.

    Latency: ``length`` of clock ``t`` is the circuit's output for ``status`` of clock
    ``t - circuit_latency``. The registers in front of the circuits reset to "all free"; the
    circuits' own pipelines reset to "all occupied", so they must be fed ``prime_clocks``
    clocks of the all-free status before the view means the model's "all free before cycle
    0" (the dispatcher waits that long before it starts). With the shared unit a view is
    refreshed when the unit serves it and held in between.

    Parameters
    ----------
    params : DispatcherParams
    wrap : callable
        ``wrap(component, "view")`` is applied to every free-block component before it is
        instantiated (the flow replaces each by an instance of one shared Verilog module;
        default: the component itself). The view reads only ``length``; an exact tree's
        ``request`` is tied to 0.
    shared_circuit : str
        With ``circuit = "shared"``: what fills each AP's unit, ``"exact"`` (the exact tree,
        the default, as the dispatcher builds it) or ``"seed"`` (embodiment 4's running AND
        over the packed word, the seed's own circuit). Both report every resource's exact
        longest run at the same clock, so the view and the model are the same; only the
        area differs (``make pareto`` measures both).
    grouped_circuit : str
        With ``circuit = "grouped"``: what searches the groups' "wholly free" bits,
        ``"exact"`` (the exact tree, the default, as the dispatcher builds it:
        :class:`GroupedExact`) or ``"seed"`` (embodiment 4's circuit,
        :class:`hw.maxblock.GroupedMaxFreeBlock`, as ``make pareto`` measures embodiment 5).
        The same length at the same clock; the exact tree takes fewer LUT4 at 6, 8, 16 and
        32 groups (ECP5, latency 1; at 12 groups a few more: docs/dispatch_rtl.md).

    Attributes
    ----------
    status : In(status_layout(params))
        Every AP's status (not with ``view_refresh = "changed"``).
    view : Out(view_layout(params))
    changed : In(ArrayLayout(changed_layout(params), 2)),
    changed_status : In(ArrayLayout(ap_status_layout(params), 2))
        With ``view_refresh = "changed"`` only: the APs whose status in this clock may differ
        from the last clock's and their status
        (:attr:`hw.dispatch.resources.ResourceTable.changed`, ``changed_status``; where both
        name one AP, ``[1]``'s is its status). An AP whose status changes without being named
        here keeps a stale view.
    """

    def __init__(self, params: DispatcherParams, wrap=identity, *,
                 shared_circuit: str = "exact", grouped_circuit: str = "exact"):
        for name, value in (("shared_circuit", shared_circuit),
                            ("grouped_circuit", grouped_circuit)):
            if value not in ("exact", "seed"):
                self._MustUse__silence = True
                raise ValueError(f"{name} must be 'exact' or 'seed', not {value!r}")
        self._params = params
        self._wrap = wrap
        self._shared_exact = shared_circuit == "exact"
        self._grouped_exact = grouped_circuit == "exact"
        changed = {"changed": In(data.ArrayLayout(changed_layout(params), 2)),
                   "changed_status": In(data.ArrayLayout(ap_status_layout(params), 2))}
        super().__init__({**(changed if params.changed_views
                             else {"status": In(status_layout(params))}),
                          "view": Out(view_layout(params))})

    @property
    def prime_clocks(self) -> int:
        """Clocks of the all-free status after reset before the view is that of an idle GPU
        (with the shared unit: every resource has been served once)."""
        p = self._params
        if p.shared:
            return len(p.schedule.periods) + self.shared_pipeline
        if p.changed_views:
            return 0        # the lengths reset to the idle GPU's; only changes are computed
        return max(p.circuit_latency(n) for n in p.sizes.values())

    @property
    def shared_pipeline(self) -> int:
        """With the shared unit, how much of ``circuit_latency`` is the unit's own pipeline
        (the rest is registers on the status words in front of it): the period the unit
        reads in cycle ``t`` is the one the model serves in cycle ``t + shared_pipeline``,
        so the dispatcher starts cycle 0 on period ``shared_pipeline`` (mod ``C``). The
        exact unit cuts its tree only between pieces of logic, which a tiny schedule has one
        or two of: there the rest of the latency is registers in front too."""
        p = self._params
        deepest = (exact_deepest_pipeline(p.schedule) if self._shared_exact
                   else SharedMaxFreeBlock.max_pipeline(False))
        return min(p.policy.circuit_latency, deepest)

    def _circuit(self, n: int):
        """The view's circuit for ``n`` blocks, wrapped (``status`` in, ``length`` out)."""
        p = self._params
        latency = p.circuit_latency(n)
        kind = p.policy.circuit
        if kind == "grouped" and self._grouped_exact:
            return GroupedExact(n, n // p.policy.group_size, latency, self._wrap)
        if kind == "exact":
            circuit = ExactMaxFreeBlock(n, latency=latency)
        elif kind == "full":
            circuit = MaxFreeBlock(n, latency=latency)
        elif kind == "grouped":
            circuit = GroupedMaxFreeBlock(n, n // p.policy.group_size, latency=latency)
        else:
            circuit = SampledMaxFreeBlock(n, default_samples(n), latency=latency)
        return self._wrap(circuit, "view")

    def _delayed(self, m: Module, word, clocks: int, name: str, init: int | None = None):
        """``word`` of ``clocks`` clocks ago, through registers that reset to all free (to
        ``init`` if given)."""
        for k in range(clocks):
            register = Signal(len(word), name=f"{name}_d{k}",
                              init=(1 << len(word)) - 1 if init is None else init)
            m.d.sync += register.eq(word)
            word = register
        return word

    def elaborate(self, platform):
        m = Module()
        p = self._params
        latency = p.policy.circuit_latency
        if p.shared:
            # The unit's pipeline registers the packed word after the period's multiplexer
            # (and cuts the exact tree): the period read in clock k is answered in clock
            # k + pipeline + 1, where registers in front would answer the period of clock k
            # + pipeline on the status of clock k. The same view, once the unit has been
            # primed pipeline clocks longer (prime_clocks), with one multiplexer and tree
            # per clock instead of both behind the status registers.
            schedule, pipeline = p.schedule, self.shared_pipeline
            for ap in range(p.aps):
                unit = self._wrap(SharedMaxFreeBlock(schedule, exact=self._shared_exact,
                                                     pipeline=pipeline), "view")
                m.submodules[f"shared{ap}"] = unit
                for name in p.sizes:
                    per = p.peus if name != "lds" else 1
                    for q in range(per):
                        index = ap * per + q
                        key = f"{name}{q}" if name != "lds" else "lds"
                        word = self._delayed(m, self.status[name][index], latency - pipeline,
                                             f"{name}{index}")
                        m.d.comb += [unit.status[key].eq(word),
                                     self.view[name][index].eq(unit.length[key])]
            return m
        if p.changed_views:
            return self._changed(m)
        for name, n in p.sizes.items():
            extra = latency - p.circuit_latency(n)
            for index in range(p.instances[name]):
                circuit = self._circuit(n)
                m.submodules[f"{name}{index}"] = circuit
                word = self._delayed(m, self.status[name][index], extra, f"{name}{index}")
                m.d.comb += [circuit.status.eq(word),
                             self.view[name][index].eq(circuit.length)]
                if "request" in circuit.signature.members:       # the exact tree's
                    m.d.comb += circuit.request.eq(0)
        return m

    def _changed(self, m: Module) -> Module:
        """``view_refresh = "changed"``: for each of the two changed APs, its status words,
        each through its circuit (and registers: ``circuit_latency - 1`` clocks in
        all), into the length registers of that AP's instances (where both slots name one
        AP, slot 1's: its status)."""
        p = self._params
        ahead = self._ahead()
        written = []
        for slot, changed in enumerate(self.changed):
            late = data.View(changed_layout(p), self._delayed(
                m, changed.as_value(), ahead, f"changed{slot}", init=0))
            valid, ap = late.valid, late.ap
            lengths = {}
            for name, n in p.sizes.items():
                per = p.peus if name != "lds" else 1
                for q in range(per):
                    circuit = self._circuit(n)
                    m.submodules[f"changed{slot}_{name}{q}"] = circuit
                    word = self.changed_status[slot][f"{name}{q}"]
                    extra = ahead - p.circuit_latency(n)
                    m.d.comb += circuit.status.eq(self._delayed(
                        m, word, extra, f"changed{slot}_{name}{q}"))
                    if "request" in circuit.signature.members:       # the exact tree's
                        m.d.comb += circuit.request.eq(0)
                    lengths[name, q] = circuit.length
            written.append((valid, ap, lengths))
        for name in p.sizes:
            per = p.peus if name != "lds" else 1
            idle = p.seen_when_free(name)
            # Lengths that are multiples of 2 ** k (DispatcherParams.view_unit) are kept
            # without their k low bits, which are 0.
            k = p.view_unit(name)
            for a in range(p.aps):
                for q in range(per):
                    index = a * per + q
                    length = (Signal(len(self.view[name][index]) - k,
                                     name=f"{name}{index}_length", init=idle >> k) if k else
                              Signal.like(self.view[name][index], name=f"{name}{index}_length",
                                          init=idle))
                    for slot, (valid, ap, lengths) in reversed(list(enumerate(written))):
                        with (m.If if slot == 1 else m.Elif)(valid & equals(ap, a)):
                            m.d.sync += length.eq(lengths[name, q][k:] if k
                                                  else lengths[name, q])
                    m.d.comb += self.view[name][index].eq(Cat(Const(0, k), length) if k
                                                          else length)
        return m

    def _ahead(self) -> int:
        """Clocks from a changed AP's status to its circuits' answer: the latency less the
        clock of the length register."""
        return self._params.policy.circuit_latency - 1
