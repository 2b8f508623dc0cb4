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
        select_one = Path(scratch, "one.sql")
        select_one.write_text("select 1;\n")
        runs = {
            "lookup": ["-n", "-c", "1", "-t", "20", "-f", str(lookup)],
            "two": ["-n", "-c", "2", "-j", "2", "-t", "5", "-b", "select-only"],
            # latency distributions (issue 32): `select 1`, where 14+ logs most replies as
            # 0 us (its lazy clock); -R with its schedule lag column; --latency-limit's skipped; and
            # --sampling-rate; each with what pgbench printed, to check the log against
            "zeros": ["-n", "-c", "2", "-j", "1", "-t", "500", "-f", str(select_one)],
            "rate": ["-n", "-c", "2", "-j", "1", "-T", "2", "-R", "300", "-b", "select-only"],
            "skipped": [
                "-n",
                "-c",
                "1",
                "-T",
                "1",
                "-R",
                "2000",
                "--latency-limit",
                "0.03",
                "-b",
                "select-only",
            ],  # fmt: skip
            "sampled": [
                "-n",
                "-c",
                "1",
                "-T",
                "1",
                "--sampling-rate",
                "0.05",
                "-P",
                "1",
                "-b",
                "select-only",
            ],  # fmt: skip
        }
        for name, args in runs.items():
            prefix = Path(scratch, name)
            done = subprocess.run([pgbench, *args, "--log", f"--log-prefix={prefix}", dsn],
                                  check=True, capture_output=True, text=True)  # fmt: skip
            logs = sorted(Path(scratch).glob(f"{name}.*"))
            if name == "lookup":
                shutil.copy(logs[0], out_dir / "transaction_log_lookup.log")
            elif name == "two":
                for thread, log in enumerate(logs):
                    shutil.copy(log, out_dir / f"transaction_log_two_threads_{thread}.log")
            else:
                for thread, log in enumerate(logs):
                    shutil.copy(log, out_dir / f"transaction_log_{name}_{thread}.log")
                (out_dir / f"transaction_log_{name}_printed.out").write_text(
                    done.stdout + done.stderr
                )
            print(name, [log.name for log in logs])


if __name__ == "__main__":
    capture(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
