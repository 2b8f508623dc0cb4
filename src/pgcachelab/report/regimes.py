"""The regimes section of a pgbench report over data sizes (seed 004): where the data lived,
and what that did to the throughput."""

from markupsafe import Markup

from pgcachelab.analysis.regimes import DISK, drop_past_memory
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.run_steps import disk_label, run_regimes
from pgcachelab.report.render import macro, table
from pgcachelab.units import format_bytes


def regimes_html(data: RunData) -> str:
    found = run_regimes(data)
    if not found:
        return ""
    plateau_drop = drop_past_memory(found)
    rows = [
        [
            r.name if r.name != DISK else "disk: " + disk_label(data),
            f"{format_bytes(r.smallest_bytes)} .. {format_bytes(r.largest_bytes)}",
            len(r.points),
            f"{r.median_tps:,.0f}",
        ]
        for r in found
    ]
    head = ["where the data lives", "database sizes", "points", "median tps"]
    table_html = Markup(table(head, rows, row_headers=True))
    drop = f"{plateau_drop:.1f}" if plateau_drop else None
    return str(macro("regimes.html.j2", "regimes")(table_html, drop))
