"""A store read of a few figures of each measurement (issue 24): the database picks them out
of the metrics' JSON, and what it returns is what picking them from every figure gives, NaN
(which the database's JSON refuses) included."""

import math
from types import SimpleNamespace

import pytest

from pgcachelab.store.records import (
    Measurement,
    MetricNotRead,
    metric_path,
    nest_metrics,
    pick_metrics,
)
from pgcachelab.store.sqlite import SqliteResultStore

METRICS = {
    "load": 1.5791015625,
    "flag": True,
    "name": "wash",
    "nested": {"samples": [1, 2.5], "gone": None, "deeper": {"n": 7}},
    "other": {"big": list(range(100))},
}


def _store_with(tmp_path, *metrics: dict) -> tuple[SqliteResultStore, str]:
    store = SqliteResultStore(tmp_path / "results.sqlite")
    point = SimpleNamespace(index=0, label="p", swept={}, workload={}, settings={})
    run_id = store.create_run("n", "spec.toml", "", {}, {}, [point], "big-cache")
    for repetition, figures in enumerate(metrics):
        store.record_measurement(run_id, Measurement(0, repetition, "ok", None, 1.0, 2.0, 1.0,
                                                     None, 10.0, None, None, figures))  # fmt: skip
    return store, run_id


def test_picking_nests_each_path_and_leaves_out_what_is_absent():
    paths = ("load", "nested.samples", "nested.gone", "nested.deeper.n", "missing", "load.x")
    assert pick_metrics(METRICS, paths) == {
        "load": 1.5791015625,
        "nested": {"samples": [1, 2.5], "deeper": {"n": 7}},
    }
    assert nest_metrics(("a.b", "a.c", "d"), (1, None, [2])) == {"a": {"b": 1}, "d": [2]}


@pytest.mark.parametrize("path", ["", "a..b", "a.B", "$.a", "a'b", "a.b; drop table runs"])
def test_a_path_of_other_characters_is_refused(path):
    with pytest.raises(ValueError, match="not a metrics path"):
        metric_path(path)


@pytest.mark.parametrize(
    "paths",
    [
        ("flag",),  # one path: its value alone
        ("name",),
        ("nested",),
        ("load", "flag", "name", "nested.samples", "nested.gone", "nested.deeper", "missing"),
    ],
)
def test_the_sqlite_store_picks_what_python_picks(tmp_path, paths):
    store, run_id = _store_with(tmp_path, METRICS, {"load": 2.0})
    picked = store.measurements(run_id, paths)
    everything = store.measurements(run_id)
    assert [m.metrics for m in picked] == [pick_metrics(m.metrics, paths) for m in everything]
    assert [(m.point_index, m.repetition, m.tps) for m in picked] == [(0, 0, 10.0), (0, 1, 10.0)]
    if "flag" in paths:
        assert picked[0].metrics["flag"] is True  # not SQLite's 1
    store.close()


def test_a_measurement_with_nan_is_picked_in_python(tmp_path):
    store, run_id = _store_with(tmp_path, {"load": float("nan"), "n": 2}, {"load": 1.0, "n": 3})
    picked = store.measurements(run_id, ("load", "n"))
    assert math.isnan(picked[0].metrics["load"])
    assert [m.metrics["n"] for m in picked] == [2, 3]
    assert picked[1].metrics == {"load": 1.0, "n": 3}
    store.close()


def test_a_figure_no_path_covers_fails_loudly_instead_of_reading_as_absent():
    metrics = nest_metrics(["data.scale", "pgbench", "probes.database"], [5, {"tps": 1.0}, None])
    assert metrics["data"]["scale"] == 5 and metrics.get("pgbench") == {"tps": 1.0}
    assert metrics.get("probes") is None and "probes" not in metrics  # covered, stored as absent
    for reader in (
        lambda: metrics.get("wait_events"),
        lambda: metrics["wait_events"],
        lambda: "wait_events" in metrics,
        lambda: metrics["data"].get("size"),
    ):
        with pytest.raises(MetricNotRead, match="was not read"):
            reader()
