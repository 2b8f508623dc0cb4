"""Recapture the real per-second pgbench outputs the stability tests read (as root).

    .venv/bin/python tests/data/pgbench/stability/capture.py

A throwaway cluster of the lab's default install (pgbench scale 1, fsync off), three
pgbench runs of 12 s with -P 1, each with something real happening during it:
  steady.txt      nothing: select-only on an otherwise idle server;
  lock_stall.txt  simple-update; at 4 s another session holds an ACCESS EXCLUSIVE lock on
                  pgbench_accounts for 3 s (a stall, as a checkpoint or a DDL would cause);
  rising.txt      select-only while two busy-looping processes take the CPU for the first
                  6 s, then one, then none (load drops: tps climbs over the run).
Timing values differ on every capture: the tests' expectations are about shape, not numbers.
"""

import multiprocessing
import shutil
import tempfile
import threading
import time
from pathlib import Path

from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.client import PgbenchTarget
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user

HERE = Path(__file__).parent


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _pgbench(install, cluster, args) -> str:
    import subprocess

    target = PgbenchTarget(cluster.conninfo())
    command = [str(install.bin_dir / "pgbench"), *args, target.connection_string()]
    return subprocess.run(
        command,
        capture_output=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=True,
    ).stdout


def main() -> None:
    user = server_user()
    install = install_usable_by(find_install(None), user)
    base = Path(tempfile.mkdtemp(prefix="pgcachelab-capture-", dir="/tmp"))
    base.chmod(0o755)
    cluster = ManagedCluster.create(install, user, parent_dir=base)
    try:
        cluster.apply_settings({"fsync": "off"})
        _pgbench(install, cluster, ["-i", "-s", "1", "-q"])
        run = ["-c", "2", "-j", "2", "-T", "12", "-P", "1"]
        (HERE / "steady.txt").write_text(_pgbench(install, cluster, ["-S", *run]))

        def hold_lock():
            time.sleep(4)
            with cluster.connect() as conn, conn.transaction():
                conn.execute("lock table pgbench_accounts in access exclusive mode")
                time.sleep(3)

        locker = threading.Thread(target=hold_lock)
        locker.start()
        (HERE / "lock_stall.txt").write_text(_pgbench(install, cluster, ["-N", *run]))
        locker.join()

        hogs = [multiprocessing.Process(target=_busy, args=(s,)) for s in (6, 3)]
        for hog in hogs:
            hog.start()
        (HERE / "rising.txt").write_text(_pgbench(install, cluster, ["-S", *run]))
        for hog in hogs:
            hog.join()
    finally:
        cluster.destroy()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
