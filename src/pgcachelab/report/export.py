"""Exporters of one run's measurements: one function per format."""

import csv
import json

from pgcachelab.analysis.run_data import phase_median_ms
from pgcachelab.store.records import ResultStore, gc_paused

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


def _rows(store: ResultStore, run_id: str):
    points = {p.point_index: p for p in store.points(run_id)}
    with gc_paused():
        measurements = store.measurements(run_id)
    for m in measurements:
        point = points[m.point_index]
        yield point, m


def export_csv(store: ResultStore, run_id: str, out) -> None:
    """One row per measurement; each swept parameter gets a column of its own."""
    swept_keys: list[str] = []
    for point in store.points(run_id):
        swept_keys += [k for k in point.swept if k not in swept_keys]
    writer = csv.writer(out)
    writer.writerow([text_cell(key) for key in CSV_COLUMNS + swept_keys])
    for point, m in _rows(store, run_id):
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


def export_json(store: ResultStore, run_id: str, out) -> None:
    """The whole run: its context, points, every measurement with all metrics.

    One measurement a line: json's C encoder writes a line at a time, where an indented
    document went through its pure-Python encoder (25 s for 10,000 cache-wash measurements,
    issue 24), and a line per measurement still reads and greps well."""
    run = store.run(run_id)
    assert run is not None, f"no run {run_id}"  # callers look it up first
    head = {
        "format": "pgcachelab-run/1",
        "run": {
            "run_id": run.run_id,
            "name": run.name,
            "status": run.status,
            "created_at": run.created_at,
            "finished_at": run.finished_at,
            "spec": run.spec_text,
            "target": run.target,
            "environment": run.environment,
        },
        "points": [
            {
                "point_index": p.point_index,
                "label": p.label,
                "swept": p.swept,
                "workload": p.workload.record(),
                "settings": p.settings,
            }
            for p in store.points(run_id)
        ],
    }
    out.write("{\n")
    for key, value in head.items():
        # indented one level deeper; a newline inside a JSON string is escaped, never raw
        text = json.dumps(value, indent=1, default=str).replace("\n", "\n ")
        out.write(f" {json.dumps(key)}: {text},\n")
    out.write(' "measurements": [')
    separator = "\n  "
    for _, m in _rows(store, run_id):
        out.write(separator + json.dumps(m.__dict__, default=str))
        separator = ",\n  "
    out.write("\n ]\n}\n")


FORMATS = {"csv": export_csv, "json": export_json}
