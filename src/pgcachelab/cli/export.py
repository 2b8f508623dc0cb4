"""`pgcachelab export RUN`: a run's measurements on stdout as CSV or JSON."""

import sys
from typing import Annotated

import typer

from pgcachelab.cli.options import (
    DEFAULT_LAB_DIR,
    JsonOption,
    LabDir,
    StoreOption,
    format_option,
    output_format,
)
from pgcachelab.cli.stores import existing_store, run_of


def export(
    run_id: Annotated[str, typer.Argument(help="Run id, or 'last'.")],
    format: Annotated[str | None, format_option("csv or json (default csv).")] = None,
    json_output: JsonOption = False,
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store: StoreOption = None,
) -> None:
    """Write a run's measurements to stdout as CSV or JSON."""
    from pgcachelab.exporters import csv, json

    offered = {"csv": csv.run_measurements, "json": json.run_measurements}
    export = output_format("export", format, json_output, offered, "csv")
    results = existing_store(lab_dir, store)
    export(results, run_of(results, run_id).run_id, sys.stdout)
