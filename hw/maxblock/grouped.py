"""Embodiment 5 of seed 002: the longest run of wholly free groups, in blocks.

:class:`GroupedMaxFreeBlock` reduces each of ``groups`` equal groups to "wholly free" (e2) and
runs embodiment 4's circuit (:mod:`hw.maxblock.shifter`) on those bits: about ``groups``²/2
gates plus ``n``, and a length that is a multiple of the group size.

Model twin: :func:`model.maxblock.grouped_max_free_run` (and
:func:`model.maxblock.grouped_seed_procedure`, the seed's steps literally);
:class:`model.maxblock.PipelineModel` for the registered forms.

Contract and latency: ``status`` in, ``length`` out; latency 0, 1 or 3 clocks (with 3 the first
register holds the reduced word), a new word every clock, and with latency 1 or 3 the stall
interface of :data:`hw.maxblock.contract.PIPELINE_CONTRACT`.
"""

from amaranth.hdl import Cat, Value

from hw.maxblock.contract import _with_contract_notes
from hw.maxblock.shifter import _MaxFreeBlockBase
from model.maxblock import check_groups

__all__ = ["GroupedMaxFreeBlock"]


@_with_contract_notes
class GroupedMaxFreeBlock(_MaxFreeBlockBase):
    """Embodiment 5 of seed 002: the longest run of wholly free groups, in blocks.

    The status word is cut into ``groups`` equal groups; each is reduced to one bit, "this
    group is wholly free" (e2), and the circuit of :class:`MaxFreeBlock` runs on those bits:
    ``length = j' * (n // groups)``. The result is a multiple of the group size and may
    under-estimate the true longest run (a run that straddles a group boundary is cut).
    Cost: about ``groups``²/2 gates plus ``n`` for the group reduction.

    Parameters
    ----------
    n : int
        Number of blocks, at least 1.
    groups : int
        Number of groups; must divide ``n``. ``groups == n`` is :class:`MaxFreeBlock`.
    free_level, latency :
        As for :class:`MaxFreeBlock`; with ``latency=3`` the first register holds the
        ``groups``-bit reduced word (e2 and e31), the second the ``FA_j`` (e32).

    Attributes
    ----------
    status, length, valid, enable, result_valid :
        As for :class:`MaxFreeBlock`.
    """

    def __init__(self, n, groups, *, free_level=1, latency=0):
        self._groups = check_groups(n, groups)
        super().__init__(n, free_level=free_level, latency=latency)

    @property
    def groups(self) -> int:
        return self._groups

    def _first_stage(self) -> Value:
        size = self._n // self._groups
        # e2: AND over a group when free reads 1, OR over it when free reads 0.
        return Cat(*(self.status[g * size:(g + 1) * size].all() if self._free_level
                     else self.status[g * size:(g + 1) * size].any()
                     for g in range(self._groups)))

    def _run_lengths(self):
        size = self._n // self._groups
        return range(self._groups), [(j + 1) * size for j in range(self._groups)]
