"""The shifted-copy circuit that embodiments 4, 5 and 6 of seed 002 share.

:class:`_MaxFreeBlockBase` builds the seed's three steps once: the word to scan (d2 / e2 /
f2: the status word, or its wholly-free groups), the running AND of its shifted copies
``SA_k`` (d3 / e32 / f3; OR when free reads 0) and the reduction of every window to one bit
with a downward scan (d4 / e33 / f4). A subclass says which word enters (``_first_stage``)
and which windows are built with the length each stands for (``_run_lengths``):
:class:`hw.maxblock.full.MaxFreeBlock` (every ``k``), :class:`hw.maxblock.grouped.
GroupedMaxFreeBlock` (every group count) and :class:`hw.maxblock.sampled.SampledMaxFreeBlock`
(the sampled ``k``).

Model twins: :func:`model.maxblock.seed_procedure` and its grouped and sampled forms are the
same three steps written out in Python; :class:`model.maxblock.PipelineModel` adds the clock.

Contract and latency: ``status`` in, ``length`` out, ``latency`` 0 (combinational), 1 (the
length registered) or 3 (each step registered); with 1 or 3 the stall interface of
:data:`hw.maxblock.contract.PIPELINE_CONTRACT`. A new status word may be presented every clock.
"""

from collections.abc import Sequence

from amaranth.hdl import Module, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.maxblock.contract import (
    _BlockParameters,
    _data_register,
    _reset_less_outputs,
    _valid_pipe,
    named,
    pipeline_ports,
    scan_down,
)
from model.maxblock import check_block_count, check_free_level, check_latency

__all__: list[str] = []


class _MaxFreeBlockBase(_BlockParameters, wiring.Component):
    """Ports, parameters and the pieces of circuit shared by the three variants.

    Subclasses provide ``_first_stage`` (the word that enters the shifter, registered as the
    first of three stages) and ``_run_lengths`` (the sampled ``k`` and the length each stands
    for).
    """

    def __init__(self, n, *, free_level, latency):
        # Every parameter is checked before anything is built (a half-built component would
        # also leave Amaranth's "created but never used" warning behind).
        self._n = check_block_count(n)
        self._free_level = check_free_level(free_level)
        self._latency = check_latency(latency)
        super().__init__({
            "status": In(self._n),
            "length": Out(range(self._n + 1)),
            **pipeline_ports(self._latency),
        })
        if self._latency:
            _reset_less_outputs(self, ["length"])

    def _both_free(self, a: Value, b: Value) -> Value:
        # d3: AND when free reads 1, OR when free reads 0.
        return a & b if self._free_level else a | b

    def _any_free(self, window: Value) -> Value:
        # d41: OR-reduce, or AND-reduce then invert. The inversion is written on the bits
        # (~window).any() rather than on the flag: the back end turns a multiplexer on an
        # inverted flag into one on the flag and would leave the inverter behind, unused.
        return window.any() if self._free_level else (~window).any()

    def _windows(self, m: Module, word: Value, samples: Sequence[int]) -> list[Value]:
        """``SA_k`` for each ``k`` in ``samples`` (strictly increasing), over ``word``.

        Only the ``len(word) - k`` meaningful bits of ``SA_k`` are built: its top ``k`` bits
        come from the vacated, "occupied" bits of ``S_k`` and are constants that change no
        reduction. Bit ``j`` of ``SA_k`` is "blocks ``j`` to ``j + k`` are all free".

        Each window is built from the previous one (length ``L1``): a run of ``L2`` blocks is
        covered by windows of ``L1`` at offsets ``0, L1, 2 L1, ...`` and ``L2 - L1``. With
        consecutive samples this is the seed's running chain ``SA_k = SA_(k-1) AND S_k``
        exactly; with sparse samples it needs about two gates per bit per sample, not ``k``.
        """
        width = len(word)
        windows = []
        previous, previous_length = word, 1
        for k in samples:
            length = k + 1
            if length == previous_length:           # k = 0: SA_0 = S_0
                windows.append(previous)
                continue
            if previous_length == length - 1:       # the seed's chain: SA_(k-1) AND S_k
                result = self._both_free(previous[:width - k], word[k:])
            else:
                result = None
                for offset in [*range(0, length - previous_length, previous_length),
                               length - previous_length]:
                    term = previous[offset:offset + width - k]
                    result = term if result is None else self._both_free(result, term)
            # A signal per window keeps the expression trees shallow for the back end.
            window = named(m, f"sa{k}", result)
            windows.append(window)
            previous, previous_length = window, length
        return windows

    def elaborate(self, platform):
        m = Module()
        three_stage = self._latency == 3

        # Stage 1 (d2 / e2 / f2): the word to scan. Its shifted copies S_i are wiring.
        word = self._first_stage()
        if three_stage:
            word = _data_register(m, word, "stage1_word", self.enable)

        # Stage 2 (d3 / e32 / f3): the running AND (or OR) of the shifted copies.
        samples, lengths = self._run_lengths()
        windows = self._windows(m, word, samples)
        if three_stage:
            windows = [_data_register(m, window, f"stage2_sa{k}", self.enable)
                       for k, window in zip(samples, windows, strict=True)]

        # Stage 3 (d4 / e33 / f4): reduce every window to one bit, scan from the top.
        length = scan_down([(self._any_free(window), value)
                            for window, value in zip(windows, lengths, strict=True)])
        if self._latency:
            with m.If(self.enable):
                m.d.sync += self.length.eq(length)
            _valid_pipe(m, self)
        else:
            m.d.comb += self.length.eq(length)
        return m
