"""Small combinational building blocks of the dispatcher: priority encoders, a rotating
priority encoder, the n-th set bit, argmax trees, saturation and block masks.

Each returns Amaranth values (named signals where a value has several users), built as
balanced trees where the input is wide, so that the depth grows with ``log2`` of the width.

Model twin: none (building blocks; the model's stages compute the same functions inline).
"""

from collections.abc import Callable, Sequence

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value

__all__ = ["arg_best", "at_or_after", "block_mask", "ceil_div_limited", "first_set", "lookup",
           "nth_set", "popcount", "product", "saturate"]


def first_set(mask: Value) -> tuple[Value, Value]:
    """``(any, index)`` of the lowest set bit of ``mask`` (index 0 when none): a tree of
    2:1 multiplexers, ``ceil(log2 width)`` deep."""
    def tree(flags):
        if len(flags) == 1:
            return flags[0], Const(0, 1)
        half = 1 << ((len(flags) - 1).bit_length() - 1)     # largest power of two below
        left_any, left_index = tree(flags[:half])
        right_any, right_index = tree(flags[half:])
        width = (len(flags) - 1).bit_length()
        return left_any | right_any, Mux(left_any, left_index, right_index + half)[:width]

    return tree([mask[i] for i in range(len(mask))])


def at_or_after(mask: Value, pointer: Value) -> tuple[Value, Value]:
    """``(any, index)`` of the first set bit of ``mask`` at or after bit ``pointer``, wrapping
    round to bit 0: a round-robin pick that starts at ``pointer``."""
    width = len(mask)
    after = Cat(*(mask[i] & (pointer <= i) for i in range(width)))
    any_after, index_after = first_set(after)
    any_set, index = first_set(mask)
    return any_set, Mux(any_after, index_after, index)


def popcount(mask: Value) -> Value:
    """The number of set bits of ``mask``."""
    total = Const(0, 1)
    for i in range(len(mask)):
        total = total + mask[i]
    return total


def nth_set(mask: Value, n: Value) -> Value:
    """The index of the ``n``-th (from 0) set bit of ``mask``, in bit order (0 when none)."""
    count = Const(0, 1)
    index = Const(0, max((len(mask) - 1).bit_length(), 1))
    for i in range(len(mask)):
        index = Mux(mask[i] & (count == n), i, index)
        count = count + mask[i]
    return index


def saturate(value: Value, limit: int) -> Value:
    """``min(value, limit)``, ``bits(limit)`` wide."""
    width = max(limit.bit_length(), 1)
    return Mux(value > limit, Const(limit, width), value[:width])


def lookup(index: Value, function: Callable[[int], int]) -> Value:
    """``function(index)`` as a table of every value ``index`` can take (a multiplexer tree of
    constants): for a narrow index, a few LUT levels where the arithmetic would be a chain."""
    return Array(Const(function(i)) for i in range(1 << len(index)))[index]


def product(a: Value, b: Value | int) -> Value:
    """``a x b`` (unsigned; ``b`` a value or a constant) as shifted copies of ``a`` summed in
    a balanced tree: LUTs and carry chains next to the logic that uses it, where a ``*`` of a
    few bits (even by a constant) may be mapped to a far-away DSP block."""
    if isinstance(b, int):
        terms = [a << i for i in range(b.bit_length()) if b >> i & 1]
    else:
        terms = [Mux(b[i], a << i, 0) for i in range(len(b))]
    terms = terms or [Const(0, 1)]
    while len(terms) > 1:
        terms = [terms[k] + terms[k + 1] if k + 1 < len(terms) else terms[k]
                 for k in range(0, len(terms), 2)]
    return terms[0]


def ceil_div_limited(dividend: Value, divisor: Value, limit: int) -> Value:
    """``min(ceil(dividend / divisor), limit)`` for ``divisor >= 1``, without a divider: bit
    ``j`` of a thermometer code is ``j x divisor < dividend`` (``limit`` comparisons with
    constant multiples of the divisor, side by side), and the quotient is its first clear bit.
    A few adder and comparator delays deep where a divider is one subtraction per quotient
    bit in series."""
    below = Cat(*(product(divisor, j) < dividend for j in range(limit)))
    any_clear, first_clear = first_set(~below)
    return Mux(any_clear, first_clear, limit)


def block_mask(start: Value, length: Value, n: int) -> Value:
    """``n`` bits, set from bit ``start`` for ``length`` bits (clipped at bit ``n``): the
    blocks a contiguous allocation covers. Written as two comparisons per bit, which map to
    small carry-free logic."""
    end = start + length
    return Cat(*((start <= i) & (end > i) for i in range(n)))


def arg_best(m: Module, valid: Value, values: Sequence[Value],
             better: Callable[[Value, Value], Value], name: str) -> tuple[Value, Value]:
    """``(any, index)`` of the best value among those whose bit of ``valid`` is set: the
    lowest index among equals (``better(a, b)`` is "a is strictly better than b"). A balanced
    tree of comparators; each level is a named signal."""
    nodes = [(valid[i], Const(i, max((len(values) - 1).bit_length(), 1)), values[i])
             for i in range(len(values))]
    level = 0
    while len(nodes) > 1:
        merged = []
        for k in range(0, len(nodes) - 1, 2):
            (a_valid, a_index, a_value), (b_valid, b_index, b_value) = nodes[k], nodes[k + 1]
            take_b = b_valid & (~a_valid | better(b_value, a_value))
            pick_valid = Signal(name=f"{name}_l{level}_{k // 2}_valid")
            pick_index = Signal(len(a_index), name=f"{name}_l{level}_{k // 2}_index")
            pick_value = Signal.like(a_value, name=f"{name}_l{level}_{k // 2}_value")
            m.d.comb += [pick_valid.eq(a_valid | b_valid),
                         pick_index.eq(Mux(take_b, b_index, a_index)),
                         pick_value.eq(Mux(take_b, b_value, a_value))]
            merged.append((pick_valid, pick_index, pick_value))
        if len(nodes) % 2:
            merged.append(nodes[-1])
        nodes, level = merged, level + 1
    any_valid, index, _ = nodes[0]
    return any_valid, index
