"""The results store in a PostgreSQL database, so a team keeps every run of every host together.

Same tables and columns as the SQLite store (store/sqlite.py), in their own schema; written
after every repetition, autocommit, like the SQLite file. The schema evolves by numbered
migrations recorded in `schema_version`, the counterpart of SQLite's PRAGMA user_version:
append a step to MIGRATIONS, never edit one that has shipped.

Schema history (schema_version.version):
  1 - runs, points, measurements, point_server_settings (SQLite user_version 1).
  2 - cache_snapshots.
  3 - fleet_runs, units, hosts: the queue of a run measured by agents (store/queue.py); only
      here, not in SQLite: a queue is shared by hosts, a SQLite file is not.
"""

import functools
from collections.abc import Iterable, Sequence

import psycopg
from psycopg import sql

from pgcachelab.clusters.client import one_row
from pgcachelab.errors import UserError
from pgcachelab.store.location import STORE_HINT, mask_password
from pgcachelab.store.sql_store import SqlResultStore

SCHEMA = "pgcachelab"
CONNECT_TIMEOUT_S = 10

# JSON lives in text columns, not jsonb: Python writes NaN and Infinity, which jsonb refuses,
# and text keeps the exact bytes the SQLite store has, so a copy between stores is lossless.
_VERSION_1 = [
    """create table {schema}.runs (
        run_id text primary key,
        name text not null,
        spec_path text not null,
        spec_text text not null,
        target text not null,
        environment text not null,
        status text not null,
        lab_pid integer,
        work_dir text,
        created_at double precision not null,
        finished_at double precision,
        failure text
    )""",
    """create table {schema}.points (
        run_id text not null references {schema}.runs (run_id),
        point_index integer not null,
        label text not null,
        swept text not null,
        workload text not null,
        settings text not null,
        primary key (run_id, point_index)
    )""",
    """create table {schema}.measurements (
        run_id text not null,
        point_index integer not null,
        repetition integer not null,
        status text not null,
        reason text,
        started_at double precision not null,
        finished_at double precision not null,
        wall_s double precision not null,
        server_action text,
        tps double precision,
        latency_avg_ms double precision,
        latency_stddev_ms double precision,
        metrics text not null,
        primary key (run_id, point_index, repetition),
        foreign key (run_id, point_index) references {schema}.points (run_id, point_index)
    )""",
    """create table {schema}.point_server_settings (
        run_id text not null,
        point_index integer not null,
        settings text not null,
        primary key (run_id, point_index)
    )""",
]

_VERSION_2 = [
    """create table {schema}.cache_snapshots (
        run_id text not null,
        point_index integer not null,
        repetition integer not null,
        seq integer not null,
        taken_at double precision not null,
        label text not null,
        method text,
        mode text,
        elapsed_ms double precision,
        error text,
        data text,
        primary key (run_id, point_index, repetition, seq)
    )""",
]

# A queued run's units are leased with `for update skip locked` (store/queue.py); times are the
# database's, so hosts whose clocks disagree still agree on when a lease has expired.
_VERSION_3 = [
    """create table {schema}.fleet_runs (
        run_id text primary key references {schema}.runs (run_id),
        hosts text not null,
        host_class text,
        max_tries integer not null,
        queued_at double precision not null
    )""",
    """create table {schema}.units (
        run_id text not null references {schema}.fleet_runs (run_id),
        point_index integer not null,
        repetition integer not null,
        seq integer not null,
        round integer not null,
        state text not null,
        host text,
        agent text,
        lease_until timestamptz,
        heartbeat_at timestamptz,
        tries integer not null default 0,
        last_reason text,
        primary key (run_id, point_index, repetition),
        unique (run_id, seq)
    )""",
    "create index on {schema}.units (state, run_id, seq)",
    """create table {schema}.hosts (
        host text primary key,
        host_class text not null,
        facts text not null,
        last_seen double precision not null
    )""",
]

# (version, what it does, statements): applied in order, each in the transaction that records it.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "runs, points, measurements, point_server_settings", _VERSION_1),
    (2, "cache_snapshots: the cache snapshots taken during each measurement", _VERSION_2),
    (3, "fleet_runs, units, hosts: runs queued for agents on many hosts", _VERSION_3),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


def connection_error(
    url: str, error: Exception, what: str = "cannot connect to", option: str = "--store"
) -> UserError:
    """One line naming the store with its password masked, and libpq's reason."""
    reason = " ".join(str(error).split()) or type(error).__name__
    masked = mask_password(url)
    password = _password_of(url)
    if password:  # libpq does not echo passwords; this makes sure of it
        reason = reason.replace(password, "***")
    return UserError(f"{option}: {what} {masked!r}: {reason}", STORE_HINT)


def _password_of(url: str) -> str | None:
    try:
        password = psycopg.conninfo.conninfo_to_dict(url).get("password")
        return str(password) if password is not None else None
    except psycopg.Error:
        return None


class PostgresResultStore(SqlResultStore):
    """The results store in a PostgreSQL schema: connecting, search_path, and migrations."""

    def __init__(
        self, url: str, create: bool = True, schema: str = SCHEMA, option: str = "--store"
    ):
        """`option`: how messages name where the URL came from (--store, --from, the spec...)."""
        self._url = url  # may hold a password: only ever shown through self.location
        self.schema = schema
        try:
            self.db = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as error:
            raise connection_error(url, error, option=option) from None
        try:
            if not create and not self._has_schema():
                raise UserError(
                    f"{option}: no results in {self.location!r}",
                    "run an experiment with --store first, or copy runs there (store copy)",
                )
            self._migrate()
            # The data statements (store/sql_store.py) name tables without a schema.
            self.db.execute(sql.SQL("set search_path to {}").format(sql.Identifier(schema)))
        except psycopg.Error as error:
            self.db.close()
            raise connection_error(url, error, "cannot use", option) from None
        except BaseException:
            self.db.close()
            raise

    @property
    def location(self) -> str:
        """How messages name this store: the URL without its password."""
        return mask_password(self._url)

    def close(self) -> None:
        self.db.close()

    def another_connection(self) -> psycopg.Connection:
        """A second autocommit connection to the store's schema (for another thread)."""
        db = psycopg.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        db.execute(sql.SQL("set search_path to {}").format(sql.Identifier(self.schema)))
        return db

    def _sql(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(schema=sql.Identifier(self.schema))

    def _has_schema(self) -> bool:
        table = sql.Identifier(self.schema, "schema_version").as_string(self.db)
        return one_row(self.db.execute("select to_regclass(%s)", (table,)))[0] is not None

    def _migrate(self) -> None:
        with self.db.transaction():
            # Labs that open a new database at once must not both create the schema.
            self.db.execute("select pg_advisory_xact_lock(hashtext(%s))", (f"{self.schema}.store",))
            self.db.execute(self._sql("create schema if not exists {schema}"))
            self.db.execute(
                self._sql(
                    "create table if not exists {schema}.schema_version (version integer"
                    " primary key, description text not null, applied_at timestamptz not null"
                    " default now())"
                )
            )
            current = one_row(
                self.db.execute(
                    self._sql("select coalesce(max(version), 0) from {schema}.schema_version")
                )
            )[0]
            if current > SCHEMA_VERSION:
                raise UserError(
                    f"--store: {self.location!r} was written by a newer pgcachelab"
                    f" (schema version {current}, this one knows {SCHEMA_VERSION})",
                    "upgrade pgcachelab",
                )
            for version, description, statements in MIGRATIONS:
                if version <= current:
                    continue
                for statement in statements:
                    self.db.execute(self._sql(statement))
                self.db.execute(
                    self._sql(
                        "insert into {schema}.schema_version (version, description) values (%s, %s)"
                    ),
                    (version, description),
                )

    def schema_version(self) -> int:
        return one_row(
            self.db.execute(self._sql("select max(version) from {schema}.schema_version"))
        )[0]

    def _execute(self, statement: str, params: Sequence = ()) -> psycopg.Cursor:
        return self.db.execute(_format_placeholders(statement), params)

    def _executemany(self, statement: str, rows: Iterable[Sequence]) -> None:
        with self.db.cursor() as cursor:
            cursor.executemany(_format_placeholders(statement), rows)

    def _transaction(self):
        return self.db.transaction()

    _MALFORMED_JSON = (psycopg.errors.InvalidTextRepresentation,)  # NaN, Infinity

    def _json_paths(self, column: str, paths: Sequence[Sequence[str]]) -> str:
        # json, not jsonb: its text keeps the stored numbers as they were written
        values = [f"{column}::json #> '{{{','.join(keys)}}}'" for keys in paths]
        return f"json_build_array({', '.join(values)})::text"


@functools.cache
def _format_placeholders(statement: str) -> str:
    """psycopg's %s for each qmark placeholder: no statement has a ? or % of its own."""
    return statement.replace("?", "%s")
