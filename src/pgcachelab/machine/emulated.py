"""The emulated machine a managed server runs on: a memory cap, huge pages, cache state, and
the host (OS) settings of a rung (host_settings.py).

It hooks into every server start (`before_start`) because that is where each of its promises
is kept: huge pages are sized while the server is down, the server's files leave the page
cache before the server re-enters the cgroup, and a shared_buffers that cannot fit is refused
instead of left to the OOM killer.
"""

import functools
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.errors import ClusterError, UserError
from pgcachelab.machine import fusedisk, host_facts, host_settings, hugepages, oscache
from pgcachelab.machine.cgroup import MemoryCgroup, find_hierarchy, hugetlb_mounts
from pgcachelab.units import format_bytes, parse_bytes, shared_buffers_bytes

# What a huge page pool must leave of the emulated RAM for everything else: the server's
# processes and the OS cache. Below it a point fails (`hugepages_exceed_memory`), as seed 000's
# script records `hugepage_error` when the kernel cannot give the pool.
MIN_MEMORY_LEFT = 64 * 1024**2
CAP_MINUS_POOL = "cap = RAM - huge page pool"


def cap_for_pool(ram_bytes: int, pool_bytes: int, min_left: int = MIN_MEMORY_LEFT) -> int:
    """The server's memory cap when `pool_bytes` of huge pages come out of `ram_bytes`, as on a
    real machine, where vm.nr_hugepages takes the pool from RAM before anything else runs."""
    left = ram_bytes - pool_bytes
    if left < min_left:
        raise ClusterError(
            f"hugepages_exceed_memory: the server's huge page pool of {format_bytes(pool_bytes)} "
            f"leaves {format_bytes(max(left, 0))} of the machine's {format_bytes(ram_bytes)} of "
            f"RAM, less than the {format_bytes(min_left)} the lab keeps for the processes and "
            "the OS cache"
        )
    return left


@dataclass(frozen=True)
class MachineNeeds:
    """What a spec asks of the machine, to check before anything runs."""

    memory_bytes: int | None
    huge_pages_on: bool
    drop_all_caches: bool
    emulated_disk: bool = False
    host_settings: bool = False  # [machine.host] or a [ladder.host]


def capabilities() -> dict[str, tuple[bool, str]]:
    """Each root-only feature: (available, reason when not)."""
    hierarchy, reason = find_hierarchy()
    return {
        "memory limit": (hierarchy is not None, reason),
        "huge pages": hugepages.availability(),
        "dropping the whole OS cache": oscache.drop_all_availability(),
        "emulated disk": fusedisk.availability(),
        "host settings": host_settings.availability(),
    }


def check_needs(needs: MachineNeeds, available: dict[str, tuple[bool, str]]) -> list[str]:
    """Raise UserError when the spec needs what this machine cannot do; else return notes
    on what is unavailable but unused, to report once."""
    required = {
        "memory limit": needs.memory_bytes is not None,
        "huge pages": needs.huge_pages_on,
        "dropping the whole OS cache": needs.drop_all_caches,
        "emulated disk": needs.emulated_disk,
        "host settings": needs.host_settings,
    }
    notes = []
    for feature, (ok, reason) in available.items():
        if ok:
            continue
        if required[feature]:
            raise UserError(
                f"the spec needs {feature}, which is unavailable here: {reason}",
                "run the lab as root, or remove that part of the spec",
            )
        notes.append(f"unavailable here (not needed by this spec): {feature}: {reason}")
    return notes


class EmulatedMachine:
    def __init__(self, memory_bytes: int | None):
        self.memory_bytes = memory_bytes
        self.cgroup: MemoryCgroup | None = None
        self.huge_pages = hugepages.HugePagesReservation()
        self.host = host_settings.HostSettings()
        self.last_huge_pages: dict = {}
        self.accounting: dict = {}  # the last start's split of RAM: pool, cap (memory_split)
        self._charged_here: set = set()  # data directories whose cached pages are the cgroup's

    def open(self) -> None:
        if self.memory_bytes is not None:
            hierarchy, reason = find_hierarchy()
            if hierarchy is None:
                raise UserError(f"memory limit unavailable: {reason}", "run the lab as root")
            self.cgroup = MemoryCgroup.create(hierarchy, self.memory_bytes)
            self._charged_here = set()

    def cgroup_procs_file(self) -> str | None:
        return self.cgroup.procs_file if self.cgroup else None

    def before_start(self, cluster) -> None:
        settings = cluster.settings
        # A start that fails records no split but its own: never the previous point's
        self.accounting, self.last_huge_pages = {}, {}
        if self.memory_bytes is not None:
            shared = shared_buffers_bytes(settings.get("shared_buffers"))
            if shared >= self.memory_bytes:
                raise ClusterError(
                    f"shared_buffers_exceeds_memory: shared_buffers {format_bytes(shared)} does "
                    f"not fit in the server's memory limit {format_bytes(self.memory_bytes)}"
                )
        if str(settings.get("huge_pages", "")).lower() != "on":
            if self.huge_pages.added:
                self.huge_pages.release()  # an "off" or "try" point must not find pages waiting
            self._split_memory(0)
        else:
            _check_huge_page_size(settings.get("huge_page_size"))
            pages = cluster.huge_pages_needed()
            pool_bytes = pages * hugepages.page_size_bytes()
            # The cap first: the kernel reclaims the group's page cache, as growing a pool does
            # on a real machine, before the host is asked for the pool's memory
            self._split_memory(pool_bytes)
            try:
                self.last_huge_pages = self.huge_pages.ensure(pages)
            except hugepages.HugePagesUnavailable as error:
                raise ClusterError(str(error)) from None
        if self.cgroup is not None and cluster.data_dir not in self._charged_here:
            # Pages cached before the server joined the cgroup (initdb's, a killed run's) are
            # charged elsewhere and would escape the cap: make the server read its files again,
            # from inside. Once: what the server reads later is charged to the cgroup, which
            # lives as long as the run, so a restart keeps the OS cache as it is, as a restart
            # does on a real server (seed 000 restarts for every point and drops nothing).
            oscache.evict_files(cluster.data_dir)
            self._charged_here.add(cluster.data_dir)
        if self.cgroup is not None:
            self.cgroup.reset_peak()

    def after_start(self, cluster) -> None:
        """A server told huge_pages = try (the default) takes huge pages the host has free,
        outside the cap and the pool: a bigger machine than the point's. 17+ says so."""
        if self.cgroup is None or self.accounting.get("huge_pages_pool_bytes"):
            return
        if cluster.install.major < 17:
            return
        with cluster.connect() as conn:
            status = conn.execute("select current_setting('huge_pages_status', true)").fetchone()
        if status and status[0] == "on":
            raise ClusterError(
                "huge_pages_outside_the_cap: the server put its shared memory in huge pages "
                "the host had free (huge_pages = "
                f"{cluster.settings.get('huge_pages') or 'try, the default'}), outside the "
                "emulated RAM; set huge_pages = off or on in the spec"
            )

    def _split_memory(self, pool_bytes: int) -> None:
        """Give the server's cgroup the emulated RAM less the huge page pool: a v1 memory cgroup
        does not count hugetlb pages, so without this an "on" point would get its
        shared_buffers on top of the cap, a bigger machine than its "off" twin."""
        hugetlb = None
        if self.cgroup is None:
            self.accounting = {
                "ram_bytes": None,
                "huge_pages_pool_bytes": pool_bytes,
                "cap_bytes": None,
                "accounting": "no memory limit: the pool comes out of the host's RAM",
            }
            return
        try:
            cap = cap_for_pool(self.memory_bytes, pool_bytes)
        except ClusterError:
            self.accounting = {
                "ram_bytes": self.memory_bytes,
                "huge_pages_pool_bytes": pool_bytes,
                "cap_bytes": None,
                "min_memory_left_bytes": MIN_MEMORY_LEFT,
                "accounting": "refused: the pool leaves too little of the RAM",
            }
            raise
        try:
            self.cgroup.set_limit(cap)
            hugetlb = self._limit_hugetlb(pool_bytes)
        except OSError as error:
            raise ClusterError(
                f"memory_cap_failed: cannot set the server's memory cap to {format_bytes(cap)} "
                f"(RAM {format_bytes(self.memory_bytes)} less a huge page pool of "
                f"{format_bytes(pool_bytes)}): {error}"
            ) from None
        self.accounting = {
            "ram_bytes": self.memory_bytes,
            "huge_pages_pool_bytes": pool_bytes,
            "cap_bytes": cap,
            "cap_read_back_bytes": self.cgroup.limit_read_back(),
            "min_memory_left_bytes": MIN_MEMORY_LEFT,
            "accounting": CAP_MINUS_POOL + (f"; {hugetlb}" if hugetlb else ""),
            "hugetlb_controller": hugetlb or _no_hugetlb_reason(),
        }

    def _limit_hugetlb(self, pool_bytes: int) -> str | None:
        """Where the group has a hugetlb controller (cgroup v2), it caps the pages too."""
        limit_file = self.cgroup.hugetlb_limit_file(hugepages.page_size_bytes())
        if limit_file is None:
            return None
        limit_file.write_text(str(pool_bytes) if pool_bytes else "max")
        return f"{limit_file.name} = {pool_bytes if pool_bytes else 'max'}"

    def begin_point(self) -> None:
        if self.cgroup is not None:
            self.cgroup.reset_peak()

    def stats(self) -> dict:
        cgroup = self.cgroup.stats() if self.cgroup else None
        return {
            "memory_limit_bytes": self.memory_bytes,
            "cgroup": cgroup,
            "hugepages": host_facts.read_hugepages(),
            "hugepages_reserved_by_lab": self.last_huge_pages or None,
            "memory_accounting": self._accounting_now(cgroup),
        }

    def _accounting_now(self, cgroup: dict | None) -> dict | None:
        """The split of RAM, and the room it left the OS cache: the cap less the shared memory
        charged to the group (shared_buffers when they are not in huge pages)."""
        if not self.accounting:
            return None
        accounting = dict(self.accounting)
        cap = accounting.get("cap_bytes")
        if cap is not None and cgroup is not None:
            shmem = cgroup.get("shmem_bytes") or 0
            accounting["os_cache_room_bytes"] = max(cap - shmem, 0)
        else:
            accounting["os_cache_room_bytes"] = None
        return accounting

    def set_host(self, wanted: dict[str, str], data_dir: Path | None, record: dict) -> None:
        """The point's host settings in force (none: the host's own values back)."""
        self.host.apply(wanted, data_dir, record)

    def close(self) -> None:
        """After the server stopped: host settings and huge pages back, cgroup removed."""
        try:
            self.host.restore_all()
        finally:
            try:
                self.huge_pages.release()
            finally:
                if self.cgroup is not None:
                    self.cgroup.remove()
                    self.cgroup = None


@functools.cache  # the mounts do not change during a run; asked at every start
def _no_hugetlb_reason() -> str:
    try:
        mounts = hugetlb_mounts(host_facts.read_mountinfo())
    except OSError:
        mounts = []
    if mounts:
        return f"not used: the hugetlb controller is a hierarchy of its own ({', '.join(mounts)})"
    return (
        "not used: no hugetlb controller in the memory cgroup's hierarchy (v1 mounts none "
        "here; cgroup v2's would need enabling in a hierarchy the memory cgroup is not in)"
    )


def _check_huge_page_size(value) -> None:
    """The pool is sized in the kernel's default huge pages (vm.nr_hugepages): a server asking
    for pages of another size would find none, or a pool sized wrongly."""
    if value is None or str(value).strip() in ("", "0"):
        return
    default = hugepages.page_size_bytes()
    try:
        size = parse_bytes(str(value).strip(), default_unit="kB")
    except ValueError:
        return  # the server's own check of the setting says what is wrong with it
    if size != default:
        raise ClusterError(
            f"huge_page_size_unsupported: huge_page_size = {value}, but the lab reserves "
            f"huge pages of the kernel's default size, {format_bytes(default)} (vm.nr_hugepages)"
        )
