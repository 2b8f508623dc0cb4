"""The results store's schema history: a version 1 store opens, keeps its runs, and migrates."""

import sqlite3

from pgcachelab.store.records import StoredSnapshot
from pgcachelab.store.sqlite import _SCHEMA, SCHEMA_VERSION, SqliteResultStore


def _version_1_store(path) -> None:
    """A store as version 1 wrote it: its four tables (the same _SCHEMA) and user_version 1."""
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA)
    db.execute(
        "insert into runs (run_id, name, spec_path, spec_text, target, environment, status,"
        " created_at) values ('old', 'n', 'p', 't', '{}', '{}', 'done', 1.0)"
    )
    db.execute("pragma user_version = 1")
    db.commit()
    db.close()


def test_a_version_1_store_is_migrated_and_keeps_its_runs(tmp_path):
    path = tmp_path / "results.sqlite"
    _version_1_store(path)

    store = SqliteResultStore(path)
    try:
        assert [run.run_id for run in store.runs()] == ["old"]
        assert store.snapshots("old") == []
        assert store.db.execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION == 2
        snapshot = StoredSnapshot(0, 0, 0, 2.0, "before", "extension", "fast", 1.5, None, {"a": 1})
        store.record_snapshots("old", 0, 0, [snapshot])
        store.record_snapshots("old", 0, 0, [snapshot])  # a retried repetition: replaced
        assert store.snapshots("old") == [snapshot]
    finally:
        store.close()
    SqliteResultStore(path).close()  # opening a migrated store again changes nothing


def test_store_copy_carries_cache_snapshots_once(tmp_path):
    from pgcachelab.experiments.spec import Point
    from pgcachelab.store.copy import copy_runs
    from pgcachelab.store.records import Measurement
    from pgcachelab.workloads.parameters import PgbenchParameters

    source = SqliteResultStore(tmp_path / "a.sqlite")
    destination = SqliteResultStore(tmp_path / "b.sqlite")
    point = Point(0, PgbenchParameters(), {}, {})
    run_id = source.create_run("n", "s.toml", "", {"kind": "managed"}, {}, [point])
    source.record_measurement(
        run_id, Measurement(0, 0, "ok", None, 1.0, 2.0, 1.0, None, 10.0, None, None, {})
    )
    taken = [StoredSnapshot(0, 0, seq, 1.0 + seq, "sample", "summary", None, 2.0, None, {"k": seq})
             for seq in range(3)]  # fmt: skip
    source.record_snapshots(run_id, 0, 0, taken)
    copy_runs(source, destination, [])
    copy_runs(source, destination, [run_id])  # again: brought up to date, never doubled
    assert destination.snapshots(run_id) == source.snapshots(run_id) == taken
