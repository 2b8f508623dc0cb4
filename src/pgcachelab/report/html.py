"""The report page: one self-contained HTML file (inline SVG and CSS, no network)."""

import html
import json
import time
from pathlib import Path

from pgcachelab.analysis.statistics import (
    MIN_EXACT_95,
    WIDE_SPREAD_CV,
    coefficient_of_variation,
)
from pgcachelab.analysis.storage import storage_note, storage_uses
from pgcachelab.analysis.versions import differing_settings
from pgcachelab.report.dataset import RunData
from pgcachelab.units import exact_amount_text, format_bytes

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f4f4f4; } td.text { text-align: left; }
tr.failed td { background: #fff0f0; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; font-size: 0.85em; }
.note { color: #666; font-size: 0.9em; } ul.warnings { font-size: 0.9em; }
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


def quality_html(data: RunData) -> str:
    """The machine's noise, points that never settled, and pyperf-style warnings."""
    parts = []
    measured = {name: n for name, n in data.noise.items() if n.median_cv is not None}
    for name, noise in measured.items():
        worst = max(noise.cv_by_point.values())
        parts.append(
            f"<p>Noise of this machine during the run ({_esc(name)}): repeated identical points "
            f"vary by a median coefficient of variation of <b>{noise.median_cv:.1%}</b> "
            f"(worst point {worst:.1%}, {len(noise.cv_by_point)} points with 2+ repetitions). "
            "A difference between points of that order is within the machine's noise.</p>"
        )
    if not measured:
        parts.append("<p class='note'>No point has two repetitions: the machine's noise is "
                     "unknown. Use repetitions = 3 or more.</p>")  # fmt: skip
    unsettled = data.unsettled
    if unsettled:
        items = "".join(f"<li>{_esc(r.point.label)}</li>" for r in unsettled)
        parts.append(f"<p><b>{len(unsettled)} point(s) never settled</b> within the target "
                     f"interval:</p><ul>{items}</ul>")  # fmt: skip
    elif data.schedule.get("repetitions") == "auto":
        parts.append("<p>Every point settled within the target interval.</p>")
    warnings = data.warnings
    if warnings:
        items = "".join(
            f"<li>{_esc(w.point)}: {_esc(w.problem)}; <i>try {_esc(w.try_next)}</i></li>"
            for w in warnings[:40]
        )
        more = len(warnings) - 40
        more = f"<p class='note'>... and {more} more.</p>" if more > 0 else ""
        parts.append(f"<p>{len(warnings)} warning(s):</p><ul class='warnings'>{items}</ul>{more}")
    else:
        parts.append("<p>No stability warning.</p>")
    parts.append(
        "<p class='note'>Medians come with the exact distribution-free 95% interval of the "
        f"median (order statistics, binomial): it needs {MIN_EXACT_95} repetitions; with fewer "
        "the interval shown is min..max with its real coverage (e.g. 75% for 3). Warnings: a "
        f"spread over {WIDE_SPREAD_CV:.0%} CV, fewer repetitions than a 95% interval needs, "
        "per-second tps (pgbench --progress, after progress_warmup seconds) trending by 5% or "
        "more with a significant slope, and seconds far below or above the median (dips, "
        "e.g. checkpoint stalls).</p>"
    )
    return "".join(parts)


def _memory_note(data: RunData) -> str:
    if data.memory_limit_bytes:
        return f"{format_bytes(data.memory_limit_bytes)} (memory cgroup limit of the server)"
    memory = data.memory_available_bytes
    return f"{format_bytes(memory) if memory else '?'} (the machine's RAM: no limit was set)"


def _points_table(data: RunData) -> str:
    keys = data.swept_keys
    header = ["#", *keys, "repetitions ok", "tps median", "tps 95% CI of the median",
              "tps min..max", "CV %", "latency ms (median)", "database size", "shared_buffers",
              "hit ratio %", "failures"]  # fmt: skip
    rows = []
    for result in data.points:
        tps, latency = result.tps, result.latency_ms
        reasons = "; ".join(sorted({m.reason or "" for m in result.failures}))
        cells = [
            _num(result.point.point_index),
            *[_esc(result.point.swept.get(k)) for k in keys],
            f"{len(result.ok)}/{len(result.measurements)}",
            _num(tps.median if tps else None),
            _median_interval_text(tps),
            f"{_num(tps.minimum)}..{_num(tps.maximum)}" if tps else "–",
            _cv_text([m.tps for m in result.ok if m.tps]),
            _num(latency.median if latency else None, 3),
            format_bytes(result.database_size_bytes) if result.database_size_bytes else "–",
            format_bytes(result.shared_buffers_bytes) if result.shared_buffers_bytes else "–",
            _num(result.blks_hit_ratio * 100, 2) if result.blks_hit_ratio is not None else "–",
        ]
        row_class = ' class="failed"' if result.failures else ""
        rows.append(
            f"<tr{row_class}>" + "".join(f"<td>{c}</td>" for c in cells)
            + f'<td class="text">{_esc(reasons)}</td></tr>'
        )  # fmt: skip
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


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


def render_html(data: RunData, plot_paths: list[Path], out_path: Path, sections=()) -> Path:
    """`sections`: (title, HTML) pairs a workload adds before the plots, e.g. findings."""
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
<h2>Context</h2>
<table>{context}</table>
{differing_settings_html(data)}
<h2>Measurement quality</h2>
{quality_html(data)}
{"".join(f"<h2>{_esc(title)}</h2>{body}" for title, body in sections)}
<h2>Plots</h2>
{figures}
<h2>Every point</h2>
<p class="note">tps excludes connection time (pgbench); the interval is the exact 95%
order-statistic interval of the median over repetitions (fewer than 6: min..max, its coverage
said); CV is the standard deviation of the repetitions over their mean; hit ratio is blks_hit /
(blks_hit + blks_read) of pg_stat_database during the measurements.</p>
{_points_table(data)}
<h2>Spec</h2>
<pre>{_esc(run.spec_text)}</pre>
<h2>Server reached as</h2>
<pre>{_esc(target)}</pre>
</body></html>
"""
    out_path.write_text(page)
    return out_path
