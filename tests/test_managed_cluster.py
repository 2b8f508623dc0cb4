"""ManagedCluster against real servers: initdb, settings, start/reload/restart, teardown."""

import re
from pathlib import Path

import pytest
from fix_clusters import show
from fix_processes import postmaster_pid, process_alive, processes_mentioning

from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.managed import SETTINGS_FILE, ClusterError, ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by

pytestmark = pytest.mark.server

DEBIAN_15_BIN = Path("/usr/lib/postgresql/15/bin")
MISSING_LIBRARY = "pgcachelab_no_such_library"
TCP_LISTEN_STATE = "0A"  # /proc/net/tcp's st column for LISTEN


def _overcommit_mode() -> int:
    return int(Path("/proc/sys/vm/overcommit_memory").read_text())


def _huge_pages_configured() -> bool:
    return int(Path("/proc/sys/vm/nr_hugepages").read_text()) > 0


def _tcp_listen_ports() -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == TCP_LISTEN_STATE:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _assert_nothing_left(work_dir: Path, pid: int) -> None:
    assert not process_alive(pid), f"postmaster {pid} still runs"
    assert processes_mentioning(str(work_dir)) == []
    assert not work_dir.exists()


def test_create_makes_a_private_socket_dir_and_includes_the_settings_file(
    shared_cluster, server_os_user
):
    cluster = shared_cluster
    for directory in (cluster.work_dir, cluster.socket_dir):
        status = directory.stat()
        assert oct(status.st_mode & 0o777) == oct(0o700), directory
        assert (status.st_uid, status.st_gid) == (server_os_user.uid, server_os_user.gid)

    conf_lines = (cluster.data_dir / "postgresql.conf").read_text().splitlines()
    assert f"include_if_exists = '{SETTINGS_FILE}'" in conf_lines
    settings_file = cluster.data_dir / SETTINGS_FILE
    assert settings_file.stat().st_uid == server_os_user.uid
    assert f"port = '{cluster.port}'" in settings_file.read_text().splitlines()


def test_a_started_cluster_listens_on_its_socket_only(shared_cluster):
    running_cluster = shared_cluster
    assert running_cluster.apply_settings({}) == "start"
    assert show(running_cluster, "listen_addresses") == ""
    assert show(running_cluster, "unix_socket_directories") == str(running_cluster.socket_dir)
    assert (running_cluster.socket_dir / f".s.PGSQL.{running_cluster.port}").is_socket()
    assert running_cluster.port not in _tcp_listen_ports()


def test_apply_settings_starts_then_reloads_or_restarts_only_when_needed(shared_cluster):
    cluster = shared_cluster
    restarts_before = cluster.restarts
    assert cluster.apply_settings({}) == "start"
    first_postmaster = postmaster_pid(cluster.work_dir)

    # user and sighup settings: a reload, seen by the next session
    assert cluster.apply_settings({"work_mem": "8MB"}) == "reload"
    assert show(cluster, "work_mem") == "8MB"
    assert cluster.apply_settings({"work_mem": "8MB", "checkpoint_timeout": "10min"}) == "reload"
    assert show(cluster, "checkpoint_timeout") == "10min"
    assert cluster.apply_settings({"work_mem": "8MB", "checkpoint_timeout": "10min"}) == "none"
    assert postmaster_pid(cluster.work_dir) == first_postmaster
    assert cluster.restarts == restarts_before

    # a postmaster setting: a restart, and the new value in force
    assert show(cluster, "shared_buffers") != "32MB"
    assert cluster.apply_settings({"work_mem": "8MB", "shared_buffers": "32MB"}) == "restart"
    assert show(cluster, "shared_buffers") == "32MB"
    assert show(cluster, "checkpoint_timeout") == "5min"  # dropped from the settings: default
    assert cluster.restarts == restarts_before + 1
    assert not process_alive(first_postmaster)
    assert cluster.apply_settings({"shared_buffers": "32MB", "work_mem": "8MB"}) == "none"

    # dropping a reloadable setting brings back its default with a reload
    assert cluster.apply_settings({"shared_buffers": "32MB"}) == "reload"
    with cluster.connect() as conn:
        source = conn.execute("select source from pg_settings where name = 'work_mem'")
        assert source.fetchone()[0] == "default"
    assert show(cluster, "shared_buffers") == "32MB"


BAD_SETTINGS = [
    pytest.param(
        {"shared_buffers": "1TB"},
        r"FATAL: .*could not map anonymous shared memory",
        marks=pytest.mark.skipif(
            _overcommit_mode() == 1, reason="vm.overcommit_memory = 1 maps 1TB without complaint"
        ),
        id="shared_buffers-1TB",
    ),
    pytest.param(
        {"huge_pages": "on"},
        r"FATAL: .*could not map anonymous shared memory",
        marks=pytest.mark.skipif(_huge_pages_configured(), reason="huge pages are configured"),
        id="huge_pages-on-without-huge-pages",
    ),
    pytest.param(
        {"max_connections": "1"},
        # checked before logging starts: postgres writes it to stderr without "FATAL"
        r"superuser_reserved_connections.* must be less than .*max_connections",
        id="max_connections-below-reserved",
    ),
    pytest.param(
        {"shared_preload_libraries": MISSING_LIBRARY},
        rf'FATAL: .*could not access file "{MISSING_LIBRARY}"',
        id="shared_preload_libraries-missing",
    ),
    pytest.param(
        {"shared_buffers": "12XB"},
        rf'FATAL: .*configuration file ".*{SETTINGS_FILE}" contains errors',
        id="shared_buffers-12XB",
    ),
]


@pytest.mark.parametrize(("settings", "server_error"), BAD_SETTINGS)
def test_a_bad_value_makes_start_fail_with_the_servers_error(
    shared_cluster, settings, server_error
):
    cluster = shared_cluster
    with pytest.raises(ClusterError, match=r"server did not start: ") as failure:
        cluster.apply_settings(settings)
    assert re.search(server_error, str(failure.value)), str(failure.value)
    assert not cluster.running
    assert processes_mentioning(str(cluster.data_dir)) == []


def test_a_failed_start_reports_its_own_errors_not_an_earlier_starts(shared_cluster):
    cluster = shared_cluster
    with pytest.raises(ClusterError, match=f"FATAL: .*{MISSING_LIBRARY}"):
        cluster.apply_settings({"shared_preload_libraries": MISSING_LIBRARY})
    with pytest.raises(ClusterError) as second:
        cluster.apply_settings({"shared_buffers": "12XB"})
    assert "contains errors" in str(second.value)
    assert MISSING_LIBRARY not in str(second.value)  # the log holds both starts' lines
    # and the cluster is still usable once the settings are right
    assert cluster.apply_settings({}) == "start"
    assert show(cluster, "shared_preload_libraries") == ""


def test_destroy_stops_the_server_and_removes_the_work_dir(running_cluster):
    pid = running_cluster.process.pid
    assert postmaster_pid(running_cluster.work_dir) == pid
    assert process_alive(pid)
    running_cluster.destroy()
    _assert_nothing_left(running_cluster.work_dir, pid)
    running_cluster.destroy()  # twice is harmless


def test_a_with_block_that_raises_leaves_nothing(pg_install, server_os_user, cluster_parent):
    class Boom(Exception):
        pass

    seen = {}
    with (
        pytest.raises(Boom),
        ManagedCluster.create(pg_install, server_os_user, parent_dir=cluster_parent) as managed,
    ):
        managed.apply_settings({"work_mem": "8MB"})
        seen["work_dir"], seen["pid"] = managed.work_dir, postmaster_pid(managed.work_dir)
        raise Boom
    _assert_nothing_left(seen["work_dir"], seen["pid"])
    assert list(cluster_parent.iterdir()) == []


@pytest.mark.skipif(
    not (DEBIAN_15_BIN / "postgres").is_file(), reason=f"no PostgreSQL 15 in {DEBIAN_15_BIN}"
)
def test_debian_postgresql_15_starts_and_reloads(server_os_user, cluster_parent):
    install = install_usable_by(find_install(DEBIAN_15_BIN), server_os_user)
    assert install.major == 15
    with ManagedCluster.create(install, server_os_user, parent_dir=cluster_parent) as managed:
        assert managed.apply_settings({}) == "start"
        assert show(managed, "server_version_num").startswith("15")
        assert show(managed, "listen_addresses") == ""
        assert managed.apply_settings({"work_mem": "8MB"}) == "reload"
        assert show(managed, "work_mem") == "8MB"
        pid = postmaster_pid(managed.work_dir)
    _assert_nothing_left(managed.work_dir, pid)
