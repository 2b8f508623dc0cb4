"""Recapture pgbench's per-transaction logs (--log) for tests/test_pgbench_log.py.

Run as: .venv/bin/python tests/data/pgbench/capture_logs.py 18
        .venv/bin/python tests/data/pgbench/capture_logs.py 15 /usr/lib/postgresql/15/bin
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user

LOOKUP_SQL = "select aid from pgbench_accounts where aid = (select (random() * 99999)::int + 1);\n"


def capture(label: str, bin_dir: str | None) -> None:
    user = server_user()
    install = install_usable_by(find_install(bin_dir), user)
    out_dir = Path(__file__).resolve().parent / label
    pgbench = str(install.tool("pgbench"))
    with ManagedCluster.create(install, user) as cluster, tempfile.TemporaryDirectory() as scratch:
        cluster.apply_settings({})
        dsn = f"host={cluster.socket_dir} port={cluster.port} user=lab dbname=postgres"
        subprocess.run([pgbench, "-i", "-s", "1", "-q", dsn], check=True, capture_output=True)
        lookup = Path(scratch, "query.sql")  # not lookup.*: that is the log's name
        lookup.write_text(LOOKUP_SQL)
        runs = {
            "lookup": ["-n", "-c", "1", "-t", "20", "-f", str(lookup)],
            "two": ["-n", "-c", "2", "-j", "2", "-t", "5", "-b", "select-only"],
        }
        for name, args in runs.items():
            prefix = Path(scratch, name)
            subprocess.run([pgbench, *args, "--log", f"--log-prefix={prefix}", dsn], check=True,
                           capture_output=True)  # fmt: skip
            logs = sorted(Path(scratch).glob(f"{name}.*"))
            if name == "lookup":
                shutil.copy(logs[0], out_dir / "transaction_log_lookup.log")
            else:
                for thread, log in enumerate(logs):
                    shutil.copy(log, out_dir / f"transaction_log_two_threads_{thread}.log")
            print(name, [log.name for log in logs])


if __name__ == "__main__":
    capture(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
