"""The environment's failures at the edge of the CLI, as one line and a hint. Pure functions.

An unwritable --lab-dir, a full disk, a store that is not a store, a results database whose
connection dropped: none of these is a bug of the lab, and none deserves a traceback (issue 18).
The message names the path or the store, then the cause; the hint says what to try.
"""

import errno

_HINTS_BY_ERRNO: dict[int | None, str] = {
    errno.ENOSPC: "free space on that file system, or write somewhere else (--lab-dir, --output,"
    " --store)",
    errno.EDQUOT: "free space within your quota, or write somewhere else",
    errno.EROFS: "that file system is read-only: give a writable --lab-dir, --output or --store",
    errno.EACCES: "check the permissions of that path, or use another one",
    errno.EPERM: "check the permissions of that path, or use another one",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of that path is a file, not a directory: check the path",
    errno.EISDIR: "that path is a directory: give a file",
    errno.EEXIST: "remove it or choose another path",
}


def os_error_line(error: OSError) -> tuple[str, str]:
    """(message, hint) for an OSError: the path(s) it names and the system's reason."""
    reason = error.strerror or str(error) or type(error).__name__
    paths = [str(p) for p in (error.filename, error.filename2) if p is not None]
    where = " -> ".join(paths)
    message = f"{where}: {reason.lower()}" if where else reason.lower()
    return message, _HINTS_BY_ERRNO.get(error.errno, "check the path and the disk")


REASON_CHARS = 400  # a server error's CONTEXT can quote a whole function body


def database_reason(error: Exception) -> str:
    """libpq's or SQLite's reason on one line: libpq's first line says which socket or host
    failed, its second why, so neither is dropped; a server error's CONTEXT (where in a
    function it happened) is not the user's, and the line stays short."""
    lines = []
    for line in str(error).splitlines():
        if line.lstrip().startswith("CONTEXT:"):
            break
        lines.append(line)
    reason = " ".join(" ".join(lines).split()) or type(error).__name__
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"


def store_error_line(error: Exception, store_location: str | None) -> tuple[str, str]:
    """(message, hint) for a sqlite3 or psycopg error from the results store."""
    where = f"the results store {store_location}" if store_location else "the results store"
    reason = database_reason(error)
    lowered = reason.lower()
    if "not a database" in lowered or "malformed" in lowered or "not a pgcachelab store" in lowered:
        hint = "that file is not a pgcachelab store: give a results.sqlite or a lab directory"
    elif "disk is full" in lowered or "readonly" in lowered or "read-only" in lowered:
        hint = "free space there, or give a writable --lab-dir or --store"
    elif "unable to open" in lowered:
        hint = "check that the path and its directory exist and may be read (and written)"
    else:
        hint = "check the store (its server, its file) and run the command again"
    return f"{where}: {reason}", hint


def decode_error_line(error: UnicodeDecodeError, path: str | None) -> tuple[str, str]:
    where = f"{path}: " if path else ""
    return (
        f"{where}not a text file ({error.reason} at byte {error.start})",
        "give a TOML experiment spec",
    )
