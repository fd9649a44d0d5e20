"""Deliberately broken dispatchers, each a plausible designer's slip, that the benches must
reject: the cocotb tier (``tests/test_cocotb_dispatch.py``) and the fast tier under Amaranth's
simulator (``tests/test_dispatch_rtl_sim.py``).

:data:`MUTANTS` maps a name to ``(variant, directed run)``: a :class:`hw.dispatch.Dispatcher`
subclass with one part replaced, and the name of the directed run of
:data:`tb.dispatch_cases.DIRECTED` aimed at it (``None``: the fast tier's reset-value or
bad-release runs see it). :data:`FAST_ONLY` are those only the fast tier runs (the cocotb
tier's builds cost minutes each). :data:`BARRIER_MUTANTS` are slips of the in-order barrier,
for the builds with barriers (:data:`tb.dispatch_cases.BARRIER_SHAPES`; the fast tier), and
:data:`CHANGED_MUTANTS` of the view computed for the changed APs
(:data:`tb.dispatch_cases.CHANGED_SHAPES`), :data:`ROTATING_MUTANTS` of the rotating score
unit (its unit bench in ``tests/test_dispatch_logic.py``).
"""

from dataclasses import replace

from amaranth.hdl import Cat, Mux, Signal

from hw.dispatch import Dispatcher
from hw.dispatch.logic import block_mask
from hw.dispatch.pipeline import ScorePipeline
from hw.dispatch.queues import ChannelQueues
from hw.dispatch.resources import ResourceTable
from hw.dispatch.scores import RotatingScores
from hw.dispatch.selector import Selector
from hw.dispatch.views import FreeBlockViews

__all__ = ["BARRIER_MUTANTS", "CHANGED_MUTANTS", "FAST_ONLY", "MUTANTS", "ROTATING_MUTANTS",
           "AdmitsEverything", "variant"]


class _FlagAlwaysSet(Selector):
    """a42 done wrong: the chosen channel's flag is set even when every tied flag was set
    (the others' are never cleared)."""

    def _flag_updates(self, m, flags, channel, tied, clear, priority):
        for c, flag in enumerate(flags):
            with m.If(channel == c):
                m.d.sync += flag.bit_select(priority, 1).eq(1)


class _WindowOneLonger(Selector):
    """Embodiment 2's windows one cycle too long (``position <= end``)."""

    @staticmethod
    def _in_window(position, start, end):
        return (position >= start) & (position <= end)


class _ReleaseOneShort(ResourceTable):
    """A release gives back one block fewer than its record holds."""

    @staticmethod
    def _returned(start, length, n, m=None, name="give_end"):
        return block_mask(start, Mux(length == 0, 0, (length - 1)[:len(length)]), n, m, name)


class _ReleaseAnyWg(ResourceTable):
    """A release whose WG id differs from its record's is applied anyway (the tag alone is
    checked)."""

    @staticmethod
    def _release_ok(valid, known, held_wg, wg):
        return valid & known


class _ReleaseAnyTag(ResourceTable):
    """A release of a tag not in flight is applied (only the WG id is checked)."""

    @staticmethod
    def _release_ok(valid, known, held_wg, wg):
        return valid & (held_wg == wg)


class _CandidatesScale(Selector):
    """The combined score scaled by the candidates' maxima in a build that says every AP's
    (``combined_scale = "all"``)."""

    def __init__(self, params):
        super().__init__(replace(params, policy=replace(params.policy,
                                                        combined_scale="candidates")))


class _ScoresOneOlder(ScorePipeline):
    """The pipelined decision's embodiment 9/10 order one cycle older than the model's
    (``score_latency + 1``)."""

    def __init__(self, params):
        super().__init__(replace(params, policy=replace(
            params.policy, score_latency=params.policy.score_latency + 1)))


class AdmitsEverything(ChannelQueues):
    """The admission check broken: every WG is admitted, even one no AP can hold."""

    def _admit(self, m, c, payload):
        admitted, entry = super()._admit(m, c, payload)
        return admitted | 1, entry


def variant(part: str, cls):
    """The dispatcher with its ``part`` (``selector``, ``table``, ``scores``, ``queues``)
    built by ``cls``."""
    class Broken(Dispatcher):
        pass

    setattr(Broken, f"_{part}", lambda self, params: cls(params))
    return Broken


class _CountsWhileHeld(Dispatcher):
    """Embodiment 3's all-fail counter counts (and splits) while ``dispatch`` is held by
    back-pressure, instead of holding."""

    def _all_fail(self, m, parts, active, waiting, matched, splittable):
        return super()._all_fail(m, parts, self.running, waiting, matched, splittable)


class _EveryOtherClock(Dispatcher):
    """The one-clock decision evaluates only every other clock (a turn register gates it):
    at most one dispatch per two clocks, each one still right."""

    def _one_clock(self, m, parts, evaluate, effective):
        turn = Signal(name="turn")
        gated = Signal(name="evaluate_on_turn")
        m.d.sync += turn.eq(~turn)
        m.d.comb += gated.eq(evaluate & turn)
        return super()._one_clock(m, parts, gated, effective)


def _wrong_reset(name: str, change):
    """A dispatcher whose configuration register ``name`` resets to ``change(init)``."""
    class WrongReset(Dispatcher):
        def _registers(self, params):
            registers = super()._registers(params)
            right = getattr(registers, name)
            wrong = Signal(len(right), name=right.name, init=change(right.init))
            setattr(registers, name, wrong)
            return registers

    WrongReset.__name__ = f"WrongReset_{name}"
    return WrongReset


MUTANTS = {
    "tie_break_flags": (variant("selector", _FlagAlwaysSet), "ties"),
    "window_boundary": (variant("selector", _WindowOneLonger), "windows"),
    "release_one_short": (variant("table", _ReleaseOneShort), "full_peus"),
    "combined_scale": (variant("selector", _CandidatesScale), "combined_all"),
    "scores_one_older": (variant("scores", _ScoresOneOlder), "pipelined_scores"),
    # The three slips that used to survive every tier (issue 28).
    "release_any_wg": (variant("table", _ReleaseAnyWg), None),
    "release_any_tag": (variant("table", _ReleaseAnyTag), None),
    "split_counts_while_held": (_CountsWhileHeld, "split_held"),
    "reset_ap_choice": (_wrong_reset("ap_choice", lambda init: (init + 1) % 5), None),
    "reset_split_threshold": (_wrong_reset("threshold", lambda init: init + 1), None),
    # Half the rate: the protocol checker's progress rule alone must see it.
    "every_other_clock": (_EveryOtherClock, "protocol"),
}

#: The mutants the cocotb tier does not build (the fast tier catches them in seconds).
FAST_ONLY = ("every_other_clock", "release_any_wg", "release_any_tag", "split_counts_while_held",
             "reset_ap_choice", "reset_split_threshold")


# -- in-order barriers -------------------------------------------------------------------------

class _RunningNeverFalls(ChannelQueues):
    """A channel's count of running WGs is never decremented: a release is not seen, and a
    barrier waits for ever once its channel has dispatched."""

    def _running(self, m, c):
        count = Signal(self._params.running_bits, name=f"c{c}_running")
        with m.If(self.take[c]):
            m.d.sync += count.eq(count + 1)
        m.d.comb += self.running[c].eq(count.any())


class _HoldIgnored(Dispatcher):
    """The barrier's hold ignored: a barrier head fits wherever it fits, whatever its channel
    runs."""

    @staticmethod
    def _held(barrier, running, behind):
        return 0


class _HoldOnlyWhileRunning(Dispatcher):
    """The pipelined match holds a barrier only while its channel runs a WG, not when it is
    behind a WG of its channel chosen and not yet dispatched (the model's ``position``)."""

    @staticmethod
    def _held(barrier, running, behind):
        return barrier & running


#: Barrier mutants: ``(variant, build of BARRIER_SHAPES it is caught on)``.
BARRIER_MUTANTS = {
    "barrier_count_never_falls": (variant("queues", _RunningNeverFalls), "barriers4x2"),
    "barrier_hold_ignored": (_HoldIgnored, "barriers4x2"),
    "barrier_hold_ignores_flight": (_HoldOnlyWhileRunning, "barriers4x2k2"),
}


# -- the view computed for the changed APs ------------------------------------------------------

class _ChangedMissesRelease(ResourceTable):
    """The changed APs leave out the release's: its blocks come back in the status but the
    view of its AP keeps them taken until an allocation there recomputes it."""

    @staticmethod
    def _changed(allocate, taken_ap, releasing, held_ap):
        return (allocate, taken_ap), (0, held_ap)


class _ChangedOneClockLate(FreeBlockViews):
    """A changed AP's lengths reach their registers a clock late (the length register not
    counted in the latency): the view of latency ``L + 1``."""

    def _ahead(self):
        return self._params.policy.circuit_latency


#: Changed-view mutants: ``(variant, build of CHANGED_SHAPES it is caught on)``.
CHANGED_MUTANTS = {
    "changed_misses_release": (variant("table", _ChangedMissesRelease), "changed4x2"),
    "changed_one_clock_late": (variant("views", _ChangedOneClockLate), "changed4x2k4"),
}


# -- the rotating scores ----------------------------------------------------------------------

class _RotationNotRestarted(RotatingScores):
    """The refreshed AP is not put back to 0 at START: the rotation runs from wherever the
    clocks before START left it."""

    def _restart(self):
        return 0


class _MaximaMissTheRefresh(RotatingScores):
    """The maxima see the refreshed AP's kept scores of its last refresh, not this one's (the
    kept registers read without the value written at this edge)."""

    @staticmethod
    def _seen(lanes, kept):
        return list(kept)


class _AllocationRefreshedEarly(RotatingScores):
    """The allocation's AP is refreshed a clock before its view shows the allocation (the
    length register of the view not counted)."""

    def _shown_after(self):
        return self._params.policy.circuit_latency


class _TiesToTheHigherAp(RotatingScores):
    """Two equal keys order the higher-numbered AP first (the compare's carry-in the same on
    both sides), where the model keeps the lower one first."""

    @staticmethod
    def _at_least(a, b, lower):
        return (Cat(lower, a) - Cat(lower, b))[len(a) + 1] ^ lower


#: Mutants of the rotating score unit: ``(unit, the score latency and AP choice of the unit
#: bench that catches it)``; the first is also caught by the fast tier's whole-dispatcher runs.
ROTATING_MUTANTS = {
    "rotation_not_restarted": (_RotationNotRestarted, 0, "resource"),
    "maxima_miss_the_refresh": (_MaximaMissTheRefresh, 3, "combined"),
    "allocation_refreshed_early": (_AllocationRefreshedEarly, 3, "resource"),
    "ties_to_the_higher_ap": (_TiesToTheHigherAp, 0, "resource"),
}
