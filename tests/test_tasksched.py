"""The seed-001 task scheduler system model: every step of the mechanism on small directed
cases whose beats are worked out by hand, the baselines' arbiters, the share accounting, the
invariants (and that breaking one is caught), the config errors and a CLI smoke run."""

import copy
import json
import re

import pytest

from model import tasksched
from model.arbiter import ArbiterInputs, DelayFactorArbiterModel, WriteOp
from model.cli import default_configs, main
from model.config import ConfigError
from model.tasksched import (
    POLICIES,
    FifoRoundRobinArbiter,
    InvariantError,
    SmoothWrrArbiter,
    TaskSchedulerSim,
    admit,
    build_workload,
    decompose,
    make_arbiter,
    parse_scenario,
    simulate,
)
from model.tasksched.claims import Claim, Variant, evaluate_claims

# Timing of every directed case: fetch 8, register 2, send 4 beats. The directed cases of the
# first reading pin matching = "count" (a job matches any idle compatible processor without
# reserving it); the reservation and the gates have their own cases below.
BASE = {
    "scheduler": {"timeout": 128, "send_beats": 4, "fetch_beats": 8, "register_beats": 2,
                  "cache_entries": 16, "match_jobs_per_beat": 64, "matching": "count"},
    "arbiter": {"slots": 4},
    "processors": [{"type": "vector", "count": 1, "word_bytes": 4, "max_job_words": 256}],
    "streams": [],
}


def stream(name, **fields):
    entry = {"name": name, "class": "union", "processor": "vector", "jobs": 2,
             "job_bytes": 64, "job_beats": 10}
    entry.update(fields)
    return entry


def scenario(*streams, **sections):
    data = copy.deepcopy(BASE)
    for key, value in sections.items():
        if isinstance(value, dict) and key in data:
            data[key].update(value)
        else:
            data[key] = value
    data["streams"] = list(streams)
    return parse_scenario(data, name="test")


def run_sim(scene, policy, sim_class=TaskSchedulerSim, **kwargs):
    sim = sim_class(scene, build_workload(scene, 1), policy, check=True, **kwargs)
    return sim, sim.run()


def task(sim, name):
    return next(entry for entry in sim.tasks if entry.spec.name == name)


# -- decomposition, workload, admission -----------------------------------------------------------

def test_decompose_rounds_up_to_whole_words():
    assert decompose(512, 4) == 128
    assert decompose(513, 4) == 129
    assert decompose(3, 8) == 1


def test_workload_order_arrivals_and_dependencies():
    scene = scenario(stream("a", count=3, arrival="periodic", gap=10, start=5),
                     stream("b", count=2, after="a", arrival="burst"),
                     stream("c", count=3, chain=True, job_beats=[3, 7]))
    tasks = build_workload(scene, 7)
    names = [spec.name for spec in tasks]
    # b#i waits for a#i, so it enters global memory with it: b#0 at 5, b#1 at 15.
    arrival = {spec.name: spec.arrival for spec in tasks}
    assert arrival == {"a#0": 5, "a#1": 15, "a#2": 25, "b#0": 5, "b#1": 15,
                       "c#0": 0, "c#1": 0, "c#2": 0}
    # Oldest first; equal arrivals by position in the stream, then stream order.
    assert names == ["c#0", "c#1", "c#2", "a#0", "b#0", "a#1", "b#1", "a#2"]
    index = {spec.name: spec.index for spec in tasks}
    preds = {spec.name: {tasks[p].name for p in spec.predecessors} for spec in tasks}
    assert preds["b#1"] == {"a#1"} and preds["c#2"] == {"c#1"} and preds["c#0"] == set()
    assert all(p < index[spec.name] for spec in tasks for p in spec.predecessors)
    c_jobs = [d for spec in tasks if spec.stream == "c" for d in spec.durations]
    assert all(3 <= d <= 7 for d in c_jobs) and len(set(c_jobs)) > 1
    assert tasks[0].job_words == 16              # 64 bytes / 4-byte words
    assert build_workload(scene, 7) == tasks     # the seed fixes the workload


def test_quick_divides_counts():
    scene = scenario(stream("a", count=9), stream("b", count=1), quick_divisor=4)
    tasks = build_workload(scene, 1, quick=True)
    assert sum(spec.stream == "a" for spec in tasks) == 3
    assert sum(spec.stream == "b" for spec in tasks) == 1


def test_admission_rejects_what_can_never_match():
    scene = scenario(stream("ok"),
                     stream("nodsp", processor="dsp"),
                     stream("big", job_bytes=2048),                  # 512 words > 256
                     stream("many", jobs=1024),                      # 16 beats > timeout 8
                     stream("child", after="nodsp"),
                     scheduler={"timeout": 8})
    tasks = build_workload(scene, 1)
    reasons = {tasks[index].name: reason for index, reason in admit(scene, tasks).items()}
    assert reasons == {
        "nodsp#0": "no processor of type 'dsp' exists",
        "big#0": "its jobs of 512 words exceed the largest 'vector' processor (256 words)",
        "many#0": "matching its 1024 jobs at 64 per beat takes 16 beats, more than the "
                  "8-beat schedule timeout",
        "child#0": "its predecessor nodsp#0 was rejected",
    }
    sim, result = run_sim(scene, "delay-factor")
    assert result["completed"] == result["admitted"] == 1
    assert [entry["task"] for entry in result["rejected"]] == ["nodsp#0", "big#0", "many#0",
                                                              "child#0"]


# -- the beats of one task ------------------------------------------------------------------------

# One task, two 10-beat jobs, one processor. Beat 0: arrival, fetch issued; 8: it lands and
# registers; 10: decomposed, takes slot 0, matches, its slot load is accepted.
# Baselines: the slot counts from 11, the grant of 11 is seen at 12: job 0 is sent at 12
# (processor locked 12-15), runs 16-25, ends at 26; the task requests again at 26, job 1 is
# sent at 27 and ends at 27 + 4 + 10 = 41.
# Delay factor: the slot's divider turn takes the 6 clocks after the write (t = 10), its W is
# in force at 17, where the slot sits out a clock; the first decision is at 18, seen at 19:
# ends at 33, job 1 sent at 34, done at 48.
@pytest.mark.parametrize(("policy", "first_send", "done"), [
    ("delay-factor", 19, 48), ("fifo-rr", 12, 41), ("smooth-wrr", 12, 41)])
def test_one_task_timeline(policy, first_send, done):
    sim, result = run_sim(scenario(stream("a")), policy)
    state = task(sim, "a#0")
    assert state.registered_at == 8 and state.matched_at == 10
    assert state.first_sent == first_send and state.done_at == done
    assert state.task_id == 0
    assert result["latency"]["max"] == done
    assert result["makespan"] == done
    assert result["utilisation"] == pytest.approx(20 / done)
    assert result["throughput_per_1000_beats"] == pytest.approx(1000 / done)
    assert result["grant_stalls"] == (7 if policy == "delay-factor" else 0)
    assert sim.cache_free == 16


def test_idle_beat_skipping_changes_nothing():
    scene = scenario(stream("a", count=3, arrival="poisson", gap=40, jobs=4,
                            job_beats=[5, 60]),
                     stream("b", count=2, chain=True, weight=5, start=100, jobs=8),
                     processors=[{"type": "vector", "count": 2}])
    for policy in POLICIES:
        _, fast = run_sim(scene, policy, skip_idle=True)
        _, slow = run_sim(scene, policy, skip_idle=False)
        assert fast == slow


def test_send_locks_the_processor_and_best_fit():
    # Two processors; the smaller one fits the jobs and is chosen first; while it is locked
    # the second job goes to the larger one. The grant of beat 11 is sent at 12 to
    # processor 1 (64 words); processor 1 is then locked, so job 1's grant (decided at 12,
    # seen at 13) takes processor 0.
    scene = scenario(stream("a", jobs=2),
                     processors=[{"type": "vector", "max_job_words": 256},
                                 {"type": "vector", "max_job_words": 64}])
    sim = TaskSchedulerSim(scene, build_workload(scene, 1), "fifo-rr")
    sent = []
    original = sim._choose_processor

    def recording(entry):
        chosen = original(entry)
        sent.append((sim.beat, chosen))
        return chosen

    sim._choose_processor = recording
    sim.run()
    assert sent == [(12, 1), (13, 0)]


# -- cache, registration, predecessors ------------------------------------------------------------

def test_predecessor_check_and_in_order_registration():
    # b#1 waits for b#0 (a chain); c#0, of the same class, queues behind b#1 in the cache,
    # so it registers only in the beat after b#1 (one registration per class and beat).
    scene = scenario(stream("b", count=2, chain=True), stream("c", start=1))
    sim, result = run_sim(scene, "fifo-rr")
    first, second, other = task(sim, "b#0"), task(sim, "b#1"), task(sim, "c#0")
    assert first.done_at == 41                      # as in the one-task timeline
    assert second.registered_at == first.done_at    # the query answers in the same beat
    assert other.registered_at == first.done_at + 1
    assert [second.task_id, other.task_id] == [1, 2]
    assert result["completed"] == 3


def test_cache_refills_only_when_space_is_freed():
    # One cache entry: b is read from global memory in the beat a completes (its entry is
    # freed first) and lands fetch_beats later.
    scene = scenario(stream("a"), stream("b"), scheduler={"cache_entries": 1})
    sim, _ = run_sim(scene, "smooth-wrr")
    assert task(sim, "a#0").done_at == 41
    assert task(sim, "b#0").registered_at == 41 + 8


# -- matching and schedule failures ---------------------------------------------------------------

def test_schedule_failures_until_the_processor_frees():
    # a's 300-beat job 0 holds the only processor from beat 12 (sent) to 316 (ends). b
    # arrives at 30, lands and registers at 38, starts matching at 40 with timeout 16:
    # it fails at 56, takes a slot again at 57, fails at 73, ... (every 17 beats) while the
    # processor is busy. At 316 the processor is idle (a's job 1 is only granted then), so b
    # matches in the window 312-327: failures at 56 + 17k for k = 0..15, 16 in all.
    scene = scenario(stream("a", job_beats=300), stream("b", start=30, weight=3),
                     scheduler={"timeout": 16})
    sim, result = run_sim(scene, "fifo-rr")
    assert task(sim, "a#0").first_sent == 12
    assert task(sim, "b#0").failures == 16 and task(sim, "b#0").matched_at == 316
    assert result["schedule_failures"] == 16 and result["failures_by_type"] == {"vector": 16}
    assert result["streams"]["b"]["failures"] == 16
    assert result["completed"] == 2


def test_matching_rate_and_timeout_boundary():
    # 256 jobs at 64 per beat match in 4 beats (10..13) when the processor is idle; with a
    # timeout of exactly 4 beats that still succeeds (the timer fires at beat 10 + 4).
    scene = scenario(stream("a", jobs=256, job_beats=1),
                     scheduler={"timeout": 4})
    sim, result = run_sim(scene, "fifo-rr")
    assert task(sim, "a#0").matched_at == 13
    assert result["schedule_failures"] == 0 and result["completed"] == 1


def test_horizon_reports_unfinished_tasks():
    scene = scenario(stream("a", job_beats=1000), scheduler={"max_beats": 500})
    _, result = run_sim(scene, "delay-factor")
    assert result["completed"] == 0
    assert result["unfinished"] == [{"task": "a#0", "state": "pending"}]
    assert result["beats"] == 500


# -- the patent's matching: named processors, reserved; the gates --------------------------------

TWO = [{"type": "vector", "count": 2}]


def test_each_job_reserves_a_named_processor():
    # One 2-job task, two processors, matching = "reserve": at 10 job 0 reserves processor 0
    # and job 1 processor 1 (tightest fit, then index), all matched: the load is accepted at
    # 10. FIFO: grants seen at 12 and 13 go to the reserved processors, 0 then 1; jobs end
    # at 12 + 4 + 10 = 26 and 13 + 14 = 27. Held idle by reservations: 2 + 3 beats.
    scene = scenario(stream("a"), processors=TWO, scheduler={"matching": "reserve"})
    events = []
    sim = TaskSchedulerSim(scene, build_workload(scene, 1), "fifo-rr", events=events)
    result = sim.run()
    state = task(sim, "a#0")
    assert (state.matched_at, state.first_sent, state.done_at) == (10, 12, 27)
    assert [(beat, processor) for beat, kind, _, _, processor, _ in events
            if kind == "reserve"] == [(10, 0), (10, 1)]
    assert [(beat, processor) for beat, kind, _, _, processor, _ in events
            if kind == "send"] == [(12, 0), (13, 1)]
    assert sim.reserved_beats == 5
    assert result["reserved_idle"] == pytest.approx(5 / (2 * 27))


@pytest.mark.parametrize(("matching", "matched_at", "failures"), [
    # reserve: a's jobs hold both processors from 10 and run 12..116 and 13..117; b (from 11)
    # fails at 11 + 64 = 75, takes a slot again at 76, reserves processor 0 at 116 and 1 at
    # 117: all matched at 117, one failure.
    ("reserve", 117, 0 + 1),
    # count (the first reading): both processors are idle at 11, so b "matches" at once.
    ("count", 11, 0),
])
def test_reservation_makes_the_all_matched_gate_bite(matching, matched_at, failures):
    scene = scenario(stream("a", job_beats=100), stream("b", start=1), processors=TWO,
                     scheduler={"matching": matching, "timeout": 64})
    sim, result = run_sim(scene, "fifo-rr")
    assert task(sim, "a#0").done_at == 117
    assert task(sim, "b#0").matched_at == matched_at
    assert result["schedule_failures"] == failures and result["completed"] == 2


def test_per_job_gate_runs_more_jobs_than_processors():
    # Four jobs, two processors: the all-matched gate with reservation can never match them
    # all at once (rejected with the reason); the per-job gate ([0096]) sends each job as soon
    # as it has matched, two at a time.
    gang = scenario(stream("a", jobs=4), processors=TWO, scheduler={"matching": "reserve"})
    (reason,) = admit(gang, build_workload(gang, 1)).values()
    assert reason == ("its 4 jobs need 4 idle 'vector' processors at once (each job reserves "
                      "one until all have matched), and only 2 can take them")
    scene = scenario(stream("a", jobs=4), processors=TWO,
                     scheduler={"matching": "reserve", "gate": "per-job"})
    sim, result = run_sim(scene, "fifo-rr")
    # 10: jobs 0, 1 reserve processors 0, 1 and join the pending set (slot load at 10); sent
    # at 12 and 13, they end at 26 and 27, when jobs 2 and 3 reserve them: all matched at 27.
    state = task(sim, "a#0")
    assert (state.pending_at, state.first_sent, state.matched_at) == (10, 12, 27)
    assert result["completed"] == 1 and result["schedule_failures"] == 0


def test_per_job_failure_removes_only_the_unsent_jobs():
    # b's four jobs on two processors with a 20-beat timeout: two match at once and are sent,
    # the other two cannot match before the timeout (the first two run for 30 beats), so b
    # fails with its sent jobs kept; on the retry it matches the remaining two.
    scene = scenario(stream("b", jobs=4, job_beats=30), processors=TWO,
                     scheduler={"matching": "reserve", "gate": "per-job", "timeout": 20})
    sim, result = run_sim(scene, "smooth-wrr")
    state = task(sim, "b#0")
    assert state.failures >= 1 and state.sent == 4 and result["completed"] == 1
    assert sim.reserved_beats > 0 and all(owner is None for owner in sim.proc_owner)


def test_one_clock_weight_update_knob():
    # The RTL's divider takes 6 clocks per slot (first send 19, done 48, see the timeline
    # above); a one-clock turn starts and ends at 11 (the slot load is at 10), the slot sits
    # out 12 while its target is refreshed, the decision is at 13, seen at 14; job 0 ends at
    # 14 + 14 = 28, job 1 is granted at 28, sent at 29 and ends at 43.
    scene = scenario(stream("a"), arbiter={"weight_update_clocks": 1})
    assert scene.arbiter.divider_clocks == 1
    sim, result = run_sim(scene, "delay-factor")
    assert (task(sim, "a#0").first_sent, task(sim, "a#0").done_at) == (14, 43)
    assert scenario(stream("a")).arbiter.divider_clocks == 6


class ForgetfulReservation(TaskSchedulerSim):
    """Broken: reserves a processor but does not record it with the task."""

    def _reserve(self, entry, count, t):
        taken = super()._reserve(entry, count, t)
        if entry.reserved:
            entry.reserved.pop()
        return taken


def test_broken_reservation_is_detected():
    scene = scenario(stream("a"), processors=TWO, scheduler={"matching": "reserve"})
    with pytest.raises(InvariantError, match="reserved for a#0 but is not idle or not in its"):
        run_sim(scene, "fifo-rr", sim_class=ForgetfulReservation)


def test_api_arguments_are_checked():
    scene = scenario(stream("a"))
    with pytest.raises(ValueError, match="Policy must be one of"):
        simulate(scene, "lottery")
    with pytest.raises(TypeError, match="scenario must be a Scenario"):
        simulate({"streams": []}, "fifo-rr")
    tasks = build_workload(scenario(stream("a", count=2)), 1)
    with pytest.raises(ValueError, match=r"tasks\[0\] has index 1"):
        simulate(scene, "fifo-rr", tasks=tasks[::-1])
    with pytest.raises(ValueError, match="matching must be one of"):
        tasksched.SchedulerConfig(matching="greedy")
    with pytest.raises(ValueError, match="timeout must be an integer >= 1, not 0"):
        tasksched.SchedulerConfig(timeout=0)


def test_claims_over_seeds():
    scene = scenario(stream("a", count=6, jobs=2, arrival="poisson", gap=30, weight=1),
                     stream("b", count=6, jobs=2, arrival="poisson", gap=30, weight=9),
                     processors=TWO, scheduler={"matching": "reserve"})
    claim = Claim("test", "gate costs nothing", "completed", "fifo-rr", "fifo-rr",
                  lambda m: m["completed"], True,
                  Variant("timeout 8", lambda s: s), Variant("per-job", lambda s: s))
    (row,) = evaluate_claims([scene], seeds=3, claims=[claim])
    # Both sides complete every task on every seed: a tie, "does not hold" (no better).
    assert row["comparison"]["verdict"] == "does not hold"
    assert row["baseline"] == "fifo-rr, per-job" and row["seeds"] == [1, 2, 3]
    assert row["sensitivity"]["comparison"]["ratio"]["mean"] == 1.0


# -- the arbiters ---------------------------------------------------------------------------------

def load(arbiter, slot, job_class, weight):
    arbiter.step(ArbiterInputs(write_valid=1, write_slot=slot, write_op=WriteOp.LOAD,
                               write_job_class=job_class, write_weight=weight))


def grants(arbiter, request, rounds):
    """The slots granted for ``rounds`` clocks of ``request``, then one clock without requests
    to collect the last decision (a decision is seen in the clock after its requests)."""
    seen = []
    for index in range(rounds + 1):
        outputs = arbiter.step(ArbiterInputs(request=request if index < rounds else 0))
        if outputs.grant_valid:
            seen.append(outputs.grant_slot)
    return seen


def test_policies_use_the_arbiter_model():
    params = scenario(stream("a")).arbiter
    assert isinstance(make_arbiter("delay-factor", params), DelayFactorArbiterModel)
    with pytest.raises(ValueError, match="Policy must be one of"):
        make_arbiter("lottery", params)


def test_fifo_round_robin_arbiter():
    params = scenario(stream("a")).arbiter
    arbiter = FifoRoundRobinArbiter(params)
    load(arbiter, 1, 0, 9)            # loaded first: the head of class 0
    load(arbiter, 0, 0, 200)
    load(arbiter, 2, 2, 1)
    # Classes in turn from class 0; within class 0 the earliest load, whatever the weights.
    assert grants(arbiter, 0b111, 4) == [1, 2, 1, 2]
    assert grants(arbiter, 0b101, 2) == [0, 2]


def test_smooth_wrr_arbiter_latency_and_order():
    params = scenario(stream("a")).arbiter
    arbiter = SmoothWrrArbiter(params)
    load(arbiter, 0, 2, 1)
    load(arbiter, 1, 2, 3)
    # A request is granted in the next clock.
    assert arbiter.step(ArbiterInputs(request=0b11)).grant_valid == 0
    assert arbiter.outputs().grant_valid == 1
    # By hand, current weights after adding and after the grant: (1, 3) -> slot 1, (1, -1);
    # (2, 2) tie -> slot 0, (-2, 2); (-1, 5) -> slot 1, (-1, 1); (0, 4) -> slot 1, (0, 0).
    arbiter = SmoothWrrArbiter(params)
    load(arbiter, 0, 2, 1)
    load(arbiter, 1, 2, 3)
    assert grants(arbiter, 0b11, 8) == [1, 0, 1, 1] * 2
    # Clearing a slot takes it out; loading it again starts its current weight at 0.
    arbiter.step(ArbiterInputs(write_valid=1, write_slot=1, write_op=WriteOp.CLEAR))
    assert grants(arbiter, 0b11, 2) == [0, 0]


def test_share_accounting_under_fifo():
    # Two equal-weight tasks of four jobs on one processor. a requests alone at beat 11 (b's
    # load is accepted at 11, so b requests from 12): a round a is due in full. Then every
    # round is at a job end with both requesting, and FIFO gives a its remaining 3 jobs
    # (each due half), then b its 4 alone.
    scene = scenario(stream("a", jobs=4), stream("b", jobs=4))
    sim, result = run_sim(scene, "fifo-rr")
    a, b = result["streams"]["a"], result["streams"]["b"]
    assert (a["rounds"], a["grants"]) == (4, 4)
    assert a["configured_share"] == pytest.approx(2.5 / 4) and a["achieved_share"] == 1.0
    assert (b["rounds"], b["grants"]) == (7, 4)
    assert b["configured_share"] == pytest.approx(5.5 / 7)
    assert a["lag_max"] == pytest.approx(1.5) and b["lag_max"] == pytest.approx(1.5)
    assert a["share_error_pp"] == pytest.approx(37.5)


def test_weighted_shares_follow_the_weights():
    # Backlogged, one class, weights 1:3: smooth WRR gets the 1:3 split to within a grant,
    # the seed's arbiter to within a few points, FIFO not at all.
    scene = scenario(stream("light", jobs=256, job_beats=4, weight=1),
                     stream("heavy", jobs=256, job_beats=4, weight=3),
                     processors=[{"type": "vector", "count": 2}])
    errors = {}
    for policy in POLICIES:
        _, result = run_sim(scene, policy)
        heavy = result["streams"]["heavy"]
        errors[policy] = abs(heavy["achieved_share"] - heavy["configured_share"])
    assert errors["smooth-wrr"] < 0.01
    assert errors["delay-factor"] < 0.05
    assert errors["fifo-rr"] > 0.2


# -- invariants -----------------------------------------------------------------------------------

class AnyProcessor(TaskSchedulerSim):
    """Broken: sends every job to processor 0, whatever its state."""

    def _choose_processor(self, entry):
        return 0


class WrongType(TaskSchedulerSim):
    """Broken: sends to the last processor, whatever its type."""

    def _choose_processor(self, entry):
        return len(self.proc_type) - 1


class LeakyCache(TaskSchedulerSim):
    """Broken: a completed task keeps its cache entry."""

    def _complete(self, entry, t):
        super()._complete(entry, t)
        self.cache_free -= 1


class NoPredecessorQuery(TaskSchedulerSim):
    """Broken: the state monitor says every predecessor has completed."""

    def _predecessors_done(self, entry):
        return True


def test_invariants_hold_on_the_shipped_scenarios():
    for path in default_configs("tasksched"):
        scene = tasksched.load_scenario(path)
        for policy in POLICIES:
            result = simulate(scene, policy, quick=True, check=True)
            if path.stem == "reservation_livelock":
                # Shipped to show the seed's rules livelocking (tests/test_sched_audit.py).
                assert result["stopped"] == "livelock", policy
                continue
            assert result["completed"] == result["admitted"], (path, policy)


@pytest.mark.parametrize(("broken", "processors", "message"), [
    (AnyProcessor, [{"type": "vector", "count": 2}], r"sent to processor 0, which is"),
    (WrongType, [{"type": "vector"}, {"type": "dsp"}], r"sent to a mismatched processor 1"),
    (LeakyCache, [{"type": "vector"}], r"cache space not conserved"),
])
def test_broken_invariants_are_detected(broken, processors, message):
    scene = scenario(stream("a", job_beats=50), stream("b"), processors=processors)
    with pytest.raises(InvariantError, match=message):
        run_sim(scene, "smooth-wrr", sim_class=broken)


def test_broken_predecessor_query_is_detected():
    scene = scenario(stream("a", count=2, chain=True))
    with pytest.raises(InvariantError, match=r"a#1 registered before a#0 completed"):
        run_sim(scene, "delay-factor", sim_class=NoPredecessorQuery)


# -- configuration --------------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["streams"][0].update(jobs=48),
     re.escape("streams[0].jobs must be a power of two 2**n with n >= 1")),
    (lambda d: d["streams"][0].update(jobs=1), r"streams\[0\].jobs must be an integer in 2"),
    (lambda d: d["streams"][0].update({"class": "batch"}),
     r"streams\[0\].class must be a string \(one of 'block'"),
    (lambda d: d["streams"][0].update(weight=256),
     r"streams\[0\].weight must be an integer in 1..255, not 256"),
    (lambda d: d["streams"][0].update(job_beats=[9, 3]), r"streams\[0\].job_beats must be"),
    (lambda d: d["streams"][0].update(after="later"),
     r"streams\[0\].after must name a stream listed before this one"),
    (lambda d: d["streams"][0].update(arrival="periodic", gap=0),
     r"streams\[0\].gap must be an integer >= 1 for periodic arrivals"),
    (lambda d: d["streams"][0].update(colour="red"), r"streams\[0\].colour is not a known field"),
    (lambda d: d["scheduler"].update(timeout=0), r"scheduler.timeout must be an integer >= 1"),
    (lambda d: d["arbiter"].update(slots=65), r"arbiter.slots must be an integer in 1..64"),
    (lambda d: d["arbiter"].update(weight_bits=12), r"arbiter.weight_bits is not accepted"),
    (lambda d: d["arbiter"].update(weight_update_clocks=10),
     r"arbiter.weight_update_clocks must be an integer in 0..9, not 10"),
    (lambda d: d["scheduler"].update(gate="some"),
     r"scheduler.gate must be a string \(one of 'all', 'per-job'\)"),
    (lambda d: d["processors"].append({"type": "vector", "word_bytes": 8}),
     r"processors\[1\].word_bytes must be 4, the word length of type 'vector' in "
     r"processors\[0\], not 8"),
    (lambda d: d.update(processors=[]), r"processors must list at least one"),
    (lambda d: d.update(streams=[]), r"streams must list at least one"),
])
def test_config_errors_name_the_field(change, message):
    data = copy.deepcopy(BASE)
    data["streams"] = [stream("a")]
    change(data)
    with pytest.raises(ConfigError, match=message):
        parse_scenario(data, source="x.toml")


def test_config_error_names_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[[processors]]\ntype = "vector"\ncount = 0\n')
    with pytest.raises(ConfigError, match=r"bad.toml: processors\[0\].count must be an integer"):
        tasksched.load_scenario(path)


# -- the command line -----------------------------------------------------------------------------

def test_cli_quick_run(tmp_path, capsys):
    out = tmp_path / "tasksched.json"
    events = tmp_path / "events.csv"
    assert main(["tasksched", "--quick", "--quiet", "--json", str(out),
                 "--plots", str(tmp_path), "--seeds", "2", "--events", str(events)]) == 0
    data = json.loads(out.read_text())
    assert len(data["claims"]) >= 5
    lines = events.read_text().splitlines()
    assert lines[0] == "scenario,policy,beat,event,task,stream,processor,detail"
    assert {line.split(",")[3] for line in lines[1:]} >= {"arrive", "reserve", "matched",
                                                           "send", "complete"}
    printed = capsys.readouterr().out
    for path in default_configs("tasksched"):
        name = path.stem
        assert (tmp_path / f"tasksched_{name}.png").stat().st_size > 0
        assert set(data["scenarios"][name]["policies"]) == set(POLICIES)
        assert f"tasksched {name}" in printed


def test_cli_bad_config_exits_2(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('[scheduler]\ntimeout = "long"\n')
    assert main(["tasksched", "--quiet", "--config", str(path), "--plots", str(tmp_path)]) == 2
    assert "scheduler.timeout must be an integer >= 1" in capsys.readouterr().err


@pytest.mark.parametrize(("old", "new", "field"), [
    ('type = "vector"', 'type = ""', "processors[0].type"),
    ('name = "compute"', 'name = ""', "streams[0].name"),
    ('processor = "vector"', 'processor = ""', "streams[0].processor"),
])
def test_cli_empty_name_is_one_line(tmp_path, capsys, old, new, field):
    # An empty processor type or stream name passed the reader and the dataclass's TypeError
    # escaped as a traceback.
    shipped = next(path for path in default_configs("tasksched")
                   if path.stem == "scarce_type").read_text()
    path = tmp_path / "empty.toml"
    path.write_text(shipped.replace(old, new, 1))
    assert main(["tasksched", "--quiet", "--quick", "--config", str(path),
                 "--plots", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"gpusched tasksched: {path}: {field} must be a "
                                       f"non-empty string, not ''\n")
