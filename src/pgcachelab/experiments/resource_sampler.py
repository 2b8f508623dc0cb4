"""The machine's resources during a measurement (issue 32): CPU, context switches, memory, the
data directory's device and the server's cgroup, read once a second from a thread and kept
with the measurement as a per-second series and a summary (probes/host_resources.py derives
them).

Each sample reads a handful of small kernel files, well under 1% of one CPU
(bench/resource_sampler_overhead.py measures it); the thread's own CPU time is stored with the
series so that every run shows what it cost. A sample that cannot be read is counted with its
reason and never fails the measurement.
"""

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from pgcachelab.clusters.target import Target, is_managed
from pgcachelab.machine.host_facts import read_meminfo, read_proc_stat
from pgcachelab.probes.host_resources import (
    COLUMNS,
    RawSample,
    emulated_disk_device,
    memory_of,
    parse_cgroup_v1_cpuacct,
    parse_cgroup_v2_cpu_stat,
    parse_diskstats,
    process_tree_cpu_us,
    row,
    summary,
)

SAMPLE_INTERVAL_S = 1.0
# A run's tail shorter than this is not sampled apart: its rates would be noise.
MIN_FINAL_INTERVAL_S = 0.2
SAMPLER_THREAD_NAME = "pgcachelab-resources"
PROC = Path("/proc")
SYS_DEV_BLOCK = Path("/sys/dev/block")


@dataclass(frozen=True)
class Sources:
    """Where the device and cgroup figures come from (None: not sampled, `notes` say why)."""

    device: str | None = None  # the device's name, as diskstats lists it, or the disk profile's
    device_source: str | None = None  # "diskstats" or "emulated disk"
    read_device: Callable[[], dict] | None = None
    cgroup: str | None = None
    read_cgroup: Callable[[], dict] | None = None
    notes: tuple[str, ...] = ()

    def record(self) -> dict:
        return {
            "device": self.device,
            "device_source": self.device_source,
            "cgroup": self.cgroup,
            "notes": list(self.notes),
        }


def read_sample(sources: Sources, proc: Path = PROC) -> RawSample:
    """One sample of everything, now. psutil reads /proc/stat (psutil.PROCFS_PATH)."""
    monotonic_s, unix_time = time.monotonic(), time.time()
    cpu = psutil.cpu_times()._asdict()
    ctx_switches = psutil.cpu_stats().ctx_switches
    memory = memory_of(read_meminfo(proc))
    return RawSample(
        unix_time=unix_time,
        monotonic_s=monotonic_s,
        cpu_s=cpu,
        ctx_switches=ctx_switches,
        memory_bytes=memory,
        device=sources.read_device() if sources.read_device else None,
        cgroup_cpu_us=sources.read_cgroup() if sources.read_cgroup else None,
    )


def block_device_name(major: int, minor: int, sys_dev_block: Path = SYS_DEV_BLOCK) -> str | None:
    """The kernel's name of device major:minor (a whole disk or a partition, as diskstats lists
    it), or None when it is no block device (tmpfs, overlayfs, FUSE: major 0)."""
    link = sys_dev_block / f"{major}:{minor}"
    if major == 0 or not link.exists():
        return None
    return link.resolve().name


def diskstats_reader(major: int, minor: int, proc: Path = PROC) -> Callable[[], dict]:
    def read() -> dict:
        counters = parse_diskstats((proc / "diskstats").read_text()).get((major, minor))
        if counters is None:
            raise LookupError(f"device {major}:{minor} is not in {proc}/diskstats")
        return counters.device()

    return read


def device_source(target: Target) -> Sources:
    """The device holding the point's data: the emulated disk's own counters when the data sits
    on it (the host's diskstats would only show the daemon's page-cache-backed files), else the
    block device of the data directory."""
    if is_managed(target):
        managed = target
        record = managed.disk_record()
        if record["counters"]:
            name = (record["profile"] or {}).get("name", "emulated")
            return Sources(
                device=name,
                device_source="emulated disk",
                read_device=lambda: emulated_disk_device(managed.disk_record()["counters"]),
            )
    data_dir = target.data_dir
    if data_dir is None:
        return Sources(notes=("device: the server's data directory is not on this machine",))
    device = os.stat(data_dir).st_dev
    major, minor = os.major(device), os.minor(device)
    name = block_device_name(major, minor)
    if name is None:
        return Sources(notes=(f"device: {data_dir} is on no block device ({major}:{minor})",))
    return Sources(
        device=name, device_source="diskstats", read_device=diskstats_reader(major, minor)
    )


def cgroup_source(target: Target) -> Sources:
    """The CPU account of the server's cgroup: the emulated machine's memory cgroup, when the
    point runs under one."""
    machine = target.machine
    cgroup = machine.cgroup if machine is not None else None
    if cgroup is None:
        return process_tree_source(target, None)
    path = cgroup.path
    if cgroup.hierarchy.version == 2:
        cpu_stat = path / "cpu.stat"
        return Sources(
            cgroup=str(path), read_cgroup=lambda: parse_cgroup_v2_cpu_stat(cpu_stat.read_text())
        )
    usage, stat = path / "cpuacct.usage", path / "cpuacct.stat"
    if not usage.exists():
        # The server joins the memory hierarchy only (machine/cgroup.py); where cpuacct is
        # mounted apart, the server shares the lab's cpuacct group, pgbench included: count
        # its processes instead.
        return process_tree_source(
            target,
            f"cgroup: {path} has no CPU account (cgroup v1 "
            "mounts cpuacct apart): the server's processes counted",
        )
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    return Sources(
        cgroup=str(path),
        read_cgroup=lambda: parse_cgroup_v1_cpuacct(
            usage.read_text(), stat.read_text(), ticks_per_s
        ),
    )


def process_tree_source(target: Target, note: str | None) -> Sources:
    """The CPU of the managed server's processes (postmaster, backends, auxiliaries), counted
    from /proc, where no cgroup counts it: what a cgroup of the server alone would say."""
    pid = target.postmaster_pid() if is_managed(target) else None
    notes = (note,) if note else ()
    if pid is None:
        return Sources(notes=(*notes, "cgroup: no managed server here to count the CPU of"))
    ticks_per_s = os.sysconf("SC_CLK_TCK")

    def read() -> dict:
        own = read_proc_stat(pid, PROC).cpu_ticks
        children = []
        for child in (PROC / str(pid) / "task" / str(pid) / "children").read_text().split():
            with contextlib.suppress(OSError):  # it ended since the list was read
                children.append(read_proc_stat(child, PROC).cpu_ticks)
        return process_tree_cpu_us(own, children, ticks_per_s)

    return Sources(cgroup=f"the server's processes (postmaster {pid})", read_cgroup=read,
                   notes=notes)  # fmt: skip


def sources_of(target: Target) -> Sources:
    """Both sources; one that cannot be found is left out with its reason, never raised."""
    device, cgroup = _or_note(device_source, target), _or_note(cgroup_source, target)
    return Sources(
        device=device.device,
        device_source=device.device_source,
        read_device=device.read_device,
        cgroup=cgroup.cgroup,
        read_cgroup=cgroup.read_cgroup,
        notes=device.notes + cgroup.notes,
    )


def _or_note(find: Callable[[Target], Sources], target: Target) -> Sources:
    try:
        return find(target)
    except Exception as error:  # a source is optional, the measurement is not
        return Sources(notes=(f"{find.__name__}: {type(error).__name__}: {error}",))


class ResourceSampler:
    def __init__(self, sources: Sources, interval_s: float = SAMPLE_INTERVAL_S):
        self.sources = sources
        self.interval_s = interval_s
        self.cpu_count = psutil.cpu_count() or 1
        self.first: RawSample | None = None
        self.last: RawSample | None = None
        self.rows: list[list] = []
        self.failed = 0
        self.first_error: str | None = None
        self.sampler_cpu_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=SAMPLER_THREAD_NAME, daemon=True)

    @classmethod
    def start(cls, sources: Sources, interval_s: float = SAMPLE_INTERVAL_S) -> "ResourceSampler":
        sampler = cls(sources, interval_s)
        sampler._thread.start()
        return sampler

    def _loop(self) -> None:
        cpu_at_start = time.thread_time()  # this thread's own CPU: what sampling costs
        next_at = time.monotonic()
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            self._take()
            self.sampler_cpu_s = time.thread_time() - cpu_at_start
            next_at = max(next_at + self.interval_s, time.monotonic())
        if self.last is None or time.monotonic() - self.last.monotonic_s >= MIN_FINAL_INTERVAL_S:
            self._take()  # the run's last part second
        self.sampler_cpu_s = time.thread_time() - cpu_at_start

    def _take(self) -> None:
        try:
            sample = read_sample(self.sources)
            if self.last is not None:
                self.rows.append(row(self.last, sample, self.cpu_count))
        # Whatever goes wrong in a sample (a file gone, a counter unparsable, a bug) is
        # counted with its reason: the measurement it watches must go on.
        except Exception as error:
            self.failed += 1
            if self.first_error is None:
                text = str(error).strip().splitlines()
                self.first_error = f"{type(error).__name__}: {text[0] if text else ''}"
            return
        self.first = self.first or sample
        self.last = sample

    def close(self) -> dict:
        """Stop sampling (after one last sample); what the measurement keeps."""
        self._stop.set()
        self._thread.join()
        whole = None
        if self.first is not None and self.last is not None and self.last is not self.first:
            try:
                whole = summary(self.first, self.last, self.rows, self.cpu_count)
            except Exception as error:  # the series stays; the measurement goes on
                self.failed += 1
                self.first_error = self.first_error or f"summary: {type(error).__name__}: {error}"
        return {
            "interval_s": self.interval_s,
            "source": self.sources.record(),
            "columns": list(COLUMNS),
            "rows": self.rows,
            "summary": whole,
            "samples": len(self.rows) + (self.first is not None),
            "failed": self.failed,
            "first_error": self.first_error,
            "sampler_cpu_s": round(self.sampler_cpu_s, 4),
        }
