"""The dispatcher's parameters, port layouts and configuration registers.

:class:`DispatcherParams` derives every width of :class:`hw.dispatch.Dispatcher` from the
model's own configuration objects (:class:`model.dispatch.GpuConfig` and
:class:`model.dispatch.PolicyConfig`), so that the RTL and the model are built from the same
numbers, and checks them before anything is built. The layouts of the ports are functions of
the parameters; :class:`ConfigAddress` names the registers of the configuration write port.

The policy given at construction fixes what is structural (the free-block circuit, its group
size and latency, the largest history length) and the reset values of every register the
configuration port can change at run time (selection rule, AP choice, weights, windows,
split threshold, LFSR seed, history length, rotation).

Model twin: :mod:`model.dispatch.config` (the objects the parameters are derived from).
"""

from dataclasses import dataclass, replace
from functools import cached_property

from amaranth.hdl import unsigned
from amaranth.lib import data
from amaranth.lib import enum as hdl_enum

from model.dispatch.config import (
    AP_CHOICES,
    MAX_WEIGHT,
    SELECTIONS,
    ChannelConfig,
    GpuConfig,
    PolicyConfig,
    check_policy,
    ignored_fields,
    quantised_mix,
    shared_schedule,
)
from model.dispatch.engine import score_widths
from model.maxblock import default_samples, exact_max_latency

__all__ = ["CIRCUIT_LATENCIES", "MAX_WEIGHT_BITS", "VIEW_REFRESHES", "ConfigAddress",
           "DispatcherParams", "bits", "ceil_div", "config_writes", "history_note"]

#: Latencies the embodiment 4-6 circuits can be built with (the exact one: 0 .. its deepest).
CIRCUIT_LATENCIES = (0, 1, 3)

#: How the view's circuits are built (:attr:`DispatcherParams.view_refresh`).
VIEW_REFRESHES = ("every", "changed")

#: The widest AP weight registers (embodiment 9's resource weights).
MAX_WEIGHT_BITS = 16
#: Width of the window lengths and of the split threshold registers.
WINDOW_BITS = 16
THRESHOLD_BITS = 16


def bits(value: int) -> int:
    """Bits of an unsigned register that holds ``value`` (at least 1)."""
    return max(int(value).bit_length(), 1)


class ConfigAddress(hdl_enum.Enum, shape=4):
    """The registers of the configuration write port (``index`` selects an element where the
    register is an array). A write takes effect in the next clock (a window length in the
    second)."""

    SELECTION = 0           #: 0 multi (embodiment 1), 1 strict, 2 blocking_buffer, 3 rr_first_fit
    AP_CHOICE = 1           #: 0 round robin, 1 lowest, 2 resource, 3 instruction, 4 combined
    ROTATE = 2              #: embodiment 8's rotating pointer on (1) or off (0)
    RESOURCE_WEIGHT = 3     #: w_r of the combined score (8 bits)
    INSTRUCTION_WEIGHT = 4  #: w_i of the combined score (8 bits)
    WINDOW = 5              #: embodiment 2: window ``index``'s length (0 ends the list;
                            #: effective in the second clock after the write)
    SPLIT_THRESHOLD = 6     #: embodiment 3's threshold (0 turns splitting off)
    LFSR = 7                #: the tie-break LFSR's state (non-zero)
    HISTORY_SHIFT = 8       #: log2 of embodiment 10's history length Nx
    AP_WEIGHT = 9           #: embodiment 9's a_h, h = ``index`` (vgpr, sgpr, lds, wave slots)
    WAVE_POWER = 10         #: channel ``index``'s weighted instructions per wave and cycle
    START = 11              #: begin: the next clock is the dispatcher's cycle 0


def _check_int(name: str, value, minimum: int, maximum: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"{minimum}..{maximum}" if maximum is not None else f"at least {minimum}"
        raise ValueError(f"{name} must be {bound}, not {value}")
    return value


@dataclass(frozen=True)
class DispatcherParams:
    """Everything :class:`hw.dispatch.Dispatcher` is built from, checked.

    Parameters
    ----------
    gpu : GpuConfig
        APs, PEUs, block counts, wave slots, priorities, embodiment 9's weights (reset values;
        their register width is :attr:`ap_weight_bits`) and embodiment 10's instruction
        weights (they fix the width of a channel's wave power).
    policy : PolicyConfig
        The free-block circuit (``exact``, ``full``, ``grouped``, ``sampled``, or ``shared``:
        embodiment 7, one time-multiplexed exact unit per AP, ``shared_width`` wide), its
        ``group_size`` and ``circuit_latency``; ``history_cycles`` is the largest history
        length the EMA registers hold. Every other field is a reset value of a configuration
        register. The RTL keeps embodiment 10's history as the exponential average: a policy
        whose AP choice reads the history must say ``history = "ema"``.
    channels : int or sequence of ChannelConfig
        The number of channels (workgroup-in streams), or the channels themselves, whose mixes
        give the reset values of the per-channel wave power.
    queue_depth : int
        Entries of each channel's FIFO (at least 2, so that a channel dispatching every clock
        never runs dry while its source keeps up; with a pipelined decision at least
        ``decision_pipeline + 3``, since the match reads up to ``decision_pipeline + 2``
        entries). 0: the least that keeps every channel sustaining one WG a clock (4, or
        ``decision_pipeline + 3``).
    id_bits : int
        Width of a WG id.
    weight_bits : int
        Width of embodiment 9's weight registers ``a_h`` (0: the width of the GPU's own
        weights; the model accepts up to 16).
    barriers : bool
        Build the in-order barrier (the model's ``WorkGroup.barrier``): a ``barrier`` bit in
        the workgroup-in payload, the channel in the allocation record, a count per channel
        of its WGs running (dispatched, not released; :attr:`running_bits` wide) and a
        barrier head held while its channel's count is not zero. Off, nothing of it is
        built (the Verilog is that of a build without the option).
    view_refresh : str
        How the view of a circuit of latency 1 or more is computed, the same view either way
        (:class:`hw.dispatch.views.FreeBlockViews`): ``"every"``, one circuit per resource
        instance, every clock (the default; the Verilog is that of a build without the
        option); ``"changed"``, one AP's circuits (``2 * peus + 1``) for each of the two APs
        whose status can change in a clock (the allocation's, the release's), each instance's
        length held in a register in between, and the status kept in LUT-RAM, one word per
        AP (:class:`hw.dispatch.resources.ResourceTable`). Needs ``circuit_latency`` 1 or
        more and a circuit per instance (not the shared unit).
    """

    gpu: GpuConfig
    policy: PolicyConfig
    channels: int
    queue_depth: int = 0
    id_bits: int = 16
    weight_bits: int = 0
    wave_powers: tuple[int, ...] = ()
    barriers: bool = False
    view_refresh: str = "every"

    def __post_init__(self):
        if self.queue_depth == 0:
            pipeline = self.policy.decision_pipeline
            object.__setattr__(self, "queue_depth", max(4, pipeline + 3) if pipeline else 4)

    @classmethod
    def build(cls, gpu: GpuConfig, policy: PolicyConfig, channels, **options
              ) -> "DispatcherParams":
        """Check everything and derive the channel count and wave powers (see the class)."""
        if not isinstance(gpu, GpuConfig):
            raise TypeError(f"gpu must be a model.dispatch.GpuConfig, not {gpu!r}")
        if not isinstance(policy, PolicyConfig):
            raise TypeError(f"policy must be a model.dispatch.PolicyConfig, not {policy!r}")
        if isinstance(channels, int) and not isinstance(channels, bool):
            count = _check_int("Channel count", channels, 1, 64)
            mixes = [ChannelConfig().mix] * count
        else:
            channels = tuple(channels)
            if not channels or not all(isinstance(c, ChannelConfig) for c in channels):
                raise TypeError(f"channels must be a positive integer or a non-empty sequence "
                                f"of ChannelConfig, not {channels!r}")
            count = _check_int("Channel count", len(channels), 1, 64)
            mixes = [c.mix for c in channels]
        wave_powers = tuple(sum(b * q for b, q in zip(gpu.instruction_weights,
                                                      quantised_mix(mix), strict=True))
                            for mix in mixes)
        params = cls(gpu, policy, count, wave_powers=wave_powers, **options)
        params.check()
        return params

    def check(self) -> None:
        """Raise ``TypeError``/``ValueError`` naming what is wrong and what is accepted."""
        gpu, policy = self.gpu, self.policy
        check_policy(policy, gpu)
        _check_int("Queue depth", self.queue_depth, 2, 1 << 16)
        _check_int("WG id width", self.id_bits, 1, 64)
        _check_int("Weight width", self.weight_bits, 0, MAX_WEIGHT_BITS)
        if not isinstance(self.barriers, bool):
            raise TypeError(f"barriers must be True or False, not {self.barriers!r}")
        if self.view_refresh not in VIEW_REFRESHES:
            raise ValueError(f"view_refresh must be one of {', '.join(VIEW_REFRESHES)}, not "
                             f"{self.view_refresh!r}")
        if self.changed_views and (self.shared or policy.circuit_latency < 1):
            raise ValueError(
                f'view_refresh = "changed" computes a view from the status of the clock '
                f'before (circuit_latency 1 or more) with a circuit per instance (not the '
                f'shared unit), not circuit = {policy.circuit!r} at circuit_latency '
                f'{policy.circuit_latency}')
        if max(gpu.resource_weight_values()) >= 1 << self.ap_weight_bits:
            raise ValueError(f"gpu.resource_weights {list(gpu.resource_weight_values())} "
                             f"need more than weight_bits = {self.weight_bits}")
        if policy.wave_placement != "split":
            raise ValueError(
                f'The RTL dispatcher places waves by embodiment 8 (wave_placement = "split"), '
                f'not {policy.wave_placement!r}')
        if self.pipeline:
            if policy.ap_choice == "combined" and policy.combined_scale != "all":
                raise ValueError(
                    'A pipelined decision (decision_pipeline > 0) computes every AP\'s scores '
                    'ahead of the choice, which needs combined_scale = "all" (the maxima over '
                    'every AP), not "candidates"')
            if self.queue_depth < self.pipeline + 3:
                raise ValueError(
                    f"A pipelined decision of {self.pipeline} reads up to "
                    f"{self.pipeline + 2} entries of each channel's FIFO: queue_depth must be "
                    f"at least {self.pipeline + 3}, not {self.queue_depth}")
        if policy.ap_choice in ("instruction", "combined") and policy.history != "ema":
            raise ValueError(
                'The RTL dispatcher keeps embodiment 10\'s history as the exponential average '
                '(history = "ema"); the sliding window of history = "window" would need the '
                f"last {policy.history_cycles} powers of every AP. Build it with "
                'history = "ema" (make cosim replaces it and says so)')
        if any(w >= 1 << WINDOW_BITS for w in policy.windows):
            raise ValueError(f"Window lengths must be below {1 << WINDOW_BITS}, not "
                             f"{list(policy.windows)}")
        if policy.split_threshold >= 1 << THRESHOLD_BITS:
            raise ValueError(f"split_threshold must be below {1 << THRESHOLD_BITS}, not "
                             f"{policy.split_threshold}")
        if len(self.wave_powers) != self.channels:
            raise ValueError(f"Give one wave power per channel ({self.channels}), not "
                             f"{len(self.wave_powers)}")

    # -- shape ---------------------------------------------------------------------------------

    @property
    def aps(self) -> int:
        return self.gpu.aps

    @property
    def peus(self) -> int:
        return self.gpu.peus

    @property
    def priorities(self) -> int:
        return self.gpu.priorities

    @property
    def sizes(self) -> dict[str, int]:
        """Block count of each contiguous resource."""
        return {"vgpr": self.gpu.vgpr, "sgpr": self.gpu.sgpr, "lds": self.gpu.lds}

    @property
    def instances(self) -> dict[str, int]:
        """Instances of each contiguous resource: one per PEU (VGPR, SGPR), one per AP (LDS);
        instance ``ap * peus + q`` is PEU ``q`` of AP ``ap``."""
        return {"vgpr": self.aps * self.peus, "sgpr": self.aps * self.peus, "lds": self.aps}

    @property
    def records(self) -> int:
        """Allocation records: one per wave slot of the GPU, the most WGs that can be in
        flight (each holds at least one wave slot)."""
        return self.aps * self.peus * self.gpu.wave_slots

    @property
    def running_bits(self) -> int:
        """Width of a channel's count of running WGs (in-order barriers): up to every WG the
        GPU can hold at once, :attr:`records`."""
        return bits(self.records)

    @property
    def max_waves(self) -> int:
        """The most waves an admitted WG has: every wave slot of one AP."""
        return self.peus * self.gpu.wave_slots

    @property
    def history_shift_max(self) -> int:
        return self.policy.history_cycles.bit_length() - 1

    @property
    def pipeline(self) -> int:
        """Clocks from the choice of a WG to its dispatch (``decision_pipeline``; 0: the
        one-clock decision)."""
        return self.policy.decision_pipeline

    @property
    def combined_all(self) -> bool:
        """The combined score is scaled by every AP's maxima (``combined_scale = "all"``,
        which a pipelined decision always builds), not the candidates'."""
        return self.policy.combined_scale == "all" or self.pipeline > 0

    @property
    def score_layers(self) -> int:
        """Register layers of the pipelined decision's score pipeline: its scores are those
        of ``score_latency`` cycles before the match, registered once more with it."""
        return self.policy.score_latency + 1

    @property
    def rotating_scores(self) -> bool:
        """The pipelined decision's scores are kept and refreshed for at most two APs a
        clock (:class:`hw.dispatch.scores.RotatingScores`)."""
        return (self.pipeline > 0 and self.policy.score_refresh == "rotating"
                and "score_refresh" not in ignored_fields(self.policy))

    @property
    def score_settle(self) -> int:
        """Clocks of unchanged inputs after which the score unit holds the idle GPU's order:
        its layers, and with rotating scores ``2 P`` refreshes before them."""
        return self.score_layers + (2 * self.aps if self.rotating_scores else 0)

    @property
    def changed_views(self) -> bool:
        """The view is computed for the APs whose status changed (``view_refresh``)."""
        return self.view_refresh == "changed"

    @property
    def shared(self) -> bool:
        """The view is embodiment 7's shared unit per AP."""
        return self.policy.circuit == "shared"

    @property
    def schedule(self):
        """The shared unit's schedule (:func:`model.dispatch.config.shared_schedule`)."""
        return shared_schedule(self.gpu, self.policy.shared_width)

    def seen_when_free(self, resource: str) -> int:
        """What the matcher's circuit reports for an idle instance of ``resource``."""
        n = self.sizes[resource]
        if self.policy.circuit == "sampled":
            return max(k + 1 for k in default_samples(n))
        return n

    def view_unit(self, resource: str) -> int:
        """``k`` such that every view length of ``resource`` is a multiple of ``2 ** k``: with
        embodiment 5's grouped circuit, the size of its groups when that is a power of two
        (the matcher then compares in groups, the views keep the groups), else 0."""
        if self.policy.circuit != "grouped":
            return 0
        n = self.sizes[resource]
        size = n // (n // self.policy.group_size)
        return size.bit_length() - 1 if size & (size - 1) == 0 else 0

    def circuit_latency(self, n: int) -> int:
        """The pipeline latency of the circuit of ``n`` blocks that makes up the view's latency;
        the rest of ``circuit_latency`` is registers on the status word in front of it (with
        changed views, one clock of it is the register that holds each instance's length)."""
        wanted = self.policy.circuit_latency - (1 if self.changed_views else 0)
        if self.shared:
            return 0
        if self.policy.circuit == "exact":
            return min(wanted, exact_max_latency(n))
        return max(latency for latency in CIRCUIT_LATENCIES if latency <= wanted)

    # -- widths --------------------------------------------------------------------------------

    @property
    def widths(self) -> dict[str, int]:
        """Register widths of the scores, from :func:`model.dispatch.engine.score_widths` with
        the largest combined weights the 8-bit registers hold."""
        widest = replace(self.policy, resource_weight=MAX_WEIGHT, instruction_weight=MAX_WEIGHT,
                         ap_choice="combined", history="ema")
        widths = score_widths(self.gpu, widest)
        # The AP weights are registers of the model's width; the score must hold any value
        # they can be written with.
        widths["ap_weight"] = self.weight_bits or widths["resource_weight"]
        largest = ((1 << widths["ap_weight"]) - 1) * sum(self.gpu.ap_capacities())
        widths["resource_score"] = bits(largest)
        return widths

    @property
    def ap_weight_bits(self) -> int:
        return self.widths["ap_weight"]

    # -- layouts -------------------------------------------------------------------------------
    # The port layouts are built once per parameter set (the benches pack and unpack a
    # payload of each in every clock).

    @cached_property
    def workgroup_layout(self) -> data.StructLayout:
        """The payload of a workgroup-in stream: one WG descriptor. The needs are one value
        wider than any admissible one, so a source clamps a larger value to the field's
        largest and the WG is still refused as too large."""
        gpu = self.gpu
        return data.StructLayout({
            "wg": unsigned(self.id_bits),
            "priority": range(max(gpu.priorities, 2)),
            "waves": unsigned(bits(self.max_waves + 1)),
            "vgpr": unsigned(bits(gpu.vgpr + 1)),
            "sgpr": unsigned(bits(gpu.sgpr + 1)),
            "lds": unsigned(bits(self.max_waves * gpu.lds + 1)),
            "independent": 1,
            **self._barrier,
        })

    @cached_property
    def dispatch_layout(self) -> data.StructLayout:
        """The payload of the dispatch-out stream."""
        gpu, Q = self.gpu, self.peus
        return data.StructLayout({
            "tag": range(max(self.records, 2)),
            "wg": unsigned(self.id_bits),
            "channel": range(max(self.channels, 2)),
            "split": 1,
            "part": range(max(self.max_waves, 2)),
            "ap": range(max(self.aps, 2)),
            "waves": data.ArrayLayout(range(gpu.wave_slots + 1), Q),
            "vgpr_start": data.ArrayLayout(range(max(gpu.vgpr, 2)), Q),
            "sgpr_start": data.ArrayLayout(range(max(gpu.sgpr, 2)), Q),
            "lds_start": range(max(gpu.lds, 2)),
        })

    @cached_property
    def release_layout(self) -> data.StructLayout:
        """The payload of the release-in stream: the record's tag and, as a check, the WG id."""
        return data.StructLayout({"tag": range(max(self.records, 2)),
                                  "wg": unsigned(self.id_bits)})

    @cached_property
    def config_layout(self) -> data.StructLayout:
        return data.StructLayout({"address": ConfigAddress, "index": 8, "data": 32})

    @property
    def _barrier(self) -> dict:
        """The ``barrier`` bit of a WG descriptor, FIFO entry and head, with barriers built
        (last in each layout, so that the other fields keep their bits)."""
        return {"barrier": 1} if self.barriers else {}

    @property
    def _wg_needs(self) -> dict:
        """The fields a channel's head and a FIFO entry share, in order: priority, waves, and
        the per-PEU split of the waves with what each PEU then needs (the head is read from
        the entry, so both must have these widths)."""
        gpu = self.gpu
        return {
            "priority": range(max(gpu.priorities, 2)),
            "waves": range(self.max_waves + 1),
            "quot": range(gpu.wave_slots + 1),
            "rem": range(max(self.peus, 2)),
            "need_vgpr_lo": range(gpu.vgpr + 2),
            "need_vgpr_hi": range(gpu.vgpr + 2),
            "need_sgpr_lo": range(gpu.sgpr + 2),
            "need_sgpr_hi": range(gpu.sgpr + 2),
        }

    @property
    def head_layout(self) -> data.StructLayout:
        """A channel's head WG as the matcher, selector and allocator see it (a part of a
        split WG appears as a one-wave WG of the lowest priority). ``quot`` and ``rem`` are
        ``waves`` divided by the PEU count; the needs are the VGPR (SGPR) blocks of a PEU
        that takes ``quot`` waves (``lo``) or one more (``hi``), saturated one above the
        block count."""
        gpu = self.gpu
        return data.StructLayout({
            "valid": 1,
            "wg": unsigned(self.id_bits),
            "split": 1,
            "part": range(max(self.max_waves, 2)),
            **self._wg_needs,
            "lds": range(gpu.lds + 2),
            "splittable": 1,
            **self._barrier,
        })

    @property
    def queue_layout(self) -> data.StructLayout:
        """A FIFO entry: an admitted WG with what the head needs precomputed."""
        gpu = self.gpu
        return data.StructLayout({
            "wg": unsigned(self.id_bits),
            **self._wg_needs,
            "vgpr": range(gpu.vgpr + 2),
            "sgpr": range(gpu.sgpr + 2),
            "lds": range(gpu.lds + 2),
            "part_lds": range(gpu.lds + 2),
            "splittable": 1,
            **self._barrier,
        })

    @property
    def record_layout(self) -> data.StructLayout:
        """An in-flight WG's allocation record (what its release gives back)."""
        gpu, Q = self.gpu, self.peus
        return data.StructLayout({
            "wg": unsigned(self.id_bits),
            "ap": range(max(self.aps, 2)),
            "waves": data.ArrayLayout(range(gpu.wave_slots + 1), Q),
            "vgpr_start": data.ArrayLayout(range(max(gpu.vgpr, 2)), Q),
            "vgpr_length": data.ArrayLayout(range(gpu.vgpr + 1), Q),
            "sgpr_start": data.ArrayLayout(range(max(gpu.sgpr, 2)), Q),
            "sgpr_length": data.ArrayLayout(range(gpu.sgpr + 1), Q),
            "lds_start": range(max(gpu.lds, 2)),
            "lds_length": range(gpu.lds + 1),
            "power": unsigned(self.widths["ap_power"]),
            **({"channel": range(max(self.channels, 2))} if self.barriers else {}),
        })


def history_note(policy: PolicyConfig) -> str | None:
    """What the RTL runs instead of ``policy``'s history, when it reads one it does not keep
    (the RTL keeps embodiment 10's exponential average, no sliding window): the note that
    make cosim and make verilog print, or ``None``."""
    if policy.history == "window" and "history" not in ignored_fields(policy):
        return ('history = "ema" (the RTL keeps the exponential average, not the '
                f"{policy.history_cycles}-cycle window)")
    return None


def config_writes(params: DispatcherParams, policy: PolicyConfig | None = None,
                  wave_powers=None, gpu: GpuConfig | None = None
                  ) -> list[tuple[ConfigAddress, int, int]]:
    """The configuration writes ``(address, index, data)`` that set every run-time register
    of a dispatcher built from ``params`` to ``policy`` (default: the one it was built with),
    the channels' ``wave_powers`` and the AP weights of ``gpu`` (defaults: its own).

    The structural fields must agree with the build: circuit, group size, latency (a
    ``ValueError`` says which differs); the values must fit their registers.
    """
    policy = params.policy if policy is None else policy
    gpu = params.gpu if gpu is None else gpu
    wave_powers = params.wave_powers if wave_powers is None else tuple(wave_powers)
    built = params.policy
    if policy.wave_placement != "split":
        raise ValueError(f'policy.wave_placement is {policy.wave_placement!r} but the '
                         f'dispatcher places waves by embodiment 8 ("split")')
    for name in ("circuit", "group_size", "circuit_latency", "shared_width",
                 "decision_pipeline", "score_latency", "score_refresh"):
        if getattr(policy, name) != getattr(built, name) and not (
                name == "group_size" and policy.circuit != "grouped") and not (
                name == "shared_width" and policy.circuit != "shared") and not (
                name.startswith("score_") and name in ignored_fields(policy)):
            raise ValueError(f"policy.{name} is {getattr(policy, name)!r} but the dispatcher "
                             f"was built with {getattr(built, name)!r}")
    if policy.selection not in SELECTIONS[:4]:
        raise ValueError(f'policy.selection "{policy.selection}": the RTL does not implement it')
    if params.pipeline and policy.selection == "blocking_buffer":
        raise ValueError('policy.selection "blocking_buffer" is not defined for the pipelined '
                         'decision '
                         f"(the dispatcher was built with decision_pipeline {params.pipeline})")
    scale = "all" if params.combined_all else "candidates"
    if policy.ap_choice == "combined" and policy.combined_scale != scale:
        raise ValueError(f"policy.combined_scale is {policy.combined_scale!r} but the "
                         f"dispatcher was built with {scale!r}")
    history_cycles = (built.history_cycles if "history_cycles" in ignored_fields(policy)
                      else policy.history_cycles)
    if history_cycles > built.history_cycles:
        raise ValueError(f"history_cycles {policy.history_cycles} exceeds the built "
                         f"{built.history_cycles}")
    if len(policy.windows) > params.priorities:
        raise ValueError(f"{len(policy.windows)} windows for {params.priorities} priorities")
    if len(wave_powers) > params.channels:
        raise ValueError(f"{len(wave_powers)} channels for a dispatcher of {params.channels}")
    limit = 1 << params.widths["wave_power"]
    if any(not 0 <= p < limit for p in wave_powers):
        raise ValueError(f"wave powers must be below {limit}, not {list(wave_powers)}")
    weights = gpu.resource_weight_values()
    if any(w >= 1 << params.ap_weight_bits for w in weights):
        raise ValueError(f"gpu.resource_weights {list(weights)} exceed the "
                         f"{params.ap_weight_bits}-bit AP weight registers")
    for name, value, width in (("windows", max(policy.windows, default=0), WINDOW_BITS),
                               ("split_threshold", policy.split_threshold, THRESHOLD_BITS)):
        if value >= 1 << width:
            raise ValueError(f"{name} must be below {1 << width}, not {value}")
    writes = [
        (ConfigAddress.SELECTION, 0, SELECTIONS.index(policy.selection)),
        (ConfigAddress.AP_CHOICE, 0, AP_CHOICES.index(policy.ap_choice)),
        (ConfigAddress.ROTATE, 0, int(policy.rotate)),
        (ConfigAddress.RESOURCE_WEIGHT, 0, policy.resource_weight),
        (ConfigAddress.INSTRUCTION_WEIGHT, 0, policy.instruction_weight),
        (ConfigAddress.SPLIT_THRESHOLD, 0, policy.split_threshold),
        (ConfigAddress.LFSR, 0, policy.lfsr_seed),
        (ConfigAddress.HISTORY_SHIFT, 0, history_cycles.bit_length() - 1),
    ]
    windows = list(policy.windows) + [0] * (params.priorities - len(policy.windows))
    writes += [(ConfigAddress.WINDOW, y, length) for y, length in enumerate(windows)]
    writes += [(ConfigAddress.AP_WEIGHT, h, w) for h, w in enumerate(weights)]
    powers = list(wave_powers) + [0] * (params.channels - len(wave_powers))
    writes += [(ConfigAddress.WAVE_POWER, c, p) for c, p in enumerate(powers)]
    return writes


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for integers."""
    return -(-a // b)
