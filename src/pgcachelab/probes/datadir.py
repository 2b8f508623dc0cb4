"""Whether a connected server's data directory is readable here, so mincore can see its files.

Shared by `inspect` and the sampling during experiments: a server counts as local when it is
reached by a Unix socket or loopback and its pg_control carries the server's own system
identifier (a same-named directory of another cluster must not be measured by mistake).
"""

import os
import struct
from pathlib import Path

import psycopg

from pgcachelab.clusters.client import one_row

LOCAL_HOSTS = ("", "localhost", "127.0.0.1", "::1")


def is_local_host(host: str | None) -> bool:
    """True for a Unix socket directory or a loopback name: the server runs on this machine."""
    return host is None or host.startswith("/") or host.startswith("@") or host in LOCAL_HOSTS


def reason(error: Exception) -> str:
    # libpq's first line names the socket or host that failed, the next says why: keep both.
    return " ".join(str(error).split()) or "refused"


def _system_identifier(data_dir: Path) -> int:
    """The first field of global/pg_control, in the machine's byte order."""
    with open(data_dir / "global" / "pg_control", "rb") as control:
        return struct.unpack("=Q", control.read(8))[0]


def local_data_dir(conn: psycopg.Connection) -> tuple[Path | None, str | None]:
    """(data directory, None) when the connected server's files are readable here, else
    (None, why not): the server must be local and its pg_control must be the server's own."""
    if not is_local_host(conn.info.host):
        return None, f"the server is on {conn.info.host}, not on this machine"
    try:
        data_dir = Path(one_row(conn.execute("show data_directory"))[0])
        server_id = one_row(conn.execute("select system_identifier from pg_control_system()"))
    except psycopg.Error as error:
        return None, f"the server does not tell its data directory to this role ({reason(error)})"
    try:
        if _system_identifier(data_dir) != int(server_id[0]):
            return None, f"{data_dir} here is another cluster's data directory"
    except OSError as error:
        return None, f"its data directory is not readable here ({error.strerror}: {data_dir})"
    return data_dir, None


def os_cache_note(data_dir: Path | None, why_not: str | None) -> str | None:
    """None when the OS page cache can be read exactly, else what to tell the reader."""
    from pgcachelab.probes.pagecache import residency_reliable

    if data_dir is None:
        return f"OS page cache not shown: {why_not}"
    if not os.access(data_dir, os.R_OK | os.X_OK):
        return f"OS page cache not shown: {data_dir} is not readable by this user"
    if not residency_reliable(data_dir):
        return "OS page cache may be overstated: mincore counts pages only for the files' owner"
    return None


def os_cache_readable(note: str | None) -> bool:
    """Whether to run mincore at all under `note` (an overstated figure is still shown)."""
    return note is None or note.startswith("OS page cache may")


def fill_os_cache(snapshot, data_dir: Path) -> None:
    """Each named relation fork's bytes in the OS page cache (mincore over its segments)."""
    from pgcachelab.probes.pagecache import relation_residency_bytes

    for relation in snapshot.relations:
        if relation.file_path is not None:
            relation.os_cached_bytes = relation_residency_bytes(
                data_dir, relation.file_path, relation.fork
            )
