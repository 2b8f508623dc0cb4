"""`pgcachelab doctor`: read the host and a server, change nothing."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from pgcachelab.cli.options import (
    DEFAULT_LAB_DIR,
    JsonOption,
    format_option,
    lab_dir_option,
    output_format,
)
from pgcachelab.errors import UserError


def doctor(
    dsn: Annotated[
        str | None, typer.Option(help="Also check this server (read only), e.g. 'dbname=postgres'.")
    ] = None,
    format: Annotated[str | None, format_option("text or json (default text).")] = None,
    json_output: JsonOption = False,
    fail_on: Annotated[
        str,
        typer.Option(help="Exit 1 when a finding at or above this exists: info|warning|critical."),
    ] = "critical",
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Data directory whose disk to check (found from --dsn when local)."),
    ] = None,
    lab_dir: Annotated[
        Path,
        lab_dir_option("Lab directory whose cache-split runs are evidence for shared_buffers."),
    ] = DEFAULT_LAB_DIR,
    root: Annotated[Path, typer.Option(hidden=True, help="Read /proc and /sys under this.")] = Path(
        "/"
    ),
) -> None:
    """Check the host (and with --dsn a server) against what the seeds and the docs know."""
    from pgcachelab.doctor.diagnose import diagnose
    from pgcachelab.doctor.findings import FAIL_ON_CHOICES, fails
    from pgcachelab.exporters import json, text

    def as_text(diagnosis, out):
        text.diagnosis(diagnosis, out, hint_without_server=dsn is None)

    export = output_format(
        "doctor", format, json_output, {"text": as_text, "json": json.diagnosis}, "text"
    )
    if fail_on not in FAIL_ON_CHOICES:
        raise UserError(f"--fail-on: invalid value {fail_on!r}", "use info, warning or critical")
    if data_dir is not None and not data_dir.is_dir():
        raise UserError(f"--data-dir: no directory {str(data_dir)!r}", "name an existing directory")
    diagnosis = diagnose(root, dsn, data_dir, lab_dir)
    export(diagnosis, sys.stdout)
    if fails(diagnosis.outcomes, fail_on):
        raise typer.Exit(1)
