"""The ``[[policies]]`` tables: one dispatcher's knobs (:class:`PolicyConfig`), the named
presets (:data:`PRESETS`: which of the seed's embodiments are on), the reader, and the checks
of a policy against the GPU (fields it ignores, cross-field limits)."""

from dataclasses import dataclass, fields, replace

from model.config import ConfigError, Fields
from model.dispatch.config.gpu import MAX_WEIGHT, RESOURCES, GpuConfig
from model.maxblock import default_samples

__all__ = ["AP_CHOICES", "CIRCUITS", "COMBINED_SCALES", "FAITHFUL_SELECTIONS", "HISTORIES",
           "MAX_PIPELINE", "PRESETS", "RTL_SELECTIONS", "SCORE_REFRESHES", "SELECTIONS", "UNITS",
           "WAVE_PLACEMENTS",
           "PolicyConfig", "check_policy", "ignored_fields", "read_policy", "with_policy"]

#: ``shared`` is embodiment 7: one exact unit per AP, time-multiplexed over the AP's VGPR, SGPR
#: and LDS status words (:func:`shared_schedule`), so each view is refreshed once per schedule.
CIRCUITS = ("exact", "full", "grouped", "sampled", "shared")
#: The first four are the RTL dispatcher's (its ``selection`` register, in this order); the
#: faithful baselines after them have no RTL (model.dispatch.miaow, gpgpusim, gem5).
SELECTIONS = ("multi", "strict", "blocking_buffer", "rr_first_fit", "miaow", "gpgpusim",
              "gpgpusim_concurrent", "gem5", "miaow_one_clock")
#: The selections the RTL dispatcher builds (hw.dispatch.selector).
RTL_SELECTIONS = SELECTIONS[:4]
#: The faithful baselines: each decides on its own clock (one WG per decision of its source's
#: length, or several a cycle) and places WGs by its own rules.
FAITHFUL_SELECTIONS = SELECTIONS[4:]
AP_CHOICES = ("round_robin", "lowest", "resource", "instruction", "combined")
#: Embodiment 10's history of instruction power: the seed's sliding window of ``Nx`` cycles, or
#: an exponential average with a shift of ``log2(Nx)`` (one register per AP; docs/dispatch.md).
HISTORIES = ("window", "ema")
#: What the combined AP score (embodiments 9 + 10) divides each term by: its largest value
#: among the candidate APs (the seed's reading) or among every AP (a scale that does not
#: depend on which APs the WG fits, so that a pipelined RTL can compute the scores ahead).
COMBINED_SCALES = ("candidates", "all")
#: How the decision pipeline's embodiment 9 and 10 scores are refreshed: every AP's in every
#: cycle, or at most two APs' a cycle (``rotating``: AP ``t mod P`` in cycle ``t`` and the AP
#: just given a WG), so that an RTL computes two APs' scores instead of every AP's
#: (model.dispatch.scores).
SCORE_REFRESHES = ("every", "rotating")
#: How a WG's waves are spread over an AP's PEUs: ``split`` (embodiment 8's split table, rotated
#: by the per-AP pointer when ``rotate``), ``least_loaded`` (each wave in turn to the PEU with
#: the most free wave slots where it fits, ties to the lowest index: what AMD's own GPU model
#: in gem5 does and real dispatchers approximate; docs/dispatch.md).
WAVE_PLACEMENTS = ("split", "least_loaded")
#: The resource units a policy counts and places (``model.dispatch.units``): the seed's
#: contiguous blocks per PEU wave group, MIAOW's one range per WG per CU, GPGPU-Sim's counted
#: per-SM pools, gem5's per-wave register regions with counted LDS.
UNITS = ("blocks", "ap_range", "counted", "wave_regions")
#: The deepest decision pipeline (cycles from choice to dispatch) a policy may ask for.
MAX_PIPELINE = 16


@dataclass(frozen=True)
class PolicyConfig:
    """One dispatcher: how the target WG and the target AP are chosen, and which circuit
    measures the free blocks.

    selection
        ``multi`` (embodiment 1: every head against every AP, highest current priority
        wins), ``strict`` (the seed's prior art: only the highest-priority head is tried;
        when it does not fit, nothing is dispatched), ``blocking_buffer`` (a one-WG buffer
        filled from the channels in turn, retried until it fits, no priorities; formerly
        "MIAOW-like"), ``rr_first_fit`` (channels scanned round-robin, the first head that
        fits anywhere goes; no priorities; formerly "GPGPU-Sim-like"); the real dispatchers
        as their sources define them, each on its own clock and with its own AP choice and
        placement (``ap_choice``, ``rotate`` and ``wave_placement`` not read): ``miaow``
        (:mod:`model.dispatch.miaow`), ``gpgpusim`` and ``gpgpusim_concurrent``
        (:mod:`model.dispatch.gpgpusim`), ``gem5`` (:mod:`model.dispatch.gem5`); and
        ``miaow_one_clock`` (MIAOW's buffer rules at one decision per clock, ours).
    units
        The resource units (:mod:`model.dispatch.units`): ``blocks`` (the seed's: per PEU
        one contiguous VGPR and SGPR block for the WG's wave group, one LDS range per AP,
        read through the view), or a faithful baseline's own, on the current status:
        ``ap_range`` (MIAOW: one VGPR, SGPR and LDS range per WG per AP, wave slots counted
        per AP, under the shared-issue model one issue pool per AP), ``counted``
        (GPGPU-Sim: counted per-AP pools) or ``wave_regions`` (gem5:
        one register region per wave in its PEU's file, LDS counted). Only ``blocks`` with
        a selection of the seed's or a rule kept for comparison.
    ap_choice
        ``round_robin`` (first matching AP from a pointer one past the last chosen),
        ``lowest`` (lowest-index matching AP), ``resource`` (embodiment 9), ``instruction``
        (embodiment 10), ``combined`` (both, weighted by the integers ``resource_weight``
        and ``instruction_weight``, 0..255).
    rotate
        Embodiment 8's per-AP rotating pointer; ``False`` uses the split table unrotated.
    wave_placement
        ``split`` (embodiment 8's split table, rotated when ``rotate``) or ``least_loaded``
        (each wave in turn to the PEU with the most free wave slots where its wave group
        still fits, ties to the lowest index; ``rotate`` is then not read).
    windows
        Embodiment 2's window lengths in cycles, window ``y`` promoting priority ``y``
        (``()`` turns windows off); at most one per priority, non-increasing.
    split_threshold
        Embodiment 3's all-fail count ``g`` that triggers splitting (0 turns it off).
    circuit, group_size, circuit_latency
        The free-block circuit seen by the matcher (embodiments 4, 5, 6 or the exact one),
        and its latency in clocks. ``shared`` (embodiment 7): one exact unit per AP serving
        the AP's status words in turn (:func:`shared_schedule`); a resource's view is the
        length of its status ``circuit_latency`` cycles before the last clock the unit served
        it, so it is between ``circuit_latency + 1`` and ``circuit_latency + C`` cycles old.
    shared_width
        Width of the shared unit in blocks (0: the largest resource's block count).
    history, history_cycles
        Embodiment 10's power history: ``window`` (the seed's sum over the last ``Nx`` =
        ``history_cycles`` cycles) or ``ema`` (``x <- x - (x >> log2 Nx) + p`` every cycle);
        ``Nx`` a power of two.
    lfsr_seed
        Initial state of the tie-break LFSR (non-zero, 16 bits).
    release_limit
        Releases the dispatcher applies per cycle (0, the default: every WG that completed
        is released in the cycle after its last running cycle). With ``k > 0``, WGs due in the
        same cycle beyond the first ``k`` wait, in (due cycle, WG id) order, and are released
        in the following cycles: a dispatcher that takes one completion per clock, as the RTL
        dispatcher does (``release_limit = 1``, docs/dispatch_rtl.md).
    combined_scale
        ``ap_choice = "combined"``: the candidates' largest ``R`` and ``B`` scale the two
        terms (``candidates``, the default), or every AP's (``all``).
    score_latency
        With ``decision_pipeline``: the match keeps embodiment 9's and 10's scores of this
        many cycles before (0: its own cycle's), so that an RTL can compute their products in
        a pipeline of their own.
    score_refresh
        With ``decision_pipeline``: ``every`` (the default), every AP's scores and their
        order are worked out in every cycle; ``rotating``, at most two APs' in a cycle (AP
        ``t mod P`` in cycle ``t``, and the AP of the WG dispatched in cycle ``t - 1 -
        circuit_latency``), with the largest ``R`` and ``B`` of the scores kept, so that an
        AP's score is up to ``P - 1`` cycles older than ``score_latency`` and the APs' scores
        are scaled by the maxima of their own refresh (:mod:`model.dispatch.scores`).
    decision_pipeline
        0 (the default): the seed's decision, every step in one cycle on the state of that
        cycle. ``k >= 2``: the decision as a pipeline of stages (the cut a 50 MHz RTL
        dispatcher needs, docs/dispatch_rtl.md): in cycle ``t`` the WG and the AP are chosen
        from the match of cycle ``t - 1`` (the view, free wave slots, pointers, embodiment 9's
        scores and embodiment 10's history of that cycle, against each channel's first two
        WGs not already chosen); the first fit runs on the status of cycle ``t + k - 1`` and
        the WG is dispatched in cycle ``t + k`` if those blocks and its wave slots are still
        free, otherwise it is a stale abort that also discards every WG chosen after it and
        the choices of the next two cycles. A channel's WGs stay in order; the selection
        state (flags, LFSR, pointers) moves when a WG is chosen. Not with the
        ``blocking_buffer`` selection, a faithful baseline's, or the ``least_loaded``
        placement.
    """

    name: str = "seed"
    selection: str = "multi"
    ap_choice: str = "combined"
    resource_weight: int = 1
    instruction_weight: int = 1
    rotate: bool = True
    wave_placement: str = "split"
    windows: tuple[int, ...] = (1024, 512, 256, 128)
    split_threshold: int = 256
    circuit: str = "exact"
    group_size: int = 4
    circuit_latency: int = 0
    history: str = "window"
    history_cycles: int = 1024
    lfsr_seed: int = 0xACE1
    release_limit: int = 0
    shared_width: int = 0
    decision_pipeline: int = 0
    combined_scale: str = "candidates"
    score_latency: int = 0
    score_refresh: str = "every"
    units: str = "blocks"

    def samples(self, n: int) -> tuple[int, ...]:
        return tuple(default_samples(n))


#: Named starting points; a ``[[policies]]`` table picks one with ``preset`` and may override
#: any field.
PRESETS = {
    "prior-art": PolicyConfig(name="prior-art", selection="strict", ap_choice="round_robin",
                              rotate=False, windows=(), split_threshold=0),
    "blocking-buffer": PolicyConfig(name="blocking-buffer", selection="blocking_buffer",
                                    ap_choice="lowest", rotate=False, windows=(),
                                    split_threshold=0),
    "rr-first-fit": PolicyConfig(name="rr-first-fit", selection="rr_first_fit",
                                 ap_choice="round_robin", rotate=False, windows=(),
                                 split_threshold=0),
    "miaow": PolicyConfig(name="miaow", selection="miaow", ap_choice="lowest", rotate=False,
                          windows=(), split_threshold=0, units="ap_range"),
    "gpgpusim": PolicyConfig(name="gpgpusim", selection="gpgpusim", ap_choice="round_robin",
                             rotate=False, windows=(), split_threshold=0, units="counted"),
    "gem5": PolicyConfig(name="gem5", selection="gem5", ap_choice="lowest", rotate=False,
                         windows=(), split_threshold=0, units="wave_regions"),
    "miaow-one-clock": PolicyConfig(name="miaow-one-clock", selection="miaow_one_clock",
                                    ap_choice="lowest", rotate=False, windows=(),
                                    split_threshold=0, units="ap_range"),
    "emb1": PolicyConfig(name="emb1", selection="multi", ap_choice="round_robin", rotate=False,
                         windows=(), split_threshold=0),
    "seed": PolicyConfig(),
}


def read_policy(fields_: Fields, gpu: GpuConfig) -> PolicyConfig:
    """One ``[[policies]]`` table: a preset (default ``seed``) and any field after it,
    checked against ``gpu``; a field the policy ignores is an error."""
    preset_name = fields_.str("preset", "seed", choices=tuple(PRESETS))
    base = PRESETS[preset_name]
    policy = PolicyConfig(
        name=fields_.str("name", preset_name),
        selection=fields_.str("selection", base.selection, choices=SELECTIONS),
        ap_choice=fields_.str("ap_choice", base.ap_choice, choices=AP_CHOICES),
        resource_weight=fields_.int("resource_weight", base.resource_weight, minimum=0,
                                    maximum=MAX_WEIGHT),
        instruction_weight=fields_.int("instruction_weight", base.instruction_weight,
                                       minimum=0, maximum=MAX_WEIGHT),
        rotate=fields_.bool("rotate", base.rotate),
        wave_placement=fields_.str("wave_placement", base.wave_placement,
                                   choices=WAVE_PLACEMENTS),
        windows=fields_.int_list("windows", base.windows, minimum=1),
        split_threshold=fields_.int("split_threshold", base.split_threshold, minimum=0),
        circuit=fields_.str("circuit", base.circuit, choices=CIRCUITS),
        group_size=fields_.int("group_size", base.group_size, minimum=1),
        circuit_latency=fields_.int("circuit_latency", base.circuit_latency, minimum=0,
                                    maximum=64),
        history=fields_.str("history", base.history, choices=HISTORIES),
        history_cycles=fields_.int("history_cycles", base.history_cycles, minimum=1,
                                   maximum=1 << 20),
        lfsr_seed=fields_.int("lfsr_seed", base.lfsr_seed, minimum=1, maximum=0xFFFF),
        release_limit=fields_.int("release_limit", base.release_limit, minimum=0,
                                  maximum=1 << 16),
        shared_width=fields_.int("shared_width", base.shared_width, minimum=0,
                                 maximum=1 << 16),
        decision_pipeline=fields_.int("decision_pipeline", base.decision_pipeline,
                                      minimum=0, maximum=MAX_PIPELINE),
        combined_scale=fields_.str("combined_scale", base.combined_scale,
                                   choices=COMBINED_SCALES),
        score_latency=fields_.int("score_latency", base.score_latency, minimum=0,
                                  maximum=MAX_PIPELINE),
        score_refresh=fields_.str("score_refresh", base.score_refresh,
                                  choices=SCORE_REFRESHES),
        units=fields_.str("units", base.units, choices=UNITS),
    )
    ignored = ignored_fields(policy)
    for key in fields_.keys():
        if key in ignored and not (key in _OFF and getattr(policy, key) == _OFF[key]):
            raise fields_.error(key, f"is ignored by this policy: {ignored[key]}; remove it")
    check_policy(policy, gpu, fields_)
    fields_.done()
    return policy


#: Fields whose value turns their mechanism off: writing it is allowed on any policy.
_OFF = {"windows": (), "split_threshold": 0, "rotate": False}


def ignored_fields(policy: PolicyConfig) -> dict[str, str]:
    """The fields ``policy`` does not read, each with the reason (for error messages)."""
    ignored = {}
    if policy.selection != "multi":
        why = (f'selection = "{policy.selection}" (only "multi", embodiment 1, has '
               f"{{}})")
        ignored["windows"] = why.format("priority windows")
        ignored["split_threshold"] = why.format("embodiment 3's split")
        ignored["lfsr_seed"] = why.format("the a42 tie-break")
    if policy.ap_choice != "combined":
        for key in ("resource_weight", "instruction_weight", "combined_scale"):
            ignored[key] = f'ap_choice = "{policy.ap_choice}" (only "combined" weighs 9 and 10)'
    if policy.ap_choice in ("round_robin", "lowest"):
        for key in ("score_latency", "score_refresh"):
            ignored[key] = (f'ap_choice = "{policy.ap_choice}" (it reads no embodiment 9 or '
                            f"10 score)")
    if policy.ap_choice not in ("instruction", "combined"):
        for key in ("history", "history_cycles"):
            ignored[key] = (f'ap_choice = "{policy.ap_choice}" (only "instruction" and '
                            f'"combined" read the power history)')
    if policy.circuit != "grouped":
        ignored["group_size"] = f'circuit = "{policy.circuit}" (only "grouped" has groups)'
    if policy.circuit != "shared":
        ignored["shared_width"] = (f'circuit = "{policy.circuit}" (only "shared" has a shared '
                                   f"unit)")
    if policy.units != "blocks":
        why = (f'units = "{policy.units}" (a baseline\'s own units are read on the current '
               f"status, not through a free-block circuit)")
        for key in ("circuit", "circuit_latency"):
            ignored[key] = why
    if policy.wave_placement != "split":
        ignored["rotate"] = (f'wave_placement = "{policy.wave_placement}" (only "split" has '
                             f"embodiment 8's pointer)")
    return ignored


def check_policy(policy: PolicyConfig, gpu: GpuConfig, fields_: Fields | None = None) -> None:
    """Cross-field checks of a policy against the GPU; errors name the field. A field the
    policy ignores must keep its default (or its "off" value)."""
    def error(key, message):
        return fields_.error(key, message) if fields_ else ConfigError(f"{key} {message}")

    if fields_ is None:
        default = PolicyConfig()
        for key, why in ignored_fields(policy).items():
            value = getattr(policy, key)
            # An ignored flag keeps its default or its "off" value (rotate: either).
            if value not in (_OFF.get(key, getattr(default, key)),
                             getattr(default, key) if key == "rotate" else _OFF.get(key)):
                raise error(key, f"is ignored by this policy: {why}; not {value!r}")
    if len(policy.windows) > gpu.priorities:
        raise error("windows", f"has {len(policy.windows)} windows but the GPU has "
                               f"{gpu.priorities} priorities (at most one window each)")
    if any(b > a for a, b in zip(policy.windows, policy.windows[1:], strict=False)):
        raise error("windows", f"must be non-increasing (window 1 the longest), not "
                               f"{list(policy.windows)!r}")
    if policy.history_cycles & (policy.history_cycles - 1):
        raise error("history_cycles", f"must be a power of two, not {policy.history_cycles}")
    if policy.circuit == "grouped":
        for resource, (_, contiguous) in RESOURCES.items():
            size = gpu.capacity(resource)
            if contiguous and size % policy.group_size:
                raise error("group_size", f"{policy.group_size} must divide every contiguous "
                                          f"resource size ({resource} has {size} blocks)")
    if policy.decision_pipeline == 1:
        raise error("decision_pipeline", "must be 0 (one-cycle decision) or 2 .. "
                                         f"{MAX_PIPELINE} (cycles from choice to dispatch), not 1")
    if policy.score_latency and not policy.decision_pipeline:
        raise error("score_latency", "is read only by the decision pipeline "
                                     "(decision_pipeline >= 2); use 0")
    if policy.score_refresh != "every" and not policy.decision_pipeline:
        raise error("score_refresh", "is read only by the decision pipeline "
                                     '(decision_pipeline >= 2); use "every"')
    if (policy.score_refresh != "every" and policy.ap_choice == "combined"
            and policy.combined_scale != "all"):
        raise error("score_refresh", f'"{policy.score_refresh}" keeps one AP\'s score a cycle, '
                                     'which the candidates\' maxima cannot scale: use '
                                     'combined_scale = "all"')
    if policy.decision_pipeline and policy.selection == "blocking_buffer":
        raise error("decision_pipeline", 'is not defined for selection = "blocking_buffer" '
                                         "(its one-WG buffer); use 0")
    if policy.decision_pipeline and policy.selection in FAITHFUL_SELECTIONS:
        raise error("decision_pipeline", f'is not defined for selection = '
                                         f'"{policy.selection}" (it decides on its own '
                                         f"clock); use 0")
    if policy.decision_pipeline and policy.wave_placement == "least_loaded":
        raise error("decision_pipeline", 'is not defined for wave_placement = '
                                         '"least_loaded"; use 0')
    if policy.units != "blocks" and policy.selection not in FAITHFUL_SELECTIONS:
        raise error("units", f'"{policy.units}" is a faithful baseline\'s (selections '
                             f"{', '.join(FAITHFUL_SELECTIONS)}); selection = "
                             f'"{policy.selection}" takes "blocks"')
    largest = max(gpu.vgpr, gpu.sgpr, gpu.lds)
    if policy.circuit == "shared" and 0 < policy.shared_width < largest:
        raise error("shared_width", f"{policy.shared_width} is narrower than the largest "
                                    f"contiguous resource ({largest} blocks)")


def with_policy(policy: PolicyConfig, **changes) -> PolicyConfig:
    """``dataclasses.replace`` for policies, for tests and the CLI."""
    known = {f.name for f in fields(PolicyConfig)}
    unknown = set(changes) - known
    if unknown:
        raise ConfigError(f"unknown policy field {sorted(unknown)[0]!r}")
    return replace(policy, **changes)
