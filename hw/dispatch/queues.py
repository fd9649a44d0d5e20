"""The channels of the dispatcher: admission, per-channel FIFOs and embodiment 3's split state.

One workgroup-in stream per channel. A WG accepted in clock ``t`` is checked against an idle
AP as the matcher's circuit sees it (the model's admission check, step 2): a WG that can never
fit, or has no waves (outside the port contract; the model's readers refuse it), is refused
(``reject`` rises in clock ``t + 1``) and dropped; otherwise what its head needs is
precomputed (waves per PEU, VGPR/SGPR blocks of a PEU with ``quot`` or ``quot + 1`` waves,
the LDS of a one-wave part) and it enters the channel's FIFO, where it is the head from clock
``t + 1`` if the FIFO was empty.

With a pipelined decision (``decision_pipeline = k``) the match reads two WGs of each channel
at positions behind those already chosen, so the FIFO is a row of registers, each presented
(``entries``), and the two positions are given as indices into them (``row_part``,
``row_entry``), a split head's parts counting as positions of their own.

With in-order barriers built (``DispatcherParams.barriers``) each channel also counts its WGs
running (``running``: dispatched, ``take``, and not released, ``released``), the model's
``Queues.inflight``; the matcher holds a barrier head while the count is not zero. A count is
``running_bits`` wide (up to every WG the GPU can hold at once) and changes at the clock edge:
a dispatch or release of clock ``t`` is seen from clock ``t + 1``, as the model's cycle sees
those of the cycle before (a release of cycle ``t`` is taken in clock ``t - 1``).

Model twin: :mod:`model.dispatch.queues`.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.dispatch.logic import (
    add,
    at_most,
    ceil_div_by_reciprocal,
    ceil_div_limited,
    equals,
    is_zero,
    less,
    lookup,
    named,
    product,
    saturate,
    subtract,
)
from hw.dispatch.params import DispatcherParams

__all__ = ["ChannelQueues"]


class ChannelQueues(wiring.Component):
    """Admission, FIFOs and split state of every channel.

    Attributes
    ----------
    wg_in : list of In(stream.Signature(params.workgroup_layout))
        One stream per channel; ``ready`` is high while the channel's FIFO has room (a WG
        that will be refused needs room too).
    splitting : In(1)
        Embodiment 3 is on (threshold > 0 and embodiment 1's selection): an independent WG
        that fits only as single waves is admitted (it will be split).
    take : In(channels)
        Bit ``c``: the head of channel ``c`` was dispatched this clock (a whole WG, or one
        part of a split one; the last part pops the WG).
    split : In(channels)
        Bit ``c``: split the head of channel ``c`` into one-wave parts from the next clock.
    heads : Out(ArrayLayout(params.head_layout, channels))
        Each channel's head as the matcher sees it; ``valid`` is 0 for an empty channel.
    splittable : Out(channels)
        Bit ``c``: ``split`` would split channel ``c``'s head, the one after this clock's
        ``take`` (valid, independent, two waves or more, not already split).
    reject : Out(channels)
        Bit ``c``: the WG accepted on channel ``c`` in the previous clock was refused.
    released : In(channels)
        Barriers built only: bit ``c``: a release of a WG (or part) of channel ``c`` was
        applied this clock.
    running : Out(channels)
        Barriers built only: bit ``c``: channel ``c`` has a WG (or part) running, dispatched
        in an earlier clock and not released before this clock (registered).
    in_flight : In(ArrayLayout(range(k + 1), channels))
        Pipelined decision only: WGs (or parts) of each channel chosen and not dispatched.
    entries : Out(ArrayLayout(ArrayLayout(params.head_layout, k + 3), channels))
        Pipelined decision only: what a row can be, so that the match can test them all and
        select afterwards: entries ``0 .. k + 1`` as whole WGs, then entry 0 as a one-wave
        part (``valid`` while a split head has parts left; its ``part`` number is 0: the
        number a part is dispatched with is the head's, ``heads[c].part``, at its dispatch).
    row_part, row_entry : Out(ArrayLayout(ArrayLayout(...), 2), channels))
        Pipelined decision only: row ``r`` of channel ``c``, the WG at position
        ``in_flight + r`` from the head, is the part (``row_part``, entry ``k + 2``) or entry
        ``row_entry`` of ``entries`` (not ``valid`` beyond the last).
    """

    def __init__(self, params: DispatcherParams):
        self._params = params
        R = params.channels
        super().__init__({
            "wg_in": In(stream.Signature(params.workgroup_layout)).array(R),
            "splitting": In(1),
            "take": In(R),
            "split": In(R),
            "heads": Out(data.ArrayLayout(params.head_layout, R)),
            "splittable": Out(R),
            "reject": Out(R),
            **({"released": In(R), "running": Out(R)} if params.barriers else {}),
            **({"in_flight": In(data.ArrayLayout(range(params.pipeline + 1), R)),
                "entries": Out(data.ArrayLayout(
                    data.ArrayLayout(params.head_layout, params.pipeline + 3), R)),
                "row_part": Out(data.ArrayLayout(2, R)),
                "row_entry": Out(data.ArrayLayout(
                    data.ArrayLayout((params.pipeline + 2).bit_length(), 2), R))}
               if params.pipeline else {}),
        })

    def _admit(self, m: Module, c: int, wg) -> tuple:
        """``(admitted, queue entry)`` for the descriptor ``wg`` of channel ``c``."""
        p = self._params
        gpu, Q = p.gpu, p.peus
        seen_v, seen_s, seen_l = (p.seen_when_free(r) for r in ("vgpr", "sgpr", "lds"))
        waves = Signal.like(wg.waves, name=f"c{c}_waves")
        m.d.comb += waves.eq(wg.waves)
        # A WG with an in-order barrier is never split (its parts would carry no barrier, so
        # they could run beside the WGs it waits for): the model's Queues.
        whole_only = wg.barrier if p.barriers else Const(0, 1)
        # Waves on the busiest PEU (ceil(waves / Q)), quotient and remainder by Q.
        busiest = Signal(range(p.max_waves + 2), name=f"c{c}_busiest")
        quot = Signal(range(p.max_waves + 2), name=f"c{c}_quot")
        rem = Signal(range(max(Q, 2)), name=f"c{c}_rem")
        # (Tables of the narrow wave count, and products by shifts and adds: this logic lies
        # between the stream and the FIFO, in the clock that accepts the WG.)
        m.d.comb += [busiest.eq(lookup(waves, lambda w: -(-w // Q))),
                     quot.eq(lookup(waves, lambda w: w // Q)),
                     rem.eq(lookup(waves, lambda w: w % Q))]
        slots_ok = at_most(busiest, gpu.wave_slots)
        # (Each a signal: the comparisons below use their operands twice.)
        low_v = product(wg.vgpr, quot, m, f"c{c}_low_vgpr")
        low_s = product(wg.sgpr, quot, m, f"c{c}_low_sgpr")
        high_v = named(m, add(low_v, wg.vgpr), f"c{c}_high_vgpr")
        high_s = named(m, add(low_s, wg.sgpr), f"c{c}_high_sgpr")
        whole = (slots_ok & at_most(Mux(rem.any(), high_v, low_v), seen_v)
                 & at_most(Mux(rem.any(), high_s, low_s), seen_s) & at_most(wg.lds, seen_l))
        # A part's LDS is ceil(lds / waves) <= seen, that is lds <= waves * seen.
        parts = (self.splitting & wg.independent & ~less(waves, 2) & slots_ok
                 & at_most(wg.vgpr, seen_v) & at_most(wg.sgpr, seen_s)
                 & at_most(wg.lds, product(waves, seen_l, m, f"c{c}_parts_lds"))
                 & ~whole_only)
        admitted = Signal(name=f"c{c}_admitted")
        m.d.comb += admitted.eq((whole | parts) & ~is_zero(waves))   # waves = 0: refused

        part_lds = Signal(range(gpu.lds + 2), name=f"c{c}_part_lds")
        if p.changed_views:
            # The build made for the largest ECP5: by a multiplier (a DSP block) instead of
            # lds + 1 comparisons, each a carry chain.
            m.d.comb += part_lds.eq(ceil_div_by_reciprocal(wg.lds, waves, gpu.lds + 1, m,
                                                           f"c{c}_part_lds"))
        else:
            m.d.comb += part_lds.eq(ceil_div_limited(wg.lds, Mux(is_zero(waves), 1, waves),
                                                     gpu.lds + 1, m, f"c{c}_part_lds"))
        entry = Signal(p.queue_layout, name=f"c{c}_entry")
        m.d.comb += [
            entry.wg.eq(wg.wg),
            entry.priority.eq(wg.priority),
            entry.waves.eq(waves),
            entry.quot.eq(quot),
            entry.rem.eq(rem),
            entry.need_vgpr_lo.eq(saturate(low_v, gpu.vgpr + 1)),
            entry.need_vgpr_hi.eq(saturate(high_v, gpu.vgpr + 1)),
            entry.need_sgpr_lo.eq(saturate(low_s, gpu.sgpr + 1)),
            entry.need_sgpr_hi.eq(saturate(high_s, gpu.sgpr + 1)),
            entry.vgpr.eq(saturate(wg.vgpr, gpu.vgpr + 1)),
            entry.sgpr.eq(saturate(wg.sgpr, gpu.sgpr + 1)),
            entry.lds.eq(saturate(wg.lds, gpu.lds + 1)),
            entry.part_lds.eq(part_lds),
            entry.splittable.eq(wg.independent & ~whole_only & ~less(waves, 2)),
        ]
        if p.barriers:
            m.d.comb += entry.barrier.eq(wg.barrier)
        return admitted, entry

    def _present(self, m: Module, head, stored, valid, part, index) -> None:
        """Drive ``head`` (head layout) with the FIFO entry ``stored``, as its one-wave part
        ``index`` when ``part`` (embodiment 3: the lowest priority, ceil(lds / waves) LDS
        blocks)."""
        p = self._params
        gpu, Q = p.gpu, p.peus
        lowest = gpu.priorities - 1
        one_quot, one_rem = divmod(1, Q)
        m.d.comb += [
            head.valid.eq(valid),
            head.wg.eq(stored.wg),
            head.split.eq(part),
            head.part.eq(Mux(part, index, 0)),
            head.priority.eq(Mux(part, lowest, stored.priority)),
            head.waves.eq(Mux(part, 1, stored.waves)),
            head.quot.eq(Mux(part, one_quot, stored.quot)),
            head.rem.eq(Mux(part, one_rem, stored.rem)),
            head.need_vgpr_lo.eq(Mux(part, stored.vgpr if one_quot else 0,
                                     stored.need_vgpr_lo)),
            head.need_vgpr_hi.eq(Mux(part, saturate((one_quot + 1) * stored.vgpr,
                                                  gpu.vgpr + 1),
                                     stored.need_vgpr_hi)),
            head.need_sgpr_lo.eq(Mux(part, stored.sgpr if one_quot else 0,
                                     stored.need_sgpr_lo)),
            head.need_sgpr_hi.eq(Mux(part, saturate((one_quot + 1) * stored.sgpr,
                                                  gpu.sgpr + 1),
                                     stored.need_sgpr_hi)),
            head.lds.eq(Mux(part, stored.part_lds, stored.lds)),
            head.splittable.eq(~part & stored.splittable),
        ]
        if p.barriers:
            # A part of a split WG is a WG of its own, without the barrier (the model's parts
            # carry none).
            m.d.comb += head.barrier.eq(Mux(part, 0, stored.barrier))

    def elaborate(self, platform):
        m = Module()
        p = self._params
        for c in range(p.channels):
            source = self.wg_in[c]
            admitted, entry = self._admit(m, c, source.payload)
            if p.pipeline:
                accepted = self._positional(m, c, source, admitted, entry)
            else:
                accepted = self._fifo(m, c, source, admitted, entry)
            m.d.sync += self.reject[c].eq(accepted & ~admitted)
            if p.barriers:
                self._running(m, c)
        return m

    def _running(self, m: Module, c: int) -> None:
        """Channel ``c``'s count of running WGs: up by a dispatch, down by a release (both
        in one clock: unchanged). Never more than the records, so it cannot wrap."""
        count = Signal(self._params.running_bits, name=f"c{c}_running")
        up, down = self.take[c], self.released[c]
        with m.If(up & ~down):
            m.d.sync += count.eq(count + 1)
        with m.Elif(down & ~up):
            m.d.sync += count.eq(count - 1)
        m.d.comb += self.running[c].eq(count.any())

    def _fifo(self, m: Module, c: int, source, admitted, entry):
        """The one-clock decision's channel: a FIFO whose head is read."""
        p = self._params
        queue = fifo.SyncFIFO(width=p.queue_layout.size, depth=p.queue_depth)
        m.submodules[f"fifo{c}"] = queue
        accepted = source.valid & queue.w_rdy
        m.d.comb += [source.ready.eq(queue.w_rdy),
                     queue.w_data.eq(entry.as_value()),
                     queue.w_en.eq(accepted & admitted)]

        # Embodiment 3: while a head is split, it is presented as its next one-wave part;
        # the last part pops it.
        active = Signal(name=f"c{c}_split_active")
        left = Signal(range(p.max_waves + 1), name=f"c{c}_parts_left")
        stored = data.View(p.queue_layout, queue.r_data)
        head = self.heads[c]
        self._present(m, head, stored, queue.r_rdy, active, stored.waves - left)
        m.d.comb += self.splittable[c].eq(head.valid & head.splittable)
        take = self.take[c] & queue.r_rdy
        last = ~active | equals(left, 1)
        m.d.comb += queue.r_en.eq(take & last)
        with m.If(take):
            with m.If(last):
                m.d.sync += active.eq(0)
            with m.Else():
                m.d.sync += left.eq(left - 1)
        with m.Elif(self.split[c] & queue.r_rdy & ~active & stored.splittable):
            m.d.sync += [active.eq(1), left.eq(stored.waves)]
        return accepted

    def _positional(self, m: Module, c: int, source, admitted, entry):
        """The pipelined decision's channel: ``queue_depth`` entry registers that shift
        towards entry 0 when the head leaves, read at the two positions the match asks for
        (a multiplexer by a small index, no address arithmetic or memory read in the match's
        clock). Position ``i`` is the head's part ``waves - left + i`` while ``i < left``
        parts are left of a split head, otherwise entry ``i - left + 1`` (entry ``i`` with no
        split)."""
        p = self._params
        depth = p.queue_depth
        entries = [Signal(p.queue_layout, name=f"c{c}_entry{i}") for i in range(depth)]
        level = Signal(range(depth + 1), name=f"c{c}_level")
        ready = less(level, depth)
        accepted = source.valid & ready
        writing = accepted & admitted
        m.d.comb += source.ready.eq(ready)

        active = Signal(name=f"c{c}_split_active")
        left = Signal(range(p.max_waves + 1), name=f"c{c}_parts_left")
        stored, following = entries[0], entries[1]
        head = self.heads[c]
        self._present(m, head, stored, level.any(), active, stored.waves - left)

        # The match's two positions: small numbers (at most k + 1), so the index is the low
        # bits of position + 1 - left, exact whenever the position is past the parts. An index
        # at or beyond ``level`` selects an entry that is not ``valid``.
        index_bits = (p.pipeline + 2).bit_length()
        reachable = entries[:min(depth, p.pipeline + 2)]
        for r in range(2):
            position = self.in_flight[c] + r
            m.d.comb += [
                self.row_part[c][r].eq(active & less(position, left)),
                self.row_entry[c][r].eq(Mux(active, subtract(position + 1, left[:index_bits]),
                                               position)),
            ]
        for j, register in enumerate(reachable):
            self._present(m, self.entries[c][j], register, less(j, level), 0, 0)
        for j in range(len(reachable), p.pipeline + 2):
            m.d.comb += self.entries[c][j].valid.eq(0)
        self._present(m, self.entries[c][p.pipeline + 2], stored, active & level.any(), 1, 0)

        take = self.take[c] & level.any()
        pop = take & (~active | equals(left, 1))
        with m.If(take):
            with m.If(pop):
                m.d.sync += active.eq(0)
            with m.Else():
                m.d.sync += left.eq(left - 1)
        # Entry i takes entry i + 1 when the head leaves; a new WG goes behind the last. It is
        # written whether or not it is admitted (a refused one lies beyond ``level``), so the
        # admission check drives only the level, not every entry's enable.
        tail = Signal(range(depth + 1), name=f"c{c}_tail")
        m.d.comb += tail.eq(level - pop)
        for i, register in enumerate(entries):
            behind = entries[i + 1] if i + 1 < depth else register
            with m.If(accepted & equals(tail, i)):
                m.d.sync += register.eq(entry)
            with m.Elif(pop):
                m.d.sync += register.eq(behind)
        m.d.sync += level.eq(level + writing - pop)
        # Embodiment 3 splits the head left after this clock's take (the model splits after
        # the dispatch of its cycle).
        after = Signal(p.queue_layout, name=f"c{c}_after_take")
        m.d.comb += after.eq(Mux(pop, following, stored))
        splittable = Signal(name=f"c{c}_splittable")
        m.d.comb += [splittable.eq(Mux(pop, ~less(level, 2), level.any() & ~active)
                                   & after.splittable),
                     self.splittable[c].eq(splittable)]
        with m.If(self.split[c] & splittable):
            m.d.sync += [active.eq(1), left.eq(after.waves)]
        return accepted
