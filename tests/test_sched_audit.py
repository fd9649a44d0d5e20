"""Seeds 000, 001 and 003 after the audit (issue 33): the task scheduler's reservation livelock
detected and resolved, the reservation-idle share bounded, every Python API checked as the
command line checks, ``run()`` giving the command line's numbers, and the README's corrected
statements kept true. Over 600 lines because of one table: ``BAD_CALLS``, a bad call per gap
the audits found in the three packages' public APIs, one row each."""

import dataclasses
import json
import random
import re
import shutil
from pathlib import Path

import pytest

import model.hostsched as hostsched
import model.procsched as procsched
import model.tasksched as tasksched
from model.cli import CONFIG_ROOT, main
from model.config import ConfigError
from model.hostsched import claims as hostsched_claims
from model.hostsched import point as hostsched_point
from model.hostsched import policies as hostsched_policies
from model.procsched import point as procsched_point
from model.tasksched import point as tasksched_point

ROOT = Path(__file__).resolve().parent.parent
LIVELOCK = CONFIG_ROOT / "tasksched" / "reservation_livelock.toml"


def _with(scenario, **changes):
    return dataclasses.replace(scenario, scheduler=dataclasses.replace(scenario.scheduler,
                                                                       **changes))


# -- seed 001: the livelock ---------------------------------------------------------------------


@pytest.mark.parametrize("policy", tasksched.POLICIES)
def test_the_seed_rules_livelock_and_the_run_reports_it(policy):
    scenario = tasksched.load_scenario(LIVELOCK)
    result = tasksched.simulate(scenario, policy, seed=3)
    assert result["stopped"] == "livelock"
    livelock = result["livelock"]
    assert livelock["failures"] >= scenario.scheduler.livelock_rounds
    assert livelock["beat"] - livelock["since"] >= (scenario.scheduler.livelock_rounds
                                                   * scenario.scheduler.timeout)
    assert result["completed"] == 0 and len(result["unfinished"]) == result["admitted"] == 16
    assert result["beats"] < 3000                        # stopped, not run to max_beats
    assert 0 <= result["reserved_idle"] <= 1


def test_without_detection_the_livelock_runs_to_the_cap_and_the_share_stays_bounded():
    scenario = _with(tasksched.load_scenario(LIVELOCK), livelock_rounds=0, max_beats=20_000)
    result = tasksched.simulate(scenario, "delay-factor", seed=1)
    assert result["stopped"] == "max_beats" and result["livelock"] is None
    assert result["completed"] == 0 and result["schedule_failures"] > 500
    assert 0.9 < result["reserved_idle"] <= 1


@pytest.mark.parametrize("policy", ["delay-factor", "fifo-rr"])
def test_oldest_first_reservations_resolve_the_livelock(policy):
    scenario = _with(tasksched.load_scenario(LIVELOCK), reserve_order="oldest-first")
    for seed in (1, 2):
        result = tasksched.simulate(scenario, policy, seed=seed, check=True)
        assert result["stopped"] == "completed", (policy, seed)
        assert result["completed"] == result["admitted"] == 16


def test_oldest_first_takes_processors_from_younger_tasks_only():
    scenario = _with(tasksched.load_scenario(LIVELOCK), reserve_order="oldest-first")
    events: list = []
    tasksched.simulate(scenario, "delay-factor", seed=1, events=events)
    taken = [event for event in events if event[1] == "reserve" and "taken from" in event[5]]
    assert taken                                         # the resolution is exercised
    ids = {event[2]: int(event[5].split()[-1]) for event in events if event[1] == "register"}
    for _, _, task, _, _, detail in taken:
        assert ids[detail.split()[-1]] > ids[task]        # a younger task gives way


def test_reserved_idle_is_a_share_of_the_time_simulated():
    """One task completes early, then the gang livelocks: the share was taken over the
    makespan (the last completion, beat ~30) and read 55,704 % before the fix."""
    data = {"scheduler": {"match_jobs_per_beat": 1, "livelock_rounds": 0, "max_beats": 20_000},
            "arbiter": {"slots": 4}, "processors": [{"type": "vector", "count": 12}],
            "streams": [{"name": "early", "class": "event", "processor": "vector",
                         "count": 1, "jobs": 2, "job_beats": 10},
                        {"name": "gang", "class": "block", "processor": "vector", "count": 16,
                         "jobs": 8, "job_beats": [10, 60], "start": 200}]}
    result = tasksched.simulate(tasksched.parse_scenario(data), "delay-factor", seed=1)
    assert result["completed"] == 1 and result["stopped"] == "max_beats"
    assert 0.9 < result["reserved_idle"] <= 1
    assert 0 <= result["utilisation"] <= 1


def test_no_livelock_is_reported_while_a_processor_runs_a_long_job():
    """Tasks fail round after round while both processors run 6000-beat jobs: that is
    waiting, not a livelock, and every task completes."""
    data = {"scheduler": {"timeout": 128},
            "processors": [{"type": "dsp", "count": 2}],
            "streams": [{"name": "long", "class": "block", "processor": "dsp", "count": 1,
                         "jobs": 2, "job_beats": 6000},
                        {"name": "short", "class": "event", "processor": "dsp", "count": 4,
                         "jobs": 2, "job_beats": 10, "start": 50}]}
    result = tasksched.simulate(tasksched.parse_scenario(data), "delay-factor", seed=1)
    assert result["schedule_failures"] > 16
    assert result["stopped"] == "completed" and result["livelock"] is None


def test_a_livelock_of_one_type_is_reported_while_another_type_works():
    """Gang tasks livelock on the vector processors from beat 0 while a periodic stream keeps
    the DSPs busy: the detector counted all processors and reported nothing until the stream
    ended (beat ~17,000 here; never with a stream to max_beats). Per type: at once."""
    data = {"scheduler": {"match_jobs_per_beat": 1, "max_beats": 20_000},
            "processors": [{"type": "v", "count": 8}, {"type": "d", "count": 2}],
            "streams": [{"name": "gang", "class": "block", "processor": "v", "count": 6,
                         "jobs": 8, "job_beats": [10, 60]},
                        {"name": "tick", "class": "event", "processor": "d", "count": 100,
                         "jobs": 2, "job_beats": 20, "arrival": "periodic", "gap": 150}]}
    scenario = tasksched.parse_scenario(data)
    result = tasksched.simulate(scenario, "fifo-rr", seed=1)
    assert result["stopped"] == "livelock" and result["beats"] < 3000
    assert result["livelock"]["processor"] == "v" and result["completed"] > 0
    assert result["livelock"]["tasks"] == sorted(f"gang#{index}" for index in range(6))
    fixed = tasksched.simulate(_with(scenario, reserve_order="oldest-first"), "fifo-rr")
    assert fixed["stopped"] == "completed"


def test_random_scenarios_livelock_only_under_the_seed_rules():
    """Random scenarios of the audit's kind (match 1 or 4 jobs a beat, reservation and the
    all-jobs gate): some livelock under the seed's rules, none with oldest-first."""
    livelocks = 0
    for trial in range(12):
        rng = random.Random(trial)
        processors = rng.choice([4, 8, 12, 16])
        jobs = rng.choice([job for job in (4, 8, 16) if job <= processors])
        data = {"scheduler": {"match_jobs_per_beat": rng.choice([1, 4]), "max_beats": 50_000},
                "arbiter": {"slots": rng.choice([2, 4, 8])},
                "processors": [{"type": "v", "count": processors}],
                "streams": [{"name": "s", "class": "block", "processor": "v",
                             "count": rng.randint(8, 24), "jobs": jobs,
                             "job_beats": [10, rng.randint(10, 100)]}]}
        scenario = tasksched.parse_scenario(data)
        livelocks += tasksched.simulate(scenario, "fifo-rr")["stopped"] == "livelock"
        fixed = tasksched.simulate(_with(scenario, reserve_order="oldest-first"), "fifo-rr")
        assert fixed["stopped"] == "completed", trial
    assert livelocks >= 2


def test_the_new_scheduler_fields_are_checked(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(LIVELOCK.read_text().replace('reserve_order = "concurrent"',
                                                 'reserve_order = "youngest"'))
    with pytest.raises(ConfigError, match=r"scheduler.reserve_order must be a string \(one of"):
        tasksched.load_scenario(path)
    path.write_text(LIVELOCK.read_text().replace("livelock_rounds = 16", "livelock_rounds = -1"))
    with pytest.raises(ConfigError, match="scheduler.livelock_rounds must be an integer >= 0"):
        tasksched.load_scenario(path)
    with pytest.raises(ValueError, match="reserve_order must be one of"):
        tasksched.SchedulerConfig(reserve_order="sometimes")


# -- the Python APIs check their arguments ------------------------------------------------------


def _procsched_result():
    scenario = procsched.Scenario(name="t", groups=(procsched.TaskGroup(count=3, priority=1,
                                                                       work_us=(1000, 2000)),))
    specs = procsched.generate_tasks(scenario, random.Random(1))
    return procsched.simulate(specs, procsched.make_policy("seed", scenario), 10)


def test_procsched_measure_refuses_a_zero_fairness_window():
    with pytest.raises(ValueError, match=r"fairness_window_us must be an integer >= 1, not 0"):
        procsched.measure(_procsched_result(), fairness_window_us=0)
    with pytest.raises(TypeError, match=r"result must be a Result"):
        procsched.measure({"switches": 0})


@pytest.mark.parametrize(("build", "error", "words"), [
    (lambda: procsched.Scenario(name="t", t0_us=0), ValueError, "Scenario.t0_us"),
    (lambda: procsched.Scenario(name="t", t0_us=2.5), TypeError, "Scenario.t0_us"),
    (lambda: procsched.Scenario(name="t", cache_tasks=0), ValueError, "Scenario.cache_tasks"),
    (lambda: procsched.Scenario(name="t", fairness_window_us=0), ValueError,
     "Scenario.fairness_window_us"),
    (lambda: procsched.Scenario(name="t", policies=("seed", "lottery")), ValueError,
     "Scenario.policies"),
    (lambda: procsched.Scenario(name="t", policies=("timeshare-mean",)), ValueError,
     "'seed' before 'timeshare-mean'"),
    (lambda: procsched.Scenario(name="t", groups=({"count": 1},)), TypeError,
     r"Scenario.groups\[0\] must be a TaskGroup"),
    (lambda: procsched.TaskGroup(count=1, priority=16), ValueError, "TaskGroup.priority"),
    (lambda: procsched.TaskGroup(count=1, priority=-1), ValueError, "TaskGroup.priority"),
    (lambda: procsched.TaskGroup(count=0, priority=0), ValueError, "TaskGroup.count"),
    (lambda: procsched.TaskGroup(count=1, priority=0, work_us=(5, 1)), ValueError,
     "TaskGroup.work_us"),
    (lambda: procsched.TaskGroup(count=1, priority=0, spacing="burst"), ValueError,
     "TaskGroup.spacing"),
    (lambda: procsched.GpuContext(bandwidth_gb_s=0), ValueError, "GpuContext.bandwidth_gb_s"),
    (lambda: procsched.GpuContext(switch_us=-1), ValueError, "GpuContext.switch_us"),
])
def test_procsched_config_classes_check_their_fields(build, error, words):
    with pytest.raises(error, match=words):
        build()


def _stream(**changes):
    fields = dict(name="s", task_class="block", weight=1, processor="v", count=1, jobs=4,
                  job_bytes=256, job_beats=(32, 32), arrival="burst", start=0, gap=0,
                  chain=False, after=None)
    return tasksched.Stream(**{**fields, **changes})


@pytest.mark.parametrize(("changes", "error", "words"), [
    ({"jobs": 3}, ValueError, "Stream.jobs must be a power of two"),
    ({"jobs": 1}, ValueError, "Stream.jobs"),
    ({"weight": 0}, ValueError, "Stream.weight"),
    ({"task_class": "batch"}, ValueError, "Stream.task_class"),
    ({"job_beats": (5, 1)}, ValueError, "Stream.job_beats"),
    ({"arrival": "poisson", "gap": 0}, ValueError, "Stream.gap"),
    ({"count": "2"}, TypeError, "Stream.count"),
    ({"chain": 1}, TypeError, "Stream.chain"),
])
def test_tasksched_stream_checks_its_fields(changes, error, words):
    with pytest.raises(error, match=words):
        _stream(**changes)


def test_tasksched_scenario_checks_what_the_reader_checks():
    base = tasksched.load_scenario(LIVELOCK)
    with pytest.raises(ValueError, match=r"streams\[1\].name must be unique"):
        dataclasses.replace(base, streams=(_stream(), _stream()))
    with pytest.raises(ValueError, match=r"streams\[0\].after must name a stream listed"):
        dataclasses.replace(base, streams=(_stream(after="later"),))
    with pytest.raises(ValueError, match="Scenario.processors must list at least one"):
        dataclasses.replace(base, processors=())
    with pytest.raises(ValueError, match=r"ProcessorGroup.count"):
        tasksched.ProcessorGroup("v", 0, 4, 256)
    with pytest.raises(ValueError, match=r"processors\[1\].word_bytes must be 4"):
        dataclasses.replace(base, processors=(tasksched.ProcessorGroup("v", 2, 4, 256),
                                              tasksched.ProcessorGroup("v", 2, 8, 256)))


def _host_run_inputs():
    scenario = hostsched.Scenario(name="t", groups=(hostsched.ThreadGroup(count=3),))
    workload = hostsched.generate_workload(scenario, random.Random(1))
    return scenario, workload


def test_hostsched_simulate_checks_its_policy_and_time_limit():
    scenario, workload = _host_run_inputs()
    with pytest.raises(TypeError, match="policy must be a Policy"):
        hostsched.simulate(workload, scenario.system, "seed003-arrival")
    policy = hostsched.make_policies(scenario, len(workload.threads))[0]
    with pytest.raises(ValueError, match="max_time_us must be an integer >= 1, not -5"):
        hostsched.simulate(workload, scenario.system, policy, max_time_us=-5)


@pytest.mark.parametrize(("build", "error", "words"), [
    (lambda: hostsched.ThreadGroup(count=0), ValueError, "ThreadGroup.count"),
    (lambda: hostsched.ThreadGroup(count=0, duration_us=(5, 1)), ValueError,
     "ThreadGroup.count"),
    (lambda: hostsched.ThreadGroup(count=1, duration_us=(5, 1)), ValueError,
     r"ThreadGroup.duration_us must be a \(least, most\) pair"),
    (lambda: hostsched.ThreadGroup(tasks=(0, 2)), ValueError, "ThreadGroup.tasks"),
    (lambda: hostsched.ThreadGroup(start_us=(-1, 0)), ValueError, "ThreadGroup.start_us"),
    (lambda: hostsched.ThreadGroup(priority=16), ValueError, "ThreadGroup.priority"),
    (lambda: hostsched.ThreadGroup(subtasks=4), TypeError, "ThreadGroup.subtasks"),
    (lambda: hostsched.Scenario(name="t", batch=4), ValueError, "Scenario.batch"),
    (lambda: hostsched.Scenario(name="t", orders=("fifo",)), ValueError, "Scenario.orders"),
    (lambda: hostsched.Scenario(name="t", binding="hash"), ValueError, "Scenario.binding"),
    (lambda: hostsched.Scenario(name="t", groups=()), ValueError, "Scenario.groups"),
])
def test_hostsched_config_classes_check_their_fields(build, error, words):
    with pytest.raises(error, match=words):
        build()


# -- run(): the command line's numbers from Python ----------------------------------------------


COMMANDS = [
    (procsched, "procsched", "crowded_pool", "seed"),
    (tasksched, "tasksched", "dependency_chains", "delay-factor"),
    (hostsched, "hostsched", "transcode", "seed003-arrival"),
]


@pytest.mark.parametrize(("module", "command", "scenario", "policy"), COMMANDS)
def test_run_gives_the_command_lines_numbers(tmp_path, module, command, scenario, policy):
    # A copy under another name: the command then runs no claims or sweeps of the shipped one.
    path = tmp_path / f"copy_{scenario}.toml"
    shutil.copy(CONFIG_ROOT / command / f"{scenario}.toml", path)
    out = tmp_path / "out.json"
    assert main([command, "--quiet", "--quick", "--config", str(path), "--policy", policy,
                 "--seed", "2", "--json", str(out), "--plots", str(tmp_path)]) == 0
    written = json.loads(out.read_text())["scenarios"][path.stem]["policies"][policy]
    results = module.run(path, policy, seed=2, quick=True)
    assert results.claims is None and list(results.policies) == [policy]
    mine = json.loads(json.dumps(results[policy]))
    shared = [key for key in written if key in mine]
    assert len(shared) >= 15
    assert {key: mine[key] for key in shared} == {key: written[key] for key in shared}


def test_run_takes_the_scenarios_settings_unless_overridden():
    default = tasksched.run(LIVELOCK, "fifo-rr")
    assert default["fifo-rr"]["stopped"] == "livelock"
    resolved = tasksched.run(LIVELOCK, "fifo-rr", reserve_order="oldest-first")
    assert resolved.scenario.scheduler.reserve_order == "oldest-first"
    assert resolved["fifo-rr"]["stopped"] == "completed"
    both = procsched.run(CONFIG_ROOT / "procsched" / "crowded_pool.toml", quick=True,
                         t0_us=20_000)
    assert both.scenario.t0_us == 20_000 and list(both.policies) == list(both.scenario.policies)


@pytest.mark.parametrize("module", [procsched, tasksched, hostsched])
def test_run_checks_its_arguments(module):
    command = module.__name__.split(".")[-1]
    path = next((CONFIG_ROOT / command).glob("*.toml"))
    with pytest.raises(TypeError, match="scenario_or_path must be"):
        module.run(42)
    with pytest.raises(ValueError, match="policy must be None or one of"):
        module.run(path, "lottery")
    with pytest.raises(TypeError, match="seed must be an integer or None"):
        module.run(path, seed="1")
    with pytest.raises(TypeError, match="quick must be True or False"):
        module.run(path, quick=1)
    with pytest.raises(ValueError, match="seeds must be an integer >= 2"):
        module.run(path, seeds=1)
    with pytest.raises(TypeError, match="unknown setting.*'tiemout'"):
        module.run(path, tiemout=3)
    with pytest.raises(ConfigError):
        module.run(path.with_name("no_such_file.toml"))


def test_run_checks_an_overridden_setting():
    with pytest.raises(ValueError, match="timeout must be an integer >= 1"):
        tasksched.run(LIVELOCK, timeout=0)
    with pytest.raises(ValueError, match="Scenario.t0_us"):
        procsched.run(CONFIG_ROOT / "procsched" / "crowded_pool.toml", t0_us=0)
    with pytest.raises(ValueError, match="Scenario.batch"):
        hostsched.run(CONFIG_ROOT / "hostsched" / "transcode.toml", instances=64)


# -- seed 003: the batch sizes the model runs ---------------------------------------------------


def test_short_batches_are_counted():
    """The configured batch exceeds the instances, but a batch holds only the threads with a
    sub-task ready ([0091]): most of ``skewed``'s batches are no larger than the instances."""
    metrics = hostsched.run(CONFIG_ROOT / "hostsched" / "skewed.toml", "seed003-arrival",
                            quick=True)["seed003-arrival"]
    assert 0 < metrics["short_batches"] <= metrics["batches"]
    assert metrics["short_batches"] / metrics["batches"] > 0.5


# -- the README's statements --------------------------------------------------------------------


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"### {title}")
    end = text.index("\n### ", start + 1)
    return text[start:end]


def test_readme_seed_000_reports_the_switch_rate_claim_and_no_longer_says_as_rarely():
    section = _section("Seed 000")
    assert "switches as\nrarely" not in section and "switches as rarely" not in section
    row = next(line for line in section.splitlines()
               if line.startswith("|") and "fewer switches than round-robin" in line)
    assert re.search(r"\d+\.\d+ \[\d+\.\d+, \d+\.\d+\] \| \d+\.\d+ \[\d+\.\d+, \d+\.\d+\] \| "
                     r"holds", row), row
    claims = [claim for claim in procsched.CLAIMS if claim.metric == "switches/s"
              and claim.baseline == "timeshare-mean"]
    assert claims and claims[0].scenario in row
    # The baseline's description said "the seed's switch rate" too (the audit's second look).
    docs = " ".join((ROOT / "docs" / "procsched.md").read_text().split())
    assert "the seed's switch rate without" not in docs
    assert "It does not switch as rarely as the seed" in docs
    assert "switch rate without" not in procsched.make_policy.__doc__


def test_readme_seed_001_states_when_the_timeout_applies_and_the_livelock():
    section = _section("Seed 001")
    flat = " ".join(section.split())
    assert "until it is sent or the 128/256-beat timeout releases it" not in flat
    assert "only until all the task's jobs have matched" in flat
    assert "livelock" in flat and "reserve_order" in flat and "match_jobs_per_beat" in flat


def test_readme_seed_003_says_how_full_a_batch_is():
    flat = " ".join(_section("Seed 003").split())
    assert "(smaller batches are refused" not in flat
    assert "[0091]" in flat
    assert re.search(r"\d+ % \[\d+, \d+\] of `transcode`'s batches", flat)


def test_readme_says_servable_tasks_are_retried_and_a_livelock_reported():
    """The overview's "reports an item that can never be served instead of retrying it" is
    true only with the livelock reported: seed 001's section says so, and the model does."""
    flat = " ".join(_section("Seed 001").split())
    assert "A task that can be served is retried after every failure" in flat
    assert 'stops and reports it (`stopped = "livelock"`)' in flat
    result = tasksched.run(LIVELOCK, "delay-factor")["delay-factor"]
    assert result["stopped"] == "livelock" and result["beats"] < result["livelock"]["beat"] + 2


# -- the other public functions check their arguments too ---------------------------------------


def _taskspec(**changes):
    fields = dict(index=0, name="x#0", stream="x", task_class=0, weight=1, processor="v",
                  jobs=4, job_words=1, durations=(5,) * 4, arrival=0, predecessors=())
    return tasksched.TaskSpec(**{**fields, **changes})


def _tiny_workload():
    return hostsched.workload_from_lists([[(0, 0, 10)]])


def _scenarios():
    return (tasksched.load_scenario(CONFIG_ROOT / "tasksched" / "dependency_chains.toml"),
            procsched.Scenario.from_toml(CONFIG_ROOT / "procsched" / "crowded_pool.toml"),
            hostsched.load_scenario(CONFIG_ROOT / "hostsched" / "transcode.toml"))


BAD_CALLS = [
    ("decompose(4, 0)", lambda t, p, h: tasksched.decompose(4, 0), ValueError, "word_bytes"),
    ("decompose(0, 4)", lambda t, p, h: tasksched.decompose(0, 4), ValueError, "job_bytes"),
    ("build_workload quick", lambda t, p, h: tasksched.build_workload(t, 1, quick="y"),
     TypeError, "quick"),
    ("tasksched admit", lambda t, p, h: tasksched.admit("x", []), TypeError, "scenario"),
    ("tasksched claims", lambda t, p, h: tasksched.evaluate_claims(t), TypeError, "scenarios"),
    ("generate_tasks rng", lambda t, p, h: procsched.generate_tasks(p, 1), TypeError, "rng"),
    ("generate_tasks scenario", lambda t, p, h: procsched.generate_tasks("x", random.Random()),
     TypeError, "scenario"),
    ("make_policy scenario", lambda t, p, h: procsched.make_policy("seed", "x"), TypeError,
     "scenario"),
    ("procsched simulate policy", lambda t, p, h: procsched.simulate([], "seed", 0), TypeError,
     "policy must be a policy object"),
    ("procsched run_policies seed", lambda t, p, h: procsched.run_policies(p, "1", ["seed"]),
     TypeError, "seed"),
    ("generate_workload rng", lambda t, p, h: hostsched.generate_workload(h, 1), TypeError,
     "rng"),
    ("generate_workload scale", lambda t, p, h: hostsched.generate_workload(
        h, random.Random(1), scale=0), ValueError, "scale"),
    ("make_policies", lambda t, p, h: hostsched.make_policies("x"), TypeError, "scenario"),
    ("binding_for", lambda t, p, h: hostsched.binding_for(4, 0, 1), ValueError, "instances"),
    ("crossover seeds", lambda t, p, h: hostsched.crossover(h, seeds=1), ValueError, "seeds"),
    ("batch_sweep seeds", lambda t, p, h: hostsched.batch_sweep(h, seeds=1), ValueError,
     "seeds"),
    # The independent audit's calls (each failed before: accepted, or an error naming nothing).
    ("P description", lambda t, p, h: dataclasses.replace(p, description=5), TypeError,
     "Scenario.description must be a string"),
    ("P task budget", lambda t, p, h: dataclasses.replace(p, groups=(procsched.TaskGroup(
        count=10**9, priority=0),)), ValueError, "Scenario.groups must hold at most 100,000"),
    ("P bandwidth below the reader's", lambda t, p, h: procsched.GpuContext(
        bandwidth_gb_s=1e-9), ValueError, "GpuContext.bandwidth_gb_s must be a number >= 0.001"),
    ("select_for_cache pool", lambda t, p, h: procsched.select_for_cache(None, 0, 1),
     TypeError, "pool must be a list of tasks"),
    ("select_for_cache item", lambda t, p, h: procsched.select_for_cache([1], 0, 1), TypeError,
     r"pool\[0\] must be a task"),
    ("select_for_cache now", lambda t, p, h: procsched.select_for_cache(
        [procsched.Task(procsched.TaskSpec(0, 0, 0, 1))] * 2, "x", 1), TypeError, "now_us"),
    ("reload_candidates pool", lambda t, p, h: procsched.reload_candidates(None, [], "slice"),
     TypeError, "pool must be a list"),
    ("slice_lengths weights", lambda t, p, h: procsched.slice_lengths(None, 1), TypeError,
     "weights must be a list"),
    ("make_policy mean inf", lambda t, p, h: procsched.make_policy(
        "timeshare-mean", p, mean_slice_us=float("inf")), ValueError, "mean_slice_us must be"),
    ("make_policy mean str", lambda t, p, h: procsched.make_policy(
        "timeshare-mean", p, mean_slice_us="5"), ValueError, "mean_slice_us must be"),
    ("switch_cost_for scenario", lambda t, p, h: procsched.switch_cost_for("seed", "x"),
     TypeError, "scenario must be a procsched Scenario"),
    ("generate_tasks scale inf", lambda t, p, h: procsched.generate_tasks(
        p, random.Random(1), scale=float("inf")), ValueError, "scale must be a positive number"),
    ("P simulate specs", lambda t, p, h: procsched.simulate(None, procsched.make_policy(
        "seed", p), 0), TypeError, "specs must be a list or tuple"),
    ("P simulate name", lambda t, p, h: procsched.simulate([], procsched.make_policy(
        "seed", p), 0, name=5), TypeError, "name must be a string"),
    ("P simulate progress", lambda t, p, h: procsched.simulate([], procsched.make_policy(
        "seed", p), 0, progress=5), TypeError, "progress must be None or a callable"),
    ("check_invariants", lambda t, p, h: procsched.check_invariants("x"), TypeError,
     "result must be a Result"),
    ("P run_policies none", lambda t, p, h: procsched.run_policies(p, 1, []), ValueError,
     "policies must be a non-empty list"),
    ("P run_policies str", lambda t, p, h: procsched.run_policies(p, 1, "seed"), TypeError,
     "policies must be a non-empty list"),
    ("P claims scenarios", lambda t, p, h: procsched.evaluate_claims(None), TypeError,
     "scenarios must be a list of procsched Scenario"),
    ("P claims first_seed", lambda t, p, h: procsched.evaluate_claims([p], first_seed="1"),
     TypeError, "first_seed must be an integer"),
    ("P claims claims", lambda t, p, h: procsched.evaluate_claims([p], claims=None), TypeError,
     "claims must be a list or tuple"),
    ("P run_point quick", lambda t, p, h: procsched_point.run_point(p, "seed", 1, quick="y"),
     TypeError, "quick must be True or False"),
    ("P run_point policy", lambda t, p, h: procsched_point.run_point(p, "lottery", 1),
     ValueError, "policy must be one of 'seed'"),
    ("P policy_names", lambda t, p, h: procsched_point.policy_names("x"), TypeError,
     "scenario must be a procsched Scenario"),
    ("arbiter tasks", lambda t, p, h: tasksched.SchedulerArbiterParams(tasks=0), ValueError,
     "SchedulerArbiterParams.tasks must be an integer in 1..64"),
    ("arbiter weight_update_clocks", lambda t, p, h: tasksched.SchedulerArbiterParams(
        weight_update_clocks=99), ValueError, r"weight_update_clocks must be an integer in 0\.\.9"),
    ("arbiter tie_break", lambda t, p, h: tasksched.SchedulerArbiterParams(tie_break="x"),
     ValueError, "SchedulerArbiterParams.tie_break must be one of"),
    ("T description", lambda t, p, h: dataclasses.replace(t, description=5), TypeError,
     "Scenario.description must be a string"),
    ("T task budget", lambda t, p, h: dataclasses.replace(t, streams=(
        _stream(name="a", count=100_000), _stream(name="b"))), ValueError,
     "Scenario.streams must hold at most 100,000 tasks"),
    ("TaskSpec jobs", lambda t, p, h: _taskspec(jobs=3, durations=(5,) * 3), ValueError,
     "TaskSpec.jobs must be a power of two"),
    ("TaskSpec durations", lambda t, p, h: _taskspec(durations=(5,)), ValueError,
     "TaskSpec.durations must be a tuple of 4 integers"),
    ("TaskSpec class", lambda t, p, h: _taskspec(task_class=9), ValueError,
     "TaskSpec.task_class must be an integer in 0..4"),
    ("TaskSpec predecessors", lambda t, p, h: _taskspec(predecessors=(0,)), ValueError,
     "TaskSpec.predecessors must be a tuple of indices of earlier tasks"),
    ("T simulate tasks", lambda t, p, h: tasksched.simulate(t, "fifo-rr", tasks=5), TypeError,
     "tasks must be a list or tuple"),
    ("T simulate events", lambda t, p, h: tasksched.simulate(t, "fifo-rr", events="x"),
     TypeError, "events must be None or a list"),
    ("T simulate progress", lambda t, p, h: tasksched.simulate(t, "fifo-rr", progress=5),
     TypeError, "progress must be None or a callable"),
    ("admit tasks", lambda t, p, h: tasksched.admit(t, [1]), TypeError,
     r"tasks\[0\] must be a TaskSpec"),
    ("admit job_words", lambda t, p, h: tasksched.admit(t, [_taskspec(
        processor=t.processors[0].type, job_words=None)]), ValueError,
     r"tasks\[0\].job_words must be the words of a job"),
    ("make_arbiter params", lambda t, p, h: tasksched.make_arbiter("delay-factor", None),
     TypeError, "params must be an ArbiterParams"),
    ("FIFO arbiter params", lambda t, p, h: tasksched.FifoRoundRobinArbiter("x"), TypeError,
     "params must be an ArbiterParams"),
    ("T claims first_seed", lambda t, p, h: tasksched.evaluate_claims([t], first_seed="1"),
     TypeError, "first_seed must be an integer"),
    ("T policy_names", lambda t, p, h: tasksched_point.policy_names("x"), TypeError,
     "scenario must be a tasksched Scenario"),
    ("link_gb_s inf", lambda t, p, h: hostsched.SystemParams(link_gb_s=float("inf")),
     ValueError, "SystemParams.link_gb_s must be a positive number"),
    ("link_gb_s True", lambda t, p, h: hostsched.SystemParams(link_gb_s=True), ValueError,
     "SystemParams.link_gb_s must be a positive number"),
    ("H description", lambda t, p, h: dataclasses.replace(h, description=5), TypeError,
     "Scenario.description must be a string"),
    ("H orders repeated", lambda t, p, h: dataclasses.replace(h, orders=("arrival",) * 2),
     ValueError, "Scenario.orders must be a non-empty list of distinct names"),
    ("H sub-task budget", lambda t, p, h: dataclasses.replace(h, groups=(hostsched.ThreadGroup(
        count=1000, tasks=(100, 100), subtasks=(100, 100)),)), ValueError,
     "Scenario.groups must make at most 2,000,000 sub-tasks"),
    ("Workload threads", lambda t, p, h: hostsched.Workload(None), TypeError,
     "Workload.threads must be a tuple of tuples of SubTask"),
    ("Workload sub-task", lambda t, p, h: hostsched.Workload(((hostsched.SubTask(
        0, 0, 0, 0, True, 0, 0),),)), ValueError, r"Workload.threads\[0\] must hold SubTask"),
    ("from_lists threads", lambda t, p, h: hostsched.workload_from_lists(None), TypeError,
     "threads must be a list or tuple"),
    ("from_lists entry", lambda t, p, h: hostsched.workload_from_lists([[(0, None, 5)]]),
     ValueError, r"threads\[0\]\[0\] must be \(task >= 0, arrival_us >= 0"),
    ("from_lists priorities", lambda t, p, h: hostsched.workload_from_lists(
        [[(0, 0, 1)], [(1, 0, 1)]], [0]), ValueError, "priorities must give one priority per"),
    ("from_lists priority", lambda t, p, h: hostsched.workload_from_lists([[(0, 0, 1)]], [16]),
     ValueError, r"priorities\[0\] must be an integer in 0..15"),
    ("generate_workload scale inf", lambda t, p, h: hostsched.generate_workload(
        h, random.Random(1), scale=float("inf")), ValueError, "scale must be a positive number"),
    ("binding_for seed", lambda t, p, h: hostsched.binding_for(4, 2, None), TypeError,
     "seed must be an integer"),
    ("StaticBinding", lambda t, p, h: hostsched.StaticBinding(5), TypeError,
     "binding must be a list or tuple"),
    ("make_policies threads", lambda t, p, h: hostsched.make_policies(h), ValueError,
     "threads must be an integer >= 0, not None"),
    ("H policy_names", lambda t, p, h: hostsched_policies.policy_names("x"), TypeError,
     "scenario must be a hostsched Scenario"),
    ("H simulate class", lambda t, p, h: hostsched.simulate(_tiny_workload(), h.system,
                                                            hostsched.WorkQueue), TypeError,
     "policy must be a Policy"),
    ("H simulate pack nan", lambda t, p, h: hostsched.simulate(
        _tiny_workload(), h.system, hostsched.WorkQueue(), pack_gb_s=float("nan")), ValueError,
     "pack_gb_s must be a number >= 0"),
    ("H simulate events", lambda t, p, h: hostsched.simulate(
        _tiny_workload(), h.system, hostsched.WorkQueue(), events="x"), TypeError,
     "events must be None or a list"),
    ("InvariantChecker", lambda t, p, h: hostsched.InvariantChecker("x", h.system), TypeError,
     "workload must be a Workload"),
    ("H run_policies names", lambda t, p, h: hostsched_claims.run_policies(
        h, 1, policies=["lottery"]), ValueError, "policies must be a non-empty list"),
    ("H claims first_seed", lambda t, p, h: hostsched.evaluate_claims([h], first_seed="1"),
     TypeError, "first_seed must be an integer"),
    ("crossover divisors", lambda t, p, h: hostsched.crossover(h, divisors=[0]), ValueError,
     r"divisors\[0\] must be an integer >= 1"),
    ("crossover caches", lambda t, p, h: hostsched.crossover(h, caches=[]), TypeError,
     "caches must be a non-empty list"),
    ("batch_sweep shorter", lambda t, p, h: hostsched.batch_sweep(h, shorter=0), ValueError,
     "shorter must be an integer >= 1"),
    ("batch_sweep factors", lambda t, p, h: hostsched.batch_sweep(h, factors=[1]), ValueError,
     r"factors\[0\] must be an integer >= 2"),
    ("H run_point policy", lambda t, p, h: hostsched_point.run_point(h, "lottery", 1),
     ValueError, "policy must be one of"),
    ("P reader path", lambda t, p, h: procsched.Scenario.from_toml(None), TypeError,
     "path must be a str or pathlib.Path"),
    ("T reader path", lambda t, p, h: tasksched.load_scenario(42), TypeError,
     "path must be a str or pathlib.Path"),
    ("H reader path", lambda t, p, h: hostsched.load_scenario(None), TypeError,
     "path must be a str or pathlib.Path"),
    ("P slice budget", lambda t, p, h: dataclasses.replace(p, t0_us=1, groups=(
        procsched.TaskGroup(count=10, priority=0, work_us=(10**9, 10**9)),)), ValueError,
     "10,000,000 slices of the shortest configured slice"),
    ("P window budget", lambda t, p, h: dataclasses.replace(p, fairness_window_us=1),
     ValueError, "Scenario.fairness_window_us of 1 us makes"),
]


@pytest.mark.parametrize(("label", "call", "error", "words"), BAD_CALLS,
                         ids=[call[0] for call in BAD_CALLS])
def test_public_functions_name_the_bad_argument(label, call, error, words):
    with pytest.raises(error, match=words):
        call(*_scenarios())
