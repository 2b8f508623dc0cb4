"""The fault suite (issue 18): real labs killed, interrupted, starved of disk and of their
store, and what they leave checked each time.

For each fault: the exit code, the run's status, every measured (point, repetition) present
exactly once after --resume, and nothing left behind: no process of ours, nothing in the lab's
TMPDIR, no entry of a dead lab under /run, no mount, no cgroup of a dead lab.

The random kills are the long part: CI runs PGCACHELAB_FAULT_KILLS (default 3) of them; `make
faults` runs all 20. Only what these tests started is judged: other engineers' labs may run.
"""

import contextlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fix_cli import CLI_TIMEOUT_S, SPECS_DIR, cli_command, cli_env, own_lines, run_cli
from fix_lab import lab_process, lab_stderr, store_query, wait_until_measuring
from fix_processes import postmaster_pid, process_alive, processes_mentioning, wait_for

from pgcachelab.machine import owned

pytestmark = [pytest.mark.server, pytest.mark.slow]

SPEC = SPECS_DIR / "fault-sweep.toml"
PLANNED = {(point, repetition) for point in range(4) for repetition in range(2)}
KILLS = int(os.environ.get("PGCACHELAB_FAULT_KILLS", "3"))
FAULT_SEED = int(os.environ.get("PGCACHELAB_FAULT_SEED", "18"))


# -- what a fault may leave ----------------------------------------------------------------------


def leftovers(lab_tmp: Path, lab_pids: set[int]) -> list[str]:
    """Everything the labs `lab_pids` (all exited) or their servers left; [] when nothing."""
    found = [f"process {pid}" for pid in processes_mentioning(str(lab_tmp))]
    found += [f"file {path}" for path in lab_tmp.iterdir()]
    found += [f"entry {entry.file.name} ({entry.kind} {entry.path})" for entry in owned.entries()
              if entry.owner.pid in lab_pids or str(lab_tmp) in entry.path]  # fmt: skip
    mounts = Path("/proc/self/mountinfo").read_text()
    found += [f"mount {line.split()[4]}" for line in mounts.splitlines() if str(lab_tmp) in line]
    for pid in lab_pids:
        for cgroup_root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")):
            found += [f"cgroup {p}" for p in cgroup_root.rglob(f"pgcachelab-{pid}-*")]
        if (Path("/run/pgcachelab/hugepages") / f"{pid}.json").exists():
            found.append(f"huge pages of lab {pid}")
        found += [f"disk dir {p}" for p in Path("/tmp").glob(f"pgcachelab-disk-{pid}-*")]
    return found


def measured(lab_dir: Path, run_id: str) -> list[tuple[int, int, str]]:
    return store_query(
        lab_dir,
        "select point_index, repetition, status from measurements where run_id = ?"
        " order by point_index, repetition",
        (run_id,),
    )


def run_status(lab_dir: Path, run_id: str) -> str:
    [(status,)] = store_query(lab_dir, "select status from runs where run_id = ?", (run_id,))
    return status


def assert_each_measured_once(lab_dir: Path, run_id: str) -> None:
    rows = measured(lab_dir, run_id)
    pairs = [(point, repetition) for point, repetition, _ in rows]
    assert len(pairs) == len(set(pairs)), f"duplicated: {rows}"
    assert set(pairs) == PLANNED, f"missing: {PLANNED - set(pairs)}"


# -- kill -9 of the lab at random moments, then --resume -----------------------------------------


def _start(args, lab_tmp: Path, log: Path) -> subprocess.Popen:
    with open(log, "a") as stderr:
        return subprocess.Popen(cli_command(*args), env=cli_env(lab_tmp), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip


def _the_run(lab_dir: Path) -> str | None:
    rows = store_query(lab_dir, "select run_id from runs")
    return rows[0][0] if rows else None


def test_kill_9_at_random_moments_then_resume_loses_and_duplicates_nothing(tmp_path, lab_tmp):
    rng = random.Random(FAULT_SEED)
    lab_dir, log = tmp_path / "lab", tmp_path / "labs.stderr"
    lab_pids: set[int] = set()
    kills = finished_early = 0
    started = time.monotonic()
    while kills < KILLS:
        run_id = _the_run(lab_dir)
        args = ["run", "--resume", run_id] if run_id else ["run", SPEC]
        lab = _start([*args, "--lab-dir", lab_dir, "--no-report"], lab_tmp, log)
        lab_pids.add(lab.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            # A moment anywhere in a start: reaping, initdb, loading, a measurement, the end.
            lab.wait(timeout=rng.uniform(0.3, 9.0))
        if lab.poll() is None:
            lab.send_signal(signal.SIGKILL)
            assert lab.wait() == -signal.SIGKILL
            kills += 1
        else:
            assert lab.returncode == 0, log.read_text()
            finished_early += 1
            if run_status(lab_dir, _the_run(lab_dir)) == "done":
                lab_dir_old = tmp_path / f"lab-done-{finished_early}"
                lab_dir.rename(lab_dir_old)  # a new run for the kills still to come
        assert kills + finished_early < 4 * KILLS + 4, "the labs keep finishing before the kill"

    run_id = _the_run(lab_dir)
    if run_id is None:  # every kill came before a run was created: make one
        result = run_cli("run", SPEC, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp)
        run_id = _the_run(lab_dir)
    else:
        result = run_cli(
            "run", "--resume", run_id, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr + log.read_text()
    assert run_status(lab_dir, run_id) == "done"
    assert_each_measured_once(lab_dir, run_id)
    assert all(status == "ok" for _, _, status in measured(lab_dir, run_id))
    assert leftovers(lab_tmp, lab_pids) == []
    print(f"\n{kills} kills, {finished_early} finished first, "
          f"{time.monotonic() - started:.0f} s")  # fmt: skip


def test_a_run_killed_under_one_lab_dir_is_reaped_by_a_command_under_another(tmp_path, lab_tmp):
    lab_dir = tmp_path / "lab"
    with lab_process(["run", SPEC, "--lab-dir", lab_dir, "--no-report"], tmp_path, lab_tmp) as lab:
        run_id, work_dir = wait_until_measuring(lab, lab_dir, tmp_path, measurements=1)
        lab.send_signal(signal.SIGKILL)
        lab.wait()
    # any command, with another lab dir: the cluster goes, and the run is marked in its store
    other = run_cli("runs", "--lab-dir", tmp_path / "elsewhere", tmpdir=lab_tmp)
    assert other.returncode == 2  # no results there, but the reaping was done first
    # (another lab command on this machine may have reaped them first: judge the outcome)
    assert not Path(work_dir).exists()
    assert run_status(lab_dir, run_id) == "interrupted"
    if f"removed the cluster {work_dir}" in other.stderr:
        assert f"marked run {run_id} interrupted: the lab process was killed" in other.stderr
    assert leftovers(lab_tmp, {lab.pid}) == []


# -- the server and pgbench killed under the lab -------------------------------------------------


def _process_under(work_dir: str, name: bytes) -> int | None:
    for pid in processes_mentioning(work_dir):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_bytes().strip() == name:
                return pid
    return None


@pytest.mark.parametrize("victim", ["postmaster", "pgbench"])
def test_a_killed_server_or_pgbench_fails_the_point_and_the_run_goes_on(tmp_path, lab_tmp, victim):
    lab_dir = tmp_path / "lab"
    with lab_process(["run", SPEC, "--lab-dir", lab_dir, "--no-report"], tmp_path, lab_tmp) as lab:
        run_id, work_dir = wait_until_measuring(lab, lab_dir, tmp_path, measurements=1)
        if victim == "postmaster":
            pid = postmaster_pid(Path(work_dir))
        else:  # pgbench runs with the socket directory, under work_dir, on its command line
            pid = wait_for(lambda: _process_under(work_dir, b"pgbench"), what="pgbench")
        os.kill(pid, signal.SIGKILL)
        assert lab.wait(timeout=CLI_TIMEOUT_S) == 0, lab_stderr(tmp_path)
    assert run_status(lab_dir, run_id) == "done"
    failures = store_query(
        lab_dir, "select reason from measurements where run_id = ? and status = 'failed'",
        (run_id,),
    )  # fmt: skip
    assert failures, "the point under the kill was not recorded as failed"
    if victim == "postmaster":
        assert failures[0][0].startswith("the server died (killed by SIGKILL)"), failures
    rows = measured(lab_dir, run_id)
    assert len({(p, r) for p, r, _ in rows}) == len(rows) == len(PLANNED)
    assert leftovers(lab_tmp, {lab.pid}) == []


# -- a full disk and a read-only disk for the lab dir and the store -----------------------------


@contextlib.contextmanager
def small_tmpfs(tmp_path: Path, size: str = "2m"):
    """A tmpfs of `size` mounted for this test, unmounted whatever happens."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
                   check=True)  # fmt: skip
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(directory: Path) -> Path:
    """Fill the file system of `directory` to the last byte; returns the filler to remove."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        for chunk in (b"\0" * 65536, b"\0" * 4096, b"\0"):
            with contextlib.suppress(OSError):
                while True:
                    out.write(chunk)
    return filler


def test_a_full_disk_stops_the_run_in_one_line_and_it_reads_and_resumes(tmp_path, lab_tmp):
    with small_tmpfs(tmp_path) as disk:
        lab_dir = disk / "lab"
        with lab_process(
            ["run", SPEC, "--lab-dir", lab_dir, "--no-report"], tmp_path, lab_tmp
        ) as lab:  # fmt: skip
            run_id, _ = wait_until_measuring(lab, lab_dir, tmp_path, measurements=1)
            filler = _fill(disk)
            assert lab.wait(timeout=CLI_TIMEOUT_S) == 1
        stderr = lab_stderr(tmp_path)
        assert "Traceback" not in stderr
        assert any(line.startswith("pgcachelab: the results store ") and "full" in line
                   for line in stderr.splitlines()), stderr  # fmt: skip
        # read on the full disk: nothing is written to look
        for args in (["runs"], ["show", run_id], ["export", run_id]):
            result = run_cli(*args, "--lab-dir", lab_dir, tmpdir=lab_tmp)
            assert result.returncode == 0, (args, result.stderr)
        report = run_cli("report", run_id, "--lab-dir", lab_dir, tmpdir=lab_tmp)
        assert report.returncode == 2 and "no space left on device" in report.stderr
        assert len(own_lines(report.stderr)) == 2, report.stderr
        filler.unlink()
        result = run_cli("run", "--resume", run_id, "--lab-dir", lab_dir, "--no-report",
                         tmpdir=lab_tmp)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert run_status(lab_dir, run_id) == "done"
        assert_each_measured_once(lab_dir, run_id)
    assert leftovers(lab_tmp, {lab.pid}) == []


def test_a_read_only_lab_dir_is_read_and_refused_for_writing_in_one_line(tmp_path, lab_tmp):
    with small_tmpfs(tmp_path, "8m") as disk:
        lab_dir = disk / "lab"
        first = run_cli("run", SPEC, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp)
        assert first.returncode == 0, first.stderr
        [(run_id,)] = store_query(lab_dir, "select run_id from runs")
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        for args in (["runs"], ["show", run_id], ["export", run_id, "--format", "json"]):
            result = run_cli(*args, "--lab-dir", lab_dir, tmpdir=lab_tmp)
            assert result.returncode == 0, (args, result.stderr)
        elsewhere = run_cli("report", run_id, "--lab-dir", lab_dir, "--output",
                            tmp_path / "report", tmpdir=lab_tmp)  # fmt: skip
        assert elsewhere.returncode == 0, elsewhere.stderr
        for args in (["run", SPEC], ["report", run_id]):
            result = run_cli(*args, "--lab-dir", lab_dir, tmpdir=lab_tmp)
            assert result.returncode == 2, result.stderr
            assert "read-only file system" in result.stderr, result.stderr
            assert len(own_lines(result.stderr)) == 2 and "Traceback" not in result.stderr
    assert leftovers(lab_tmp, set()) == []


# -- a PostgreSQL results store restarted mid-run ------------------------------------------------


def test_a_postgresql_store_restarted_mid_run_stops_it_in_one_line_then_resumes(
    shared_cluster, tmp_path, lab_tmp
):
    store = shared_cluster
    store.apply_settings({})
    url = f"postgresql://lab@/postgres?host={store.socket_dir}&port={store.port}"
    args = ["run", SPEC, "--store", url, "--lab-dir", tmp_path / "lab", "--no-report"]

    def stored() -> list[tuple]:
        with store.connect() as conn, contextlib.suppress(Exception):
            return conn.execute("select run_id, count(*) from pgcachelab.measurements"
                                " group by run_id").fetchall()  # fmt: skip
        return []

    with lab_process(args, tmp_path, lab_tmp) as lab:
        [(run_id, _)] = wait_for(stored, what="a stored measurement")
        store.restart()
        assert lab.wait(timeout=CLI_TIMEOUT_S) == 1, lab_stderr(tmp_path)
    stderr = lab_stderr(tmp_path)
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-2].startswith("pgcachelab: the results store postgresql://")
    assert stderr.splitlines()[-1].startswith("hint: ")
    result = run_cli("run", "--resume", run_id, "--store", url, "--no-report", tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    with store.connect() as conn:
        rows = conn.execute("select point_index, repetition from pgcachelab.measurements"
                            " where run_id = %s", [run_id]).fetchall()  # fmt: skip
        [status] = conn.execute("select status from pgcachelab.runs where run_id = %s",
                                [run_id]).fetchone()  # fmt: skip
        conn.execute("drop schema pgcachelab cascade")
    assert status == "done"
    assert len(rows) == len(set(rows)) and set(rows) == PLANNED
    assert leftovers(lab_tmp, {lab.pid}) == []


# -- two labs on one store -----------------------------------------------------------------------


def test_two_labs_on_one_store_lose_nothing(tmp_path, lab_tmp):
    lab_dir = tmp_path / "lab"
    labs = [_start(["run", SPEC, "--lab-dir", lab_dir, "--no-report"], lab_tmp,
                   tmp_path / f"lab{i}.stderr") for i in range(2)]  # fmt: skip
    for i, lab in enumerate(labs):
        assert lab.wait(timeout=CLI_TIMEOUT_S) == 0, (tmp_path / f"lab{i}.stderr").read_text()
    runs = store_query(lab_dir, "select run_id, status from runs")
    assert len(runs) == 2 and {status for _, status in runs} == {"done"}
    for run_id, _ in runs:
        assert_each_measured_once(lab_dir, run_id)
    assert leftovers(lab_tmp, {lab.pid for lab in labs}) == []
    assert not any(process_alive(lab.pid) for lab in labs)
