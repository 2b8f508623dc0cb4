"""A measurement's metrics as the type checker sees them (store/metric_types.py, issue 50): the
TypedDict names exactly the keys of the one table of them (store/metric_keys.py), and the
groups' types hold for the values real runs stored (the fixture store)."""

import json
import sqlite3
import types
import typing
from pathlib import Path

import pytest

from pgcachelab.store import metric_types
from pgcachelab.store.metric_keys import METRICS
from pgcachelab.store.metric_types import (
    MeasurementMetrics,
    TpccMetrics,
    percentile_ms,
    wash_phase_ms,
)
from pgcachelab.store.records import from_json
from pgcachelab.workloads.pgbench_log import LoggedTransaction
from pgcachelab.workloads.tpcc.checks import CheckResult
from pgcachelab.workloads.tpcc.deck import check_mix
from pgcachelab.workloads.tpcc.driver import RunOptions, TpccRun
from pgcachelab.workloads.tpcc.results import summarise
from pgcachelab.workloads.tpcc_workload import tpcc_metrics

FIXTURE_STORE = Path(__file__).parent / "data" / "report-runs" / "results.sqlite"


def test_the_typed_metrics_name_every_documented_key_and_no_other():
    assert set(MeasurementMetrics.__annotations__) == set(METRICS)
    assert not MeasurementMetrics.__required_keys__  # a failed measurement lacks most of them


def _is_typeddict(kind: object) -> bool:
    return isinstance(kind, type) and typing.is_typeddict(kind)


def _mismatches(value: object, kind: object, where: str) -> list[str]:
    """Where `value` (decoded JSON) is not of `kind`, for the types metric_types.py uses."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is object:
        return []
    if origin in (typing.Union, types.UnionType):
        found = [_mismatches(value, arg, where) for arg in args]
        return [] if any(not f for f in found) else found[0]
    if _is_typeddict(kind):
        if not isinstance(value, dict):
            return [f"{where}: not a table"]
        hints = typing.get_type_hints(kind)
        missing = [f"{where}.{key}: missing" for key in sorted(kind.__required_keys__ - set(value))]
        return missing + [
            problem
            for key, item in value.items()
            if key in hints
            for problem in _mismatches(item, hints[key], f"{where}.{key}")
        ]
    if origin in (list, tuple):
        if not isinstance(value, list):  # JSON arrays, whatever the tuple says
            return [f"{where}: not a list"]
        if origin is tuple:
            return [
                p
                for item, arg in zip(value, args, strict=False)
                for p in _mismatches(item, arg, where)
            ]
        return [p for item in value for p in _mismatches(item, args[0], f"{where}[]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: not a table"]
        return [p for k, item in value.items() for p in _mismatches(item, args[1], f"{where}.{k}")]
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is type(None):
        ok = value is None
    else:
        ok = isinstance(value, kind)  # type: ignore[arg-type]
    return [] if ok else [f"{where}: {value!r} is not {getattr(kind, '__name__', kind)}"]


def test_the_fixture_runs_metrics_are_of_their_types():
    rows = sqlite3.connect(FIXTURE_STORE).execute("select metrics from measurements").fetchall()
    assert rows
    seen: set[str] = set()
    for (text,) in rows:
        metrics = from_json(text)
        seen |= set(metrics)
        assert _mismatches(metrics, MeasurementMetrics, "metrics") == []
    # the groups the read side reads most were there to check
    assert {"pgbench", "latency", "cache_wash", "resources", "probes", "disk", "tpcc"} <= seen


def _tpcc_run() -> TpccRun:
    """A small TPC-C run, as the driver returns it (one New-Order and one Payment logged)."""
    names = ["new_order", "payment"]
    logged = [LoggedTransaction(0, n, 1000, n, 1000, n) for n in range(len(names))]
    return TpccRun(
        summary=summarise(logged, names, 60.0),
        warehouses=1,
        c_last_load=1,
        c_last_run=70,
        rollbacks=0,
        retries=None,
        failures_by_kind={},
        client_cpu_s=0.01,
        rate_limited=False,
        pgbench_version="15.8",
        options=RunOptions(rate_tpm=300.0),
        settings={},
        checks=[CheckResult("warehouse ytd", 0)],
        script_names=names,
        mix=check_mix({"new_order": 1, "payment": 1}, standard=True),
    )


def test_the_typed_tpcc_metrics_name_every_key_the_workload_stores():
    stored = json.loads(json.dumps(tpcc_metrics(_tpcc_run())))  # as the store reads it back
    assert set(TpccMetrics.__annotations__) == set(stored)
    assert stored["series"] and stored["checks"] and stored["by_type"]  # their items checked
    assert _mismatches(stored, TpccMetrics, "tpcc") == []


def test_the_checker_finds_a_wrong_type():
    bad = {"pgbench": {"progress": [{"elapsed_s": "1"}]}, "fleet": {"host_class": 3}}
    assert _mismatches(bad, MeasurementMetrics, "metrics") == [
        "metrics.pgbench.progress[].elapsed_s: '1' is not float",
        "metrics.fleet.host_class: 3 is not str",
    ]


@pytest.mark.parametrize("name", ["p50", "p95", "p99", "p999"])
def test_a_percentile_is_read_by_its_name(name):
    assert percentile_ms({f"{name}_ms": 1.5}, name) == 1.5  # type: ignore[misc]
    assert percentile_ms({}, name) is None


def test_a_wash_phase_is_read_by_its_name():
    wash: metric_types.CacheWashMetrics = {"idx1_ms": [1.0], "seq_ms": [2.0]}
    assert [wash_phase_ms(wash, p) for p in ("idx0", "idx1", "seq", "idx2")] == [
        [],
        [1.0],
        [2.0],
        [],
    ]
