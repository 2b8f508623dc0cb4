"""The results store in a PostgreSQL database, so a team keeps every run of every host together.

Same tables and columns as the SQLite store (store/sqlite.py), in their own schema; written
after every repetition, autocommit, like the SQLite file. The schema evolves by numbered
migrations recorded in `schema_version`, the counterpart of SQLite's PRAGMA user_version:
append a step to MIGRATIONS, never edit one that has shipped.

Schema history (schema_version.version):
  1 - runs, points, measurements, point_server_settings (SQLite user_version 1).
"""

import json
import time

import psycopg
from psycopg import sql

from pgcachelab.errors import UserError
from pgcachelab.store.location import STORE_HINT, mask_password
from pgcachelab.store.records import (
    Measurement,
    Run,
    StoredPoint,
    StoredSnapshot,
    abandoned,
    group_snapshots,
    new_run_id,
    to_json,
)

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

# (version, what it does, statements): applied in order, each in the transaction that records it.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "runs, points, measurements, point_server_settings", _VERSION_1),
    (2, "cache_snapshots: the cache snapshots taken during each measurement", _VERSION_2),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]

_RUN_COLUMNS = ("run_id, name, spec_path, spec_text, target, environment, status, lab_pid,"
                " work_dir, created_at, finished_at, failure")  # fmt: skip
_MEASUREMENT_COLUMNS = ("point_index, repetition, status, reason, started_at, finished_at,"
                        " wall_s, server_action, tps, latency_avg_ms, latency_stddev_ms,"
                        " metrics")  # fmt: skip


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
        return psycopg.conninfo.conninfo_to_dict(url).get("password")
    except psycopg.Error:
        return None


class PostgresResultStore:
    """The ResultStore interface (store/sqlite.py) on a PostgreSQL database."""

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

    def _sql(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(schema=sql.Identifier(self.schema))

    def _has_schema(self) -> bool:
        table = sql.Identifier(self.schema, "schema_version").as_string(self.db)
        return self.db.execute("select to_regclass(%s)", (table,)).fetchone()[0] is not None

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
            current = self.db.execute(
                self._sql("select coalesce(max(version), 0) from {schema}.schema_version")
            ).fetchone()[0]
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
        return self.db.execute(
            self._sql("select max(version) from {schema}.schema_version")
        ).fetchone()[0]

    # -- writing ---------------------------------------------------------------------------

    def create_run(self, name, spec_path, spec_text, target, environment, points) -> str:
        run_id = new_run_id()
        with self.db.transaction():
            self.db.execute(
                self._sql(
                    "insert into {schema}.runs (run_id, name, spec_path, spec_text, target,"
                    " environment, status, created_at)"
                    " values (%s, %s, %s, %s, %s, %s, 'running', %s)"
                ),
                (run_id, name, str(spec_path), spec_text, to_json(target), to_json(environment),
                 time.time()),
            )  # fmt: skip
            self._insert_points(
                run_id,
                [(p.index, p.label, p.swept, p.workload, p.settings) for p in points],
            )
        return run_id

    def _insert_points(self, run_id: str, rows: list[tuple]) -> None:
        with self.db.cursor() as cursor:
            cursor.executemany(
                self._sql(
                    "insert into {schema}.points values (%s, %s, %s, %s, %s, %s)"
                    " on conflict do nothing"
                ),
                [(run_id, index, label, to_json(swept), to_json(workload), to_json(settings))
                 for index, label, swept, workload, settings in rows],
            )  # fmt: skip

    def mark_running(self, run_id: str, lab_pid: int, work_dir: str | None) -> None:
        self.db.execute(
            self._sql(
                "update {schema}.runs set status = 'running', lab_pid = %s, work_dir = %s,"
                " finished_at = null, failure = null where run_id = %s"
            ),
            (lab_pid, work_dir, run_id),
        )

    def set_work_dir(self, run_id: str, work_dir: str | None) -> None:
        self.db.execute(
            self._sql("update {schema}.runs set work_dir = %s where run_id = %s"),
            (work_dir, run_id),
        )

    def finish_run(
        self, run_id: str, status: str, failure: str | None = None, kept_dir: str | None = None
    ) -> None:
        """`kept_dir`: a cluster kept for --resume (its data took long to build)."""
        self.db.execute(
            self._sql(
                "update {schema}.runs set status = %s, finished_at = %s, failure = %s,"
                " lab_pid = null, work_dir = %s where run_id = %s"
            ),
            (status, time.time(), failure, kept_dir, run_id),
        )

    def record_measurement(self, run_id: str, m: Measurement) -> None:
        """Insert or replace: a retried repetition is present exactly once."""
        columns = [c.strip() for c in _MEASUREMENT_COLUMNS.split(",")]
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns[2:])
        self.db.execute(
            self._sql(
                "insert into {schema}.measurements values"
                " (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " on conflict (run_id, point_index, repetition) do update set " + updates
            ),
            (run_id, m.point_index, m.repetition, m.status, m.reason, m.started_at,
             m.finished_at, m.wall_s, m.server_action, m.tps, m.latency_avg_ms,
             m.latency_stddev_ms, to_json(m.metrics)),
        )  # fmt: skip

    def record_server_settings(self, run_id: str, point_index: int, settings: dict) -> None:
        self.db.execute(
            self._sql(
                "insert into {schema}.point_server_settings values (%s, %s, %s)"
                " on conflict (run_id, point_index) do update set settings = excluded.settings"
            ),
            (run_id, point_index, to_json(settings)),
        )

    def record_snapshots(
        self, run_id: str, point_index: int, repetition: int, snapshots: list[StoredSnapshot]
    ) -> None:
        """Replace the measurement's snapshots: a retried repetition keeps only its own."""
        with self.db.transaction():
            self._write_snapshots(run_id, point_index, repetition, snapshots)

    def _write_snapshots(self, run_id, point_index, repetition, snapshots) -> None:
        self.db.execute(
            self._sql(
                "delete from {schema}.cache_snapshots where run_id = %s and point_index = %s"
                " and repetition = %s"
            ),
            (run_id, point_index, repetition),
        )
        with self.db.cursor() as cursor:
            cursor.executemany(
                self._sql(
                    "insert into {schema}.cache_snapshots values"
                    " (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                ),
                [(run_id, point_index, repetition, s.seq, s.taken_at, s.label, s.method, s.mode,
                  s.elapsed_ms, s.error, None if s.data is None else to_json(s.data))
                 for s in snapshots],
            )  # fmt: skip

    def import_run(
        self,
        run: Run,
        points: list[StoredPoint],
        measurements: list[Measurement],
        server_settings: dict[int, dict],
        snapshots: list[StoredSnapshot] = (),
    ) -> bool:
        """Write a run read from another store, in one transaction; True if it was new here.

        Idempotent: a run already here gets its state and any new or retried measurements,
        never a second copy of a row.
        """
        with self.db.transaction():
            new = self.run(run.run_id) is None
            self.db.execute(
                self._sql(
                    f"insert into {{schema}}.runs ({_RUN_COLUMNS}) values"
                    " (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                    " on conflict (run_id) do update set status = excluded.status,"
                    " lab_pid = excluded.lab_pid, work_dir = excluded.work_dir,"
                    " finished_at = excluded.finished_at, failure = excluded.failure"
                ),
                (run.run_id, run.name, run.spec_path, run.spec_text, to_json(run.target),
                 to_json(run.environment), run.status, run.lab_pid, run.work_dir,
                 run.created_at, run.finished_at, run.failure),
            )  # fmt: skip
            self._insert_points(
                run.run_id,
                [(p.point_index, p.label, p.swept, p.workload, p.settings) for p in points],
            )
            for m in measurements:
                self.record_measurement(run.run_id, m)
            for point_index, settings in server_settings.items():
                self.record_server_settings(run.run_id, point_index, settings)
            for key, group in group_snapshots(snapshots).items():
                self._write_snapshots(run.run_id, *key, group)
        return new

    # -- reading ---------------------------------------------------------------------------

    def runs(self) -> list[Run]:
        rows = self.db.execute(
            self._sql(f"select {_RUN_COLUMNS} from {{schema}}.runs order by created_at")
        ).fetchall()
        return [_run(row) for row in rows]

    def run(self, run_id: str) -> Run | None:
        row = self.db.execute(
            self._sql(f"select {_RUN_COLUMNS} from {{schema}}.runs where run_id = %s"), (run_id,)
        ).fetchone()
        return _run(row) if row else None

    def points(self, run_id: str) -> list[StoredPoint]:
        rows = self.db.execute(
            self._sql(
                "select point_index, label, swept, workload, settings from {schema}.points"
                " where run_id = %s order by point_index"
            ),
            (run_id,),
        ).fetchall()
        return [
            StoredPoint(r[0], r[1], json.loads(r[2]), json.loads(r[3]), json.loads(r[4]))
            for r in rows
        ]

    def measurements(self, run_id: str) -> list[Measurement]:
        rows = self.db.execute(
            self._sql(
                f"select {_MEASUREMENT_COLUMNS} from {{schema}}.measurements"
                " where run_id = %s order by point_index, repetition"
            ),
            (run_id,),
        ).fetchall()
        return [Measurement(*row[:11], metrics=json.loads(row[11])) for row in rows]

    def completed(self, run_id: str) -> set[tuple[int, int]]:
        """(point, repetition) pairs measured successfully: what a resume skips."""
        rows = self.db.execute(
            self._sql(
                "select point_index, repetition from {schema}.measurements"
                " where run_id = %s and status = 'ok'"
            ),
            (run_id,),
        ).fetchall()
        return {(p, r) for p, r in rows}

    def server_settings(self, run_id: str) -> dict[int, dict]:
        rows = self.db.execute(
            self._sql(
                "select point_index, settings from {schema}.point_server_settings where run_id = %s"
            ),
            (run_id,),
        ).fetchall()
        return {point: json.loads(settings) for point, settings in rows}

    def snapshots(self, run_id: str) -> list[StoredSnapshot]:
        rows = self.db.execute(
            self._sql(
                "select point_index, repetition, seq, taken_at, label, method, mode, elapsed_ms,"
                " error, data from {schema}.cache_snapshots where run_id = %s"
                " order by point_index, repetition, seq"
            ),
            (run_id,),
        ).fetchall()
        return [StoredSnapshot(*row[:9], data=json.loads(row[9]) if row[9] else None)
                for row in rows]  # fmt: skip

    def abandoned_runs(self) -> list[Run]:
        """Runs of this host marked running whose lab process is gone (killed)."""
        return abandoned(self.runs())


def _run(row) -> Run:
    values = list(row)
    values[4] = json.loads(values[4])
    values[5] = json.loads(values[5])
    return Run(*values)
