"""The host's facts, one source at a time (pyperf's `collect_*` shape): a pure parser per kernel
file, tested on captured real files (tests/data/host-facts/), and one reader that calls it.
Every module that needs such a fact asks here; nothing else opens these files.

The readers take the /proc directory to read (doctor points it into a fake tree, the resource
sampler's tests at captured snapshots); by default `PROC`, looked up when called so that a
test can point the whole lab elsewhere. They raise OSError when the file cannot be read: each
caller decides whether that is a missing fact, a skipped check or a failure.
"""

import re
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")

# meminfo's names of the huge page pool's counters, and ours.
_HUGEPAGES_KEYS = {
    "HugePages_Total": "total",
    "HugePages_Free": "free",
    "HugePages_Rsvd": "reserved",
    "HugePages_Surp": "surplus",
    "Hugepagesize": "page_size_bytes",
}


def _proc(proc: Path | None) -> Path:
    return PROC if proc is None else proc


# -- /proc/meminfo -------------------------------------------------------------------------------


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as {field: bytes}; the HugePages_ counts, which have no unit, as counts."""
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if not fields or not fields[0].isdigit():
            continue
        factor = 1024 if fields[1:] == ["kB"] else 1
        values[key.strip()] = int(fields[0]) * factor
    return values


def read_meminfo(proc: Path | None = None) -> dict[str, int]:
    """This host's /proc/meminfo, parsed (parse_meminfo)."""
    return parse_meminfo((_proc(proc) / "meminfo").read_text())


def hugepages_of(meminfo: dict[str, int]) -> dict:
    """The huge page pool in a parsed meminfo: total, free, reserved and surplus pages and
    page_size_bytes, each only when the kernel reports it (none without huge page support)."""
    return {ours: meminfo[theirs] for theirs, ours in _HUGEPAGES_KEYS.items() if theirs in meminfo}


def read_hugepages(proc: Path | None = None) -> dict:
    """This host's huge page pool (hugepages_of); {} when meminfo cannot be read."""
    try:
        return hugepages_of(read_meminfo(proc))
    except OSError:
        return {}


def memory_total_bytes(proc: Path | None = None) -> int | None:
    """This host's RAM (MemTotal); None when meminfo cannot be read."""
    try:
        return read_meminfo(proc).get("MemTotal")
    except OSError:
        return None


# -- /proc/cpuinfo -------------------------------------------------------------------------------


def parse_cpu_model(text: str) -> str | None:
    """The first "model name" in /proc/cpuinfo (x86; other architectures have none)."""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def read_cpu_model(proc: Path | None = None) -> str | None:
    """This host's CPU model from /proc/cpuinfo."""
    return parse_cpu_model((_proc(proc) / "cpuinfo").read_text())


# -- /proc/PID/cgroup ----------------------------------------------------------------------------


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """'4:memory:/a/b' lines -> {'memory': '/a/b'}; the v2 line '0::/x' -> {'': '/x'}."""
    paths = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(","):
                paths[controller] = parts[2]
    return paths


def read_proc_cgroup(pid: int | str = "self", proc: Path | None = None) -> dict[str, str]:
    """The cgroups of process `pid` (this one by default), parsed (parse_proc_cgroup)."""
    return parse_proc_cgroup((_proc(proc) / str(pid) / "cgroup").read_text())


# -- /proc/self/mountinfo ------------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """One line of /proc/PID/mountinfo (proc(5)), its escapes undone."""

    device: str  # "major:minor"
    mount_point: Path
    fstype: str
    source: str
    super_options: tuple[str, ...]


_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as \\040, \\011, \\012, \\134."""
    return _OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """Every mount of a mountinfo text; a line without the " - " separator is skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields or len(fields) < 5:
            continue
        separator = fields.index("-")
        after = fields[separator + 1 :]  # fstype, source, super options
        if len(after) < 2:
            continue
        mounts.append(
            Mount(
                device=fields[2],
                mount_point=Path(_unescape(fields[4])),
                fstype=after[0],
                source=_unescape(after[1]),
                super_options=tuple(after[2].split(",")) if len(after) > 2 else (),
            )
        )
    return mounts


def read_mountinfo(proc: Path | None = None) -> list[Mount]:
    """The mounts this process sees (/proc/self/mountinfo)."""
    return parse_mountinfo((_proc(proc) / "self" / "mountinfo").read_text())
