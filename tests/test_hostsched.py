"""The seed-003 host-side dispatch model: every step of the seed's dispatcher and of the two
baselines on small workloads whose schedules are derived by hand in the comments, the state
buffers and transfers, the completion rule, the invariant checker (including broken policies
it must catch), the configuration errors and one quick CLI run."""

import json
import random

import pytest

from model import cli
from model.config import ConfigError
from model.hostsched import (
    InvariantChecker,
    InvariantError,
    Scenario,
    SeedBatchDispatch,
    StaticBinding,
    SystemParams,
    ThreadGroup,
    WorkQueue,
    generate_workload,
    load_scenario,
    make_policies,
    simulate,
    workload_from_lists,
)
from model.hostsched.claims import Claim, Variant, evaluate_claims
from model.hostsched.policies import binding_for
from model.stats import VERDICTS


class _Recorder:
    """Wraps a policy and records ``(time, thread, instance)`` for every pick."""

    def __init__(self, policy):
        self.policy = policy
        self.name = policy.name
        self.starts = []

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def bind(self, instances, take, head):
        self.policy.bind(instances, take, head)
        self.head = head

    def on_ready(self, thread, now):
        self.policy.on_ready(thread, now)

    def prepare(self, now):
        self.policy.prepare(now)

    def pick(self, instance, now):
        thread = self.policy.pick(instance, now)
        if thread is not None:
            sub = self.head(thread)
            self.starts.append((now, sub.task, sub.index, instance))
        return thread


def _starts(workload, system, policy):
    recorder = _Recorder(policy)
    result = simulate(workload, system, recorder)
    return recorder.starts, result


#: Nothing costs anything to move: the directed cases of the dispatch itself (the costs of
#: moving states and inputs have their own cases below).
FREE = {"state_bytes": 0, "input_bytes": 0, "dma_setup_us": 0}
ONE = SystemParams(instances=1, instance_cache=0, **FREE)

# -- the seed's batch FIFO ------------------------------------------------------------------------


def test_refill_only_when_fifo_empty_and_batch_in_arrival_order():
    # Thread 0 blocks the one instance 0-100 while thread 1 (0..100) sits in the FIFO.
    # Threads 2-5 arrive at 10..40 with the FIFO non-empty: no refill. At 100 the FIFO empties,
    # the table is built by priority: 3 (p0), 4 (p1, arr 20), 5 (p1, arr 30), 2 (p2); the
    # first batch {3, 4} enters the FIFO by arrival: 4 then 3; then {5, 2} as 2 then 5.
    threads = [[(0, 0, 100)], [(1, 0, 10)], [(2, 10, 10)], [(3, 40, 10)], [(4, 20, 10)],
               [(5, 30, 10)]]
    workload = workload_from_lists(threads, priorities=[0, 0, 2, 0, 1, 1])
    starts, _ = _starts(workload, ONE, SeedBatchDispatch("priority", batch=2))
    assert [(time, task) for time, task, _, _ in starts] == [
        (0, 0), (100, 1), (110, 4), (120, 3), (130, 2), (140, 5)]
    # By arrival the table is 2, 4, 5, 3: batches {2, 4} and {5, 3}.
    starts, _ = _starts(workload, ONE, SeedBatchDispatch("arrival", batch=2))
    assert [task for _, task, _, _ in starts] == [0, 1, 2, 4, 5, 3]


def test_eager_refill_and_rounds():
    # One instance, batch 1. t=0: table [0, 1], batch {0}, instance takes 0p0 (0-10) and the
    # emptied FIFO is refilled with 1 from the same round. Thread 2 arrives at 5 but the
    # round's table is not used up, so it waits. t=10: 1p0 runs (10-20), the table is empty:
    # a new round of the waiting threads by head arrival: 0 (arr 0), 2 (arr 5) -> 0p1 at 20,
    # 2 at 30; thread 1 (ready at 20) joins the round after: 1p1 at 40.
    threads = [[(0, 0, 10), (0, 0, 10)], [(1, 0, 10), (1, 0, 10)], [(2, 5, 10)]]
    workload = workload_from_lists(threads)
    policy = SeedBatchDispatch("arrival", batch=1)
    with pytest.warns(UserWarning, match="batch 1 is not greater than the 1 instances"):
        starts, result = _starts(workload, ONE, policy)
    assert [(time, task, index) for time, task, index, _ in starts] == [
        (0, 0, 0), (10, 1, 0), (20, 0, 1), (30, 2, 0), (40, 1, 1)]
    assert result.makespan == 50
    assert (policy.rounds, policy.batches) == (3, 5)
    # The plain work queue serves by readiness: 2 (ready at 5) before 0p1 (ready at 10).
    starts, _ = _starts(workload, ONE, WorkQueue())
    assert [(time, task, index) for time, task, index, _ in starts] == [
        (0, 0, 0), (10, 1, 0), (20, 2, 0), (30, 0, 1), (40, 1, 1)]


def test_fifo_wait_counts_from_entering_the_fifo():
    # One instance, batch 2: FIFO [0, 1] at t=0; 0 runs 0-10, 1 waits in the FIFO 0-10;
    # thread 2 (arrival 3) enters the FIFO at 10 when it empties and runs 20-30 after 1.
    threads = [[(0, 0, 10)], [(1, 0, 10)], [(2, 3, 10)]]
    result = simulate(workload_from_lists(threads), ONE, SeedBatchDispatch("arrival", 2))
    assert sorted(result.fifo_wait) == [0, 10, 10]
    assert sorted(result.ready_wait) == [0, 10, 17]


# -- the seed's figure and the baselines ----------------------------------------------------------


SIX_THREADS = [[(0, 0, 10), (0, 0, 10)], [(1, 0, 10)], [(2, 0, 10), (2, 0, 10)], [(3, 0, 10)],
               [(4, 0, 10), (4, 0, 10)], [(5, 0, 10)]]


def test_seed_figure_six_threads_two_instances():
    # The seed's figure: six threads, two kernel instances. Static binding puts the three
    # two-part threads 0, 2, 4 on instance 0: 60 µs there, 30 on instance 1, utilisation
    # 90 / (2 x 60) = 0.75. The seed's FIFO (batch 3 > 2 instances) keeps both busy until the
    # last part of thread 4, which must wait for its first: makespan 50, 90 / 100 = 0.9.
    workload = workload_from_lists(SIX_THREADS)
    system = SystemParams(instances=2, instance_cache=0, **FREE)
    static = simulate(workload, system, StaticBinding()).metrics()
    seed = simulate(workload, system, SeedBatchDispatch("arrival", 3)).metrics()
    queue = simulate(workload, system, WorkQueue()).metrics()
    assert static["makespan_us"] == 60
    assert static["utilisation"] == pytest.approx(0.75)
    assert static["instance_utilisation"] == [1.0, 0.5]
    assert seed["makespan_us"] == 50
    assert seed["utilisation"] == pytest.approx(0.9)
    assert queue["makespan_us"] == 50
    assert seed["subtasks_per_second"] == pytest.approx(9 / 50e-6)


def test_static_binding_serves_its_threads_first_ready_first():
    # Instance 0 serves threads 0 and 2 (0 mod 2, 2 mod 2): 0p0 at 0, 2p0 at 10 (ready at 0),
    # 0p1 at 20 (ready at 10), 2p1 at 30. Instance 1 runs thread 1 at 0 and is idle after.
    threads = [[(0, 0, 10), (0, 0, 10)], [(1, 0, 10)], [(2, 0, 10), (2, 0, 10)]]
    starts, result = _starts(workload_from_lists(threads),
                             SystemParams(instances=2, instance_cache=0, **FREE),
                             StaticBinding())
    assert starts == [(0, 0, 0, 0), (0, 1, 0, 1), (10, 2, 0, 0), (20, 0, 1, 0), (30, 2, 1, 0)]
    assert result.busy == [40, 10]
    assert result.thread_done == [30, 10, 40]


# -- state transfer, buffers, completion ----------------------------------------------------------


def test_state_transfer_and_instance_cache():
    # One instance caching one state, transfer 5. 0p0 (0-10), 1p0 (10-20) evicts task 0;
    # 0p1 needs its state shipped: 20-35 and evicts task 1; 1p1 likewise: 35-50.
    threads = [[(0, 0, 10), (0, 0, 10)], [(1, 0, 10), (1, 0, 10)]]
    workload = workload_from_lists(threads)
    result = simulate(workload, SystemParams(instances=1, instance_cache=1, state_transfer_us=5,
                                             **FREE), WorkQueue()).metrics()
    assert result["makespan_us"] == 50
    assert (result["state_transfers"], result["state_transfer_us"]) == (2, 10)
    assert result["utilisation"] == pytest.approx(1.0)
    assert result["useful_utilisation"] == pytest.approx(0.8)
    # Two cached states: no transfer at all.
    result = simulate(workload, SystemParams(instances=1, instance_cache=2, state_transfer_us=5,
                                             **FREE), WorkQueue()).metrics()
    assert (result["makespan_us"], result["state_transfers"]) == (40, 0)


def test_buffer_spills_to_spare_then_host():
    # One thread with three interleaved tasks A, B, C (two parts each), one instance, no
    # instance cache, a thread area of 1 state and a spare of 1, transfer 5, refetch 7.
    # A0 0-10 -> thread area; B0 10-20 -> spare (spill); C0 20-30 -> host (spill).
    # A1 30-45 (transfer 5). B1 is taken at 45: A is finished and another task -> A read at
    # 45. B1 45-60. C1 taken at 60 -> B read; C1 pays 5 + 7: 60-82; end of stream: C at 82.
    threads = [[(0, 0, 10), (1, 0, 10), (2, 0, 10), (0, 0, 10), (1, 0, 10), (2, 0, 10)]]
    system = SystemParams(instances=1, instance_cache=0, state_transfer_us=5, per_thread=1,
                          spare=1, host_refetch_us=7, **FREE)
    result = simulate(workload_from_lists(threads), system, WorkQueue())
    metrics = result.metrics()
    assert metrics["makespan_us"] == 82
    assert (metrics["spills_spare"], metrics["spills_host"]) == (1, 1)
    assert (metrics["host_refetches"], metrics["state_transfers"]) == (1, 3)
    assert metrics["state_transfer_us"] == 5 + 5 + 12
    assert metrics["peak_spare"] == 1
    assert result.task_latency == [45, 60, 82]


def test_spare_space_is_reused_after_a_result_is_read():
    # Thread area 0, spare 1: task 0's state takes the spare, is read when thread 0 takes
    # task 1 (at 10), so task 1's state gets the spare too: no host spill.
    threads = [[(0, 0, 10), (1, 0, 10)]]
    system = SystemParams(instances=1, instance_cache=0, per_thread=0, spare=1, **FREE)
    metrics = simulate(workload_from_lists(threads), system, WorkQueue()).metrics()
    assert (metrics["spills_spare"], metrics["spills_host"]) == (2, 0)


def test_result_is_read_when_the_thread_moves_on():
    # One instance, batch 3: FIFO [0, 1, 2] at t=0. Task 0 (thread 0's only part) runs 0-10;
    # thread 0's next sub-task (task 1) waits until the FIFO empties at 40, when it is taken:
    # only then is task 0 complete and its result read: 30 µs after it finished. Task 1 runs
    # 70-80 and, at the end of thread 0's stream, is read at once.
    threads = [[(0, 0, 10), (1, 0, 10)], [(2, 0, 30)], [(3, 0, 30)]]
    workload = workload_from_lists(threads)
    seed = simulate(workload, ONE, SeedBatchDispatch("arrival", 3))
    latency = dict(zip((0, 2, 3, 1), seed.task_latency, strict=True))
    assert latency == {0: 40, 2: 40, 3: 70, 1: 80}
    assert sorted(seed.result_delay) == [0, 0, 0, 30]
    # The work queue takes thread 0's next sub-task as soon as it is ready (at 10).
    queue = simulate(workload, ONE, WorkQueue())
    assert queue.result_delay == [0, 0, 0, 0]


# -- invariants -----------------------------------------------------------------------------------


def _checker():
    workload = workload_from_lists([[(0, 0, 10), (0, 0, 10)], [(1, 0, 10)]])
    return workload, InvariantChecker(workload, SystemParams(per_thread=1, spare=1))


def test_checker_out_of_order():
    workload, checker = _checker()
    with pytest.raises(InvariantError, match="task 0 part 1 started out of order"):
        checker.on_start(workload.threads[0][1], 0, 0)


def test_checker_two_parts_at_once():
    workload, checker = _checker()
    checker.on_start(workload.threads[0][0], 0, 0)
    with pytest.raises(InvariantError, match="while another part of the task is running"):
        checker.on_start(workload.threads[0][1], 1, 0)


def test_checker_instance_double_booked_and_never_ran():
    workload, checker = _checker()
    checker.on_start(workload.threads[0][0], 0, 0)
    with pytest.raises(InvariantError, match="instance 0 started sub-task 2 while running 0"):
        checker.on_start(workload.threads[1][0], 0, 0)
    with pytest.raises(InvariantError, match="never ran"):
        checker.final(workload)


def test_checker_buffers_and_completion_rule():
    workload, checker = _checker()
    with pytest.raises(InvariantError, match="backup buffer over capacity"):
        checker.on_buffers(2, 0, 5)
    with pytest.raises(InvariantError, match="task 0 declared complete after 0 of 2"):
        checker.on_complete(0, 5)
    two_tasks = workload_from_lists([[(0, 0, 10), (0, 0, 10), (1, 0, 10)]])
    checker = InvariantChecker(two_tasks, SystemParams())
    first, _, third = two_tasks.threads[0]
    with pytest.raises(InvariantError, match="moved on to task 1 before task 0 finished"):
        checker.on_take(first, third, 5)


class _TwiceQueue(WorkQueue):
    """Broken on purpose: every ready thread is queued twice."""

    def on_ready(self, thread, now):
        super().on_ready(thread, now)
        self.queue.append(thread)


class _Lazy(WorkQueue):
    """Broken on purpose: never hands anything to an instance."""

    def pick(self, instance, now):
        return None


def test_broken_policy_is_caught():
    workload = workload_from_lists([[(0, 0, 10), (0, 0, 10)]])
    with pytest.raises(InvariantError, match="started twice"):
        simulate(workload, SystemParams(instances=2, **FREE), _TwiceQueue())


def test_stranded_work_is_reported_not_spun_on():
    workload = workload_from_lists([[(0, 0, 10)]])
    with pytest.raises(InvariantError, match="1 sub-tasks stranded"):
        simulate(workload, SystemParams(), _Lazy())
    assert simulate(workload, SystemParams(), _Lazy(), debug=False).unfinished == 1
    # A time limit ends a run with the work left counted: parts end at 10, 20, 30; at 15 one
    # has finished, one is running and one waits.
    long = workload_from_lists([[(0, 0, 10), (0, 0, 10), (0, 0, 10)]])
    result = simulate(long, ONE, WorkQueue(), max_time_us=15)
    assert (result.subtasks_run, result.unfinished) == (1, 2)


@pytest.mark.parametrize("stem", ["transcode", "skewed", "live_spills", "priority"])
def test_shipped_scenarios_hold_every_invariant(stem):
    scenario = load_scenario(cli.CONFIG_ROOT / "hostsched" / f"{stem}.toml")
    workload = generate_workload(scenario, random.Random(3), scale=0.25)
    compute = None
    for policy in make_policies(scenario, len(workload.threads), seed=3):
        result = simulate(workload, scenario.system, policy,   # debug: checker on
                          pack_gb_s=scenario.pack_gb_s)
        assert result.unfinished == 0
        assert result.subtasks_run == len(workload.subtasks)
        # The same work whatever the policy.
        assert compute in (None, sum(result.compute))
        compute = sum(result.compute)


def test_seed_beats_static_binding_on_skewed_loads():
    scenario = load_scenario(cli.CONFIG_ROOT / "hostsched" / "skewed.toml")
    workload = generate_workload(scenario, random.Random(1))
    seed = simulate(workload, scenario.system, SeedBatchDispatch("arrival", scenario.batch))
    static = simulate(workload, scenario.system, StaticBinding())
    assert seed.metrics()["utilisation"] > static.metrics()["utilisation"] + 0.2


# -- what moving data costs: per sub-task for the baselines, per batch for the seed ---------------


def test_batch_costs_packing_and_one_dma():
    # One instance, two 100-us sub-tasks of 1 MB input each; no states. Link 15.75 GB/s:
    # one input 63.5 -> 64 us, both 127 us; a DMA costs 10 us more.
    # Seed (batch 2): refill 20 us, packing 2 MB at 10 GB/s = 200 us, one DMA 10 + 127:
    # the batch lands at 357; 0 runs 357-457, 1 457-557. The instance waits for nothing.
    # Work queue: each sub-task's own DMA, 10 + 64 = 74 us, on the instance: 0-174, 174-348.
    threads = [[(0, 0, 100)], [(1, 0, 100)]]
    system = SystemParams(instances=1, instance_cache=0, state_bytes=0, input_bytes=1_000_000,
                          dma_setup_us=10)
    workload = workload_from_lists(threads)
    seed = simulate(workload, system, SeedBatchDispatch("arrival", 2), pack_gb_s=10.0,
                    refill_us=20)
    metrics = seed.metrics()
    assert (seed.makespan, metrics["host_pack_us"], metrics["batch_dma_us"]) == (557, 220, 137)
    assert metrics["transfer_utilisation"] == 0 and metrics["useful_utilisation"] == 200 / 557
    queue = simulate(workload, system, WorkQueue()).metrics()
    assert queue["makespan_us"] == 348
    assert queue["transfer_utilisation"] == pytest.approx(148 / 348)
    assert queue["utilisation"] == pytest.approx(queue["useful_utilisation"]
                                                 + queue["transfer_utilisation"])


@pytest.mark.parametrize(("ship_state", "makespan", "instance_transfer"), [
    # A task of two parts on one instance that caches nothing; state 1 MB (64 us), no input.
    # always: each part is packed and sent in its own batch (the second one with the state:
    # 10 + 64); 0p0 0-100, the next batch lands at 100 + 74 = 174, 0p1 174-274.
    ("always", 274, 0),
    # on-miss: nothing to pack; the instance fetches the state itself: 0p1 100-274 too, the
    # 74 us now counted as the instance's transfer time.
    ("on-miss", 274, 74),
])
def test_the_seed_ships_the_state_with_every_part(ship_state, makespan, instance_transfer):
    threads = [[(0, 0, 100), (0, 0, 100)]]
    system = SystemParams(instances=1, instance_cache=0, state_bytes=1_000_000, input_bytes=0,
                          dma_setup_us=10)
    policy = SeedBatchDispatch("arrival", 2, ship_state)
    result = simulate(workload_from_lists(threads), system, policy).metrics()
    assert result["makespan_us"] == makespan
    assert result["state_transfer_us"] == instance_transfer
    assert result["state_transfers"] == 1


def test_random_binding_is_balanced_and_drawn_per_seed():
    first = binding_for(10, 4, seed=1)
    assert sorted(first.count(instance) for instance in range(4)) == [2, 2, 3, 3]
    assert first == binding_for(10, 4, seed=1) and first != binding_for(10, 4, seed=2)
    policy = StaticBinding(first)
    threads = [[(thread, 0, 10)] for thread in range(10)]
    starts, _ = _starts(workload_from_lists(threads), SystemParams(instances=4, **FREE), policy)
    assert all(instance == first[task] for _, task, _, instance in starts)
    with pytest.raises(ValueError, match="a random static binding needs"):
        make_policies(Scenario(name="x"))
    with pytest.raises(ValueError, match=r"binding\[1\] must be an instance number"):
        StaticBinding([0, -1])


def test_api_arguments_are_checked():
    with pytest.raises(ValueError, match="SystemParams.state_bytes must be an integer >= 0"):
        SystemParams(state_bytes=-1)
    with pytest.raises(ValueError, match="SystemParams.link_gb_s must be a positive number"):
        SystemParams(link_gb_s=0)
    with pytest.raises(ValueError, match="ship_state must be one of always, on-miss"):
        SeedBatchDispatch("arrival", 8, "sometimes")
    workload = workload_from_lists([[(0, 0, 10)]])
    with pytest.raises(ValueError, match="pack_gb_s must be a number >= 0"):
        simulate(workload, ONE, WorkQueue(), pack_gb_s=-1)
    with pytest.raises(TypeError, match="workload must be a Workload"):
        simulate([[(0, 0, 10)]], ONE, WorkQueue())


def test_claims_over_seeds_and_the_binding():
    group = ThreadGroup(count=6, tasks=(1, 2), subtasks=(2, 4), duration_us=(1000, 3000))
    scenario = Scenario(name="tiny", system=SystemParams(instances=2, **FREE), batch=3,
                        groups=(group,))
    claim = Claim("tiny", "beats static", "makespan ms", "seed003-arrival", "static-rr",
                  lambda m: m["makespan_us"] / 1e3, False,
                  Variant("round-robin binding", lambda s: s))
    (row,) = evaluate_claims([scenario], seeds=3, claims=[claim])
    assert row["comparison"]["verdict"] in VERDICTS and row["seeds"] == [1, 2, 3]
    assert row["comparison"]["policy"]["count"] == 3


# -- workload and configuration -------------------------------------------------------------------


def test_generated_streams_interleave_and_repeat():
    group = ThreadGroup(count=1, tasks=(2, 2), subtasks=(2, 2), duration_us=(5, 5),
                        interval_us=10, streams=2, start_us=(3, 3), priority=4)
    scenario = Scenario(name="x", groups=(group,))
    workload = generate_workload(scenario, random.Random(0))
    # Task 0 on lane 0, task 1 on lane 1; each lane's parts arrive at 3 and 13.
    assert [(sub.task, sub.index, sub.arrival, sub.last) for sub in workload.threads[0]] == [
        (0, 0, 3, False), (1, 0, 3, False), (0, 1, 13, True), (1, 1, 13, True)]
    assert {sub.priority for sub in workload.subtasks} == {4}
    assert generate_workload(scenario, random.Random(0)) == workload


def test_workload_from_lists_rejects_bad_input():
    with pytest.raises(ValueError, match="task 0 appears in threads 0 and 1"):
        workload_from_lists([[(0, 0, 1)], [(0, 0, 1)]])
    with pytest.raises(ValueError, match="arrival 3 is before the previous sub-task's 5"):
        workload_from_lists([[(0, 5, 1), (0, 3, 1)]])
    with pytest.raises(ValueError, match="duration must be positive, not 0"):
        workload_from_lists([[(0, 0, 0)]])


def test_policy_parameters_are_checked():
    with pytest.raises(ValueError, match="Order must be one of arrival, priority, not 'fifo'"):
        SeedBatchDispatch("fifo")
    with pytest.raises(ValueError, match="Batch must be a positive integer, not 0"):
        SeedBatchDispatch("arrival", 0)


def _write(tmp_path, text):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    return path


THREADS = "[[threads]]\ncount = 2\n"


@pytest.mark.parametrize(("text", "message"), [
    ("[system]\ninstances = 0\n" + THREADS,
     "system.instances must be an integer >= 1, not 0"),
    ("[buffers]\nspare = -1\n" + THREADS, "buffers.spare must be an integer >= 0, not -1"),
    ("[dispatch]\norder = \"fifo\"\n" + THREADS,
     "dispatch.order must be a string (one of 'arrival', 'priority', 'both'), not 'fifo'"),
    (THREADS + "subtasks = [5, 2]\n",
     "threads[0].subtasks must be [min, max] with min <= max, not [5, 2]"),
    (THREADS + "duration_us = [0, 2]\n",
     "threads[0].duration_us[0] must be an integer >= 1, not 0"),
    (THREADS + "priority = 16\n", "threads[0].priority must be an integer in 0..15, not 16"),
    (THREADS + "colour = 1\n", "threads[0].colour is not a known field; threads[0] accepts: "
                               "count, duration_us, interval_us, priority, start_us, streams, "
                               "subtasks, tasks"),
    ("[system]\ninstanses = 4\n" + THREADS,
     "system.instanses is not a known field (did you mean 'instances'?); system accepts: "
     "dma_setup_us, input_bytes, instance_cache, instances, link_gb_s, state_bytes, "
     "state_transfer_us"),
    ("threads = []\n", "threads must list at least one thread group"),
    ("[dispatch]\nbatch = 4\n" + THREADS,
     "dispatch.batch must be greater than system.instances (4): the seed's target threads "
     "outnumber the instances ([0007]), not 4"),
    ("[dispatch]\nship_state = \"never\"\n" + THREADS,
     "dispatch.ship_state must be a string (one of 'always', 'on-miss'), not 'never'"),
    ("[static]\nbinding = \"sorted\"\n" + THREADS,
     "static.binding must be a string (one of 'random', 'round-robin'), not 'sorted'"),
    ("description = \"none\"\n", "threads is required"),
])
def test_config_errors_name_the_field(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_scenario(path)
    assert str(error.value) == f"{path}: {message}"


def test_config_defaults(tmp_path):
    scenario = load_scenario(_write(tmp_path, "[system]\ninstances = 3\n" + THREADS))
    assert scenario.batch == 6
    assert scenario.orders == ("arrival", "priority")
    assert scenario.system == SystemParams(instances=3)
    assert scenario.groups == (ThreadGroup(count=2),)


# -- command line ---------------------------------------------------------------------------------


def test_cli_quick(tmp_path, capsys):
    out = tmp_path / "hostsched.json"
    events = tmp_path / "events.csv"
    assert cli.main(["hostsched", "--quick", "--quiet", "--json", str(out),
                     "--plots", str(tmp_path), "--seeds", "2", "--events", str(events)]) == 0
    report = json.loads(out.read_text())
    assert report["time_unit"] == "us"
    assert set(report["scenarios"]) == {"transcode", "skewed", "live_spills", "priority"}
    for name, scenario in report["scenarios"].items():
        assert (tmp_path / f"hostsched_{name}.png").stat().st_size > 0
        assert {"static-rr", "work-queue", "seed003-arrival"} <= set(scenario["policies"])
        assert "seed003-arrival" in scenario["utilisation_gain_over_static"]
    assert "vs static-rr" in capsys.readouterr().out
    assert len(report["claims"]) >= 5 and report["crossover"]["caches"]
    assert (tmp_path / "hostsched_sweeps.png").stat().st_size > 0
    lines = events.read_text().splitlines()
    assert lines[0] == "scenario,policy,time_us,event,thread,task,part,instance,detail"
    assert {line.split(",")[3] for line in lines[1:]} >= {"take", "batch", "start", "finish",
                                                           "result"}


def test_cli_bad_config_exits_2(tmp_path, capsys):
    path = _write(tmp_path, "[system]\ninstances = 0\n" + THREADS)
    assert cli.main(["hostsched", "--quiet", "--config", str(path),
                     "--plots", str(tmp_path)]) == 2
    assert "system.instances must be an integer >= 1" in capsys.readouterr().err


def test_policy_names_are_the_policies_made():
    # --policy is checked against policy_names before any workload exists.
    from model.hostsched.policies import make_policies, policy_names

    for path in cli.default_configs("hostsched"):
        scenario = load_scenario(path)
        assert policy_names(scenario) == [policy.name for policy in
                                          make_policies(scenario, 8, seed=1)]
