"""The results store: one SQLite file per lab directory, written after every repetition.

Schema history (PRAGMA user_version):
  1 - runs, points, measurements, point_server_settings.
  2 - cache_snapshots: per measurement, the cache snapshots taken during it (issue 7).
      Migration from 1: the table is added; version 1 rows are kept as they are.
"""

import json
import sqlite3
import time
from pathlib import Path

from pgcachelab.store.location import STORE_FILE
from pgcachelab.store.records import (  # noqa: F401  (Run, StoredPoint: imported from here too)
    Measurement,
    Run,
    StoredPoint,
    StoredSnapshot,
    abandoned,
    group_snapshots,
    new_run_id,
)
from pgcachelab.store.records import to_json as _json

SCHEMA_VERSION = 2

_SCHEMA = """
create table if not exists runs (
    run_id text primary key,
    name text not null,
    spec_path text not null,
    spec_text text not null,
    target text not null,            -- json: how the server was reached, never a password
    environment text not null,       -- json: versions, machine, commit
    status text not null,            -- running, done, failed, interrupted
    lab_pid integer,
    work_dir text,                   -- the managed cluster's directory while running
    created_at real not null,
    finished_at real,
    failure text
);
create table if not exists points (
    run_id text not null references runs(run_id),
    point_index integer not null,
    label text not null,
    swept text not null,             -- json
    workload text not null,          -- json
    settings text not null,          -- json
    primary key (run_id, point_index)
);
create table if not exists measurements (
    run_id text not null,
    point_index integer not null,
    repetition integer not null,
    status text not null,            -- ok or failed
    reason text,
    started_at real not null,
    finished_at real not null,
    wall_s real not null,
    server_action text,              -- none, reload, restart, start
    tps real,
    latency_avg_ms real,
    latency_stddev_ms real,
    metrics text not null,           -- json: the parsed pgbench result and every probe
    primary key (run_id, point_index, repetition),
    foreign key (run_id, point_index) references points(run_id, point_index)
);
create table if not exists point_server_settings (
    run_id text not null,
    point_index integer not null,
    settings text not null,          -- json: name -> {setting, unit, vartype, source, normalised}
    primary key (run_id, point_index)
);
"""
# Each migration takes the store from the version before it to its own (applied in order).
_MIGRATIONS = {
    2: """
create table if not exists cache_snapshots (
    run_id text not null,
    point_index integer not null,
    repetition integer not null,
    seq integer not null,            -- order within the measurement
    taken_at real not null,          -- unix time
    label text not null,             -- before, after PHASE, after, sample, pair-fast, ...
    method text,                     -- extension, pg_buffercache, summary
    mode text,
    elapsed_ms real,                 -- the snapshot query's time, as the client saw it
    error text,                      -- why the snapshot failed, if it did
    data text,                       -- json: analysis.cache_composition.compact()
    primary key (run_id, point_index, repetition, seq)
);
""",
}


class ResultStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: every write is durable on return, so a SIGKILL loses nothing written.
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.db.execute("pragma journal_mode = wal")
        self.db.execute("pragma foreign_keys = on")
        version = self.db.execute("pragma user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"{self.path} was written by a newer pgcachelab (v{version})")
        self.db.executescript(_SCHEMA)  # version 1's tables (a new store starts there)
        for target in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
            self.db.executescript(_MIGRATIONS[target])
        self.db.execute(f"pragma user_version = {SCHEMA_VERSION}")

    @classmethod
    def in_lab_dir(cls, lab_dir: Path) -> "ResultStore":
        return cls(Path(lab_dir) / STORE_FILE)

    @classmethod
    def open_read_only(cls, path: Path) -> "ResultStore":
        """Open an existing store for reading only: no directory, schema or pragma is written,
        so a reader that only looks (doctor, possibly not root) changes nothing.
        Raises sqlite3.Error when the file is missing or not readable."""
        store = cls.__new__(cls)
        store.path = Path(path)
        store.db = sqlite3.connect(f"{store.path.absolute().as_uri()}?mode=ro", uri=True,
                                   timeout=30)  # fmt: skip
        version = store.db.execute("pragma user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            store.db.close()
            raise sqlite3.DatabaseError(f"written by a newer pgcachelab (v{version})")
        return store

    @classmethod
    def open_for_reading(cls, path: Path) -> "ResultStore":
        """A store to read from, without writing a byte when it needs no migration.

        SQLite opens a WAL database read-only only where it may make the -shm file; on a
        read-only or full file system it may not, and the file is then read as immutable (no
        locks: fine for a store no lab writes at that moment, as on such a disk none can).
        An older store is opened for writing, to migrate it.
        """
        try:
            store = cls.open_read_only(path)
        except sqlite3.OperationalError:
            store = cls.__new__(cls)
            store.path = Path(path)
            store.db = sqlite3.connect(
                f"{store.path.absolute().as_uri()}?mode=ro&immutable=1", uri=True, timeout=30
            )
        version = store.db.execute("pragma user_version").fetchone()[0]
        # Reading a store checks it is one: a file of another kind fails here, not later.
        store.db.execute("select count(*) from runs").fetchone()
        if version < SCHEMA_VERSION:
            store.db.close()
            return cls(path)
        return store

    @property
    def location(self) -> str:
        """How messages name this store."""
        return str(self.path)

    def close(self) -> None:
        self.db.close()

    # -- writing ---------------------------------------------------------------------------

    def create_run(self, name, spec_path, spec_text, target, environment, points) -> str:
        run_id = new_run_id()
        with self.db:
            self.db.execute("begin")
            self.db.execute(
                "insert into runs (run_id, name, spec_path, spec_text, target, environment,"
                " status, created_at) values (?, ?, ?, ?, ?, ?, 'running', ?)",
                (run_id, name, str(spec_path), spec_text, _json(target), _json(environment),
                 time.time()),
            )  # fmt: skip
            self.db.executemany(
                "insert into points values (?, ?, ?, ?, ?, ?)",
                [(run_id, p.index, p.label, _json(p.swept), _json(p.workload), _json(p.settings))
                 for p in points],
            )  # fmt: skip
        return run_id

    def mark_running(self, run_id: str, lab_pid: int, work_dir: str | None) -> None:
        self.db.execute(
            "update runs set status = 'running', lab_pid = ?, work_dir = ?, finished_at = null,"
            " failure = null where run_id = ?",
            (lab_pid, work_dir, run_id),
        )

    def set_work_dir(self, run_id: str, work_dir: str | None) -> None:
        self.db.execute("update runs set work_dir = ? where run_id = ?", (work_dir, run_id))

    def finish_run(
        self, run_id: str, status: str, failure: str | None = None, kept_dir: str | None = None
    ) -> None:
        """`kept_dir`: a cluster kept for --resume (its data took long to build)."""
        self.db.execute(
            "update runs set status = ?, finished_at = ?, failure = ?, lab_pid = null,"
            " work_dir = ? where run_id = ?",
            (status, time.time(), failure, kept_dir, run_id),
        )

    def record_measurement(self, run_id: str, m: Measurement) -> None:
        """Insert or replace: a retried repetition is present exactly once."""
        self.db.execute(
            "insert or replace into measurements values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, m.point_index, m.repetition, m.status, m.reason, m.started_at,
             m.finished_at, m.wall_s, m.server_action, m.tps, m.latency_avg_ms,
             m.latency_stddev_ms, _json(m.metrics)),
        )  # fmt: skip

    def record_server_settings(self, run_id: str, point_index: int, settings: dict) -> None:
        self.db.execute(
            "insert or replace into point_server_settings values (?, ?, ?)",
            (run_id, point_index, _json(settings)),
        )

    def record_snapshots(
        self, run_id: str, point_index: int, repetition: int, snapshots: list[StoredSnapshot]
    ) -> None:
        """Replace the measurement's snapshots: a retried repetition keeps only its own."""
        with self.db:
            self.db.execute("begin")
            self._write_snapshots(run_id, point_index, repetition, snapshots)

    def _write_snapshots(self, run_id, point_index, repetition, snapshots) -> None:
        self.db.execute(
            "delete from cache_snapshots where run_id = ? and point_index = ? and repetition = ?",
            (run_id, point_index, repetition),
        )
        self.db.executemany(
            "insert into cache_snapshots values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(run_id, point_index, repetition, s.seq, s.taken_at, s.label, s.method, s.mode,
              s.elapsed_ms, s.error, None if s.data is None else _json(s.data))
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
        new = self.run(run.run_id) is None
        with self.db:
            self.db.execute("begin")
            self.db.execute(
                "insert into runs values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " on conflict (run_id) do update set status = excluded.status,"
                " lab_pid = excluded.lab_pid, work_dir = excluded.work_dir,"
                " finished_at = excluded.finished_at, failure = excluded.failure",
                (run.run_id, run.name, run.spec_path, run.spec_text, _json(run.target),
                 _json(run.environment), run.status, run.lab_pid, run.work_dir, run.created_at,
                 run.finished_at, run.failure),
            )  # fmt: skip
            self.db.executemany(
                "insert or ignore into points values (?, ?, ?, ?, ?, ?)",
                [(run.run_id, p.point_index, p.label, _json(p.swept), _json(p.workload),
                  _json(p.settings)) for p in points],
            )  # fmt: skip
            for m in measurements:
                self.record_measurement(run.run_id, m)
            for point_index, settings in server_settings.items():
                self.record_server_settings(run.run_id, point_index, settings)
            for key, group in group_snapshots(snapshots).items():
                self._write_snapshots(run.run_id, *key, group)
        return new

    # -- reading ---------------------------------------------------------------------------

    def runs(self) -> list[Run]:
        rows = self.db.execute("select * from runs order by created_at").fetchall()
        return [_run(row) for row in rows]

    def run(self, run_id: str) -> Run | None:
        row = self.db.execute("select * from runs where run_id = ?", (run_id,)).fetchone()
        return _run(row) if row else None

    def points(self, run_id: str) -> list[StoredPoint]:
        rows = self.db.execute(
            "select point_index, label, swept, workload, settings from points"
            " where run_id = ? order by point_index",
            (run_id,),
        ).fetchall()
        return [
            StoredPoint(r[0], r[1], json.loads(r[2]), json.loads(r[3]), json.loads(r[4]))
            for r in rows
        ]

    def measurements(self, run_id: str) -> list[Measurement]:
        rows = self.db.execute(
            "select point_index, repetition, status, reason, started_at, finished_at, wall_s,"
            " server_action, tps, latency_avg_ms, latency_stddev_ms, metrics from measurements"
            " where run_id = ? order by point_index, repetition",
            (run_id,),
        ).fetchall()
        return [Measurement(*row[:11], metrics=json.loads(row[11])) for row in rows]

    def completed(self, run_id: str) -> set[tuple[int, int]]:
        """(point, repetition) pairs measured successfully: what a resume skips."""
        rows = self.db.execute(
            "select point_index, repetition from measurements where run_id = ? and status = 'ok'",
            (run_id,),
        ).fetchall()
        return {(p, r) for p, r in rows}

    def server_settings(self, run_id: str) -> dict[int, dict]:
        rows = self.db.execute(
            "select point_index, settings from point_server_settings where run_id = ?", (run_id,)
        ).fetchall()
        return {point: json.loads(settings) for point, settings in rows}

    def snapshots(self, run_id: str) -> list[StoredSnapshot]:
        rows = self.db.execute(
            "select point_index, repetition, seq, taken_at, label, method, mode, elapsed_ms,"
            " error, data from cache_snapshots where run_id = ?"
            " order by point_index, repetition, seq",
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
