"""The lab's statistics against scipy (a test-only dependency), to 1e-6: Student's t quantiles,
the Welch interval on log tps, the exact Mann-Whitney p values and the coverage of the
median's order-statistic interval (issue 16). Pure, no server."""

import itertools
import math
import random

import pytest

from pgcachelab.analysis.compare import exact_u_p_value, mann_whitney_u
from pgcachelab.analysis.statistics import (
    median_interval,
    order_statistic_coverage,
    regularized_incomplete_beta,
    student_t_cdf,
    t95,
    t_quantile,
)
from pgcachelab.analysis.summary import summarise
from pgcachelab.analysis.versions import welch_log_ratio

stats = pytest.importorskip(
    "scipy.stats", reason="scipy is a test dependency: pip install -e .[test]"
)
special = pytest.importorskip("scipy.special")

TOLERANCE = 1e-6
LARGE_DF = [250, 500, 1000, 10_000, 100_000, 1_000_000, 50_000_000, math.inf]
FRACTIONAL_DF = [0.5, 1.3, 2.7, 4.41, 9.99, 17.25, 58.6]


@pytest.mark.parametrize("df", [*range(1, 201), *LARGE_DF, *FRACTIONAL_DF])
def test_t_quantiles(df):
    for probability in (0.975, 0.95, 0.995, 0.9, 0.6, 0.025):
        expected = stats.t.ppf(probability, df)
        assert t_quantile(probability, df) == pytest.approx(expected, rel=TOLERANCE, abs=1e-9)
    assert t95(df) == pytest.approx(stats.t.ppf(0.975, df), rel=TOLERANCE)


def test_the_old_tables_errors_are_gone():
    assert t95(11) == pytest.approx(2.200985, abs=1e-6)  # the table said 2.179
    assert t95(31) == pytest.approx(2.039513, abs=1e-6)  # the table said 1.96
    assert t95(40) == pytest.approx(2.021075, abs=1e-6)
    assert math.isnan(t95(0))


BETA_CASES = [(0.3, 0.5, 0.5), (0.9, 5, 0.5), (0.01, 200, 0.5), (0.999, 0.5, 3.5),
              (0.5, 50, 50), (0.2, 1e4, 0.5)]  # fmt: skip


@pytest.mark.parametrize(("x", "a", "b"), BETA_CASES)
def test_incomplete_beta_and_t_cdf(x, a, b):
    assert regularized_incomplete_beta(x, a, b) == pytest.approx(
        special.betainc(a, b, x), rel=TOLERANCE, abs=1e-12
    )
    for t in (-3.0, -0.4, 0.0, 1.7, 12.0):
        assert student_t_cdf(t, 2 * a) == pytest.approx(stats.t.cdf(t, 2 * a), abs=1e-9)


def _samples(seed: int, n: int, centre: float, spread: float) -> list[float]:
    rng = random.Random(seed)
    return [centre * math.exp(rng.gauss(0, spread)) for _ in range(n)]


WELCH_CASES = [(3, 3), (2, 5), (6, 6), (5, 12), (20, 20), (4, 40)]


@pytest.mark.parametrize(("n_a", "n_b"), WELCH_CASES)
def test_welch_interval_on_logs(n_a, n_b):
    a = _samples(n_a, n_a, 1000, 0.05)
    b = _samples(100 + n_b, n_b, 1050, 0.12)
    ratio, low, high = welch_log_ratio(a, b)
    logs_a, logs_b = [math.log(v) for v in a], [math.log(v) for v in b]
    test = stats.ttest_ind(logs_b, logs_a, equal_var=False)
    interval = test.confidence_interval(0.95)
    assert math.log(ratio) == pytest.approx(sum(logs_b) / n_b - sum(logs_a) / n_a, abs=1e-12)
    assert math.log(low) == pytest.approx(interval.low, abs=TOLERANCE)
    assert math.log(high) == pytest.approx(interval.high, abs=TOLERANCE)


@pytest.mark.parametrize("n", [2, 3, 5, 10, 30])
def test_mean_interval_of_a_summary(n):
    values = _samples(n, n, 500, 0.1)
    summary = summarise(values)
    expected = stats.t.interval(0.95, n - 1, loc=summary.mean, scale=stats.sem(values))
    assert (summary.ci_low, summary.ci_high) == pytest.approx(expected, abs=TOLERANCE)


MANN_WHITNEY_CASES = [(3, 3), (3, 5), (4, 4), (5, 7), (6, 6), (8, 10), (12, 12), (20, 25)]


@pytest.mark.parametrize(("n_a", "n_b"), MANN_WHITNEY_CASES)
def test_exact_mann_whitney_p_values(n_a, n_b):
    for shift in (0.0, 0.03, 0.1, 0.3):
        a = _samples(n_a * 7, n_a, 1000, 0.05)
        b = _samples(n_b * 11, n_b, 1000 * (1 + shift), 0.05)
        ours = mann_whitney_u(a, b)
        theirs = stats.mannwhitneyu(b, a, alternative="two-sided", method="exact")
        assert ours.method == "exact"
        assert ours.u == theirs.statistic
        assert ours.p_value == pytest.approx(theirs.pvalue, abs=TOLERANCE)


@pytest.mark.parametrize(("n_a", "n_b"), [(2, 3), (3, 3), (3, 5), (4, 4), (2, 8)])
def test_exact_mann_whitney_p_values_for_every_ordering(n_a, n_b):
    """Every way the ranks can split between the samples: every U, not only those random
    samples land on."""
    ranks = range(n_a + n_b)
    for chosen in itertools.combinations(ranks, n_a):
        a = [float(r) for r in chosen]
        b = [float(r) for r in ranks if r not in chosen]
        theirs = stats.mannwhitneyu(b, a, alternative="two-sided", method="exact")
        assert mann_whitney_u(a, b).p_value == pytest.approx(theirs.pvalue, abs=TOLERANCE)
        assert exact_u_p_value(theirs.statistic, n_a, n_b) == pytest.approx(
            theirs.pvalue, abs=TOLERANCE
        )


@pytest.mark.parametrize("n", range(2, 41))
def test_median_interval_coverage_is_binomial(n):
    for j in range(1, n // 2 + 1):
        expected = stats.binom.cdf(n - j, n, 0.5) - stats.binom.cdf(j - 1, n, 0.5)
        assert order_statistic_coverage(n, j) == pytest.approx(expected, abs=TOLERANCE)
    interval = median_interval(list(range(n)))
    assert interval.coverage >= 0.95 or n < 6


def test_geometric_interval_of_ratios_matches_scipy():
    import math

    from scipy import stats as scipy_stats

    from pgcachelab.analysis.summary import geometric_interval

    for ratios in ([2.0, 2.2, 2.1], [5.49, 5.17, 11.6, 4.7], [0.9, 1.4, 1.0, 1.2, 0.95]):
        logs = [math.log(r) for r in ratios]
        low, high = scipy_stats.t.interval(
            0.95, len(logs) - 1, loc=sum(logs) / len(logs), scale=scipy_stats.sem(logs)
        )
        effect = geometric_interval(ratios)
        assert abs(math.log(effect.ci_low) - low) < 1e-6
        assert abs(math.log(effect.ci_high) - high) < 1e-6


def test_an_overhead_sag_is_the_geometric_mean_of_window_ratios_and_one_stall_does_not_throw_it():
    import math

    from scipy import stats as scipy_stats

    from pgcachelab.analysis.inspect_overhead import sag_of_ratios

    # the reproduce run's case: 250 clients on 2 cores, one baseline window stalled, so its
    # pair's ratio is 666; the arithmetic mean of these ratios made a sag of -7,390%
    ratios = [0.98, 1.01, 0.97, 666.0, 0.99, 1.02]
    sag = sag_of_ratios(ratios, "extension")
    logs = [math.log(r) for r in ratios]
    low, high = scipy_stats.t.interval(
        0.95, len(logs) - 1, loc=sum(logs) / len(logs), scale=scipy_stats.sem(logs)
    )
    assert sag.sag_percent == pytest.approx((1 - scipy_stats.gmean(ratios)) * 100)
    assert sag.sag_ci_percent == pytest.approx(
        ((1 - math.exp(high)) * 100, (1 - math.exp(low)) * 100)
    )
    assert -300 < sag.sag_percent < 0  # the stall still counts, but as one pair in six
    assert sag.ratios.n == 6
