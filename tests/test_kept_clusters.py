"""Clusters kept for --resume (cache-wash data) and what a killed postmaster leaves in shared
memory: a later lab keeps a kept cluster while its run's store names it, removes it once the
store or the run is gone, and takes back the SysV and /dev/shm segments of a cluster killed
with SIGKILL, never a live cluster's."""

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.shmem_layout import (
    dsm_handles,
    dsm_segment_name,
    parse_pid_file,
    parse_sysvipc_shm,
)
from pgcachelab.clusters.shmem_leftovers import (
    POSIX_SHM_DIR,
    SYSVIPC_SHM,
    _control_handle,
    _unattached,
)
from pgcachelab.experiments.reaping import REAPERS, kept_for, kept_orphan_reason
from pgcachelab.machine import owned
from pgcachelab.store.sqlite import SqliteResultStore


@pytest.fixture
def registry(tmp_path, monkeypatch) -> Path:
    """A registry of this test's own: another lab's entries (other tests, other worktrees) are
    never reaped here."""
    directory = tmp_path / "owned"
    monkeypatch.setattr(owned, "registry_dir", lambda: directory)
    return directory


def _finished_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


def _as_if_killed(entry_file: Path) -> None:
    """Rewrite an entry as if the lab that wrote it had been killed."""
    text = entry_file.read_text().replace(f'"pid": {os.getpid()}', f'"pid": {_finished_pid()}')
    entry_file.write_text(text)


def _store_with_run(path: Path, work_dir: Path) -> tuple[SqliteResultStore, str]:
    store = SqliteResultStore(path)
    run_id = store.create_run(
        "cache-wash", "spec.toml", "", {"keep_data": True}, {}, [], "cache-wash"
    )
    store.set_work_dir(run_id, str(work_dir))
    return store, run_id


def test_a_kept_cluster_stays_while_its_run_names_it_and_goes_with_its_run(tmp_path):
    work_dir = tmp_path / "pgcachelab-kept"
    store, run_id = _store_with_run(tmp_path / "lab" / "results.sqlite", work_dir)
    details = kept_for(store.location, run_id)
    assert details == {"store": str(tmp_path / "lab" / "results.sqlite"), "run_id": run_id}
    assert kept_orphan_reason(details, work_dir) is None  # running, or interrupted: resumable
    store.finish_run(run_id, "interrupted", "killed", str(work_dir))
    assert kept_orphan_reason(details, work_dir) is None
    store.finish_run(run_id, "done")  # resumed to the end elsewhere
    assert kept_orphan_reason(details, work_dir) == (
        f"run {run_id} in {store.location} no longer names it (done)"
    )
    other = {**details, "run_id": "r-none"}
    assert kept_orphan_reason(other, work_dir) == f"run r-none is no longer in {store.location}"
    store.close()
    (tmp_path / "lab" / "results.sqlite").unlink()
    assert kept_orphan_reason(details, work_dir) == f"its store {store.location} is gone"
    # What cannot be known is never an orphan: no store recorded (a URL with a password).
    assert kept_for("postgresql://lab:***@db/results", run_id) == {}
    assert kept_orphan_reason({}, work_dir) is None


def test_a_relative_store_is_recorded_by_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert kept_for("lab/results.sqlite", "r1")["store"] == str(tmp_path / "lab/results.sqlite")


def test_a_dead_labs_kept_cluster_is_kept_then_removed_once_its_store_is_gone(tmp_path, registry):
    kept_root = tmp_path / "var-tmp"
    kept_root.mkdir()
    store, run_id = _store_with_run(tmp_path / "lab" / "results.sqlite", Path("/unset"))
    details = kept_for(store.location, run_id)
    kinds = {"cluster": {"keep": True}, "kept": details}
    work_dir, files = owned.new_dir(kept_root, "pgcachelab-", kinds)
    store.set_work_dir(run_id, str(work_dir))
    assert owned.reap(REAPERS) == []  # its lab lives: not looked at
    for file in files:
        _as_if_killed(file)
    assert owned.reap(REAPERS) == []  # the store names it: kept, silently, with its entry
    assert work_dir.is_dir()
    assert [(e.kind, e.path) for e in owned.entries()] == [("kept", str(work_dir))]
    # A resumed run's lab records it again: while it lives, the old entry is not reaped.
    again = owned.record("cluster", work_dir, keep=True)
    assert [e.file for e in owned.dead_entries(owned.entries(), owned.Owner.alive)] == []
    owned.forget(again)
    again = owned.record("kept", work_dir, **details)
    _as_if_killed(again)  # killed in turn: one entry is enough
    assert owned.reap(REAPERS) == [] and len(owned.entries()) == 1
    store.close()
    (tmp_path / "lab" / "results.sqlite").unlink()  # the lab directory deleted
    assert owned.reap(REAPERS) == [
        f"removed the cluster kept for --resume in {work_dir}: its store {store.location} is gone"
    ]
    assert not work_dir.exists() and owned.entries() == []


def test_a_directory_is_recorded_before_it_is_made(tmp_path, registry, monkeypatch):
    seen = []
    real_mkdir = Path.mkdir

    def mkdir(path, *args, **kwargs):
        seen.append([e.path for e in owned.entries()])
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    work_dir, _ = owned.new_dir(tmp_path, "pgcachelab-", {"cluster": {"keep": True}, "kept": {}})
    assert seen[-1] == [str(work_dir), str(work_dir)]


# -- a postmaster killed with SIGKILL, its lab killed too ---------------------------------------


def _segments_of(cluster: ManagedCluster) -> tuple[int, set[str]]:
    """The running server's SysV segment id and its /dev/shm segments (the control segment
    and those it lists), read as the reaper reads them."""
    shm_id = parse_pid_file((cluster.data_dir / "postmaster.pid").read_text()).shm_id
    assert shm_id is not None
    segment = parse_sysvipc_shm(SYSVIPC_SHM.read_text())[shm_id]
    control = _control_handle(segment)
    assert control is not None, "the server has no dynamic shared memory control segment"
    listed = dsm_handles((POSIX_SHM_DIR / dsm_segment_name(control)).read_bytes())
    return shm_id, {dsm_segment_name(h) for h in [control, *listed]}


def _present(shm_id: int, names: set[str]) -> tuple[bool, set[str]]:
    sysv = shm_id in parse_sysvipc_shm(SYSVIPC_SHM.read_text())
    return sysv, {name for name in names if (POSIX_SHM_DIR / name).exists()}


def test_a_killed_labs_killed_server_leaves_no_shared_memory_and_no_directory(
    pg_install, server_os_user, cluster_parent, running_cluster, tmp_path, registry
):
    store, run_id = _store_with_run(tmp_path / "lab" / "results.sqlite", Path("/unset"))
    killed = ManagedCluster.create(
        pg_install,
        server_os_user,
        parent_dir=cluster_parent,
        keep_for_resume=True,
        kept_for=kept_for(store.location, run_id),
    )
    try:
        store.set_work_dir(run_id, str(killed.work_dir))
        killed.apply_settings({})
        with killed.connect() as conn:
            conn.execute("select 1")
        live_id, live_names = _segments_of(running_cluster)
        shm_id, names = _segments_of(killed)
        postmaster = parse_pid_file((killed.data_dir / "postmaster.pid").read_text()).pid
        assert killed.process is not None
        assert killed.owned_entry is not None and killed.kept_entry is not None
        # The lab and its server die at once (kill -9 of the group, the OOM killer).
        os.killpg(killed.process.pid, signal.SIGKILL)
        killed.process.wait()
        killed.process = None
        _as_if_killed(killed.owned_entry)
        _as_if_killed(killed.kept_entry)
        assert _present(shm_id, names) == (True, names)  # what PostgreSQL itself leaves
        assert _unattached(shm_id, postmaster) is not None  # its backends have let go

        assert owned.reap(REAPERS) == []  # its run may resume it: the data stays
        assert killed.work_dir.is_dir()
        assert _present(shm_id, names) == (False, set())  # but not its shared memory

        store.close()
        (tmp_path / "lab" / "results.sqlite").unlink()
        [said] = owned.reap(REAPERS)
        assert said.startswith(f"removed the cluster kept for --resume in {killed.work_dir}: ")
        assert not killed.work_dir.exists() and owned.entries() == []
        assert _present(live_id, live_names) == (True, live_names)  # the live one untouched
        with running_cluster.connect() as conn:
            conn.execute("select 1")
    finally:
        killed.destroy()


# -- pgcachelab kept ----------------------------------------------------------------------------


def test_kept_lists_each_cluster_and_removes_only_what_nothing_will_resume(
    tmp_path, registry, monkeypatch
):
    from fix_cli import run_cli_forked

    from pgcachelab.clusters import targets
    from pgcachelab.experiments import reaping

    root = tmp_path / "var-tmp"
    root.mkdir()
    monkeypatch.setattr(reaping, "kept_data_path", lambda: root)
    monkeypatch.setattr(targets, "kept_data_path", lambda: root)
    store, run_id = _store_with_run(tmp_path / "lab" / "results.sqlite", Path("/unset"))
    details = kept_for(store.location, run_id)
    resumable, [entry] = owned.new_dir(root, "pgcachelab-", {"kept": details})
    store.set_work_dir(run_id, str(resumable))
    store.close()
    _as_if_killed(entry)
    in_use, _ = owned.new_dir(root, "pgcachelab-", {"cluster": {"keep": True}, "kept": details})
    unknown = root / "pgcachelab-before-a-reboot"
    (unknown / "pgdata").mkdir(parents=True)
    (unknown / "pgdata" / "base").write_bytes(b"x" * 8192)

    listed = run_cli_forked("kept")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == ["state", "size", "directory", "run or reason"]
    rows = {re.split(r"\s{2,}", line)[2]: re.split(r"\s{2,}", line)[0] for line in lines[1:]}
    assert rows == {str(resumable): "resumable", str(in_use): "in use", str(unknown): "unknown"}
    assert f"pgcachelab run --resume {run_id} --store {store.location}" in listed.stdout
    assert "1 of them nothing will resume (8kB): remove them with: pgcachelab kept --remove" in (
        listed.stderr
    )
    assert unknown.exists()  # listing removes nothing

    removed = run_cli_forked("kept", "--remove")
    assert removed.returncode == 0, removed.stderr
    assert f"removed the cluster kept in {unknown} (unknown: " in removed.stderr
    assert not unknown.exists() and resumable.is_dir() and in_use.is_dir()


# -- a killed cache-wash run whose lab directory is then deleted ---------------------------------


@pytest.mark.server
@pytest.mark.slow
def test_a_kept_cluster_whose_lab_dir_is_deleted_goes_with_the_next_lab_command(tmp_path, lab_tmp):
    import shutil

    from fix_cli import CLI_TIMEOUT_S, SPECS_DIR, run_cli
    from fix_lab import lab_process, wait_until_measuring

    from pgcachelab.clusters.managed import reap_stale

    lab_dir = tmp_path / "lab"
    spec = SPECS_DIR / "cache-wash-small.toml"
    with lab_process(["run", spec, "--lab-dir", lab_dir, "--no-report"], tmp_path, lab_tmp) as lab:
        _, work_dir = wait_until_measuring(lab, lab_dir, tmp_path, measurements=1)
        lab.send_signal(signal.SIGKILL)
        assert lab.wait(timeout=CLI_TIMEOUT_S) == -signal.SIGKILL
    try:
        assert Path(work_dir).is_dir()
        kept = run_cli("kept", tmpdir=lab_tmp)  # the store names it: kept for --resume
        assert kept.returncode == 0, kept.stderr
        assert Path(work_dir, "pgdata", "PG_VERSION").exists()
        assert "resumable  " in kept.stdout and work_dir in kept.stdout
        shutil.rmtree(lab_dir)
        result = run_cli("kept", tmpdir=lab_tmp)
        assert result.returncode == 0, result.stderr
        assert (
            f"removed the cluster kept for --resume in {work_dir}: "
            f"its store {lab_dir / 'results.sqlite'} is gone"
        ) in result.stderr.splitlines()
        assert not Path(work_dir).exists() and work_dir not in result.stdout
        assert [e for e in owned.entries() if e.path == work_dir] == []
        # with its last cluster the parent goes too (CI's user leg found it left behind)
        parent = Path(work_dir).parent
        assert not parent.exists() or any(parent.iterdir()), f"{parent} left empty"
    finally:
        reap_stale(Path(work_dir))


def test_the_reaper_looks_in_the_kept_clusters_directory_only_for_one_of_its_entries(
    tmp_path, registry, monkeypatch
):
    """Issue 49: every lab command, each unit of an agent's, looked in
    /var/tmp/pgcachelab-UID (shared by whatever runs on the machine as that user: another
    emulated host's agent, another container), where an agent keeps nothing (its clusters are
    under its TMPDIR). The reaper now goes there only for a killed lab's cluster there."""
    from pgcachelab.experiments import reaping

    root = tmp_path / "var-tmp"
    root.mkdir()
    monkeypatch.setattr(reaping, "kept_data_path", lambda: root)
    reaping.reap_everything()
    assert root.is_dir()  # nothing of the lab's there: left as it is
    work_dir, [entry] = owned.new_dir(root, "pgcachelab-", {"cluster": {}})
    _as_if_killed(entry)
    assert any(f"removed the cluster {work_dir}" in line for line in reaping.reap_everything())
    assert not root.exists()  # with its last cluster, as before
