"""The report's HTML templates (report/templates): one Jinja2 environment with autoescape, and
the table macro every table of the report and the compare page is rendered with.

Text handed to a template is escaped there; what is already HTML comes as `Markup`.
"""

import html
import sys
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, Template
from markupsafe import Markup

ALL_COLUMNS: Container[int] = range(sys.maxsize)


@dataclass(frozen=True)
class Row:
    """A table row: its cells (text, numbers, or Markup) and its class ("failed" or none)."""

    cells: list
    css_class: str = ""


@dataclass(frozen=True)
class _Cell:
    content: object
    tag: str = "td"
    text: bool = False


@dataclass(frozen=True)
class Section:
    """A part of the report page under its own heading; `plots` go to the page's plots."""

    title: str
    body: Markup = Markup("")
    plots: list = field(default_factory=list)
    # False where the section's plots stand for the generic ones (one line per version in
    # panels, the TPC-C ladder): the generic plots would draw every cell as a line.
    generic_plots: bool = True


def escaped(value) -> Markup:
    """As html.escape writes entities (&quot;, &#x27;), so pages read as they did before the
    templates; None is empty."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value)))


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("pgcachelab.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=escaped,
    )


def inline_svg(path: Path) -> Markup:
    """A saved SVG figure, to place in the page itself."""
    text = path.read_text()
    start = text.find("<svg")  # drop the XML prolog and doctype: invalid inside HTML
    return Markup(text[start:] if start >= 0 else text)


def macro(template_name: str, name: str) -> Callable[..., Any]:
    """A macro of a template: jinja2 makes each one an attribute of the template's module."""
    return getattr(template(template_name).module, name)


def template(name: str) -> Template:
    """A template of report/templates, e.g. to call one of its macros."""
    return _environment().get_template(name)


def render(name: str, **context) -> str:
    return template(name).render(**context)


def table(
    head: list[str] | None,
    rows: Iterable[Row | Sequence],
    text_columns: Container[int] = (),
    row_headers: bool = False,
) -> str:
    """HTML of a table whose cells are escaped unless they are Markup. `head` None: no header
    row. Columns in `text_columns` are left-aligned text; with `row_headers` each row's first
    cell is its header."""
    body = [
        Row(
            [
                _Cell(c, "th", False)
                if row_headers and i == 0
                else _Cell(c, "td", i in text_columns)
                for i, c in enumerate(row.cells)
            ],
            row.css_class,
        )
        for row in (r if isinstance(r, Row) else Row(list(r)) for r in rows)
    ]
    return str(macro("table.html.j2", "table")(head, body))
