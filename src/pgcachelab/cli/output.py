"""Writing for a reader: results on stdout, notes on stderr, control characters escaped."""

import typer


def echo_text(text: str) -> None:
    """Text for a reader: names and labels from specs and stores with their control
    characters escaped (JSON escapes its own)."""
    from pgcachelab.printable import printable_lines

    typer.echo(printable_lines(text))


def note(line: str) -> None:
    from pgcachelab.printable import printable

    typer.echo(printable(line), err=True)
