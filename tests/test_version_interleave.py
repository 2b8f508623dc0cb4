"""Issue 19 on real clusters: a version sweep's turns alternate round by round in the recorded
order, and a version's start drops the other clusters' files from the OS page cache."""

import json
import tempfile

import pytest
from fix_cli import SPECS_DIR, run_cli
from fix_lab import store_query

from pgcachelab.analysis.run_data import load_run
from pgcachelab.clusters.installs import resolve
from pgcachelab.clusters.targets import VersionedTarget
from pgcachelab.errors import UserError
from pgcachelab.machine import fusedisk
from pgcachelab.probes.pagecache import relation_residency_bytes
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.studies.versions.report import clients_panels

FUSE, WHY_NOT = fusedisk.availability()
needs_fuse = pytest.mark.skipif(not FUSE, reason=f"emulated disk unavailable: {WHY_NOT}")
# every test here runs the lab, which starts its servers itself (no server fixture to mark it)
pytestmark = pytest.mark.server


def _installed(version: str) -> str:
    try:
        return resolve(version)
    except UserError as error:
        pytest.skip(f"PostgreSQL {version} is not installed: {error.message}")


def _cached_share(data_dir, path: str, size_bytes: int) -> float:
    return relation_residency_bytes(data_dir, path, "main") / size_bytes


def test_a_version_start_drops_the_other_clusters_files_from_the_os_cache(lab_tmp, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(lab_tmp))  # the clusters' work directories
    bin_dir = _installed("18")
    target = VersionedTarget({"18": bin_dir, "18 control": bin_dir})
    target.open(lambda work_dir: None)
    try:
        target.switch("18", ())
        target.apply({"shared_buffers": "16MB"})
        with target.connect() as conn:
            conn.execute("create table filler as select g, repeat('x', 400) as pad"
                         " from generate_series(1, 40000) g")  # fmt: skip
            conn.execute("checkpoint")
            path = conn.execute("select pg_relation_filepath('filler')").fetchone()[0]
        first = target.data_dir
        size_bytes = (first / path).stat().st_size
        assert size_bytes > 10 * 1024 * 1024
        assert _cached_share(first, path, size_bytes) > 0.5  # written, so cached

        _, dropped = target.switch("18 control", ())
        target.apply({"shared_buffers": "16MB"})  # the control's server starts
        assert target.current.cluster.running and not target.clusters[("18", ())].cluster.running
        assert dropped["clusters"] == 1 and dropped["bytes"] >= size_bytes
        assert _cached_share(first, path, size_bytes) < 0.02

        # back to 18: its data is the one it left, and its files are read in again
        state, dropped = target.switch("18", ())
        assert dropped["clusters"] == 1
        target.apply({"shared_buffers": "16MB"})
        with target.connect() as conn:
            assert conn.execute("select count(*) from filler").fetchone()[0] == 40000
        assert _cached_share(first, path, size_bytes) > 0.5
    finally:
        target.close()
    assert not first.exists()


def _turns(lab_dir, run_id: str) -> list[tuple[int, str]]:
    """(round, version) of each turn, from the measurements in the order they started."""
    rows = store_query(
        lab_dir,
        "select m.repetition, p.swept from measurements m join points p"
        " using (run_id, point_index) where run_id = ? order by m.started_at",
        (run_id,),
    )
    turns = []
    for repetition, swept in rows:
        turn = (repetition, json.loads(swept)["version"])
        if not turns or turns[-1] != turn:
            turns.append(turn)
    return turns


def test_versions_alternate_round_by_round_in_the_recorded_order(tmp_path, lab_tmp):
    _installed("15")
    lab_dir = tmp_path / "lab"
    result = run_cli("run", SPECS_DIR / "versions-interleaved.toml", "--lab-dir", lab_dir,
                     tmpdir=lab_tmp)  # fmt: skip
    assert result.returncode == 0, result.stderr
    ((run_id, environment),) = store_query(lab_dir, "select run_id, environment from runs")
    rounds = json.loads(environment)["schedule"]["version_rounds"]
    assert [r["round"] for r in rounds] == [0, 1]
    turns = _turns(lab_dir, run_id)
    assert turns == [(r["round"], v) for r in rounds for v in r["versions"]]
    for round_index in (0, 1):  # every version once per round
        assert sorted(v for r, v in turns if r == round_index) == ["15", "18", "18 control"]
    assert [v for _, v in turns[:3]] != [v for _, v in turns[3:]]  # seed 1 shuffles them

    switches = store_query(
        lab_dir,
        "select json_extract(metrics, '$.version_switch') from measurements"
        " where run_id = ? order by started_at",
        (run_id,),
    )
    switches = [json.loads(s) for (s,) in switches if s]
    assert len(switches) == len(turns)  # each turn starts with a switch, and only then
    assert [s["clusters"] for s in switches] == [0, 1, 2, 2, 2, 2]  # the others, once created
    assert all(s["bytes"] > 0 for s in switches[1:])
    assert all(s["prewarmed_blocks"]["pgbench_accounts"] > 0 for s in switches)
    report = (lab_dir / "reports" / run_id / "index.html").read_text()
    assert "A/A control: one version on two clusters" in report
    assert "18 ↔ 18 control" in report


@needs_fuse
def test_a_version_sweep_on_two_emulated_disks_draws_a_chart_per_storage(tmp_path, lab_tmp):
    lab_dir = tmp_path / "lab"
    result = run_cli("run", SPECS_DIR / "versions-on-two-disks.toml", "--lab-dir", lab_dir,
                     tmpdir=lab_tmp)  # fmt: skip
    assert result.returncode == 0, result.stderr
    ((run_id,),) = store_query(lab_dir, "select run_id from runs")
    store = SqliteResultStore.open_read_only(lab_dir / "results.sqlite")
    try:
        data = load_run(store, run_id)
    finally:
        store.close()
    panels = clients_panels(data)
    assert sorted(panels) == [(("disk", "nvme"),), (("disk", "sata-ssd"),)]
    for (cell,), results in panels.items():
        profiles = {m.metrics["disk"]["profile"]["name"] for r in results for m in r.ok}
        assert profiles == {cell[1]}  # each chart's points ran on its disk
        assert {r.point.swept["version"] for r in results} == {"18", "18 control"}
    assert (lab_dir / "reports" / run_id / "tps-by-clients-per-version.png").exists()
