"""Writes runs.json: three real runs as `compare` reads them, for tests/test_compare_pure.py.

    .venv/bin/python tests/data/compare/capture.py LAB_DIR RUN_A1 RUN_A2 RUN_B

RUN_A1 and RUN_A2: experiments/compare-quick.toml run twice; RUN_B:
experiments/compare-quick-async-commit.toml. Server settings are kept only where they differ
between the runs, or the file would hold every pg_settings row of every point.
"""

import dataclasses
import json
import sys
from pathlib import Path

from pgcachelab.analysis.compare_store import load_side
from pgcachelab.store.sqlite import SqliteResultStore

ENVIRONMENT_KEYS = ("server_version", "server_source", "pgbench_version", "cpu_model", "cores",
                    "memory_total_bytes", "hostname")  # fmt: skip


def main(lab_dir: str, *run_ids: str) -> None:
    store = SqliteResultStore.in_lab_dir(Path(lab_dir))
    sides = [load_side(store, run_id, "pgbench") for run_id in run_ids]  # compare-quick*.toml
    names = set().union(*(p.server_settings for s in sides for p in s.points))
    differing = {
        name
        for name in names
        if len({p.server_settings.get(name) for s in sides for p in s.points}) > 1
    }
    runs = []
    for side in sides:
        runs.append({
            **{k: getattr(side, k) for k in ("run_id", "name", "status", "target", "load_average")},
            "environment": {k: side.environment.get(k) for k in ENVIRONMENT_KEYS},
            "points": [
                {**dataclasses.asdict(p),
                 "server_settings": {k: v for k, v in p.server_settings.items() if k in differing},
                 "derived_settings": sorted(p.derived_settings & differing)}
                for p in side.points
            ],
        })  # fmt: skip
    out = Path(__file__).with_name("runs.json")
    out.write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
    print(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
