"""The statistics behind every claim: confidence intervals and paired verdicts."""

import math

import numpy as np
import pytest

from model.stats import compare, interval, percentiles


def test_interval_matches_the_t_table():
    # n = 5, sample sd 1: half-width t(0.975, 4) / sqrt(5) = 2.7764 / 2.2361 = 1.2417.
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    sd = float(np.std(values, ddof=1))
    found = interval([v / sd for v in values])
    assert found.mean == pytest.approx(3.0 / sd)
    assert found.high - found.mean == pytest.approx(2.7764 / math.sqrt(5), abs=1e-4)
    assert found.count == 5


def test_one_value_has_no_interval_and_bad_input_is_refused():
    assert interval([3.0]).low == -math.inf and interval([3.0]).high == math.inf
    with pytest.raises(ValueError, match="at least one value"):
        interval([])
    with pytest.raises(ValueError, match="between 0 and 1"):
        interval([1, 2], confidence=95)


def test_interval_covers_the_mean_at_its_rate():
    # 2,000 samples of 5 normal values: the 95 % interval covers the true mean ~95 % of the time.
    rng = np.random.default_rng(7)
    samples = rng.normal(10, 3, (2000, 5))
    hits = sum(found.low <= 10 <= found.high for found in map(interval, samples))
    assert 0.93 < hits / 2000 < 0.97


@pytest.mark.parametrize(("mine", "theirs", "higher", "verdict"), [
    ([10, 11, 12, 10, 11], [5, 6, 5, 6, 5], True, "holds"),
    ([10, 11, 12, 10, 11], [5, 6, 5, 6, 5], False, "does not hold"),
    ([5, 6, 5, 6, 5], [10, 11, 12, 10, 11], False, "holds"),
    ([10, 5, 12, 4, 11], [9, 7, 10, 6, 10], True, "cannot tell"),
    ([3, 3, 3], [3, 3, 3], True, "does not hold"),          # an exact tie is not a gain
    ([0, 0, 0], [0, 0, 0], False, "does not hold"),
    ([4, 5, 6], [0, 0, 0], True, "holds"),                 # ratio undefined: the difference
])
def test_paired_verdicts(mine, theirs, higher, verdict):
    found = compare(mine, theirs, higher_is_better=higher)
    assert found.verdict == verdict
    assert (found.ratio is None) == (verdict == "holds" and not any(theirs))


def test_compare_needs_pairs():
    with pytest.raises(ValueError, match="as many policy values"):
        compare([1, 2, 3], [1, 2], higher_is_better=True)


def test_percentiles_are_numpys_floats_bit_for_bit():
    # model.stats.percentiles replays numpy's linear method (the summaries of every run use
    # it): the same floats as np.percentile, compared as hex, on every size to 60 and larger
    # ones, integer-valued (waits) and fractional data, with ties, at the percentiles the
    # models ask for and at random ones (0 and 100 included).
    rng = np.random.default_rng(7)
    asked = [(50, 99), (1, 25, 50, 75, 99), (0, 100), (98,), (99.9, 0.1, 33.3)]
    compared = 0
    for n in [*range(1, 61), 99, 100, 101, 1000, 4097]:
        for data in (rng.integers(0, 50, n), rng.integers(0, 1 << 40, n),
                     rng.standard_normal(n) * 1e3, np.full(n, 7)):
            array = np.asarray(data, dtype=float)
            for qs in [*asked, tuple(rng.uniform(0, 100, 3))]:
                ours = [value.hex() for value in percentiles(array, qs)]
                theirs = [float(value).hex() for value in np.percentile(array, qs)]
                assert ours == theirs, (n, qs, ours, theirs)
                compared += 1
    assert compared == 65 * 4 * 6
