"""A managed cluster whose files live on the emulated disk: everything PostgreSQL does to its
files works through the FUSE mount (create, write, rename, unlink while open, truncate, fsync,
directories, tablespace symlinks), and the disk can change under a running server.

Root only (mounting); skipped with the reason otherwise.
"""

import os
from pathlib import Path

import pytest

from pgcachelab.clusters.binaries import find_pgbench
from pgcachelab.clusters.client import PgbenchTarget
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.machine import fusedisk
from pgcachelab.machine.disk_profiles import resolve_disk
from pgcachelab.workloads.pgbench import init_args, run_pgbench_init

AVAILABLE, WHY_NOT = fusedisk.availability()
pytestmark = [
    pytest.mark.server,
    pytest.mark.slow,
    pytest.mark.skipif(not AVAILABLE, reason=f"emulated disk unavailable: {WHY_NOT}"),
]
SLOW = resolve_disk("custom:read=200us,write=50us,sync=1ms")


def test_postgresql_does_everything_it_needs_on_the_emulated_disk(
    pg_install, server_os_user, cluster_parent
):
    cluster = ManagedCluster.create(pg_install, server_os_user, parent_dir=cluster_parent,
                                    emulated_disk=True, disk_profile=SLOW)  # fmt: skip
    with cluster:
        assert cluster.data_dir == cluster.work_dir / "mnt" / "pgdata"
        cluster.apply_settings({"shared_buffers": "16MB"})
        run_pgbench_init(find_pgbench(cluster.install), init_args(2, None, 18),
                         PgbenchTarget(cluster.conninfo()))  # fmt: skip
        space = cluster.work_dir / "mnt" / "space"
        space.mkdir(mode=0o700)
        os.chown(space, server_os_user.uid, server_os_user.gid)
        with cluster.connect() as conn:
            conn.execute(f"create tablespace lab_space location '{space}'")
            conn.execute("create table in_space tablespace lab_space as"
                         " select g from generate_series(1, 100000) g")  # fmt: skip
            conn.execute("checkpoint")
            conn.execute("vacuum full pgbench_accounts")  # a rewrite: new file, old unlinked
            conn.execute("truncate pgbench_history")
            conn.execute("create database scratch template template0")
            conn.execute("drop database scratch")  # a directory of files removed
            assert conn.execute("select count(*) from in_space").fetchone()[0] == 100000
            conn.execute("drop table in_space")
            conn.execute("drop tablespace lab_space")
            conn.execute("checkpoint")
        counters = cluster.disk.device_counters()
        assert counters["writes"] > 0 and counters["syncs"] > 0
        cluster.restart()  # a shutdown checkpoint and crash-free start on the mount
        with cluster.connect() as conn:
            assert conn.execute("select count(*) from pgbench_accounts").fetchone()[0] == 200000
        # Another emulated device: the daemon is retimed, the server keeps running.
        assert cluster.use_disk(resolve_disk("nvme"))
        assert cluster.running
        assert cluster.disk.device_counters()["read_latency_us"] == 80
        # The machine's own disk: the server restarts on the backing directory, same data.
        assert cluster.use_disk(None)
        cluster.apply_settings({"shared_buffers": "16MB"})
        assert cluster.data_dir == cluster.work_dir / "disk" / "pgdata"
        with cluster.connect() as conn:
            assert conn.execute("select count(*) from pgbench_accounts").fetchone()[0] == 200000
    assert not cluster.work_dir.exists()
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(cluster.work_dir) not in mounts
