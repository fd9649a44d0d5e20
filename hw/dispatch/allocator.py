"""Step a43: where the target WG goes on the target AP, in the *current* status registers.

The chosen AP's status words are selected (a P:1 multiplexer per PEU resource and for its LDS)
and searched by one exact first-fit tree each (:class:`hw.maxblock.ExactMaxFreeBlock`, through
its ports: ``status``, ``request`` in, ``fit``, ``fit_start`` out). Only ``2Q + 1`` trees for
the whole GPU: the search follows the choice of the AP in the same clock instead of running on
every AP. When a need does not fit (possible only when the view was stale), ``fits`` is 0: the
dispatcher aborts the dispatch.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.dispatch.params import DispatcherParams
from hw.dispatch.views import identity, status_layout
from hw.maxblock import ExactMaxFreeBlock

__all__ = ["Allocator"]


class Allocator(wiring.Component):
    """First fit of every need of one WG on one AP; combinational.

    Attributes
    ----------
    status : In(status_layout(params))
        The current status registers.
    ap : In(range(aps))
    need_vgpr, need_sgpr : In(ArrayLayout(range(n + 2), peus))
        Blocks needed on each PEU of the AP (0: none; ``n + 1``: more than a PEU has).
    need_lds : In(range(lds + 2))
    fits : Out(1)
        Every need fits.
    vgpr_start, sgpr_start : Out(ArrayLayout(range(n), peus)), lds_start : Out
        The lowest start of a free run long enough for each need (0 for a need of 0).
    """

    def __init__(self, params: DispatcherParams, wrap=identity):
        self._params = params
        self._wrap = wrap
        gpu, Q = params.gpu, params.peus
        super().__init__({
            "status": In(status_layout(params)),
            "ap": In(range(max(params.aps, 2))),
            "need_vgpr": In(data.ArrayLayout(range(gpu.vgpr + 2), Q)),
            "need_sgpr": In(data.ArrayLayout(range(gpu.sgpr + 2), Q)),
            "need_lds": In(range(gpu.lds + 2)),
            "fits": Out(1),
            "vgpr_start": Out(data.ArrayLayout(range(max(gpu.vgpr, 2)), Q)),
            "sgpr_start": Out(data.ArrayLayout(range(max(gpu.sgpr, 2)), Q)),
            "lds_start": Out(range(max(gpu.lds, 2))),
        })

    def _first_fit(self, m: Module, name: str, words, need, start) -> Signal:
        n = len(words[0])
        finder = self._wrap(ExactMaxFreeBlock(n), "allocator")
        m.submodules[name] = finder
        word = Signal(n, name=f"{name}_status")
        m.d.comb += word.eq(Cat(*words).word_select(self.ap, n) if len(words) > 1
                            else words[0])
        too_large = need > n
        m.d.comb += [finder.status.eq(word),
                     finder.request.eq(need[:len(finder.request)]),
                     start.eq(finder.fit_start)]
        fits = Signal(name=f"{name}_fits")
        m.d.comb += fits.eq(finder.fit & ~too_large)
        return fits

    def elaborate(self, platform):
        m = Module()
        p = self._params
        P, Q = p.aps, p.peus
        status = self.status
        fits = []
        for q in range(Q):
            for name, need, start in (("vgpr", self.need_vgpr[q], self.vgpr_start[q]),
                                      ("sgpr", self.need_sgpr[q], self.sgpr_start[q])):
                words = [status[name][ap * Q + q] for ap in range(P)]
                fits.append(self._first_fit(m, f"{name}{q}", words, need, start))
        words = [status.lds[ap] for ap in range(P)]
        fits.append(self._first_fit(m, "lds", words, self.need_lds, self.lds_start))
        m.d.comb += self.fits.eq(Cat(*fits).all())
        return m
