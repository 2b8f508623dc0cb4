"""CSV for spreadsheets and scripts: one row per measurement of a run (`export`)."""

import csv
from typing import TextIO

from pgcachelab.store.records import ResultStore, gc_paused
from pgcachelab.studies.cache_wash.repetitions import phase_median_ms

CSV_COLUMNS = [
    "run_id",
    "point_index",
    "label",
    "repetition",
    "status",
    "reason",
    "tps",
    "latency_avg_ms",
    "latency_stddev_ms",
    "wall_s",
    "server_action",
    "database_size_bytes",
    "started_at",
    "idx1_ms_median",
    "seq_ms",
    "idx2_ms_median",
]
# A spreadsheet reads a cell beginning with one of these as a formula (=HYPERLINK(...), +cmd|..):
# a text cell that does is written after a single quote, as OWASP's CSV injection advice says.
# Numbers are left as numbers: -3.5 is a number, not a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def text_cell(value):
    """A CSV cell as a spreadsheet reads it: text that would start a formula made text."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def run_measurements(store: ResultStore, run_id: str, out: TextIO) -> None:
    """`export`: one row per measurement; each swept parameter gets a column of its own."""
    points = {p.point_index: p for p in store.points(run_id)}
    swept_keys: list[str] = []
    for point in points.values():
        swept_keys += [k for k in point.swept if k not in swept_keys]
    writer = csv.writer(out)
    writer.writerow([text_cell(key) for key in CSV_COLUMNS + swept_keys])
    with gc_paused():
        measurements = store.measurements(run_id)
    for m in measurements:
        point = points[m.point_index]
        row = [
            run_id,
            m.point_index,
            point.label,
            m.repetition,
            m.status,
            m.reason or "",
            m.tps,
            m.latency_avg_ms,
            m.latency_stddev_ms,
            round(m.wall_s, 3),
            m.server_action,
            m.metrics.get("database_size_bytes"),
            m.started_at,
            *[phase_median_ms(m, phase) for phase in ("idx1", "seq", "idx2")],
        ] + [point.swept.get(k, "") for k in swept_keys]
        writer.writerow([text_cell(cell) for cell in row])
