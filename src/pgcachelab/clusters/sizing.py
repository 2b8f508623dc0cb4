"""How many huge pages a configuration needs, asked of a throwaway cluster that is then removed.

15+: `postgres -C shared_memory_size_in_huge_pages` on a stopped cluster; before, the seeds' way:
a short start and the postmaster's VmPeak (ManagedCluster.huge_pages_needed does both).
"""

from dataclasses import dataclass

from pgcachelab.clusters.binaries import PgInstall
from pgcachelab.clusters.managed import ClusterError, ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user
from pgcachelab.errors import UserError
from pgcachelab.machine.host_facts import read_hugepages
from pgcachelab.machine.hugepages_estimate import DEFAULT_PAGE_SIZE_BYTES


@dataclass(frozen=True)
class HugePagesSizing:
    pages_needed: int
    page_size_bytes: int
    server_version: str
    nr_hugepages_now: int | None


def size_huge_pages(install: PgInstall, settings: dict[str, str]) -> HugePagesSizing:
    """initdb a cluster in a temporary directory, ask it, remove it: nothing is left behind."""
    user = server_user()
    install = install_usable_by(install, user)
    try:
        with ManagedCluster.create(install, user) as cluster:
            # The settings file is the one each point of a run writes; here it holds the
            # configuration to size (the cluster never serves anything).
            cluster._write_settings_file(settings)
            pages = cluster.huge_pages_needed()
    except ClusterError as error:
        raise UserError(
            f"cannot size huge pages with PostgreSQL {install.version}: {error}",
            "check the settings (e.g. --shared-buffers 1GB) and the install (--pg-bin)",
        ) from None
    pool = read_hugepages()
    return HugePagesSizing(
        pages_needed=pages,
        page_size_bytes=pool.get("page_size_bytes", DEFAULT_PAGE_SIZE_BYTES),
        server_version=install.version,
        nr_hugepages_now=pool.get("total"),
    )
