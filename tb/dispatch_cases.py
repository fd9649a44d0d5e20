"""Stimulus of the dispatcher's co-simulation: a few hardware shapes and seeded random runs.

A *shape* is what a build fixes (the GPU, the free-block circuit and its latency, the channel
count); a random run on a shape draws every policy knob the configuration port sets at run
time (selection rule, AP choice, rotation, windows, split threshold, LFSR seed, history
length, combined weights, embodiment 9's weights, the channels' instruction mixes) and a
workload that loads the GPU below and above its capacity, with WGs too large for any AP,
independent WGs and bursts. ``random_run(shape, seed)`` is deterministic: a failing seed is
replayed by running it again.
"""

import math
import random
from dataclasses import dataclass, replace

from model.dispatch.config import (
    AP_CHOICES,
    PRESETS,
    ChannelConfig,
    GpuConfig,
    PolicyConfig,
    WorkGroup,
    generate_workload,
    ignored_fields,
    with_policy,
)
from model.dispatch.config.policy import RTL_SELECTIONS
from tb.dispatch_bench import ModelRun, back_pressure, model_run

__all__ = ["BARRIER_SHAPES", "CHANGED_SHAPES", "DIRECTED", "DIRECTED_SHAPE", "RANDOM_CYCLES",
           "RANDOM_JOBS", "ROTATING_SHAPES", "SELECTION_PLAN", "SHAPES", "Shape", "barrier_run",
           "barrier_workload", "planned", "random_jobs", "random_run", "random_shape"]


@dataclass(frozen=True)
class Shape:
    """One build of the dispatcher: the GPU, the structural policy fields, the channels."""

    name: str
    gpu: GpuConfig
    policy: PolicyConfig
    channels: int
    #: In-order barriers built (:data:`BARRIER_SHAPES`).
    barriers: bool = False
    #: The view computed for the changed APs only (:data:`CHANGED_SHAPES`).
    view_refresh: str = "every"

    def options(self) -> dict:
        """The keyword arguments of :class:`hw.dispatch.Dispatcher` beyond the three configs:
        embodiment 9's weight registers wide enough for the random weights (0..7) and the
        GPU's own; ``barriers`` when built; ``view_refresh`` when not every clock's."""
        widest = max(7, *self.gpu.resource_weight_values())
        return {"weight_bits": widest.bit_length(),
                **({"barriers": True} if self.barriers else {}),
                **({"view_refresh": self.view_refresh} if self.view_refresh != "every"
                   else {})}

    def knobs(self) -> dict:
        """The structural policy fields a run on this shape must keep."""
        return {"circuit": self.policy.circuit, "group_size": self.policy.group_size,
                "circuit_latency": self.policy.circuit_latency,
                "shared_width": self.policy.shared_width,
                "combined_scale": self.policy.combined_scale,
                "decision_pipeline": self.policy.decision_pipeline,
                "score_latency": self.policy.score_latency,
                "score_refresh": self.policy.score_refresh}


def _shape(name, circuit="exact", latency=0, channels=3, history_cycles=64,
           combined_scale="candidates", pipeline=0, score_latency=0, score_refresh="every",
           **gpu) -> Shape:
    fields = {"history": "ema", "history_cycles": history_cycles, "circuit": circuit,
              "circuit_latency": latency, "combined_scale": combined_scale,
              "decision_pipeline": pipeline, "score_latency": score_latency,
              "score_refresh": score_refresh,
              "windows": PRESETS["seed"].windows[:gpu.get("priorities", 4)]}
    if circuit == "grouped":
        fields["group_size"] = 4
    return Shape(name, GpuConfig(**gpu), with_policy(PRESETS["seed"], **fields), channels)


def random_shape(index: int, seed: int = 1) -> Shape:
    """Shape ``index`` of random-shape set ``seed`` (replayable): a GPU of 1-6 APs x 1-4
    PEUs with block counts the shipped shapes do not use (1, 2, 3, 5, 7, 12, 17, 24; up to
    40 on small GPUs), 1-4 wave slots, 1-8 priorities, 1-4 channels; the circuits in turn
    (``index`` mod 5) at latency 0-4, with a group size that divides every size or a shared
    width at least the largest; a one-clock or pipelined decision (k 2-4, score latency
    0-4, every AP's scores or rotating ones, drawn apart so that the other draws are those
    of the set before rotating scores). Every shape it draws is one the model accepts."""
    rng = random.Random(f"random-shape/{seed}/{index}")
    circuit = ("exact", "full", "grouped", "sampled", "shared")[index % 5]
    aps, peus = rng.randint(1, 6), rng.randint(1, 4)
    sizes = [n for n in (1, 2, 3, 5, 7, 12, 17, 24, 33, 40) if n <= (17 if aps * peus > 8 else 40)]
    gpu = GpuConfig(aps=aps, peus=peus, vgpr=rng.choice(sizes), sgpr=rng.choice(sizes),
                    lds=rng.choice(sizes), wave_slots=rng.randint(1, 4),
                    priorities=rng.randint(1, 8))
    pipeline = rng.choice([0, 0, 2, 3, 4])
    fields = {"history": "ema", "history_cycles": 64, "circuit": circuit,
              "circuit_latency": rng.randint(0, 4), "decision_pipeline": pipeline,
              "score_latency": rng.randint(0, 4) if pipeline else 0,
              "combined_scale": "all" if pipeline else rng.choice(["candidates", "all"]),
              "windows": PRESETS["seed"].windows[:gpu.priorities]}
    if circuit == "grouped":
        common = math.gcd(gpu.vgpr, gpu.sgpr, gpu.lds)
        fields["group_size"] = rng.choice([d for d in range(1, common + 1) if common % d == 0])
    if circuit == "shared":
        largest = max(gpu.vgpr, gpu.sgpr, gpu.lds)
        fields["shared_width"] = rng.choice([0, largest, largest + rng.randint(1, 20)])
    if pipeline and random.Random(f"random-shape/{seed}/{index}/scores").random() < 0.5:
        fields["score_refresh"] = "rotating"
    return Shape(f"random{seed}_{index}_{circuit}_{aps}x{peus}", gpu,
                 with_policy(PRESETS["seed"], **fields), rng.randint(1, 4))


#: The shapes of the random set: every circuit, latencies 0 to 4, 1 to 4 PEUs, 2 to 4
#: channels, 1 to 4 priorities, both scales of the combined score; small enough to build and
#: simulate in seconds.
SHAPES = {
    shape.name: shape for shape in (
        _shape("exact4x2", aps=4, peus=2, vgpr=16, sgpr=8, lds=8, wave_slots=4,
               priorities=4, channels=3),
        # Built with the combined score scaled by every AP (combined_scale = "all").
        _shape("grouped3x3", "grouped", 2, aps=3, peus=3, vgpr=16, sgpr=8, lds=12,
               wave_slots=2, priorities=3, channels=2, combined_scale="all"),
        _shape("sampled2x4", "sampled", 1, aps=2, peus=4, vgpr=20, sgpr=10, lds=10,
               wave_slots=3, priorities=2, channels=4),
        _shape("full3x1", "full", 4, aps=3, peus=1, vgpr=12, sgpr=6, lds=6, wave_slots=4,
               priorities=1, channels=2),
        _shape("shared3x2", "shared", 1, aps=3, peus=2, vgpr=12, sgpr=6, lds=6,
               wave_slots=3, priorities=3, channels=3),
        # The pipelined decision: k = 4 with scores 4 cycles old (the 50 MHz build), and
        # k = 3 on a stale view (stale aborts, flushes) with the scores in one clock.
        _shape("pipelined4x2", aps=4, peus=2, vgpr=16, sgpr=8, lds=8, wave_slots=4,
               priorities=4, channels=3, combined_scale="all", pipeline=4, score_latency=4),
        _shape("pipelined3x2", "grouped", 3, aps=3, peus=2, vgpr=16, sgpr=8, lds=8,
               wave_slots=3, priorities=2, channels=3, combined_scale="all", pipeline=3),
        # The build of make fpga-report's 50 MHz row: the small configuration, exact view of
        # latency 2, k = 4, s = 4 (a test keeps the two the same build).
        _shape("small_l2", latency=2, aps=4, peus=2, vgpr=32, sgpr=16, lds=16, wave_slots=8,
               priorities=4, channels=2, combined_scale="all", pipeline=4, score_latency=4),
    )
}


#: Builds with in-order barriers (``barriers = True``), one per decision the RTL builds: the
#: one-clock decision, the shortest pipeline (k = 2) and k = 3 on a stale view (stale aborts
#: and flushes). The Amaranth tier runs :func:`barrier_run` on each.
BARRIER_SHAPES = {
    shape.name: shape for shape in (
        replace(SHAPES["exact4x2"], name="barriers4x2", barriers=True),
        replace(_shape("barriers4x2k2", aps=4, peus=2, vgpr=16, sgpr=8, lds=8, wave_slots=4,
                       priorities=4, channels=3, combined_scale="all", pipeline=2),
                barriers=True),
        replace(SHAPES["pipelined3x2"], name="barriers3x2k3", barriers=True),
    )
}


def _changed(name: str, base: str, latency: int) -> Shape:
    shape = SHAPES[base]
    return replace(shape, name=name, view_refresh="changed",
                   policy=with_policy(shape.policy, circuit_latency=latency))


def _rotating(name: str, shape: Shape) -> Shape:
    return replace(shape, name=name,
                   policy=with_policy(shape.policy, score_refresh="rotating"))


#: Builds whose view is computed for the changed APs only (``view_refresh = "changed"``):
#: the same view as the build of each base shape at that latency, so the model's. Every
#: circuit, latencies 1 to 4 (the length register alone; the circuit's own pipeline; registers
#: in front of it), the one-clock and the pipelined decision, one AP and several.
CHANGED_SHAPES = {
    shape.name: shape for shape in (
        _changed("changed4x2", "exact4x2", 1),
        _changed("changed4x2k4", "pipelined4x2", 2),
        _changed("changed3x3", "grouped3x3", 2),
        _changed("changed2x4", "sampled2x4", 1),
        _changed("changed3x1", "full3x1", 4),
        _changed("changed3x2k3", "pipelined3x2", 3),
    )
}


#: Builds whose scores are refreshed for two APs a clock (``score_refresh = "rotating"``,
#: :class:`hw.dispatch.scores.RotatingScores`): the 50 MHz build's k = 4 with scores 4 cycles
#: old, k = 3 with the scores in one clock on a stale view, and the first with embodiment 5's
#: view of latency 4 computed for the changed APs as well: the structure of the default
#: configuration's flat build, grouped8_changed_l4_rotating (groups of 4 at this size).
ROTATING_SHAPES = {
    shape.name: shape for shape in (
        _rotating("rotating4x2k4", SHAPES["pipelined4x2"]),
        _rotating("rotating3x2k3", SHAPES["pipelined3x2"]),
        _rotating("rotating4x2changed", replace(
            CHANGED_SHAPES["changed4x2k4"],
            policy=with_policy(CHANGED_SHAPES["changed4x2k4"].policy, circuit="grouped",
                               group_size=4, circuit_latency=4))),
    )
}


#: The selection rule of random job ``seed % 15`` (:func:`random_run`): each baseline three
#: times in fifteen, the seed's rule six (nine on a pipelined shape, which has no buffer), so
#: that each rule, and windows, a41, a42 and splits within ``multi``, is exercised by at
#: least three jobs of a shape (``tb/dispatch_coverage.py``; the AP choice rule is
#: ``AP_CHOICES[seed % 5]``, so each of the five is drawn three times).
SELECTION_PLAN = ("multi", "strict", "multi", "blocking_buffer", "multi", "rr_first_fit",
                  "multi", "strict", "blocking_buffer", "multi", "rr_first_fit", "multi",
                  "strict", "blocking_buffer", "rr_first_fit")


def planned(shape: Shape, seed: int) -> tuple[str, str]:
    """``(selection, ap_choice)`` of random job ``seed`` on ``shape`` (see
    :data:`SELECTION_PLAN`)."""
    selection = SELECTION_PLAN[seed % len(SELECTION_PLAN)]
    if selection == "blocking_buffer" and shape.policy.decision_pipeline:
        selection = "multi"
    return selection, AP_CHOICES[seed % len(AP_CHOICES)]


def random_policy(shape: Shape, rng: random.Random, plan: tuple[str, str] | None = None
                  ) -> tuple[PolicyConfig, GpuConfig]:
    """Every run-time knob drawn at random; the fields a selection rule does not read keep
    their defaults (or are off), as the model requires. ``plan``: the selection rule and AP
    choice to use (:func:`planned`), and under ``multi`` windows and a split threshold
    always on."""
    gpu = shape.gpu
    # The pipelined decision is not defined for the MIAOW-like buffer.
    selection = rng.choice([s for s in RTL_SELECTIONS
                            if s != "blocking_buffer" or not shape.policy.decision_pipeline])
    ap_choice = rng.choice(AP_CHOICES)
    if plan is not None:
        selection, ap_choice = plan
    changes = {"name": f"{selection}/{ap_choice}", "selection": selection,
               "ap_choice": ap_choice, "rotate": rng.random() < 0.6, "history": "ema",
               **shape.knobs()}
    if selection == "multi":
        # A planned job has a window for every priority, short ones, so that the windows
        # change the winner within its cycles.
        count = gpu.priorities if plan else rng.randint(0, gpu.priorities)
        changes["windows"] = tuple(sorted((rng.randint(1, 12 if plan else 60)
                                           for _ in range(count)), reverse=True))
        changes["split_threshold"] = rng.choice([2, 4, 8, 16] if plan else [0, 1, 4, 16, 40])
        changes["lfsr_seed"] = rng.randint(1, 0xFFFF)
    else:
        changes["windows"] = ()
        changes["split_threshold"] = 0
    if ap_choice in ("instruction", "combined"):
        changes["history_cycles"] = 1 << rng.randint(0, shape.policy.history_cycles
                                                     .bit_length() - 1)
    if ap_choice == "combined":
        changes["resource_weight"] = rng.choice([0, 1, 3, 255])
        changes["instruction_weight"] = rng.choice([0, 1, 7, 255])
    policy = with_policy(PRESETS["seed"], **changes)
    for key in ignored_fields(policy):
        if key not in ("windows", "split_threshold"):
            policy = with_policy(policy, **{key: getattr(PolicyConfig(), key)})
    weights = None
    if rng.random() < 0.4:
        weights = tuple(rng.randint(0, 7) for _ in range(4))
    return policy, GpuConfig(**{**vars(gpu), "resource_weights": weights})


def random_channels(shape: Shape, rng: random.Random, policy: PolicyConfig | None = None,
                    ties: bool = False) -> list[ChannelConfig]:
    """Random channels; with ``policy`` (a planned job, :func:`random_run`) at least two
    channels (where the shape has two), busier (shorter gaps and durations), and under
    ``multi`` every channel, more independent WGs, and heads of one priority in two channels
    (``ties``, or always with three channels or more) besides one of another (else), for
    a41/a42 and the windows."""
    gpu = shape.gpu
    most = gpu.peus * gpu.wave_slots
    channels = []
    multi = policy is not None and policy.selection == "multi"
    count = rng.randint(1 if policy is None else min(2, shape.channels), shape.channels)
    if multi:
        count = shape.channels
    priorities = [rng.randrange(gpu.priorities) for _ in range(count)] if policy else []
    if multi and count >= 2:
        others = [q for q in range(gpu.priorities) if q != priorities[0]] or priorities[:1]
        if ties or count > 2:
            priorities[1] = priorities[0]
        if not ties or count > 2:
            priorities[1 if count == 2 else 2] = rng.choice(others)
    for c in range(count):
        low = rng.randint(1, most)
        high = rng.randint(low, most)
        busiest = -(-high // gpu.peus)
        mix = [rng.random() for _ in range(7)]
        total = sum(mix) * rng.uniform(1.0, 3.0)
        busy = policy is not None
        channels.append(ChannelConfig(
            priority=priorities[c] if policy else rng.randrange(gpu.priorities),
            arrival=rng.choice(["back_to_back", rng.uniform(0.2 if busy else 0.02, 0.5)]),
            count=rng.randint(20 if busy else 5, 80), start=rng.randint(0, 10 if busy else 30),
            waves=(low, high),
            # Now and then a WG that no AP can hold (refused at admission).
            vgpr=(0, max(1, gpu.vgpr // busiest) + rng.choice([0, 0, 0, 2])),
            sgpr=(0, max(1, gpu.sgpr // busiest)),
            lds=(0, gpu.lds + rng.choice([0, 0, 0, 3])),
            duration=(1, rng.randint(2, 40 if busy else 120)),
            duration_distribution=rng.choice(["uniform", "exponential"]),
            independent=rng.uniform(0.4, 1.0) if multi else rng.random(),
            mix=tuple(m / total for m in mix)))
    return channels


def random_run(shape: Shape, seed: int, cycles: int = 600, pressure: float = 0.0
               ) -> ModelRun:
    """A random policy and workload on ``shape`` run by the model (seeded); with
    ``pressure``, ``dispatch.ready`` is low in bursts starting in that fraction of the
    cycles (:func:`tb.dispatch_bench.back_pressure`), and the model holds as the RTL does."""
    rng = random.Random(f"{shape.name}/{seed}")
    policy, gpu = random_policy(shape, rng, planned(shape, seed))
    # Under multi, two channels of one priority in every third multi job (a41/a42), one
    # channel of another in the others (the windows); with three channels or more, both.
    multi_jobs = [s for s in range(seed % len(SELECTION_PLAN) + 1)
                  if planned(shape, s)[0] == "multi"]
    channels = random_channels(shape, rng, policy, ties=len(multi_jobs) % 3 == 1)
    workload = generate_workload(channels, cycles, seed)
    label = f"{shape.name} seed {seed} {policy.name}"
    not_ready = frozenset()
    if pressure:
        not_ready = back_pressure(cycles, pressure, f"{shape.name}/{seed}")
        label += f" back-pressure {pressure}"
    return model_run(label, gpu, policy, workload, channels, cycles, not_ready=not_ready)


def reset_build(shape: Shape, seed: int, cycles: int = 300):
    """``(build, run)``: a :class:`hw.flow.dispatch_build.DispatchShape` of ``shape`` whose
    configuration registers reset to a random policy, GPU weights and channel mixes (drawn
    as :func:`random_run`'s ``seed``; a history length the policy reads is the shape's), and
    the model's run of that very policy, to be driven with ``START`` alone
    (``CosimDriver(configure=False)``): every reset value is then compared with the model.
    The same build runs :func:`random_run`'s runs on ``shape`` (they write every register);
    a seed whose policy would not let it (another scale of the combined score, or an AP
    choice that reads no score on a shape with ``score_latency`` or rotating scores) is
    passed over for the
    next."""
    from hw.flow.dispatch_build import DispatchShape

    while True:
        # A policy whose build could not run the shape's other runs (a combined score
        # scaled by the candidates on a build for every AP's scale) takes the next seed.
        rng = random.Random(f"{shape.name}/{seed}")
        policy, gpu = random_policy(shape, rng)
        # Nor one whose AP choice reads no score: its score_latency reads as ignored (0),
        # and a build of 0 refuses the shape's runs with scores of score_latency > 0.
        if (policy.combined_scale == shape.policy.combined_scale
                or shape.policy.decision_pipeline) \
                and policy.score_latency == shape.policy.score_latency \
                and policy.score_refresh == shape.policy.score_refresh:
            break
        seed += 1
    if "history_cycles" not in ignored_fields(policy):
        policy = with_policy(policy, history_cycles=shape.policy.history_cycles)
    channels = random_channels(shape, rng)
    workload = generate_workload(channels, cycles, seed)
    run = model_run(f"{shape.name} reset values, seed {seed} {policy.name}", gpu, policy,
                    workload, channels, cycles)
    # The channels the run leaves out carry no WG; their power 0 is what config_writes
    # writes for them.
    idle = ChannelConfig(mix=(0,) * len(ChannelConfig().mix))
    padded = tuple(channels) + (idle,) * (shape.channels - len(channels))
    return DispatchShape(gpu, policy, padded, **shape.options()), run


# -- directed runs, each aimed at one mechanism (on the exact4x2 shape) ---------------------------

def _directed(name: str, policy_changes: dict, channels: list[ChannelConfig], cycles: int,
              shape: str = "exact4x2", seed: int = 7) -> ModelRun:
    shape = SHAPES[shape]
    policy = with_policy(PRESETS["emb1"], name=name, **{**shape.knobs(), **policy_changes})
    workload = generate_workload(channels, cycles, seed)
    return model_run(f"directed {name}", shape.gpu, policy, workload, channels, cycles)


def _windows(cycles: int) -> ModelRun:
    # Two channels whose heads always fit, priorities 0 and 3: the windows alone decide, and
    # a window boundary one cycle off changes the channel of that cycle.
    small = {"arrival": "back_to_back", "count": 400, "waves": (1, 1), "vgpr": (1, 1),
             "sgpr": (0, 0), "duration": (2, 6)}
    return _directed("windows", {"windows": (5, 4, 3, 2)},
                     [ChannelConfig(priority=0, **small), ChannelConfig(priority=3, **small)],
                     cycles)


def _ties(cycles: int) -> ModelRun:
    # Three channels of one priority whose heads always fit: a42's flags and the LFSR pick.
    small = {"arrival": "back_to_back", "count": 400, "waves": (1, 2), "vgpr": (1, 2),
             "sgpr": (0, 1), "duration": (2, 9), "priority": 1}
    return _directed("ties", {"lfsr_seed": 0x1234},
                     [ChannelConfig(**small), ChannelConfig(**small), ChannelConfig(**small)],
                     cycles)


def _full_peus(cycles: int) -> ModelRun:
    # WGs that take a whole PEU's VGPR file (4 waves x 8 blocks on 2 PEUs of 16): each fits
    # only once everything the last one held is back.
    big = {"arrival": "back_to_back", "count": 200, "waves": (4, 4), "vgpr": (8, 8),
           "sgpr": (2, 4), "lds": (0, 8), "duration": (3, 30)}
    return _directed("full PEUs", {"ap_choice": "lowest"}, [ChannelConfig(**big)], cycles)


def _combined_all(cycles: int) -> ModelRun:
    # Embodiments 9 + 10 with both weights on ``grouped3x3``, built with the combined score
    # scaled by every AP: a channel of long high-power WGs fills APs that then drop out of the
    # candidates while keeping the largest history, so the two scales choose different APs
    # (in 75 of this workload's 91 dispatches; a test keeps it that way).
    heavy = {"arrival": 0.08, "count": 200, "waves": (3, 6), "vgpr": (1, 2), "sgpr": (0, 2),
             "duration": (20, 90), "mix": (0, 0, 0, 0, 0.9, 0, 0)}
    light = {"arrival": 0.25, "count": 400, "waves": (1, 3), "vgpr": (1, 3), "sgpr": (0, 1),
             "duration": (2, 20), "mix": (0.3, 0.1, 0, 0, 0, 0.1, 0)}
    return _directed("combined all", {"ap_choice": "combined", "history": "ema",
                                      "history_cycles": 16, "resource_weight": 1,
                                      "instruction_weight": 1},
                     [ChannelConfig(priority=0, **heavy), ChannelConfig(priority=1, **light)],
                     cycles, shape="grouped3x3", seed=4)


def _pipelined_scores(cycles: int) -> ModelRun:
    # Embodiment 9's resource score on the pipelined build (scores 4 cycles old): short WGs
    # of many sizes keep the APs' free resources changing every few cycles, so scores one
    # cycle older choose other APs (in 100 of the model's 133 dispatches of 300 cycles).
    mixed = {"arrival": 0.25, "count": 400, "waves": (1, 3), "vgpr": (1, 6), "sgpr": (0, 2),
             "lds": (0, 3), "duration": (1, 8)}
    return _directed("pipelined scores", {"ap_choice": "resource",
                                          "combined_scale": "candidates"},
                     [ChannelConfig(priority=0, **mixed), ChannelConfig(priority=1, **mixed)],
                     cycles, shape="pipelined4x2", seed=4)


def _refused(cycles: int) -> ModelRun:
    # Many WGs that no AP can hold (one wave of 9..24 VGPR blocks on PEUs of 16): the model
    # refuses about half of them, all sent before START; a dispatcher that admits them fills
    # its channel FIFO, and the bench must fail on its bound rather than wait for ever.
    large = {"arrival": "back_to_back", "count": 40, "waves": (1, 1), "vgpr": (9, 24),
             "sgpr": (0, 1), "duration": (2, 9)}
    return _directed("refused", {}, [ChannelConfig(priority=0, **large)], cycles)


def _split_held(cycles: int) -> ModelRun:
    # Embodiment 3 under back-pressure: WGs of many waves that often fit no AP (the all-fail
    # counter runs) with a split threshold of 2, and dispatch.ready low in bursts, many of
    # them right after a dispatch while heads wait: the counter must hold while the output is
    # held (docs/dispatch_rtl.md), so a counter that goes on splits cycles early.
    big = {"arrival": "back_to_back", "count": 200, "waves": (3, 8), "vgpr": (2, 4),
           "sgpr": (0, 2), "lds": (0, 4), "duration": (4, 40), "independent": 1.0}
    shape = SHAPES["exact4x2"]
    channels = [ChannelConfig(priority=0, **big), ChannelConfig(priority=1, **big)]
    policy = with_policy(PRESETS["emb1"], name="split held", **{
        **shape.knobs(), "selection": "multi", "split_threshold": 2})
    workload = generate_workload(channels, cycles, 5)
    return model_run("directed split held", shape.gpu, policy, workload, channels, cycles,
                     not_ready=back_pressure(cycles, 0.25, "split held"))


def barrier_workload(channels: int, cycles: int, seed: int, independent: float = 0.0,
                     priorities: int = 4) -> list[WorkGroup]:
    """Kernel launches on ``channels`` in-order streams (channel ``c`` of priority ``c``
    modulo ``priorities``):
    each launch 1 to 6 WGs of one shape arriving together, a few cycles after the last; the
    first WG of every launch after a stream's first is a barrier (as a kernel trace's are,
    :func:`model.dispatch.kernels.trace_workload`). Run times vary per WG, so a barrier waits
    for the slowest WG of the launches before it. With ``independent``, that fraction of
    launches (about) is independent and 2 to 4 waves wider."""
    rng = random.Random(f"barriers/{seed}")
    workload = []
    for c in range(channels):
        arrival, launch = rng.randint(0, 4), 0
        while arrival < cycles:
            shape = {"waves": rng.randint(1, 3), "vgpr": rng.randint(1, 4),
                     "sgpr": rng.randint(0, 2), "lds": rng.randint(0, 3)}
            spread = rng.choice((False, independent > 0 and rng.random() < independent))
            if spread:
                # Wider WGs, which wait for room and are split (embodiment 3), all but the
                # launch's barrier WG, which is dispatched whole.
                shape["waves"] += rng.randint(2, 4)
            for index in range(rng.randint(1, 6)):
                workload.append(WorkGroup(
                    id=0, channel=c, priority=c % priorities, duration=rng.randint(2, 24),
                    independent=spread, arrival=arrival, barrier=launch > 0 and index == 0,
                    **shape))
            arrival += rng.randint(0, 12)
            launch += 1
    workload.sort(key=lambda wg: (wg.arrival, wg.channel))
    for number, wg in enumerate(workload):
        wg.id = number
    return workload


def barrier_run(shape: Shape, cycles: int, seed: int = 1, *, split: bool = False,
                pressure: float = 0.0, selection: str = "multi") -> ModelRun:
    """The model's run of :func:`barrier_workload` on ``shape`` (a build with barriers) under
    embodiment 1 or another ``selection`` rule (``split``: embodiment 3 with a threshold of 2
    and independent launches, whose WGs are split but for the barrier WG, which is
    dispatched whole; ``pressure``: back-pressure,
    :func:`random_run`)."""
    changes = {"selection": selection}
    if split:
        changes.update(split_threshold=2, selection="multi")
    # (The round-robin AP choice reads no combined score: its scale is left as it is.)
    knobs = {k: v for k, v in shape.knobs().items() if k != "combined_scale"}
    policy = with_policy(PRESETS["emb1"], name="barriers", **{**knobs, **changes})
    priorities = shape.gpu.priorities
    workload = barrier_workload(shape.channels, cycles, seed, 0.5 if split else 0.0,
                                priorities)
    channels = [ChannelConfig(priority=c % priorities) for c in range(shape.channels)]
    not_ready = back_pressure(cycles, pressure, f"barriers/{seed}") if pressure else frozenset()
    label = (f"{shape.name} barriers seed {seed} {policy.selection}"
             f"{' split' if split else ''}")
    return model_run(label, shape.gpu, policy, workload, channels, cycles,
                     not_ready=not_ready)


#: Directed runs by name: ``DIRECTED[name](cycles)`` is a :class:`ModelRun` on ``exact4x2``
#: (the others' shape in :data:`DIRECTED_SHAPE`).
DIRECTED = {"windows": _windows, "ties": _ties, "full_peus": _full_peus,
            "combined_all": _combined_all, "pipelined_scores": _pipelined_scores,
            "refused": _refused, "split_held": _split_held}
DIRECTED_SHAPE = {"combined_all": "grouped3x3", "pipelined_scores": "pipelined4x2"}


#: The random set of a shape (the cocotb tier's, ``tests/test_cocotb_dispatch.py``, and the
#: coverage the fast tier measures of it): :data:`RANDOM_JOBS` seeds of
#: :data:`RANDOM_CYCLES` cycles, every selection rule and AP choice three times or more
#: (:data:`SELECTION_PLAN`); back-pressure in seeds 1, 6 and 11, bad releases in seed 2.
RANDOM_JOBS = len(SELECTION_PLAN)
RANDOM_CYCLES = 140
PRESSURE_SEEDS = (1, 6, 11)


def random_jobs(name: str) -> list[dict]:
    """The jobs of shape ``name``'s random set (``tb/test_dispatch.py``'s job format): the
    random seeds, the directed runs of the shape, a protocol run with back-pressure."""
    jobs = [{"kind": "random", "shape": name, "seed": seed, "cycles": RANDOM_CYCLES}
            for seed in range(RANDOM_JOBS)]
    # Back-pressure in model-compared runs (the model holds as the RTL does), and releases
    # the dispatcher must refuse (error, nothing changed).
    for seed in PRESSURE_SEEDS:
        jobs[seed]["pressure"] = 0.3
    jobs[2]["bad_releases"] = 6
    jobs += [{"kind": "directed", "name": directed, "cycles": 400} for directed in DIRECTED
             if DIRECTED_SHAPE.get(directed, "exact4x2") == name]
    return jobs + [{"kind": "protocol", "seed": 1, "clocks": 1000}]
