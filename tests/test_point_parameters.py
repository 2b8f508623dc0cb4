"""Typed points (issues 36, 50): each workload's parameters as one frozen model, shared by the
spec, the runner and the results store, stored as the dict runs stored before and read back as
the same model; and what the runner asks of a workload instead of its name."""

import json
import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from pgcachelab.errors import UserError
from pgcachelab.spec import parse_spec
from pgcachelab.store.records import from_json, to_json
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.workloads.parameters import (
    PARAMETERS,
    CacheWashParameters,
    PgbenchParameters,
    PointKeys,
    TpccParameters,
    stored_parameters,
)
from pgcachelab.workloads.registry import WORKLOADS
from pgcachelab.workloads.tpcc.checks import ConsistencyError
from pgcachelab.workloads.values import Script

FIXTURE_STORE = Path(__file__).parent / "data" / "report-runs" / "results.sqlite"


def _spec(text: str):
    return parse_spec(text, Path("x.toml"))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_spec_and_the_runner_share_one_model_per_workload(name):
    """The spec's point values are validated by the model the runner's points carry: a key of
    the spec's table is a key of every point, and no other model defines it again."""
    model = WORKLOADS[name].parameters_type
    assert model is PARAMETERS[name] and model.model_config["frozen"]
    assert set(model.table.model_fields) | set(PointKeys.model_fields) <= set(model.model_fields)
    [point] = _spec(f'workload = "{name}"').points()
    assert type(point.workload) is model
    with pytest.raises(ValidationError):
        point.workload.clients = 3  # type: ignore[misc]  # frozen: what the test checks


def test_each_workload_is_told_by_a_key_only_its_points_store():
    keys = {name: model.stored_key for name, model in PARAMETERS.items()}
    for name, model in PARAMETERS.items():
        assert keys[name] in model.table.model_fields
        assert all(
            keys[name] not in other.model_fields
            for other in PARAMETERS.values()
            if other is not model
        )
        [point] = _spec(f'workload = "{name}"').points()
        assert keys[name] in point.workload.record()


def test_a_point_is_stored_as_runs_stored_it_before_typed_points():
    # The dicts below are what the code before typed points stored for the same specs.
    [point] = _spec("[pgbench]\nclients = 2\n").points()
    assert point.to_store().workload.record() == {
        "mode": "select-only", "scripts": [], "scale": 1, "scale_class": None, "clients": 2,
        "threads": 1, "duration": 10.0, "transactions": None, "progress": 1,
        "per_statement": False, "init_steps": None, "warmup": 0.0, "rate": None,
        "latency_limit": None, "protocol": "simple", "max_tries": None, "progress_warmup": 1.0,
        "os_cache": "keep", "prewarm": False,
    }  # fmt: skip
    [point] = _spec('workload = "cache-wash"\n[sweep]\ndisk = ["nvme"]\n').points()
    record = point.to_store().workload.record()
    assert record == {
        "table_size": 1.0, "lookups": 100, "warmup": 100.0, "warmup_lookups": None,
        "prewarm": True, "os_cache": "keep", "disk": "nvme",
    }  # fmt: skip
    assert json.loads(to_json(record)) == record


def test_run_time_changes_are_typed_and_never_stored():
    [point] = _spec("[pgbench]\nprogress = 0\n").points()
    windows = point.with_workload(progress=1, progress_timestamp=True)
    assert (windows.workload.progress, windows.workload.progress_timestamp) == (1, True)
    assert "progress_timestamp" not in windows.to_store().workload.record()
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


@pytest.mark.parametrize(
    "spec",
    [
        "[pgbench]\nclients = 2\nrate = 500\ncheckpoint = true\n[sweep]\nscale = [1, 2]",
        'workload = "cache-wash"\n[cache_wash]\ntable_size = "2GiB"\nwarmup_lookups = 10',
        'workload = "tpcc"\n[tpcc]\nrate_tpm = 300\n[sweep]\nversion = ["15", "16"]',
        '[machine]\ndisk = "nvme"\n[inspect]\nmode = "fast"\nmethod = "extension"',
    ],
)
def test_a_point_round_trips_through_the_store(tmp_path, spec):
    """Written as record(), read back as the same model: equal, and written again byte for byte
    as it was stored (a copy or an export of a run changes nothing)."""
    parsed = _spec(spec)
    store = SqliteResultStore(tmp_path / "r.sqlite")
    points = [p.to_store() for p in parsed.points()]
    run_id = store.create_run("x", "x.toml", spec, {}, {}, points, parsed.study)
    stored = store.points(run_id)
    for point, read in zip(parsed.points(), stored, strict=True):
        assert read.workload == point.workload and type(read.workload) is type(point.workload)
        assert to_json(read.workload.record()) == to_json(point.workload.record())
    copy = SqliteResultStore(tmp_path / "copy.sqlite")
    copy.import_run(store.run(run_id), stored, [], {})
    texts = [
        sqlite3.connect(path).execute("select workload from points order by point_index").fetchall()
        for path in (tmp_path / "r.sqlite", tmp_path / "copy.sqlite")
    ]
    assert texts[0] == texts[1]


def test_the_fixture_runs_read_as_typed_points_and_write_back_unchanged():
    """Points stored before later keys existed (latency_limit, tpcc's mode, warmup_lookups)
    read with those keys' defaults, and are written back with the keys they had."""
    rows = sqlite3.connect(FIXTURE_STORE).execute("select workload from points").fetchall()
    kinds = set()
    for (text,) in rows:
        parameters = stored_parameters(from_json(text))
        kinds.add(type(parameters))
        assert to_json(parameters.record()) == text
    assert kinds == {PgbenchParameters, CacheWashParameters, TpccParameters}
    tpcc = next(
        p for (t,) in rows if isinstance(p := stored_parameters(from_json(t)), TpccParameters)
    )
    assert "mode" not in tpcc.record() and tpcc.mode == "procedures"


def test_a_stored_point_is_checked_for_types_not_for_todays_rules():
    # a bin directory and an A/A control's label, a size in bytes: converted once, by the spec
    record = {"table_size": 2**31, "lookups": 100, "warmup": 100.0, "prewarm": True,
              "os_cache": "keep", "version": "16 control"}  # fmt: skip
    wash = stored_parameters(record)
    assert isinstance(wash, CacheWashParameters) and wash.table_size == 2**31
    assert wash.version == "16 control" and wash.record() == record
    script = Script(file=Path("/gone/read.sql"), weight=7)  # stored as str(): its file is gone
    custom = {**_spec("").points()[0].workload.record(), "mode": "custom", "scripts": [script]}
    read = stored_parameters(json.loads(to_json(custom)))
    assert isinstance(read, PgbenchParameters) and read.scripts == [script]
    assert to_json(read.record()) == to_json(custom)
    with pytest.raises(ValidationError):
        stored_parameters({**record, "lookups": "100"})  # a type is still checked
    with pytest.raises(ValueError, match="no workload stores"):
        stored_parameters({"clients": 1})


def test_a_stored_point_no_model_reads_is_a_user_error(tmp_path):
    [point] = _spec("").points()
    store = SqliteResultStore(tmp_path / "r.sqlite")
    run_id = store.create_run("x", "x.toml", "", {}, {}, [point.to_store()], "big-cache")
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        db.execute("update points set workload = ?", (to_json({"scale": 1, "from_2030": 1}),))
    with pytest.raises(UserError, match=r"point 0 of the run: .* from_2030: extra inputs"):
        store.points(run_id)
