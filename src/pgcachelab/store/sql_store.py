"""The results store's data methods, written once for SQLite and PostgreSQL.

Every statement names its columns, so a column added by a migration never shifts what a
reader gets, and writes with one upsert form (`on conflict (key) do update`, SQLite 3.24+).
Placeholders are DB-API's qmark (`?`); a database module that takes another style converts
them in its `_execute`. What differs between the databases (connecting, pragmas or
search_path, transactions, migrations) lives in store/sqlite.py and store/postgresql.py.
"""

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import fields
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from pydantic import ValidationError

from pgcachelab.errors import UserError
from pgcachelab.secrets import split_secrets
from pgcachelab.store.records import (
    Measurement,
    PointToStore,
    Run,
    StoredPoint,
    StoredSnapshot,
    abandoned,
    from_json,
    group_snapshots,
    metric_path,
    nest_metrics,
    new_run_id,
    pick_metrics,
    to_json,
)
from pgcachelab.store.run_types import ServerSettings
from pgcachelab.workloads.parameters import PointParameters, stored_parameters

# A table's columns are its record's fields, in order (the measurement's tables have run_id
# first): a field without its column fails every statement at once, not one reader later.
RUN_COLUMNS = tuple(f.name for f in fields(Run))
POINT_COLUMNS = ("run_id", *(f.name for f in fields(StoredPoint)))
MEASUREMENT_COLUMNS = ("run_id", *(f.name for f in fields(Measurement)))
SERVER_SETTINGS_COLUMNS = ("run_id", "point_index", "settings")
SNAPSHOT_COLUMNS = ("run_id", *(f.name for f in fields(StoredSnapshot)))
# What a run copied again from another store may change: its state, never its spec.
RUN_STATE_COLUMNS = ("status", "lab_pid", "work_dir", "finished_at", "failure")


def _names(columns: Sequence[str]) -> str:
    return ", ".join(columns)


def insert(
    table: str, columns: Sequence[str], key: Sequence[str], update: Sequence[str] = ()
) -> str:
    """`insert` of every column; on a row with the same `key`, `update` those columns from the
    new row, or (none given) keep the row that is there."""
    on_conflict = (
        "do update set " + ", ".join(f"{c} = excluded.{c}" for c in update)
        if update
        else "do nothing"
    )
    return (
        f"insert into {table} ({_names(columns)}) values ({', '.join('?' * len(columns))})"
        f" on conflict ({_names(key)}) {on_conflict}"
    )


def select(
    table: str, columns: Sequence[str], where: str | None, order_by: Sequence[str] = ()
) -> str:
    condition = f" where {where}" if where else ""
    order = f" order by {_names(order_by)}" if order_by else ""
    return f"select {_names(columns)} from {table}{condition}{order}"


_MEASUREMENT_KEY = ("run_id", "point_index", "repetition")
_INSERT_RUN = insert("runs", RUN_COLUMNS, ("run_id",), RUN_STATE_COLUMNS)
_INSERT_POINT = insert("points", POINT_COLUMNS, ("run_id", "point_index"))
_INSERT_MEASUREMENT = insert(
    "measurements",
    MEASUREMENT_COLUMNS,
    _MEASUREMENT_KEY,
    MEASUREMENT_COLUMNS[len(_MEASUREMENT_KEY) :],
)
_INSERT_SERVER_SETTINGS = insert(
    "point_server_settings", SERVER_SETTINGS_COLUMNS, ("run_id", "point_index"), ("settings",)
)
_INSERT_SNAPSHOT = insert("cache_snapshots", SNAPSHOT_COLUMNS, (*_MEASUREMENT_KEY, "seq"))
_DELETE_SNAPSHOTS = (
    "delete from cache_snapshots where run_id = ? and point_index = ? and repetition = ?"
)
_BY_RUN = "run_id = ?"
_TABLES = {
    Run: "runs",
    StoredPoint: "points",
    Measurement: "measurements",
    StoredSnapshot: "cache_snapshots",
}
# Text columns that hold JSON (text, not jsonb: see store/postgresql.py); an empty one is None.
_JSON_COLUMNS = {
    Run: ("target", "environment"),
    StoredPoint: ("swept", "workload", "settings"),
    Measurement: ("metrics",),
    StoredSnapshot: ("data",),
}


# A stored record, one of a table's rows
StoredRecord = TypeVar("StoredRecord", Run, StoredPoint, Measurement, StoredSnapshot)


class Cursor(Protocol):
    """What a statement returns (a DB-API cursor of sqlite3 or psycopg). A row's values are
    the driver's, of the types of the columns the statement selects: the record built from
    them (or the JSON decoded from them) gives them their types."""

    @property
    def rowcount(self) -> int: ...

    def fetchall(self) -> list[Any]: ...


class SqlResultStore:
    """The ResultStore protocol (store/records.py) on a DB-API connection; a subclass connects,
    migrates, and provides `_execute`, `_executemany` and `_transaction`."""

    def _execute(self, statement: str, params: Sequence[object] = ()) -> Cursor:
        """Run one statement (qmark placeholders); the cursor, to fetch from."""
        raise NotImplementedError

    def _executemany(self, statement: str, rows: Iterable[Sequence[object]]) -> None:
        raise NotImplementedError

    def _transaction(self) -> AbstractContextManager[object]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        raise NotImplementedError

    # What the database raises on a JSON text it cannot parse.
    _MALFORMED_JSON: tuple[type[Exception], ...] = ()

    def _json_paths(self, column: str, paths: Sequence[Sequence[str]]) -> str:
        """An SQL expression: a JSON array of the values at `paths` (keys) in the JSON text
        `column`, null where one is absent."""
        raise NotImplementedError

    # -- writing ---------------------------------------------------------------------------

    def create_run(
        self,
        name: str,
        spec_path: str | Path,
        spec_text: str,
        target: Mapping[str, object],
        environment: Mapping[str, object],
        points: Iterable[PointToStore],
        study: str,
    ) -> str:
        # The row as a Run would give it: the target and environment are the JSON their
        # writers made (clusters/targets.py, probes/environment.py), typed when read back.
        run_id = new_run_id()
        row: dict[str, object] = {
            "run_id": run_id,
            "name": name,
            "spec_path": str(spec_path),
            "spec_text": spec_text,
            "target": to_json(target),
            "environment": to_json(environment),
            "status": "running",
            "lab_pid": None,
            "work_dir": None,
            "created_at": time.time(),
            "finished_at": None,
            "failure": None,
            "study": study,
        }
        stored = [StoredPoint(p.index, p.label, p.swept, p.workload, p.settings) for p in points]
        with self._transaction():
            self._execute(_INSERT_RUN, tuple(row[column] for column in RUN_COLUMNS))
            self._write_points(run_id, stored)
        return run_id

    def _write_run(self, run: Run, points: Sequence[StoredPoint]) -> None:
        self._execute(_INSERT_RUN, _values(run, RUN_COLUMNS))
        self._write_points(run.run_id, points)

    def _write_points(self, run_id: str, points: Sequence[StoredPoint]) -> None:
        rows = [(run_id, *_values(p, POINT_COLUMNS[1:])) for p in points]
        self._executemany(_INSERT_POINT, rows)

    def mark_running(self, run_id: str, lab_pid: int, work_dir: str | None) -> None:
        self._execute(
            "update runs set status = 'running', lab_pid = ?, work_dir = ?, finished_at = null,"
            " failure = null where run_id = ?",
            (lab_pid, work_dir, run_id),
        )

    def set_work_dir(self, run_id: str, work_dir: str | None) -> None:
        self._execute("update runs set work_dir = ? where run_id = ?", (work_dir, run_id))

    def finish_run(
        self, run_id: str, status: str, failure: str | None = None, kept_dir: str | None = None
    ) -> None:
        """`kept_dir`: a cluster kept for --resume (its data took long to build)."""
        self._execute(
            "update runs set status = ?, finished_at = ?, failure = ?, lab_pid = null,"
            " work_dir = ? where run_id = ?",
            (status, time.time(), failure, kept_dir, run_id),
        )

    def record_measurement(self, run_id: str, m: Measurement) -> None:
        """Insert or replace: a retried repetition is present exactly once."""
        self._execute(_INSERT_MEASUREMENT, (run_id, *_values(m, MEASUREMENT_COLUMNS[1:])))

    def record_measurement_once(self, run_id: str, m: Measurement) -> bool:
        """Store a measurement unless a succeeded one of its (point, repetition) is there
        already: a failed try's row is replaced, a succeeded one never (the fleet's guarantee,
        store/queue.py). False when nothing was written."""
        found = self._execute(
            _INSERT_MEASUREMENT + " where measurements.status <> 'ok'",
            (run_id, *_values(m, MEASUREMENT_COLUMNS[1:])),
        )
        return found.rowcount == 1

    def record_server_settings(
        self, run_id: str, point_index: int, settings: ServerSettings
    ) -> None:
        self._execute(_INSERT_SERVER_SETTINGS, (run_id, point_index, to_json(settings)))

    def record_snapshots(
        self, run_id: str, point_index: int, repetition: int, snapshots: Sequence[StoredSnapshot]
    ) -> None:
        """Replace the measurement's snapshots: a retried repetition keeps only its own."""
        with self._transaction():
            self._write_snapshots(run_id, point_index, repetition, snapshots)

    def _write_snapshots(
        self,
        run_id: str,
        point_index: int,
        repetition: int,
        snapshots: Sequence[StoredSnapshot],
    ) -> None:
        self._execute(_DELETE_SNAPSHOTS, (run_id, point_index, repetition))
        columns = SNAPSHOT_COLUMNS[3:]  # run, point and repetition: this measurement's
        rows = [(run_id, point_index, repetition, *_values(s, columns)) for s in snapshots]
        self._executemany(_INSERT_SNAPSHOT, rows)

    def import_run(
        self,
        run: Run,
        points: Sequence[StoredPoint],
        measurements: Sequence[Measurement],
        server_settings: dict[int, ServerSettings],
        snapshots: Sequence[StoredSnapshot] = (),
    ) -> bool:
        """Write a run read from another store, in one transaction; True if it was new here.

        Idempotent: a run already here gets its state and any new or retried measurements,
        never a second copy of a row.
        """
        with self._transaction():
            new = self.run(run.run_id) is None
            self._write_run(run, points)
            for m in measurements:
                self.record_measurement(run.run_id, m)
            for point_index, settings in server_settings.items():
                self.record_server_settings(run.run_id, point_index, settings)
            for key, group in group_snapshots(snapshots).items():
                self._write_snapshots(run.run_id, *key, group)
        return new

    # -- reading ---------------------------------------------------------------------------

    def runs(self) -> list[Run]:
        return self._records(Run, RUN_COLUMNS, None, (), ("created_at",))

    def run(self, run_id: str) -> Run | None:
        found = self._records(Run, RUN_COLUMNS, _BY_RUN, (run_id,))
        return found[0] if found else None

    def points(self, run_id: str) -> list[StoredPoint]:
        return self._records(StoredPoint, POINT_COLUMNS[1:], _BY_RUN, (run_id,), ("point_index",))

    def measurements(self, run_id: str, metrics: Sequence[str] | None = None) -> list[Measurement]:
        """`metrics`: the dotted paths ("probes.database") of the figures to read; each
        measurement's metrics then holds only those it has, nested as stored. The database
        picks them out: a report needs a few of a measurement's hundreds of figures, and
        decoding them all was most of its time at 100,000 measurements (issue 24).
        None: every figure."""
        order = ("point_index", "repetition")
        if metrics is None:
            return self._records(Measurement, MEASUREMENT_COLUMNS[1:], _BY_RUN, (run_id,), order)
        paths = list(metrics)
        columns = MEASUREMENT_COLUMNS[1:-1]  # then the metrics, as a JSON array of the paths
        picked = self._json_paths("metrics", [metric_path(p) for p in paths])
        statement = select("measurements", (*columns, picked), _BY_RUN, order)
        try:
            rows = self._execute(statement, (run_id,)).fetchall()
        except self._MALFORMED_JSON:
            # Python writes NaN and Infinity, which the database's JSON refuses: pick in Python.
            everything = self.measurements(run_id)
            for m in everything:
                m.metrics = pick_metrics(m.metrics, paths)
            return everything
        # each row's last column, the JSON of the picked paths, becomes the nested metrics
        # the JSON array of the picked paths, one value a path
        return [
            dataclasses.replace(
                Measurement(*row),
                metrics=nest_metrics(paths, cast(list[object], from_json(row[-1]))),
            )
            for row in rows
        ]

    def completed(self, run_id: str) -> set[tuple[int, int]]:
        """(point, repetition) pairs measured successfully: what a resume skips."""
        columns, where = ("point_index", "repetition"), f"{_BY_RUN} and status = 'ok'"
        rows = self._execute(select("measurements", columns, where), (run_id,)).fetchall()
        return {(point, repetition) for point, repetition in rows}

    def server_settings(self, run_id: str) -> dict[int, ServerSettings]:
        statement = select("point_server_settings", SERVER_SETTINGS_COLUMNS[1:], _BY_RUN)
        rows = self._execute(statement, (run_id,)).fetchall()
        # the JSON probes/settings.py's collect_settings wrote
        return {point: cast(ServerSettings, from_json(settings)) for point, settings in rows}

    def snapshots(self, run_id: str) -> list[StoredSnapshot]:
        order = ("point_index", "repetition", "seq")
        return self._records(StoredSnapshot, SNAPSHOT_COLUMNS[1:], _BY_RUN, (run_id,), order)

    def _records(
        self,
        record: type[StoredRecord],
        columns: Sequence[str],
        where: str | None,
        params: Sequence[object],
        order_by: Sequence[str] = (),
    ) -> list[StoredRecord]:
        """Rows of `columns` as `record` values, their JSON columns decoded."""
        rows = self._execute(select(_TABLES[record], columns, where, order_by), params)
        found: list[StoredRecord] = []
        for row in rows.fetchall():
            values = dict(zip(columns, row, strict=True))
            for column in _JSON_COLUMNS[record]:
                values[column] = from_json(values[column]) if values[column] else None
            if record is Run:
                values["target"] = _target_without_secrets(values["target"])
            if record is StoredPoint:
                values["workload"] = _point_parameters(values)
            found.append(record(**values))
        return found

    def abandoned_runs(self) -> list[Run]:
        """Runs of this host marked running whose lab process is gone (killed)."""
        return abandoned(self.runs())


def _point_parameters(values: Mapping[str, object]) -> PointParameters:
    """A stored point's parameters, typed; a point no model reads is a UserError."""
    try:
        # the point's JSON as stored: its parameters' record()
        return stored_parameters(cast(dict[str, object], values["workload"]))
    except ValidationError as error:
        detail = error.errors()[0]
        why = f"{'.'.join(map(str, detail['loc']))}: {detail['msg'].lower()}"
    except ValueError as error:
        why = str(error)
    # a newer lab's key, or a damaged store: no report of it could be right
    raise UserError(
        f"point {values['point_index']} of the run: its stored parameters do not read: {why}",
        "read the run with the version of the lab that stored it",
    )


def _values(
    record: Run | StoredPoint | Measurement | StoredSnapshot, columns: Sequence[str]
) -> tuple[object, ...]:
    """The record's `columns` as a row to write, its JSON columns encoded (a point's
    parameters as their record())."""
    encoded = _JSON_COLUMNS[type(record)]
    values = (
        value.record() if isinstance(value, PointParameters) else value
        for value in (getattr(record, column) for column in columns)
    )
    return tuple(
        to_json(value) if column in encoded and value is not None else value
        for column, value in zip(columns, values, strict=True)
    )


def _target_without_secrets(target: object) -> object:
    """A run's target as read back: a --dsn run stored before issue 48 kept sslpassword in its
    conninfo, and no report, export or show may print it."""
    if isinstance(target, dict) and isinstance(conninfo := target.get("conninfo"), dict):
        return {**target, "conninfo": split_secrets(conninfo)[0]}
    return target
