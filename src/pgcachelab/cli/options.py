"""Options more than one command takes, declared once: their name, environment variable and
help text are the same wherever they appear."""

from pathlib import Path
from typing import Annotated

import typer

LAB_DIR_HELP = "Where results and reports live."
DEFAULT_LAB_DIR = Path("lab")


def lab_dir_option(help: str = LAB_DIR_HELP):
    """--lab-dir ($PGCACHELAB_DIR); a command that reads it for something else says so."""
    return typer.Option("--lab-dir", envvar="PGCACHELAB_DIR", help=help)


LabDir = Annotated[Path, lab_dir_option()]

StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Where runs are kept: postgresql://user@host/dbname, or a SQLite file or lab"
        " directory. Default: $PGCACHELAB_STORE, else results.sqlite in --lab-dir.",
        show_default=False,
    ),
]
