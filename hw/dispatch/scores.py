"""Rotating scores (``score_refresh = "rotating"``): at most two APs' refreshed a clock.

:class:`hw.dispatch.pipeline.ScorePipeline` works out every AP's embodiment 9 and 10 scores,
their maxima, two products per AP and a comparator per pair of APs in every clock: on the
default 16-AP build, 16 score datapaths, 64 wide products and 120 comparators of 54-bit keys.
:class:`RotatingScores` keeps the scores, their keys and the APs' order in registers and
refreshes at most two APs' a clock: two datapaths, four products and 33 comparators, each
breaking a tie to the lower AP by its carry-in (:meth:`RotatingScores._at_least`; 33
equality tests beside them until 2026-11-28).
What it computes is :mod:`model.dispatch.scores` (the model's ``score_refresh =
"rotating"``), clock for clock.

Model twin: :class:`model.dispatch.scores.RotatingScores`.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib.wiring import In

from hw.dispatch.logic import equals, is_zero, named, total
from hw.dispatch.params import DispatcherParams
from hw.dispatch.pipeline import ScorePipeline
from hw.dispatch.selector import _max_tree

__all__ = ["RotatingScores"]


class RotatingScores(ScorePipeline):
    """The APs' order for the AP choice (``beats``, as :class:`ScorePipeline`'s) from scores
    kept per AP, refreshed for at most two APs a clock: AP ``t mod P`` in turn (clock 0 the
    one after ``start``), and the AP of the allocation taken ``1 + circuit_latency`` clocks
    before (the first clock whose view shows it), if another, each with the inputs of clock
    ``t``.

    The refresh is six pieces, in the same clocks as :class:`ScorePipeline`'s (``L =
    score_latency + 1`` clocks, the inputs of clock ``t`` ordered in ``beats`` from clock
    ``t + L``), on two lanes, the turn's and the allocation's: each lane's AP's inputs
    selected and weighted; their sum ``R``; the kept ``R`` and ``B`` (written with the
    lanes', which the maxima read in the same clock in their place) with their maxima and the
    weight products; the cross products; the keys; each key against the other APs' kept keys
    and the two lanes' against each other, which set the lanes' APs' rows and columns of the
    order and keep their keys. Each kept value is written in the clock that reads it, so a
    refresh sees the refreshes of every earlier clock: the model's cycle order.

    The order is a register: it holds the idle GPU's after ``2 P`` clocks of the same inputs
    and ``L`` more (the dispatcher's START waits for them,
    :attr:`DispatcherParams.score_settle`).

    Attributes
    ----------
    start : In(1)
        The clock before clock 0: AP 0 is refreshed in the next clock.
    allocate : In(1), allocate_ap : In(range(aps))
        The allocation taken at this clock's edge, and its AP.
    (the rest as :class:`ScorePipeline`)
    """

    LANES = ("turn", "taken")

    @staticmethod
    def _members(p: DispatcherParams) -> dict:
        return {**ScorePipeline._members(p), "start": In(1), "allocate": In(1),
                "allocate_ap": In(range(max(p.aps, 2)))}

    def elaborate(self, platform):
        m = Module()
        p = self._params
        P, Q = p.aps, p.peus
        widths = p.widths
        history_bits = widths["history"]
        ap_bits = max((P - 1).bit_length(), 1)

        # The lanes' APs in this clock: the turn, and the allocation whose view this clock
        # first shows (a delay of 1 + circuit_latency clocks), if on another AP.
        turn = Signal(ap_bits, name="score_turn")
        m.d.sync += turn.eq(Mux(self._restart() | equals(turn, P - 1), 0, turn + 1))
        taken, taken_ap = self.allocate, self.allocate_ap
        for delay in range(self._shown_after()):
            later = Signal(name=f"score_taken_d{delay}")
            later_ap = Signal(ap_bits, name=f"score_taken_ap_d{delay}")
            m.d.sync += [later.eq(taken), later_ap.eq(taken_ap)]
            taken, taken_ap = later, later_ap
        lane_ap = {"turn": (Const(1, 1), turn), "taken": (taken & ~equals(taken_ap, turn),
                                                          taken_ap)}

        # The lanes' inputs, then (as ScorePipeline) the delays and the pieces.
        values = {"ap_choice": self.ap_choice, "w_r": self.resource_weight,
                  "w_i": self.instruction_weight}
        for h in range(4):
            values[f"a{h}"] = self.ap_weights[h]
        for lane, (on, ap_of) in lane_ap.items():
            def pick(items, ap_of=ap_of):
                return Cat(*items).word_select(ap_of, len(items[0])) if P > 1 else items[0]
            values[f"{lane}_on"], values[f"{lane}_ap"] = on, ap_of
            values[f"{lane}_b"] = pick([self.history[ap] for ap in range(P)])
            values[f"{lane}_lds"] = pick([self.view.lds[ap] for ap in range(P)])
            for q in range(Q):
                values[f"{lane}_vgpr{q}"] = pick([self.view.vgpr[ap * Q + q] for ap in range(P)])
                values[f"{lane}_sgpr{q}"] = pick([self.view.sgpr[ap * Q + q] for ap in range(P)])
                values[f"{lane}_slots{q}"] = pick([self.slots[ap][q] for ap in range(P)])

        def carried(v, shared, per_lane):
            """The values a piece passes on: ``shared`` ones and each lane's ``per_lane``."""
            return {**{key: v[key] for key in shared},
                    **{f"{lane}_{key}": v[f"{lane}_{key}"]
                       for lane in self.LANES for key in per_lane}}

        def terms(v):
            out = carried(v, ("ap_choice", "w_r", "w_i"), ("b",))
            for lane in self.LANES:
                # The lane's AP one-hot, decoded here so that no later clock decodes it.
                out[f"{lane}_own"] = Cat(*(v[f"{lane}_on"] & equals(v[f"{lane}_ap"], ap)
                                           for ap in range(P)))
                sums = (total([v[f"{lane}_vgpr{q}"] for q in range(Q)], m, f"{lane}_sum_vgpr"),
                        total([v[f"{lane}_sgpr{q}"] for q in range(Q)], m, f"{lane}_sum_sgpr"),
                        v[f"{lane}_lds"],
                        total([v[f"{lane}_slots{q}"] for q in range(Q)], m,
                              f"{lane}_sum_slots"))
                # Each weight times its sum in a hard multiplier (the LFE5U-85F has 156; the
                # default build then uses 27, not 19): 824 LUT4 sites fewer there than
                # shifted copies summed in LUTs and carry chains (:func:`product`).
                for h, r in enumerate(sums):
                    out[f"{lane}_term{h}"] = named(m, r * v[f"a{h}"], f"{lane}_term{h}")
            return out

        def resource(v):
            out = carried(v, ("ap_choice", "w_r", "w_i"), ("own", "b"))
            for lane in self.LANES:
                out[f"{lane}_r"] = total([v[f"{lane}_term{h}"] for h in range(4)], m,
                                         f"{lane}_r")[:widths["resource_score"]]
            return out

        # The kept R and B of every AP, written in the clock of the maxima.
        kept_r = [Signal(widths["resource_score"], name=f"kept_r{ap}") for ap in range(P)]
        kept_b = [Signal(history_bits, name=f"kept_b{ap}") for ap in range(P)]

        def mine(v, lane):
            return [v[f"{lane}_own"][ap] for ap in range(P)]

        def maxima(v):
            out = carried(v, ("ap_choice",), ("own", "r", "b"))
            lanes = [(mine(v, lane), v[f"{lane}_r"], v[f"{lane}_b"]) for lane in self.LANES]
            for own, r, b in lanes:
                for ap in range(P):
                    with m.If(own[ap]):
                        m.d.sync += [kept_r[ap].eq(r), kept_b[ap].eq(b)]
            top_r = _max_tree(m, self._seen([(own, r) for own, r, _ in lanes], kept_r),
                              "kept_max_r")
            top_b = _max_tree(m, self._seen([(own, b) for own, _, b in lanes], kept_b),
                              "kept_max_b")
            out["top_r"] = Mux(is_zero(top_r), 1, top_r)
            out["top_b"] = Mux(is_zero(top_b), 1, top_b)
            for lane in self.LANES:
                out[f"{lane}_wr"] = v["w_r"] * v[f"{lane}_r"]
                out[f"{lane}_wb"] = v["w_i"] * v[f"{lane}_b"]
            return out

        def products(v):
            out = carried(v, ("ap_choice",), ("own", "r", "b"))
            for lane in self.LANES:
                out[f"{lane}_x"] = v[f"{lane}_wr"] * v["top_b"]
                out[f"{lane}_y"] = v[f"{lane}_wb"] * v["top_r"]
            return out

        def key(v):
            out = carried(v, (), ("own",))
            for lane in self.LANES:
                out[f"{lane}_key"] = self._key(m, v["ap_choice"], *(
                    v[f"{lane}_{x}"] for x in ("r", "b", "x", "y")), f"{lane}_combined_score")
            return out

        # The kept keys and the order: ge[a, b] (a < b), AP a's key is at least AP b's.
        key_bits = self._key_bits()
        kept_key = [Signal(key_bits, name=f"kept_key{ap}") for ap in range(P)]
        ge = {(a, b): Signal(name=f"kept_ge{a}_{b}") for a in range(P) for b in range(a + 1, P)}

        def compare(v):
            new, own, ge_lane = {}, {}, {}
            for lane in self.LANES:
                new[lane] = Signal(key_bits, name=f"{lane}_key")
                m.d.comb += new[lane].eq(v[f"{lane}_key"])
                own[lane] = mine(v, lane)
                # The lane's AP is below AP c (the lane's one-hot AP, bits below c).
                lower = [Const(0, 1)] + [Cat(*own[lane][:c]).any() for c in range(1, P)]
                ge_lane[lane] = [named(m, self._at_least(new[lane], kept_key[c], lower[c]),
                                       f"{lane}_ge{c}") for c in range(P)]
                for b in range(P):
                    with m.If(own[lane][b]):
                        m.d.sync += kept_key[b].eq(new[lane])
            t, d = own["turn"], own["taken"]
            # The two lanes' APs against each other, the turn's the lower: in the turn's
            # row in place of the taken AP's kept key.
            turn_lower = Cat(*(d[c] & Cat(*t[:c]).any() for c in range(1, P))).any()
            pair = named(m, self._at_least(new["turn"], new["taken"], turn_lower),
                         "turn_ge_taken")
            turn_ge = [named(m, Mux(d[c], pair, ge_lane["turn"][c]), f"turn_ge_or_pair{c}")
                       for c in range(P)]
            for (a, b), bit in ge.items():
                # A refreshed AP's new key against the other's (the other lane's new key
                # when both are refreshed, else its kept one); the turn's first.
                with m.If(t[a]):
                    m.d.sync += bit.eq(turn_ge[b])
                with m.Elif(t[b]):
                    m.d.sync += bit.eq(turn_ge[a])
                with m.Elif(d[a]):
                    m.d.sync += bit.eq(ge_lane["taken"][b])
                with m.Elif(d[b]):
                    m.d.sync += bit.eq(ge_lane["taken"][a])
            return {}

        pieces = [terms, resource, maxima, products, key, compare]
        assert len(pieces) == self.PIECES
        layers = p.score_layers
        for delay in range(layers - self.PIECES):
            values = self._register(m, values, f"score_delay{delay}")
        for index, piece in enumerate(pieces):
            values = piece(values)
            if index < layers - 1 and index < self.PIECES - 1:
                values = self._register(m, values, f"score_{piece.__name__}")
        for a in range(P):
            for b in range(P):
                bit = Const(1, 1) if a == b else ge[a, b] if a < b else ~ge[b, a]
                m.d.comb += self.beats[a][b].eq(bit)
        return m

    @staticmethod
    def _at_least(a, b, lower) -> Value:
        """``a >= b`` when ``lower``, else ``a <= b`` (unsigned, one width): whether the key
        of the lower-numbered AP of two is at least the other's (ties to the lower AP), from
        one comparator and no equality test: ``2 a + lower - (2 b + 1)`` is negative when
        ``a < b`` with ``lower`` and when ``a <= b`` without."""
        negative = (Cat(lower, a) - Cat(Const(1, 1), b))[len(a) + 1]
        return negative ^ lower

    def _shown_after(self) -> int:
        """Clocks from an allocation to the first view that shows it."""
        return 1 + self._params.policy.circuit_latency

    def _restart(self) -> Value:
        """What puts AP 0 next (``start``)."""
        return self.start

    @staticmethod
    def _seen(lanes, kept) -> list:
        """The kept values the maxima see: each refreshed AP's new one (``lanes``: its
        one-hot AP and value per lane; written at this clock's edge) in its place."""
        seen = list(kept)
        for own, new in lanes:
            seen = [Mux(own[ap], new, value) for ap, value in enumerate(seen)]
        return seen
