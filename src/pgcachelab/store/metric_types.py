"""A measurement's metrics as the type checker sees them: one TypedDict for the whole and one per
group that a report reads, so that every metric read is checked (issue 50).

Written beside store/metric_keys.py, the table of what each key means:
tests/test_metric_types.py fails when the keys of MeasurementMetrics differ from METRICS', so
the two cannot drift. Every key is optional (total=False): a measurement that failed, or a
workload or instrument that did not run, leaves its keys out, and a read of some paths only
(store/records.py's nest_metrics) holds just those. A group's TypedDict names the keys the
lab reads; its writer stores more (the docs table lists them), which a TypedDict allows.
"""

from typing import TypedDict


class ProgressSample(TypedDict, total=False):
    """One --progress line of pgbench (workloads/pgbench_output.py's ProgressSample)."""

    elapsed_s: float
    tps: float
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    lag_ms: float | None
    failed: int | None
    retried: int | None


class PgbenchMetrics(TypedDict, total=False):
    """metrics["pgbench"]: pgbench's summary, parsed (PgbenchResult as a dict)."""

    clients: int | None
    threads: int | None
    duration_s: float | None
    transactions_processed: int
    transactions_failed: int
    tps: float
    progress: list[ProgressSample]


class LagMetrics(TypedDict, total=False):
    """The schedule lag under --rate: its percentiles, and its HDR histogram as text."""

    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    p999_ms: float
    mean_ms: float
    max_ms: float
    hdr: str


class LatencyMetrics(TypedDict, total=False):
    """metrics["latency"]: the distribution from pgbench's per-transaction log."""

    p50_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    mean_ms: float | None
    max_ms: float | None
    logged: int
    sampling_rate: float
    skipped: int | None
    zeros_share: float | None
    biased_low: bool
    lag: LagMetrics
    per_second: list[list[float]]


def percentile_ms(latency: LatencyMetrics, name: str) -> float | None:
    """A percentile by its name in analysis/latency.py ("p99"); None if absent."""
    by_name = {
        "p50": latency.get("p50_ms"),
        "p90": latency.get("p90_ms"),
        "p95": latency.get("p95_ms"),
        "p99": latency.get("p99_ms"),
        "p999": latency.get("p999_ms"),
    }
    return by_name.get(name)


class WashCrossCheck(TypedDict):
    """A cache-wash phase's samples checked against its wall time."""

    loop_overhead_share: float
    median_to_wall_per_sample: float
    tolerance: float
    within_tolerance: bool


class WashWarmup(TypedDict, total=False):
    lookups: int | None
    seconds: float | None
    prewarmed_index_blocks: int | None


class WashData(TypedDict, total=False):
    """The cache-wash table's sizes, and the seconds its build took."""

    table_bytes: int
    index_bytes: int
    build_s: float


class CacheWashMetrics(TypedDict, total=False):
    """metrics["cache_wash"]: seed 000's phases, timed by the client (ms per query)."""

    idx0_ms: list[float]
    idx1_ms: list[float]
    seq_ms: list[float]
    idx2_ms: list[float]
    timing: str
    cross_check: dict[str, WashCrossCheck]  # by phase
    statio: dict[str, dict[str, int]]  # by phase: the table's and index's blocks hit and read
    warmup: WashWarmup
    data: WashData


def wash_phase_ms(wash: CacheWashMetrics, phase: str) -> list[float]:
    """A phase's samples (ms), by its name in analysis/cache_split.py's PHASES; [] if absent."""
    by_phase = {
        "idx0": wash.get("idx0_ms"),
        "idx1": wash.get("idx1_ms"),
        "seq": wash.get("seq_ms"),
        "idx2": wash.get("idx2_ms"),
    }
    return by_phase.get(phase) or []


class TpccTransactionStats(TypedDict):
    """One transaction type's figures in a TPC-C run (workloads/tpcc/results.py's
    TransactionStats as a dict)."""

    name: str
    completed: int
    failed: int
    latency_ms: dict[str, float]  # mean, p50 .. p99, max; empty when none completed


class TpccSeriesPoint(TypedDict):
    """tpmC in one interval of a TPC-C run (workloads/tpcc/results.py's SeriesPoint)."""

    start_s: float
    end_s: float
    new_orders: int
    tpmc: float


class TpccCheck(TypedDict):
    """A consistency condition checked after a TPC-C run, and what broke it."""

    name: str
    violations: int


class TpccMix(TypedDict):
    """A TPC-C run's achieved mix against clause 5.2.3's minimums (issue 51)."""

    shares: dict[str, float]
    below_minimums: dict[str, float]  # the types under their minimum, with their share
    standard_deck: bool


class TpccMetrics(TypedDict, total=False):
    """metrics["tpcc"]: a TPC-C run (workloads/tpcc_workload.py's tpcc_metrics), every key it
    writes. Runs stored before issue 39 lack mode and terminal_times, before issue 51 mix; a
    run stored before issue 48 may hold NaN where a share or a CPU time had nothing to divide."""

    tpmc: float
    tpm_total: float
    new_orders: int
    completed: int
    failed: int
    rollbacks: int
    rollback_share: float | None  # None: no New-Order
    retries: int | None  # None: the pgbench cannot retry (before 15)
    failures_by_kind: dict[str, int]
    client_cpu_ms_per_transaction: float | None
    rate_tpm: float | None  # None: no limit
    rate_limited: bool
    by_type: dict[str, TpccTransactionStats]
    series: list[TpccSeriesPoint]
    checks: list[TpccCheck]
    mix: TpccMix
    warehouses: int
    c_last_load: int
    c_last_run: int
    pgbench_version: str
    clients: int
    threads: int
    duration_s: int
    home_warehouse: bool
    weights: dict[str, int]
    mode: str
    terminal_times: str
    differences: list[str]


class ResourcesMetrics(TypedDict, total=False):
    """metrics["resources"]: the machine's resources once a second (issue 32)."""

    columns: list[str]
    rows: list[list[float | None]]
    summary: dict[str, float]  # cpu_user_pct, seconds, ...: a figure not sampled is left out


class DiskProfileRecord(TypedDict):
    """An emulated disk as a measurement stores it (machine/disk_profiles.py's record())."""

    name: str
    read_latency_s: float
    write_latency_s: float
    sync_latency_s: float
    iops: int | None
    bandwidth_bytes_s: int | None


class DiskMetrics(TypedDict, total=False):
    """metrics["disk"]: the point's disk, its profile and the requests that reached it."""

    profile: DiskProfileRecord | None
    probe: dict[str, object] | None
    device: dict[str, int] | None  # reads, writes, syncs, bytes, waits


class ProbesMetrics(TypedDict, total=False):
    """metrics["probes"]: the server's counters over the run (deltas), one table per probe."""

    database: dict[str, float | None]  # pg_stat_database's deltas; size_bytes may be null
    statio: dict[str, object]
    checkpointer: dict[str, float]
    wal: dict[str, float]
    io: dict[str, object]


class MemoryAccounting(TypedDict, total=False):
    """The split of the emulated machine's RAM (machine/emulated.py): the huge pages pool, the
    cgroup's cap, and the room that left the OS cache."""

    ram_bytes: int | None  # None: no memory limit, the host's RAM
    huge_pages_pool_bytes: int | None
    cap_bytes: int | None
    cap_read_back_bytes: int | None  # the cap as the kernel holds it (whole pages)
    accounting: str  # how the split was made, or why it was refused
    os_cache_room_bytes: int | None


class MachineMetrics(TypedDict, total=False):
    """metrics["machine"]: the emulated machine after the run."""

    memory_limit_bytes: int | None
    cgroup: dict[str, float | None] | None
    memory_accounting: MemoryAccounting | None


class FleetMetrics(TypedDict, total=False):
    """metrics["fleet"]: who measured the point."""

    host: str | None
    host_id: str | None
    host_class: str | None
    facts: dict[str, object]


class InspectWindowsMetrics(TypedDict, total=False):
    """metrics["inspect_windows"]: [inspect] alternate's windows (analysis/inspect_overhead.py's
    Windows as a dict)."""

    start: float
    length_s: float
    first_polled: bool
    pattern: str


class WaitEventsMetrics(TypedDict, total=False):
    """metrics["wait_events"]: pg_stat_activity's wait events ten times a second (issue 22)."""

    samples: list[tuple[float, dict[str, int]]]  # JSON arrays: [Unix time, {event: backends}]
    interval_s: float
    server_version_num: int | None
    failed: int
    first_error: str | None


class CheckpointMetrics(TypedDict, total=False):
    """metrics["checkpoint"]: the CHECKPOINT before the measured period (checkpoint = true)."""

    duration_ms: float
    counter: str
    requested_before: int
    requested_after: int
    counter_seen_after_ms: float | None
    buffers_written: int


class MeasurementMetrics(TypedDict, total=False):
    """Measurement.metrics: every key of store/metric_keys.py's METRICS, each optional."""

    pgbench: PgbenchMetrics
    pgbench_args: list[str]
    pgbench_wall_s: float
    latency: LatencyMetrics
    cache_wash: CacheWashMetrics
    tpcc: TpccMetrics
    data: dict[str, object]
    warm: dict[str, object]
    caches: dict[str, object]
    host: dict[str, object]
    version_switch: dict[str, object]
    machine: MachineMetrics
    disk: DiskMetrics | None
    checkpoint: CheckpointMetrics
    probes: ProbesMetrics
    database_size_bytes: int | None
    load_average_1m: float | None
    resources: ResourcesMetrics
    wait_events: WaitEventsMetrics
    inspect: dict[str, object]
    inspect_windows: InspectWindowsMetrics
    fleet: FleetMetrics
