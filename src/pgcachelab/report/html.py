"""The report page: one self-contained HTML file (inline SVG and CSS, no network)."""

import html
import json
import time
from pathlib import Path

from pgcachelab.report.dataset import RunData
from pgcachelab.units import format_bytes

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f4f4f4; } td.text { text-align: left; }
tr.failed td { background: #fff0f0; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; font-size: 0.85em; }
.note { color: #666; font-size: 0.9em; }
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
        ("kernel", env.get("kernel")),
        ("lab", f"pgcachelab {env.get('lab_version')}, commit {env.get('git_commit') or '?'}"),
    ]


def _memory_note(data: RunData) -> str:
    if data.memory_limit_bytes:
        return f"{format_bytes(data.memory_limit_bytes)} (memory cgroup limit of the server)"
    memory = data.memory_available_bytes
    return f"{format_bytes(memory) if memory else '?'} (the machine's RAM: no limit was set)"


def _points_table(data: RunData) -> str:
    keys = data.swept_keys
    header = ["#", *keys, "repetitions ok", "tps median", "tps min..max", "tps 95% CI",
              "latency ms (median)", "database size", "shared_buffers", "hit ratio %",
              "failures"]  # fmt: skip
    rows = []
    for result in data.points:
        tps, latency = result.tps, result.latency_ms
        reasons = "; ".join(sorted({m.reason or "" for m in result.failures}))
        cells = [
            _num(result.point.point_index),
            *[_esc(result.point.swept.get(k)) for k in keys],
            f"{len(result.ok)}/{len(result.measurements)}",
            _num(tps.median if tps else None),
            f"{_num(tps.minimum)}..{_num(tps.maximum)}" if tps else "–",
            f"{_num(tps.ci_low)}..{_num(tps.ci_high)}" if tps and tps.ci_low is not None else "–",
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
{"".join(f"<h2>{_esc(title)}</h2>{body}" for title, body in sections)}
<h2>Plots</h2>
{figures}
<h2>Every point</h2>
<p class="note">tps excludes connection time (pgbench); the confidence interval is the 95%
Student-t interval of the mean over repetitions; hit ratio is blks_hit / (blks_hit + blks_read)
of pg_stat_database during the measurements.</p>
{_points_table(data)}
<h2>Spec</h2>
<pre>{_esc(run.spec_text)}</pre>
<h2>Server reached as</h2>
<pre>{_esc(target)}</pre>
</body></html>
"""
    out_path.write_text(page)
    return out_path
