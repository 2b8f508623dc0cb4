"""Host (OS) settings for a rung's points: written to /sys and /proc/sys, and put back.

Before its first write of a setting the lab records what to write back in the owned registry
(machine/owned.py, kind "host"), so whatever ends the lab, the value returns: `restore_all` at
the end of a run (after success, an error or Ctrl-C: the machine closes in a finally), and a
killed lab's entries are written back by the next lab command (`reap_entry`, wired in
experiments/reaping.py), as huge pages and cgroups are.

These settings are the whole host's, not the server's: two labs that want one of them would
measure each other's. A lab that finds the setting held by another live lab fails its point.
"""

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.errors import ClusterError
from pgcachelab.machine import host_tunables, owned
from pgcachelab.machine.host_facts import read_mountinfo
from pgcachelab.machine.host_tunables import IO_SCHEDULER, READAHEAD, TUNABLES, Tunable

KIND = "host"
SYS_DEV_BLOCK = Path("/sys/dev/block")
SYS_CLASS_BDI = Path("/sys/class/bdi")
DEVICE_FILES = {READAHEAD: "read_ahead_kb", IO_SCHEDULER: "scheduler"}


def availability() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "writing /sys and /proc/sys needs root"
    return True, ""


def _read(tunable: Tunable, path: str) -> str:
    return host_tunables.read_value(tunable, Path(path).read_text())


def _filesystem_of(major: int, minor: int) -> str:
    """The filesystem type mounted from device major:minor (/proc/self/mountinfo)."""
    try:
        mounts = read_mountinfo()
    except OSError:
        return "unknown"
    device = f"{major}:{minor}"
    return next((mount.fstype for mount in mounts if mount.device == device), "unknown")


def device_file(name: str, data_dir: Path | None) -> tuple[str | None, str | None]:
    """(file, None) of the device holding `data_dir` for readahead or the scheduler, or
    (None, why it is not applicable here)."""
    if data_dir is None:
        return None, "not applicable here: the point has no data directory of the lab's"
    st_dev = os.stat(data_dir).st_dev
    major, minor = os.major(st_dev), os.minor(st_dev)
    if major == 0:  # no block device: FUSE (the emulated disk), tmpfs, overlay
        filesystem = _filesystem_of(major, minor)
        on = (
            "the emulated disk (FUSE)"
            if filesystem.startswith("fuse.pgcachelab")
            else f"a {filesystem} filesystem"
        )
        # A FUSE mount has a backing device info of its own: its read-ahead is the window the
        # kernel reads ahead through the daemon (fuse_readahead), what blockdev --setra sets
        # on a disk. It has no queue, so no scheduler.
        bdi_file = SYS_CLASS_BDI / f"{major}:{minor}" / "read_ahead_kb"
        if name == READAHEAD and bdi_file.exists():
            return str(bdi_file), None
        return (
            None,
            f"not applicable here: the data is on {on}, device {major}:{minor}, no block queue",
        )
    link = SYS_DEV_BLOCK / f"{major}:{minor}"
    if not link.exists():
        return None, f"not applicable here: the data's device {major}:{minor} is no block device"
    device_dir = link.resolve()
    queue = host_tunables.queue_dir_of(str(device_dir), (device_dir / "partition").exists())
    file = Path(queue) / DEVICE_FILES[name]
    if not file.exists():
        return None, f"not applicable here: {file} does not exist"
    return str(file), None


def setting_file(name: str, data_dir: Path | None) -> tuple[str | None, str | None]:
    """(file, None) for a setting on this host, or (None, "not applicable here: why")."""
    tunable = TUNABLES[name]
    if tunable.path is None:
        return device_file(name, data_dir)
    if not Path(tunable.path).exists():
        why = "this kernel has no NUMA balancing" if "numa" in name else "this kernel lacks it"
        return None, f"not applicable here: no {tunable.path} ({why})"
    return tunable.path, None


@dataclass
class Held:
    """A setting the lab wrote: its file, the host's value before, and its registry entry."""

    path: str
    original: str
    writes: list  # [(file, text)] that put the host back (host_tunables.restore_writes)
    entry: Path


class HostSettings:
    """The host settings in force for the points, and what to write back."""

    def __init__(self):
        self.held: dict[str, Held] = {}
        self.restored_at_end: dict[str, dict] = {}  # what restore_all put back, to say

    def apply(self, wanted: dict[str, str], data_dir: Path | None, record: dict) -> None:
        """Give the host `wanted` (name -> text) for a point; settings held for earlier points
        and not wanted now are put back. `record` gets what was done, as it is done."""
        files = {name: setting_file(name, data_dir) for name in wanted}
        for name in list(self.held):
            if name not in wanted or files[name][0] != self.held[name].path:
                record.setdefault("restored", {})[name] = self.restore(name)
        for name, text in wanted.items():
            path, reason = files[name]
            if path is None:
                record.setdefault("not_applicable", {})[name] = reason
                continue
            record.setdefault("applied", {})[name] = self._apply_one(name, path, text)

    def _apply_one(self, name: str, path: str, text: str) -> dict:
        tunable = TUNABLES[name]
        current = _read(tunable, path)
        held = self.held.get(name)
        written = not host_tunables.same(current, text)
        if written:
            if tunable.choice_file:
                offered_by = "the device" if name == IO_SCHEDULER else "the kernel"
                refusal = host_tunables.choice_refusal(text, Path(path).read_text(), offered_by)
                if refusal:
                    raise ClusterError(f"host_setting_refused: {name} = {text}: {refusal}")
            if held is None:
                held = self.held[name] = self._hold(tunable, path, current)
            try:
                Path(path).write_text(text)
            except OSError as error:
                raise ClusterError(
                    f"host_setting_failed: cannot write {text} to {path}: {error.strerror}"
                ) from None
        return {
            "path": path,
            "before": held.original if held else current,
            "now": _read(tunable, path),
            "written": written,
        }

    def _hold(self, tunable: Tunable, path: str, current: str) -> Held:
        """Record what to write back, before the first write: a kill may come next."""
        pair_path = pair_original = None
        if tunable.pair is not None:
            pair = TUNABLES[tunable.pair]
            pair_path, pair_original = pair.path, _read(pair, pair.path)
        writes = host_tunables.restore_writes(tunable, path, current, pair_path, pair_original)
        with owned.registry_lock():
            for entry in owned.entries():
                if entry.kind == KIND and entry.path in (path, pair_path) and entry.owner.alive():
                    raise ClusterError(
                        f"host_setting_busy: {tunable.name} is set by another lab (pid "
                        f"{entry.owner.pid}); host settings are the whole machine's"
                    )
            entry = owned.record(KIND, path, name=tunable.name, restore=writes)
        return Held(path, current, writes, entry)

    def restore(self, name: str) -> dict:
        """Write back what `name` was before the lab wrote it; returns {path, from, to}."""
        held = self.held.pop(name)
        tunable = TUNABLES[name]
        try:
            was = _read(tunable, held.path)
        except OSError as error:  # a FUSE mount's bdi goes with the mount
            if error.errno != errno.ENOENT:
                self.held[name] = held
                raise
            owned.forget(held.entry)
            return {"path": held.path, "from": None, "to": None, "gone": True}
        _write_back(held.writes)
        owned.forget(held.entry)
        return {"path": held.path, "from": was, "to": _read(tunable, held.path)}

    def restore_all(self) -> dict:
        """Put every held setting back (the run ends); one that fails stays in the registry
        for the next lab command, and its error is raised once the others are back."""
        restored, failure = {}, None
        for name in reversed(list(self.held)):
            try:
                restored[name] = self.restore(name)
            except OSError as error:
                failure = failure or error
        self.restored_at_end = restored
        if failure is not None:
            raise failure
        return restored


def _write_back(writes: list) -> None:
    for path, text in writes:
        Path(path).write_text(text)


def reap_entry(entry: owned.Entry) -> str | None:
    """The reaper of a killed lab's host settings: write back what they were."""
    writes = entry.details.get("restore") or []
    try:
        _write_back(writes)
    except FileNotFoundError:  # a killed lab's FUSE mount is gone, and its bdi with it
        return None
    values = ", ".join(f"{path} = {text}" for path, text in writes)
    name = entry.details.get("name", entry.path)
    return f"restored {name} ({values}), set by a killed lab (pid {entry.owner.pid})"
