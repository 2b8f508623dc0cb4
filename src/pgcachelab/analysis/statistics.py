"""How far a run's numbers can be trusted: intervals for medians, noise, stability. Pure functions.

The interval of a median is the exact distribution-free one from order statistics: the number of
repetitions below the true median is Binomial(n, 1/2), so [x(j), x(n+1-j)] covers it with
probability sum_{i=j}^{n-j} C(n, i) / 2^n whatever the distribution of tps. It needs no
assumption about skew (benchmark samples are skewed by stalls) and no random resampling, but it
needs 6 repetitions to reach 95%: with fewer, the interval is min..max and its real coverage
(e.g. 75% with 3) is reported instead of pretending.
"""

import functools
import math
import statistics
from dataclasses import dataclass

from pgcachelab.store.metric_types import ProgressSample

CONFIDENCE = 0.95
# Smallest n whose widest order-statistic interval (min..max, 1 - 2 / 2^n) reaches 95%.
MIN_EXACT_95 = 6
# Above this coefficient of variation a point's repetitions disagree too much to trust a figure.
WIDE_SPREAD_CV = 0.10
# A per-second trend matters when tps moves by this much over the measurement...
TREND_MIN_CHANGE = 0.05
# ...and a second is a dip or a spike when it leaves the median by this much of it, and by more
# than DEVIATION_MADS robust standard deviations (1.4826 MAD) of the other seconds.
DEVIATION_MIN_SHARE = 0.25
DEVIATION_MADS = 4.0
# A second below this share of the median is a stall whatever the spread: with several stalled
# seconds among few, the spread itself is inflated by them.
STALL_SHARE = 0.10

# Degrees of freedom beyond which Student's t is the normal distribution to 1e-7 (the
# quantile differs by about (z^3 + z) / 4df: 3e-7 at 1e7 for z = 1.96, below any use here).
_NORMAL_BEYOND_DF = 1e7
_CF_MAX_ITERATIONS = 10_000
_CF_EPSILON = 1e-15
_TINY = 1e-300


def t95(degrees_of_freedom: float) -> float:
    """The two-sided 95% quantile of Student's t (2.201 at 11, 2.042 at 30, 1.984 at 100)."""
    return t_quantile(0.975, degrees_of_freedom)


@functools.cache
def t_quantile(probability: float, degrees_of_freedom: float) -> float:
    """The `probability` quantile of Student's t with any positive (also fractional, as Welch's)
    degrees of freedom; NaN for df <= 0.

    Exact rather than a table: a table that returns the next listed df made 95% intervals 1-4%
    too narrow (issue 16). The upper tail of t is I_x(df/2, 1/2) / 2 with x = df / (df + t^2),
    monotone in x, so bisection on x finds it to machine precision without a starting guess.
    """
    if not degrees_of_freedom > 0 or not 0 < probability < 1:
        return math.nan
    if probability == 0.5:
        return 0.0
    if probability < 0.5:
        return -t_quantile(1 - probability, degrees_of_freedom)
    if degrees_of_freedom >= _NORMAL_BEYOND_DF:
        return statistics.NormalDist().inv_cdf(probability)
    tail = 1 - probability
    a, b = degrees_of_freedom / 2, 0.5
    low, high = 0.0, 1.0  # x: the tail grows with x, from 0 (t infinite) to 1/2 (t = 0)
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if regularized_incomplete_beta(middle, a, b) / 2 < tail:
            low = middle
        else:
            high = middle
    x = (low + high) / 2
    return math.sqrt(degrees_of_freedom * (1 - x) / x)


def student_t_cdf(t: float, degrees_of_freedom: float) -> float:
    """P(T <= t) for Student's t."""
    x = degrees_of_freedom / (degrees_of_freedom + t * t)
    tail = regularized_incomplete_beta(x, degrees_of_freedom / 2, 0.5) / 2
    return 1 - tail if t > 0 else tail


def regularized_incomplete_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), by its continued fraction (Numerical Recipes 6.4, modified Lentz), taken on
    the side of x where it converges fast and mirrored by I_x(a, b) = 1 - I_{1-x}(b, a)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (
        a * math.log(x) + b * math.log1p(-x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    )
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_continued_fraction(x, a, b) / a
    return 1 - math.exp(log_front) * _beta_continued_fraction(1 - x, b, a) / b


def _beta_continued_fraction(x: float, a: float, b: float) -> float:
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, _CF_MAX_ITERATIONS + 1):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > _TINY else _TINY)
            c = 1 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            result *= c * d
        if abs(c * d - 1) < _CF_EPSILON:
            break
    return result


@dataclass(frozen=True)
class MedianInterval:
    low: float
    high: float
    coverage: float  # the exact probability that [low, high] holds the true median

    @property
    def is_95(self) -> bool:
        return self.coverage >= CONFIDENCE


def order_statistic_coverage(n: int, j: int) -> float:
    """P(x(j) <= true median <= x(n+1-j)) for n independent values (1-based j)."""
    return order_statistic_coverages(n, j)[-1]


# Up to this n the binomial coefficients are summed as exact integers (a few ms at 1,000):
# coverages are then correctly rounded. Above it, in floats to about 1e-12.
_EXACT_UP_TO = 1000


def order_statistic_coverages(n: int, last_j: int) -> list[float]:
    """order_statistic_coverage(n, j) for j = 1..last_j (at most n // 2), in O(n) steps.

    coverage(j) = 1 - 2 P(Binomial(n, 1/2) <= j - 1), that tail accumulated term by term
    (C(n, k+1) = C(n, k) (n-k) / (k+1)): summing the binomials afresh for every candidate rank
    was O(n^2) big-integer work per interval, minutes at a few thousand repetitions (issue 24).
    Above _EXACT_UP_TO the terms are floats, starting 20 standard deviations below the mean
    (its log from lgamma), since everything below adds less than 1e-80 to a tail.
    """
    term: float  # ints up to _EXACT_UP_TO (exact), floats above
    tail: float
    if n <= _EXACT_UP_TO:
        whole, term, tail, coverages = 2**n, 1, 0, []
        for k in range(last_j):
            tail += term
            coverages.append((whole - 2 * tail) / whole)
            term = term * (n - k) // (k + 1)
        return coverages
    start = max(0, n // 2 - 10 * math.isqrt(n))
    term = math.exp(
        math.lgamma(n + 1) - math.lgamma(start + 1) - math.lgamma(n - start + 1) - n * math.log(2)
    )
    tail, coverages = 0.0, [1.0] * min(start, last_j)
    for k in range(start, last_j):
        tail += term
        coverages.append(1 - 2 * tail)
        term = term * (n - k) / (k + 1)
    return coverages


def median_interval(values: list[float], confidence: float = CONFIDENCE) -> MedianInterval | None:
    """The narrowest symmetric order-statistic interval reaching `confidence`; min..max (with
    its lower coverage) when n is too small to reach it; None below two values."""
    ordered = sorted(values)
    n = len(ordered)
    if n < 2:
        return None
    coverages = order_statistic_coverages(n, n // 2)  # shrinking as j grows
    j = 1
    while j + 1 <= n // 2 and coverages[j] >= confidence:
        j += 1
    return MedianInterval(ordered[j - 1], ordered[n - j], coverages[j - 1])


def relative_half_width(median: float, interval: MedianInterval | None) -> float | None:
    """Half the interval's width over the median: 0.02 means "±2%"."""
    if interval is None or not median:
        return None
    return (interval.high - interval.low) / 2 / abs(median)


def sample_stdev(values: list[float]) -> float:
    """The sample standard deviation (n - 1), in floats summed exactly (fsum): statistics.stdev
    sums exact fractions, ~3 us a value, seconds for a run of 100,000 (issue 24); this agrees
    with it to the last digit or two."""
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def coefficient_of_variation(values: list[float]) -> float | None:
    if len(values) < 2 or not statistics.fmean(values):
        return None
    return sample_stdev(values) / abs(statistics.fmean(values))


def settled(values: list[float], target: float) -> bool:
    """Whether a point's repetitions pin its median down to ±target with a real 95% interval."""
    if len(values) < MIN_EXACT_95:
        return False
    width = relative_half_width(statistics.median(values), median_interval(values))
    return width is not None and width < target


# -- the machine's noise -------------------------------------------------------------------------


@dataclass(frozen=True)
class Noise:
    cv_by_point: dict[int, float]  # point index -> coefficient of variation of its repetitions
    median_cv: float | None  # the run's noise: the typical spread of repeated identical points


def machine_noise(values_by_point: dict[int, list[float]]) -> Noise:
    cvs = {point: coefficient_of_variation(values) for point, values in values_by_point.items()}
    known = {point: cv for point, cv in cvs.items() if cv is not None}
    return Noise(known, statistics.median(known.values()) if known else None)


# -- stability within one measurement (pgbench --progress) --------------------------------------


@dataclass(frozen=True)
class Trend:
    relative_change: float  # fitted tps change from the first to the last second, over the mean
    t_statistic: float
    samples: int

    @property
    def significant(self) -> bool:
        return (
            abs(self.t_statistic) > t95(self.samples - 2)
            and abs(self.relative_change) >= TREND_MIN_CHANGE
        )


def tps_trend(seconds: list[float], tps: list[float]) -> Trend | None:
    """Least-squares slope of tps over the run. Successive seconds are correlated, so the t test
    alone flags tiny drifts on long runs: a trend also has to move tps by TREND_MIN_CHANGE."""
    n = len(seconds)
    if n < 4:
        return None
    mean_t, mean_y = statistics.fmean(seconds), statistics.fmean(tps)
    sxx = sum((t - mean_t) ** 2 for t in seconds)
    if sxx == 0 or mean_y == 0:
        return None
    slope = sum((t - mean_t) * (y - mean_y) for t, y in zip(seconds, tps, strict=True)) / sxx
    residuals = [y - mean_y - slope * (t - mean_t) for t, y in zip(seconds, tps, strict=True)]
    error = math.sqrt(sum(r * r for r in residuals) / (n - 2) / sxx)
    t_statistic = math.inf if error == 0 else slope / error
    if error == 0 and slope == 0:
        t_statistic = 0.0
    change = slope * (seconds[-1] - seconds[0]) / mean_y
    return Trend(change, t_statistic, n)


@dataclass(frozen=True)
class Deviations:
    dips_s: list[float]  # seconds whose tps fell far below the others (e.g. checkpoint stalls)
    spikes_s: list[float]
    median_tps: float
    lowest_tps: float


def tps_deviations(seconds: list[float], tps: list[float]) -> Deviations | None:
    if len(tps) < 4:
        return None
    middle = statistics.median(tps)
    spread = 1.4826 * statistics.median(abs(y - middle) for y in tps)
    limit = max(DEVIATION_MADS * spread, DEVIATION_MIN_SHARE * middle)
    dips = [
        t
        for t, y in zip(seconds, tps, strict=True)
        if y < middle - limit or y < STALL_SHARE * middle
    ]
    spikes = [t for t, y in zip(seconds, tps, strict=True) if y > middle + limit]
    return Deviations(dips, spikes, middle, min(tps))


def after_warmup(samples: list[ProgressSample], warmup_s: float) -> tuple[list[float], list[float]]:
    """(seconds, tps) of the stored progress samples after the first `warmup_s` seconds."""
    kept = [s for s in samples if s.get("tps") is not None and s["elapsed_s"] > warmup_s]
    return [s["elapsed_s"] for s in kept], [s["tps"] for s in kept]


# -- warnings in the pyperf spirit: what is wrong, and what to try next ------------------------


@dataclass(frozen=True)
class StabilityWarning:
    point: str  # the point's label, or "run"
    problem: str
    try_next: str
    # what went wrong, one word, so a report can say each kind once (issue 25): "repetitions",
    # "spread", "unsettled", "trend", "dips", "spikes"
    kind: str = ""

    def text(self) -> str:
        return f"{self.point}: {self.problem}; try {self.try_next}"


def repetitions_warning(counts: dict[str, int]) -> StabilityWarning | None:
    """One warning for the run when points have too few repetitions for a 95% interval of
    their median (said once, not once per point)."""
    few = {label: n for label, n in counts.items() if 2 <= n < MIN_EXACT_95}
    if not few:
        return None
    fewest = min(few.values())
    coverage = order_statistic_coverage(fewest, 1)
    where = "every point" if len(few) == len(counts) else f"{len(few)} of {len(counts)} points"
    return StabilityWarning(
        "run",
        f"{where} with fewer than {MIN_EXACT_95} repetitions (fewest {fewest}): their "
        f"medians' intervals are min..max and cover as little as {coverage:.0%}, not 95%",
        f'repetitions = {MIN_EXACT_95} or more, or repetitions = "auto"',
        "repetitions",
    )


def point_warnings(
    label: str, values: list[float], target: float | None = None, what: str = "repetitions"
) -> list[StabilityWarning]:
    """Warnings about one point's repetitions: spread too wide, interval wider than the
    precision the spec asked for."""
    warnings: list[StabilityWarning] = []
    if len(values) < 2:
        return warnings
    cv = coefficient_of_variation(values)
    if cv is not None and cv > WIDE_SPREAD_CV:
        warnings.append(
            StabilityWarning(
                label,
                f"{what} spread widely (CV {cv:.0%})",
                'more repetitions, a longer duration, order = "interleaved", or a quieter machine',
                "spread",
            )
        )
    if target is not None and not settled(values, target):
        width = relative_half_width(statistics.median(values), median_interval(values))
        warnings.append(
            StabilityWarning(
                label,
                f"never settled: the median is known to ±{width:.1%}, target ±{target:.1%}",
                "a larger max_repetitions, a longer duration, or a looser target_ci",
                "unsettled",
            )
        )
    return warnings


def progress_warnings(
    label: str, seconds: list[float], tps: list[float], writes: bool
) -> list[StabilityWarning]:
    """Warnings about one measurement's per-second tps: a trend, dips or spikes."""
    warnings = []
    trend = tps_trend(seconds, tps)
    if trend is not None and trend.significant:
        direction = "rises" if trend.relative_change > 0 else "falls"
        warnings.append(
            StabilityWarning(
                label,
                f"tps {direction} by {abs(trend.relative_change):.0%} over the measurement "
                "(a significant trend: the run had not reached a steady state)",
                "a longer warmup or duration; for read-write runs, checkpoint settings "
                "(max_wal_size, checkpoint_timeout) and autovacuum",
                "trend",
            )
        )
    deviations = tps_deviations(seconds, tps)
    if deviations is not None and deviations.dips_s:
        cause = "a checkpoint or a lock?" if writes else "other load on the machine?"
        warnings.append(
            StabilityWarning(
                label,
                f"{len(deviations.dips_s)} second(s) with tps far below the median "
                f"{deviations.median_tps:,.0f} (lowest {deviations.lowest_tps:,.0f}, at "
                f"{', '.join(f'{t:g}' for t in deviations.dips_s[:5])} s; {cause})",
                "checkpoint settings (max_wal_size, checkpoint_completion_target) for writes, "
                "a longer duration, or a quieter machine",
                "dips",
            )
        )
    if deviations is not None and deviations.spikes_s:
        warnings.append(
            StabilityWarning(
                label,
                f"{len(deviations.spikes_s)} second(s) with tps far above the median "
                f"{deviations.median_tps:,.0f}",
                "a longer warmup (caches still filling) or a longer duration",
                "spikes",
            )
        )
    return warnings
