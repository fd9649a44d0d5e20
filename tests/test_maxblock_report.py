"""The accuracy report: its vectorised circuits, its exact probabilities and its command line."""

import math
import subprocess
import sys
from fractions import Fraction
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from model.maxblock import (
    default_samples,
    grouped_max_free_run,
    max_free_run,
    sampled_max_free_run,
)
from model.maxblock_report import (
    accuracy_table,
    grouped_longest_free_runs,
    longest_free_runs,
    main,
    probability_no_free_run,
    random_free_blocks,
    refusal_table,
    round_down_to_samples,
    sampled_longest_free_runs,
    seed_analysis,
)

ROOT = Path(__file__).resolve().parents[1]


def status_word(row, free_level=1) -> int:
    """Read one boolean row (True = free, column i = block i) as a status word."""
    return sum(1 << i for i, free in enumerate(row.tolist()) if bool(free) == bool(free_level))


def random_words(n, seed):
    """A few hundred random rows over several occupancies, plus all free and all occupied."""
    rng = np.random.default_rng(seed)
    rows = [random_free_blocks(rng, 60, n, occupancy) for occupancy in (0.1, 0.3, 0.5, 0.7, 0.9)]
    rows.append(np.ones((1, n), dtype=bool))
    rows.append(np.zeros((1, n), dtype=bool))
    return np.concatenate(rows)


# -- (a) the vectorised circuits are bit-exact to the scalar models -------------------------------

@pytest.mark.parametrize("n", [1, 12, 128])
def test_longest_free_runs_match_model(n):
    free = random_words(n, seed=n)
    runs = longest_free_runs(free)
    for free_level in (0, 1):
        expected = [max_free_run(status_word(row, free_level), n, free_level=free_level)
                    for row in free]
        assert runs.tolist() == expected


@pytest.mark.parametrize("groups", [1, 16, 32, 64, 128])
def test_grouped_longest_free_runs_match_model(groups):
    n = 128
    free = random_words(n, seed=1000 + groups)
    runs = grouped_longest_free_runs(free, groups)
    expected = [grouped_max_free_run(status_word(row), n, groups) for row in free]
    assert runs.tolist() == expected


@pytest.mark.parametrize("exclude_primes", [False, True])
def test_sampled_longest_free_runs_match_model(exclude_primes):
    n = 128
    samples = default_samples(n, exclude_primes=exclude_primes)
    free = random_words(n, seed=2000 + exclude_primes)
    runs = sampled_longest_free_runs(free, samples)
    expected = [sampled_max_free_run(status_word(row), n, samples) for row in free]
    assert runs.tolist() == expected
    assert round_down_to_samples(longest_free_runs(free), samples).tolist() == expected


def test_sampled_without_length_one_reports_zero_for_short_runs():
    samples = [3, 7]                                   # lengths 4 and 8 only
    assert round_down_to_samples(np.arange(10), samples).tolist() == [0, 0, 0, 0, 4, 4, 4, 4,
                                                                      8, 8]


# -- (b) the exact probabilities ------------------------------------------------------------------

def test_seed_formula_values():
    analysis = seed_analysis(peus=64)
    grouped = analysis["grouped"]
    peu = Fraction(15, 16) ** 32
    ap = 1 - (1 - peu) ** 4
    assert grouped["peu"]["exact_fraction"] == peu
    assert grouped["ap"]["exact_fraction"] == ap
    assert grouped["all_aps"]["exact_fraction"] == ap ** 16
    assert grouped["peu"]["exact"] == pytest.approx(0.1267888, abs=1e-7)
    assert grouped["ap"]["exact"] == pytest.approx(0.4185971, abs=1e-7)
    assert grouped["all_aps"]["exact"] == pytest.approx(8.8867e-7, rel=1e-4)
    # The seed's printed values, at the precision it prints them.
    assert f"{grouped['peu']['exact']:.3f}" == "0.127"
    assert abs(grouped["ap"]["exact"] - 0.418) < 1e-3
    assert f"{grouped['all_aps']['exact']:.0e}" == "9e-07"


def test_exact_circuit_failure_values():
    exact = seed_analysis(peus=64)["exact"]
    peu = probability_no_free_run(128, 4, Fraction(1, 2))
    assert exact["peu"]["exact_fraction"] == peu
    assert exact["peu"]["exact"] == pytest.approx(0.009712, abs=1e-6)
    assert exact["ap"]["exact_fraction"] == 1 - (1 - peu) ** 4


@pytest.mark.parametrize("occupancy", [Fraction(1, 2), Fraction(1, 3)])
@pytest.mark.parametrize("run_length", [1, 2, 4, 12, 13])
def test_dynamic_program_matches_enumeration(occupancy, run_length):
    n = 12
    expected = Fraction(0)
    for status in range(1 << n):
        if max_free_run(status, n) < run_length:
            free = status.bit_count()
            expected += (1 - occupancy) ** free * occupancy ** (n - free)
    assert probability_no_free_run(n, run_length, occupancy) == expected
    assert probability_no_free_run(n, run_length, float(occupancy)) == pytest.approx(
        float(expected), rel=1e-12, abs=1e-15)


def test_dynamic_program_small_cases():
    assert probability_no_free_run(0, 3, Fraction(1, 2)) == 1
    # Sixteen words of four blocks; those without two adjacent free blocks are the eight
    # Fibonacci words 0000, 1000, 0100, 0010, 0001, 1010, 0101, 1001.
    assert probability_no_free_run(4, 2, Fraction(1, 2)) == Fraction(8, 16)
    with pytest.raises(ValueError):
        probability_no_free_run(4, 0, Fraction(1, 2))


# -- (c) Monte Carlo agrees with the formulas ----------------------------------------------------

def test_monte_carlo_within_four_standard_errors():
    analysis = seed_analysis()
    for circuit in ("grouped", "exact"):
        for key in ("peu", "ap"):
            cells = analysis[circuit][key]
            error = math.sqrt(cells["exact"] * (1 - cells["exact"]) / cells["trials"])
            assert abs(cells["monte_carlo"] - cells["exact"]) < 4 * error, (circuit, key)
    peu = analysis["grouped"]["peu"]
    assert peu["trials"] == 200000
    assert abs(peu["monte_carlo"] - (15 / 16) ** 32) < 4 * peu["std_error"]
    direct = analysis["grouped"]["all_aps_direct"]
    assert direct["trials"] == 200000 // 64


def test_refusal_and_accuracy_tables():
    words = 3000
    accuracy = accuracy_table(words=words, seed=7)
    refusals = refusal_table(words=words, seed=7)
    assert list(accuracy) == list(refusals) == [0.25, 0.5, 0.75]
    for occupancy, entry in accuracy.items():
        for name, cells in entry["variants"].items():
            assert cells["mean_under"] >= 0 and cells["max_under"] >= 0
            assert cells["mean_approx"] == pytest.approx(entry["mean_exact"] - cells["mean_under"])
            assert (cells["wrong_fraction"] == 0) == (cells["max_under"] == 0)
            refusal = refusals[occupancy]["refusal"][name]
            for eligible, probability in zip(refusals[occupancy]["eligible"], refusal,
                                             strict=True):
                assert (probability is None) == (eligible == 0)
        # The default sample set holds every length up to 8: no needless refusal there.
        default = next(name for name in entry["variants"] if "default" in name)
        assert all(p in (0, None) for p in refusals[occupancy]["refusal"][default][:8])
    # Every word has a free block at occupancy 0.25 (the chance of none is 0.75 ** 128).
    assert refusals[0.25]["eligible"][0] == words


def test_grouped_refusal_matches_exact_probability():
    # P(grouped < r | exact >= r) = (P(grouped < r) - P(exact < r)) / (1 - P(exact < r)).
    words, occupancy = 20000, 0.5
    table = refusal_table(occupancies=[occupancy], words=words, seed=11)[occupancy]
    for r in (1, 4, 5):
        exact_below = probability_no_free_run(128, r, Fraction(1, 2))
        grouped_below = probability_no_free_run(32, -(-r // 4), 1 - Fraction(1, 16))
        expected = float((grouped_below - exact_below) / (1 - exact_below))
        measured = table["refusal"]["grouped, 4-block groups"][r - 1]
        eligible = table["eligible"][r - 1]
        error = math.sqrt(expected * (1 - expected) / eligible)
        assert abs(measured - expected) < 4 * error, r


# -- (d) the command line -------------------------------------------------------------------------

SECTION_TITLES = ("1. Accuracy of the approximate variants", "2. Needless refusals",
                  "3. The seed's failure analysis, reproduced")


def test_main_prints_the_three_sections(capsys):
    main(["report", "--samples", "2000"])
    out = capsys.readouterr().out
    for title in SECTION_TITLES:
        assert title in out
    for occupancy in ("0.25", "0.50", "0.75"):
        assert f"Occupancy {occupancy}" in out
    for value in ("0.127", "0.418", "9e-7", "(15/16)^32", "0 / 3125"):
        assert value in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_main_without_arguments(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["maxblock", "--samples", "300", "--peus", "2000"])
    main()
    out = capsys.readouterr().out
    assert all(title in out for title in SECTION_TITLES)


def test_main_rejects_unknown_command():
    with pytest.raises(SystemExit):
        main(["simulate"])


def test_module_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "model.maxblock_report", "--samples", "300", "--peus", "640"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert not result.stderr
    assert all(title in result.stdout for title in SECTION_TITLES)


def test_reports_are_reproducible(capsys):
    outputs = []
    for _ in range(2):
        main(["--samples", "500", "--peus", "1000", "--seed", "5"])
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_product_of_small_words_covers_all_patterns():
    # The vectorised exact circuit on every 10-block word at once.
    n = 10
    free = np.array(list(product([False, True], repeat=n)))
    expected = [max_free_run(status_word(row), n) for row in free]
    assert longest_free_runs(free).tolist() == expected
