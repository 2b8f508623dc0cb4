"""`show RUN` for a cache-wash run: idx1, the scan and idx2 per point instead of tps."""

from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.tables import format_table, number_text
from pgcachelab.studies.cache_wash.repetitions import phase_medians_ms


def cache_wash_table(data: RunData) -> str:
    """idx1, seq and idx2 instead of tps: medians over repetitions of each one's median."""
    rows = []
    for result in data.points:
        medians = phase_medians_ms(result) or {}
        reasons = "; ".join(result.failure_reasons)
        rows.append(
            [
                result.point.point_index,
                result.point.label,
                f"{len(result.ok)}/{len(result.measurements)}",
                number_text(medians.get("idx1"), 3),
                number_text(medians.get("seq"), 0),
                number_text(medians.get("idx2"), 3),
                number_text(medians["idx2"] / medians["idx1"] if medians.get("idx1") else None, 2),
                reasons,
            ]
        )
    header = ["#", "point", "ok", "idx1 ms", "seq ms", "idx2 ms", "idx2/idx1", "failures"]
    run = data.run
    return f"run {run.run_id} ({run.name}, {run.status})\n" + format_table(header, rows)
