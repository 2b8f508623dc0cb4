"""A cache-wash run's repetitions as seed 000's figures read them: each counted repetition's
lookups per phase with its point's shared_buffers and huge pages, and each point's phase
medians. Derived from the RunData, which holds only what every study shares."""

import statistics

from pgcachelab.analysis.cache_split import PGBENCH_LOG_TIMING, PHASES, Repetition, phase_samples
from pgcachelab.analysis.run_data import PointResult, RunData
from pgcachelab.store.metric_types import wash_phase_ms
from pgcachelab.store.records import Measurement
from pgcachelab.units import shared_buffers_bytes

_MEMO = "cache_wash.repetitions"


def wash_repetition(settings: dict[str, str], m: Measurement) -> Repetition | None:
    """A cache-wash measurement's lookups at its point's `settings`; None for another
    workload's (or a wash that lacks a phase)."""
    samples = phase_samples(m.metrics)
    if samples is None:
        return None
    return Repetition(
        shared_buffers_bytes=shared_buffers_bytes(settings.get("shared_buffers")),
        huge_pages=str(settings.get("huge_pages", "")).lower(),
        repetition=m.repetition,
        samples_ms=samples,
        timing=m.metrics["cache_wash"].get("timing", PGBENCH_LOG_TIMING),
    )


def repetitions(data: RunData) -> list[Repetition]:
    """Every cache-wash repetition of the run with its phase latencies (seed 000's sample),
    built once per run: each Repetition then takes its phase medians once however many tables
    ask (issue 24)."""
    cached = data.memo.get(_MEMO)
    if not isinstance(cached, list):
        cached = [
            wash
            for result in data.points
            for m in result.ok
            if (wash := wash_repetition(result.point.settings, m))
        ]
        data.memo[_MEMO] = cached
    return cached


def phase_medians_ms(result: PointResult) -> dict[str, float] | None:
    """Phase -> the median of the point's repetitions' medians; None for a point of no wash."""
    medians = {}
    for phase in PHASES:
        if result.figures.get(f"{phase} ms"):
            medians[phase] = statistics.median(result.figures[f"{phase} ms"])
    return medians or None


def phase_median_ms(measurement: Measurement, phase: str) -> float | None:
    """One measurement's median latency of the phase, None for a measurement of no wash."""
    samples = wash_phase_ms(measurement.metrics.get("cache_wash") or {}, phase)
    return statistics.median(samples) if samples else None
