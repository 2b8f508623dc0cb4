"""Cut a measurement of a real inspect-history run down to what the wait-event analysis reads.

Run from the repository after `pgcachelab run experiments/inspect-history-quick.toml
--lab-dir LAB`:
    .venv/bin/python tests/data/wait-events/capture_measurement.py LAB/results.sqlite 9.6 0
writes measurement-9.6.json: the pg_buffercache point of that version, that repetition (round):
its alternating windows, pgbench's per-second progress and the wait-event samples.
"""

import json
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).parent

store, version, repetition = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = sqlite3.connect(store)
run_id, metrics_json = db.execute(
    "select m.run_id, m.metrics from measurements m join points p"
    " on p.run_id = m.run_id and p.point_index = m.point_index"
    " where json_extract(p.swept, '$.version') = ? and m.repetition = ?"
    " and json_extract(p.swept, '$.inspect_method') = 'pg_buffercache' and m.status = 'ok'",
    [version, repetition],
).fetchone()
metrics = json.loads(metrics_json)
kept = {
    "run_id": run_id,
    "inspect_windows": metrics["inspect_windows"],
    "pgbench": {"progress": metrics["pgbench"]["progress"]},
    "wait_events": metrics["wait_events"],
}
out = HERE / f"measurement-{version}.json"
out.write_text(json.dumps(kept) + "\n")
print(f"{out}: run {run_id}, {len(metrics['wait_events']['samples'])} samples")
