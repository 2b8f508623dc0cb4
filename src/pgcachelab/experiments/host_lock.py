"""One measuring agent per host at a time (issue 38): two agents on one machine measure each
other's noise, so an agent holds its host for its whole life.

Two locks, both keyed by the host's identity (experiments/fleet.py host_identity):
- a lock file on the host (flock) in the lab's own 0700 registry directory (machine/owned.py),
  not in a world-writable one where another user could plant a link or hold the lock; it holds
  while the store is away (restarting);
- an advisory lock in the store, on a connection of its own, which catches two machines
  given the same identity (a cloned VM keeps its machine-id).
The lock file is recorded in the owned-resource registry: a killed agent's is removed by the
next lab command (experiments/reaping.py), once nobody holds it.
"""

import contextlib
import fcntl
import hashlib
import os
import time
from pathlib import Path

import psycopg

from pgcachelab.clusters.client import one_row
from pgcachelab.errors import UserError
from pgcachelab.machine import owned

POLL_S = 2.0  # --wait: how often a waiting agent tries the host again
_ADVISORY = "select pg_try_advisory_lock(hashtext('pgcachelab.host'), hashtext(%s))"


class HostBusy(Exception):
    """Another agent holds the host: the message says which."""


def lock_path(host_id: str) -> Path:
    digest = hashlib.sha256(host_id.encode()).hexdigest()[:16]
    return owned.registry_dir() / f"agent-{digest}.lock"


def _take_file(path: Path, host_id: str) -> int:
    """The host's lock file, locked and holding this pid; HostBusy if another agent has it."""
    while True:
        # made again each time: an empty registry goes at the end of a command (owned.py)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except FileNotFoundError:  # the directory went between the two
            continue
        except OSError as error:  # a link planted there (ELOOP), a full or read-only /run
            raise UserError(
                f"agent: cannot open the host lock {path}: {error.strerror}",
                f"check {path.parent} (it should be this user's, 0700)",
            ) from None
        if os.fstat(fd).st_uid != os.geteuid():
            os.close(fd)
            raise UserError(
                f"agent: {path} is not this user's: another user made it",
                f"remove it, and check who may write to {path.parent}",
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise HostBusy(f"host {host_id!r} is busy: agent pid {holder} measures there") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:  # not a file its last holder unlinked after we opened it
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd
        os.close(fd)


def reap_lock_file(entry: owned.Entry) -> str | None:
    """The reaper of a killed agent's lock file: removed unless a live agent holds it now."""
    path = Path(entry.path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:  # gone, or not a file the lab made
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None  # taken by an agent since: it removes it when it stops
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    os.close(fd)
    return f"removed {path}, the host lock of a killed agent (pid {entry.owner.pid})"


class HostLock:
    """The host's two locks, taken by `acquire` and given back by `release`."""

    def __init__(self, store, host_id: str, application_name: str):
        self.store, self.host_id, self.application_name = store, host_id, application_name
        self.path = lock_path(host_id)
        self.fd: int | None = None
        self.entry: Path | None = None
        self.db: psycopg.Connection | None = None

    def acquire(self, wait: bool, note) -> None:
        """Both locks, or HostBusy (without `wait`); with `wait`, until the host is free."""
        waiting = False
        while True:
            try:
                self._take()
                return
            except HostBusy as busy:
                self._drop()
                if not wait:
                    raise
                if not waiting:
                    note(f"{busy}: waiting for it")
                    waiting = True
                time.sleep(POLL_S)

    def _take(self) -> None:
        if self.fd is None:
            self.entry = owned.record("agent-lock", self.path)
            try:
                self.fd = _take_file(self.path, self.host_id)
            except BaseException:
                owned.forget(self.entry)
                self.entry = None
                raise
        self.retake_in_store()

    def retake_in_store(self) -> None:
        """The store's advisory lock, on a new connection if its old one was lost (the lock
        went with it); HostBusy if another machine with this identity took it meanwhile."""
        if self.db is not None and not self.db.closed and not self.db.broken:
            return
        self._close_db()
        self.db = self.store.another_connection(self.application_name)
        if one_row(self.db.execute(_ADVISORY, (self.host_id,)))[0]:
            return
        holder = self.db.execute(
            "select host_name, pid from agents where host_id = %s and stopped_at is null"
            " order by started_at desc limit 1",
            (self.host_id,),
        ).fetchone()
        self._close_db()
        who = f"host {holder[0]}, pid {holder[1]}" if holder else "an agent"
        raise HostBusy(
            f"host id {self.host_id!r} is held in the store by {who}: if that is another"
            " machine, give each machine its own --host-id"
        )

    def release(self) -> None:
        self._drop()

    def _drop(self) -> None:
        self._close_db()
        if self.fd is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # while holding it: a waiting agent then makes a new one
            os.close(self.fd)
            self.fd = None
        owned.forget(self.entry)
        self.entry = None

    def _close_db(self) -> None:
        if self.db is not None:
            with contextlib.suppress(psycopg.Error):
                self.db.close()  # the advisory lock goes with its session
            self.db = None
