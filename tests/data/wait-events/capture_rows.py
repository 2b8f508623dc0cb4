"""Capture pg_stat_activity's wait-event rows under load, for the pure tests (issue 22).

Run as root from the repository, on a machine with a few GB free:
    .venv/bin/python tests/data/wait-events/capture_rows.py 9.6 18
For each major version: a cluster with shared_buffers 128MB and pgbench data of scale 40
(~600 MB, so that select-only misses and maps new buffers), pgbench -S with 8 clients for 20 s,
and meanwhile a session that runs the grouped pg_buffercache view in a loop; the lab's sampling
query (probes/wait_events.py) is run every 50 ms and rows-MAJOR.json keeps each result as
[seconds since the first, rows].
"""

import json
import sys
import threading
import time
from pathlib import Path

from pgcachelab.clusters.targets import ManagedTarget
from pgcachelab.probes.buffercache import SAMPLER_APPLICATION_NAME
from pgcachelab.probes.wait_events import WAIT_SAMPLER_APPLICATION_NAME, wait_events_query
from pgcachelab.workloads.pgbench import run_pgbench, run_pgbench_init

HERE = Path(__file__).parent
VIEW = "select relfilenode, count(*) from pg_buffercache group by relfilenode"


def poll_view(target, done: threading.Event) -> None:
    """The grouped view in a loop until `done`, as the lab's cache sampler names itself."""
    with target.connect() as conn:
        conn.execute(f"set application_name = '{SAMPLER_APPLICATION_NAME}'")
        while not done.is_set():
            conn.execute(VIEW).fetchall()


def capture(target) -> tuple[str, list]:
    """(the sampling query, [seconds since the first sample, rows]) under load and polling."""
    target.apply({"shared_buffers": "128MB"})
    pgbench, where = target.pgbench(), target.pgbench_target({})
    run_pgbench_init(pgbench, ["-i", "-s", "40", "-I", "dtgvp"], where)
    with target.connect() as conn:
        conn.execute("create extension if not exists pg_buffercache")
    load = threading.Thread(
        target=run_pgbench, args=(pgbench, ["-S", "-c", "8", "-j", "2", "-T", "20"], where)
    )
    done = threading.Event()
    poller = threading.Thread(target=poll_view, args=(target, done))
    load.start()
    poller.start()
    samples = []
    try:
        with target.connect() as conn:
            conn.execute(f"set application_name = '{WAIT_SAMPLER_APPLICATION_NAME}'")
            query = wait_events_query(conn.info.server_version)
            time.sleep(2)
            first = time.time()
            while load.is_alive() and time.time() - first < 15:
                rows = conn.execute(query).fetchall()
                samples.append([round(time.time() - first, 3), rows])
                time.sleep(0.05)
    finally:
        done.set()
        poller.join()
        load.join()
    return query, samples


for major in sys.argv[1:]:
    target = ManagedTarget(major)
    target.open(lambda _: None)
    try:
        query, samples = capture(target)
        version = target.server_version
    finally:
        target.close()
    out = HERE / f"rows-{major}.json"
    out.write_text(json.dumps({"version": version, "query": query, "samples": samples}) + "\n")
    print(f"{out}: PostgreSQL {version}, {len(samples)} samples")
