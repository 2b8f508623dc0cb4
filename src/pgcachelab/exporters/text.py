"""Text for a reader at a terminal: every command's result as a table or lines.

Names and labels from specs, stores and servers have their control characters escaped
(printable_lines), so a name cannot move the cursor or forge a line."""

from typing import TextIO

from pgcachelab.printable import printable_lines


def _write(text: str, out: TextIO) -> None:
    out.write(printable_lines(text) + "\n")


def diagnosis(diagnosis, out: TextIO, hint_without_server: bool) -> None:
    """`doctor`: a table of findings, then what to change (rich, colour unless NO_COLOR)."""
    from pgcachelab.doctor.render import print_human

    print_human(diagnosis, out, hint_without_server=hint_without_server)


def comparison(comparison, out: TextIO) -> None:
    """`compare`: B/A per matched point, then p99 latency, then what differs besides."""
    from pgcachelab.report.compare_text import render_table

    _write(render_table(comparison), out)


def tpcc_run(run, load, out: TextIO) -> None:
    """`tpcc run`: tpmC, the mix and latencies per transaction type (the load was noted on
    stderr as it finished)."""
    from pgcachelab.studies.tpcc.text import format_run

    out.write(format_run(run) + "\n")


def reproduction(results, machine: dict, out: TextIO) -> None:
    """`reproduce`: each study's claims with their verdicts, then the count of each verdict."""
    from pgcachelab.experiments.reproduce_page import render_text

    _write(render_text(results), out)


def plan(plan: dict, out: TextIO) -> None:
    """`run --plan`: the measurements in order, a line each, and the totals."""
    from pgcachelab.experiments.plan_text import plan_text

    _write(plan_text(plan), out)


def snapshot(snapshot, top: int, out: TextIO) -> None:
    """`inspect`: where the server's data is, the `top` largest relations (0: all)."""
    from pgcachelab.report.cache_table import cache_table

    out.write(cache_table(snapshot, top) + "\n")
