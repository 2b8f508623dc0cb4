"""Plain-text tables for the terminal: `runs` and `show`."""

import time
from collections.abc import Sequence

from pgcachelab.analysis.run_data import RunData
from pgcachelab.printable import printable
from pgcachelab.store.queue import unit_progress
from pgcachelab.store.records import ResultStore, abandoned
from pgcachelab.units import format_bytes


def format_table(header: list[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell; a cell's control characters escaped (a name from
    a spec could move the cursor or split its row)."""
    texts = [[printable(str(cell)) for cell in row] for row in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *texts, strict=True)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in texts:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def runs_table(store: ResultStore) -> str:
    rows = []
    runs = store.runs()
    # A store read on a read-only disk cannot be told that its running run was killed.
    killed = {run.run_id for run in abandoned(runs)}
    for run in runs:
        measured = store.measurements(run.run_id)
        ok = sum(1 for m in measured if m.status == "ok")
        rows.append(
            [
                run.run_id,
                run.name,
                "killed" if run.run_id in killed else run.status,
                time.strftime("%Y-%m-%d %H:%M", time.localtime(run.created_at)),
                f"{ok}/{len(measured)}",
                run.environment.get("server_version", "?"),
            ]
        )
    table = format_table(["run", "name", "status", "started", "ok/measured", "server"], rows)
    fleet = unit_progress(store)
    if not fleet:
        return table
    lines = [f"  {run_id}: {fleet_line(units)}" for run_id, units in fleet.items()]
    return "\n".join([table, "", "queued runs, units by state and host:", *lines])


UNIT_STATES = ("done", "leased", "queued", "failed", "cancelled")


def fleet_line(units: dict[tuple[str, str | None], int]) -> str:
    """A queued run's progress from its units: {(state, host): count} ->
    "3 done (host-a 2, host-b 1), 1 leased (host-b 1), 0 queued, 0 failed"."""
    parts = []
    for state in UNIT_STATES:
        hosts = {host: n for (s, host), n in units.items() if s == state}
        # a unit never leased, or cancelled before it was, has no host: counted, not named
        named = sorted((host, n) for host, n in hosts.items() if host)
        by_host = ", ".join(f"{host} {n}" for host, n in named)
        parts.append(f"{sum(hosts.values())} {state}" + (f" ({by_host})" if by_host else ""))
    return ", ".join(parts)


def number_text(value, digits=0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def run_table(data: RunData) -> str:
    """`show`'s table for a run whose study has none of its own (studies/pages.py)."""
    rows = []
    for result in data.points:
        tps, latency = result.tps, result.latency_ms
        ci = "-"
        coverage = tps.median_coverage if tps else None
        if tps and tps.median_low is not None and coverage is not None:
            ci = f"{number_text(tps.median_low)}..{number_text(tps.median_high)}"
            ci += "" if coverage >= 0.95 else f" ({coverage:.0%})"
        reasons = "; ".join(result.failure_reasons)
        rows.append(
            [
                result.point.point_index,
                result.point.label,
                f"{len(result.ok)}/{len(result.measurements)}",
                number_text(tps.median if tps else None),
                ci,
                number_text(latency.median if latency else None, 3),
                _p99_text(result.latency_percentiles),
                format_bytes(result.database_size_bytes) if result.database_size_bytes else "-",
                number_text(
                    result.blks_hit_ratio * 100 if result.blks_hit_ratio is not None else None, 1
                ),
                reasons,
            ]
        )
    header = [
        "#",
        "point",
        "ok",
        "tps (median)",
        "95% CI of median",
        "latency ms",
        "p99 ms",
        "db size",
        "hit %",
        "failures",
    ]
    run = data.run
    title = f"run {run.run_id} ({run.name}, {run.status})"
    return title + "\n" + format_table(header, rows)


def _p99_text(percentiles) -> str:
    """The median p99 over the repetitions; * when pgbench's log read low (see the report)."""
    if percentiles is None:
        return "-"
    return number_text(percentiles.median_ms["p99"], 3) + ("*" if percentiles.biased_low else "")
