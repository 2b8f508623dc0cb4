"""Doctor's output for people: a rich table (exporters/json.py writes it for programs). Only
reads a Diagnosis."""

import os
import shutil
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pgcachelab.doctor.diagnose import Diagnosis
from pgcachelab.doctor.findings import Finding, Skipped, severity_rank
from pgcachelab.printable import printable

STYLES = {"ok": "green", "info": "cyan", "warning": "yellow", "critical": "bold red"}


def ordered(diagnosis: Diagnosis) -> list:
    """Worst first, skipped last; the checks' own order otherwise."""

    def key(outcome):
        return -1 if isinstance(outcome, Skipped) else severity_rank(outcome.severity)

    return sorted(diagnosis.outcomes, key=key, reverse=True)


def _text(text: str) -> Text:
    """Text from a server, a DSN or the host as it is: one line, control characters escaped
    (rich keeps ESC), never read as markup."""
    return Text(printable(text))


def print_human(diagnosis: Diagnosis, out: TextIO, hint_without_server: bool) -> None:
    width = max(shutil.get_terminal_size((120, 24)).columns, 100)
    # markup=False: a DSN's application_name=[/x] or [link=...] is shown, never interpreted
    # (issue 48); the styles below are given as styles, not as markup.
    console = Console(
        file=out, width=width, no_color="NO_COLOR" in os.environ, highlight=False, markup=False
    )
    context = diagnosis.context
    where = context.get("server") or "no server (host checks only)"
    console.print(_text(f"doctor: host as {context.get('running_as')}; server: {where}"))
    for unread in context.get("not_read") or []:
        console.print(_text(f"note: could not read {unread}"))
    if context.get("server") and not context.get("postmaster_pid"):
        console.print(
            "note: the server's processes are not visible here (another host or container): "
            "the host checks describe this machine, not necessarily the server's"
        )
    table = Table(show_lines=False, header_style="bold")
    table.add_column("severity")
    table.add_column("check")
    table.add_column("found", overflow="fold")
    for outcome in ordered(diagnosis):
        if isinstance(outcome, Skipped):
            table.add_row(Text("skipped", style="dim"), outcome.check, _text(outcome.reason))
        else:
            style = STYLES[outcome.severity]
            table.add_row(Text(outcome.severity, style=style), outcome.check, _text(outcome.found))
    console.print(table)
    to_change = [o for o in ordered(diagnosis) if isinstance(o, Finding) and o.severity != "ok"]
    if to_change:
        console.print("What to change:", style="bold")
    for finding in to_change:
        console.print(
            Text.assemble(
                (f"[{finding.severity}] ", STYLES[finding.severity]), (finding.check, "bold")
            )
        )
        console.print(_text(f"  why: {finding.recommendation}"))
        console.print(_text(f"  fix: {finding.fix}"))
        console.print(_text(f"  source: {finding.source}"))
        if finding.evidence:
            console.print(_text(f"  evidence: {finding.evidence}"))
    # Evidence behind a finding with nothing to change is still worth reading.
    for outcome in diagnosis.outcomes:
        if isinstance(outcome, Finding) and outcome.severity == "ok" and outcome.evidence:
            console.print(_text(f"[ok] {outcome.check}: {outcome.evidence}"))
    if hint_without_server:
        console.print(
            "Server checks need a connection: pgcachelab doctor --dsn "
            '"host=/var/run/postgresql dbname=postgres"'
        )
