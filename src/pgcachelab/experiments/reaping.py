"""One reaper for everything killed labs left: servers, directories, cgroups, mounts, huge
pages, host settings, and the killed runs' status in their stores.

Every lab command calls `reap_everything` first (cli/main.py), whatever its store or --lab-dir:
what a dead lab made is found through the entries under /run (machine/owned.py), not through
the store the next command happens to use. `reap_abandoned` keeps the store's side: runs marked
running whose lab is gone become "interrupted".
"""

import contextlib
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from pgcachelab.clusters.managed import reap_stale
from pgcachelab.clusters.targets import kept_data_path
from pgcachelab.errors import UserError
from pgcachelab.experiments.host_lock import reap_lock_file
from pgcachelab.machine import fusedisk, host_settings, hugepages, owned
from pgcachelab.machine.cgroup import reap_stale_cgroups, remove_cgroup_dir
from pgcachelab.progress import Progress
from pgcachelab.store.location import MASK, parse_store
from pgcachelab.store.open import open_store

KILLED = "the lab process was killed"


def _reap_cluster(entry: owned.Entry) -> str | None:
    keep = bool(entry.details.get("keep"))
    work_dir = Path(entry.path)
    was_running = reap_stale(work_dir, remove=not keep)
    if keep:
        return f"stopped the server of {work_dir}, kept for --resume" if was_running else None
    return f"removed the cluster {work_dir} a killed lab (pid {entry.owner.pid}) left"


def _reap_kept_cluster(entry: owned.Entry) -> str | None:
    """A cluster kept for --resume (cache-wash data, long to build) stays while its run's store
    names it; once the store or the run is gone, or the run ended elsewhere, nothing ever would
    resume or remove it (GBs under /var/tmp): it goes, said in one line. (Its server, if a
    killed lab left one, was stopped by its "cluster" entry's reaper, which comes first.)"""
    work_dir = Path(entry.path)
    if not work_dir.exists():
        return None  # resumed to the end, or removed by hand
    orphaned = kept_orphan_reason(entry.details, work_dir)
    if orphaned is None:
        raise owned.StillNeeded()
    reap_stale(work_dir, remove=True)
    return f"removed the cluster kept for --resume in {work_dir}: {orphaned}"


def kept_for(store_location: str, run_id: str) -> dict[str, str]:
    """What a kept cluster's entry records of its run: the store (a SQLite file by its absolute
    path: a later lab runs elsewhere) and the run id; nothing for a URL with a password, which
    is never written under /run (such a cluster is only ever listed, never removed unasked)."""
    if MASK in store_location:
        return {}
    with contextlib.suppress(UserError):
        location = parse_store(store_location)
        if location.kind == "sqlite" and location.path is not None:
            store_location = str(location.path.absolute())
    return {"store": store_location, "run_id": run_id}


def kept_orphan_reason(details: dict, work_dir: Path) -> str | None:
    """Why nothing will resume the cluster kept in `work_dir` (its store is gone, the run is
    gone or no longer names it), or None while its run may still resume it, or when that
    cannot be known now (no store recorded, a store that does not answer)."""
    store_text, run_id = details.get("store"), details.get("run_id")
    if not store_text or not run_id:
        return None
    try:
        location = parse_store(store_text)
    except UserError:
        return None
    if location.kind == "sqlite" and location.path is not None and not location.path.is_file():
        return f"its store {location.path} is gone"
    try:
        store = open_store(location, create=False, read_only=True)
    except (UserError, OSError, sqlite3.Error, psycopg.Error):
        return None  # unreachable for now (a server down, a disk unmounted): decide later
    try:
        run = store.run(str(run_id))
    except (OSError, sqlite3.Error, psycopg.Error):
        return None
    finally:
        with contextlib.suppress(Exception):
            store.close()
    if run is None:
        return f"run {run_id} is no longer in {location.masked()}"
    if run.work_dir != str(work_dir):
        return f"run {run_id} in {location.masked()} no longer names it ({run.status})"
    return None


def _reap_mount(entry: owned.Entry) -> str | None:
    if fusedisk.reap_mount(
        Path(entry.path), entry.details.get("fsname", ""), entry.details.get("private_dir")
    ):
        return f"unmounted the emulated disk a killed lab left: {entry.path}"
    return None


def _reap_cgroup(entry: owned.Entry) -> str | None:
    if remove_cgroup_dir(Path(entry.path)):
        return f"removed the cgroup a killed lab left: {entry.path}"
    return None


def _reap_run(entry: owned.Entry) -> str | None:
    """Mark the killed run interrupted in its own store (which the next command may not use)."""
    try:
        store = open_store(parse_store(entry.path), create=False, read_only=False)
    except (UserError, OSError, sqlite3.Error, psycopg.Error):
        return None  # gone or unreachable: the next run in that store marks it
    try:
        marked = reap_abandoned(store, None)
    except (OSError, sqlite3.Error, psycopg.Error):
        return None
    finally:
        with contextlib.suppress(Exception):
            store.close()
    if entry.details.get("run_id") in marked:
        return f"marked run {entry.details['run_id']} interrupted: {KILLED}"
    return None


REAPERS: dict[str, Callable[[owned.Entry], str | None]] = {
    "cluster": _reap_cluster,
    "kept": _reap_kept_cluster,
    "dir": owned.remove_dir,
    "mount": _reap_mount,
    "cgroup": _reap_cgroup,
    "run": _reap_run,
    "host": host_settings.reap_entry,
    "agent-lock": reap_lock_file,
}


def reap_everything(note=None) -> list[str]:
    """Reap what dead labs left on this machine; `note` hears one line per thing reaped.
    It looks where its entries point, and nowhere else: the directory of kept clusters
    (/var/tmp/pgcachelab-UID, shared by whatever runs on this machine under that user) only
    when an entry names a cluster there, not at every command (an agent's clusters are all
    under its TMPDIR)."""
    in_kept_root = any(
        entry.kind in ("cluster", "kept") and Path(entry.path).parent == kept_data_path()
        for entry in owned.entries()
    )
    done = owned.reap(REAPERS)
    # Labs before the registry named their mounts and cgroups by pid only: still looked for.
    done += [
        f"unmounted the emulated disk a killed lab left: {p}" for p in fusedisk.reap_stale_mounts()
    ]
    done += [f"removed the cgroup a killed lab left: {p}" for p in reap_stale_cgroups()]
    restored = hugepages.restore_abandoned()
    if restored is not None:
        done.append(f"restored vm.nr_hugepages = {restored}, raised by a killed lab")
    if in_kept_root:
        remove_kept_root_if_empty()
    if note is not None:
        for line in done:
            note(line)
    return done


def reap_abandoned(store, progress: Progress | None) -> list[str]:
    """In `store`: stop the servers and remove the directories of runs whose lab was killed,
    and mark them interrupted; returns their run ids."""
    marked = []
    for run in store.abandoned_runs():
        keep = bool(run.target.get("keep_data"))
        stopped = run.work_dir and reap_stale(Path(run.work_dir), remove=not keep)
        if stopped and progress is not None:
            progress.note(f"stopped the server left running by killed run {run.run_id}")
        kept = run.work_dir if keep else None
        store.finish_run(run.run_id, "interrupted", KILLED, kept)
        marked.append(run.run_id)
    if progress is not None:
        reap_everything(progress.note)
    return marked


@dataclass(frozen=True)
class KeptCluster:
    """A directory under kept_data_path() and what may become of it."""

    path: Path
    state: str  # "in use", "resumable", "orphaned" or "unknown"
    why: str
    size_bytes: int

    @property
    def removable(self) -> bool:
        """Nothing will resume it: `pgcachelab kept --remove` may remove it."""
        return self.state in ("orphaned", "unknown")


def kept_clusters(root: Path | None = None) -> list[KeptCluster]:
    """Every cluster kept for --resume on this machine (under `root`, kept_data_path() by
    default) and whether a run still names it. One that no entry names was kept before a reboot
    (which empties /run) or by an older lab: "unknown", only its user can tell."""
    root = kept_data_path() if root is None else root
    try:
        paths = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []
    by_path: dict[str, list[owned.Entry]] = {}
    for entry in owned.entries():
        if entry.kind in ("cluster", "kept"):
            by_path.setdefault(entry.path, []).append(entry)
    found = []
    for path in paths:
        named = by_path.get(str(path), [])
        live = [entry.owner.pid for entry in named if entry.owner.alive()]
        named = [entry for entry in named if entry.kind == "kept"]
        # A lab whose registry is elsewhere (another $XDG_RUNTIME_DIR) is seen by its processes.
        users = live or processes_mentioning(str(path))
        if users:
            state, why = "in use", f"by the process with pid {users[0]}"
        elif not named:
            state, why = "unknown", "no lab's record names it (kept before a reboot, or older)"
        else:
            details = next((e.details for e in named if e.details.get("store")), {})
            orphaned = kept_orphan_reason(details, path)
            if orphaned is not None:
                state, why = "orphaned", orphaned
            elif details:
                state = "resumable"
                why = f"pgcachelab run --resume {details['run_id']} --store {details['store']}"
            else:
                state, why = "unknown", "its store was not recorded (a URL with a password)"
        found.append(KeptCluster(path, state, why, _tree_bytes(path)))
    return found


def remove_kept(cluster: KeptCluster) -> str:
    """Remove a kept cluster nothing will resume (its server stopped first, if one runs)."""
    reap_stale(cluster.path, remove=True)
    with owned.registry_lock():
        for entry in owned.entries():
            if entry.kind in ("cluster", "kept") and entry.path == str(cluster.path):
                owned.forget(entry.file)
    remove_kept_root_if_empty()
    return f"removed the cluster kept in {cluster.path} ({cluster.state}: {cluster.why})"


def remove_kept_root_if_empty() -> None:
    """/var/tmp/pgcachelab-UID goes with its last cluster, as the lab found the machine. A lab
    making a cluster there meanwhile makes it again (owned.new_dir)."""
    with contextlib.suppress(OSError):  # not empty, or not there
        kept_data_path().rmdir()


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line holds `text` (a postmaster's or initdb's -D)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if text.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
    return found


def _tree_bytes(path: Path) -> int:
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_blocks * 512
    return total
