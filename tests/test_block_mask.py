"""The resource table's block mask (:func:`hw.dispatch.logic.block_mask`), bit ``i`` set when
``start <= i < start + length``: proved equal to that definition for every start and length
its ports carry (SAT, :func:`hw.flow.formal.prove_equivalent`), simulated exhaustively against
Python on a small width, and a wrong split at the group of eight is caught."""

import pytest
from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.dispatch import logic
from hw.dispatch.logic import block_mask
from hw.flow.formal import prove_equivalent
from tests.test_formal import needs_yosys


class Mask(wiring.Component):
    """``mask`` of ``n`` blocks from ``start`` and ``length`` (the record's fields' shapes):
    ``block_mask``, or with ``reference`` the definition written with Amaranth's comparisons."""

    def __init__(self, n: int, *, reference: bool = False):
        self._n, self._reference = n, reference
        super().__init__({"start": In(range(max(n, 2))), "length": In(range(n + 1)),
                          "mask": Out(n)})

    def elaborate(self, platform):
        m = Module()
        if self._reference:
            end = self.start + self.length
            m.d.comb += self.mask.eq(Cat(*((self.start <= i) & (i < end)
                                           for i in range(self._n))))
        else:
            m.d.comb += self.mask.eq(block_mask(self.start, self.length, self._n, m))
        return m


@needs_yosys
@pytest.mark.parametrize("n", [*range(1, 10), 15, 16, 17, 48, 64, 100, 128, 200])
def test_the_mask_is_its_definition_for_every_start_and_length(n):
    result = prove_equivalent(Mask(n, reference=True), Mask(n), ["mask"],
                              name=f"block_mask_n{n}")
    assert result.proved, result.describe()


def test_the_mask_of_24_blocks_against_python_exhaustively():
    n = 24
    dut = Mask(n)
    wrong = []

    async def bench(ctx):
        for start in range(1 << len(dut.start)):
            for length in range(n + 1):
                ctx.set(dut.start, start)
                ctx.set(dut.length, length)
                want = sum(1 << i for i in range(n) if start <= i < start + length)
                if ctx.get(dut.mask) != want:
                    wrong.append((start, length))
    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, wrong[:5]


@needs_yosys
def test_a_wrong_split_at_the_group_is_caught(monkeypatch):
    # "value <= i" with the high bits compared by <= instead of <: true too often.
    def wrong(value, i):
        if len(value) <= 3:
            return logic.at_most(value, i)
        high, group = value[3:], i >> 3
        return logic.at_most(high, group) | (logic.equals(high, group)
                                             & logic.at_most(value[:3], i & 7))
    monkeypatch.setattr(logic, "_up_to", wrong)
    result = prove_equivalent(Mask(16, reference=True), Mask(16), ["mask"],
                              name="block_mask_wrong_split")
    assert not result.proved and not result.timed_out, result.describe()
