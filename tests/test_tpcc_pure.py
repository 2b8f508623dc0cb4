"""TPC-C pure logic: parameters, pgbench scripts, tpmC and latencies from real captured logs
(tests/data/tpcc/capture_logs.py, pgbench 15 and 18)."""

import dataclasses
import io
import json
import math
import random
from pathlib import Path

import pytest

import pgcachelab.workloads.tpcc
from pgcachelab.errors import UserError
from pgcachelab.exporters import json as json_export
from pgcachelab.studies.tpcc.text import format_run
from pgcachelab.workloads.pgbench_log import LoggedTransaction, parse_transaction_log
from pgcachelab.workloads.pgbench_output import StatementLatency
from pgcachelab.workloads.tpcc import client_scripts, differences
from pgcachelab.workloads.tpcc.deck import check_mix
from pgcachelab.workloads.tpcc.driver import (
    RunOptions,
    TpccRun,
    check_pgbench_for_mode,
    check_run_options,
    no_new_order,
    pgbench_args,
    transaction_scripts,
)
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
from pgcachelab.workloads.tpcc.results import (
    mean_latency_ms,
    percentile,
    response_times,
    summarise,
    tpmc_series,
    within,
)
from pgcachelab.workloads.tpcc.scripts import (
    MAX_ORDER_LINES,
    ScriptParameters,
    new_order_inputs,
    nurand,
    render_scripts,
)
from pgcachelab.workloads.tpcc.terminal_times import (
    TERMINALS_PER_WAREHOUSE,
    mean_cycle_s,
    mean_sleep_ms,
)
from pgcachelab.workloads.tpcc_workload import run_options

DATA = Path(__file__).parent / "data" / "tpcc"


def run_json(run) -> str:
    """`tpcc run --format json`'s output for `run` (no load)."""
    out = io.StringIO()
    json_export.tpcc_run(run, None, out)
    return out.getvalue()


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


def test_pgbench_args_send_one_script_with_its_deck_and_retry_from_15():
    weights = {**DEFAULT_WEIGHTS, "order_status": 0, "payment": 47}
    options = RunOptions(clients=3, threads=8, duration_s=5, weights=weights, rate_tpm=600)
    variables = {"deck_seed": 7, "deck_left": 0}
    args = pgbench_args(options, Path("/s/tpcc.sql"), Path("/s/tpcc"), 18, variables)
    assert args[args.index("-f") + 1] == "/s/tpcc.sql" and args.count("-f") == 1
    assert "deck_seed=7" in args and "deck_left=0" in args
    assert args[args.index("-j") + 1] == "3"  # no more threads than clients
    assert args[args.index("-R") + 1] == "10"
    assert args[args.index("--max-tries") + 1] == "10"
    assert "--max-tries" not in pgbench_args(options, Path("/s/t.sql"), Path("/s/t"), 14, {})


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


# -- issue 39: Delivery, the client mode, keying and think times -------------------------------


def test_delivery_waits_for_the_oldest_order_instead_of_skipping_it():
    sql_dir = Path(pgcachelab.workloads.tpcc.__file__).parent / "sql"
    functions = (sql_dir / "transactions.sql").read_text()
    code = "\n".join(line for line in functions.splitlines() if not line.startswith("--"))
    assert "skip locked" not in code.lower() and "limit 1 for update)" in code
    client = client_scripts.delivery(_params())
    assert "skip locked" not in client.lower() and client.count("limit 1 for update)") == 10


def _sql_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("\\")]


def test_client_scripts_send_statements_in_one_transaction_each():
    params = _params()
    for name, render in client_scripts.RENDERERS.items():
        text = render(params)
        sql = _sql_lines(text)
        assert not any("tpcc." + name + "(" in line for line in sql), name
        assert text.count("\\startpipeline") == text.count("\\endpipeline") <= 1, name
        if name in ("payment", "order_status", "stock_level"):  # one statement: atomic
            assert len(sql) == 1 and "begin" not in sql[0], name
        else:
            assert sql[0] == "begin;" and sql[-1] in ("commit;", "rollback;"), name
            assert text.index("\\startpipeline\nbegin;") >= 0, name


def test_client_scripts_send_few_round_trips():
    """Issue 51: a statement per step, and a pipeline for what the script need not read.
    Round trips outside a pipeline: each SQL line, plus one per pipeline."""

    def round_trips(text: str) -> int:
        inside = False
        count = 0
        for line in text.splitlines():
            if line == "\\startpipeline":
                inside, count = True, count + 1
            elif line == "\\endpipeline":
                inside = False
            elif not line.startswith("\\") and not inside:
                count += 1
        return count

    params = _params()
    # New-Order: the pipeline, its line count, commit or rollback (one of the two is sent)
    assert round_trips(client_scripts.new_order(params)) == 4
    assert round_trips(client_scripts.payment(params)) == 1
    assert round_trips(client_scripts.order_status(params)) == 1
    assert round_trips(client_scripts.delivery(params)) == 1
    assert round_trips(client_scripts.stock_level(params)) == 1
    # pgbench allows no \gset inside a pipeline
    for render in client_scripts.RENDERERS.values():
        text = render(params)
        for piped in text.split("\\startpipeline")[1:]:
            assert "\\gset" not in piped.split("\\endpipeline")[0]


def test_client_new_order_writes_each_line_and_rolls_back_on_the_unused_item():
    text = client_scripts.new_order(_params())
    # all the lines in one statement; line by line when one item comes twice from a warehouse
    assert text.count("insert into tpcc.order_line") == MAX_ORDER_LINES + 1
    assert "\\if :repeated = 1\n" in text and text.count("\\else\nwith line as (") == 1
    assert "\\set k15 case when :ol_cnt >= 15 then :s15 * 1000000 + :i15 else -15 end" in text
    assert text.count(":k14 = :k15") == 1 and ":k15 = :k14" not in text
    assert "\\if :ol_cnt >= 15\n" in text and "\\if :ol_cnt >= 16" not in text
    # an unused item touches no stock; the lines written decide commit or rollback
    assert text.count("and exists (select from item)") == MAX_ORDER_LINES
    assert "then nextval('tpcc.rollbacks') else 0 end as rolled_back" in text
    assert text.endswith("\\if :lines = :ol_cnt\ncommit;\n\\else\nrollback;\n\\endif\n")
    # the inputs are those of the procedures mode: same mix of items, unused item, supply
    assert text.startswith("\n".join(new_order_inputs(_params())))
    # O_ALL_LOCAL looks at the used lines only; one warehouse: always local
    assert "\\set all_local case when :ol_cnt >= 15 and :s15 <> :w_id then 0" in text
    one_warehouse = client_scripts.new_order(_params(warehouses=1))
    assert "\\set all_local 1\n\\set k1 " in one_warehouse


def test_client_scripts_pass_inputs_as_variables_not_text():
    # under -M prepared pgbench sends :name as a parameter; no input is quoted into the SQL
    for render in client_scripts.RENDERERS.values():
        for line in _sql_lines(render(_params())):
            assert "':" not in line and ":'" not in line, line


def test_run_options_refuse_an_unknown_mode_or_terminal_times():
    with pytest.raises(UserError, match="--mode: invalid value 'clients'") as caught:
        check_run_options(RunOptions(mode="clients"))
    assert caught.value.hint == "e.g. --mode client"
    with pytest.raises(UserError, match="--terminal-times: invalid value 'on'"):
        check_run_options(RunOptions(terminal_times="on"))


def test_the_client_mode_needs_pgbench_retries():
    check_pgbench_for_mode(RunOptions(mode="client"), "15.8", 15)
    check_pgbench_for_mode(RunOptions(), "14.1", 14)
    with pytest.raises(UserError, match="'client' with pgbench 14.1: it needs pgbench 15"):
        check_pgbench_for_mode(RunOptions(mode="client"), "14.1", 14)


def test_scripts_follow_the_mode_and_the_terminal_times():
    params = _params()
    procedures = transaction_scripts(params, RunOptions())
    assert procedures == render_scripts(params)
    client = transaction_scripts(params, RunOptions(mode="client"))
    assert client["payment"] == client_scripts.payment(params)
    timed = transaction_scripts(params, RunOptions(mode="client", terminal_times="spec"))
    think = "\\set think_ms_{} int(least(-ln(random(1, 1000000) / 1000000.0) * {}, {}))\n"
    assert timed["payment"] == (
        think.format("payment", 12000, 120000)
        + "\\sleep :think_ms_payment ms\n\\set keying_ms_payment 3000\n"
        + "\\sleep :keying_ms_payment ms\n"
        + client["payment"]
    )
    assert timed["new_order"].startswith(think.format("new_order", 12000, 120000))
    assert "\\sleep :keying_ms_new_order ms\nbegin;" not in timed["new_order"]
    keyed = "\\sleep :keying_ms_new_order ms\n" + client["new_order"].split("begin;")[0]
    assert keyed in timed["new_order"]
    assert timed["delivery"].startswith(think.format("delivery", 5000, 50000))
    file, prefix = Path("/s/tpcc.sql"), Path("/s/tpcc")
    assert "-r" in pgbench_args(RunOptions(terminal_times="spec"), file, prefix, 18, {})
    assert "-r" not in pgbench_args(RunOptions(), file, prefix, 18, {})


def test_ten_terminals_per_warehouse_make_at_most_the_specs_tpmc():
    cycle_s = mean_cycle_s(DEFAULT_WEIGHTS)
    assert cycle_s == pytest.approx(20.99)
    tpmc_per_warehouse = TERMINALS_PER_WAREHOUSE * 60 / cycle_s * DEFAULT_WEIGHTS["new_order"] / 100
    assert tpmc_per_warehouse == pytest.approx(12.86, abs=0.005)  # clause 4.2.2's ceiling


def test_response_time_is_the_cycle_less_the_sleeps():
    statements = [
        StatementLatency(18003.0, 0, 0, "\\sleep :keying_ms_new_order ms"),
        StatementLatency(2.5, 0, 0, "select tpcc.new_order(...);"),
        StatementLatency(0.01, 0, 0, "\\set think_ms_new_order int(...)"),
        StatementLatency(11990.0, 0, 0, "\\sleep :think_ms_new_order ms"),
        StatementLatency(2001.0, 0, 0, "\\sleep :keying_ms_stock_level ms"),
    ]
    # one script holds every type: each one's sleeps are told apart by their names
    assert mean_sleep_ms(statements, "new_order") == 18003.0 + 11990.0
    assert mean_sleep_ms(statements, "stock_level") == 2001.0
    assert math.isnan(mean_sleep_ms(statements[1:3], "new_order"))

    def logged(latency_us):
        return LoggedTransaction(0, 1, latency_us, 0, 1000, 0)

    everything = [logged(30_000_000), logged(29_999_000), logged(61_000_000)]
    cycles = mean_latency_ms(everything, ["new_order"])
    assert cycles == {"new_order": pytest.approx(40_333.0)}
    # the counted ones are those within the duration; the sleeps' means cover every one
    summary = summarise(everything[:2], ["new_order"], 60.0)
    assert summary.by_type["new_order"].latency_ms["mean"] == pytest.approx(29_999.5)
    timed = response_times(summary, cycles, {"new_order": 40_326.5})
    assert timed.by_type["new_order"].latency_ms == {"mean": pytest.approx(6.5)}
    assert timed.tpmc == summary.tpmc
    assert response_times(summary, {}, {"new_order": 1.0}).by_type["new_order"].latency_ms == {}


def test_a_timed_run_counts_what_ended_within_its_duration():
    def ended(at_s, latency_us):
        return LoggedTransaction(0, 1, latency_us, 0, at_s, 0)

    # the first started at 100 s; the last ended after a terminal's sleep ran past 160 s
    logged = [ended(105, 5_000_000), ended(160, 1_000), ended(161, 20_000_000)]
    assert within(logged, 60.0) == logged[:2]
    assert within([], 60.0) == []


def test_spec_takes_the_mode_and_terminal_times():
    from pgcachelab.spec import parse_spec

    text = 'name = "t"\nworkload = "tpcc"\n[tpcc]\nmode = "client"\nterminal_times = "spec"\n'
    [point] = parse_spec(text, Path("t.toml")).points()
    assert (point.workload.mode, point.workload.terminal_times) == ("client", "spec")
    options = run_options(point.workload.changed(threads=1))
    assert (options.mode, options.terminal_times) == ("client", "spec")
    with pytest.raises(UserError, match="mode"):
        parse_spec(text.replace('"client"', '"server"'), Path("t.toml"))
    swept = parse_spec(
        'name = "t"\nworkload = "tpcc"\n[sweep]\nmode = ["procedures", "client"]\n',
        Path("t.toml"),
    )
    assert [p.workload.mode for p in swept.points()] == ["procedures", "client"]


def test_the_text_report_names_the_mode_and_the_terminal_times():
    def logged(script, latency_us):
        return LoggedTransaction(0, 1, latency_us, script, 1000, 0)

    summary = summarise([logged(0, 30_000_000), logged(1, 15_000_000)],
                        ["new_order", "payment"], 60.0)  # fmt: skip
    summary = response_times(
        summary,
        {"new_order": 30_000.0, "payment": 15_000.0},
        {"new_order": 29_996.0, "payment": 14_998.0},
    )
    options = RunOptions(mode="client", terminal_times="spec")
    run = TpccRun(summary=summary, warehouses=1, c_last_load=1, c_last_run=70, rollbacks=0,
                  retries=0, failures_by_kind={}, client_cpu_s=0.01, rate_limited=False,
                  pgbench_version="18.1", options=options, settings={}, checks=[],
                  script_names=["new_order", "payment"],
                  mix=check_mix({"new_order": 1, "payment": 1}, standard=False))  # fmt: skip
    text = format_run(run)
    assert "mode client, terminal times spec" in text
    assert "latencies are mean response times" in text
    [new_order_row] = [line for line in text.splitlines() if line.startswith("new_order")]
    assert new_order_row.split()[3:] == ["4.00", "-", "-", "-", "-", "-"]
    assert "transactions are sent statement by statement" in text
    assert json.loads(run_json(run))["differences"] == list(differences("client", "spec"))


def test_a_run_too_short_for_one_new_order_is_refused_before_it_starts():
    """Issue 48, item 10: `tpcc run --duration 5 --terminal-times spec` ran, exited 0 with tpmC
    0; no New-Order ends before its 18 s keying time."""
    with pytest.raises(UserError, match="shorter than one New-Order's keying time") as refused:
        check_run_options(RunOptions(duration_s=5, terminal_times="spec"))
    assert refused.value.message.startswith("--duration: invalid value 5 with --terminal-times")
    assert refused.value.hint.startswith("give --duration 4min or more")
    for fine in (
        RunOptions(duration_s=18, terminal_times="spec"),
        RunOptions(duration_s=5, terminal_times="off"),
        RunOptions(transactions=1, terminal_times="spec"),  # counted: it lasts what it takes
        RunOptions(duration_s=5, terminal_times="spec", weights=parse_weights("0,100,0,0,0")),
    ):
        check_run_options(fine)
    from pgcachelab.spec import parse_spec

    text = 'name = "t"\nworkload = "tpcc"\n[tpcc]\nduration = "5s"\nterminal_times = "spec"\n'
    with pytest.raises(UserError, match=r"tpcc\.duration: invalid value 5 with terminal_times"):
        parse_spec(text, Path("t.toml"))
    swept = text.replace('duration = "5s"\n', "") + '[sweep]\nduration = ["5min", "5s"]\n'
    with pytest.raises(UserError, match="shorter than one New-Order's keying time"):
        parse_spec(swept, Path("t.toml"))


def test_a_run_that_completed_no_new_order_says_so_and_writes_no_nan():
    """Nothing ended within the duration: no rollback share ("nan%" before), no response time
    for a type that completed none, JSON without NaN, and the reason a point fails with."""
    summary = response_times(
        summarise([], ["new_order", "payment"], 20.0),
        {"new_order": 30_000.0},  # pgbench's per-command report counts the late ones
        {"new_order": 29_996.0},
    )
    options = RunOptions(duration_s=20, terminal_times="spec")
    run = TpccRun(summary=summary, warehouses=1, c_last_load=1, c_last_run=70, rollbacks=0,
                  retries=0, failures_by_kind={}, client_cpu_s=0.01, rate_limited=False,
                  pgbench_version="18.1", options=options, settings={}, checks=[],
                  script_names=["new_order", "payment"],
                  mix=check_mix({}, standard=True))  # fmt: skip
    assert summary.by_type["new_order"].latency_ms == {}
    text = format_run(run)
    assert "nan" not in text.lower()
    assert "New-Orders 0 (rolled back 0, -)" in text

    def refuse_constant(name):
        raise AssertionError(f"{name} in JSON")

    document = json.loads(run_json(run), parse_constant=refuse_constant)
    assert document["rollback_share"] is None
    assert no_new_order(run) == (
        "no New-Order completed within the run (20 s): tpmC cannot be measured"
    )
    assert no_new_order(dataclasses.replace(run, options=RunOptions(
        weights=parse_weights("0,100,0,0,0")))) is None  # fmt: skip


def test_a_phase_clock_adds_its_phases_up_to_its_total():
    from pgcachelab.workloads.tpcc.loader import PhaseClock

    clock = PhaseClock(already_s=0.25)
    clock.lap("first")
    clock.lap("second")
    clock.lap("first")  # a phase met twice adds up
    assert list(clock.seconds) == ["start-up", "first", "second"]
    assert clock.seconds["start-up"] == 0.25
    assert sum(clock.seconds.values()) == pytest.approx(clock.total_s, abs=1e-9)
    assert clock.total_s >= 0.25
