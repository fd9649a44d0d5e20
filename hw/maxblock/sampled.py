"""Embodiment 6 of seed 002: the largest sampled run length that is free.

:class:`SampledMaxFreeBlock` builds only the windows ``SA_k`` of the sampled ``k`` (each from
the one before, about two gates per bit, see :mod:`hw.maxblock.shifter`) and scans them down:
exact at a sampled length, the next sampled length below otherwise; about ``2 n`` gates per
sample.

Model twin: :func:`model.maxblock.sampled_max_free_run` (and
:func:`model.maxblock.sampled_seed_procedure`, the seed's steps literally; the default sample
set is :func:`model.maxblock.default_samples`); :class:`model.maxblock.PipelineModel` for the
registered forms.

Contract and latency: ``status`` in, ``length`` out; latency 0, 1 or 3 clocks (with 3 the
second register holds the sampled windows only), a new word every clock, and with latency 1
or 3 the stall interface of :data:`hw.maxblock.contract.PIPELINE_CONTRACT`.
"""

from amaranth.hdl import Value

from hw.maxblock.contract import _with_contract_notes
from hw.maxblock.shifter import _MaxFreeBlockBase
from model.maxblock import check_samples

__all__ = ["SampledMaxFreeBlock"]


@_with_contract_notes
class SampledMaxFreeBlock(_MaxFreeBlockBase):
    """Embodiment 6 of seed 002: the largest sampled run length that is free.

    Only the windows ``SA_k`` for the sampled ``k`` are built, and the downward scan gives
    ``length = k' + 1`` for the largest sampled ``k'`` whose ``SAR_k'`` is set (0 when none).
    The result is exact when the true longest run is ``k + 1`` for a sample ``k`` and is the
    next sampled length below it otherwise. Each window is built from the one before it with
    about two gates per bit (see ``_windows``), so the cost is about ``2 n`` gates per sample.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    samples : sequence of int
        Strictly increasing ``k`` in ``0 .. n - 1`` whose steps never decrease; see
        :func:`model.maxblock.default_samples` for the default set.
    free_level, latency :
        As for :class:`MaxFreeBlock`; with ``latency=3`` the second register holds the
        sampled ``SA_k`` only.

    Attributes
    ----------
    status, length, valid, enable, result_valid :
        As for :class:`MaxFreeBlock`.
    """

    def __init__(self, n, samples, *, free_level=1, latency=0):
        self._samples = check_samples(n, samples)
        super().__init__(n, free_level=free_level, latency=latency)

    @property
    def samples(self) -> tuple[int, ...]:
        return self._samples

    def _first_stage(self) -> Value:
        return self.status

    def _run_lengths(self):
        return self._samples, [k + 1 for k in self._samples]
