"""Embodiment 4 of seed 002: the largest contiguous free block, exactly, about n² gates.

:class:`MaxFreeBlock` is the seed's circuit as written: the ``n`` shifted copies of the status
word, their running AND, one reduction per copy and a downward scan (the shared steps are in
:mod:`hw.maxblock.shifter`).

Model twin: :func:`model.maxblock.max_free_run` (and :func:`model.maxblock.seed_procedure`,
the seed's steps literally); :class:`model.maxblock.PipelineModel` for the registered forms.

Contract and latency: ``status`` (n bits, bit i = block i) in, ``length`` out; latency 0, 1 or
3 clocks, a new word every clock, and with latency 1 or 3 the stall interface of
:data:`hw.maxblock.contract.PIPELINE_CONTRACT`.
"""

from amaranth.hdl import Value

from hw.maxblock.contract import _with_contract_notes
from hw.maxblock.shifter import _MaxFreeBlockBase

__all__ = ["MaxFreeBlock"]


@_with_contract_notes
class MaxFreeBlock(_MaxFreeBlockBase):
    """The largest contiguous free block, exactly, as embodiment 4 of seed 002 builds it.

    The ``n`` shifted copies ``S_i`` of the status word, their running AND ``SA_i`` (OR when
    free reads 0), the reduction ``SAR_i`` of each and a scan from ``SAR_(n-1)`` downwards:
    the first set ``SAR_i'`` gives ``length = i' + 1``. Cost: about n²/2 two-input gates for
    the running AND and as many again for the reductions; depth n gates in the running chain.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    free_level : int
        1 when a free block reads 1 (AND, then OR-reduce); 0 when it reads 0 (OR, then
        AND-reduce and invert).
    latency : int
        0: ``length`` is a combinational function of ``status``. 1: ``length`` is registered
        (the seed's one clock). 3: the seed's three registered steps -- the status word, the
        ``SA_i`` (``n(n+1)/2`` flip-flops) and the length are each registered.

    Attributes
    ----------
    status : In(n)
        Bit ``i`` is block ``i`` (address ``i``).
    length : Out(range(n + 1))
        Length of the longest free run, 0 when no block is free, ``latency`` clocks after
        ``status``. A new status word may be presented every clock.
    valid, enable : In(1); result_valid : Out(1)
        With ``latency`` 1 or 3 only: the stall interface (see Notes).
    """

    def __init__(self, n, *, free_level=1, latency=0):
        super().__init__(n, free_level=free_level, latency=latency)

    def _first_stage(self) -> Value:
        return self.status

    def _run_lengths(self):
        return range(self._n), [k + 1 for k in range(self._n)]
