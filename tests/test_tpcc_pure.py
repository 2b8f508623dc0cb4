"""TPC-C pure logic: parameters, pgbench scripts, tpmC and latencies from real captured logs
(tests/data/tpcc/capture_logs.py, pgbench 15 and 18)."""

import json
import math
import random
from pathlib import Path

import pytest

from pgcachelab.errors import UserError
from pgcachelab.workloads.pgbench_log import LoggedTransaction, parse_transaction_log
from pgcachelab.workloads.tpcc.driver import RunOptions, check_run_options, pgbench_args
from pgcachelab.workloads.tpcc.params import (
    DEFAULT_WEIGHTS,
    TRANSACTIONS,
    UNUSED_ITEM_ID,
    LoadConstants,
    check_warehouses,
    choose_c_last_run,
    expected_row_counts,
    parse_weights,
    valid_c_last_run,
)
from pgcachelab.workloads.tpcc.results import percentile, summarise, tpmc_series
from pgcachelab.workloads.tpcc.scripts import ScriptParameters, nurand, render_scripts

DATA = Path(__file__).parent / "data" / "tpcc"


# -- parameters ----------------------------------------------------------------------------------


def test_default_weights_are_the_standard_mix():
    assert parse_weights("45,43,4,4,4") == DEFAULT_WEIGHTS
    assert parse_weights(" 50, 50, 0, 0, 0 ")["order_status"] == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("45,43,4,4,5", "sum to 101"),
        ("45,43,4,4", "invalid value '45,43,4,4'\n"),
        ("45,43,4,4,-4", "invalid value"),
        ("45,43,4,4,4.0", "invalid value"),
    ],
)
def test_bad_weights_name_the_value(text, message):
    with pytest.raises(UserError, match=message) as caught:
        parse_weights(text)
    assert caught.value.message.startswith("--weights: ")
    assert "45,43,4,4,4" in caught.value.hint


@pytest.mark.parametrize("warehouses", [0, -1, 10_001])
def test_warehouses_out_of_range(warehouses):
    with pytest.raises(UserError, match=f"--warehouses: invalid value {warehouses}"):
        check_warehouses(warehouses)


def test_run_options_are_checked():
    with pytest.raises(UserError, match="--clients: invalid value 0"):
        check_run_options(RunOptions(clients=0))
    with pytest.raises(UserError, match="--rate-tpm"):
        check_run_options(RunOptions(rate_tpm=0))


@pytest.mark.parametrize("c_last_load", [0, 57, 128, 200, 255])
def test_c_run_satisfies_clause_2_1_6_1(c_last_load):
    rng = random.Random(c_last_load)
    for _ in range(50):
        c_run = choose_c_last_run(c_last_load, rng)
        delta = abs(c_run - c_last_load)
        assert 0 <= c_run <= 255
        assert 65 <= delta <= 119 and delta not in (96, 112)


def test_c_run_relation_edges():
    assert valid_c_last_run(0, 65) and valid_c_last_run(0, 119)
    assert not valid_c_last_run(0, 64) and not valid_c_last_run(0, 120)
    assert not valid_c_last_run(10, 106) and not valid_c_last_run(120, 8)


def test_expected_rows_per_warehouse():
    counts = expected_row_counts(2)
    assert counts["customer"] == 60_000 and counts["new_order"] == 18_000
    assert counts["stock"] == 200_000 and counts["item"] == 100_000


# -- pgbench scripts -----------------------------------------------------------------------------


def _params(warehouses=2, home=True):
    return ScriptParameters(warehouses, LoadConstants(17, 259, 7911), 100, home)


def test_nurand_expression():
    assert nurand(255, 0, 999, 100) == "(((random(0, 255) | random(0, 999)) + 100) % 1000) + 0"


def test_scripts_call_one_function_each():
    scripts = render_scripts(_params())
    assert list(scripts) == list(TRANSACTIONS)
    for name, text in scripts.items():
        sql = [line for line in text.splitlines() if not line.startswith("\\")]
        assert sql == [sql[0]] and sql[0].startswith(f"select tpcc.{name}(")


def test_new_order_script_draws_the_unused_item_and_remote_supply():
    text = render_scripts(_params())["new_order"]
    assert "\\set rollback random(1, 100)" in text
    assert f"then {UNUSED_ITEM_ID} else" in text
    assert "+ 7911) % 100000) + 1" in text  # C for OL_I_ID
    assert "(:w_id + random(0, 0)) % 2 + 1" in text  # the other of two warehouses
    single = render_scripts(_params(warehouses=1))["new_order"]
    assert "\\set s1 :w_id" in single and "random(0, -1)" not in single


def test_home_warehouse_uses_the_client_id():
    assert "\\set w_id :client_id % 2 + 1" in render_scripts(_params())["payment"]
    assert "\\set w_id random(1, 2)" in render_scripts(_params(home=False))["payment"]
    assert "+ 100) % 1000) + 0" in render_scripts(_params())["payment"]  # C-Run for C_LAST


def test_pgbench_args_skip_zero_weights_and_retry_from_15():
    files = {name: Path(f"/s/{name}.sql") for name in TRANSACTIONS}
    weights = {**DEFAULT_WEIGHTS, "order_status": 0, "payment": 47}
    options = RunOptions(clients=3, threads=8, duration_s=5, weights=weights, rate_tpm=600)
    args, names = pgbench_args(options, files, Path("/s/tpcc"), 18)
    assert names == ["new_order", "payment", "delivery", "stock_level"]
    assert "/s/payment.sql@47" in args and not any("order_status" in a for a in args)
    assert args[args.index("-j") + 1] == "3"  # no more threads than clients
    assert args[args.index("-R") + 1] == "10"
    assert args[args.index("--max-tries") + 1] == "10"
    assert "--max-tries" not in pgbench_args(options, files, Path("/s/tpcc"), 14)[0]


# -- results -------------------------------------------------------------------------------------


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99
    assert percentile([3.0], 90) == 3.0 and math.isnan(percentile([], 50))


def test_series_has_a_shorter_last_interval():
    series = tpmc_series([100.5, 105.0, 112.0, 124.0], start_s=100.0, duration_s=25.0)
    assert [(p.start_s, p.end_s, p.new_orders) for p in series] == [
        (0.0, 10.0, 2), (10.0, 20.0, 1), (20.0, 25.0, 1)]  # fmt: skip
    assert series[0].tpmc == 12.0 and series[2].tpmc == 12.0


def test_failed_transactions_count_apart_from_tpmc():
    def logged(script, latency):
        return LoggedTransaction(0, 1, latency, script, 1000, 0)

    summary = summarise([logged(0, 1000), logged(0, None), logged(1, 2000)],
                        ["new_order", "payment"], 60.0)  # fmt: skip
    assert summary.new_orders == 1 and summary.tpmc == 1.0 and summary.tpm_total == 2.0
    assert summary.by_type["new_order"].failed == 1 and summary.failed == 1
    with pytest.raises(ValueError, match="script 2"):
        summarise([logged(2, 10)], ["new_order", "payment"], 60.0)


@pytest.mark.parametrize("version", ["15", "18"])
def test_summary_of_a_captured_run(version):
    expected = json.loads((DATA / version / "run.json").read_text())
    transactions = parse_transaction_log((DATA / version / "run.log").read_text())
    summary = summarise(transactions, expected["script_names"], expected["duration_s"])
    assert summary.new_orders == expected["new_orders"]
    assert summary.completed == expected["completed"] == len(transactions)
    assert summary.tpmc == pytest.approx(expected["new_orders"] * 60 / expected["duration_s"])
    assert sum(p.new_orders for p in summary.series) == summary.new_orders
    for stats in summary.by_type.values():
        if stats.completed:
            latency = stats.latency_ms
            assert 0 < latency["p50"] <= latency["p90"] <= latency["p95"] <= latency["p99"]
            assert latency["p99"] <= latency["max"]
    # the mix is 45/43/4/4/4: New-Order and Payment dominate
    assert summary.by_type["new_order"].completed > 5 * summary.by_type["delivery"].completed
