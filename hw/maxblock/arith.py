"""The exact tree's arithmetic, written out bit by bit: comparisons, sums and differences.

Part of the exact allocator primitive (:mod:`hw.maxblock.exact`, the first fit of
embodiment 1's step a43 in seed 002), also used by the exact shared unit
(:mod:`hw.shared_maxblock`). Every function returns Amaranth expressions (a comparison as a
ripple from the lowest bit, a sum or difference as a ripple of bit operations) rather than
Verilog operators: synthesis then maps each into LUTs with the logic around it instead of a
carry chain of its own, and lint sees no operands of unequal widths. Combinational: no
latency, no registers.

Model twin: none of its own; the values it computes are those of
:func:`model.maxblock.exact_free_block`, against which the whole circuit is checked.
"""

from collections.abc import Callable, Sequence

from amaranth.hdl import Cat, Const, Mux, Signal, Value

__all__: list[str] = []


def _at_least(a: Value, b: Value) -> Value:
    """``a >= b`` (unsigned) as plain logic: a ripple from the lowest bit up.

    Written out rather than as ``>=`` so that synthesis maps it into LUTs with the logic
    around it instead of a carry chain of its own (the tree has hundreds of small ones). The
    operands here are a few bits wide; a ripple maps to fewer LUTs than a balanced tree of
    (greater, equal) pairs, and no deeper once mapped (the first version of the tree used one).
    """
    result = Const(1, 1)                    # equal so far: at least
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else Const(0, 1)
        y = b[i] if i < len(b) else Const(0, 1)
        result = (x & ~y) | (~(x ^ y) & result)
    return result


# The tree's run lengths and positions are "capped" values: w bits holding 0 .. 2^(w-1), so
# the top bit is set only for the largest value, when the rest are 0. The comparisons below
# use that to compare one bit fewer than plain comparators would (synthesis cannot know it).

def _capped_at_least(a: Value, b: Value) -> Value:
    """``a >= b`` for capped ``a`` and ``b`` whose widths differ by at most one bit."""
    if len(a) == len(b):
        return a[-1] | (~b[-1] & _at_least(a[:-1], b[:-1]))
    if len(a) == len(b) + 1:                # a >= 2^(w-1) >= b, where w = len(b)
        return a[-1] | a[-2] | (~b[-1] & _at_least(a[:-2], b[:-1]))
    assert len(b) == len(a) + 1
    return ~b[-1] & Mux(b[-2], a[-1] & ~b[:-2].any(), a[-1] | _at_least(a[:-1], b[:-2]))


def _fits(length: Value, request: Value) -> Value:
    """``length >= request`` for a capped ``length`` and any ``request``."""
    w = len(length)
    request = Cat(request, Const(0, w))     # at least w + 1 bits
    low_fits = ~request[w - 1] & _at_least(length[:w - 1], request[:w - 1])
    top_fits = ~(request[w - 1] & request[:w - 1].any())
    return ~request[w:].any() & Mux(length[w - 1], top_fits, low_fits)


def _cross_run(prefix: Value, suffix_start: Value,
               share: Callable[[str, Value], Value] = lambda name, value: value) -> list[Value]:
    """``2^(k-1) + prefix - suffix_start`` for capped ``k``-bit operands: ``k + 1`` bits, capped,
    as a list of bit expressions (low bit first).

    A ripple subtraction of the ``k - 1`` low bits; the two top bits follow from whether
    either operand is ``2^(k-1)`` (then its low bits are 0) and from the borrow. Each borrow
    goes through ``share`` (a named signal in the tree), since every later bit reads it.
    """
    k = len(prefix)
    bits, borrow = [], Const(0, 1)
    for i in range(k - 1):
        x, y = prefix[i], suffix_start[i]
        bits.append(x ^ y ^ borrow)
        borrow = share(f"borrow{i + 1}", (~x & (y | borrow)) | (y & borrow))
    # The value is 2^(k-1) * (1 + prefix_top - suffix_top - borrow) + low bits, and the
    # multiplier is 0, 1 or 2.
    prefix_top, suffix_top = prefix[k - 1], suffix_start[k - 1]
    one = (~prefix_top & ~suffix_top & ~borrow) | (prefix_top & suffix_top) | (
        prefix_top & ~suffix_top & borrow)
    two = prefix_top & ~suffix_top & ~borrow
    return [*bits, one, two]


def _half_plus(value: Value, k: int) -> Value:
    """``2^(k-1) + value`` for ``value`` in ``0 .. 2^(k-1)`` (``k`` bits): ``k + 1`` bits, wiring
    and one inverter (bit ``k - 1`` of ``value`` is set only for ``value = 2^(k-1)``)."""
    return Cat(value[:k - 1], ~value[k - 1], value[k - 1])


def _equals(value: Value, constant: int) -> Value:
    """``value == constant`` as an AND of the value's bits, each inverted where the constant
    has a 0 (a comparison with a constant would come out in Verilog with the constant at its
    minimal width, which lint rightly flags)."""
    return Cat(*(value[i] if constant >> i & 1 else ~value[i]
                 for i in range(len(value)))).all()


def _or_all(values: list[Value]) -> Value:
    """The bitwise OR of ``values``."""
    result = values[0]
    for value in values[1:]:
        result = result | value
    return result


def _is_wiring(value: Value) -> bool:
    """Whether ``value`` is a constant, a signal or a slice of one: no logic of its own, so
    naming it would only give its net a second name."""
    if isinstance(value, Const | Signal):
        return True
    # A slice of logic is logic: left unnamed, it would be built where it is read (outside
    # its piece's submodule).
    return type(value).__name__ == "Slice" and _is_wiring(value.value)


def _add_constant(value: Value, constant: int, width: int, share) -> list[Value]:
    """``value + constant`` in ``width`` bits (the caller knows it fits), as a ripple of bit
    operations. Carries known to be 0 are not built; each other carry that is logic goes
    through ``share``, since two bits read it."""
    bits, carry = [], None                  # None: a carry of 0
    for i in range(width):
        x = value[i] if i < len(value) else None
        one = constant >> i & 1
        if x is None and carry is None:
            bits.append(Const(one, 1))
            continue
        if x is None:
            bits.append(~carry if one else carry)
            carry = carry if one else None
        elif carry is None:
            bits.append(~x if one else x)
            carry = x if one else None
        else:
            bits.append(~(x ^ carry) if one else x ^ carry)
            carry = (x | carry) if one else (x & carry)
        if carry is not None and i < width - 1 and not _is_wiring(carry):
            carry = share(f"carry{i + 1}", carry)
    return bits


def _subtract(a: Sequence[Value], b: Value, width: int, share) -> list[Value]:
    """``a - b`` in ``width`` bits for ``a >= b`` (``a`` a list of bits), as a ripple of bit
    operations; each borrow goes through ``share``."""
    bits, borrow = [], Const(0, 1)
    for i in range(width):
        x = a[i] if i < len(a) else Const(0, 1)
        y = b[i] if i < len(b) else Const(0, 1)
        bits.append(x ^ y ^ borrow)
        if i < width - 1:
            borrow = share(f"borrow{i + 1}", (~x & (y | borrow)) | (y & borrow))
    return bits
