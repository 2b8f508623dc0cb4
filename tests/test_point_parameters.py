"""Typed points (issue 36): each workload's parameters as one frozen object, stored as the
dict runs stored before; and what the runner asks of a workload instead of its name."""

import dataclasses
import json
from pathlib import Path

import pytest

from pgcachelab.experiments.spec import parse_spec
from pgcachelab.experiments.spec.schema import POINT_MODELS
from pgcachelab.store.records import to_json
from pgcachelab.workloads.registry import WORKLOADS
from pgcachelab.workloads.tpcc.checks import ConsistencyError


def _spec(text: str):
    return parse_spec(text, Path("x.toml"))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_typed_parameters_mirror_the_spec_point_model(name):
    """A key added to the spec's model and not to the typed parameters (or the reverse) would
    be dropped from every point, silently."""
    typed = WORKLOADS[name].parameters_type
    stored = {f.name for f in dataclasses.fields(typed) if f.metadata.get("stored", True)}
    assert stored == set(POINT_MODELS[name].model_fields)


def test_a_point_is_stored_as_runs_stored_it_before_typed_points():
    # The dicts below are what the code before typed points stored for the same specs.
    [point] = _spec("[pgbench]\nclients = 2\n").points()
    assert point.to_store().workload == {
        "mode": "select-only", "scripts": [], "scale": 1, "scale_class": None, "clients": 2,
        "threads": 1, "duration": 10.0, "transactions": None, "progress": 1,
        "per_statement": False, "init_steps": None, "warmup": 0.0, "rate": None,
        "latency_limit": None, "protocol": "simple", "max_tries": None, "progress_warmup": 1.0,
        "os_cache": "keep", "prewarm": False,
    }  # fmt: skip
    [point] = _spec('workload = "cache-wash"\n[sweep]\ndisk = ["nvme"]\n').points()
    record = point.to_store().workload
    assert record == {
        "table_size": 1.0, "lookups": 100, "warmup": 100.0, "warmup_lookups": None,
        "prewarm": True, "os_cache": "keep", "disk": "nvme",
    }  # fmt: skip
    assert json.loads(to_json(record)) == record


def test_run_time_changes_are_typed_and_never_stored():
    [point] = _spec("[pgbench]\nprogress = 0\n").points()
    windows = point.with_workload(progress=1, progress_timestamp=True)
    assert (windows.workload.progress, windows.workload.progress_timestamp) == (1, True)
    assert "progress_timestamp" not in windows.to_store().workload
    assert point.workload.progress == 0  # frozen: the plan's point is left as it was
    with pytest.raises(TypeError):
        point.with_workload(no_such_key=1)


def test_a_scale_class_is_sized_for_the_memory_and_only_pgbench_has_one():
    [point] = _spec('[pgbench]\nscale_class = "large"\n').points()
    assert point.workload.sized_by_memory
    sized = point.workload.sized_for(128 * 2**20, 2**30)
    assert sized.scale == round(1.5 * 2**30 / 15_400_000) and sized.scale_class == "large"
    [wash] = _spec('workload = "cache-wash"').points()
    assert not wash.workload.sized_by_memory
    assert wash.workload.sized_for(1, 1) is wash.workload


def test_the_runner_asks_the_workload_not_its_name():
    pgbench, wash, tpcc = WORKLOADS["pgbench"], WORKLOADS["cache-wash"], WORKLOADS["tpcc"]
    assert [w.keeps_data for w in (pgbench, wash, tpcc)] == [False, True, False]
    assert [w.prewarms_itself for w in (pgbench, wash, tpcc)] == [False, True, False]
    assert [w.prewarm_after_version_switch for w in (pgbench, wash, tpcc)] == [True, False, False]
    assert tpcc.run_stopping_errors == (ConsistencyError,)
    assert pgbench.run_stopping_errors == wash.run_stopping_errors == ()


def test_the_data_estimates_name_the_key_that_sizes_the_data():
    [point] = _spec("[pgbench]\nscale = 10\n").points()
    estimate = WORKLOADS["pgbench"].data_estimate(point.workload, None)
    assert (estimate.identity, estimate.key) == ((10, None), "pgbench.scale")
    assert estimate.build.startswith("pgbench -i at scale 10 ")
    custom = _spec("").points()[0].workload.changed(mode="custom", scripts=())
    assert WORKLOADS["pgbench"].data_estimate(custom, None) is None  # it brings its own data
    [wash] = _spec('workload = "cache-wash"\n[cache_wash]\ntable_size = 0.5').points()
    unknown = WORKLOADS["cache-wash"].data_estimate(wash.workload, None)
    assert unknown.identity == 0.5 and "0.5 x the server's memory" in unknown.build
    assert WORKLOADS["cache-wash"].data_estimate(wash.workload, 2**30).size_bytes == 2**29
    [tpcc] = _spec('workload = "tpcc"\n[tpcc]\nwarehouses = 2').points()
    assert WORKLOADS["tpcc"].data_estimate(tpcc.workload, None).key == "tpcc.warehouses"


def test_the_known_seconds_of_each_workload():
    [pgbench] = _spec('[pgbench]\nwarmup = "5s"\nduration = "20s"').points()
    assert WORKLOADS["pgbench"].known_seconds(pgbench.workload) == (25.0, [])
    by_count = pgbench.workload.changed(transactions=1000)
    seconds, left_out = WORKLOADS["pgbench"].known_seconds(by_count)
    assert seconds == 5.0 and "1,000 transactions" in left_out[0]
    [wash] = _spec('workload = "cache-wash"').points()
    seconds, left_out = WORKLOADS["cache-wash"].known_seconds(wash.workload)
    assert seconds == 100.0 and left_out[0] == "pg_prewarm of the table and index"
