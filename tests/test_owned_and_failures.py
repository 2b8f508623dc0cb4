"""Pure parts of issue 18: the registry of what labs create (machine/owned.py) and the one-line
messages for the environment's failures (failures.py)."""

import errno
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from pgcachelab.clusters.managed import describe_exit
from pgcachelab.failures import database_reason, os_error_line, store_error_line
from pgcachelab.machine import owned
from pgcachelab.machine.host_facts import parse_proc_stat
from pgcachelab.workloads.tpcc.params import parse_duration_option

# A real /proc/PID/stat line whose command name holds a space and a parenthesis.
STAT = (
    "4242 (pg (x) worker) S 1 4242 4242 0 -1 4194560 1204 0 0 0 3 1 0 0 20 0 1 0 "
    "987654 8888888 900 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
)


def test_the_start_time_is_field_22_even_after_a_name_with_parentheses():
    assert parse_proc_stat(STAT).start_time == 987654


def test_the_registry_is_under_run_for_root_and_per_user_otherwise():
    assert owned.registry_dir(0) == Path("/run/pgcachelab/owned")
    assert owned.registry_dir(1000, "/run/user/1000") == Path("/run/user/1000/pgcachelab/owned")
    assert owned.registry_dir(1000, "").name == "pgcachelab-owned-1000"


def _finished_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


def test_a_recycled_pid_is_not_taken_for_the_owner():
    me = owned.Owner.me()
    assert me.alive()
    assert not owned.Owner(me.pid, me.start_time + 1).alive()  # same pid, another process
    assert not owned.Owner(_finished_pid(), 1).alive()


def test_dead_entries_come_mounts_first_and_clusters_before_their_cgroups():
    me, dead = owned.Owner.me(), owned.Owner(_finished_pid(), 1)
    entries = [owned.Entry(kind, f"/x/{kind}", owner, {}, Path(kind))
               for kind, owner in (("run", dead), ("cgroup", dead), ("cluster", dead),
                                   ("dir", me), ("mount", dead), ("dir", dead))]  # fmt: skip
    reaped = owned.dead_entries(entries, owned.Owner.alive)
    assert [entry.kind for entry in reaped] == ["mount", "dir", "cluster", "cgroup", "run"]


def test_half_written_entries_are_skipped():
    assert owned.parse_entry("{", Path("x")) is None
    assert owned.parse_entry('{"kind": "dir"}', Path("x")) is None


def test_what_a_dead_lab_recorded_is_reaped_and_a_live_labs_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(owned, "registry_dir", lambda: tmp_path / "owned")
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    theirs.mkdir()
    owned.record("dir", mine)
    entry = owned.record("dir", theirs)
    text = entry.read_text().replace(f'"pid": {os.getpid()}', f'"pid": {_finished_pid()}')
    entry.write_text(text)  # as if a killed lab had written it
    [done] = owned.reap({"dir": owned.remove_dir})
    assert done.startswith(f"removed {theirs}, left by a killed lab (pid ")
    assert not theirs.exists() and mine.exists()
    assert [e.path for e in owned.entries()] == [str(mine)]


def test_entries_a_killed_lab_did_not_rename_are_reaped_and_the_registry_can_go(
    tmp_path, monkeypatch
):
    """A lab killed between writing an entry and renaming it (`record`) left a .partial that
    no reaper read, and the registry's directory never went."""
    registry = tmp_path / "owned"
    monkeypatch.setattr(owned, "registry_dir", lambda: registry)
    theirs, mine = tmp_path / "theirs", tmp_path / "mine"
    theirs.mkdir()
    dead, me = _finished_pid(), owned.Owner.me()
    whole = owned.record("dir", theirs)
    text = whole.read_text().replace(f'"pid": {me.pid}', f'"pid": {dead}')
    (registry / f"{dead}-1-dir-0a0a0a0a.partial").write_text(text)  # written, not renamed
    whole.unlink()
    (registry / f"{dead}-1-dir-half.partial").write_text('{"kind": "dir", "pa')
    living_half = registry / f"{me.pid}-{me.start_time}-dir-half.partial"
    living_half.write_text('{"kind": "dir", "pa')  # a live lab's, being written: kept
    my_entry = owned.record("dir", mine)
    [done] = owned.reap({"dir": owned.remove_dir})
    assert done.startswith(f"removed {theirs}, left by a killed lab (pid {dead})")
    assert not theirs.exists()
    left = {path.name for path in registry.iterdir()}
    assert left == {owned.LOCK_FILE, living_half.name, my_entry.name}
    owned.forget(my_entry)
    living_half.unlink()
    owned.remove_if_empty()
    assert not registry.exists()


def test_an_empty_registry_goes_with_its_pgcachelab_directory(tmp_path, monkeypatch):
    """`make quick` as root left an empty /run/pgcachelab once its registry had gone."""
    monkeypatch.setattr(owned, "registry_dir", lambda: tmp_path / "pgcachelab" / "owned")
    owned.forget(owned.record("dir", tmp_path / "x"))
    owned.remove_if_empty()
    assert list(tmp_path.iterdir()) == []


def test_an_entrys_owner_is_in_its_file_name():
    assert owned.owner_from_name("4242-987654-dir-0a0a0a0a.partial") == owned.Owner(4242, 987654)
    assert owned.owner_from_name("lock") is None
    assert owned.owner_from_name("٣-1-dir-x.partial") is None


def test_a_scratch_dir_and_its_entry_go_with_it(tmp_path, monkeypatch):
    monkeypatch.setattr(owned, "registry_dir", lambda: tmp_path / "owned")
    with owned.scratch_dir(str(tmp_path / "scratch-")) as scratch:
        assert scratch.is_dir() and len(owned.entries()) == 1
    assert not scratch.exists() and owned.entries() == []


@pytest.mark.parametrize(
    ("code", "filename", "message", "hint"),
    [
        (errno.ENOSPC, "/lab/reports/x.png", "/lab/reports/x.png: no space left on device",
         "free space"),
        (errno.EROFS, "/ro/lab", "/ro/lab: read-only file system", "writable --lab-dir"),
        (errno.ENAMETOOLONG, "/a" * 10, "/a/a/a/a/a/a/a/a/a/a: file name too long",
         "shorter path"),
        (errno.EACCES, "/root/x", "/root/x: permission denied", "permissions"),
    ],
)  # fmt: skip
def test_os_errors_name_the_path_the_cause_and_a_fix(code, filename, message, hint):
    said, fix = os_error_line(OSError(code, os.strerror(code), filename))
    assert said == message and hint in fix


def test_store_errors_name_the_store_and_keep_the_whole_reason():
    said, fix = store_error_line(sqlite3.DatabaseError("file is not a database"), "'x.toml'")
    assert said == "the results store 'x.toml': file is not a database"
    assert "not a pgcachelab store" in fix
    two_lines = Exception('connection to server on socket "/s/.s.PGSQL.1" failed: No such file\n'
                          "\tIs the server running locally?")  # fmt: skip
    assert database_reason(two_lines).startswith('connection to server on socket "/s/')
    assert database_reason(two_lines).endswith("Is the server running locally?")
    # an error inside a SQL function: its CONTEXT quotes the function, which is not the user's
    in_function = Exception(
        'insert or update on table "procrastinate_jobs" violates foreign key constraint'
        ' "procrastinate_jobs_worker_id_fkey"\nDETAIL:  Key (worker_id)=(2) is not present'
        ' in table "procrastinate_workers".\nCONTEXT:  SQL statement "WITH candidate AS ('
        + "SELECT jobs.* FROM procrastinate_jobs AS jobs " * 40
        + ')"'
    )
    reason = database_reason(in_function)
    assert reason.endswith('Key (worker_id)=(2) is not present in table "procrastinate_workers".')
    assert database_reason(Exception("x" * 1000)) == "x" * 399 + "…"


def test_exits_in_words():
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(1) == "exit code 1"


@pytest.mark.parametrize(("text", "seconds"), [("5s", 5), ("2min", 120), ("30", 30)])
def test_tpcc_duration_reads_like_a_spec(text, seconds):
    assert parse_duration_option(text) == seconds
