"""Options more than one command takes, declared once: their name, environment variable and
help text are the same wherever they appear."""

from pathlib import Path
from typing import Annotated, Any

import typer

from pgcachelab.errors import UserError

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


def whole_number_option(name: str, low: int, high: int, example: str, help: str) -> Any:
    """An integer option read by quantities.whole_number: ASCII digits from `low` to `high`, or
    one line naming the option and its range (click's int() took "٣" and 400 digits)."""
    from pgcachelab.quantities import whole_number

    def integer(text: str) -> int:
        return whole_number(text, name, low, high, example)

    return typer.Option(name, parser=integer, metavar="INTEGER", help=help)


def number_option(
    name: str, low: float, high: float, example: str, help: str, above: bool = False
) -> Any:
    """A number option from `low` (or `above` it) to `high`, read by quantities.number: finite,
    ASCII (click's float() took "nan" and "inf")."""
    from pgcachelab.quantities import number

    def decimal(text: str) -> float:
        return number(text, name, low, high, above=above, example=example)

    return typer.Option(name, parser=decimal, metavar="NUMBER", help=help)


# Every output format a command may offer, in the order help and errors list them.
OUTPUT_FORMATS = ("text", "json", "csv", "markdown")
FORMAT_ALIASES = {"table": "text"}  # compare's name for text before issue 50: old scripts work


def format_option(offered: str) -> Any:
    """--format, with the formats the command offers and its default in the help."""
    return typer.Option("--format", metavar="FORMAT", help=offered, show_default=False)


JsonOption = Annotated[bool, typer.Option("--json", help="The same as --format json.")]


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def output_format(
    command: str, given: str | None, json_alias: bool, offered: dict[str, Any], default: str
) -> Any:
    """The exporter `command` writes with: --format (or its alias --json) among the formats the
    command `offered` (format -> exporter function); `default` when neither is given."""
    if json_alias and given is not None and FORMAT_ALIASES.get(given, given) != "json":
        raise UserError(
            f"--json with --format {given!r}", "give one: --json is the same as --format json"
        )
    chosen = "json" if json_alias else FORMAT_ALIASES.get(given, given) if given else default
    if chosen not in offered:
        what = "unknown format" if chosen not in OUTPUT_FORMATS else f"{command} cannot write"
        raise UserError(f"--format: {what} {given!r}", f"use {_listed(list(offered))}")
    return offered[chosen]
