"""What the lab creates outside its store, recorded with its owner so any later lab reaps it.

Clusters, scratch directories, cgroups and emulated-disk mounts each get one small JSON entry in
one place under /run (a per-user directory without root): its kind, its path, and the owner's
pid *and start time* (/proc/PID/stat field 22), so a recycled pid is not taken for the owner.
Any lab command reaps the entries of dead owners, whatever the store or --lab-dir it was given
(issue 18: a run killed under one --lab-dir was never reaped by a run under another).

An entry normally goes once its owner is dead and its thing reaped; a reaper that finds its thing
still needed raises `StillNeeded` and the entry stays. A cluster kept for --resume has such an
entry of its own, of kind "kept" (naming its store and run), beside its "cluster" entry: a lab
that knows no "kept" reaper (an older one) leaves it alone, and only stops the server.

Huge pages keep their own state in /run/pgcachelab/hugepages (hugepages.py): what matters
there is a count to take back, not a path.
"""

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.machine.host_facts import read_proc_stat

RUN_ROOT = Path("/run/pgcachelab")
LOCK_FILE = "lock"
_MAKE_AGAIN = 5  # tries at writing an entry into a registry that another lab removes


def registry_dir(euid: int | None = None, runtime_dir: str | None = None) -> Path:
    """/run/pgcachelab/owned as root; else $XDG_RUNTIME_DIR/pgcachelab/owned, or a per-user
    directory in the temporary directory when there is no runtime directory."""
    euid = os.geteuid() if euid is None else euid
    if euid == 0:
        return RUN_ROOT / "owned"
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR") if runtime_dir is None else runtime_dir
    if runtime_dir:
        return Path(runtime_dir) / "pgcachelab" / "owned"
    return Path(tempfile.gettempdir()) / f"pgcachelab-owned-{euid}"


def process_start_time(pid: int) -> int | None:
    """`pid`'s start time, or None when no such process lives (zombies count as dead)."""
    try:
        stat = read_proc_stat(pid)
    except OSError:
        return None
    return None if stat.zombie else stat.start_time


@dataclass(frozen=True)
class Owner:
    pid: int
    start_time: int

    @classmethod
    def me(cls) -> "Owner":
        return cls(os.getpid(), process_start_time(os.getpid()) or 0)

    def alive(self) -> bool:
        return process_start_time(self.pid) == self.start_time


@dataclass(frozen=True)
class Entry:
    """One thing the lab made: `kind` says how to reap it, `details` what reaping needs."""

    kind: str
    path: str
    owner: Owner
    details: dict
    file: Path

    def record(self) -> dict:
        return {
            "kind": self.kind,
            "path": self.path,
            "pid": self.owner.pid,
            "start_time": self.owner.start_time,
            "details": self.details,
        }


def parse_entry(text: str, file: Path) -> Entry | None:
    """An entry from its file's text; None for a file that is not one (half-written: skipped)."""
    try:
        data = json.loads(text)
        owner = Owner(int(data["pid"]), int(data["start_time"]))
        return Entry(
            str(data["kind"]), str(data["path"]), owner, dict(data.get("details") or {}), file
        )
    except (ValueError, KeyError, TypeError):
        return None


def record(kind: str, path, **details) -> Path:
    """Remember that this lab made `path`; returns the entry's file, for `forget`.

    Written to a temporary name then renamed: a reaper never reads half an entry. The
    directory may go between its making and the write (another lab's `remove_if_empty`): it
    is made again.
    """
    directory = registry_dir()
    owner = Owner.me()
    entry_file = directory / f"{owner.pid}-{owner.start_time}-{kind}-{uuid.uuid4().hex[:8]}.json"
    partial = entry_file.with_suffix(".partial")
    data = {
        "kind": kind,
        "path": str(path),
        "pid": owner.pid,
        "start_time": owner.start_time,
        "details": details,
    }
    for attempt in range(_MAKE_AGAIN):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            partial.write_text(json.dumps(data))
            break
        except FileNotFoundError:
            if attempt == _MAKE_AGAIN - 1:
                raise
    partial.rename(entry_file)
    return entry_file


def forget(entry_file: Path | None) -> None:
    """The thing is gone (removed by its owner): drop its entry."""
    if entry_file is not None:
        with contextlib.suppress(OSError):
            entry_file.unlink()


def entries() -> list[Entry]:
    """Every entry, those a lab killed between writing and renaming them (`record`) included:
    a whole one is the lab's as much as a renamed one, and goes the same way."""
    directory = registry_dir()
    found = []
    files = sorted(directory.glob("*.json")) + sorted(directory.glob("*.partial"))
    for file in files if directory.is_dir() else []:
        with contextlib.suppress(OSError):
            entry = parse_entry(file.read_text(), file)
            if entry is not None:
                found.append(entry)
    return found


def owner_from_name(name: str) -> Owner | None:
    """The owner an entry's file name gives (`record`: PID-START-KIND-ID.json)."""
    pid, _, rest = name.partition("-")
    start_time, _, _ = rest.partition("-")
    if pid.isascii() and pid.isdigit() and start_time.isascii() and start_time.isdigit():
        return Owner(int(pid), int(start_time))
    return None


def drop_dead_fragments() -> None:
    """Half-written entries of labs killed while writing them: nothing in them can be reaped,
    and left there they kept the registry's directory from ever going (`remove_if_empty`)."""
    directory = registry_dir()
    for file in directory.glob("*.partial") if directory.is_dir() else []:
        owner = owner_from_name(file.name)
        with contextlib.suppress(OSError):
            if (
                owner is not None
                and not owner.alive()
                and parse_entry(file.read_text(), file) is None
            ):
                file.unlink()


class StillNeeded(Exception):
    """Raised by a reaper whose thing must stay (a kept cluster its run can resume): its entry
    is kept for a later lab. The message, if any, says what the reaper did all the same."""


def dead_entries(all_entries: list[Entry], alive: Callable[[Owner], bool]) -> list[Entry]:
    """The entries whose owner is gone, clusters last: a server stops before its directory's
    neighbours (scratch dirs, cgroups) are removed, and a mount is detached before the
    directory under it goes. A cluster a live owner has recorded too is not dead: a resumed
    run's lab has taken back the cluster its killed predecessor kept."""
    order = {"mount": 0, "dir": 1, "cluster": 2, "kept": 3, "cgroup": 4, "run": 5}
    clusters = ("cluster", "kept")
    living = {e.path for e in all_entries if e.kind in clusters and alive(e.owner)}
    dead = [
        entry
        for entry in all_entries
        if not alive(entry.owner) and not (entry.kind in clusters and entry.path in living)
    ]
    return sorted(dead, key=lambda entry: order.get(entry.kind, 6))


@contextlib.contextmanager
def registry_lock() -> Iterator[None]:
    """One reaper at a time: two labs starting together must not both stop one server. Also
    held by a lab that looks for another's entry before it makes one (host_settings.py).

    The lock file goes with an empty registry (`remove_if_empty`): a lab that waited for the
    lock on a file since removed holds nothing, and takes the lock again on the file there now.
    """
    directory = registry_dir()
    lock_file = directory / LOCK_FILE
    while True:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            lock = open(lock_file, "a")  # noqa: SIM115 (closed below, after the yield)
        except FileNotFoundError:  # removed with its directory since the mkdir
            continue
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                current = os.stat(lock_file)
            except FileNotFoundError:
                continue
            held = os.fstat(lock.fileno())
            if (held.st_dev, held.st_ino) != (current.st_dev, current.st_ino):
                continue
            yield
            return


def remove_if_empty() -> None:
    """The registry directory goes once it records nothing (every command makes it, to lock
    it): a command that leaves nothing owned leaves no /tmp/pgcachelab-owned-UID behind
    (issue 48). Under the lock, so no lab reaps or looks in it meanwhile; not waiting for it:
    a lab that holds it is using the registry. A lab that records an entry without the lock
    makes the directory again (`record`)."""
    directory = registry_dir()
    lock_file = directory / LOCK_FILE
    with contextlib.suppress(OSError), open(lock_file, "a") as lock:  # OSError: no directory
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: in use
        held, current = os.fstat(lock.fileno()), os.stat(lock_file)
        if (held.st_dev, held.st_ino) != (current.st_dev, current.st_ino):
            return  # removed and made again since we opened it: in use
        if any(path.name != LOCK_FILE for path in directory.iterdir()):
            return
        lock_file.unlink()
        directory.rmdir()  # fails, and the directory stays, if an entry came meanwhile
        if directory.parent.name == "pgcachelab":  # /run/pgcachelab: ours, and empty now
            directory.parent.rmdir()


def reap(reapers: dict[str, Callable[[Entry], str | None]]) -> list[str]:
    """Reap every entry of a dead owner with the reaper for its kind; returns what each did
    (for notes). An entry of a kind without a reaper here is left for a lab that has one."""
    done = []
    still_needed: set[tuple[str, str]] = set()
    with registry_lock():
        for entry in dead_entries(entries(), Owner.alive):
            reaper = reapers.get(entry.kind)
            if reaper is None:
                continue
            if (entry.kind, entry.path) in still_needed:  # each resume records it again
                forget(entry.file)
                continue
            try:
                said = reaper(entry)
            except StillNeeded as needed:
                still_needed.add((entry.kind, entry.path))
                if str(needed):
                    done.append(str(needed))
                continue
            except OSError:
                said = None
            if said:
                done.append(said)
            forget(entry.file)
        drop_dead_fragments()
    return done


def remove_dir(entry: Entry) -> str | None:
    """The reaper of scratch directories."""
    path = Path(entry.path)
    if not path.exists():
        return None
    shutil.rmtree(path, ignore_errors=True)
    return f"removed {path}, left by a killed lab (pid {entry.owner.pid})"


def new_dir(parent: Path, prefix: str, kinds: dict[str, dict]) -> tuple[Path, list[Path]]:
    """A new 0700 directory `parent/prefix<random>` and its entries, one per kind with its
    details (for `forget`), recorded before it is made: a kill -9 between making it and
    recording it left it behind for good (seen once in CI, after a run killed mid-measurement).
    """
    while True:
        path = parent / f"{prefix}{secrets.token_hex(8)}"
        files = [record(kind, path, **details) for kind, details in kinds.items()]
        try:
            path.mkdir(mode=0o700)
            return path, files
        except BaseException as error:
            for file in files:
                forget(file)
            if isinstance(error, FileNotFoundError) and parent != Path(tempfile.gettempdir()):
                # the clusters' own parent (/var/tmp/pgcachelab-UID) is removed once empty by
                # a reaper that may have run between our making it and this
                parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                continue
            if not isinstance(error, FileExistsError):  # 64 random bits taken: not ours
                raise


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temporary directory (0700, in tempfile's directory) that a killed lab's successor
    removes (`new_dir`)."""
    path, [entry] = new_dir(Path(tempfile.gettempdir()), prefix, {"dir": {}})
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        forget(entry)
