"""The results store's schema history: a version 1 store opens, keeps its runs, and migrates."""

import sqlite3

from pgcachelab.store.sqlite import _SCHEMA, SCHEMA_VERSION, ResultStore, StoredSnapshot


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

    store = ResultStore(path)
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
    ResultStore(path).close()  # opening a migrated store again changes nothing
