"""`pgcachelab extension install`: build the lab's C extension pg_cachelab and install it."""

from typing import Annotated

import typer

HELP = "The lab's C extension pg_cachelab: build and install it."


def install(
    pg_bin: Annotated[
        str | None,
        typer.Option(help="bin directory of the PostgreSQL to build for, or a major version."),
    ] = None,
) -> None:
    """Build pg_cachelab (PGXS) and install it where the lab's servers of that install load it."""
    from pgcachelab.clusters.binaries import find_install
    from pgcachelab.clusters.extension import install_for_lab
    from pgcachelab.clusters.installs import resolve

    install = find_install(resolve(pg_bin) if pg_bin else None)
    for placed in install_for_lab(install):
        typer.echo(str(placed.library))
    typer.echo(
        f"pg_cachelab installed for PostgreSQL {install.version};"
        " in a database: CREATE EXTENSION pg_cachelab;",
        err=True,
    )
