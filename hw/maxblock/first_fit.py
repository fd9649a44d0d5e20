"""First fit alone: the lowest start of a free run of at least ``request`` blocks (step a43),
without the longest run.

The dispatcher's allocator reads only ``fit`` and ``fit_start`` of a free-block circuit. This
one gives them from the runs of 1, 2, 4, ... free blocks instead of the exact tree's nodes
(:class:`hw.maxblock.exact.ExactMaxFreeBlock`, which compares the request at every node), for
about two thirds of the tree's LUT4 (ECP5, Yosys 0.70, combinational: n = 128: 2,001 against
2,859; n = 64: 1,092 against 1,408; n = 48: 592 against 1,023).

How it works, with ``free[i]`` = block ``i`` is free and position ``n`` standing for the empty
run at the end:

1. ``runs[w][i]``: blocks ``i .. i + w - 1`` are all free, for ``w = 1, 2, 4, ...`` up to the
   request's top bit (``runs[2w][i] = runs[w][i] & runs[w][i + w]``);
2. ``starts[b][i]``: a run of at least ``request mod 2^b`` blocks starts at ``i``. It is 1
   everywhere for ``b = 0``, and ``starts[b + 1][i] = runs[2^b][i] & starts[b][i + 2^b]`` when
   bit ``b`` of the request is set (``2^b`` blocks from ``i``, then the rest from ``i + 2^b``),
   ``starts[b][i]`` when it is not: one 2:1 choice per position and request bit;
3. ``fit_start``: the lowest ``i < n`` with ``starts[i]`` (a balanced tree of 2:1 choices,
   ``ceil(log2 n)`` levels), ``fit``: there is one. A request of 0 fits at 0.

Model twin: :func:`model.maxblock.first_fit` (``fit`` = not None, ``fit_start`` = the address
or 0); :class:`model.maxblock.PipelineModel` for the registered forms.

Contract and latency: ``status`` and ``request`` in; ``fit`` and ``fit_start`` out,
``latency`` clocks later: 0 combinational, 1 registered outputs, 2 also a register between
steps 2 and 3 (``n`` bits), 3 also one in the middle of step 3's tree
(:func:`first_fit_max_latency`); a new word every clock, and with latency 1 or more the stall
interface of :data:`hw.maxblock.contract.PIPELINE_CONTRACT`.
"""

from amaranth.hdl import Cat, Const, Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.maxblock.contract import (
    _BlockParameters,
    _data_register,
    _reset_less_outputs,
    _valid_pipe,
    _with_contract_notes,
    pipeline_ports,
)
from hw.maxblock.pipeline import _bundle
from model.maxblock import check_block_count, check_first_fit_latency, check_free_level

__all__ = ["FirstFit"]


@_with_contract_notes
class FirstFit(_BlockParameters, wiring.Component):
    """The lowest start of a free run of at least ``request`` of ``n`` blocks.

    Parameters
    ----------
    n : int
        Number of blocks (width of ``status``).
    free_level : int
        The level of a free block in ``status`` (1 or 0).
    latency : int
        0 to :func:`model.maxblock.first_fit_max_latency` (3).

    Attributes
    ----------
    status : In(n)
    request : In(range(n + 1))
    fit : Out(1)
        A free run of at least ``request`` blocks exists (always 1 for ``request = 0``).
    fit_start : Out(range(max(n, 2)))
        Lowest address at which such a run starts; 0 when ``fit`` is 0 or ``request`` is 0.
    """

    def __init__(self, n, *, free_level=1, latency=0):
        self._n = check_block_count(n)
        self._free_level = check_free_level(free_level)
        self._latency = check_first_fit_latency(latency)
        super().__init__({
            "status": In(self._n),
            "request": In(range(self._n + 1)),
            "fit": Out(1),
            "fit_start": Out(range(max(self._n, 2))),
            **pipeline_ports(self._latency),
        })
        if self._latency:
            _reset_less_outputs(self, ["fit", "fit_start"])

    def elaborate(self, platform):
        m = Module()
        n, latency = self._n, self._latency
        enable = self.enable if latency else None

        def cut(value, name):
            return _data_register(m, value, name, enable)

        def bits(name, values):
            # Assigned bit by bit, so that the signal is one net its readers share (and the
            # Verilog reads every name it declares; hw.maxblock.pipeline._bundle). One bit is
            # left unnamed: a port assigned from it made the name one nothing read (lint:
            # UNUSEDSIGNAL 'starts1' for one block).
            values = list(values)
            return _bundle(m, name, values) if len(values) > 1 else values[0]

        free = self.status if self._free_level else ~self.status
        request = self.request
        # runs[w][i], i = 0 .. n - w: the w blocks from i are free.
        runs, width = {1: free}, 1
        while 2 * width <= n and 2 * width < (1 << len(request)):
            last = runs[width]
            runs[2 * width] = bits(f"runs{2 * width}", (last[i] & last[i + width]
                                                         for i in range(n - 2 * width + 1)))
            width *= 2
        # starts[i] for i = 0 .. n (n: the empty run after the last block); the last step
        # keeps i < n, the positions a run can start at.
        starts = Const((1 << (n + 1)) - 1, n + 1)
        for bit in range(len(request)):
            step, run = 1 << bit, runs[1 << bit]
            kept = n + 1 if bit < len(request) - 1 else n
            starts = bits(f"starts{bit + 1}", (
                Mux(request[bit], run[i] & starts[i + step] if i + step <= n else 0, starts[i])
                for i in range(kept)))
        found = starts[:n]
        if latency >= 2:
            found = cut(found, "starts")
        # The lowest found position: (any, address) pairs merged level by level (a leaf has
        # no address bits yet: None).
        nodes = [(found[i], None) for i in range(n)]
        levels = (n - 1).bit_length()
        for level in range(levels):
            if latency >= 3 and level == levels // 2 and level:
                nodes = [(cut(valid, f"lowest_l{level}_{k}_valid"),
                          cut(address, f"lowest_l{level}_{k}_address"))
                         for k, (valid, address) in enumerate(nodes)]
            merged = []
            for k in range(0, len(nodes) - 1, 2):
                (low, low_at), (high, high_at) = nodes[k], nodes[k + 1]
                upper = Mux(low, low_at, high_at) if low_at is not None else None
                merged.append((low | high, ~low if upper is None else Cat(upper, ~low)))
            if len(nodes) % 2:
                valid, address = nodes[-1]
                merged.append((valid, Const(0, 1) if address is None
                               else Cat(address, Const(0, 1))))
            nodes = merged
        any_found, address = nodes[0]
        if address is None:                           # one block
            address = Const(0, 1)
        if latency >= 3 and levels < 2:
            any_found = cut(any_found, "lowest_valid")
            address = cut(address, "lowest_address")
        fit_start = Mux(any_found, address, 0)
        if latency:
            with m.If(self.enable):
                m.d.sync += [self.fit.eq(any_found), self.fit_start.eq(fit_start)]
            _valid_pipe(m, self)
        else:
            m.d.comb += [self.fit.eq(any_found), self.fit_start.eq(fit_start)]
        return m
