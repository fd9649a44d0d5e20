"""The target WG and the target AP: selection rules, embodiment 2's windows, the a41/a42
tie-break with its 16-bit LFSR, and the AP choice (round robin, lowest index, embodiment 9's
resource score, embodiment 10's history, or both combined), all on integers.

Everything here is combinational from the clock's registers, except the selection state the
component keeps (tie-break flags, LFSR, channel and AP pointers, the MIAOW-like buffer, the
window counter), which changes only in the clock edge after a dispatch is carried out
(``commit``), so a stale abort leaves it as it was.

Model twin: :mod:`model.dispatch.selector` (the baselines' rules:
:mod:`model.dispatch.baselines`).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.dispatch.logic import (
    arg_best,
    at_or_after,
    equals,
    first_set,
    index_of,
    is_zero,
    less,
    lowest_set,
    named,
    nth_set_mask,
    popcount,
    remainder,
    rotating_lowest_set,
    total,
)
from hw.dispatch.matcher import slots_layout
from hw.dispatch.params import WINDOW_BITS, DispatcherParams
from hw.dispatch.views import view_layout
from model.dispatch.config import AP_CHOICES, SELECTIONS
from model.dispatch.engine import Lfsr

__all__ = ["Selector", "window_end_bits"]


def window_end_bits(priorities: int) -> int:
    """Width of the running sum of ``priorities`` window lengths (and of the counter)."""
    return WINDOW_BITS + max(priorities - 1, 0).bit_length()

MULTI, STRICT, MIAOW, GPGPUSIM = (SELECTIONS.index(name)
                                  for name in ("multi", "strict", "blocking_buffer",
                                               "rr_first_fit"))
ROUND_ROBIN, LOWEST, RESOURCE, INSTRUCTION, COMBINED = (
    AP_CHOICES.index(name)
    for name in ("round_robin", "lowest", "resource", "instruction", "combined"))


def _max_tree(m: Module, values, name: str):
    """The largest of ``values`` (unsigned), a balanced tree of comparators."""
    level = 0
    values = list(values)
    while len(values) > 1:
        merged = []
        for k in range(0, len(values) - 1, 2):
            a, b = values[k], values[k + 1]
            larger = Signal(max(len(a), len(b)), name=f"{name}_l{level}_{k // 2}")
            m.d.comb += larger.eq(Mux(less(a, b), b, a))
            merged.append(larger)
        if len(values) % 2:
            merged.append(values[-1])
        values, level = merged, level + 1
    return values[0]


class Selector(wiring.Component):
    """Picks the target channel and AP of the clock.

    Attributes
    ----------
    heads, fit : In
        The channels' heads and the matcher's fit masks.
    view, slots : In
        For embodiment 9's score ``R = sum a_h r_h``: ``r`` is the view summed over the AP's
        PEUs (VGPR, SGPR), its LDS view and its free wave slots.
    history : In(ArrayLayout(history bits, aps))
        Embodiment 10's history of every AP (the exponential average).
    selection, ap_choice, rotate, resource_weight, instruction_weight, ap_weights :
        The configuration registers (see :class:`hw.dispatch.params.ConfigAddress`).
    window_ends : In(ArrayLayout(window_end_bits(priorities), priorities))
        Embodiment 2's windows as running sums: entry ``y`` is the sum of the lengths of
        windows ``0 .. y`` (the dispatcher's registers, written with the windows).
    window_ends_next : In(ArrayLayout(window_end_bits(priorities), priorities))
        What ``window_ends`` holds from the next clock.
    lfsr_load, lfsr_value : In
        A configuration write of the LFSR's state.
    start : In(1)
        The clock before cycle 0: the window counter restarts.
    running : In(1)
        The window counter advances.
    evaluate : In(1)
        The dispatcher decides in this clock (running, and the output not held): the
        MIAOW-like buffer may be filled.
    commit : In(1)
        The picked WG was placed (the selection state moves on).
    picked : Out(1)
        A WG is picked (``channel``), and ``ap`` is its target.
    matched : Out(1)
        Some head matched in the sense of the selection rule (embodiment 3's counter).
    promoted : Out(range(priorities)), windowed : Out(1)
        The priority embodiment 2 promotes now, and whether windows are on.
    """

    def __init__(self, params: DispatcherParams):
        self._params = params
        super().__init__(self._ports(params))

    def _ports(self, p: DispatcherParams) -> dict:
        """The signature's members: the AP choice's inputs (:meth:`_ap_inputs`), then the
        rest."""
        R, P, Y = p.channels, p.aps, p.priorities
        return {
            "heads": In(data.ArrayLayout(p.head_layout, R)),
            "fit": In(data.ArrayLayout(P, R)),
            **self._ap_inputs(p),
            "selection": In(2),
            "ap_choice": In(3),
            "window_ends": In(data.ArrayLayout(window_end_bits(Y), Y)),
            "window_ends_next": In(data.ArrayLayout(window_end_bits(Y), Y)),
            "lfsr_load": In(1),
            "lfsr_value": In(16),
            "start": In(1),
            "running": In(1),
            "evaluate": In(1),
            "commit": In(1),
            "picked": Out(1),
            "channel": Out(range(max(R, 2))),
            "channel_mask": Out(R),
            "ap": Out(range(max(P, 2))),
            "ap_mask": Out(P),
            "matched": Out(1),
            "promoted": Out(range(max(Y, 2))),
            "windowed": Out(1),
        }

    @staticmethod
    def _ap_inputs(p: DispatcherParams) -> dict:
        return {"view": In(view_layout(p)), "slots": In(slots_layout(p)),
                "history": In(data.ArrayLayout(p.widths["history"], p.aps)),
                "resource_weight": In(8), "instruction_weight": In(8),
                "ap_weights": In(data.ArrayLayout(p.ap_weight_bits, 4))}

    def _lfsr_seed(self) -> int:
        return self._params.policy.lfsr_seed

    def _windows(self, m: Module):
        """Embodiment 2: the window counter (cycle mod the windows' sum) and the priority it
        promotes. The windows arrive as their running sums (``window_ends``, registers the
        dispatcher keeps with the window registers, and ``window_ends_next``, what those
        registers hold from the next clock), and the promoted priority is itself a register,
        computed from the next position and the next sums: no adder or comparator of the
        windows lies in the decision's path."""
        p = self._params
        Y = p.priorities
        period_bits = window_end_bits(Y)
        position = Signal(period_bits, name="window_position")
        period = Signal(period_bits, name="window_period")
        m.d.comb += period.eq(self.window_ends[Y - 1])
        following = Signal(period_bits, name="window_position_next")
        m.d.comb += following.eq(Mux(self.start, 0, Mux(
            self.running, Mux(~less(position + 1, period), 0, position + 1), position)))
        m.d.sync += position.eq(following)
        prefix = [0] + [self.window_ends_next[y] for y in range(Y)]
        promoted_next = Const(0, max((Y - 1).bit_length(), 1))
        for y in reversed(range(Y)):
            promoted_next = Mux(self._in_window(following, prefix[y], prefix[y + 1]), y,
                                promoted_next)
        # Reset values: position 0 with the windows the dispatcher was built with.
        windows = list(p.policy.windows) + [0] * (Y - len(p.policy.windows))
        first = next((y for y, length in enumerate(windows) if length), 0)
        promoted = Signal(range(max(Y, 2)), name="window_promoted", init=first)
        windowed = Signal(name="windows_on", init=int(windows[0] != 0))
        m.d.sync += [promoted.eq(promoted_next), windowed.eq(self.window_ends_next[0].any())]
        m.d.comb += [self.promoted.eq(promoted), self.windowed.eq(windowed)]

    @staticmethod
    def _in_window(position, start, end):
        """Window ``[start, end)`` holds the counter's position."""
        return ~less(position, start) & less(position, end)

    def _flag_updates(self, m: Module, flags, channel, tied, clear, priority) -> None:
        """Step a42's flags after a tie-break among ``tied``: the chosen channel's flag is set
        when some tied flag was clear; when all were set, the others' are cleared."""
        for c, flag in enumerate(flags):
            with m.If(clear.any()):
                with m.If(equals(channel, c)):
                    self._write_bit(m, flag, priority, 1)
            with m.Elif(tied[c] & ~equals(channel, c)):
                self._write_bit(m, flag, priority, 0)

    @staticmethod
    def _write_bit(m: Module, flag, priority, value: int) -> None:
        """``flag``'s bit ``priority`` takes ``value`` (a comparison per bit: a write to a bit
        selected by a register would be a case with no arm for the values past the flags)."""
        for y in range(len(flag)):
            with m.If(equals(priority, y)):
                m.d.sync += flag[y].eq(value)

    def elaborate(self, platform):
        m = Module()
        p = self._params
        R, P, Y = p.channels, p.aps, p.priorities
        heads = self.heads
        self._windows(m)

        valid = Cat(*(heads[c].valid for c in range(R)))
        matches = Signal(R, name="matches")
        m.d.comb += matches.eq(Cat(*(self.fit[c].any() for c in range(R))))
        channel_pointer = Signal(range(max(R, 2)), name="channel_pointer")
        ap_pointer = Signal(range(max(P, 2)), name="ap_pointer")

        # -- embodiment 1 with embodiment 2's ranks and the a41/a42 tie-break ---------------
        key_bits = max(Y.bit_length(), 1)
        keys = []
        for c in range(R):
            key = Signal(key_bits, name=f"rank_c{c}")
            m.d.comb += key.eq(Mux(self.windowed & equals(heads[c].priority, self.promoted), 0,
                                   heads[c].priority + 1))
            keys.append(key)
        # A head is tied when it matches and no matching head ranks better: every pair of
        # ranks is compared beside the match (the ranks come from registers), so the match
        # adds two gates, not a chain of comparators through the channels.
        tied = Signal(R, name="tied")
        m.d.comb += tied.eq(Cat(*(matches[c] & Cat(*(~matches[d] | ~less(keys[d], keys[c])
                                                     for d in range(R) if d != c)).all()
                                  if R > 1 else matches[c] for c in range(R))))
        _, first_tied = first_set(tied)
        tie_priority = Signal(range(max(Y, 2)), name="tie_priority")
        m.d.comb += tie_priority.eq(Cat(*(heads[c].priority for c in range(R)))
                                    .word_select(first_tied, len(heads[0].priority)))
        flags = [Signal(Y, name=f"selected_c{c}") for c in range(R)]
        # Every tied head has the tie's priority, so each channel's flag is read at its own
        # head's priority, beside the ranking rather than after it.
        flag_now = Cat(*(flags[c].bit_select(heads[c].priority, 1) for c in range(R)))
        clear = Signal(R, name="tie_clear")
        m.d.comb += clear.eq(tied & ~flag_now)
        candidates = Signal(R, name="tie_candidates")
        m.d.comb += candidates.eq(Mux(clear.any(), clear, tied))
        lfsr = Signal(16, name="lfsr", init=self._lfsr_seed())
        stepped = Signal(16, name="lfsr_next")
        m.d.comb += stepped.eq((lfsr >> 1) ^ Mux(lfsr[0], Lfsr.TAPS, 0))
        count = popcount(candidates)
        pick = Const(0, max((R - 1).bit_length(), 1))
        for k in range(2, R + 1):
            # (By residues, not Yosys's divider.)
            pick = Mux(equals(count, k), remainder(stepped, k, m, f"lfsr_mod{k}"), pick)
        tie_index = Signal(range(max(R, 2)), name="tie_index")
        m.d.comb += tie_index.eq(pick)
        several = Signal(name="tie_several")
        m.d.comb += several.eq(~less(popcount(tied), 2))
        # The channel as a one-hot mask (its index is encoded beside its uses).
        multi_channel = Mux(several, nth_set_mask(candidates, tie_index), lowest_set(tied))

        # -- the baselines: strict priority, the MIAOW-like buffer, GPGPU-Sim-like first fit --
        prio_best = Const((1 << key_bits) - 1, key_bits)
        for c in range(R):              # each step named, as best_rank's
            prio_best = named(m, Mux(valid[c] & less(heads[c].priority, prio_best),
                                     heads[c].priority, prio_best), f"strict_best_upto_c{c}")
        strict_best = Signal(key_bits, name="strict_best")
        m.d.comb += strict_best.eq(prio_best)
        strict = named(m, rotating_lowest_set(
            named(m, Cat(*(valid[c] & equals(heads[c].priority, strict_best)
                           for c in range(R))), "strict_candidates"), channel_pointer),
            "strict_channel")
        first_channel = named(m, rotating_lowest_set(matches, channel_pointer), "first_channel")
        locked = Signal(name="buffer_full")
        locked_channel = Signal(range(max(R, 2)), name="buffer_channel")
        fill = named(m, rotating_lowest_set(valid, channel_pointer), "fill_channel")
        fill_channel = index_of(fill)
        miaow_channel = Mux(locked, Const(1, R) << locked_channel, fill)

        # The picked channel as a one-hot mask (``channel_mask``) and its index.
        chosen = Signal(R, name="picked_channel_mask")
        picked = Signal(name="picked_any")
        selection = self.selection
        with m.Switch(selection):
            with m.Case(STRICT):
                m.d.comb += [chosen.eq(strict), picked.eq((strict & matches).any())]
            with m.Case(MIAOW):
                m.d.comb += [chosen.eq(miaow_channel),
                             picked.eq((locked | fill.any()) & (miaow_channel & matches).any())]
            with m.Case(GPGPUSIM):
                m.d.comb += [chosen.eq(first_channel), picked.eq(first_channel.any())]
            with m.Default():
                m.d.comb += [chosen.eq(multi_channel), picked.eq(matches.any())]
        channel = Signal(range(max(R, 2)), name="picked_channel")
        m.d.comb += channel.eq(index_of(chosen))
        m.d.comb += [self.channel.eq(channel), self.channel_mask.eq(chosen),
                     self.picked.eq(picked),
                     self.matched.eq(Mux(equals(selection, MULTI), matches.any(), picked))]

        ap, ap_mask = self._ap(m, channel, chosen, ap_pointer)
        m.d.comb += [self.ap.eq(ap), self.ap_mask.eq(ap_mask)]

        # -- the state ------------------------------------------------------------------------
        with m.If(self.evaluate & equals(selection, MIAOW) & ~locked & fill.any()):
            m.d.sync += [locked.eq(1), locked_channel.eq(fill_channel),
                         channel_pointer.eq(index_of(fill.rotate_left(1)))]
        with m.If(self.commit):
            # The AP after the target, wrapping: the index of the mask turned by one.
            m.d.sync += ap_pointer.eq(index_of(ap_mask.rotate_left(1)))
            with m.If(equals(selection, STRICT) | equals(selection, GPGPUSIM)):
                m.d.sync += channel_pointer.eq(index_of(chosen.rotate_left(1)))
            with m.If(equals(selection, MIAOW)):
                m.d.sync += locked.eq(0)
            with m.If(equals(selection, MULTI) & several):
                m.d.sync += lfsr.eq(stepped)
                self._flag_updates(m, flags, channel, tied, clear, tie_priority)
        with m.If(self.lfsr_load):
            m.d.sync += lfsr.eq(self.lfsr_value)
        return m

    def _ap(self, m: Module, channel, channel_mask, ap_pointer) -> tuple[Value, Value]:
        """The target AP among those the picked channel's head fits, by the AP choice: its
        index and its one-hot mask."""
        p = self._params
        R, P, Q = p.channels, p.aps, p.peus
        fit = Signal(P, name="ap_candidates")
        m.d.comb += fit.eq(Cat(*(self.fit[c] for c in range(R))).word_select(channel, P))
        weights = self.ap_weights
        resource = []
        for ap in range(P):
            vgpr = total([self.view.vgpr[ap * Q + q] for q in range(Q)], m, f"sum_vgpr{ap}")
            sgpr = total([self.view.sgpr[ap * Q + q] for q in range(Q)], m, f"sum_sgpr{ap}")
            slots = total([self.slots[ap][q] for q in range(Q)], m, f"sum_slots{ap}")
            score = Signal(p.widths["resource_score"], name=f"resource_score{ap}")
            m.d.comb += score.eq(total([weights[0] * vgpr, weights[1] * sgpr,
                                         weights[2] * self.view.lds[ap], weights[3] * slots],
                                        m, f"resource_terms{ap}"))
            resource.append(score)
        history = [self.history[ap] for ap in range(P)]
        _, lowest_ap = first_set(fit)
        _, round_robin_ap = at_or_after(fit, ap_pointer)
        _, resource_ap = arg_best(m, fit, resource, lambda a, b: a > b, "emb9")
        _, instruction_ap = arg_best(m, fit, history, lambda a, b: a < b, "emb10")
        # Combined: w_r R / max R - w_i B / max B, cross-multiplied by max R max B (> 0); the
        # maxima among the candidates, or (combined_scale = "all", a build choice) among every
        # AP, which leaves the products independent of the match and the chosen channel.
        every = p.combined_all
        top_r = _max_tree(m, [resource[ap] if every else Mux(fit[ap], resource[ap], 0)
                              for ap in range(P)], "max_r")
        top_b = _max_tree(m, [history[ap] if every else Mux(fit[ap], history[ap], 0)
                              for ap in range(P)], "max_b")
        top_r1 = Mux(is_zero(top_r), 1, top_r)
        top_b1 = Mux(is_zero(top_b), 1, top_b)
        width = p.widths["resource_score"] + p.widths["history"] + 9
        combined = []
        for ap in range(P):
            value = (self.resource_weight * resource[ap] * top_b1
                     - self.instruction_weight * history[ap] * top_r1)
            # At the difference's own width where that is narrower (a wider signal would
            # only repeat its sign bit, which the comparisons then read as a narrower operand).
            score = Signal(signed(min(len(value), width + 1)), name=f"combined_score{ap}")
            m.d.comb += score.eq(value)
            combined.append(score)
        _, combined_ap = arg_best(m, fit, combined, lambda a, b: a > b, "emb910")
        ap = Signal(range(max(P, 2)), name="picked_ap")
        with m.Switch(self.ap_choice):
            with m.Case(LOWEST):
                m.d.comb += ap.eq(lowest_ap)
            with m.Case(RESOURCE):
                m.d.comb += ap.eq(resource_ap)
            with m.Case(INSTRUCTION):
                m.d.comb += ap.eq(instruction_ap)
            with m.Case(COMBINED):
                m.d.comb += ap.eq(combined_ap)
            with m.Default():
                m.d.comb += ap.eq(round_robin_ap)
        ap_mask = Signal(P, name="picked_ap_mask")
        m.d.comb += ap_mask.eq(Const(1, P) << ap)
        return ap, ap_mask
