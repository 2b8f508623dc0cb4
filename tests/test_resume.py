"""A run whose lab is killed, or interrupted, leaves no server behind, and a killed run resumes.

The lab runs as a real `pgcachelab run` subprocess; the tests watch its store as another process
would, and kill or interrupt it part-way through tests/data/specs/six-points.toml.
"""

import signal
from pathlib import Path

import pytest
from fix_cli import CLI_TIMEOUT_S, SPECS_DIR, run_cli
from fix_lab import lab_process, lab_stderr, store_query, wait_until_measuring
from fix_processes import postmaster_pid, process_alive, processes_mentioning

pytestmark = [pytest.mark.server, pytest.mark.slow]

SPEC = SPECS_DIR / "six-points.toml"
POINTS = 6


def _measurements(lab_dir: Path, run_id: str) -> list[tuple]:
    return store_query(
        lab_dir,
        "select point_index, repetition, status, started_at from measurements"
        " where run_id = ? order by point_index, repetition",
        (run_id,),
    )


def test_a_killed_run_leaves_no_server_and_resumes_to_the_end(tmp_path, lab_tmp):
    lab_dir = tmp_path / "lab"
    with lab_process(["run", SPEC, "--lab-dir", lab_dir, "--no-report"], tmp_path, lab_tmp) as lab:
        run_id, work_dir = wait_until_measuring(lab, lab_dir, tmp_path, measurements=2)
        server_pid = postmaster_pid(Path(work_dir))
        assert server_pid in processes_mentioning(work_dir)
        lab.send_signal(signal.SIGKILL)
        assert lab.wait() == -signal.SIGKILL

    [(status,)] = store_query(lab_dir, "select status from runs where run_id = ?", (run_id,))
    assert status == "running"  # the killed lab could not say otherwise
    before_resume = _measurements(lab_dir, run_id)
    assert len(before_resume) >= 2

    result = run_cli(
        "run", "--resume", run_id, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"resuming: {len(before_resume)} of {POINTS} measurements already done" in (
        result.stderr
    )

    after = _measurements(lab_dir, run_id)
    assert [(p, r, s) for p, r, s, _ in after] == [(p, 0, "ok") for p in range(POINTS)]
    assert after[: len(before_resume)] == before_resume  # kept, not measured again
    [(status, recorded_work_dir, failure)] = store_query(
        lab_dir, "select status, work_dir, failure from runs where run_id = ?", (run_id,)
    )
    assert (status, recorded_work_dir, failure) == ("done", None, None)

    # the killed run's server (gone with its lab, or stopped by the resume) and its directory
    assert not process_alive(server_pid)
    assert processes_mentioning(work_dir) == []
    assert not Path(work_dir).exists()
    assert list(lab_tmp.iterdir()) == []  # nor anything of the resumed run's own cluster


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "term"])
def test_ctrl_c_stops_the_server_and_marks_the_run_interrupted(tmp_path, lab_tmp, signal_number):
    lab_dir = tmp_path / "lab"
    with lab_process(["run", SPEC, "--lab-dir", lab_dir, "--no-report"], tmp_path, lab_tmp) as lab:
        run_id, work_dir = wait_until_measuring(lab, lab_dir, tmp_path, measurements=1)
        server_pid = postmaster_pid(Path(work_dir))
        lab.send_signal(signal_number)  # SIGTERM takes the same path (cli/main.py)
        assert lab.wait(timeout=CLI_TIMEOUT_S) == 128 + signal_number  # 130, 143

    stderr = lab_stderr(tmp_path)
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-1] == "pgcachelab: interrupted; the server was stopped"
    [(status, recorded_work_dir, failure)] = store_query(
        lab_dir, "select status, work_dir, failure from runs where run_id = ?", (run_id,)
    )
    assert (status, recorded_work_dir, failure) == ("interrupted", None, "interrupted by the user")
    assert all(status == "ok" for _, _, status, _ in _measurements(lab_dir, run_id))
    assert not process_alive(server_pid)
    assert processes_mentioning(work_dir) == []
    assert not Path(work_dir).exists()
    assert list(lab_tmp.iterdir()) == []
