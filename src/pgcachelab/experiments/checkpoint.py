"""A CHECKPOINT right before a measured run, checked on the server (seed 001 ran one before
every pgbench run, so that each starts with no dirty buffers)."""

import time

import psycopg

from pgcachelab.errors import PointError
from pgcachelab.probes.checkpointer import CheckpointerProbe

# The requested-checkpoint counter may reach the statistics views after CHECKPOINT has
# returned: before 15 through the statistics collector, whose file a backend accepts up to
# 500 ms old (PGSTAT_STAT_INTERVAL); from 15 the checkpointer reports it after it has woken
# the waiting backend (checkpointer.c). Wait this long for it, then call it not done.
COUNTER_WAIT_S = 10.0
POLL_S = 0.05


def counter_name(server_version: int) -> str:
    """The view and column that count requested checkpoints (the view split in 17)."""
    if server_version >= 170000:
        return "pg_stat_checkpointer.num_requested"
    return "pg_stat_bgwriter.checkpoints_req"


def checkpoint_checked(
    conn: psycopg.Connection, statement: str = "checkpoint", wait_s: float = COUNTER_WAIT_S
) -> dict:
    """Run CHECKPOINT (`statement`: tests give one that does not checkpoint) and return its
    duration and counters; raises PointError when the server's counter did not rise."""
    counter = counter_name(conn.info.server_version)
    before = _counters(conn)
    started = time.monotonic()
    conn.execute(statement)
    returned = time.monotonic()
    duration_ms = (returned - started) * 1000
    deadline = returned + wait_s
    after = _counters(conn)
    while after["checkpoints_requested"] <= before["checkpoints_requested"]:
        if time.monotonic() >= deadline:
            raise PointError(
                f"the CHECKPOINT before the run did not happen: {counter} stayed at "
                f"{before['checkpoints_requested']} for {wait_s:g} s"
            )
        time.sleep(POLL_S)
        after = _counters(conn)
    return {
        "duration_ms": round(duration_ms, 3),
        "counter": counter,
        # how long after CHECKPOINT returned the counter showed it (the statistics' lag)
        "counter_seen_after_ms": round((time.monotonic() - returned) * 1000, 3),
        "requested_before": before["checkpoints_requested"],
        "requested_after": after["checkpoints_requested"],
        "buffers_written": after["buffers_checkpoint"] - before["buffers_checkpoint"],
    }


def _counters(conn: psycopg.Connection) -> dict:
    # a session keeps the statistics it read until its transaction ends, or told to forget
    conn.execute("select pg_stat_clear_snapshot()")
    return CheckpointerProbe().collect(conn)
