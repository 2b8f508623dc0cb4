"""Opening the store a location names: the SQLite file or the PostgreSQL database."""

import sqlite3

from pgcachelab.errors import UserError
from pgcachelab.failures import store_error_line
from pgcachelab.store.location import StoreLocation


def open_store(
    location: StoreLocation,
    create: bool = True,
    option: str = "--store",
    read_only: bool | None = None,  # default: when not creating, only read
):
    """A ResultStore or PostgresResultStore; with create=False a store with no results is a
    UserError instead of a new empty store."""
    if location.kind == "postgresql":
        from pgcachelab.store.postgresql import PostgresResultStore

        return PostgresResultStore(location.url, create=create, option=option)
    from pgcachelab.store.sqlite import ResultStore

    if not create and not location.path.is_file():
        raise UserError(
            f"{option}: no results in {str(location.path)!r}",
            "run an experiment first, or point it at the file or lab directory that has them",
        )
    try:
        if (not create) if read_only is None else read_only:
            # Only read: nothing is written, so a full or read-only disk does not matter.
            return ResultStore.open_for_reading(location.path)
        return ResultStore(location.path)
    except sqlite3.Error as error:
        message, hint = store_error_line(error, repr(str(location.path)))
        raise UserError(f"{option}: {message.removeprefix('the results store ')}", hint) from None
