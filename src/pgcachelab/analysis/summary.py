"""Statistics over repetitions: medians, spreads and confidence intervals. Pure functions."""

import math
import statistics
from dataclasses import dataclass

from pgcachelab.analysis.statistics import median_interval, t95

__all__ = ["Summary", "hit_ratio", "summarise", "t95"]


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


def summarise(values: list[float]) -> Summary | None:
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return None
    mean = statistics.fmean(values)
    if len(values) > 1:
        stdev = statistics.stdev(values)
        half = t95(len(values) - 1) * stdev / math.sqrt(len(values))
        ci_low, ci_high = mean - half, mean + half
    else:
        stdev = ci_low = ci_high = None
    interval = median_interval(values)
    return Summary(
        n=len(values),
        median=statistics.median(values),
        mean=mean,
        stdev=stdev,
        minimum=min(values),
        maximum=max(values),
        ci_low=ci_low,
        ci_high=ci_high,
        median_low=interval.low if interval else None,
        median_high=interval.high if interval else None,
        median_coverage=interval.coverage if interval else None,
    )


def hit_ratio(hits: float | None, reads: float | None) -> float | None:
    if hits is None or reads is None or hits + reads == 0:
        return None
    return hits / (hits + reads)
