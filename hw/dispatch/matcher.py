"""Embodiment 1's match of every channel's head against every AP, with embodiment 8's split.

A head fits an AP when every PEU ``q`` can take its wave group: ``w_q`` waves (``quot``, or
``quot + 1`` for the PEUs the AP's rotating pointer gives the remainder to) need ``w_q``
free wave slots, one VGPR block of ``w_q x vgpr`` and one SGPR block of ``w_q x sgpr``
blocks no longer than the view's lengths, and the WG's LDS fits the AP's LDS view (steps
a3, a31-a32). All heads against all APs in parallel: ``channels x APs x PEUs`` sets of three
comparators, combinational. With in-order barriers built, a row that is ``held`` (a barrier
WG whose channel still runs WGs, or, in the pipelined decision, one behind a WG of its channel
in flight) fits no AP: the model's ``Matcher.head_mask`` and ``DecisionPipeline.match_stage``.

Model twin: :mod:`model.dispatch.matcher`.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.dispatch.logic import at_most, at_most_each, less, lookup, named
from hw.dispatch.params import DispatcherParams
from hw.dispatch.views import view_layout

__all__ = ["Matcher", "extra_wave"]


def extra_wave(q: int, pointer, remainder, peus: int):
    """Embodiment 8: PEU ``q`` takes the split table's entry ``(q - pointer) mod Q``, which
    is ``quot + 1`` when that index is below the remainder (``pointer`` is below ``peus``;
    the index is a table of the pointer's values, ``q`` and ``peus`` being constants)."""
    rotated = lookup(pointer, lambda value: (q - value) % peus)
    return less(rotated, remainder)


def slots_layout(params: DispatcherParams) -> data.ArrayLayout:
    """Free wave slots of every PEU, by AP."""
    return data.ArrayLayout(data.ArrayLayout(range(params.gpu.wave_slots + 1), params.peus),
                            params.aps)


def _high(length, k: int):
    """``length >> k`` (``length`` itself for ``k = 0``)."""
    return length[k:] if k else length


def _rounded(m: Module, need, k: int, name: str):
    """``ceil(need / 2 ** k)``: ``need`` itself for ``k = 0``, else named in ``m``."""
    if not k:
        return need
    return named(m, need[k:] + need[:k].any(), name)


class Matcher(wiring.Component):
    """Which APs each channel's head fits, as the view sees them.

    Parameters
    ----------
    params : DispatcherParams
    rows : int
        Heads matched (default: one per channel; the pipelined decision matches two).

    Attributes
    ----------
    heads : In(ArrayLayout(params.head_layout, rows))
    view : In(view_layout(params))
    slots : In(slots_layout(params))
        Free wave slots (counted, no latency).
    pointer : In(ArrayLayout(range(max(peus, 2)), aps))
        Each AP's rotating pointer (0 when rotation is off).
    held : In(rows)
        Barriers built only: bit ``c``: head ``c`` is held by an in-order barrier (it fits
        nothing).
    fit : Out(ArrayLayout(aps, rows))
        Bit ``ap`` of ``fit[c]``: head ``c`` is valid, not held and fits AP ``ap``.
    """

    def __init__(self, params: DispatcherParams, rows: int = 0):
        self._params = params
        self._rows = rows or params.channels
        super().__init__({
            "heads": In(data.ArrayLayout(params.head_layout, self._rows)),
            "view": In(view_layout(params)),
            "slots": In(slots_layout(params)),
            "pointer": In(data.ArrayLayout(range(max(params.peus, 2)), params.aps)),
            "fit": Out(data.ArrayLayout(params.aps, self._rows)),
            **({"held": In(self._rows)} if params.barriers else {}),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        Q = p.peus
        # Embodiment 8 gives the extra waves to the PEUs at split positions 0 .. rem - 1 from
        # the AP's pointer: position j is PEU (j + pointer) mod Q. Each AP's per-PEU slots
        # and lengths are put in that order once (a Q:1 choice each, shared by every row),
        # and each row's needs once per position (shared by every AP), so the compares read
        # no per-pair multiplexer; the fit, an AND over the PEUs, is the same. Where every
        # length of a resource is a multiple of 2 ** k (embodiment 5's groups,
        # DispatcherParams.view_unit), need <= length is ceil(need / 2 ** k) <= length >> k:
        # the need is rounded up once per row, and the lengths' k low bits (0) are not read.
        units = {name: p.view_unit(name) for name in ("vgpr", "sgpr", "lds")}
        placed = []
        for ap in range(p.aps):
            positions = []
            pointer = self.pointer[ap]
            for j in range(Q):
                values = {}
                lengths = {key: [_high(self.view[key][ap * Q + q], units[key])
                                 for q in range(Q)] for key in ("vgpr", "sgpr")}
                for key, words in (("slots", [self.slots[ap][q] for q in range(Q)]),
                                   *lengths.items()):
                    # A tree of 2:1 choices on the pointer's bits, entry v PEU (j + v) mod Q.
                    level = [words[(j + v) % Q] for v in range(1 << len(pointer))]
                    for bit in range(len(pointer) if Q > 1 else 0):
                        level = [Mux(pointer[bit], level[k + 1], level[k])
                                 for k in range(0, len(level), 2)]
                    values[key] = named(m, level[0], f"ap{ap}_at{j}_{key}")
                positions.append(values)
            placed.append(positions)
        for c in range(self._rows):
            head = self.heads[c]
            rounded = {key: [_rounded(m, head[f"need_{key}_{end}"], units[key],
                                      f"need_c{c}_{key}_{end}") for end in ("hi", "lo")]
                       for key in ("vgpr", "sgpr")}
            lds = _rounded(m, head.lds, units["lds"], f"need_c{c}_lds")
            needs = []
            for j in range(Q):
                extra = less(j, head.rem)
                needs.append({
                    "slots": named(m, head.quot + extra, f"need_c{c}_at{j}_waves"),
                    **{key: named(m, Mux(extra, *rounded[key]), f"need_c{c}_at{j}_{key}")
                       for key in ("vgpr", "sgpr")}})
            fits = []
            for ap in range(p.aps):
                lds_pair = (lds, _high(self.view.lds[ap], units["lds"]))
                pairs = [(needs[j][key], placed[ap][j][key])
                         for j in range(Q) for key in ("slots", "vgpr", "sgpr")]
                if p.changed_views:
                    # The build made for the largest ECP5: the row's comparisons against
                    # the AP as fields of two adders (at_most_each), not a carry chain each.
                    terms = [head.valid, at_most_each([lds_pair, *pairs], head.valid, m,
                                                      f"compare_c{c}_ap{ap}", chain=64)]
                else:
                    terms = [head.valid, at_most(*lds_pair)]
                if p.barriers:
                    terms.append(~self.held[c])
                if not p.changed_views:
                    terms += [at_most(need, length) for need, length in pairs]
                fit = Signal(name=f"fit_c{c}_ap{ap}")
                m.d.comb += fit.eq(Cat(*terms).all())
                fits.append(fit)
            m.d.comb += self.fit[c].eq(Cat(*fits))
        return m
