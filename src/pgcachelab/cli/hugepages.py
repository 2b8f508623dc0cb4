"""`pgcachelab hugepages`: the huge pages a configuration needs, asked of a throwaway cluster."""

from typing import Annotated

import typer


def hugepages(
    shared_buffers: Annotated[
        str | None, typer.Option(help="shared_buffers to size for, e.g. 4GB (default: 128MB).")
    ] = None,
    pg_bin: Annotated[
        str | None, typer.Option(help="bin directory of the PostgreSQL to ask, or a major version.")
    ] = None,
) -> None:
    """Print the huge pages a configuration needs, from a throwaway cluster that is removed."""
    from pgcachelab import quantities
    from pgcachelab.clusters.binaries import find_install
    from pgcachelab.clusters.installs import resolve
    from pgcachelab.clusters.sizing import size_huge_pages
    from pgcachelab.units import format_bytes

    settings = {}
    if shared_buffers is not None:
        amount = quantities.size(
            shared_buffers, "--shared-buffers", 128 * 1024, example="--shared-buffers 4GB"
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
