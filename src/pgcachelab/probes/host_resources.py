"""The machine's resources during a run (issue 32): the pure half. Parsers of the kernel's
files (/proc/diskstats, a cgroup's CPU account; /proc/meminfo's is in machine/host_facts.py),
and the arithmetic that turns two raw samples into one row of shares and rates. The sampler
that reads them once a second is experiments/resource_sampler.py.
"""

import contextlib
from dataclasses import dataclass

# diskstats counts sectors of 512 bytes whatever the device's own sector size
# (Documentation/admin-guide/iostats.rst).
DISKSTATS_SECTOR_BYTES = 512

# One row per interval. The machine's CPU shares add up to 100: nice time is user time and
# irq/softirq time is system time (mpstat splits them; one lab question, "was the CPU busy, and
# with what", does not need it). cgroup_* are the server's cgroup's CPU as a share of the whole
# machine, so that they compare with the machine's own columns; None without such a cgroup.
COLUMNS = (
    "unix_time",
    "cpu_user_pct",
    "cpu_system_pct",
    "cpu_iowait_pct",
    "cpu_steal_pct",
    "cpu_idle_pct",
    "cgroup_cpu_pct",
    "cgroup_user_pct",
    "cgroup_system_pct",
    "ctx_switches_per_s",
    "page_cache_bytes",
    "dirty_bytes",
    "writeback_bytes",
    "device_reads_per_s",
    "device_writes_per_s",
    "device_read_bytes_per_s",
    "device_write_bytes_per_s",
    "device_wait_ms",
    "device_busy_pct",
)

# What each column is rounded to in storage: a 1 s series of a long run stays small.
_DECIMALS = {"unix_time": 2, "device_wait_ms": 3}
_WHOLE = ("page_cache_bytes", "dirty_bytes", "writeback_bytes")

# /proc/stat's fields as psutil names them; guest time is already inside user (and guest_nice
# inside nice), so it is left out of the total as psutil's own cpu_percent does.
_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(frozen=True)
class RawSample:
    """What the sampler read at one moment; counters are totals since boot (or creation)."""

    unix_time: float
    monotonic_s: float
    cpu_s: dict[str, float]  # psutil.cpu_times() as a dict, in seconds
    ctx_switches: int
    memory_bytes: dict[str, int]  # page_cache, dirty, writeback
    device: dict | None = None  # reads, writes, read_bytes, write_bytes, ios, wait_ms, busy_ms
    cgroup_cpu_us: dict | None = None  # usage, user, system (µs)


def memory_of(meminfo: dict[str, int]) -> dict[str, int]:
    """The memory figures a row keeps. The page cache is the file pages: Cached counts Shmem
    too, where shared_buffers lives without huge pages (machine/cgroup.py splits v1's the
    same way)."""
    return {
        "page_cache": meminfo["Cached"] - meminfo.get("Shmem", 0),
        "dirty": meminfo["Dirty"],
        "writeback": meminfo["Writeback"],
    }


@dataclass(frozen=True)
class DiskCounters:
    """One /proc/diskstats line: completed requests, sectors, and milliseconds spent."""

    major: int
    minor: int
    name: str
    reads: int
    read_sectors: int
    read_ms: int
    writes: int
    write_sectors: int
    write_ms: int
    busy_ms: int  # time with at least one request in flight ("io_ticks")

    def device(self) -> dict:
        """The device figures of a RawSample; the wait is iostat's await: the time requests
        spent queued and served, over the requests completed."""
        return {
            "reads": self.reads,
            "writes": self.writes,
            "read_bytes": self.read_sectors * DISKSTATS_SECTOR_BYTES,
            "write_bytes": self.write_sectors * DISKSTATS_SECTOR_BYTES,
            "ios": self.reads + self.writes,
            "wait_ms": self.read_ms + self.write_ms,
            "busy_ms": self.busy_ms,
        }


def parse_diskstats(text: str) -> dict[tuple[int, int], DiskCounters]:
    """/proc/diskstats by (major, minor). Lines of 14, 18 or 20 fields (discards came in 4.18,
    flushes in 5.5); only the first 14 are read."""
    devices = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 14:
            continue
        try:
            numbers = [int(field) for field in fields[3:14]]
            major, minor = int(fields[0]), int(fields[1])
        except ValueError:
            continue
        reads, _, read_sectors, read_ms, writes, _, write_sectors, write_ms, _, busy_ms, _ = numbers
        devices[major, minor] = DiskCounters(
            major, minor, fields[2], reads, read_sectors, read_ms, writes, write_sectors,
            write_ms, busy_ms,
        )  # fmt: skip
    return devices


def emulated_disk_device(counters: dict) -> dict:
    """The emulated disk daemon's counters (machine/fusedisk.py) as a RawSample's device: its
    wait is the latency it added, over every request that reached it, syncs included."""
    ios = counters["reads"] + counters["writes"] + counters["syncs"]
    return {
        "reads": counters["reads"],
        "writes": counters["writes"],
        "read_bytes": counters["read_bytes"],
        "write_bytes": counters["write_bytes"],
        "ios": ios,
        "wait_ms": counters["delayed_us"] / 1000,
        "busy_ms": None,  # the daemon serves requests in parallel: no single busy clock
    }


def _key_values(text: str) -> dict[str, int]:
    values = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            values[key] = int(value)
    return values


def parse_cgroup_v2_cpu_stat(text: str) -> dict[str, int]:
    """A cgroup v2 cpu.stat as {usage, user, system} in µs (present in every v2 cgroup)."""
    values = _key_values(text)
    return {
        "usage": values["usage_usec"],
        "user": values["user_usec"],
        "system": values["system_usec"],
    }


def process_tree_cpu_us(postmaster: tuple, children: list[tuple], ticks_per_s: int) -> dict:
    """The server's CPU as a cgroup would count it, {usage, user, system} in µs: its live
    processes' own times, plus the times of the children the postmaster has reaped (its cutime
    and cstime), so that a backend that exits between two samples is still counted."""
    user = postmaster[0] + postmaster[2] + sum(c[0] for c in children)
    system = postmaster[1] + postmaster[3] + sum(c[1] for c in children)
    scale = 1e6 / ticks_per_s
    return {"usage": round((user + system) * scale), "user": round(user * scale),
            "system": round(system * scale)}  # fmt: skip


def parse_cgroup_v1_cpuacct(usage_text: str, stat_text: str, ticks_per_s: int) -> dict[str, int]:
    """cgroup v1's cpuacct.usage (ns) and cpuacct.stat (user and system in USER_HZ ticks) as
    {usage, user, system} in µs, as v2 gives them."""
    ticks = _key_values(stat_text)
    return {
        "usage": int(usage_text.strip()) // 1000,
        "user": ticks["user"] * 1_000_000 // ticks_per_s,
        "system": ticks["system"] * 1_000_000 // ticks_per_s,
    }


def _rise(before, after) -> float | None:
    """after - before of a counter; None when either is missing or it went backwards (a
    counter reset, another device mounted)."""
    if before is None or after is None or after < before:
        return None
    return after - before


def _share_pct(part, whole) -> float | None:
    if part is None or not whole:
        return None
    # Two files read a moment apart can disagree by a tick: a share is kept within 0..100.
    return min(100.0, max(0.0, 100.0 * part / whole))


def _per_s(rise, interval_s: float) -> float | None:
    return None if rise is None else rise / interval_s


def row(before: RawSample, after: RawSample, cpu_count: int) -> list:
    """One row of COLUMNS for the interval between two samples (any length, not only 1 s)."""
    interval_s = after.monotonic_s - before.monotonic_s
    if interval_s <= 0:
        raise ValueError(f"samples {interval_s:.3f} s apart")
    cpu = {name: _rise(before.cpu_s.get(name), after.cpu_s.get(name)) for name in _CPU_FIELDS}
    total = sum(value or 0 for value in cpu.values())
    values = {
        "unix_time": after.unix_time,
        "cpu_user_pct": _share_pct((cpu["user"] or 0) + (cpu["nice"] or 0), total),
        "cpu_system_pct": _share_pct(
            (cpu["system"] or 0) + (cpu["irq"] or 0) + (cpu["softirq"] or 0), total
        ),
        "cpu_iowait_pct": _share_pct(cpu["iowait"], total),
        "cpu_steal_pct": _share_pct(cpu["steal"], total),
        "cpu_idle_pct": _share_pct(cpu["idle"], total),
        "ctx_switches_per_s": _per_s(_rise(before.ctx_switches, after.ctx_switches), interval_s),
        "page_cache_bytes": after.memory_bytes["page_cache"],
        "dirty_bytes": after.memory_bytes["dirty"],
        "writeback_bytes": after.memory_bytes["writeback"],
    }
    values.update(_cgroup_values(before.cgroup_cpu_us, after.cgroup_cpu_us, interval_s, cpu_count))
    values.update(_device_values(before.device, after.device, interval_s))
    return [_rounded(name, values.get(name)) for name in COLUMNS]


def _cgroup_values(before: dict | None, after: dict | None, interval_s, cpu_count) -> dict:
    if before is None or after is None:
        return {}
    machine_us = interval_s * 1e6 * cpu_count
    return {
        f"cgroup_{name}_pct": _share_pct(_rise(before[key], after[key]), machine_us)
        for name, key in (("cpu", "usage"), ("user", "user"), ("system", "system"))
    }


def _device_values(before: dict | None, after: dict | None, interval_s: float) -> dict:
    if before is None or after is None:
        return {}
    rises = {key: _rise(before.get(key), after.get(key)) for key in after}
    ios, wait_ms = rises["ios"], rises["wait_ms"]
    return {
        "device_reads_per_s": _per_s(rises["reads"], interval_s),
        "device_writes_per_s": _per_s(rises["writes"], interval_s),
        "device_read_bytes_per_s": _per_s(rises["read_bytes"], interval_s),
        "device_write_bytes_per_s": _per_s(rises["write_bytes"], interval_s),
        "device_wait_ms": wait_ms / ios if ios and wait_ms is not None else None,
        "device_busy_pct": _share_pct(rises["busy_ms"], interval_s * 1000),
    }


def _rounded(name: str, value):
    if value is None:
        return None
    if name in _WHOLE:
        return int(value)
    return round(value, _DECIMALS.get(name, 1))


def summary(first: RawSample, last: RawSample, rows: list[list], cpu_count: int) -> dict:
    """The run as a whole: its shares and rates between its first and last samples (exact
    over the run, not a mean of rounded rows), and the peaks of the memory figures."""
    whole = dict(zip(COLUMNS, row(first, last, cpu_count), strict=True))
    del whole["unix_time"]
    for name in _WHOLE:
        del whole[name]
        column = COLUMNS.index(name)
        peaks = [r[column] for r in rows if r[column] is not None]
        whole[f"{name.removesuffix('_bytes')}_max_bytes"] = max(peaks) if peaks else None
    whole["seconds"] = round(last.monotonic_s - first.monotonic_s, 2)
    return whole


def busy_pct(before: dict[str, float], after: dict[str, float]) -> float | None:
    """The machine's CPU in use between two psutil.cpu_times() readings, as a share of all of
    it: neither idle nor waiting for IO. None when no time passed between them."""
    rises = {name: max(0.0, after.get(name, 0.0) - before.get(name, 0.0)) for name in _CPU_FIELDS}
    total = sum(rises.values())
    if total <= 0:
        return None
    return 100.0 * (total - rises["idle"] - rises["iowait"]) / total
