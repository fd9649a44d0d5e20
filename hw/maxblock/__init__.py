"""Largest-contiguous-free-block circuits (seed 002, embodiments 4-6) and the exact allocator.

Three components with the same ports and the same pipeline options, one module each:

* :class:`MaxFreeBlock` (:mod:`hw.maxblock.full`) -- embodiment 4 as the seed writes it:
  exact, about n² gates;
* :class:`GroupedMaxFreeBlock` (:mod:`hw.maxblock.grouped`) -- embodiment 5: the same circuit
  over wholly free groups;
* :class:`SampledMaxFreeBlock` (:mod:`hw.maxblock.sampled`) -- embodiment 6: only the sampled
  run lengths;

(their shared shifted-copy circuit is :mod:`hw.maxblock.shifter`), and the project's exact
allocator primitive, :class:`ExactMaxFreeBlock` (:mod:`hw.maxblock.exact`): the longest free
run with its start address and a first-fit search, in O(n) gates, built from a tree of pieces
(:mod:`hw.maxblock.tree`, :mod:`hw.maxblock.join`, :mod:`hw.maxblock.arith`) pipelined by
:mod:`hw.maxblock.pipeline`; and :class:`FirstFit` (:mod:`hw.maxblock.first_fit`), its first
fit alone from the runs of 1, 2, 4, ... free blocks, which the dispatcher's allocator uses.

Every block with a latency of one clock or more has the same stall interface (see
:data:`PIPELINE_CONTRACT`, in :mod:`hw.maxblock.contract`): ``valid`` travels with the data,
``enable`` is the clock enable of the whole pipeline and ``result_valid`` says which outputs
answer a word. Only that control state has a reset; the data registers have none.

Their golden models are in :mod:`model.maxblock` (:data:`MODEL_TWINS` pairs each circuit with
its function), which also holds the parameter checks, so the model and the hardware reject a
bad argument with the same error. Every public name is importable from here
(``from hw.maxblock import ExactMaxFreeBlock``), as are the tree's pieces that
:mod:`hw.shared_maxblock` builds on.
"""

# The exact tree's pieces are re-exported too (as themselves): hw.shared_maxblock builds on them.
from hw.maxblock.arith import _at_least as _at_least
from hw.maxblock.arith import _equals as _equals
from hw.maxblock.contract import PIPELINE_CONTRACT, named, pipeline_ports, scan_down
from hw.maxblock.contract import _reset_less_outputs as _reset_less_outputs
from hw.maxblock.exact import ExactMaxFreeBlock
from hw.maxblock.first_fit import FirstFit
from hw.maxblock.full import MaxFreeBlock
from hw.maxblock.grouped import GroupedMaxFreeBlock
from hw.maxblock.join import _join_demands as _join_demands
from hw.maxblock.join import _join_piece as _join_piece
from hw.maxblock.pipeline import _build_pipeline as _build_pipeline
from hw.maxblock.sampled import SampledMaxFreeBlock
from hw.maxblock.tree import _LEAF as _LEAF
from hw.maxblock.tree import _tree_pieces as _tree_pieces
from model.maxblock import (
           exact_free_block,
           first_fit,
           grouped_max_free_run,
           max_free_run,
           sampled_max_free_run,
)

__all__ = ["MODEL_TWINS", "PIPELINE_CONTRACT", "ExactMaxFreeBlock", "FirstFit",
           "GroupedMaxFreeBlock", "MaxFreeBlock", "SampledMaxFreeBlock", "named",
           "pipeline_ports", "scan_down"]

#: Each circuit and its golden model in :mod:`model.maxblock`, bit-exact on every input.
MODEL_TWINS = {
    MaxFreeBlock: max_free_run,
    GroupedMaxFreeBlock: grouped_max_free_run,
    SampledMaxFreeBlock: sampled_max_free_run,
    ExactMaxFreeBlock: exact_free_block,
    FirstFit: first_fit,
}
