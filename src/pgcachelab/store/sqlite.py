"""The results store: one SQLite file per lab directory, written after every repetition.

Schema history (PRAGMA user_version):
  1 - runs, points, measurements, point_server_settings.
  2 - cache_snapshots: per measurement, the cache snapshots taken during it (issue 7).
      Migration from 1: the table is added; version 1 rows are kept as they are.
  3 - runs.study: the study a run is, recorded when it is created (issue 50). Migration from
      2: each run gets the study the lab recognised it as until then (store/recognised_study.py).
"""

import contextlib
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pgcachelab.store.location import STORE_FILE
from pgcachelab.store.recognised_study import record_recognised_studies
from pgcachelab.store.sql_store import SqlResultStore

SCHEMA_VERSION = 3

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
    3: """
alter table runs add column study text not null default '';
""",
}
# Migrations that fill what they add from the rows already there, after their statements.
_FILLS = {3: record_recognised_studies}


BUSY_TIMEOUT_S = 30


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """WAL lets a reader and a writer (two labs, a report during a run) share the file.

    Switching a new file to WAL needs it alone, and SQLite answers "database is locked" at
    once, without waiting on the busy timeout, when another lab opens the same new store at
    that moment: so retry for as long as any other statement would wait.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.01
    while True:
        try:
            db.execute("pragma journal_mode = wal")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)


def _refuse_another_applications_database(db: sqlite3.Connection) -> None:
    """A SQLite file with tables but no store in it belongs to something else: the lab's tables
    written into it would be mixed with its own (issue 35, F11). Checked before a byte is
    written, WAL mode included."""
    tables = [
        name
        for (name,) in db.execute(
            "select name from sqlite_master where type = 'table' and name not like 'sqlite_%'"
        )
    ]
    if tables and "runs" not in tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise sqlite3.DatabaseError(f"not a pgcachelab store: it holds other tables ({shown})")


class SqliteResultStore(SqlResultStore):
    """The results store in a SQLite file: connecting, its pragmas, and its migrations."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: every write is durable on return, so a SIGKILL loses nothing written.
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        try:
            _refuse_another_applications_database(self.db)
        except sqlite3.DatabaseError:
            self.db.close()
            raise
        _switch_to_wal(self.db)
        self.db.execute("pragma foreign_keys = on")
        version = self.db.execute("pragma user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"{self.path} was written by a newer pgcachelab (v{version})")
        self.db.executescript(_SCHEMA)  # version 1's tables (a new store starts there)
        for target in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
            self._migrate_to(target)

    def _migrate_to(self, target: int) -> None:
        """One migration and its version, in one transaction: a lab killed halfway leaves the
        store as it was, and a second lab that opened the same old store at the same moment
        finds it done (the version read again under the write lock) rather than adding a
        column twice."""
        with self._transaction():
            if self.db.execute("pragma user_version").fetchone()[0] >= target:
                return
            # executescript would commit first: one statement at a time (none holds a ";")
            for statement in _MIGRATIONS[target].split(";"):
                if statement.strip():
                    self.db.execute(statement)
            if target in _FILLS:
                _FILLS[target](self)
            self.db.execute(f"pragma user_version = {target}")

    @classmethod
    def in_lab_dir(cls, lab_dir: Path) -> "SqliteResultStore":
        return cls(Path(lab_dir) / STORE_FILE)

    @classmethod
    def open_read_only(cls, path: Path) -> "SqliteResultStore":
        """Open an existing store for reading only: no directory, schema or pragma is written,
        so a reader that only looks (doctor, possibly not root) changes nothing.
        Raises sqlite3.Error when the file is missing or not readable, or when it is a store
        of an older version, whose rows lack columns every reader asks for: it is migrated by
        the next command that opens it for writing."""
        store = cls._read_only(path)
        version = store.db.execute("pragma user_version").fetchone()[0]
        if version < SCHEMA_VERSION:
            store.db.close()
            raise sqlite3.DatabaseError(
                f"written by an older pgcachelab (v{version}): `pgcachelab runs` migrates it"
            )
        return store

    @classmethod
    def _read_only(cls, path: Path) -> "SqliteResultStore":
        """The file opened read-only; refused when a newer pgcachelab wrote it."""
        store = cls.__new__(cls)
        store.path = Path(path)
        store.db = sqlite3.connect(
            f"{store.path.absolute().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S
        )
        version = store.db.execute("pragma user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            store.db.close()
            raise sqlite3.DatabaseError(f"written by a newer pgcachelab (v{version})")
        return store

    @classmethod
    def open_for_reading(cls, path: Path) -> "SqliteResultStore":
        """A store to read from, without writing a byte when it needs no migration.

        SQLite opens a WAL database read-only only where it may make the -shm file; on a
        read-only or full file system it may not, and the file is then read as immutable (no
        locks: fine for a store no lab writes at that moment, as on such a disk none can).
        An older store is opened for writing, to migrate it.
        """
        try:
            store = cls._read_only(path)
        except sqlite3.OperationalError:
            store = cls.__new__(cls)
            store.path = Path(path)
            store.db = sqlite3.connect(
                f"{store.path.absolute().as_uri()}?mode=ro&immutable=1",
                uri=True,
                timeout=BUSY_TIMEOUT_S,
            )
        version = store.db.execute("pragma user_version").fetchone()[0]
        # Reading a store checks it is one: a file of another kind fails here, not later.
        _refuse_another_applications_database(store.db)
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

    def _execute(self, statement: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        return self.db.execute(statement, params)

    def _executemany(self, statement: str, rows: Iterable[Sequence[object]]) -> None:
        self.db.executemany(statement, rows)

    _MALFORMED_JSON = (sqlite3.OperationalError,)  # "malformed JSON"

    def _json_paths(self, column: str, paths: Sequence[Sequence[str]]) -> str:
        # json_extract of several paths parses the text once and gives their JSON array (true
        # stays true); of one path it gives the value itself, so that one goes in an array
        selectors = [f"'$.{'.'.join(keys)}'" for keys in paths]
        if len(selectors) == 1:
            return f"json_array({column} -> {selectors[0]})"
        return f"json_extract({column}, {', '.join(selectors)})"

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        # Autocommit (isolation_level None) until an explicit begin; `with self.db` commits,
        # or rolls back when the block raises. Immediate: the write lock is taken (waiting on
        # the busy timeout) before the first read, since a deferred transaction that reads and
        # then writes gets "database is locked" at once if another lab wrote in between.
        with self.db:
            self.db.execute("begin immediate")
            yield
