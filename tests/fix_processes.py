"""Processes and directories of the server tiers: is a pid alive, who mentions a path, what a
user sees, and the /tmp directories that clusters live in.

Clusters live in a per-test directory under /tmp (mode 0755) rather than pytest's tmp_path:
/tmp/pytest-of-root is 0700, so the unprivileged server user could not reach a cluster there.
Whatever a test leaves in one is stopped and removed when the test ends.
"""

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgcachelab.clusters.managed import reap_stale
from pgcachelab.clusters.shmem_leftovers import release_shared_memory


def process_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains `text` (a postmaster's -D path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in cmdline and process_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def output_as_user(user, produce) -> str:
    """The text `produce()` returns in a forked child running as `user` (a pwd entry). A fork,
    not a new interpreter: this interpreter may live under /root, which the user cannot read;
    everything is imported already."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, produce, write, leave without cleanup
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            with os.fdopen(write_end, "w") as out:
                out.write(produce())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return text


def postmaster_pid(work_dir: Path) -> int:
    """The pid in a cluster's postmaster.pid (first line)."""
    return int((Path(work_dir) / "pgdata" / "postmaster.pid").read_text().splitlines()[0])


def wait_for(predicate, timeout_s: float = 120.0, interval_s: float = 0.1, what: str = "it"):
    """Poll until `predicate()` is truthy and return its value; fail the test after a timeout.

    The timeout is a guard against hanging, never an assertion about speed.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what} after {timeout_s:.0f} s")
        time.sleep(interval_s)


def _reap_everything_under(base: Path) -> None:
    """Stop every postmaster whose data directory is under `base`, then remove `base`."""
    for work_dir in base.glob("pgcachelab-*"):
        reap_stale(work_dir)
    for pid in processes_mentioning(str(base)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid_file in base.rglob("postmaster.pid"):  # what a server killed just now left
        release_shared_memory(pid_file.parent)
    shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def server_reachable_dir() -> Iterator[Path]:
    """A fresh directory under /tmp that the server user can traverse; reaped on exit."""
    base = Path(tempfile.mkdtemp(prefix="pgcachelab-test-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        _reap_everything_under(base)
