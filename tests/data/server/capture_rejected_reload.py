"""Capture what a server says when a reload rejects a value, for the pure tests.

Run as root from the repository:
    .venv/bin/python tests/data/server/capture_rejected_reload.py 9.6 18
For each major version: a cluster starts with checkpoint_timeout = 5min, then reloads with "64MB"
and TimeZone = "Mars/Olympus"; rejected-reload-MAJOR.json keeps the server log of the reload and
the rows the lab reads back (pg_settings, pg_file_settings of its settings file).
"""

import json
import sys
from pathlib import Path

from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.installs import resolve
from pgcachelab.clusters.managed import SETTINGS_FILE, ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user

HERE = Path(__file__).parent
ASKED = {"checkpoint_timeout": "64MB", "TimeZone": "Mars/Olympus", "work_mem": "1024kB"}

for major in sys.argv[1:]:
    user = server_user()
    install = install_usable_by(find_install(resolve(major)), user)
    with ManagedCluster.create(install, user) as cluster:
        cluster.apply_settings({"checkpoint_timeout": "5min", "work_mem": "4MB"})
        offset = cluster.log_path.stat().st_size
        cluster._write_settings_file(ASKED)
        with cluster.connect() as conn:
            before = conn.execute("select pg_conf_load_time()").fetchone()[0]
        cluster._reload(before)
        with cluster.connect() as conn:
            pg_settings = conn.execute(
                "select name, setting, unit, vartype, source from pg_settings"
                " where lower(name) = any(%s)", [[n.lower() for n in ASKED]]
            ).fetchall()  # fmt: skip
            file_settings = conn.execute(
                "select name, applied, error from pg_file_settings where sourcefile like %s"
                " order by seqno", [f"%/{SETTINGS_FILE}"]
            ).fetchall()  # fmt: skip
        log = cluster._log_since(offset).replace(str(cluster.work_dir), "WORK_DIR")
    out = HERE / f"rejected-reload-{major}.json"
    out.write_text(json.dumps({"version": install.version, "asked": ASKED, "log": log,
                               "pg_settings": pg_settings, "pg_file_settings": file_settings},
                              indent=1) + "\n")  # fmt: skip
    print(f"{out}: PostgreSQL {install.version}")
