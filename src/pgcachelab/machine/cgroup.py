"""A memory cgroup for the server's processes: the emulated machine's RAM.

The cgroup is created under the lab's own cgroup (never at the root), named after the lab's
pid so that a later lab can tell a leftover of a killed lab from a live one, and removed at
the end. cgroup v1 (memory controller mounted on its own) and v2 (unified) are supported.
"""

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.machine import owned
from pgcachelab.machine.host_facts import Mount, read_mountinfo, read_proc_cgroup

PREFIX = "pgcachelab-"
_counter = 0


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    mount: Path  # where the hierarchy with the memory controller is mounted
    own_path: str  # the lab's cgroup inside it, from /proc/self/cgroup

    @property
    def own_dir(self) -> Path:
        return self.mount / self.own_path.lstrip("/")


def memory_cgroup_mounts(mounts: list[Mount]) -> tuple[Path | None, Path | None]:
    """(the v1 memory controller's mount, the v2 unified mount) among the mounts."""
    v1_memory = v2 = None
    for mount in mounts:
        if mount.fstype == "cgroup" and "memory" in mount.super_options:
            v1_memory = mount.mount_point
        elif mount.fstype == "cgroup2" and v2 is None:
            v2 = mount.mount_point
    return v1_memory, v2


def hugetlb_mounts(mounts: list[Mount]) -> list[str]:
    """Where a hugetlb controller is mounted: v1 hierarchies naming it, as 'v1 at <path>'."""
    return [
        f"v1 at {mount.mount_point}"
        for mount in mounts
        if mount.fstype == "cgroup" and "hugetlb" in mount.super_options
    ]


def find_hierarchy() -> tuple[Hierarchy | None, str]:
    """Where a memory cgroup can be made here, or None and the reason it cannot."""
    if os.geteuid() != 0:
        return None, "memory cgroups need root"
    try:
        own = read_proc_cgroup()
        v1_memory, v2 = memory_cgroup_mounts(read_mountinfo())
    except OSError as error:
        return None, f"cannot read the cgroup setup: {error}"
    if v1_memory is not None and "memory" in own:
        return Hierarchy(1, v1_memory, own["memory"]), ""
    if v2 is not None and "" in own:
        hierarchy = Hierarchy(2, v2, own[""])
        controllers = _read(hierarchy.own_dir / "cgroup.controllers") or ""
        if "memory" not in controllers.split():
            return None, f"the memory controller is not enabled in {hierarchy.own_dir}"
        return hierarchy, ""
    return None, "no cgroup hierarchy with the memory controller is mounted"


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _stat(text: str | None) -> dict[str, int]:
    values = {}
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            values[key] = int(value)
    return values


class MemoryCgroup:
    """One cgroup with a memory limit; processes join it by pid."""

    def __init__(self, hierarchy: Hierarchy, path: Path, limit_bytes: int):
        self.owned_entry: Path | None = None
        self.hierarchy = hierarchy
        self.path = path
        self.limit_bytes = limit_bytes

    @classmethod
    def create(cls, hierarchy: Hierarchy, limit_bytes: int) -> "MemoryCgroup":
        global _counter
        _counter += 1
        path = hierarchy.own_dir / f"{PREFIX}{os.getpid()}-{_counter}"
        path.mkdir()
        cgroup = cls(hierarchy, path, limit_bytes)
        cgroup.owned_entry = owned.record("cgroup", path)
        try:
            cgroup._set_limit()
        except OSError:
            cgroup.remove()
            raise
        return cgroup

    def _set_limit(self) -> None:
        if self.hierarchy.version == 2:
            (self.path / "memory.max").write_text(str(self.limit_bytes))
            with contextlib.suppress(OSError):  # no swapping around the cap either
                (self.path / "memory.swap.max").write_text("0")
            return
        (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
        with contextlib.suppress(OSError):  # exists only with swap accounting
            (self.path / "memory.memsw.limit_in_bytes").write_text(str(self.limit_bytes))

    def set_limit(self, limit_bytes: int) -> None:
        """A new cap; below what the group holds, the kernel reclaims its page cache first (as
        growing a huge page pool does on a real machine), or refuses with OSError (EBUSY)."""
        if limit_bytes == self.limit_bytes:
            return
        if self.hierarchy.version == 2:
            (self.path / "memory.max").write_text(str(limit_bytes))
        else:
            # v1 keeps memory.limit <= memsw.limit at every moment: lower the memory limit
            # first, raise memsw first
            memory = self.path / "memory.limit_in_bytes"
            memsw = self.path / "memory.memsw.limit_in_bytes"
            for path in (memory, memsw) if limit_bytes < self.limit_bytes else (memsw, memory):
                if path is memory:
                    path.write_text(str(limit_bytes))
                    continue
                with contextlib.suppress(OSError):  # exists only with swap accounting
                    path.write_text(str(limit_bytes))
        self.limit_bytes = limit_bytes

    def limit_read_back(self) -> int | None:
        """The cap as the kernel holds it (rounded down to whole pages)."""
        name = "memory.max" if self.hierarchy.version == 2 else "memory.limit_in_bytes"
        text = (_read(self.path / name) or "").strip()
        return int(text) if text.isdigit() else None

    def hugetlb_limit_file(self, page_size_bytes: int) -> Path | None:
        """cgroup v2's hugetlb.<size>.max in this group, when the hugetlb controller is on in
        it; None on v1 (its hugetlb controller is a hierarchy of its own, not mounted here)."""
        if self.hierarchy.version != 2:
            return None
        size = f"{page_size_bytes // 1024**2}MB" if page_size_bytes < 1024**3 else "1GB"
        path = self.path / f"hugetlb.{size}.max"
        return path if path.exists() else None

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def add(self, pid: int) -> None:
        Path(self.procs_file).write_text(str(pid))

    def pids(self) -> list[int]:
        return [int(p) for p in (_read(Path(self.procs_file)) or "").split()]

    def reset_peak(self) -> None:
        """v1 resets its high-water mark on write; v2's memory.peak counts from creation."""
        if self.hierarchy.version == 1:
            with contextlib.suppress(OSError):
                (self.path / "memory.max_usage_in_bytes").write_text("0")

    def stats(self) -> dict:
        """The limit, usage, peak usage, page cache and OOM kills, in bytes and counts."""
        if self.hierarchy.version == 2:
            stat = _stat(_read(self.path / "memory.stat"))
            events = _stat(_read(self.path / "memory.events"))
            usage = _read(self.path / "memory.current")
            peak = _read(self.path / "memory.peak")
            return {
                "limit_bytes": self.limit_bytes,
                "usage_bytes": int(usage) if usage else None,
                "peak_bytes": int(peak) if peak else None,
                "page_cache_bytes": stat.get("file"),
                "shmem_bytes": stat.get("shmem"),
                "oom_kills": events.get("oom_kill", 0),
            }
        stat = _stat(_read(self.path / "memory.stat"))
        oom = _stat(_read(self.path / "memory.oom_control"))
        usage = _read(self.path / "memory.usage_in_bytes")
        peak = _read(self.path / "memory.max_usage_in_bytes")
        return {
            "limit_bytes": self.limit_bytes,
            "usage_bytes": int(usage) if usage else None,
            "peak_bytes": int(peak) if peak else None,
            # v1 counts shmem (shared_buffers) in "cache"; report the file pages apart.
            "page_cache_bytes": stat.get("total_cache", 0) - stat.get("total_shmem", 0),
            "shmem_bytes": stat.get("total_shmem"),
            "oom_kills": oom.get("oom_kill", 0),
        }

    def remove(self) -> None:
        """rmdir once empty; the processes are the server's, stopped before this is called."""
        for _ in range(100):
            try:
                self.path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)  # exiting processes leave the cgroup a moment later
        else:
            self.path.rmdir()
        owned.forget(self.owned_entry)


def remove_cgroup_dir(path: Path) -> bool:
    """Remove a killed lab's cgroup once its processes have left; True when it was there."""
    if not path.is_dir():
        return False
    for _ in range(100):
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return False
        except OSError:
            time.sleep(0.05)
    return False


def reap_stale_cgroups() -> list[Path]:
    """Remove the cgroups that killed labs left under our cgroup; returns what was removed."""
    hierarchy, _ = find_hierarchy()
    if hierarchy is None or not hierarchy.own_dir.is_dir():
        return []
    removed = []
    for path in hierarchy.own_dir.glob(f"{PREFIX}*"):
        owner = path.name[len(PREFIX) :].split("-")[0]
        if owner.isdigit() and int(owner) != os.getpid() and Path(f"/proc/{owner}").exists():
            continue  # a live lab's
        with contextlib.suppress(OSError):
            path.rmdir()
            removed.append(path)
    return removed
