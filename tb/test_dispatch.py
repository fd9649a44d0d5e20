"""cocotb bench: the RTL dispatcher against the model, clock for clock, and its protocol.

The build's shape arrives as JSON in ``DISPATCH_SHAPE`` (:class:`hw.flow.dispatch_build.
DispatchShape`), the runs in the JSON file ``DISPATCH_JOBS``: a list of jobs, each one of

``{"kind": "scenario", "path": FILE, "policy": NAME, "cycles": N, "seed": S}``
    a shipped (or any) scenario's workload and policy, run by the model (``"reduce": true``:
    reduced as :data:`hw.flow.dispatch_cosim.REDUCTION` says);
``{"kind": "random", "shape": NAME, "seed": S, "cycles": N}``
    :func:`tb.dispatch_cases.random_run` on one of :data:`tb.dispatch_cases.SHAPES`
    (``"pressure": F``: with back-pressure, the model holding as the RTL does);
``{"kind": "directed", "name": NAME, "cycles": N}``
    :data:`tb.dispatch_cases.DIRECTED`, workloads aimed at one mechanism;
``{"kind": "protocol", "seed": S, "clocks": N}``
    random stimulus with back-pressure, checked by the protocol checker alone.

A model-compared job may add ``"bad_releases": N``: N releases of tags not in flight or of
other WGs during the run, which must raise ``error`` and change nothing.

The jobs run one after the other on the same simulation, with a reset between them (each
configures the dispatcher through its configuration port). Every job's summary goes to the
JSON file ``DISPATCH_RESULTS``; the test fails at the end if any job had a mismatch or a
protocol violation, naming the first.
"""

import json
import os
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from hw.flow.dispatch_build import DispatchShape
from hw.flow.dispatch_cosim import prepared, reduced
from model.dispatch import load_scenario
from tb.dispatch_bench import CosimDriver, RandomDriver, input_ports, model_run, output_ports
from tb.dispatch_cases import DIRECTED, SHAPES, random_run
from tb.values import resolved

#: The registered outputs the driver reads at the start of a clock, before it drives.
REGISTERED = ("dispatch.valid", "dispatch.payload")


def _handle(dut, name: str):
    return getattr(dut, name.replace(".", "__"))


def _job_driver(params, job: dict):
    kind = job["kind"]
    if kind == "protocol":
        return RandomDriver(params, job["seed"], job["clocks"])
    if kind == "random":
        run = random_run(SHAPES[job["shape"]], job["seed"], job["cycles"],
                         job.get("pressure", 0.0))
    elif kind == "directed":
        run = DIRECTED[job["name"]](job["cycles"])
    else:
        # (A kernel trace is converted as far as the run reaches, the stagger of its windows
        # drawn per seed as the model draws it.)
        scenario = prepared(load_scenario(job["path"]), job["cycles"])
        policy = next(p for p in scenario.policies if p.name == job["policy"])
        gpu, workload = scenario.gpu, scenario.workload(job.get("seed", 1))
        label = f"{Path(job['path']).name} / {policy.name}"
        if job.get("reduce"):
            gpu, (policy,), workload = reduced(gpu, [policy], workload)
            label += " (reduced)"
        run = model_run(label, gpu, policy, workload, scenario.channels, job["cycles"],
                        execution=scenario.execution)
    return CosimDriver(params, run, bad_releases=job.get("bad_releases", 0))


async def _run_job(dut, params, driver, inputs, outputs) -> None:
    await RisingEdge(dut.clk)             # leave the read-only phase of the last clock
    dut.rst.value = 1
    for handle in inputs.values():
        handle.value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    total = getattr(getattr(driver, "run", None), "cycles", 0) or getattr(driver, "clocks", 0)
    step, clock = max(total // 10, 1), 0
    while not driver.done:
        clock += 1
        if clock % step == 0 and getattr(driver, "cycle", None) is not None:
            dut._log.info("progress: cycle %d of %d", driver.cycle, total)
        await RisingEdge(dut.clk)
        await Timer(1, unit="ns")
        registered = _read({name: outputs[name] for name in REGISTERED}, clock)
        for name, value in driver.inputs(registered).items():
            inputs[name].value = value
        await ReadOnly()
        driver.outputs(_read(outputs, clock))


def _read(outputs: dict, clock: int) -> dict[str, int]:
    """Every output as an integer; an output with X or Z bits (Icarus is four-state) fails
    the job naming the port, its value and the clock."""
    values = {}
    for name, handle in outputs.items():
        value = handle.value
        number = resolved(value)
        if number is None:
            raise AssertionError(f"clock {clock}: output {name} is {value} (X or Z bits)")
        values[name] = number
    return values


@cocotb.test()
async def cosimulation(dut):
    """Every job of ``DISPATCH_JOBS`` on this build."""
    shape = DispatchShape.from_json(os.environ["DISPATCH_SHAPE"])
    params = shape.params
    jobs = json.loads(Path(os.environ["DISPATCH_JOBS"]).read_text())
    inputs = {name: _handle(dut, name) for name in input_ports(params)}
    outputs = {name: _handle(dut, name) for name in output_ports(params)}
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    summaries = []
    for job in jobs:
        driver = _job_driver(params, job)
        await _run_job(dut, params, driver, inputs, outputs)
        if isinstance(driver, RandomDriver):
            summary = {"label": f"protocol seed {job['seed']}", "clocks": driver.clock,
                       "dispatches": driver.dispatches, "mismatches": 0, "first": None}
            compared = "no model"
        else:
            summary = dict(driver.summary)
            compared = f"{summary['dispatches']} dispatches compared, " \
                       f"{summary['mismatches']} mismatches"
        summary["job"] = job
        checker = driver.checker
        summary["violations"] = checker.violations
        summary["violation_count"] = checker.violation_count
        summary["longest_wait"] = checker.longest_wait
        summaries.append(summary)
        # The checker's own count, not the model's: a protocol-only job has no mismatches.
        dut._log.info("%s: %d cycles, %s; protocol checker: %d dispatches, %d violations "
                      "(longest wait for an owed dispatch %d clocks)%s",
                      summary["label"], summary.get("cycles", summary["clocks"]), compared,
                      checker.dispatched, checker.violation_count, checker.longest_wait,
                      f": {summary['first'] or checker.violations[0]}"
                      if summary["first"] or checker.violations else "")
    Path(os.environ["DISPATCH_RESULTS"]).write_text(json.dumps(summaries, indent=1))
    bad = [s for s in summaries if s["mismatches"] or s["violations"]]
    assert not bad, (f"{len(bad)} of {len(summaries)} runs differ: "
                     f"{bad[0]['first'] or bad[0]['violations'][0]}"
                     + (f"; then {bad[0]['stall']}" if bad[0].get("stall") else ""))
