"""Run the TPC-C mix with pgbench against a loaded database, then check it."""

import math
import random
import resource
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pgcachelab.clusters.binaries import parse_version
from pgcachelab.clusters.client import one_row
from pgcachelab.errors import UserError
from pgcachelab.machine import owned
from pgcachelab.progress import Progress
from pgcachelab.quantities import INT_MAX, MAX_RATE, NumberError, number, whole_number
from pgcachelab.workloads.pgbench import run_pgbench
from pgcachelab.workloads.pgbench_log import parse_transaction_log
from pgcachelab.workloads.pgbench_output import parse_progress_line
from pgcachelab.workloads.rate_schedule import kept_to_schedule
from pgcachelab.workloads.tpcc import client_scripts
from pgcachelab.workloads.tpcc.checks import CheckResult, require_consistent
from pgcachelab.workloads.tpcc.deck import (
    MixCheck,
    check_mix,
    deck_of,
    dispatcher,
    initial_variables,
    is_standard,
    label,
)
from pgcachelab.workloads.tpcc.loader import LoadInfo, read_load_info
from pgcachelab.workloads.tpcc.params import (
    DEFAULT_WEIGHTS,
    MODES,
    TERMINAL_TIMES,
    TRANSACTIONS,
    check_choice,
    check_warehouses,
    choose_c_last_run,
)
from pgcachelab.workloads.tpcc.results import (
    SERIES_INTERVAL_S,
    TpccSummary,
    logged_span_s,
    mean_latency_ms,
    response_times,
    summarise,
    within,
)
from pgcachelab.workloads.tpcc.scripts import ScriptParameters, render_scripts
from pgcachelab.workloads.tpcc.terminal_times import (
    mean_sleep_ms,
    suggested_duration_s,
    too_short_for_a_new_order,
    with_terminal_times,
)

LOG_PREFIX = "tpcc"
# The client mode needs pgbench's retries: its stock updates go in line order, so two
# New-Orders can deadlock, and pgbench before 15 would abort the losing terminal.
CLIENT_MODE_MIN_PGBENCH = 15


@dataclass(frozen=True)
class RunOptions:
    clients: int = 4
    threads: int = 2
    duration_s: int = 60
    transactions: int | None = None  # per terminal (BenchmarkSQL's runTxnsPerTerminal): -t, not -T
    weights: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    home_warehouse: bool = True
    rate_tpm: float | None = None  # all terminals together, transactions per minute
    max_tries: int = 10  # serialization failures and deadlocks (pgbench 15+)
    warehouses: int | None = None  # the warehouse count the run expects, None: as loaded
    mode: str = "procedures"  # one of params.MODES
    terminal_times: str = "off"  # one of params.TERMINAL_TIMES


def check_run_options(options: RunOptions) -> RunOptions:
    """Refuse bad values before anything starts."""
    if options.warehouses is not None:
        check_warehouses(options.warehouses)
    check_choice(options.mode, MODES, "--mode")
    check_choice(options.terminal_times, TERMINAL_TIMES, "--terminal-times")
    for option, value in (
        ("--clients", options.clients),
        ("--threads", options.threads),
        ("--duration", options.duration_s),
        ("--max-tries", options.max_tries),
        ("--transactions", 1 if options.transactions is None else options.transactions),
    ):
        whole_number(value, option, 1, INT_MAX, f"{option} 4")  # pgbench's C ints
    if options.terminal_times == "spec" and options.transactions is None:
        too_short = too_short_for_a_new_order(options.weights, options.duration_s)
        if too_short:
            raise UserError(
                f"--duration: invalid value {options.duration_s!r} with --terminal-times spec:"
                f" {too_short}",
                f"give --duration {suggested_duration_s(options.weights) // 60}min or more (ten"
                " of a terminal's mean cycles), or --terminal-times off",
            )
    if options.rate_tpm is not None:
        check_rate_tpm(options.rate_tpm)
    return options


def check_rate_tpm(value: str | float) -> float:
    """--rate-tpm: a finite number of transactions per minute above 0 (nan and inf were
    measured: issue 48)."""
    try:
        return number(value, "--rate-tpm", 0, MAX_RATE, above=True)
    except NumberError as error:
        raise UserError(
            error.message,
            f"{error.allowed}; leave it out for no limit, or e.g. --rate-tpm 300 (BenchmarkSQL's"
            " default)",
        ) from None


@dataclass
class TpccRun:
    summary: TpccSummary
    warehouses: int
    c_last_load: int
    c_last_run: int
    rollbacks: int
    retries: int | None  # None when the pgbench cannot retry (before 15)
    failures_by_kind: dict[str, int]
    client_cpu_s: float
    rate_limited: bool
    pgbench_version: str
    options: RunOptions
    settings: dict[str, str]
    checks: list[CheckResult]
    script_names: list[str]  # the deck's transactions: script numbers once labelled
    mix: MixCheck  # the achieved mix against clause 5.2.3's minimums

    @property
    def rollback_share(self) -> float:
        new_orders = self.summary.new_orders
        return self.rollbacks / new_orders if new_orders else math.nan

    @property
    def client_cpu_ms_per_transaction(self) -> float:
        completed = self.summary.completed
        return self.client_cpu_s * 1000.0 / completed if completed else math.nan


def no_new_order(run: "TpccRun") -> str | None:
    """Why the run gives no tpmC, or None: a mix with New-Orders in which none completed
    measured nothing (too short a run, or a server that answered none in time)."""
    if run.options.weights.get("new_order", 0) <= 0 or run.summary.new_orders:
        return None
    length = (
        f"{run.options.transactions} transactions per terminal"
        if run.options.transactions
        else f"{run.options.duration_s} s"
    )
    return f"no New-Order completed within the run ({length}): tpmC cannot be measured"


def reached_rate_limit(completed: int, rate_tpm: float, duration_s: float) -> bool:
    """Did the run do what its limit allowed (so the limit, not the server, set the figure)?

    pgbench schedules transactions as a Poisson process at the rate: over the run it lets
    through about rate x duration of them, give or take the square root of that.
    """
    return kept_to_schedule(completed, rate_tpm / 60.0, duration_s)


def transaction_scripts(params: ScriptParameters, options: RunOptions) -> dict[str, str]:
    """Each transaction's pgbench script, in TRANSACTIONS order, for the run's mode."""
    if options.mode == "client":
        scripts = {name: client_scripts.RENDERERS[name](params) for name in TRANSACTIONS}
    else:
        scripts = render_scripts(params)
    if options.terminal_times == "spec":
        scripts = {name: with_terminal_times(name, text) for name, text in scripts.items()}
    return scripts


def run_script(params: ScriptParameters, options: RunOptions) -> tuple[str, dict[str, int]]:
    """The run's one pgbench script, dealing the deck of its weights, and that deck."""
    cards = deck_of(options.weights)
    return dispatcher(cards, transaction_scripts(params, options)), cards


def check_pgbench_for_mode(options: RunOptions, version: str, major: int) -> None:
    if options.mode == "client" and major < CLIENT_MODE_MIN_PGBENCH:
        raise UserError(
            f"--mode: invalid value 'client' with pgbench {version}: it needs pgbench"
            f" {CLIENT_MODE_MIN_PGBENCH} or later to retry deadlocks",
            "use --mode procedures, or a newer pgbench (pgcachelab pg install 18)",
        )


def pgbench_version(pgbench: Path) -> tuple[str, int]:
    output = subprocess.run([str(pgbench), "--version"], capture_output=True, text=True).stdout
    return parse_version(output)


def pgbench_args(
    options: RunOptions,
    script_file: Path,
    log_prefix: Path,
    pgbench_major: int,
    variables: dict[str, int],
) -> list[str]:
    """pgbench's options for the run's one dispatcher script and its deck's `variables`."""
    args = [
        "-n",
        "-M",
        "prepared",
        "-c",
        str(options.clients),
        "-j",
        str(min(options.threads, options.clients)),
        *(
            ["-t", str(options.transactions)]
            if options.transactions
            else ["-T", str(options.duration_s)]
        ),
        "-P",
        str(int(SERIES_INTERVAL_S)),
        "--log",
        f"--log-prefix={log_prefix}",
        "-f",
        str(script_file),
    ]
    for name, value in variables.items():
        args += ["-D", f"{name}={value}"]
    if options.rate_tpm is not None:
        args += ["-R", f"{options.rate_tpm / 60.0:.6g}"]
    if pgbench_major >= 15 and options.max_tries > 1:
        args += ["--max-tries", str(options.max_tries)]
    if options.terminal_times == "spec":
        args.append("-r")  # the sleeps' means, to take out of the logged latency
    return args


def _rollbacks(conn: psycopg.Connection) -> int:
    last_value, is_called = one_row(
        conn.execute("select last_value, is_called from tpcc.rollbacks")
    )
    return last_value if is_called else 0


def require_load(conn: psycopg.Connection, warehouses: int | None, where: str) -> LoadInfo:
    """The database's load; a UserError when it has none or another warehouse count."""
    info = read_load_info(conn)
    if info is None or not info.complete:
        raise UserError(
            f"no complete TPC-C load in {where}",
            f"load it first: pgcachelab tpcc load --warehouses {warehouses or 1} --dsn ...",
        )
    if warehouses is not None and warehouses != info.warehouses:
        raise UserError(
            f"--warehouses: invalid value {warehouses}: {where} was loaded with"
            f" {info.warehouses} warehouses",
            f"run with --warehouses {info.warehouses}, or reload with"
            f" pgcachelab tpcc load --warehouses {warehouses}",
        )
    return info


def run(
    target,
    pgbench: Path,
    options: RunOptions,
    progress: Progress,
    where: str,
    rng: random.Random | None = None,
    keep_logs_in: Path | None = None,
    settings: dict | None = None,
) -> TpccRun:
    """One measurement: pgbench runs the mix, then the consistency checks run.

    `keep_logs_in` receives a copy of pgbench's per-transaction logs (for test captures);
    `settings` reach pgbench's sessions on an existing server (a managed one has them).
    """
    check_run_options(options)
    with target.connect() as conn:
        info = require_load(conn, options.warehouses, where)
        rollbacks_before = _rollbacks(conn)
    c_last_run = choose_c_last_run(info.constants.c_last_load, rng or random.Random())
    params = ScriptParameters(info.warehouses, info.constants, c_last_run, options.home_warehouse)
    version, major = pgbench_version(pgbench)
    check_pgbench_for_mode(options, version, major)
    # the deck's draws: a seed per run, so that two runs deal different decks
    deck_seed = (rng or random.Random()).randrange(1 << 31)
    with owned.scratch_dir("pgcachelab-tpcc-") as scratch_dir:
        script_text, cards = run_script(params, options)
        script_file = scratch_dir / "mix.sql"  # not tpcc.*, the names of pgbench's logs
        script_file.write_text(script_text)
        script_names = list(cards)
        log_prefix = scratch_dir / LOG_PREFIX
        args = pgbench_args(
            options, script_file, log_prefix, major, initial_variables(cards, deck_seed)
        )
        progress.start(
            0 if options.transactions else math.ceil(options.duration_s / SERIES_INTERVAL_S), 0
        )
        progress.begin("tpcc run")

        def on_line(line: str) -> None:
            sample = parse_progress_line(line)
            if sample is not None:
                progress.finished(
                    f"tpcc run: {sample.elapsed_s:.0f} s, {sample.tps * 60:.0f} tpm total"
                )

        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        pgbench_run = run_pgbench(
            pgbench, args, target.pgbench_target(settings or {}), on_line=on_line
        )
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        log_files = sorted(scratch_dir.glob(f"{LOG_PREFIX}.*"))
        logs = [path.read_text() for path in log_files]
        if keep_logs_in is not None:
            for path in log_files:
                shutil.copy(path, keep_logs_in / path.name)
    # pgbench logs script 0 for every transaction: the deck, dealt again, names each one
    logged = label([t for text in logs for t in parse_transaction_log(text)], cards, deck_seed)
    transactions = logged
    if options.terminal_times == "spec" and not options.transactions:
        transactions = within(logged, options.duration_s)
    # with -t the run lasts as long as it takes: its length comes from the log
    duration_s = logged_span_s(transactions) if options.transactions else options.duration_s
    summary = summarise(transactions, script_names, float(duration_s))
    result = pgbench_run.result
    if options.terminal_times == "spec":
        statements = result.scripts[0].statements if result.scripts else []
        sleeps = {name: mean_sleep_ms(statements, name) for name in script_names}
        summary = response_times(summary, mean_latency_ms(logged, script_names), sleeps)
    with target.connect() as conn:
        rollbacks = _rollbacks(conn) - rollbacks_before
        checks = require_consistent(conn, "after the run")
    client_cpu_s = (cpu_after.ru_utime - cpu_before.ru_utime) + (
        cpu_after.ru_stime - cpu_before.ru_stime
    )
    rate_limited = options.rate_tpm is not None and reached_rate_limit(
        summary.completed, options.rate_tpm, summary.duration_s
    )
    return TpccRun(
        summary=summary,
        warehouses=info.warehouses,
        c_last_load=info.constants.c_last_load,
        c_last_run=c_last_run,
        rollbacks=rollbacks,
        retries=result.total_retries if major >= 15 else None,
        failures_by_kind=result.failures_by_kind,
        client_cpu_s=client_cpu_s,
        rate_limited=rate_limited,
        pgbench_version=version,
        options=options,
        settings=dict(settings or {}),
        checks=checks,
        script_names=script_names,
        mix=check_mix(
            {name: stats.completed for name, stats in summary.by_type.items()},
            is_standard(cards),
        ),
    )
