"""`pgcachelab tpcc load` and `pgcachelab tpcc run`: the TPC-C-like workload (seed 002).

Without --dsn both work on a throwaway cluster the lab creates and removes before it exits,
so `tpcc run` loads, runs, checks and reports in one go, and `tpcc load` measures a load.
With --dsn they load into and run against an existing server, which keeps the data.
"""

import dataclasses
import os
import random
import sys
from typing import Annotated

import typer

from pgcachelab.cli.options import (
    JsonOption,
    format_option,
    number_option,
    output_format,
    whole_number_option,
)
from pgcachelab.errors import UserError
from pgcachelab.printable import has_control_characters
from pgcachelab.quantities import INT_MAX, MAX_RATE
from pgcachelab.workloads.tpcc.params import MAX_WAREHOUSES

HELP = "TPC-C-like workload: load the nine tables, run the five transactions."

MAX_WORKERS = 64
Warehouses = Annotated[
    int,
    whole_number_option(
        "--warehouses", 1, MAX_WAREHOUSES, "--warehouses 2", "Warehouses (about 100 MB each)."
    ),
]
Workers = Annotated[
    int,
    whole_number_option("--workers", 1, MAX_WORKERS, "--workers 2", "Parallel loading sessions."),
]


def _count(name: str, example: str, help: str):
    """An option pgbench takes as a C int: 1 to INT_MAX."""
    return whole_number_option(name, 1, INT_MAX, f"{name} {example}", help)


Dsn = Annotated[
    str | None, typer.Option(help="Load into / run against this existing server instead.")
]
PgBin = Annotated[
    str | None,
    typer.Option(help="bin directory (or major version) of the managed PostgreSQL."),
]


def _check_target_options(dsn: str | None, pg_bin: str | None) -> None:
    from pgcachelab.clusters.targets import check_dsn_given

    check_dsn_given(dsn)
    if dsn is not None and pg_bin is not None:
        raise UserError(
            "--dsn and --pg-bin exclude each other",
            "give --dsn for an existing server, --pg-bin for a managed one",
        )


def _check_workers(workers: int) -> None:
    if not 1 <= workers <= MAX_WORKERS:
        raise UserError(
            f"--workers: invalid value {workers!r}: must be between 1 and {MAX_WORKERS}",
            "e.g. --workers 2 (one per core)",
        )


SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="A server setting for the run, name=value; repeatable."),
]


def parse_set_options(values: list[str] | None) -> dict[str, str]:
    """`--set name=value` options as a dict, in order; the last one of a name wins."""
    settings = {}
    for text in values or []:
        name, equals, value = text.partition("=")
        if not equals or not name.strip():
            raise UserError(
                f"--set: invalid value {text!r}",
                "write --set name=value, e.g. --set synchronous_commit=off",
            )
        if has_control_characters(text):
            raise UserError(
                f"--set: invalid value {text!r}: a server setting cannot hold a newline or "
                "other control character",
                "remove it from the value",
            )
        settings[name.strip()] = value.strip()
    return settings


def check_settings(settings: dict[str, str], target) -> None:
    """Names and values against the server's catalogue, before any data is written. With
    --dsn only settings a session may change are allowed: the lab never reconfigures it."""
    from pgcachelab.clusters.guc import check_setting_value

    if not settings:
        return
    catalogue, contexts = target.catalogue(), target.applicable_contexts()
    for name, value in settings.items():
        info = catalogue.get(name)
        if info is None or info.context == "internal":
            raise UserError(
                f"--set: unknown or read-only server setting {name!r}",
                "see pg_settings for the names",
            )
        if contexts is not None and info.context not in contexts:
            raise UserError(
                f"--set: {name!r} needs a restart or reload of the server given by --dsn,"
                " which the lab never changes",
                "run without --dsn so the lab manages its own cluster, or drop the setting",
            )
        why = check_setting_value(info, value)
        if why:
            raise UserError(f"--set: invalid value {value!r} for {name}: {why}", "fix the value")


def _managed_target(pg_bin: str | None):
    from pgcachelab.clusters.targets import ManagedTarget

    return ManagedTarget(pg_bin)


def _apply(target, settings: dict) -> None:
    """Start a managed cluster with `settings` (a no-op for --dsn: pgbench's sessions get
    them); a server that will not start with them is bad input, and nothing is left behind."""
    from pgcachelab.clusters.managed import ClusterError

    try:
        target.apply(settings)
    except ClusterError as error:
        raise UserError(
            f"--set: the server did not start with {settings}: {error}", "fix or drop the setting"
        ) from None


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _fail(message: str) -> None:
    """A failed measurement (not bad input): one line, exit 1."""
    print(f"pgcachelab: {message}", file=sys.stderr)
    raise typer.Exit(1)


def load(
    warehouses: Warehouses = 1,
    workers: Workers = 2,
    dsn: Dsn = None,
    pg_bin: PgBin = None,
) -> None:
    """Load W warehouses; without --dsn into a throwaway cluster (a load benchmark)."""
    import psycopg

    from pgcachelab.cli.progress import make_progress
    from pgcachelab.studies.tpcc.text import format_load
    from pgcachelab.workloads.tpcc import loader
    from pgcachelab.workloads.tpcc.checks import ConsistencyError
    from pgcachelab.workloads.tpcc.params import check_warehouses

    clock = loader.PhaseClock(_seconds_since_start())
    check_warehouses(warehouses)
    _check_workers(workers)
    _check_target_options(dsn, pg_bin)
    if dsn is not None:
        from pgcachelab.clusters.targets import ExistingTarget

        target = ExistingTarget(dsn)
    else:
        target = _managed_target(pg_bin)
        typer.echo(
            "tpcc load: into a throwaway cluster, removed at the end (use --dsn to keep the data)",
            err=True,
        )
    server_phase = "server connection" if dsn is not None else "cluster creation"
    try:
        target.open(lambda work_dir: None)
        _apply(target, {})
        clock.lap(server_phase)
        with make_progress() as progress:
            result = loader.load(target.connect, warehouses, workers, progress, clock=clock)
    except ConsistencyError as error:
        _fail(str(error))
    except psycopg.Error as error:
        _fail(f"the load failed and was removed: {_first_line(error)}")
    finally:
        target.close()
    if dsn is None:
        clock.lap("cluster removal")
    # the whole command, its phases end to end (issue 51: the load alone said 8.8 s of 14.3 s)
    whole = dataclasses.replace(result, seconds_by_phase=dict(clock.seconds), total_s=clock.total_s)
    typer.echo(format_load(whole))


def _seconds_since_start() -> float:
    """How long this process has run (the interpreter and imports before the command), from
    /proc; 0 where it cannot be read."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            # the fields after the command's closing parenthesis; starttime is field 22
            started_ticks = int(stat.read().rpartition(")")[2].split()[19])
            uptime_s = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime_s - started_ticks / os.sysconf("SC_CLK_TCK"))


def run(
    warehouses: Annotated[
        int | None,
        whole_number_option(
            "--warehouses",
            1,
            MAX_WAREHOUSES,
            "--warehouses 2",
            "Warehouses; with --dsn it must match the load.",
        ),
    ] = None,
    clients: Annotated[int, _count("--clients", "4", "Terminals (pgbench clients).")] = 4,
    threads: Annotated[int, _count("--threads", "2", "pgbench threads.")] = 2,
    duration: Annotated[
        str | None,
        typer.Option(help='Measurement time: "60s", "2min", or seconds.', show_default="60s"),
    ] = None,
    transactions: Annotated[
        int | None,
        _count(
            "--transactions",
            "4",
            "Transactions per terminal instead of a duration (runTxnsPerTerminal).",
        ),
    ] = None,
    weights: Annotated[
        str,
        typer.Option(help="New-Order,Payment,Order-Status,Delivery,Stock-Level percentages."),
    ] = "45,43,4,4,4",
    home_warehouse: Annotated[
        bool,
        typer.Option(
            "--home-warehouse/--any-warehouse",
            help="Bind each terminal to one warehouse (terminalWarehouseFixed).",
        ),
    ] = True,
    rate_tpm: Annotated[
        float | None,
        number_option(
            "--rate-tpm",
            0,
            MAX_RATE,
            "--rate-tpm 300",
            "Limit all terminals together to this many per minute.",
            above=True,
        ),
    ] = None,
    max_tries: Annotated[
        int,
        _count(
            "--max-tries", "10", "Tries for serialization failures and deadlocks (pgbench 15+)."
        ),
    ] = 10,
    mode: Annotated[
        str,
        typer.Option(help="procedures: one server-side call per transaction; client: its SQL."),
    ] = "procedures",
    terminal_times: Annotated[
        str, typer.Option(help="spec: the keying and think times of clause 5.2.5; off: none.")
    ] = "off",
    workers: Workers = 2,
    dsn: Dsn = None,
    pg_bin: PgBin = None,
    set_options: SetOption = None,
    format: Annotated[str | None, format_option("text or json (default text).")] = None,
    json_output: JsonOption = False,
) -> None:
    """Run the mix; without --dsn: create a cluster, load, run, check, report, remove it."""
    import psycopg

    from pgcachelab.cli.progress import make_progress
    from pgcachelab.exporters import json, text
    from pgcachelab.studies.tpcc.text import format_load
    from pgcachelab.workloads.pgbench import PgbenchError
    from pgcachelab.workloads.tpcc import driver, loader
    from pgcachelab.workloads.tpcc.checks import ConsistencyError
    from pgcachelab.workloads.tpcc.params import (
        check_warehouses,
        parse_duration_option,
        parse_weights,
    )

    offered = {"text": text.tpcc_run, "json": json.tpcc_run}
    export = output_format("tpcc run", format, json_output, offered, "text")
    if transactions is not None and duration is not None:
        raise UserError(
            f"--duration {duration!r} with --transactions {transactions}: a run is timed or "
            "counted, not both",
            "give one: --transactions N runs N per terminal, --duration a time",
        )
    options = driver.check_run_options(
        driver.RunOptions(
            clients=clients,
            threads=threads,
            duration_s=parse_duration_option(duration) if duration is not None else 60,
            transactions=transactions,
            weights=parse_weights(weights),
            home_warehouse=home_warehouse,
            rate_tpm=rate_tpm,
            max_tries=max_tries,
            warehouses=warehouses,
            mode=mode,
            terminal_times=terminal_times,
        )
    )
    _check_workers(workers)
    _check_target_options(dsn, pg_bin)
    settings = parse_set_options(set_options)
    load_result = None
    if dsn is not None:
        from pgcachelab.clusters.targets import ExistingTarget

        target = ExistingTarget(dsn)
        where = target.safe_description()
        check_settings(settings, target)
        with target.connect() as conn:  # refuse before pgbench starts
            driver.require_load(conn, warehouses, where)
    else:
        check_warehouses(warehouses or 1)
        target = _managed_target(pg_bin)
        where = "the managed cluster"
        check_settings(settings, target)
    try:
        target.open(lambda work_dir: None)
        _apply(target, settings)
        with make_progress() as progress:
            if dsn is None:
                load_result = loader.load(target.connect, warehouses or 1, workers, progress)
                progress.note(format_load(load_result))
            result = driver.run(
                target,
                target.pgbench(),
                options,
                progress,
                where,
                random.Random(),
                settings=settings,
            )
    except (ConsistencyError, PgbenchError) as error:
        _fail(str(error))
    except psycopg.Error as error:
        _fail(f"the run failed: {_first_line(error)}")
    finally:
        target.close()
    export(result, load_result, sys.stdout)
    nothing_measured = driver.no_new_order(result)
    if nothing_measured:
        _fail(nothing_measured)
