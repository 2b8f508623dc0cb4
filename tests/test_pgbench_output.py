"""The pgbench output parser, checked against real outputs of pgbench 15 and 18.

The files under tests/data/pgbench/<version>/ were captured by tests/data/pgbench/capture.sh;
the expected values below are copied from them, so a recapture means updating this table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pgcachelab.workloads.pgbench_output import (
    InitResult,
    PgbenchOutputError,
    PgbenchResult,
    ProgressSample,
    StatementLatency,
    parse_pgbench_init_output,
    parse_pgbench_output,
    parse_progress_line,
)

DATA = Path(__file__).parent / "data" / "pgbench"
VERSIONS = ("15", "18")

# Captures in which pgbench printed no result summary.
NO_SUMMARY = {"aborted_script", "no_database"}


def _read(version: str, name: str) -> str:
    return (DATA / version / f"{name}.txt").read_text()


def _captures(prefix_init: bool) -> list[tuple[str, str]]:
    found = [
        (version, path.stem)
        for version in VERSIONS
        for path in sorted((DATA / version).glob("*.txt"))
        if path.stem.startswith("init_") == prefix_init
    ]
    assert found, f"no captures under {DATA}"
    return found


BENCH_CAPTURES = [c for c in _captures(prefix_init=False) if c[1] not in NO_SUMMARY]
INIT_CAPTURES = _captures(prefix_init=True)
FAILED_CAPTURES = [(v, n) for v in VERSIONS for n in sorted(NO_SUMMARY)]


# Per capture: the summary values pgbench printed. Keys are PgbenchResult fields, plus
# n_progress and n_statements for the lengths of those lists.
EXPECTED: dict[tuple[str, str], dict[str, object]] = {
    ("15", "select_only_progress"): {
        "transaction_type": "<builtin: select only>",
        "clients": 4,
        "threads": 2,
        "duration_s": 3.0,
        "transactions_processed": 57079,
        "latency_avg_ms": 0.201,
        "latency_stddev_ms": 0.066,
        "initial_connection_time_ms": 13.593,
        "tps": 19070.073726,
        "n_progress": 3,
        "n_statements": 0,
    },
    ("15", "select_only_progress_timestamp"): {
        "transaction_type": "<builtin: select only>",
        "clients": 2,
        "threads": 2,
        "duration_s": 4.0,
        "transactions_processed": 59861,
        "latency_avg_ms": 0.133,
        "latency_stddev_ms": 0.365,
        "initial_connection_time_ms": 15.318,
        "tps": 15022.251935,
        "n_progress": 3,
        "n_statements": 0,
    },
    ("18", "select_only_progress_timestamp"): {
        "transaction_type": "<builtin: select only>",
        "clients": 2,
        "threads": 2,
        "duration_s": 4.0,
        "transactions_processed": 60780,
        "latency_avg_ms": 0.131,
        "latency_stddev_ms": 1.048,
        "initial_connection_time_ms": 12.004,
        "tps": 15239.464949,
        "n_progress": 3,
        "n_statements": 0,
    },
    ("18", "select_only_progress"): {
        "transaction_type": "<builtin: select only>",
        "clients": 4,
        "threads": 2,
        "duration_s": 3.0,
        "transactions_processed": 49409,
        "latency_avg_ms": 0.235,
        "latency_stddev_ms": 0.105,
        "initial_connection_time_ms": 10.8,
        "tps": 16513.057477,
        "n_progress": 3,
        "n_statements": 0,
    },
    ("15", "simple_update_report"): {
        "transaction_type": "<builtin: simple update>",
        "clients": 2,
        "threads": 1,
        "transactions_processed": 11474,
        "latency_avg_ms": 0.522,
        "latency_stddev_ms": None,
        "tps": 3831.402272,
        "n_progress": 0,
        "n_statements": 9,
    },
    ("18", "simple_update_report"): {
        "transaction_type": "<builtin: simple update>",
        "clients": 2,
        "threads": 1,
        "transactions_processed": 10717,
        "latency_avg_ms": 0.559,
        "latency_stddev_ms": None,
        "tps": 3578.781104,
        "n_progress": 0,
        "n_statements": 9,
    },
    ("15", "tpcb_transactions"): {
        "transaction_type": "<builtin: TPC-B (sort of)>",
        "duration_s": None,
        "transactions_per_client": 200,
        "transactions_processed": 400,
        "latency_avg_ms": 0.755,
        "initial_connection_time_ms": 6.835,
        "tps": 2647.638968,
        "n_statements": 11,
    },
    ("18", "tpcb_transactions"): {
        "transaction_type": "<builtin: TPC-B (sort of)>",
        "duration_s": None,
        "transactions_per_client": 200,
        "transactions_processed": 400,
        "latency_avg_ms": 0.916,
        "initial_connection_time_ms": 8.08,
        "tps": 2183.418032,
        "n_statements": 11,
    },
    ("15", "weighted_scripts"): {
        "transaction_type": "multiple scripts",
        "clients": 1,
        "transactions_processed": 29035,
        "tps": 9689.970988,
        "n_progress": 3,
        "n_statements": 5,
    },
    ("18", "weighted_scripts"): {
        "transaction_type": "multiple scripts",
        "clients": 1,
        "transactions_processed": 26294,
        "tps": 8776.655578,
        "n_progress": 3,
        "n_statements": 5,
    },
    ("15", "failures_retries"): {
        "transaction_type": "conflict.sql",
        "clients": 8,
        "max_tries": 3,
        "transactions_processed": 12494,
        "transactions_failed": 1782,
        "transactions_retried": 6626,
        "total_retries": 10004,
        "failures_by_kind": {"serialization": 1782, "deadlock": 0},
        # Printed as "latency average = 1.674 ms (including failures)".
        "latency_avg_ms": 1.674,
        "tps": 4182.834109,
        "n_statements": 4,
    },
    ("18", "failures_retries"): {
        "transaction_type": "conflict.sql",
        "clients": 8,
        "max_tries": 3,
        "transactions_processed": 11560,
        "transactions_failed": 1662,
        "transactions_retried": 6292,
        "total_retries": 9517,
        "failures_by_kind": {"serialization": 1662, "deadlock": 0},
        "latency_avg_ms": 1.801,
        "tps": 3883.569511,
        "n_statements": 4,
    },
    ("15", "failures_progress"): {
        "max_tries": 3,
        "transactions_processed": 11487,
        "transactions_failed": 1642,
        "transactions_retried": 6177,
        "total_retries": 9325,
        "failures_by_kind": {},
        "latency_stddev_ms": 0.956,
        "tps": 3858.413976,
        "n_progress": 3,
    },
    ("18", "failures_progress"): {
        "max_tries": 3,
        "transactions_processed": 11256,
        "transactions_failed": 1673,
        "transactions_retried": 6004,
        "total_retries": 9134,
        "failures_by_kind": {},
        "latency_stddev_ms": 1.009,
        "tps": 3776.607113,
        "n_progress": 3,
    },
    ("15", "rate_limited"): {
        "transactions_processed": 318,
        "latency_avg_ms": 1.167,
        "latency_stddev_ms": 0.313,
        "tps": 107.241246,
        "n_progress": 2,
    },
    ("18", "rate_limited"): {
        "transactions_processed": 306,
        "latency_avg_ms": 1.181,
        "latency_stddev_ms": 0.294,
        "tps": 102.340932,
        "n_progress": 2,
    },
    ("15", "latency_limit"): {
        "query_mode": "prepared",
        "duration_s": 2.0,
        "transactions_processed": 380,
        "latency_avg_ms": 0.875,
        "tps": 191.000172,
    },
    ("18", "latency_limit"): {
        "query_mode": "prepared",
        "duration_s": 2.0,
        "transactions_processed": 403,
        "latency_avg_ms": 0.81,
        "tps": 202.343062,
    },
    ("15", "partly_aborted"): {
        "clients": 3,
        "transactions_per_client": 50,
        "transactions_processed": 100,
        "tps": 14357.501795,
    },
    ("18", "partly_aborted"): {
        "clients": 3,
        "transactions_per_client": 50,
        "transactions_processed": 100,
        "tps": 18615.040953,
    },
    # Under -C there is no initial connection time, and tps includes reconnections.
    ("15", "reconnect"): {
        "transactions_processed": 353,
        "initial_connection_time_ms": None,
        "tps": 176.28326,
    },
    ("18", "reconnect"): {
        "transactions_processed": 421,
        "initial_connection_time_ms": None,
        "tps": 210.018533,
    },
}

# Defaults every capture shares unless EXPECTED says otherwise.
COMMON: dict[str, object] = {
    "scaling_factor": 1,
    "query_mode": "simple",
    "max_tries": 1,
    "transactions_failed": 0,
    "transactions_retried": None,
    "total_retries": None,
    "failures_by_kind": {},
    # pgbench 14 and later print only the tps without connection time.
    "tps_including_connections": None,
}


def test_every_benchmark_capture_has_expectations():
    assert sorted(BENCH_CAPTURES) == sorted(EXPECTED)


@pytest.mark.parametrize(("version", "name"), BENCH_CAPTURES)
def test_summary_values(version: str, name: str):
    result = parse_pgbench_output(_read(version, name))
    expected = {**COMMON, **EXPECTED[(version, name)]}
    n_progress = expected.pop("n_progress", None)
    n_statements = expected.pop("n_statements", None)
    actual = {key: getattr(result, key) for key in expected}
    assert actual == expected
    if n_progress is not None:
        assert len(result.progress) == n_progress
    if n_statements is not None:
        assert len(result.statements) == n_statements


@pytest.mark.parametrize(("version", "name"), BENCH_CAPTURES)
def test_statements_are_the_scripts_statements_in_order(version: str, name: str):
    result = parse_pgbench_output(_read(version, name))
    assert result.statements == [s for script in result.scripts for s in script.statements]
    for statement in result.statements:
        assert statement.command == statement.command.strip()
        assert statement.command


@pytest.mark.parametrize("version", VERSIONS)
def test_progress_lines_of_select_only(version: str):
    result = parse_pgbench_output(_read(version, "select_only_progress"))
    assert [p.elapsed_s for p in result.progress] == [1.0, 2.0, 3.0]
    assert all(p.failed == 0 for p in result.progress)
    assert all(p.lag_ms is None and p.retried is None for p in result.progress)


def test_progress_values_15_rate_limited():
    result = parse_pgbench_output(_read("15", "rate_limited"))
    assert result.progress == [
        ProgressSample(
            elapsed_s=1.0,
            tps=102.0,
            latency_avg_ms=1.077,
            latency_stddev_ms=0.289,
            lag_ms=0.099,
            failed=0,
            retried=None,
        ),
        ProgressSample(
            elapsed_s=2.0,
            tps=117.0,
            latency_avg_ms=1.185,
            latency_stddev_ms=0.228,
            lag_ms=0.106,
            failed=0,
            retried=None,
        ),
    ]


def test_progress_values_18_with_retries():
    result = parse_pgbench_output(_read("18", "failures_progress"))
    assert result.progress[2] == ProgressSample(
        elapsed_s=3.0,
        tps=4207.3,
        latency_avg_ms=1.372,
        latency_stddev_ms=0.88,
        lag_ms=None,
        failed=616,
        retried=2241,
    )
    assert [p.failed for p in result.progress] == [449, 608, 616]
    assert [p.retried for p in result.progress] == [1620, 2141, 2241]


def test_parse_progress_line_alone():
    line = "progress: 2.0 s, 18056.8 tps, lat 0.215 ms stddev 0.084, 0 failed\n"
    assert parse_progress_line(line) == ProgressSample(
        elapsed_s=2.0,
        tps=18056.8,
        latency_avg_ms=0.215,
        latency_stddev_ms=0.084,
        lag_ms=None,
        failed=0,
        retried=None,
    )
    assert parse_progress_line("tps = 16513.057477 (without initial connection time)") is None
    assert parse_progress_line("") is None


@pytest.mark.parametrize(
    ("version", "statement"),
    [
        ("15", StatementLatency(0.071, 0, None, "END;")),
        ("18", StatementLatency(0.086, 0, None, "END;")),
    ],
)
def test_tpcb_statements(version: str, statement: StatementLatency):
    result = parse_pgbench_output(_read(version, "tpcb_transactions"))
    (script,) = result.scripts
    assert script.name == "<builtin: TPC-B (sort of)>"
    assert script.weight is None
    assert script.transactions == 400
    assert script.tps == result.tps
    assert script.statements[0].command == r"\set aid random(1, 100000 * :scale)"
    assert script.statements[-1] == statement
    assert [s.command.split()[0] for s in script.statements[4:]] == [
        "BEGIN;",
        "UPDATE",
        "SELECT",
        "UPDATE",
        "UPDATE",
        "INSERT",
        "END;",
    ]


@pytest.mark.parametrize(
    ("version", "failures", "retries"), [("15", 1782, 10007), ("18", 1662, 9520)]
)
def test_failures_and_retries_per_statement(version: str, failures: int, retries: int):
    result = parse_pgbench_output(_read(version, "failures_retries"))
    assert result.transactions_failed > 0
    (script,) = result.scripts
    assert script.name == "conflict.sql"
    assert script.failed == failures
    update = script.statements[2]
    assert update.command == (
        "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;"
    )
    assert (update.failures, update.retries) == (failures, retries)
    others = script.statements[:2] + script.statements[3:]
    assert all((s.failures, s.retries) == (0, 0) for s in others)


# (name, weight, transactions, tps, latency avg, latency stddev, statement count)
WEIGHTED = {
    "15": [
        ("select.sql", 7, 20328, 6784.147761, 0.094, 0.037, 2),
        ("update.sql", 3, 8707, 2905.823227, 0.123, 0.047, 3),
    ],
    "18": [
        ("select.sql", 7, 18408, 6144.393241, 0.103, 0.04, 2),
        ("update.sql", 3, 7886, 2632.262337, 0.138, 0.023, 3),
    ],
}


@pytest.mark.parametrize("version", VERSIONS)
def test_weighted_scripts(version: str):
    result = parse_pgbench_output(_read(version, "weighted_scripts"))
    actual = [
        (
            s.name,
            s.weight,
            s.transactions,
            s.tps,
            s.latency_avg_ms,
            s.latency_stddev_ms,
            len(s.statements),
        )
        for s in result.scripts
    ]
    assert actual == WEIGHTED[version]
    assert all(s.failed == 0 for s in result.scripts)
    assert result.scripts[1].statements[-1].command.startswith("UPDATE pgbench_accounts")


@pytest.mark.parametrize("version", VERSIONS)
def test_no_per_script_block_without_r(version: str):
    result = parse_pgbench_output(_read(version, "select_only_progress"))
    assert result.scripts == []
    assert result.statements == []


@pytest.mark.parametrize("version", VERSIONS)
def test_lines_out_of_order(version: str):
    """stderr lines may land anywhere among stdout lines; the result must not change.

    The text is the real capture with its progress lines moved into the middle of a
    statement table and to the very end, as a pipe could interleave them.
    """
    text = _read(version, "weighted_scripts")
    lines = text.splitlines()
    progress = [line for line in lines if line.startswith("progress: ")]
    rest = [line for line in lines if not line.startswith("progress: ")]
    cut = rest.index("SQL script 2: update.sql") - 1
    moved = rest[:cut] + progress[:2] + rest[cut:] + progress[2:]
    assert parse_pgbench_output("\n".join(moved)) == parse_pgbench_output(text)


@pytest.mark.parametrize("version", VERSIONS)
def test_crlf_line_ends(version: str):
    text = _read(version, "failures_retries")
    assert parse_pgbench_output(text.replace("\n", "\r\n")) == parse_pgbench_output(text)


def test_result_is_the_documented_type():
    assert isinstance(parse_pgbench_output(_read("18", "reconnect")), PgbenchResult)


@pytest.mark.parametrize(("version", "name"), FAILED_CAPTURES)
def test_failed_runs_raise_with_last_line(version: str, name: str):
    text = _read(version, name)
    last = text.strip().splitlines()[-1]
    with pytest.raises(PgbenchOutputError) as info:
        parse_pgbench_output(text)
    assert last in str(info.value)


@pytest.mark.parametrize(
    "text",
    ["", "\n \n", "this is not pgbench output\nat all\n", "tps = 12.5 (without initial"],
)
def test_garbage_raises(text: str):
    with pytest.raises(PgbenchOutputError) as info:
        parse_pgbench_output(text)
    assert "no " in str(info.value)
    if text.strip():
        assert text.strip().splitlines()[-1] in str(info.value)


def test_error_is_a_value_error():
    with pytest.raises(ValueError, match="empty"):
        parse_pgbench_output("")


INIT_EXPECTED = {
    ("15", "init_server_side"): InitResult(
        total_s=0.36,
        steps_s={
            "drop tables": 0.0,
            "create tables": 0.01,
            "server-side generate": 0.22,
            "vacuum": 0.07,
            "primary keys": 0.06,
        },
    ),
    ("18", "init_server_side"): InitResult(
        total_s=0.31,
        steps_s={
            "drop tables": 0.0,
            "create tables": 0.0,
            "server-side generate": 0.19,
            "vacuum": 0.07,
            "primary keys": 0.04,
        },
    ),
    ("15", "init_client_side"): InitResult(
        total_s=0.32,
        steps_s={
            "drop tables": 0.01,
            "create tables": 0.0,
            "client-side generate": 0.16,
            "vacuum": 0.08,
            "primary keys": 0.06,
        },
    ),
    ("18", "init_client_side"): InitResult(
        total_s=0.24,
        steps_s={
            "drop tables": 0.01,
            "create tables": 0.0,
            "client-side generate": 0.11,
            "vacuum": 0.08,
            "primary keys": 0.05,
        },
    ),
}


@pytest.mark.parametrize(("version", "name"), INIT_CAPTURES)
def test_init_output(version: str, name: str):
    result = parse_pgbench_init_output(_read(version, name))
    assert result == INIT_EXPECTED[(version, name)]
    assert list(result.steps_s) == list(INIT_EXPECTED[(version, name)].steps_s)


@pytest.mark.parametrize("version", VERSIONS)
def test_init_parser_rejects_benchmark_output(version: str):
    text = _read(version, "tpcb_transactions")
    with pytest.raises(PgbenchOutputError, match="done in"):
        parse_pgbench_init_output(text)


def test_benchmark_parser_rejects_init_output():
    with pytest.raises(PgbenchOutputError, match="primary keys"):
        parse_pgbench_output(_read("18", "init_server_side"))
