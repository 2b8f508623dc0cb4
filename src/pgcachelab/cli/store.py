"""`pgcachelab store copy`: runs from one results store to another."""

from typing import Annotated

import typer

HELP = "Results stores: copy runs between SQLite files and databases."


def copy(
    source: Annotated[
        str, typer.Option("--from", help="The store to read: postgresql://..., or a SQLite file.")
    ],
    destination: Annotated[str, typer.Option("--to", help="The store to write (created if new).")],
    run_ids: Annotated[
        list[str] | None, typer.Argument(help="Runs to copy (default: every run).")
    ] = None,
) -> None:
    """Copy runs with everything they hold; a run copied again is brought up to date, never
    duplicated."""
    from pgcachelab.store.copy import copy_runs, runs_to_copy
    from pgcachelab.store.location import parse_store
    from pgcachelab.store.open import open_store

    source_location = parse_store(source, "--from")
    destination_location = parse_store(destination, "--to")
    reading = open_store(source_location, create=False, option="--from")
    runs_to_copy(reading, run_ids or [])
    writing = open_store(destination_location, option="--to")
    try:
        result = copy_runs(reading, writing, run_ids or [])
    finally:
        reading.close()
        writing.close()
    typer.echo(
        f"copied {len(result.new)} new run(s) and brought {len(result.updated)} up to date"
        f" ({result.measurements} measurements) from {source_location.masked()}"
        f" to {destination_location.masked()}"
    )
