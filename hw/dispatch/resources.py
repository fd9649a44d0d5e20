"""The resource table: status registers, free wave slots, each AP's instruction power and its
history (embodiment 10, exponential average), and the allocation record of every in-flight WG
with the free list of record tags.

An allocation (``allocate`` high) takes the record's blocks and slots at the clock edge and
files the record under ``tag``; a release accepted in clock ``t`` reads the record of its tag
(asynchronously) and gives everything back at the same edge, so the blocks are free in the
status registers of clock ``t + 1``. One release per clock (``release.ready`` is always high).
In a pipelined build (``decision_pipeline``) what a release gives back (block masks, wave
slots, power) is registered as read from the record, with one bit per AP for the release
check, and ORed or added into the ``status`` and ``slots`` outputs (subtracted from the power
the history adds) a clock late: the outputs are the same in every clock, and the record read
and its check end at registers beside the record memory.

Model twin: :mod:`model.dispatch.resources`.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hw.dispatch.logic import add, block_mask, equals, less, subtract
from hw.dispatch.matcher import slots_layout
from hw.dispatch.params import DispatcherParams
from hw.dispatch.views import status_layout

__all__ = ["ResourceTable"]


class ResourceTable(wiring.Component):
    """The dispatcher's state of the GPU.

    Attributes
    ----------
    status : Out(status_layout(params))
        Bit ``i`` = block ``i``, 1 = free; reset: all free.
    slots : Out(slots_layout(params))
        Free wave slots per PEU; reset: all.
    history : Out(ArrayLayout(history bits, aps))
        Embodiment 10: ``x <- x - (x >> shift) + p`` every running clock, ``p`` the AP's
        power in this clock (the summed power of its WGs dispatched before this clock and not
        yet released); reset 0.
    tag : Out(range(records)), tag_valid : Out(1)
        The record the next allocation is filed under.
    allocate : In(1), record : In(params.record_layout)
        Take what ``record`` describes and file it under ``tag``.
    release : In(stream.Signature(params.release_layout))
        Give back the record ``tag``; always ready.
    history_shift : In, running : In(1)
    released : Out(channels)
        In-order barriers built only: bit ``c``: the release applied in this clock gave back
        a WG of channel ``c`` (the record's ``channel``); the channel's count of running WGs
        falls at the clock edge.
    error : Out(1)
        Sticky: a release named a tag not in flight, or a WG id other than its record's; such
        a release is ignored.
    """

    def __init__(self, params: DispatcherParams):
        self._params = params
        p = params
        super().__init__({
            "status": Out(status_layout(p)),
            "slots": Out(slots_layout(p)),
            "history": Out(data.ArrayLayout(p.widths["history"], p.aps)),
            "tag": Out(range(max(p.records, 2))),
            "tag_valid": Out(1),
            "allocate": In(1),
            "record": In(p.record_layout),
            "release": In(stream.Signature(p.release_layout)),
            "history_shift": In(range(p.history_shift_max + 1)),
            "running": In(1),
            "error": Out(1),
            **({"released": Out(p.channels)} if p.barriers else {}),
        })

    @staticmethod
    def _returned(start, length, n: int, m: Module | None = None, name: str = "give_end"):
        """The blocks a release gives back: those its record holds (the end a signal of
        ``m``, see :func:`hw.dispatch.logic.block_mask`)."""
        return block_mask(start, length, n, m, name)

    @staticmethod
    def _release_ok(valid, known, held_wg, wg):
        """A release (``valid``) is applied only if its tag is in flight (``known``) and
        names the WG its record holds; any other raises ``error`` and changes nothing."""
        return valid & known & (held_wg == wg)

    @staticmethod
    def _decayed(average, shift):
        """Embodiment 10's average less its decay, ``x - (x >> shift)``: at least 0, so the
        average's own width holds it."""
        return (average - (average >> shift))[:len(average)]

    def elaborate(self, platform):
        m = Module()
        p = self._params
        gpu, P, Q, N = p.gpu, p.aps, p.peus, p.records
        tag_shape = range(max(N, 2))

        # Record tags: after reset, tags 0 .. N - 1 are handed out in order from a counter;
        # released tags go round a ring, which is used once the counter is exhausted. (A ring
        # that started full would depend on memory contents, which a reset does not restore.)
        free = Memory(shape=tag_shape, depth=N, init=[])
        m.submodules.free_list = free
        free_read = free.read_port(domain="comb")
        free_write = free.write_port()
        fresh = Signal(range(N + 1), name="fresh_tags")
        head = Signal(range(max(N, 2)), name="free_head")
        tail = Signal(range(max(N, 2)), name="free_tail")
        returned = Signal(range(N + 1), name="free_count")
        unused = less(fresh, N)
        m.d.comb += [free_read.addr.eq(head),
                     self.tag.eq(Mux(unused, fresh, free_read.data)),
                     self.tag_valid.eq(unused | returned.any())]

        records = Memory(shape=p.record_layout, depth=N, init=[])
        m.submodules.records = records
        record_write = records.write_port()
        record_read = records.read_port(domain="comb")
        busy = Signal(N, name="in_flight")
        allocate = Signal(name="allocating")
        m.d.comb += allocate.eq(self.allocate & self.tag_valid)
        m.d.comb += [record_write.addr.eq(self.tag), record_write.data.eq(self.record),
                     record_write.en.eq(allocate)]

        release = self.release
        m.d.comb += [release.ready.eq(1), record_read.addr.eq(release.payload.tag)]
        held = record_read.data
        known = busy.bit_select(release.payload.tag, 1) & less(release.payload.tag, N)
        releasing = Signal(name="releasing")
        m.d.comb += releasing.eq(self._release_ok(release.valid, known, held.wg,
                                                  release.payload.wg))
        with m.If(release.valid & ~releasing):
            m.d.sync += self.error.eq(1)
        if p.barriers:
            m.d.comb += self.released.eq(Cat(*(releasing & equals(held.channel, c)
                                               for c in range(p.channels))))

        # Tags: pop on an allocation, push on a release (never the same tag).
        m.d.comb += [free_write.addr.eq(tail), free_write.data.eq(release.payload.tag),
                     free_write.en.eq(releasing)]
        from_ring = allocate & ~unused
        with m.If(allocate & unused):
            m.d.sync += fresh.eq(fresh + 1)
        with m.If(from_ring):
            m.d.sync += head.eq(Mux(equals(head, N - 1), 0, head + 1))
        with m.If(releasing):
            m.d.sync += tail.eq(Mux(equals(tail, N - 1), 0, tail + 1))
        m.d.sync += returned.eq(returned + releasing - from_ring)
        m.d.sync += busy.eq(Cat(*(
            (busy[i] | (allocate & equals(self.tag, i)))
            & ~(releasing & equals(release.payload.tag, i))
            for i in range(N))))

        # A pipelined build gives back a clock late, ORed or added into what the readers see
        # in the meantime: the record's masks, waves and power are registered as read (no
        # logic in front, so the registers sit by the record memory) with one bit per AP, the
        # release check and the AP's decode, and each reader selects by its AP's bit.
        if p.pipeline:
            released = Signal(P, name="released_aps")
            m.d.sync += released.eq(Cat(*(releasing & equals(held.ap, ap) for ap in range(P))))

        def later(value, name: str):
            register = Signal.like(value, name=f"released_{name}", init=0)
            m.d.sync += register.eq(value)
            return register

        # Blocks: the allocation's and the release's masks, per PEU of their AP.
        taken = self.record
        for name, n in p.sizes.items():
            per = Q if name != "lds" else 1
            for q in range(per):
                if name == "lds":
                    take_start, take_length = taken.lds_start, taken.lds_length
                    give_start, give_length = held.lds_start, held.lds_length
                else:
                    take_start = taken[f"{name}_start"][q]
                    take_length = taken[f"{name}_length"][q]
                    give_start, give_length = held[f"{name}_start"][q], held[f"{name}_length"][q]
                take_mask = Signal(n, name=f"take_{name}{q}")
                give_mask = Signal(n, name=f"give_{name}{q}")
                m.d.comb += [take_mask.eq(block_mask(take_start, take_length, n, m,
                                                     f"take_{name}{q}_end")),
                             give_mask.eq(self._returned(give_start, give_length, n, m,
                                                         f"give_{name}{q}_end"))]
                returned = later(give_mask, f"{name}{q}") if p.pipeline else None
                for ap in range(P):
                    index = ap * per + q
                    word = Signal(n, name=f"{name}{index}", init=(1 << n) - 1)
                    take = allocate & equals(taken.ap, ap)
                    if p.pipeline:
                        seen = word | Mux(released[ap], returned, 0)
                        m.d.sync += word.eq(seen & ~Mux(take, take_mask, 0))
                    else:
                        seen = word
                        give = Mux(releasing & equals(held.ap, ap), give_mask, 0)
                        m.d.sync += word.eq((word & ~Mux(take, take_mask, 0)) | give)
                    m.d.comb += self.status[name][index].eq(seen)

        # Wave slots and instruction power.
        if p.pipeline:
            returned_waves = [later(held.waves[q], f"waves{q}") for q in range(Q)]
            returned_power = later(held.power, "power")
        for ap in range(P):
            take = allocate & equals(taken.ap, ap)
            give = releasing & equals(held.ap, ap)
            for q in range(Q):
                slots = Signal(range(gpu.wave_slots + 1), name=f"slots{ap}_{q}",
                               init=gpu.wave_slots)
                if p.pipeline:
                    seen = Signal.like(slots, name=f"slots{ap}_{q}_seen")
                    m.d.comb += seen.eq(slots + Mux(released[ap], returned_waves[q], 0))
                    m.d.sync += slots.eq(seen - Mux(take, taken.waves[q], 0))
                else:
                    seen = slots
                    m.d.sync += slots.eq(slots - Mux(take, taken.waves[q], 0)
                                         + Mux(give, held.waves[q], 0))
                m.d.comb += self.slots[ap][q].eq(seen)
            power = Signal(p.widths["ap_power"], name=f"power{ap}")
            if p.pipeline:
                # Subtracted beside the average's shift (from registers both, so the history
                # adds no delay).
                now = Signal.like(power, name=f"power{ap}_seen")
                m.d.comb += now.eq(subtract(power, Mux(released[ap], returned_power, 0)))
                m.d.sync += power.eq(add(now, Mux(take, taken.power, 0)))
            else:
                now = power
                m.d.sync += power.eq(subtract(add(power, Mux(take, taken.power, 0)),
                                              Mux(give, held.power, 0)))
            average = Signal(p.widths["history"], name=f"history{ap}")
            with m.If(self.running):
                m.d.sync += average.eq(add(self._decayed(average, self.history_shift), now))
            m.d.comb += self.history[ap].eq(average)
        return m
