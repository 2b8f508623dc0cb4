"""`pgcachelab report RUN`: a run's report folder, or one point's run second by second."""

from pathlib import Path
from typing import Annotated

import typer

from pgcachelab.cli.options import DEFAULT_LAB_DIR, LabDir, StoreOption, whole_number_option
from pgcachelab.cli.stores import existing_store, run_of
from pgcachelab.errors import UserError
from pgcachelab.quantities import INT_MAX


def report(
    run_id: Annotated[str, typer.Argument(help="Run id, or 'last'.")],
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    output: Annotated[Path | None, typer.Option(help="Folder to write the report in.")] = None,
    store: StoreOption = None,
    point: Annotated[
        int | None,
        whole_number_option(
            "--point",
            0,
            INT_MAX,
            "--point 0",
            "Plot this point's run second by second instead (see `show`).",
        ),
    ] = None,
    repetition: Annotated[
        int | None,
        whole_number_option(
            "--repetition",
            0,
            INT_MAX,
            "--repetition 0",
            "With --point: this repetition (from 0); default its median one.",
        ),
    ] = None,
) -> None:
    """Write a run's report folder (PNG and SVG plots, one self-contained HTML page)."""
    results = existing_store(lab_dir, store)
    run = run_of(results, run_id)
    out_dir = output or lab_dir / "reports" / run.run_id
    if point is not None:
        from pgcachelab.report.point_series import (
            SERIES_METRICS,
            chosen_measurement,
            point_series_plot,
        )

        measurements = results.measurements(run.run_id, SERIES_METRICS)
        measurement = chosen_measurement(measurements, point, repetition)
        labels = {p.point_index: p.label for p in results.points(run.run_id)}
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = point_series_plot(measurement, labels.get(point, str(point)), out_dir)
        typer.echo(str(paths[0].resolve()))
        return
    if repetition is not None:
        raise UserError("--repetition: only with --point", "add --point N (see `show`)")
    from pgcachelab.studies.pages import build_report

    html = build_report(results, run.run_id, out_dir)
    typer.echo(str(html.resolve()))
