"""`checkpoint = true` ([pgbench], [tpcc]): a CHECKPOINT right before each measured run, as
seed 001 ran one before every pgbench run, checked on the server's checkpoint counter."""

import json
import re
from pathlib import Path

import pytest
from fix_cli import own_lines, run_cli, run_cli_forked
from fix_clusters import dsn_of, install_of
from fix_lab import store_query
from fix_processes import server_reachable_dir

from pgcachelab.analysis.checkpoints import checkpoint_note
from pgcachelab.analysis.run_data import load_run
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.errors import PointError
from pgcachelab.experiments.checkpoint import checkpoint_checked, counter_name
from pgcachelab.spec import parse_spec
from pgcachelab.store.sqlite import SqliteResultStore


def _assert_one_line(result, message: str, hint: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = own_lines(result.stderr)
    assert len(lines) == 2, result.stderr
    assert re.search(message, lines[0]) and lines[0].startswith("pgcachelab: "), lines[0]
    assert re.search(hint, lines[1]) and lines[1].startswith("hint: "), lines[1]


BAD = [
    pytest.param('[pgbench]\ncheckpoint = "before-each"', r'pgbench\.checkpoint: invalid value '
                 r'"before-each"', r"true or false", id="not-a-boolean"),
    pytest.param("[pgbench]\ncheckpoint = 1", r"pgbench\.checkpoint: invalid value 1",
                 r"true or false", id="a-number"),
    pytest.param('[sweep]\ncheckpoint = [true, "yes"]', r'sweep\.checkpoint: invalid value "yes"',
                 r"true or false", id="swept-not-a-boolean"),
    pytest.param('workload = "cache-wash"\n[cache_wash]\ncheckpoint = true',
                 r"cache_wash\.checkpoint: unknown key", r"lookups", id="not-for-cache-wash"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message", "hint"), BAD)
def test_a_bad_checkpoint_is_one_line_and_exit_2(tmp_path, lab_tmp, text, message, hint):
    spec = tmp_path / "spec.toml"
    spec.write_text(f'name = "t"\n{text}\n')
    result = run_cli_forked("run", spec, "--lab-dir", tmp_path / "lab", tmpdir=lab_tmp)
    _assert_one_line(result, message, hint)
    assert store_query(tmp_path / "lab", "select run_id from runs") == []


def test_the_key_is_stored_only_when_set_and_the_plan_shows_it(tmp_path, lab_tmp):
    without, with_it = parse_spec("[sweep]\ncheckpoint = [false, true]\n", Path("x.toml")).points()
    assert "checkpoint" not in without.to_store().workload.record()  # as stored before the key
    assert with_it.to_store().workload.record()["checkpoint"] is True
    [tpcc] = parse_spec('workload = "tpcc"\n[tpcc]\ncheckpoint = true\n', Path("x.toml")).points()
    assert tpcc.workload.checkpoint_before_run
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "t"\n[pgbench]\ncheckpoint = true\n[sweep]\nclients = [1, 2]\n')
    result = run_cli_forked("run", spec, "--plan", tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("CHECKPOINT first") == 2
    assert "left out (+): a CHECKPOINT before each measured run" in result.stdout


def test_the_report_sums_up_the_checkpoints():
    done = {"duration_ms": 4.0, "buffers_written": 10, "counter": counter_name(180000)}
    note = checkpoint_note([{"checkpoint": done}, {"checkpoint": {**done, "duration_ms": 8.0}}, {}])
    assert note == (
        "at 2 of 3 measurements: 6.0 ms median (4.0..8.0 ms), 10 buffers written (median); "
        "each checked on pg_stat_checkpointer.num_requested"
    )
    assert checkpoint_note([{}, {"disk": {}}]) is None


def _dirty_and_checkpoint(cluster: ManagedCluster) -> dict:
    with cluster.connect() as conn:
        conn.execute("create table if not exists dirty as select generate_series(1, 1000) i")
        conn.execute("update dirty set i = i + 1")
        return checkpoint_checked(conn)


@pytest.mark.server
def test_a_checkpoint_raises_the_counter_and_writes_the_dirty_buffers(shared_cluster):
    shared_cluster.apply_settings({})
    done = _dirty_and_checkpoint(shared_cluster)
    assert done["counter"] == "pg_stat_checkpointer.num_requested"  # the default install: 18
    assert done["requested_after"] > done["requested_before"]
    assert done["buffers_written"] > 0 and done["duration_ms"] > 0


@pytest.mark.server
def test_a_checkpoint_that_did_not_happen_fails_the_point_with_the_reason(shared_cluster):
    shared_cluster.apply_settings({})
    with shared_cluster.connect() as conn, pytest.raises(PointError) as raised:
        checkpoint_checked(conn, statement="select 1", wait_s=0.3)
    assert re.fullmatch(
        r"the CHECKPOINT before the run did not happen: pg_stat_checkpointer\.num_requested "
        r"stayed at \d+ for 0\.3 s",
        str(raised.value),
    )


@pytest.mark.server
@pytest.mark.slow
def test_before_17_the_counter_is_pg_stat_bgwriter_s_and_waits_for_the_collector(
    server_os_user,
):
    """9.6's counters reach the view through the statistics collector, after CHECKPOINT ends."""
    install = install_of("9.6", server_os_user)
    with server_reachable_dir() as base:
        cluster = ManagedCluster.create(install, server_os_user, parent_dir=base)
        try:
            cluster.apply_settings({})
            done = _dirty_and_checkpoint(cluster)
        finally:
            cluster.destroy()
    assert done["counter"] == "pg_stat_bgwriter.checkpoints_req"
    assert done["requested_after"] > done["requested_before"]


SPEC = """name = "checkpoints"
[pgbench]
scale = 1
duration = "1s"
[sweep]
checkpoint = [false, true]
"""


@pytest.mark.server
@pytest.mark.slow
def test_a_run_records_the_checkpoint_of_the_points_that_ask_for_it(
    shared_cluster, tmp_path, lab_tmp
):
    shared_cluster.apply_settings({})
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    lab_dir = tmp_path / "lab"
    result = run_cli(
        "run", spec, "--dsn", dsn_of(shared_cluster), "--lab-dir", lab_dir, "--no-report",
        tmpdir=lab_tmp,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = store_query(lab_dir, "select point_index, status, metrics from measurements order by 1")
    assert [(index, status) for index, status, _ in rows] == [(0, "ok"), (1, "ok")]
    without, with_it = (json.loads(metrics) for _, _, metrics in rows)
    assert "checkpoint" not in without
    done = with_it["checkpoint"]
    assert done["requested_after"] > done["requested_before"]
    assert done["duration_ms"] > 0
    # the report reads it back (a metric the report's reader does not name would raise)
    [(run_id,)] = store_query(lab_dir, "select run_id from runs")
    store = SqliteResultStore(lab_dir / "results.sqlite")
    try:
        data = load_run(store, run_id)
    finally:
        store.close()
    note = checkpoint_note([m.metrics for result in data.points for m in result.ok])
    assert note is not None and note.startswith("at 1 of 2 measurements: ")


NO_CHECKPOINT = [
    pytest.param(
        "[pgbench]\ncheckpoint = true\n",
        r"pgbench\.checkpoint: role 'lab_no_checkpoint' of the server given by --dsn may not "
        r"run CHECKPOINT",
        r"superuser .*pg_checkpoint.*remove checkpoint from \[pgbench\]",
        id="checkpoint-before-the-run",
    ),
    # the lab runs CHECKPOINT before it drops the OS cache (issue 35, F8)
    pytest.param(
        '[pgbench]\nscale = 1\n[machine]\nos_cache = "drop-all"\n',
        r'os_cache = "drop-all": role \'lab_no_checkpoint\' of the server given by --dsn may not '
        r"run CHECKPOINT",
        r"connect as a superuser .*pg_checkpoint.*os_cache = \"keep\"",
        id="drop-all",
    ),
]


@pytest.mark.server
@pytest.mark.parametrize(("spec_text", "message", "hint"), NO_CHECKPOINT)
def test_a_dsn_role_that_may_not_checkpoint_is_refused_before_the_run(
    shared_cluster, tmp_path, lab_tmp, spec_text, message, hint
):
    """Told before the run starts, not by every point failing."""
    shared_cluster.apply_settings({})
    with shared_cluster.connect() as conn:
        conn.execute("create role lab_no_checkpoint login")
    try:
        spec = tmp_path / "spec.toml"
        spec.write_text('name = "t"\n' + spec_text)
        dsn = dsn_of(shared_cluster).replace("user=lab", "user=lab_no_checkpoint")
        result = run_cli("run", spec, "--dsn", dsn, "--lab-dir", tmp_path / "lab", tmpdir=lab_tmp)
    finally:
        with shared_cluster.connect() as conn:
            conn.execute("drop role lab_no_checkpoint")
    _assert_one_line(result, message, hint)
    assert store_query(tmp_path / "lab", "select run_id from runs") == []
    assert store_query(tmp_path / "lab", "select run_id from measurements") == []
    assert list(lab_tmp.iterdir()) == []  # no cluster work directory was ever made
