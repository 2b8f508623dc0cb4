"""Opening the store a location names: the SQLite file or the PostgreSQL database."""

import errno
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from pgcachelab.errors import UserError
from pgcachelab.failures import os_error_line, store_error_line
from pgcachelab.store.location import StoreLocation

if TYPE_CHECKING:  # imported where it opens one: psycopg only for a PostgreSQL store
    from pgcachelab.store.postgresql import PostgresResultStore
    from pgcachelab.store.sqlite import SqliteResultStore


def _why_not_writable(path: Path) -> tuple[str, str] | None:
    """SQLite says only "unable to open database file": find the reason it hides."""
    directory = path.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return os_error_line(OSError(errno.EROFS, os.strerror(errno.EROFS)))
    except OSError:
        return None
    if not os.access(directory, os.W_OK):
        return os_error_line(OSError(errno.EACCES, os.strerror(errno.EACCES)))
    return None


def open_store(
    location: StoreLocation,
    create: bool = True,
    option: str = "--store",
    read_only: bool | None = None,  # default: when not creating, only read
) -> "SqliteResultStore | PostgresResultStore":
    """A SqliteResultStore or PostgresResultStore; with create=False a store with no results is a
    UserError instead of a new empty store."""
    if location.kind == "postgresql":
        from pgcachelab.store.postgresql import PostgresResultStore

        assert location.url is not None  # a postgresql location is its URL
        return PostgresResultStore(location.url, create=create, option=option)
    from pgcachelab.store.sqlite import SqliteResultStore

    path = location.path
    assert path is not None  # a sqlite location is its file
    if not create and not path.is_file():
        raise UserError(
            f"{option}: no results in {str(path)!r}",
            "run an experiment first, or point it at the file or lab directory that has them",
        )
    try:
        if (not create) if read_only is None else read_only:
            # Only read: nothing is written, so a full or read-only disk does not matter.
            return SqliteResultStore.open_for_reading(path)
        return SqliteResultStore(path)
    except sqlite3.Error as error:
        message, hint = store_error_line(error, repr(str(path)))
        unwritable = _why_not_writable(path)
        if unwritable is not None and not (not create if read_only is None else read_only):
            message, hint = f"{str(path)!r}: {unwritable[0]}", unwritable[1]
        raise UserError(f"{option}: {message.removeprefix('the results store ')}", hint) from None
