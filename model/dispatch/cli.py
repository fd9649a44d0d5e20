"""``gpusched dispatch`` (alias ``gpusched sim``): run the dispatcher scenarios, compare the
policies, plot, write JSON.

Every scenario file runs every policy it lists on the same workload (same seed). Per scenario:
a table comparing the policies, a PNG (``<plots>/dispatch_<scenario>.png``: utilisation over
time, wait per priority, per-PEU wave balance); after all scenarios, a table of the
scenarios' claims (the seed's assertions, each as a measured ratio). ``--bench`` instead
times every policy on the default scenario and prints simulated cycles per second.
``--kernel-trace FILE --preset GPU`` replays a profiler's kernel trace instead
(:mod:`model.dispatch.kernels`).
"""

import argparse
import time
from pathlib import Path

import numpy as np

from model.cli import CONFIG_ROOT
from model.config import ConfigError
from model.dispatch.config import load_scenario, write_trace
from model.dispatch.engine import DispatchSimulator
from model.dispatch.gpus import GPU_PRESETS
from model.dispatch.kernels import prepare, print_summary, trace_scenario
from model.dispatch.profilers import FORMATS
from model.report import figure, print_table, progress, save_figure, write_json

__all__ = ["add_arguments", "claim_rows", "run", "run_scenario"]

QUICK_CYCLES = 3000
TRACE_CYCLES = 200_000          # default cycle limit of --kernel-trace


def add_arguments(parser) -> None:
    parser.add_argument("--policy", action="append", metavar="NAME",
                        help="run only this policy (repeatable; default: every policy the "
                             "scenario lists)")
    parser.add_argument("--cycles", type=int, metavar="N",
                        help="cycle limit (default: the scenario's)")
    parser.add_argument("--write-trace", type=Path, metavar="CSV",
                        help="write the (first) scenario's workload as a CSV trace")
    parser.add_argument("--debug", action="store_true",
                        help="check every invariant every cycle (as the tests do)")
    parser.add_argument("--bench", action="store_true",
                        help="print simulated cycles per second per policy")
    # -- kernel traces (issue 15) --
    traces = parser.add_argument_group("kernel traces (instead of the scenario files)")
    traces.add_argument("--kernel-trace", type=Path, metavar="FILE",
                        help="a profiler's per-launch kernel trace (formats: "
                             f"{', '.join(FORMATS)})")
    traces.add_argument("--preset", choices=tuple(GPU_PRESETS),
                        help="the GPU it runs on (required with --kernel-trace)")
    traces.add_argument("--format", choices=tuple(FORMATS),
                        help="the trace's format (default: detected from its header)")
    traces.add_argument("--kernels", type=_window, metavar="FIRST:LAST",
                        help="launches FIRST..LAST-1 only (0-based, file order)")
    traces.add_argument("--clock-mhz", type=int, metavar="MHZ",
                        help="the clock that turns the trace's time into cycles (default: the "
                             "preset's)")


def _window(text: str) -> tuple[int, int | None]:
    first, _, last = text.partition(":")
    try:
        window = (int(first or 0), int(last) if last else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be FIRST:LAST, not {text!r}") from None
    if window[0] < 0 or (window[1] is not None and window[1] <= window[0]):
        raise argparse.ArgumentTypeError(f"must be FIRST:LAST with 0 <= FIRST < LAST, not "
                                         f"{text!r}")
    return window


def _scenarios(args):
    """``(file, scenario)`` of every scenario to run, kernel traces converted (each prints
    what the conversion did)."""
    if args.kernel_trace is not None:
        if args.preset is None:
            raise ConfigError("--kernel-trace needs --preset (one of "
                              f"{', '.join(GPU_PRESETS)})")
        loaded = [(args.kernel_trace, trace_scenario(
            args.kernel_trace, args.preset, format=args.format,
            kernels=args.kernels or (0, None), clock_mhz=args.clock_mhz,
            cycles=args.cycles or TRACE_CYCLES))]
    else:
        loaded = [(path, load_scenario(path)) for path in args.config]
    for path, scenario in loaded:
        horizon = args.cycles or (min(scenario.cycles, QUICK_CYCLES) if args.quick
                                  else scenario.cycles)
        scenario, converted = prepare(scenario, horizon)
        if converted is not None:
            print_summary(converted, scenario.name)
        yield path, scenario


def run_scenario(scenario, *, seed: int = 1, cycles: int | None = None, policies=None,
                 debug: bool = False, quiet: bool = True, strict: bool = False) -> dict:
    """Run the scenario's policies on its workload; ``{policy name: results}`` (plus the
    wall-clock seconds of each run under ``"seconds"``)."""
    limit = cycles or scenario.cycles
    workload = [wg for wg in scenario.workload(seed) if wg.arrival < limit]
    chosen = [p for p in scenario.policies if policies is None or p.name in policies]
    results = {}
    for policy in progress(chosen, f"{scenario.name}", quiet=quiet):
        started = time.perf_counter()
        simulator = DispatchSimulator(scenario.gpu, policy, workload,
                                      channels=scenario.channels, cycles=limit, debug=debug,
                                      strict=strict, sample_interval=scenario.sample_interval)
        result = simulator.run()
        result["seconds"] = time.perf_counter() - started
        results[policy.name] = result
    return results


def claim_rows(scenario, results: dict) -> list[list]:
    """One row per claim: scenario, claim, metric, policy value, baseline value, ratio,
    whether the policy is better."""
    rows = []
    for claim in scenario.claims:
        if claim.policy not in results or claim.baseline not in results:
            continue
        mine, theirs = claim.value(results[claim.policy]), claim.value(results[claim.baseline])
        ratio = mine / theirs if theirs else float("inf") if mine else 1.0
        better = mine > theirs if claim.higher_is_better else mine < theirs
        rows.append([scenario.name, claim.text, claim.metric, mine, theirs, ratio,
                     "yes" if better else "no"])
    return rows


def _table(scenario, results: dict) -> None:
    lowest = str(scenario.gpu.priorities - 1)
    headers = ["policy", "done", "rej", "WG/kcyc", "wait mean", "wait p99", "wait max",
               f"P{lowest} max", "VGPR util", "PEU CV", "AP res CV", "AP pwr CV", "frag",
               "splits", "stale", "viol"]
    rows = []
    for name, r in results.items():
        rows.append([name, r["workgroups_completed"], r["workgroups_rejected"], r["throughput"],
                     r["wait"]["mean"], r["wait"]["p99"], r["wait"]["max"],
                     r["wait"]["per_priority"][lowest]["max"], r["utilisation"]["vgpr"],
                     r["peu_imbalance"], r["ap_imbalance"]["resource"],
                     r["ap_imbalance"]["power"], r["fragmentation"], r["splits"],
                     r["stale_aborts"], r["invariant_violations"]])
    first = next(iter(results.values()))
    print_table(f"{scenario.name}: {first['workgroups_submitted']} WGs, "
                f"{scenario.gpu.aps} APs x {scenario.gpu.peus} PEUs", headers, rows)
    for name, r in results.items():
        for rejection in r["rejections"][:3]:
            print(f"  [{name}] rejected: {rejection['reason']}")


def _plot(scenario, results: dict, path: Path) -> Path:
    fig, (left, middle, right) = figure(1, 3, figsize=(15, 4.2))
    for name, r in results.items():
        series = r["series"]
        left.plot(series["cycle"], series["utilisation"], label=name, linewidth=1)
    left.set_xlabel("cycle")
    left.set_ylabel("mean utilisation of the four resources")
    left.set_title("utilisation over time")
    left.legend(fontsize=7)
    # Wait distribution per priority: one box per policy (whiskers at p1 and p99).
    priorities = range(scenario.gpu.priorities)
    width = 0.8 / max(1, len(results))
    for index, (name, r) in enumerate(results.items()):
        waits = np.array(r["series"]["waits"], dtype=float).reshape(-1, 2)
        data = [np.maximum(waits[waits[:, 0] == p, 1], 1) for p in priorities]
        positions = [p + (index - (len(results) - 1) / 2) * width for p in priorities]
        kept = [(d, x) for d, x in zip(data, positions, strict=True) if d.size]
        if not kept:
            continue
        boxes = middle.boxplot([d for d, _ in kept], positions=[x for _, x in kept],
                               widths=width * 0.9, whis=(1, 99), showfliers=False,
                               patch_artist=True, manage_ticks=False)
        for patch in boxes["boxes"]:
            patch.set_facecolor(f"C{index}")
            patch.set_alpha(0.6)
        middle.plot([], [], color=f"C{index}", linewidth=6, alpha=0.6, label=name)
    middle.set_yscale("log")
    middle.set_xticks(list(priorities), [f"P{p}" for p in priorities])
    middle.set_ylabel("wait, cycles (box p25-p75, whiskers p1-p99)")
    middle.set_title("wait distribution per priority")
    middle.legend(fontsize=7)
    for name, r in results.items():
        waves = np.sort(np.array(r["series"]["peu_waves"], dtype=float))
        mean = waves.mean() if waves.size and waves.mean() else 1.0
        right.plot(np.arange(waves.size), waves / mean, label=name, linewidth=1)
    right.set_xlabel("PEU (sorted by waves received)")
    right.set_ylabel("waves received / mean")
    right.set_title("per-PEU wave balance")
    right.legend(fontsize=7)
    fig.suptitle(scenario.name)
    return save_figure(fig, path)


def _bench(args) -> int:
    default = CONFIG_ROOT / "dispatch" / "default.toml"
    scenario = load_scenario(args.config[0] if args.config and len(args.config) == 1
                             else default)
    rows = []
    for policy in scenario.policies:
        if args.policy and policy.name not in args.policy:
            continue
        results = run_scenario(scenario, seed=args.seed, cycles=args.cycles,
                               policies=[policy.name])[policy.name]
        rows.append([policy.name, results["cycles"], results["processed_cycles"],
                     results["seconds"], results["cycles"] / results["seconds"]])
    print_table(f"dispatcher speed, {scenario.name} ({scenario.gpu.aps} APs x "
                f"{scenario.gpu.peus} PEUs, {len(scenario.channels)} channels), one core",
                ["policy", "simulated cycles", "cycles evaluated", "seconds", "cycles/s"], rows)
    return 0


def run(args) -> int:
    if args.bench:
        return _bench(args)
    everything, claims = {}, []
    for path, scenario in _scenarios(args):
        if args.write_trace and not everything:
            write_trace(args.write_trace, scenario.workload(args.seed))
        cycles = args.cycles or (min(scenario.cycles, QUICK_CYCLES) if args.quick else None)
        results = run_scenario(scenario, seed=args.seed, cycles=cycles, policies=args.policy,
                               debug=args.debug, quiet=args.quiet)
        _table(scenario, results)
        _plot(scenario, results, Path(args.plots) / f"dispatch_{Path(path).stem}.png")
        claims += claim_rows(scenario, results)
        everything[scenario.name] = {"file": str(path), "policies": results}
    if claims:
        print_table("The seed's claims, measured (policy vs baseline on the same workload)",
                    ["scenario", "claim", "metric", "policy", "baseline", "ratio", "better"],
                    claims)
    if args.json:
        write_json(args.json, everything)
    return 0
