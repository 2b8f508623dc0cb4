"""What a snapshot method costs the server it runs on, by server version (issue 22). Pure.

`inspect` prints this under its totals, so that whoever looks inside shared_buffers on an old
server knows what the looking does to it: on 9.6 the grouped pg_buffercache view holds every
buffer-mapping partition lock while it reads the buffer headers (seed 003), and from 10 it
takes none (commit 6e654546fb, PostgreSQL 10 release notes: "Allow pg_buffercache to run with
fewer locks").
"""

PARTITION_LOCKS_DROPPED = 100000  # server_version_num of PostgreSQL 10
SUMMARY_SINCE = 160000  # pg_buffercache_summary()
# What each pg_cachelab mode does (extension/pg_cachelab/pg_cachelab.c's header says why).
EXTENSION_MODE_COSTS = {
    "consistent": (
        "pg_cachelab consistent: one pass over the buffer headers aggregated in the server, "
        "each buffer header's spinlock in turn, no partition lock"
    ),
    "fast": (
        "pg_cachelab fast: one pass over the buffer headers aggregated in the server, "
        "no header lock, no partition lock"
    ),
    "semiconsistent": (
        "pg_cachelab semiconsistent: one buffer-mapping partition lock at a time (shared) and "
        "a pass over the buffer headers under each, 128 in all: a query that must map a new "
        "buffer into the partition held waits for one pass"
    ),
    "snapshot": (
        "pg_cachelab snapshot: every buffer-mapping partition lock for one pass, as "
        "pg_buffercache before PostgreSQL 10: every query that misses shared_buffers waits "
        "for the whole pass (an exact list of the cached pages, for reference)"
    ),
}


def method_cost(
    method: str, mode: str | None, server_version_num: int, elapsed_ms: float | None
) -> str:
    """One sentence: what `method` does to this server while it runs; `elapsed_ms`, the
    snapshot's time, bounds how long the pre-10 view keeps its locks."""
    if method == "summary":
        return "pg_buffercache_summary(): counters only, no locks, no row per buffer"
    if method == "extension":
        return EXTENSION_MODE_COSTS[mode or "consistent"]
    if server_version_num < PARTITION_LOCKS_DROPPED:
        during = "" if elapsed_ms is None else f" (part of the {elapsed_ms:.0f} ms)"
        return (
            "the pg_buffercache view holds every buffer-mapping partition lock while it reads "
            f"the buffer headers{during}: on this version a query that misses shared_buffers "
            "and must map a new buffer waits for it (seed 003; the locks are gone from "
            "PostgreSQL 10)"
        )
    cheaper = (
        "; --method summary gives the totals without the rows"
        if server_version_num >= SUMMARY_SINCE
        else ""
    )
    return (
        "the pg_buffercache view: no partition lock since PostgreSQL 10, but one row per "
        f"buffer, grouped by the query: CPU in proportion to shared_buffers{cheaper}"
    )
