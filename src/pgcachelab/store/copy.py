"""Copying runs between results stores, whatever database each one is."""

from dataclasses import dataclass, field

from pgcachelab.errors import UserError
from pgcachelab.store.records import ResultStore, Run


@dataclass
class CopyResult:
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # already there: brought up to date
    measurements: int = 0


def runs_to_copy(source: ResultStore, run_ids: list[str]) -> list[Run]:
    """The runs `run_ids` name (every run if empty); an unknown one is a UserError, raised
    before the destination is even opened (issue 18: it was created first)."""
    if not run_ids:
        return source.runs()
    runs = []
    for run_id in run_ids:
        run = source.run(run_id)
        if run is None:
            raise UserError(
                f"no run {run_id!r} in {source.location}",
                "list runs with: pgcachelab runs --store <the --from store>",
            )
        runs.append(run)
    return runs


def copy_runs(source: ResultStore, destination: ResultStore, run_ids: list[str]) -> CopyResult:
    """Copy `run_ids` (every run if empty) with points, measurements, server settings and cache
    snapshots.

    Every requested run is checked before anything is written.
    """
    runs = runs_to_copy(source, run_ids)
    result = CopyResult()
    for run in runs:
        measurements = source.measurements(run.run_id)
        new = destination.import_run(
            run,
            source.points(run.run_id),
            measurements,
            source.server_settings(run.run_id),
            source.snapshots(run.run_id),
        )
        (result.new if new else result.updated).append(run.run_id)
        result.measurements += len(measurements)
    return result
