"""The emulated machine a managed server runs on: a memory cap, huge pages, cache state.

It hooks into every server start (`before_start`) because that is where each of its promises
is kept: huge pages are sized while the server is down, the server's files leave the page
cache before the server re-enters the cgroup, and a shared_buffers that cannot fit is refused
instead of left to the OOM killer.
"""

from dataclasses import dataclass

from pgcachelab.errors import ClusterError, UserError
from pgcachelab.machine import fusedisk, hugepages, oscache
from pgcachelab.machine.cgroup import MemoryCgroup, find_hierarchy
from pgcachelab.units import format_bytes, shared_buffers_bytes


@dataclass(frozen=True)
class MachineNeeds:
    """What a spec asks of the machine, to check before anything runs."""

    memory_bytes: int | None
    huge_pages_on: bool
    drop_all_caches: bool
    emulated_disk: bool = False


def capabilities() -> dict[str, tuple[bool, str]]:
    """Each root-only feature: (available, reason when not)."""
    hierarchy, reason = find_hierarchy()
    return {
        "memory limit": (hierarchy is not None, reason),
        "huge pages": hugepages.availability(),
        "dropping the whole OS cache": oscache.drop_all_availability(),
        "emulated disk": fusedisk.availability(),
    }


def check_needs(needs: MachineNeeds, available: dict[str, tuple[bool, str]]) -> list[str]:
    """Raise UserError when the spec needs what this machine cannot do; else return notes
    on what is unavailable but unused, to report once."""
    required = {
        "memory limit": needs.memory_bytes is not None,
        "huge pages": needs.huge_pages_on,
        "dropping the whole OS cache": needs.drop_all_caches,
        "emulated disk": needs.emulated_disk,
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
        self.last_huge_pages: dict = {}
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
        if self.memory_bytes is not None:
            shared = shared_buffers_bytes(settings.get("shared_buffers"))
            if shared >= self.memory_bytes:
                raise ClusterError(
                    f"shared_buffers_exceeds_memory: shared_buffers {format_bytes(shared)} does "
                    f"not fit in the server's memory limit {format_bytes(self.memory_bytes)}"
                )
        if str(settings.get("huge_pages", "")).lower() == "on":
            pages = cluster.huge_pages_needed()
            try:
                self.last_huge_pages = self.huge_pages.ensure(pages)
            except hugepages.HugePagesUnavailable as error:
                raise ClusterError(str(error)) from None
        elif self.huge_pages.added:
            self.huge_pages.release()  # an "off" or "try" point must not find pages waiting
            self.last_huge_pages = {}
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

    def begin_point(self) -> None:
        if self.cgroup is not None:
            self.cgroup.reset_peak()

    def stats(self) -> dict:
        return {
            "memory_limit_bytes": self.memory_bytes,
            "cgroup": self.cgroup.stats() if self.cgroup else None,
            "hugepages": hugepages.read_hugepages(),
            "hugepages_reserved_by_lab": self.last_huge_pages or None,
        }

    def close(self) -> None:
        """After the server stopped: huge pages back, cgroup removed."""
        try:
            self.huge_pages.release()
        finally:
            if self.cgroup is not None:
                self.cgroup.remove()
                self.cgroup = None
