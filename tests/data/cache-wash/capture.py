"""Recapture run.json for tests/test_cache_residency.py: a real tiny cache-wash run.

Run as root (the spec caps the server's memory with a cgroup), after `make .venv/.installed-stamp`:
    .venv/bin/python tests/data/cache-wash/capture.py
It runs wash-tiny.toml in a throwaway lab directory and keeps what the report reads of it: the
points, each measurement's cache_wash metrics and the labelled cache snapshots (seconds since
the run started instead of Unix times).
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from pgcachelab.store.sqlite import SqliteResultStore

HERE = Path(__file__).resolve().parent


def capture() -> None:
    with tempfile.TemporaryDirectory(prefix="pgcachelab-capture-") as lab:
        subprocess.run(
            [str(Path(sys.executable).parent / "pgcachelab"), "run", str(HERE / "wash-tiny.toml"),
             "--lab-dir", lab, "--no-report"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        store = SqliteResultStore(Path(lab) / "results.sqlite")
        [run] = store.runs()
        captured = {
            "points": [
                {"point_index": p.point_index, "label": p.label, "settings": p.settings}
                for p in store.points(run.run_id)
            ],
            "measurements": [
                {
                    "point_index": m.point_index,
                    "repetition": m.repetition,
                    "status": m.status,
                    "cache_wash": m.metrics.get("cache_wash"),
                }
                for m in store.measurements(run.run_id)
            ],  # fmt: skip
            "samples": [
                {
                    "point_index": s.point_index,
                    "repetition": s.repetition,
                    "seconds": round(s.taken_at - run.created_at, 3),
                    "label": s.label,
                    "data": s.data,
                }
                for s in store.snapshots(run.run_id)
                if s.data is not None
            ],  # fmt: skip
        }
        store.db.close()
    (HERE / "run.json").write_text(json.dumps(captured, indent=1) + "\n")


if __name__ == "__main__":
    capture()
