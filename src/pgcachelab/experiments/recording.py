"""What one measurement gathers as it goes, and its Measurement, built once at the end.

The instruments (experiments/instruments.py) add their parts to a Recording or say why the
point failed; the runner stores `recording.measurement()` whatever happened.
"""

import time
from typing import Any, cast

import psycopg

from pgcachelab.errors import PointError
from pgcachelab.store.metric_types import MeasurementMetrics
from pgcachelab.store.records import Measurement, StoredSnapshot
from pgcachelab.workloads.outcome import Outcome

# The errors that fail a point, not the run: its reason is recorded and the sweep goes on.
POINT_ERRORS = (PointError, psycopg.Error)


class MetricKeyCollision(RuntimeError):
    """Two parts of one measurement wrote the same metric key: a bug in the lab, which would
    otherwise lose one of the values without a word (issue 36)."""


def merged_metrics(parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The metrics of every part (named by `parts`' keys), in order; a key two parts set is
    refused rather than overwritten."""
    merged: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for part, metrics in parts.items():
        for key in metrics:
            if key in owner:
                raise MetricKeyCollision(
                    f"metric key {key!r} is set by both the {owner[key]} metrics and the "
                    f"{part} metrics of one measurement"
                )
            owner[key] = part
        merged.update(metrics)
    return merged


class Recording:
    """What one measurement has gathered so far: the instruments' parts and its failure."""

    def __init__(self, point_index: int, repetition: int):
        self.point_index, self.repetition = point_index, repetition
        self.started_at, self.started = time.time(), time.monotonic()
        self.metrics: dict[str, Any] = {}  # kept whatever happens to the point
        # The run's own figures (probe deltas, load average): a failed point's cannot be trusted.
        self.run_metrics: dict[str, Any] = {}
        self.server_action: str | None = None  # what applying the settings did to the server
        self.outcome: Outcome | None = None
        self.reason: str | None = None  # why the point failed
        self.snapshots: list[StoredSnapshot] | None = None  # None: no cache sampler

    @property
    def failed(self) -> bool:
        return self.reason is not None

    def fail(self, reason: str) -> None:
        """The point failed for `reason` (a later, better explanation replaces it)."""
        self.reason = reason

    def measurement(self) -> Measurement:
        """The Measurement as it stands now; the clock stops here."""
        outcome = self.outcome if self.outcome is not None and not self.failed else Outcome()
        metrics = self.metrics
        if not self.failed:
            parts = {
                "recording": self.metrics,
                "workload": outcome.metrics,
                "run": self.run_metrics,
            }
            metrics = merged_metrics(parts)
        return Measurement(
            point_index=self.point_index,
            repetition=self.repetition,
            status="failed" if self.failed else "ok",
            reason=self.reason,
            started_at=self.started_at,
            finished_at=time.time(),
            wall_s=time.monotonic() - self.started,
            server_action=self.server_action,
            tps=outcome.tps,
            latency_avg_ms=outcome.latency_avg_ms,
            latency_stddev_ms=outcome.latency_stddev_ms,
            # built by the parts' writers, each key documented (tests/test_metric_keys.py)
            metrics=cast(MeasurementMetrics, metrics),
        )

    def progress_line(self, label: str, wall_s: float) -> str:
        if self.failed:
            figures = f"failed: {self.reason}"
        else:
            assert self.outcome is not None  # a point that did not fail ran its workload
            figures = self.outcome.summary
        return f"{label}: {figures}  ({wall_s:.1f} s, server {self.server_action or '-'})"


class PointErrors:
    """Entered around a point: its error ends the point, not the sweep; the error's first line
    becomes the reason, for the watches entered before this one to correct as they exit."""

    def __init__(self, recording: Recording):
        self.recording = recording

    def __enter__(self) -> "PointErrors":
        return self

    def __exit__(self, exc_type, error, traceback) -> bool:
        if not isinstance(error, POINT_ERRORS):
            return False
        text = str(error).strip()
        self.recording.fail(text.splitlines()[0] if text else type(error).__name__)
        return True
