"""Step a43: where the target WG goes on the target AP, in the *current* status registers.

The chosen AP's status words are selected (a P:1 multiplexer per PEU resource and for its LDS;
with ``view_refresh = "changed"`` the resource table's read of that AP from its LUT-RAM
instead, :attr:`words`) and searched by one first-fit circuit each
(:class:`hw.maxblock.FirstFit`: ``status``, ``request`` in, ``fit``, ``fit_start`` out; the
exact tree's first fit, :class:`hw.maxblock.ExactMaxFreeBlock`, until 2026-11-28, with the
same answers for about a third more LUT4). Only ``2Q + 1`` circuits for the whole GPU: the
search follows the choice of the AP in the same clock instead of running on every AP. When a
need does not fit (possible only when the view was stale), ``fits`` is 0: the dispatcher
aborts the dispatch.

With a latency (the pipelined decision), each circuit is pipelined as deep as it allows
(:func:`model.maxblock.first_fit_max_latency`) and registers after it make up the rest.

Model twin: :mod:`model.dispatch.allocator`.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.dispatch.logic import less
from hw.dispatch.params import DispatcherParams
from hw.dispatch.views import ap_status_layout, identity, status_layout
from hw.maxblock import FirstFit
from model.maxblock import first_fit_max_latency

__all__ = ["Allocator"]


class Allocator(wiring.Component):
    """First fit of every need of one WG on one AP.

    Latency: ``latency`` clocks (0: combinational); the outputs of clock ``t + latency``
    answer the inputs of clock ``t``. ``enable`` (with a latency) is the clock enable of
    every register: while it is 0 they hold.

    Attributes
    ----------
    status : In(status_layout(params))
        The current status registers (not with ``view_refresh = "changed"``).
    words : In(ap_status_layout(params))
        With ``view_refresh = "changed"`` instead: the current status of AP ``ap`` (the
        resource table's read of it), so no multiplexer here.
    ap : In(range(aps))
    need_vgpr, need_sgpr : In(ArrayLayout(range(n + 2), peus))
        Blocks needed on each PEU of the AP (0: none; ``n + 1``: more than a PEU has).
    need_lds : In(range(lds + 2))
    fits : Out(1)
        Every need fits.
    vgpr_start, sgpr_start : Out(ArrayLayout(range(n), peus)), lds_start : Out
        The lowest start of a free run long enough for each need (0 for a need of 0).
    """

    def __init__(self, params: DispatcherParams, wrap=identity, latency: int = 0):
        self._params = params
        self._wrap = wrap
        self._latency = latency
        gpu, Q = params.gpu, params.peus
        super().__init__({
            **({"words": In(ap_status_layout(params))} if params.changed_views
               else {"status": In(status_layout(params))}),
            "ap": In(range(max(params.aps, 2))),
            "need_vgpr": In(data.ArrayLayout(range(gpu.vgpr + 2), Q)),
            "need_sgpr": In(data.ArrayLayout(range(gpu.sgpr + 2), Q)),
            "need_lds": In(range(gpu.lds + 2)),
            "fits": Out(1),
            "vgpr_start": Out(data.ArrayLayout(range(max(gpu.vgpr, 2)), Q)),
            "sgpr_start": Out(data.ArrayLayout(range(max(gpu.sgpr, 2)), Q)),
            "lds_start": Out(range(max(gpu.lds, 2))),
            "enable": In(1, init=1),
        })

    def _delay(self, m: Module, value, clocks: int, name: str):
        """``value`` of ``clocks`` enabled clocks before."""
        for index in range(clocks):
            register = Signal.like(value, name=f"{name}_d{index}")
            with m.If(self.enable):
                m.d.sync += register.eq(value)
            value = register
        return value

    def _first_fit(self, m: Module, name: str, words, need, start) -> Signal:
        n = len(words[0])
        # From a latency of 3, the chosen AP's word and the need are registered first (the
        # multiplexers and their widely fanned-out select in a clock of their own).
        ahead = 1 if self._latency >= 3 else 0
        latency = min(self._latency - ahead, first_fit_max_latency())
        finder = self._wrap(FirstFit(n, latency=latency), "allocator")
        m.submodules[name] = finder
        if latency:
            m.d.comb += finder.enable.eq(self.enable)
        extra = self._latency - ahead - latency
        word = Signal(n, name=f"{name}_status")
        m.d.comb += word.eq(Cat(*words).word_select(self.ap, n) if len(words) > 1
                            else words[0])
        too_large = self._delay(m, less(n, need), self._latency, f"{name}_too_large")
        m.d.comb += [finder.status.eq(self._delay(m, word, ahead, f"{name}_word")),
                     finder.request.eq(self._delay(m, need[:len(finder.request)], ahead,
                                                   f"{name}_request")),
                     start.eq(self._delay(m, finder.fit_start, extra, f"{name}_start"))]
        fits = Signal(name=f"{name}_fits")
        m.d.comb += fits.eq(self._delay(m, finder.fit, extra, f"{name}_fit") & ~too_large)
        return fits

    def elaborate(self, platform):
        m = Module()
        p = self._params
        P, Q = p.aps, p.peus
        fits = []

        def words(name, q, per):
            if p.changed_views:
                return [self.words[f"{name}{q}"]]
            return [self.status[name][ap * per + q] for ap in range(P)]

        for q in range(Q):
            for name, need, start in (("vgpr", self.need_vgpr[q], self.vgpr_start[q]),
                                      ("sgpr", self.need_sgpr[q], self.sgpr_start[q])):
                fits.append(self._first_fit(m, f"{name}{q}", words(name, q, Q), need, start))
        words = words("lds", 0, 1)
        fits.append(self._first_fit(m, "lds", words, self.need_lds, self.lds_start))
        m.d.comb += self.fits.eq(Cat(*fits).all())
        return m
