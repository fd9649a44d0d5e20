"""tb.values.resolved, the benches' port reader, against cocotb's own reading of the same
values: every string of three of the nine logic values, and one-bit ``Logic`` values."""

from itertools import product

from cocotb.types import Logic, LogicArray

from tb.values import resolved

VALUES = "01XZUWLH-"


def test_resolved_reads_as_cocotb_does_on_every_three_bit_string():
    for bits in product(VALUES, repeat=3):
        value = LogicArray("".join(bits))
        expected = value.to_unsigned() if value.is_resolvable else None
        assert resolved(value) == expected, (value, resolved(value), expected)
    assert resolved(LogicArray("L1H0")) == 0b0110
    assert resolved(LogicArray("1" * 300)) == (1 << 300) - 1


def test_resolved_reads_one_bit_values():
    for bit in VALUES:
        value = Logic(bit)
        assert resolved(value) == (int(value) if value.is_resolvable else None), bit
