"""Captures a stored big-cache run as the per-point figures the step finder reads (JSON).

Usage: .venv/bin/python tests/data/steps/capture.py LAB_DIR_OR_STORE RUN_ID OUT.json

It reads the run through the report's own loader (analysis/run_data.py), so the figures are the
ones a report of that run would use: each point's measured database size and the tps of every
repetition, with what the finder needs to match boundaries and where the run came from.
"""

import json
import sys
from pathlib import Path

from pgcachelab.analysis.run_data import load_run
from pgcachelab.store.location import parse_store
from pgcachelab.store.open import open_store


def capture(store_text: str, run_id: str) -> dict:
    store = open_store(parse_store(store_text), create=False)
    try:
        data = load_run(store, run_id)
        # not among the report's figures (analysis/run_data.py reads only those): asked for
        loads = [
            m.metrics.get("load_average_1m")
            for m in store.measurements(run_id, ("load_average_1m",))
            if m.status == "ok"
        ]
    finally:
        store.close()
    env = data.run.environment
    shared = {r.shared_buffers_bytes for r in data.points if r.shared_buffers_bytes}
    disks = {
        (m.metrics.get("disk") or {}).get("profile", {}).get("name")
        for r in data.points
        for m in r.ok
        if (m.metrics.get("disk") or {}).get("profile")
    }
    return {
        "run_id": data.run.run_id,
        "name": data.run.name,
        "captured_from": "pgcachelab run, stored results (tests/data/steps/capture.py)",
        "machine": f"{env.get('cpu_model')}, {env.get('cores')} cores",
        "git_commit": env.get("git_commit"),
        "shared_buffers_bytes": shared.pop() if len(shared) == 1 else None,
        "memory_limit_bytes": data.memory_limit_bytes,
        "memory_available_bytes": data.memory_available_bytes,
        "disk": sorted(disks) or None,
        "load_average_1m": _range(loads),
        "points": [
            {
                "label": r.point.label,
                "scale": r.point.swept.get("scale"),
                "database_size_bytes": r.database_size_bytes,
                "tps": [m.tps for m in r.ok if m.tps],
            }
            for r in data.points
        ],
        "spec": data.run.spec_text,
    }


def _range(values: list) -> dict | None:
    values = [round(v, 2) for v in values if v is not None]
    return {"min": min(values), "max": max(values)} if values else None


if __name__ == "__main__":
    store_text, run_id, out = sys.argv[1:4]
    Path(out).write_text(json.dumps(capture(store_text, run_id), indent=1) + "\n")
