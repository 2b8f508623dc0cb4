"""Markdown for documents and pull requests: `compare`'s tables as GitHub renders them."""

from typing import TextIO

from pgcachelab.printable import printable_lines


def comparison(comparison, out: TextIO) -> None:
    """`compare`: the same tables as the text, in Markdown."""
    from pgcachelab.report.compare_text import render_markdown

    out.write(printable_lines(render_markdown(comparison)) + "\n")
