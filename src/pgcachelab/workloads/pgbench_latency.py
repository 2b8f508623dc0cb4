"""A pgbench run's latency distribution, from its per-transaction log. Pure functions.

Percentiles come from an HdrHistogram (microseconds, 3 significant digits), kept encoded with
the measurement so that repetitions and runs can be merged later. With `-R` the log also has each
transaction's schedule lag, the wait between its scheduled start and its actual start: pgbench
measures latency from the scheduled start, so its latencies are free of coordinated omission.

pgbench 14+ reads its clock lazily: a transaction whose reply was already waiting when pgbench
looked is logged as 0 us (see workloads/client_timing.py), and that time is lost, not moved to
a neighbour: in a captured `select 1` run on 18 (tests/data/pgbench/18), 61% of the entries were
0 and the log's latencies added up to 0.46 of the clients' time. So each distribution records
its share of zeros and two cross-checks, its mean against the average pgbench printed and (in a
closed loop, without -R) its sum against the time the clients were busy, clients x duration;
`biased_low` says when its percentiles read low. pgbench's own loop between transactions makes
the sum fall a little short of the clients' time too (0.92-0.95 on 30-50k tps runs here).
"""

import base64
import math
from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

from pgcachelab.workloads.pgbench_log import LoggedTransaction, parse_transaction_log

HIGHEST_US = 3_600_000_000  # one hour: a latency above it is clipped to it
SIGNIFICANT_DIGITS = 3
PER_SECOND_DIGITS = 2  # a per-second histogram lives only while its second is read
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}
# A share of 0 us entries above which the low percentiles are said to be biased, and the share
# of the clients' time the latencies must add up to.
ZEROS_NOTED_SHARE = 0.01
SUM_TRUSTED_SHARE = 0.9
# Logged transactions wanted per run: enough for p99.9 (a thousand beyond it at 1e6) while the
# log stays a few tens of MB; pgbench's --sampling-rate keeps a run near it.
LOGGED_TARGET = 1_000_000
# Before any run of a point has been measured: an upper bound of one client's tps (cached
# select-only on a fast core), so that the first run's log stays small too.
ASSUMED_TPS_PER_CLIENT = 25_000.0


def sampling_rate(expected_transactions: float, target: int = LOGGED_TARGET) -> float:
    """pgbench's --sampling-rate for a run expected to end `expected_transactions` (1: all),
    rounded down to two significant digits so that it reads well in the record."""
    if expected_transactions <= target:
        return 1.0
    rate = target / expected_transactions
    digits = 1 - math.floor(math.log10(rate))
    return max(math.floor(rate * 10**digits) / 10**digits, 1e-6)


def expected_transactions(workload: dict, clients: int, tps_estimate: float | None) -> float:
    """How many transactions the run will end: -t says it; -T times a tps estimate (the
    point's last run or its warm-up) or the assumed upper bound."""
    if workload.get("transactions"):
        return float(workload["transactions"]) * clients
    tps = tps_estimate if tps_estimate else ASSUMED_TPS_PER_CLIENT * clients
    if workload.get("rate"):
        tps = min(tps, float(workload["rate"]))
    return tps * float(workload.get("duration") or 0)


def log_args(prefix: str, rate: float) -> list[str]:
    args = ["--log", f"--log-prefix={prefix}"]
    if rate < 1.0:
        args.append(f"--sampling-rate={rate:g}")
    return args


@dataclass(frozen=True)
class LogFigures:
    """What the run's pgbench printed, to check the log against."""

    clients: int
    duration_s: float | None  # None for -t runs: their length is the log's span
    latency_avg_ms: float | None
    rate_limited: bool  # -R: clients wait for their schedule, the sum check does not apply


def new_histogram(digits: int = SIGNIFICANT_DIGITS) -> HdrHistogram:
    return HdrHistogram(1, HIGHEST_US, digits)


def decode_histogram(encoded: str) -> HdrHistogram:
    return HdrHistogram.decode(base64.b64decode(encoded))


def merged(encoded: list[str]) -> HdrHistogram | None:
    """One histogram of several (the repetitions of a point); None for none."""
    if not encoded:
        return None
    total = new_histogram()
    for text in encoded:
        total.add(decode_histogram(text))
    return total


def percentiles_ms(histogram: HdrHistogram) -> dict[str, float]:
    figures = {
        name: histogram.get_value_at_percentile(p) / 1000.0 for name, p in PERCENTILES.items()
    }
    figures["max"] = histogram.get_max_value() / 1000.0
    figures["mean"] = histogram.get_mean_value() / 1000.0
    return figures


def latency_distribution(logs: list[str], rate: float, figures: LogFigures) -> dict:
    """The distribution of the logged latencies (and schedule lags), with its cross-checks."""
    transactions = [t for text in logs for t in parse_transaction_log(text, figures.rate_limited)]
    transactions.sort(key=lambda t: (t.epoch_s, t.epoch_us))
    latencies = new_histogram()
    lags = new_histogram()
    zeros = failed = skipped = 0
    sum_us = 0
    for transaction in transactions:
        if transaction.lag_us is not None:
            lags.record_value(min(transaction.lag_us, HIGHEST_US))
        if transaction.latency_us is None:
            skipped += transaction.skipped
            failed += not transaction.skipped
            continue
        zeros += transaction.latency_us == 0
        sum_us += transaction.latency_us
        latencies.record_value(min(transaction.latency_us, HIGHEST_US))
    logged = latencies.get_total_count()
    record: dict = {
        "unit": "us",
        "sampling_rate": rate,
        "logged": logged,
        "failed": failed,
        "skipped": skipped,
        "zeros": zeros,
        "zeros_share": zeros / logged if logged else None,
        "hdr": base64.b64encode(latencies.encode()).decode() if logged else None,
    }
    if logged:
        record.update({f"{name}_ms": value for name, value in percentiles_ms(latencies).items()})
        record.update(_cross_checks(sum_us / 1000.0, logged, rate, figures, transactions))
    record["biased_low"] = bool(logged) and (
        zeros / logged > ZEROS_NOTED_SHARE
        or record.get("sum_to_busy_time", 1.0) < SUM_TRUSTED_SHARE
    )
    if lags.get_total_count():
        record["lag"] = {f"{k}_ms": v for k, v in percentiles_ms(lags).items()}
        record["lag"]["hdr"] = base64.b64encode(lags.encode()).decode()
    record["per_second"] = per_second(transactions)
    return record


def _cross_checks(sum_ms, logged, rate, figures: LogFigures, transactions) -> dict:
    checks: dict = {}
    if figures.latency_avg_ms:
        checks["mean_to_pgbench_avg"] = sum_ms / logged / figures.latency_avg_ms
    duration_s = figures.duration_s or _span_s(transactions)
    if not figures.rate_limited and duration_s and figures.clients:
        # Closed loop: each client is always in a transaction, so the latencies (all of them,
        # hence / rate) add up to nearly the clients' time, unless the lazy clock lost some.
        checks["sum_to_busy_time"] = sum_ms / rate / 1000.0 / (figures.clients * duration_s)
    return checks


def _span_s(transactions: list[LoggedTransaction]) -> float | None:
    if len(transactions) < 2:
        return None
    first, last = transactions[0], transactions[-1]
    return (last.epoch_s - first.epoch_s) + (last.epoch_us - first.epoch_us) / 1e6


def per_second(transactions: list[LoggedTransaction]) -> list[list]:
    """[end second (Unix), logged, p50 ms, p99 ms, max ms] for each second a transaction
    ended in, from the time-ordered transactions; one small histogram alive at a time."""
    rows = []
    histogram = new_histogram(PER_SECOND_DIGITS)
    second = None
    for transaction in transactions:
        if transaction.latency_us is None:
            continue
        if transaction.epoch_s != second:
            if second is not None:
                rows.append(_second_row(second, histogram))
                histogram.reset()
            second = transaction.epoch_s
        histogram.record_value(min(transaction.latency_us, HIGHEST_US))
    if second is not None:
        rows.append(_second_row(second, histogram))
    return rows


def _second_row(second: int, histogram: HdrHistogram) -> list:
    return [
        second,
        histogram.get_total_count(),
        round(histogram.get_value_at_percentile(50.0) / 1000.0, 3),
        round(histogram.get_value_at_percentile(99.0) / 1000.0, 3),
        round(histogram.get_max_value() / 1000.0, 3),
    ]
