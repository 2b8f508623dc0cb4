"""The results store's schema history: a version 1 store opens, keeps its runs, and migrates;
a version 2 store's runs get the study the lab recognised them as (schema 3, issue 50)."""

import shutil
import sqlite3
from pathlib import Path

import pytest
from test_study_registry import FIXTURE_STUDIES

from pgcachelab.store.recognised_study import recognised_study
from pgcachelab.store.records import Measurement, StoredPoint, StoredSnapshot
from pgcachelab.store.sqlite import _SCHEMA, SCHEMA_VERSION, SqliteResultStore

FIXTURE_STORE = Path(__file__).parent / "data" / "report-runs" / "results.sqlite"  # version 2


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
        assert store.db.execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION == 3
        assert store.run("old").study == "big-cache"  # measured nothing, swept nothing
        snapshot = StoredSnapshot(0, 0, 0, 2.0, "before", "extension", "fast", 1.5, None, {"a": 1})
        store.record_snapshots("old", 0, 0, [snapshot])
        store.record_snapshots("old", 0, 0, [snapshot])  # a retried repetition: replaced
        assert store.snapshots("old") == [snapshot]
    finally:
        store.close()
    SqliteResultStore(path).close()  # opening a migrated store again changes nothing


def test_store_copy_carries_cache_snapshots_once(tmp_path):
    from pgcachelab.spec import Point
    from pgcachelab.store.copy import copy_runs
    from pgcachelab.store.records import Measurement
    from pgcachelab.workloads.parameters import PgbenchParameters

    source = SqliteResultStore(tmp_path / "a.sqlite")
    destination = SqliteResultStore(tmp_path / "b.sqlite")
    point = Point(0, PgbenchParameters(), {}, {})
    run_id = source.create_run("n", "s.toml", "", {"kind": "managed"}, {}, [point], "big-cache")
    source.record_measurement(
        run_id, Measurement(0, 0, "ok", None, 1.0, 2.0, 1.0, None, 10.0, None, None, {})
    )
    taken = [StoredSnapshot(0, 0, seq, 1.0 + seq, "sample", "summary", None, 2.0, None, {"k": seq})
             for seq in range(3)]  # fmt: skip
    source.record_snapshots(run_id, 0, 0, taken)
    copy_runs(source, destination, [])
    copy_runs(source, destination, [run_id])  # again: brought up to date, never doubled
    assert destination.snapshots(run_id) == source.snapshots(run_id) == taken


def test_a_version_2_stores_runs_get_the_study_they_were_recognised_as(tmp_path):
    """The fixture store, written at version 2: each tiny run's study, as its reports have
    shown it (tests/test_study_registry.py), is stored once by the migration."""
    path = tmp_path / "results.sqlite"
    shutil.copyfile(FIXTURE_STORE, path)
    assert sqlite3.connect(path).execute("pragma user_version").fetchone() == (2,)
    store = SqliteResultStore(path)
    assert {run.name: run.study for run in store.runs()} == FIXTURE_STUDIES
    store.close()
    # again, and by a second lab at once: the version is read under the write lock
    first, second = SqliteResultStore(path), SqliteResultStore(path)
    assert {run.name: run.study for run in second.runs()} == FIXTURE_STUDIES
    first.close()
    second.close()


def test_a_new_run_stores_its_study_and_a_copy_keeps_it(tmp_path):
    from pgcachelab.spec.load import parse_spec
    from pgcachelab.store.copy import copy_runs

    spec = parse_spec('workload = "tpcc"\n', Path("t.toml"))
    points = [point.to_store() for point in spec.points()]
    source = SqliteResultStore(tmp_path / "a.sqlite")
    run_id = source.create_run("t", "t.toml", "", {}, {}, points, spec.study)
    assert source.run(run_id).study == "tpcc"
    destination = SqliteResultStore(tmp_path / "b.sqlite")
    copy_runs(source, destination, [run_id])
    assert destination.run(run_id).study == "tpcc"


def _ok(repetition: int, metrics: dict) -> Measurement:
    return Measurement(0, repetition, "ok", None, 0.0, 1.0, 1.0, None, 1.0, None, None, metrics)


WASH = {"cache_wash": {"idx1_ms": [1.0], "seq_ms": [2.0], "idx2_ms": [1.0]}}


@pytest.mark.parametrize(
    "environment, swept, measurements, study",
    [
        ({}, {"clients": 1}, [_ok(0, {})], "big-cache"),
        ({}, {"clients": 1}, [_ok(0, WASH)], "cache-wash"),
        ({}, {"version": "18"}, [_ok(0, {"tpcc": {}})], "tpcc"),
        ({}, {"version": "18", "inspect_method": "none"}, [], "inspect-overhead"),
        ({}, {"version": "18"}, [_ok(0, {"cache_wash": {}})], "versions"),  # an empty wash
        # a warm-up repetition was never counted, so never recognised
        ({"schedule": {"warmup_repetitions": 1}}, {"clients": 1}, [_ok(0, WASH)], "big-cache"),
        ({"schedule": {"warmup_repetitions": 1}}, {}, [_ok(0, {}), _ok(1, WASH)], "cache-wash"),
    ],
)
def test_the_recognition_of_old_runs_is_the_registrys_of_its_time(
    environment, swept, measurements, study
):
    points = [StoredPoint(0, "p", swept, {}, {})]
    assert recognised_study(environment, points, measurements) == study
