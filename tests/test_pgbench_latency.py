"""Latency distributions from pgbench's per-transaction logs captured on pgbench 15 and 18
(tests/data/pgbench/capture_logs.py): percentiles, schedule lag, skipped and sampled runs, the
0 us entries of pgbench's lazy clock and the cross-checks that catch them."""

from pathlib import Path

import pytest
from scipy import stats

from pgcachelab.spec import parse_spec
from pgcachelab.workloads.pgbench_latency import (
    ASSUMED_TPS_PER_CLIENT,
    LOGGED_TARGET,
    LogFigures,
    decode_histogram,
    expected_transactions,
    latency_distribution,
    log_args,
    merged,
    sampling_rate,
)
from pgcachelab.workloads.pgbench_log import parse_transaction_log
from pgcachelab.workloads.pgbench_output import parse_pgbench_output

DATA = Path(__file__).parent / "data" / "pgbench"


def _captured(version: str, name: str, rate: float = 1.0):
    printed = parse_pgbench_output(
        (DATA / version / f"transaction_log_{name}_printed.out").read_text()
    )
    logs = [
        p.read_text() for p in sorted((DATA / version).glob(f"transaction_log_{name}_[0-9].log"))
    ]
    limited = "-R" in name or name in ("rate", "skipped")
    figures = LogFigures(printed.clients, printed.duration_s, printed.latency_avg_ms, limited)
    return logs, latency_distribution(logs, rate, figures), printed


@pytest.mark.parametrize("version", ["15", "18"])
def test_percentiles_are_the_logged_latencies_percentiles(version):
    logs, record, _ = _captured(version, "rate")
    latencies_ms = [t.latency_us / 1000 for text in logs for t in parse_transaction_log(text, True)]
    assert record["logged"] == len(latencies_ms) > 500
    ordered = sorted(latencies_ms)
    for name, p in (("p50", 50), ("p90", 90), ("p99", 99)):
        # HdrHistogram's rank is p% of the count rounded, its value the bucket's top with 3
        # significant digits: between the neighbouring order statistics, within 0.1%
        rank = p / 100 * len(ordered)
        low, high = ordered[max(int(rank) - 1, 0)], ordered[min(int(rank), len(ordered) - 1)]
        assert low * 0.999 <= record[f"{name}_ms"] <= high * 1.001 + 0.001, (name, low, high)
    assert record["p50_ms"] == pytest.approx(stats.scoreatpercentile(ordered, 50), rel=0.01)
    assert record["max_ms"] == pytest.approx(max(latencies_ms), rel=1e-3)
    assert record["p50_ms"] <= record["p90_ms"] <= record["p99_ms"] <= record["p999_ms"]


@pytest.mark.parametrize("version", ["15", "18"])
def test_a_rate_limited_run_has_its_schedule_lag_and_no_busy_time_check(version):
    logs, record, printed = _captured(version, "rate")
    lags = [t.lag_us for text in logs for t in parse_transaction_log(text, True)]
    assert all(lag is not None for lag in lags)
    assert record["lag"]["max_ms"] == pytest.approx(max(lags) / 1000, rel=1e-3)
    assert "sum_to_busy_time" not in record  # clients wait for their schedule: no closed loop
    assert record["mean_to_pgbench_avg"] == pytest.approx(1.0, abs=0.01)
    assert not record["biased_low"]
    # one row per second the transactions ended in, their counts adding up to the log
    assert sum(row[1] for row in record["per_second"]) == record["logged"]
    assert len(record["per_second"]) in (2, 3)


@pytest.mark.parametrize("version", ["15", "18"])
def test_skipped_transactions_are_counted_not_timed(version):
    _, record, printed = _captured(version, "skipped")
    assert record["skipped"] > 100 and record["failed"] == 0
    assert record["logged"] == printed.transactions_processed


@pytest.mark.parametrize("version", ["15", "18"])
def test_a_sampled_log_keeps_its_rate_and_checks_out_against_the_clients_time(version):
    _, record, printed = _captured(version, "sampled", rate=0.05)
    assert record["sampling_rate"] == 0.05
    # about 5% of what pgbench processed, within a few binomial standard deviations
    expected = printed.transactions_processed * 0.05
    assert abs(record["logged"] - expected) < 5 * (expected * 0.95) ** 0.5
    assert 0.9 < record["sum_to_busy_time"] <= 1.02
    assert not record["biased_low"]


def test_the_lazy_clocks_zeros_are_caught_by_both_checks():
    _, record, _ = _captured("18", "zeros")
    assert record["zeros"] == 609 and record["zeros_share"] == pytest.approx(0.609)
    assert record["p50_ms"] == 0.0
    assert record["sum_to_busy_time"] == pytest.approx(0.457, abs=0.01)
    assert record["mean_to_pgbench_avg"] == pytest.approx(0.448, abs=0.01)
    assert record["biased_low"]
    _, fifteen, _ = _captured("15", "zeros")  # 3 zeros in 1,000: within the noted share
    assert fifteen["zeros"] == 3 and not fifteen["biased_low"]


def test_stored_histograms_decode_and_merge_across_repetitions():
    _, first, _ = _captured("18", "rate")
    _, second, _ = _captured("15", "rate")
    assert decode_histogram(first["hdr"]).get_total_count() == first["logged"]
    both = merged([first["hdr"], second["hdr"]])
    assert both.get_total_count() == first["logged"] + second["logged"]
    assert both.get_max_value() / 1000 == pytest.approx(max(first["max_ms"], second["max_ms"]))
    assert merged([]) is None


def test_an_empty_log_records_no_percentiles():
    record = latency_distribution([""], 1.0, LogFigures(1, 1.0, 0.1, False))
    assert record["logged"] == 0 and record["hdr"] is None and "p99_ms" not in record
    assert record["per_second"] == [] and not record["biased_low"]


def test_the_sampling_rate_keeps_the_log_near_its_target():
    assert sampling_rate(LOGGED_TARGET) == 1.0
    assert sampling_rate(10 * LOGGED_TARGET) == 0.1
    assert sampling_rate(3 * LOGGED_TARGET) == 0.33  # two significant digits, rounded down
    assert sampling_rate(1e15) == 1e-6
    assert log_args("/x/log", 1.0) == ["--log", "--log-prefix=/x/log"]
    assert log_args("/x/log", 0.033)[-1] == "--sampling-rate=0.033"


def _pgbench(table: str):
    """A point's pgbench parameters, typed, from the lines of a [pgbench] table."""
    return parse_spec(f"[pgbench]\n{table}", Path("x.toml")).parameters


def test_the_expected_transactions_come_from_t_or_the_estimate_or_the_bound():
    assert expected_transactions(_pgbench("transactions = 100\nclients = 4"), None) == 400
    two_for_10s = _pgbench('duration = "10s"\nclients = 2')
    assert expected_transactions(two_for_10s, 500.0) == 5000
    assert expected_transactions(two_for_10s, None) == 20 * ASSUMED_TPS_PER_CLIENT
    assert expected_transactions(two_for_10s.changed(rate=100.0), None) == 1000
