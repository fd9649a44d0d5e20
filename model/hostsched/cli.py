"""``gpusched hostsched``: every scenario with every policy, on the same workload per scenario;
a table and a plot (per-instance utilisation split into useful work and transfers, per-thread
completion by priority) each; the seed's claims over several workload seeds; the crossover of
the state size against static binding and the batch-size sweep (:mod:`~model.hostsched.claims`)
with a plot each; JSON of every metric when ``--json`` is given."""

import argparse
import csv
from pathlib import Path

import numpy as np

from model.cli import CLAIMS_SKIPPED, add_claims_options, select_policies, wants_claims
from model.config import ConfigError
from model.hostsched.claims import (
    BATCH_FACTORS,
    CLAIM_HEADERS,
    DURATION_DIVISORS,
    SENSITIVITY_HEADERS,
    batch_sweep,
    claim_rows,
    crossover,
    evaluate_claims,
    run_policies,
    sensitivity_rows,
)
from model.hostsched.config import QUICK_SCALE, Scenario, load_scenario
from model.hostsched.policies import policy_names
from model.report import RunProgress, figure, print_table, save_figure

__all__ = ["add_arguments", "run"]


def add_arguments(parser) -> None:
    """``--no-checks`` (run without the invariant checker, which is on by default),
    ``--seeds N`` (claims and sweeps over N workload seeds) and ``--events FILE.csv``."""
    parser.add_argument("--no-checks", action="store_true",
                        help="skip the invariant checks (faster; they are on by default)")
    parser.add_argument("--seeds", type=_at_least_two, default=5, metavar="N",
                        help="judge the claims over N workload seeds from --seed (default 5)")
    add_claims_options(parser)
    parser.add_argument("--events", type=Path, metavar="FILE.csv",
                        help="write every event (takes, batches, starts, finishes, spills, "
                             "results) of every scenario and policy at --seed as CSV")


def _at_least_two(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"a claim over seeds needs at least 2, not {value}")
    return value


# Stacked headers keep the table inside 100 columns.
_HEADERS = ("policy", "useful\n%", "trans-\nfer %", "make-\nspan\nms", "sub-\ntasks\n/s",
            "thread\ndone\np50 ms", "thread\ndone\np99 ms", "top\nprio\np50 ms",
            "ready\nwait\np50 µs", "host\npack\nms", "spills\nspare\n/host")


def _row(metrics: dict) -> list:
    thread_done = metrics["thread_completion_us"]
    # Priorities are sorted, so the first is the highest (0 is the highest).
    top = next(iter(metrics["thread_completion_by_priority_us"].values()))
    return [metrics["policy"], 100 * metrics["useful_utilisation"],
            100 * metrics["transfer_utilisation"], metrics["makespan_us"] / 1000,
            metrics["subtasks_per_second"], thread_done["p50"] / 1000, thread_done["p99"] / 1000,
            top["p50"] / 1000, metrics["ready_wait_us"]["p50"], metrics["host_pack_us"] / 1000,
            f"{metrics['spills_spare']}/{metrics['spills_host']}"]


def _gains(policies: dict) -> dict:
    """Useful utilisation of each seed variant over static binding, in points and %."""
    if "static-rr" not in policies:
        return {}
    static = policies["static-rr"]["useful_utilisation"]
    gains = {}
    for name, metrics in policies.items():
        if name.startswith("seed003"):
            util = metrics["useful_utilisation"]
            gains[name] = {"points": 100 * (util - static),
                           "relative_percent": 100 * (util / static - 1) if static else 0.0}
    return gains


def _plot(scenario: Scenario, results: dict, path: Path) -> None:
    """Per-instance utilisation (useful work solid, transfers hatched on top) and, per
    priority, the completion-time distribution of the threads (one line style per priority,
    one colour per policy), so that the priority order's effect shows."""
    fig, (bars, curves) = figure(1, 2, figsize=(13, 4.5))
    names = list(results)
    width = 0.8 / len(names)
    for number, name in enumerate(names):
        metrics = results[name]
        useful = np.array(metrics["_useful_per_instance"])
        transfer = np.array(metrics["instance_utilisation"]) - useful
        positions = np.arange(len(useful)) + number * width
        bars.bar(positions, 100 * useful, width, color=f"C{number}", label=name)
        bars.bar(positions, 100 * transfer, width, bottom=100 * useful, color=f"C{number}",
                 alpha=0.35, hatch="//")
        done = np.array(metrics["_thread_done"]) / 1000
        priority = np.array(metrics["_thread_priority"])
        for style, level in zip(("-", "--", ":", "-."), sorted(set(priority)), strict=False):
            values = np.sort(done[priority == level])
            curves.step(values, np.arange(1, values.size + 1) / values.size, where="post",
                        color=f"C{number}", linestyle=style,
                        label=f"{name}, priority {level}" if len(set(priority)) > 1 else name)
    instances = len(results[names[0]]["instance_utilisation"])
    bars.set_xticks([instance + 0.4 - width / 2 for instance in range(instances)],
                    [str(instance) for instance in range(instances)])
    bars.set_xlabel("instance")
    bars.set_ylabel("busy % (solid: useful work, hatched: waiting for transfers)")
    bars.set_title(f"{scenario.name}: instance utilisation")
    bars.set_ylim(0, 130)   # room for the legend above the bars
    bars.legend(fontsize=7, loc="upper center", ncol=2)
    curves.set_xlabel("thread completion time (ms)")
    curves.set_ylabel("fraction of the priority's threads done")
    curves.set_title("per-thread completion, by priority")
    curves.legend(fontsize=7, loc="lower right")
    save_figure(fig, path)


def _plot_sweeps(cross: dict | None, batches: list[dict], path: Path) -> None:
    """Left: makespan against the state size for both instance cache sizes (the seed in its
    two readings, static binding, the work queue; 95 % bands). Right: the seed's makespan
    and the urgent threads' median completion against the batch size."""
    fig, (left, right) = figure(1, 2, figsize=(13, 4.8))
    if cross is not None:
        styles = {"2": "-", "6": "--"}
        for cache, curve in cross["caches"].items():
            rows = curve["rows"]
            ratio = np.array([row["ratio"] for row in rows])
            static = np.array([row["static-rr"]["mean"] for row in rows])
            for colour, name in enumerate((*cross["readings"], "static-rr", "work-queue")):
                # Relative to static binding at each point: the sweep spans 100x in time.
                left.plot(ratio, [row[name]["mean"] for row in rows] / static,
                          styles.get(cache, "-"), marker=".", color=f"C{colour}",
                          label=f"{name}, instance cache {cache}")
        from matplotlib.ticker import ScalarFormatter

        left.axhline(1.0, color="grey", linewidth=0.8)
        left.set_xscale("log")
        left.set_yscale("log")
        left.yaxis.set_major_formatter(ScalarFormatter())
        left.yaxis.set_minor_formatter(ScalarFormatter())
        left.set_xlabel(f"one state move ({cross['state_move_us']} us) / mean sub-task duration")
        left.set_ylabel("makespan / static binding's (mean over seeds)")
        left.set_title(f"{cross['scenario']}: above 1, static binding finishes first")
        left.legend(fontsize=6, ncol=2)
    for number, sweep in enumerate(batches):
        rows = sweep["rows"]
        batch = [row["batch"] for row in rows]
        first = rows[0]["seed003-arrival"]["makespan_ms"]["mean"]
        right.plot(batch, [row["seed003-arrival"]["makespan_ms"]["mean"] / first
                           for row in rows], "o-", color=f"C{number}",
                   label=f"{sweep['scenario']}: makespan")
        if "seed003-priority" in rows[0]:
            urgent = rows[0]["seed003-priority"]["top_p50_ms"]["mean"]
            right.plot(batch, [row["seed003-priority"]["top_p50_ms"]["mean"] / urgent
                               for row in rows], "s--", color=f"C{number}",
                       label=f"{sweep['scenario']}: urgent threads' p50, priority order")
    right.axhline(1.0, color="grey", linewidth=0.8)
    right.set_xscale("log", base=2)
    right.set_xlabel("batch (threads per refill; the seed needs more than the instances)")
    right.set_ylabel("relative to the smallest batch")
    right.set_title("what the batch size costs")
    right.legend(fontsize=7)
    save_figure(fig, path)


_EVENT_FIELDS = ("scenario", "policy", "time_us", "event", "thread", "task", "part",
                 "instance", "detail")


def _sweep_rows(cross: dict) -> list[list]:
    rows = []
    for cache, curve in cross["caches"].items():
        for row in curve["rows"]:
            rows.append([cache, round(row["ratio"], 3),
                         *(round(row[name]["mean"]) for name in cross["readings"]),
                         round(row["static-rr"]["mean"]), round(row["work-queue"]["mean"]),
                         row[f"static faster than {cross['readings'][0]}"],
                         row[f"static faster than {cross['readings'][1]}"]])
    return rows


def run(args) -> int:
    """``gpusched hostsched``: every scenario with every policy; a table and a plot each;
    the claims over ``args.seeds`` seeds; the crossover and batch sweeps; JSON of every
    metric when ``--json`` is given."""
    scenarios = [load_scenario(path) for path in args.config]
    if not scenarios:
        raise ConfigError("no scenario files given and none in configs/hostsched/")
    files = [Path(path) for path in args.config]
    chosen = select_policies(args, {str(path): policy_names(scenario)
                                    for path, scenario in zip(files, scenarios, strict=True)})
    kept = [index for index, path in enumerate(files) if chosen[str(path)]]
    scenarios, files = [scenarios[index] for index in kept], [files[index] for index in kept]
    scale = QUICK_SCALE if args.quick else 1.0
    events_path = getattr(args, "events", None)
    event_rows: list = []
    results: list[dict] = []
    record = args.record
    runs = sum(len(chosen[str(path)]) for path in files)
    with RunProgress("hostsched", runs=runs, quiet=args.quiet) as bar:
        for scenario, path in zip(scenarios, files, strict=True):
            events = [] if events_path is not None else None
            results.append(run_policies(
                scenario, args.seed, scale=scale, policies=chosen[str(path)], events=events,
                check=not getattr(args, "no_checks", False), bar=bar,
                on_result=lambda policy, metrics, s=scenario, f=path: record.add(
                    s.name, policy, metrics, file=f)))
            if events is not None:
                event_rows += [(scenario.name, *event) for event in events]
    record.note(time_unit="us", quick=bool(args.quick))
    for scenario, policies, path in zip(scenarios, results, files, strict=True):
        gains = _gains(policies)
        first = next(iter(policies.values()))
        system = scenario.system
        caption = "; ".join(f"{name} vs static-rr: {gain['points']:+.1f} points "
                            f"({gain['relative_percent']:+.1f} %) useful utilisation"
                            for name, gain in gains.items())
        caption += (f". State {system.state_bytes / 1e6:.3g} MB ({system.state_move_us} us "
                    f"over the link), input {system.input_bytes / 1e6:.3g} MB, instance cache "
                    f"{system.instance_cache}, batch {scenario.batch}, states shipped "
                    f"{scenario.ship_state}, packing at {scenario.pack_gb_s:g} GB/s, static "
                    f"binding {scenario.binding}")
        title = (f"hostsched {scenario.name}: {first['_threads']} threads, "
                 f"{first['_tasks']} tasks, {first['_subtasks']} sub-tasks, "
                 f"{system.instances} instances, batch {scenario.batch}")
        print_table(title, _HEADERS, [_row(metrics) for metrics in policies.values()],
                    caption=caption or None)
        _plot(scenario, policies, Path(args.plots) / f"hostsched_{scenario.name}.png")
        for metrics in policies.values():
            for key in [key for key in metrics if key.startswith("_")]:
                del metrics[key]
        record.scenario(scenario.name, {
            "description": scenario.description, "instances": system.instances,
            "batch": scenario.batch, "ship_state": scenario.ship_state,
            "pack_gb_s": scenario.pack_gb_s, "binding": scenario.binding,
            "state_bytes": system.state_bytes, "state_move_us": system.state_move_us,
            "utilisation_gain_over_static": gains, "policies": policies}, file=path)
    seeds = getattr(args, "seeds", 5)
    span = f"seeds {args.seed}..{args.seed + seeds - 1}"
    judge = wants_claims(args)
    claims = (evaluate_claims(scenarios, first_seed=args.seed, seeds=seeds,
                              scale=scale)
              if judge else [])
    if not judge:
        print(CLAIMS_SKIPPED)
    if claims:
        print_table(f"hostsched: the seed's claims over {span} (95 % intervals; verdict from "
                    f"the per-seed ratio; the binding drawn per seed)", CLAIM_HEADERS,
                    claim_rows(claims))
        print_table("hostsched: each claim with the parameter it leans on changed",
                    SENSITIVITY_HEADERS, sensitivity_rows(claims))
    record.note(claims=claims)
    by_name = {scenario.name: scenario for scenario in scenarios}
    cross = None
    if judge and "transcode" in by_name:
        # --quick: every other point of the sweeps (the tests' smoke run).
        divisors = DURATION_DIVISORS[::2] if args.quick else DURATION_DIVISORS
        cross = crossover(by_name["transcode"], first_seed=args.seed, seeds=seeds, scale=scale,
                          divisors=divisors)
        first, second = (reading.replace("-", "-\n") for reading in cross["readings"])
        print_table(f"hostsched transcode: makespan ms as sub-tasks shorten against a state "
                    f"move ({span}; 'static first': static binding finishes before the seed "
                    f"in that reading, judged per seed)",
                    ("cache", "move /\nsub-\ntask", f"seed,\n{first}", f"seed,\n{second}",
                     "static\n-rr", "work-\nqueue", f"static\nfirst,\n{first}",
                     f"static\nfirst,\n{second}"),
                    _sweep_rows(cross))
    factors = BATCH_FACTORS[::2] if args.quick else BATCH_FACTORS
    batches = [batch_sweep(by_name[name], first_seed=args.seed, seeds=seeds, scale=scale,
                           shorter=shorter, factors=factors)
               for name, shorter in (("transcode", 1), ("transcode", 64), ("priority", 1))
               if judge and name in by_name]
    for sweep in batches:
        print_table(f"hostsched {sweep['scenario']}: the batch size ({span}, means)",
                    ("batch", "policy", "makespan ms", "host packing ms", "batches",
                     "urgent threads p50 ms"),
                    [[row["batch"], policy, round(entry["makespan_ms"]["mean"]),
                      round(entry["pack_ms"]["mean"]), round(entry["batches"]["mean"]),
                      round(entry["top_p50_ms"]["mean"])]
                     for row in sweep["rows"] for policy, entry in row.items()
                     if policy != "batch"])
    if cross is not None or batches:
        _plot_sweeps(cross, batches, Path(args.plots) / "hostsched_sweeps.png")
    record.note(crossover=cross, batch_sweeps=batches)
    if events_path is not None:
        events_path.parent.mkdir(parents=True, exist_ok=True)
        with events_path.open("w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(_EVENT_FIELDS)
            writer.writerows(event_rows)
    return 0
