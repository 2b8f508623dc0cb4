"""Statistics over repetitions: medians, spreads and confidence intervals. Pure functions."""

import math
import statistics
from dataclasses import dataclass

# Two-sided 95% Student t quantiles by degrees of freedom; 1.96 beyond the table.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}  # fmt: skip


def t95(degrees_of_freedom: int) -> float:
    if degrees_of_freedom <= 0:
        return math.nan
    for df in sorted(_T95):
        if degrees_of_freedom <= df:
            return _T95[df]
    return 1.96


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
    return Summary(
        n=len(values),
        median=statistics.median(values),
        mean=mean,
        stdev=stdev,
        minimum=min(values),
        maximum=max(values),
        ci_low=ci_low,
        ci_high=ci_high,
    )


def hit_ratio(hits: float | None, reads: float | None) -> float | None:
    if hits is None or reads is None or hits + reads == 0:
        return None
    return hits / (hits + reads)
