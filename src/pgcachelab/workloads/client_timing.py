"""Statements timed one by one by the client on a monotonic clock, with a cross-check.

Why not pgbench's per-transaction log for short statements: pgbench 14+ takes a transaction's
end time lazily (processXactStats, pg_time_now_lazy), so a transaction whose reply was already
waiting when pgbench looked is logged as 0 us; 167-366 of 1,800 cached index lookups logged 0
in one run (issue 15), which biased the medians low. perf_counter_ns around each execute covers
the whole round trip to the server and cannot read 0.

The cross-check compares the sum of the samples with the wall time of the loop around them:
the difference is the loop's own overhead (the clock calls, appending a sample), which must
stay small for the samples to be the phase's time.
"""

import gc
import statistics
import time
from dataclasses import dataclass

import psycopg

from pgcachelab.workloads.outcome import MeasurementError

# The loop's overhead (wall time not inside any sample) allowed, as a share of the wall time.
LOOP_OVERHEAD_TOLERANCE = 0.10


@dataclass(frozen=True)
class TimedLoop:
    samples_ns: list[int]  # one per execution, each around execute + fetch
    wall_ns: int  # from before the first execution to after the last

    @property
    def samples_ms(self) -> list[float]:
        return [sample / 1e6 for sample in self.samples_ns]


def time_statement(conn: psycopg.Connection, query: str, count: int) -> TimedLoop:
    """Execute `query` `count` times as a prepared statement, timing each execution."""
    cursor = conn.cursor()
    clock = time.perf_counter_ns
    samples: list[int] = []
    # A garbage collection inside a sample would be the client's pause, not the server's.
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = clock()
        for _ in range(count):
            before = clock()
            cursor.execute(query, prepare=True)
            cursor.fetchall()
            samples.append(clock() - before)
        wall_ns = clock() - started
    finally:
        if collecting:
            gc.enable()
    return TimedLoop(samples, wall_ns)


def cross_check(loop: TimedLoop, what: str) -> dict:
    """The loop's samples against its wall time, as stored with the measurement.

    Raises MeasurementError for a sample <= 0 or samples that add up to more than the wall
    time: neither can happen on a monotonic clock, so either means the timing is broken."""
    if not loop.samples_ns:
        raise MeasurementError(f"{what}: no statement was timed")
    if min(loop.samples_ns) <= 0:
        raise MeasurementError(
            f"{what}: a sample of {min(loop.samples_ns)} ns on a monotonic clock (timing broken)"
        )
    total_ns = sum(loop.samples_ns)
    if total_ns > loop.wall_ns:
        raise MeasurementError(
            f"{what}: samples add up to {total_ns} ns, more than the loop's {loop.wall_ns} ns"
        )
    overhead_share = (loop.wall_ns - total_ns) / loop.wall_ns
    wall_per_sample_ms = loop.wall_ns / 1e6 / len(loop.samples_ns)
    median_ms = statistics.median(loop.samples_ms)
    return {
        "samples": len(loop.samples_ns),
        "wall_ms": loop.wall_ns / 1e6,
        "samples_sum_ms": total_ns / 1e6,
        "loop_overhead_ms": (loop.wall_ns - total_ns) / 1e6,
        "loop_overhead_share": overhead_share,
        "median_ms": median_ms,
        "wall_per_sample_ms": wall_per_sample_ms,
        "median_to_wall_per_sample": median_ms / wall_per_sample_ms,
        "tolerance": LOOP_OVERHEAD_TOLERANCE,
        "within_tolerance": overhead_share <= LOOP_OVERHEAD_TOLERANCE,
    }
