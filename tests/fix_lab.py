"""A lab running in the background, and its results store read the way another process would:
for the tests that watch a run, kill it or resume it."""

import contextlib
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from fix_cli import cli_command, cli_env
from fix_processes import wait_for


def store_query(lab_dir: Path, sql: str, params=()) -> list[tuple]:
    """Rows of `sql` on the lab's store, or [] while the store does not exist yet."""
    path = Path(lab_dir) / "results.sqlite"
    if not path.exists():
        return []
    db = sqlite3.connect(path, timeout=30)
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.OperationalError as error:
        if re.search(r"no such table", str(error)):
            return []
        raise
    finally:
        db.close()


@contextlib.contextmanager
def background(command: list, env: dict, out_dir: Path, name: str = "lab"):
    """`command` running in the background, its output in `name`.stdout/.stderr under
    `out_dir`; killed if the test leaves it running."""
    with (
        open(out_dir / f"{name}.stdout", "w") as stdout,
        open(out_dir / f"{name}.stderr", "w") as stderr,
    ):
        process = subprocess.Popen(
            command, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


def lab_process(args, tmp_path: Path, lab_tmp: Path):
    """`pgcachelab ARGS` running in the background; killed if the test leaves it running."""
    return background(cli_command(*args), cli_env(lab_tmp), tmp_path)


def lab_stderr(tmp_path: Path) -> str:
    return (tmp_path / "lab.stderr").read_text()


def wait_until_measuring(process, lab_dir: Path, tmp_path: Path, measurements: int):
    """(run id, work dir) once the running run has stored `measurements` measurements."""

    def progress():
        if process.poll() is not None:
            pytest.fail(f"the lab exited with {process.returncode}: {lab_stderr(tmp_path)}")
        rows = store_query(
            lab_dir,
            "select r.run_id, r.work_dir, count(m.run_id) from runs r"
            " left join measurements m on m.run_id = r.run_id"
            " where r.status = 'running' group by r.run_id",
        )
        if rows and rows[0][1] and rows[0][2] >= measurements:
            return rows[0][0], rows[0][1]
        return None

    return wait_for(progress, what=f"{measurements} stored measurements")
