"""The compiled engine (model/dispatch/core) against the Python golden model, run for run:
the whole result and the event log identical on the shipped scenarios and on 200 random
configurations x every preset (random knobs: every circuit and latency, rotation, windows,
splits, AP choice, history, weights, barriers, release limits, decision pipelines, the
shared-issue model, the least-loaded placement; the faithful baselines with every units value,
GPGPU-Sim's concurrent mode beside its preset), with back-pressure (the held cycles too) and
with a launch tally as the event sink. Only the runs the compiled engine takes are compared;
``unsupported`` names the others. A difference prints the seed and the first differing event
or result field."""

import random
from collections import Counter
from dataclasses import fields, replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from model.config import ConfigError
from model.dispatch import DispatchSimulator, load_scenario
from model.dispatch.config import (
    FAITHFUL_SELECTIONS,
    UNITS,
    WorkGroup,
    check_policy,
    with_policy,
)
from model.dispatch.core import core, reason
from model.dispatch.core.engine import run, unsupported
from model.dispatch.engine import ENGINES
from model.dispatch.kernels import prepare, trace_scenario
from model.dispatch.launches import LaunchTally
from tests.test_dispatch_exact import random_case, shared_case

pytestmark = pytest.mark.skipif(core is None, reason=reason or "compiled core not built")

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "dispatch"


def _rows(events):
    return [(cycle, kind, wg.id, wg.parent, wg.channel, wg.priority, wg.waves, wg.vgpr,
             wg.sgpr, wg.lds, wg.independent, wg.duration, wg.arrival, wg.work, wg.barrier,
             wg.dispatched, wg.completed, wg.ap, ap, waves, starts, why)
            for cycle, kind, wg, ap, waves, starts, why in events]


def _first_difference(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            found = _first_difference(a.get(key), b.get(key), f"{path}.{key}")
            if found:
                return found
        return None
    return None if a == b else f"{path}: python {str(a)[:200]} / compiled {str(b)[:200]}"


def _compiles(policy, **options) -> bool:
    return unsupported(policy, execution=options.get("execution", "fixed"),
                       dispatch_ready=options.get("dispatch_ready"),
                       cycles=options.get("cycles", 20000)) is None


def _both(gpu, policy, workload, python_events, compiled_events, **options):
    """The Python and the compiled simulator of one run, and their results; ``None`` when
    the compiled run refuses it (a shared-issue run past its counters' bound: OverflowError,
    before it changes anything)."""
    compiled = DispatchSimulator(gpu, policy, workload, events=compiled_events, keep=False,
                                 **options)
    try:
        got = run(compiled, compiled_events)
    except OverflowError:
        return None
    python = DispatchSimulator(gpu, policy, workload, events=python_events, keep=False,
                               engine="python", **options)
    return python, python.run(), compiled, got


def same_run(gpu, policy, workload, where: str, **options):
    """Run ``policy`` on both engines; assert equal results, event logs and held cycles.
    The compiled simulator, or ``None`` when the compiled engine does not take the run."""
    if not _compiles(policy, **options):
        return None
    python_events, compiled_events = [], []
    ran = _both(gpu, policy, workload, python_events, compiled_events, **options)
    if ran is None:
        return None
    python, expected, compiled, got = ran
    expected_rows, got_rows = _rows(python_events), _rows(compiled_events)
    if expected_rows != got_rows:
        index = next((i for i, (x, y) in enumerate(zip(expected_rows, got_rows, strict=False))
                      if x != y), min(len(expected_rows), len(got_rows)))
        pytest.fail(f"{where}, policy {policy.name}: event {index} differs: python "
                    f"{expected_rows[index:index + 1]} / compiled {got_rows[index:index + 1]}"
                    f" ({len(expected_rows)} and {len(got_rows)} events)")
    difference = _first_difference(expected, got)
    assert difference is None, f"{where}, policy {policy.name}: {difference}"
    assert compiled.held_cycles == python.held_cycles, (
        f"{where}, policy {policy.name}: held cycles python {python.held_cycles[:20]} / "
        f"compiled {compiled.held_cycles[:20]}")
    return compiled


@pytest.mark.parametrize("chunk", range(4))
def test_random_configurations_match_the_python_model(chunk):
    compared = shared = rotating = 0
    faithful = Counter()                # (selection, units) of the faithful runs compared
    for seed in range(chunk, 200, 4):
        gpu, channels, workload, cycles, policies, interval = random_case(seed)
        execution = "fixed"
        rng = random.Random(f"{seed}/core")
        # Barriers, least-loaded placement, the shared-issue model (issue width, drain, work),
        # release limits and decision pipelines on some runs (a second generator:
        # random_case(seed) stays the skip test's).
        if rng.random() < 0.3:
            gpu, channels, workload, cycles, policies, interval, execution = shared_case(seed)
        # No preset has GPGPU-Sim's concurrent mode: the gpgpusim policy's twin in it.
        concurrent = [with_policy(p, selection="gpgpusim_concurrent",
                                  name=f"{p.name}-concurrent")
                      for p in policies if p.selection == "gpgpusim"]
        for policy in policies + concurrent:
            policy = _knobs(policy, gpu, rng)
            ran = same_run(gpu, policy, workload, f"random case {seed}", channels=channels,
                           cycles=cycles, sample_interval=interval,
                           warmup=rng.choice([0, cycles // 3]), execution=execution)
            compared += ran is not None
            shared += ran is not None and execution == "shared"
            rotating += ran is not None and policy.score_refresh == "rotating"
            if ran is not None and policy.selection in FAITHFUL_SELECTIONS:
                faithful[policy.selection, policy.units] += 1
    assert compared >= 200, f"only {compared} runs compiled"
    # Every faithful baseline compiled on most seeds (50 a chunk), with every units value.
    for selection in FAITHFUL_SELECTIONS:
        runs = sum(faithful[selection, units] for units in UNITS)
        assert runs >= 20, f"{selection}: only {runs} runs compiled"
        missing = [units for units in UNITS if not faithful[selection, units]]
        assert not missing, f"{selection}: no run compiled with units {missing}"
    assert shared >= 10, f"only {shared} shared-issue runs compiled"
    assert rotating >= 5, f"only {rotating} runs with rotating scores compiled"


@pytest.mark.parametrize("chunk", range(2))
def test_shared_issue_configurations_match_the_python_model(chunk):
    # Every shared_case configuration x every preset: the shared-issue model (two in three),
    # issue width, drain, work per wave, barriers and the least-loaded placement.
    compared = shared = least_loaded = pooled = 0
    for seed in range(chunk, 200, 2):
        gpu, channels, workload, cycles, policies, interval, execution = shared_case(seed)
        for policy in policies:
            ran = same_run(gpu, policy, workload, f"shared case {seed} ({execution})",
                           channels=channels, cycles=cycles, sample_interval=interval,
                           execution=execution)
            compared += ran is not None
            shared += ran is not None and execution == "shared"
            # MIAOW's pooled model (one issue pool per AP, 128-bit counters in C++).
            pooled += ran is not None and execution == "shared" and policy.units == "ap_range"
            least_loaded += ran is not None and policy.wave_placement == "least_loaded"
    assert shared >= 250 and least_loaded >= 150 and pooled >= 30, (
        f"only {shared} shared-issue, {pooled} pooled and {least_loaded} least-loaded runs "
        f"compiled")


def _knobs(policy, gpu, rng):
    """``policy`` with release limits, decision pipelines and the combined score's scale on
    some runs (drawn from ``rng``), when the policy check takes them."""
    changes = {}
    if rng.random() < 0.2:
        changes["release_limit"] = rng.randint(1, 2)
    if policy.selection in ("multi", "strict", "rr_first_fit") and rng.random() < 0.4:
        changes.update(decision_pipeline=rng.randint(2, 5),
                       score_latency=rng.randint(0, 3))
        if policy.wave_placement != "split":
            changes.update(wave_placement="split")
    if policy.selection == "multi" and rng.random() < 0.3:
        changes["combined_scale"] = "all"
    # Rotating scores on half the pipelined runs whose AP choice reads a score (drawn apart,
    # so that the other draws are those of the runs before rotating scores).
    if ("decision_pipeline" in changes and policy.ap_choice in ("resource", "instruction",
                                                                "combined")
            and random.Random(f"{policy.name}/{sorted(changes.items())}").random() < 0.5):
        changes["score_refresh"] = "rotating"
        if policy.ap_choice == "combined":
            changes["combined_scale"] = "all"
    try:
        candidate = with_policy(policy, **changes)
        check_policy(candidate, gpu)
        return candidate
    except (ConfigError, ValueError):
        return policy           # a combination the policy check refuses


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.stem)
def test_shipped_scenarios_match_the_python_model(path):
    scenario, _ = prepare(load_scenario(path))      # a kernel trace converted
    workload = scenario.workload(1, copy=False)
    compared = sum(same_run(scenario.gpu, policy, workload, f"{path.name} seed 1",
                            channels=scenario.channels, cycles=scenario.cycles,
                            sample_interval=scenario.sample_interval,
                            power_window=scenario.power_window, warmup=scenario.warmup,
                            execution=scenario.execution) is not None
                   for policy in scenario.policies)
    assert compared, f"{path.name}: no policy ran compiled"


@pytest.mark.parametrize("chunk", range(2))
def test_back_pressure_matches_the_python_model(chunk):
    # Random configurations (the shared-issue ones half the time) with a random ready
    # pattern per run (mostly ready, half ready, rarely ready): results, event logs and the
    # held cycles identical, decision pipelines (whose stages hold) included.
    compared = held = pipelined = 0
    for seed in range(chunk, 80, 2):
        rng = random.Random(f"{seed}/ready")
        if rng.random() < 0.5:
            gpu, channels, workload, cycles, policies, interval = random_case(seed)
            execution = "fixed"
        else:
            gpu, channels, workload, cycles, policies, interval, execution = shared_case(seed)
        for policy in policies:
            policy = _knobs(policy, gpu, rng)
            chance = rng.choice([0.95, 0.5, 0.1])
            pattern = [rng.random() < chance for _ in range(cycles)]
            ran = same_run(gpu, policy, workload, f"back-pressure case {seed} ({chance})",
                           channels=channels, cycles=cycles, sample_interval=interval,
                           execution=execution, dispatch_ready=pattern.__getitem__)
            if ran is not None:
                compared += 1
                held += len(ran.held_cycles)
                pipelined += bool(policy.decision_pipeline and ran.held_cycles)
    assert compared >= 150, f"only {compared} runs compiled"
    assert held >= 1000 and pipelined >= 10, f"{held} held cycles, {pipelined} pipelines held"


class _Recorder:
    """An event sink with ``record``: keeps what each call names (ids, not WG objects)."""

    def __init__(self):
        self.calls = []

    def record(self, cycle, kind, wg, *args, **kwargs):
        args = [(a.wg.id, a.ap, a.waves, a.vgpr, a.sgpr, a.lds, a.power)
                if hasattr(a, "power") else a for a in args]
        self.calls.append((cycle, kind, wg.id, wg.parent, *args, sorted(kwargs.items())))


def test_a_launch_tally_is_told_what_the_python_model_tells_it():
    # An events object with `record` (a LaunchTally; a recorder of every call's arguments)
    # is told the same calls, allocations included, on random shared-issue and fixed runs.
    compared = 0
    for seed in range(40):
        gpu, channels, workload, cycles, policies, interval, execution = shared_case(seed)
        options = dict(channels=channels, cycles=cycles, sample_interval=interval,
                       execution=execution)
        # Launches of 1-8 consecutive WG ids (split parts count for their parent).
        rng, spans, first = random.Random(f"{seed}/tally"), [], 0
        while first < len(workload):
            count = min(rng.randint(1, 8), len(workload) - first)
            spans.append(SimpleNamespace(first_wg=workload[first].id, workgroups=count))
            first += count
        for policy in policies:
            if not _compiles(policy, **options) or unsupported(
                    policy, execution=execution, events=_Recorder()) is not None:
                continue
            recorders, tallies = (_Recorder(), _Recorder()), (LaunchTally(spans),
                                                              LaunchTally(spans))
            for python_sink, compiled_sink in (recorders, tallies):
                ran = _both(gpu, policy, workload, python_sink, compiled_sink, **options)
                if ran is None:                 # past the compiled counters' bound
                    break
                _, expected, _, got = ran
                assert _first_difference(expected, got) is None, f"case {seed}, {policy.name}"
            where = f"tally case {seed}, policy {policy.name}"
            python, compiled = (r.calls for r in recorders)
            if python != compiled:
                index = next((i for i, (x, y) in enumerate(zip(python, compiled, strict=False))
                              if x != y), min(len(python), len(compiled)))
                pytest.fail(f"{where}: call {index} differs: python {python[index:index + 1]}"
                            f" / compiled {compiled[index:index + 1]}")
            for name in ("starts", "finishes", "released"):
                assert getattr(tallies[0], name) == getattr(tallies[1], name), f"{where}: {name}"
            compared += 1
    assert compared >= 150, f"only {compared} runs compiled"


def test_what_does_not_compile_says_why_in_one_line():
    gpu, _, _, _, policies, _ = random_case(0)
    miaow = next(p for p in policies if p.selection == "miaow")
    assert unsupported(miaow) is None
    assert unsupported(miaow, execution="shared") is None
    pooled = with_policy(miaow, units="ap_range")
    assert unsupported(pooled, execution="shared") is None
    seed = next(p for p in policies if p.selection == "multi")
    assert unsupported(seed, execution="shared") is None
    assert unsupported(seed, dispatch_ready=bool, cycles=1 << 30) == \
        "not compiled yet: back-pressure over more than 67108864 cycles"
    assert unsupported(seed, events=object()) == \
        "not compiled yet: an events object without record"
    assert unsupported(with_policy(seed, wave_placement="least_loaded", rotate=False)) is None
    assert unsupported(replace(seed)) is None


def test_a_run_past_the_compiled_bounds_runs_on_the_python_engine():
    # A shared-issue run whose service counters could pass 63 bits (64 wave slots: the unit
    # is lcm(1..64)) is not refused: the compiled run checks the bound, in one line, and
    # DispatchSimulator runs it here.
    gpu, channels, workload, cycles, policies, interval, _ = shared_case(0)
    seed = next(p for p in policies if p.selection == "multi")
    wide = replace(gpu, wave_slots=64)
    simulator = DispatchSimulator(wide, seed, workload, channels=channels, cycles=cycles,
                                  sample_interval=interval, execution="shared", keep=False)
    result = simulator.run()
    assert simulator.engine_used == "python"
    assert simulator.engine_note == ("not compiled yet: a shared-issue run whose service "
                                     "counters may exceed 64 bits")
    assert result["workgroups_submitted"] + result["workgroups_after_end"] == len(workload)
    # MIAOW's pooled model counts in 128 bits: 64 slots per AP fit (lcm(1..64) is about
    # 2^88), 128 do not.
    miaow = next(p for p in load_scenario(CONFIGS / "default.toml").policies
                 if p.name == "miaow")
    assert miaow.units == "ap_range"
    for peus, engine in ((4, "compiled"), (8, "python")):
        simulator = DispatchSimulator(replace(wide, wave_slots=16, peus=peus), miaow, workload,
                                      channels=channels, cycles=cycles,
                                      sample_interval=interval, execution="shared", keep=False)
        simulator.run()
        assert simulator.engine_used == engine, (peus, simulator.engine_note)
    assert simulator.engine_note == ("not compiled yet: a shared-issue run whose service "
                                     "counters may exceed 128 bits")


@pytest.mark.parametrize("name", ["llamacpp_rdna4.toml", "llamacpp_requests.toml"])
def test_launch_tallies_match_the_python_model(name):
    # A kernel trace's per-launch rows (gpusched dispatch --kernel-trace keeps a tally, not
    # the event rows): the compiled engine tallies in C++, the same rows as the Python one.
    scenario, converted = prepare(load_scenario(CONFIGS / name))
    workload = scenario.workload(1, copy=False)
    compared = 0
    for policy in scenario.policies:
        if unsupported(policy, execution=scenario.execution,
                       events=LaunchTally(converted.launches)) is not None:
            continue
        tallies = {engine: LaunchTally(converted.launches) for engine in ENGINES}
        results = {engine: DispatchSimulator(
            scenario.gpu, policy, workload, channels=scenario.channels, cycles=scenario.cycles,
            sample_interval=scenario.sample_interval, power_window=scenario.power_window,
            warmup=scenario.warmup, execution=scenario.execution, events=tallies[engine],
            keep=False, engine=engine).run() for engine in ENGINES}
        assert results["compiled"] == results["python"], (name, policy.name)
        assert tallies["compiled"].rows(policy.name) == tallies["python"].rows(policy.name), \
            (name, policy.name)
        compared += 1
    assert compared, f"{name}: no policy ran compiled"


@pytest.mark.parametrize("chunk", range(2))
def test_results_without_an_event_log_match_the_python_model(chunk):
    # Without an event log the compiled engine drops each WG once it and every WG before it
    # are done (a whole trace's memory): the same results as the Python model's.
    compared = 0
    for seed in range(chunk, 100, 2):
        gpu, channels, workload, cycles, policies, interval, execution = shared_case(seed)
        for policy in policies:
            options = dict(channels=channels, cycles=cycles, sample_interval=interval,
                           execution=execution)
            if not _compiles(policy, **options):
                continue
            got = DispatchSimulator(gpu, policy, workload, keep=False, engine="compiled",
                                    **options)
            result = got.run()
            if got.engine_note is not None and "service counters" in got.engine_note:
                continue                        # past the compiled counters' bound
            assert got.engine_used == "compiled", got.engine_note
            expected = DispatchSimulator(gpu, policy, workload, keep=False, engine="python",
                                         **options).run()
            difference = _first_difference(expected, result)
            assert difference is None, f"case {seed}, policy {policy.name}: {difference}"
            compared += 1
    assert compared >= 200, f"only {compared} runs compiled"


REAL_TRACES = sorted((Path(__file__).resolve().parent / "data" / "nvprof-magus")
                     .glob("traces_*.csv"))


@pytest.mark.parametrize("path", REAL_TRACES, ids=lambda p: p.stem)
def test_real_traces_match_the_python_model(path):
    # Every shipped real trace (nvprof on a GTX 1080 Ti; the llama.cpp rocprof trace is in the
    # scenarios above) replayed on its GPU with every preset: results and launch tallies.
    scenario, converted = prepare(trace_scenario(path, "pascal-sm"))
    workload = scenario.workload(1, copy=False)
    compared = 0
    for policy in scenario.policies:
        tallies = {engine: LaunchTally(converted.launches) for engine in ENGINES}
        simulators = {engine: DispatchSimulator(
            scenario.gpu, policy, workload, channels=scenario.channels, cycles=scenario.cycles,
            sample_interval=scenario.sample_interval, power_window=scenario.power_window,
            warmup=scenario.warmup, execution=scenario.execution, events=tallies[engine],
            keep=False, engine=engine) for engine in ENGINES}
        results = {engine: simulator.run() for engine, simulator in simulators.items()}
        if simulators["compiled"].engine_used != "compiled":
            continue
        difference = _first_difference(results["python"], results["compiled"])
        assert difference is None, f"{path.name}, policy {policy.name}: {difference}"
        assert tallies["compiled"].rows(policy.name) == tallies["python"].rows(policy.name), \
            (path.name, policy.name)
        compared += 1
    assert compared == len(scenario.policies), f"{path.name}: {compared} policies compiled"


class _Annotated(WorkGroup):
    """A WorkGroup subclass with a ``__dict__`` (a user's own WG type): the compiled run reads
    its fields by getattr, not at WorkGroup's slot offsets."""

    def __init__(self, wg, note):
        super().__init__(*(getattr(wg, f.name) for f in fields(WorkGroup)))
        self.note = note


def test_workgroups_of_another_type_are_read_by_their_attributes():
    # Every other WG of a random case is an _Annotated: the fields read from its slots and by
    # getattr must give the Python model's run.
    gpu, channels, workload, cycles, policies, interval = random_case(3)
    mixed = [_Annotated(wg, "x") if i % 2 else wg for i, wg in enumerate(workload)]
    assert any(type(wg) is not WorkGroup for wg in mixed)
    compared = sum(same_run(gpu, policy, mixed, "mixed WG types", channels=channels,
                            cycles=cycles, sample_interval=interval) is not None
                   for policy in policies)
    assert compared >= 5
    broken = list(workload)
    middle = len(broken) // 2
    broken[middle] = SimpleNamespace(**{f.name: getattr(workload[middle], f.name)
                                        for f in fields(WorkGroup) if f.name != "lds"})
    with pytest.raises(AttributeError, match="lds"):
        DispatchSimulator(gpu, policies[0], broken, channels=channels, cycles=cycles,
                          keep=False, engine="compiled").run()
