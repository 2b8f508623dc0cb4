"""`pgcachelab advise RUN`: the settings a stored run's measurements favour, and their limits."""

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from pgcachelab.printable import printable

LAB_DIR_OPTION = typer.Option(
    "--lab-dir", envvar="PGCACHELAB_DIR", help="Where results and reports live."
)


def register(app: typer.Typer, existing_store: Callable, run_of: Callable, store_option) -> None:
    """Add the command; the store helpers are main's, passed in to avoid a circular import."""

    @app.command()
    def advise(
        run_id: Annotated[str, typer.Argument(help="Run id, or 'last'.")],
        lab_dir: Annotated[Path, LAB_DIR_OPTION] = Path("lab"),
        store: store_option = None,
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
