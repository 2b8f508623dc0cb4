"""By hand, as root: a PostgreSQL cluster on the emulated disk, through what PostgreSQL does.

initdb, start, pgbench -i and a short pgbench run, a tablespace on a directory of the mount,
CREATE/DROP DATABASE (directory removal with files unlinked while open), VACUUM FULL (relation
rewrite and unlink), CHECKPOINT, a clean stop; then the daemon's counters. Prints each step and
its time; exits non-zero at the first failure.

    .venv/bin/python bench/fusedisk_postgres.py [--read-latency-ms 0.2] [--seconds 5] [--pg-bin DIR]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.managed import free_port
from pgcachelab.clusters.osuser import install_usable_by, run_as_kwargs, server_user
from pgcachelab.machine.fusedisk import DiskTimings, FuseDisk


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--read-latency-ms", type=float, default=0.2)
    parser.add_argument("--write-latency-ms", type=float, default=0.05)
    parser.add_argument("--sync-latency-ms", type=float, default=1.0)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--pg-bin", help="a PostgreSQL bin directory (default: the wheel's)")
    options = parser.parse_args()

    user = server_user()
    install = install_usable_by(find_install(options.pg_bin), user)
    base = Path(tempfile.mkdtemp(prefix="pgcachelab-fusedisk-pg-", dir="/tmp"))
    base.chmod(0o755)
    backing, mountpoint, sockets = base / "backing", base / "mnt", base / "sockets"
    for directory in (backing, mountpoint, sockets):
        directory.mkdir()
        os.chown(directory, user.uid, user.gid)
    port = free_port()
    data = mountpoint / "pgdata"
    env = {**os.environ, "PGHOST": str(sockets), "PGPORT": str(port), "PGDATABASE": "postgres"}

    def run(*args: str) -> None:
        start = time.monotonic()
        result = subprocess.run(
            [str(install.tool(args[0])), *args[1:]], env=env, cwd="/",
            capture_output=True, text=True, **run_as_kwargs(user),
        )  # fmt: skip
        took = time.monotonic() - start
        print(f"{took:7.2f} s  {' '.join(args)[:100]}", flush=True)
        if result.returncode != 0:
            print(result.stdout[-2000:], result.stderr[-2000:], sep="\n")
            raise SystemExit(f"failed: {' '.join(args)}")
        for line in result.stdout.splitlines():
            if line.startswith(("tps", "latency average", "number of transactions")):
                print(f"           {line}")

    def sql(statement: str) -> None:
        run("psql", "-X", "-v", "ON_ERROR_STOP=1", "-qc", statement)

    timings = DiskTimings(
        read_latency_s=options.read_latency_ms / 1000,
        write_latency_s=options.write_latency_ms / 1000,
        sync_latency_s=options.sync_latency_ms / 1000,
    )
    disk = FuseDisk(timings, backing, mountpoint, user.uid, user.gid)
    started = False
    try:
        disk.mount()
        print(f"PostgreSQL {install.version} on {mountpoint} ({timings})")
        run("initdb", "-D", str(data), "-A", "trust", "-E", "UTF8", "--no-instructions")
        run("pg_ctl", "-D", str(data), "-l", str(sockets / "log"), "-w", "start", "-o",
            f"-p {port} -k {sockets} -c listen_addresses='' -c shared_buffers=16MB")  # fmt: skip
        started = True
        run("pgbench", "-i", "-s", "5", "-q")
        run("pgbench", "-c", "4", "-j", "2", "-T", str(options.seconds))
        tablespace_dir = mountpoint / "tblspc"
        tablespace_dir.mkdir()
        os.chown(tablespace_dir, user.uid, user.gid)
        sql(f"create tablespace lab_space location '{tablespace_dir}'")
        sql("create table in_space tablespace lab_space as select g from generate_series(1, 1e5) g")
        sql("checkpoint")
        sql("vacuum full pgbench_accounts")
        sql("create database scratch template template0")
        run("pgbench", "-i", "-s", "1", "-q", "scratch")
        sql("drop database scratch")
        sql("drop table in_space")
        sql("drop tablespace lab_space")
        sql("checkpoint")
        run("pg_ctl", "-D", str(data), "-w", "-m", "fast", "stop")
        started = False
        run("pg_ctl", "-D", str(data), "-l", str(sockets / "log"), "-w", "start", "-o",
            f"-p {port} -k {sockets} -c listen_addresses=''")  # fmt: skip
        started = True
        sql("select count(*) from pgbench_accounts")
        leftovers = [p.name for p in backing.rglob(".fuse_hidden*")]
        print(f"daemon counters: {disk.stats()}; .fuse_hidden files: {leftovers}")
        return 0
    finally:
        if started:
            subprocess.run(
                [str(install.tool("pg_ctl")), "-D", str(data), "-w", "-m", "immediate", "stop"],
                cwd="/", capture_output=True, **run_as_kwargs(user),
            )  # fmt: skip
        log = sockets / "log"
        if log.exists():
            errors = [line for line in log.read_text().splitlines() if "ERROR" in line or
                      "FATAL" in line or "PANIC" in line]  # fmt: skip
            print(f"server log errors: {errors[-5:]}")
        disk.unmount()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
