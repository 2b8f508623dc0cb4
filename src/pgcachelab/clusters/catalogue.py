"""The settings catalogue of an install, from pg_settings of a throwaway cluster, cached.

`postgres --describe-config` needs no cluster but has neither units nor enum values, so
"32s" for shared_buffers or "extreme" for wal_level passed it, and their points failed only at
server start (issue 16). pg_settings has both: the first time an install is used, a tiny
cluster of it is initdb'd, started, asked, and removed (a few seconds); the rows are kept in
the lab's cache, keyed by the install's bin directory, version and postgres binary, so a
rebuilt or upgraded install is asked again.
"""

import hashlib
import json
import os
from pathlib import Path

import psycopg

from pgcachelab.clusters.binaries import PgInstall
from pgcachelab.clusters.guc import SettingInfo, catalogue_from_pg_settings
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user

CATALOGUE_QUERY = (
    "select name, context, vartype, unit, min_val, max_val, enumvals from pg_settings order by name"
)
# Version of the cached file's layout: a change of CATALOGUE_QUERY's columns bumps it.
CACHE_FORMAT = 1


def read_catalogue_rows(conn: psycopg.Connection) -> list[tuple]:
    """Rows for clusters.guc.catalogue_from_pg_settings."""
    return conn.execute(CATALOGUE_QUERY).fetchall()


def catalogue_cache_dir() -> Path:
    """$PGCACHELAB_CATALOGUE_CACHE, else beside the installs' cache (root) or in ~/.cache."""
    if os.environ.get("PGCACHELAB_CATALOGUE_CACHE"):
        return Path(os.environ["PGCACHELAB_CATALOGUE_CACHE"])
    if os.geteuid() == 0:
        return Path("/var/cache/pgcachelab/catalogue")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pgcachelab" / "catalogue"


def cache_key(install: PgInstall) -> str:
    """'18.6-<digest>': the digest covers the bin directory and the postgres binary's size and
    modification time."""
    postgres = install.tool("postgres").stat()
    identity = f"{install.bin_dir}\0{install.version}\0{postgres.st_size}\0{postgres.st_mtime_ns}"
    return f"{install.version}-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"


def install_catalogue(install: PgInstall) -> dict[str, SettingInfo]:
    """The install's pg_settings catalogue: from the cache, else from a throwaway cluster.

    Raises clusters.managed.ClusterError when that cluster cannot initdb or start.
    """
    path = catalogue_cache_dir() / f"{cache_key(install)}.json"
    try:
        cached = json.loads(path.read_text())
        if cached.get("format") == CACHE_FORMAT:
            return catalogue_from_pg_settings(cached["rows"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent or unreadable: ask the server again
    rows = _rows_from_throwaway_cluster(install)
    _write_atomically(
        path,
        {
            "format": CACHE_FORMAT,
            "version": install.version,
            "bin_dir": str(install.bin_dir),
            "rows": rows,
        },
    )
    return catalogue_from_pg_settings(rows)


def _rows_from_throwaway_cluster(install: PgInstall) -> list[list]:
    user = server_user()
    with ManagedCluster.create(install_usable_by(install, user), user) as cluster:
        cluster.apply_settings({})
        with cluster.connect() as conn:
            return [list(row) for row in read_catalogue_rows(conn)]


def _write_atomically(path: Path, content: dict) -> None:
    """A cache another lab may read at the same time: write aside, then rename."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(content, indent=0))
        partial.replace(path)
    except OSError:
        pass  # an unwritable cache costs a throwaway cluster next time, nothing else
