"""The report page: one self-contained HTML file (inline SVG and CSS, no network)."""

import html
import json
import time
from pathlib import Path

from pgcachelab.analysis.statistics import coefficient_of_variation
from pgcachelab.analysis.storage import storage_note, storage_uses
from pgcachelab.analysis.versions import differing_settings
from pgcachelab.report.dataset import RunData
from pgcachelab.report.quality import quality_html
from pgcachelab.units import exact_amount_text, format_bytes

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222;
       padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f4f4f4; } td.text { text-align: left; }
tr.failed td { background: #fff0f0; }
figure { margin: 1em 0; } figure svg, figure img { max-width: 100%; height: auto; }
pre { background: #f7f7f7; padding: 1em; font-size: 0.85em; white-space: pre-wrap;
      overflow-wrap: anywhere; }
.note { color: #666; font-size: 0.9em; } ul.warnings { font-size: 0.9em; }
ul.warnings > li { margin: 0.3em 0; } details > summary { cursor: pointer; }
.findings { background: #f3f7fc; border-left: 4px solid #4a7ab5; padding: 0.2em 1em 0.5em; }
.findings h2 { margin-top: 0.5em; border: none; } .findings li.finding { margin: 0.5em 0; }
.findings .where { color: #4a7ab5; font-weight: bold; }
.findings details { font-size: 0.85em; color: #555; }
.warning { color: #a00; }
"""


def _esc(value) -> str:
    return html.escape("" if value is None else str(value))


def _num(value, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _inline_svg(path: Path) -> str:
    text = path.read_text()
    start = text.find("<svg")  # drop the XML prolog and doctype: invalid inside HTML
    return text[start:] if start >= 0 else text


def _context_rows(data: RunData) -> list[tuple[str, str]]:
    run, env = data.run, data.run.environment
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.created_at))
    finished = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.finished_at))
        if run.finished_at
        else "–"
    )
    memory = env.get("memory_total_bytes")
    server = run.target.get("source") or run.target.get("kind")
    return [
        ("run", run.run_id),
        ("status", run.status + (f" ({run.failure})" if run.failure else "")),
        ("started / finished", f"{started} / {finished}"),
        ("server", f"PostgreSQL {env.get('server_version')} ({server})"),
        ("pgbench", env.get("pgbench_version")),
        (
            "machine",
            f"{env.get('cpu_model')}, {env.get('cores')} cores, "
            f"{format_bytes(memory) if memory else '?'} RAM",
        ),  # fmt: skip
        ("memory available to the server", _memory_note(data)),
        ("storage", storage_note(storage_uses([m.metrics for r in data.points for m in r.ok]))),
        ("kernel", env.get("kernel")),
        ("lab", f"pgcachelab {env.get('lab_version')}, commit {env.get('git_commit') or '?'}"),
        ("order and repetitions", _schedule_note(data.schedule)),
    ]


def _schedule_note(schedule: dict) -> str:
    order = schedule.get("order", "sequential")
    text = f"order {order}"
    if order == "random":
        text += f" (seed {schedule.get('seed')})"
    else:
        text += f" (seed {schedule.get('seed')}, used by random orders only)"
    if schedule.get("repetitions") == "auto":
        text += (f"; repetitions auto: until the median is known to ±{schedule['target_ci']:.1%} "
                 f"or {schedule['max_repetitions']} repetitions")  # fmt: skip
    else:
        text += f"; {schedule.get('repetitions')} repetitions per point"
    warmup = schedule.get("warmup_repetitions") or 0
    if warmup:
        text += f", after {warmup} warm-up repetition(s) per point that no figure uses"
    return text


def _readable_setting(setting: dict) -> str:
    """Exact, in one unit per amount: 1536MB stays 1536MB (not "1.5GB", which 1540MB would
    also print as), so settings that print alike are equal."""
    value = setting.get("normalised")
    if isinstance(value, int | float) and value >= 0:
        exact = exact_amount_text(value, setting.get("unit"))
        if exact is not None:
            return exact
    return str(setting.get("setting"))


def differing_settings_html(data: RunData) -> str:
    """The server settings that differ between points, as pg_settings reported them."""
    by_point = {
        r.point.label: {name: _readable_setting(s) for name, s in settings.items()}
        for r in data.points
        if (settings := data.server_settings.get(r.point.point_index))
    }
    differing = differing_settings(by_point) if len(by_point) > 1 else {}
    if not differing:
        return "<p class='note'>The server settings are the same at every point.</p>"
    rows = "".join(
        f'<tr><th>{_esc(name)}</th><td class="text">'
        f"{_esc(', '.join(v if v != '' else '(empty)' for v in dict.fromkeys(values.values())))}"
        "</td></tr>"
        for name, values in differing.items()
    )
    return (
        "<h3>Server settings that differ between points</h3>"
        "<p class='note'>As pg_settings reported them at each point: the swept settings, what "
        "PostgreSQL derives from them and, across versions, changed defaults.</p>"
        "<table><thead><tr><th>setting</th><th>values, in point order (each once)</th></tr>"
        "</thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _memory_note(data: RunData) -> str:
    if data.memory_limit_bytes:
        return f"{format_bytes(data.memory_limit_bytes)} (memory cgroup limit of the server)"
    memory = data.memory_available_bytes
    return f"{format_bytes(memory) if memory else '?'} (the machine's RAM: no limit was set)"


def _table(header: list[str], rows: list[tuple[str, list[str]]], text_from: int) -> str:
    """Cells already escaped; columns from `text_from` on are left-aligned text. Each row
    comes with its class ("" or "failed")."""
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join(_row(row_class, cells, text_from) for row_class, cells in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _row(row_class: str, cells: list[str], text_from: int) -> str:
    opening = f'<tr class="{_esc(row_class)}">' if row_class else "<tr>"
    return opening + "".join(
        f'<td class="text">{c}</td>' if i >= text_from else f"<td>{c}</td>"
        for i, c in enumerate(cells)
    ) + "</tr>"  # fmt: skip


def _points_table(data: RunData) -> str:
    """tps per point with its interval and spread; failures named."""
    keys = data.swept_keys
    header = ["#", *keys, "repetitions ok", "tps median", "tps 95% CI of the median", "CV %",
              "failures"]  # fmt: skip
    rows = []
    for result in data.points:
        tps = result.tps
        reasons = "; ".join(sorted({m.reason or "" for m in result.failures}))
        rows.append(("failed" if result.failures else "", [
            _num(result.point.point_index),
            *[_esc(result.point.swept.get(k)) for k in keys],
            f"{len(result.ok)}/{len(result.measurements)}",
            _num(tps.median if tps else None),
            _median_interval_text(tps),
            _cv_text([m.tps for m in result.ok if m.tps]),
            _esc(reasons),
        ]))  # fmt: skip
    return _table(header, rows, text_from=len(header) - 1)


def _points_detail_table(data: RunData) -> str:
    """The secondary figures of each point: range, latency, sizes and cache hits."""
    header = ["#", "point", "tps min..max", "latency ms (median)", "database size",
              "shared_buffers", "hit ratio %"]  # fmt: skip
    rows = []
    for result in data.points:
        tps, latency = result.tps, result.latency_ms
        rows.append(("failed" if result.failures else "", [
            _num(result.point.point_index), _esc(result.point.label),
            f"{_num(tps.minimum)}..{_num(tps.maximum)}" if tps else "–",
            _num(latency.median if latency else None, 3),
            format_bytes(result.database_size_bytes) if result.database_size_bytes else "–",
            format_bytes(result.shared_buffers_bytes) if result.shared_buffers_bytes else "–",
            _num(result.blks_hit_ratio * 100, 2) if result.blks_hit_ratio is not None else "–",
        ]))  # fmt: skip
    return _table(header, rows, text_from=7)


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
    data: RunData, plot_paths: list[Path], out_path: Path, sections=(), findings: str = ""
) -> Path:
    """`findings`: the block the page opens with (report.findings); `sections`: (title, HTML)
    pairs a workload adds before the plots."""
    run = data.run
    context = "".join(
        f'<tr><th>{_esc(k)}</th><td class="text">{_esc(v)}</td></tr>'
        for k, v in _context_rows(data)
    )
    figures = "".join(
        f"<figure>{_inline_svg(p)}<figcaption class='note'>{_esc(p.stem)} "
        f"(also <a href='{_esc(p.with_suffix('.png').name)}'>PNG</a>)</figcaption></figure>"
        for p in plot_paths
        if p.suffix == ".svg"
    )
    if not figures:
        figures = "<p class='note'>No plot: no numeric parameter was swept.</p>"
    target = json.dumps(run.target, indent=1)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>pgcachelab: {_esc(run.name)} ({_esc(run.run_id)})</title>
<style>{_CSS}</style></head>
<body>
<h1>{_esc(run.name)}</h1>
<p class="note">pgcachelab report of run {_esc(run.run_id)}; rebuilt from the results store
alone with <code>pgcachelab report {_esc(run.run_id)}</code>.</p>
{findings}
<h2>Measurement quality</h2>
{quality_html(data)}
<h2>Context</h2>
<table>{context}</table>
{differing_settings_html(data)}
{"".join(f"<h2>{_esc(title)}</h2>{body}" for title, body in sections)}
<h2>Plots</h2>
{figures}
<h2>Every point</h2>
<p class="note">tps excludes connection time (pgbench); the interval is the exact 95%
order-statistic interval of the median over repetitions (fewer than 6: min..max, its coverage
said); CV is the standard deviation of the repetitions over their mean; hit ratio is blks_hit /
(blks_hit + blks_read) of pg_stat_database during the measurements.</p>
{_points_table(data)}
<h3>Every point in detail</h3>
{_points_detail_table(data)}
<h2>Spec</h2>
<pre>{_esc(run.spec_text)}</pre>
<h2>Server reached as</h2>
<pre>{_esc(target)}</pre>
</body></html>
"""
    out_path.write_text(page)
    return out_path
