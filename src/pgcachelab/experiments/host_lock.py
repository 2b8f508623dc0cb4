"""One measuring agent per host at a time (issue 38): two agents on one machine measure each
other's noise, so an agent holds its host for its whole life.

Two locks, both keyed by the host's identity (experiments/fleet.py host_identity):
- a lock file on the host (flock) in the lab's own 0700 registry directory (machine/owned.py),
  not in a world-writable one where another user could plant a link or hold the lock; it holds
  while the store is away (restarting);
- an advisory lock in the store, on a connection of its own, which catches two machines
  given the same identity (a cloned VM keeps its machine-id). A store that restarts drops it,
  and an idle connection does not know it was cut (psycopg learns it at its next statement):
  the lock is verified by a query (pg_locks) after every reconnection and at every heartbeat,
  and taken again on a new connection when it went (issue 49, F1). Another agent with this
  identity that took it meanwhile has the host: this one has lost it (`lost`), and stops.
The lock file is recorded in the owned-resource registry: a killed agent's is removed by the
next lab command (experiments/reaping.py), once nobody holds it.
"""

import contextlib
import fcntl
import hashlib
import os
import threading
import time
from pathlib import Path

import psycopg

from pgcachelab.clusters.client import one_row
from pgcachelab.errors import UserError
from pgcachelab.machine import owned

POLL_S = 2.0  # --wait: how often a waiting agent tries the host again
_ADVISORY = "select pg_try_advisory_lock(hashtext('pgcachelab.host'), hashtext(%s))"
# The host's advisory lock as pg_locks shows it: the two-int4-key form puts the keys in classid
# and objid (oids: an int4 cast to oid keeps its bits) and sets objsubid to 2; per database.
_LOCK_ROWS = """
    from pg_locks l
    where l.locktype = 'advisory' and l.granted and l.objsubid = 2
      and l.classid = hashtext('pgcachelab.host')::oid and l.objid = hashtext(%s)::oid
      and l.database = (select oid from pg_database where datname = current_database())
"""
_HELD_HERE = "select exists (select 1" + _LOCK_ROWS + " and l.pid = pg_backend_pid())"
_HOLDER = (
    "select l.pid, (select a.backend_start from pg_stat_activity a where a.pid = l.pid)"
    + _LOCK_ROWS
)
SESSION_GONE_S = 5.0  # how long a terminated session of this agent may take to let the lock go


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
    """The host's two locks, taken by `acquire` and given back by `release`; `retake_in_store`
    verifies the store's lock (from the agent's thread and its heartbeat's: one at a time)."""

    def __init__(self, store, host_id: str, application_name: str):
        self.store, self.host_id, self.application_name = store, host_id, application_name
        self.path = lock_path(host_id)
        self.fd: int | None = None
        self.entry: Path | None = None
        self.db: psycopg.Connection | None = None
        self.session: tuple | None = None  # (pid, backend start) of the session holding it
        self.lost: str | None = None  # why another agent has the host now, once it took it
        self._mutex = threading.Lock()

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
        with self._mutex:
            self._take_in_store()

    def retake_in_store(self) -> None:
        """Verify, by a query, that this agent's session still holds the store's advisory lock
        (a restarted store dropped it, unknown to an idle connection); take it again on a new
        connection when it went. HostBusy once another agent with this identity has it (the
        host is lost, and stays lost: `lost`); psycopg.OperationalError while the store is
        away (the next reconnection or heartbeat tries again)."""
        with self._mutex:
            if self.lost is not None:
                raise HostBusy(self.lost)
            if self._held():
                return
            try:
                self._take_in_store()
            except HostBusy as busy:
                self.lost = str(busy)
                raise

    def _held(self) -> bool:
        if self.db is None or self.db.closed or self.db.broken:
            return False
        try:
            return bool(one_row(self.db.execute(_HELD_HERE, (self.host_id,)))[0])
        except psycopg.Error:  # the connection was cut (the store restarted): a new one
            return False

    def _take_in_store(self) -> None:
        """The store's advisory lock on a new connection; HostBusy if another agent has it."""
        previous = self.session
        self._close_db()
        self.db = self.store.another_connection(self.application_name)
        if self._try_lock() or (previous is not None and self._after_own_session(previous)):
            self.session = tuple(one_row(self.db.execute(
                "select pid, backend_start from pg_stat_activity where pid = pg_backend_pid()"
            )))  # fmt: skip
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

    def _try_lock(self) -> bool:
        assert self.db is not None
        return bool(one_row(self.db.execute(_ADVISORY, (self.host_id,)))[0])

    def _after_own_session(self, previous: tuple) -> bool:
        """The lock held by this agent's own earlier session, cut on this side only (the
        server has not noticed yet): that session is ended and the lock taken here. False
        when another session holds it."""
        assert self.db is not None
        if tuple(self.db.execute(_HOLDER, (self.host_id,)).fetchone() or ()) != previous:
            return False
        self.db.execute("select pg_terminate_backend(%s)", (previous[0],))
        deadline = time.monotonic() + SESSION_GONE_S
        while time.monotonic() < deadline:
            if self._try_lock():
                return True
            time.sleep(0.05)
        return False

    def release(self) -> None:
        with self._mutex:
            self._drop()

    def _drop(self) -> None:
        self._close_db()
        self.session = None
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
