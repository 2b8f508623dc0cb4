"""The suite's fixtures and helpers live in plugin files, one per topic (see README.md):
tests import helpers from the file that defines them (`from fix_cli import run_cli`)."""

pytest_plugins = ["fix_processes", "fix_clusters", "fix_cli", "fix_lab", "fix_reports", "fix_netns"]

# Property tests (hypothesis): the same examples on every run, and no example database left in
# the checkout (a run leaves nothing behind).
from hypothesis import settings  # noqa: E402

settings.register_profile("lab", database=None, derandomize=True, deadline=None)
settings.load_profile("lab")


# Under pytest-xdist (`make test`), each worker's lab has its own registry and TMPDIR
# (tests/xdist-worker), but the machine itself is shared: memory cgroups, vm.nr_hugepages,
# drop_caches, block-device settings, network namespaces, the emulated disks' daemons. The
# modules whose tests change or check those run one after another on one worker; the other
# tests spread over the workers one by one. The three-host fleet (its network namespaces,
# their names and subnet its own, its hosts' registries in the worker's mount namespace) is
# a scope of its own: mostly leases and outages waited out, it runs beside the rest.
NETWORK_MODULES = {"test_fleet_hosts"}
MACHINE_MODULES = {
    "test_cluster_on_disk",
    "test_disk_profiles",
    "test_doctor_host",
    "test_doctor_server",
    "test_emulated_disk_run",
    "test_emulated_machine",
    "test_faults",
    "test_fusedisk",
    "test_host_rung",
    "test_hugepages_estimate",
    "test_instruments",
    "test_kept_clusters",
    "test_memory_accounting",
    "test_owned_and_failures",
    "test_reproduce",
    "test_version_interleave",
}


def pytest_xdist_make_scheduler(config, log):
    """The machine's modules as one scope (one worker, in order), the network's as another;
    every other test its own.
    (xdist's loadgroup, by marker, would do the same, but it renames node ids in a way pytest
    9 ignores: its groups came apart.)"""
    from xdist.scheduler import LoadScopeScheduling

    class MachineScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
            if module in MACHINE_MODULES:
                return "machine"
            return "network" if module in NETWORK_MODULES else nodeid

    return MachineScopeScheduling(config, log)
