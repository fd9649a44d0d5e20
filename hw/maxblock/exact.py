"""The project's exact allocator primitive: longest free run, its start, and a first fit.

:class:`ExactMaxFreeBlock` serves seed 002's embodiment 1 (step a43 allocates at a start
address): the same ``length`` as embodiment 4 (:mod:`hw.maxblock.full`) for O(n) gates instead
of n², and where to allocate. It is a balanced tree over the blocks (:mod:`hw.maxblock.tree`),
joined when ``n`` is not a power of two (:mod:`hw.maxblock.join`) and cut into a pipeline of
any latency up to one register per boundary between pieces (:mod:`hw.maxblock.pipeline`).

Model twin: :func:`model.maxblock.exact_free_block` (also :func:`model.maxblock.
largest_free_block` and :func:`model.maxblock.first_fit`); :class:`model.maxblock.
PipelineModel` for the registered forms; :func:`model.maxblock.exact_max_latency` is
:meth:`ExactMaxFreeBlock.max_latency`.

Contract and latency: ``status`` and ``request`` in; ``length``, ``start``, ``fit`` and
``fit_start`` out, ``latency`` clocks later (0 combinational, 1 registered outputs, 2 up to
``max_latency(n)`` pipelined); a new word every clock, and with latency 1 or more the stall
interface of :data:`hw.maxblock.contract.PIPELINE_CONTRACT`.
"""

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.maxblock.arith import _fits
from hw.maxblock.contract import (
    _BlockParameters,
    _drive,
    _reset_less_outputs,
    _valid_pipe,
    _with_contract_notes,
    pipeline_ports,
)
from hw.maxblock.join import _join_demands, _join_piece
from hw.maxblock.pipeline import _build_pipeline
from hw.maxblock.tree import _LEAF, _LEAF_LEVEL, _tree_pieces
from model.maxblock import (
    aligned_blocks,
    check_block_count,
    check_exact_latency,
    check_free_level,
    exact_max_latency,
)

__all__ = ["ExactMaxFreeBlock"]


@_with_contract_notes
class ExactMaxFreeBlock(_BlockParameters, wiring.Component):
    """The longest free run, where it starts, and a first-fit search: exact, O(n) gates.

    The allocator primitive of embodiment 1 (step a43 allocates at a start address). It gives
    the same ``length`` as :class:`MaxFreeBlock` for O(n) gates instead of ``n²``, and says
    where to allocate. It is a balanced tree over the blocks (see ``elaborate``): leaves of
    four blocks are constant tables, and every node merges its two halves with a few
    comparators of ``log2`` of its size bits, so the logic is ``O(log n)`` comparator levels
    deep. Each tree level is a submodule (``leaves``, ``level<k>_compare``,
    ``level<k>_select`` for the nodes of 2^k blocks, and ``join`` when ``n`` is not a power of
    two), so synthesis and timing reports show where the logic and the paths are.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    free_level : int
        1 when a free block reads 1, 0 when it reads 0.
    latency : int
        Clocks from inputs to outputs. 0: combinational. 1: registered outputs. 2 up to
        ``max_latency(n)``: pipelined. The logic is a sequence of pieces: the leaf tables,
        two per tree level above them (the run across the middle of every node with its
        comparisons; the multiplexers that pick the node's fields), and, when ``n`` is not a
        power of two, the join of its power-of-two parts. ``latency - 1`` registers are spread
        evenly over the boundaries between pieces, then the output register; ``max_latency``
        puts one on every boundary (``2 log2(n) - 3`` for ``n = 2^p >= 4``), and no latency
        beyond it is accepted, since a register that cuts no logic would only delay the
        inputs. A new ``status`` and ``request`` may be presented every clock.

        Latency 0 and 1 build for area: below the root, a node compares its left half's
        longest run with the run across its middle, and only the winner with its right
        half's. The root, and every node of a pipelined circuit, compare all three pairs
        side by side, which takes a third comparator but one comparator delay less.

    Attributes
    ----------
    status : In(n)
        Bit ``i`` is block ``i``.
    request : In(range(n + 1))
        Blocks wanted by the first-fit search.
    length : Out(range(n + 1))
        Length of the longest free run, 0 when nothing is free.
    start : Out(range(max(n, 2)))
        Lowest address at which a longest free run starts; 0 when nothing is free.
    fit : Out(1)
        A free run of at least ``request`` blocks exists (always 1 for ``request = 0``).
    fit_start : Out(range(max(n, 2)))
        Lowest address at which such a run starts; 0 when ``fit`` is 0 or ``request`` is 0.
    valid, enable : In(1); result_valid : Out(1)
        With ``latency`` >= 1 only: the stall interface (see Notes).
    """

    def __init__(self, n, *, free_level=1, latency=0):
        self._n = check_block_count(n)
        self._free_level = check_free_level(free_level)
        self._latency = check_exact_latency(n, latency)
        address = range(max(self._n, 2))
        super().__init__({
            "status": In(self._n),
            "request": In(range(self._n + 1)),
            "length": Out(range(self._n + 1)),
            "start": Out(address),
            "fit": Out(1),
            "fit_start": Out(address),
            **pipeline_ports(self._latency),
        })
        if self._latency:
            _reset_less_outputs(self, ["length", "start", "fit", "fit_start"])

    @staticmethod
    def max_latency(n: int) -> int:
        """The deepest pipeline for ``n`` blocks: a register on every boundary between pieces
        of logic (see ``latency``)."""
        return exact_max_latency(n)

    def _cut_positions(self, segments: int) -> list[int]:
        # Which boundaries get a register: index i (1 .. segments - 1) is the boundary before
        # piece i of the logic (the output register follows the last). latency - 1 registers
        # are spread evenly over them.
        cuts = max(self._latency - 1, 0)
        counts = [0] * segments
        for index in range(cuts):
            counts[(index + 1) * segments // (cuts + 1)] += 1
        return counts

    def _pieces(self):
        """The pieces of logic in order, and the keys of the outputs' values."""
        n = self._n
        blocks = aligned_blocks(0, n)
        parallel = self._latency >= 2
        request_width = len(self.request)
        widths = {"best": len(self.length), "bst": len(self.start), "ffs": len(self.fit_start),
                  "fit": 1}
        if len(blocks) == 1 and n >= _LEAF:
            # One power-of-two tree; its root compares side by side and gives `fit` itself.
            k = n.bit_length() - 1
            fields = {"best", "bst", "ffs"} | ({"fit"} if k > _LEAF_LEVEL else set())
            pieces = _tree_pieces({(k, 0): fields},
                                  side_by_side=lambda level: parallel or level == k,
                                  request_of=lambda *_: 0, request_widths={0: request_width},
                                  ffs_widths={(k, 0): widths["ffs"]})
            outputs = {field: ("node", k, 0, field) for field in sorted(fields)}
            return pieces, outputs
        # Power-of-two parts, largest first, joined (and single blocks below four).
        demands = _join_demands(blocks)
        pieces = []
        if demands:
            pieces = _tree_pieces(demands, side_by_side=lambda level: parallel,
                                  request_of=lambda *_: 0, request_widths={0: request_width})
        pieces.append(_join_piece("join", blocks, ("request", 0), request_width, widths))
        return pieces, {field: ("join", field) for field in widths}

    def elaborate(self, platform):
        # The tree and its pieces are described in hw.maxblock.tree; the pipeline
        # registers sit between pieces, each carrying only what later pieces read.
        m = Module()
        free = self.status if self._free_level else ~self.status
        if self._n == 1 and not self._latency:
            # One block, combinational: the join of its one part is the block itself. Built as
            # a piece, its run and start were the status bit and a constant under names of
            # their own that nothing read (lint: UNUSEDSIGNAL 'join_bit_0', 'start').
            m.d.comb += [self.length.eq(free), self.start.eq(0),
                         self.fit.eq(_fits(free, self.request)), self.fit_start.eq(0)]
            return m
        pieces, outputs = self._pieces()
        assert len(pieces) == exact_max_latency(self._n), "pieces and latencies disagree"
        stage = {("request", 0): self.request}
        for start, size in aligned_blocks(0, self._n):
            if size >= _LEAF:
                for leaf in range(start // _LEAF, (start + size) // _LEAF):
                    stage[("free", leaf)] = free[leaf * _LEAF:(leaf + 1) * _LEAF]
            else:
                for address in range(start, start + size):
                    stage[("bit", address)] = free[address]
        final = {*outputs.values(), ("request", 0)}
        # Combinational, length, start and fit are the last piece's values as they are.
        drive = {} if self._latency else {
            outputs[field]: port for field, port in (("best", self.length),
                                                     ("bst", self.start), ("fit", self.fit))
            if field in outputs}
        stage = _build_pipeline(m, pieces, stage, final,
                                self._cut_positions(len(pieces)),
                                self.enable if self._latency else None, drive=drive)
        best, start, ffs = (stage[outputs[field]] for field in ("best", "bst", "ffs"))
        request = stage[("request", 0)]
        fit = stage[outputs["fit"]] if "fit" in outputs else _fits(best, request)
        fit_start = Mux(fit & request.any(), ffs, 0)
        ports = (self.length, self.start, self.fit, self.fit_start)
        values = (best, start, fit, fit_start)
        if self._latency:
            with m.If(self.enable):
                m.d.sync += [port.eq(value) for port, value in zip(ports, values, strict=True)]
            _valid_pipe(m, self)
        else:
            for port, value in zip(ports, values, strict=True):
                if value is not port:
                    _drive(m, port, value)
        return m
