"""Seed 002's multi-channel workgroup dispatcher: the top level.

:class:`Dispatcher` wires the channel queues, the free-block view, the matcher, the selector,
the allocator and the resource table together, keeps the configuration registers, embodiment
8's rotating pointers and embodiment 3's all-fail counter, and registers its decisions onto
the dispatch-out stream. Its cycle is the model's (:mod:`model.dispatch.engine`), one clock
per cycle: the co-simulation holds the two equal clock for clock.

Model twin: :mod:`model.dispatch.engine` (the loop that calls the model's stages).
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.dispatch.allocator import Allocator
from hw.dispatch.logic import add, at_most, equals, less, lookup, or_all
from hw.dispatch.matcher import Matcher, extra_wave
from hw.dispatch.params import THRESHOLD_BITS, WINDOW_BITS, ConfigAddress, DispatcherParams
from hw.dispatch.pipeline import PipelinedSelector, ScorePipeline
from hw.dispatch.queues import ChannelQueues
from hw.dispatch.resources import ResourceTable
from hw.dispatch.scores import RotatingScores
from hw.dispatch.selector import MULTI, Selector, window_end_bits
from hw.dispatch.views import FreeBlockViews, identity
from model.dispatch.config import AP_CHOICES, SELECTIONS

__all__ = ["Dispatcher"]


class Dispatcher(wiring.Component):
    """The workgroup dispatcher of seed 002, one WG per clock at most.

    Parameters
    ----------
    gpu : model.dispatch.GpuConfig
    policy : model.dispatch.PolicyConfig
    channels : int or sequence of model.dispatch.ChannelConfig
    queue_depth, id_bits, weight_bits, barriers, view_refresh : keyword options
        See :class:`hw.dispatch.params.DispatcherParams`, which checks every parameter.
    wrap : callable
        ``wrap(component, role)`` is applied to every free-block component (:mod:`hw.maxblock`,
        :mod:`hw.shared_maxblock`) before it is instantiated, ``role`` being ``"view"`` or
        ``"allocator"``; the flow uses it to emit each distinct circuit once.

    Attributes
    ----------
    wg_in : list of In(stream.Signature(params.workgroup_layout))
        One stream per channel. A WG accepted in clock ``t`` enters the channel's FIFO (or is
        refused, see ``reject``); it can be dispatched from clock ``t + 1``.
    dispatch : Out(stream.Signature(params.dispatch_layout))
        The WG decided in clock ``t`` (its record ``tag``, id, channel, part of a split WG,
        AP, waves per PEU, start of every contiguous block) is presented from clock ``t + 1``
        until taken. While it waits (``valid`` and not ``ready``) the dispatcher decides
        nothing: no dispatch, no abort, no split, the selection state and embodiment 3's
        counter hold (the window counter and the power history go on: they count time).
    release : In(stream.Signature(params.release_layout))
        One in-flight WG per clock, by its ``tag`` (and its id, checked); always ready. A
        release accepted in clock ``t`` frees its blocks and slots for clock ``t + 1``.
    config : In(stream.Signature(params.config_layout))
        Register writes (:class:`hw.dispatch.params.ConfigAddress`), effective in the next
        clock (a window length in the second); ``ready`` is low only for a ``START`` that
        must wait for the free-block pipelines to fill (and, with the shared unit, for its
        schedule to reach period 0; with a pipelined decision, for the score pipeline to hold
        the configuration of cycle 0: no write in the ``score_settle + 1`` clocks before,
        :attr:`~hw.dispatch.DispatcherParams.score_settle`).
    running : Out(1)
        High from the clock after ``START``: that clock is the dispatcher's cycle 0.
    stale_abort : Out(1), abort_ap : Out
        The decision of the previous clock found its AP's current status too full (the view
        was stale): nothing was dispatched.
    split : Out(channels)
        The heads embodiment 3 split in the previous clock.
    reject : Out(channels)
        The WG accepted on the channel in the previous clock can never fit an idle AP (as the
        circuit sees it) and was dropped.
    error : Out(1)
        Sticky: a release named a tag not in flight or the wrong WG (it was ignored).

    Latency: a WG that arrives (is accepted) in clock ``t - 1`` and fits is decided in clock
    ``t`` and on ``dispatch`` from clock ``t + 1``; one WG per clock sustained.
    """

    def __init__(self, gpu, policy, channels, *, wrap=identity, **options):
        self._params = DispatcherParams.build(gpu, policy, channels, **options)
        self._wrap = wrap
        p = self._params
        super().__init__({
            "wg_in": In(stream.Signature(p.workgroup_layout)).array(p.channels),
            "dispatch": Out(stream.Signature(p.dispatch_layout)),
            "release": In(stream.Signature(p.release_layout)),
            "config": In(stream.Signature(p.config_layout)),
            "running": Out(1),
            "stale_abort": Out(1),
            "abort_ap": Out(range(max(p.aps, 2))),
            "split": Out(p.channels),
            "reject": Out(p.channels),
            "error": Out(1),
        })

    @property
    def params(self) -> DispatcherParams:
        return self._params

    # The parts a variant may replace (the benches' deliberately broken dispatchers do).
    def _selector(self, params: DispatcherParams) -> Selector:
        return PipelinedSelector(params) if params.pipeline else Selector(params)

    def _table(self, params: DispatcherParams) -> ResourceTable:
        return ResourceTable(params)

    def _views(self, params: DispatcherParams) -> FreeBlockViews:
        return FreeBlockViews(params, self._wrap)

    @staticmethod
    def _held(barrier, running, behind):
        """In-order barriers: a WG with ``barrier`` is held while its channel is
        ``running`` a WG, or when it is ``behind`` another WG of its channel not yet
        dispatched (the pipelined match's rows past the first; a bool or a 1-bit value)."""
        if isinstance(behind, bool):
            return barrier & (1 if behind else running)
        return barrier & (behind | running)

    def _scores(self, params: DispatcherParams) -> ScorePipeline:
        return (RotatingScores if params.rotating_scores else ScorePipeline)(params)

    def _queues(self, params: DispatcherParams) -> ChannelQueues:
        return ChannelQueues(params)

    def _registers(self, params: DispatcherParams) -> SimpleNamespace:
        """The configuration registers, each reset to the value of the policy, GPU and
        channels the dispatcher was built with (a ``START`` alone runs that policy)."""
        p = params
        gpu, policy, Y = p.gpu, p.policy, p.priorities
        selection = Signal(2, name="cfg_selection", init=SELECTIONS.index(policy.selection))
        ap_choice = Signal(3, name="cfg_ap_choice", init=AP_CHOICES.index(policy.ap_choice))
        rotate = Signal(name="cfg_rotate", init=int(policy.rotate))
        resource_weight = Signal(8, name="cfg_resource_weight", init=policy.resource_weight)
        instruction_weight = Signal(8, name="cfg_instruction_weight",
                                    init=policy.instruction_weight)
        windows = [Signal(WINDOW_BITS, name=f"cfg_window{y}",
                          init=policy.windows[y] if y < len(policy.windows) else 0)
                   for y in range(Y)]
        threshold = Signal(THRESHOLD_BITS, name="cfg_split_threshold",
                           init=policy.split_threshold)
        shift = Signal(range(p.history_shift_max + 1), name="cfg_history_shift",
                       init=policy.history_cycles.bit_length() - 1)
        ap_weights = [Signal(p.ap_weight_bits, name=f"cfg_ap_weight{h}", init=w)
                      for h, w in enumerate(gpu.resource_weight_values())]
        wave_powers = [Signal(p.widths["wave_power"], name=f"cfg_wave_power{c}", init=w)
                       for c, w in enumerate(p.wave_powers)]
        return SimpleNamespace(selection=selection, ap_choice=ap_choice, rotate=rotate,
                               resource_weight=resource_weight, windows=windows,
                               instruction_weight=instruction_weight, threshold=threshold,
                               shift=shift, ap_weights=ap_weights, wave_powers=wave_powers)

    def elaborate(self, platform):
        m = Module()
        p = self._params
        policy = p.policy
        R, P, Q, Y = p.channels, p.aps, p.peus, p.priorities

        m.submodules.queues = queues = self._queues(p)
        m.submodules.views = views = self._views(p)
        m.submodules.matcher = matcher = Matcher(p, 2 * R if p.pipeline else R)
        m.submodules.selector = selector = self._selector(p)
        m.submodules.allocator = allocator = Allocator(p, self._wrap,
                                                       max(p.pipeline - 1, 0))
        m.submodules.table = table = self._table(p)

        # -- configuration registers (reset values: the policy the dispatcher was built with) --
        cfg = self._registers(p)
        selection, ap_choice, rotate = cfg.selection, cfg.ap_choice, cfg.rotate
        resource_weight, instruction_weight = cfg.resource_weight, cfg.instruction_weight
        windows, threshold, shift = cfg.windows, cfg.threshold, cfg.shift
        ap_weights, wave_powers = cfg.ap_weights, cfg.wave_powers

        # START waits until the view's pipelines hold the all-free status (and the shared
        # unit's schedule is one period before its pipeline's depth, so that the period read
        # in cycle 0 is the one the model's unit serves in cycle 0 + that depth); with a
        # pipelined decision, until the score pipeline holds the scores of the idle GPU with
        # the registers as they will be in cycle 0 (what the model keeps before cycle 0).
        prime = views.prime_clocks + (p.score_settle + 1 if p.pipeline else 0)
        age = Signal(range(prime + 2), name="age")
        with m.If(less(age, prime)):
            m.d.sync += age.eq(age + 1)
        start_ok = ~less(age + 1, prime)
        if p.shared:
            periods = len(p.schedule.periods)
            phase = Signal(range(max(periods, 2)), name="shared_phase")
            m.d.sync += phase.eq(Mux(equals(phase, periods - 1), 0, phase + 1))
            start_ok = start_ok & equals(phase, (views.shared_pipeline - 1) % periods)
        config = self.config
        is_start = equals(config.payload.address.as_value(), ConfigAddress.START.value)
        written = config.valid & config.ready
        if p.pipeline:
            quiet = Signal(range(p.score_settle + 2), name="config_quiet")
            with m.If(written & ~is_start):
                m.d.sync += quiet.eq(0)
            with m.Elif(at_most(quiet, p.score_settle)):
                m.d.sync += quiet.eq(quiet + 1)
            start_ok = start_ok & ~at_most(quiet, p.score_settle)
        m.d.comb += config.ready.eq(~is_start | start_ok | self.running)
        starting = Signal(name="starting")
        m.d.comb += starting.eq(written & is_start & ~self.running)
        with m.If(starting):
            m.d.sync += self.running.eq(1)
        value, index = config.payload.data, config.payload.index
        # Each address writes one register, or the ``index``-th of an array of them.
        registers = {ConfigAddress.SELECTION: selection, ConfigAddress.AP_CHOICE: ap_choice,
                     ConfigAddress.ROTATE: rotate,
                     ConfigAddress.RESOURCE_WEIGHT: resource_weight,
                     ConfigAddress.INSTRUCTION_WEIGHT: instruction_weight,
                     ConfigAddress.SPLIT_THRESHOLD: threshold,
                     ConfigAddress.HISTORY_SHIFT: shift}
        arrays = {ConfigAddress.WINDOW: windows, ConfigAddress.AP_WEIGHT: ap_weights,
                  ConfigAddress.WAVE_POWER: wave_powers}
        # (One comparison per address rather than a case over the address, which would leave
        # the other addresses without a case in every register's process.)
        address = config.payload.address.as_value()
        for name, register in registers.items():
            with m.If(written & equals(address, name.value)):
                m.d.sync += register.eq(value)
        for name, array in arrays.items():
            for position, register in enumerate(array):
                with m.If(written & equals(address, name.value) & equals(index, position)):
                    m.d.sync += register.eq(value)

        # -- embodiment 8's pointers ----------------------------------------------------------
        pointers = [Signal(range(max(Q, 2)), name=f"rotation{ap}") for ap in range(P)]
        effective = [Mux(rotate, pointer, 0) for pointer in pointers]

        # -- what both decisions share ----------------------------------------------------------
        m.d.comb += [
            *([] if p.changed_views else [views.status.eq(table.status)]),
            matcher.view.eq(views.view), matcher.slots.eq(table.slots),
            selector.selection.eq(selection), selector.ap_choice.eq(ap_choice),
            selector.lfsr_load.eq(written & equals(address, ConfigAddress.LFSR.value)),
            selector.lfsr_value.eq(value),
            selector.start.eq(starting), selector.running.eq(self.running),
            table.release.valid.eq(self.release.valid),
            table.release.payload.eq(self.release.payload),
            self.release.ready.eq(table.release.ready),
            table.history_shift.eq(shift), table.running.eq(self.running),
            self.error.eq(table.error),
            queues.splitting.eq(threshold.any() & equals(selection, MULTI)),
            *([views.changed.eq(table.changed), views.changed_status.eq(table.changed_status),
               table.read_ap.eq(allocator.ap), allocator.words.eq(table.ap_status)]
              if p.changed_views else [allocator.status.eq(table.status)]),
        ]
        for ap in range(P):
            m.d.comb += matcher.pointer[ap].eq(effective[ap])
        # Embodiment 2's windows also as running sums, registers that follow the window
        # registers one clock later, so that the selector adds nothing in the decision's
        # clock and nothing lies between the configuration port and the promoted priority
        # (which the selector computes a clock ahead from these sums' next values). A window
        # write therefore takes effect in the second clock after it.
        total = windows[0]
        for y in range(Y):
            total = add(total, windows[y]) if y else total
            end = Signal(window_end_bits(Y), name=f"cfg_window_end{y}",
                         init=sum(policy.windows[:y + 1]))
            m.d.sync += end.eq(total)
            m.d.comb += [selector.window_ends[y].eq(end), selector.window_ends_next[y].eq(total)]
        for c in range(R):
            wiring.connect(m, wiring.flipped(self.wg_in[c]), queues.wg_in[c])
        if p.barriers:
            # In-order barriers: each channel counts its running WGs (the queues), a release
            # names its record's channel (the table), the match holds a barrier head.
            m.d.comb += queues.released.eq(table.released)

        stall = self.dispatch.valid & ~self.dispatch.ready
        evaluate = Signal(name="evaluate")
        m.d.comb += evaluate.eq(self.running & ~stall)
        scores = {"view": views.view, "slots": table.slots, "history": table.history,
                  "resource_weight": resource_weight, "instruction_weight": instruction_weight,
                  "ap_weights": Cat(*ap_weights), "ap_choice": ap_choice,
                  **({"start": starting, "allocate": table.allocate,
                      "allocate_ap": table.record.ap} if p.rotating_scores else {})}
        parts = SimpleNamespace(queues=queues, matcher=matcher, selector=selector,
                                allocator=allocator, table=table, scores=scores,
                                threshold=threshold, selection=selection,
                                wave_powers=Cat(*wave_powers), wave_power_bits=len(wave_powers[0]))
        if p.pipeline:
            decided = self._pipelined(m, parts, evaluate, effective)
        else:
            decided = self._one_clock(m, parts, evaluate, effective)
        commit, abort, channel, ap, head, waves, power, starts, split_now = decided

        # The record of the allocation (what a release gives back).
        record = table.record
        vgpr_start, sgpr_start, lds_start, need_vgpr, need_sgpr = starts
        m.d.comb += [table.allocate.eq(commit), record.wg.eq(head.wg), record.ap.eq(ap),
                     record.waves.eq(waves), record.power.eq(power),
                     record.lds_start.eq(lds_start), record.lds_length.eq(head.lds)]
        if p.barriers:
            m.d.comb += record.channel.eq(channel)
        for q in range(Q):
            m.d.comb += [record.vgpr_start[q].eq(vgpr_start[q]),
                         record.vgpr_length[q].eq(need_vgpr[q]),
                         record.sgpr_start[q].eq(sgpr_start[q]),
                         record.sgpr_length[q].eq(need_sgpr[q])]
        m.d.comb += queues.take.eq(Mux(commit, 1 << channel, 0))
        with m.If(commit & rotate):
            for position in range(P):
                with m.If(equals(ap, position)):
                    # (pointer + rem) mod Q, both below Q: a table of the narrow sum.
                    turned = pointers[position] + head.rem
                    m.d.sync += pointers[position].eq(
                        lookup(turned, lambda t: t - Q if t >= Q else t))

        # -- outputs ----------------------------------------------------------------------------
        out = self.dispatch
        with m.If(commit):
            m.d.sync += [
                out.valid.eq(1),
                out.payload.tag.eq(table.tag), out.payload.wg.eq(head.wg),
                out.payload.channel.eq(channel), out.payload.split.eq(head.split),
                out.payload.part.eq(head.part), out.payload.ap.eq(ap),
                out.payload.waves.eq(waves), out.payload.vgpr_start.eq(vgpr_start),
                out.payload.sgpr_start.eq(sgpr_start),
                out.payload.lds_start.eq(lds_start),
            ]
        with m.Elif(out.ready):
            m.d.sync += out.valid.eq(0)
        m.d.sync += [self.stale_abort.eq(abort), self.abort_ap.eq(ap),
                     self.split.eq(split_now)]
        m.d.comb += self.reject.eq(queues.reject)
        return m

    def _waves(self, m: Module, head, pointer, name: str):
        """Embodiment 8: waves and VGPR/SGPR blocks per PEU of ``head`` on an AP whose
        pointer is ``pointer``."""
        p = self._params
        Q = p.peus
        waves = Signal(data.ArrayLayout(range(p.gpu.wave_slots + 1), Q), name=f"{name}_waves")
        need_vgpr = Signal(data.ArrayLayout(range(p.gpu.vgpr + 2), Q), name=f"{name}_vgpr")
        need_sgpr = Signal(data.ArrayLayout(range(p.gpu.sgpr + 2), Q), name=f"{name}_sgpr")
        for q in range(Q):
            extra = extra_wave(q, pointer, head.rem, Q)
            m.d.comb += [
                waves[q].eq(head.quot + extra),
                need_vgpr[q].eq(Mux(extra, head.need_vgpr_hi, head.need_vgpr_lo)),
                need_sgpr[q].eq(Mux(extra, head.need_sgpr_hi, head.need_sgpr_lo)),
            ]
        return waves, need_vgpr, need_sgpr

    def _power(self, m: Module, parts, channel, head, name: str) -> Signal:
        """The instruction power ``head`` adds to its AP: its channel's wave power times its
        waves."""
        power = Signal(self._params.widths["ap_power"], name=f"{name}_power")
        m.d.comb += power.eq(parts.wave_powers.word_select(channel, parts.wave_power_bits)
                             * head.waves)
        return power

    def _all_fail(self, m: Module, parts, active, waiting, matched, splittable):
        """Embodiment 3 in a clock whose decision counts (``active``): the all-fail counter
        and the channels split (``splittable`` of them) when it passes the threshold."""
        p = self._params
        R = p.channels
        threshold, selection = parts.threshold, parts.selection
        g = Signal(THRESHOLD_BITS + 1, name="all_fail_count")
        split_now = Signal(R, name="split_now")
        splitting = threshold.any() & equals(selection, MULTI)
        with m.If(active & splitting):
            with m.If(waiting & ~matched):
                with m.If(less(threshold, g + 1)):
                    m.d.comb += split_now.eq(splittable)
                    m.d.sync += g.eq(0)
                with m.Else():
                    m.d.sync += g.eq(g + 1)
            with m.Else():
                m.d.sync += g.eq(0)
        with m.Elif(~splitting):
            m.d.sync += g.eq(0)
        return split_now

    def _one_clock(self, m: Module, parts, evaluate, effective):
        """The seed's decision: match, selection, AP choice and first fit in one clock."""
        p = self._params
        R, P, Q = p.channels, p.aps, p.peus
        queues, matcher, selector = parts.queues, parts.matcher, parts.selector
        allocator, table = parts.allocator, parts.table
        m.d.comb += [matcher.heads.eq(queues.heads), selector.heads.eq(queues.heads),
                     selector.fit.eq(matcher.fit)]
        if p.barriers:
            # The model's Matcher.head_mask: a barrier head fits nothing while its channel
            # runs a WG.
            for c in range(R):
                m.d.comb += matcher.held[c].eq(self._held(queues.heads[c].barrier,
                                                          queues.running[c], False))
        for name, port in parts.scores.items():
            if name != "ap_choice":
                m.d.comb += getattr(selector, name).eq(port)
        channel, ap = selector.channel, selector.ap
        head = Signal(p.head_layout, name="target")
        m.d.comb += head.eq(Cat(*(queues.heads[c].as_value() for c in range(R)))
                            .word_select(channel, p.head_layout.size))
        pointer = Signal(range(max(Q, 2)), name="target_rotation")
        m.d.comb += pointer.eq(Cat(*effective).word_select(ap, len(pointer)) if P > 1
                               else effective[0])
        waves, need_vgpr, need_sgpr = self._waves(m, head, pointer, "target")
        m.d.comb += [allocator.ap.eq(ap), allocator.need_lds.eq(head.lds),
                     allocator.need_vgpr.eq(need_vgpr), allocator.need_sgpr.eq(need_sgpr)]

        commit = Signal(name="commit")
        abort = Signal(name="stale")
        m.d.comb += [commit.eq(evaluate & selector.picked & allocator.fits & table.tag_valid),
                     abort.eq(evaluate & selector.picked & ~allocator.fits),
                     selector.evaluate.eq(evaluate), selector.commit.eq(commit)]
        waiting = Cat(*(queues.heads[c].valid for c in range(R))).any()
        split_now = self._all_fail(m, parts, evaluate, waiting, selector.matched, queues.splittable)
        m.d.comb += queues.split.eq(split_now)
        starts = (allocator.vgpr_start, allocator.sgpr_start, allocator.lds_start,
                  need_vgpr, need_sgpr)
        power = self._power(m, parts, channel, head, "target")
        return commit, abort, channel, ap, head, waves, power, starts, split_now

    def _pipelined(self, m: Module, parts, evaluate, effective):
        """The pipelined decision (``decision_pipeline = k``, docs/dispatch.md), the model's
        cycle clock for clock: in clock ``t`` the match (registered), the choice from the
        match of ``t - 1`` (into flight stage 1), the first fit of the WG in stage 1 (the
        allocator's trees, ``k - 1`` clocks) and the dispatch or stale abort of the WG in
        stage ``k``. Flight stage ``j`` holds the WG chosen ``j`` clocks before. While the
        output is held (``evaluate`` low) every stage holds."""
        p = self._params
        R, P, Q, k = p.channels, p.aps, p.peus, p.pipeline
        queues, matcher, selector = parts.queues, parts.matcher, parts.selector
        allocator, table = parts.allocator, parts.table
        m.submodules.scores = scores = self._scores(p)
        for name, port in parts.scores.items():
            m.d.comb += getattr(scores, name).eq(port)
        m.d.comb += selector.beats.eq(scores.beats)

        # Stage 1 holds the choice (the head and what follows from it are worked out in the
        # first-fit clock); stages 2 .. k the whole plan.
        chosen_layout = data.StructLayout({
            "valid": 1, "channel": range(max(R, 2)), "ap": range(max(P, 2))})
        flight_layout = data.StructLayout({
            **chosen_layout.members,
            "head": p.head_layout,
            "waves": data.ArrayLayout(range(p.gpu.wave_slots + 1), Q),
            "need_vgpr": data.ArrayLayout(range(p.gpu.vgpr + 2), Q),
            "need_sgpr": data.ArrayLayout(range(p.gpu.sgpr + 2), Q),
            "power": p.widths["ap_power"]})
        flight = [None, Signal(chosen_layout, name="flight1")] + [
            Signal(flight_layout, name=f"flight{j}") for j in range(2, k + 1)]
        last = flight[1]                    # chosen in the previous clock
        leaving = flight[k]                 # dispatched (or aborted) in this clock

        # -- match: each channel's two WGs behind those in flight, APs in flight left out. Each
        # row's WG is picked from the channel's k + 2 entries and its split head's part first,
        # then matched: 2 rows a channel against every AP, where matching every WG a row can be
        # and picking the fit masks afterwards took (k + 3) rows a channel (the default 16 x 4
        # x 4 GPU at k = 4: 36,304 LUT4 of comparators, docs/dispatch_rtl.md). --------------
        busy = Signal(P, name="busy_aps")
        m.d.comb += busy.eq(or_all([Mux(flight[j].valid, Const(1, P) << flight[j].ap, 0)
                                 for j in range(1, k + 1)]))
        counts = [Signal(range(k + 1), name=f"in_flight_c{c}") for c in range(R)]  # (below)
        matches = []
        for c in range(R):
            m.d.comb += queues.in_flight[c].eq(counts[c])
            heads = [queues.entries[c][j].as_value() for j in range(k + 3)]
            pair = []
            for r in range(2):
                part, entry = queues.row_part[c][r], queues.row_entry[c][r]
                head = Signal(p.head_layout, name=f"match_c{c}_r{r}")
                m.d.comb += head.eq(Mux(part, heads[k + 2],
                                        Cat(*heads[:k + 2]).word_select(entry,
                                                                        p.head_layout.size)))
                row = 2 * c + r
                m.d.comb += matcher.heads[row].eq(head)
                if p.barriers:
                    # The model's match stage: a barrier WG is held while its channel runs a
                    # WG or when it is not the first WG of its channel not chosen (entry j > 0
                    # is at position j or beyond; a split head's part carries no barrier).
                    m.d.comb += matcher.held[row].eq(~part & self._held(
                        head.barrier, queues.running[c], entry.any()))
                pair.append((head, matcher.fit[row]))
            matches.append(pair)

        # -- dispatch of the WG in the last stage ---------------------------------------------
        ok = Signal(name="plan_fits")
        m.d.comb += ok.eq(allocator.fits & table.tag_valid)
        commit = Signal(name="commit")
        abort = Signal(name="stale")
        m.d.comb += [commit.eq(evaluate & leaving.valid & ok),
                     abort.eq(evaluate & leaving.valid & ~ok)]
        squash = Signal(name="squash")      # the clock after a stale abort chooses nothing
        with m.If(evaluate):
            m.d.sync += squash.eq(abort)

        # -- choice from the registered match: each channel's candidate, the row after the WG
        # chosen in the previous clock when that was the channel's, that WG's AP left out (both
        # applied when the match is registered, so that the choice starts from registers) ----
        candidate_layout = data.StructLayout({"valid": 1, "head": p.head_layout, "fit": P})
        candidates = [Signal(candidate_layout, name=f"candidate_c{c}") for c in range(R)]
        matched_once = Signal(name="match_valid")
        for c in range(R):
            candidate = candidates[c]
            m.d.comb += [selector.heads[c].eq(candidate.head),
                         selector.heads[c].valid.eq(candidate.valid),
                         selector.fit[c].eq(candidate.fit)]
        choose = Signal(name="choose")
        m.d.comb += choose.eq(evaluate & matched_once & ~squash & ~abort)
        chosen = Signal(name="chosen")
        m.d.comb += [chosen.eq(choose & selector.picked), selector.commit.eq(chosen),
                     selector.evaluate.eq(evaluate)]
        channel = selector.channel
        # Stage 1 keeps every channel's candidate and the chosen channel; the chosen head is
        # picked from them in the next clock, not after the choice.
        offered = Signal(data.ArrayLayout(p.head_layout, R), name="flight1_candidates")
        taken = Signal(P, name="chosen_ap_mask")
        again = Signal(R, name="chosen_channel_mask")     # the channel chosen again
        m.d.comb += [taken.eq(Mux(chosen, selector.ap_mask, 0)),
                     again.eq(Mux(chosen, selector.channel_mask, 0))]

        # -- first fit of the WG in stage 1 ---------------------------------------------------
        planned = Signal(p.head_layout, name="plan_head")
        m.d.comb += planned.eq(offered.as_value().word_select(last.channel, p.head_layout.size)
                               if R > 1 else offered[0])
        pointer = Signal(range(max(Q, 2)), name="plan_rotation")
        m.d.comb += pointer.eq(Cat(*effective).word_select(last.ap, len(pointer)) if P > 1
                               else effective[0])
        waves, need_vgpr, need_sgpr = self._waves(m, planned, pointer, "plan")
        m.d.comb += [allocator.ap.eq(last.ap), allocator.need_lds.eq(planned.lds),
                     allocator.need_vgpr.eq(need_vgpr), allocator.need_sgpr.eq(need_sgpr),
                     allocator.enable.eq(evaluate)]

        # -- the stages move on ---------------------------------------------------------------
        with m.If(evaluate):
            m.d.sync += [flight[1].valid.eq(chosen), flight[1].channel.eq(channel),
                         flight[1].ap.eq(selector.ap)]
            for c in range(R):
                m.d.sync += offered[c].eq(candidates[c].head)
            for j in range(2, k):
                m.d.sync += flight[j + 1].eq(flight[j])
            for j in range(1, k):
                m.d.sync += flight[j + 1].valid.eq(flight[j].valid & ~abort)
            # In flight per channel: stages 1 .. k - 1 move on (none after an abort), + the choice.
            for c in range(R):
                moving = sum(flight[j].valid & equals(flight[j].channel, c) for j in range(1, k))
                m.d.sync += counts[c].eq(Mux(abort, 0, moving + again[c]))
            m.d.sync += [flight[2].channel.eq(last.channel), flight[2].ap.eq(last.ap),
                         flight[2].head.eq(planned), flight[2].waves.eq(waves),
                         flight[2].need_vgpr.eq(need_vgpr), flight[2].need_sgpr.eq(need_sgpr),
                         flight[2].power.eq(self._power(m, parts, last.channel, planned,
                                                        "plan"))]

        # -- embodiment 3: counts in a clock that chooses; splits a channel with nothing in
        # flight after this clock (no choice was made, so only stages 1 .. k - 1 stay) ------
        waiting = Cat(*(selector.heads[c].valid for c in range(R))).any()
        staying = Cat(*(or_all([flight[j].valid & equals(flight[j].channel, c)
                             for j in range(1, k)]) for c in range(R)))
        split_now = self._all_fail(m, parts, choose, waiting, selector.picked,
                                   queues.splittable & ~staying)
        m.d.comb += queues.split.eq(split_now)
        # The match registered: both rows' fits, what picks between them (the channel chosen
        # again; split: it offers nothing, its part is matched from then on) and the APs to
        # leave out (in flight or chosen now); the candidate is worked out in the next clock.
        excluded = Signal(P, name="excluded_aps")
        with m.If(evaluate):
            m.d.sync += [matched_once.eq(1), excluded.eq(busy | taken)]
            for c in range(R):
                (head0, fit0), (head1, fit1) = matches[c]
                row_fit = [Signal(P, name=f"row_fit_c{c}_r{r}") for r in range(2)]
                row_valid = Signal(2, name=f"row_valid_c{c}")
                second, split = Signal(name=f"row_second_c{c}"), Signal(name=f"row_split_c{c}")
                m.d.sync += [candidates[c].head.eq(Mux(again[c], head1, head0)),
                             row_fit[0].eq(fit0), row_fit[1].eq(fit1),
                             row_valid.eq(Cat(head0.valid, head1.valid)),
                             second.eq(again[c]), split.eq(split_now[c])]
                valid = Mux(second, row_valid[1], row_valid[0]) & ~split
                m.d.comb += [candidates[c].valid.eq(valid),
                             candidates[c].fit.eq(Mux(valid, Mux(second, row_fit[1], row_fit[0])
                                                      & ~excluded, 0))]

        # The part number a split WG's part leaves with is its channel's head's: the WG in
        # the last stage is its channel's head (earlier ones have left), and a channel is
        # split only with nothing in flight, so the head's split state is the one the part
        # was matched in.
        dispatched = Signal(p.head_layout, name="dispatched_head")
        m.d.comb += [dispatched.eq(leaving.head),
                     dispatched.part.eq(Mux(leaving.head.split,
                                            queues.heads[leaving.channel].part
                                            if R > 1 else queues.heads[0].part, 0))]
        starts = (allocator.vgpr_start, allocator.sgpr_start, allocator.lds_start,
                  leaving.need_vgpr, leaving.need_sgpr)
        return (commit, abort, leaving.channel, leaving.ap, dispatched, leaving.waves,
                leaving.power, starts, split_now)
