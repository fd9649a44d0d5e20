"""Small combinational building blocks of the dispatcher: priority encoders, a rotating
priority encoder, the n-th set bit, argmax trees, saturation and block masks.

Each returns Amaranth values (named signals where a value has several users), built as
balanced trees where the input is wide, so that the depth grows with ``log2`` of the width.

The comparisons and sums that mix widths (:func:`is_zero`, :func:`equals`, :func:`less`,
:func:`at_most`, :func:`add`) are written so that every operator of the Verilog has operands
of one width: Amaranth's back end drops the constant zero bits of an operand (``x <= 1`` on a
4-bit ``x`` is written ``x <= 1'h1``, the 5-bit ``x`` of ``x < y`` is compared as 4 bits) and
writes ``x == 0`` as ``!x``, which ``verilator -Wall`` reports as WIDTHEXPAND / WIDTHTRUNC.
Each splits off the bits that only one operand has and tests them apart, so the value is the
operator's and the lint is clean at the cause.

Model twin: none (building blocks; the model's stages compute the same functions inline).
"""

from collections.abc import Callable, Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Shape, Signal, Value

__all__ = ["add", "arg_best", "at_most", "at_most_each", "at_or_after", "block_mask",
           "ceil_div_by_reciprocal", "ceil_div_limited", "equals", "first_set", "index_of",
           "is_zero", "less", "lookup", "lowest_set", "named", "nth_set", "nth_set_mask",
           "or_all", "popcount", "product", "reciprocal_shift", "remainder", "rotating_lowest_set",
           "saturate", "subtract", "total"]


def is_zero(value: Value) -> Value:
    """``value == 0`` as the NOR of its bits (``~|value``, where ``==`` writes ``!value``)."""
    return ~value.any()


def _high(value: Value, width: int) -> Value:
    """Whether any bit of ``value`` at or above bit ``width`` is set."""
    return value[width:].any() if len(value) > width else Const(0, 1)


def equals(value: Value, other: Value | int) -> Value:
    """``value == other`` (unsigned; ``other`` a value or a constant) over the bits both
    have, the other operand's extra bits tested for zero apart."""
    if isinstance(other, int):
        if other < 0 or other >> len(value):
            return Const(0, 1)
        if other == 0:
            return is_zero(value)
        width = other.bit_length()
        return ~_high(value, width) & (value[:width] == other)
    width = min(len(value), len(other))
    return ~_high(value, width) & ~_high(other, width) & (value[:width] == other[:width])


def less(a: Value | int, b: Value | int) -> Value:
    """``a < b`` (unsigned; either a constant, not both) over the bits both have: a set
    bit that only ``b`` has makes it true, one that only ``a`` has false. A comparison that
    the widths decide is a constant, not a comparator."""
    if isinstance(b, int):
        if b <= 0:
            return Const(0, 1)
        if b >> len(a):
            return Const(1, 1)
        width = b.bit_length()
        return ~_high(a, width) & (a[:width] < b)
    if isinstance(a, int):
        return ~less(b, a + 1)
    width = min(len(a), len(b))
    return ~_high(a, width) & (_high(b, width) | (a[:width] < b[:width]))


def at_most(a: Value | int, b: Value | int) -> Value:
    """``a <= b`` (unsigned; either a constant, not both), as ``not b < a``."""
    return ~less(b, a)


def at_most_each(pairs: Sequence[tuple[Value, Value]], enable: Value,
                 m: Module | None = None, name: str = "at_most_each",
                 chain: int = 32) -> Value:
    """Bit ``i``: ``a <= b`` for the ``i``-th pair ``(a, b)`` of ``pairs`` (unsigned values)
    while ``enable`` is 1 (while it is 0 a bit may be anything), from a few adders of at most
    ``chain`` bits.

    Each pair is a field ``b + ~a + 1`` of a sum, which carries out exactly when ``a <= b``.
    A guard position whose two operand bits are ``enable`` follows each field: its sum bit is
    that carry, and (``enable`` being 1) it carries 1 into the next field, the ``+ 1`` of
    the next subtraction; one before the first field does the same. A bit of ``a`` above
    ``b``'s width, which makes ``a`` the larger, is tested apart. Fields are packed into one
    adder until it would pass ``chain`` bits (a wider field has an adder of its own).

    Why: Yosys maps each comparison of five bits or more to a carry chain of its own, and
    nextpnr-ecp5 brings a chain's constant carry in and its carry out through one more carry
    cell at each end: a 5-bit comparison takes five carry cells where its field takes three.
    The guards are ``enable``, not the constant 1, because Yosys splits an adder where a
    carry is constant, which would make each field a chain again. A chain of ``chain`` bits
    adds about 1.1 ns of carry (0.07 ns a cell at speed grade 6). With ``m``, each sum is a
    signal of ``m``."""
    results, x, y, guards = [], [], [], []

    def close():
        if guards:
            total = named(m, Cat(enable, *x) + Cat(enable, *y), f"{name}_{len(results)}")
            results.extend(total[g] & ~high for g, high in guards)
            x.clear()
            y.clear()
            guards.clear()

    at = 1
    for a, b in pairs:
        width = len(b)
        if guards and at + width + 1 > chain:
            close()
            at = 1
        x.extend([b.as_unsigned(), enable])
        y.extend([~Cat(a.as_unsigned()[:width], Const(0, max(width - len(a), 0))), enable])
        guards.append((at + width, _high(a, width)))
        at += width + 1
    close()
    return Cat(*results)


def add(a: Value, b: Value) -> Value:
    """``a + b`` (unsigned), ``max(len(a), len(b)) + 1`` bits: where the widths differ, the
    narrower operand is added to as many low bits of the other, and the carry to its high
    bits (an increment), so no adder has operands of two widths."""
    assert not (a.shape().signed or b.shape().signed), "add() is unsigned"
    if len(a) > len(b):
        a, b = b, a
    if len(a) in (len(b), 1):
        return a + b
    low = a + b[:len(a)]
    return Cat(low[:len(a)], b[len(a):] + low[len(a)])


def named(m: Module | None, value: Value, name: str) -> Value:
    """``value`` as a signal ``name`` of its shape driven in ``m`` (``value`` itself when
    ``m`` is None). Amaranth writes an expression out again at every use (it shares only
    signals), and the width-safe helpers use their operands twice: a sum or product nested
    in them grows the Verilog geometrically unless it is named."""
    if m is None:
        return value
    signal = Signal(value.shape(), name=name)
    m.d.comb += signal.eq(value)
    return signal


def total(values: Sequence[Value], m: Module | None = None, name: str = "total") -> Value:
    """The sum of ``values`` (unsigned, at least one), added left to right as ``sum`` does,
    each step by :func:`add` (each partial sum a signal of ``m`` when given)."""
    result = values[0]
    for step, value in enumerate(values[1:]):
        result = named(m, add(result, value), f"{name}_{step}")
    return result


def subtract(a: Value, b: Value) -> Value:
    """``a - b`` of unsigned values with ``len(b) <= len(a)``, Amaranth's value and shape
    (signed, ``len(a) + 1`` bits): ``b`` from as many low bits of ``a``, the borrow from its
    high bits (a decrement), so no subtractor has operands of two widths."""
    assert not (a.shape().signed or b.shape().signed), "subtract() is unsigned"
    assert len(b) <= len(a), (len(a), len(b))
    if len(b) in (len(a), 1):
        return a - b
    low = a[:len(b)] - b
    return Cat(low[:len(b)], a[len(b):] - low[len(b)]).as_signed()


def first_set(mask: Value) -> tuple[Value, Value]:
    """``(any, index)`` of the lowest set bit of ``mask`` (when none, ``any`` is 0 and the
    index means nothing: not always 0): a tree of 2:1 multiplexers, ``ceil(log2 width)``
    deep."""
    def tree(flags):
        if len(flags) == 1:
            return flags[0], Const(0, 1)
        half = 1 << ((len(flags) - 1).bit_length() - 1)     # largest power of two below
        left_any, left_index = tree(flags[:half])
        right_any, right_index = tree(flags[half:])
        width = (len(flags) - 1).bit_length()
        # right_index + half, half a power of two above every right index: a set top bit.
        low = right_index[:width - 1]
        high = Cat(low, Const(0, width - 1 - len(low)), Const(1, 1))
        return left_any | right_any, Mux(left_any, left_index, high)

    return tree([mask[i] for i in range(len(mask))])


def at_or_after(mask: Value, pointer: Value) -> tuple[Value, Value]:
    """``(any, index)`` of the first set bit of ``mask`` at or after bit ``pointer``, wrapping
    round to bit 0: a round-robin pick that starts at ``pointer`` (the index as
    :func:`first_set`'s when none)."""
    width = len(mask)
    after = Cat(*(mask[i] & at_most(pointer, i) for i in range(width)))
    any_after, index_after = first_set(after)
    any_set, index = first_set(mask)
    return any_set, Mux(any_after, index_after, index)


def lowest_set(mask: Value) -> Value:
    """The lowest set bit of ``mask`` alone (0 when none): :func:`first_set`'s pick as a
    one-hot mask, each bit an AND of the bits below it (no encoder, no decoder)."""
    return Cat(*(mask[i] & ~mask[:i].any() if i else mask[0] for i in range(len(mask))))


def rotating_lowest_set(mask: Value, pointer: Value) -> Value:
    """:func:`at_or_after`'s pick as a one-hot mask: the first set bit of ``mask`` at or
    after bit ``pointer``, wrapping round to bit 0 (0 when none)."""
    after = Cat(*(mask[i] & at_most(pointer, i) for i in range(len(mask))))
    return Mux(after.any(), lowest_set(after), lowest_set(mask))


def nth_set_mask(mask: Value, n: Value) -> Value:
    """:func:`nth_set`'s pick as a one-hot mask: bit ``i`` of ``mask`` when ``n`` bits of
    ``mask`` lie below it (0 when ``mask`` has ``n`` or fewer); every bit in parallel."""
    return Cat(*(mask[i] & equals(popcount(mask[:i]), n) if i else mask[0] & is_zero(n)
                 for i in range(len(mask))))


def index_of(onehot: Value) -> Value:
    """The index of the set bit of a one-hot ``onehot`` (0 when none; with two or more set,
    the OR of their indices): bit ``j`` is the OR of the bits whose index has bit ``j``."""
    width = max((len(onehot) - 1).bit_length(), 1)
    return Cat(*(or_all([onehot[i] for i in range(len(onehot)) if i >> j & 1])
                 for j in range(width)))


def or_all(values: Sequence[Value]) -> Value:
    """The OR of ``values``, bit by bit (0 for none)."""
    result = Const(0, 1)
    for value in values:
        result = result | value
    return result


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
        index = Mux(mask[i] & equals(count, n), i, index)
        count = count + mask[i]
    return index


def saturate(value: Value, limit: int) -> Value:
    """``min(value, limit)``, ``bits(limit)`` wide."""
    width = max(limit.bit_length(), 1)
    return Mux(~at_most(value, limit), Const(limit, width), value[:width])


def lookup(index: Value, function: Callable[[int], int]) -> Value:
    """``function(index)`` as a table of every value ``index`` can take: a balanced tree of
    2:1 multiplexers of constants, one level per index bit (for a narrow index, a few LUT
    levels where the arithmetic would be a chain).

    Not an ``Array`` of constants: Amaranth writes that as a case in an ``always @*`` block,
    which a four-state event-driven simulator (Icarus) first evaluates when the index
    changes, so a table whose index keeps its reset value (a pointer that never turns)
    stays X. Every entry has the width (and signedness) of the widest, so no multiplexer
    mixes widths."""
    values = [function(i) for i in range(1 << len(index))]
    signed = min(values) < 0
    shape = Shape(max(max(Const(v).shape().width for v in values), 1), signed)
    level = [Const(v, shape) for v in values]
    for bit in range(len(index)):
        level = [Mux(index[bit], level[k + 1], level[k]) for k in range(0, len(level), 2)]
    return level[0]


def product(a: Value, b: Value | int, m: Module | None = None, name: str = "product"
            ) -> Value:
    """``a x b`` (unsigned; ``b`` a value or a constant) as shifted copies of ``a`` summed in
    a balanced tree: LUTs and carry chains next to the logic that uses it, where a ``*`` of a
    few bits (even by a constant) may be mapped to a far-away DSP block. With ``m``, every
    sum of the tree is a signal of ``m`` (:func:`named`)."""
    if isinstance(b, int):
        terms = [a << i for i in range(b.bit_length()) if b >> i & 1]
    else:
        terms = [Mux(b[i], a << i, 0) for i in range(len(b))]
    return _summed_in_pairs(terms or [Const(0, 1)], m, name)


def _summed_in_pairs(terms: Sequence[Value], m: Module | None, name: str) -> Value:
    """The sum of ``terms`` (at least one) in a balanced tree of :func:`add`, level by level,
    each sum named ``{name}_l{level}_{index}`` in ``m`` (:func:`named`)."""
    level = 0
    while len(terms) > 1:
        terms = [named(m, add(terms[k], terms[k + 1]), f"{name}_l{level}_{k // 2}")
                 if k + 1 < len(terms) else terms[k] for k in range(0, len(terms), 2)]
        level += 1
    return terms[0]


def ceil_div_limited(dividend: Value, divisor: Value, limit: int, m: Module | None = None,
                     name: str = "quotient") -> Value:
    """``min(ceil(dividend / divisor), limit)`` for ``divisor >= 1``, without a divider: bit
    ``j`` of a thermometer code is ``j x divisor < dividend`` (``limit`` comparisons with
    constant multiples of the divisor, side by side), and the quotient is its first clear bit.
    A few adder and comparator delays deep where a divider is one subtraction per quotient
    bit in series. With ``m``, the divisor and every multiple are signals of ``m``."""
    divisor = named(m, divisor, f"{name}_divisor")
    below = Cat(*(less(named(m, product(divisor, j, m, f"{name}_x{j}"), f"{name}_x{j}"),
                       dividend) for j in range(limit)))
    any_clear, first_clear = first_set(~below)
    return Mux(any_clear, first_clear, limit)


def remainder(value: Value, k: int, m: Module | None = None, name: str = "remainder") -> Value:
    """``value % k`` (unsigned, ``k >= 1`` a constant). A power of two is ``value``'s low
    bits; any other ``k`` is taken by residues: each 4-bit digit's ``digit x 16 ** j mod k``
    from a table, their sum in a balanced tree of small adders, and the sum's remainder
    from a table. A few LUT levels and adders of a few bits, where
    Yosys builds ``%`` by a constant as a divider: one subtraction a bit of ``value``, in
    series (a 16-bit value by 3 was about 200 cells deep, the default build's longest
    path). With ``m``, each partial sum is a signal of ``m``."""
    if k == 1:
        return Const(0, 1)
    if k & (k - 1) == 0:
        return value % k                        # the low bits, which Yosys takes as such
    digits = [value[i:i + 4] for i in range(0, len(value), 4)]
    terms = [lookup(digit, lambda v, j=j: (v << 4 * j) % k) for j, digit in enumerate(digits)]
    return lookup(_summed_in_pairs(terms, m, name), lambda v: v % k)


def reciprocal_shift(dividend_bits: int, divisor_bits: int) -> int:
    """The ``s`` of :func:`ceil_div_by_reciprocal` for operands of these widths: the width
    of the largest ``n (d - 1)``."""
    top = max((1 << divisor_bits) - 1, 1)
    return (((1 << dividend_bits) - 1) * (top - 1)).bit_length()


def ceil_div_by_reciprocal(dividend: Value, divisor: Value, limit: int,
                           m: Module | None = None, name: str = "quotient") -> Value:
    """``min(ceil(n / d), limit)`` for ``n = dividend``, ``d = max(divisor, 1)`` (a divisor of
    0 counts as 1), by one multiplication: ``P = n x r`` with ``r = floor(2 ** s / d)`` (a
    table of the divisor's values), then ``ceil(P / 2 ** s)``: ``P``'s high bits, plus one
    when any of its ``s`` low bits is set. ``bits(limit)`` wide.

    Exact for every operand when ``n (d - 1) < 2 ** s``, so ``s`` is the width of that
    product's largest value (:func:`reciprocal_shift`): with ``2 ** s = r d + e``
    (``0 <= e < d``), ``P / 2 ** s = n / d - n e / (d 2 ** s)``, and ``n e < 2 ** s`` puts
    it in ``(n / d - 1 / d, n / d]``, whose ceiling is that of ``n / d`` (``n / d`` is a
    whole number or at least ``1 / d`` above one). The multiplier is a DSP block
    (MULT18X18D on the ECP5; two for a reciprocal over 18 bits), its operands straight from
    the dividend and the table, where :func:`ceil_div_limited` compares ``limit`` multiples
    of the divisor side by side, each a carry chain. With ``m``, the product is a signal of
    ``m``."""
    shift = reciprocal_shift(len(dividend), len(divisor))
    reciprocal = lookup(divisor, lambda v: (1 << shift) // max(v, 1))
    scaled = named(m, dividend * reciprocal, f"{name}_scaled")
    high, width = scaled[shift:], max(limit.bit_length(), 1)
    # Below the limit, the high bits plus the rounding are at most the limit.
    return Mux(less(high, limit), (high[:width] + scaled[:shift].any())[:width],
               Const(limit, width))


def block_mask(start: Value, length: Value, n: int, m: Module | None = None,
               name: str = "block_end") -> Value:
    """``n`` bits, set from bit ``start`` for ``length`` bits (clipped at bit ``n``): the
    blocks a contiguous allocation covers, bit ``i`` being ``start <= i < end``. With ``m``,
    the end (``start + length``) is a signal of ``m``.

    Each comparison with ``i`` is split at groups of eight blocks (:func:`_up_to`): the
    value's high bits against ``i``'s group, shared by the group's eight bits, and its three
    low bits against ``i``'s place in the group. Yosys maps a comparison with a constant to
    a carry chain of its own; split, the 128-block mask of the default GPU takes 549 LUT4
    sites on the ECP5 instead of 1,305 (484 carry cells)."""
    end = named(m, add(start, length), name)
    return Cat(*(_up_to(start, i) & ~_up_to(end, i) for i in range(n)))


def _up_to(value: Value, i: int) -> Value:
    """``value <= i`` (unsigned, ``i`` a constant) as ``value >> 3 < i >> 3``, or equal and
    ``value & 7 <= i & 7``."""
    if len(value) <= 3:
        return at_most(value, i)
    high, group = value[3:], i >> 3
    return less(high, group) | (equals(high, group) & at_most(value[:3], i & 7))


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
