"""The statistics of analysis/statistics.py on known cases and on real captured pgbench outputs
(tests/data/pgbench/stability, see capture.py there)."""

import math
import random
import statistics
from fractions import Fraction
from pathlib import Path

import pytest

from pgcachelab.analysis.statistics import (
    MIN_EXACT_95,
    after_warmup,
    coefficient_of_variation,
    machine_noise,
    median_interval,
    order_statistic_coverage,
    point_warnings,
    progress_warnings,
    relative_half_width,
    repetitions_warning,
    sample_stdev,
    settled,
    tps_deviations,
    tps_trend,
)
from pgcachelab.analysis.summary import summarise
from pgcachelab.workloads.pgbench_output import parse_pgbench_output

STABILITY = Path(__file__).parent / "data" / "pgbench" / "stability"


def progress_of(name: str) -> list[dict]:
    result = parse_pgbench_output((STABILITY / f"{name}.txt").read_text())
    return [{"elapsed_s": s.elapsed_s, "tps": s.tps} for s in result.progress]


@pytest.mark.parametrize(
    ("n", "ranks", "coverage"),
    [
        (3, (1, 3), 0.75),  # too few: min..max, and its coverage said
        (5, (1, 5), 0.9375),
        (6, (1, 6), 0.96875),  # the first n with a 95% interval
        (10, (2, 9), 0.978515625),
        (20, (6, 15), 0.958610535),  # the rank table of the sign test
    ],
)
def test_median_interval_is_the_exact_order_statistic_interval(n, ranks, coverage):
    values = [float(v) for v in range(n, 0, -1)]  # unsorted on purpose
    interval = median_interval(values)
    assert (interval.low, interval.high) == ranks
    assert interval.coverage == pytest.approx(coverage)
    assert interval.is_95 == (n >= MIN_EXACT_95)


def test_coverage_is_the_binomial_sum():
    # P(1 <= Binomial(6, 1/2) <= 5)
    assert order_statistic_coverage(6, 1) == pytest.approx(1 - 2 / 64)
    assert order_statistic_coverage(10, 3) == pytest.approx(1 - 2 * (1 + 10 + 45) / 1024)


def reference_coverage(n: int, j: int) -> float:
    """The exact sum the lab used before issue 24 (O(n^2) big-integer work per interval)."""
    return sum(math.comb(n, i) for i in range(j, n - j + 1)) / 2**n


def reference_interval(values: list[float], confidence: float) -> tuple:
    ordered = sorted(values)
    n = len(ordered)
    j = 1
    while j + 1 <= n // 2 and reference_coverage(n, j + 1) >= confidence:
        j += 1
    return ordered[j - 1], ordered[n - j], reference_coverage(n, j)


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_median_interval_equals_the_former_exact_sum_up_to_60_values(confidence):
    for n in range(2, 61):
        values = [float((7 * v) % n) for v in range(n)]  # a permutation: sorting matters
        interval = median_interval(values, confidence)
        assert (interval.low, interval.high, interval.coverage) == reference_interval(
            values, confidence
        )
        for j in range(1, n // 2 + 1):
            assert order_statistic_coverage(n, j) == reference_coverage(n, j)


@pytest.mark.parametrize("n", [1001, 2000, 5001])
def test_median_interval_in_floats_picks_the_exact_ranks_beyond_a_thousand(n):
    # the exact tails by the same recurrence in integers: the former sum would take minutes
    whole, term, tail, exact = 2**n, 1, 0, []
    for k in range(n // 2):
        tail += term
        exact.append(Fraction(whole - 2 * tail, whole))
        term = term * (n - k) // (k + 1)
    j = max(rank for rank in range(1, n // 2 + 1) if exact[rank - 1] >= Fraction(0.95))
    interval = median_interval([float(v) for v in range(n)])
    assert (interval.low, interval.high) == (j - 1, n - j)
    assert interval.coverage == pytest.approx(float(exact[j - 1]), abs=1e-12)


def test_one_value_has_no_interval_and_summary_carries_the_median_interval():
    assert median_interval([5.0]) is None
    summary = summarise([10.0, 12.0, 11.0, 13.0, 9.0, 10.5])
    assert summary.median == 10.75
    assert (summary.median_low, summary.median_high) == (9.0, 13.0)
    assert summary.median_coverage > 0.95


def test_settled_needs_six_values_and_a_narrow_interval():
    tight = [1000.0, 1001, 999, 1002, 998, 1000]
    assert relative_half_width(1000.0, median_interval(tight)) == pytest.approx(0.002)
    assert settled(tight, 0.02)
    assert not settled(tight[:5], 0.02)  # min..max of 5 is not a 95% interval
    assert not settled([1000.0, 1100, 900, 1000, 1000, 1000], 0.02)


def test_noise_is_the_median_coefficient_of_variation_of_the_points():
    noise = machine_noise({0: [100.0, 110.0], 1: [50.0, 50.0], 2: [7.0], 3: [10.0, 12.0, 14.0]})
    assert set(noise.cv_by_point) == {0, 1, 3}  # one value: no spread
    assert noise.cv_by_point[1] == 0
    assert noise.median_cv == pytest.approx(coefficient_of_variation([100.0, 110.0]))
    assert machine_noise({0: [1.0]}).median_cv is None


def test_point_warnings_name_what_to_try():
    assert point_warnings("scale=1", [100.0, 101.0, 99.0]) == []
    few = repetitions_warning({"scale=1": 3, "scale=2": 2, "scale=4": 6, "scale=8": 1})
    assert few.point == "run" and "2 of 4 points" in few.problem and "50%" in few.problem
    assert "repetitions = 6" in few.try_next
    assert repetitions_warning({"scale=1": 6, "scale=2": 1}) is None
    wide = point_warnings("scale=1", [100.0, 150.0, 70.0, 120.0, 90.0, 130.0])
    assert any("CV" in w.problem and "longer duration" in w.try_next for w in wide)
    never = point_warnings("scale=1", [100.0, 104, 97, 103, 99, 100], target=0.01)
    assert any("never settled" in w.problem and "max_repetitions" in w.try_next for w in never)
    assert point_warnings("scale=1", [100.0, 101, 99, 100, 100.5, 99.5], target=0.02) == []


def test_a_lock_stall_is_found_as_dipped_seconds():
    seconds, tps = after_warmup(progress_of("lock_stall"), 1)
    deviations = tps_deviations(seconds, tps)
    assert deviations.dips_s == [5.0, 6.0, 7.0]  # the 3 s lock taken at 4 s
    warnings = progress_warnings("mode=simple-update", seconds, tps, writes=True)
    assert any("far below" in w.problem and "checkpoint" in w.try_next for w in warnings)


def test_a_run_whose_load_drops_has_a_rising_trend():
    seconds, tps = after_warmup(progress_of("rising"), 1)
    trend = tps_trend(seconds, tps)
    assert trend.significant and trend.relative_change > 0.3
    warnings = progress_warnings("clients=2", seconds, tps, writes=False)
    assert [w.problem.split(" by")[0] for w in warnings] == ["tps rises"]


def test_a_run_without_an_event_has_no_significant_trend_and_no_dip():
    # captured on a loaded two-core machine: noisy, but nothing systematic
    seconds, tps = after_warmup(progress_of("steady"), 1)
    assert not tps_trend(seconds, tps).significant
    assert tps_deviations(seconds, tps).dips_s == []


def test_warmup_seconds_are_left_out_and_short_runs_are_not_judged():
    samples = progress_of("rising")
    seconds, _ = after_warmup(samples, 3)
    assert seconds[0] == 4.0 and len(seconds) == len(samples) - 3
    assert tps_trend([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) is None
    assert tps_deviations([1.0, 2.0], [5.0, 0.0]) is None
    flat = tps_trend([1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 5.0])
    assert flat.relative_change == 0 and not flat.significant
    assert not math.isnan(flat.t_statistic)


def test_sample_stdev_agrees_with_the_exact_one():
    rng = random.Random(5)
    for _ in range(300):
        values = [rng.lognormvariate(8, rng.random()) for _ in range(rng.randint(2, 200))]
        assert sample_stdev(values) == pytest.approx(statistics.stdev(values), rel=1e-14)
