"""The resource table: status registers, free wave slots, each AP's instruction power and its
history (embodiment 10, exponential average), and the allocation record of every in-flight WG
with the free list of record tags.

An allocation (``allocate`` high) takes the record's blocks and slots at the clock edge and
files the record under ``tag``; a release accepted in clock ``t`` gives everything back, so
the blocks are free in the ``status`` of clock ``t + 1``. One release per clock
(``release.ready`` is always high).

A record is filed in two memories. Its owner (WG id, AP, waves per PEU, power, channel) is
read asynchronously, so the release check (tag in flight, WG id the record's), the in-flight
bits, the tag ring, the sticky ``error`` and the barrier's ``released`` all act in clock
``t``, and the waves and power are registered as read. Its block masks (worked out when it
is filed) are read through a registered port -- block RAM, one read a clock. In clock
``t + 1`` the masks are ORed into the ``status``, the waves added to the ``slots`` and the
power subtracted from what the history adds, as the AP bit of the release check registered
in ``t`` selects; the registers take them at the edge after. So every output is what the
model shows in every clock (the blocks free from ``t + 1``). On the default 16 x 4 x 4 build
(1,024 records) the masks take 46 DP16KD and the owners 1,152 LUT-RAM cells, against 3,136
LUT-RAM cells for whole records read asynchronously (docs/dispatch_rtl.md); the waves and
power leave from registers, not from block RAM's slower output, because they reach the
matcher and the scores in the same clock.

With ``view_refresh = "changed"`` no reader needs every AP's status at once (the view reads
the two APs that changed, the allocator the chosen one), so the status is kept in LUT-RAM,
one word per AP, instead of registers (:meth:`ResourceTable._status_memory`): the same
status in every clock, read through ports, without a register and its update logic per
block. Such a build is the one made for the largest ECP5, where a LUT-RAM cell takes six
LUT4 sites, so less is kept in LUT-RAM, each output what it was in every clock: the
record's power is kept beside its masks in block RAM (it is used only in the clock after
the release, by the power register and the history's adder), and the ring of released tags
is read through a registered port at the head the next clock will have, transparent for
the release's write (block RAM too), and whether a tag is in flight is kept in two one-bit
LUT-RAMs instead of a register per tag (:meth:`ResourceTable._flight_memory`). See
docs/dispatch_rtl.md for what that saves.

Model twin: :mod:`model.dispatch.resources`.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hw.dispatch.logic import add, block_mask, equals, less, subtract
from hw.dispatch.matcher import slots_layout
from hw.dispatch.params import DispatcherParams
from hw.dispatch.views import ap_status_layout, changed_layout, status_layout

__all__ = ["ResourceTable"]


class ResourceTable(wiring.Component):
    """The dispatcher's state of the GPU.

    Attributes
    ----------
    status : Out(status_layout(params))
        Bit ``i`` = block ``i``, 1 = free; reset: all free. Every AP's, from registers
        (with ``view_refresh = "changed"``, from memory through the ports below instead).
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
    changed : Out(ArrayLayout(changed_layout(params), 2))
        Built only with ``view_refresh = "changed"``, as the three below (and ``status`` is
        not): the APs whose status in this clock may differ from the last clock's, each with
        a ``valid`` bit: ``[0]`` the AP of the allocation taken at the last clock edge,
        ``[1]`` the AP of the release whose blocks come back in this clock. No other AP's
        status changes (one allocation and one release a clock at most).
    changed_status : Out(ArrayLayout(given_layout(params), 2))
        ``[1]``: the status of ``changed[1]``'s AP in this clock; ``[0]``: that of
        ``changed[0]``'s AP after the allocation (this clock's unless the release of
        ``[1]`` is on the same AP: then ``[1]`` is its status).
    read_ap : In(range(aps)), ap_status : Out(given_layout(params))
        The status of AP ``read_ap`` in this clock (the allocator's read).
    """

    def __init__(self, params: DispatcherParams):
        self._params = params
        p = params
        changed = p.changed_views
        super().__init__({
            **({"status": Out(status_layout(p))} if not changed else {
                "changed": Out(data.ArrayLayout(changed_layout(p), 2)),
                "changed_status": Out(data.ArrayLayout(self.given_layout(p), 2)),
                "read_ap": In(range(max(p.aps, 2))),
                "ap_status": Out(self.given_layout(p))}),
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
    def instances(params: DispatcherParams) -> list[tuple[str, int, int]]:
        """``(resource, PEU or 0 for LDS, blocks)`` of every block mask a record holds."""
        return [(name, q, n) for name, n in params.sizes.items()
                for q in range(params.peus if name != "lds" else 1)]

    @staticmethod
    def _late(params: DispatcherParams) -> tuple[str, ...]:
        """The record's fields the record memory's registered port gives back with the
        masks, in the clock after the release: the power with ``view_refresh = "changed"``
        (the build made for the LFE5U-85F, where the owners' LUT-RAM takes 6 LUT4 sites a
        cell), none otherwise. The AP and waves stay in the owners' memory, registered as
        read: from block RAM's slower output (5.6 ns) they led the small build's critical
        path (the released waves into the slots, the matcher and the scores: 44.5 MHz)."""
        return ("power",) if params.changed_views else ()

    @classmethod
    def owner_layout(cls, params: DispatcherParams) -> data.StructLayout:
        """What the owners' memory holds per tag (read asynchronously): the record's WG id,
        AP, waves per PEU, power and, with in-order barriers, channel; less the fields of
        :meth:`_late`."""
        members = params.record_layout.members
        return data.StructLayout({key: members[key]
                                  for key in ("wg", "ap", "waves", "power", "channel")
                                  if key in members and key not in cls._late(params)})

    @classmethod
    def given_layout(cls, params: DispatcherParams) -> data.StructLayout:
        """The block mask of every resource instance of a record's AP, named ``vgpr0``,
        ..., ``lds0`` (:func:`hw.dispatch.views.ap_status_layout`)."""
        return ap_status_layout(params)

    @classmethod
    def kept_layout(cls, params: DispatcherParams) -> data.StructLayout:
        """What the record memory holds per tag (read through a registered port): the masks
        (:meth:`given_layout`; member ``given``, first, beside the fields of :meth:`_late`
        when there are any)."""
        members = params.record_layout.members
        if not cls._late(params):
            return cls.given_layout(params)
        return data.StructLayout({"given": cls.given_layout(params),
                                  **{key: members[key] for key in cls._late(params)}})

    @classmethod
    def filed_width(cls, params: DispatcherParams) -> int:
        """Bits filed per tag: the owners' word and the record memory's."""
        return cls.owner_layout(params).size + cls.kept_layout(params).size

    @staticmethod
    def _changed(allocate, taken_ap, releasing, held_ap) -> tuple:
        """``(valid, AP)`` of each AP whose status the edge after this clock may change:
        the allocation's and the accepted release's (its blocks come back in the next
        clock); registered, they are :attr:`changed`."""
        return (allocate, taken_ap), (releasing, held_ap)

    @staticmethod
    def _extent(record, name: str, q: int) -> tuple:
        """``(start, length)`` of ``record``'s blocks of resource ``name`` on PEU ``q``."""
        if name == "lds":
            return record.lds_start, record.lds_length
        return record[f"{name}_start"][q], record[f"{name}_length"][q]

    def filed(self, record, m: Module | None = None, prefix: str = "give") -> tuple:
        """``(owner, kept)``: the values the two memories take for ``record`` (a value of
        :attr:`DispatcherParams.record_layout`), as :meth:`owner_layout` and
        :meth:`kept_layout`; the masks' ends named in ``m``."""
        p = self._params
        owner = Cat(*(record[key] for key in self.owner_layout(p).members))
        masks = []
        for name, q, n in self.instances(p):
            masks.append(self._returned(*self._extent(record, name, q), n, m,
                                        f"{prefix}_{name}{q}_end"))
        return owner, Cat(*masks, *(record[key] for key in self._late(p)))

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
        # The memories are at least two words deep: one word (one AP of one PEU with one wave
        # slot) has a zero-bit address, which the Verilog declares [-1:0] (lint: ASCRANGE).
        # Only word 0 is then ever written, and what is read at a tag not in flight is never
        # used (a release of it is refused), so no output changes.
        depth = max(N, 2)

        # Record tags: after reset, tags 0 .. N - 1 are handed out in order from a counter;
        # released tags go round a ring, which is used once the counter is exhausted. (A ring
        # that started full would depend on memory contents, which a reset does not restore.)
        free = Memory(shape=tag_shape, depth=depth, init=[])
        m.submodules.free_list = free
        free_write = free.write_port()
        fresh = Signal(range(N + 1), name="fresh_tags")
        head = Signal(range(max(N, 2)), name="free_head")
        tail = Signal(range(max(N, 2)), name="free_tail")
        returned = Signal(range(N + 1), name="free_count")
        unused = less(fresh, N)
        if p.changed_views:
            # The ring's head read through a registered port (block RAM) at the head the next
            # clock will have, transparent for the release's write of this clock: the word
            # at the head in every clock, as the asynchronous read gives it. (The ring is
            # read only once the counter is exhausted, N allocations after a reset.)
            free_read = free.read_port(domain="sync", transparent_for=(free_write,))
            popped = Mux(equals(head, N - 1), 0, head + 1)
            m.d.comb += free_read.addr.eq(Mux(self.allocate & self.tag_valid & ~unused,
                                              popped, head))
        else:
            free_read = free.read_port(domain="comb")
            m.d.comb += free_read.addr.eq(head)
        m.d.comb += [self.tag.eq(Mux(unused, fresh, free_read.data)),
                     self.tag_valid.eq(unused | returned.any())]

        # The two memories of the records, written together on an allocation.
        owners = Memory(shape=self.owner_layout(p), depth=depth, init=[])
        m.submodules.owners = owners
        records = Memory(shape=self.kept_layout(p), depth=depth, init=[])
        m.submodules.records = records
        owner_write, owner_read = owners.write_port(), owners.read_port(domain="comb")
        record_write, record_read = records.write_port(), records.read_port(domain="sync")
        taken = self.record
        busy = Signal(N, name="in_flight") if not p.changed_views else None
        allocate = Signal(name="allocating")
        owner, given = self.filed(taken, m)
        m.d.comb += [allocate.eq(self.allocate & self.tag_valid),
                     owner_write.addr.eq(self.tag), owner_write.data.eq(owner),
                     owner_write.en.eq(allocate),
                     record_write.addr.eq(self.tag), record_write.data.eq(given),
                     record_write.en.eq(allocate)]

        release = self.release
        m.d.comb += [release.ready.eq(1), owner_read.addr.eq(release.payload.tag),
                     record_read.addr.eq(release.payload.tag)]
        held = owner_read.data
        releasing = Signal(name="releasing")
        if p.changed_views:
            known = self._flight_memory(m, allocate, releasing, fresh)
        else:
            known = busy.bit_select(release.payload.tag, 1) & less(release.payload.tag, N)
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
        if not p.changed_views:
            m.d.sync += busy.eq(Cat(*(
                (busy[i] | (allocate & equals(self.tag, i)))
                & ~(releasing & equals(release.payload.tag, i))
                for i in range(N))))

        # What the release of the last clock gives back, for the AP whose bit the release
        # check set: its masks as the record memory's registered port reads them, its waves
        # and power registered as read from the owners' memory (they reach the matcher and
        # the scores, so they leave from registers, not from block RAM's slower output);
        # ORed or added into what the readers see in this clock, into the registers at the
        # edge.
        kept = record_read.data
        released = Signal(P, name="released_aps")
        m.d.sync += released.eq(Cat(*(releasing & equals(held.ap, ap) for ap in range(P))))
        back = Signal(self.given_layout(p), name="given_back")
        back_waves = Signal.like(held.waves, name="released_waves")
        m.d.sync += back_waves.eq(held.waves)
        if self._late(p):
            # The power as the record memory's port gives it back (it reaches only the
            # power register and the history's adder, not the matcher or the scores).
            back_power = Signal(p.record_layout.members["power"], name="released_power")
            m.d.comb += [back.eq(kept.given), back_power.eq(kept.power)]
        else:
            back_power = Signal.like(held.power, name="released_power")
            m.d.comb += back.eq(kept)
            m.d.sync += back_power.eq(held.power)
        if p.changed_views:
            for slot, (valid, ap) in enumerate(self._changed(allocate, taken.ap, releasing,
                                                             held.ap)):
                m.d.sync += [self.changed[slot].valid.eq(valid), self.changed[slot].ap.eq(ap)]
        take_masks = {}
        for name, q, n in self.instances(p):
            take_masks[name, q] = Signal(n, name=f"take_{name}{q}")
            m.d.comb += take_masks[name, q].eq(block_mask(*self._extent(taken, name, q), n, m,
                                                          f"take_{name}{q}_end"))
        if p.changed_views:
            self._status_memory(m, allocate, taken, take_masks, back, releasing, held.ap)
        for name, q, n in self.instances(p) if not p.changed_views else ():
            per = Q if name != "lds" else 1
            for ap in range(P):
                word = Signal(n, name=f"{name}{ap * per + q}", init=(1 << n) - 1)
                take = allocate & equals(taken.ap, ap)
                seen = word | Mux(released[ap], back[f"{name}{q}"], 0)
                m.d.sync += word.eq(seen & ~Mux(take, take_masks[name, q], 0))
                m.d.comb += self.status[name][ap * per + q].eq(seen)

        # Wave slots and instruction power (subtracted beside the average's shift, from
        # registers both, so the history adds no delay).
        for ap in range(P):
            take = allocate & equals(taken.ap, ap)
            for q in range(Q):
                slots = Signal(range(gpu.wave_slots + 1), name=f"slots{ap}_{q}",
                               init=gpu.wave_slots)
                seen = Signal.like(slots, name=f"slots{ap}_{q}_seen")
                m.d.comb += seen.eq(slots + Mux(released[ap], back_waves[q], 0))
                m.d.sync += slots.eq(seen - Mux(take, taken.waves[q], 0))
                m.d.comb += self.slots[ap][q].eq(seen)
            power = Signal(p.widths["ap_power"], name=f"power{ap}")
            now = Signal.like(power, name=f"power{ap}_seen")
            m.d.comb += now.eq(subtract(power, Mux(released[ap], back_power, 0)))
            m.d.sync += power.eq(add(now, Mux(take, taken.power, 0)))
            average = Signal(p.widths["history"], name=f"history{ap}")
            with m.If(self.running):
                m.d.sync += average.eq(add(self._decayed(average, self.history_shift), now))
            m.d.comb += self.history[ap].eq(average)
        return m

    def _flight_memory(self, m: Module, allocate, releasing, fresh):
        """``view_refresh = "changed"``: whether the release's tag is in flight (``known``,
        in this clock), kept in two one-bit memories of LUT-RAM instead of a register per
        tag (whose set and clear decoders took about 4,700 LUT4 at 1,024 records):
        ``flight_filed`` written by the allocation (the opposite of ``flight_dropped`` at its
        tag), ``flight_dropped`` by the accepted release (``flight_filed``'s bit at its
        tag). A tag is in flight when the two bits differ and the counter of fresh tags has
        passed it: a word not written since the reset is never read, and a tag's first
        allocation makes its two bits differ whatever they held. An allocation's tag is
        never the accepted release's, so the two writes of a clock never meet."""
        p = self._params
        depth = max(p.records, 2)
        filed, dropped = (Memory(shape=1, depth=depth, init=[]) for _ in range(2))
        m.submodules.flight_filed, m.submodules.flight_dropped = filed, dropped
        tag = self.release.payload.tag
        filed_read, dropped_read, dropped_at_tag = (
            filed.read_port(domain="comb"), dropped.read_port(domain="comb"),
            dropped.read_port(domain="comb"))
        filed_write, dropped_write = filed.write_port(), dropped.write_port()
        m.d.comb += [filed_read.addr.eq(tag), dropped_read.addr.eq(tag),
                     dropped_at_tag.addr.eq(self.tag),
                     filed_write.addr.eq(self.tag), filed_write.data.eq(~dropped_at_tag.data),
                     filed_write.en.eq(allocate),
                     dropped_write.addr.eq(tag), dropped_write.data.eq(filed_read.data),
                     dropped_write.en.eq(releasing)]
        return less(tag, fresh) & (filed_read.data != dropped_read.data)

    def _status_memory(self, m: Module, allocate, taken, take_masks, back, releasing,
                       held_ap) -> None:
        """``view_refresh = "changed"``: the status kept in memory, one word per AP (its
        block masks, :meth:`given_layout`), in two banks of LUT-RAM with asynchronous reads:
        ``taken`` written by the allocation (the AP's status less what it takes), ``given``
        by the release whose blocks come back (the AP's status with them), and per AP a
        register saying which bank holds its word, or neither (all free: what a reset
        restores). One allocation and one release a clock write two APs; on one AP the
        allocation's word, which has the release's blocks, is the one written. Every read
        is of the status of this clock, as the registers would show it: the word with the
        blocks coming back ORed in."""
        p = self._params
        layout = self.given_layout(p)
        depth = max(p.aps, 2)
        free = (1 << layout.size) - 1
        banks = [Memory(shape=layout, depth=depth, init=[]) for _ in range(2)]
        m.submodules.status_taken, m.submodules.status_given = banks
        # 0: all free, 1: the taken bank's word, 2: the given bank's.
        live = [Signal(2, name=f"status_live{ap}") for ap in range(p.aps)]
        giving = Signal(name="giving_back")
        given_ap = Signal.like(held_ap, name="given_back_ap")
        m.d.sync += [giving.eq(releasing), given_ap.eq(held_ap)]

        def read(address, name, coming_back):
            ports = [bank.read_port(domain="comb") for bank in banks]
            which = Signal(2, name=f"{name}_bank")
            seen = Signal(layout, name=name)
            m.d.comb += [*(port.addr.eq(address) for port in ports),
                         which.eq(Cat(*live).word_select(address, 2) if p.aps > 1 else live[0]),
                         seen.eq(Mux(which[1], ports[1].data.as_value(),
                                     Mux(which[0], ports[0].data.as_value(), free))
                                 | Mux(coming_back, back.as_value(), 0))]
            return seen

        at_take = read(taken.ap, "status_at_take", giving & equals(given_ap, taken.ap))
        at_give = read(given_ap, "status_at_give", giving)
        m.d.comb += self.ap_status.eq(
            read(self.read_ap, "status_at_read", giving & equals(given_ap, self.read_ap)))
        kept = Signal(layout, name="status_after_take")
        m.d.comb += kept.eq(Cat(*(at_take[f"{name}{q}"] & ~take_masks[name, q]
                                  for name, q, _ in self.instances(p))))
        same = allocate & equals(given_ap, taken.ap)
        taken_write, given_write = (bank.write_port() for bank in banks)
        m.d.comb += [taken_write.addr.eq(taken.ap), taken_write.data.eq(kept),
                     taken_write.en.eq(allocate),
                     given_write.addr.eq(given_ap), given_write.data.eq(at_give),
                     given_write.en.eq(giving & ~same)]
        for ap, bank in enumerate(live):
            with m.If(allocate & equals(taken.ap, ap)):
                m.d.sync += bank.eq(1)
            with m.Elif(giving & equals(given_ap, ap)):
                m.d.sync += bank.eq(2)
        m.d.sync += self.changed_status[0].eq(kept)
        m.d.comb += self.changed_status[1].eq(at_give)
