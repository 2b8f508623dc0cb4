"""Seed 003 as it was (issue 22): wait events sampled during the overhead experiment, tallied by
polled and quiet windows, the sag per version compared, and what `inspect` says a method costs.

Pure tests on captured real outputs (tests/data/wait-events/: capture_rows.py for the raw
pg_stat_activity rows; measurement-*.json are measurements of a real inspect-history-quick
run, cut to the keys the analysis reads), then servers: a tiny version sweep through the CLI,
and `inspect` on 9.6.
"""

import html
import json
import re
import sqlite3
from pathlib import Path

import pytest
from fix_cli import run_cli, run_cli_forked
from fix_clusters import install_of
from fix_lab import store_query
from fix_reports import REPORT_RUNS_DIR

from pgcachelab.analysis.inspect_overhead import Sag, sag_above
from pgcachelab.analysis.run_data import load_run
from pgcachelab.analysis.summary import summarise
from pgcachelab.analysis.wait_events import (
    POLLED,
    QUIET,
    WHOLE_RUN,
    buffer_mapping_excess,
    tally_measurement,
    tally_measurements,
)
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.probes.method_costs import method_cost
from pgcachelab.probes.wait_events import (
    RUNNING,
    is_buffer_mapping,
    parse_sample,
    wait_events_query,
)
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.studies.inspect_overhead.report import versions_note

DATA = Path(__file__).parent / "data" / "wait-events"


def _captured(name: str) -> dict:
    return json.loads((DATA / name).read_text())


# -- pure: the query and its rows ------------------------------------------------------------


def test_the_query_exists_from_9_6_and_keeps_client_backends_from_10():
    assert wait_events_query(90524) is None  # 9.5: a `waiting` flag, no wait events
    old, new = wait_events_query(90624), wait_events_query(180006)
    assert "wait_event_type" in old and "backend_type" not in old  # 9.6 lists no background
    assert "backend_type = 'client backend'" in new
    assert "not like 'pgcachelab-%'" in old and "not like 'pgcachelab-%'" in new


@pytest.mark.parametrize(
    ("name", "buffer_mapping"),
    [("LWLockTranche:buffer_mapping", True), ("LWLock:buffer_mapping", True),
     ("LWLock:BufferMapping", True), ("LWLock:WALWrite", False), ("IO:DataFileRead", False),
     (RUNNING, False), ("Lock:buffer_mapping", False)],
)  # fmt: skip
def test_buffer_mapping_waits_in_every_versions_spelling(name, buffer_mapping):
    assert is_buffer_mapping(name) is buffer_mapping


def test_rows_captured_on_9_6_under_the_polled_view_show_buffer_mapping_waits():
    captured = _captured("rows-9.6.json")
    assert captured["version"].startswith("9.6")
    samples = [parse_sample(at, rows) for at, rows in captured["samples"]]
    names = {name for sample in samples for name in sample.backends}
    assert "LWLockTranche:buffer_mapping" in names  # the view's partition locks, waited on
    assert RUNNING in names
    assert all(count > 0 for sample in samples for count in sample.backends.values())
    assert not any(name.startswith("Activity:") for name in names)  # no background processes


def test_rows_captured_on_18_name_the_lock_otherwise_and_list_no_background_process():
    captured = _captured("rows-18.json")
    samples = [parse_sample(at, rows) for at, rows in captured["samples"]]
    names = {name for sample in samples for name in sample.backends}
    assert RUNNING in names
    assert not any(name.startswith("Activity:") for name in names)  # client backends only
    assert all(name == "LWLock:BufferMapping" for name in names if is_buffer_mapping(name))
    assert "LWLockTranche:buffer_mapping" not in names


def test_parse_sample_adds_up_rows_of_one_event():
    sample = parse_sample(5.0, [(None, None, 3), ("LWLock", "BufferMapping", 2),
                                ("LWLock", "BufferMapping", 1)])  # fmt: skip
    assert sample.backends == {RUNNING: 3, "LWLock:BufferMapping": 3}


# -- pure: tallies by window -----------------------------------------------------------------


def test_a_real_9_6_measurement_waits_on_buffer_mapping_while_polled_only():
    metrics = _captured("measurement-9.6.json")
    tallies = tally_measurement(metrics)
    polled, quiet = tallies[POLLED], tallies[QUIET]
    window_s = metrics["inspect_windows"]["length_s"]
    # ten samples a second over whole windows only: at most a window's worth less than the run
    duration_s = len(metrics["pgbench"]["progress"])
    assert polled.samples + quiet.samples <= duration_s * 10
    assert polled.samples + quiet.samples >= (duration_s - 2 * window_s) * 10 * 0.8
    assert polled.buffer_mapping > 0
    assert polled.buffer_mapping > 3 * quiet.buffer_mapping
    assert polled.active > 0 and quiet.active > 0


def test_a_real_18_measurement_has_no_view_made_buffer_mapping_waits():
    metrics = _captured("measurement-18.json")
    tallies = tally_measurement(metrics)
    assert tallies[POLLED].samples > 0 and tallies[QUIET].samples > 0
    assert not any(n.startswith("LWLockTranche") for t in tallies.values() for n in t.backends)


def test_samples_outside_the_measured_windows_are_left_out():
    windows = {"start": 100.0, "length_s": 2.0, "first_polled": True, "pattern": "abab"}
    progress = [{"elapsed_s": 100.0 + s, "tps": 1000.0} for s in range(1, 5)]  # windows 0, 1
    samples = [[100.5, {"LWLockTranche:buffer_mapping": 2}], [102.5, {RUNNING: 1}],
               [104.5, {"LWLockTranche:buffer_mapping": 5}], [99.5, {RUNNING: 7}]]  # fmt: skip
    metrics = {"inspect_windows": windows, "pgbench": {"progress": progress},
               "wait_events": {"samples": samples}}  # fmt: skip
    tallies = tally_measurement(metrics)
    assert (tallies[POLLED].samples, tallies[POLLED].buffer_mapping) == (1, 2.0)
    assert (tallies[QUIET].samples, tallies[QUIET].mean(RUNNING)) == (1, 1.0)
    assert tallies[QUIET].buffer_mapping == 0.0


def test_without_windows_one_tally_for_the_run_and_repetitions_add_up():
    metrics = {"wait_events": {"samples": [[1.0, {RUNNING: 2, "IO:DataFileRead": 1}],
                                           [1.1, {RUNNING: 1}]]}}  # fmt: skip
    total = tally_measurements([metrics, metrics, {"wait_events": None}, {}])
    assert list(total) == [WHOLE_RUN]
    assert (total[WHOLE_RUN].samples, total[WHOLE_RUN].active) == (4, 2.0)
    assert total[WHOLE_RUN].top_waits() == [("IO:DataFileRead", 0.5)]


def test_the_waits_polling_adds_are_paired_by_window_like_the_sag():
    windows = {"start": 100.0, "length_s": 2.0, "first_polled": True, "pattern": "abba"}
    progress = [{"elapsed_s": 100.0 + s, "tps": 1000.0} for s in range(1, 9)]  # windows 0..3
    mapping = "LWLock:BufferMapping"
    samples = [
        [100.5, {mapping: 3}],
        [102.5, {mapping: 1}],  # pair 0: polled first
        [104.5, {mapping: 2}],
        [106.5, {RUNNING: 1}],
    ]  # pair 1: quiet first ("abba")
    metrics = {"inspect_windows": windows, "pgbench": {"progress": progress},
               "wait_events": {"samples": samples}}  # fmt: skip
    assert buffer_mapping_excess(metrics) == [2.0, -2.0]
    assert buffer_mapping_excess({"wait_events": {"samples": samples}}) == []  # no windows


def test_on_the_real_9_6_measurement_polling_adds_buffer_mapping_waits():
    excess = summarise(buffer_mapping_excess(_captured("measurement-9.6.json")))
    assert excess.n >= 4 and excess.mean > 0


def _sag(low: float, high: float) -> Sag:
    return Sag("pg_buffercache", summarise([0.9, 0.95]), (low + high) / 2, (low, high))


def test_a_sag_is_above_another_only_when_the_intervals_are_apart():
    assert sag_above(_sag(5, 9), _sag(1, 4)) is True
    assert sag_above(_sag(3, 9), _sag(1, 4)) is False
    assert sag_above(_sag(1, 4), _sag(5, 9)) is False
    no_interval = Sag("pg_buffercache", summarise([0.9]), 10.0, None)
    assert sag_above(no_interval, _sag(1, 4)) is None


# -- pure: what inspect says a method costs --------------------------------------------------


def test_method_cost_names_the_partition_locks_before_10_only():
    old = method_cost("pg_buffercache", "consistent", 90624, 41.7)
    assert "holds every buffer-mapping partition lock" in old and "(part of the 42 ms)" in old
    assert "extension" not in old  # pg_cachelab builds for 15+ only
    ten = method_cost("pg_buffercache", "consistent", 100023, None)
    assert "no partition lock since PostgreSQL 10" in ten and "summary" not in ten
    assert "--method summary" in method_cost("pg_buffercache", "consistent", 160000, 3.0)
    assert "no header lock" in method_cost("extension", "fast", 90624, 1.0)
    assert "counters only" in method_cost("summary", None, 180006, 0.4)


def test_a_spec_refuses_a_wait_events_value_that_is_not_a_boolean(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n[pgbench]\nmode = "select-only"\nscale = 1\nclients = 1\n'
                    'duration = "4s"\n[inspect]\nevery = "1s"\nwait_events = "yes"\n')  # fmt: skip
    result = run_cli_forked("run", spec, "--lab-dir", tmp_path / "lab")
    assert result.returncode == 2
    assert "wait_events" in result.stderr and "Traceback" not in result.stderr


def test_the_report_says_why_the_old_versions_sag_is_not_larger(tmp_path):
    """The tiny run's 9.6 sag is not above 18's (2 s runs): the report gives the wait events'
    account, from the stored samples of the polled windows (issue 22's second outcome)."""
    store_file = tmp_path / "results.sqlite"
    store_file.write_bytes((REPORT_RUNS_DIR / "results.sqlite").read_bytes())
    store = SqliteResultStore(store_file)
    [run_id] = [r for r, n in store.db.execute("select run_id, name from runs")
                if n == "inspect-history-tiny"]  # fmt: skip
    data = load_run(store, run_id)
    store.close()
    note = html.unescape(versions_note(data))
    assert "9.6 against 18: sag not larger beyond the noise" in note
    [why] = re.findall(r"<li>(Why .*?)</li>", note)
    polled = next(
        tally_measurements([m.metrics for m in r.ok])[POLLED]
        for r in data.points
        if r.point.swept["version"] == "9.6" and r.point.swept["inspect_method"] != "none"
    )
    assert why.startswith("Why 9.6's sag is not larger, from its wait events")
    assert f"{polled.active:.2f} of its 4 client backends were active per sample" in why
    assert f"{polled.buffer_mapping:.3f} of them" in why
    assert "holds the partition locks while it scans the buffer headers" in why


def test_each_shared_buffers_gets_its_own_versions_block(tmp_path):
    """A run that sweeps shared_buffers beside the versions (the full spec: 4GB and 8GB) gets
    the per-version lines once per value; one value's lines must not replace the other's."""
    store_file = tmp_path / "results.sqlite"
    store_file.write_bytes((REPORT_RUNS_DIR / "results.sqlite").read_bytes())
    with sqlite3.connect(store_file) as db:
        [run_id] = db.execute("select run_id from runs where name = 'inspect-history-tiny'")
        # The same four points again as shared_buffers=32MB, with the same measurements.
        db.execute(
            "insert into points select run_id, point_index + 4,"
            " replace(label, '16MB', '32MB'), replace(swept, '16MB', '32MB'), workload,"
            " replace(settings, '16MB', '32MB') from points where run_id = ?",
            run_id,
        )
        for table in ("measurements", "point_server_settings"):
            columns = [row[1] for row in db.execute(f"pragma table_info({table})")]
            values = ", ".join("point_index + 4" if c == "point_index" else c for c in columns)
            db.execute(f"insert into {table} select {values} from {table} where run_id = ?", run_id)
    store = SqliteResultStore(store_file)
    data = load_run(store, run_id[0])
    store.close()
    note = html.unescape(versions_note(data))
    for shared_buffers in ("16MB", "32MB"):
        prefix = f"shared_buffers={shared_buffers}, "
        assert f"<li>{prefix}9.6: sag " in note and f"<li>{prefix}18: sag " in note
        assert f"<li>{prefix}9.6 against 18: sag " in note
        assert f"<li>Why {prefix}9.6's sag is not larger" in note


# -- servers ---------------------------------------------------------------------------------


@pytest.mark.server
def test_a_tiny_version_sweep_stores_wait_events_and_reports_them_per_version(
    server_os_user, tmp_path, lab_tmp, quick_figures
):
    install_of("9.6", server_os_user)
    lab_dir = tmp_path / "lab"
    result = run_cli("run", REPORT_RUNS_DIR / "inspect-history.toml", "--lab-dir", lab_dir,
                     tmpdir=lab_tmp)  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = store_query(
        lab_dir, "select p.swept, m.metrics from measurements m join points p"
        " on p.run_id = m.run_id and p.point_index = m.point_index where m.status = 'ok'",
    )  # fmt: skip
    assert len(rows) == 4
    for swept_json, metrics_json in rows:
        swept, metrics = json.loads(swept_json), json.loads(metrics_json)
        waits = metrics["wait_events"]
        assert waits["failed"] == 0 and len(waits["samples"]) >= 50  # 8 s at ten a second
        assert waits["server_version_num"] // 10000 == {"9.6": 9, "18": 18}[swept["version"]]
        tallies = tally_measurement(metrics)
        assert tallies[POLLED].samples > 0 and tallies[QUIET].samples > 0
    page = Path(result.stdout.strip()).read_text()
    assert "Wait events while polling and while not" in page
    assert "version=9.6" in page and "version=18" in page
    assert "6e654546fb" in page  # where the locks went
    assert "9.6: " in page and " against 18: " in page  # the old version's sag against the new


@pytest.mark.server
def test_inspect_on_9_6_says_the_view_holds_the_partition_locks(server_os_user, cluster_parent):
    pg = install_of("9.6", server_os_user)
    with ManagedCluster.create(pg, server_os_user, parent_dir=cluster_parent) as cluster:
        cluster.apply_settings({"shared_buffers": "16MB"})
        with cluster.connect() as conn:
            conn.execute("create extension pg_buffercache")
        result = run_cli("inspect", "--work-dir", cluster.work_dir)
        assert result.returncode == 0, result.stderr
        assert "method: pg_buffercache in " in result.stdout
        assert "cost: the pg_buffercache view holds every buffer-mapping partition lock" in (
            result.stdout
        )
        as_json = run_cli("inspect", "--work-dir", cluster.work_dir, "--json")
        data = json.loads(as_json.stdout)
        assert data["server_version_num"] // 100 == 906
        assert "partition lock" in data["method_cost"]
