"""The dispatcher's Python API: :func:`run` takes a scenario (or its file) and returns the
results the JSON of ``gpusched dispatch`` is written from.

::

    import model.dispatch as d
    result = d.run("configs/dispatch/default.toml", "seed")
    print(result.summary)                  # the command line's table, one row per policy
    result.policies["seed"]["wait"]["p99"]  # every number of the run, as in the JSON

Every setting comes from the scenario unless an argument overrides it: the cycle limit, the
warm-up (scaled with a shorter ``cycles``, as the command line does), the execution model,
the channels, and the claims. As on the command line, the claims over seeds (the capacity
measurement and ``claim_seeds`` workload seeds) run when no policy is chosen and the
scenario has claims; ``claims=True`` or ``False`` says so explicitly. A bad argument raises
one :class:`TypeError` or :class:`ValueError` naming it and what is accepted; a bad scenario
file a :class:`~model.config.ConfigError` (a ``ValueError``) naming the file and field.

``gpusched dispatch`` (:mod:`model.dispatch.cli`) runs through the same functions:
:func:`run_scenario` for the runs, :func:`summary_table` for the table, :func:`workload_notes`
for the notes and :func:`measure_claims` for the claims, so the API and the command line
cannot give different numbers.
"""

import contextlib
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from model.dispatch import claims as claims_over_seeds
from model.dispatch.config import (
    EXECUTIONS,
    PRESETS,
    ChannelConfig,
    PolicyConfig,
    Scenario,
    check_policy,
    load_scenario,
)
from model.dispatch.core.engine import unsupported
from model.dispatch.engine import DispatchSimulator, chosen_engine
from model.dispatch.kernels import prepare
from model.pool import run_all
from model.report import RunProgress, format_cell

__all__ = ["DispatchResult", "Summary", "measure_claims", "run", "run_policy", "run_scenario",
           "summary_table", "workload_notes"]


def run_scenario(scenario, *, seed: int = 1, cycles: int | None = None, policies=None,
                 debug: bool = False, quiet: bool = True, strict: bool = False,
                 events: dict | None = None, skip: bool = True,
                 execution: str | None = None, bar: RunProgress | None = None,
                 done=None, warmup: int | None = None, event_sink=None,
                 jobs: int = 1) -> dict:
    """Run the scenario's policies on its workload; ``{policy name: results}`` (plus the
    wall-clock seconds of each run under ``"seconds"``). WGs arriving at or after the cycle
    limit are not submitted; each result counts them (``workgroups_after_end``). With
    ``events`` (a dict), ``events[policy name]`` receives each run's event rows (or what
    ``event_sink(policy name)`` gives the run to record its events in, e.g. a
    :class:`~model.dispatch.launches.LaunchTally`).
    ``execution`` overrides the scenario's execution model; its warm-up is scaled to
    ``cycles`` unless ``warmup`` gives it. ``bar`` shows the simulated cycles;
    ``done(policy, result)`` is called after each policy.

    ``jobs > 1`` runs the policies on that many processes (:func:`model.pool.run_all`), each
    with the workload made afresh in its worker and the event sink pickled there and back
    (give ``event_sink`` a :class:`~model.dispatch.launches.LaunchTally`, not an event list,
    for a whole trace); the results are the same, ``done`` is called as each run ends and
    ``bar`` moves per run, not per cycle."""
    limit = cycles or scenario.cycles
    if warmup is None:
        warmup = scenario.warmup * limit // scenario.cycles
    chosen = [p for p in scenario.policies if policies is None or p.name in policies]
    results = {}
    with contextlib.ExitStack() as stack:
        if bar is None:
            bar = stack.enter_context(RunProgress(scenario.name, runs=len(chosen),
                                                  quiet=quiet))
        sinks = [None if events is None else [] if event_sink is None
                 else event_sink(policy.name) for policy in chosen]

        def finished(name: str, result: dict, rows) -> None:
            results[name] = result
            if events is not None:
                events[name] = rows
            if done is not None:
                done(name, result)

        if jobs > 1 and len(chosen) > 1:
            tasks = [(scenario, policy.name, seed, limit, warmup, execution, debug, strict,
                      skip, sink) for policy, sink in zip(chosen, sinks, strict=True)]

            def ended(index: int, answer: tuple) -> None:
                name, (result, rows) = chosen[index].name, answer
                with bar.run(f"{scenario.name} {name}", expected=limit,
                             unit="cycles") as tick:
                    if tick is not None:
                        tick(result["cycles"])
                finished(name, result, rows)

            run_all(run_policy, tasks, jobs, preload=[__name__], done=ended)
            return {policy.name: results[policy.name] for policy in chosen}  # policy order
        workload = scenario.workload(seed, copy=False)       # each simulator copies it
        for policy, sink in zip(chosen, sinks, strict=True):
            with bar.run(f"{scenario.name} {policy.name}", expected=limit,
                         unit="cycles") as tick:
                result, rows = run_policy(
                    scenario, policy.name, seed, limit, warmup, execution, debug, strict,
                    skip, sink, workload=workload,
                    observer=None if tick is None else lambda cycle, _: tick(cycle))
            finished(policy.name, result, rows)
    return results


def run_policy(scenario, name: str, seed: int, limit: int, warmup: int,
               execution: str | None, debug: bool, strict: bool, skip: bool, events, *,
               workload=None, observer=None) -> tuple[dict, object]:
    """One policy's run of :func:`run_scenario` (here, or in a pool worker): its result
    (with its wall-clock ``seconds``) and ``events`` as the run left it (an event list or
    tally). ``workload``: the scenario's for ``seed`` unless given (made once for every
    policy run in one process); ``observer``: the progress bar's tick (the simulator's
    ``progress``)."""
    policy = next(p for p in scenario.policies if p.name == name)
    if workload is None:
        workload = scenario.workload(seed, copy=False)
    execution = execution or scenario.execution
    started = time.perf_counter()
    simulator = DispatchSimulator(
        scenario.gpu, policy, workload, channels=scenario.channels, cycles=limit,
        debug=debug, strict=strict, skip=skip, sample_interval=scenario.sample_interval,
        power_window=scenario.power_window, events=events, execution=execution,
        warmup=warmup, keep=False,
        progress=None if observer is None else lambda cycle: observer(cycle, None))
    result = simulator.run()
    result["seconds"] = time.perf_counter() - started
    return result, events


def engine_notes(scenario, names, *, execution: str | None = None, debug: bool = False,
                 events=None) -> list[str]:
    """When the compiled engine is asked for (``chosen_engine``), one note per reason some
    of the policies ``names`` run on the Python engine instead, naming them (``events``: as
    a run receives it, an event list or a tally)."""
    if chosen_engine(None) != "compiled":
        return []
    why: dict[str, list[str]] = {}
    for policy in scenario.policies:
        if policy.name in names:
            reason = unsupported(policy, execution=execution or scenario.execution,
                                 events=events, debug=debug)
            if reason is not None:
                why.setdefault(reason, []).append(policy.name)
    return ["\n        ".join(textwrap.wrap(f"Python engine for {', '.join(names)} ({reason})",
                                             90))
            for reason, names in why.items()]


def workload_notes(scenario, results: dict, limit: int) -> list[str]:
    """What a reader must know about the workload: WGs not submitted because they arrive at
    or after the cycle limit, channels that submitted nothing, an empty workload, and what
    the scenario file gives that is not used."""
    notes = list(scenario.notes)
    first = next(iter(results.values()), None)
    if first is None:
        return notes
    if first["workgroups_after_end"]:
        notes.append(f"{first['workgroups_after_end']} WGs arrive at or after cycle {limit} "
                     f"(the cycle limit) and are not submitted")
    if not first["workgroups_submitted"]:
        source = (f"the trace {scenario.trace.name} has no rows before the cycle limit"
                  if scenario.trace else "no channel generated a WG before the cycle limit")
        notes.append(f"no WG was submitted ({source}): every figure is zero because "
                     f"nothing ran")
    else:
        for channel, stats in first["wait"]["per_channel"].items():
            if not stats["count"]:
                index = int(channel)
                why = ""
                if index < len(scenario.channels) and not scenario.trace:
                    config = scenario.channels[index]
                    why = (" (count = 0)" if not config.count else
                           f" (start = {config.start})" if config.start >= limit
                           else "")
                notes.append(f"channel {channel} submitted no WG{why}")
    return notes


def summary_table(scenario, results: dict) -> tuple[str, list[str], list[list]]:
    """``(title, headers, rows)`` of the per-policy table ``gpusched dispatch`` prints: the
    headline numbers of each run, one row per policy."""
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
    first = next(iter(results.values()), None)
    submitted = first["workgroups_submitted"] if first is not None else 0
    title = (f"{scenario.name}: {submitted} WGs, {scenario.gpu.aps} APs x "
             f"{scenario.gpu.peus} PEUs")
    return title, headers, rows


def measure_claims(scenarios: Sequence[Scenario], settings: claims_over_seeds.Settings, *,
                   quiet: bool = True, known: dict | None = None, jobs: int = 1) -> dict:
    """Every claim of ``scenarios`` (kernel traces converted) over ``settings.seeds`` seeds,
    as the JSON's ``claims`` holds it: ``settings`` and :func:`model.dispatch.claims.evaluate`'s
    ``rows``, ``runs`` and ``capacities``. ``known``: runs already made
    (:func:`model.dispatch.claims.run_key`), reused; ``jobs``: processes the runs are spread
    over (the same results)."""
    measured = claims_over_seeds.evaluate(scenarios, settings, quiet=quiet, known=known,
                                          jobs=jobs)
    return {"settings": {"seeds": settings.seeds, "first_seed": settings.first_seed,
                         "cycles": settings.cycles}, **measured}


class Summary(Mapping):
    """The headline numbers per policy: a mapping ``policy -> {column: value}`` (the columns
    of the command line's table, :attr:`headers`), printed as that table."""

    def __init__(self, title: str, headers: Sequence[str], rows: Sequence[Sequence]):
        self.title = title
        self.headers = list(headers)
        self.rows = [list(row) for row in rows]
        self._by_policy = {row[0]: dict(zip(self.headers[1:], row[1:], strict=True))
                           for row in self.rows}

    def __getitem__(self, policy: str) -> dict:
        return self._by_policy[policy]

    def __iter__(self):
        return iter(self._by_policy)

    def __len__(self) -> int:
        return len(self._by_policy)

    def __str__(self) -> str:
        # Plain text (no terminal needed): the numbers formatted as the command line's table.
        cells = [self.headers] + [[format_cell(value) for value in row] for row in self.rows]
        widths = [max(len(row[index]) for row in cells) for index in range(len(self.headers))]
        lines = [self.title]
        for number, row in enumerate(cells):
            lines.append("  ".join(cell.ljust(width) if index == 0 else cell.rjust(width)
                                   for index, (cell, width) in enumerate(zip(row, widths,
                                                                             strict=True))))
            if number == 0:
                lines.append("  ".join("-" * width for width in widths))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Summary({self._by_policy!r})"


@dataclass(frozen=True)
class DispatchResult:
    """What :func:`run` returns: the results the command line's JSON is written from.

    ``scenario``: the scenario as run (its overrides applied, a kernel trace converted);
    ``policies``: ``{policy: results}``, every number of each run (the JSON's
    ``scenarios.<name>.policies``); ``notes``: what the command line prints under the table;
    ``claims``: the claims over seeds as the JSON's ``claims`` (``None``: not measured);
    ``events``: ``{policy: event rows}`` when asked; ``settings``: the seed, cycle limit,
    warm-up and execution model the runs used.
    """

    scenario: Scenario
    policies: dict
    notes: list
    claims: dict | None
    events: dict | None
    settings: dict

    @property
    def summary(self) -> Summary:
        """The headline numbers per policy (the command line's table)."""
        return Summary(*summary_table(self.scenario, self.policies))

    def entry(self) -> dict:
        """The scenario's entry of the JSON (``notes`` and ``policies``)."""
        return {"notes": self.notes, "policies": self.policies}


# -- argument checks: one TypeError / ValueError naming the argument and what is accepted -----

def _integer(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    accepted = ("an integer" if minimum is None else f"an integer >= {minimum}"
                if maximum is None else f"an integer in {minimum}..{maximum}")
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be {accepted}, not {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {accepted}, not {value!r}")
    return value


def _scenario(value) -> Scenario:
    if isinstance(value, Scenario):
        return value
    if isinstance(value, str | Path):
        return load_scenario(value)
    raise TypeError(f"scenario_or_path must be a Scenario or the path of a scenario file "
                    f"(str or pathlib.Path), not {value!r}")


def _policies(scenario: Scenario, policy) -> tuple[Scenario, list[str] | None]:
    """The scenario (with any PolicyConfig given added) and the policy names to run."""
    if policy is None:
        return scenario, None
    items = [policy] if isinstance(policy, str | PolicyConfig) else policy
    known = [p.name for p in scenario.policies]
    accepted = (f"a policy name (the scenario's: {', '.join(known)}; or a preset: "
                f"{', '.join(PRESETS)}), a PolicyConfig, or a list of them")
    if not isinstance(items, Sequence) or isinstance(items, bytes) or not items:
        raise TypeError(f"policy must be {accepted}, not {policy!r}")
    policies, names = list(scenario.policies), []
    for item in items:
        if isinstance(item, str):
            if item not in known and item not in PRESETS:
                raise ValueError(f"policy {item!r} is not a policy of {scenario.name!r} nor a "
                                 f"preset; accepted: {accepted}")
            if item not in known:
                item = PRESETS[item]
        if isinstance(item, PolicyConfig):
            if item.name in known:
                if scenario.policies[known.index(item.name)] != item:
                    raise ValueError(f"policy {item.name!r} is a policy of {scenario.name!r} "
                                     f"with other settings; give the PolicyConfig another "
                                     f"name")
            else:
                check_policy(item, scenario.gpu)
                policies.append(item)
                known.append(item.name)
            item = item.name
        elif not isinstance(item, str):
            raise TypeError(f"policy must be {accepted}, not {item!r}")
        if item not in names:
            names.append(item)
    return replace(scenario, policies=tuple(policies)), names


def run(scenario_or_path, policy=None, *, seed: int | None = None, cycles: int | None = None,
        warmup: int | None = None, execution: str | None = None,
        channels: Sequence[ChannelConfig] | None = None, claims: bool | None = None,
        claim_seeds: int = 5, events: bool = False, debug: bool = False,
        quiet: bool = True) -> DispatchResult:
    """Run a dispatcher scenario, as ``gpusched dispatch --config FILE`` does.

    ``scenario_or_path``: a :class:`~model.dispatch.config.Scenario` or a scenario file.
    ``policy``: a name (one of the scenario's policies, or a :data:`PRESETS` entry), a
    :class:`~model.dispatch.config.PolicyConfig`, or a list of them; ``None``: every policy
    the scenario lists. ``seed``: the workload seed (default 1, as the command line).
    ``cycles``, ``warmup``, ``execution``, ``channels``: override the scenario's (``warmup``
    defaults to the scenario's, scaled to ``cycles``). ``claims``: measure the scenario's
    claims over ``claim_seeds`` seeds from ``seed`` (``None``: when no policy is chosen, as
    the command line). ``events``: keep every run's per-WG event log. ``debug``: check every
    invariant every cycle. ``quiet=False`` shows a progress bar.
    """
    scenario = _scenario(scenario_or_path)
    seed = 1 if seed is None else _integer("seed", seed)
    if cycles is not None:
        _integer("cycles", cycles, 1)
    if execution is not None and execution not in EXECUTIONS:
        raise ValueError(f"execution must be one of {', '.join(EXECUTIONS)} (or None: the "
                         f"scenario's), not {execution!r}")
    if claims is not None and not isinstance(claims, bool):
        raise TypeError(f"claims must be True, False or None (when no policy is chosen), "
                        f"not {claims!r}")
    _integer("claim_seeds", claim_seeds, 2)
    for name, flag in (("events", events), ("debug", debug), ("quiet", quiet)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, not {flag!r}")
    if channels is not None:
        if (isinstance(channels, str | bytes) or not isinstance(channels, Sequence)
                or not channels or not all(isinstance(c, ChannelConfig) for c in channels)):
            raise TypeError(f"channels must be a non-empty list of ChannelConfig (or None: "
                            f"the scenario's), not {channels!r}")
        for index, channel in enumerate(channels):
            if not 0 <= channel.priority < scenario.gpu.priorities:
                raise ValueError(f"channels[{index}].priority must be in 0.."
                                 f"{scenario.gpu.priorities - 1} (the GPU's priorities), not "
                                 f"{channel.priority!r}")
        scenario = replace(scenario, channels=tuple(channels))
    scenario, chosen = _policies(scenario, policy)
    limit = cycles or scenario.cycles
    scenario, _ = prepare(scenario, limit)
    if warmup is None:
        warmup = scenario.warmup * limit // scenario.cycles
    else:
        _integer("warmup", warmup, 0, limit - 1)
    measure = claims if claims is not None else chosen is None
    record_events = {} if events else None
    results = run_scenario(scenario, seed=seed, cycles=cycles, policies=chosen, debug=debug,
                           quiet=quiet, events=record_events, execution=execution,
                           warmup=warmup)
    notes = workload_notes(scenario, results, limit)
    measured = None
    if measure and scenario.claims:
        settings = claims_over_seeds.Settings(seeds=claim_seeds, first_seed=seed, cycles=cycles)
        known = {}
        if limit == claims_over_seeds.claim_cycles(scenario, settings) and \
                warmup == scenario.warmup * limit // scenario.cycles:
            # The claims over seeds reuse these runs (seed, load as written, same length).
            known = {claims_over_seeds.run_key(scenario, result["execution"], seed, name): result
                     for name, result in results.items()}
        measured = measure_claims([scenario], settings, quiet=quiet, known=known)
    return DispatchResult(scenario=scenario, policies=results, notes=notes, claims=measured,
                          events=record_events,
                          settings={"seed": seed, "cycles": limit, "warmup": warmup,
                                    "execution": execution or scenario.execution})
