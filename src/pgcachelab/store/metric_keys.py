"""Every key a measurement stores in its metrics, with its unit, its meaning and what sets it:
the one table the docs site's reference/metrics.md is generated from (docs/hooks/reference.py).

tests/test_metric_keys.py fails when the code writes a key that is not here, when a stored
run (the fixture store, a real run of the server tests) holds one, or when a row says nothing.
Nothing checks keys at run time on purpose: a measurement is never lost, nor a run slowed,
for the sake of a documentation table.
"""

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class MetricKey:
    unit: str  # of the value, or the kind of table it is ("table", "list")
    meaning: str
    set_by: str  # the workload, instrument or step that writes it (and where)
    when: str = "every measurement that succeeds"


# The measurement's own columns (store/records.py's Measurement): read by every report, typed,
# and never inside `metrics`.
COLUMNS: dict[str, MetricKey] = {
    "tps": MetricKey(
        "transactions per second",
        "What the workload measured: pgbench's tps excluding connection time, TPC-C's total"
        " transactions per second. Empty for cache-wash, which times queries instead.",
        "the workload's Outcome",
    ),
    "latency_avg_ms": MetricKey(
        "ms",
        "Mean latency of a transaction (pgbench's own figure), or of the idx2 query (cache-wash).",
        "the workload's Outcome",
    ),
    "latency_stddev_ms": MetricKey(
        "ms", "pgbench's standard deviation of the latency.", "the workload's Outcome"
    ),
    "wall_s": MetricKey(
        "s",
        "Wall-clock time of the whole measurement: setting up, loading data, warming, running.",
        "the runner (experiments/recording.py)",
        "every measurement, failed ones too",
    ),
}

METRICS: dict[str, MetricKey] = {
    # -- the workloads' figures (workloads/*: Outcome.metrics) --
    "pgbench": MetricKey(
        "table",
        "pgbench's summary, parsed (workloads/pgbench_output.py): tps,"
        " tps_including_connections, latency_avg_ms, latency_stddev_ms, transactions_processed,"
        " transactions_failed and retried, failures_by_kind, clients, threads, duration_s,"
        " query_mode, scaling_factor, initial_connection_time_ms, per-script and per-statement"
        " figures, progress lines.",
        "the pgbench workload (workloads/pgbench_workload.py)",
        "pgbench points",
    ),
    "pgbench_args": MetricKey(
        "list of strings",
        "The arguments pgbench ran with (without the connection), to rerun the point by hand.",
        "the pgbench workload",
        "pgbench points",
    ),
    "pgbench_wall_s": MetricKey(
        "s",
        "Wall-clock time of the pgbench process, connections included.",
        "the pgbench workload",
        "pgbench points",
    ),
    "latency": MetricKey(
        "table (ms)",
        "The latency distribution from pgbench's per-transaction log, sampled to about"
        " LOGGED_TARGET lines: p50_ms .. p999_ms, mean_ms, max_ms, the HDR histogram (hdr),"
        " per_second series, schedule lag and skipped transactions under --rate, the sampling"
        " rate, and biased_low when the log's mean disagrees with pgbench's average.",
        "the pgbench workload (workloads/pgbench_latency.py)",
        "pgbench points",
    ),
    "cache_wash": MetricKey(
        "table (ms)",
        "Seed 000's phases, timed by the client: idx0_ms (right after pg_prewarm, before the"
        " warm-up), idx1_ms, seq_ms and idx2_ms (one value per query), the timing source, the"
        " cross_check of each phase's samples against its wall time, statio (the table's and"
        " index's blocks hit and read per phase), warmup (its lookups, seconds and the index"
        " blocks pg_prewarm read) and data (the table's sizes).",
        "the cache-wash workload (workloads/cache_wash.py)",
        "cache-wash points",
    ),
    "tpcc": MetricKey(
        "table",
        "TPC-C's figures: tpmc and tpm_total, per transaction type (by_type: count,"
        " latencies, failures), rollbacks and rollback_share, retries, the consistency checks,"
        " the rate asked (rate_tpm) and whether it limited the run, client CPU per transaction,"
        " warehouses, clients, threads and weights.",
        "the tpcc workload (workloads/tpcc_workload.py)",
        "tpcc points",
    ),
    # -- what the runner did to set the point up (experiments/runner.py) --
    "data": MetricKey(
        "table",
        "The point's data: whether it was loaded or reused (loaded, initialised, built), its"
        " scale or warehouses, its sizes in bytes (table_bytes, index_bytes, database_bytes,"
        " target_bytes), the load's seconds (load_s, init_wall_s, init_steps_s, by phase) and"
        " the checkpoints after it.",
        "the workload's ensure_data, called by the runner",
        "every measurement; a failed one if it got that far",
    ),
    "warm": MetricKey(
        "table",
        "The unrecorded warm-up before the run: warmup_s (seconds of pgbench run first) or what"
        " the workload prewarmed itself.",
        "the workload's prepare, called by the runner",
        "every measurement; a failed one if it got that far",
    ),
    "caches": MetricKey(
        "table",
        "What was done to the caches before the run, as the point's os_cache and prewarm ask:"
        " evicted (the cluster's files dropped from the OS cache), dropped_all (drop_caches),"
        " prewarmed_blocks (pg_prewarm's blocks read, per relation). Empty: nothing was done.",
        "the runner (prepare_caches)",
        "every measurement; a failed one if it got that far",
    ),
    "host": MetricKey(
        "table",
        "The host settings (read-ahead, transparent huge pages, ...) written for the point,"
        " each with the value before and after; recorded as they are written, so a point that"
        " failed halfway says how far it got.",
        "the runner (machine.set_host)",
        "points with host settings, or after one (the host's own values put back), failed ones too",
    ),
    "version_switch": MetricKey(
        "table",
        "The switch to another major version's cluster before the point: clusters, files and"
        " bytes it involved, and prewarmed_blocks when the data was read in again.",
        "the runner (a versioned target's switch)",
        "points that changed version (seed 001), failed ones too",
    ),
    # -- the instruments around the run (experiments/instruments.py) --
    "machine": MetricKey(
        "table",
        "The emulated machine after the run: memory_limit_bytes, the memory cgroup's"
        " statistics (cgroup: usage, page cache, shmem, oom_kills, ...), huge pages and those"
        " the lab reserved, and memory_accounting (the split of RAM, os_cache_room_bytes).",
        "MachineWatch",
        "every measurement on an emulated machine, failed ones too",
    ),
    "disk": MetricKey(
        "table",
        "The point's disk: its profile, the storage probe's figures, and device (the requests"
        " that reached the emulated disk during the run: reads, writes, bytes, waits), the"
        " proof the disk was in the way, or was not.",
        "DiskWatch",
        "every measurement that succeeds (null on a server the lab does not manage)",
    ),
    "checkpoint": MetricKey(
        "table (ms, counts)",
        "The CHECKPOINT run just before the measured period ([pgbench] or [tpcc] checkpoint ="
        " true), checked on the server: duration_ms, the counter that proves it happened"
        " (pg_stat_checkpointer.num_requested from 17, pg_stat_bgwriter.checkpoints_req before),"
        " requested_before and requested_after, counter_seen_after_ms (the statistics' lag),"
        " buffers_written.",
        "the runner (experiments/checkpoint.py)",
        "points with checkpoint = true",
    ),
    "probes": MetricKey(
        "table (counter deltas)",
        "The server's counters over the run, on the measurement's session: database"
        " (pg_stat_database: xact_commit, blks_hit, blks_read, ...), statio (per table and"
        " index), checkpointer, wal and io (pg_stat_io, PostgreSQL 16 and later); a probe not"
        " available on the server records that it was absent.",
        "ProbeDeltas (probes/*)",
    ),
    "database_size_bytes": MetricKey(
        "bytes",
        "pg_database_size of the measured database after the run: the size the step finder"
        " places each point at.",
        "ProbeDeltas",
    ),
    "load_average_1m": MetricKey(
        "load average",
        "The host's one-minute load average at the end of the run: how busy the machine was"
        " with other work, for the statistics' warnings.",
        "MachineWatch",
    ),
    "resources": MetricKey(
        "table (series)",
        "The machine's resources once a second through the run (issue 32): columns and rows"
        " (CPU, memory, I/O per source), a summary, the sampler's own CPU seconds, and the"
        " first error when a source failed.",
        "ResourceSeries (experiments/resource_sampler.py)",
        "every measurement, failed ones too",
    ),
    "wait_events": MetricKey(
        "table (counts)",
        "pg_stat_activity's wait events ten times a second through the run (issue 22): samples"
        " ([Unix time, {event: active backends}]), the interval, the server's version,"
        " failures.",
        "WaitEvents (experiments/wait_sampler.py)",
        "points with [inspect] wait_events, failed ones too",
    ),
    "inspect": MetricKey(
        "table",
        "How the cache snapshots went: method and mode used, snapshots taken and failed, the"
        " first error, and a note on what the OS-cache figures can mean; the snapshots"
        " themselves are stored beside the measurement.",
        "CacheSnapshots",
        "points with [inspect], failed ones too",
    ),
    "inspect_windows": MetricKey(
        "table (s)",
        "[inspect] alternate's windows: start (epoch seconds), length_s, the abba pattern and"
        " whether the first window polled.",
        "AlternatingWindows",
        "points with [inspect] alternate",
    ),
    # -- the fleet (experiments/fleet.py) --
    "fleet": MetricKey(
        "table",
        "Who measured the point: the agent's host name, host id, host class and the facts it"
        " checked.",
        "the agent's store (pgcachelab agent)",
        "measurements taken by a fleet agent, failed ones too",
    ),
}


def undocumented_keys(metrics: Iterable[str]) -> set[str]:
    """The keys of a measurement's metrics (or of any collection of keys) not in METRICS."""
    return set(metrics) - set(METRICS)
