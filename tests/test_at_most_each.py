"""The match's comparisons as fields of a few adders (:func:`hw.dispatch.logic.at_most_each`),
proved equal to one comparison per pair for every input while ``enable`` is 1 (SAT,
:func:`hw.flow.formal.prove_equivalent`), over operand widths that are equal, wider on
either side and of one bit, and adders cut at every field or holding them all."""

import pytest
from amaranth.hdl import Cat, Const, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.dispatch.logic import at_most, at_most_each
from hw.flow.formal import prove_equivalent
from tests.test_formal import needs_yosys

#: (width of a, width of b) of each pair; the default build's match has 4 to 7 bits.
WIDTHS = [(5, 5), (7, 6), (3, 5), (1, 1), (6, 6), (4, 2), (5, 4)]


class Compared(wiring.Component):
    """``le`` bit ``i``: ``a_i <= b_i``, by ``at_most_each`` (``chain``) or, with
    ``reference``, by one comparison each (without ``guards``, by fields packed without
    their guards, a deliberate mistake); ``enable`` is held at 1 by the proof."""

    def __init__(self, *, reference: bool = False, chain: int = 64, guards: bool = True):
        self._reference, self._chain, self._guards = reference, chain, guards
        super().__init__({
            **{f"a{i}": In(wa) for i, (wa, _) in enumerate(WIDTHS)},
            **{f"b{i}": In(wb) for i, (_, wb) in enumerate(WIDTHS)},
            "enable": In(1), "le": Out(len(WIDTHS))})

    def elaborate(self, platform):
        m = Module()
        pairs = [(getattr(self, f"a{i}"), getattr(self, f"b{i}")) for i in range(len(WIDTHS))]
        if self._reference:
            m.d.comb += self.le.eq(Cat(*(at_most(a, b) for a, b in pairs)))
        elif not self._guards:
            m.d.comb += self.le.eq(_without_guards(pairs))
        else:
            m.d.comb += self.le.eq(at_most_each(pairs, self.enable, m, chain=self._chain))
        return m


@needs_yosys
@pytest.mark.parametrize("chain", [1, 8, 16, 64])
def test_each_field_is_its_comparison(chain):
    result = prove_equivalent(Compared(reference=True), Compared(chain=chain), ["le"],
                              name=f"at_most_each_chain{chain}", fixed_inputs={"enable": 1})
    assert result.proved, result.describe()


@needs_yosys
def test_fields_without_guards_are_caught():
    result = prove_equivalent(Compared(reference=True), Compared(guards=False), ["le"],
                              name="at_most_each_no_guard", fixed_inputs={"enable": 1})
    assert not result.proved and not result.timed_out, result.describe()


def _without_guards(pairs):
    """The fields back to back with no guard between them, one subtraction of the
    concatenations read at each field's top carry (wrong: a field's borrow reaches the
    next)."""
    x, y, tops, at = [], [], [], 0
    for a, b in pairs:
        width = len(b)
        x.append(b)
        y.append(~Cat(a[:width], Const(0, max(width - len(a), 0))))
        at += width
        tops.append(at)
    total = Cat(*x, Const(0, 1)) + Cat(*y, Const(0, 1)) + 1
    return Cat(*(total[t] for t in tops))
