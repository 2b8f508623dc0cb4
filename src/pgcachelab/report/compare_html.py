"""`compare --html FILE`: one self-contained page, the chart inlined as a base64 PNG."""

import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from pgcachelab.analysis.compare import Comparison  # noqa: E402
from pgcachelab.report.advice import comparison_advice  # noqa: E402
from pgcachelab.report.compare_text import HEADER, method_note, point_row  # noqa: E402
from pgcachelab.report.findings import findings_html  # noqa: E402
from pgcachelab.report.html import _CSS  # noqa: E402


def _esc(value) -> str:
    return html.escape("" if value is None else str(value))


def ratio_chart_png(comparison: Comparison) -> bytes | None:
    """B/A per point with its 95% interval, on a log axis with a line at 1; None without data."""
    points = [p for p in comparison.points if p.ratio is not None]
    if not points:
        return None
    figure, axis = plt.subplots(figsize=(max(6.0, 0.7 * len(points) + 2), 4.2))
    xs = list(range(len(points)))
    for x, point in zip(xs, points, strict=True):
        color = ("tab:green" if point.ratio > 1 else "tab:red") if point.significant else "0.35"
        if point.ci_low is not None:
            axis.errorbar(
                [x], [point.ratio],
                yerr=[[point.ratio - point.ci_low], [point.ci_high - point.ratio]],
                fmt="o", color=color, capsize=4,
            )  # fmt: skip
        else:
            axis.plot([x], [point.ratio], "o", color=color)
    axis.axhline(1.0, color="black", linewidth=1)
    axis.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")  # 0.5, not 5x10^-1
    axis.yaxis.set_major_formatter(plain)
    axis.yaxis.set_minor_formatter(plain)
    axis.set_xticks(xs, [p.label for p in points], rotation=30, ha="right", fontsize=8)
    axis.set_xlabel("point (matched parameters)")
    axis.set_ylabel("tps ratio B / A (geometric means, log scale)")
    axis.set_title(
        f"run {comparison.b.run_id} (B) / run {comparison.a.run_id} (A), 95% Welch intervals"
    )
    axis.plot([], [], "o", color="tab:green", label="B significantly faster")
    axis.plot([], [], "o", color="tab:red", label="B significantly slower")
    axis.plot([], [], "o", color="0.35", label="no significant difference")
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside: never on a point
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def render_html(comparison: Comparison, out_path: Path) -> Path:
    a, b = comparison.a, comparison.b
    png = ratio_chart_png(comparison)
    chart = (
        f'<figure><img alt="tps ratio B/A per point with 95% intervals" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"></figure>'
        if png
        else "<p class='note'>No chart: no matched point has measurements in both runs.</p>"
    )
    if comparison.context:
        rows = "".join(
            f"<tr><td class='text'>{'<b>' if d.serious else ''}{_esc(d.what)}"
            f"{'</b>' if d.serious else ''}</td><td class='text'>{_esc(d.a)}</td>"
            f"<td class='text'>{_esc(d.b)}</td></tr>"
            for d in comparison.context
        )
        context = (
            "<p>These differ between the runs and make the comparison doubtful (bold: can"
            " explain a difference in tps by itself).</p>"
            f"<table><thead><tr><th>what</th><th>A</th><th>B</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    else:
        context = "<p>Same server version, settings, machine, memory limit and pgbench.</p>"
    head = "".join(f"<th>{_esc(h)}</th>" for h in HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in point_row(p)) + "</tr>"
        for p in comparison.points
    )
    only = "".join(
        f"<p>Points only in {side}: {_esc('; '.join(labels))}</p>"
        for side, labels in (("A", comparison.only_a), ("B", comparison.only_b))
        if labels
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>pgcachelab compare: {_esc(b.run_id)} against {_esc(a.run_id)}</title>
<style>{_CSS} figure img {{ max-width: 100%; }}</style></head>
<body>
<h1>Run {_esc(b.run_id)} (B) against run {_esc(a.run_id)} (A)</h1>
<p class="note">A: {_esc(a.name)} ({_esc(a.status)}); B: {_esc(b.name)} ({_esc(b.status)});
points matched on: {_esc(", ".join(comparison.keys) or "nothing swept")}.</p>
{
        findings_html(
            comparison_advice(comparison),
            f"pgcachelab compare {a.run_id} {b.run_id}",
            "What this comparison shows",
        )
    }
<h2>Context differences</h2>
{context}
<h2>Ratio per point</h2>
{chart}
<h2>Every matched point</h2>
<p class="note">{_esc(method_note(comparison))}</p>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
{only}
</body></html>
"""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(page)
    return out_path
