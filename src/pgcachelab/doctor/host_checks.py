"""Host checks: pure functions of HostFacts (and, where given, what the server needs).

Each check returns one Finding or a Skipped with the reason; thresholds are the seeds' and the
PostgreSQL documentation's, named below so a reader can argue with them.
"""

from pgcachelab.doctor.findings import DOCS, SEED_000, SEED_002, Finding, Outcome, Skipped, ok
from pgcachelab.doctor.host_facts import HostFacts
from pgcachelab.units import format_bytes

KERNEL_RESOURCES = DOCS + "kernel-resources.html"
HUGE_PAGES_DOCS = KERNEL_RESOURCES + "#LINUX-HUGE-PAGES"
THP_SOURCE = f"{SEED_002}; {HUGE_PAGES_DOCS}"
# Dirty page cache that the kernel may hold before writing back: big values turn checkpoints
# into write storms (seed 002 lowers both).
DIRTY_BACKGROUND_MAX_BYTES = 512 * 1024**2
DIRTY_MAX_BYTES = 4 * 1024**3
READ_AHEAD_MIN_KB = 128  # the kernel's default; less hurts sequential scans
SWAPPINESS_MAX = 10
OPEN_FILES_MIN = 1024  # below this PostgreSQL's max_files_per_process (1000) cannot be met
PROCESSES_MIN = 4096


def _sysctl_fix(name: str, value) -> str:
    return f"sysctl -w {name}={value}  # persist in /etc/sysctl.d/90-postgresql.conf"


def check_thp_enabled(facts: HostFacts) -> Outcome:
    check = "host.thp.enabled"
    if facts.thp_enabled is None:
        return Skipped(check, facts.missing.get("thp_enabled", "not readable"))
    if facts.thp_enabled == "always":
        return Finding(
            check,
            "warning",
            "transparent huge pages: enabled = always",
            "use madvise or never: khugepaged compaction stalls the server and PostgreSQL's "
            "shared memory gains nothing from THP (it uses explicit huge pages)",
            THP_SOURCE,
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
        )
    return ok(check, f"transparent huge pages: enabled = {facts.thp_enabled}")


def check_thp_defrag(facts: HostFacts) -> Outcome:
    check = "host.thp.defrag"
    if facts.thp_defrag is None:
        return Skipped(check, facts.missing.get("thp_defrag", "not readable"))
    if facts.thp_defrag == "always":
        return Finding(
            check,
            "warning",
            "transparent huge pages: defrag = always",
            "use madvise or defer: synchronous compaction on page faults causes latency spikes",
            THP_SOURCE,
            "echo madvise > /sys/kernel/mm/transparent_hugepage/defrag",
        )
    return ok(check, f"transparent huge pages: defrag = {facts.thp_defrag}")


def check_huge_pages(
    facts: HostFacts,
    pages_needed: int | None,
    huge_pages_setting: str | None,
    huge_pages_in_use: bool | None,
    shared_buffers_bytes: float | None,
) -> Outcome:
    """Huge pages configured against what the server needs (from the server, when known)."""
    check = "host.hugepages"
    if not facts.hugepages:
        return Skipped(check, facts.missing.get("memory", "no huge page counters in meminfo"))
    total = facts.hugepages.get("total", 0)
    page = facts.hugepages.get("page_size_bytes", 2 * 1024**2)
    configured = f"vm.nr_hugepages = {total} ({format_bytes(total * page)})"
    if pages_needed is None:
        return Skipped(
            check,
            f"{configured}; what the server needs is unknown: give --dsn, "
            "or see `pgcachelab hugepages --shared-buffers SIZE`",
        )
    fix = f"sysctl -w vm.nr_hugepages={pages_needed}  # persist in /etc/sysctl.d/"
    found = f"{configured}; the server needs {pages_needed}"
    if huge_pages_in_use:
        return ok(check, found + "; the server uses huge pages")
    if huge_pages_setting == "off":
        big = shared_buffers_bytes is not None and shared_buffers_bytes >= 8 * 1024**3
        return Finding(
            check,
            "warning" if big else "info",
            found + "; huge_pages = off",
            "huge pages shorten page tables and TLB misses for a large shared_buffers "
            "(seed 000 measured idx lookups faster with them)",
            f"{SEED_000}; {HUGE_PAGES_DOCS}",
            fix + "; then huge_pages = try and restart",
        )
    if total < pages_needed:
        return Finding(
            check,
            "warning",
            found + f"; huge_pages = {huge_pages_setting}: normal pages used",
            "reserve the pages the server needs, then restart it; with 'try' it silently falls "
            "back to normal pages",
            HUGE_PAGES_DOCS,
            fix,
        )
    return ok(check, found)


def check_numa(facts: HostFacts) -> Outcome:
    check = "host.numa"
    if facts.numa_nodes is None:
        return Skipped(check, facts.missing.get("numa", "not readable"))
    mode = facts.sysctl.get("vm.zone_reclaim_mode")
    found = f"{facts.numa_nodes} NUMA node(s), vm.zone_reclaim_mode = {mode}"
    if facts.numa_nodes > 1 and mode:
        return Finding(
            check,
            "warning",
            found,
            "set vm.zone_reclaim_mode = 0: reclaiming a node's page cache instead of using "
            "another node's free memory shrinks the OS cache the database relies on",
            SEED_002,
            _sysctl_fix("vm.zone_reclaim_mode", 0),
        )
    if facts.numa_nodes > 1:
        return Finding(
            check,
            "info",
            found,
            "several NUMA nodes: consider interleaving the server's memory (seed 002 ran with "
            "NUMA off) so shared_buffers is not all on one node",
            SEED_002,
            "numactl --interleave=all pg_ctl start ...",
        )
    return ok(check, found)


def check_swappiness(facts: HostFacts) -> Outcome:
    check = "host.swappiness"
    swappiness = facts.sysctl.get("vm.swappiness")
    if swappiness is None:
        return Skipped(check, facts.missing.get("vm.swappiness", "not readable"))
    found = f"vm.swappiness = {swappiness}"
    if not facts.swap_total_bytes:
        return ok(check, found + " (no swap configured)")
    if swappiness > SWAPPINESS_MAX:
        return Finding(
            check,
            "info",
            found + f", swap {format_bytes(facts.swap_total_bytes)}",
            f"lower it to 1..{SWAPPINESS_MAX} on a database host: swapping out server memory "
            "is slower than dropping page cache",
            SEED_002,
            _sysctl_fix("vm.swappiness", 1),
        )
    return ok(check, found)


def _dirty_limit_bytes(facts: HostFacts, bytes_name: str, ratio_name: str) -> int | None:
    """The kernel uses the *_bytes value when set, else *_ratio percent of memory."""
    explicit = facts.sysctl.get(bytes_name)
    if explicit:
        return explicit
    ratio = facts.sysctl.get(ratio_name)
    if ratio is None or facts.memory_total_bytes is None:
        return None
    return facts.memory_total_bytes * ratio // 100


def check_dirty_background(facts: HostFacts) -> Outcome:
    check = "host.dirty_background"
    limit = _dirty_limit_bytes(facts, "vm.dirty_background_bytes", "vm.dirty_background_ratio")
    if limit is None:
        return Skipped(check, "vm.dirty_background_* or MemTotal not readable")
    found = f"background writeback starts at {format_bytes(limit)} of dirty pages"
    if limit > DIRTY_BACKGROUND_MAX_BYTES:
        return Finding(
            check,
            "info",
            found,
            f"start writeback earlier (at most {format_bytes(DIRTY_BACKGROUND_MAX_BYTES)}): "
            "a large backlog of dirty pages makes checkpoint fsyncs stall",
            f"{SEED_002}; {DOCS}wal-configuration.html",
            _sysctl_fix("vm.dirty_background_bytes", 256 * 1024**2),
        )
    return ok(check, found)


def check_dirty(facts: HostFacts) -> Outcome:
    check = "host.dirty"
    limit = _dirty_limit_bytes(facts, "vm.dirty_bytes", "vm.dirty_ratio")
    if limit is None:
        return Skipped(check, "vm.dirty_* or MemTotal not readable")
    found = f"writers are throttled at {format_bytes(limit)} of dirty pages"
    if limit > DIRTY_MAX_BYTES:
        return Finding(
            check,
            "info",
            found,
            f"lower it (at most {format_bytes(DIRTY_MAX_BYTES)}): a writer may otherwise "
            "block for as long as the disk needs to write that much",
            f"{SEED_002}; {DOCS}wal-configuration.html",
            _sysctl_fix("vm.dirty_bytes", 1024**3),
        )
    return ok(check, found)


def check_io_scheduler(facts: HostFacts) -> Outcome:
    check = "host.io_scheduler"
    device = facts.block_device
    if device is None or device.scheduler is None:
        return Skipped(check, facts.missing.get("block_device", "no scheduler file for the device"))
    found = f"{device.name}: IO scheduler {device.scheduler}"
    if device.scheduler in ("cfq", "bfq"):
        return Finding(
            check,
            "warning",
            found,
            "use mq-deadline (none on NVMe): fairness schedulers add latency under the many "
            "concurrent reads and fsyncs of a database",
            SEED_002,
            f"echo mq-deadline > /sys/block/{device.name}/queue/scheduler",
        )
    return ok(check, found)


def check_read_ahead(facts: HostFacts) -> Outcome:
    check = "host.read_ahead"
    device = facts.block_device
    if device is None or device.read_ahead_kb is None:
        return Skipped(check, facts.missing.get("block_device", "no read_ahead_kb for the device"))
    found = f"{device.name}: read-ahead {device.read_ahead_kb} kB"
    if device.read_ahead_kb < READ_AHEAD_MIN_KB:
        return Finding(
            check,
            "warning",
            found,
            f"raise it to at least {READ_AHEAD_MIN_KB} kB (seed 002 used 2 MB): sequential "
            "scans and VACUUM read through the OS",
            SEED_002,
            f"blockdev --setra 4096 /dev/{device.name}",
        )
    return ok(check, found)


def check_shared_memory_sysctls(facts: HostFacts, shared_memory_type: str | None) -> Outcome:
    """Since 9.3 the main shared memory is mmap'ed; kernel.shm* matter only with System V."""
    check = "host.shm"
    shmmax, shmall = facts.sysctl.get("kernel.shmmax"), facts.sysctl.get("kernel.shmall")
    if shmmax is None or shmall is None:
        return Skipped(check, "kernel.shmmax / kernel.shmall not readable")
    shmall_bytes = shmall * facts.page_size_bytes
    found = f"kernel.shmmax = {_shm_bytes(shmmax)}, kernel.shmall = {_shm_bytes(shmall_bytes)}"
    memory = facts.memory_total_bytes
    sysv = shared_memory_type == "sysv" and memory
    if sysv and memory and min(shmmax, shmall_bytes) < memory // 2:
        return Finding(
            check,
            "warning",
            found + "; shared_memory_type = sysv",
            "a System V segment the size of shared_buffers needs shmmax/shmall above it",
            KERNEL_RESOURCES,
            _sysctl_fix("kernel.shmmax", facts.memory_total_bytes),
        )
    if min(shmmax, shmall_bytes) < 1024**2:
        return Finding(
            check,
            "warning",
            found,
            "PostgreSQL still needs a small System V segment; values this low refuse it",
            KERNEL_RESOURCES,
            _sysctl_fix("kernel.shmmax", 18446744073692774399),
        )
    return ok(check, found)


def _shm_bytes(value: int) -> str:
    return "unlimited" if value >= 2**50 else format_bytes(value)  # the kernel's default ~2^64


def check_limits(facts: HostFacts, max_connections: float | None) -> Outcome:
    check = "host.limits"
    if facts.limits is None:
        return Skipped(check, facts.missing.get("limits", "not readable"))
    open_files = facts.limits.get("Max open files", (None, None))[0]
    processes = facts.limits.get("Max processes", (None, None))[0]
    found = f"{facts.limits_of}: open files {_limit(open_files)}, processes {_limit(processes)}"
    wanted_processes = max(PROCESSES_MIN, int(max_connections or 0) * 2)
    problems = []
    if open_files is not None and open_files < OPEN_FILES_MIN:
        problems.append(f"open files below {OPEN_FILES_MIN}")
    if processes is not None and processes < wanted_processes:
        problems.append(f"processes below {wanted_processes}")
    if problems:
        return Finding(
            check,
            "warning",
            found,
            f"raise the limits ({', '.join(problems)}): every connection is a process with "
            "its own open files",
            f"{SEED_002}; {KERNEL_RESOURCES}",
            "LimitNOFILE=65536 and LimitNPROC=65536 in the server's systemd unit "
            "(or nofile/nproc in /etc/security/limits.d/)",
        )
    return ok(check, found)


def _limit(value: int | None) -> str:
    return "unlimited" if value is None else str(value)


def check_cpu_governor(facts: HostFacts) -> Outcome:
    check = "host.cpu_governor"
    if not facts.cpu_governors:
        return Skipped(check, facts.missing.get("cpu_governor", "not readable"))
    found = "CPU frequency governor: " + ", ".join(
        f"{name} ({count} CPUs)" for name, count in sorted(facts.cpu_governors.items())
    )
    slow = {"powersave", "conservative", "ondemand"} & set(facts.cpu_governors)
    if slow:
        return Finding(
            check,
            "warning" if "powersave" in slow else "info",
            found,
            "use performance: a clock that ramps up late adds latency to short queries and "
            "noise to measurements",
            SEED_002,
            "cpupower frequency-set --governor performance",
        )
    return ok(check, found)


def check_memory_cgroup(facts: HostFacts, whose: str) -> Outcome:
    check = "host.memory_cgroup"
    if "cgroup" in facts.missing:
        return Skipped(check, facts.missing["cgroup"])
    limit = facts.cgroup_memory_limit_bytes
    if limit is None:
        return ok(check, f"no memory limit on the cgroup of {whose} ({facts.cgroup_path})")
    found = f"{whose} is in cgroup {facts.cgroup_path} limited to {format_bytes(limit)}"
    if facts.memory_total_bytes and limit < facts.memory_total_bytes:
        return Finding(
            check,
            "info",
            found + f" of {format_bytes(facts.memory_total_bytes)} RAM",
            "size shared_buffers, work_mem and effective_cache_size from the limit, not from "
            "RAM: the page cache of the server's files counts against it too",
            f"{SEED_000}; {DOCS}runtime-config-resource.html",
            "systemctl set-property <server unit> MemoryMax=... (or size the settings down)",
        )
    return ok(check, found)


def memory_for_server_bytes(facts: HostFacts) -> int | None:
    """The memory the server can use: RAM, or its cgroup's limit when that is lower."""
    candidates = [v for v in (facts.memory_total_bytes, facts.cgroup_memory_limit_bytes) if v]
    return min(candidates) if candidates else None


def host_checks(facts: HostFacts, server: dict | None = None) -> list[Outcome]:
    """Every host check. `server` holds what the server told (settings, pages needed)."""
    server = server or {}
    whose = "the postmaster" if server.get("postmaster_pid") else "this process"
    return [
        check_thp_enabled(facts),
        check_thp_defrag(facts),
        check_huge_pages(
            facts,
            server.get("huge_pages_needed"),
            server.get("huge_pages"),
            server.get("huge_pages_in_use"),
            server.get("shared_buffers_bytes"),
        ),
        check_numa(facts),
        check_swappiness(facts),
        check_dirty_background(facts),
        check_dirty(facts),
        check_io_scheduler(facts),
        check_read_ahead(facts),
        check_shared_memory_sysctls(facts, server.get("shared_memory_type")),
        check_limits(facts, server.get("max_connections")),
        check_cpu_governor(facts),
        check_memory_cgroup(facts, whose),
    ]
