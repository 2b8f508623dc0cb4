"""`pgcachelab advise RUN`: the settings a stored run's measurements favour, and their limits."""

from typing import Annotated

import typer

from pgcachelab.cli.options import DEFAULT_LAB_DIR, LabDir, StoreOption
from pgcachelab.cli.stores import existing_store, run_of
from pgcachelab.printable import printable


def advise(
    run_id: Annotated[str, typer.Argument(help="Run id, or 'last'.")],
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store: StoreOption = None,
) -> None:
    """The settings a stored run favours, with 95% intervals, and what it cannot tell."""
    from pgcachelab.analysis.run_data import load_run
    from pgcachelab.studies.registry import advise as run_advice

    results = existing_store(lab_dir, store)
    run = run_of(results, run_id)
    data = load_run(results, run.run_id)
    typer.echo(printable(f"run {run.run_id} ({run.name}): what this run shows"))
    for item in run_advice(data):
        where = f" [{item.cell}]" if item.cell else ""
        typer.echo(printable(f"- {item.topic}{where}: {item.recommendation}"))
        typer.echo(printable(f"    evidence: {item.evidence}"))
        for caveat in item.caveats:
            typer.echo(printable(f"    cannot tell: {caveat}"))
