"""Formal harness of the dispatcher's resource table alone (:class:`TableHarness`), for
SymbiYosys: embodiment 10's power and history, and the record bookkeeping they rest on.

Kept apart from :mod:`hw.flow.formal_dispatch` (whose shadow of the in-flight records it
shares the idea of, and whose helpers it uses) so that each harness module stays short;
docs/verification.md says why these properties are proved on the table, not the whole
dispatcher.
"""

from amaranth.hdl import Assert, Assume, Cat, Fragment, Module, Mux, ResetSignal, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from hw.dispatch.resources import ResourceTable
from hw.flow.formal_dispatch import _assigned, _read_records
from hw.flow.formal_dispatch_shapes import tiny_dispatcher

__all__ = ["TableHarness"]


class TableHarness(wiring.Component):
    """The :class:`~hw.dispatch.resources.ResourceTable` of a tiny dispatcher alone, every
    input free (``allocate``, ``record``, the release port, ``running``,
    ``history_shift``), with the same shadow of the in-flight records as
    :class:`DispatcherHarness`. The table's power and history contract holds for any record
    it is given, so this covers every record the dispatcher can compute.

    Properties: ``table_helpers`` -- the shadow's copies equal the record memory, the
    offered tag is not in flight, the table's in-flight bits are the shadow's;
    ``power_history`` -- with those assumed (the other job proves them on the same table),
    each AP's power as the history reads it (``power<ap>_seen``: the register less what the
    last clock's release gives back) equals the shadow's power of the AP (the power of every
    record filed on it, less that of every copy on it a good release drops: the summed
    power of its in-flight records) and its history ``x`` becomes ``x - (x >> shift) + p``
    in a running clock (``p`` that power), else holds.
    """

    PROPERTIES = ("table_helpers", "power_history")

    def __init__(self, prop: str, shape="tiny2x1", table_cls=ResourceTable):
        if prop not in self.PROPERTIES:
            raise ValueError(f"Unknown table property {prop!r}; known: "
                             f"{', '.join(self.PROPERTIES)}")
        self.prop = prop
        dispatcher = tiny_dispatcher(shape=shape)
        dispatcher._MustUse__silence = True         # only its parameters are used
        p = self.params = dispatcher.params
        self.table = table_cls(p)
        super().__init__({"allocate": In(1), "record": In(p.record_layout.size),
                          "release_valid": In(1), "release_payload": In(p.release_layout.size),
                          "running": In(1), "history_shift": In(len(self.table.history_shift))})

    def elaborate(self, platform):
        m = Module()
        p, table = self.params, self.table
        N = p.records
        table._MustUse__silence = True
        module = table.elaborate(platform)
        stored = [Signal(ResourceTable.filed_width(p), name=f"stored_record{t}") for t in range(N)]
        _read_records(module, stored)
        fragment = Fragment.get(module, platform)
        registers = _assigned(fragment)
        m.submodules.table = fragment
        m.d.comb += Assume(~ResetSignal())
        m.d.comb += [table.allocate.eq(self.allocate), table.record.eq(self.record),
                     table.release.valid.eq(self.release_valid),
                     table.release.payload.eq(self.release_payload),
                     table.running.eq(self.running),
                     table.history_shift.eq(self.history_shift)]
        m.d.comb += Assume(self.history_shift <= p.history_shift_max)

        busy = Signal(N, name="shadow_busy")
        copies = [Signal(p.record_layout, name=f"shadow_record{t}") for t in range(N)]
        allocating = table.allocate & table.tag_valid
        release = table.release.payload
        tag_known = Mux(release.tag < N, busy.bit_select(release.tag, 1), 0)
        wg_of_tag = Cat(*(copy.wg for copy in copies)).word_select(
            release.tag[:max(1, (N - 1).bit_length())], p.id_bits)
        good = table.release.valid & tag_known & (wg_of_tag == release.wg)
        for t in range(N):
            filing = allocating & (table.tag == t)
            with m.If(filing):
                m.d.sync += copies[t].eq(table.record)
            m.d.sync += busy[t].eq((busy[t] | filing) & ~(good & (release.tag == t)))

        # The release of the last clock: what the record memory's registered port gives back
        # is that record's word, for the AP bit its check set.
        tag_index = release.tag[:max(1, (N - 1).bit_length())]
        dropped = Signal(p.record_layout, name="dropped_record")
        m.d.comb += dropped.eq(Cat(*(c.as_value() for c in copies)).word_select(
            tag_index, p.record_layout.size))
        last_good = Signal(name="last_good_release")
        last = Signal(p.record_layout, name="last_dropped_record")
        m.d.sync += [last_good.eq(good), last.eq(dropped)]
        given_width = ResourceTable.given_layout(p).size
        helpers = [(Cat(*(Cat(*table.filed(c)) for c in copies)) == Cat(*stored),
                    "helper: the records as filed"),
                   (~table.tag_valid | ~busy.bit_select(table.tag, 1),
                    "helper: the next tag is not in flight"),
                   (registers["in_flight"] == busy,
                    "helper: the table's in-flight tags are the shadow's"),
                   (registers["released_aps"] == Mux(last_good, 1 << last.ap, 0)[:p.aps],
                    "helper: the AP bits of the last clock's release"),
                   (~last_good | (registers["given_back"]
                                  == table.filed(last)[1][:given_width]),
                    "helper: the record memory's port gives back the last release's masks"),
                   (~last_good | ((registers["released_waves"] == Value.cast(last.waves))
                                  & (registers["released_power"] == last.power)),
                    "helper: the last release's waves and power, registered")]
        if self.prop == "table_helpers":
            for condition, what in helpers:
                m.d.comb += Assert(condition, what)
            return m
        for condition, _ in helpers:
            m.d.comb += Assume(condition)
        # The shadow's power of each AP, the summed power of its in-flight records kept as the
        # sum is defined: a register adding the power of a record filed on the AP, less, in the
        # clock after, that of a copy a good release dropped (split as the table's register is;
        # other forms defeat PDR, docs/verification.md).
        for ap in range(p.aps):
            width = p.widths["ap_power"]
            shadow = Signal(width, name=f"shadow_power{ap}")
            summed = Signal(width, name=f"shadow_power{ap}_seen")
            record = table.record
            m.d.comb += summed.eq(shadow - Mux(last_good & (last.ap == ap), last.power, 0))
            m.d.sync += shadow.eq(summed + Mux(allocating & (record.ap == ap), record.power, 0))
            m.d.comb += Assert(registers[f"power{ap}_seen"] == summed,
                               f"AP {ap}'s power = summed power of its in-flight WGs")
            history = table.history[ap]
            expected = Signal.like(history, name=f"expected_history{ap}")
            m.d.sync += expected.eq(Mux(self.running,
                                        history - (history >> self.history_shift) + summed,
                                        history))
            m.d.comb += Assert(history == expected,
                               f"AP {ap}'s history = x - (x >> shift) + p of the last clock")
        return m
