"""Recapture a real TPC-C run's pgbench per-transaction log for tests/test_tpcc_pure.py.

Run as: .venv/bin/python tests/data/tpcc/capture_logs.py 18
        .venv/bin/python tests/data/tpcc/capture_logs.py 15 /usr/lib/postgresql/15/bin
Writes LABEL/run.log (every thread's log, concatenated) and LABEL/run.json (the run's
options, the script names in log order and the figures the lab computed at capture time).
"""

import json
import sys
import tempfile
from pathlib import Path

from pgcachelab.cli.progress import LineProgress
from pgcachelab.clusters.binaries import find_install, find_pgbench
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user
from pgcachelab.clusters.targets import ExistingTarget
from pgcachelab.workloads.tpcc import driver, loader


def capture(label: str, bin_dir: str | None) -> None:
    user = server_user()
    install = install_usable_by(find_install(bin_dir), user)
    out_dir = Path(__file__).resolve().parent / label
    out_dir.mkdir(exist_ok=True)
    options = driver.RunOptions(clients=2, threads=2, duration_s=3)
    with ManagedCluster.create(install, user) as cluster:
        cluster.apply_settings({})
        dsn = f"host={cluster.socket_dir} port={cluster.port} user=lab dbname=postgres"
        target = ExistingTarget(dsn)
        loader.load(target.connect, 1, 2, LineProgress())
        pgbench = find_pgbench(install)
        with tempfile.TemporaryDirectory() as scratch:
            # the driver removes its scratch directory; it copies the logs here first
            run = driver.run(target, pgbench, options, LineProgress(), "capture",
                             keep_logs_in=Path(scratch))  # fmt: skip
            logs = sorted(Path(scratch).glob("tpcc.*"))
            (out_dir / "run.log").write_text("".join(p.read_text() for p in logs))
    (out_dir / "run.json").write_text(json.dumps({
        "pgbench_version": run.pgbench_version,
        "duration_s": options.duration_s,
        "script_names": run.script_names,
        "new_orders": run.summary.new_orders,
        "completed": run.summary.completed,
        "rollbacks": run.rollbacks,
    }, indent=2) + "\n")  # fmt: skip


if __name__ == "__main__":
    capture(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
