"""The RTL dispatcher co-simulated with the model, clock for clock, on Verilator and Icarus.

Three sets, each build shared by all the runs of its shape (the policy knobs are written
through the configuration port at run time):

* every shipped dispatch scenario and every policy it lists, reduced and shortened
  (:data:`hw.flow.dispatch_cosim.REDUCTION`, :data:`SHIPPED_CYCLES`); the kernel-trace
  scenarios are left out (their first reduced cycles hold one launch, on a build of their
  own): ``configs/cosim/llamacpp_small.toml`` co-simulates a kernel trace with its in-order
  barriers instead;
* 15 seeded random configurations per shape (``tb.dispatch_cases.random_jobs``: every
  selection rule and AP choice three times or more; a coverage table per shape at the end)
  on eight hardware shapes covering every circuit, latencies
  0-4, the one-clock and the pipelined decision (``decision_pipeline`` 3 and 4, the latter
  also as the FPGA table's 50 MHz build) and every run-time knob, the directed runs, and a
  back-pressure run per shape checked by the protocol checker alone (Icarus runs the
  random seeds with back-pressure or bad releases of each shape, the directed runs and a
  half-length protocol run; Verilator and the fast tier run every job);
* five deliberately broken dispatchers, which the bench must reject.

``SIM=verilator`` or ``SIM=icarus`` keeps one simulator. A failing run names its job; a random
one is replayed by its shape and seed (``tb.dispatch_cases.random_run``).
"""

import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest

from hw.flow.dispatch_build import DispatchShape
from hw.flow.dispatch_cosim import run_cosim, scenario_shape, unsupported
from model.dispatch import load_scenario
from tb.dispatch_cases import DIRECTED, DIRECTED_SHAPE, SHAPES, random_jobs
from tb.dispatch_coverage import coverage_table, job_coverage

sys.path.insert(0, str(Path(__file__).parent))
from dispatch_mutants import FAST_ONLY, AdmitsEverything, variant  # noqa: E402
from dispatch_mutants import MUTANTS as ALL_MUTANTS  # noqa: E402

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "dispatch"
#: Cycles of each reduced shipped scenario (the reduced scenarios' time runs 8 times faster:
#: 400 cycles are 3,200 cycles of the full-size scenario's durations and windows).
SHIPPED_CYCLES = 400
#: Verilator builds cost about a minute each: the shapes that run one circuit variant of
#: ``circuit_variants.toml`` alone run on Icarus only (Verilator runs each of those circuits
#: in the random set); the main shape (every other shipped policy) runs on both.
ICARUS_ONLY = {"grouped", "sampled"}


def _shipped() -> tuple[dict, dict, list]:
    jobs, shapes, left = defaultdict(list), {}, []
    for path in sorted(CONFIGS.glob("*.toml")):
        scenario = load_scenario(path)
        for policy in scenario.policies:
            reason = unsupported(scenario, policy) if scenario.kernel_trace is None else "trace"
            if reason:
                left.append((path.name, policy.name, reason))
                continue
            shape = scenario_shape(scenario, policy, reduce=True)
            shapes[shape.name] = shape
            jobs[shape.name].append({"kind": "scenario", "path": str(path),
                                     "policy": policy.name, "cycles": SHIPPED_CYCLES,
                                     "reduce": True})
    return shapes, jobs, left


#: ``LEFT_OUT``: (file, policy, why) of the shipped runs the RTL cannot run.
SHIPPED_SHAPES, SHIPPED_JOBS, LEFT_OUT = _shipped()


def _checked(summaries: list[dict], jobs: list[dict]) -> None:
    # A run that did not happen cannot pass: every job must report, and compare something.
    assert len(summaries) == len(jobs)
    for summary in summaries:
        assert not summary["mismatches"] and not summary["violations"], summary
        assert summary["clocks"] > 0 and summary["dispatches"] > 0, summary


@pytest.mark.cocotb
@pytest.mark.parametrize("name", SHIPPED_SHAPES)
def test_shipped_scenarios_match_the_model(name, simulator):
    jobs = SHIPPED_JOBS[name]
    shape = SHIPPED_SHAPES[name]
    if simulator == "verilator" and len(jobs) == 1 and (
            shape.policy.circuit in ICARUS_ONLY or shape.policy.circuit_latency > 0):
        pytest.skip("one circuit variant: run on Icarus; Verilator runs the circuit in the "
                    "random set")
    if simulator == "icarus":
        # Icarus runs the bench at a few hundred clocks a second: half the cycles there.
        jobs = [{**job, "cycles": SHIPPED_CYCLES // 2} for job in jobs]
    _checked(run_cosim(shape, jobs, simulator), jobs)


@pytest.mark.cocotb
def test_the_users_verilog_matches_the_model_on_icarus(simulator):
    # Icarus runs the regression on the netlist Yosys cleaned (run_cosim); this run holds the
    # text users get to the model on Icarus too. Event driven and four-state, Icarus shows what
    # the two-state simulators cannot: an `always @*` block first run only when its inputs
    # change left `stale_abort` X at clock 40 of this scenario (docs/dispatch_rtl.md).
    if simulator == "verilator":
        pytest.skip("Verilator builds the users' text in every run")
    shape, jobs = _reduced_run(CONFIGS / "default.toml", SHIPPED_CYCLES // 2)
    _checked(run_cosim(shape, jobs, simulator, users_text=True), jobs)


def _reduced_run(path: Path, cycles: int, **options) -> tuple:
    """``(build, jobs)``: scenario ``path``'s first policy, reduced as the regression reduces
    it, one job of ``cycles`` (``options``: :func:`scenario_shape`'s, e.g. ``view_refresh``)."""
    scenario = load_scenario(path)
    policy = scenario.policies[0]
    jobs = [{"kind": "scenario", "path": str(path), "policy": policy.name, "cycles": cycles,
             "reduce": True}]
    return scenario_shape(scenario, policy, reduce=True, **options), jobs


def _build(name: str) -> DispatchShape:
    shape = SHAPES[name]
    return DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options())


@pytest.mark.cocotb
@pytest.mark.parametrize("name", SHAPES)
def test_random_configurations_match_the_model(name, simulator):
    # The job list is tb.dispatch_cases.random_jobs, whose coverage the fast tier checks
    # (tests/test_dispatch_rtl_sim.py); here the table is built from what the runs compared.
    jobs = random_jobs(name)
    if simulator == "icarus":
        # Every job of the set runs on Verilator and under Amaranth's simulator (the fast
        # tier, whose coverage check is of this list); Icarus, at a few hundred clocks a
        # second, runs the random seeds with back-pressure or bad releases, every directed
        # run and the protocol run at half its length, as it runs the shipped set.
        jobs = [{**job, "clocks": job["clocks"] // 2} if job["kind"] == "protocol" else job
                for job in jobs if job["kind"] != "random" or "pressure" in job
                or "bad_releases" in job]
    summaries = run_cosim(_build(name), jobs, simulator)
    _checked(summaries, jobs)
    from rich.console import Console
    jobs = [job_coverage(summary=s) for s in summaries if "coverage" in s]
    coverage_table({name: (SHAPES[name], jobs)}, f"coverage of the random set on {name} "
                   f"({simulator}): jobs per behaviour", console=Console())


# -- the bench bites: deliberately broken dispatchers must fail it --------------------------------

#: The mutants of ``tests/dispatch_mutants.py`` this tier builds (the others, caught by the fast
#: tier in seconds, would cost a build each here).
MUTANTS = {name: mutant for name, mutant in ALL_MUTANTS.items() if name not in FAST_ONLY}


@pytest.mark.cocotb
@pytest.mark.parametrize("mutant", MUTANTS)
def test_bench_rejects_a_broken_dispatcher(mutant, any_simulator):
    broken, directed = MUTANTS[mutant]
    shape = _build(DIRECTED_SHAPE.get(directed, "exact4x2"))
    jobs = [{"kind": "directed", "name": directed, "cycles": 300}]

    def build(wrap):
        return broken(shape.gpu, shape.policy, shape.channels, weight_bits=shape.weight_bits,
                      wrap=wrap)

    with pytest.raises(SystemExit):
        run_cosim(shape, jobs, any_simulator, component=build, tag=f"_mutant_{mutant}")


@pytest.mark.cocotb
def test_a_broken_admission_check_fails_on_the_bound_instead_of_hanging(any_simulator):
    # The refused WGs are sent before START; a dispatcher that admits them fills the channel
    # FIFO and holds wg_in.ready low for ever. The bench must stop after its bound and name
    # the clock, the phase and the signal it waited on (it used to wait for ever).
    shape = _build("exact4x2")
    jobs = [{"kind": "directed", "name": "refused", "cycles": 300}]

    def build(wrap):
        return variant("queues", AdmitsEverything)(
            shape.gpu, shape.policy, shape.channels, weight_bits=shape.weight_bits, wrap=wrap)

    summaries = run_cosim(shape, jobs, any_simulator, component=build,
                          tag="_mutant_admits_everything", fail=False)
    assert len(summaries) == 1 and summaries[0]["mismatches"], summaries
    stall = summaries[0]["stall"]
    assert stall and "phase 'rejects'" in stall and "wg_in[0].ready" in stall \
        and "clock " in stall, stall


# -- make cosim: bad input is one line and status 2, before anything is built ---------------------

@pytest.mark.parametrize("argv, words", [
    (["--config", "no_such_file.toml"], "no_such_file.toml"),
    (["--config", str(CONFIGS / "default.toml"), "--policy", "nope"], "no policy 'nope'"),
    (["--config", str(CONFIGS / "default.toml"), "--cycles", "0"], "--cycles"),
    (["--config", str(CONFIGS / "wave_imbalance.toml"), "--policy", "least loaded"],
     "least_loaded"),
    (["--config", str(CONFIGS / "default.toml"), "--policy", "miaow"],
     "the RTL does not implement it"),
])
def test_cosim_refuses_bad_input_in_one_line(argv, words, capsys, monkeypatch):
    import hw.flow.dispatch_cosim as cosim

    def never(*args, **kwargs):
        raise AssertionError("nothing may be built for a bad input")

    monkeypatch.setattr(cosim, "run_cosim", never)
    assert cosim.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert "Traceback" not in captured.err + captured.out


def test_every_shipped_scenario_is_cosimulated_or_says_why():
    # Only kernel-trace runs and the model-only baselines (least-loaded, the faithful MIAOW,
    # GPGPU-Sim and gem5) are left out.
    assert SHIPPED_JOBS and all(reason == "trace" or "least_loaded" in reason
                                or "the RTL does not implement it" in reason
                                for _, _, reason in LEFT_OUT), LEFT_OUT
    covered = {Path(job["path"]).name for jobs in SHIPPED_JOBS.values() for job in jobs}
    scenarios = {path.name for path in CONFIGS.glob("*.toml")
                 if load_scenario(path).kernel_trace is None}
    assert covered == scenarios


# -- make cosim end to end: the summary line, and the first differing clock of a mismatch --------

COSIM = Path(__file__).resolve().parent.parent / "configs" / "cosim"


def test_the_shipped_cosim_shapes_are_cosimulated():
    # configs/cosim/: every policy of every file can be co-simulated, and "small" is the
    # build of the reduced shipped scenarios (so make test builds nothing more for it).
    files = sorted(COSIM.glob("*.toml"))
    assert {path.stem for path in files} >= {"default_small", "default_medium"}
    for path in files:
        scenario = load_scenario(path)
        for policy in scenario.policies:
            assert unsupported(scenario, policy) is None, (path.name, policy.name)
    small = load_scenario(COSIM / "default_small.toml")
    assert {scenario_shape(small, policy).name for policy in small.policies} <= \
        set(SHIPPED_SHAPES)


@pytest.mark.cocotb
def test_the_view_of_the_changed_aps_matches_the_model_at_a_reduced_size(simulator):
    # The build made for the LFE5U-85F (configs/cosim/default_rotating.toml: the pipelined
    # decision with the view of the changed APs, its status in LUT-RAM, and the scores
    # refreshed for two APs a clock), at the regression's reduced size (2 x 4 x 4): its Verilog on
    # Verilator against the model, clock for clock. The Amaranth tier runs every circuit of
    # it and the rotating scores; formal proves the view.
    if simulator == "icarus":
        pytest.skip("Verilator runs it; the Amaranth tier runs every changed shape")
    shape, jobs = _reduced_run(COSIM / "default_rotating.toml", SHIPPED_CYCLES,
                               view_refresh="changed")
    assert shape.params.changed_views and shape.params.pipeline
    assert shape.params.rotating_scores
    _checked(run_cosim(shape, jobs, simulator), jobs)


@pytest.mark.cocotb
@pytest.mark.parametrize("broken", [False, True], ids=["dispatcher", "mutant"])
def test_make_cosim_prints_the_summary_and_the_first_difference(broken, capfd, monkeypatch,
                                                                any_simulator):
    # make cosim CONFIG=configs/cosim/default_small.toml, cut to 400 cycles: what it builds
    # and its expected time first, the simulator's output in log files (not one warning on
    # the terminal: the full-size build printed 209,451), the result line last.
    import hw.flow.dispatch_cosim as cosim

    path = COSIM / "default_small.toml"
    if broken:
        original = cosim.run_cosim

        def run_broken(shape, jobs, simulator, **options):
            def build(wrap):
                return MUTANTS["release_one_short"][0](shape.gpu, shape.policy, shape.channels,
                                                     weight_bits=shape.weight_bits, wrap=wrap)
            return original(shape, jobs, simulator, component=build,
                            tag="_mutant_release_one_short", **options)
        monkeypatch.setattr(cosim, "run_cosim", run_broken)
    status = cosim.main(["--config", str(path), "--policy", "emb1", "--cycles", "400",
                         "--sim", any_simulator])
    captured = capfd.readouterr()
    out = captured.out
    assert "%Warning" not in out + captured.err, out[-2000:]
    lines = out.strip().splitlines()
    # A fresh build names its expected time and log; a build another test made already
    # says so and names its directory (the order of tests decides which one prints).
    assert any(("expected: about" in line and "build.log" in line)
               or ": built before (" in line for line in lines), out
    line = lines[-1]
    assert "dispatches compared" in line, out
    if broken:
        first = [x for x in lines if x.startswith("first difference: ")]
        assert status == 1 and not line.endswith(" 0 mismatches") and first, out
    else:
        assert status == 0, out
        cycles, dispatches, mismatches = (int(x.split()[0]) for x in line.split(", "))
        assert cycles == 400 and dispatches > 50 and mismatches == 0, line


@pytest.mark.cocotb
def test_the_kernel_trace_cosim_scenario_matches_the_model(simulator):
    # configs/cosim/llamacpp_small.toml (two llama.cpp requests on in-order streams, 8
    # barriers) on its build with barriers. Icarus runs its first 1,000 cycles (the first
    # barrier held from cycle 154 to 447); make cosim runs it whole on Verilator (about two
    # minutes cold, docs/dispatch_rtl.md), so Verilator is not built for it here.
    if simulator == "verilator":
        pytest.skip("make cosim runs it on Verilator; here Icarus, whose build takes seconds")
    path = COSIM / "llamacpp_small.toml"
    scenario = load_scenario(path)
    shape = scenario_shape(scenario, scenario.policies[0])
    assert shape.barriers and {scenario_shape(scenario, p).name for p in scenario.policies} \
        == {shape.name}
    jobs = [{"kind": "scenario", "path": str(path), "policy": "seed", "cycles": 1000}]
    summaries = run_cosim(shape, jobs, simulator)
    _checked(summaries, jobs)
    assert summaries[0]["dispatches"] >= 40 and summaries[0]["releases"] > 0, summaries[0]


def test_a_reduced_kernel_trace_is_driven_on_its_reduced_build():
    # The regression's reduction works for a kernel trace: converted (as far as the run
    # reaches), reduced (GPU, needs, durations and the shared model's work), built with
    # barriers, and the bench's driver takes it.
    from hw.flow.dispatch_cosim import prepared, reduced
    from tb.test_dispatch import _job_driver

    path = CONFIGS / "llamacpp_requests.toml"
    scenario = load_scenario(path)
    policy = next(p for p in scenario.policies if unsupported(scenario, p) is None)
    shape = scenario_shape(scenario, policy, reduce=True)
    assert shape.barriers and shape.gpu.aps == 4 and shape.gpu.vgpr == 16
    job = {"kind": "scenario", "path": str(path), "policy": policy.name, "cycles": 400,
           "reduce": True}
    run = _job_driver(shape.params, job).run
    assert run.gpu.aps == shape.gpu.aps and run.label.endswith("(reduced)")
    whole = prepared(scenario, 400).workload(1)
    _, _, expected = reduced(scenario.gpu, [policy], whole)
    expected = {w.id: (w.duration, w.work, w.vgpr) for w in expected}
    assert run.workload and all((w.duration, w.work, w.vgpr) == expected[w.id]
                                for w in run.workload)
    assert whole[0].work > 8 and run.workload[0].work == -(-whole[0].work // 8)
    assert any(kind == "dispatch" for _, kind, *_ in run.events)
    # (Its first barrier arrives at cycle 15,325, beyond this run.)
    assert any(w.barrier for w in prepared(scenario, 20000).workload(1))


def test_make_cosim_ctrl_c_is_one_line_and_status_130(capsys, monkeypatch):
    import hw.flow.dispatch_cosim as cosim

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cosim, "run_cosim", interrupted)
    status = cosim.main(["--config", str(COSIM / "default_small.toml")])
    captured = capsys.readouterr()
    assert status == 130
    assert captured.err.strip().count("\n") == 0 and "interrupted" in captured.err
    assert "Traceback" not in captured.err + captured.out


def test_the_combined_all_run_tells_the_two_scales_apart():
    # The directed run on the grouped3x3 build (combined_scale = "all") must choose other APs
    # than the candidates' scale would, or the co-simulation could not see a wrong scale.
    from model.dispatch.engine import DispatchSimulator
    run = DIRECTED["combined_all"](400)
    assert run.policy.combined_scale == "all" and DIRECTED_SHAPE["combined_all"] == "grouped3x3"
    events = []
    DispatchSimulator(run.gpu, replace(run.policy, combined_scale="candidates"),
                      [replace(w) for w in run.workload], channels=run.channels,
                      cycles=run.cycles, events=events).run()
    other = [(c, w.id, ap) for c, kind, w, ap, *_ in events if kind == "dispatch"]
    mine = [(c, w.id, ap) for c, kind, w, ap, *_ in run.events if kind == "dispatch"]
    assert len(mine) > 50 and sum(a != b for a, b in zip(mine, other, strict=False)) > 20


def test_the_pipelined_scores_run_tells_the_scores_age():
    # The directed run of the scores_one_older mutant: scores one cycle older than the
    # model's must choose other APs in many of its dispatches.
    from model.dispatch.engine import DispatchSimulator
    run = DIRECTED["pipelined_scores"](300)
    assert run.policy.decision_pipeline == 4 and run.policy.score_latency == 4
    events = []
    DispatchSimulator(run.gpu, replace(run.policy, score_latency=5),
                      [replace(w) for w in run.workload], channels=run.channels,
                      cycles=run.cycles, events=events).run()
    other = [(c, w.id, ap) for c, kind, w, ap, *_ in events if kind == "dispatch"]
    mine = [(c, w.id, ap) for c, kind, w, ap, *_ in run.events if kind == "dispatch"]
    assert len(mine) > 100 and sum(a != b for a, b in zip(mine, other, strict=False)) > 50


def test_icarus_runs_the_cleaned_netlist_and_verilator_the_users_text(tmp_path, monkeypatch):
    # Icarus spent most of each clock in Amaranth's `always @*` blocks (106 s for one shape's
    # jobs); it now co-simulates the same design after Yosys's proc and opt_clean, Verilator
    # the Verilog `make verilog` writes. A stand-in runner records what each is given.
    import hw.flow.dispatch_cosim as cosim
    from hw.flow.dispatch_build import dispatcher_verilog

    built = {}

    class Runner:
        def __init__(self, simulator="verilator"):
            self.simulator = simulator

        def build(self, *, sources, **options):
            built[self.simulator] = sources[0].read_text()

        def test(self, *, extra_env, **options):
            Path(extra_env["DISPATCH_RESULTS"]).write_text("[]")
            return Path(extra_env["DISPATCH_RESULTS"])

    monkeypatch.setattr(cosim, "BUILD_ROOT", tmp_path)
    monkeypatch.setattr(cosim, "_PackagedVerilator", Runner)
    monkeypatch.setattr(cosim, "get_runner", Runner)
    monkeypatch.setattr(cosim, "missing_simulator", lambda simulator: None)
    shape = _build("exact4x2")
    for simulator in ("icarus", "verilator"):
        cosim.run_cosim(shape, [], simulator)
    assert built["verilator"] == dispatcher_verilog(shape, cosim.BLOCK_CACHE)
    assert built["icarus"] == dispatcher_verilog(shape, cosim.BLOCK_CACHE, simulation=True)
    assert "always @*" in built["verilator"] and "always @*" not in built["icarus"]


def test_a_shape_is_built_once_and_shared_by_later_runs(tmp_path, monkeypatch):
    # Every run_cosim call re-ran the simulator's build (Verilator's parse of the whole
    # Verilog: tens of seconds of CPU per call of a shape built before); now only a changed
    # Verilog (or flags) rebuilds. A stand-in runner counts the builds.
    import hw.flow.dispatch_cosim as cosim

    builds = []

    class Runner:
        def build(self, *, build_dir, hdl_toplevel, **options):
            builds.append(hdl_toplevel)
            (Path(build_dir) / hdl_toplevel).write_text("binary")

        def test(self, *, extra_env, **options):
            Path(extra_env["DISPATCH_RESULTS"]).write_text("[]")
            return Path(extra_env["DISPATCH_RESULTS"])

    monkeypatch.setattr(cosim, "BUILD_ROOT", tmp_path)
    monkeypatch.setattr(cosim, "_PackagedVerilator", Runner)
    monkeypatch.setattr(cosim, "missing_simulator", lambda simulator: None)
    texts = {"text": "module a; endmodule\n"}
    monkeypatch.setattr(cosim, "_verilog", lambda shape, component, simulation: texts["text"])
    shape = _build("exact4x2")
    for _ in range(3):
        assert cosim.run_cosim(shape, [], "verilator") == []
    assert builds == [shape.name]
    texts["text"] = "module b; endmodule\n"
    cosim.run_cosim(shape, [], "verilator")
    assert builds == [shape.name, shape.name]


def test_what_the_rtl_does_not_build_is_refused_with_why_and_documented():
    # least_loaded placement: one line that says why and where it is written down, and the
    # docs' "Not built" says it. Kernel-trace replays and in-order barriers are built now.
    from dataclasses import replace as changed

    from hw.flow.dispatch_cosim import policy_unsupported

    scenario = load_scenario(CONFIGS / "default.toml")
    least = changed(scenario.policies[0], wave_placement="least_loaded")
    reason = policy_unsupported(least)
    assert reason and "\n" not in reason and "docs/dispatch_rtl.md" in reason, reason
    assert "per-wave" in reason
    requests = load_scenario(CONFIGS / "llamacpp_requests.toml")
    assert unsupported(requests, requests.policies[0]) is None
    docs = (CONFIGS.parent.parent / "docs" / "dispatch_rtl.md").read_text()
    section = docs[docs.index("- **Not built**"):docs.index("## Co-simulation")]
    assert "least_loaded" in section and "barrier" not in section


def test_a_generated_workload_has_no_barrier_and_a_barrier_workload_builds_them(tmp_path):
    # scenario_shape() answers "no barriers" for a generated workload without drawing it:
    # that holds only while generate_workload draws none. A workload with a barrier (given
    # WGs, a trace, a kernel trace replayed in order) is built with them; it used to be
    # refused.
    from dataclasses import replace as changed

    from hw.flow.dispatch_cosim import _has_barriers

    scenario = load_scenario(CONFIGS / "default.toml")
    for seed in (1, 2, 3):
        assert not any(wg.barrier for wg in scenario.workload(seed))
        assert not _has_barriers(scenario, seed)
    assert not scenario_shape(scenario, scenario.policies[0]).barriers
    given = changed(scenario, workgroups=[changed(wg, barrier=wg.id == 3)
                                          for wg in scenario.workload(1)[:8]])
    assert _has_barriers(given, 1)
    assert unsupported(given, scenario.policies[0]) is None
    assert scenario_shape(given, scenario.policies[0]).barriers
    trace = load_scenario(CONFIGS / "llamacpp_rdna4.toml")
    shape = scenario_shape(trace, trace.policies[0], reduce=True)
    assert shape.barriers and shape.gpu.aps == 4 and len(shape.channels) == 2  # 2 streams


def test_the_build_time_said_before_a_build_is_that_of_measured_builds():
    # make cosim says how long a build will take; the figures are CPU seconds of this
    # project's builds with the bench's flags (hw.flow.dispatch_cosim.BUILD_SECONDS).
    from hw.flow.dispatch_cosim import expected_build_seconds

    for kib, seconds in ((1_686, 28), (7_395, 78)):
        assert 0.8 * seconds <= expected_build_seconds("x" * kib * 1024, "verilator") \
            <= 1.25 * seconds
    assert 4 * 60 <= expected_build_seconds("x" * 36 * 2**20, "verilator") <= 7 * 60
    assert expected_build_seconds("x" * 1_200 * 1024, "icarus") <= 5
