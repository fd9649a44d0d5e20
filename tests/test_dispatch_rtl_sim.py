"""The fast RTL tier: the dispatcher RTL under Amaranth's simulator against the model.

The cocotb tier's bench (``tb/dispatch_bench.py``: the model comparison clock for clock and
the protocol checker), driven through ``tb/dispatch_amaranth.py`` instead of an HDL
simulator: no Verilog, no build, seconds per shape, so a slip in ``hw/dispatch/`` fails in the
first minute of ``make test`` (``tests/conftest.py`` runs this file first). Per shape of
:data:`tb.dispatch_cases.SHAPES` (all but ``small_l2``, the 50 MHz build, whose elaboration
alone costs more than the rest; the cocotb tier runs it), one build and one simulation runs:

* a ``START``-only run: the build's registers reset to a random policy
  (:func:`tb.dispatch_cases.reset_build`) and the model runs that policy, so every reset
  value is compared with the model;
* two seeded random runs (:func:`tb.dispatch_cases.random_run`), one with ``dispatch.ready`` low
  in bursts, where the model holds its decision in the same cycles (docs/dispatch_rtl.md,
  "Back-pressure"), one with releases of tags not in flight and of other WGs, which must
  raise ``error`` and change nothing;
* the directed runs of the shape, and a back-pressure run judged by the protocol checker.

The builds whose view is computed for the changed APs only
(:data:`tb.dispatch_cases.CHANGED_SHAPES`) run the same drivers in the same test: the same
view as every clock's circuits, so the model's, clock for clock.

Then every mutant of ``tests/dispatch_mutants.py`` must fail here, and embodiment 10's history
register is compared with its average clock for clock (a scaled history rarely changes a
choice). A failing run names its shape and seed; ``random_run(SHAPES[shape], seed, cycles,
pressure)`` replays it.
"""

import os
import sys
import time
from pathlib import Path

import pytest

from hw.dispatch.params import config_writes
from hw.flow.dispatch_build import DispatchShape
from tb.dispatch_amaranth import simulate
from tb.dispatch_bench import CosimDriver, RandomDriver
from tb.dispatch_cases import (
    BARRIER_SHAPES,
    CHANGED_SHAPES,
    DIRECTED,
    DIRECTED_SHAPE,
    ROTATING_SHAPES,
    SHAPES,
    barrier_run,
    random_jobs,
    random_run,
    random_shape,
    reset_build,
)
from tb.dispatch_coverage import MINIMUM_JOBS, coverage_table, job_coverage, shortfall

sys.path.insert(0, str(Path(__file__).parent))
from dispatch_mutants import (  # noqa: E402
    BARRIER_MUTANTS,
    CHANGED_MUTANTS,
    MUTANTS,
    ROTATING_MUTANTS,
    AdmitsEverything,
    variant,
)

FAST_SHAPES = [name for name in SHAPES if name != "small_l2"]
CYCLES = 150
#: The seed of each shape's reset-value build (its registers' random reset policy).
RESET_SEED = 100
MUTANT_RESET_SEED = 105
PRESSURE = 0.3
BAD_RELEASES = 6


def _drivers(params, shape, reset_run) -> list:
    drivers = [CosimDriver(params, reset_run, configure=False),
               CosimDriver(params, random_run(shape, 1, CYCLES, pressure=PRESSURE)),
               CosimDriver(params, random_run(shape, 2, CYCLES), bad_releases=BAD_RELEASES)]
    drivers += [CosimDriver(params, DIRECTED[name](CYCLES)) for name in DIRECTED
                if DIRECTED_SHAPE.get(name, "exact4x2") == shape.name]
    return drivers + [RandomDriver(params, 1, CYCLES)]


def _failures(drivers) -> list[str]:
    bad = []
    for driver in drivers:
        summary = getattr(driver, "summary", {"mismatches": 0, "first": None})
        if summary["mismatches"] or driver.checker.violations:
            bad.append(summary["first"] or driver.checker.violations[0])
    return bad


def test_the_start_only_run_writes_nothing_else_than_the_reset_values():
    # What the START-only run leaves out, the writes a configured run makes, are exactly the
    # build's reset values: so a run that writes only START compares every reset value.
    for name in FAST_SHAPES:
        build, run = reset_build(SHAPES[name], RESET_SEED, CYCLES)
        params = build.params
        assert config_writes(params, run.policy, run.wave_powers, run.gpu) == \
            config_writes(params), name


#: The shapes of the main Amaranth run: the fast ones, the builds whose view is computed for
#: the changed APs only (the same view, so the model's, clock for clock) and those whose
#: scores rotate (the model's rotating scores).
AMARANTH_SHAPES = {**{name: SHAPES[name] for name in FAST_SHAPES}, **CHANGED_SHAPES,
                   **ROTATING_SHAPES}


@pytest.mark.parametrize("name", AMARANTH_SHAPES)
def test_rtl_matches_the_model_under_amaranth(name, record_property):
    shape = AMARANTH_SHAPES[name]
    started, cpu = time.perf_counter(), time.process_time()
    build, reset_run = reset_build(shape, RESET_SEED, CYCLES)
    assert build.params.changed_views == (shape.view_refresh == "changed") \
        == ("view_refresh" in build.to_json())
    assert build.params.rotating_scores == (shape.policy.score_refresh == "rotating") \
        == ("score_refresh" in build.to_json())
    drivers = _drivers(build.params, shape, reset_run)
    clocks = simulate(build.dispatcher(), build.params, drivers)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    record_property("seconds", round(seconds, 1))
    print(f"{name}: elaboration and {clocks} clocks in {seconds:.1f} s ({cpu:.1f} s of CPU)")
    assert not _failures(drivers), _failures(drivers)[:3]
    summaries = [driver.summary for driver in drivers if hasattr(driver, "summary")]
    # Nothing passes without running: every model-compared run compared dispatches, the
    # back-pressure run held cycles, the bad releases were sent (and error rose).
    assert all(s["dispatches"] > 0 and s["cycles"] == CYCLES for s in summaries), summaries
    assert summaries[1]["held"] > 0, summaries[1]
    assert summaries[2]["bad_releases"] == BAD_RELEASES, summaries[2]
    assert drivers[-1].dispatches > 0


@pytest.mark.parametrize("mutant", CHANGED_MUTANTS)
def test_the_fast_tier_rejects_a_broken_changed_view(mutant):
    broken, name = CHANGED_MUTANTS[mutant]
    shape = CHANGED_SHAPES[name]
    build, reset_run = reset_build(shape, RESET_SEED, CYCLES)
    dispatcher = broken(build.gpu, build.policy, build.channels, **shape.options())
    drivers = _drivers(build.params, shape, reset_run)
    simulate(dispatcher, build.params, drivers)
    assert any(driver.summary["mismatches"] for driver in drivers
               if hasattr(driver, "summary")), f"{mutant} passed the model comparison"


def test_the_fast_tier_rejects_a_rotation_not_restarted():
    shape = ROTATING_SHAPES["rotating4x2k4"]
    build, reset_run = reset_build(shape, RESET_SEED, CYCLES)
    unit = ROTATING_MUTANTS["rotation_not_restarted"][0]
    dispatcher = variant("scores", unit)(build.gpu, build.policy, build.channels,
                                         **shape.options())
    drivers = _drivers(build.params, shape, reset_run)
    simulate(dispatcher, build.params, drivers)
    assert any(driver.summary["mismatches"] for driver in drivers
               if hasattr(driver, "summary")), "a rotation not restarted passed"


def test_view_refresh_is_checked_and_every_keeps_the_name():
    shape = SHAPES["exact4x2"]
    plain = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options())
    assert "view_refresh" not in plain.to_json()
    changed = DispatchShape.of(shape.gpu, shape.policy, shape.channels,
                               **shape.options(), view_refresh="changed")
    with pytest.raises(ValueError, match="circuit_latency 1 or more"):
        _ = changed.params                                       # exact4x2 is latency 0
    with pytest.raises(ValueError, match="view_refresh must be one of every, changed"):
        _ = DispatchShape.of(shape.gpu, shape.policy, shape.channels,
                             view_refresh="sometimes").params
    built = CHANGED_SHAPES["changed4x2"]
    build = DispatchShape.of(built.gpu, built.policy, built.channels, **built.options())
    assert DispatchShape.from_json(build.to_json()) == build
    assert build.params.changed_views and not plain.params.changed_views


def test_view_refresh_reaches_make_verilog_and_make_cosim(tmp_path, capsys):
    # VIEW_REFRESH=changed: the build make verilog writes and make cosim runs; a build that
    # cannot have it (circuit_latency 0) is one line and status 2 before anything is built.
    from hw.flow import dispatch_cosim
    from hw.flow.generate_dispatcher import dispatcher_shape
    small = Path(__file__).parents[1] / "configs" / "cosim" / "default_small.toml"
    assert dispatch_cosim.main(["--config", str(small), "--view-refresh", "changed"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "circuit_latency 1 or more" in error, error
    text = small.read_text().replace("history_cycles = 128\n",
                                     "history_cycles = 128\ncircuit_latency = 1\n", 1)
    (tmp_path / "l1.toml").write_text(text)
    shape, _, _ = dispatcher_shape(tmp_path / "l1.toml", None, "changed")
    plain, _, _ = dispatcher_shape(tmp_path / "l1.toml")
    assert shape.view_refresh == "changed" and shape.params.changed_views
    assert plain.view_refresh == "every" and shape.name != plain.name


@pytest.mark.parametrize(("latency", "blocks"), [(2, 0), (3, 0), (4, 0), (2, 4), (3, 4)])
def test_the_shared_units_own_pipeline_shows_the_models_view(latency, blocks):
    # Latencies 2 and 3 are all the unit's pipeline (the packed word registered, the tree cut
    # in two or three), latency 4 that and a register on the status words in front: the same
    # view as registers in front only, so the model's, clock for clock. With 4 blocks of
    # each resource the tree is one piece: the unit registers the packed word only, the rest
    # is in front (it raised a ValueError while the dispatcher was built).
    from dataclasses import replace

    from model.dispatch.config import with_policy
    base = SHAPES["shared3x2"]
    gpu = replace(base.gpu, vgpr=blocks, sgpr=blocks, lds=blocks) if blocks else base.gpu
    shape = replace(base, name=f"shared3x2_l{latency}_{blocks}", gpu=gpu,
                    policy=with_policy(base.policy, circuit_latency=latency))
    build, reset_run = reset_build(shape, RESET_SEED, CYCLES)
    drivers = _drivers(build.params, shape, reset_run)
    simulate(build.dispatcher(), build.params, drivers)
    assert not _failures(drivers), _failures(drivers)[:3]
    assert all(driver.summary["dispatches"] > 0 for driver in drivers
               if hasattr(driver, "summary"))


# -- every mutant fails the fast tier ---------------------------------------------------------

def _mutant_drivers(mutant: str):
    broken, directed = MUTANTS[mutant]
    if mutant.startswith("reset_"):
        # The registers reset to a random policy that uses them (multi selection, a split
        # threshold of 4, the lowest AP first): the START-only run must differ.
        build, run = reset_build(SHAPES["shared3x2"], MUTANT_RESET_SEED, CYCLES)
        dispatcher = broken(build.gpu, build.policy, build.channels,
                            weight_bits=build.weight_bits)
        return dispatcher, [CosimDriver(build.params, run, configure=False)]
    shape = SHAPES[DIRECTED_SHAPE.get(directed, "exact4x2")]
    build = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options())
    dispatcher = broken(build.gpu, build.policy, build.channels,
                        weight_bits=build.weight_bits)
    if directed == "protocol":
        # The protocol checker alone (no model): its progress rule must see the slip.
        return dispatcher, [RandomDriver(build.params, 1, CYCLES)]
    if directed is None:
        run = random_run(shape, 2, CYCLES)
        return dispatcher, [CosimDriver(build.params, run, bad_releases=BAD_RELEASES)]
    return dispatcher, [CosimDriver(build.params, DIRECTED[directed](CYCLES))]


@pytest.mark.parametrize("mutant", MUTANTS)
def test_the_fast_tier_rejects_a_broken_dispatcher(mutant):
    dispatcher, drivers = _mutant_drivers(mutant)
    simulate(dispatcher, dispatcher.params, drivers)
    failures = _failures(drivers)
    assert failures, f"{mutant} passed the fast tier"
    print(f"{mutant} caught: {failures[0]}")


def test_the_progress_rule_alone_catches_a_dispatcher_at_half_rate():
    # The protocol checker, no model: a dispatcher that evaluates every other clock keeps
    # every other rule, and the progress rule must count its missed clocks.
    dispatcher, drivers = _mutant_drivers("every_other_clock")
    simulate(dispatcher, dispatcher.params, drivers)
    checker = drivers[0].checker
    assert checker.violation_count > 0 and all("no dispatch for" in v
                                               for v in checker.violations), checker.violations
    print(f"every_other_clock: {checker.violation_count} progress violations, the first "
          f"{checker.violations[0]}")


def test_a_broken_admission_check_stops_on_the_bound():
    # A dispatcher that admits the WGs the model refuses fills its FIFO before START; the
    # run ends on the bench's bound with the phase and the signal it waited on.
    shape = SHAPES["exact4x2"]
    build = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options())
    dispatcher = variant("queues", AdmitsEverything)(build.gpu, build.policy, build.channels,
                                                      weight_bits=build.weight_bits)
    driver = CosimDriver(build.params, DIRECTED["refused"](CYCLES))
    simulate(dispatcher, build.params, [driver])
    stall = driver.summary["stall"]
    assert stall and "phase 'rejects'" in stall and "wg_in[0].ready" in stall, stall


# -- in-order barriers ---------------------------------------------------------------------------

def _barrier_build(name: str) -> DispatchShape:
    shape = BARRIER_SHAPES[name]
    return DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options())


@pytest.mark.parametrize("name", BARRIER_SHAPES)
def test_in_order_barriers_match_the_model_under_amaranth(name):
    # Kernel launches on in-order streams (tb.dispatch_cases.barrier_workload), on a build
    # with barriers of each decision the RTL builds (one clock, k = 2, k = 3 on a stale
    # view): one run as it is, one with embodiment 3's splits and back-pressure, one under
    # each baseline selection the build runs (the one-WG buffer only without a pipeline),
    # one of random stimulus with random barrier bits judged by the protocol checker alone.
    shape = BARRIER_SHAPES[name]
    build = _barrier_build(name)
    started = time.perf_counter()
    baselines = ["strict", "rr_first_fit"] + ([] if build.params.pipeline
                                              else ["blocking_buffer"])
    drivers = [CosimDriver(build.params, barrier_run(shape, CYCLES)),
               CosimDriver(build.params, barrier_run(shape, CYCLES, 2, split=True,
                                                     pressure=PRESSURE))]
    drivers += [CosimDriver(build.params, barrier_run(shape, CYCLES, 3 + i, selection=rule))
                for i, rule in enumerate(baselines)]
    drivers.append(RandomDriver(build.params, 1, CYCLES))
    clocks = simulate(build.dispatcher(), build.params, drivers)
    print(f"{name}: {clocks} clocks in {time.perf_counter() - started:.1f} s")
    assert not _failures(drivers), _failures(drivers)[:3]
    plain, split = drivers[0].summary, drivers[1].summary
    assert plain["dispatches"] > 30 and split["splits"] > 0 and split["held"] > 0, \
        (plain, split)
    assert all(driver.summary["dispatches"] > 10 for driver in drivers[2:-1])
    assert drivers[-1].dispatches > 0


def test_a_barrier_workload_is_refused_on_a_build_without_barriers():
    # Before barriers were built, the bench drove such a workload without the bit and the
    # dispatcher sent barrier WGs early; now the bench refuses it, naming the option.
    shape = SHAPES["exact4x2"]
    build = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options())
    with pytest.raises(ValueError, match="built without them"):
        CosimDriver(build.params, barrier_run(BARRIER_SHAPES["barriers4x2"], CYCLES))


def test_barriers_off_keeps_the_ports_and_the_name():
    # barriers = False builds nothing of them: the same layouts and shape name as before
    # the option (the Verilog is compared byte for byte in the change's notes).
    shape = SHAPES["exact4x2"]
    plain = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options())
    assert "barriers" not in plain.to_json()
    assert "barrier" not in plain.params.workgroup_layout.members
    assert "channel" not in plain.params.record_layout.members
    built = _barrier_build("barriers4x2")
    assert DispatchShape.from_json(built.to_json()) == built and built.name != plain.name
    params = built.params
    assert params.workgroup_layout.size == plain.params.workgroup_layout.size + 1
    assert params.running_bits == params.records.bit_length() == 6      # 32 WGs at once
    with pytest.raises(TypeError, match="barriers must be True or False, not 1"):
        _ = DispatchShape.of(shape.gpu, shape.policy, shape.channels, barriers=1).params


@pytest.mark.parametrize("mutant", BARRIER_MUTANTS)
def test_the_fast_tier_rejects_a_broken_barrier(mutant):
    # Each slip must fail the model comparison; the protocol checker, which knows nothing of
    # the model, must see an early barrier by itself.
    broken, name = BARRIER_MUTANTS[mutant]
    shape, build = BARRIER_SHAPES[name], _barrier_build(name)
    dispatcher = broken(build.gpu, build.policy, build.channels,
                        weight_bits=build.weight_bits, barriers=True)
    drivers = [CosimDriver(build.params, barrier_run(shape, CYCLES))]
    simulate(dispatcher, build.params, drivers)
    summary, checker = drivers[0].summary, drivers[0].checker
    assert summary["mismatches"], f"{mutant} passed the model comparison"
    early = [v for v in checker.violations if "barrier WG" in v]
    if mutant != "barrier_count_never_falls":
        assert early, (mutant, checker.violations[:3])
    print(f"{mutant} caught: {summary['first']}; checker: {(early or ['-'])[0]}")


# -- the cocotb random set's coverage, measured here on the model ------------------------------

def _model_coverage(name: str, jobs: list[dict]) -> list:
    """Each model-compared job's coverage by the model alone: the cocotb set compares these
    runs with the RTL clock for clock, so where it passes it is the RTL's coverage too."""
    shape, out = SHAPES[name], []
    for job in jobs:
        if job["kind"] == "random":
            run = random_run(shape, job["seed"], job["cycles"], job.get("pressure", 0.0))
        elif job["kind"] == "directed":
            run = DIRECTED[job["name"]](job["cycles"])
        else:
            continue
        out.append(job_coverage(run))
    return out


def test_every_behaviour_is_exercised_by_three_jobs_of_the_cocotb_random_set(capsys):
    # The job list is the cocotb tier's own (tb.dispatch_cases.random_jobs): every selection
    # rule, windows, a41, a42, every AP choice, splits, stale aborts, flushes and
    # back-pressure, wherever the shape can exercise them, by at least three jobs.
    from rich.console import Console

    measured = {name: (SHAPES[name], _model_coverage(name, random_jobs(name)))
                for name in SHAPES}
    with capsys.disabled():
        coverage_table(measured, "coverage of the cocotb random set (model): jobs per "
                       "behaviour", console=Console(width=150))
    short = {name: shortfall(shape, jobs) for name, (shape, jobs) in measured.items()}
    assert not any(short.values()), {name: s for name, s in short.items() if s}


def test_the_coverage_check_fails_on_too_few_jobs():
    # The same check on the first five jobs of a shape (the random set's size before the
    # plan): it must report the behaviours they miss.
    name = "pipelined4x2"
    jobs = _model_coverage(name, random_jobs(name)[:5])
    missing = shortfall(SHAPES[name], jobs)
    assert len(missing) >= 3 and MINIMUM_JOBS == 3, missing


# -- embodiment 10's history register against its contract ------------------------------------

def _history_reference(shift: int, powers: list[int]) -> list[int]:
    """``x <- x - (x >> shift) + p`` per clock from 0, ``p`` the power in that clock."""
    x, seen = 0, []
    for p in powers:
        seen.append(x)
        x = x - (x >> shift) + p
    return seen


@pytest.mark.parametrize("shift", [1, 2, 4])
def test_the_history_register_matches_its_average_under_amaranth(shift):
    # The co-simulations see the history only through AP choices, which a uniformly scaled
    # history (an average one shift too slow: its fixed point doubles) rarely changes; so the
    # register itself is compared, clock for clock, with the average the model runs
    # (model.dispatch.resources.Resources.advance_ema, restated above; it failed on
    # tests/mutants/dispatch_history_decay_one_shift_more.patch, which the rest of the fast
    # tier let through): a WG of power 5 on AP 0 from clock 2, another
    # of power 3 on AP 1 from clock 4, the first released at clock 30.
    from amaranth.sim import Simulator

    from hw.dispatch.resources import ResourceTable
    shape = SHAPES["exact4x2"]
    params = DispatchShape.of(shape.gpu, shape.policy, shape.channels,
                              **shape.options()).params
    table = ResourceTable(params)
    clocks, seen = 60, {0: [], 1: []}
    power = {0: [0] * clocks, 1: [0] * clocks}
    for t in range(3, clocks):
        power[1][t] += 3 * (t >= 5)
        power[0][t] += 5 * (t < 31)

    async def bench(ctx):
        ctx.set(table.running, 1)
        ctx.set(table.history_shift, shift)
        tags = {}
        for t in range(clocks):
            ctx.set(table.allocate, 0)
            ctx.set(table.release.valid, 0)
            if t in (2, 4):
                ap = 0 if t == 2 else 1
                tags[ap] = ctx.get(table.tag)
                ctx.set(table.allocate, 1)
                ctx.set(table.record.ap, ap)
                ctx.set(table.record.wg, 10 + ap)
                ctx.set(table.record.power, 5 if ap == 0 else 3)
            if t == 30:
                ctx.set(table.release.valid, 1)
                ctx.set(table.release.payload.tag, tags[0])
                ctx.set(table.release.payload.wg, 10)
            for ap in (0, 1):
                seen[ap].append(ctx.get(table.history[ap]))
            await ctx.tick()
        assert not ctx.get(table.error)

    sim = Simulator(table)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    for ap in (0, 1):
        assert seen[ap] == _history_reference(shift, power[ap]), (shift, ap, seen[ap])
    assert max(seen[0]) > 0 and max(seen[1]) > 0


# -- the admission of a WG without waves ---------------------------------------------------------

@pytest.mark.parametrize("name", ["exact4x2", "pipelined4x2"])
def test_a_workgroup_without_waves_is_refused(name):
    """``waves = 0`` is outside the port contract (the model's readers refuse it): the channel
    refuses it as it refuses a WG no AP can hold (``reject`` the next clock, nothing queued),
    rather than admitting a WG that takes blocks but no wave slot. A WG of one wave with the
    same needs is admitted, so the check is not vacuous."""
    from amaranth.sim import Simulator

    from hw.dispatch.queues import ChannelQueues

    shape = SHAPES[name]
    params = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options()).params
    dut = ChannelQueues(params)
    seen = {}

    async def bench(ctx):
        for waves in (0, 1):
            ctx.set(dut.wg_in[0].payload, {"wg": 3 + waves, "priority": 0, "waves": waves,
                                           "vgpr": 1, "sgpr": 1, "lds": 1, "independent": 0})
            ctx.set(dut.wg_in[0].valid, 1)
            await ctx.tick().until(dut.wg_in[0].ready)
            ctx.set(dut.wg_in[0].valid, 0)
            seen[waves] = (ctx.get(dut.reject[0]), ctx.get(dut.heads[0].valid))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen[0] == (1, 0), seen          # refused, nothing queued
    assert seen[1] == (0, 1), seen          # the same WG with one wave is the head


# -- the bench on shapes the shipped ones do not have (a random-shape campaign's findings) -----

def _odd_shape(name, channels, gpu, **policy):
    from model.dispatch.config import PRESETS, GpuConfig, with_policy
    from tb.dispatch_cases import Shape
    gpu = GpuConfig(**gpu)
    return Shape(name, gpu, with_policy(PRESETS["seed"], history="ema", history_cycles=64,
                                        windows=PRESETS["seed"].windows[:gpu.priorities],
                                        **policy), channels)


def test_random_runs_on_a_one_channel_shape():
    # random_channels drew 2..channels channels for a planned job: an empty range with one.
    shape = _odd_shape("one", 1, dict(aps=3, peus=1, vgpr=7, sgpr=17, lds=33, wave_slots=3,
                                      priorities=2), circuit_latency=3)
    for seed in range(6):                           # every selection of the plan
        run = random_run(shape, seed, 100)
        assert len(run.channels) == 1 and run.result["workgroups_completed"] > 0


def test_the_reset_build_keeps_the_shapes_score_latency():
    # A reset policy whose AP choice reads no score read its score_latency as 0; the build
    # then refused every run of the shape with scores 4 cycles old (config_writes).
    shape = _odd_shape("r7", 3, dict(aps=1, peus=3, vgpr=3, sgpr=17, lds=17, wave_slots=4,
                                     priorities=8),
                       circuit="grouped", group_size=1, circuit_latency=3,
                       combined_scale="all", decision_pipeline=4, score_latency=4)
    build, _ = reset_build(shape, RESET_SEED, 100)
    assert build.params.policy.score_latency == 4
    run = random_run(shape, 7, 100, pressure=PRESSURE)
    CosimDriver(build.params, run)                  # its configuration writes are accepted


def test_a_bad_release_never_names_a_good_one():
    # Two records, a 1-bit tag: with both in flight the "tag beyond the records" (2) wrapped
    # onto tag 0, a good release three cycles early, and the run mismatched from clock 56.
    shape = _odd_shape("r78", 4, dict(aps=2, peus=1, vgpr=7, sgpr=2, lds=5, wave_slots=1,
                                      priorities=8),
                       circuit="sampled", circuit_latency=1, combined_scale="all")
    build, _ = reset_build(shape, RESET_SEED, 200)
    assert build.params.records == 2
    driver = CosimDriver(build.params, random_run(shape, 79, 200), bad_releases=BAD_RELEASES)
    simulate(build.dispatcher(), build.params, [driver])
    assert driver.summary["bad_releases"] == BAD_RELEASES
    assert _failures([driver]) == []


def test_a_beat_held_after_the_models_last_wg_is_compared_as_held():
    # Found by a random campaign (blocking_buffer, id_bits 4): the model finished (every
    # WG completed) while its last decision was still presented and dispatch.ready stayed
    # low; the held cycles stopped at the model's end and the bench took the RTL's beat,
    # still presented, for a dispatch the model did not make.
    from model.dispatch.config import ChannelConfig, WorkGroup
    from tb.dispatch_bench import model_run

    shape = SHAPES["exact4x2"]
    build = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options())
    workload = [WorkGroup(id=0, channel=0, priority=0, waves=1, vgpr=1, sgpr=0, lds=0,
                          duration=2, independent=False, arrival=3)]
    cycles = 30
    run = model_run("held after the end", shape.gpu, shape.policy, workload,
                    [ChannelConfig()], cycles, not_ready=frozenset(range(4, 25)))
    driver = CosimDriver(build.params, run)
    simulate(build.dispatcher(), build.params, [driver])
    assert _failures([driver]) == []
    assert driver.summary["dispatches"] == 1 and driver.summary["held"] == 21


#: Random shapes co-simulated in every run (set 1's first ones, each replayed by its index:
#: ``random_shape(index)``); ``RANDOM_SHAPES=N`` runs N (a campaign of 73 found no RTL
#: mismatch and the three bench bugs above).
RANDOM_SHAPES = int(os.environ.get("RANDOM_SHAPES", "5"))


@pytest.mark.parametrize("index", range(RANDOM_SHAPES))
def test_random_shapes_match_the_model_under_amaranth(index):
    shape = random_shape(index)
    build, reset_run = reset_build(shape, RESET_SEED, CYCLES)
    params = build.params
    drivers = [CosimDriver(params, reset_run, configure=False),
               CosimDriver(params, random_run(shape, index, CYCLES, pressure=PRESSURE)),
               CosimDriver(params, random_run(shape, index + 1, CYCLES),
                           bad_releases=BAD_RELEASES),
               RandomDriver(params, index, CYCLES)]
    simulate(build.dispatcher(), params, drivers)
    assert not _failures(drivers), (f"random_shape({index}) = {shape}",
                                    _failures(drivers)[:3])
    assert all(driver.summary["cycles"] == CYCLES for driver in drivers[:3])
