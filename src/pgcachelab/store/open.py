"""Opening the store a location names: the SQLite file or the PostgreSQL database."""

from pgcachelab.errors import UserError
from pgcachelab.store.location import StoreLocation


def open_store(location: StoreLocation, create: bool = True, option: str = "--store"):
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
    return ResultStore(location.path)
