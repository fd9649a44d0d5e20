"""The resource table's status in LUT-RAM (``view_refresh = "changed"``) against its status in
registers, clock for clock, under seeded random allocations and releases.

The two tables are built from the same parameters but for the option and driven with the same
inputs: every clock an allocation of a random record on a random AP (blocks taken or not, any
length, since the table takes what it is told) and a release of a random in-flight tag, a tag
not in flight or the wrong WG id. Every clock the memory table's reads -- the AP the
allocator asks for (``read_ap``, random), the release's AP (``changed_status[1]``) and the
allocation's (``changed_status[0]``, unless the release is on the same AP) -- must equal the
registers' ``status`` of that AP, and every other output (slots, history, tag, error) must be
equal. This checks the memory's banks, the bank registers and the blocks coming back, which
formal proves only for the view built on them (``changed_view``), not against the
registers; and what else such a build moves into block RAM (the record's power read beside
its masks, the ring of released tags read through a registered port, the in-flight bits in
two memories), which the registers' table reads asynchronously or keeps in registers. Half
way through, both tables are reset: what the memories still hold must not count (releases of
the tags in flight before it are refused as the registers' table refuses them).
"""

import random

import pytest
from amaranth.hdl import ClockDomain, Module, Value
from amaranth.sim import Simulator

from hw.dispatch.resources import ResourceTable
from hw.flow.dispatch_build import DispatchShape
from tb.dispatch_cases import CHANGED_SHAPES

CLOCKS = 400


def _tables(name):
    shape = CHANGED_SHAPES[name]
    options = shape.options()
    memory = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **options).params
    del options["view_refresh"]
    registers = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **options).params
    assert memory.changed_views and not registers.changed_views
    return memory, ResourceTable(memory), ResourceTable(registers)


def _record(params, rng, ap):
    gpu = params.gpu
    record = {"wg": rng.randrange(1 << 16), "ap": ap, "power": rng.randrange(64),
              "waves": [rng.randint(0, 1) for _ in range(params.peus)],
              "lds_start": rng.randrange(gpu.lds), "lds_length": rng.randint(0, 3)}
    for name, n in (("vgpr", gpu.vgpr), ("sgpr", gpu.sgpr)):
        record[f"{name}_start"] = [rng.randrange(n) for _ in range(params.peus)]
        record[f"{name}_length"] = [rng.randint(0, min(4, n)) for _ in range(params.peus)]
    return record


def _ap_word(params, status, ap) -> int:
    """The registers' status of AP ``ap`` as one word of ``given_layout``."""
    word, offset = 0, 0
    for name, n in params.sizes.items():
        per = params.peus if name != "lds" else 1
        for q in range(per):
            word |= status[name][ap * per + q] << offset
            offset += n
    return word


@pytest.mark.parametrize("name", ["changed4x2", "changed2x4", "changed3x1"])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_status_in_memory_is_the_registers_status(name, seed):
    params, memory, registers = _tables(name)
    rng = random.Random(f"status-memory/{name}/{seed}")
    checked = {"read": 0, "give": 0, "take": 0}

    async def bench(ctx):
        flight, stale = {}, {}                       # tag -> WG id
        last_take = None
        for clock in range(CLOCKS):
            if clock == CLOCKS // 2:
                ctx.set(sync.rst, 1)
                await ctx.tick()
                ctx.set(sync.rst, 0)
                stale, flight, last_take = dict(flight), {}, None
            allocate = rng.random() < 0.5 and ctx.get(memory.tag_valid)
            ap = rng.randrange(params.aps)
            record = _record(params, rng, ap)
            release, tag, wg = rng.random() < 0.5, 0, 0
            if release and flight and rng.random() < 0.9:
                tag = rng.choice(sorted(flight))
                wg = flight[tag] if rng.random() < 0.95 else flight[tag] ^ 1
            elif release and clock > CLOCKS // 2 and stale and rng.random() < 0.5:
                tag = rng.choice(sorted(stale))             # in flight before the reset
                wg = stale[tag]
            elif release:
                tag, wg = rng.randrange(params.records), rng.randrange(1 << 16)
            read_ap = rng.randrange(params.aps)
            for table in (memory, registers):
                ctx.set(table.allocate, allocate)
                ctx.set(table.record, record)
                ctx.set(table.release.valid, release)
                ctx.set(table.release.payload, {"tag": tag, "wg": wg})
                ctx.set(table.running, 1)
                ctx.set(table.history_shift, 2)
            ctx.set(memory.read_ap, read_ap)
            status = ctx.get(registers.status)
            assert ctx.get(memory.ap_status.as_value()) == _ap_word(params, status, read_ap), \
                f"{name} seed {seed} clock {clock}: status of AP {read_ap}"
            checked["read"] += 1
            give = ctx.get(memory.changed[1])
            if give.valid:
                assert ctx.get(memory.changed_status[1].as_value()) == \
                    _ap_word(params, status, give.ap), f"{name} seed {seed} clock {clock}"
                checked["give"] += 1
            take = ctx.get(memory.changed[0])
            if take.valid and not (give.valid and give.ap == take.ap):
                assert take.ap == last_take
                assert ctx.get(memory.changed_status[0].as_value()) == \
                    _ap_word(params, status, take.ap), f"{name} seed {seed} clock {clock}"
                checked["take"] += 1
            for port in ("slots", "history", "tag", "tag_valid", "error"):
                assert ctx.get(Value.cast(getattr(memory, port))) == \
                    ctx.get(Value.cast(getattr(registers, port))), \
                    f"{name} seed {seed} clock {clock}: {port}"
            if allocate:
                flight[ctx.get(memory.tag)] = record["wg"]
            if release and flight.get(tag) == wg:
                del flight[tag]
            last_take = ap if allocate else None
            await ctx.tick()

    both = Module()                      # the two tables share nothing but the clock
    both.domains.sync = sync = ClockDomain("sync")
    both.submodules.memory, both.submodules.registers = memory, registers
    sim = Simulator(both)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert checked["read"] == CLOCKS and checked["give"] > 20 and checked["take"] > 20, checked
