"""Accuracy report of the approximate largest-free-block circuits (``make sim``).

The grouped (embodiment 5) and sampled (embodiment 6) circuits of :mod:`model.maxblock` never
report more than the exact longest free run (embodiment 4); their only error is to report
less. This module measures that error on random status words, in which every block is
occupied independently with a given probability (the *occupancy*):

1. :func:`accuracy_table` -- per occupancy and variant, the mean exact longest run, the mean
   and largest under-estimate, and the fraction of words on which the variant is wrong;
2. :func:`refusal_table` -- the probability that a request of ``r`` blocks is refused although
   a large enough free run exists, ``P(approx < r | exact >= r)``;
3. :func:`seed_analysis` -- the seed's failure-probability analysis (groups of 4, 50 %
   occupancy, requests of 4 blocks, APs of 4 PEUs, 16 APs), by its formulas, by Monte Carlo,
   and the same probabilities for the exact circuit, by dynamic programming and Monte Carlo.

The Monte Carlo helpers work on a ``(words, n)`` boolean array, ``True`` meaning free and
column ``i`` being block ``i``; they agree bit for bit with the scalar models. Run
``python -m model.maxblock_report`` for the report.

Kept as one module (about 640 lines, over the guide's 600 lines) on purpose: it is one report
(``make report``), whose Monte Carlo helpers, closed-form probabilities and text formatting
serve its three tables and nothing else."""

import argparse
import math
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from model.maxblock import check_groups, check_samples, default_samples

__all__ = [
    "BLOCKS",
    "OCCUPANCIES",
    "REQUESTS",
    "SEED_PRINTED",
    "Variant",
    "accuracy_table",
    "format_accuracy",
    "format_refusals",
    "format_seed_analysis",
    "grouped_longest_free_runs",
    "longest_free_runs",
    "main",
    "probability_no_free_run",
    "random_free_blocks",
    "refusal_table",
    "report",
    "round_down_to_samples",
    "sampled_longest_free_runs",
    "seed_analysis",
    "standard_variants",
]

#: Blocks per resource (one PEU) in the report.
BLOCKS = 128

#: Occupancies of the report: the probability that a block is occupied.
OCCUPANCIES = (0.25, 0.5, 0.75)

#: Request sizes, in blocks, of the refusal tables.
REQUESTS = tuple(range(1, 17))

#: Rows processed at once by the Monte Carlo helpers (bounds the memory of large runs).
_CHUNK_ROWS = 16384

_DASH = "\N{EM DASH}"


# -- vectorised circuit models --------------------------------------------------------------------

def random_free_blocks(rng: np.random.Generator, words: int, n: int,
                       occupancy: float) -> np.ndarray:
    """Draw random status words with independently occupied blocks.

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of randomness; ``words * n`` uniform doubles are drawn from it, row by row.
    words, n : int
        The number of words and of blocks per word.
    occupancy : float
        The probability that a block is occupied.

    Returns
    -------
    numpy.ndarray
        A ``(words, n)`` boolean array; ``True`` means free, column ``i`` is block ``i``.
    """
    return rng.random((words, n)) >= occupancy


def longest_free_runs(free: np.ndarray) -> np.ndarray:
    """The exact circuit (embodiment 4) on many words at once.

    Parameters
    ----------
    free : numpy.ndarray
        A ``(words, n)`` boolean array, ``True`` meaning free.

    Returns
    -------
    numpy.ndarray
        The length of the longest run of ``True`` in each row (0 for a row with none), as
        ``int32``; equal to :func:`model.maxblock.max_free_run` of the row read as a word.

    Notes
    -----
    Within a row, the free count ``c`` (a cumulative sum) minus its value at the last occupied
    block so far (a running maximum, since ``c`` never decreases) is the length of the free run
    ending at each block; the longest run is its maximum.
    """
    free = np.asarray(free, dtype=bool)
    if free.ndim != 2:
        raise ValueError(f"Expected a (words, blocks) array, not shape {free.shape}")
    words, n = free.shape
    result = np.zeros(words, dtype=np.int32)
    if n == 0:
        return result
    for start in range(0, words, _CHUNK_ROWS):
        chunk = free[start:start + _CHUNK_ROWS]
        free_count = np.cumsum(chunk, axis=1, dtype=np.int32)
        at_last_occupied = np.maximum.accumulate(np.where(chunk, 0, free_count), axis=1)
        result[start:start + len(chunk)] = (free_count - at_last_occupied).max(axis=1)
    return result


def grouped_longest_free_runs(free: np.ndarray, groups: int) -> np.ndarray:
    """The grouped circuit (embodiment 5) on many words at once.

    Parameters
    ----------
    free : numpy.ndarray
        A ``(words, n)`` boolean array, ``True`` meaning free.
    groups : int
        The number of equal groups; it must divide ``n``. Group ``g`` holds blocks
        ``g * n // groups`` to ``(g + 1) * n // groups - 1``.

    Returns
    -------
    numpy.ndarray
        Per row, the longest run of wholly free groups times the group size ``n // groups``,
        equal to :func:`model.maxblock.grouped_max_free_run` of the row read as a word.
    """
    free = np.asarray(free, dtype=bool)
    words, n = free.shape
    check_groups(n, groups)
    size = n // groups
    group_free = free.reshape(words, groups, size).all(axis=2)
    return longest_free_runs(group_free) * np.int32(size)


def round_down_to_samples(exact_runs: np.ndarray, samples: Sequence[int]) -> np.ndarray:
    """What the sampled circuit reports, given the exact longest runs.

    Parameters
    ----------
    exact_runs : numpy.ndarray
        Exact longest free runs, e.g. from :func:`longest_free_runs`.
    samples : sequence of int
        The sample set: each ``k`` stands for the run length ``k + 1``.

    Returns
    -------
    numpy.ndarray
        For each run, the largest sampled length ``k + 1`` not above it, or 0 when none is.
    """
    lengths = np.sort(np.asarray(samples, dtype=np.int32) + 1)
    position = np.searchsorted(lengths, exact_runs, side="right") - 1
    return np.where(position >= 0, lengths[np.maximum(position, 0)], 0).astype(np.int32)


def sampled_longest_free_runs(free: np.ndarray, samples: Sequence[int]) -> np.ndarray:
    """The sampled circuit (embodiment 6) on many words at once.

    Parameters
    ----------
    free : numpy.ndarray
        A ``(words, n)`` boolean array, ``True`` meaning free.
    samples : sequence of int
        A valid sample set for ``n`` blocks (see :func:`model.maxblock.check_samples`).

    Returns
    -------
    numpy.ndarray
        Per row, the largest sampled length ``k + 1`` that fits in a free run (0 if none),
        equal to :func:`model.maxblock.sampled_max_free_run` of the row read as a word.
    """
    free = np.asarray(free, dtype=bool)
    samples = check_samples(free.shape[1], samples)
    return round_down_to_samples(longest_free_runs(free), samples)


# -- exact probabilities --------------------------------------------------------------------------

def probability_no_free_run(n: int, run_length: int,
                            occupancy: float | Fraction) -> float | Fraction:
    """Probability that ``n`` random blocks hold no free run of ``run_length`` or more.

    Every block is occupied independently with probability ``occupancy``. A dynamic program
    over the length of the free run that ends at the current block (``0 .. run_length - 1``;
    reaching ``run_length`` leaves the count). Exact when ``occupancy`` is a
    :class:`fractions.Fraction`, a float otherwise.

    Parameters
    ----------
    n : int
        The number of blocks (0 or more).
    run_length : int
        The run length looked for (1 or more).
    occupancy : float or Fraction
        The probability that a block is occupied.

    Returns
    -------
    float or Fraction
        ``P(longest free run < run_length)``, of the type of ``occupancy``.
    """
    if run_length < 1:
        raise ValueError(f"Run length must be at least 1, not {run_length}")
    one = type(occupancy)(1)
    vacancy = one - occupancy
    # state[j]: probability that no run of run_length has been seen and the current run is j.
    state = [one] + [one - one] * (run_length - 1)
    for _ in range(n):
        state = [occupancy * sum(state)] + [vacancy * count for count in state[:-1]]
    return sum(state)


def _grouped_refusal_probability(n: int, group_size: int, request: int,
                                 occupancy: Fraction) -> Fraction:
    # Groups are independent; a group is free with probability vacancy ** size, and a request of
    # r blocks needs a run of ceil(r / size) free groups.
    group_occupancy = 1 - (1 - occupancy) ** group_size
    return probability_no_free_run(n // group_size, -(-request // group_size), group_occupancy)


# -- the variants of the report -------------------------------------------------------------------

@dataclass(frozen=True)
class Variant:
    """One approximate circuit of the report.

    Attributes
    ----------
    name : str
        Its name in the accuracy table.
    column : str
        Its (short) heading in the refusal tables.
    estimate : callable
        ``estimate(free, exact_runs)`` returns what the circuit reports for each row of the
        boolean array ``free``, given the exact longest runs of those rows.
    """

    name: str
    column: str
    estimate: Callable[[np.ndarray, np.ndarray], np.ndarray]


def _grouped_variant(n: int, group_size: int) -> Variant:
    groups = check_groups(n, n // group_size)
    return Variant(f"grouped, {group_size}-block groups", f"group {group_size}",
                   lambda free, _exact: grouped_longest_free_runs(free, groups))


def _sampled_variant(n: int, exclude_primes: bool) -> Variant:
    samples = tuple(default_samples(n, exclude_primes=exclude_primes))
    which = "no primes" if exclude_primes else "default"
    return Variant(f"sampled, {len(samples)} lengths ({which})", f"sampled {len(samples)}",
                   lambda _free, exact: round_down_to_samples(exact, samples))


def standard_variants(n: int = BLOCKS) -> list[Variant]:
    """The five variants of the report for ``n`` blocks.

    Grouped with groups of 2, 4 and 8 blocks, sampled with ``default_samples(n)`` and with
    ``default_samples(n, exclude_primes=True)``.
    """
    return [*(_grouped_variant(n, size) for size in (2, 4, 8)),
            _sampled_variant(n, exclude_primes=False), _sampled_variant(n, exclude_primes=True)]


def _simulate(n: int, occupancies: Iterable[float], words: int, seed: int):
    # One independent stream per occupancy, spawned from default_rng(seed): both tables see the
    # same words, and the words of one occupancy do not depend on the others.
    occupancies = tuple(occupancies)
    streams = np.random.default_rng(seed).spawn(len(occupancies))
    variants = standard_variants(n)
    for occupancy, rng in zip(occupancies, streams, strict=True):
        free = random_free_blocks(rng, words, n, occupancy)
        exact = longest_free_runs(free)
        yield occupancy, exact, {v.name: v.estimate(free, exact) for v in variants}


def accuracy_table(*, n: int = BLOCKS, occupancies: Iterable[float] = OCCUPANCIES,
                   words: int = 20000, seed: int = 2026) -> dict:
    """Monte Carlo accuracy of the approximate variants (section 1 of the report).

    Parameters
    ----------
    n : int
        Blocks per word.
    occupancies : iterable of float
        The probabilities that a block is occupied.
    words : int
        Random words per occupancy.
    seed : int
        Seed of :func:`numpy.random.default_rng`; :func:`refusal_table` with the same
        arguments uses the same words.

    Returns
    -------
    dict
        ``{occupancy: {"mean_exact": float, "variants": {name: {"mean_approx": float,
        "mean_under": float, "max_under": int, "wrong_fraction": float}}}}``, where
        ``under = exact - approx`` and "wrong" means ``approx < exact``.
    """
    table = {}
    for occupancy, exact, estimates in _simulate(n, occupancies, words, seed):
        rows = {}
        for name, approx in estimates.items():
            under = exact - approx
            rows[name] = {"mean_approx": float(approx.mean()), "mean_under": float(under.mean()),
                          "max_under": int(under.max()),
                          "wrong_fraction": float(np.count_nonzero(under) / words)}
        table[occupancy] = {"mean_exact": float(exact.mean()), "variants": rows}
    return table


def refusal_table(*, n: int = BLOCKS, occupancies: Iterable[float] = OCCUPANCIES,
                  requests: Iterable[int] = REQUESTS, words: int = 20000,
                  seed: int = 2026) -> dict:
    """Monte Carlo probability of a needless refusal (section 2 of the report).

    A request of ``r`` blocks is refused needlessly when the variant reports less than ``r``
    although the exact longest free run is ``r`` or more.

    Parameters
    ----------
    n, occupancies, words, seed
        As for :func:`accuracy_table` (same arguments, same words).
    requests : iterable of int
        The request sizes ``r``, in blocks.

    Returns
    -------
    dict
        ``{occupancy: {"requests": [r, ...], "eligible": [count, ...], "refusal": {name:
        [probability or None, ...]}}}``: ``eligible`` counts the words with ``exact >= r``, and
        each probability is ``P(approx < r | exact >= r)``, ``None`` when no word is eligible.
    """
    requests = list(requests)
    sizes = np.asarray(requests, dtype=np.int32)
    table = {}
    for occupancy, exact, estimates in _simulate(n, occupancies, words, seed):
        eligible = exact[:, None] >= sizes
        eligible_count = eligible.sum(axis=0)
        refusal = {}
        for name, approx in estimates.items():
            refused = np.count_nonzero(eligible & (approx[:, None] < sizes), axis=0)
            refusal[name] = [int(r) / int(e) if e else None
                             for r, e in zip(refused, eligible_count, strict=True)]
        table[occupancy] = {"requests": requests,
                            "eligible": [int(e) for e in eligible_count], "refusal": refusal}
    return table


# -- the seed's analysis --------------------------------------------------------------------------

#: The values the seed prints for its three probabilities.
SEED_PRINTED = {"peu": "0.127", "ap": "0.418", "all_aps": "9e-7"}


def _estimate(exact: Fraction, events: int, trials: int, seed_value: str | None) -> dict:
    share = events / trials if trials else math.nan
    return {"seed_value": seed_value, "exact": float(exact), "exact_fraction": exact,
            "monte_carlo": share, "std_error": math.sqrt(share * (1 - share) / trials)
            if trials else math.nan, "events": events, "trials": trials}


def _failure_chain(peu_exact: Fraction, peu_failed: np.ndarray, peus_per_ap: int, aps: int,
                   seed_values: dict | None) -> dict:
    # PEU -> AP (fails if any of its PEUs fails) -> all APs (fail if every AP fails).
    def printed(key):
        return seed_values[key] if seed_values else None

    ap_exact = 1 - (1 - peu_exact) ** peus_per_ap
    all_exact = ap_exact ** aps
    ap_count = len(peu_failed) // peus_per_ap
    ap_failed = peu_failed[:ap_count * peus_per_ap].reshape(ap_count, peus_per_ap).any(axis=1)
    trial_count = ap_count // aps
    all_failed = ap_failed[:trial_count * aps].reshape(trial_count, aps).all(axis=1)
    peu = _estimate(peu_exact, int(peu_failed.sum()), len(peu_failed), printed("peu"))
    ap = _estimate(ap_exact, int(ap_failed.sum()), ap_count, printed("ap"))
    # The AP estimate raised to the number of APs; its error by the delta method.
    from_ap = {"seed_value": printed("all_aps"), "exact": float(all_exact),
               "exact_fraction": all_exact, "monte_carlo": ap["monte_carlo"] ** aps,
               "std_error": aps * ap["monte_carlo"] ** (aps - 1) * ap["std_error"],
               "events": None, "trials": None}
    direct = _estimate(all_exact, int(all_failed.sum()), trial_count, printed("all_aps"))
    return {"peu": peu, "ap": ap, "all_aps": from_ap, "all_aps_direct": direct}


def seed_analysis(*, peus: int = 200000, seed: int = 2026, n: int = BLOCKS,
                  group_size: int = 4, occupancy: Fraction = Fraction(1, 2), request: int = 4,
                  peus_per_ap: int = 4, aps: int = 16) -> dict:
    """The seed's failure-probability analysis, by formula and by Monte Carlo (section 3).

    A PEU is one resource of ``n`` blocks; it fails when its circuit reports less than
    ``request``. An AP of ``peus_per_ap`` PEUs fails when any of its PEUs fails (a work-group's
    waves need all of them); the machine fails when all ``aps`` APs fail. The seed's numbers
    are for the grouped circuit with groups of ``group_size``: ``(15/16)^32``, ``1 - (1 -
    p)^4`` and ``p_AP^16``. The same chain is given for the exact circuit.

    Parameters
    ----------
    peus : int
        Monte Carlo PEUs (words); taken ``peus_per_ap`` at a time as APs, and the APs ``aps``
        at a time as direct machine trials.
    seed : int
        Seed of the :func:`numpy.random.default_rng` that draws the words.
    n, group_size, occupancy, request, peus_per_ap, aps
        The scenario; the defaults are the seed's. ``occupancy`` should be a Fraction for the
        exact values to be exact.

    Returns
    -------
    dict
        ``{"parameters": {...}, "grouped": chain, "exact": chain}``, where ``chain`` maps
        ``"peu"``, ``"ap"``, ``"all_aps"`` (Monte Carlo value = AP estimate ** aps) and
        ``"all_aps_direct"`` (Monte Carlo value = direct count) to ``{"seed_value": str or
        None, "exact": float, "exact_fraction": Fraction, "monte_carlo": float, "std_error":
        float, "events": int or None, "trials": int or None}``.
    """
    occupancy = Fraction(occupancy)
    groups = check_groups(n, n // group_size)
    rng = np.random.default_rng(seed)
    grouped_failed = np.empty(peus, dtype=bool)
    exact_failed = np.empty(peus, dtype=bool)
    for start in range(0, peus, _CHUNK_ROWS):
        rows = min(_CHUNK_ROWS, peus - start)
        free = random_free_blocks(rng, rows, n, float(occupancy))
        grouped_failed[start:start + rows] = grouped_longest_free_runs(free, groups) < request
        exact_failed[start:start + rows] = longest_free_runs(free) < request
    grouped_peu = _grouped_refusal_probability(n, group_size, request, occupancy)
    exact_peu = probability_no_free_run(n, request, occupancy)
    parameters = {"n": n, "group_size": group_size, "groups": groups, "occupancy": occupancy,
                  "request": request, "peus_per_ap": peus_per_ap, "aps": aps, "peus": peus,
                  "seed": seed}
    return {"parameters": parameters,
            "grouped": _failure_chain(grouped_peu, grouped_failed, peus_per_ap, aps,
                                      SEED_PRINTED),
            "exact": _failure_chain(exact_peu, exact_failed, peus_per_ap, aps, None)}


# -- formatting -----------------------------------------------------------------------------------

def _dash() -> str:
    # The em dash, unless standard output cannot encode it.
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        _DASH.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return "-"
    return _DASH


def _probability(value: float | None) -> str:
    if value is None or math.isnan(value):
        return _dash()
    if value == 0:
        return "0"
    if value < 1e-3:
        return f"{value:.2e}"
    return f"{value:.4f}"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1) -> list[str]:
    # Fixed-width columns: the first `left` columns left-aligned, the others right-aligned.
    rows = [list(row) for row in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows,
                                                                      strict=True)]

    def line(cells):
        parts = [str(cell).ljust(width) if i < left else str(cell).rjust(width)
                 for i, (cell, width) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return [line(headers), rule, *(line(row) for row in rows)]


def _heading(title: str) -> list[str]:
    return ["", title, "=" * len(title)]


def _paragraph(text: str) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), width=96, break_on_hyphens=False)


def format_accuracy(table: dict) -> str:
    """Section 1 of the report, from :func:`accuracy_table`."""
    rows = []
    for occupancy, entry in table.items():
        for i, (name, cells) in enumerate(entry["variants"].items()):
            first = not i
            rows.append([f"{occupancy:.2f}" if first else "",
                         f"{entry['mean_exact']:.2f}" if first else "", name,
                         f"{cells['mean_approx']:.2f}", f"{cells['mean_under']:.3f}",
                         str(cells["max_under"]), _probability(cells["wrong_fraction"])])
    headers = ["occupancy", "mean exact", "variant", "mean approx", "mean under", "max under",
               "P(wrong)"]
    lines = [*_heading("1. Accuracy of the approximate variants"), *_paragraph(
        "Per occupancy: the mean exact longest free run; per variant, the mean reported length, "
        "the mean and largest under-estimate (exact - reported) and the fraction of words on "
        "which the variant reports less than the exact length."), "",
        *_table(headers, rows, left=3)]
    return "\n".join(lines)


def format_refusals(table: dict, variants: Sequence[Variant] | None = None) -> str:
    """Section 2 of the report, from :func:`refusal_table`."""
    variants = list(variants) if variants is not None else standard_variants()
    column = {variant.name: variant.column for variant in variants}
    lines = [*_heading("2. Needless refusals: P(reported < r | exact >= r)"), *_paragraph(
        "A request of r blocks is refused needlessly when a free run of r blocks exists but "
        "the variant reports less than r. 'words' counts the random words that have such a "
        f"run; {_dash()} means there were none. Columns: "
        + "; ".join(f"{column.get(v.name, v.name)} = {v.name}" for v in variants) + ".")]
    for occupancy, entry in table.items():
        names = list(entry["refusal"])
        headers = ["r", "words", *(column.get(name, name) for name in names)]
        rows = [[str(r), str(count), *(_probability(entry["refusal"][name][i]) for name in names)]
                for i, (r, count) in enumerate(zip(entry["requests"], entry["eligible"],
                                                   strict=True))]
        lines += ["", f"Occupancy {occupancy:.2f}", *_table(headers, rows)]
    return "\n".join(lines)


def format_seed_analysis(analysis: dict) -> str:
    """Section 3 of the report, from :func:`seed_analysis`."""
    p = analysis["parameters"]
    free_groups = 1 - (1 - p["occupancy"]) ** p["group_size"]
    grouped_formula = (f"(1 - {1 - p['occupancy']}^{p['group_size']})^{p['groups']}"
                       f" = ({free_groups})^{p['groups']}")
    lines = [*_heading("3. The seed's failure analysis, reproduced"), *_paragraph(
        f"One PEU has {p['n']} blocks, each occupied with probability {p['occupancy']}; it "
        f"fails when its circuit reports less than the request of {p['request']} blocks. An AP "
        f"of {p['peus_per_ap']} PEUs fails when any of its PEUs fails (the work-group's waves "
        f"need all of them); the machine fails when all {p['aps']} APs fail. The seed's "
        f"grouped circuit ({p['groups']} groups of {p['group_size']}) fails with probability "
        f"{grouped_formula}; the exact circuit (no grouping) fails when no free run of "
        f"{p['request']} exists, computed exactly by a dynamic program over run lengths. "
        f"Monte Carlo: {p['peus']} PEUs (seed {p['seed']}), taken {p['peus_per_ap']} at a time "
        f"as APs; 'from AP' raises the measured AP probability to the power {p['aps']}, "
        f"'direct' counts machines of {p['aps']} APs that all failed.")]
    names = {"peu": "P(one PEU fails)", "ap": f"P(an AP of {p['peus_per_ap']} PEUs fails)",
             "all_aps": f"P(all {p['aps']} APs fail), from AP",
             "all_aps_direct": f"P(all {p['aps']} APs fail), direct"}
    headers = ["probability", "seed", "exact", "Monte Carlo", "std error", "MC count"]
    for circuit, title in (("grouped", f"Grouped circuit, groups of {p['group_size']} blocks"),
                           ("exact", "Exact circuit (no grouping)")):
        rows = []
        for key, label in names.items():
            cells = analysis[circuit][key]
            count = (f"{cells['events']} / {cells['trials']}" if cells["trials"] is not None
                     else _dash())
            # With no event the binomial standard error estimate (0) says nothing: omit it.
            error = _dash() if cells["events"] == 0 else f"{cells['std_error']:.1e}"
            rows.append([label, cells["seed_value"] or _dash(), f"{cells['exact']:.4g}",
                         _probability(cells["monte_carlo"]), error, count])
        lines += ["", title, *_table(headers, rows)]
    trials = analysis["grouped"]["all_aps_direct"]["trials"]
    if trials:
        lines += [""] + _paragraph(
            f"The direct count can only see events of probability about 1 / {trials} or more "
            f"(with no event, the 95% upper bound is 3 / {trials} = {3 / trials:.1e}); the "
            "machine-level values rest on the formula, which the PEU and AP rows confirm.")
    return "\n".join(lines)


def report(*, words: int = 20000, seed: int = 2026, peus: int = 200000) -> str:
    """The whole report as text: the heading and sections 1 to 3."""
    variants = standard_variants()
    heading = [*_heading("Largest free block: accuracy of the approximate circuits"),
               *_paragraph(
        f"A resource of {BLOCKS} blocks is a status word; in the random words below every block "
        "is occupied independently with the given probability (the occupancy). The exact "
        "circuit reports the longest run of free blocks. The grouped circuit cuts the blocks "
        "into equal groups, keeps only the wholly free ones and reports the longest run of "
        "free groups times the group size; the sampled circuit reports the largest of a set of "
        "sampled lengths that fits. Neither ever reports more than the exact length, so their "
        "only error is to report less: section 1 measures how much, section 2 how often this "
        "refuses a request that would fit, and section 3 reproduces the seed's failure "
        "analysis and sets the exact circuit beside it. Monte Carlo with "
        f"numpy.random.default_rng({seed}): {words} words per occupancy in sections 1 and 2 "
        "(the same words in both).")]
    occupancies = OCCUPANCIES
    sections = [
        "\n".join(heading),
        format_accuracy(accuracy_table(occupancies=occupancies, words=words, seed=seed)),
        format_refusals(refusal_table(occupancies=occupancies, words=words, seed=seed),
                        variants),
        format_seed_analysis(seed_analysis(peus=peus, seed=seed)),
    ]
    return "\n".join(sections) + "\n"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value}")
    return value


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``python -m model.maxblock_report [--samples N] [--seed S] [--peus P]``.

    Prints :func:`report`. ``argv`` defaults to ``sys.argv[1:]``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m model.maxblock_report",
        description="Accuracy report of the approximate largest-free-block circuits.")
    parser.add_argument("command", nargs="?", choices=["report"], default="report",
                        help="what to do (the only command, and the default): print the report")
    parser.add_argument("--samples", type=_positive, default=20000, metavar="N",
                        help="Monte Carlo words per occupancy in sections 1 and 2 "
                             "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=2026, metavar="S",
                        help="seed of numpy.random.default_rng (default: %(default)s)")
    parser.add_argument("--peus", type=_positive, default=200000, metavar="P",
                        help="Monte Carlo PEUs in section 3 (default: %(default)s)")
    args = parser.parse_args(argv)
    sys.stdout.write(report(words=args.samples, seed=args.seed, peus=args.peus))


if __name__ == "__main__":
    main()
