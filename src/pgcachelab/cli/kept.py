"""`pgcachelab kept`: the clusters kept for --resume on this machine, and removing those that
nothing will resume."""

from typing import Annotated

import typer

from pgcachelab.cli.output import echo_text, note


def kept(
    remove: Annotated[
        bool,
        typer.Option(
            "--remove",
            help="Remove the orphaned and unknown ones (never one a run may resume or a lab uses).",
        ),
    ] = False,
) -> None:
    """List the clusters kept for --resume (cache-wash data, under /var/tmp) and their runs."""
    from pgcachelab.clusters.targets import kept_data_path
    from pgcachelab.experiments.reaping import kept_clusters, remove_kept
    from pgcachelab.units import format_bytes

    clusters = kept_clusters()
    if not clusters:
        note(f"no cluster kept for --resume in {kept_data_path()}")
        return
    rows = [("state", "size", "directory", "run or reason")]
    rows += [(c.state, format_bytes(c.size_bytes), str(c.path), c.why) for c in clusters]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    echo_text(
        "\n".join(
            "  ".join(v.ljust(w) for v, w in zip(row, [*widths, 0], strict=True)).rstrip()
            for row in rows
        )
    )
    removable = [c for c in clusters if c.removable]
    if remove:
        for cluster in removable:
            note(remove_kept(cluster))
    elif removable:
        note(
            f"{len(removable)} of them nothing will resume "
            f"({format_bytes(sum(c.size_bytes for c in removable))}): "
            "remove them with: pgcachelab kept --remove"
        )
