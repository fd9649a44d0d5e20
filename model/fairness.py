"""How fair is the delay-factor arbiter? A benchmark against the classic fair arbiters.

Many random weight sets (2-16 tasks, configured weights 1-255, all in one class) are run
side by side through every policy, one grant per round, in two request patterns:

``backlogged``
    every task requests in every round;
``on/off``
    every task switches between requesting and idle as a two-state Markov chain (on for 64
    rounds on average, off for 32), the same pattern for every policy.

Per policy the benchmark measures, against the ideal fluid schedule (GPS: in each round the
requesting tasks share one grant in proportion to their configured weights):

* **share error** -- ``|grants - GPS service| / rounds`` per task, in percentage points:
  the largest over every task of every set, and the mean;
* **lag** -- the largest ``|GPS service - grants|`` at any moment, in grants (in the on/off
  pattern a task's lag is forgiven while it is idle: an idle task has nothing to serve);
* **Jain's index** of ``grants / GPS service`` over the tasks of a set (1 is perfectly
  proportional), the mean and the worst set;
* **burstiness** -- the coefficient of variation of the gaps between a task's grants while it
  keeps requesting (0 for perfectly even spacing), averaged over tasks and sets, and the
  **worst gap**: the longest wait between two grants of a task that kept requesting, in
  units of its ideal period (the GPS service it was due meanwhile; about 1 is ideal).

The policies (:func:`standard_policies`): this arbiter with the seed's settings and with
other settings of its own knobs (:class:`DelayFactorPolicy`, bit-exact with
:func:`model.arbiter.simulate_shares`); smooth weighted round-robin as nginx does it
(:class:`SmoothWeightedRoundRobin`); deficit round robin (:class:`DeficitRoundRobin`); stride
scheduling (:class:`StrideScheduling`); and WF2Q+ (:class:`WF2QPlus`). Every policy works on
a ``(sets, tasks)`` batch with numpy, one round per call.

``python -m model.fairness`` prints the table and writes ``arbiter_fairness.csv``, ``.md`` and
``.png`` to ``build/reports/``; ``--quick`` is the smaller run that ``make sim`` shows. The
iCE40 LUT and flip-flop count of every arbiter variant is read from a results file
(``--costs``, default :data:`COSTS_FILE`) that ``python -m hw.flow.arbiter_cost`` writes with
Yosys (``make bench-arbiter`` does both): this module never synthesizes anything, and a
variant the file does not list is shown as "model only".

Kept as one module (about 640 lines, over the guide's 600 lines) on purpose: it is one
benchmark, run as one command, whose five policies are short numpy classes on the same batch
interface (each 30-60 lines) and whose table, CSV and plot read the same result records; split,
each part would be a fragment of the same experiment."""

import argparse
import csv
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from model.arbiter import (
    DEFAULT_TABLE,
    MAX_WEIGHT,
    WEIGHT_SCALE,
    ArbiterParams,
)

__all__ = [
    "COSTS_FILE",
    "PATTERNS",
    "DeficitRoundRobin",
    "DelayFactorPolicy",
    "FairnessResult",
    "Policy",
    "SmoothWeightedRoundRobin",
    "StrideScheduling",
    "WF2QPlus",
    "format_table",
    "main",
    "random_weight_sets",
    "run_pattern",
    "costed_params",
    "read_costs",
    "standard_policies",
]

#: The request patterns of the benchmark.
PATTERNS = ("backlogged", "on/off")

#: Mean rounds a task stays on and off in the on/off pattern.
MEAN_ON, MEAN_OFF = 64, 32

#: The most tasks in a weight set.
MAX_SET = 16

#: The arbiter variants' iCE40 costs, written by ``python -m hw.flow.arbiter_cost`` and kept in
#: the repository (with the Yosys version and date that produced them).
COSTS_FILE = Path(__file__).resolve().parent.parent / "results" / "arbiter_cost.json"


# -- the policies ---------------------------------------------------------------------------------

class Policy:
    """A fair arbiter over a batch of weight sets: one grant per set and round.

    Subclasses set :attr:`name` and implement :meth:`reset` and :meth:`pick`.
    """

    name = "policy"

    def reset(self, weights: np.ndarray, present: np.ndarray) -> None:
        """Start over with ``weights`` (``(sets, tasks)`` ints, 0 where ``present`` is False)."""
        raise NotImplementedError

    def pick(self, request: np.ndarray) -> np.ndarray:
        """Grant one requesting task per set (``request`` is a ``(sets, tasks)`` bool array);
        return the task of each set, -1 where none requests."""
        raise NotImplementedError

    @property
    def arbiter(self) -> ArbiterParams | None:
        """The parameters of this policy's RTL, if it has one."""
        return None


def _first(mask: np.ndarray) -> np.ndarray:
    """The lowest index set in each row of ``mask``, -1 for an empty row."""
    return np.where(mask.any(axis=1), mask.argmax(axis=1), -1)


def _one_hot(winners: np.ndarray, tasks: int) -> np.ndarray:
    return (np.arange(tasks)[None, :] == winners[:, None]) & (winners[:, None] >= 0)


def _lowest_of(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per row the lowest index among the masked entries with the least value (-1: none)."""
    masked = np.where(mask, values, np.inf)
    return _first(mask & (masked == masked.min(axis=1, keepdims=True)))


class DelayFactorPolicy(Policy):
    """This project's arbiter, batched: the arithmetic of :func:`model.arbiter.simulate_shares`.

    Every task sits in one class; ``W``, ``D`` and ``H`` are those of the RTL (integers in
    units of ``2**-frac_bits``), so the grants are bit-exact with the cycle-exact model
    (``tests/test_arbiter_model.py`` holds them together). H saturates at the range of a
    16-slot arbiter, which it never reaches.
    """

    def __init__(self, name: str, *, table=DEFAULT_TABLE, frac_bits: int = 8,
                 tie_break: str = "history", decay: bool = True, weight_bits: int = 8):
        self.name = name
        self.params = ArbiterParams(MAX_SET, 1, frac_bits, table, tie_break, decay, weight_bits)

    @property
    def arbiter(self) -> ArbiterParams:
        return self.params

    def reset(self, weights, present):
        params = self.params
        self.present = present
        totals = weights.sum(axis=1, keepdims=True)
        scale = params.weight_scale
        self.expected = np.where(
            present, np.clip(scale * weights // np.maximum(totals, 1), 1, scale), 0)
        if params.decay:
            self.shift = np.array(params.shifts)[self.expected]
            self.credit = (WEIGHT_SCALE << params.frac_bits) >> self.shift
        self.history = weights.astype(np.int64) << params.frac_bits

    def pick(self, request):
        params, frac = self.params, self.params.frac_bits
        eligible = request & self.present
        target = self.expected - (self.history >> frac)
        best = np.where(eligible, target, np.iinfo(np.int64).min).max(axis=1, keepdims=True)
        candidates = eligible & (target == best)
        widest = np.where(candidates, self.expected, -1).max(axis=1, keepdims=True)
        candidates &= self.expected == widest
        if params.tie_break == "history":
            least = np.where(candidates, self.history, np.iinfo(np.int64).max)
            candidates &= self.history == least.min(axis=1, keepdims=True)
        winners = _first(candidates)
        granted = _one_hot(winners, request.shape[1])
        rounds = (winners >= 0)[:, None]
        if params.decay:
            updated = self.history - (self.history >> self.shift) + np.where(granted,
                                                                             self.credit, 0)
            self.history = np.where(rounds & self.present, updated, self.history)
        else:
            total = np.where(eligible, self.expected, 0).sum(axis=1, keepdims=True)
            low, high = params.history_range
            updated = np.clip(self.history - (self.expected << frac)
                              + np.where(granted, total << frac, 0), low, high)
            self.history = np.where(rounds & eligible, updated, self.history)
        return winners


class SmoothWeightedRoundRobin(Policy):
    """nginx's smooth weighted round-robin on the configured weights.

    Each round every requesting task adds its weight to its current weight; the largest
    current weight (the first on a tie) is granted and loses the sum of the requesting
    tasks' weights. Idle tasks keep their current weight.
    """

    name = "smooth WRR (nginx)"

    def reset(self, weights, present):
        self.weights = weights.astype(np.int64)
        self.current = np.zeros_like(self.weights)

    def pick(self, request):
        added = np.where(request, self.weights, 0)
        self.current += added
        best = np.where(request, self.current, np.iinfo(np.int64).min)
        winners = _first(request & (best == best.max(axis=1, keepdims=True)))
        self.current -= np.where(_one_hot(winners, request.shape[1]),
                                 added.sum(axis=1, keepdims=True), 0)
        return winners


class DeficitRoundRobin(Policy):
    """Deficit round robin with unit-cost grants.

    A task's quantum is its weight over the smallest weight of its set (so every visit
    grants at least once); the round-robin pointer stays on a task while its deficit covers
    a grant, then moves to the next requesting task, which adds its quantum. A task that
    stops requesting loses its deficit, as an emptied queue does.
    """

    name = "deficit round robin"

    def reset(self, weights, present):
        smallest = np.where(present, weights, MAX_WEIGHT + 1).min(axis=1, keepdims=True)
        self.quantum = np.where(present, weights / smallest, 0.0)
        self.deficit = np.zeros_like(self.quantum)
        self.pointer = np.full(weights.shape[0], -1)

    def pick(self, request):
        sets, tasks = request.shape
        rows = np.arange(sets)
        self.deficit = np.where(request, self.deficit, 0.0)
        at = np.maximum(self.pointer, 0)
        stay = (self.pointer >= 0) & request[rows, at] & (self.deficit[rows, at] >= 1.0 - 1e-9)
        # The next requesting task after the pointer, cyclically.
        order = (np.arange(tasks)[None, :] - self.pointer[:, None] - 1) % tasks
        following = _lowest_of(order, request)
        move = ~stay & (following >= 0)
        self.pointer = np.where(move, following, self.pointer)
        moved = _one_hot(np.where(move, following, -1), tasks)
        self.deficit += np.where(moved, self.quantum, 0.0)
        winners = np.where(stay | move, self.pointer, -1)
        self.deficit -= _one_hot(winners, tasks)
        return winners


class StrideScheduling(Policy):
    """Waldspurger's stride scheduling with the dynamic rules for leaving and rejoining.

    A task's stride is ``1 / weight``; the requesting task with the least pass (the first on a
    tie) is granted and its pass grows by its stride. The global pass grows by
    ``1 / (sum of requesting weights)`` per round; a task that stops requesting keeps its
    pass relative to the global pass and takes it up again when it returns.
    """

    name = "stride scheduling"

    def reset(self, weights, present):
        self.stride = np.where(present, 1.0 / np.maximum(weights, 1), np.inf)
        self.remain = self.stride.copy()
        self.passes = np.zeros_like(self.stride)
        self.global_pass = np.zeros(weights.shape[0])
        self.requesting = np.zeros(weights.shape, bool)

    def pick(self, request):
        joined = request & ~self.requesting
        left = ~request & self.requesting
        self.remain = np.where(left, self.passes - self.global_pass[:, None], self.remain)
        self.passes = np.where(joined, self.global_pass[:, None] + self.remain, self.passes)
        self.requesting = request.copy()
        winners = _lowest_of(self.passes, request)
        self.passes += np.where(_one_hot(winners, request.shape[1]), self.stride, 0.0)
        weights = np.where(request, 1.0 / self.stride, 0.0).sum(axis=1)
        self.global_pass += np.where(weights > 0, 1.0 / np.maximum(weights, 1e-12), 0.0)
        return winners


class WF2QPlus(Policy):
    """WF2Q+ (Bennett and Zhang) with unit-size grants.

    Each requesting task has a head "packet" with virtual start ``S`` and finish
    ``F = S + 1 / weight``; among the tasks with ``S <= V`` the least ``F`` is granted (the
    first on a tie), its next packet starts at the old ``F``. The system virtual time is
    ``V <- max(V + 1 / (sum of requesting weights), least S of the requesting tasks)``; a task
    that starts requesting again starts at ``max(its last F, V)``.
    """

    name = "WF2Q+"

    def reset(self, weights, present):
        self.weights = np.where(present, weights, 1).astype(float)
        self.start = np.zeros(weights.shape)
        self.finish = 1.0 / self.weights
        self.virtual = np.zeros(weights.shape[0])
        self.requesting = np.zeros(weights.shape, bool)

    def pick(self, request):
        joined = request & ~self.requesting
        self.requesting = request.copy()
        self.start = np.where(joined, np.maximum(self.start, self.virtual[:, None]), self.start)
        self.finish = np.where(joined, self.start + 1.0 / self.weights, self.finish)
        least_start = np.where(request, self.start, np.inf).min(axis=1)
        virtual = np.maximum(self.virtual, np.where(np.isfinite(least_start), least_start, 0.0))
        eligible = request & (self.start <= virtual[:, None] + 1e-9)
        winners = _lowest_of(self.finish, eligible)
        granted = _one_hot(winners, request.shape[1])
        self.start = np.where(granted, self.finish, self.start)
        self.finish = np.where(granted, self.start + 1.0 / self.weights, self.finish)
        weights = np.where(request, self.weights, 0.0).sum(axis=1)
        self.virtual = np.where(weights > 0, virtual + 1.0 / np.maximum(weights, 1e-12),
                                self.virtual)
        return winners


#: The best decaying table found: one delay factor, 64, for every W.
FLAT_TABLE = ((256, 64),)


def standard_policies() -> list[Policy]:
    """The policies of the benchmark, this arbiter's variants first.

    Besides the seed's setting: more fraction bits; the best decaying table we found (one
    ``D`` for all); no decay with the seed's 8-bit ``W``; and the proposal, no decay with a
    12-bit ``W``. Without decay and fraction bits, equal ``T`` and ``W`` mean equal ``H``,
    so the cheaper index tie-break decides exactly as the history one would.
    """
    return [
        DelayFactorPolicy("delay factor: seed"),
        DelayFactorPolicy("delay factor: 16 frac bits", frac_bits=16),
        DelayFactorPolicy("delay factor: D = 64 for all W, 16 frac bits", table=FLAT_TABLE,
                          frac_bits=16),
        DelayFactorPolicy("delay factor: no decay", frac_bits=0, decay=False,
                          tie_break="index"),
        DelayFactorPolicy("delay factor: no decay, 12-bit W (proposed)", frac_bits=0,
                          decay=False, tie_break="index", weight_bits=12),
        SmoothWeightedRoundRobin(),
        DeficitRoundRobin(),
        StrideScheduling(),
        WF2QPlus(),
    ]


# -- the workload and the measurement -------------------------------------------------------------

def random_weight_sets(count: int, rng: np.random.Generator, *, largest: int = MAX_SET
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``count`` weight sets of 2..``largest`` tasks with weights 1..255, as a ``(count,
    largest)`` int array (0 beyond a set's size) and its mask of present tasks."""
    sizes = rng.integers(2, largest + 1, size=count)
    present = np.arange(largest)[None, :] < sizes[:, None]
    weights = np.where(present, rng.integers(1, MAX_WEIGHT + 1, size=(count, largest)), 0)
    return weights, present


@dataclass
class FairnessResult:
    """The measurements of one policy in one pattern (see the module docstring)."""

    policy: str
    pattern: str
    share_error_max: float
    share_error_mean: float
    lag_max: float
    lag_mean: float
    jain_mean: float
    jain_min: float
    gap_cv: float
    worst_gap: float
    seconds: float
    luts: int | None = None
    ffs: int | None = None


class _Recorder:
    """Running measurements of one policy over a batch."""

    def __init__(self, weights: np.ndarray, present: np.ndarray):
        sets, tasks = weights.shape
        self.weights = weights.astype(float)
        self.present = present
        self.grants = np.zeros((sets, tasks))
        self.ideal = np.zeros((sets, tasks))
        self.lag = np.zeros((sets, tasks))
        self.lag_max = np.zeros(sets)
        self.rounds = np.zeros(sets)
        self.last = np.full((sets, tasks), -1)
        self.gap_sum = np.zeros((sets, tasks))
        self.gap_squares = np.zeros((sets, tasks))
        self.gap_count = np.zeros((sets, tasks))
        self.gap_worst = np.zeros((sets, tasks))
        self.waited = np.zeros((sets, tasks))

    def record(self, clock: int, request: np.ndarray, winners: np.ndarray) -> None:
        weights = np.where(request, self.weights, 0.0)
        total = weights.sum(axis=1, keepdims=True)
        fluid = weights / np.maximum(total, 1e-12)
        granted = _one_hot(winners, request.shape[1])
        self.rounds += winners >= 0
        self.grants += granted
        self.ideal += fluid
        self.lag = np.where(request, self.lag + fluid - granted, 0.0)
        self.lag_max = np.maximum(self.lag_max, np.abs(self.lag).max(axis=1))
        # Gaps between the grants of a task that keeps requesting; the wait in ideal periods
        # is the GPS service the task was due while it waited.
        self.last = np.where(request, self.last, -1)
        self.waited = np.where(request, self.waited + fluid, 0.0)
        gap = clock - self.last
        counted = granted & (self.last >= 0)
        self.gap_sum += np.where(counted, gap, 0)
        self.gap_squares += np.where(counted, gap * gap, 0)
        self.gap_count += counted
        self.gap_worst = np.maximum(self.gap_worst, np.where(counted, self.waited, 0.0))
        self.last = np.where(granted, clock, self.last)
        self.waited = np.where(granted, 0.0, self.waited)

    def result(self, policy: str, pattern: str, seconds: float) -> FairnessResult:
        present = self.present
        rounds = np.maximum(self.rounds, 1)[:, None]
        error = np.abs(self.grants - self.ideal) / rounds * 100
        ratio = np.where(present & (self.ideal > 0), self.grants / np.maximum(self.ideal, 1e-12),
                         0.0)
        served = (present & (self.ideal > 0)).sum(axis=1)
        jain = ratio.sum(axis=1) ** 2 / np.maximum(served * (ratio ** 2).sum(axis=1), 1e-12)
        enough = self.gap_count >= 2
        mean_gap = self.gap_sum / np.maximum(self.gap_count, 1)
        variance = np.maximum(self.gap_squares / np.maximum(self.gap_count, 1) - mean_gap ** 2,
                              0.0)
        cv = np.sqrt(variance) / np.maximum(mean_gap, 1e-12)
        return FairnessResult(
            policy=policy, pattern=pattern,
            share_error_max=float(error[present].max()),
            share_error_mean=float(error[present].mean()),
            lag_max=float(self.lag_max.max()),
            lag_mean=float(self.lag_max.mean()),
            jain_mean=float(jain.mean()),
            jain_min=float(jain.min()),
            gap_cv=float(cv[enough].mean()) if enough.any() else 0.0,
            worst_gap=float(self.gap_worst[present].max()),
            seconds=seconds,
        )


def _requests(pattern: str, present: np.ndarray, rounds: int, seed: int):
    """The request masks of ``pattern``, one per round (the same for every policy)."""
    if pattern == "backlogged":
        for _ in range(rounds):
            yield present
        return
    rng = np.random.default_rng(seed)
    on = present & (rng.random(present.shape) < MEAN_ON / (MEAN_ON + MEAN_OFF))
    for _ in range(rounds):
        yield on
        flip = rng.random(present.shape)
        on = present & np.where(on, flip >= 1 / MEAN_ON, flip < 1 / MEAN_OFF)


def run_pattern(policy: Policy, weights: np.ndarray, present: np.ndarray, pattern: str,
                rounds: int, *, seed: int = 2026) -> FairnessResult:
    """Run ``policy`` over the weight sets for ``rounds`` rounds of ``pattern``."""
    if pattern not in PATTERNS:
        raise ValueError(f"Pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    started = time.perf_counter()
    policy.reset(weights, present)
    recorder = _Recorder(weights, present)
    for clock, request in enumerate(_requests(pattern, present, rounds, seed)):
        recorder.record(clock, request, policy.pick(request))
    return recorder.result(policy.name, pattern, time.perf_counter() - started)


# -- the report -----------------------------------------------------------------------------------

_COLUMNS = (
    ("policy", "policy", "{}"),
    ("err max", "share_error_max", "{:.3f}"),
    ("err mean", "share_error_mean", "{:.4f}"),
    ("lag max", "lag_max", "{:.2f}"),
    ("lag mean", "lag_mean", "{:.2f}"),
    ("Jain mean", "jain_mean", "{:.5f}"),
    ("Jain min", "jain_min", "{:.4f}"),
    ("gap CV", "gap_cv", "{:.3f}"),
    ("worst gap", "worst_gap", "{:.2f}"),
    ("LUTs", "luts", "{}"),
    ("FFs", "ffs", "{}"),
)


def _cells(result: FairnessResult) -> list[str]:
    cells = []
    for _, attribute, fmt in _COLUMNS:
        value = getattr(result, attribute)
        if value is None:
            value = "model only" if attribute == "luts" else "-"
        cells.append(fmt.format(value))
    return cells


def format_table(results: Sequence[FairnessResult], pattern: str) -> str:
    """A fixed-width table of the results of one pattern."""
    rows = [[title for title, _, _ in _COLUMNS]]
    rows += [_cells(result) for result in results if result.pattern == pattern]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_COLUMNS))]
    lines = []
    for index, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(width) if column == 0 else cell.rjust(width)
                               for column, (cell, width) in enumerate(zip(row, widths,
                                                                          strict=True))))
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def format_markdown(results: Sequence[FairnessResult]) -> str:
    lines = ["| pattern | " + " | ".join(title for title, _, _ in _COLUMNS) + " |",
             "|---|" + "---|" * len(_COLUMNS)]
    for result in results:
        lines.append(f"| {result.pattern} | " + " | ".join(_cells(result)) + " |")
    return "\n".join(lines) + "\n"


def write_csv(results: Sequence[FairnessResult], path: Path) -> None:
    with path.open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["pattern", *(attribute for _, attribute, _ in _COLUMNS), "seconds"])
        for result in results:
            writer.writerow([result.pattern,
                             *(getattr(result, attribute) for _, attribute, _ in _COLUMNS),
                             f"{result.seconds:.2f}"])


def plot(results: Sequence[FairnessResult], path: Path, title: str) -> bool:
    """Bar charts of the main measurements per policy and pattern; False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    policies = list(dict.fromkeys(result.policy for result in results))
    panels = (("share error, max (pp)", "share_error_max", True),
              ("share error, mean (pp)", "share_error_mean", True),
              ("lag vs GPS, max (grants)", "lag_max", True),
              ("Jain's index, worst set", "jain_min", False),
              ("gap CV (burstiness)", "gap_cv", False),
              ("worst gap (ideal periods)", "worst_gap", True))
    figure, axes = plt.subplots(2, 3, figsize=(16, 9), constrained_layout=True)
    height = 0.8 / len(PATTERNS)
    positions = np.arange(len(policies))
    for axis, (label, attribute, logarithmic) in zip(axes.flat, panels, strict=True):
        for index, pattern in enumerate(PATTERNS):
            values = [next(getattr(r, attribute) for r in results
                           if r.policy == policy and r.pattern == pattern) for policy in policies]
            axis.barh(positions + (index - 0.5) * height, values, height, label=pattern)
        axis.set_yticks(positions, [_short(policy, results) for policy in policies], fontsize=8)
        axis.invert_yaxis()
        axis.set_title(label)
        if logarithmic:
            axis.set_xscale("log")
        axis.grid(axis="x", alpha=0.3)
    axes.flat[0].legend()
    figure.suptitle(title)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def _short(policy: str, results: Sequence[FairnessResult]) -> str:
    luts = next(result.luts for result in results if result.policy == policy)
    label = policy.replace("delay factor: ", "DF: ").replace(" (nginx)", "")
    return label if luts is None else f"{label} [{luts} LUTs]"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m model.fairness",
        description="Fairness of the delay-factor arbiter against smooth WRR, DRR, stride "
                    "scheduling and WF2Q+, with the iCE40 LUTs of every arbiter variant.")
    parser.add_argument("--quick", action="store_true",
                        help="a smaller run (48 sets, 2048 rounds), as `make sim` shows it")
    parser.add_argument("--sets", type=int, help="random weight sets (default 200)")
    parser.add_argument("--rounds", type=int, help="grant rounds per pattern (default 8192)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the weights and patterns")
    parser.add_argument("--out", type=Path, default=Path("build/reports"),
                        help="directory of the csv, md and png files (default build/reports)")
    parser.add_argument("--costs", type=Path, default=COSTS_FILE, metavar="FILE",
                        help="the arbiter variants' iCE40 costs, as written by `python -m "
                             "hw.flow.arbiter_cost` (default results/arbiter_cost.json)")
    parser.add_argument("--no-synth", action="store_true",
                        help="leave the LUT column empty (ignore the costs file)")
    args = parser.parse_args(argv)
    sets = args.sets or (48 if args.quick else 200)
    rounds = args.rounds or (2048 if args.quick else 8192)

    rng = np.random.default_rng(args.seed)
    weights, present = random_weight_sets(sets, rng)
    policies = standard_policies()
    costs, note = ({}, "LUTs left out (--no-synth)") if args.no_synth else read_costs(args.costs)
    results = []
    for pattern in PATTERNS:
        for policy in policies:
            result = run_pattern(policy, weights, present, pattern, rounds, seed=args.seed)
            cost = costs.get(costed_params(policy.arbiter).name, {}) if policy.arbiter else {}
            result.luts, result.ffs = cost.get("luts"), cost.get("ffs")
            results.append(result)
    title = (f"{sets} random weight sets of 2-{MAX_SET} tasks, weights 1-255, {rounds} rounds, "
             f"seed {args.seed}")
    print(f"Arbiter fairness: {title}. Share error and lag against GPS with the configured "
          f"weights; LUTs: iCE40 (synth_ice40) for 8 slots, 3 classes; {note}.")
    for pattern in PATTERNS:
        print(f"\n{pattern}:")
        print(format_table(results, pattern))
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(results, args.out / "arbiter_fairness.csv")
    (args.out / "arbiter_fairness.md").write_text(f"{title}\n\n" + format_markdown(results))
    written = ["arbiter_fairness.csv", "arbiter_fairness.md"]
    if plot(results, args.out / "arbiter_fairness.png", title):
        written.append("arbiter_fairness.png")
    else:
        print("matplotlib is not installed: no plot", file=sys.stderr)
    print(f"\nwrote {', '.join(str(args.out / name) for name in written)}")
    return 0


def read_costs(path: Path) -> tuple[dict[str, dict], str]:
    """The per-variant costs in ``path`` (keyed by :attr:`ArbiterParams.name` at 8 slots and 3
    classes) and a note saying where they come from, or ``({}, why not)``."""
    try:
        data = json.loads(Path(path).read_text())
        variants, tool, date = data["variants"], data["tool"], data["date"]
    except FileNotFoundError:
        return {}, f"LUTs left out: {path} does not exist (`make bench-arbiter` writes it)"
    except (ValueError, KeyError, TypeError) as error:
        return {}, f"LUTs left out: {path} is not a costs file ({error})"
    return variants, f"LUTs from {path} ({tool}, {date})"


def costed_params(params: ArbiterParams) -> ArbiterParams:
    """The RTL whose cost the table shows: 8 slots and 3 classes with ``params``' knobs."""
    return ArbiterParams(8, 3, params.frac_bits, params.table, params.tie_break, params.decay,
                         params.weight_bits)


if __name__ == "__main__":
    sys.exit(main())
