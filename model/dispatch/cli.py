"""``gpusched dispatch`` (alias ``gpusched sim``): run the dispatcher scenarios, compare the
policies, plot, write JSON.

Every scenario file runs every policy it lists on the same workload (same seed). Per scenario:
a table comparing the policies, a PNG (``<plots>/dispatch_<scenario>.png``: utilisation over
time, wait per priority, per-PEU wave balance); after all scenarios, a table of the
scenarios' claims (the seed's assertions, each as a measured ratio). ``--bench`` instead
times every policy on the default scenario and prints simulated cycles per second.
"""

import contextlib
import time
from pathlib import Path

import numpy as np

from model.cli import CONFIG_ROOT, positive_int, select_policies
from model.dispatch.config import load_scenario, write_trace
from model.dispatch.engine import DispatchSimulator
from model.report import RunProgress, figure, print_table, save_figure

__all__ = ["add_arguments", "claim_rows", "run", "run_scenario"]

QUICK_CYCLES = 3000


def add_arguments(parser) -> None:
    """The dispatcher's own options (``--policy`` is common to every subcommand)."""
    parser.add_argument("--cycles", type=positive_int, metavar="N",
                        help="cycle limit, >= 1 (default: the scenario's)")
    parser.add_argument("--write-trace", type=Path, metavar="CSV",
                        help="write the (first) scenario's workload as a CSV trace")
    parser.add_argument("--debug", action="store_true",
                        help="check every invariant every cycle (as the tests do)")
    parser.add_argument("--bench", action="store_true",
                        help="print simulated cycles per second per policy")


def run_scenario(scenario, *, seed: int = 1, cycles: int | None = None, policies=None,
                 debug: bool = False, quiet: bool = True, strict: bool = False,
                 bar: RunProgress | None = None, done=None) -> dict:
    """Run the scenario's policies on its workload; ``{policy name: results}`` (plus the
    wall-clock seconds of each run under ``"seconds"``). ``bar`` shows the simulated cycles;
    ``done(policy, result)`` is called after each policy."""
    limit = cycles or scenario.cycles
    workload = [wg for wg in scenario.workload(seed) if wg.arrival < limit]
    chosen = [p for p in scenario.policies if policies is None or p.name in policies]
    results = {}
    with contextlib.ExitStack() as stack:
        if bar is None:
            bar = stack.enter_context(RunProgress(scenario.name, runs=len(chosen),
                                                  quiet=quiet))
        for policy in chosen:
            started = time.perf_counter()
            with bar.run(f"{scenario.name} {policy.name}", expected=limit,
                         unit="cycles") as tick:
                simulator = DispatchSimulator(
                    scenario.gpu, policy, workload, channels=scenario.channels, cycles=limit,
                    debug=debug, strict=strict, sample_interval=scenario.sample_interval,
                    observer=None if tick is None else lambda cycle, _: tick(cycle))
                result = simulator.run()
            result["seconds"] = time.perf_counter() - started
            results[policy.name] = result
            if done is not None:
                done(policy.name, result)
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
    chosen = select_policies(args, {scenario.name: [p.name for p in scenario.policies]})
    rows = []
    for policy in scenario.policies:
        if policy.name not in chosen[scenario.name]:
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
    scenarios = [load_scenario(path) for path in args.config]
    chosen = select_policies(args, {str(path): [policy.name for policy in scenario.policies]
                                    for path, scenario in zip(args.config, scenarios,
                                                              strict=True)})
    jobs = [(path, scenario) for path, scenario in zip(args.config, scenarios, strict=True)
            if chosen[str(path)]]
    record = args.record
    claims = []
    cycle_limits = {str(path): args.cycles or (min(scenario.cycles, QUICK_CYCLES)
                                               if args.quick else None)
                    for path, scenario in jobs}
    with RunProgress("dispatch", runs=sum(len(chosen[str(path)]) for path, _ in jobs),
                     quiet=args.quiet) as bar:
        for number, (path, scenario) in enumerate(jobs):
            if args.write_trace and number == 0:
                write_trace(args.write_trace, scenario.workload(args.seed))
            if scenario.trace is not None:
                record.input_file(scenario.trace)
            results = run_scenario(
                scenario, seed=args.seed, cycles=cycle_limits[str(path)],
                policies=chosen[str(path)], debug=args.debug, bar=bar,
                done=lambda policy, result, name=scenario.name, path=path: record.add(
                    name, policy, result, file=path))
            with bar.paused():
                _table(scenario, results)
            _plot(scenario, results, Path(args.plots) / f"dispatch_{Path(path).stem}.png")
            claims += claim_rows(scenario, results)
            record.scenario(scenario.name, {"policies": results}, file=path)
    if claims:
        # The scenario leads the claim's text, so the table fits 100 columns.
        print_table("The seed's claims, measured (policy vs baseline on the same workload)",
                    ["claim", "metric", "policy", "baseline", "ratio", "better"],
                    [[f"{scenario}: {claim}", *rest] for scenario, claim, *rest in claims])
    return 0
