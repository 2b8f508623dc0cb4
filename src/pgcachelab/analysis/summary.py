"""Statistics over repetitions: medians, spreads and confidence intervals. Pure functions."""

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from pgcachelab.analysis.statistics import median_interval, sample_stdev, t95

K = TypeVar("K")  # what a summary is of: a swept value, a method, ...

__all__ = [
    "Effect",
    "Summary",
    "best_by_median",
    "geometric_interval",
    "hit_ratio",
    "summarise",
    "t95",
]


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    stdev: float | None
    minimum: float
    maximum: float
    ci_low: float | None  # 95% confidence interval of the mean; None with one value
    ci_high: float | None
    # The exact order-statistic interval of the median (analysis/statistics.py); None with one
    # value. median_coverage is its real confidence: below 0.95 with fewer than 6 values.
    median_low: float | None = None
    median_high: float | None = None
    median_coverage: float | None = None


def summarise(values: Sequence[float | None]) -> Summary | None:
    measured = [v for v in values if v is not None and not math.isnan(v)]
    if not measured:
        return None
    mean = statistics.fmean(measured)
    stdev: float | None
    ci_low: float | None
    ci_high: float | None
    if len(measured) > 1:
        stdev = sample_stdev(measured)
        half = t95(len(measured) - 1) * stdev / math.sqrt(len(measured))
        ci_low, ci_high = mean - half, mean + half
    else:
        stdev = ci_low = ci_high = None
    interval = median_interval(measured)
    return Summary(
        n=len(measured),
        median=statistics.median(measured),
        mean=mean,
        stdev=stdev,
        minimum=min(measured),
        maximum=max(measured),
        ci_low=ci_low,
        ci_high=ci_high,
        median_low=interval.low if interval else None,
        median_high=interval.high if interval else None,
        median_coverage=interval.coverage if interval else None,
    )


def best_by_median(summaries: dict[K, "Summary"], higher_is_better: bool) -> K:
    """The key of `summaries` (value -> Summary) with the best median: the one definition of
    "best" that the report's findings and `advise` share (issue 16: they used to disagree, one
    by median, one by mean).

    The median, not the mean: repetitions of a benchmark are skewed by stalls (a checkpoint, a
    neighbour's burst), and one bad repetition moves the mean of 3-6 values a long way while the
    median stays; it is also the figure the report's tables and its exact intervals are about.
    Ties go to the first key, so the order of the sweep decides, reproducibly.
    """
    pick = max if higher_is_better else min
    return pick(summaries, key=lambda value: summaries[value].median)


def hit_ratio(hits: float | None, reads: float | None) -> float | None:
    if hits is None or reads is None or hits + reads == 0:
        return None
    return hits / (hits + reads)


@dataclass(frozen=True)
class Effect:
    """A ratio (on/off, polled/not polled, ...) as the geometric mean of its pairs."""

    ratio: float  # geometric mean of the pairs' ratios
    ci_low: float | None
    ci_high: float | None
    pairs: int

    @property
    def significant(self) -> bool:
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_high < 1 or self.ci_low > 1


def geometric_interval(ratios: list[float]) -> Effect | None:
    """The geometric mean of ratios with Student's 95% interval on their logs: ratios multiply,
    so an interval on their arithmetic mean can even go below 0."""
    logs = [math.log(ratio) for ratio in ratios if ratio > 0]
    if not logs:
        return None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return Effect(math.exp(mean), None, None, len(logs))
    half = t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Effect(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs))
