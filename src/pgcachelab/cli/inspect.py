"""`pgcachelab inspect`: where a server's data is cached.

inspect looks at one server, named explicitly: `--dsn` for any server, or `--work-dir` for a
cluster the lab manages (a running experiment's work directory, or one a test made). There is
no default: guessing a server from the environment would inspect the wrong one silently.
"""

import sys
import time
from pathlib import Path
from typing import Annotated

import psycopg
import typer

from pgcachelab.cli.options import JsonOption, format_option, output_format
from pgcachelab.errors import UserError
from pgcachelab.probes.datadir import (  # noqa: F401 (is_local_host: part of this module's API)
    fill_os_cache,
    is_local_host,
    local_data_dir,
    os_cache_readable,
)
from pgcachelab.probes.datadir import os_cache_note as _os_cache_note
from pgcachelab.probes.datadir import reason as _reason
from pgcachelab.quantities import INT_MAX, number, whole_number

METHOD_CHOICES = ("auto", "extension", "pg_buffercache", "summary")
_DSN_HELP = "Inspect this server (a libpq connection string or URI)."
_WORK_DIR_HELP = "Inspect the lab's managed cluster in this work directory (holds pgdata/)."


# -- pure: option values ---------------------------------------------------------------------


def parse_top(value: str | int) -> int:
    """--top: ASCII digits from 0 (all) to INT_MAX (quantities)."""
    return whole_number(value, "--top", 0, INT_MAX, "--top 20 (0: all)")


def parse_watch(value: str | float | None) -> float | None:
    """--watch: seconds from 0.1 to a day; not "nan" nor "inf", which click's float() took."""
    if value is None:
        return None
    return number(value, "--watch", 0.1, 86400, example="--watch 1")


def parse_method(value: str) -> str:
    if value not in METHOD_CHOICES:
        raise UserError(
            f"--method: unknown method {value!r}", f"use one of {', '.join(METHOD_CHOICES)}"
        )
    return value


def parse_mode(value: str) -> str:
    from pgcachelab.probes.buffercache import MODES

    if value not in MODES:
        raise UserError(f"--mode: unknown mode {value!r}", f"use one of {', '.join(MODES)}")
    return value


def parse_settings_file(text: str) -> dict[str, str]:
    """`name = 'value'` lines of the lab's pgcachelab.conf (quotes doubled inside values)."""
    settings = {}
    for line in text.splitlines():
        name, equals, value = line.partition("=")
        if not equals or line.lstrip().startswith("#"):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1].replace("''", "'").replace("\\\\", "\\")
        settings[name.strip()] = value
    return settings


# -- the server and its data directory -------------------------------------------------------


def _connect_work_dir(work_dir: Path, dbname: str) -> tuple[psycopg.Connection, Path]:
    from pgcachelab.clusters.cluster_disk import data_dir_in
    from pgcachelab.clusters.managed import LAB_SUPERUSER, SETTINGS_FILE
    from pgcachelab.user_files import read_user_text

    data_dir = data_dir_in(work_dir)
    settings_path = data_dir / SETTINGS_FILE
    hint = "name the work directory of a cluster the lab runs, or use --dsn"
    try:
        # a regular file of the lab's, read with a cap: not a FIFO or a device planted there
        settings = parse_settings_file(read_user_text(settings_path, "--work-dir:", hint))
    except (OSError, UnicodeDecodeError):
        raise UserError(
            f"--work-dir: no managed cluster in {str(work_dir)!r} (no {settings_path.name})",
            hint,
        ) from None
    try:
        conn = psycopg.connect(
            host=settings.get("unix_socket_directories", "").split(",")[0].strip(),
            port=settings.get("port"),
            user=LAB_SUPERUSER,
            dbname=dbname,
            autocommit=True,
        )
    except psycopg.OperationalError as error:
        raise UserError(
            f"--work-dir: cannot connect to the cluster in {str(work_dir)!r}: {_reason(error)}",
            "is its server running? inspect needs a started cluster",
        ) from None
    return conn, data_dir


def _connect_dsn(dsn: str) -> psycopg.Connection:
    from pgcachelab.clusters.targets import check_dsn_given
    from pgcachelab.secrets import parse_failure, redact

    check_dsn_given(dsn)
    try:
        return psycopg.connect(dsn, autocommit=True)
    except (psycopg.ProgrammingError, UnicodeDecodeError) as error:
        raise UserError(
            f"--dsn: not a connection string: {parse_failure(error, dsn)}",
            'write e.g. "host=/var/run/postgresql dbname=bench" or postgresql://host/db',
        ) from None
    except psycopg.OperationalError as error:
        raise UserError(
            f"--dsn: cannot connect: {redact(_reason(error), dsn)}",
            "check that the server runs and the connection string is right",
        ) from None


def resolve_method(conn: psycopg.Connection, requested: str, mode: str) -> str:
    from pgcachelab.probes.buffercache import available_methods, choose_method

    database = conn.info.dbname
    method = choose_method(requested, available_methods(conn))
    if method is None:
        if requested == "auto":
            raise UserError(
                f"neither pg_cachelab nor pg_buffercache is created in database {database!r}",
                "CREATE EXTENSION pg_cachelab (after: pgcachelab extension install),"
                " or CREATE EXTENSION pg_buffercache",
            )
        needs = {
            "extension": "CREATE EXTENSION pg_cachelab (after: pgcachelab extension install)",
            "pg_buffercache": "CREATE EXTENSION pg_buffercache",
            "summary": "PostgreSQL 16+ and CREATE EXTENSION pg_buffercache",
        }
        raise UserError(
            f"--method: {requested!r} is not available in database {database!r}",
            f"it needs {needs[requested]}; or use --method auto",
        )
    if mode != "consistent" and method != "extension":
        raise UserError(
            f"--mode: {mode!r} exists only for the extension method, not {method!r}",
            "drop --mode, or create pg_cachelab and use --method extension",
        )
    return method


def _collect(conn: psycopg.Connection, method: str, mode: str):
    """One snapshot; the server's refusals become user errors (no traceback)."""
    from pgcachelab.probes.buffercache import collect

    try:
        return collect(conn, method, mode)
    except psycopg.errors.InsufficientPrivilege as error:
        raise UserError(
            f"role {conn.info.user!r} may not read shared_buffers ({method}): {_reason(error)}",
            f"GRANT pg_monitor TO {conn.info.user}, or connect as a superuser",
        ) from None
    except psycopg.errors.InvalidParameterValue as error:
        raise UserError(
            f"--mode: the pg_cachelab library on this server does not know {mode!r}: "
            f"{_reason(error)}",
            "rebuild it with `pgcachelab extension install` (a newer library), or use a mode "
            "it names",
        ) from None
    except psycopg.OperationalError as error:
        raise UserError(
            f"lost the server while inspecting it: {_reason(error)}",
            "check that it still runs, then inspect again",
        ) from None


# -- the commands ----------------------------------------------------------------------------


def inspect(
    dsn: Annotated[str | None, typer.Option(help=_DSN_HELP)] = None,
    work_dir: Annotated[Path | None, typer.Option(help=_WORK_DIR_HELP)] = None,
    dbname: Annotated[str, typer.Option(help="Database to name relations in (--work-dir).")] = (
        "postgres"
    ),
    method: Annotated[str, typer.Option(help="auto, extension, pg_buffercache or summary.")] = (
        "auto"
    ),
    mode: Annotated[
        str,
        typer.Option(
            help="consistent, fast, semiconsistent or snapshot (extension method; what each "
            "locks is printed with the snapshot)."
        ),
    ] = ("consistent"),
    top: Annotated[
        int,
        typer.Option(
            parser=parse_top, metavar="INTEGER", help="Show the N largest relations (0: all)."
        ),
    ] = 20,
    watch: Annotated[
        float | None,
        typer.Option(
            parser=parse_watch, metavar="SECONDS", help="Repeat every SECONDS until Ctrl-C."
        ),
    ] = None,
    format: Annotated[
        str | None, format_option("text or json, a line per snapshot with --watch (default text).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Where a server's data is: shared_buffers per relation, and the OS page cache."""
    from pgcachelab.exporters import json, text

    offered = {"text": "text", "json": "json"}  # the flow differs: notes and --watch's rounds
    as_json = output_format("inspect", format, json_output, offered, "text") == "json"
    method, mode = parse_method(method), parse_mode(mode)
    top, watch = parse_top(top), parse_watch(watch)
    if (dsn is None) == (work_dir is None):
        raise UserError(
            "inspect needs one server: --dsn or --work-dir",
            'e.g. --dsn "host=/tmp dbname=bench", or --work-dir of a cluster the lab manages',
        )
    data_dir: Path | None
    if work_dir is not None:
        conn, data_dir = _connect_work_dir(work_dir, dbname)
        why_not = None
    else:
        assert dsn is not None  # one of them, checked above
        conn = _connect_dsn(dsn)
        data_dir, why_not = local_data_dir(conn)
    with conn:
        chosen = resolve_method(conn, method, mode)
        note = _os_cache_note(data_dir, why_not)
        if note and not as_json:
            typer.echo(note, err=True)  # once, not at every --watch round
        try:
            while True:
                snapshot = _collect(conn, chosen, mode)
                if os_cache_readable(note) and data_dir is not None:
                    fill_os_cache(snapshot, data_dir)
                snapshot.os_cache_note = note
                if as_json:
                    json.snapshot(snapshot, sys.stdout, one_line=bool(watch))
                else:
                    if watch:
                        typer.echo(f"-- {time.strftime('%H:%M:%S')}")
                    text.snapshot(snapshot, top, sys.stdout)
                sys.stdout.flush()  # each --watch round as it is taken, also into a pipe
                if watch is None:
                    return
                time.sleep(watch)
                if not as_json:
                    typer.echo("")
        except KeyboardInterrupt:
            return  # Ctrl-C is how --watch ends
