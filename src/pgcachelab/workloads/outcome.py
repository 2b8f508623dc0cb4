"""What a workload hands back for one measurement."""

from dataclasses import dataclass, field

from pgcachelab.errors import PointError


class MeasurementError(PointError):
    """A measurement that cannot be trusted (e.g. a timing that broke); the message is the
    reason recorded for the point."""


@dataclass
class Outcome:
    metrics: dict = field(default_factory=dict)
    tps: float | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    summary: str = ""  # the progress line's figures, e.g. "21,022 tps"
