"""`pgcachelab runs`: the runs in the store."""

from pgcachelab.cli.options import DEFAULT_LAB_DIR, LabDir, StoreOption
from pgcachelab.cli.output import echo_text
from pgcachelab.cli.stores import existing_store


def list_runs(lab_dir: LabDir = DEFAULT_LAB_DIR, store: StoreOption = None) -> None:
    """List the runs in the store."""
    from pgcachelab.report.tables import runs_table

    echo_text(runs_table(existing_store(lab_dir, store)))
