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
  4 - the queue on procrastinate (issue 38): its schema (jobs, workers, events and their SQL
      functions) in this schema; units still waiting become jobs and `units` goes; agents,
      unit_tries; hosts keyed by a host identity, not a host name.
  5 - the lab's routing beside procrastinate (issue 49): a unit waits in its run's queue (or
      its run's share for one class), the classes that may fetch it are the lab's own table's
      rule (fleet_runs), so pinning a run moves no job; tries are counted in unit_tries, not
      in the engine's attempts; units waiting in the old shared queues are deferred again, in
      their order, through procrastinate's own functions; an agent pruned for its lease keeps
      its row, marked, so `queue status` shows it stale.
  6 - runs.study: the study a run is, recorded when it is created (issue 50); each run stored
      before gets the study the lab recognised it as until then (store/recognised_study.py).
"""

import contextlib
import functools
import importlib.resources
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg import sql

from pgcachelab.clusters.client import one_row
from pgcachelab.errors import UserError
from pgcachelab.secrets import SECRET_KEYWORDS, mask_password, parse_failure
from pgcachelab.store.location import STORE_HINT
from pgcachelab.store.recognised_study import record_recognised_studies
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


# The migration step that applies procrastinate's schema (store/queue.py), as frozen in the
# lab's files: a store's schema is the lab's migrations, whatever procrastinate is installed.
# Upgrading the pin is a new migration (docs/store-and-fleet.md, "Upgrading procrastinate").
ENGINE_SCHEMA = "procrastinate's schema"
ENGINE_VERSION = "3.10.0"
ENGINE_DDL = f"engine/procrastinate-{ENGINE_VERSION}.sql"


def engine_ddl() -> str:
    """procrastinate's schema script for ENGINE_VERSION, as the lab ships it."""
    return importlib.resources.files(__package__).joinpath(ENGINE_DDL).read_text()


# The queue on procrastinate (store/queue.py): job queue names and the task name are the lab's
# (QUEUE_* there); units waiting in a version 3 queue are deferred as jobs in their order.
_VERSION_4 = [
    ENGINE_SCHEMA,
    "alter table {schema}.fleet_runs add column classes text,"
    " add column cancelled_at double precision",
    """create table {schema}.agents (
        worker_id bigint primary key,
        host_id text not null,
        host_name text not null,
        host_class text not null,
        pid integer not null,
        lease_s double precision not null,
        started_at double precision not null,
        stopped_at double precision
    )""",
    """create table {schema}.unit_tries (
        job_id bigint not null,
        run_id text not null,
        point_index integer not null,
        repetition integer not null,
        try integer not null,
        worker_id bigint,
        host_id text,
        host_name text,
        outcome text not null,
        reason text,
        at timestamptz not null default now()
    )""",
    "create index on {schema}.unit_tries (run_id, point_index, repetition)",
    """select {schema}.procrastinate_defer_jobs_v1(array(
        select row(
            case when f.host_class is not null
                 then 'pgcachelab/class/' || left(md5(f.host_class), 16)
                 when f.hosts = 'same' then 'pgcachelab/unpinned'
                 else 'pgcachelab/any' end,
            'pgcachelab.measure_unit', 0, null,
            u.run_id || '/' || u.point_index || '/' || u.repetition,
            jsonb_build_object(
                'run_id', u.run_id, 'point_index', u.point_index, 'repetition', u.repetition),
            null)::{schema}.procrastinate_job_to_defer_v1
        from {schema}.units u join {schema}.fleet_runs f using (run_id)
        where u.state in ('queued', 'leased')
        order by f.queued_at, u.seq))""",
    "drop table {schema}.units",
    "drop table {schema}.hosts",
    """create table {schema}.hosts (
        host_id text primary key,
        host_name text not null,
        host_class text not null,
        facts text not null,
        last_seen double precision not null
    )""",
]

# A unit's queue (store/queue.py run_queue, unit_queues) from its run's row and its arguments.
_UNIT_QUEUE_SQL = """'pgcachelab/r/' || left(md5(f.run_id), 12)
    || case when f.host_class is null and f.hosts <> 'same'
                 and coalesce(jsonb_array_length(f.classes::jsonb), 0) > 0
            then '/' || left(md5(f.classes::jsonb ->> ((l.args->>'repetition')::int
                                   % jsonb_array_length(f.classes::jsonb))), 12)
            else '' end"""

# Routing is the lab's (issue 49): the old shared queues' waiting units are deferred again in
# their run's queues, in their order (deleted and deferred by procrastinate's functions; a
# unit being measured goes to its new queue when it is next retried); tries are the lab's.
_VERSION_5 = [
    "alter table {schema}.unit_tries add column seq bigserial,"
    " add column counted boolean not null default false",
    # an agent pruned (not heard of for its lease) is shown as stale, not dropped from view
    "alter table {schema}.agents add column last_heard double precision,"
    " add column pruned_at double precision",
    "update {schema}.unit_tries set counted = outcome in ('failed', 'abandoned')"
    " and coalesce(reason, '') not like '%the try is not counted%'",
    """create temporary table legacy_units on commit drop as
        select id, queueing_lock, args from {schema}.procrastinate_jobs
        where task_name = 'pgcachelab.measure_unit' and status = 'todo'
          and queue_name not like 'pgcachelab/r/%'""",
    "select {schema}.procrastinate_cancel_job_v1(id, false, true) from legacy_units order by id",
    f"""select {{schema}}.procrastinate_defer_jobs_v1(array(
        select row({_UNIT_QUEUE_SQL},
            'pgcachelab.measure_unit', 0, null, l.queueing_lock, l.args,
            null)::{{schema}}.procrastinate_job_to_defer_v1
        from legacy_units l join {{schema}}.fleet_runs f on f.run_id = l.args->>'run_id'
        order by l.id))
        where exists (select 1 from legacy_units)""",
]

# The step of a migration that fills a new column from the rows there, in Python: each old run's
# study as the lab recognised it from its metrics and swept keys (store/recognised_study.py).
RECOGNISED_STUDIES = "each old run's recognised study"

_VERSION_6 = [
    "alter table {schema}.runs add column study text not null default ''",
    RECOGNISED_STUDIES,
]

# (version, what it does, statements): applied in order, each in the transaction that records it.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "runs, points, measurements, point_server_settings", _VERSION_1),
    (2, "cache_snapshots: the cache snapshots taken during each measurement", _VERSION_2),
    (3, "fleet_runs, units, hosts: runs queued for agents on many hosts", _VERSION_3),
    (4, "the queue on procrastinate 3.10.0: jobs, workers, agents, unit_tries", _VERSION_4),
    (5, "the lab's routing and tries beside procrastinate: queues per run", _VERSION_5),
    (6, "runs.study: the study each run is, recorded when it is created", _VERSION_6),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


def connection_error(
    url: str, error: Exception, what: str = "cannot connect to", option: str = "--store"
) -> UserError:
    """One line naming the store with its password masked, and libpq's reason (libpq does not
    echo a password it read, but quotes a token it could not parse, which may be one)."""
    reason = parse_failure(error, url, _secrets_of(url))
    return UserError(f"{option}: {what} {mask_password(url)!r}: {reason}", STORE_HINT)


def _secrets_of(url: str) -> tuple[str, ...]:
    """The password and other secrets of `url` as libpq reads them."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except (psycopg.Error, UnicodeDecodeError):
        return ()
    return tuple(str(params[key]) for key in SECRET_KEYWORDS if params.get(key) is not None)


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
        except (psycopg.Error, UnicodeDecodeError) as error:  # a %-escape of no UTF-8 text
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

    def another_connection(self, application_name: str | None = None) -> psycopg.Connection:
        """A second autocommit connection to the store's schema (for another thread); the
        server's pg_stat_activity names it `application_name` when given."""
        named: dict[str, Any] = {"application_name": application_name} if application_name else {}
        db = psycopg.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, **named)
        try:
            db.execute(sql.SQL("set search_path to {}").format(sql.Identifier(self.schema)))
        except BaseException:
            db.close()
            raise
        return db

    def reconnect(self, application_name: str | None = None) -> None:
        """A new main connection after the old one was lost (the store restarted, the
        backend was terminated): raises psycopg.OperationalError while it stays away."""
        new = self.another_connection(application_name)
        old, self.db = self.db, new
        with contextlib.suppress(psycopg.Error):
            old.close()

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
                    if statement == ENGINE_SCHEMA:
                        self._apply_engine_schema()
                    elif statement == RECOGNISED_STUDIES:
                        self._record_recognised_studies()
                    else:
                        self.db.execute(self._sql(statement))
                self.db.execute(
                    self._sql(
                        "insert into {schema}.schema_version (version, description) values (%s, %s)"
                    ),
                    (version, description),
                )

    def _apply_engine_schema(self) -> None:
        """procrastinate's objects in this store's schema: the functions name tables and types
        without a schema, so every connection that uses them sets this search_path (they all
        do: __init__, another_connection, reconnect)."""
        self.db.execute(sql.SQL("set local search_path to {}").format(sql.Identifier(self.schema)))
        self.db.execute(sql.SQL(engine_ddl()))

    def _record_recognised_studies(self) -> None:
        """The data statements name tables without a schema: this transaction reads and
        writes the store's own."""
        self.db.execute(sql.SQL("set local search_path to {}").format(sql.Identifier(self.schema)))
        record_recognised_studies(self)

    def schema_version(self) -> int:
        found = one_row(
            self.db.execute(self._sql("select max(version) from {schema}.schema_version"))
        )[0]
        return int(found)

    def _execute(self, statement: str, params: Sequence[object] = ()) -> psycopg.Cursor[Any]:
        return self.db.execute(_format_placeholders(statement), params)

    def _executemany(self, statement: str, rows: Iterable[Sequence[object]]) -> None:
        with self.db.cursor() as cursor:
            cursor.executemany(_format_placeholders(statement), rows)

    def _transaction(self) -> AbstractContextManager[object]:
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
