"""Recapture the rows of inspect's queries for tests/test_inspect_parsers.py.

Run as root or the server user, after `pgcachelab extension install [--pg-bin ...]`:
    .venv/bin/python tests/data/inspect/capture.py 18
    .venv/bin/python tests/data/inspect/capture.py 15 /usr/lib/postgresql/15/bin
"""

import json
import shutil
import sys
from pathlib import Path

from psycopg import sql

from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.managed import SETTINGS_FILE, ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user
from pgcachelab.probes import buffercache


def capture(label: str, bin_dir: str | None) -> None:
    user = server_user()
    install = install_usable_by(find_install(bin_dir), user)
    out_dir = Path(__file__).resolve().parent
    with ManagedCluster.create(install, user) as cluster:
        cluster.apply_settings({"shared_buffers": "16MB", "autovacuum": "off"})
        with cluster.connect() as conn:
            conn.execute("create extension pg_cachelab")
            conn.execute("create extension pg_buffercache")
            conn.execute("create table accounts as select g as id, repeat('x', 200) as filler"
                         " from generate_series(1, 20000) g")  # fmt: skip
            conn.execute("create index accounts_id on accounts (id)")
            # the index build bypasses shared_buffers: read it once so it is there too
            conn.execute("set enable_seqscan = off")
            conn.execute("select sum(id) from accounts where id <= 20000")
            conn.execute("checkpoint")
            captured = {"facts": list(conn.execute(buffercache._SERVER_FACTS).fetchone())}
            for name, rows in (("extension", buffercache._EXTENSION_ROWS),
                               ("pg_buffercache", buffercache._VIEW_ROWS)):  # fmt: skip
                query = sql.SQL(buffercache._NAMED_ROWS).format(
                    rows=sql.SQL(rows).format(mode=sql.Literal("consistent"))
                )
                captured[name] = [list(row) for row in conn.execute(query).fetchall()]
            if install.major >= 16:
                captured["summary"] = list(conn.execute(buffercache._SUMMARY).fetchone())
            if install.major >= 17:
                captured["usage_counts"] = [
                    list(row) for row in conn.execute(buffercache._USAGE_COUNTS).fetchall()
                ]
        (out_dir / f"rows-{label}.json").write_text(json.dumps(captured, indent=1) + "\n")
        shutil.copyfile(cluster.data_dir / SETTINGS_FILE, out_dir / f"{SETTINGS_FILE}-{label}")


if __name__ == "__main__":
    capture(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
