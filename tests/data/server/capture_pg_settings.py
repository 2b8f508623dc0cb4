"""Capture the pg_settings catalogue of installs the lab has, for the pure tests.

Run as root from the repository:
    .venv/bin/python tests/data/server/capture_pg_settings.py 9.6 15 18
Each major version gives pg-settings-MAJOR.json: the rows clusters/catalogue.py reads, from a
throwaway cluster of that install (pgcachelab pg install MAJOR first, if it is missing).
"""

import json
import sys
from pathlib import Path

from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.catalogue import CATALOGUE_QUERY, _rows_from_throwaway_cluster
from pgcachelab.clusters.installs import resolve

HERE = Path(__file__).parent

for major in sys.argv[1:]:
    install = find_install(resolve(major))
    rows = _rows_from_throwaway_cluster(install)
    out = HERE / f"pg-settings-{major}.json"
    out.write_text(json.dumps({"version": install.version, "query": CATALOGUE_QUERY,
                               "rows": rows}, indent=0) + "\n")  # fmt: skip
    print(f"{out}: {len(rows)} settings of PostgreSQL {install.version}")
