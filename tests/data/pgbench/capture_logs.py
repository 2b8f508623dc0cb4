"""Recapture pgbench's per-transaction logs (--log) for tests/test_pgbench_log.py.

Run as: .venv/bin/python tests/data/pgbench/capture_logs.py 18
        .venv/bin/python tests/data/pgbench/capture_logs.py 15 /usr/lib/postgresql/15/bin
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user

label, bindir = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
u = server_user()
inst = install_usable_by(find_install(bindir), u)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), label)
d0 = tempfile.mkdtemp()
with ManagedCluster.create(inst, u) as c:
    c.apply_settings({})
    dsn = f"host={c.socket_dir} port={c.port} user=lab dbname=postgres"
    pgb = str(inst.tool("pgbench"))
    subprocess.run([pgb, "-i", "-s", "1", "-q", dsn], check=True, capture_output=True)
    Path(d0, "lookup.sql").write_text(
        "select aid from pgbench_accounts where aid = (select (random() * 99999)::int + 1);\n"
    )
    d = tempfile.mkdtemp()
    r = subprocess.run(
        [
            pgb,
            "-n",
            "-c",
            "1",
            "-t",
            "20",
            "-f",
            os.path.join(d0, "lookup.sql"),
            "--log",
            f"--log-prefix={d}/lookup",
            dsn,
        ],
        capture_output=True,
        text=True,
    )
    print(r.stdout[-300:], r.stderr[-300:])
    files = os.listdir(d)
    print(files)
    shutil.copy(os.path.join(d, files[0]), f"{out}/transaction_log_lookup.log")
    d2 = tempfile.mkdtemp()
    r = subprocess.run(
        [
            pgb,
            "-n",
            "-c",
            "2",
            "-j",
            "2",
            "-t",
            "5",
            "-b",
            "select-only",
            "--log",
            f"--log-prefix={d2}/two",
            dsn,
        ],
        capture_output=True,
        text=True,
    )
    files = sorted(os.listdir(d2))
    print(files)
    for i, f in enumerate(files):
        shutil.copy(os.path.join(d2, f), f"{out}/transaction_log_two_threads_{i}.log")
