"""`pgcachelab doctor`: read the host and a server, change nothing."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from pgcachelab.cli.options import DEFAULT_LAB_DIR, lab_dir_option
from pgcachelab.errors import UserError


def doctor(
    dsn: Annotated[
        str | None, typer.Option(help="Also check this server (read only), e.g. 'dbname=postgres'.")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
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
    from pgcachelab.doctor.render import as_json, print_human

    if fail_on not in FAIL_ON_CHOICES:
        raise UserError(f"--fail-on: invalid value {fail_on!r}", "use info, warning or critical")
    if data_dir is not None and not data_dir.is_dir():
        raise UserError(f"--data-dir: no directory {str(data_dir)!r}", "name an existing directory")
    diagnosis = diagnose(root, dsn, data_dir, lab_dir)
    if json_output:
        typer.echo(as_json(diagnosis))
    else:
        print_human(diagnosis, sys.stdout, hint_without_server=dsn is None)
    if fails(diagnosis.outcomes, fail_on):
        raise typer.Exit(1)
