"""`pgcachelab export RUN`: a run's measurements on stdout as CSV or JSON."""

import sys
from typing import Annotated

import typer

from pgcachelab.cli.options import DEFAULT_LAB_DIR, LabDir, StoreOption
from pgcachelab.cli.stores import existing_store, run_of
from pgcachelab.errors import UserError


def export(
    run_id: Annotated[str, typer.Argument(help="Run id, or 'last'.")],
    format: Annotated[str, typer.Option("--format", help="csv or json.")] = "csv",
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store: StoreOption = None,
) -> None:
    """Write a run's measurements to stdout as CSV or JSON."""
    from pgcachelab.report import export as exporters

    if format not in exporters.FORMATS:
        raise UserError(f"--format: unknown format {format!r}", "use csv or json")
    results = existing_store(lab_dir, store)
    exporters.FORMATS[format](results, run_of(results, run_id).run_id, sys.stdout)
