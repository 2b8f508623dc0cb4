"""A point's latency percentiles over its repetitions (issue 32). Pure functions.

Each repetition stores its own distribution (workloads/pgbench_latency.py); a point shows the
median over its repetitions of each percentile, as it shows the median of their tps, so that
one repetition's stall does not become the point's p99.
"""

import statistics
from dataclasses import dataclass

from pgcachelab.store.metric_types import LatencyMetrics, percentile_ms

SHOWN = ("p50", "p95", "p99", "p999")


@dataclass(frozen=True)
class PointPercentiles:
    median_ms: dict[str, float]  # percentile name -> median over the repetitions
    repetitions: int
    logged: int  # transactions in the logs, all repetitions
    sampling_rate: float  # the smallest of the repetitions'
    biased_low: bool  # any repetition's log read low (pgbench's lazy clock)
    zeros_share: float  # the largest share of 0 us entries of a repetition
    lag_p99_ms: float | None = None  # -R: median over the repetitions of the schedule lag's p99
    skipped: int = 0  # -R with --latency-limit: transactions skipped as already late


def point_percentiles(records: list[LatencyMetrics | None]) -> PointPercentiles | None:
    """From the repetitions' `latency` metrics (None for none with percentiles)."""
    timed = [r for r in records if r and r.get("p99_ms") is not None]
    if not timed:
        return None
    return PointPercentiles(
        median_ms={name: _median_of(name, timed) for name in SHOWN},
        repetitions=len(timed),
        logged=sum(r["logged"] for r in timed),
        sampling_rate=min(r["sampling_rate"] for r in timed),
        biased_low=any(r.get("biased_low") for r in timed),
        zeros_share=max(r.get("zeros_share") or 0.0 for r in timed),
        lag_p99_ms=_median_or_none([(r.get("lag") or {}).get("p99_ms") for r in timed]),
        skipped=sum(r.get("skipped") or 0 for r in timed),
    )


def _median_of(name: str, records: list[LatencyMetrics]) -> float:
    """A percentile's median over the repetitions that have it (p99: all of them)."""
    return statistics.median(
        value for r in records if (value := percentile_ms(r, name)) is not None
    )


def _median_or_none(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
