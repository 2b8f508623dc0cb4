"""Opening the results store a command names (--store, the spec's `store`, $PGCACHELAB_STORE
or --lab-dir), and finding a run in it."""

import os
from pathlib import Path

from pgcachelab.errors import UserError

# The store the command opened last: a sqlite3 or psycopg error at the edge names it (main).
opened_location: str | None = None


def location_of(lab_dir: Path, store: str | None, spec_store: str | None = None):
    """(where the runs are, the option or key that said so: for messages)."""
    from pgcachelab.store.location import ENV_VAR, choose_store

    location = choose_store(store, spec_store, os.environ.get(ENV_VAR), lab_dir)
    if store:
        return location, "--store"
    if spec_store:
        return location, "store"
    return location, ENV_VAR if os.environ.get(ENV_VAR) else "--lab-dir"


def writable_store(lab_dir: Path, store: str | None = None, spec_store: str | None = None):
    """The store to write runs to, created if new."""
    from pgcachelab.store.open import open_store

    global opened_location
    location, option = location_of(lab_dir, store, spec_store)
    opened_location = location.masked()
    return open_store(location, option=option)


def existing_store(lab_dir: Path, store: str | None = None):
    """The store to read runs from, opened read-only; one that does not exist is a user error."""
    from pgcachelab.store.open import open_store

    global opened_location
    location, option = location_of(lab_dir, store)
    opened_location = location.masked()
    return open_store(location, create=False, option=option)


def run_of(store, run_id: str):
    """The run `run_id` names in `store` ('last': the newest)."""
    if run_id == "last":
        runs = store.runs()
        if not runs:
            raise UserError(f"no runs in {store.location}", "run an experiment first")
        return runs[-1]
    run = store.run(run_id)
    if run is None:
        raise UserError(f"no run {run_id!r} in {store.location}", "list runs with: pgcachelab runs")
    return run
