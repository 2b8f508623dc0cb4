"""pgbench's per-transaction log, parsed from real logs of pgbench 15 and 18."""

from pathlib import Path

import pytest

from pgcachelab.workloads.pgbench_log import latencies_ms, parse_transaction_log

DATA = Path(__file__).parent / "data" / "pgbench"


@pytest.mark.parametrize("version", ["15", "18"])
def test_one_client_lookup_log(version):
    transactions = parse_transaction_log(
        (DATA / version / "transaction_log_lookup.log").read_text()
    )
    assert len(transactions) == 20
    assert [t.number for t in transactions] == list(range(1, 21))
    assert all(t.client == 0 and t.script == 0 for t in transactions)
    assert all(t.latency_us > 0 for t in transactions)


def test_latency_values_of_the_18_capture():
    transactions = parse_transaction_log((DATA / "18" / "transaction_log_lookup.log").read_text())
    assert transactions[0].latency_us == 2480
    assert transactions[1].latency_ms == 0.345


@pytest.mark.parametrize("version", ["15", "18"])
def test_two_threads_write_two_logs_merged_in_time_order(version):
    logs = [(DATA / version / f"transaction_log_two_threads_{i}.log").read_text() for i in (0, 1)]
    assert len(latencies_ms(logs)) == 10
    assert {t.client for t in parse_transaction_log(logs[1])} == {1}


def test_failed_transactions_have_no_latency():
    [failed] = parse_transaction_log("3 7 failed 0 1795364817 781023\n")
    assert failed.latency_ms is None
    assert latencies_ms(["3 7 failed 0 1795364817 781023\n"]) == []
    with pytest.raises(ValueError, match="line 1"):
        parse_transaction_log("0 1 2\n")
