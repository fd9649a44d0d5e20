"""The parts of the pipelined decision (``decision_pipeline = k``, docs/dispatch.md): the
score pipeline, which computes embodiment 9's and 10's order of the APs ahead of the choice,
and the selector that chooses from registered matches and that order.

The pipelined dispatcher (:class:`hw.dispatch.Dispatcher` with ``k >= 2``) decides a WG over
``k + 1`` clocks: the match (clock ``t``: each channel's first two WGs not yet chosen against
every AP, registered), the choice (``t + 1``: :class:`PipelinedSelector`), the first fit
(``t + 2`` to ``t + k``: the allocator's trees, pipelined) and the dispatch (``t + k + 1``),
the model's cycle clock for clock.

Model twin: :mod:`model.dispatch.pipeline`.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.dispatch.logic import (
    equals,
    index_of,
    is_zero,
    less,
    or_all,
    product,
    rotating_lowest_set,
    total,
)
from hw.dispatch.matcher import slots_layout
from hw.dispatch.params import DispatcherParams
from hw.dispatch.selector import (
    COMBINED,
    INSTRUCTION,
    LOWEST,
    RESOURCE,
    Selector,
    _max_tree,
)
from hw.dispatch.views import view_layout

__all__ = ["PipelinedSelector", "ScorePipeline", "beats_layout"]


def beats_layout(params: DispatcherParams) -> data.ArrayLayout:
    """Bit ``b`` of entry ``a``: AP ``a`` is chosen over AP ``b`` when both are candidates
    (``a != b``; the diagonal is 1)."""
    return data.ArrayLayout(params.aps, params.aps)


class ScorePipeline(wiring.Component):
    """Every AP's embodiment 9 and 10 scores, ordered for the AP choice, ``score_latency``
    cycles old.

    The AP choice picks the best score among the candidates, the lowest index among equals;
    which AP beats which does not depend on the candidates, so this pipeline registers the
    order itself, ``beats``, and the choice is a few gates of logic on it (no comparator).
    The key it orders by follows the ``ap_choice`` register: embodiment 9's ``R = sum a_h
    r_h`` (largest first), embodiment 10's history ``B`` (smallest first), the combined
    ``w_r R max(Bmax, 1) - w_i B max(Rmax, 1)`` with the maxima over every AP (largest
    first), or nothing (the lowest index first; round robin does not read it).

    Latency: ``beats`` in clock ``t + L`` is computed from the inputs of clock ``t``,
    ``L = score_latency + 1`` (:attr:`DispatcherParams.score_layers`): the model's match of
    cycle ``t + L - 1`` keeps the scores of cycle ``t``. The logic is six pieces (the
    weighted terms; their sum; the maxima and the weight products; the cross products; the
    key; the comparisons): with ``L < 6`` the first ``L - 1`` each end in a register and the
    rest share the last clock (the key and the comparisons first: routed in the small
    configuration's build, the terms with their multipliers and their sum in one clock were
    the critical path, 20.2 ns), with ``L >= 6`` every piece ends in a register and the
    inputs are delayed by the rest; every input goes through the same registers, the
    configuration registers too. No enable: it follows the clock.

    Attributes
    ----------
    view, slots, history : In
        The matcher's view, the free wave slots and embodiment 10's history, this clock.
    ap_choice, resource_weight, instruction_weight, ap_weights : In
        The configuration registers.
    beats : Out(beats_layout(params))
    """

    PIECES = 6

    def __init__(self, params: DispatcherParams):
        self._params = params
        super().__init__(self._members(params))

    @staticmethod
    def _members(p: DispatcherParams) -> dict:
        return {
            "view": In(view_layout(p)),
            "slots": In(slots_layout(p)),
            "history": In(data.ArrayLayout(p.widths["history"], p.aps)),
            "ap_choice": In(3),
            "resource_weight": In(8),
            "instruction_weight": In(8),
            "ap_weights": In(data.ArrayLayout(p.ap_weight_bits, 4)),
            "beats": Out(beats_layout(p)),
        }

    def _key_bits(self) -> int:
        """Width of :meth:`_key`: the combined score's, its sign included."""
        widths = self._params.widths
        return widths["resource_score"] + widths["history"] + 10

    def _key(self, m: Module, ap_choice, r, b, x, y, name: str) -> Value:
        """The key an AP is ordered by, by ``ap_choice``: ``R`` (``r``), the history ``B``
        (``b``) inverted (the smallest first) or the combined score ``x - y`` (``w_r R Bmax``
        less ``w_i B Rmax``, a signal ``name``) with its sign bit flipped: order-preserving
        unsigned forms; 0 for a choice that reads no score."""
        history_bits = self._params.widths["history"]
        combined_bits = self._key_bits() - 1
        score = Signal(signed(combined_bits + 1), name=name)
        m.d.comb += score.eq(x - y)
        by = {RESOURCE: r, INSTRUCTION: ~b[:history_bits],
              COMBINED: Cat(score[:combined_bits], ~score[combined_bits])}
        value = Const(0, 1)
        for choice, keyed in by.items():
            value = Mux(equals(ap_choice, choice), keyed, value)
        return value

    @staticmethod
    def _register(m: Module, values: dict, name: str) -> dict:
        registered = {}
        for key, value in values.items():
            value = Value.cast(value)
            register = Signal(value.shape(), name=f"{name}_{key}")
            m.d.sync += register.eq(value)
            registered[key] = register
        return registered

    def elaborate(self, platform):
        m = Module()
        p = self._params
        P, Q = p.aps, p.peus
        widths = p.widths

        def terms(v):
            out = {key: v[key] for key in ("ap_choice", "w_r", "w_i")}
            for ap in range(P):
                vgpr = total([v[f"vgpr{ap}_{q}"] for q in range(Q)], m, f"sum_vgpr{ap}")
                sgpr = total([v[f"sgpr{ap}_{q}"] for q in range(Q)], m, f"sum_sgpr{ap}")
                slots = total([v[f"slots{ap}_{q}"] for q in range(Q)], m, f"sum_slots{ap}")
                for h, r in enumerate((vgpr, sgpr, v[f"lds{ap}"], slots)):
                    # The weights are a few bits: shifts and adds beside the sums, not a
                    # DSP block's seven nanoseconds and the route to it.
                    out[f"term{ap}_{h}"] = product(r, v[f"a{h}"], m, f"term{ap}_{h}")
                out[f"b{ap}"] = v[f"b{ap}"]
            return out

        def resource(v):
            out = {key: v[key] for key in ("ap_choice", "w_r", "w_i")}
            for ap in range(P):
                out[f"r{ap}"] = total([v[f"term{ap}_{h}"] for h in range(4)], m, f"r{ap}")[
                    :widths["resource_score"]]
                out[f"b{ap}"] = v[f"b{ap}"]
            return out

        def maxima(v):
            out = {"ap_choice": v["ap_choice"]}
            top_r = _max_tree(m, [v[f"r{ap}"] for ap in range(P)], "score_max_r")
            top_b = _max_tree(m, [v[f"b{ap}"] for ap in range(P)], "score_max_b")
            out["top_r"] = Mux(is_zero(top_r), 1, top_r)
            out["top_b"] = Mux(is_zero(top_b), 1, top_b)
            for ap in range(P):
                out[f"r{ap}"], out[f"b{ap}"] = v[f"r{ap}"], v[f"b{ap}"]
                out[f"wr{ap}"] = v["w_r"] * v[f"r{ap}"]
                out[f"wb{ap}"] = v["w_i"] * v[f"b{ap}"]
            return out

        def products(v):
            out = {"ap_choice": v["ap_choice"]}
            for ap in range(P):
                out[f"r{ap}"], out[f"b{ap}"] = v[f"r{ap}"], v[f"b{ap}"]
                out[f"x{ap}"] = v[f"wr{ap}"] * v["top_b"]
                out[f"y{ap}"] = v[f"wb{ap}"] * v["top_r"]
            return out

        def key(v):
            return {f"key{ap}": self._key(m, v["ap_choice"], v[f"r{ap}"], v[f"b{ap}"],
                                          v[f"x{ap}"], v[f"y{ap}"], f"combined_score{ap}")
                    for ap in range(P)}

        def compare(v):
            # AP a (< b) beats b when its key is at least b's: ties go to the lower index.
            out = {}
            for a in range(P):
                for b in range(a + 1, P):
                    out[f"ge{a}_{b}"] = ~less(v[f"key{a}"], v[f"key{b}"])
            return out

        pieces = [terms, resource, maxima, products, key, compare]
        assert len(pieces) == self.PIECES
        layers = p.score_layers
        values = {"ap_choice": self.ap_choice, "w_r": self.resource_weight,
                  "w_i": self.instruction_weight}
        for h in range(4):
            values[f"a{h}"] = self.ap_weights[h]
        for ap in range(P):
            for q in range(Q):
                values[f"vgpr{ap}_{q}"] = self.view.vgpr[ap * Q + q]
                values[f"sgpr{ap}_{q}"] = self.view.sgpr[ap * Q + q]
                values[f"slots{ap}_{q}"] = self.slots[ap][q]
            values[f"lds{ap}"] = self.view.lds[ap]
            values[f"b{ap}"] = self.history[ap]
        for delay in range(layers - self.PIECES):
            values = self._register(m, values, f"score_delay{delay}")
        for index, piece in enumerate(pieces):
            values = piece(values)
            if index < layers - 1 or index == self.PIECES - 1:
                values = self._register(m, values, f"score_{piece.__name__}")
        for a in range(P):
            for b in range(P):
                if a == b:
                    bit = Const(1, 1)
                elif a < b:
                    bit = values[f"ge{a}_{b}"]
                else:
                    bit = ~values[f"ge{b}_{a}"]
                m.d.comb += self.beats[a][b].eq(bit)
        return m


class PipelinedSelector(Selector):
    """:class:`hw.dispatch.selector.Selector` for the pipelined decision: the heads are the
    channels' candidates (from the registered match) and ``fit`` their fit masks with the APs
    in flight left out; the AP comes from the score pipeline's order (``beats``) or round
    robin, chosen for every channel in parallel with the channel choice and then selected by
    it. ``commit`` is the choice itself (the flags, LFSR and pointers move at the choice)."""

    @staticmethod
    def _ap_inputs(p: DispatcherParams) -> dict:
        return {"beats": In(beats_layout(p))}

    def _ap(self, m: Module, channel, channel_mask, ap_pointer):
        p = self._params
        R, P = p.channels, p.aps
        beats = self.beats
        round_robin = ~(equals(self.ap_choice, LOWEST) | equals(self.ap_choice, RESOURCE)
                        | equals(self.ap_choice, INSTRUCTION) | equals(self.ap_choice, COMBINED))
        # Each channel's pick as a one-hot mask, the picked channel's by an AND-OR (no index
        # is decoded or encoded between the match and the mask of the AP taken).
        picks = []
        for c in range(R):
            mask = self.fit[c]
            # The best candidate: a candidate that beats every other candidate (one at most:
            # of two APs, one beats the other).
            best = Cat(*(mask[a] & Cat(*(~mask[b] | beats[a][b] for b in range(P)
                                         if b != a)).all()
                         for a in range(P)))
            pick = Signal(P, name=f"ap_choice_c{c}")
            m.d.comb += pick.eq(Mux(round_robin, rotating_lowest_set(mask, ap_pointer), best))
            picks.append(pick)
        ap_mask = Signal(P, name="picked_ap_mask")
        m.d.comb += ap_mask.eq(or_all([Mux(channel_mask[c], picks[c], 0) for c in range(R)]))
        ap = Signal(range(max(P, 2)), name="picked_ap")
        m.d.comb += ap.eq(index_of(ap_mask))
        return ap, ap_mask
