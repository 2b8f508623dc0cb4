"""`pgcachelab doctor` and `pgcachelab hugepages`: read the host and a server, change nothing."""

import sys
from pathlib import Path
from typing import Annotated

import typer

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
        typer.Option(
            envvar="PGCACHELAB_DIR",
            help="Lab directory whose cache-split runs are evidence for shared_buffers.",
        ),
    ] = Path("lab"),
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


def hugepages(
    shared_buffers: Annotated[
        str | None, typer.Option(help="shared_buffers to size for, e.g. 4GB (default: 128MB).")
    ] = None,
    pg_bin: Annotated[
        str | None, typer.Option(help="bin directory of the PostgreSQL to ask, or a major version.")
    ] = None,
) -> None:
    """Print the huge pages a configuration needs, from a throwaway cluster that is removed."""
    from pgcachelab.clusters.binaries import find_install
    from pgcachelab.clusters.installs import resolve
    from pgcachelab.clusters.sizing import size_huge_pages
    from pgcachelab.units import format_bytes, parse_bytes

    settings = {}
    if shared_buffers is not None:
        try:
            amount = parse_bytes(shared_buffers)
        except ValueError as error:
            raise UserError(
                f"--shared-buffers: invalid value {shared_buffers!r}: {error}",
                "e.g. --shared-buffers 4GB",
            ) from None
        if amount < 128 * 1024:
            raise UserError(
                f"--shared-buffers: invalid value {shared_buffers!r}: below 128kB",
                "e.g. --shared-buffers 4GB",
            )
        settings["shared_buffers"] = f"{amount // 1024}kB"
    install = find_install(resolve(pg_bin) if pg_bin else None)
    sizing = size_huge_pages(install, settings)
    size = format_bytes(sizing.pages_needed * sizing.page_size_bytes)
    typer.echo(
        f"{sizing.pages_needed} huge pages of {format_bytes(sizing.page_size_bytes)} ({size}) "
        f"for shared_buffers = {shared_buffers or '128MB'} with PostgreSQL "
        f"{sizing.server_version}; vm.nr_hugepages is {sizing.nr_hugepages_now} now"
    )
    typer.echo(f"fix: sysctl -w vm.nr_hugepages={sizing.pages_needed}, then huge_pages = on")


def register(app: typer.Typer) -> None:
    app.command()(doctor)
    app.command()(hugepages)
