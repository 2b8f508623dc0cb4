"""`pgcachelab compare RUN_A RUN_B`: run B against run A, point by point."""

import sys
from pathlib import Path
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


def compare(
    run_a: Annotated[str, typer.Argument(help="The baseline run (A): run id, or 'last'.")],
    run_b: Annotated[str, typer.Argument(help="The run compared with it (B).")],
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store: StoreOption = None,
    store_b: Annotated[
        str | None,
        typer.Option(help="Read run B from this store instead (default: --store's)."),
    ] = None,
    format: Annotated[
        str | None, format_option("text (or table), json or markdown (default text).")
    ] = None,
    json_output: JsonOption = False,
    html: Annotated[
        Path | None, typer.Option(help="Also write a self-contained HTML page with a chart.")
    ] = None,
) -> None:
    """B/A per matched point with 95% intervals, and what differs besides the parameters."""
    from pgcachelab.analysis.compare_store import load_comparison
    from pgcachelab.exporters import json, markdown, text
    from pgcachelab.spec.load import stored_spec

    offered = {"text": text.comparison, "json": json.comparison, "markdown": markdown.comparison}
    export = output_format("compare", format, json_output, offered, "text")
    results_a = existing_store(lab_dir, store)
    results_b = existing_store(lab_dir, store_b) if store_b else results_a
    a = run_of(results_a, run_a)
    b = run_of(results_b, run_b)
    spec_a, spec_b = (stored_spec(run.spec_text, run.spec_path) for run in (a, b))
    workloads = (spec_a.workload if spec_a else None, spec_b.workload if spec_b else None)
    comparison = load_comparison(results_a, a.run_id, results_b, b.run_id, workloads)
    export(comparison, sys.stdout)
    if html is not None:
        from pgcachelab.report.compare_html import render_html

        typer.echo(f"wrote {render_html(comparison, html).resolve()}", err=True)
