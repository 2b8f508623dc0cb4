"""How a run ended, said in its last line: how many of its points were measured, and the first
failure (issue 35). Pure: it reads the measurements the runner stored.

A run whose every point failed measured nothing: it exits 1, as a failed command does, rather
than 0 with a report of empty tables; one with some failed points says so last, where a reader
of a log looks.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from pgcachelab.errors import RunFailed
from pgcachelab.store.records import Measurement


@dataclass(frozen=True)
class RunOutcome:
    points: int
    measured_points: int  # points with at least one measurement that succeeded
    measurements: int
    failed_measurements: int
    first_failure: str | None  # the reason of the earliest failed measurement, its first line

    @property
    def nothing_measured(self) -> bool:
        return self.points > 0 and self.measured_points == 0


def run_outcome(points: int, measurements: Iterable[Measurement]) -> RunOutcome:
    measured, failed = set(), []
    total = 0
    for measurement in measurements:
        total += 1
        if measurement.status == "ok":
            measured.add(measurement.point_index)
        else:
            failed.append(measurement)
    first = min(failed, key=lambda m: m.started_at, default=None)
    reason = None
    if first is not None:
        reason = (first.reason or "no reason recorded").strip().splitlines()[0]
    return RunOutcome(points, len(measured), total, len(failed), reason)


def finished_line(run_id: str, outcome: RunOutcome) -> str:
    """The run's last line: how much of it was measured, and the first failure if any."""
    if not outcome.failed_measurements:
        return f"run {run_id} finished"
    failed_points = outcome.points - outcome.measured_points
    if failed_points:
        return (
            f"run {run_id} finished: {outcome.measured_points} of {outcome.points} points "
            f"measured, {failed_points} failed; first failure: {outcome.first_failure}"
        )
    return (
        f"run {run_id} finished: {outcome.points} of {outcome.points} points measured, "
        f"{outcome.failed_measurements} of {outcome.measurements} measurements failed; first "
        f"failure: {outcome.first_failure}"
    )


def nothing_measured(run_id: str, outcome: RunOutcome) -> RunFailed:
    """The error (exit 1) of a run whose every point failed."""
    return RunFailed(
        f"run {run_id}: 0 of {outcome.points} points measured; first failure: "
        f"{outcome.first_failure}",
        f"every point failed: fix the cause, then run again (pgcachelab show {run_id} lists "
        "the reasons)",
    )
