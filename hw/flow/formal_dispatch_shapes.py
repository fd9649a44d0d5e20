"""The formal harnesses' dispatcher builds (:mod:`hw.flow.formal_dispatch`): the tiny shapes,
the policy and build options some of them take, the properties proved on each and the covers
reached on each.

Kept apart from the harness so that the harness module stays one class per proof.
"""

from hw.dispatch import Dispatcher
from model.dispatch.config import PRESETS, GpuConfig, with_policy

__all__ = ["AP_CHOICE_COVERS", "DISPATCH_COVERS", "DISPATCH_EXTRA", "DISPATCH_PROPERTIES",
           "SHAPES", "SHAPE_OPTIONS", "SHAPE_POLICY", "TINY", "tiny_dispatcher"]

DISPATCH_PROPERTIES = ("dispatch_stream", "one_dispatch", "status_exact", "bad_release",
                       "head_dispatched")
#: Properties proved on some shapes only (shape -> properties).
DISPATCH_EXTRA = {
    "tiny1x1w2": ("status_exact",),
    "tiny1x2": ("held_decides_nothing", "no_stale_abort"),
    "tiny2x1c1": ("changed_view",),
    "tiny1x2c2": ("changed_view",),
}
#: Embodiment 9/10 and the baselines' AP choice rules (``AP_CHOICES`` order), each choosing
#: each AP in a dispatch of the one-clock decision while the other AP fits too ("contested")
#: -- except ``lowest`` choosing AP 1, which by its rule happens only while AP 0 does not fit.
#: These covers assume real WGs (one wave or more). With one wave slot per AP, an AP that
#: fits then holds no WG and both APs' views are equal (the resource scores tie: AP 0), so
#: ``resource`` choosing AP 1 against AP 0 needs views that differ while both fit: the shape
#: whose view is a clock late (tiny2x1v1: a release's blocks are seen free a clock after its
#: slot). ``unreached.choice_resource_ap1`` proves it unreachable on tiny2x1.
AP_CHOICE_COVERS = {
    "tiny2x1": ("choice_round_robin_ap0", "choice_round_robin_ap1", "choice_lowest_ap0",
                "choice_lowest_ap1", "choice_resource_ap0", "choice_instruction_ap0",
                "choice_instruction_ap1", "choice_combined_ap0", "choice_combined_ap1"),
    "tiny2x1v1": ("choice_resource_ap1",),
}
#: Covers, by shape: each must be reached (a split needs a WG of two waves, tiny1x2's; a
#: stale abort a view a clock late and two WGs on one AP's LDS, tiny1x2v1's).
DISPATCH_COVERS = {
    "tiny2x1": ("dispatched", "held_dispatch", "released", "bad_release", "dispatch_ap_0",
                "dispatch_ap_1", *AP_CHOICE_COVERS["tiny2x1"]),
    "tiny1x2": ("split", "split_dispatched"),
    "tiny1x2v1": ("stale_abort",),
    "tiny2x1v1": AP_CHOICE_COVERS["tiny2x1v1"],
}

#: The proofs' shapes (GPU fields; 2 channels, FIFOs of 2, 2-bit WG ids each): 2 APs of one
#: PEU (every AP choice; one wave per WG, so nothing splits), and 1 AP of 2 PEUs (WGs of two
#: waves, which embodiment 3 splits).
SHAPES = {
    "tiny2x1": dict(aps=2, peus=1, vgpr=2, sgpr=2, lds=2, wave_slots=1, priorities=1),
    "tiny1x2": dict(aps=1, peus=2, vgpr=2, sgpr=2, lds=2, wave_slots=1, priorities=1),
    # 1 AP of 1 PEU with 2 wave slots: a slot count of 0..2, a WG of 2 waves takes both.
    "tiny1x1w2": dict(aps=1, peus=1, vgpr=2, sgpr=2, lds=2, wave_slots=2, priorities=1),
}
#: Shapes built with a policy option: ``v1`` is the exact view a clock late
#: (``circuit_latency = 1``), the only way the one-clock decision can meet a stale view.
SHAPES["tiny2x1v1"] = SHAPES["tiny2x1"]
SHAPES["tiny1x2v1"] = SHAPES["tiny1x2"]
SHAPE_POLICY = {"tiny2x1v1": dict(circuit_latency=1), "tiny1x2v1": dict(circuit_latency=1)}
#: ``c`` shapes compute the view for the changed APs only (``view_refresh = "changed"``) at
#: view latency 1 or 2: ``changed_view`` proves it every clock's exact view of that latency.
SHAPES["tiny2x1c1"] = SHAPES["tiny2x1"]
SHAPES["tiny1x2c2"] = SHAPES["tiny1x2"]
SHAPE_POLICY.update({"tiny2x1c1": dict(circuit_latency=1),
                     "tiny1x2c2": dict(circuit_latency=2)})
SHAPE_OPTIONS = {"tiny2x1c1": dict(view_refresh="changed"),
                 "tiny1x2c2": dict(view_refresh="changed")}
TINY = SHAPES["tiny2x1"]


def tiny_dispatcher(cls=Dispatcher, shape="tiny2x1", *, channels=2, id_bits=2, queue_depth=2):
    """The dispatcher of the proofs (``cls`` a variant, e.g. a deliberately broken one)."""
    gpu = GpuConfig(**SHAPES[shape])
    policy = with_policy(PRESETS["seed"], history="ema", history_cycles=2,
                         windows=PRESETS["seed"].windows[:gpu.priorities],
                         **SHAPE_POLICY.get(shape, {}))
    return cls(gpu, policy, channels, queue_depth=queue_depth, id_bits=id_bits,
               **SHAPE_OPTIONS.get(shape, {}))
