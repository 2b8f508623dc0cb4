"""tpmC and per-transaction statistics from pgbench's per-transaction log. Pure functions.

tpmC counts every New-Order that completed, the 1% rolled back on the unused item included:
clause 5.4.2 counts New-Orders "completed" in the interval, and clause 2.4.2.3 treats the
rollback as the normal completion of that input. pgbench sees those as successful
transactions (the function catches its own rollback), so they are in the script's count.
Transactions that failed after all their tries are not counted.
"""

import dataclasses
import math
from dataclasses import dataclass, field

from pgcachelab.workloads.pgbench_log import LoggedTransaction

PERCENTILES = (50, 90, 95, 99)
SERIES_INTERVAL_S = 10.0


@dataclass(frozen=True)
class TransactionStats:
    name: str
    completed: int
    failed: int
    # mean, p50, p90, p95, p99, max; empty when none completed. With terminal times only the
    # mean, of the response time (terminal_times.py)
    latency_ms: dict[str, float]


@dataclass(frozen=True)
class SeriesPoint:
    start_s: float
    end_s: float
    new_orders: int
    tpmc: float


@dataclass
class TpccSummary:
    duration_s: float
    tpmc: float
    tpm_total: float
    new_orders: int
    completed: int
    failed: int
    by_type: dict[str, TransactionStats]
    series: list[SeriesPoint] = field(default_factory=list)


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list (p in 0..100]."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


def latency_summary(latencies_ms: list[float]) -> dict[str, float]:
    if not latencies_ms:
        return {}
    ordered = sorted(latencies_ms)
    summary = {"mean": math.fsum(ordered) / len(ordered)}
    summary.update({f"p{p}": percentile(ordered, p) for p in PERCENTILES})
    summary["max"] = ordered[-1]
    return summary


def mean_latency_ms(
    transactions: list[LoggedTransaction], script_names: list[str]
) -> dict[str, float]:
    """The mean logged latency of each script's completed transactions (none: left out)."""
    latencies: dict[str, list[float]] = {name: [] for name in script_names}
    for transaction in transactions:
        if transaction.latency_ms is not None and 0 <= transaction.script < len(script_names):
            latencies[script_names[transaction.script]].append(transaction.latency_ms)
    return {name: math.fsum(values) / len(values) for name, values in latencies.items() if values}


def response_times(
    summary: TpccSummary, cycle_ms_by_name: dict[str, float], sleep_ms_by_name: dict[str, float]
) -> TpccSummary:
    """The summary of a run with keying and think times: per type, the mean logged latency
    (the whole cycle) less the mean time asleep, both over every transaction pgbench ran (its
    per-command report counts the ones that ended after the duration too). Percentiles go:
    they would include the sleeps."""
    by_type = {}
    for name, stats in summary.by_type.items():
        latency = {}
        # none completed within the duration: no response time is reported for the interval
        if stats.completed and name in cycle_ms_by_name and name in sleep_ms_by_name:
            latency = {"mean": cycle_ms_by_name[name] - sleep_ms_by_name[name]}
        by_type[name] = dataclasses.replace(stats, latency_ms=latency)
    return dataclasses.replace(summary, by_type=by_type)


def _end_s(transaction: LoggedTransaction) -> float:
    return transaction.epoch_s + transaction.epoch_us / 1e6


def tpmc_series(
    new_order_ends_s: list[float],
    start_s: float,
    duration_s: float,
    interval_s: float = SERIES_INTERVAL_S,
) -> list[SeriesPoint]:
    """New-Orders per minute in consecutive intervals from `start_s` (the last may be shorter)."""
    buckets = max(1, math.ceil(duration_s / interval_s - 1e-9))
    counts = [0] * buckets
    for end in new_order_ends_s:
        index = int((end - start_s) // interval_s)
        counts[min(max(index, 0), buckets - 1)] += 1
    points = []
    for index, count in enumerate(counts):
        begin = index * interval_s
        end = min(duration_s, begin + interval_s)
        width = end - begin
        points.append(SeriesPoint(begin, end, count, count * 60.0 / width if width > 0 else 0.0))
    return points


def within(transactions: list[LoggedTransaction], duration_s: float) -> list[LoggedTransaction]:
    """The transactions that ended within `duration_s` of the first one's start: a -T run's
    terminals that were asleep at its end run one more transaction after it."""
    if not transactions:
        return []
    start_s = min(_end_s(t) - (t.latency_us or 0) / 1e6 for t in transactions)
    return [t for t in transactions if _end_s(t) <= start_s + duration_s]


def logged_span_s(transactions: list[LoggedTransaction]) -> float:
    """From the first transaction's start to the last one's end (pgbench logs ends and
    latencies); at least a millisecond, so that rates stay finite."""
    if not transactions:
        return 0.001
    ends = [_end_s(t) for t in transactions]
    starts = [end - (t.latency_us or 0) / 1e6 for end, t in zip(ends, transactions, strict=True)]
    return max(0.001, max(ends) - min(starts))


def summarise(
    transactions: list[LoggedTransaction],
    script_names: list[str],
    duration_s: float,
    interval_s: float = SERIES_INTERVAL_S,
) -> TpccSummary:
    """Counts, latencies and tpmC of one run; `script_names[n]` is pgbench's script n."""
    if duration_s <= 0:
        raise ValueError(f"duration must be positive, not {duration_s}")
    latencies: dict[str, list[float]] = {name: [] for name in script_names}
    failed = dict.fromkeys(script_names, 0)
    new_order_ends: list[float] = []
    for transaction in transactions:
        if not 0 <= transaction.script < len(script_names):
            raise ValueError(f"pgbench logged script {transaction.script}, which was not run")
        name = script_names[transaction.script]
        if transaction.latency_ms is None:
            failed[name] += 1
            continue
        latencies[name].append(transaction.latency_ms)
        if name == "new_order":
            new_order_ends.append(_end_s(transaction))
    by_type = {
        name: TransactionStats(
            name, len(latencies[name]), failed[name], latency_summary(latencies[name])
        )
        for name in script_names
    }
    completed = sum(stats.completed for stats in by_type.values())
    new_orders = len(new_order_ends)
    # The run starts when its first transaction does (pgbench logs only ends and latencies).
    starts = [_end_s(t) - (t.latency_us or 0) / 1e6 for t in transactions]
    start_s = min(starts) if starts else 0.0
    return TpccSummary(
        duration_s=duration_s,
        tpmc=new_orders * 60.0 / duration_s,
        tpm_total=completed * 60.0 / duration_s,
        new_orders=new_orders,
        completed=completed,
        failed=sum(failed.values()),
        by_type=by_type,
        series=tpmc_series(new_order_ends, start_s, duration_s, interval_s),
    )
