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
from collections import Counter
from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

from pgcachelab.workloads.parameters import PgbenchParameters
from pgcachelab.workloads.pgbench_log import log_fields

HIGHEST_US = 3_600_000_000  # one hour: a latency above it is clipped to it
SIGNIFICANT_DIGITS = 3
PER_SECOND_DIGITS = 2  # a per-second histogram lives only while its second is read
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}
# A share of 0 us entries above which the low percentiles are said to be biased, and the share
# of the clients' time the latencies must add up to.
ZEROS_NOTED_SHARE = 0.01
SUM_TRUSTED_SHARE = 0.9
# Logged transactions wanted per run: enough for p99.9 (200 beyond it) while writing the log
# costs pgbench little and reading it a fraction of a second (bench/latency_log.py);
# pgbench's --sampling-rate keeps a run near it.
LOGGED_TARGET = 200_000
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


def expected_transactions(parameters: PgbenchParameters, tps_estimate: float | None) -> float:
    """How many transactions the run will end: -t says it; -T times a tps estimate (the
    point's last run or its warm-up) or the assumed upper bound."""
    clients = parameters.clients
    if parameters.transactions:
        return float(parameters.transactions) * clients
    tps = tps_estimate if tps_estimate else ASSUMED_TPS_PER_CLIENT * clients
    if parameters.rate:
        tps = min(tps, parameters.rate)
    return tps * parameters.duration


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
    """The distribution of the logged latencies (and schedule lags), with its cross-checks.

    One pass over the lines without an object per transaction, and the histograms filled
    from counts of equal values: a million lines take about a second here (bench/latency_log.py).
    """
    read = _read_logs(logs, figures.rate_limited)
    latencies = _histogram_of(Counter(read.latencies_us))
    logged = latencies.get_total_count()
    zeros = read.zeros
    record: dict = {
        "unit": "us",
        "sampling_rate": rate,
        "logged": logged,
        "failed": read.failed,
        "skipped": read.skipped,
        "zeros": zeros,
        "zeros_share": zeros / logged if logged else None,
        "hdr": base64.b64encode(latencies.encode()).decode() if logged else None,
    }
    if logged:
        record.update({f"{name}_ms": value for name, value in percentiles_ms(latencies).items()})
        span_s = (read.last_end_s - read.first_end_s) if logged > 1 else None
        record.update(_cross_checks(sum(read.latencies_us) / 1000.0, logged, rate, figures, span_s))
    record["biased_low"] = bool(logged) and (
        zeros / logged > ZEROS_NOTED_SHARE
        or record.get("sum_to_busy_time", 1.0) < SUM_TRUSTED_SHARE
    )
    if read.lags_us:
        lags = _histogram_of(Counter(read.lags_us))
        record["lag"] = {f"{k}_ms": v for k, v in percentiles_ms(lags).items()}
        record["lag"]["hdr"] = base64.b64encode(lags.encode()).decode()
    record["per_second"] = per_second(read.seconds, read.latencies_us)
    return record


@dataclass
class _ReadLogs:
    latencies_us: list[int]  # of the transactions with a latency, in the logs' order
    seconds: list[int]  # the Unix second each of them ended in
    lags_us: list[int]
    zeros: int = 0
    failed: int = 0
    skipped: int = 0
    first_end_s: float = math.inf
    last_end_s: float = -math.inf


def _read_logs(logs: list[str], with_lag: bool) -> _ReadLogs:
    """The columns of pgbench_log's format (see pgbench_log.py), read straight off the lines."""
    read = _ReadLogs([], [], [])
    for text in logs:
        for fields in log_fields(text):
            if with_lag and len(fields) > 6 and fields[6].isdigit():
                read.lags_us.append(int(fields[6]))
            time_field = fields[2]
            if not time_field.isdigit():
                if time_field == "skipped":
                    read.skipped += 1
                else:
                    read.failed += 1
                continue
            latency, second = int(time_field), int(fields[4])
            read.zeros += latency == 0
            read.latencies_us.append(latency)
            read.seconds.append(second)
            end_s = second + int(fields[5]) / 1e6
            read.first_end_s = min(read.first_end_s, end_s)
            read.last_end_s = max(read.last_end_s, end_s)
    return read


def _histogram_of(counts: Counter, digits: int = SIGNIFICANT_DIGITS) -> HdrHistogram:
    histogram = new_histogram(digits)
    for value, count in counts.items():
        histogram.record_value(min(value, HIGHEST_US), count)
    return histogram


def _cross_checks(sum_ms, logged, rate, figures: LogFigures, span_s: float | None) -> dict:
    checks: dict = {}
    if figures.latency_avg_ms:
        checks["mean_to_pgbench_avg"] = sum_ms / logged / figures.latency_avg_ms
    duration_s = figures.duration_s or span_s
    if not figures.rate_limited and duration_s and figures.clients:
        # Closed loop: each client is always in a transaction, so the latencies (all of them,
        # hence / rate) add up to nearly the clients' time, unless the lazy clock lost some.
        checks["sum_to_busy_time"] = sum_ms / rate / 1000.0 / (figures.clients * duration_s)
    return checks


def per_second(seconds: list[int], latencies_us: list[int]) -> list[list]:
    """[end second (Unix), logged, p50 ms, p99 ms, max ms] for each second a transaction
    ended in."""
    by_second: dict[int, Counter] = {}
    for second, latency in zip(seconds, latencies_us, strict=True):
        counts = by_second.get(second)
        if counts is None:
            counts = by_second[second] = Counter()
        counts[latency] += 1
    return [
        _second_row(second, _histogram_of(by_second[second], PER_SECOND_DIGITS))
        for second in sorted(by_second)
    ]


def _second_row(second: int, histogram: HdrHistogram) -> list:
    return [
        second,
        histogram.get_total_count(),
        round(histogram.get_value_at_percentile(50.0) / 1000.0, 3),
        round(histogram.get_value_at_percentile(99.0) / 1000.0, 3),
        round(histogram.get_max_value() / 1000.0, 3),
    ]
