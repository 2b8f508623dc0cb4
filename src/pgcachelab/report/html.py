"""The report page: one self-contained HTML file (inline SVG and CSS, no network)."""

import json
import time
from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from pgcachelab.analysis.checkpoints import checkpoint_note
from pgcachelab.analysis.hosts import run_host_split
from pgcachelab.analysis.latency import PointPercentiles
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.statistics import coefficient_of_variation
from pgcachelab.analysis.storage import storage_note, storage_uses
from pgcachelab.analysis.versions import differing_settings
from pgcachelab.report.hosts import TITLE as HOSTS_TITLE
from pgcachelab.report.quality import quality_html
from pgcachelab.report.render import ALL_COLUMNS, Row, Section, inline_svg, render, table
from pgcachelab.store.run_types import RunSchedule, SettingRow
from pgcachelab.units import exact_amount_text, format_bytes


def _num(value, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _context_rows(data: RunData) -> list[tuple[str, str | None]]:
    run, env = data.run, data.run.environment
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.created_at))
    finished = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.finished_at))
        if run.finished_at
        else "–"
    )
    fleet = [use.host_class for use in run_host_split(data).classes]
    server = run.target.get("source") or run.target.get("kind")
    ok_metrics = [m.metrics for r in data.points for m in r.ok]
    checkpoint = checkpoint_note(ok_metrics)
    rows: list[tuple[str, str | None]] = [
        ("run", run.run_id),
        ("status", run.status + (f" ({run.failure})" if run.failure else "")),
        ("started / finished", f"{started} / {finished}"),
        ("server", f"PostgreSQL {env.get('server_version')} ({server})"),
        ("pgbench", env.get("pgbench_version")),
        ("machine", _machine_note(data, fleet)),
        ("memory available to the server", _memory_note(data)),
        ("storage", storage_note(storage_uses(ok_metrics))),
        ("kernel", "see the host classes" if fleet else env.get("kernel")),
        ("lab", f"pgcachelab {env.get('lab_version')}, commit {env.get('git_commit') or '?'}"),
        ("order and repetitions", _schedule_note(data.schedule)),
    ]
    if checkpoint is not None:  # the spec's checkpoint = true (seed 001)
        rows.append(("CHECKPOINT before the measured run", checkpoint))
    return rows


def _machine_note(data: RunData, classes: list[str]) -> str:
    """This host's, or for a run measured by agents (`classes`) the hosts that did."""
    if classes:
        return f"measured by agents on {len(classes)} host class(es): see {HOSTS_TITLE}"
    env = data.run.environment
    memory = env.get("memory_total_bytes")
    return (
        f"{env.get('cpu_model')}, {env.get('cores')} cores, "
        f"{format_bytes(memory) if memory else '?'} RAM"
    )


def _schedule_note(schedule: RunSchedule) -> str:
    order = schedule.get("order", "sequential")
    text = f"order {order}"
    if schedule.get("block_by"):
        text += f" by {schedule['block_by']}"
    if order == "random":
        text += f" (seed {schedule.get('seed')})"
    else:
        text += f" (seed {schedule.get('seed')}, used by random orders only)"
    if schedule.get("repetitions") == "auto":
        text += (
            f"; repetitions auto: until the median is known to ±{schedule['target_ci']:.1%} "
            f"or {schedule['max_repetitions']} repetitions"
        )
    else:
        text += f"; {schedule.get('repetitions')} repetitions per point"
    warmup = schedule.get("warmup_repetitions") or 0
    if warmup:
        text += f", after {warmup} warm-up repetition(s) per point that no figure uses"
    return text


def readable_setting(setting: SettingRow) -> str:
    """Exact, in one unit per amount: 1536MB stays 1536MB (not "1.5GB", which 1540MB would
    also print as), so settings that print alike are equal."""
    value = setting.get("normalised")
    if isinstance(value, int | float) and value >= 0:
        exact = exact_amount_text(value, setting.get("unit"))
        if exact is not None:
            return exact
    return str(setting.get("setting"))


def differing_settings_table(data: RunData) -> Markup | None:
    """The server settings that differ between points, as pg_settings reported them; None when
    they are the same at every point."""
    by_point = {
        r.point.label: {name: readable_setting(s) for name, s in settings.items()}
        for r in data.points
        if (settings := data.server_settings.get(r.point.point_index))
    }
    differing = differing_settings(by_point) if len(by_point) > 1 else {}
    if not differing:
        return None
    rows = [
        [name, ", ".join(v if v != "" else "(empty)" for v in dict.fromkeys(values.values()))]
        for name, values in differing.items()
    ]
    return Markup(
        table(["setting", "values, in point order (each once)"], rows, {1}, row_headers=True)
    )


def _memory_note(data: RunData) -> str:
    if data.memory_limit_bytes:
        return f"{format_bytes(data.memory_limit_bytes)} (memory cgroup limit of the server)"
    memory = data.memory_available_bytes
    return f"{format_bytes(memory) if memory else '?'} (the machine's RAM: no limit was set)"


def _points_table(data: RunData) -> str:
    """tps per point with its interval and spread; failures named."""
    keys = data.swept_keys
    header = [
        "#",
        *keys,
        "repetitions ok",
        "tps median",
        "tps 95% CI of the median",
        "CV %",
        "failures",
    ]
    rows = []
    for result in data.points:
        tps = result.tps
        reasons = "; ".join(result.failure_reasons)
        rows.append(
            Row(
                [
                    _num(result.point.point_index),
                    *[result.point.swept.get(k) for k in keys],
                    f"{len(result.ok)}/{len(result.measurements)}",
                    _num(tps.median if tps else None),
                    _median_interval_text(tps),
                    _cv_text([m.tps for m in result.ok if m.tps]),
                    reasons,
                ],
                "failed" if result.failures else "",
            )
        )
    return table(header, rows, text_columns={len(header) - 1})


def _points_detail_table(data: RunData) -> str:
    """The secondary figures of each point: range, latency, sizes and cache hits."""
    header = [
        "#",
        "point",
        "tps min..max",
        "latency ms (median)",
        "p50 / p99 / p99.9 ms",
        "database size",
        "shared_buffers",
        "hit ratio %",
    ]
    rows = []
    for result in data.points:
        tps, latency = result.tps, result.latency_ms
        rows.append(
            Row(
                [
                    _num(result.point.point_index),
                    result.point.label,
                    f"{_num(tps.minimum)}..{_num(tps.maximum)}" if tps else "–",
                    _num(latency.median if latency else None, 3),
                    _percentiles_text(result.latency_percentiles),
                    format_bytes(result.database_size_bytes) if result.database_size_bytes else "–",
                    format_bytes(result.shared_buffers_bytes)
                    if result.shared_buffers_bytes
                    else "–",
                    _num(result.blks_hit_ratio * 100, 2)
                    if result.blks_hit_ratio is not None
                    else "–",
                ],
                "failed" if result.failures else "",
            )
        )
    return table(header, rows)


def _biased_percentiles(data: RunData) -> dict[str, str] | None:
    """For the note under the detail table: how many points' percentiles read low (pgbench
    logged transactions as 0 µs), and the largest share of such transactions; None if none."""
    biased = [r for r in data.points if r.latency_percentiles and r.latency_percentiles.biased_low]
    if not biased:
        return None
    share = max(r.latency_percentiles.zeros_share for r in biased if r.latency_percentiles)
    return {"share": f"{share:.0%}", "points": str(len(biased))}


def _percentiles_text(percentiles: PointPercentiles | None) -> str:
    """Medians over the repetitions of p50, p99 and p99.9 (each repetition's from its log)."""
    if percentiles is None:
        return "–"
    figures = percentiles.median_ms
    text = " / ".join(_num(figures[name], 3) for name in ("p50", "p99", "p999"))
    return text + (" *" if percentiles.biased_low else "")


def _median_interval_text(tps) -> str:
    if tps is None or tps.median_low is None:
        return "–"
    text = f"{_num(tps.median_low)}..{_num(tps.median_high)}"
    if tps.median_coverage < 0.95:
        text += f" ({tps.median_coverage:.0%} only)"
    return text


def _cv_text(values: list[float]) -> str:
    cv = coefficient_of_variation(values)
    return "–" if cv is None else _num(cv * 100, 1)


def render_html(
    data: RunData,
    plot_paths: list[Path],
    out_path: Path,
    sections: Sequence[Section] = (),
    findings: Markup | str = "",
) -> Path:
    """`findings`: the block the page opens with (report.findings); `sections`: what the
    run's workload adds before the plots."""
    run = data.run
    plots = [
        {"svg": inline_svg(p), "name": p.stem, "png": p.with_suffix(".png").name}
        for p in plot_paths
        if p.suffix == ".svg"
    ]
    page = render(
        "report.html.j2",
        run=run,
        findings=findings,
        quality=Markup(quality_html(data)),
        context=Markup(table(None, _context_rows(data), ALL_COLUMNS, row_headers=True)),
        differing_settings=differing_settings_table(data),
        sections=sections,
        plots=plots,
        points_table=Markup(_points_table(data)),
        points_detail_table=Markup(_points_detail_table(data)),
        biased=_biased_percentiles(data),
        target=json.dumps(run.target, indent=1),
    )
    out_path.write_text(page)
    return out_path
