"""The results store: one SQLite file per lab directory, written after every repetition.

Schema history (PRAGMA user_version):
  1 - runs, points, measurements, point_server_settings.
  2 - cache_snapshots: per measurement, the cache snapshots taken during it (issue 7).
      Migration from 1: the table is added; version 1 rows are kept as they are.
"""

import json
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

SCHEMA_VERSION = 2
STORE_FILE = "results.sqlite"

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


@dataclass
class Run:
    run_id: str
    name: str
    spec_path: str
    spec_text: str
    target: dict
    environment: dict
    status: str
    lab_pid: int | None
    work_dir: str | None
    created_at: float
    finished_at: float | None
    failure: str | None


@dataclass
class Measurement:
    point_index: int
    repetition: int
    status: str
    reason: str | None
    started_at: float
    finished_at: float
    wall_s: float
    server_action: str | None
    tps: float | None
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    metrics: dict


@dataclass
class StoredSnapshot:
    """One cache snapshot of a measurement (see the cache_snapshots table)."""

    point_index: int
    repetition: int
    seq: int
    taken_at: float
    label: str
    method: str | None
    mode: str | None
    elapsed_ms: float | None
    error: str | None
    data: dict | None


@dataclass
class StoredPoint:
    point_index: int
    label: str
    swept: dict
    workload: dict
    settings: dict


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

    def close(self) -> None:
        self.db.close()

    # -- writing ---------------------------------------------------------------------------

    def create_run(self, name, spec_path, spec_text, target, environment, points) -> str:
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
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
            self.db.execute(
                "delete from cache_snapshots where run_id = ? and point_index = ?"
                " and repetition = ?",
                (run_id, point_index, repetition),
            )
            self.db.executemany(
                "insert into cache_snapshots values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, point_index, repetition, s.seq, s.taken_at, s.label, s.method, s.mode,
                  s.elapsed_ms, s.error, None if s.data is None else _json(s.data))
                 for s in snapshots],
            )  # fmt: skip

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
        """Runs marked running whose lab process is gone (killed): their servers may live on."""
        return [
            run
            for run in self.runs()
            if run.status == "running" and run.lab_pid and not _pid_alive(run.lab_pid)
        ]


def _pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _run(row) -> Run:
    values = list(row)
    values[4] = json.loads(values[4])
    values[5] = json.loads(values[5])
    return Run(*values)
