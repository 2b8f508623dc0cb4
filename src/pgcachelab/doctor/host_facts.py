"""Read what the host checks look at from /proc and /sys under a root directory.

`root` is "/" on a real machine; tests give a fake tree (tests/data/doctor/). Every value that
cannot be read is None, with the reason kept in `HostFacts.missing` so the check can say why it
was skipped. Nothing here writes.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from pgcachelab.machine.cgroup import memory_cgroup_mounts
from pgcachelab.machine.host_facts import (
    hugepages_of,
    read_meminfo,
    read_mountinfo,
    read_proc_cgroup,
)
from pgcachelab.machine.host_tunables import bracketed_choice  # the OS rung writes them too

# A v1 memory.limit_in_bytes at or above this means "no limit" (the kernel's page-rounded
# LONG_MAX); v2 writes "max".
_V1_UNLIMITED_BYTES = 2**62


@dataclass(frozen=True)
class BlockDevice:
    name: str  # the whole disk, e.g. "vda" for a data directory on vda1
    scheduler: str | None  # the selected one, e.g. "mq-deadline" or "none"
    read_ahead_kb: int | None
    rotational: bool | None


@dataclass
class HostFacts:
    memory_total_bytes: int | None = None
    swap_total_bytes: int | None = None
    hugepages: dict = field(default_factory=dict)  # total/free/reserved/page_size_bytes
    thp_enabled: str | None = None
    thp_defrag: str | None = None
    numa_nodes: int | None = None
    sysctl: dict[str, int | None] = field(default_factory=dict)  # "vm.swappiness" -> 60
    page_size_bytes: int = 4096
    block_device: BlockDevice | None = None
    limits: dict[str, tuple[int | None, int | None]] | None = None  # name -> (soft, hard)
    limits_of: str = ""  # whose limits: "the postmaster (pid 123)"
    cpu_governors: dict[str, int] | None = None  # governor -> number of CPUs using it
    cgroup_memory_limit_bytes: int | None = None  # the tightest limit around the server
    cgroup_path: str | None = None
    missing: dict[str, str] = field(default_factory=dict)  # fact -> why it is not known


SYSCTLS = (
    "vm.swappiness",
    "vm.zone_reclaim_mode",
    "vm.dirty_background_ratio",
    "vm.dirty_background_bytes",
    "vm.dirty_ratio",
    "vm.dirty_bytes",
    "vm.overcommit_memory",
    "kernel.shmmax",
    "kernel.shmall",
)


# -- pure parsers ------------------------------------------------------------------------------


def parse_limits(text: str) -> dict[str, tuple[int | None, int | None]]:
    """/proc/PID/limits -> {'Max open files': (1024, 524288)}; 'unlimited' is None."""
    limits = {}
    for line in text.splitlines()[1:]:
        # The name is free text with spaces; the two values follow it, then an optional unit.
        parts = line.split()
        numbers = [i for i, p in enumerate(parts) if p.isdigit() or p == "unlimited"]
        if len(numbers) < 2:
            continue
        first = numbers[0]
        name = " ".join(parts[:first])
        soft, hard = (None if p == "unlimited" else int(p) for p in parts[first : first + 2])
        limits[name] = (soft, hard)
    return limits


def parent_pid_from_stat(stat_text: str) -> int:
    """The ppid field of /proc/PID/stat; the command name in parentheses may contain spaces."""
    return int(stat_text.rsplit(")", 1)[1].split()[1])


# -- the reader --------------------------------------------------------------------------------


class HostReader:
    def __init__(self, root: Path = Path("/")):
        self.root = Path(root)

    def path(self, absolute: str | Path) -> Path:
        return self.root / str(absolute).lstrip("/")

    def text(self, absolute: str | Path) -> str:
        return self.path(absolute).read_text()

    def read(
        self,
        postmaster_pid: int | None = None,
        data_device: tuple[int, int] | None = None,
        data_device_reason: str = "no data directory known: give --dsn or --data-dir",
    ) -> HostFacts:
        facts = HostFacts()
        self._memory(facts)
        self._thp(facts)
        self._numa(facts)
        self._sysctls(facts)
        if data_device is None:
            facts.missing["block_device"] = data_device_reason
        else:
            self._block_device(facts, *data_device)
        self._limits(facts, postmaster_pid)
        self._cpu_governors(facts)
        self._cgroup(facts, postmaster_pid)
        return facts

    def _memory(self, facts: HostFacts) -> None:
        try:
            meminfo = read_meminfo(self.path("/proc"))
        except OSError as error:
            facts.missing["memory"] = f"cannot read /proc/meminfo: {error.strerror}"
            return
        facts.memory_total_bytes = meminfo.get("MemTotal")
        facts.swap_total_bytes = meminfo.get("SwapTotal")
        facts.hugepages = hugepages_of(meminfo)

    def _thp(self, facts: HostFacts) -> None:
        base = "/sys/kernel/mm/transparent_hugepage"
        for name in ("enabled", "defrag"):
            try:
                setattr(facts, f"thp_{name}", bracketed_choice(self.text(f"{base}/{name}")))
            except OSError:
                facts.missing[f"thp_{name}"] = f"no {base}/{name} (kernel without THP?)"

    def _numa(self, facts: HostFacts) -> None:
        nodes_dir = self.path("/sys/devices/system/node")
        try:
            nodes = [
                p for p in nodes_dir.iterdir() if p.name[4:].isdigit() and p.name[:4] == "node"
            ]
        except OSError:
            facts.missing["numa"] = "no /sys/devices/system/node (kernel without NUMA support)"
            return
        facts.numa_nodes = len(nodes)

    def _sysctls(self, facts: HostFacts) -> None:
        for name in SYSCTLS:
            path = "/proc/sys/" + name.replace(".", "/")
            try:
                facts.sysctl[name] = int(self.text(path).split()[0])
            except (OSError, ValueError, IndexError):
                facts.sysctl[name] = None
                facts.missing[name] = f"cannot read {path}"

    def _block_device(self, facts: HostFacts, major: int, minor: int) -> None:
        device_dir = self.path(f"/sys/dev/block/{major}:{minor}")
        if not device_dir.exists():
            facts.missing["block_device"] = (
                f"the data directory's device {major}:{minor} is not a block device "
                "(overlay, tmpfs or a network filesystem)"
            )
            return
        device_dir = device_dir.resolve()
        if (device_dir / "partition").exists():  # queue/ belongs to the whole disk
            device_dir = device_dir.parent
        queue = device_dir / "queue"

        def read(name: str) -> str | None:
            try:
                return (queue / name).read_text().strip()
            except OSError:
                return None

        scheduler = read("scheduler")
        read_ahead = read("read_ahead_kb")
        rotational = read("rotational")
        facts.block_device = BlockDevice(
            name=device_dir.name,
            scheduler=bracketed_choice(scheduler) if scheduler else None,
            read_ahead_kb=int(read_ahead) if read_ahead and read_ahead.isdigit() else None,
            rotational=None if rotational is None else rotational == "1",
        )

    def _limits(self, facts: HostFacts, postmaster_pid: int | None) -> None:
        if postmaster_pid is None:
            facts.missing["limits"] = "no server process known: give --dsn to a local server"
            return
        try:
            facts.limits = parse_limits(self.text(f"/proc/{postmaster_pid}/limits"))
            facts.limits_of = f"the postmaster (pid {postmaster_pid})"
        except OSError as error:
            facts.missing["limits"] = f"cannot read /proc/{postmaster_pid}/limits: {error.strerror}"

    def _cpu_governors(self, facts: HostFacts) -> None:
        governors: dict[str, int] = {}
        for path in sorted(self.path("/sys/devices/system/cpu").glob("cpu[0-9]*")):
            try:
                governor = (path / "cpufreq" / "scaling_governor").read_text().strip()
            except OSError:
                continue
            governors[governor] = governors.get(governor, 0) + 1
        if governors:
            facts.cpu_governors = governors
        else:
            facts.missing["cpu_governor"] = (
                "no cpufreq in /sys (a virtual machine, or frequency scaling off)"
            )

    def _cgroup(self, facts: HostFacts, postmaster_pid: int | None) -> None:
        pid = postmaster_pid if postmaster_pid is not None else "self"
        try:
            own = read_proc_cgroup(pid, self.path("/proc"))
            v1_memory, v2 = memory_cgroup_mounts(read_mountinfo(self.path("/proc")))
        except OSError as error:
            facts.missing["cgroup"] = f"cannot read the cgroups of pid {pid}: {error.strerror}"
            return
        if v1_memory is not None and "memory" in own:
            mount, cgroup_path, files = v1_memory, own["memory"], ("memory.limit_in_bytes",)
        elif v2 is not None and "" in own:
            mount, cgroup_path, files = v2, own[""], ("memory.max",)
        else:
            facts.missing["cgroup"] = "no cgroup hierarchy with the memory controller"
            return
        facts.cgroup_path = cgroup_path
        # A limit on any ancestor applies too: walk up to the hierarchy's root.
        tightest = None
        directory = self.path(mount) / cgroup_path.lstrip("/")
        top = self.path(mount)
        while True:
            for name in files:
                limit = _limit_bytes(directory / name)
                if limit is not None and (tightest is None or limit < tightest):
                    tightest = limit
            if directory == top or top not in directory.parents:
                break
            directory = directory.parent
        facts.cgroup_memory_limit_bytes = tightest


def _limit_bytes(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max" or not text.isdigit():
        return None
    value = int(text)
    return None if value >= _V1_UNLIMITED_BYTES else value


def device_of(path: Path) -> tuple[int, int]:
    """(major, minor) of the filesystem holding `path`."""
    st_dev = os.stat(path).st_dev
    return os.major(st_dev), os.minor(st_dev)


def postmaster_of_backend(backend_pid: int, root: Path = Path("/")) -> int | None:
    """The postmaster of a backend we are connected to, when the server runs on this host:
    the backend's parent, if both are postgres processes."""
    reader = HostReader(root)
    try:
        if reader.text(f"/proc/{backend_pid}/comm").strip() != "postgres":
            return None
        parent = parent_pid_from_stat(reader.text(f"/proc/{backend_pid}/stat"))
        if reader.text(f"/proc/{parent}/comm").strip() not in ("postgres", "postmaster"):
            return None
    except (OSError, ValueError, IndexError):
        return None
    return parent
