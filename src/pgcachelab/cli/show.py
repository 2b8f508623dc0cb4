"""`pgcachelab show RUN`: a run's points and measurements as a table."""

from typing import Annotated

import typer

from pgcachelab.cli.options import DEFAULT_LAB_DIR, LabDir, StoreOption
from pgcachelab.cli.output import echo_text
from pgcachelab.cli.stores import existing_store, run_of


def show(
    run_id: Annotated[str, typer.Argument(help="Run id, or 'last'.")],
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store: StoreOption = None,
) -> None:
    """Print a run's points and measurements as a table."""
    from pgcachelab.studies.pages import run_text_table

    results = existing_store(lab_dir, store)
    echo_text(run_text_table(results, run_of(results, run_id).run_id))
