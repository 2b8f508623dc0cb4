"""The emulated disk: pure parts, then a real FUSE mount (root, /dev/fuse, libfuse3).

The mounts live in a directory under /tmp that the server user can traverse (pytest's own is
0700); every test unmounts what it mounted, and the fixture detaches anything left before the
directory is removed, so no mount or daemon outlives a test.
"""

import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fix_processes import process_alive, server_reachable_dir, wait_for

from pgcachelab.clusters.osuser import OsUser, run_as_kwargs, server_user
from pgcachelab.machine.fusedisk import (
    DiskError,
    DiskMount,
    DiskTimings,
    FuseDisk,
    availability,
    disk_mounts,
    ensure_built,
    reap_stale_mounts,
)
from pgcachelab.machine.host_facts import parse_mountinfo, read_mountinfo

DATA = Path(__file__).parent / "data" / "machine"
AVAILABLE, WHY_NOT = availability()
needs_fuse = pytest.mark.skipif(not AVAILABLE, reason=WHY_NOT)
# The server user cannot reach a virtualenv under /root: its helper runs on Debian's Python.
SYSTEM_PYTHON = "/usr/bin/python3"
BLOCK = 8192
FILE_BYTES = 64 * 1024 * 1024


# -- pure ----------------------------------------------------------------------------------------


def test_daemon_args_in_whole_microseconds():
    timings = DiskTimings(read_latency_s=0.0005, write_latency_s=0.0001, sync_latency_s=0.002)
    assert timings.daemon_args() == [
        "--read-latency-us", "500", "--write-latency-us", "100", "--sync-latency-us", "2000",
    ]  # fmt: skip


def test_daemon_args_with_limits():
    timings = DiskTimings(0.0001234, 0, 0.01, iops=200, bandwidth_bytes_s=100_000_000)
    assert timings.daemon_args() == [
        "--read-latency-us", "123", "--write-latency-us", "0", "--sync-latency-us", "10000",
        "--iops", "200", "--bandwidth-bps", "100000000",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "kwargs",
    [{"read_latency_s": -0.001}, {"sync_latency_s": 61.0}, {"iops": 0}, {"bandwidth_bytes_s": 0}],
)
def test_timings_out_of_range(kwargs):
    values = {"read_latency_s": 0.0, "write_latency_s": 0.0, "sync_latency_s": 0.0} | kwargs
    with pytest.raises(ValueError):
        DiskTimings(**values)


def test_mountinfo_captured_with_two_disks():
    """Captured from this VM with two disks of lab 7368 mounted, one on a path with a space."""
    mounts = disk_mounts(parse_mountinfo((DATA / "mountinfo-fusedisk.txt").read_text()))
    assert mounts == [
        DiskMount(Path("/tmp/fdcap-l0NX/mount point"), "pgcachelab-disk-7368", 7368),
        DiskMount(Path("/tmp/fdcap-l0NX/m2"), "pgcachelab-disk-7368", 7368),
    ]


def test_mountinfo_ignores_other_fuse_mounts_and_keeps_unnamed_ones():
    text = textwrap.dedent("""\
        50 27 0:41 / /home/u/remote rw,nosuid,nodev - fuse.sshfs u@host:/ rw,user_id=1000
        51 27 0:42 / /srv/a\\134b rw - fuse.pgcachelab-disk pgcachelab-disk rw,user_id=0
        52 27 0:43 / /srv/c rw shared:7 - fuse.pgcachelab-disk pgcachelab-disk-12 rw,user_id=0
        53 27 0:44 / /srv/d rw - fuse pgcachelab-disk-13 rw,user_id=0
        a line that is not mountinfo
    """)
    assert disk_mounts(parse_mountinfo(text)) == [
        DiskMount(Path("/srv/a\\b"), "pgcachelab-disk", None),
        DiskMount(Path("/srv/c"), "pgcachelab-disk-12", 12),
    ]


# -- a real mount --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiskDirs:
    base: Path
    backing: Path
    mountpoint: Path
    user: OsUser

    def disk(self, timings: DiskTimings) -> FuseDisk:
        return FuseDisk(timings, self.backing, self.mountpoint, self.user.uid, self.user.gid)


def _mounts_under(base: Path) -> list[DiskMount]:
    mounts = disk_mounts(read_mountinfo())
    return [mount for mount in mounts if mount.mount_point.is_relative_to(base)]


@pytest.fixture
def dirs() -> Iterator[DiskDirs]:
    user = server_user()
    with server_reachable_dir() as base:
        backing, mountpoint = base / "backing", base / "mnt"
        backing.mkdir()
        mountpoint.mkdir()
        os.chown(backing, user.uid, user.gid)
        try:
            yield DiskDirs(base, backing, mountpoint, user)
        finally:
            left = _mounts_under(base)
            for mount in left:  # before the directory is removed, never through a mount
                subprocess.run(["umount", "-l", str(mount.mount_point)], check=False)
            assert not left, f"a test left {left} mounted"


ZERO = DiskTimings(read_latency_s=0.0, write_latency_s=0.0, sync_latency_s=0.0)


def _write_file(path: Path, size_bytes: int) -> None:
    chunk = random.Random(0).randbytes(1024 * 1024)
    with open(path, "wb") as out:
        for _ in range(size_bytes // len(chunk)):
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())  # dirty pages would survive DONTNEED


def _drop_cached_pages(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _pread_medians_us(path: Path, offsets: list[int]) -> tuple[float, float]:
    """Median µs of one 8 kB pread per offset: first pass (cold), second pass (warm)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        passes = []
        for _ in range(2):
            took_ns = []
            for offset in offsets:
                start = time.perf_counter_ns()
                os.pread(fd, BLOCK, offset)
                took_ns.append(time.perf_counter_ns() - start)
            passes.append(statistics.median(took_ns) / 1000)
        return passes[0], passes[1]
    finally:
        os.close(fd)


def _random_offsets(count: int, seed: int) -> list[int]:
    return [
        block * BLOCK for block in random.Random(seed).sample(range(FILE_BYTES // BLOCK), count)
    ]


def _stats_with(disk, **at_least) -> dict | None:
    """The daemon's counters once each named one reached its value, else None."""
    stats = disk.stats()
    return stats if all(stats.get(key, 0) >= value for key, value in at_least.items()) else None


@pytest.mark.quiet
@needs_fuse
@pytest.mark.slow
def test_cold_reads_pay_the_latency_warm_reads_do_not(dirs):
    read_latency_us = 500.0
    offsets = _random_offsets(200, seed=1)
    plain = dirs.base / "plain"
    _write_file(plain, FILE_BYTES)
    _drop_cached_pages(plain)
    plain_cold_us, plain_warm_us = _pread_medians_us(plain, offsets)
    plain.unlink()

    timings = DiskTimings(read_latency_s=read_latency_us / 1e6, write_latency_s=0, sync_latency_s=0)
    with dirs.disk(timings) as disk:
        through = dirs.mountpoint / "data"
        _write_file(through, FILE_BYTES)
        _drop_cached_pages(through)  # the FUSE file's pages; the backing file's stay cached
        fuse_cold_us, fuse_warm_us = _pread_medians_us(through, offsets)
        # the daemon writes its counters every stats interval
        stats = wait_for(
            lambda: _stats_with(disk, reads=len(offsets), writes=1, write_bytes=FILE_BYTES),
            what="the reads and writes counted",
        )
    print(f"cold median: plain {plain_cold_us:.1f} µs, FUSE {fuse_cold_us:.1f} µs")
    print(f"warm median: plain {plain_warm_us:.1f} µs, FUSE {fuse_warm_us:.1f} µs")
    expected_cold_us = read_latency_us + plain_cold_us
    assert 0.7 * expected_cold_us <= fuse_cold_us <= 1.3 * expected_cold_us
    # A warm read is a page-cache copy of a few µs either way; twice such a small number is at
    # the mercy of one timer interrupt or a neighbour on a shared 2-core VM, hence the floor.
    assert fuse_warm_us <= max(2 * plain_warm_us, plain_warm_us + 20)
    assert stats["reads"] >= len(offsets)
    assert stats["writes"] >= 1 and stats["write_bytes"] == FILE_BYTES
    assert stats["read_latency_us"] == read_latency_us


@pytest.mark.quiet
@needs_fuse
def test_fdatasync_pays_the_sync_latency_only(dirs):
    sync_latency_us = 2000.0
    timings = DiskTimings(read_latency_s=0, write_latency_s=0, sync_latency_s=sync_latency_us / 1e6)
    with dirs.disk(timings) as disk:
        fd = os.open(dirs.mountpoint / "wal", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            took_us = []
            for _ in range(20):
                os.pwrite(fd, b"x" * BLOCK, 0)
                start = time.perf_counter_ns()
                os.fdatasync(fd)
                took_us.append((time.perf_counter_ns() - start) / 1000)
        finally:
            os.close(fd)
        stats = wait_for(lambda: _stats_with(disk, syncs=20), what="the syncs counted")
    median_us = statistics.median(took_us)
    print(f"fdatasync median {median_us:.0f} µs (sync latency {sync_latency_us:.0f} µs)")
    assert 0.7 * sync_latency_us <= median_us <= 1.3 * sync_latency_us
    assert stats["syncs"] >= 20


@pytest.mark.quiet
@needs_fuse
def test_iops_limit_spaces_requests(dirs):
    timings = DiskTimings(read_latency_s=0, write_latency_s=0, sync_latency_s=0, iops=200)
    with dirs.disk(timings):
        path = dirs.mountpoint / "data"
        with open(path, "wb") as out:
            out.truncate(FILE_BYTES)  # a sparse file: no writes through the rate limit
        _drop_cached_pages(path)
        fd = os.open(path, os.O_RDONLY)
        try:
            start = time.perf_counter()
            for offset in _random_offsets(100, seed=2):
                os.pread(fd, BLOCK, offset)
            took_s = time.perf_counter() - start
        finally:
            os.close(fd)
    print(f"100 reads at --iops 200: {took_s:.3f} s")
    assert 0.45 <= took_s <= 2.0


@pytest.mark.quiet
@needs_fuse
def test_bandwidth_limit_is_shared_by_concurrent_transfers(dirs):
    """8 MiB at 100 MB/s take >= 84 ms even though readahead splits them into requests that
    the daemon serves at once: transfers queue on one channel."""
    bandwidth_bytes_s, size_bytes = 100_000_000, 8 * 1024 * 1024
    timings = DiskTimings(0, 0, 0, bandwidth_bytes_s=bandwidth_bytes_s)
    with dirs.disk(timings) as disk:
        path = dirs.mountpoint / "data"
        with open(path, "wb") as out:
            out.truncate(size_bytes)
        _drop_cached_pages(path)
        start = time.perf_counter()
        with open(path, "rb", buffering=0) as data:
            while data.read(1024 * 1024):
                pass
        took_s = time.perf_counter() - start
        stats = wait_for(lambda: _stats_with(disk, read_bytes=size_bytes), what="reads counted")
        read_bytes = stats["read_bytes"]
    print(f"{size_bytes} bytes at {bandwidth_bytes_s} B/s: {took_s:.3f} s")
    assert read_bytes >= size_bytes
    assert size_bytes / bandwidth_bytes_s <= took_s <= 3 * size_bytes / bandwidth_bytes_s


@needs_fuse
def test_concurrent_reads_wait_out_their_latency_together(dirs):
    """Backends each wait out their own miss: 8 readers of 25 misses at 2 ms take ~50 ms,
    not the 400 ms of one queue (threads in the daemon, background requests in the kernel)."""
    timings = DiskTimings(read_latency_s=0.002, write_latency_s=0, sync_latency_s=0)
    readers, reads_each = 8, 25
    with dirs.disk(timings):
        path = dirs.mountpoint / "data"
        with open(path, "wb") as out:
            out.truncate(FILE_BYTES)
        _drop_cached_pages(path)
        offsets = _random_offsets(readers * reads_each, seed=3)
        fd = os.open(path, os.O_RDONLY)

        def read_share(share: list[int]) -> None:
            for offset in share:
                os.pread(fd, BLOCK, offset)

        try:
            shares = [offsets[i::readers] for i in range(readers)]
            threads = [threading.Thread(target=read_share, args=(share,)) for share in shares]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            took_s = time.perf_counter() - start
        finally:
            os.close(fd)
    print(f"{readers} readers x {reads_each} misses at 2 ms: {took_s:.3f} s")
    assert reads_each * 0.002 <= took_s <= 0.5 * readers * reads_each * 0.002


# What PostgreSQL does to its files, run as the server user through the mount. A file unlinked
# while open works through its descriptor (read, write, ftruncate, lseek, fsync: PostgreSQL's
# uses); fstat() on it fails with ESTALE. A hard link is a second kernel inode for the same
# backing file (st_ino is shared, the cached st_nlink is not updated): PostgreSQL links only to
# rename (link, then unlink the old name). See native/fusedisk/fusedisk.c.
_SERVER_USER_OPERATIONS = textwrap.dedent("""\
    import ctypes, json, os, sys
    root = sys.argv[1]
    os.chdir(root)
    done = {}
    os.mkdir("base", 0o700)
    fd = os.open("base/1", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"a" * 8192)
    os.posix_fallocate(fd, 8192, 65536)
    done["fallocate_size"] = os.fstat(fd).st_size
    os.ftruncate(fd, 16384)
    done["ftruncate_size"] = os.fstat(fd).st_size
    os.close(fd)
    os.rename("base/1", "base/2")
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD, RENAME_NOREPLACE = -100, 1
    with open("base/3", "w"):
        pass
    result = libc.renameat2(AT_FDCWD, b"base/3", AT_FDCWD, b"base/2", RENAME_NOREPLACE)
    done["noreplace_errno"] = ctypes.get_errno() if result else 0
    os.truncate("base/3", 100)
    done["truncate_size"] = os.stat("base/3").st_size
    os.link("base/2", "base/2.link")
    done["same_inode"] = os.stat("base/2.link").st_ino == os.stat("base/2").st_ino
    os.unlink("base/2.link")
    fd = os.open("base/2", os.O_RDWR)
    os.unlink("base/2")
    done["read_after_unlink"] = len(os.pread(fd, 8192, 0))
    os.pwrite(fd, b"b" * 8192, 8192)
    os.fsync(fd)
    os.ftruncate(fd, 3 * 8192)
    done["size_after_unlink"] = os.lseek(fd, 0, os.SEEK_END)
    os.close(fd)
    os.mkdir("tblspc_target", 0o700)
    os.mkdir("pg_tblspc", 0o700)
    os.symlink(os.path.join(root, "tblspc_target"), "pg_tblspc/16400")
    done["readlink"] = os.readlink("pg_tblspc/16400")
    with open("pg_tblspc/16400/PG_18", "w") as through_link:
        through_link.write("x")
    os.chmod("base/3", 0o640)
    done["mode"] = oct(os.stat("base/3").st_mode & 0o777)
    dir_fd = os.open("base", os.O_RDONLY)
    os.fsync(dir_fd)
    os.close(dir_fd)
    done["listing"] = sorted(os.listdir("base"))
    os.unlink("base/3")
    os.rmdir("base")
    print(json.dumps(done))
""")


@needs_fuse
def test_server_user_operations_and_ownership(dirs):
    with dirs.disk(ZERO) as disk:
        result = subprocess.run(
            [SYSTEM_PYTHON, "-c", _SERVER_USER_OPERATIONS, str(dirs.mountpoint)],
            capture_output=True, text=True, cwd="/", timeout=60, **run_as_kwargs(dirs.user),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        owners = {path.name: (path.lstat().st_uid, path.lstat().st_gid)
                  for path in dirs.backing.rglob("*")}  # fmt: skip
        disk.check()
    done = json.loads(result.stdout)
    assert done == {
        "fallocate_size": 8192 + 65536,
        "ftruncate_size": 16384,
        "noreplace_errno": 17,  # EEXIST: renameat2's flags reach the backing directory
        "truncate_size": 100,
        "same_inode": True,
        "read_after_unlink": 8192,
        "size_after_unlink": 3 * 8192,
        "readlink": str(dirs.mountpoint / "tblspc_target"),
        "mode": "0o640",
        "listing": ["3"],  # no .fuse_hidden file for the unlinked open one
    }
    assert owners == {
        name: (dirs.user.uid, dirs.user.gid)
        for name in ("tblspc_target", "pg_tblspc", "16400", "PG_18")
    }


@needs_fuse
def test_mount_failure_names_the_reason(dirs):
    disk = FuseDisk(ZERO, dirs.backing, dirs.base / "missing", dirs.user.uid, dirs.user.gid)
    with pytest.raises(DiskError, match="missing"):
        disk.mount()
    assert disk.process is None
    disk.unmount()  # idempotent after a failure


@needs_fuse
def test_killed_daemon_is_reported_and_cleaned_up(dirs):
    disk = dirs.disk(ZERO)
    disk.mount()
    try:
        disk.check()
        os.kill(disk.process.pid, signal.SIGKILL)
        wait_for(lambda: disk.process.poll() is not None, timeout_s=10, what="the daemon's end")
        with pytest.raises(DiskError, match="died.*SIGKILL"):
            disk.check()
    finally:
        disk.unmount()
    assert not _mounts_under(dirs.base)
    disk.unmount()


# A lab in a child process: mounts, says the daemon's pid, waits to be interrupted or killed.
_CHILD_LAB = textwrap.dedent("""\
    import faulthandler, signal, sys, time
    from pathlib import Path
    from pgcachelab.machine.fusedisk import DiskTimings, FuseDisk
    faulthandler.register(signal.SIGUSR1)  # where it hangs, if a test times out (see below)
    # Ctrl-C raises here as in the lab, which installs its own handler (interrupts.py), even
    # when the suite runs in the background, where the shell has the children ignore SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    backing, mountpoint, uid, gid = sys.argv[1:]
    timings = DiskTimings(0.0, 0.0, 0.0)
    with FuseDisk(timings, Path(backing), Path(mountpoint), int(uid), int(gid)) as disk:
        print(disk.process.pid, flush=True)
        time.sleep(120)
""")


@contextlib.contextmanager
def _child_lab(dirs: DiskDirs) -> Iterator[tuple[subprocess.Popen, int]]:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD_LAB, str(dirs.backing), str(dirs.mountpoint),
         str(dirs.user.uid), str(dirs.user.gid)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        daemon_pid = int(child.stdout.readline())
        yield child, daemon_pid
    finally:
        child.kill()
        child.communicate()


@needs_fuse
def test_ctrl_c_of_the_lab_unmounts(dirs):
    with _child_lab(dirs) as (child, daemon_pid):
        assert _mounts_under(dirs.base)
        child.send_signal(signal.SIGINT)
        try:
            _, stderr = child.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGUSR1)  # its stack, to say where Ctrl-C got stuck
            time.sleep(1)
            child.kill()
            _, stderr = child.communicate()
            pytest.fail(f"the lab did not end within 60 s of Ctrl-C; its stack:\n{stderr}")
        assert "KeyboardInterrupt" in stderr
    assert not _mounts_under(dirs.base)
    assert not process_alive(daemon_pid)


@needs_fuse
def test_sigkill_of_the_lab_leaves_a_dead_mount_for_the_next_lab(dirs):
    with _child_lab(dirs) as (child, daemon_pid):
        child.kill()
        child.wait()
    # The daemon follows its lab (parent-death signal) but, no longer root, cannot unmount.
    wait_for(lambda: not process_alive(daemon_pid), timeout_s=10, what="the daemon's end")
    assert [mount.mount_point for mount in _mounts_under(dirs.base)] == [dirs.mountpoint]
    private_dirs = list(Path(tempfile.gettempdir()).glob(f"pgcachelab-disk-{child.pid}-*"))
    assert private_dirs  # the killed lab could not remove it
    reaped = reap_stale_mounts()
    assert dirs.mountpoint in reaped
    assert not _mounts_under(dirs.base)
    assert not any(path.exists() for path in private_dirs)


@needs_fuse
def test_reaping_kills_a_daemon_that_outlived_its_lab(dirs):
    """A daemon still serving the mount of a dead lab (say its parent-death signal was lost)."""
    dead_lab_pid = _pid_of_finished_process()
    daemon = subprocess.Popen(
        [str(ensure_built()), str(dirs.backing), str(dirs.mountpoint),
         "--name", f"pgcachelab-disk-{dead_lab_pid}"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        assert daemon.stdout.readline() == b"ready\n"
        assert reap_stale_mounts() == [dirs.mountpoint]
        daemon.wait(timeout=10)  # detached, it may end on its own before the SIGKILL lands
        assert not _mounts_under(dirs.base)
    finally:
        daemon.kill()
        daemon.wait()
        daemon.stdout.close()


def _pid_of_finished_process() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid
