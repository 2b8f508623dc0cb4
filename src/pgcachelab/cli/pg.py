"""`pgcachelab pg install` and `pgcachelab pg list`: PostgreSQL server binaries."""

from typing import Annotated

import typer

HELP = "PostgreSQL versions: install and list server binaries."


def install(
    versions: Annotated[list[str], typer.Argument(help="Major versions, e.g. 9.6 10 16.")],
) -> None:
    """Fetch server binaries (zonky builds from Maven Central) into the lab's cache."""
    from pgcachelab.clusters import installs

    for version in versions:
        installs.normalise_major(version)  # every argument checked before any download
    for version in versions:
        installs.install(version, note=lambda line: typer.echo(line, err=True))


def list_installs() -> None:
    """Every PostgreSQL server the lab can use, and where it came from."""
    from pgcachelab.clusters import installs
    from pgcachelab.report.tables import format_table

    rows = [[k.major, k.version, k.source, str(k.bin_dir)] for k in installs.installed()]
    typer.echo(format_table(["major", "version", "source", "bin directory (--pg-bin)"], rows))
