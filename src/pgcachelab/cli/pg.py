"""`pgcachelab pg install` and `pgcachelab pg list`: PostgreSQL server binaries."""

from pathlib import Path
from typing import Annotated

import typer

HELP = "PostgreSQL versions: install and list server binaries."


def install(
    versions: Annotated[list[str], typer.Argument(help="Major versions, e.g. 9.6 10 16.")],
    from_source: Annotated[
        bool,
        typer.Option(
            "--from-source",
            help="Build from a release source tarball even where binaries exist.",
        ),
    ] = False,
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            help="The source tarball to build (implies --from-source; one version only).",
            metavar="TARBALL",
        ),
    ] = None,
) -> None:
    """Fetch server binaries (zonky and otj-pg-embedded builds from Maven Central: 9.3, 9.5,
    9.6 to 18) or build them from a release tarball (any version from 8.3)."""
    from pgcachelab.clusters import installs
    from pgcachelab.errors import UserError

    if source is not None:
        if len(versions) != 1:
            raise UserError(
                f"--source: one tarball builds one version, not {len(versions)}: "
                f"{' '.join(versions)}",
                "run pg install once per version",
            )
        if not source.is_file():
            raise UserError(
                f"--source: no such file {str(source)!r}",
                "name a PostgreSQL source tarball, e.g. --source postgresql-8.4.22.tar.bz2",
            )
    for version in versions:
        installs.normalise_major(version)  # every argument checked before any download
    for version in versions:
        installs.install(
            version,
            note=lambda line: typer.echo(line, err=True),
            from_source=from_source or source is not None,
            source=source,
        )


def list_installs() -> None:
    """Every PostgreSQL server the lab can use, and where it came from."""
    from pgcachelab.clusters import installs
    from pgcachelab.report.tables import format_table

    rows = [[k.major, k.version, k.source, str(k.bin_dir)] for k in installs.installed()]
    typer.echo(format_table(["major", "version", "source", "bin directory (--pg-bin)"], rows))
