"""An overhead run's tps sag per cell and method, and each pg_cachelab mode's error per cell
(seed 003), as the report's tables and `advise` both read them: one computation, no plotting
here (advise does not load matplotlib)."""

from dataclasses import dataclass

from pgcachelab.analysis.inspect_accuracy import ModeAccuracy, accuracy_by_mode, trials
from pgcachelab.analysis.inspect_overhead import (
    BASELINE,
    Sag,
    Windows,
    covered_windows,
    measurement_window_ratios,
    paired_sag,
    sag_of_ratios,
)
from pgcachelab.analysis.run_data import PointResult, RunData, swept_text
from pgcachelab.store.records import Cell, Measurement

KEY = "inspect_method"
METHOD_NAMES = {
    "none": "none (baseline)",
    "pg_buffercache": "pg_buffercache view, grouped",
    "summary": "pg_buffercache_summary()",
    "extension": "pg_cachelab consistent",
    "extension/consistent": "pg_cachelab consistent",
    "extension/fast": "pg_cachelab fast",
    "extension/semiconsistent": "pg_cachelab semiconsistent",
    "extension/snapshot": "pg_cachelab snapshot",
}


@dataclass(frozen=True)
class MethodSag:
    cell: Cell  # (key, value) pairs of the other swept values, e.g. shared_buffers
    method: str
    result: PointResult
    between_runs: Sag | None  # paired by round against the baseline; None for the baseline
    within_runs: Sag | None  # alternating windows; for the baseline, the A/A noise floor

    @property
    def quoted(self) -> Sag | None:
        """The figure to quote: within runs when the run alternated windows (the drift
        between runs cancels there), else between runs."""
        return self.within_runs or self.between_runs


def cells(data: RunData) -> dict[Cell, dict[str, PointResult]]:
    """Points by the other swept values (e.g. shared_buffers), then by method."""
    found: dict[Cell, dict[str, PointResult]] = {}
    for result in data.points:
        swept = result.point.swept
        cell = tuple((k, v) for k, v in swept.items() if k != KEY)
        found.setdefault(cell, {})[str(swept.get(KEY, BASELINE))] = result
    return found


def cell_text(cell: Cell) -> str:
    return swept_text(cell) or "all points"


def window_length_s(data: RunData) -> float:
    """The alternating windows' length; 0 when the run did not alternate."""
    for result in data.points:
        for measurement in result.ok:
            if "inspect_windows" in measurement.metrics:
                return measurement.metrics["inspect_windows"]["length_s"]
    return 0.0


def _tps_by_round(measurements: list[Measurement]) -> dict[int, float]:
    return {m.repetition: m.tps for m in measurements if m.tps is not None}


def method_sags(data: RunData) -> list[MethodSag]:
    """Every point's sag, in the order of cells then methods as the run measured them."""
    alternated = window_length_s(data) > 0
    sags = []
    for cell, methods in cells(data).items():
        baseline = methods.get(BASELINE)
        base_tps = _tps_by_round(baseline.ok) if baseline else {}
        for method, result in methods.items():
            tps = _tps_by_round(result.ok)
            between = paired_sag(base_tps, tps, method) if method != BASELINE else None
            within = None
            if alternated:
                ratios = [r for m in result.ok for r in measurement_window_ratios(m.metrics)]
                within = sag_of_ratios(ratios, method)
            sags.append(MethodSag(cell, method, result, between, within))
    return sags


def poll_coverage(data: RunData, result: PointResult) -> tuple[int, int]:
    """(polled windows in which a poll started, polled windows) over the point's
    measurements; (0, 0) when the run did not alternate windows."""
    covered = polled = 0
    for measurement in result.ok:
        windows = measurement.metrics.get("inspect_windows")
        progress = (measurement.metrics.get("pgbench") or {}).get("progress") or []
        if not windows or not progress:
            continue
        starts = [
            s.taken_at
            for s in data.snapshots
            if s.point_index == result.point.point_index
            and s.repetition == measurement.repetition
            and s.label == "sample"
        ]
        samples = [(sample["elapsed_s"], sample["tps"]) for sample in progress]
        found = covered_windows(samples, Windows(**windows), starts)
        covered, polled = covered + found[0], polled + found[1]
    return covered, polled


def cell_accuracy(data: RunData) -> dict[Cell, dict[str, ModeAccuracy]]:
    """Per cell, each mode's accuracy from the trials of the cell's extension points."""
    found = {}
    for cell, methods in cells(data).items():
        indexes = {r.point.point_index for m, r in methods.items() if m.startswith("extension")}
        taken = trials([s for s in data.snapshots if s.point_index in indexes])
        if taken:
            found[cell] = accuracy_by_mode(taken)
    return found
