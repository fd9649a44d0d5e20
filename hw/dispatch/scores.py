"""The decision pipeline's scores refreshed one AP a clock (``score_refresh = "rotating"``).

:class:`hw.dispatch.pipeline.ScorePipeline` works out every AP's embodiment 9 and 10 scores,
their maxima, two products per AP and a comparator per pair of APs in every clock: on the
default 16-AP build, 16 score datapaths, 64 wide products and 120 comparators of 54-bit keys.
:class:`RotatingScores` keeps the scores, their keys and the APs' order in registers and
refreshes one AP's a clock: one datapath, two products, 16 comparators and 16 equality tests.
What it computes is :mod:`model.dispatch.scores` (the model's ``score_refresh =
"rotating"``), clock for clock.

Model twin: :class:`model.dispatch.scores.RotatingScores`.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib.wiring import In

from hw.dispatch.logic import equals, is_zero, less, product, total
from hw.dispatch.params import DispatcherParams
from hw.dispatch.pipeline import ScorePipeline
from hw.dispatch.selector import COMBINED, INSTRUCTION, RESOURCE, _max_tree

__all__ = ["RotatingScores"]


class RotatingScores(ScorePipeline):
    """The APs' order for the AP choice (``beats``, as :class:`ScorePipeline`'s) from scores
    kept per AP and refreshed one AP a clock: AP ``t mod P`` with the inputs of clock ``t``,
    where clock 0 is the one after ``start``.

    The refresh is six pieces, in the same clocks as :class:`ScorePipeline`'s (``L =
    score_latency + 1`` clocks, the inputs of clock ``t`` ordered in ``beats`` from clock
    ``t + L``): the refreshed AP's inputs selected and its weighted terms; their sum ``R``;
    the kept ``R`` and ``B`` (written with this AP's, which the maxima see in the same clock)
    with their maxima and the weight products; the cross products; the key; the key's
    comparisons with the other APs' kept keys, which set the AP's row and column of the
    order and keep its key. Each kept value is written in the clock that reads it, so a
    refresh sees the refreshes of every earlier clock: the model's cycle order.

    The order is a register: it holds the idle GPU's after ``2 P`` clocks of the same inputs
    and ``L`` more (the dispatcher's START waits for them,
    :attr:`DispatcherParams.score_settle`).

    Attributes
    ----------
    start : In(1)
        The clock before clock 0: AP 0 is refreshed in the next clock.
    (the rest as :class:`ScorePipeline`)
    """

    @staticmethod
    def _members(p: DispatcherParams) -> dict:
        return {**ScorePipeline._members(p), "start": In(1)}

    def elaborate(self, platform):
        m = Module()
        p = self._params
        P, Q = p.aps, p.peus
        widths = p.widths
        history_bits = widths["history"]
        combined_bits = widths["resource_score"] + history_bits + 9
        ap_bits = max((P - 1).bit_length(), 1)

        # The AP refreshed in this clock.
        turn = Signal(ap_bits, name="score_turn")
        m.d.sync += turn.eq(Mux(self._restart() | equals(turn, P - 1), 0, turn + 1))

        def pick(values):
            return Cat(*values).word_select(turn, len(values[0])) if P > 1 else values[0]

        # The refreshed AP's inputs, then (as ScorePipeline) the delays and the pieces.
        values = {"ap_choice": self.ap_choice, "w_r": self.resource_weight,
                  "w_i": self.instruction_weight, "ap": turn,
                  "b": pick([self.history[ap] for ap in range(P)]),
                  "lds": pick([self.view.lds[ap] for ap in range(P)])}
        for h in range(4):
            values[f"a{h}"] = self.ap_weights[h]
        for q in range(Q):
            values[f"vgpr{q}"] = pick([self.view.vgpr[ap * Q + q] for ap in range(P)])
            values[f"sgpr{q}"] = pick([self.view.sgpr[ap * Q + q] for ap in range(P)])
            values[f"slots{q}"] = pick([self.slots[ap][q] for ap in range(P)])

        def carried(v, *keys):
            return {key: v[key] for key in keys}

        def terms(v):
            out = carried(v, "ap_choice", "w_r", "w_i", "ap", "b")
            sums = (total([v[f"vgpr{q}"] for q in range(Q)], m, "score_sum_vgpr"),
                    total([v[f"sgpr{q}"] for q in range(Q)], m, "score_sum_sgpr"),
                    v["lds"],
                    total([v[f"slots{q}"] for q in range(Q)], m, "score_sum_slots"))
            for h, r in enumerate(sums):
                out[f"term{h}"] = product(r, v[f"a{h}"], m, f"score_term{h}")
            return out

        def resource(v):
            out = carried(v, "ap_choice", "w_r", "w_i", "ap", "b")
            out["r"] = total([v[f"term{h}"] for h in range(4)], m, "score_r")[
                :widths["resource_score"]]
            return out

        # The kept R and B of every AP, written in the clock of the maxima.
        kept_r = [Signal(widths["resource_score"], name=f"kept_r{ap}") for ap in range(P)]
        kept_b = [Signal(history_bits, name=f"kept_b{ap}") for ap in range(P)]

        def maxima(v):
            out = carried(v, "ap_choice", "ap", "r", "b")
            mine = [equals(v["ap"], ap) for ap in range(P)]
            for ap in range(P):
                with m.If(mine[ap]):
                    m.d.sync += [kept_r[ap].eq(v["r"]), kept_b[ap].eq(v["b"])]
            top_r = _max_tree(m, self._seen(mine, v["r"], kept_r), "kept_max_r")
            top_b = _max_tree(m, self._seen(mine, v["b"], kept_b), "kept_max_b")
            out["top_r"] = Mux(is_zero(top_r), 1, top_r)
            out["top_b"] = Mux(is_zero(top_b), 1, top_b)
            out["wr"] = v["w_r"] * v["r"]
            out["wb"] = v["w_i"] * v["b"]
            return out

        def products(v):
            out = carried(v, "ap_choice", "ap", "r", "b")
            out["x"] = v["wr"] * v["top_b"]
            out["y"] = v["wb"] * v["top_r"]
            return out

        def key(v):
            score = Signal(signed(combined_bits + 1), name="rotating_combined_score")
            m.d.comb += score.eq(v["x"] - v["y"])
            by = {RESOURCE: v["r"], INSTRUCTION: ~v["b"][:history_bits],
                  COMBINED: Cat(score[:combined_bits], ~score[combined_bits])}
            value = Const(0, 1)
            for choice, keyed in by.items():
                value = Mux(equals(v["ap_choice"], choice), keyed, value)
            return {"ap": v["ap"], "key": value}

        # The kept keys and the order: ge[a][b] (a < b), AP a's key is at least AP b's.
        key_bits = combined_bits + 1
        kept_key = [Signal(key_bits, name=f"kept_key{ap}") for ap in range(P)]
        ge = {(a, b): Signal(name=f"kept_ge{a}_{b}") for a in range(P) for b in range(a + 1, P)}

        def compare(v):
            new = Signal(key_bits, name="rotating_key")
            m.d.comb += new.eq(v["key"])
            mine = [equals(v["ap"], ap) for ap in range(P)]
            below, same = [], []
            for b in range(P):
                below.append(named_bit(m, less(new, kept_key[b]), f"key_below{b}"))
                same.append(named_bit(m, equals(kept_key[b], new), f"key_same{b}"))
                with m.If(mine[b]):
                    m.d.sync += kept_key[b].eq(new)
            for (a, b), bit in ge.items():
                # The refreshed AP is a (its key at least b's) or b (a's at least its key).
                with m.If(mine[a]):
                    m.d.sync += bit.eq(~below[b])
                with m.Elif(mine[b]):
                    m.d.sync += bit.eq(below[a] | same[a])
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

    def _restart(self) -> Value:
        """What puts AP 0 next (``start``)."""
        return self.start

    @staticmethod
    def _seen(mine, new, kept) -> list:
        """The kept values the maxima see: the refreshed AP's new one (written at this clock's
        edge) in its place."""
        return [Mux(mine[ap], new, value) for ap, value in enumerate(kept)]


def named_bit(m: Module, value: Value, name: str) -> Signal:
    """``value`` (one bit) as a signal ``name`` of ``m``."""
    bit = Signal(name=name)
    m.d.comb += bit.eq(value)
    return bit
